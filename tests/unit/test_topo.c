/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the topology module (helpers/place/topo.c) and the list parsers
 * (helpers/core/cpulist.c): distance classes on the real captures (expected
 * answers from the real fixtures' PAIRINGS.md) and on generated nodes, port
 * health from XML infos and from a sysfs inventory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/cpulist.h"
#include "ibprep/hca.h"
#include "ibprep/sysfs.h"
#include "ibprep/topo.h"
#include "support/fixture.h"
#include "support/topo_fixture.h"

#define SKIP_NO_REAL()                                                                             \
	do {                                                                                       \
		print_message("# real fixtures absent (../shared/fixtures/real or "                \
			      "$IBP_REAL_FIXTURES): skipped\n");                                   \
		skip();                                                                            \
	} while (0)

static void test_cpulist_parse_format_table(void **state)
{
	static const struct {
		const char *in, *canon;
		int rc;
	} cases[] = {
	    {"0-5,96-101", "0-5,96-101", 0},
	    {"3", "3", 0},
	    {"0,1,2,3", "0-3", 0},
	    {"5,0-2", "0-2,5", 0},
	    {"0-3\n", "0-3", 0},
	    {"65535", "65535", 0},
	    {"65536", "", -ERANGE},
	    {"0-4294967296", "", -ERANGE},
	    {"", "", -EINVAL},
	    {"\n", "", -EINVAL},
	    {"3-1", "", -EINVAL},
	    {"1,,2", "", -EINVAL},
	    {"1,", "", -EINVAL},
	    {"-1", "", -EINVAL},
	    {"1-", "", -EINVAL},
	    {" 1", "", -EINVAL},
	    {"0x3", "", -EINVAL},
	    {"1\n\n", "", -EINVAL},
	};
	hwloc_bitmap_t b = hwloc_bitmap_alloc();
	char buf[64];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = ibp_cpulist_parse(cases[i].in, b);

		if (rc != cases[i].rc)
			fail_msg("'%s': rc %d, expected %d", cases[i].in, rc, cases[i].rc);
		assert_true(ibp_cpulist_format(b, buf, sizeof(buf)) >= 0);
		assert_string_equal(buf, cases[i].canon);
	}
	/* too small a buffer is an error, never a cut list */
	assert_int_equal(ibp_cpulist_parse("0-5,96-101", b), 0);
	assert_int_equal(ibp_cpulist_format(b, buf, 6), -ENOSPC);
	assert_string_equal(buf, "");
	hwloc_bitmap_free(b);
}

static void test_indexlist_parse_order_and_errors(void **state)
{
	unsigned v[8];
	(void)state;

	assert_int_equal(ibp_indexlist_parse("2,0,1", v, 8), 3);
	assert_int_equal(v[0], 2);
	assert_int_equal(v[2], 1);
	assert_int_equal(ibp_indexlist_parse("4-7", v, 8), 4);
	assert_int_equal(v[3], 7);
	assert_int_equal(ibp_indexlist_parse("1,1", v, 8), -EINVAL);
	assert_int_equal(ibp_indexlist_parse("0-8", v, 8), -E2BIG);
	assert_int_equal(ibp_indexlist_parse("GPU-4b5c", v, 8), -EINVAL);
	assert_int_equal(ibp_indexlist_parse("", v, 8), -EINVAL);
	assert_int_equal(ibp_indexlist_parse("99999", v, 8), -ERANGE);
}

static void test_pci_parse_forms(void **state)
{
	unsigned d, b, v, f;
	(void)state;

	assert_int_equal(ibp_pci_parse("0000:44:00.0", &d, &b, &v, &f), 0);
	assert_int_equal(b, 0x44);
	assert_int_equal(ibp_pci_parse("0004:01:00.1", &d, &b, &v, &f), 0);
	assert_int_equal(d, 4);
	assert_int_equal(f, 1);
	assert_int_equal(ibp_pci_parse("c4:00.0", &d, &b, &v, &f), 0);
	assert_int_equal(d, 0);
	assert_int_equal(ibp_pci_parse("0000:44:00.0x", &d, &b, &v, &f), -EINVAL);
	assert_int_equal(ibp_pci_parse("0000:44:20.0", &d, &b, &v, &f), -EINVAL);
	assert_int_equal(ibp_pci_parse("44", &d, &b, &v, &f), -EINVAL);
}

