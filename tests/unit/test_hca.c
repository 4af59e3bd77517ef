/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hca.c: the inventory against generated trees (healthy IB and RoCE
 * nodes, one tree per fault) and the real captures, and every parser with
 * good and malformed input.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/hca.h"
#include "support/fixture.h"
#include "support/findings.h"

/* ---------------------------------------------------------------------- */
/* Parsers                                                                  */

static const struct state_case {
	const char *s;
	int ret;
	int v;
} port_state_cases[] = {
    {"4: ACTIVE", 0, IBP_PORT_ACTIVE},
    {"4: ACTIVE\n", 0, IBP_PORT_ACTIVE},
    {"1: DOWN", 0, IBP_PORT_DOWN},
    {"2: INIT", 0, IBP_PORT_INIT},
    {"3: ARMED", 0, IBP_PORT_ARMED},
    {"5: ACTIVE_DEFER", 0, IBP_PORT_ACTIVE_DEFER},
    {"0: NOP", 0, IBP_PORT_NOP},
    {"4: DOWN", -EINVAL, 0}, /* the number decides: a name that disagrees is malformed */
    {"4: active", -EINVAL, 0},
    {"4:ACTIVE", -EINVAL, 0},
    {"4 : ACTIVE", -EINVAL, 0},
    {"4: ", -EINVAL, 0},
    {"4: ACTIVE ", -EINVAL, 0},
    {"4: ACTIVEX", -EINVAL, 0},
    {"ACTIVE", -EINVAL, 0},
    {"4", -EINVAL, 0},
    {"", -EINVAL, 0},
    {"-1: DOWN", -EINVAL, 0},
    {"7: UNKNOWN", -ERANGE, 0},
    {"9999: ACTIVE", -EINVAL, 0},
    {"4: ACTIVE\n\n", -EINVAL, 0},
};

static const struct state_case phys_cases[] = {
    {"5: LinkUp", 0, IBP_PHYS_LINKUP},
    {"2: Polling", 0, IBP_PHYS_POLLING},
    {"3: Disabled", 0, IBP_PHYS_DISABLED},
    {"1: Sleep", 0, IBP_PHYS_SLEEP},
    {"4: PortConfigurationTraining", 0, IBP_PHYS_TRAINING},
    {"6: LinkErrorRecovery", 0, IBP_PHYS_LINK_ERROR_RECOVERY},
    {"7: Phy Test", 0, IBP_PHYS_PHY_TEST},
    {"0: <unknown>", 0, IBP_PHYS_NOP},
    {"0: NOP", 0, IBP_PHYS_NOP},
    {"5: Polling", -EINVAL, 0},
    {"5: linkup", -EINVAL, 0},
    {"8: <unknown>", -ERANGE, 0},
    {"5:LinkUp", -EINVAL, 0},
    {"LinkUp", -EINVAL, 0},
};

static void test_parse_port_state_table_strict(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(port_state_cases) / sizeof(port_state_cases[0]); i++) {
		enum ibp_port_state v = IBP_PORT_STATE_UNKNOWN;
		int r = ibp_parse_port_state(port_state_cases[i].s, &v);
		if (r != port_state_cases[i].ret || (r == 0 && (int)v != port_state_cases[i].v))
			fail_msg("parse_port_state('%s') = %d/%d, expected %d/%d",
				 port_state_cases[i].s, r, v, port_state_cases[i].ret,
				 port_state_cases[i].v);
	}
	for (size_t i = 0; i < sizeof(phys_cases) / sizeof(phys_cases[0]); i++) {
		enum ibp_phys_state v = IBP_PHYS_UNKNOWN;
		int r = ibp_parse_phys_state(phys_cases[i].s, &v);
		if (r != phys_cases[i].ret || (r == 0 && (int)v != phys_cases[i].v))
			fail_msg("parse_phys_state('%s') = %d/%d, expected %d/%d", phys_cases[i].s,
				 r, v, phys_cases[i].ret, phys_cases[i].v);
	}
}

static const struct rate_case {
	const char *s;
	int ret;
	double gbps;
	unsigned width;
	const char *speed;
} rate_cases[] = {
    {"400 Gb/sec (4X NDR)", 0, 400, 4, "NDR"},
    {"400 Gb/sec (4X NDR)\n", 0, 400, 4, "NDR"},
    {"200 Gb/sec (2X NDR)", 0, 200, 2, "NDR"},
    {"100 Gb/sec (1X NDR)", 0, 100, 1, "NDR"},
    {"200 Gb/sec (4X HDR)", 0, 200, 4, "HDR"},
    {"100 Gb/sec (4X EDR)", 0, 100, 4, "EDR"},
    {"25 Gb/sec (1X EDR)", 0, 25, 1, "EDR"},
    {"10 Gb/sec (1X FDR10)", 0, 10, 1, "FDR10"},
    {"40 Gb/sec (4X FDR10)", 0, 40, 4, "FDR10"},
    {"56 Gb/sec (4X FDR)", 0, 56, 4, "FDR"},
    {"14 Gb/sec (1X FDR)", 0, 14, 1, "FDR"},
    {"168 Gb/sec (12X FDR)", 0, 168, 12, "FDR"},
    {"2.5 Gb/sec (1X SDR)", 0, 2.5, 1, "SDR"},
    {"10 Gb/sec (4X SDR)", 0, 10, 4, "SDR"},
    {"10 Gb/sec (4X)", 0, 10, 4, "SDR"}, /* kernels before 4.x */
    {"20 Gb/sec (4X DDR)", 0, 20, 4, "DDR"},
    {"40 Gb/sec (4X QDR)", 0, 40, 4, "QDR"},
    {"800 Gb/sec (4X XDR)", 0, 800, 4, "XDR"},
    {"1600 Gb/sec (8X XDR)", 0, 1600, 8, "XDR"},
    {"400 Gb/sec (4X HDR)", -EINVAL, 0, 0, ""}, /* Gb/s disagrees with lanes x speed */
    {"400 Gb/sec (3X NDR)", -ERANGE, 0, 0, ""},
    {"400 Gb/sec (0X NDR)", -ERANGE, 0, 0, ""},
    {"400 Gb/sec (4X ZDR)", -EINVAL, 0, 0, ""},
    {"400 Gb/sec (4X NDR", -EINVAL, 0, 0, ""},
    {"400 Gb/sec (4X NDR) ", -EINVAL, 0, 0, ""},
    {"400Gb/sec (4X NDR)", -EINVAL, 0, 0, ""},
    {"400 Gbps (4X NDR)", -EINVAL, 0, 0, ""},
    {"400 Gb/sec (4 NDR)", -EINVAL, 0, 0, ""},
    {"400 Gb/sec (4XNDR)", -EINVAL, 0, 0, ""},
    {"-400 Gb/sec (4X NDR)", -EINVAL, 0, 0, ""},
    {"99999999999 Gb/sec (4X NDR)", -EINVAL, 0, 0, ""},
    {"", -EINVAL, 0, 0, ""},
    {"400", -EINVAL, 0, 0, ""},
    {". Gb/sec (4X NDR)", -EINVAL, 0, 0, ""},
};

