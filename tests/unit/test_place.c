/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the placement (helpers/place/place.c), table-driven over
 * topologies (real captures, expected answers from PAIRINGS.md; generated
 * DGX-like and corner-case nodes) and step shapes.
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
#include "ibprep/place.h"
#include "support/topo_fixture.h"

struct want_task {
	const char *gpus;        /* "0000:03:00.0,..." */
	const char *hcas;        /* "mlx5_1:1,..." */
	const char *cpus, *mems; /* NULL: not checked */
};

struct place_case {
	const char *name;
	const char *real;   /* real capture file, or NULL */
	const char *preset; /* generated preset, or NULL */
	const char *extra;  /* mktopo extra argument */
	unsigned ntasks;
	const char *gpus;    /* index list, NULL all */
	const char *allowed; /* NULL: the topology's */
	struct want_task tasks[16];
	const char *findings; /* codes expected, space-separated ("" none) */
};

static const struct place_case cases[] = {
    {"juwels booster 4x1",
     "fzj-juwels-booster-jwb0001.hwloc1.xml",
     NULL,
     NULL,
     4,
     NULL,
     NULL,
     {{"0000:03:00.0", "mlx5_1:1", "18-23,66-71", "3"},
      {"0000:44:00.0", "mlx5_0:1", "6-11,54-59", "1"},
      {"0000:84:00.0", "mlx5_3:1", "42-47,90-95", "7"},
      {"0000:c4:00.0", "mlx5_2:1", "30-35,78-83", "5"}},
     ""},
    {"juwels booster hwloc2 (other mlx5 numbering)",
     "fzj-juwels-booster-jwb0004.hwloc2.xml",
     NULL,
     NULL,
     4,
     NULL,
     NULL,
     {{"0000:03:00.0", "mlx5_0:1", NULL, "3"},
      {"0000:44:00.0", "mlx5_1:1", NULL, "1"},
      {"0000:84:00.0", "mlx5_2:1", NULL, "7"},
      {"0000:c4:00.0", "mlx5_3:1", NULL, "5"}},
     ""},
    {"juwels cluster 2 GPUs per HCA, cores split",
     "fzj-juwels-cluster-gpu-jwc09n003.hwloc1.xml",
     NULL,
     NULL,
     4,
     NULL,
     NULL,
     {{"0000:5d:00.0", "mlx5_0:1", "0-9,40-49", "0"},
      {"0000:5e:00.0", "mlx5_0:1", "10-19,50-59", "0"},
      {"0000:88:00.0", "mlx5_1:1", "20-29,60-69", "1"},
      {"0000:89:00.0", "mlx5_1:1", "30-39,70-79", "1"}},
     ""},
    {"meluxina: mlx5_0 down, two GPUs without a local HCA",
     "meluxina-gpu-mel2001.hwloc1.xml",
     NULL,
     NULL,
     4,
     NULL,
     NULL,
     {{"0000:03:00.0", "mlx5_1:1", "24-31,88-95", "3"},
      {"0000:44:00.0", "mlx5_1:1", "8-15,72-79", "1"},
      {"0000:84:00.0", "mlx5_1:1", "56-63,120-127", "7"},
      {"0000:c3:00.0", "mlx5_1:1", "40-47,104-111", "5"}},
     "hca_port_skipped gpu_no_local_hca gpu_hca_fallback gpu_no_local_hca"},
    {"jusuf: IB port of the VPI card, not the Ethernet one",
     "fzj-jusuf-gpu-jsfc005.hwloc1.xml",
     NULL,
     NULL,
     1,
     NULL,
     NULL,
     {{"0000:01:00.0", "mlx5_1:1", "48-63,176-191", "3"}},
     "gpu_no_local_hca"},
    {"pascal: 2 GPUs + 1 HCA on one switch",
     "llnl-pascal-relion-x1904gt.hwloc2.xml",
     NULL,
     NULL,
     2,
     NULL,
     NULL,
     {{"0000:04:00.0", "mlx5_0:1", "0-8,36-44", "0"},
      {"0000:07:00.0", "mlx5_0:1", "9-17,45-53", "0"}},
     ""},
    {"power8 minsky: per-socket HCA across PHBs",
     "llnl-coral-ea-power8-minsky.hwloc1.xml",
     NULL,
     NULL,
     4,
     NULL,
     NULL,
     {{"0002:01:00.0", "mlx5_0:1", "0-39", "0"},
      {"0003:01:00.0", "mlx5_0:1", "40-79", "0"},
      {"0006:01:00.0", "mlx5_1:1", "80-119", "1"},
      {"0007:01:00.0", "mlx5_1:1", "120-159", "1"}},
     ""},
    {"tioga: MI250X GCDs to Slingshot NICs",
     "llnl-tioga-hpe-ex235a-mi250x.hwloc2.xml",
     NULL,
     NULL,
     8,
     NULL,
     NULL,
     {{"0000:c1:00.0", "hsi0", "48-55,112-119", "3"},
      {"0000:c6:00.0", "hsi0", "56-63,120-127", "3"},
      {"0000:c9:00.0", "hsi1", "16-23,80-87", "1"},
      {"0000:ce:00.0", "hsi1", "24-31,88-95", "1"},
      {"0000:d1:00.0", "hsi2", "0-7,64-71", "0"},
      {"0000:d6:00.0", "hsi2", "8-15,72-79", "0"},
      {"0000:d9:00.0", "hsi3", "32-39,96-103", "2"},
      {"0000:de:00.0", "hsi3", "40-47,104-111", "2"}},
     ""},
    {"deep-est dam: RoCE fabric when there is no IB",
     "deep-est-dam-dp-dam01.hwloc1.xml",
     NULL,
     NULL,
     1,
     NULL,
     NULL,
     {{"0000:af:00.0", "mlx5_0:1", "24-47,72-95", "1"}},
     ""},
    {"jureca cpu node: 8 CPU-only tasks over 8 NUMA nodes",
     "fzj-jureca-dc-cpu-jrc0732.hwloc1.xml",
     NULL,
     NULL,
     8,
     NULL,
     NULL,
     {{"", "mlx5_0:1", "0-15,128-143", "0"},
      {"", "mlx5_0:1", "16-31,144-159", "1"},
      {"", "mlx5_0:1", NULL, "2"},
      {"", "mlx5_0:1", NULL, "3"},
      {"", "mlx5_0:1", NULL, "4"},
      {"", "mlx5_0:1", NULL, "5"},
      {"", "mlx5_0:1", NULL, "6"},
      {"", "mlx5_0:1", "112-127,240-255", "7"}},
     /* the CX-6 sits on NUMA 0 of package 0: tasks 4-7 are on package 1 */
     "task_no_local_hca task_no_local_hca task_no_local_hca task_no_local_hca"},
    {"dgx-h100 8x1: GPU i with its own HCA (not mlx5_i)",
     NULL,
     "dgx-h100",
     NULL,
     8,
     NULL,
     NULL,
     {{"0000:1b:00.0", "mlx5_0:1", "0-13,112-125", "0"},
      {"0000:43:00.0", "mlx5_3:1", "14-27,126-139", "0"},
      {"0000:52:00.0", "mlx5_4:1", NULL, "0"},
      {"0000:61:00.0", "mlx5_5:1", NULL, "0"},
      {"0000:9d:00.0", "mlx5_6:1", "56-69,168-181", "1"},
      {"0000:c3:00.0", "mlx5_9:1", NULL, "1"},
      {"0000:d1:00.0", "mlx5_10:1", NULL, "1"},
      {"0000:df:00.0", "mlx5_11:1", "98-111,210-223", "1"}},
     ""},
    {"dgx-h100 one task owning all GPUs (torchrun)",
     NULL,
     "dgx-h100",
     NULL,
     1,
     NULL,
     NULL,
     {{"0000:1b:00.0,0000:43:00.0,0000:52:00.0,0000:61:00.0,0000:9d:00.0,0000:c3:00.0,"
       "0000:d1:00.0,0000:df:00.0",
       "mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1", "0-223",
       "0-1"}},
     ""},
    {"dgx-h100 16 tasks: two per GPU",
     NULL,
     "dgx-h100",
     NULL,
     16,
     NULL,
     NULL,
     {{"0000:1b:00.0", "mlx5_0:1", "0-6,112-118", "0"},
      {"0000:1b:00.0", "mlx5_0:1", "7-13,119-125", "0"},
      {"0000:43:00.0", "mlx5_3:1", "14-20,126-132", "0"}},
     "more_tasks_than_gpus"},
    {"dgx-h100 3 tasks: 3+3+2 GPUs",
     NULL,
     "dgx-h100",
     NULL,
     3,
     NULL,
     NULL,
     {{"0000:1b:00.0,0000:43:00.0,0000:52:00.0", "mlx5_0:1,mlx5_3:1,mlx5_4:1", "0-41,112-153", "0"},
      {"0000:61:00.0,0000:9d:00.0,0000:c3:00.0", "mlx5_5:1,mlx5_6:1,mlx5_9:1", "42-83,154-195",
       "0-1"},
      {"0000:d1:00.0,0000:df:00.0", "mlx5_10:1,mlx5_11:1", NULL, "1"}},
     "gpus_uneven"},
    {"dgx-h100 step with GPUs 4-7 (SLURM_STEP_GPUS)",
     NULL,
     "dgx-h100",
     NULL,
     2,
     "6,4,7,5",
     NULL,
     {{"0000:9d:00.0,0000:c3:00.0", "mlx5_6:1,mlx5_9:1", "56-83,168-195", "1"},
      {"0000:d1:00.0,0000:df:00.0", "mlx5_10:1,mlx5_11:1", "84-111,196-223", "1"}},
     ""},
    {"dgx-h100 mlx5_3 down: GPU 1 falls back to a same-NUMA HCA",
     NULL,
     "dgx-h100",
     "--port-down=mlx5_3",
     8,
     NULL,
     NULL,
     {{"0000:1b:00.0", "mlx5_0:1", NULL, "0"}, {"0000:43:00.0", "mlx5_0:1", NULL, "0"}},
     "hca_port_skipped gpu_hca_fallback"},
    {"dgx-h100 allowed CPUs on socket 0 only",
     NULL,
     "dgx-h100",
     NULL,
     2,
     NULL,
     "0-55,112-167",
     {{"0000:1b:00.0,0000:43:00.0,0000:52:00.0,0000:61:00.0", NULL, "0-27,112-139", "0"},
      {"0000:9d:00.0,0000:c3:00.0,0000:d1:00.0,0000:df:00.0", NULL, "28-55,140-167", "0"}},
     "cpus_not_local"},
    {"dgx-a100 8x1: both group HCAs at PXB, shared evenly",
     NULL,
     "dgx-a100",
     NULL,
     8,
     NULL,
     NULL,
     {{"0000:07:00.0", "mlx5_0:1", "48-55,176-183", "3"},
      {"0000:0f:00.0", "mlx5_1:1", "56-63,184-191", "3"},
      {"0000:47:00.0", "mlx5_2:1", NULL, "1"},
      {"0000:4e:00.0", "mlx5_3:1", NULL, "1"},
      {"0000:87:00.0", "mlx5_6:1", NULL, "7"},
      {"0000:90:00.0", "mlx5_7:1", NULL, "7"},
      {"0000:b7:00.0", "mlx5_8:1", NULL, "5"},
      {"0000:bd:00.0", "mlx5_9:1", NULL, "5"}},
     ""},
    {"multiport: one dual-port HCA, a port per GPU",
     NULL,
     "multiport",
     NULL,
     2,
     NULL,
     NULL,
     {{"0000:13:00.0", "mlx5_0:1", "0-3,16-19", "0"},
      {"0000:14:00.0", "mlx5_0:2", "4-7,20-23", "0"}},
     ""},
    {"snc: same-package HCA preferred across sub-NUMA nodes",
     NULL,
     "snc",
     NULL,
     4,
     NULL,
     NULL,
     {{"0000:11:00.0", "mlx5_0:1", "0-3,16-19", "0"},
      {"0000:21:00.0", "mlx5_0:1", "4-7,20-23", "1"},
      {"0000:31:00.0", "mlx5_1:1", "8-11,24-27", "2"},
      {"0000:41:00.0", "mlx5_1:1", "12-15,28-31", "3"}},
     "gpu_no_local_hca gpu_no_local_hca"},
    {"cpu-only: tasks per NUMA node, nearest HCA",
     NULL,
     "cpu-only",
     NULL,
     4,
     NULL,
     NULL,
     {{"", "mlx5_0:1", "0-3,16-19", "0"},
      {"", "mlx5_0:1", "4-7,20-23", "0"},
      {"", "mlx5_0:1", "8-11,24-27", "1"},
      {"", "mlx5_0:1", "12-15,28-31", "1"}},
     /* the only HCA is on socket 0: tasks 2 and 3 each get their own word */
     "task_no_local_hca task_no_local_hca"},
    {"p6-b200: each B200 with an EFA of its switch, the x2 ConnectX-7 left out",
     NULL,
     "p6-b200",
     NULL,
     8,
     NULL,
     NULL,
     {{"0000:13:00.0", "rdmap21s0", "0-11,96-107", "0"},
      {"0000:14:00.0", "rdmap22s0", NULL, "0"},
      {"0000:33:00.0", "rdmap53s0", NULL, "0"},
      {"0000:34:00.0", "rdmap54s0", NULL, "0"},
      {"0000:93:00.0", "rdmap149s0", NULL, "1"},
      {"0000:94:00.0", "rdmap150s0", NULL, "1"},
      {"0000:b3:00.0", "rdmap181s0", NULL, "1"},
      {"0000:b4:00.0", "rdmap182s0", "84-95,180-191", "1"}},
     ""},
    {"p6-b200 without port infos: EFA still placed, one note",
     NULL,
     "p6-b200",
     "--no-port-infos",
     8,
     NULL,
     NULL,
     {{"0000:13:00.0", "rdmap21s0", NULL, "0"}, {"0000:14:00.0", "rdmap22s0", NULL, "0"}},
     "port_state_unknown"},
    {"p5 without port infos: 4 EFA per H100, the first of its switch",
     NULL,
     "efa-p5",
     "--no-port-infos",
     8,
     NULL,
     NULL,
     {{"0000:53:00.0", "rdmap79s0", NULL, "0"},
      {"0000:64:00.0", "rdmap96s0", NULL, "0"},
      {"0000:75:00.0", "rdmap113s0", NULL, "0"},
      {"0000:86:00.0", "rdmap130s0", NULL, "0"},
      {"0000:97:00.0", "rdmap147s0", NULL, "1"},
      {"0000:a8:00.0", "rdmap164s0", NULL, "1"},
      {"0000:b9:00.0", "rdmap181s0", NULL, "1"},
      {"0000:ca:00.0", "rdmap198s0", NULL, "1"}},
     "port_state_unknown"},
    {"p4d as its guest sees it: EFA and 2 A100 on one host bridge",
     NULL,
     "efa-p4d-vm",
     "--no-port-infos",
     4,
     NULL,
     NULL,
     {{"0000:10:1c.0,0000:10:1d.0", "rdmap16s27", "0-11,48-59", "0"},
      {"0000:20:1c.0,0000:20:1d.0", "rdmap32s27", NULL, "0"},
      {"0000:90:1c.0,0000:90:1d.0", "rdmap144s27", NULL, "1"},
      {"0000:a0:1c.0,0000:a0:1d.0", "rdmap160s27", "36-47,84-95", "1"}},
     "port_state_unknown"},
    {"roce: Ethernet fabric",
     NULL,
     "roce",
     NULL,
     2,
     NULL,
     NULL,
     {{"0000:13:00.0", "mlx5_0:1", NULL, "0"}, {"0000:83:00.0", "mlx5_1:1", NULL, "1"}},
     ""},
    {"more tasks than hardware threads: shared",
     NULL,
     "multiport",
     NULL,
     40,
     NULL,
     "0-1",
     {{"0000:13:00.0", "mlx5_0:1", NULL, NULL}},
     "more_tasks_than_gpus cpus_shared cpus_shared"},
};