static const struct {
	const char *file, *gpu, *hca;
	enum ibp_dist want;
} real_dist[] = {
    /* JUWELS Booster: GPU and HCA behind one PCIe switch */
    {"fzj-juwels-booster-jwb0001.hwloc1.xml", "0000:44:00.0", "mlx5_0", IBP_DIST_PIX},
    {"fzj-juwels-booster-jwb0001.hwloc1.xml", "0000:03:00.0", "mlx5_1", IBP_DIST_PIX},
    {"fzj-juwels-booster-jwb0001.hwloc1.xml", "0000:c4:00.0", "mlx5_2", IBP_DIST_PIX},
    {"fzj-juwels-booster-jwb0001.hwloc1.xml", "0000:84:00.0", "mlx5_3", IBP_DIST_PIX},
    {"fzj-juwels-booster-jwb0001.hwloc1.xml", "0000:44:00.0", "mlx5_1", IBP_DIST_SYS},
    {"fzj-juwels-booster-jwb0004.hwloc2.xml", "0000:44:00.0", "mlx5_1", IBP_DIST_PIX},
    {"fzj-juwels-booster-jwb0004.hwloc2.xml", "0000:03:00.0", "mlx5_0", IBP_DIST_PIX},
    {"fzj-juwels-cluster-gpu-jwc09n003.hwloc1.xml", "0000:5e:00.0", "mlx5_0", IBP_DIST_PIX},
    {"fzj-juwels-cluster-gpu-jwc09n003.hwloc1.xml", "0000:89:00.0", "mlx5_1", IBP_DIST_PIX},
    {"fzj-juwels-cluster-gpu-jwc09n003.hwloc1.xml", "0000:89:00.0", "mlx5_0", IBP_DIST_SYS},
    /* MeluXina: 03 and c3 have no HCA in their NUMA node */
    {"meluxina-gpu-mel2001.hwloc1.xml", "0000:44:00.0", "mlx5_0", IBP_DIST_PIX},
    {"meluxina-gpu-mel2001.hwloc1.xml", "0000:84:00.0", "mlx5_1", IBP_DIST_PIX},
    {"meluxina-gpu-mel2001.hwloc1.xml", "0000:03:00.0", "mlx5_0", IBP_DIST_SYS},
    {"llnl-pascal-relion-x1904gt.hwloc2.xml", "0000:04:00.0", "mlx5_0", IBP_DIST_PIX},
    {"llnl-pascal-relion-x1904gt.hwloc2.xml", "0000:07:00.0", "mlx5_0", IBP_DIST_PIX},
    /* POWER8 Minsky: separate PHBs (PCI domains) on one NUMA node */
    {"llnl-coral-ea-power8-minsky.hwloc1.xml", "0002:01:00.0", "mlx5_0", IBP_DIST_NODE},
    {"llnl-coral-ea-power8-minsky.hwloc1.xml", "0006:01:00.0", "mlx5_1", IBP_DIST_NODE},
    {"llnl-coral-ea-power8-minsky.hwloc1.xml", "0006:01:00.0", "mlx5_0", IBP_DIST_SYS},
    /* Tioga: Slingshot NICs; d6 shares a host bridge with hsi2, d1 only the NUMA node */
    {"llnl-tioga-hpe-ex235a-mi250x.hwloc2.xml", "0000:d6:00.0", "hsi2", IBP_DIST_PHB},
    {"llnl-tioga-hpe-ex235a-mi250x.hwloc2.xml", "0000:d1:00.0", "hsi2", IBP_DIST_NODE},
    {"llnl-tioga-hpe-ex235a-mi250x.hwloc2.xml", "0000:c1:00.0", "hsi0", IBP_DIST_NODE},
    {"deep-est-dam-dp-dam01.hwloc1.xml", "0000:af:00.0", "mlx5_0", IBP_DIST_NODE},
    /* single package without NUMA objects: different host bridges */
    {"deep-est-esb-dp-esb01.hwloc1.xml", "0000:65:00.0", "mlx5_0", IBP_DIST_NODE},
    /* JUSUF: other NUMA node of the same socket: SYS by nvidia-smi's definition */
    {"fzj-jusuf-gpu-jsfc005.hwloc1.xml", "0000:01:00.0", "mlx5_1", IBP_DIST_SYS},
};

