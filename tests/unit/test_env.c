/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the environment generation and lint (helpers/place/env.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/env.h"
#include "support/topo_fixture.h"

struct fixture {
	struct ibp_topo t;
	struct ibp_placement pl;
	struct ibp_findings f;
	struct ibp_policy pol;
	struct ibp_env env;
};

static void fx_setup(struct fixture *x, const char *preset, const char *extra, unsigned ntasks)
{
	struct ibp_step step = {.ntasks = ntasks, .all_gpus = true, .local_rank = -1};

	memset(x, 0, sizeof(*x));
	assert_int_equal(ibp_test_topo_preset(&x->t, preset, extra), 0);
	ibp_findings_init(&x->f);
	ibp_policy_init(&x->pol);
	assert_int_equal(ibp_place_compute(&x->pl, &x->t, &step, &x->f), 0);
	ibp_findings_release(&x->f);
}

static void fx_teardown(struct fixture *x)
{
	ibp_env_release(&x->env);
	ibp_placement_release(&x->pl);
	ibp_findings_release(&x->f);
	ibp_topo_release(&x->t);
}

static int build(struct fixture *x, size_t task, char **envp, bool force)
{
	struct ibp_place_view v;
	struct ibp_env_opts o = {.force = force};

	ibp_env_release(&x->env);
	assert_int_equal(ibp_place_view_task(&x->pl, task, &v), 0);
	return ibp_env_build(&x->env, &x->t, &x->pl, &v, &x->pol, &o,
			     envp ? ibp_env_envp_get : NULL, envp, &x->f);
}

static const char *val(const struct fixture *x, const char *name)
{
	const struct ibp_env_var *v = ibp_env_find(&x->env, name);

	return v ? v->value : NULL;
}

static void test_env_dgx_h100_task_defaults(void **state)
{
	struct fixture x;
	(void)state;

	fx_setup(&x, "dgx-h100", NULL, 8);
	assert_int_equal(build(&x, 1, NULL, false), 0);
	/* NCCL gets the node's whole healthy list, exact names */
	assert_string_equal(val(&x, "NCCL_IB_HCA"), "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,"
						    "mlx5_9:1,mlx5_10:1,mlx5_11:1");
	assert_string_equal(val(&x, "UCX_NET_DEVICES"), "mlx5_3:1");
	assert_string_equal(val(&x, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	assert_string_equal(val(&x, "IBPREP_GPUS"), "0000:43:00.0");
	assert_string_equal(val(&x, "IBPREP_HCAS"), "mlx5_3:1");
	assert_string_equal(val(&x, "IBPREP_CPUS"), "14-27,126-139");
	assert_string_equal(val(&x, "IBPREP_MEMS"), "0");
	assert_string_equal(val(&x, "IBPREP_LOCAL_RANK"), "1");
	assert_string_equal(val(&x, "IBPREP_GPU_MAP"), "0000:43:00.0|mlx5_3:1|14-27,126-139|0");
	/* not asked for by the default policy */
	assert_null(val(&x, "NCCL_IB_GID_INDEX"));
	assert_null(val(&x, "NCCL_NET_GDR_LEVEL"));
	assert_null(val(&x, "OMPI_MCA_pml"));
	assert_null(val(&x, "NCCL_SOCKET_IFNAME"));
	assert_int_equal(x.f.n, 0);
	for (size_t i = 0; i < x.env.n; i++)
		assert_int_equal(x.env.v[i].action, IBP_ENV_SET);
	fx_teardown(&x);
}

static void test_env_policy_keys(void **state)
{
	struct fixture x;
	char err[256];
	struct ibp_env_opts o = {.socket_ifname = "eth7"};
	struct ibp_place_view v;
	(void)state;

	fx_setup(&x, "dgx-a100", NULL, 8);
	assert_int_equal(ibp_policy_set_pair(&x.pol, "nccl_hca=task", err, sizeof(err)), 0);
	assert_int_equal(ibp_policy_set_pair(&x.pol, "gdr_level=yes", err, sizeof(err)), 0);
	assert_int_equal(ibp_policy_set_pair(&x.pol, "ompi_pml=ucx", err, sizeof(err)), 0);
	assert_int_equal(ibp_place_view_task(&x.pl, 3, &v), 0);
	assert_int_equal(ibp_env_build(&x.env, &x.t, &x.pl, &v, &x.pol, &o, NULL, NULL, &x.f), 0);
	assert_string_equal(val(&x, "NCCL_IB_HCA"), "=mlx5_3:1");
	assert_string_equal(val(&x, "NCCL_NET_GDR_LEVEL"), "PXB");
	assert_string_equal(val(&x, "OMPI_MCA_pml"), "ucx");
	assert_string_equal(val(&x, "NCCL_SOCKET_IFNAME"), "=eth7");
	/* the policy's interface wins over the derived one */
	assert_int_equal(ibp_policy_set_pair(&x.pol, "socket_ifname=ib0", err, sizeof(err)), 0);
	ibp_env_release(&x.env);
	assert_int_equal(ibp_env_build(&x.env, &x.t, &x.pl, &v, &x.pol, &o, NULL, NULL, &x.f), 0);
	assert_string_equal(val(&x, "NCCL_SOCKET_IFNAME"), "=ib0");
	fx_teardown(&x);
}

static void test_env_roce_gid_index(void **state)
{
	struct fixture x;
	char err[256];
	(void)state;

	fx_setup(&x, "roce", NULL, 2);
	assert_int_equal(build(&x, 0, NULL, false), 0);
	assert_null(val(&x, "NCCL_IB_GID_INDEX"));
	assert_int_equal(ibp_policy_set_pair(&x.pol, "gid_index=yes", err, sizeof(err)), 0);
	assert_int_equal(build(&x, 1, NULL, false), 0);
	assert_string_equal(val(&x, "NCCL_IB_GID_INDEX"), "3");
	assert_string_equal(val(&x, "UCX_IB_GID_INDEX"), "3");
	assert_string_equal(val(&x, "UCX_NET_DEVICES"), "mlx5_1:1");
	fx_teardown(&x);
	/* on InfiniBand there is no GID index to set */
	fx_setup(&x, "dgx-h100", NULL, 8);
	assert_int_equal(ibp_policy_set_pair(&x.pol, "gid_index=yes", err, sizeof(err)), 0);
	assert_int_equal(build(&x, 0, NULL, false), 0);
	assert_null(val(&x, "NCCL_IB_GID_INDEX"));
	fx_teardown(&x);
}

static void test_env_gdr_level_mapping(void **state)
{
	(void)state;
	assert_string_equal(ibp_env_gdr_level(IBP_DIST_PIX), "PIX");
	assert_string_equal(ibp_env_gdr_level(IBP_DIST_PXB), "PXB");
	assert_string_equal(ibp_env_gdr_level(IBP_DIST_PHB), "PHB");
	assert_string_equal(ibp_env_gdr_level(IBP_DIST_NODE), "PHB"); /* NCCL has no NODE */
	assert_string_equal(ibp_env_gdr_level(IBP_DIST_SYS), "PHB");  /* no GDR across sockets */
}

static void test_env_user_values_kept_and_linted(void **state)
{
	struct fixture x;
	char *envp[] = {(char *)"NCCL_IB_HCA=mlx5_1", (char *)"UCX_NET_DEVICES=mlx5_0,mlx5_3:1",
			(char *)"CUDA_DEVICE_ORDER=FASTEST_FIRST", (char *)"PATH=/bin", NULL};
	(void)state;

	fx_setup(&x, "dgx-h100", NULL, 8);
	assert_int_equal(build(&x, 0, envp, false), 0);
	const struct ibp_env_var *v = ibp_env_find(&x.env, "NCCL_IB_HCA");
	assert_int_equal(v->action, IBP_ENV_USER_KEPT);
	assert_string_equal(v->user, "mlx5_1");
	assert_int_equal(ibp_env_find(&x.env, "CUDA_DEVICE_ORDER")->action, IBP_ENV_USER_KEPT);
	assert_int_equal(ibp_env_find(&x.env, "IBPREP_GPUS")->action, IBP_ENV_SET);
	assert_int_equal(x.f.n, 3);
	/* mlx5_1 is not on the node, but as a prefix it matches mlx5_10 and mlx5_11 */
	assert_string_equal(x.f.v[0].code, "nccl_ib_hca_prefix");
	assert_non_null(strstr(x.f.v[0].observed, "mlx5_10, mlx5_11"));
	assert_non_null(strstr(x.f.v[0].fix, "'='"));
	/* the fix names the devices the node has, not the absent mlx5_1 */
	assert_non_null(strstr(x.f.v[0].fix, "NCCL_IB_HCA='=mlx5_10,mlx5_11'"));
	assert_string_equal(x.f.v[1].code, "cuda_device_order");
	assert_string_equal(x.f.v[2].code, "ucx_net_devices_portless");
	assert_non_null(strstr(x.f.v[2].observed, "'mlx5_0'"));
	for (size_t i = 0; i < x.f.n; i++) {
		assert_int_equal(x.f.v[i].fclass, IBP_CLASS_JOB);
		assert_int_equal(x.f.v[i].severity, IBP_SEV_WARN);
		assert_true(x.f.v[i].fix[0] != '\0');
	}
	/* force replaces them */
	assert_int_equal(build(&x, 0, envp, true), 0);
	assert_int_equal(ibp_env_find(&x.env, "NCCL_IB_HCA")->action, IBP_ENV_FORCED);
	fx_teardown(&x);
}

/* Every device a prefix finding's fix names ("NCCL_IB_HCA='=a,b:1'") is on the node. */
static void fix_names_present(const struct ibp_finding *fd, const struct ibp_topo *t)
{
	const char *q = strstr(fd->fix, "NCCL_IB_HCA='");

	if (!q)
		return; /* the generic fix names nothing */
	q += strlen("NCCL_IB_HCA='");
	q += strspn(q, "^=");
	while (*q && *q != '\'') {
		size_t el = strcspn(q, ",'"), nl = strcspn(q, ":,'");
		bool found = false;

		for (size_t i = 0; i < t->n_hcas && !found; i++)
			found = strlen(t->hcas[i].name) == nl && !strncmp(t->hcas[i].name, q, nl);
		if (!found)
			fail_msg("the fix '%s' names %.*s, which the node does not have", fd->fix,
				 (int)nl, q);
		q += el;
		if (*q == ',')
			q++;
	}
}

static void test_env_lint_nccl_ib_hca_table(void **state)
{
	static const struct {
		const char *value, *codes;
	} cases[] = {
	    {"=mlx5_0:1,mlx5_4:1", ""},
	    {"mlx5_0", ""}, /* no other name starts with mlx5_0 on this node */
	    {"mlx5_1", "nccl_ib_hca_prefix"},
	    {"mlx5_1:1,mlx5_3", "nccl_ib_hca_prefix env_hca_unhealthy"},
	    {"=mlx5_7:1", "env_hca_absent"},
	    {"=mlx5_0:3", "env_hca_absent"},
	    {"=mlx5_0:x", "env_bad_port"},
	    {"=^mlx5_0", "nccl_ib_hca_syntax"},
	    {"mlx5_0,=mlx5_3", "nccl_ib_hca_syntax"},
	    {"mlx5_0,^mlx5_3", "nccl_ib_hca_syntax"},
	    {"^=mlx5_0", ""},
	    {"^mlx5_1", "nccl_ib_hca_prefix"}, /* excludes mlx5_10 and mlx5_11 too */
	    {"^mlx5_7", ""},                   /* excluding an absent device is harmless */
	    {"mlx5", "nccl_ib_hca_prefix"},    /* matches every device: named one by one */
	    {"mlx5_1,mlx5_10", "nccl_ib_hca_prefix"},
	    {"mlx5_0,mlx5_1:1", "nccl_ib_hca_prefix"},
	    {"=mlx5_3:1", "env_hca_unhealthy"},
	    {"", ""},
	    {",,,", ""},
	};
	struct fixture x;
	(void)state;

	fx_setup(&x, "dgx-h100", "--port-down=mlx5_3", 8);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char codes[256] = "";

		ibp_findings_init(&x.f);
		assert_int_equal(ibp_env_lint_nccl_ib_hca(cases[i].value, &x.t, &x.f), 0);
		for (size_t k = 0; k < x.f.n; k++) {
			snprintf(codes + strlen(codes), sizeof(codes) - strlen(codes), "%s%s",
				 k ? " " : "", x.f.v[k].code);
			if (!strcmp(x.f.v[k].code, "nccl_ib_hca_prefix")) {
				assert_non_null(strstr(x.f.v[k].fix, "NCCL_IB_HCA='"));
				fix_names_present(&x.f.v[k], &x.t);
			}
		}
		if (strcmp(codes, cases[i].codes))
			fail_msg("NCCL_IB_HCA='%s': '%s', expected '%s'", cases[i].value, codes,
				 cases[i].codes);
		ibp_findings_release(&x.f);
	}
	fx_teardown(&x);
}

static void test_env_lint_ucx_net_devices_table(void **state)
{
	static const struct {
		const char *value;
		size_t n;
	} cases[] = {
	    {"mlx5_0:1", 0}, {"all", 0},      {"mlx5_0", 1},   {"mlx5_0,mlx5_3", 2},
	    {"eth0", 0},     {"mlx5_3:1", 1}, {"mlx5_0:9", 1}, {"", 0},
	};
	struct fixture x;
	(void)state;

	fx_setup(&x, "dgx-h100", "--port-down=mlx5_3", 8);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ibp_findings_init(&x.f);
		assert_int_equal(ibp_env_lint_ucx_net_devices(cases[i].value, &x.t, &x.f), 0);
		if (x.f.n != cases[i].n)
			fail_msg("UCX_NET_DEVICES='%s': %zu findings, expected %zu", cases[i].value,
				 x.f.n, cases[i].n);
		ibp_findings_release(&x.f);
	}
	fx_teardown(&x);
}

static void test_env_shell_quote_table(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"=mlx5_0:1,mlx5_3:1", "=mlx5_0:1,mlx5_3:1"},
	    {"0000:1b:00.0|mlx5_0:1|0-13|0", "'0000:1b:00.0|mlx5_0:1|0-13|0'"},
	    {"", "''"},
	    {"a b", "'a b'"},
	    {"it's", "'it'\\''s'"},
	    {"$(rm -rf /)", "'$(rm -rf /)'"},
	    {"x\ny", "'x\ny'"},
	};
	char buf[64];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_true(ibp_shell_quote(cases[i].in, buf, sizeof(buf)) >= 0);
		assert_string_equal(buf, cases[i].out);
	}
	assert_int_equal(ibp_shell_quote("it's a long value", buf, 8), -ENOSPC);
}

