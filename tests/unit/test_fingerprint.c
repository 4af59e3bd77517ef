/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the step's consistency fingerprint (helpers/fingerprint.c):
 * the majority (one odd node, ties, all different, one node, a missing
 * fingerprint, a missing rail), the policy's levels, the wire form and its
 * checks, and the collection from a generated tree.
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

#include "support/fixture.h"
#include "ibprep/fingerprint.h"

#define MAXN 8

struct step {
	struct ibp_fp fp[MAXN];
	const struct ibp_fp *p[MAXN];
	const char *names[MAXN];
	size_t n;
};

static const char *const node_names[MAXN] = {"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"};

/* N nodes with 3 rails, firmware FW[i] on mlx5_3:1 (NULL: "28.41.1000"). */
static struct step *make_step(size_t n, const char *const *fw)
{
	struct step *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		struct ibp_fp *fp = &s->fp[i];

		ibp_fp_init(fp);
		assert_int_equal(
		    ibp_fp_set(fp, IBP_FP_HCA_SET, NULL, "3 rails: mlx5_0:1,mlx5_3:1,mlx5_4:1"), 0);
		ibp_fp_set(fp, IBP_FP_KERNEL, NULL, "6.1.0-18-amd64");
		for (int r = 0; r < 3; r++) {
			static const char *const rails[] = {"mlx5_0:1", "mlx5_3:1", "mlx5_4:1"};

			ibp_fp_set(fp, IBP_FP_FIRMWARE, rails[r],
				   r == 1 && fw && fw[i] ? fw[i] : "28.41.1000");
			ibp_fp_set(fp, IBP_FP_LINK_LAYER, rails[r], "InfiniBand");
		}
		s->p[i] = fp;
		s->names[i] = node_names[i];
	}
	return s;
}

static void test_fp_one_odd_node_named_against_the_majority(void **state)
{
	const char *const fw[] = {NULL, NULL, "28.39.1002", NULL};
	struct step *s = make_step(4, fw);
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	char err[256];
	(void)state;

	ibp_policy_init(&pol);
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "consistency_firmware");
	assert_int_equal(f.v[0].severity, IBP_SEV_WARN);
	assert_int_equal(f.v[0].fclass, IBP_CLASS_JOB);
	assert_string_equal(f.v[0].node, "n3");
	assert_string_equal(f.v[0].device, "mlx5_3");
	assert_int_equal(f.v[0].port, 1);
	assert_string_equal(f.v[0].observed, "firmware 28.39.1002, the other 3 nodes 28.41.1000");
	assert_string_equal(f.v[0].expected, "28.41.1000");
	ibp_findings_release(&f);

	/* each node says only its own difference */
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, 2, &f), 0);
	assert_int_equal(f.n, 1);
	ibp_findings_release(&f);
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, 0, &f), 0);
	assert_int_equal(f.n, 0);

	/* the policy decides the level, or turns the key off */
	assert_int_equal(ibp_policy_set(&pol, "consistency", "firmware:fail", err, sizeof(err)), 0);
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, -1, &f), 0);
	assert_int_equal(f.v[0].severity, IBP_SEV_FAIL);
	ibp_findings_release(&f);
	assert_int_equal(ibp_policy_set(&pol, "consistency", "firmware:off", err, sizeof(err)), 0);
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, -1, &f), 0);
	assert_int_equal(f.n, 0);
	free(s);
}

static void test_fp_tie_between_two_groups_names_both(void **state)
{
	const char *const fw[] = {"28.39.1002", "28.39.1002", NULL, NULL};
	struct step *s = make_step(4, fw);
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	(void)state;

	ibp_policy_init(&pol);
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].observed, "no majority for firmware across 4 nodes: n1,n2 "
					     "28.39.1002; n3,n4 28.41.1000");
	assert_string_equal(f.v[0].device, "mlx5_3");
	ibp_findings_release(&f);
	/* said once: by the first node only */
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, 0, &f), 0);
	assert_int_equal(f.n, 1);
	ibp_findings_release(&f);
	for (long self = 1; self < 4; self++) {
		assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, self, &f), 0);
		assert_int_equal(f.n, 0);
	}
	free(s);
}