static void join_gpus(const struct ibp_topo *t, const struct ibp_place_task *tk, char *buf,
		      size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < tk->n_gpus; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "",
			 t->gpus[tk->gpus[i]].d.pci);
}

static void join_nics(const struct ibp_topo *t, const struct ibp_place_task *tk, char *buf,
		      size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < tk->n_nics; i++) {
		char n[96];

		if (t->hcas[tk->nics[i].hca].kind == IBP_NIC_RDMA)
			ibp_place_nic_name(t, &tk->nics[i], n, sizeof(n));
		else
			snprintf(n, sizeof(n), "%s", t->hcas[tk->nics[i].hca].name);
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", n);
	}
}

static void codes(const struct ibp_findings *f, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < f->n; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "", f->v[i].code);
}

/* Returns false when the case's real capture is absent (nothing checked). */
static bool run_case(const struct place_case *c)
{
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	unsigned gpus[IBP_PLACE_MAX_GPUS];
	hwloc_bitmap_t allowed = NULL, seen;
	struct ibp_step step = {.ntasks = c->ntasks, .all_gpus = !c->gpus, .local_rank = -1};
	char buf[1024];
	int rc;

	rc = c->real ? ibp_test_topo_real(&t, c->real)
		     : ibp_test_topo_preset(&t, c->preset, c->extra);
	if (rc == 1)
		return false;
	seen = hwloc_bitmap_alloc();
	assert_int_equal(rc, 0);
	if (c->gpus) {
		int n = ibp_indexlist_parse(c->gpus, gpus, IBP_PLACE_MAX_GPUS);

		assert_true(n > 0);
		step.gpus = gpus;
		step.n_gpus = (size_t)n;
	}
	if (c->allowed) {
		allowed = hwloc_bitmap_alloc();
		assert_int_equal(ibp_cpulist_parse(c->allowed, allowed), 0);
		step.allowed = allowed;
	}
	ibp_findings_init(&f);
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	assert_int_equal(pl.n_tasks, c->ntasks);
	for (size_t r = 0; r < 16 && c->tasks[r].gpus; r++) {
		const struct ibp_place_task *tk = &pl.tasks[r];

		join_gpus(&t, tk, buf, sizeof(buf));
		if (strcmp(buf, c->tasks[r].gpus))
			fail_msg("%s: task %zu gpus '%s', expected '%s'", c->name, r, buf,
				 c->tasks[r].gpus);
		join_nics(&t, tk, buf, sizeof(buf));
		if (c->tasks[r].hcas && strcmp(buf, c->tasks[r].hcas))
			fail_msg("%s: task %zu hcas '%s', expected '%s'", c->name, r, buf,
				 c->tasks[r].hcas);
		ibp_cpulist_format(tk->cpus, buf, sizeof(buf));
		if (c->tasks[r].cpus && strcmp(buf, c->tasks[r].cpus))
			fail_msg("%s: task %zu cpus '%s', expected '%s'", c->name, r, buf,
				 c->tasks[r].cpus);
		ibp_cpulist_format(tk->mems, buf, sizeof(buf));
		if (c->tasks[r].mems && strcmp(buf, c->tasks[r].mems))
			fail_msg("%s: task %zu mems '%s', expected '%s'", c->name, r, buf,
				 c->tasks[r].mems);
	}
	codes(&f, buf, sizeof(buf));
	if (strcmp(buf, c->findings))
		fail_msg("%s: findings '%s', expected '%s'", c->name, buf, c->findings);
	for (size_t i = 0; i < f.n; i++) /* placement problems are never failures */
		assert_int_equal(f.v[i].severity, strcmp(f.v[i].code, "port_state_unknown")
						      ? IBP_SEV_WARN
						      : IBP_SEV_OK);
	/* invariants: inside the allowed set, whole cores, no overlap unless shared */
	for (size_t r = 0; r < pl.n_tasks; r++) {
		hwloc_const_bitmap_t cpus = pl.tasks[r].cpus;

		assert_false(hwloc_bitmap_iszero(cpus));
		if (allowed)
			assert_true(hwloc_bitmap_isincluded(cpus, allowed));
		if (!strstr(c->findings, "cpus_shared") && !strstr(c->findings, "cpus_not_local"))
			assert_false(hwloc_bitmap_intersects(seen, cpus));
		hwloc_bitmap_or(seen, seen, cpus);
	}
	ibp_placement_release(&pl);
	ibp_findings_release(&f);
	hwloc_bitmap_free(allowed);
	hwloc_bitmap_free(seen);
	ibp_topo_release(&t);
	return true;
}