static void test_parse_rate_table_strict(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rate_cases) / sizeof(rate_cases[0]); i++) {
		const struct rate_case *c = &rate_cases[i];
		struct ibp_rate r = {0};
		int ret = ibp_parse_rate(c->s, &r);
		if (ret != c->ret)
			fail_msg("parse_rate('%s') = %d, expected %d", c->s, ret, c->ret);
		if (ret == 0) {
			assert_true(r.known);
			if (fabs(r.gbps - c->gbps) > 1e-9 || r.width != c->width ||
			    strcmp(r.speed, c->speed) != 0)
				fail_msg("parse_rate('%s') = %g %uX %s", c->s, r.gbps, r.width,
					 r.speed);
		} else {
			assert_false(r.known);
		}
	}
}

static void test_parse_link_layer_and_gid_type_table(void **state)
{
	(void)state;
	enum ibp_link_layer ll = IBP_LL_UNKNOWN;
	assert_int_equal(ibp_parse_link_layer("InfiniBand", &ll), 0);
	assert_int_equal(ll, IBP_LL_IB);
	assert_int_equal(ibp_parse_link_layer("Ethernet\n", &ll), 0);
	assert_int_equal(ll, IBP_LL_ETH);
	assert_int_equal(ibp_parse_link_layer("Unknown", &ll), 0);
	assert_int_equal(ll, IBP_LL_UNKNOWN);
	const char *bad_ll[] = {"infiniband", "IB", "Ethernet ", "", "InfiniBandX", "Eth"};
	for (size_t i = 0; i < sizeof(bad_ll) / sizeof(bad_ll[0]); i++)
		if (ibp_parse_link_layer(bad_ll[i], &ll) != -EINVAL)
			fail_msg("parse_link_layer('%s') accepted", bad_ll[i]);

	enum ibp_gid_type t = IBP_GID_TYPE_UNKNOWN;
	assert_int_equal(ibp_parse_gid_type("IB/RoCE v1", &t), 0);
	assert_int_equal(t, IBP_GID_TYPE_IB_ROCE_V1);
	assert_int_equal(ibp_parse_gid_type("RoCE v2\n", &t), 0);
	assert_int_equal(t, IBP_GID_TYPE_ROCE_V2);
	const char *bad_t[] = {"RoCE v1", "roce v2", "RoCEv2", "RoCE v2 ", "", "v2"};
	for (size_t i = 0; i < sizeof(bad_t) / sizeof(bad_t[0]); i++)
		if (ibp_parse_gid_type(bad_t[i], &t) != -EINVAL)
			fail_msg("parse_gid_type('%s') accepted", bad_t[i]);
}

static const struct speed_case {
	const char *s;
	int ret;
	double gts;
} speed_cases[] = {
    {"32.0 GT/s PCIe", 0, 32.0}, {"32 GT/s", 0, 32.0},      {"16.0 GT/s PCIe\n", 0, 16.0},
    {"8.0 GT/s PCIe", 0, 8.0},   {"8 GT/s", 0, 8.0},        {"5.0 GT/s PCIe", 0, 5.0},
    {"2.5 GT/s PCIe", 0, 2.5},   {"2.5 GT/s", 0, 2.5},      {"64.0 GT/s PCIe", 0, 64.0},
    {"Unknown", 0, 0},           {"Unknown speed", 0, 0},   {"32.0 GT/s PCI", -EINVAL, 0},
    {"32.0GT/s", -EINVAL, 0},    {"32.0 Gb/s", -EINVAL, 0}, {"0 GT/s", -ERANGE, 0},
    {"99999 GT/s", -ERANGE, 0},  {"GT/s", -EINVAL, 0},      {"", -EINVAL, 0},
    {"32. GT/s", -EINVAL, 0},    {"-8 GT/s", -EINVAL, 0},   {"unknown", -EINVAL, 0},
};

static void test_parse_link_speed_table_both_spellings(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(speed_cases) / sizeof(speed_cases[0]); i++) {
		double g = -1;
		int r = ibp_parse_link_speed(speed_cases[i].s, &g);
		if (r != speed_cases[i].ret || (r == 0 && fabs(g - speed_cases[i].gts) > 1e-9))
			fail_msg("parse_link_speed('%s') = %d/%g, expected %d/%g", speed_cases[i].s,
				 r, g, speed_cases[i].ret, speed_cases[i].gts);
	}
}

