/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the health checks (helpers/node/health.c): every check with a
 * passing and a failing case on hand-built inventories, then the real H100
 * capture, a real GCM snapshot (netdev down under an ACTIVE port) and
 * generated trees through ibp_health_gather().
 */
#include <errno.h>
#include <limits.h>
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

#include "ibprep/health.h"

#define NPORTS 8

static const char *const counter_names[] = {
    "symbol_error",   "link_downed",    "port_rcv_errors", "excessive_buffer_overrun_errors",
    "port_xmit_wait", "port_xmit_data",
};
#define NCOUNTERS (sizeof(counter_names) / sizeof(counter_names[0]))

/* A healthy node: NPORTS single-port NDR IB HCAs, all fields known. */
static void make_node(struct ibp_health_input *in, size_t n)
{
	ibp_health_input_init(in);
	snprintf(in->node, sizeof(in->node), "gpu017");
	in->inv.hcas = calloc(n, sizeof(struct ibp_hca));
	assert_non_null(in->inv.hcas);
	in->inv.n_hcas = n;
	for (size_t i = 0; i < n; i++) {
		struct ibp_hca *h = &in->inv.hcas[i];
		snprintf(h->name, sizeof(h->name), "mlx5_%zu", i);
		snprintf(h->hca_type, sizeof(h->hca_type), "MT4129");
		snprintf(h->pci, sizeof(h->pci), "0000:%02zx:00.0", 0x10 + i);
		h->numa = i < n / 2 ? 0 : 1;
		h->pcie = (struct ibp_pcie_link){32, 32, 16, 16};
		h->pcie_upstream = (struct ibp_pcie_link){32, 32, 16, 16};
		h->ports = calloc(1, sizeof(struct ibp_port));
		h->n_ports = 1;
		struct ibp_port *p = &h->ports[0];
		p->num = 1;
		p->state = IBP_PORT_ACTIVE;
		p->phys_state = IBP_PHYS_LINKUP;
		p->rate = (struct ibp_rate){.known = true, .gbps = 400, .width = 4, .speed = "NDR"};
		p->link_layer = IBP_LL_IB;
		p->lid = (int64_t)i + 2;
		p->sm_lid = 1;
		p->lid_mask_count = 0;
		snprintf(p->netdev, sizeof(p->netdev), "ibp%us0", (unsigned)(i & 0xff));
		p->counters = calloc(NCOUNTERS, sizeof(struct ibp_counter));
		p->n_counters = NCOUNTERS;
		for (size_t k = 0; k < NCOUNTERS; k++)
			snprintf(p->counters[k].name, sizeof(p->counters[k].name), "%s",
				 counter_names[k]);
		p->counters[4].value = 2489603687ULL; /* port_xmit_wait: congestion, not judged */
		h->netdevs = calloc(1, sizeof(struct ibp_netdev));
		h->n_netdevs = 1;
		snprintf(h->netdevs[0].name, sizeof(h->netdevs[0].name), "%s", p->netdev);
		snprintf(h->netdevs[0].operstate, sizeof(h->netdevs[0].operstate), "up");
		h->netdevs[0].mtu = 4092;
		h->netdevs[0].dev_port = 0;
	}
}

static struct ibp_counter *ctr(struct ibp_health_input *in, size_t hca, const char *name)
{
	struct ibp_port *p = &in->inv.hcas[hca].ports[0];
	for (size_t k = 0; k < p->n_counters; k++)
		if (!strcmp(p->counters[k].name, name))
			return &p->counters[k];
	fail_msg("no counter %s", name);
	return NULL;
}

/* Makes HCA I a RoCE port with the given GIDs (type, address). */
static void make_roce(struct ibp_health_input *in, size_t i, size_t ngids,
		      const enum ibp_gid_type *types, const char *const *addrs)
{
	struct ibp_port *p = &in->inv.hcas[i].ports[0];
	p->link_layer = IBP_LL_ETH;
	p->lid = 0;
	p->sm_lid = 0;
	snprintf(in->inv.hcas[i].hca_type, sizeof(in->inv.hcas[i].hca_type), "MT41692");
	p->gids = calloc(ngids, sizeof(struct ibp_gid));
	p->n_gids = ngids;
	for (size_t g = 0; g < ngids; g++) {
		p->gids[g].index = (unsigned)g;
		p->gids[g].type = types[g];
		snprintf(p->gids[g].addr, sizeof(p->gids[g].addr), "%s", addrs[g]);
		snprintf(p->gids[g].ndev, sizeof(p->gids[g].ndev), "eth%zu", i);
		p->gids[g].ipv4_mapped = !strncmp(addrs[g], "0000:0000:0000:0000:0000:ffff", 29);
	}
}

/* ---- the table ------------------------------------------------------------------ */

struct hcase {
	const char *name;
	void (*mutate)(struct ibp_health_input *in);
	const char *policy[4];
	const char *code; /* expected finding code, NULL: no finding of warn or worse */
	enum ibp_severity sev;
	int fclass;
	size_t count;         /* findings with that code */
	const char *device;   /* of the first such finding, NULL: not checked */
	const char *observed; /* substring of its observed text, NULL: not checked */
	const char *expected; /* substring of its expected text */
};