static void test_place_table_generated(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!cases[i].real)
			assert_true(run_case(&cases[i]));
}

static void test_place_table_real_captures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cases[i].real && !run_case(&cases[i])) {
			print_message("# real fixtures absent (../shared/fixtures/real or "
				      "$IBP_REAL_FIXTURES): skipped\n");
			skip();
		}
}

static void test_place_worker_rows_split_task_cpus(void **state)
{
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	struct ibp_step step = {.ntasks = 1, .all_gpus = true, .local_rank = -1};
	struct ibp_place_view v;
	char buf[256];
	(void)state;

	assert_int_equal(ibp_test_topo_preset(&t, "dgx-h100", NULL), 0);
	ibp_findings_init(&f);
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	assert_int_equal(ibp_place_view_worker(&pl, 0, 5, &v), 0);
	assert_int_equal(v.n_gpus, 1);
	assert_string_equal(t.gpus[v.gpus[0]].d.pci, "0000:c3:00.0");
	assert_int_equal(v.n_nics, 1);
	assert_string_equal(t.hcas[v.nics[0].hca].name, "mlx5_9");
	ibp_cpulist_format(v.cpus, buf, sizeof(buf));
	assert_string_equal(buf, "70-83,182-195");
	ibp_cpulist_format(v.mems, buf, sizeof(buf));
	assert_string_equal(buf, "1");
	assert_int_equal(ibp_place_view_worker(&pl, 0, 8, &v), -ENOENT);
	assert_int_equal(ibp_place_view_worker(&pl, 1, 0, &v), -EINVAL);
	assert_int_equal(ibp_place_view_task(&pl, 0, &v), 0);
	assert_int_equal(v.n_gpus, 8);
	ibp_placement_release(&pl);
	ibp_placement_release(&pl); /* safe twice */
	ibp_findings_release(&f);
	ibp_topo_release(&t);
}