static void test_names_known_and_unknown(void **state)
{
	(void)state;
	assert_string_equal(ibp_port_state_name(IBP_PORT_ACTIVE), "ACTIVE");
	assert_string_equal(ibp_port_state_name(IBP_PORT_DOWN), "DOWN");
	assert_string_equal(ibp_port_state_name(IBP_PORT_STATE_UNKNOWN), "unknown");
	assert_string_equal(ibp_port_state_name((enum ibp_port_state)42), "unknown");
	assert_string_equal(ibp_phys_state_name(IBP_PHYS_LINKUP), "LinkUp");
	assert_string_equal(ibp_phys_state_name(IBP_PHYS_POLLING), "Polling");
	assert_string_equal(ibp_phys_state_name(IBP_PHYS_LINK_ERROR_RECOVERY), "LinkErrorRecovery");
	assert_string_equal(ibp_phys_state_name(IBP_PHYS_UNKNOWN), "unknown");
	assert_string_equal(ibp_link_layer_name(IBP_LL_IB), "InfiniBand");
	assert_string_equal(ibp_link_layer_name(IBP_LL_ETH), "Ethernet");
	assert_string_equal(ibp_link_layer_name(IBP_LL_UNKNOWN), "unknown");
	assert_string_equal(ibp_pcie_gen_name(2.5), "Gen1");
	assert_string_equal(ibp_pcie_gen_name(8.0), "Gen3");
	assert_string_equal(ibp_pcie_gen_name(16.0), "Gen4");
	assert_string_equal(ibp_pcie_gen_name(32.0), "Gen5");
	assert_string_equal(ibp_pcie_gen_name(64.0), "Gen6");
	assert_string_equal(ibp_pcie_gen_name(0), "unknown");
	assert_string_equal(ibp_pcie_gen_name(12.0), "unknown");
}

/* ---------------------------------------------------------------------- */
/* Inventory helpers                                                        */

struct loaded {
	char *root;
	struct ibp_sysfs fs;
	struct ibp_inventory inv;
	struct ibp_findings findings;
};

static void load_root(struct loaded *l)
{
	assert_non_null(l->root);
	assert_int_equal(ibp_sysfs_open(&l->fs, l->root), 0);
	ibp_findings_init(&l->findings);
	assert_int_equal(ibp_inventory_load(&l->inv, &l->fs, &l->findings), 0);
}

static void unload(struct loaded *l)
{
	ibp_inventory_release(&l->inv);
	ibp_inventory_release(&l->inv); /* safe twice */
	ibp_findings_release(&l->findings);
	ibp_sysfs_close(&l->fs);
	ibp_fixture_destroy(l->root);
	l->root = NULL;
}

static const struct ibp_port *port1(const struct ibp_inventory *inv, const char *dev)
{
	const struct ibp_hca *h = ibp_inventory_find(inv, dev);
	if (!h)
		fail_msg("device %s not in the inventory", dev);
	assert_true(h->n_ports >= 1);
	return &h->ports[0];
}