static void m_none(struct ibp_health_input *in)
{
	(void)in;
}
static void m_polling(struct ibp_health_input *in)
{
	in->inv.hcas[2].ports[0].state = IBP_PORT_DOWN;
	in->inv.hcas[2].ports[0].phys_state = IBP_PHYS_POLLING;
	in->inv.hcas[2].ports[0].rate = (struct ibp_rate){true, 40, 4, "QDR"};
}
static void m_disabled(struct ibp_health_input *in)
{
	in->inv.hcas[7].ports[0].state = IBP_PORT_DOWN;
	in->inv.hcas[7].ports[0].phys_state = IBP_PHYS_DISABLED;
}
static void m_init(struct ibp_health_input *in)
{
	in->inv.hcas[6].ports[0].state = IBP_PORT_INIT;
	in->inv.hcas[6].ports[0].lid = 0;
	in->inv.hcas[6].ports[0].sm_lid = 0;
}
static void m_armed(struct ibp_health_input *in)
{
	in->inv.hcas[1].ports[0].state = IBP_PORT_ARMED;
}
static void m_recovery(struct ibp_health_input *in)
{
	in->inv.hcas[1].ports[0].phys_state = IBP_PHYS_LINK_ERROR_RECOVERY;
}
static void m_state_unknown(struct ibp_health_input *in)
{
	in->inv.hcas[1].ports[0].state = IBP_PORT_STATE_UNKNOWN;
	in->inv.hcas[1].ports[0].phys_state = IBP_PHYS_UNKNOWN;
}
static void m_width1x(struct ibp_health_input *in)
{
	in->inv.hcas[3].ports[0].rate = (struct ibp_rate){true, 100, 1, "NDR"};
}
static void m_bond_2x(struct ibp_health_input *in)
{
	/* the real H100 capture: a 2X RoCE bond on another model beside 4X IB */
	static const enum ibp_gid_type t[] = {IBP_GID_TYPE_ROCE_V2};
	static const char *const a[] = {"0000:0000:0000:0000:0000:ffff:0a00:0005"};
	make_roce(in, 7, 1, t, a);
	in->inv.hcas[7].ports[0].rate = (struct ibp_rate){true, 200, 2, "NDR"};
}
static void m_eth_same_model_2x(struct ibp_health_input *in)
{
	static const enum ibp_gid_type t[] = {IBP_GID_TYPE_ROCE_V2};
	static const char *const a[] = {"0000:0000:0000:0000:0000:ffff:0a00:0005"};
	make_roce(in, 7, 1, t, a);
	snprintf(in->inv.hcas[7].hca_type, sizeof(in->inv.hcas[7].hca_type), "MT4129");
	in->inv.hcas[7].ports[0].rate = (struct ibp_rate){true, 200, 2, "NDR"};
}
static void m_hdr_one(struct ibp_health_input *in)
{
	in->inv.hcas[5].ports[0].rate = (struct ibp_rate){true, 200, 4, "HDR"};
}
static void m_hdr_all(struct ibp_health_input *in)
{
	for (size_t i = 0; i < in->inv.n_hcas; i++)
		in->inv.hcas[i].ports[0].rate = (struct ibp_rate){true, 200, 4, "HDR"};
}
static void m_rate200(struct ibp_health_input *in)
{
	in->inv.hcas[4].ports[0].rate = (struct ibp_rate){true, 200, 2, "NDR"};
}
static void m_nosm(struct ibp_health_input *in)
{
	in->inv.hcas[0].ports[0].sm_lid = 0;
	in->inv.hcas[0].ports[0].lid = 0;
}
static void m_lid0(struct ibp_health_input *in)
{
	in->inv.hcas[0].ports[0].lid = 0;
}
static void m_lid_unknown(struct ibp_health_input *in)
{
	for (size_t i = 0; i < in->inv.n_hcas; i++)
		in->inv.hcas[i].ports[0].lid = in->inv.hcas[i].ports[0].sm_lid = -1;
}
static void m_roce_v1_only(struct ibp_health_input *in)
{
	static const enum ibp_gid_type t[] = {IBP_GID_TYPE_IB_ROCE_V1, IBP_GID_TYPE_IB_ROCE_V1};
	static const char *const a[] = {"fe80:0000:0000:0000:0200:00ff:fe00:0001",
					"0000:0000:0000:0000:0000:ffff:0a00:0001"};
	make_roce(in, 0, 2, t, a);
}
static void m_roce_link_local(struct ibp_health_input *in)
{
	static const enum ibp_gid_type t[] = {IBP_GID_TYPE_IB_ROCE_V1, IBP_GID_TYPE_ROCE_V2};
	static const char *const a[] = {"fe80:0000:0000:0000:0200:00ff:fe00:0001",
					"fe80:0000:0000:0000:0200:00ff:fe00:0001"};
	make_roce(in, 0, 2, t, a);
}
static void m_roce_good(struct ibp_health_input *in)
{
	static const enum ibp_gid_type t[] = {IBP_GID_TYPE_IB_ROCE_V1, IBP_GID_TYPE_ROCE_V2,
					      IBP_GID_TYPE_IB_ROCE_V1, IBP_GID_TYPE_ROCE_V2};
	static const char *const a[] = {
	    "fe80:0000:0000:0000:0200:00ff:fe00:0001", "fe80:0000:0000:0000:0200:00ff:fe00:0001",
	    "0000:0000:0000:0000:0000:ffff:0a00:0001", "0000:0000:0000:0000:0000:ffff:0a00:0001"};
	make_roce(in, 0, 4, t, a);
}
static void m_saturated(struct ibp_health_input *in)
{
	for (size_t i = 0; i < in->inv.n_hcas; i++) {
		struct ibp_counter *c = ctr(in, i, "excessive_buffer_overrun_errors");
		c->value = 15;
		c->bits = 4;
		c->saturated = true;
	}
}
static void m_link_downed(struct ibp_health_input *in)
{
	struct ibp_counter *c = ctr(in, 1, "link_downed");
	c->value = 255;
	c->bits = 8;
	c->saturated = true;
}
static void m_symbol6(struct ibp_health_input *in)
{
	ctr(in, 2, "symbol_error")->value = 6;
}
static void m_unreadable_counter(struct ibp_health_input *in)
{
	struct ibp_counter *c = ctr(in, 2, "symbol_error");
	c->value = 9999;
	c->read_errno = -EINVAL;
}
static void m_grow(struct ibp_health_input *in)
{
	struct ibp_health_input after;
	make_node(&after, in->inv.n_hcas);
	ctr(&after, 3, "symbol_error")->value = 3;
	ctr(&after, 3, "port_xmit_data")->value = 1000; /* data counters do not count */
	in->inv_after = after.inv;
	in->have_after = true;
	in->window_ms = 1000;
}
static void m_empty(struct ibp_health_input *in)
{
	ibp_inventory_release(&in->inv);
}
static void m_pcie_down(struct ibp_health_input *in)
{
	in->inv.hcas[2].pcie.cur_gts = 16;
}
static void m_pcie_x8(struct ibp_health_input *in)
{
	in->inv.hcas[2].pcie.cur_width = 8;
}
static void m_pcie_slot(struct ibp_health_input *in)
{
	in->inv.hcas[2].pcie.cur_gts = 16;
	in->inv.hcas[2].pcie_upstream.max_gts = 16;
	in->inv.hcas[2].pcie_upstream.cur_gts = 16;
}
static void m_pcie_unknown(struct ibp_health_input *in)
{
	in->inv.hcas[2].pcie = (struct ibp_pcie_link){0, 0, 0, 0};
}
static void m_netdev_down(struct ibp_health_input *in)
{
	snprintf(in->inv.hcas[6].netdevs[0].operstate, 16, "down");
}
static void m_netdev_down_roce(struct ibp_health_input *in)
{
	m_roce_good(in);
	snprintf(in->inv.hcas[0].netdevs[0].operstate, 16, "down");
}
static void m_netdev_down_port_inactive(struct ibp_health_input *in)
{
	snprintf(in->inv.hcas[6].netdevs[0].operstate, 16, "down");
	in->inv.hcas[6].ports[0].state = IBP_PORT_DOWN;
	in->inv.hcas[6].ports[0].phys_state = IBP_PHYS_POLLING;
}
static void m_mtu(struct ibp_health_input *in)
{
	in->inv.hcas[1].netdevs[0].mtu = 2044;
}
static void m_memlock_self(struct ibp_health_input *in)
{
	in->memlock_source = IBP_MEMLOCK_SELF;
	in->memlock_kb = 64;
}
static void m_memlock_slurmd(struct ibp_health_input *in)
{
	in->memlock_source = IBP_MEMLOCK_SLURMD;
	in->memlock_kb = 64;
}
static void m_memlock_user(struct ibp_health_input *in)
{
	in->memlock_source = IBP_MEMLOCK_USER;
	in->memlock_kb = 8192;
}
static void m_memlock_unlimited(struct ibp_health_input *in)
{
	in->memlock_source = IBP_MEMLOCK_USER;
	in->memlock_kb = UINT64_MAX;
}
static void m_gpus_no_peermem(struct ibp_health_input *in)
{
	in->gpus_nvidia = 8;
	in->gdr_known = true;
}
static void m_gpus_peermem(struct ibp_health_input *in)
{
	m_gpus_no_peermem(in);
	in->gdr_loaded = true;
}