static void test_fp_all_different_has_no_majority(void **state)
{
	const char *const fw[] = {"1.0", "2.0", "3.0"};
	struct step *s = make_step(3, fw);
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	(void)state;

	ibp_policy_init(&pol);
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].observed,
			    "no majority for firmware across 3 nodes: n1 1.0; n2 2.0; n3 3.0");
	ibp_findings_release(&f);
	/* two nodes that differ: a tie of one against one */
	s->n = 2;
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_non_null(strstr(f.v[0].observed, "no majority for firmware across 2 nodes"));
	ibp_findings_release(&f);
	free(s);
}

static void test_fp_one_node_or_missing_fingerprints_compare_nothing(void **state)
{
	const char *const fw[] = {NULL, "9.9", NULL};
	struct step *s = make_step(3, fw);
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	(void)state;

	ibp_policy_init(&pol);
	assert_int_equal(ibp_fp_compare(s->p, s->names, 1, &pol, -1, &f), 0);
	assert_int_equal(f.n, 0);
	/* n2's fingerprint did not arrive: left out, the other two agree */
	s->p[1] = NULL;
	assert_int_equal(ibp_fp_compare(s->p, s->names, 3, &pol, -1, &f), 0);
	assert_int_equal(f.n, 0);
	free(s);
}