static const struct ibp_netdev *netdev_of(const struct ibp_hca *h, const char *name)
{
	for (size_t i = 0; i < h->n_netdevs; i++)
		if (!strcmp(h->netdevs[i].name, name))
			return &h->netdevs[i];
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Generated trees                                                          */

static void test_inventory_dgx_h100_all_fields(void **state)
{
	(void)state;
	struct loaded l = {.root =
			       ibp_fixture_make("--preset", "dgx-h100", "--node", "gpu017", NULL)};
	load_root(&l);
	assert_int_equal(l.findings.n, 0);
	assert_int_equal(l.inv.n_hcas, 8);
	const char *order[] = {"mlx5_0", "mlx5_3", "mlx5_4",  "mlx5_5",
			       "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"};
	for (size_t i = 0; i < 8; i++)
		assert_string_equal(l.inv.hcas[i].name, order[i]);

	const struct ibp_hca *h = ibp_inventory_find(&l.inv, "mlx5_10");
	assert_non_null(h);
	assert_string_equal(h->pci, "0000:ce:00.0");
	assert_string_equal(h->upstream_pci, "0000:cd:00.0");
	assert_int_equal(h->numa, 1);
	assert_string_equal(h->local_cpus, "56-111,168-223");
	assert_string_equal(h->fw_ver, "28.39.1002");
	assert_string_equal(h->hca_type, "MT4129");
	assert_string_equal(h->board_id, "MT_0000000838");
	assert_string_equal(h->node_desc, "gpu017 mlx5_10");
	assert_int_equal(strlen(h->node_guid), 19);
	assert_true(h->pcie.cur_gts == 32.0 && h->pcie.max_gts == 32.0);
	assert_int_equal(h->pcie.cur_width, 16);
	assert_int_equal(h->pcie.max_width, 16);
	assert_true(h->pcie_upstream.cur_gts == 32.0);
	assert_int_equal(h->pcie_upstream.cur_width, 16);
	assert_int_equal(h->n_netdevs, 1);
	assert_string_equal(h->netdevs[0].name, "ibp206s0");
	assert_string_equal(h->netdevs[0].operstate, "up");
	assert_int_equal(h->netdevs[0].mtu, 4092);
	assert_int_equal(h->netdevs[0].dev_port, 0);

	assert_int_equal(h->n_ports, 1);
	const struct ibp_port *p = &h->ports[0];
	assert_int_equal(p->num, 1);
	assert_int_equal(p->state, IBP_PORT_ACTIVE);
	assert_int_equal(p->phys_state, IBP_PHYS_LINKUP);
	assert_true(p->rate.known && p->rate.gbps == 400.0 && p->rate.width == 4);
	assert_string_equal(p->rate.speed, "NDR");
	assert_int_equal(p->link_layer, IBP_LL_IB);
	assert_true(p->lid > 0);
	assert_int_equal(p->sm_lid, 1);
	assert_int_equal(p->lid_mask_count, 0);
	assert_string_equal(p->netdev, "ibp206s0"); /* IPoIB: dev_port 0 -> port 1 */
	assert_int_equal(p->n_gids, 1);             /* empty slots skipped */
	assert_int_equal(p->gids[0].index, 0);
	assert_int_equal(strncmp(p->gids[0].addr, "fe80:0000:0000:0000:", 20), 0);
	assert_int_equal(p->gids[0].type, IBP_GID_TYPE_IB_ROCE_V1);
	assert_string_equal(p->gids[0].ndev, "");
	assert_int_equal(p->n_counters, 21 + 26);
	const struct ibp_counter *c = ibp_port_counter(p, "link_downed");
	assert_non_null(c);
	assert_false(c->hw);
	assert_int_equal(c->bits, 8);
	assert_int_equal(c->value, 0);
	assert_false(c->saturated);
	c = ibp_port_counter(p, "port_xmit_data");
	assert_int_equal(c->bits, 64); /* extended counters present */
	c = ibp_port_counter(p, "out_of_buffer");
	assert_non_null(c);
	assert_true(c->hw);
	assert_null(ibp_port_counter(p, "no_such_counter"));
	assert_null(ibp_inventory_find(&l.inv, "mlx5_1"));
	assert_null(ibp_inventory_find(&l.inv, "mlx5"));
	unload(&l);
}

/*
 * IBP_INVENTORY_NO_COUNTERS (the plugin's load on a cached verdict): no
 * counter, and every other field as the full load reads it, on an IB and a
 * RoCE tree (GIDs and their netdevs decide a RoCE port's netdev).
 */
static void test_inventory_no_counters_same_but_counters(void **state)
{
	static const char *const presets[] = {"dgx-h100", "roce"};

	(void)state;
	for (size_t t = 0; t < 2; t++) {
		struct loaded l = {.root = ibp_fixture_make("--preset", presets[t], NULL)};
		struct ibp_inventory lite;
		struct ibp_findings f;
		size_t counters = 0;

		load_root(&l);
		ibp_findings_init(&f);
		assert_int_equal(
		    ibp_inventory_load_opts(&lite, &l.fs, IBP_INVENTORY_NO_COUNTERS, &f), 0);
		assert_int_equal(f.n, l.findings.n);
		assert_int_equal(lite.n_hcas, l.inv.n_hcas);
		for (size_t i = 0; i < lite.n_hcas; i++) {
			const struct ibp_hca *a = &l.inv.hcas[i], *b = &lite.hcas[i];

			assert_string_equal(a->name, b->name);
			assert_string_equal(a->pci, b->pci);
			assert_string_equal(a->driver, b->driver);
			assert_string_equal(a->local_cpus, b->local_cpus);
			assert_string_equal(a->fw_ver, b->fw_ver);
			assert_int_equal(a->numa, b->numa);
			assert_int_equal(a->node_type, b->node_type);
			assert_int_equal(a->pcie.cur_width, b->pcie.cur_width);
			assert_int_equal(a->n_netdevs, b->n_netdevs);
			assert_int_equal(a->n_ports, b->n_ports);
			for (size_t k = 0; k < a->n_ports; k++) {
				const struct ibp_port *pa = &a->ports[k], *pb = &b->ports[k];

				assert_int_equal(pa->num, pb->num);
				assert_int_equal(pa->state, pb->state);
				assert_int_equal(pa->phys_state, pb->phys_state);
				assert_int_equal(pa->link_layer, pb->link_layer);
				assert_true(pa->rate.gbps == pb->rate.gbps);
				assert_int_equal(pa->lid, pb->lid);
				assert_int_equal(pa->n_gids, pb->n_gids);
				for (size_t g = 0; g < pa->n_gids; g++) {
					assert_string_equal(pa->gids[g].addr, pb->gids[g].addr);
					assert_string_equal(pa->gids[g].ndev, pb->gids[g].ndev);
				}
				assert_string_equal(pa->netdev, pb->netdev);
				counters += pa->n_counters;
				assert_int_equal(pb->n_counters, 0);
				assert_null(pb->counters);
				assert_false(pb->counters_na);
			}
		}
		assert_true(counters > 0); /* the full load read them */
		ibp_inventory_release(&lite);
		ibp_findings_release(&f);
		unload(&l);
	}
}

static void test_inventory_roce_bond_gids_netdevs(void **state)
{
	(void)state;
	struct loaded l = {.root = ibp_fixture_make("--preset", "roce", NULL)};
	load_root(&l);
	assert_int_equal(l.findings.n, 0);
	assert_int_equal(l.inv.n_hcas, 3);
	assert_string_equal(l.inv.hcas[2].name, "mlx5_bond_0");

	const struct ibp_port *p = port1(&l.inv, "mlx5_0");
	assert_int_equal(p->link_layer, IBP_LL_ETH);
	assert_true(p->rate.gbps == 200.0 && p->rate.width == 4);
	assert_string_equal(p->rate.speed, "HDR");
	assert_string_equal(p->netdev, "ens1f0np0");
	assert_int_equal(p->n_gids, 4);
	assert_int_equal(p->gids[1].type, IBP_GID_TYPE_ROCE_V2);
	assert_false(p->gids[1].ipv4_mapped);
	assert_int_equal(p->gids[3].index, 3);
	assert_int_equal(p->gids[3].type, IBP_GID_TYPE_ROCE_V2);
	assert_true(p->gids[3].ipv4_mapped);
	assert_string_equal(p->gids[3].addr, "0000:0000:0000:0000:0000:ffff:0a00:000b");
	assert_string_equal(p->gids[3].ndev, "ens1f0np0");

	const struct ibp_hca *b = ibp_inventory_find(&l.inv, "mlx5_bond_0");
	p = &b->ports[0];
	assert_true(p->rate.gbps == 200.0 && p->rate.width == 2);
	assert_string_equal(p->rate.speed, "NDR");
	assert_string_equal(p->netdev, "bond0");
	/* The bond's netdev is not under the PCI function: read from class/net. */
	const struct ibp_netdev *nd = netdev_of(b, "bond0");
	assert_non_null(nd);
	assert_string_equal(nd->operstate, "up");
	assert_int_equal(nd->mtu, 9000);
	assert_non_null(netdev_of(b, "ens3f0np0"));
	unload(&l);
}

static void test_inventory_empty_node_no_devices(void **state)
{
	(void)state;
	struct loaded l = {.root = ibp_fixture_make("--preset", "empty", NULL)};
	load_root(&l);
	assert_int_equal(l.inv.n_hcas, 0);
	assert_null(l.inv.hcas);
	assert_int_equal(l.findings.n, 0);
	unload(&l);

	/* An empty root (no sys at all) is also "no device", not an error. */
	char *dir = ibp_fixture_tmpdir();
	struct loaded e = {.root = dir};
	load_root(&e);
	assert_int_equal(e.inv.n_hcas, 0);
	unload(&e);
}

/* One generated tree per fault; CHECK asserts what the inventory must show. */
struct fault_case {
	const char *fault;
	const char *dev;
	void (*check)(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p);
};

static void ck_down(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	assert_int_equal(p->state, IBP_PORT_DOWN);
	assert_int_equal(p->phys_state, IBP_PHYS_POLLING);
	assert_true(p->rate.gbps == 40.0);
	assert_int_equal(p->lid, 0);
	assert_int_equal(p->sm_lid, 0);
	assert_string_equal(h->netdevs[0].operstate, "down");
}
static void ck_polling(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_int_equal(p->state, IBP_PORT_DOWN);
	assert_int_equal(p->phys_state, IBP_PHYS_POLLING);
}
static void ck_disabled(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_int_equal(p->state, IBP_PORT_DOWN);
	assert_int_equal(p->phys_state, IBP_PHYS_DISABLED);
}
static void ck_init(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_int_equal(p->state, IBP_PORT_INIT);
	assert_int_equal(p->phys_state, IBP_PHYS_LINKUP);
	assert_int_equal(p->sm_lid, 0);
	assert_int_equal(p->lid, 0);
}
static void ck_armed(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_int_equal(p->state, IBP_PORT_ARMED);
}
static void ck_width1(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_true(p->rate.known && p->rate.gbps == 100.0 && p->rate.width == 1);
	assert_string_equal(p->rate.speed, "NDR");
}
static void ck_width2(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_true(p->rate.gbps == 200.0 && p->rate.width == 2);
}
static void ck_hdr(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_true(p->rate.gbps == 200.0 && p->rate.width == 4);
	assert_string_equal(p->rate.speed, "HDR");
}
static void ck_edr(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_true(p->rate.gbps == 100.0 && p->rate.width == 4);
	assert_string_equal(p->rate.speed, "EDR");
}
static void ck_nosm(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_int_equal(p->sm_lid, 0);
	assert_true(p->lid > 0);
	assert_int_equal(p->state, IBP_PORT_ACTIVE);
}
static void ck_lid0(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_int_equal(p->lid, 0);
	assert_int_equal(p->sm_lid, 1);
}
static void ck_eth(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	assert_int_equal(p->link_layer, IBP_LL_ETH);
}
static void ck_pcie(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)p;
	assert_true(h->pcie.cur_gts == 16.0 && h->pcie.max_gts == 32.0);
	assert_int_equal(h->pcie.cur_width, 8);
	assert_int_equal(h->pcie.max_width, 16);
	assert_true(h->pcie_upstream.cur_gts == 32.0); /* the bridge is fine */
}
static void ck_netdev_down(const struct loaded *l, const struct ibp_hca *h,
			   const struct ibp_port *p)
{
	(void)l;
	assert_int_equal(p->state, IBP_PORT_ACTIVE);
	assert_string_equal(p->netdev, h->netdevs[0].name);
	assert_string_equal(h->netdevs[0].operstate, "down");
}
static void ck_mtu(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)p;
	assert_int_equal(h->netdevs[0].mtu, 2044);
}
static void ck_link_downed(const struct loaded *l, const struct ibp_hca *h,
			   const struct ibp_port *p)
{
	(void)l;
	(void)h;
	const struct ibp_counter *c = ibp_port_counter(p, "link_downed");
	assert_int_equal(c->value, 255);
	assert_true(c->saturated);
}
static void ck_symbol(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	const struct ibp_counter *c = ibp_port_counter(p, "symbol_error");
	assert_int_equal(c->value, 65534);
	assert_false(c->saturated);
	assert_int_equal(c->bits, 16);
}
static void ck_vl15_octal(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	const struct ibp_counter *c = ibp_port_counter(p, "VL15_dropped");
	assert_int_equal(c->value, 21); /* "021" is decimal */
	assert_int_equal(c->read_errno, 0);
}
static void ck_hwcounter(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)l;
	(void)h;
	const struct ibp_counter *c = ibp_port_counter(p, "out_of_buffer");
	assert_true(c->hw);
	assert_int_equal(c->value, 123456789012ULL);
	assert_int_equal(c->bits, 0);
}
static void ck_missing(const struct loaded *l, const struct ibp_hca *h, const struct ibp_port *p)
{
	(void)h;
	(void)p;
	assert_int_equal(l->inv.n_hcas, 1);
	assert_null(ibp_inventory_find(&l->inv, "mlx5_1"));
	assert_int_equal(l->findings.n, 0);
}
static void ck_unreadable_state(const struct loaded *l, const struct ibp_hca *h,
				const struct ibp_port *p)
{
	(void)h;
	assert_int_equal(p->state, IBP_PORT_STATE_UNKNOWN);
	const struct ibp_finding *f =
	    ibp_test_find_code(&l->findings, "sysfs_unreadable", "mlx5_0");
	assert_non_null(f);
	assert_int_equal(f->severity, IBP_SEV_WARN);
	assert_int_equal(f->fclass, IBP_CLASS_NODE);
	assert_int_equal(f->port, 1);
	assert_non_null(strstr(f->observed, "sys/class/infiniband/mlx5_0/ports/1/state"));
	assert_non_null(strstr(f->observed, "is a directory"));
	assert_true(f->fix[0] != '\0');
	assert_int_equal(l->findings.n, 1);
}
static void ck_unreadable_counter(const struct loaded *l, const struct ibp_hca *h,
				  const struct ibp_port *p)
{
	(void)h;
	const struct ibp_counter *c = ibp_port_counter(p, "VL15_dropped");
	assert_non_null(c);
	assert_int_equal(c->read_errno, -EISDIR);
	assert_non_null(ibp_test_find_code(&l->findings, "sysfs_unreadable", "mlx5_0"));
	/* The rest of the port still loaded. */
	assert_int_equal(p->state, IBP_PORT_ACTIVE);
	assert_int_equal(ibp_port_counter(p, "symbol_error")->read_errno, 0);
}
static void ck_malformed_state(const struct loaded *l, const struct ibp_hca *h,
			       const struct ibp_port *p)
{
	(void)h;
	assert_int_equal(p->state, IBP_PORT_STATE_UNKNOWN);
	const struct ibp_finding *f = ibp_test_find_code(&l->findings, "sysfs_malformed", "mlx5_0");
	assert_non_null(f);
	assert_non_null(strstr(f->observed, "ports/1/state reads '4: DOWN'"));
	assert_int_equal(l->findings.n, 1);
}
static void ck_malformed_rate(const struct loaded *l, const struct ibp_hca *h,
			      const struct ibp_port *p)
{
	(void)h;
	assert_false(p->rate.known);
	assert_non_null(ibp_test_find_code(&l->findings, "sysfs_malformed", "mlx5_0"));
}
static void ck_malformed_lid(const struct loaded *l, const struct ibp_hca *h,
			     const struct ibp_port *p)
{
	(void)h;
	assert_int_equal(p->lid, -1);
	assert_non_null(ibp_test_find_code(&l->findings, "sysfs_malformed", "mlx5_0"));
}
static void ck_malformed_counter(const struct loaded *l, const struct ibp_hca *h,
				 const struct ibp_port *p)
{
	(void)h;
	const struct ibp_counter *c = ibp_port_counter(p, "symbol_error");
	assert_int_equal(c->read_errno, -EINVAL);
	assert_int_equal(c->value, 0);
	assert_non_null(ibp_test_find_code(&l->findings, "sysfs_malformed", "mlx5_0"));
}
static void ck_malformed_numa(const struct loaded *l, const struct ibp_hca *h,
			      const struct ibp_port *p)
{
	(void)p;
	assert_int_equal(h->numa, -1);
	const struct ibp_finding *f = ibp_test_find_code(&l->findings, "sysfs_malformed", "mlx5_0");
	assert_non_null(f);
	assert_non_null(strstr(f->observed, "numa_node reads 'zero'"));
}
static void ck_malformed_control(const struct loaded *l, const struct ibp_hca *h,
				 const struct ibp_port *p)
{
	(void)h;
	(void)p;
	const struct ibp_finding *f = ibp_test_find_code(&l->findings, "sysfs_malformed", "mlx5_0");
	assert_non_null(f);
	for (const char *c = f->observed; *c; c++)
		assert_true(*c >= 0x20 && *c < 0x7f); /* escape bytes never reach a terminal */
}