static void test_topo_real_distances_match_pairings(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(real_dist) / sizeof(real_dist[0]); i++) {
		struct ibp_topo t;
		int rc = ibp_test_topo_real(&t, real_dist[i].file);

		if (rc == 1)
			SKIP_NO_REAL();
		assert_int_equal(rc, 0);
		const struct ibp_topo_gpu *g = ibp_topo_find_gpu(&t, real_dist[i].gpu);
		const struct ibp_topo_hca *h = ibp_topo_find_hca(&t, real_dist[i].hca);
		assert_non_null(g);
		assert_non_null(h);
		enum ibp_dist d = ibp_topo_distance(&t, &g->d, &h->d);
		if (d != real_dist[i].want)
			fail_msg("%s %s-%s: %s, expected %s", real_dist[i].file, real_dist[i].gpu,
				 real_dist[i].hca, ibp_dist_name(d),
				 ibp_dist_name(real_dist[i].want));
		ibp_topo_release(&t);
	}
}

static void test_topo_real_inventory_counts(void **state)
{
	static const struct {
		const char *file;
		size_t gpus, hcas;
		const char *host;
	} cases[] = {
	    {"fzj-juwels-booster-jwb0001.hwloc1.xml", 4, 4, "jwb0001.juwels"},
	    {"llnl-tioga-hpe-ex235a-mi250x.hwloc2.xml", 8, 4, "tioga29"},
	    {"fzj-jureca-dc-cpu-jrc0732.hwloc1.xml", 0, 1, "jrc0732"},
	    {"fzj-jusuf-gpu-jsfc005.hwloc1.xml", 1, 2, "jsfc005"},
	    {"llnl-coral-ea-power8-minsky.hwloc1.xml", 4, 2, "rzmanta33"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibp_topo t;
		int rc = ibp_test_topo_real(&t, cases[i].file);

		if (rc == 1)
			SKIP_NO_REAL();
		assert_int_equal(rc, 0);
		assert_int_equal(t.n_gpus, cases[i].gpus);
		assert_int_equal(t.n_hcas, cases[i].hcas);
		assert_string_equal(t.hostname, cases[i].host);
		assert_true(t.from_file);
		/* GPUs are in PCI bus order and numbered that way */
		for (size_t g = 1; g < t.n_gpus; g++)
			assert_true(strcmp(t.gpus[g - 1].d.pci, t.gpus[g].d.pci) < 0);
		ibp_topo_release(&t);
	}
}

static void test_topo_real_port_infos(void **state)
{
	struct ibp_topo t;
	int rc;
	(void)state;

	rc = ibp_test_topo_real(&t, "meluxina-gpu-mel2001.hwloc1.xml");
	if (rc == 1)
		SKIP_NO_REAL();
	assert_int_equal(rc, 0);
	const struct ibp_topo_hca *h = ibp_topo_find_hca(&t, "mlx5_0");
	assert_non_null(h);
	assert_int_equal(h->n_ports, 1);
	assert_int_equal(h->ports[0].state, IBP_PORT_DOWN);
	assert_false(h->ports[0].healthy);
	assert_non_null(strstr(h->ports[0].why, "DOWN"));
	assert_true(ibp_topo_find_hca(&t, "mlx5_1")->ports[0].healthy);
	ibp_topo_release(&t);

	/* JUSUF: one card, function 0 Ethernet, function 1 InfiniBand */
	assert_int_equal(ibp_test_topo_real(&t, "fzj-jusuf-gpu-jsfc005.hwloc1.xml"), 0);
	h = ibp_topo_find_hca(&t, "mlx5_0");
	assert_int_equal(h->ports[0].link_layer, IBP_LL_ETH);
	assert_int_equal(h->ports[0].gid_index, 3); /* the RoCE v2 twin of GID 2 */
	assert_string_equal(h->ports[0].netdev, "enp33s0f0");
	h = ibp_topo_find_hca(&t, "mlx5_1");
	assert_int_equal(h->ports[0].link_layer, IBP_LL_IB);
	assert_int_equal(h->ports[0].lid, 127);
	assert_int_equal(h->ports[0].gid_index, -1);
	ibp_topo_release(&t);

	/* Tioga: Slingshot NICs, no verbs port infos: kind and state unknown */
	assert_int_equal(ibp_test_topo_real(&t, "llnl-tioga-hpe-ex235a-mi250x.hwloc2.xml"), 0);
	h = ibp_topo_find_hca(&t, "hsi0");
	assert_int_equal(h->kind, IBP_NIC_SLINGSHOT);
	assert_int_equal(h->ports[0].state, IBP_PORT_STATE_UNKNOWN);
	assert_int_equal(t.gpus[0].d.vendor, 0x1002);
	assert_int_equal(t.gpus[0].d.class_id, 0x0380);
	ibp_topo_release(&t);
}

static void test_topo_hwloc3_format_rejected(void **state)
{
	struct ibp_topo t;
	int rc = ibp_test_topo_real(&t, "hwloc-nvidia-dgx2h-gpus-only.hwloc3.xml");
	(void)state;

	if (rc == 1)
		SKIP_NO_REAL();
	assert_int_equal(rc, -EINVAL);
	assert_null(t.t);
	ibp_topo_release(&t); /* safe on what a failed load left */
}

static void test_topo_bad_input_errors(void **state)
{
	struct ibp_topo t;
	(void)state;

	assert_int_equal(ibp_topo_load_xml(&t, "/nonexistent/topo.xml"), -ENOENT);
	assert_int_equal(ibp_topo_load_xml(&t, "/"), -EINVAL);
	assert_int_equal(ibp_topo_load_xml_buffer(&t, "<topology", 9), -EINVAL);
	assert_int_equal(ibp_topo_load_xml_buffer(&t, "not xml at all", 14), -EINVAL);
	assert_int_equal(ibp_topo_load_xml_buffer(&t, NULL, 0), -EINVAL);
	ibp_topo_release(&t);
}

static void test_topo_buffer_without_nul(void **state)
{
	char path[4096];
	const char *real = ibp_fixture_real_dir();
	struct ibp_topo t;
	FILE *fp;
	char *buf;
	long n;
	(void)state;

	if (!real)
		SKIP_NO_REAL();
	snprintf(path, sizeof(path), "%s/hwloc-xml/meluxina-gpu-mel2001.hwloc1.xml", real);
	fp = fopen(path, "re");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n); /* exactly the file: no terminating NUL */
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	assert_int_equal(ibp_topo_load_xml_buffer(&t, buf, (size_t)n), 0);
	assert_int_equal(t.n_gpus, 4);
	assert_string_equal(t.hostname, "mel2001");
	ibp_topo_release(&t);
	free(buf);
}