static void test_fp_missing_rail_fails_on_the_hca_set_only(void **state)
{
	struct step *s = make_step(4, NULL);
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	struct ibp_fp *odd;
	(void)state;

	/* n4 has lost mlx5_4 */
	odd = &s->fp[3];
	ibp_fp_init(odd);
	ibp_fp_set(odd, IBP_FP_HCA_SET, NULL, "2 rails: mlx5_0:1,mlx5_3:1");
	ibp_fp_set(odd, IBP_FP_KERNEL, NULL, "6.1.0-18-amd64");
	ibp_fp_set(odd, IBP_FP_FIRMWARE, "mlx5_0:1", "28.41.1000");
	ibp_fp_set(odd, IBP_FP_FIRMWARE, "mlx5_3:1", "28.41.1000");
	ibp_fp_set(odd, IBP_FP_LINK_LAYER, "mlx5_0:1", "InfiniBand");
	ibp_fp_set(odd, IBP_FP_LINK_LAYER, "mlx5_3:1", "InfiniBand");
	ibp_policy_init(&pol);
	assert_int_equal(ibp_fp_compare(s->p, s->names, s->n, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "consistency_hca_set");
	assert_int_equal(f.v[0].severity, IBP_SEV_FAIL);
	assert_string_equal(f.v[0].node, "n4");
	assert_string_equal(f.v[0].device, "");
	assert_string_equal(f.v[0].observed,
			    "HCA set 2 rails: mlx5_0:1,mlx5_3:1, the other 3 nodes 3 rails: "
			    "mlx5_0:1,mlx5_3:1,mlx5_4:1");
	ibp_findings_release(&f);
	free(s);
}

static void test_fp_long_values_compared_whole(void **state)
{
	struct ibp_fp *a = calloc(2, sizeof(*a)), *b = a + 1;
	const struct ibp_fp *p[2] = {a, b};
	const char *const names[2] = {"n1", "n2"};
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	char v1[128], v2[128];
	(void)state;

	assert_non_null(a);
	memset(v1, 'x', 100);
	v1[100] = '\0';
	memcpy(v2, v1, sizeof(v1));
	v2[90] = 'y'; /* differs past the shown part */
	ibp_fp_set(a, IBP_FP_NCCL_IB_HCA, NULL, v1);
	ibp_fp_set(b, IBP_FP_NCCL_IB_HCA, NULL, v2);
	assert_string_equal(a->e[0].value, b->e[0].value);
	assert_int_equal(strlen(a->e[0].value), IBP_FP_VALUE_MAX - 1);
	assert_string_equal(a->e[0].value + IBP_FP_VALUE_MAX - 4, "...");
	ibp_policy_init(&pol);
	assert_int_equal(ibp_fp_compare(p, names, 2, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "consistency_nccl_env");
	assert_int_equal(f.v[0].severity, IBP_SEV_FAIL);
	ibp_findings_release(&f);
	/* control characters are not shown as they are */
	ibp_fp_set(a, IBP_FP_NCCL_NET, NULL, "IB\033[31m");
	assert_string_equal(a->e[1].value, "IB?[31m");
	free(a);
}

static void test_fp_wire_round_trip_and_checks(void **state)
{
	const char *const fw[] = {"28.39.1002"};
	struct step *s = make_step(1, fw);
	struct ibp_fp *back = calloc(1, sizeof(*back));
	uint8_t *buf = malloc(IBP_FP_WIRE_LEN), *bad = malloc(IBP_FP_WIRE_LEN);
	const size_t first = 2, val = 2 + 1 + IBP_FP_RAIL_MAX + 8;
	(void)state;

	assert_non_null(back);
	assert_non_null(buf);
	assert_non_null(bad);
	assert_int_equal(ibp_fp_encode(&s->fp[0], buf, IBP_FP_WIRE_LEN - 1), -ENOSPC);
	assert_int_equal(ibp_fp_encode(&s->fp[0], buf, IBP_FP_WIRE_LEN), 0);
	assert_int_equal(ibp_fp_decode(buf, IBP_FP_WIRE_LEN, back), 0);
	assert_int_equal(back->n, s->fp[0].n);
	assert_memory_equal(back->e, s->fp[0].e, s->fp[0].n * sizeof(back->e[0]));
	assert_int_equal(ibp_fp_decode(buf, IBP_FP_WIRE_LEN - 1, back), -EMSGSIZE);

	struct {
		const char *what;
		size_t at;
		uint8_t byte;
	} cases[] = {
	    {"count above the maximum", 0, 0xff},
	    {"unknown field", first, IBP_FP_N_FIELDS},
	    {"control character in a value", val, 0x1b},
	    {"byte after a value's terminator", val + IBP_FP_VALUE_MAX - 2, 'x'},
	    {"garbage after the last entry", IBP_FP_WIRE_LEN - 1, 1},
	    {"high byte in a rail", first + 1, 0xc3},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(bad, buf, IBP_FP_WIRE_LEN);
		bad[cases[i].at] = cases[i].byte;
		if (ibp_fp_decode(bad, IBP_FP_WIRE_LEN, back) != -EINVAL)
			fail_msg("%s: accepted", cases[i].what);
		assert_int_equal(back->n, 0);
	}
	/* a value without its terminator */
	memcpy(bad, buf, IBP_FP_WIRE_LEN);
	memset(bad + val, 'a', IBP_FP_VALUE_MAX);
	assert_int_equal(ibp_fp_decode(bad, IBP_FP_WIRE_LEN, back), -EINVAL);
	/* the same (field, rail) twice */
	memcpy(bad, buf, IBP_FP_WIRE_LEN);
	memcpy(bad + first + IBP_FP_ENTRY_WIRE, bad + first, IBP_FP_ENTRY_WIRE);
	assert_int_equal(ibp_fp_decode(bad, IBP_FP_WIRE_LEN, back), -EINVAL);
	free(buf);
	free(bad);
	free(back);
	free(s);
}

static void test_fp_hca_set_in_bracket_form(void **state)
{
	static const char *const devs[] = {"mlx5_11", "mlx5_0", "mlx5_3",  "mlx5_4",      "mlx5_5",
					   "mlx5_6",  "mlx5_9", "mlx5_10", "mlx5_bond_0", "ib07"};
	struct ibp_fp_rail rails[10];
	struct ibp_fp *fp = calloc(1, sizeof(*fp));
	struct ibp_fp_source src;
	(void)state;

	assert_non_null(fp);
	memset(rails, 0, sizeof(rails));
	for (size_t i = 0; i < 10; i++) {
		snprintf(rails[i].device, sizeof(rails[i].device), "%s", devs[i]);
		rails[i].port = 1;
		rails[i].gid_index = -1;
	}
	memset(&src, 0, sizeof(src));
	src.rails = rails;
	src.n_rails = 8;
	src.rdma_core = "44.0";
	assert_int_equal(ibp_fp_collect(fp, &src), 0);
	assert_int_equal(fp->e[0].field, IBP_FP_HCA_SET);
	assert_string_equal(fp->e[0].value, "8 rails: mlx5_[0,3-6,9-11]:1");
	ibp_fp_init(fp);
	src.n_rails = 10; /* other prefixes, and a leading zero, stay as they are */
	assert_int_equal(ibp_fp_collect(fp, &src), 0);
	assert_string_equal(fp->e[0].value, "10 rails: mlx5_[0,3-6,9-11]:1,mlx5_b...");
	free(fp);
}

static const char *fake_env(void *ctx, const char *name)
{
	(void)ctx;
	return !strcmp(name, "NCCL_IB_HCA") ? "=mlx5_0:1,mlx5_1:1" : NULL;
}

static void test_fp_collect_from_a_generated_tree(void **state)
{
	char *root = ibp_fixture_make("--preset", "roce", "--node", "r1", (char *)NULL);
	struct ibp_fp *fp = calloc(1, sizeof(*fp));
	struct ibp_inventory inv;
	struct ibp_findings f = {0};
	struct ibp_sysfs fs;
	struct ibp_fp_rail rails[1];
	struct ibp_fp_source src;
	const struct ibp_fp_entry *e;
	(void)state;

	assert_non_null(root);
	assert_non_null(fp);
	assert_int_equal(ibp_fixture_write(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n"),
			 0);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	ibp_inventory_init(&inv);
	assert_int_equal(ibp_inventory_load(&inv, &fs, &f), 0);
	assert_true(inv.n_hcas >= 1);
	memset(rails, 0, sizeof(rails));
	snprintf(rails[0].device, sizeof(rails[0].device), "%s", inv.hcas[0].name);
	rails[0].port = 1;
	rails[0].gid_index = -1;
	for (size_t g = 0; g < inv.hcas[0].ports[0].n_gids; g++)
		if (inv.hcas[0].ports[0].gids[g].type == IBP_GID_TYPE_ROCE_V2 &&
		    inv.hcas[0].ports[0].gids[g].ipv4_mapped)
			rails[0].gid_index = (int)inv.hcas[0].ports[0].gids[g].index;
	memset(&src, 0, sizeof(src));
	src.inv = &inv;
	src.rails = rails;
	src.n_rails = 1;
	src.fs = &fs;
	src.rdma_core = "44.0";
	src.getenv = fake_env;
	assert_int_equal(ibp_fp_collect(fp, &src), 0);
	e = NULL;
	for (size_t i = 0; i < fp->n; i++) {
		char want[96];

		switch (fp->e[i].field) {
		case IBP_FP_HCA_SET:
			snprintf(want, sizeof(want), "1 rail: %s:1", inv.hcas[0].name);
			assert_string_equal(fp->e[i].value, want);
			break;
		case IBP_FP_FIRMWARE:
			assert_string_equal(fp->e[i].value, inv.hcas[0].fw_ver);
			break;
		case IBP_FP_LINK_LAYER:
			assert_string_equal(fp->e[i].value, "Ethernet");
			break;
		case IBP_FP_GID:
			e = &fp->e[i];
			break;
		case IBP_FP_KERNEL:
			assert_string_equal(fp->e[i].value, "6.1.0-18-amd64");
			break;
		case IBP_FP_RDMA_CORE:
			assert_string_equal(fp->e[i].value, "44.0");
			break;
		case IBP_FP_NCCL_IB_HCA:
			assert_string_equal(fp->e[i].value, "=mlx5_0:1,mlx5_1:1");
			break;
		case IBP_FP_NCCL_NET:
			assert_string_equal(fp->e[i].value, "(unset)");
			break;
		default:
			break;
		}
	}
	assert_non_null(e);
	if (rails[0].gid_index >= 0)
		assert_non_null(strstr(e->value, "RoCE v2"));
	ibp_inventory_release(&inv);
	ibp_findings_release(&f);
	ibp_sysfs_close(&fs);
	free(fp);
	ibp_fixture_destroy(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fp_one_odd_node_named_against_the_majority),
	    cmocka_unit_test(test_fp_tie_between_two_groups_names_both),
	    cmocka_unit_test(test_fp_all_different_has_no_majority),
	    cmocka_unit_test(test_fp_one_node_or_missing_fingerprints_compare_nothing),
	    cmocka_unit_test(test_fp_missing_rail_fails_on_the_hca_set_only),
	    cmocka_unit_test(test_fp_long_values_compared_whole),
	    cmocka_unit_test(test_fp_wire_round_trip_and_checks),
	    cmocka_unit_test(test_fp_hca_set_in_bracket_form),
	    cmocka_unit_test(test_fp_collect_from_a_generated_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
