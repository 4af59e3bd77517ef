/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_place_seen: a task's row from the GPUs it really sees (Slurm's
 * --gpu-bind, the user's CUDA_VISIBLE_DEVICES), built without Slurm
 * (ibp_place_view_seen, place.h), on a generated DGX H100.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/cpulist.h"
#include "ibprep/place.h"
#include "support/topo_fixture.h"

static void test_place_seen_rows_from_the_gpus_seen(void **state)
{
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	struct ibp_step step = {.ntasks = 8, .all_gpus = true, .local_rank = -1};
	struct ibp_place_seen sv = {0};
	struct ibp_place_view deal;
	const unsigned one[] = {5}, two[] = {5, 2}, bad[] = {8};
	char a[256], b[256];

	(void)state;
	assert_int_equal(ibp_test_topo_preset(&t, "dgx-h100", NULL), 0);
	ibp_findings_init(&f);
	assert_int_equal(ibp_place_compute(&pl, &t, &step, &f), 0);
	/* task 0 sees GPU 5: it gets task 5's row of the deal */
	assert_int_equal(ibp_place_view_seen(&sv, &t, &pl, 0, one, 1), 0);
	assert_int_equal(ibp_place_view_task(&pl, 5, &deal), 0);
	assert_int_equal(sv.v.local_rank, 0);
	assert_int_equal(sv.v.n_gpus, 1);
	assert_int_equal(sv.v.gpus[0], 5);
	assert_int_equal(sv.v.n_nics, 1);
	assert_string_equal(t.hcas[sv.v.nics[0].hca].name, "mlx5_9");
	ibp_cpulist_format(sv.v.cpus, a, sizeof(a));
	ibp_cpulist_format(deal.cpus, b, sizeof(b));
	assert_string_equal(a, b);
	ibp_cpulist_format(sv.v.mems, a, sizeof(a));
	assert_string_equal(a, "1");
	ibp_place_seen_release(&sv);
	/* two GPUs, given out of order: sorted, both ports, both shares, both nodes */
	assert_int_equal(ibp_place_view_seen(&sv, &t, &pl, 1, two, 2), 0);
	assert_int_equal(sv.v.gpus[0], 2);
	assert_int_equal(sv.v.gpus[1], 5);
	assert_int_equal(sv.v.n_nics, 2);
	ibp_cpulist_format(sv.v.cpus, a, sizeof(a));
	assert_string_equal(a, "28-41,70-83,140-153,182-195");
	ibp_cpulist_format(sv.v.mems, a, sizeof(a));
	assert_string_equal(a, "0-1");
	ibp_place_seen_release(&sv);
	ibp_place_seen_release(&sv); /* safe twice */
	/* a GPU the node does not have */
	assert_int_equal(ibp_place_view_seen(&sv, &t, &pl, 0, bad, 1), -EINVAL);
	ibp_place_seen_release(&sv);
	ibp_placement_release(&pl);
	ibp_findings_release(&f);
	ibp_topo_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_place_seen_rows_from_the_gpus_seen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