static void test_topo_generated_distances(void **state)
{
	static const struct {
		const char *preset, *gpu, *hca;
		enum ibp_dist want;
	} cases[] = {
	    {"dgx-h100", "0000:1b:00.0", "mlx5_0", IBP_DIST_PIX},
	    {"dgx-h100", "0000:43:00.0", "mlx5_3", IBP_DIST_PIX},
	    {"dgx-h100", "0000:df:00.0", "mlx5_11", IBP_DIST_PIX},
	    {"dgx-h100", "0000:1b:00.0", "mlx5_3", IBP_DIST_NODE},
	    {"dgx-h100", "0000:1b:00.0", "mlx5_11", IBP_DIST_SYS},
	    /* DGX A100: two-level switches, nvidia-smi shows PXB for both HCAs of a group */
	    {"dgx-a100", "0000:07:00.0", "mlx5_0", IBP_DIST_PXB},
	    {"dgx-a100", "0000:07:00.0", "mlx5_1", IBP_DIST_PXB},
	    {"dgx-a100", "0000:07:00.0", "mlx5_2", IBP_DIST_SYS},
	    {"dgx-a100", "0000:bd:00.0", "mlx5_9", IBP_DIST_PXB},
	    {"gpu-nohca", "0000:21:00.0", "mlx5_0", IBP_DIST_NODE},
	    {"gpu-nohca", "0000:13:00.0", "mlx5_0", IBP_DIST_PIX},
	    {"multiport", "0000:14:00.0", "mlx5_0", IBP_DIST_PIX},
	    {"vpi", "0000:01:00.0", "mlx5_1", IBP_DIST_SYS},
	    {"snc", "0000:21:00.0", "mlx5_0", IBP_DIST_SYS},
	    {"snc", "0000:11:00.0", "mlx5_0", IBP_DIST_PIX},
	    {"roce", "0000:83:00.0", "mlx5_1", IBP_DIST_PIX},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibp_topo t;

		assert_int_equal(ibp_test_topo_preset(&t, cases[i].preset, NULL), 0);
		const struct ibp_topo_gpu *g = ibp_topo_find_gpu(&t, cases[i].gpu);
		const struct ibp_topo_hca *h = ibp_topo_find_hca(&t, cases[i].hca);
		assert_non_null(g);
		assert_non_null(h);
		enum ibp_dist d = ibp_topo_distance(&t, &g->d, &h->d);
		if (d != cases[i].want)
			fail_msg("%s %s-%s: %s, expected %s", cases[i].preset, cases[i].gpu,
				 cases[i].hca, ibp_dist_name(d), ibp_dist_name(cases[i].want));
		ibp_topo_release(&t);
	}
}