static const struct fault_case fault_cases[] = {
    {"mlx5_0:down", "mlx5_0", ck_down},
    {"mlx5_0:polling", "mlx5_0", ck_polling},
    {"mlx5_0:disabled", "mlx5_0", ck_disabled},
    {"mlx5_0:init", "mlx5_0", ck_init},
    {"mlx5_0:armed", "mlx5_0", ck_armed},
    {"mlx5_0:width=1X", "mlx5_0", ck_width1},
    {"mlx5_0/1:width=2X", "mlx5_0", ck_width2},
    {"mlx5_0:speed=HDR", "mlx5_0", ck_hdr},
    {"mlx5_0:speed=EDR", "mlx5_0", ck_edr},
    {"mlx5_0:nosm", "mlx5_0", ck_nosm},
    {"mlx5_0:lid0", "mlx5_0", ck_lid0},
    {"mlx5_0:eth", "mlx5_0", ck_eth},
    {"mlx5_0:pcie=16.0:8", "mlx5_0", ck_pcie},
    {"mlx5_0:netdev-down", "mlx5_0", ck_netdev_down},
    {"mlx5_0:mtu=2044", "mlx5_0", ck_mtu},
    {"mlx5_0:counter=link_downed=255", "mlx5_0", ck_link_downed},
    {"mlx5_0:counter=symbol_error=65534", "mlx5_0", ck_symbol},
    {"mlx5_0:counter=VL15_dropped=021", "mlx5_0", ck_vl15_octal},
    {"mlx5_0:hwcounter=out_of_buffer=123456789012", "mlx5_0", ck_hwcounter},
    {"mlx5_1:missing", NULL, ck_missing},
    {"mlx5_0/1:unreadable=state", "mlx5_0", ck_unreadable_state},
    {"mlx5_0/1:unreadable=counters/VL15_dropped", "mlx5_0", ck_unreadable_counter},
    {"mlx5_0/1:malformed=state=4: DOWN", "mlx5_0", ck_malformed_state},
    {"mlx5_0/1:malformed=rate=400 Gb/sec (4X HDR)", "mlx5_0", ck_malformed_rate},
    {"mlx5_0/1:malformed=lid=0x10000", "mlx5_0", ck_malformed_lid},
    {"mlx5_0/1:malformed=counters/symbol_error=12abc", "mlx5_0", ck_malformed_counter},
    {"mlx5_0:malformed=device/numa_node=zero", "mlx5_0", ck_malformed_numa},
    {"mlx5_0/1:malformed=link_layer=Infini\x1b[31mBand", "mlx5_0", ck_malformed_control},
};