static void test_env_envp_getter(void **state)
{
	char *envp[] = {(char *)"A=1", (char *)"AB=22", (char *)"EMPTY=", NULL};
	char buf[4];
	(void)state;

	assert_int_equal(ibp_env_envp_get(envp, "AB", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "22");
	assert_int_equal(ibp_env_envp_get(envp, "A", buf, sizeof(buf)), 1);
	assert_int_equal(ibp_env_envp_get(envp, "EMPTY", buf, sizeof(buf)), 0);
	assert_int_equal(ibp_env_envp_get(envp, "B", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(ibp_env_envp_get(envp, "AB", buf, 2), -ENOSPC);
}

static void test_env_route_ifname_loopback(void **state)
{
	char ifname[32];
	(void)state;

	assert_int_equal(ibp_env_route_ifname("127.0.0.1", ifname, sizeof(ifname)), 0);
	assert_string_equal(ifname, "lo");
	assert_int_equal(ibp_env_route_ifname("not-an-address", ifname, sizeof(ifname)), -EINVAL);
	assert_int_equal(ibp_env_route_ifname(NULL, ifname, sizeof(ifname)), -EINVAL);
}

static void test_env_cpu_only_and_slingshot(void **state)
{
	struct fixture x;
	(void)state;

	fx_setup(&x, "cpu-only", NULL, 2);
	assert_int_equal(build(&x, 1, NULL, false), 0);
	assert_string_equal(val(&x, "UCX_NET_DEVICES"), "mlx5_0:1");
	assert_string_equal(val(&x, "IBPREP_GPUS"), "");
	assert_null(val(&x, "CUDA_DEVICE_ORDER")); /* no NVIDIA GPU */
	assert_null(val(&x, "IBPREP_GPU_MAP"));
	fx_teardown(&x);
}

static void test_env_tasks_at_table(void **state)
{
	static const struct {
		const char *list;
		unsigned node;
		int want;
	} cases[] = {
	    {"8", 0, 8},           {"8(x2),4", 0, 8},       {"8(x2),4", 1, 8},
	    {"8(x2),4", 2, 4},     {"8(x2),4", 3, -EINVAL}, {"2,3,1", 2, 1},
	    {"", 0, -EINVAL},      {"8(x", 0, -EINVAL},     {"8(x0)", 0, -EINVAL},
	    {"0", 0, -EINVAL},     {"4,", 1, -EINVAL},      {"-1", 0, -EINVAL},
	    {"99999", 0, -EINVAL}, {"3(x2)x", 0, -EINVAL},  {"2,3(x4)", 4, 3},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = ibp_env_tasks_at(cases[i].list, cases[i].node);

		if (n != cases[i].want)
			fail_msg("'%s' at %u: %d, expected %d", cases[i].list, cases[i].node, n,
				 cases[i].want);
	}
}

static void test_env_read_step_from_slurm(void **state)
{
	struct fixture x;
	struct ibp_step_env se;
	char err[256];
	char *full[] = {(char *)"SLURM_STEP_GPUS=6,4",
			(char *)"SLURM_JOB_GPUS=0-7",
			(char *)"SLURM_STEP_TASKS_PER_NODE=8(x2),2",
			(char *)"SLURM_NODEID=2",
			(char *)"SLURM_LOCALID=1",
			NULL};
	char *job[] = {(char *)"SLURM_JOB_GPUS=0000:c3:00.0", NULL};
	char *bad_gpu[] = {(char *)"SLURM_STEP_GPUS=8", NULL};
	char *bad_tasks[] = {(char *)"SLURM_TASKS_PER_NODE=4(x2)", (char *)"SLURM_NODEID=5", NULL};
	char *none[] = {NULL};
	(void)state;

	fx_setup(&x, "dgx-h100", NULL, 1);
	assert_int_equal(ibp_env_read_step(&se, &x.t, ibp_env_envp_get, full, err, sizeof(err)), 0);
	assert_true(se.have_gpus);
	assert_string_equal(se.gpus_from, "SLURM_STEP_GPUS");
	assert_int_equal(se.n_gpus, 2);
	assert_int_equal(se.gpus[0], 6);
	assert_int_equal(se.ntasks, 2);
	assert_string_equal(se.ntasks_from, "SLURM_STEP_TASKS_PER_NODE");
	assert_int_equal(se.local_rank, 1);
	assert_int_equal(ibp_env_read_step(&se, &x.t, ibp_env_envp_get, job, err, sizeof(err)), 0);
	assert_string_equal(se.gpus_from, "SLURM_JOB_GPUS");
	assert_int_equal(se.gpus[0], 5);
	assert_int_equal(se.ntasks, 0);
	assert_int_equal(se.local_rank, -1);
	assert_int_equal(ibp_env_read_step(&se, &x.t, ibp_env_envp_get, bad_gpu, err, sizeof(err)),
			 -ERANGE);
	assert_non_null(strstr(err, "SLURM_STEP_GPUS names GPU 8, but the node has 8 GPUs"));
	assert_int_equal(
	    ibp_env_read_step(&se, &x.t, ibp_env_envp_get, bad_tasks, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "SLURM_TASKS_PER_NODE"));
	assert_int_equal(ibp_env_read_step(&se, &x.t, ibp_env_envp_get, none, err, sizeof(err)), 0);
	assert_false(se.have_gpus);
	assert_int_equal(ibp_env_read_step(&se, &x.t, NULL, NULL, err, sizeof(err)), 0);
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_env_dgx_h100_task_defaults),
	    cmocka_unit_test(test_env_policy_keys),
	    cmocka_unit_test(test_env_roce_gid_index),
	    cmocka_unit_test(test_env_gdr_level_mapping),
	    cmocka_unit_test(test_env_user_values_kept_and_linted),
	    cmocka_unit_test(test_env_lint_nccl_ib_hca_table),
	    cmocka_unit_test(test_env_lint_ucx_net_devices_table),
	    cmocka_unit_test(test_env_shell_quote_table),
	    cmocka_unit_test(test_env_envp_getter),
	    cmocka_unit_test(test_env_route_ifname_loopback),
	    cmocka_unit_test(test_env_cpu_only_and_slingshot),
	    cmocka_unit_test(test_env_tasks_at_table),
	    cmocka_unit_test(test_env_read_step_from_slurm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