static void test_topo_same_package_in_snc(void **state)
{
	struct ibp_topo t;
	(void)state;

	assert_int_equal(ibp_test_topo_preset(&t, "snc", NULL), 0);
	const struct ibp_topo_gpu *g1 = ibp_topo_find_gpu(&t, "0000:21:00.0");
	assert_int_equal(g1->d.numa, 1);
	assert_true(ibp_topo_same_package(&g1->d, &ibp_topo_find_hca(&t, "mlx5_0")->d));
	assert_false(ibp_topo_same_package(&g1->d, &ibp_topo_find_hca(&t, "mlx5_1")->d));
	ibp_topo_release(&t);
}

static void test_topo_inventory_overrides_health(void **state)
{
	struct ibp_topo t;
	struct ibp_port p0 = {
	    .num = 1, .state = IBP_PORT_ACTIVE, .link_layer = IBP_LL_IB, .lid = 7};
	struct ibp_port p3 = p0, p4 = p0;
	struct ibp_hca hcas[3];
	struct ibp_inventory inv = {.hcas = hcas, .n_hcas = 3};
	struct ibp_findings f;
	(void)state;

	p4.state = IBP_PORT_INIT;
	memset(hcas, 0, sizeof(hcas));
	snprintf(hcas[0].name, sizeof(hcas[0].name), "mlx5_0");
	hcas[0].ports = &p0;
	hcas[0].n_ports = 1;
	snprintf(hcas[1].name, sizeof(hcas[1].name), "mlx5_3");
	hcas[1].ports = &p3;
	hcas[1].n_ports = 1;
	snprintf(hcas[2].name, sizeof(hcas[2].name), "mlx5_4");
	hcas[2].ports = &p4;
	hcas[2].n_ports = 1;
	ibp_findings_init(&f);
	ibp_findings_addf(&f, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE, "mlx5_3", 1, "4X",
			  NULL, "link width 1X");
	ibp_findings_addf(&f, "counter_high", IBP_SEV_WARN, IBP_CLASS_NODE, "mlx5_0", 1, NULL, NULL,
			  "symbol_error 20");
	assert_int_equal(ibp_test_topo_preset(&t, "dgx-h100", NULL), 0);
	assert_int_equal(ibp_topo_apply_inventory(&t, &inv, &f, NULL), 0);
	assert_true(
	    ibp_topo_find_hca(&t, "mlx5_0")->ports[0].healthy); /* a warning is not unhealthy */
	assert_false(ibp_topo_find_hca(&t, "mlx5_3")->ports[0].healthy);
	assert_non_null(strstr(ibp_topo_find_hca(&t, "mlx5_3")->ports[0].why, "width_degraded"));
	assert_false(ibp_topo_find_hca(&t, "mlx5_4")->ports[0].healthy);
	assert_non_null(strstr(ibp_topo_find_hca(&t, "mlx5_4")->ports[0].why, "INIT"));
	/* in the topology but not in sysfs */
	assert_false(ibp_topo_find_hca(&t, "mlx5_11")->ports[0].healthy);
	assert_non_null(strstr(ibp_topo_find_hca(&t, "mlx5_11")->ports[0].why, "absent"));
	ibp_topo_release(&t);
	ibp_findings_release(&f);
}