static void test_inventory_each_fault_seen(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(fault_cases) / sizeof(fault_cases[0]); i++) {
		const struct fault_case *c = &fault_cases[i];
		struct loaded l = {.root = ibp_fixture_make("--preset", "ndr", "--hcas", "2",
							    "--fault", c->fault, NULL)};
		if (!l.root)
			fail_msg("mksysfs.py --fault '%s' failed", c->fault);
		print_message("# fault %s\n", c->fault);
		load_root(&l);
		const struct ibp_hca *h = c->dev ? ibp_inventory_find(&l.inv, c->dev) : NULL;
		c->check(&l, h, h ? &h->ports[0] : NULL);
		/* Every other device is untouched and healthy. */
		for (size_t k = 0; k < l.inv.n_hcas; k++) {
			const struct ibp_hca *o = &l.inv.hcas[k];
			if (h == o)
				continue;
			assert_int_equal(o->ports[0].state, IBP_PORT_ACTIVE);
			assert_true(o->ports[0].rate.gbps == 400.0);
		}
		unload(&l);
	}
}

static void test_inventory_fifo_counter_does_not_block(void **state)
{
	(void)state;
	struct loaded l = {.root = ibp_fixture_make("--preset", "ndr", "--hcas", "1", NULL)};
	assert_non_null(l.root);
	char path[4096];
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error",
		 l.root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
	load_root(&l);
	const struct ibp_counter *c = ibp_port_counter(port1(&l.inv, "mlx5_0"), "symbol_error");
	assert_int_equal(c->read_errno, -ENXIO);
	assert_non_null(ibp_test_find_code(&l.findings, "sysfs_unreadable", "mlx5_0"));
	unload(&l);
}