static void test_place_task_mask_narrows_one_task(void **state)
{
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	hwloc_bitmap_t mask = hwloc_bitmap_alloc();
	struct ibp_step step = {
	    .ntasks = 8, .all_gpus = true, .local_rank = 1, .task_allowed = mask};
	char buf[256];
	(void)state;

	assert_int_equal(ibp_test_topo_preset(&t, "dgx-h100", NULL), 0);
	ibp_findings_init(&f);
	/* Slurm bound task 1 to 0-3: only those of its cores remain */
	ibp_cpulist_parse("0-20", mask);
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	ibp_cpulist_format(pl.tasks[1].cpus, buf, sizeof(buf));
	assert_string_equal(buf, "14-20");
	ibp_placement_release(&pl);
	/* a mask with none of its CPUs: use the mask, and say so */
	ibp_cpulist_parse("100", mask);
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	ibp_cpulist_format(pl.tasks[1].cpus, buf, sizeof(buf));
	assert_string_equal(buf, "100");
	assert_string_equal(f.v[f.n - 1].code, "cpus_outside_task_mask");
	assert_int_equal(f.v[f.n - 1].fclass, IBP_CLASS_JOB);
	ibp_placement_release(&pl);
	ibp_findings_release(&f);
	hwloc_bitmap_free(mask);
	ibp_topo_release(&t);
}