/* PRESET's topology with INV applied (inventory loaded from PRESET's sysfs tree with FLAGS). */
static void topo_with_inventory(struct ibp_topo *t, const char *root, const char *preset,
				unsigned flags)
{
	struct ibp_sysfs fs;
	struct ibp_inventory inv;
	struct ibp_findings f;

	ibp_findings_init(&f);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	assert_int_equal(ibp_inventory_load_opts(&inv, &fs, flags, &f), 0);
	assert_true(inv.n_hcas > 0);
	assert_int_equal(ibp_test_topo_preset(t, preset, NULL), 0);
	assert_int_equal(ibp_topo_apply_inventory(t, &inv, NULL, NULL), 0);
	ibp_inventory_release(&inv);
	ibp_findings_release(&f);
	ibp_sysfs_close(&fs);
}

/*
 * The plugin's read on a cached verdict (IBP_INVENTORY_PLACEMENT, no GID
 * table on an IB port) gives the placement every port exactly as the full
 * read does: state, link layer, LID, netdev, health, and a RoCE port's GID
 * index (NCCL_IB_GID_INDEX), on an IB node and a RoCE node (with a bond).
 */
static void test_topo_placement_inventory_same_ports(void **state)
{
	static const struct {
		const char *preset;
		bool roce;
	} cases[] = {{"dgx-h100", false}, {"roce", true}};
	(void)state;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char *root = ibp_fixture_make("--preset", cases[c].preset, "--gdr", NULL);
		struct ibp_topo full, lite;
		size_t ports = 0, gid_ports = 0;

		assert_non_null(root);
		topo_with_inventory(&full, root, cases[c].preset, 0);
		topo_with_inventory(&lite, root, cases[c].preset,
				    IBP_INVENTORY_PLACEMENT | IBP_INVENTORY_LINK_COUNTERS);
		assert_int_equal(full.n_hcas, lite.n_hcas);
		for (size_t i = 0; i < full.n_hcas; i++) {
			const struct ibp_topo_hca *a = &full.hcas[i], *b = &lite.hcas[i];

			assert_string_equal(a->name, b->name);
			assert_int_equal(a->kind, b->kind);
			assert_int_equal(a->d.link_width, b->d.link_width);
			assert_int_equal(a->n_ports, b->n_ports);
			for (unsigned k = 0; k < a->n_ports; k++) {
				const struct ibp_topo_port *pa = &a->ports[k], *pb = &b->ports[k];

				assert_int_equal(pa->num, pb->num);
				assert_int_equal(pa->state, pb->state);
				assert_int_equal(pa->link_layer, pb->link_layer);
				assert_int_equal(pa->lid, pb->lid);
				assert_int_equal(pa->gid_index, pb->gid_index);
				assert_string_equal(pa->netdev, pb->netdev);
				assert_int_equal(pa->healthy, pb->healthy);
				assert_string_equal(pa->why, pb->why);
				ports++;
				gid_ports += pb->gid_index >= 0;
			}
		}
		assert_true(ports > 0);
		if (cases[c].roce)
			assert_true(gid_ports > 0); /* NCCL_IB_GID_INDEX still has its value */
		else
			assert_int_equal(gid_ports, 0);
		ibp_topo_release(&full);
		ibp_topo_release(&lite);
		ibp_fixture_destroy(root);
	}
}