static void test_inventory_driver_counter_error_no_finding(void **state)
{
	(void)state;
	/* A counter directory with one counter that reads EIO cannot be made in a
	 * fixture; the closest is a GID attribute that is absent (EINVAL on a
	 * live kernel): the GID is kept with an unknown type and no finding. */
	struct loaded l = {.root = ibp_fixture_make("--preset", "roce", "--rm",
						    "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/"
						    "types/1",
						    "--set",
						    "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/"
						    "ndevs/3=",
						    NULL)};
	load_root(&l);
	assert_int_equal(l.findings.n, 0);
	const struct ibp_port *p = port1(&l.inv, "mlx5_0");
	assert_int_equal(p->n_gids, 4);
	assert_int_equal(p->gids[1].type, IBP_GID_TYPE_UNKNOWN);
	assert_string_equal(p->gids[3].ndev, "");
	assert_string_equal(p->netdev, "ens1f0np0");
	unload(&l);
}

static void test_inventory_no_class_dir_scans_pci(void **state)
{
	(void)state;
	struct loaded l = {.root = ibp_fixture_make("--preset", "ndr", "--hcas", "3", "--rm",
						    "sys/class/infiniband", NULL)};
	load_root(&l);
	assert_int_equal(l.inv.n_hcas, 3);
	assert_string_equal(l.inv.hcas[2].name, "mlx5_2");
	assert_string_equal(l.inv.hcas[0].pci, "0000:09:00.0");
	assert_int_equal(l.inv.hcas[2].numa, 1);
	unload(&l);

	/* An empty class directory means no device: PCI is not scanned. */
	struct loaded e = {.root = ibp_fixture_make("--preset", "ndr", "--hcas", "2", "--rm",
						    "sys/class/infiniband", NULL)};
	assert_int_equal(ibp_fixture_mkdir(e.root, "sys/class/infiniband"), 0);
	load_root(&e);
	assert_int_equal(e.inv.n_hcas, 0);
	unload(&e);
}

static void test_inventory_32_hcas_natural_order(void **state)
{
	(void)state;
	struct loaded l = {.root = ibp_fixture_make("--preset", "ndr", "--hcas", "32", NULL)};
	load_root(&l);
	assert_int_equal(l.inv.n_hcas, 32);
	char want[16];
	for (size_t i = 0; i < 32; i++) {
		snprintf(want, sizeof(want), "mlx5_%zu", i);
		assert_string_equal(l.inv.hcas[i].name, want);
		assert_int_equal(l.inv.hcas[i].ports[0].state, IBP_PORT_ACTIVE);
	}
	assert_int_equal(l.findings.n, 0);
	unload(&l);
}

/* ---------------------------------------------------------------------- */
/* Real captures                                                            */

static char *real_tree(const char *sub, const char *place)
{
	const char *real = ibp_fixture_real_dir();
	if (!real)
		return NULL;
	char src[4096], dst[4096];
	snprintf(src, sizeof(src), "%s/sysfs/%s", real, sub);
	struct stat st;
	if (stat(src, &st) < 0)
		return NULL;
	char *dir = ibp_fixture_tmpdir();
	assert_non_null(dir);
	char *root = malloc(strlen(dir) + 8);
	assert_non_null(root);
	sprintf(root, "%s/root", dir);
	free(dir);
	/* A link would resolve inside the root (and lead nowhere): copy it there. */
	snprintf(dst, sizeof(dst), "%s/%s", root, place);
	assert_int_equal(ibp_fixture_mkdir(root, place), 0);
	assert_int_equal(rmdir(dst), 0);
	assert_int_equal(ibp_fixture_copy(src, dst), 0);
	return root;
}