static void test_place_bad_steps_rejected(void **state)
{
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	unsigned dup[] = {1, 1}, big[] = {8};
	hwloc_bitmap_t none = hwloc_bitmap_alloc();
	(void)state;

	assert_int_equal(ibp_test_topo_preset(&t, "dgx-h100", NULL), 0);
	ibp_findings_init(&f);
	struct ibp_step s0 = {.ntasks = 0, .all_gpus = true, .local_rank = -1};
	assert_int_equal(ibp_place_compute(&pl, &t, &s0, &f), -EINVAL);
	struct ibp_step s1 = {.ntasks = 2, .gpus = dup, .n_gpus = 2, .local_rank = -1};
	assert_int_equal(ibp_place_compute(&pl, &t, &s1, &f), -EINVAL);
	struct ibp_step s2 = {.ntasks = 1, .gpus = big, .n_gpus = 1, .local_rank = -1};
	assert_int_equal(ibp_place_compute(&pl, &t, &s2, &f), -EINVAL);
	struct ibp_step s3 = {.ntasks = 1, .all_gpus = true, .allowed = none, .local_rank = -1};
	assert_int_equal(ibp_place_compute(&pl, &t, &s3, &f), -EINVAL);
	struct ibp_step s4 = {
	    .ntasks = IBP_PLACE_MAX_TASKS + 1, .all_gpus = true, .local_rank = -1};
	assert_int_equal(ibp_place_compute(&pl, &t, &s4, &f), -EINVAL);
	assert_null(pl.tasks); /* nothing left allocated */
	assert_int_equal(f.n, 0);
	hwloc_bitmap_free(none);
	ibp_findings_release(&f);
	ibp_topo_release(&t);
}

