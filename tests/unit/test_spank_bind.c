/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_bind: one binding for the plugin and `ibprep exec` (bind.h).
 *
 * The plan on a generated 2-NUMA view; then the same task of a generated
 * DGX H100 node (one task: 8 GPUs, both NUMA nodes) bound by the plugin's
 * task_init and by `ibprep exec`: sched_setaffinity and set_mempolicy are
 * wrapped (recorded, not applied), so the comparison runs on any machine.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hwloc.h>
#include <sched.h>

#include "../../helpers/ibprep_cmd.h"
#include "../../spank/spank_ib.h"
#include "fake_spank.h"
#include "ibprep/bind.h"
#include "ibprep/cpulist.h"
#include "support/fixture.h"

int slurm_spank_init(spank_t sp, int ac, char **av);
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av);
int slurm_spank_task_init(spank_t sp, int ac, char **av);
int slurm_spank_exit(spank_t sp, int ac, char **av);

/* ---- the wrapped system calls ---- */

#define LIVE_CPUS 224 /* the generated node's CPUs: all in the process's mask */

static struct {
	char cpus[1024];
	int mode;
	unsigned long nodes;
	int n_set, n_pol;
	int pm_einval; /* set_mempolicy(PREFERRED_MANY) fails EINVAL (an old kernel) */
} rec;

int __wrap_sched_getaffinity(pid_t pid, size_t sz, cpu_set_t *set);
int __wrap_sched_setaffinity(pid_t pid, size_t sz, const cpu_set_t *set);
long __wrap_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode);
int __wrap_execvp(const char *file, char *const argv[]);

int __wrap_sched_getaffinity(pid_t pid, size_t sz, cpu_set_t *set)
{
	(void)pid;
	if (sz * 8 < LIVE_CPUS) {
		errno = EINVAL;
		return -1;
	}
	CPU_ZERO_S(sz, set);
	for (size_t c = 0; c < LIVE_CPUS; c++)
		CPU_SET_S(c, sz, set);
	return 0;
}

int __wrap_sched_setaffinity(pid_t pid, size_t sz, const cpu_set_t *set)
{
	hwloc_bitmap_t b = hwloc_bitmap_alloc();

	(void)pid;
	for (size_t c = 0; c < sz * 8; c++)
		if (CPU_ISSET_S(c, sz, set))
			hwloc_bitmap_set(b, (unsigned)c);
	ibp_cpulist_format(b, rec.cpus, sizeof(rec.cpus));
	hwloc_bitmap_free(b);
	rec.n_set++;
	return 0;
}

long __wrap_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode)
{
	(void)maxnode;
	if (mode == IBP_MPOL_PREFERRED_MANY && rec.pm_einval) {
		errno = EINVAL;
		return -1;
	}
	rec.mode = mode;
	rec.nodes = mask ? mask[0] : 0;
	rec.n_pol++;
	return 0;
}

int __wrap_execvp(const char *file, char *const argv[])
{
	(void)file;
	(void)argv;
	errno = ENOENT;
	return -1;
}

/* ---- the plan ---- */

static void test_bind_plan_cases(void **state)
{
	struct ibp_place_view v;
	struct ibp_bind_plan p;
	hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), mems = hwloc_bitmap_alloc(),
		       have = hwloc_bitmap_alloc();
	char buf[64];

	(void)state;
	memset(&v, 0, sizeof(v));
	ibp_bind_plan_init(&p);
	assert_int_equal(ibp_bind_plan(&v, NULL, &p), -ENOENT); /* no CPU */
	hwloc_bitmap_set_range(cpus, 0, 7);
	hwloc_bitmap_set_range(mems, 0, 1);
	v.cpus = cpus;
	v.mems = mems;
	/* two memory nodes: preferred, many */
	assert_int_equal(ibp_bind_plan(&v, NULL, &p), 0);
	assert_int_equal(p.mempolicy, IBP_MPOL_PREFERRED_MANY);
	ibp_cpulist_format(p.mems, buf, sizeof(buf));
	assert_string_equal(buf, "0-1");
	/* within the process's mask only */
	hwloc_bitmap_set_range(have, 6, 11);
	assert_int_equal(ibp_bind_plan(&v, have, &p), 0);
	ibp_cpulist_format(p.cpus, buf, sizeof(buf));
	assert_string_equal(buf, "6-7");
	/* one node: preferred */
	hwloc_bitmap_only(mems, 1);
	assert_int_equal(ibp_bind_plan(&v, NULL, &p), 0);
	assert_int_equal(p.mempolicy, IBP_MPOL_PREFERRED);
	/* none: left alone */
	hwloc_bitmap_zero(mems);
	assert_int_equal(ibp_bind_plan(&v, NULL, &p), 0);
	assert_int_equal(p.mempolicy, IBP_MPOL_DEFAULT);
	/* every CPU outside the mask */
	hwloc_bitmap_only(have, 100);
	assert_int_equal(ibp_bind_plan(&v, have, &p), -EXDEV);
	/* a node beyond what a policy can name */
	hwloc_bitmap_only(mems, IBP_BIND_MAX_NODES);
	assert_int_equal(ibp_bind_plan(&v, NULL, &p), -ERANGE);
	ibp_bind_plan_release(&p);
	hwloc_bitmap_free(cpus);
	hwloc_bitmap_free(mems);
	hwloc_bitmap_free(have);
}