#define ANY (-1)
/* clang-format off */
static const struct hcase cases[] = {
	{"healthy", m_none, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"polling", m_polling, {NULL}, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_2", "port state DOWN (physical state Polling)", "ACTIVE"},
	{"disabled", m_disabled, {NULL}, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_7", "physical state Disabled", NULL},
	{"init_no_sm", m_init, {NULL}, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_6", "port state INIT (physical state LinkUp)", NULL},
	{"armed", m_armed, {NULL}, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_1", "ARMED", NULL},
	{"phys_recovery", m_recovery, {NULL}, "phys_state_not_linkup", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_1", "LinkErrorRecovery", "LinkUp"},
	{"state_unknown_not_failure", m_state_unknown, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"width_1x", m_width1x, {NULL}, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_3", "link width 1X", "4X (rate 100 Gb/sec, expected 400 Gb/sec)"},
	{"width_policy", m_none, {"min_width=8"}, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE, 8, "mlx5_0", "link width 4X", "8X (min_width)"},
	{"bond_2x_not_degraded", m_bond_2x, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"eth_2x_same_model_not_degraded", m_eth_same_model_2x, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"speed_peer", m_hdr_one, {NULL}, "speed_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_5", "link speed HDR", "NDR"},
	{"speed_all_hdr_no_policy_passes", m_hdr_all, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"speed_policy", m_hdr_all, {"min_speed=NDR"}, "speed_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE, 8, "mlx5_0", "HDR", "NDR (min_speed)"},
	{"speed_policy_met", m_none, {"min_speed=HDR"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"rate_min", m_rate200, {"min_rate=400", "min_width=2"}, "rate_below_min", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_4", "rate 200 Gb/sec (2X NDR)", "at least 400 Gb/sec"},
	{"rate_min_met", m_none, {"min_rate=400"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"link_layer_policy", m_none, {"link_layer=eth"}, "link_layer_mismatch", IBP_SEV_FAIL, IBP_CLASS_NODE, 8, "mlx5_0", "link layer InfiniBand", "Ethernet"},
	{"link_layer_met", m_none, {"link_layer=ib"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"no_sm", m_nosm, {NULL}, "no_subnet_manager", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_0", "SM LID 0", NULL},
	{"lid0", m_lid0, {NULL}, "lid_zero", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_0", "LID 0", NULL},
	{"lid_unknown_not_failure", m_lid_unknown, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"roce_v1_only", m_roce_v1_only, {NULL}, "roce_no_v2_gid", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_0", "no RoCE v2 GID among 2 GIDs", NULL},
	{"roce_link_local", m_roce_link_local, {NULL}, "roce_v2_link_local_only", IBP_SEV_WARN, IBP_CLASS_NODE, 1, "mlx5_0", "index 1", NULL},
	{"roce_gid_index_reported", m_roce_good, {NULL}, "roce_gid_index", IBP_SEV_OK, IBP_CLASS_NODE, 1, "mlx5_0", "RoCE v2 GID index 3 (::ffff:10.0.0.1 on eth0)", NULL},
	{"counters_saturated_aggregated", m_saturated, {NULL}, "counter_high", IBP_SEV_WARN, IBP_CLASS_NODE, 1, "mlx5_[0-7]", "excessive_buffer_overrun_errors at least 15 (4-bit counter saturated) on 8 ports", "at most 10 (counter_warn)"},
	{"counter_link_downed_one", m_link_downed, {NULL}, "counter_high", IBP_SEV_WARN, IBP_CLASS_NODE, 1, "mlx5_1", "link_downed at least 255 (8-bit counter saturated)", "at most 10"},
	{"counter_below_warn", m_symbol6, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"counter_warn_zero", m_symbol6, {"counter_warn=symbol_error=0"}, "counter_high", IBP_SEV_WARN, IBP_CLASS_NODE, 1, "mlx5_2", "symbol_error 6", "at most 0"},
	{"counter_fatal", m_symbol6, {"counter_fail=symbol_error=5"}, "counter_fatal", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_2", "symbol_error 6", "at most 5 (counter_fail)"},
	{"counter_off", m_link_downed, {"counter_warn=link_downed=off"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"counters_disabled", m_link_downed, {"check_counters=no"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"counter_unreadable_skipped", m_unreadable_counter, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"counter_growing", m_grow, {NULL}, "counter_growing", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_3", "symbol_error grew by 3 in 1000 ms", "no growth"},
	{"no_device", m_empty, {NULL}, "no_rdma_device", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, NULL, "no RDMA device", "at least one"},
	{"no_device_expected", m_empty, {"expect_hcas=0"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"hca_count", m_none, {"expect_hcas=9"}, "hca_count_low", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, NULL, "8 RDMA devices", "9 (expect_hcas)"},
	{"hca_count_met", m_none, {"expect_hcas=8"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"hca_count_ignored", m_none, {"expect_hcas=8", "ignore_hcas=mlx5_7"}, "hca_count_low", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, NULL, "7 RDMA devices", NULL},
	{"hca_named_missing", m_none, {"hcas=mlx5_0,mlx5_10"}, "hca_missing", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_10", "not present", NULL},
	{"ports_expected", m_none, {"expect_ports=9"}, "active_ports_low", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, NULL, "8 active ports", "9 (expect_ports)"},
	{"ignored_hca_not_judged", m_polling, {"ignore_hcas=mlx5_2"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"pcie_speed", m_pcie_down, {NULL}, "pcie_downtrained", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_2", "PCIe link 16 GT/s x16 (Gen4)", "32 GT/s x16 (Gen5)"},
	{"pcie_width", m_pcie_x8, {NULL}, "pcie_downtrained", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_2", "x8", "x16"},
	{"pcie_slot", m_pcie_slot, {NULL}, "pcie_slot_limited", IBP_SEV_WARN, IBP_CLASS_NODE, 1, "mlx5_2", "limited by the slot", "32 GT/s x16 (Gen5)"},
	{"pcie_off", m_pcie_down, {"check_pcie=no"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"pcie_unknown", m_pcie_unknown, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"netdev_down_ipoib", m_netdev_down, {NULL}, "netdev_down", IBP_SEV_WARN, IBP_CLASS_NODE, 1, "mlx5_6", "IPoIB interface ibp6s0 operstate down while the port is ACTIVE", "up"},
	{"netdev_down_bootstrap", m_netdev_down, {"socket_ifname=ibp6s0"}, "netdev_down", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_6", NULL, NULL},
	{"netdev_down_roce", m_netdev_down_roce, {NULL}, "netdev_down", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_0", "RoCE interface", NULL},
	{"netdev_down_port_down", m_netdev_down_port_inactive, {NULL}, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_6", NULL, NULL},
	{"netdev_off", m_netdev_down, {"check_netdev=no"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"mtu", m_mtu, {"min_mtu=4092"}, "netdev_mtu_low", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, "mlx5_1", "ibp1s0 MTU 2044", "at least 4092 (min_mtu)"},
	{"mtu_met", m_none, {"min_mtu=4092"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"memlock_self", m_memlock_self, {NULL}, "memlock_low", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, NULL, "locked-memory limit 64 KiB", "unlimited"},
	{"memlock_slurmd_says_whose", m_memlock_slurmd, {NULL}, "memlock_low", IBP_SEV_FAIL, IBP_CLASS_NODE, 1, NULL, "locked-memory limit 64 KiB (slurmd's, which jobs inherit)", "unlimited"},
	{"memlock_user_is_job_fault", m_memlock_user, {NULL}, "memlock_low", IBP_SEV_FAIL, IBP_CLASS_JOB, 1, NULL, "propagated by Slurm", NULL},
	{"memlock_policy_met", m_memlock_user, {"min_memlock=8M"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"memlock_unlimited", m_memlock_unlimited, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"gdr_missing", m_gpus_no_peermem, {NULL}, "gdr_missing", IBP_SEV_WARN, IBP_CLASS_NODE, 1, NULL, "8 NVIDIA GPUs", "nvidia_peermem"},
	{"gdr_loaded", m_gpus_peermem, {NULL}, NULL, 0, ANY, 0, NULL, NULL, NULL},
	{"gdr_off", m_gpus_no_peermem, {"check_gdr=no"}, NULL, 0, ANY, 0, NULL, NULL, NULL},
};
/* clang-format on */

static void test_health_checks_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hcase *t = &cases[i];
		struct ibp_health_input in;
		struct ibp_policy p;
		struct ibp_findings f;
		char err[256];

		make_node(&in, NPORTS);
		t->mutate(&in);
		ibp_policy_init(&p);
		for (size_t k = 0; k < 4 && t->policy[k]; k++)
			if (ibp_policy_set_pair(&p, t->policy[k], err, sizeof(err)))
				fail_msg("%s: policy %s: %s", t->name, t->policy[k], err);
		ibp_findings_init(&f);
		assert_int_equal(ibp_health_check(&in, &p, &f), 0);

		size_t n = 0;
		const struct ibp_finding *first = NULL;
		for (size_t k = 0; k < f.n; k++) {
			if (!f.v[k].node[0] || strcmp(f.v[k].node, "gpu017"))
				fail_msg("%s: finding without the node name", t->name);
			if (t->code && !strcmp(f.v[k].code, t->code)) {
				if (!n++)
					first = &f.v[k];
			} else if (f.v[k].severity >= IBP_SEV_WARN) {
				char line[512];
				ibp_finding_format(&f.v[k], NULL, line, sizeof(line));
				fail_msg("%s: unexpected finding %s: %s", t->name, f.v[k].code,
					 line);
			}
		}
		if (n != t->count)
			fail_msg("%s: %zu findings %s, want %zu", t->name, n,
				 t->code ? t->code : "(none)", t->count);
		if (first) {
			if (first->severity != t->sev)
				fail_msg("%s: severity %d want %d", t->name, first->severity,
					 t->sev);
			if (t->fclass != ANY && (int)first->fclass != t->fclass)
				fail_msg("%s: class %d want %d", t->name, first->fclass, t->fclass);
			if (t->device && strcmp(first->device, t->device))
				fail_msg("%s: device '%s' want '%s'", t->name, first->device,
					 t->device);
			if (t->observed && !strstr(first->observed, t->observed))
				fail_msg("%s: observed '%s' lacks '%s'", t->name, first->observed,
					 t->observed);
			if (t->expected && !strstr(first->expected, t->expected))
				fail_msg("%s: expected '%s' lacks '%s'", t->name, first->expected,
					 t->expected);
			if (!first->fix[0])
				fail_msg("%s: no fix", t->name);
		}
		ibp_findings_release(&f);
		ibp_health_input_release(&in);
	}
}

static void test_health_device_list_matching(void **state)
{
	static const struct {
		const char *list, *dev;
		bool want;
	} m[] = {
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_0", true},
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_5", true},
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_9", true},
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_bond_0", true},
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_2", false},
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_10", false},
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_01", false},
	    {"mlx5_[0-1,4-9],mlx5_bond_0", "mlx5_", false},
	    {"mlx5_1", "mlx5_1", true},
	    {"mlx5_1", "mlx5_10", false},
	    {"mlx5_[", "mlx5_1", false},
	    {"mlx5_[1-", "mlx5_1", false},
	    {"", "mlx5_1", false},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (ibp_health_device_matches(m[i].list, m[i].dev) != m[i].want)
			fail_msg("'%s' in '%s': want %d", m[i].dev, m[i].list, m[i].want);
}

static void test_health_port_severity_uses_lists(void **state)
{
	struct ibp_health_input in;
	struct ibp_policy p;
	struct ibp_findings f = {0};
	(void)state;
	make_node(&in, NPORTS);
	m_saturated(&in);
	m_width1x(&in);
	ibp_policy_init(&p);
	assert_int_equal(ibp_health_check(&in, &p, &f), 0);
	assert_int_equal(ibp_health_port_severity(&f, "mlx5_3", 1), IBP_SEV_FAIL);
	assert_int_equal(ibp_health_port_severity(&f, "mlx5_0", 1), IBP_SEV_WARN);
	assert_int_equal(ibp_health_port_severity(&f, "mlx5_0", 2), IBP_SEV_OK);
	assert_int_equal(ibp_health_port_severity(&f, "mlx5_99", 1), IBP_SEV_OK);
	ibp_findings_release(&f);
	ibp_health_input_release(&in);
}

/* Many ports with names that do not compress: the list is cut, never overflows. */
static void test_health_long_device_list_cut(void **state)
{
	struct ibp_health_input in;
	struct ibp_policy p;
	struct ibp_findings f = {0};
	(void)state;
	make_node(&in, 40);
	for (size_t i = 0; i < in.inv.n_hcas; i++) {
		snprintf(in.inv.hcas[i].name, sizeof(in.inv.hcas[i].name),
			 "hca%c%c_long_device_name", (char)('a' + i % 26), (char)('a' + i / 26));
		ctr(&in, i, "symbol_error")->value = 11;
	}
	ibp_policy_init(&p);
	assert_int_equal(ibp_health_check(&in, &p, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "counter_high");
	assert_int_equal(strlen(f.v[0].device), IBP_DEV_MAX - 1);
	assert_string_equal(f.v[0].device + IBP_DEV_MAX - 4, "...");
	assert_non_null(strstr(f.v[0].observed, "symbol_error 11 on 40 ports"));
	ibp_findings_release(&f);
	ibp_health_input_release(&in);
}

/* ---- trees on disk ------------------------------------------------------------- */

static char tmpdir[PATH_MAX];

static int make_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_health_XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *real_fixtures(void)
{
	const char *env = getenv("IBP_REAL_FIXTURES");
	return env && *env ? env : "../shared/fixtures/real";
}

/* Gathers and checks ROOT with policy pairs; returns the worst severity. */
static enum ibp_severity run_tree(const char *root, const char *const *pairs,
				  struct ibp_findings *f)
{
	struct ibp_sysfs fs;
	struct ibp_policy p;
	struct ibp_health_input in;
	char err[256];

	ibp_policy_init(&p);
	for (size_t i = 0; pairs && pairs[i]; i++)
		assert_int_equal(ibp_policy_set_pair(&p, pairs[i], err, sizeof(err)), 0);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	ibp_health_input_init(&in);
	snprintf(in.node, sizeof(in.node), "testnode");
	assert_int_equal(ibp_health_gather(&in, &fs, &p, f), 0);
	assert_int_equal(ibp_health_check(&in, &p, f), 0);
	ibp_health_input_release(&in);
	ibp_sysfs_close(&fs);
	return ibp_findings_worst(f);
}

static size_t count_code(const struct ibp_findings *f, const char *code,
			 const struct ibp_finding **first)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].code, code) && !n++ && first)
			*first = &f->v[i];
	return n;
}

static void test_health_real_h100_tree(void **state)
{
	char src[PATH_MAX], root[PATH_MAX + 32], link[PATH_MAX + 64];
	struct ibp_findings f = {0};
	const struct ibp_finding *x = NULL;
	(void)state;

	snprintf(src, sizeof(src), "%s/sysfs/gpud-h100-ndr-sys-class-infiniband", real_fixtures());
	if (access(src, R_OK) != 0) {
		printf("# SKIP real H100 tree: %s absent (set IBP_REAL_FIXTURES)\n", src);
		skip();
	}
	char *abs = realpath(src, NULL);
	assert_non_null(abs);
	snprintf(root, sizeof(root), "%s/h100", tmpdir);
	snprintf(link, sizeof(link), "%s/sys/class", root);
	char cmd[PATH_MAX * 3];
	/* a temporary copy: the reader never follows links out of its root */
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp -r '%s' '%s/infiniband'", link, abs, link);
	free(abs);
	assert_int_equal(system(cmd), 0);

	enum ibp_severity worst = run_tree(root, NULL, &f);
	for (size_t i = 0; i < f.n; i++) {
		char line[512];
		ibp_finding_format(&f.v[i], NULL, line, sizeof(line));
		printf("# %s %s\n", ibp_severity_name(f.v[i].severity), line);
	}
	assert_true(worst < IBP_SEV_FAIL);
	/* nine saturated excessive_buffer_overrun_errors: one finding naming them all */
	size_t n = 0;
	for (size_t i = 0; i < f.n; i++)
		if (strstr(f.v[i].observed, "excessive_buffer_overrun_errors")) {
			n++;
			x = &f.v[i];
		}
	assert_int_equal(n, 1);
	assert_string_equal(x->code, "counter_high");
	assert_string_equal(x->device, "mlx5_[0-1,4-9],mlx5_bond_0");
	assert_int_equal(x->port, 1);
	assert_non_null(strstr(x->observed, "at least 15 (4-bit counter saturated) on 9 ports"));
	/* link_downed saturated at 255 on mlx5_1 alone */
	n = 0;
	for (size_t i = 0; i < f.n; i++)
		if (strstr(f.v[i].observed, "link_downed")) {
			n++;
			x = &f.v[i];
		}
	assert_int_equal(n, 1);
	assert_string_equal(x->device, "mlx5_1");
	assert_int_equal(x->severity, IBP_SEV_WARN);
	assert_non_null(strstr(x->observed, "link_downed at least 255 (8-bit counter saturated)"));
	/* the 2X RoCE bond beside 4X IB ports is not degraded */
	assert_int_equal(count_code(&f, "width_degraded", NULL), 0);
	assert_int_equal(count_code(&f, "port_not_active", NULL), 0);
	ibp_findings_release(&f);

	/* admin-marked fatal threshold turns it into a failure */
	static const char *const fatal[] = {"counter_fail=link_downed=100", NULL};
	assert_int_equal(run_tree(root, fatal, &f), IBP_SEV_FAIL);
	assert_int_equal(count_code(&f, "counter_fatal", &x), 1);
	assert_string_equal(x->device, "mlx5_1");
	ibp_findings_release(&f);
}

static void test_health_real_gcm_netdev_down(void **state)
{
	char src[PATH_MAX], root[PATH_MAX + 32], cmd[PATH_MAX * 3];
	struct ibp_findings f = {0};
	const struct ibp_finding *x = NULL;
	(void)state;

	snprintf(src, sizeof(src), "%s/gcm-json/meta-gcm-learn_ib_intf_operstate_down.json",
		 real_fixtures());
	if (access(src, R_OK) != 0) {
		printf("# SKIP GCM snapshot: %s absent (set IBP_REAL_FIXTURES)\n", src);
		skip();
	}
	snprintf(root, sizeof(root), "%s/gcm", tmpdir);
	snprintf(cmd, sizeof(cmd), "python3 tests/fixtures/gcm2sysfs.py '%s' '%s'", src, root);
	assert_int_equal(system(cmd), 0);
	run_tree(root, NULL, &f);
	assert_int_equal(count_code(&f, "netdev_down", &x), 1);
	assert_string_equal(x->device, "mlx5_6");
	assert_non_null(strstr(x->observed, "ib4 operstate down"));
	assert_int_equal(count_code(&f, "port_not_active", NULL), 0);
	ibp_findings_release(&f);
}

/* Generated trees: tests/fixtures/mksysfs.py */
static void gen(const char *name, const char *args)
{
	char cmd[PATH_MAX * 2];
	snprintf(cmd, sizeof(cmd), "python3 tests/fixtures/mksysfs.py %s '%s/%s' >/dev/null", args,
		 tmpdir, name);
	assert_int_equal(system(cmd), 0);
}

static void test_health_generated_trees(void **state)
{
	static const struct {
		const char *name, *args, *code;
		enum ibp_severity worst;
	} t[] = {
	    {"healthy", "--preset dgx-h100 --gdr", NULL, IBP_SEV_OK},
	    {"nogdr", "--preset dgx-h100", "gdr_missing", IBP_SEV_WARN},
	    {"w1x", "--preset dgx-h100 --gdr --fault mlx5_3/1:width=1X", "width_degraded",
	     IBP_SEV_FAIL},
	    {"down", "--preset dgx-h100 --gdr --fault mlx5_4:down", "port_not_active",
	     IBP_SEV_FAIL},
	    {"nosm", "--preset dgx-h100 --gdr --fault mlx5_5:nosm", "no_subnet_manager",
	     IBP_SEV_FAIL},
	    {"pcie", "--preset dgx-h100 --gdr --fault mlx5_0:pcie=16.0:8", "pcie_downtrained",
	     IBP_SEV_FAIL},
	    {"roce", "--preset roce", "roce_gid_index", IBP_SEV_OK},
	    {"nov2", "--preset roce --fault mlx5_0:nov2", "roce_no_v2_gid", IBP_SEV_FAIL},
	    {"empty", "--preset empty", "no_rdma_device", IBP_SEV_FAIL},
	};
	(void)state;
	if (system("python3 -c '' 2>/dev/null") != 0 || access("tests/fixtures/mksysfs.py", R_OK)) {
		printf("# SKIP generated trees: python3 or tests/fixtures/mksysfs.py missing\n");
		skip();
	}
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char root[PATH_MAX + 32];
		struct ibp_findings f = {0};
		gen(t[i].name, t[i].args);
		snprintf(root, sizeof(root), "%s/%s", tmpdir, t[i].name);
		enum ibp_severity w = run_tree(root, NULL, &f);
		if (w != t[i].worst || (t[i].code && !count_code(&f, t[i].code, NULL))) {
			for (size_t k = 0; k < f.n; k++) {
				char line[512];
				ibp_finding_format(&f.v[k], NULL, line, sizeof(line));
				printf("# %s: %s %s\n", t[i].name, f.v[k].code, line);
			}
			fail_msg("%s: worst %d want %d, code %s", t[i].name, w, t[i].worst,
				 t[i].code ? t[i].code : "-");
		}
		ibp_findings_release(&f);
	}
}

static void test_health_counter_window_grows(void **state)
{
	/* a real window: the counter changes between the two reads */
	char root[PATH_MAX + 32], cmd[PATH_MAX * 3];
	struct ibp_sysfs fs;
	struct ibp_policy p;
	struct ibp_health_input in;
	struct ibp_findings f = {0};
	char err[128];
	(void)state;
	if (system("python3 -c '' 2>/dev/null") != 0) {
		printf("# SKIP counter window: python3 missing\n");
		skip();
	}
	gen("window", "--preset ndr --hcas 2");
	snprintf(root, sizeof(root), "%s/window", tmpdir);
	/* bump the counter 100 ms into the 400 ms window */
	snprintf(cmd, sizeof(cmd),
		 "(sleep 0.1; echo 7 > '%s/sys/class/infiniband/mlx5_1/ports/1/counters/"
		 "symbol_error') &",
		 root);
	ibp_policy_init(&p);
	assert_int_equal(ibp_policy_set(&p, "counter_window", "400", err, sizeof(err)), 0);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	ibp_health_input_init(&in);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(ibp_health_gather(&in, &fs, &p, &f), 0);
	assert_true(in.have_after);
	assert_int_equal(in.window_ms, 400);
	assert_int_equal(ibp_health_check(&in, &p, &f), 0);
	const struct ibp_finding *x = NULL;
	assert_int_equal(count_code(&f, "counter_growing", &x), 1);
	assert_string_equal(x->device, "mlx5_1");
	ibp_findings_release(&f);
	ibp_health_input_release(&in);
	ibp_sysfs_close(&fs);
}

/* ---- real ibstat outputs: every Down port, whatever its physical state, is a finding */

static int state_of(const char *s)
{
	static const char *const n[] = {"NOP", "Down", "Initializing", "Armed", "Active"};
	for (int i = 0; i < 5; i++)
		if (!strcmp(s, n[i]))
			return i;
	return IBP_PORT_STATE_UNKNOWN;
}

static int phys_of(const char *s)
{
	static const char *const n[] = {"NOP",
					"Sleep",
					"Polling",
					"Disabled",
					"PortConfigurationTraining",
					"LinkUp",
					"LinkErrorRecovery"};
	for (int i = 0; i < 7; i++)
		if (!strcmp(s, n[i]))
			return i;
	return IBP_PHYS_UNKNOWN;
}

/* Builds an inventory from `ibstat` text: CA name, type, each port's state, rate, LIDs. */
static size_t parse_ibstat(FILE *fp, struct ibp_inventory *inv)
{
	char line[512];
	struct ibp_hca *h = NULL;
	struct ibp_port *p = NULL;
	size_t nports = 0;

	while (fgets(line, sizeof(line), fp)) {
		char *s = line, v[128];
		while (*s == ' ' || *s == '\t')
			s++;
		s[strcspn(s, "\n")] = '\0';
		unsigned u;
		if (sscanf(s, "CA '%63[^']'", v) == 1) {
			inv->hcas = realloc(inv->hcas, (inv->n_hcas + 1) * sizeof(*inv->hcas));
			assert_non_null(inv->hcas);
			h = &inv->hcas[inv->n_hcas++];
			memset(h, 0, sizeof(*h));
			snprintf(h->name, sizeof(h->name), "%.63s", v);
			h->numa = -1;
			p = NULL;
		} else if (h && sscanf(s, "CA type: %63s", v) == 1) {
			snprintf(h->hca_type, sizeof(h->hca_type), "%.63s", v);
		} else if (h && sscanf(s, "Port %u:", &u) == 1) {
			h->ports = realloc(h->ports, (h->n_ports + 1) * sizeof(*h->ports));
			assert_non_null(h->ports);
			p = &h->ports[h->n_ports++];
			memset(p, 0, sizeof(*p));
			p->num = u;
			p->lid = p->sm_lid = p->lid_mask_count = -1;
			nports++;
		} else if (p && sscanf(s, "State: %127s", v) == 1) {
			p->state = state_of(v);
		} else if (p && sscanf(s, "Physical state: %127s", v) == 1) {
			p->phys_state = phys_of(v);
		} else if (p && sscanf(s, "Rate: %u", &u) == 1) {
			p->rate.known = true;
			p->rate.gbps = u;
		} else if (p && sscanf(s, "Base lid: %i", (int *)&u) == 1) {
			p->lid = u;
		} else if (p && sscanf(s, "SM lid: %i", (int *)&u) == 1) {
			p->sm_lid = u;
		} else if (p && sscanf(s, "Link layer: %127s", v) == 1) {
			p->link_layer = !strcmp(v, "InfiniBand") ? IBP_LL_IB
					: !strcmp(v, "Ethernet") ? IBP_LL_ETH
								 : IBP_LL_UNKNOWN;
		}
	}
	return nports;
}

static void test_health_real_ibstat_states(void **state)
{
	static const char *const files[] = {
	    "ibstat.47.0.h100.some.down.0", "ibstat.47.0.h100.some.down.1",
	    "ibstat.47.0.h100.some.down.with.polling.1", "ibstat.47.0.h100.all.active.2",
	    "ibstat.47.0.a100.all.active.0"};
	size_t downs = 0, polling = 0, disabled = 0;
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/ibstat/%s", real_fixtures(), files[i]);
		FILE *fp = fopen(path, "re");
		if (!fp) {
			printf("# SKIP real ibstat outputs: %s absent (set IBP_REAL_FIXTURES)\n",
			       path);
			skip();
		}
		struct ibp_health_input in;
		struct ibp_policy p;
		struct ibp_findings f = {0};
		ibp_health_input_init(&in);
		assert_true(parse_ibstat(fp, &in.inv) > 0);
		fclose(fp);
		ibp_policy_init(&p);
		assert_int_equal(ibp_health_check(&in, &p, &f), 0);
		for (size_t h = 0; h < in.inv.n_hcas; h++) {
			const struct ibp_port *pt = &in.inv.hcas[h].ports[0];
			const char *dev = in.inv.hcas[h].name;
			const struct ibp_finding *x = NULL;
			for (size_t k = 0; k < f.n; k++)
				if (!strcmp(f.v[k].code, "port_not_active") &&
				    !strcmp(f.v[k].device, dev))
					x = &f.v[k];
			if (pt->state == IBP_PORT_ACTIVE) {
				if (x)
					fail_msg("%s %s: active port reported down", files[i], dev);
				continue;
			}
			if (!x)
				fail_msg("%s %s: down port without a finding", files[i], dev);
			assert_int_equal(x->severity, IBP_SEV_FAIL);
			downs++;
			if (strstr(x->observed, "physical state Polling"))
				polling++;
			if (strstr(x->observed, "physical state Disabled"))
				disabled++;
		}
		/* LID 0 on the Ethernet ports is not an IB addressing problem */
		for (size_t k = 0; k < f.n; k++)
			if (!strcmp(f.v[k].code, "lid_zero") ||
			    !strcmp(f.v[k].code, "no_subnet_manager"))
				fail_msg("%s: %s on %s", files[i], f.v[k].code, f.v[k].device);
		ibp_findings_release(&f);
		ibp_health_input_release(&in);
	}
	assert_int_equal(downs, 7);
	assert_int_equal(polling, 1);
	assert_int_equal(disabled, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_health_checks_table),
	    cmocka_unit_test(test_health_device_list_matching),
	    cmocka_unit_test(test_health_port_severity_uses_lists),
	    cmocka_unit_test(test_health_long_device_list_cut),
	    cmocka_unit_test(test_health_real_h100_tree),
	    cmocka_unit_test(test_health_real_gcm_netdev_down),
	    cmocka_unit_test(test_health_real_ibstat_states),
	    cmocka_unit_test(test_health_generated_trees),
	    cmocka_unit_test(test_health_counter_window_grows),
	};
	return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
