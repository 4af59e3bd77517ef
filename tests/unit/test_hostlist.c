/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the Slurm host list expander (helpers/core/hostlist.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/hostlist.h"

static const struct {
	const char *spec;
	const char *want; /* space-separated */
} good[] = {
    {"n1", "n1"},
    {"n[1-3]", "n1 n2 n3"},
    {"n[1-4,7]", "n1 n2 n3 n4 n7"},
    {"n[1-4,7],gpu[001-003]", "n1 n2 n3 n4 n7 gpu001 gpu002 gpu003"},
    {"gpu[08-11]", "gpu08 gpu09 gpu10 gpu11"},
    {"n[9-10]", "n9 n10"},
    {"a,b,c", "a b c"},
    {"r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2"},
    {"n[1-2]-ib", "n1-ib n2-ib"},
    {"[1-2]", "1 2"},
    {"node.example-1_x", "node.example-1_x"},
    {"n[5]", "n5"},
    {"n[0-0]", "n0"},
    {"n[3,1,2]", "n3 n1 n2"},
};

static void test_hostlist_good_cases_expand_in_order(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct ibp_hostlist hl = {0};
		char err[256] = "", joined[512] = "";
		size_t off = 0;

		print_message("# %s\n", good[i].spec);
		assert_int_equal(ibp_hostlist_expand(good[i].spec, 0, &hl, err, sizeof(err)), 0);
		for (size_t k = 0; k < hl.n; k++)
			off += (size_t)snprintf(joined + off, sizeof(joined) - off, "%s%s",
						k ? " " : "", hl.names[k]);
		assert_string_equal(joined, good[i].want);
		ibp_hostlist_release(&hl);
		assert_null(hl.names);
		assert_int_equal(hl.n, 0);
	}
}

static const struct {
	const char *spec;
	int rc;
	const char *msg; /* a word the message must contain */
} bad[] = {
    {"", -EINVAL, "empty"},
    {"n[", -EINVAL, "unclosed"},
    {"n]", -EINVAL, "unexpected"},
    {"n[]", -EINVAL, "empty brackets"},
    {"n[3-1]", -EINVAL, "first bound is larger"},
    {"n[a]", -EINVAL, "bad range"},
    {"n[1-]", -EINVAL, "bad range"},
    {"n[-1]", -EINVAL, "bad range"},
    {"n[1--2]", -EINVAL, "bad range"},
    {"n[1-2-3]", -EINVAL, "bad range"},
    {"n[1,,2]", -EINVAL, "bad range"},
    {"n[1-2", -EINVAL, "unclosed"},
    {"n1,,n2", -EINVAL, "empty host name"},
    {"n1,", -EINVAL, "empty host name"},
    {",n1", -EINVAL, "empty host name"},
    {"n 1", -EINVAL, "bad character"},
    {"n\t1", -EINVAL, "bad character"},
    {"n1;rm", -EINVAL, "bad character"},
    {"n[1[2]]", -EINVAL, "nested"},
    {"a[1]b[1]c[1]d[1]e[1]", -EINVAL, "bracket groups"},
    {"n[1-3],n2", -EINVAL, "appears twice"},
    {"n[1-2],n[01-02]", 0, NULL}, /* n1 and n01 are different names */
    {"n[1234567890]", -EINVAL, "bad range"},
    {"n[0-999999999]", -E2BIG, "more than"},
    {"n[0-9999]m[0-9999]", -E2BIG, "more than"},
    {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", -EINVAL, "too long"},
    {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx[1-2]", -EINVAL, "too long"},
};

static void test_hostlist_bad_cases_refused_with_message(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ibp_hostlist hl = {0};
		char err[256] = "";
		int rc = ibp_hostlist_expand(bad[i].spec, 0, &hl, err, sizeof(err));

		print_message("# '%s' -> %d %s\n", bad[i].spec, rc, err);
		assert_int_equal(rc, bad[i].rc);
		if (bad[i].msg) {
			assert_non_null(strstr(err, bad[i].msg));
			assert_null(hl.names);
			assert_int_equal(hl.n, 0);
		}
		ibp_hostlist_release(&hl);
	}
}

static void test_hostlist_cap_enforced_before_allocation(void **state)
{
	struct ibp_hostlist hl = {0};
	char err[128];

	(void)state;
	assert_int_equal(ibp_hostlist_expand("n[1-10]", 10, &hl, err, sizeof(err)), 0);
	assert_int_equal(hl.n, 10);
	ibp_hostlist_release(&hl);
	assert_int_equal(ibp_hostlist_expand("n[1-11]", 10, &hl, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "more than 10"));
	assert_int_equal(ibp_hostlist_expand("a[1-6],b[1-5]", 10, &hl, err, sizeof(err)), -E2BIG);
	/* the hard cap wins over a larger request */
	assert_int_equal(ibp_hostlist_expand("n[0-65536]", 1000000, &hl, err, sizeof(err)), -E2BIG);
	assert_int_equal(ibp_hostlist_expand("n[0-65535]", 0, &hl, err, sizeof(err)), 0);
	assert_int_equal(hl.n, IBP_HOSTLIST_MAX);
	assert_string_equal(hl.names[65535], "n65535");
	ibp_hostlist_release(&hl);
}

static void test_hostlist_find_index(void **state)
{
	struct ibp_hostlist hl = {0};

	(void)state;
	assert_int_equal(ibp_hostlist_expand("gpu[001-004],login", 0, &hl, NULL, 0), 0);
	assert_int_equal(ibp_hostlist_find(&hl, "gpu003"), 2);
	assert_int_equal(ibp_hostlist_find(&hl, "login"), 4);
	assert_int_equal(ibp_hostlist_find(&hl, "gpu3"), -1);
	ibp_hostlist_release(&hl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostlist_good_cases_expand_in_order),
	    cmocka_unit_test(test_hostlist_bad_cases_refused_with_message),
	    cmocka_unit_test(test_hostlist_cap_enforced_before_allocation),
	    cmocka_unit_test(test_hostlist_find_index),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