/* PREFERRED_MANY refused (a kernel before 5.15): interleave over the same nodes. */
static void test_bind_preferred_many_falls_back_to_interleave(void **state)
{
	struct ibp_place_view v;
	struct ibp_bind_plan p;
	hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), mems = hwloc_bitmap_alloc();

	(void)state;
	memset(&v, 0, sizeof(v));
	memset(&rec, 0, sizeof(rec));
	ibp_bind_plan_init(&p);
	hwloc_bitmap_set_range(cpus, 0, 3);
	hwloc_bitmap_set_range(mems, 0, 1);
	v.cpus = cpus;
	v.mems = mems;
	rec.pm_einval = 1;
	assert_int_equal(ibp_place_bind(&v, &p), 0);
	assert_int_equal(p.mempolicy, IBP_MPOL_INTERLEAVE);
	assert_int_equal(rec.mode, IBP_MPOL_INTERLEAVE);
	assert_int_equal(rec.nodes, 3UL);
	assert_string_equal(rec.cpus, "0-3");
	ibp_bind_plan_release(&p);
	hwloc_bitmap_free(cpus);
	hwloc_bitmap_free(mems);
}

/* ---- the plugin and ibprep exec, the same task ---- */

struct node {
	char *root, *tdir;
	char topo[PATH_MAX];
};

static int make_node(struct node *nd)
{
	char *argv[] = {(char *)"python3",  (char *)"tests/fixtures/mktopo.py",
			(char *)"--preset", (char *)"dgx-h100",
			nd->topo,           NULL};

	nd->root = ibp_fixture_make("--preset", "dgx-h100", "--gdr", NULL);
	nd->tdir = ibp_fixture_tmpdir();
	if (!nd->root || !nd->tdir)
		return -1;
	snprintf(nd->topo, sizeof(nd->topo), "%s/topo.xml", nd->tdir);
	return ibp_fixture_run(argv);
}

static void user_flag(const char *name, const char *arg)
{
	for (int i = 0; i < fake.n_opts; i++)
		if (!strcmp(fake.opts[i].name, name)) {
			assert_int_equal(fake.opts[i].cb(fake.opts[i].val, arg, 1), 0);
			return;
		}
	fail_msg("option --%s not registered", name);
}

static void test_bind_plugin_and_exec_identical_on_two_numa_task(void **state)
{
	struct node nd;
	char a_root[PATH_MAX + 16], a_topo[PATH_MAX + 16], a_cache[PATH_MAX + 16];
	char *av[] = {a_root, a_topo, a_cache, (char *)"bind=yes", (char *)"min_memlock=0"};
	char plug_cpus[1024];
	int plug_mode;
	unsigned long plug_nodes;

	(void)state;
	memset(&nd, 0, sizeof(nd));
	assert_int_equal(make_node(&nd), 0);
	snprintf(a_root, sizeof(a_root), "sysfs_root=%s", nd.root);
	snprintf(a_topo, sizeof(a_topo), "topology=%s", nd.topo);
	snprintf(a_cache, sizeof(a_cache), "cache_dir=%s/cache", nd.tdir);

	/* the plugin: one task on the node (8 GPUs, both NUMA nodes) */
	memset(&rec, 0, sizeof(rec));
	fake_spank_reset();
	fake.ctx = S_CTX_REMOTE;
	fake.local_tasks = 1;
	fake.nnodes = 1;
	fake.job_id = 301;
	assert_int_equal(slurm_spank_init(NULL, 5, av), 0);
	user_flag("ib-affinity", NULL);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 5, av), 0);
	fake.task_id = 0;
	assert_int_equal(slurm_spank_task_init(NULL, 5, av), 0);
	slurm_spank_exit(NULL, 5, av);
	assert_int_equal(rec.n_set, 1);
	assert_int_equal(rec.n_pol, 1);
	snprintf(plug_cpus, sizeof(plug_cpus), "%s", rec.cpus);
	plug_mode = rec.mode;
	plug_nodes = rec.nodes;

	/* ibprep exec, the same task */
	{
		/* one task: without --local-rank, the task's row (with it: a GPU worker's) */
		char *argv[] = {(char *)"exec",
				(char *)"--topology",
				nd.topo,
				(char *)"--sysfs-root",
				nd.root,
				(char *)"--ntasks-per-node",
				(char *)"1",
				(char *)"min_memlock=0",
				(char *)"--",
				(char *)"true",
				NULL};

		memset(&rec, 0, sizeof(rec));
		assert_int_equal(ibprep_cmd_exec(10, argv), 127); /* execvp wrapped: ENOENT */
	}
	assert_int_equal(rec.n_set, 1);
	assert_int_equal(rec.n_pol, 1);
	/* the same binding, and a 2-NUMA one */
	print_message("plugin %s mode %d nodes %lu; exec %s mode %d nodes %lu\n", plug_cpus,
		      plug_mode, plug_nodes, rec.cpus, rec.mode, rec.nodes);
	assert_string_equal(rec.cpus, plug_cpus);
	assert_int_equal(rec.mode, plug_mode);
	assert_int_equal(rec.nodes, plug_nodes);
	assert_int_equal(plug_mode, IBP_MPOL_PREFERRED_MANY);
	assert_int_equal(plug_nodes, 3UL); /* nodes 0 and 1: a 2-NUMA task */
	assert_true(plug_cpus[0] != '\0');
	ibp_fixture_destroy(nd.root);
	ibp_fixture_destroy(nd.tdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bind_plan_cases),
	    cmocka_unit_test(test_bind_preferred_many_falls_back_to_interleave),
	    cmocka_unit_test(test_bind_plugin_and_exec_identical_on_two_numa_task),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