/*
 * HGX B200 with GPU-local EFA and two ConnectX-7 on x2 Gen4 links: the EFA
 * serve the GPUs (PIX), the narrow ConnectX-7 are left out and say why; with
 * every EFA down there is no full-width NIC near a GPU, and the ConnectX-7
 * are the fabric again (better than none).
 */
static void test_place_b200_narrow_cx7_left_out(void **state)
{
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	struct ibp_step step = {.ntasks = 8, .all_gpus = true, .local_rank = -1};
	size_t narrow = 0;
	(void)state;

	assert_int_equal(ibp_test_topo_preset(&t, "p6-b200", NULL), 0);
	ibp_findings_init(&f);
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	assert_int_equal(pl.fabric_kind, IBP_FABRIC_EFA);
	assert_int_equal(pl.n_fabric, 8);
	assert_int_equal(pl.n_ports, 10);
	for (size_t k = 0; k < pl.n_ports; k++) {
		const struct ibp_topo_hca *h = &t.hcas[pl.ports[k].hca];

		if (h->transport == IBP_TR_EFA) {
			assert_true(pl.ports[k].fabric);
			continue;
		}
		assert_false(pl.ports[k].fabric);
		assert_non_null(strstr(pl.ports[k].why, "narrow PCIe link: 3.9 GB/s"));
		assert_non_null(strstr(pl.ports[k].why, "the GPUs have 63.0 GB/s (x16 Gen5)"));
		narrow++;
	}
	assert_int_equal(narrow, 2);
	for (size_t g = 0; g < t.n_gpus; g++) {
		assert_int_equal(pl.gpus[g].nic.dist, IBP_DIST_PIX);
		assert_int_equal(t.hcas[pl.gpus[g].nic.hca].transport, IBP_TR_EFA);
		assert_non_null(strstr(pl.gpus[g].why, "PIX: 2 EFA ports at that distance"));
	}
	ibp_placement_release(&pl);
	/* every EFA down: nothing full-width near the GPUs, the ConnectX-7 serve */
	for (size_t i = 0; i < t.n_hcas; i++)
		if (t.hcas[i].transport == IBP_TR_EFA)
			t.hcas[i].ports[0].healthy = false;
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	assert_int_equal(pl.fabric_kind, IBP_FABRIC_IB);
	assert_int_equal(pl.n_fabric, 2);
	ibp_placement_release(&pl);
	ibp_findings_release(&f);
	ibp_topo_release(&t);
}