/* A link as a reader sees it: exact from sysfs, else every pair hwloc's GB/s fits. */
static void test_topo_link_text_table(void **state)
{
	static const struct {
		double gbs;
		unsigned width;
		double gts;
		const char *want;
	} cases[] = {
	    {3.938462, 0, 0, "3.9 GB/s (x1 Gen5, x2 Gen4 or x4 Gen3)"},
	    {63.015385, 0, 0, "63.0 GB/s (x16 Gen5)"},
	    {31.507692, 0, 0, "31.5 GB/s (x8 Gen5 or x16 Gen4)"},
	    {0.25, 0, 0, "0.2 GB/s (x1 Gen1)"},
	    {12.3, 0, 0, "12.3 GB/s"},
	    {3.938462, 2, 16, "x2 Gen4 (3.9 GB/s)"},
	    {0, 0, 0, "unknown"},
	};
	char buf[128];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibp_topo_dev d = {.link_gbs = cases[i].gbs,
					 .link_width = cases[i].width,
					 .link_gts = cases[i].gts};

		assert_true(ibp_topo_link_text(&d, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, cases[i].want);
	}
	struct ibp_topo_dev d = {.link_gbs = 3.938462};
	assert_int_equal(ibp_topo_link_text(&d, buf, 12), -ENOSPC);
}

/* An OpenFabrics device the file lists no port for has port 1, state unknown. */
static void test_topo_portless_device_gets_port_one(void **state)
{
	struct ibp_topo t;
	(void)state;

	assert_int_equal(ibp_test_topo_preset(&t, "efa-p5", "--no-port-infos"), 0);
	assert_int_equal(t.n_hcas, 32);
	for (size_t i = 0; i < t.n_hcas; i++) {
		const struct ibp_topo_hca *h = &t.hcas[i];

		assert_int_equal(h->transport, IBP_TR_EFA);
		assert_int_equal(h->n_ports, 1);
		assert_int_equal(h->ports[0].num, 1);
		assert_int_equal(h->ports[0].state, IBP_PORT_STATE_UNKNOWN);
		assert_int_equal(h->ports[0].link_layer, IBP_LL_UNKNOWN);
		assert_true(h->ports[0].healthy);
		assert_true(h->ports[0].assumed);
	}
	assert_true(t.gpus[0].d.link_gbs > 63 && t.gpus[0].d.link_gbs < 63.1);
	assert_true(t.hcas[0].d.link_gbs == 0); /* a Nitro function reports no link */
	ibp_topo_release(&t);
}

static void test_topo_live_loads_pci_only(void **state)
{
	struct ibp_topo t;
	(void)state;

	assert_int_equal(ibp_topo_load_live(&t), 0);
	assert_false(t.from_file);
	assert_true(hwloc_bitmap_weight(ibp_topo_cpuset(&t)) >= 1);
	assert_true(t.load_ms > 0);
	print_message("# live hwloc load: %.1f ms, %zu GPUs, %zu RDMA NICs\n", t.load_ms, t.n_gpus,
		      t.n_hcas);
	ibp_topo_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpulist_parse_format_table),
	    cmocka_unit_test(test_indexlist_parse_order_and_errors),
	    cmocka_unit_test(test_pci_parse_forms),
	    cmocka_unit_test(test_topo_real_distances_match_pairings),
	    cmocka_unit_test(test_topo_real_inventory_counts),
	    cmocka_unit_test(test_topo_real_port_infos),
	    cmocka_unit_test(test_topo_hwloc3_format_rejected),
	    cmocka_unit_test(test_topo_bad_input_errors),
	    cmocka_unit_test(test_topo_buffer_without_nul),
	    cmocka_unit_test(test_topo_generated_distances),
	    cmocka_unit_test(test_topo_same_package_in_snc),
	    cmocka_unit_test(test_topo_inventory_overrides_health),
	    cmocka_unit_test(test_topo_placement_inventory_same_ports),
	    cmocka_unit_test(test_topo_live_loads_pci_only),
	    cmocka_unit_test(test_topo_link_text_table),
	    cmocka_unit_test(test_topo_portless_device_gets_port_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