static void test_inventory_real_h100_ndr_values(void **state)
{
	(void)state;
	struct loaded l = {
	    .root = real_tree("gpud-h100-ndr-sys-class-infiniband", "sys/class/infiniband")};
	if (!l.root) {
		print_message("# real fixtures not found (IBP_REAL_FIXTURES or "
			      "../shared/fixtures/real): skipping\n");
		skip();
	}
	load_root(&l);
	assert_int_equal(l.findings.n, 0);
	assert_int_equal(l.inv.n_hcas, 9);
	assert_string_equal(l.inv.hcas[8].name, "mlx5_bond_0");
	const struct ibp_port *b = port1(&l.inv, "mlx5_bond_0");
	assert_int_equal(b->link_layer, IBP_LL_ETH);
	assert_true(b->rate.gbps == 200.0 && b->rate.width == 2);
	assert_string_equal(b->rate.speed, "NDR");
	assert_int_equal(b->state, IBP_PORT_ACTIVE);

	const struct ibp_port *p = port1(&l.inv, "mlx5_1");
	assert_int_equal(p->link_layer, IBP_LL_IB);
	assert_true(p->rate.gbps == 400.0 && p->rate.width == 4);
	const struct ibp_counter *c = ibp_port_counter(p, "link_downed");
	assert_int_equal(c->value, 255);
	assert_true(c->saturated);
	c = ibp_port_counter(p, "port_rcv_errors");
	assert_int_equal(c->value, 14);
	assert_false(c->saturated);

	size_t saturated_ebo = 0, saturated_ld = 0;
	for (size_t i = 0; i < l.inv.n_hcas; i++) {
		const struct ibp_hca *h = &l.inv.hcas[i];
		assert_string_equal(h->pci, ""); /* class directory only: no device link */
		assert_int_equal(h->numa, -1);
		assert_int_equal(h->ports[0].lid, -1);
		c = ibp_port_counter(&h->ports[0], "excessive_buffer_overrun_errors");
		assert_int_equal(c->value, 15);
		saturated_ebo += c->saturated;
		saturated_ld += ibp_port_counter(&h->ports[0], "link_downed")->saturated;
	}
	assert_int_equal(saturated_ebo, 9);
	assert_int_equal(saturated_ld, 1);
	assert_string_equal(ibp_inventory_find(&l.inv, "mlx5_0")->fw_ver, "28.41.1000");
	unload(&l);
}

static void test_inventory_real_fdr_pci_tree_values(void **state)
{
	(void)state;
	const char *real = ibp_fixture_real_dir();
	char src[4096];
	struct stat st;
	if (real)
		snprintf(src, sizeof(src), "%s/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr", real);
	if (!real || stat(src, &st) < 0) {
		print_message("# real fixtures not found (IBP_REAL_FIXTURES or "
			      "../shared/fixtures/real): skipping\n");
		skip();
	}
	/* Read in place: the reader never writes, and the tree has no class dir. */
	struct ibp_sysfs fs;
	struct ibp_inventory inv;
	struct ibp_findings f = {0};
	assert_int_equal(ibp_sysfs_open(&fs, src), 0);
	assert_int_equal(ibp_inventory_load(&inv, &fs, &f), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(inv.n_hcas, 1);
	const struct ibp_hca *h = &inv.hcas[0];
	assert_string_equal(h->name, "mlx4_0");
	assert_string_equal(h->pci, "0000:82:00.0");
	assert_int_equal(h->numa, 1);
	assert_string_equal(h->local_cpus, "8-15");
	assert_string_equal(h->node_guid, "0002:c903:00f9:bfa0");
	assert_string_equal(h->node_desc, "c412-603 HCA-1");
	const struct ibp_port *p = &h->ports[0];
	assert_true(p->rate.gbps == 56.0 && p->rate.width == 4);
	assert_string_equal(p->rate.speed, "FDR");
	assert_int_equal(p->lid, 0x3a4);
	assert_int_equal(p->sm_lid, 1);
	assert_int_equal(p->state, IBP_PORT_ACTIVE);
	assert_int_equal(p->n_gids, 1); /* gids/1 is the prefix with a zero interface ID */
	assert_string_equal(p->gids[0].addr, "fe80:0000:0000:0000:0002:c903:00f9:bfa1");
	assert_int_equal(p->n_counters, 17);
	assert_int_equal(ibp_port_counter(p, "port_xmit_data")->bits, 32); /* not extended */
	assert_int_equal(ibp_port_counter(p, "port_xmit_wait")->value, 21833);
	ibp_inventory_release(&inv);
	ibp_findings_release(&f);
	ibp_sysfs_close(&fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_port_state_table_strict),
	    cmocka_unit_test(test_parse_rate_table_strict),
	    cmocka_unit_test(test_parse_link_layer_and_gid_type_table),
	    cmocka_unit_test(test_parse_link_speed_table_both_spellings),
	    cmocka_unit_test(test_names_known_and_unknown),
	    cmocka_unit_test(test_inventory_dgx_h100_all_fields),
	    cmocka_unit_test(test_inventory_roce_bond_gids_netdevs),
	    cmocka_unit_test(test_inventory_empty_node_no_devices),
	    cmocka_unit_test(test_inventory_each_fault_seen),
	    cmocka_unit_test(test_inventory_fifo_counter_does_not_block),
	    cmocka_unit_test(test_inventory_driver_counter_error_no_finding),
	    cmocka_unit_test(test_inventory_no_class_dir_scans_pci),
	    cmocka_unit_test(test_inventory_32_hcas_natural_order),
	    cmocka_unit_test(test_inventory_no_counters_same_but_counters),
	    cmocka_unit_test(test_inventory_real_h100_ndr_values),
	    cmocka_unit_test(test_inventory_real_fdr_pci_tree_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