static void test_place_no_gpu_step_on_gpu_node(void **state)
{
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	struct ibp_step step = {.ntasks = 2, .gpus = NULL, .n_gpus = 0, .local_rank = -1};
	(void)state;

	/* a CPU-only step on a GPU node: GPUs keep their pairing, tasks get NUMA nodes */
	assert_int_equal(ibp_test_topo_preset(&t, "dgx-h100", NULL), 0);
	ibp_findings_init(&f);
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	assert_int_equal(pl.tasks[0].n_gpus, 0);
	assert_false(pl.gpus[0].in_step);
	assert_string_equal(t.hcas[pl.gpus[1].nic.hca].name, "mlx5_3");
	assert_int_equal(pl.tasks[1].n_nics, 1);
	assert_int_equal(t.hcas[pl.tasks[1].nics[0].hca].d.numa, 1);
	ibp_placement_release(&pl);
	ibp_findings_release(&f);
	ibp_topo_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_place_table_real_captures),
	    cmocka_unit_test(test_place_table_generated),
	    cmocka_unit_test(test_place_worker_rows_split_task_cpus),
	    cmocka_unit_test(test_place_task_mask_narrows_one_task),
	    cmocka_unit_test(test_place_bad_steps_rejected),
	    cmocka_unit_test(test_place_no_gpu_step_on_gpu_node),
	    cmocka_unit_test(test_place_b200_narrow_cx7_left_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
