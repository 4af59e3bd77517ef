/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the cross-node test's topology-aware blame
 * (helpers/rdmatest_topo.c): a leaf's uplinks, a leaf with too few nodes,
 * both ends of one link, two faults at once, and the views the nodes of a
 * real step have (their own links and their peers' summaries).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/rdmatest.h"

#define P IBP_LINK_PASS
#define F IBP_LINK_TIMEOUT

/* Nine nodes n1..n9 (indices 0..8) in three leaves of three. */
static const int leaf9[9] = {0, 0, 0, 1, 1, 1, 2, 2, 2};

static struct ibp_oob_link L(uint32_t from, uint32_t to, uint8_t status) {
	struct ibp_oob_link l = {.from = from, .to = to, .round = 1, .status = status};

	return l;
}

/* n3's view with leaf 0 cut off from the others: its links and n1's and n2's summaries. */
static void
test_rdmatest_topo_leaf_uplinks_blamed_not_a_node(void **state)
{
	struct ibp_oob_link k[] = {
	    L(2, 3, F), L(2, 4, F), L(0, 2, P), L(1, 2, P), /* n3's own */
	    L(0, 1, P), L(8, 0, F), L(7, 0, F),             /* n1's */
	    L(1, 3, F), L(8, 1, F),                         /* n2's */
	};
	size_t n = sizeof(k) / sizeof(k[0]);
	int sus[4];
	size_t ns;

	(void)state;
	ns = ibp_rdmatest_uplink_suspects(k, n, leaf9, 9, sus, 4);
	assert_int_equal(ns, 1);
	assert_int_equal(sus[0], 0);
	for (uint32_t i = 0; i < 9; i++)
		assert_false(ibp_rdmatest_suspect_topo(k, n, i, i == 2, leaf9, 9, sus, ns));
	assert_true(ibp_rdmatest_uplink_explains(2, 3, leaf9, 9, sus, ns));
	assert_true(ibp_rdmatest_uplink_explains(8, 0, leaf9, 9, sus, ns));
	assert_false(ibp_rdmatest_uplink_explains(0, 1, leaf9, 9, sus, ns));
	assert_false(ibp_rdmatest_uplink_explains(3, 6, leaf9, 9, sus, ns));
}

/*
 * n4's view of the same step: it sees leaf 0's links to it fail but none
 * of leaf 0's own links: no uplinks, and no node either (today's rule
 * would blame n3, whose two failures both went to leaf 1).
 */
static void test_rdmatest_topo_one_foreign_leaf_names_links_not_a_node(void **state)
{
	struct ibp_oob_link k[] = {
	    L(3, 4, P), L(3, 5, P), L(2, 3, F), L(1, 3, F), /* n4's own */
	    L(4, 5, P), L(4, 6, P), L(2, 4, F),             /* n5's */
	    L(5, 6, P), L(5, 7, P),                         /* n6's */
	};
	size_t n = sizeof(k) / sizeof(k[0]);
	int sus[4];
	size_t ns;

	(void)state;
	ns = ibp_rdmatest_uplink_suspects(k, n, leaf9, 9, sus, 4);
	assert_int_equal(ns, 0);
	assert_true(ibp_rdmatest_suspect(k, n, 2, false)); /* without the topology */
	assert_false(ibp_rdmatest_suspect_topo(k, n, 2, false, leaf9, 9, sus, ns));
	assert_false(ibp_rdmatest_suspect_topo(k, n, 3, true, leaf9, 9, sus, ns));
}

/* A leaf with one node in the step cannot be told from that node: no uplinks. */
static void test_rdmatest_topo_leaf_with_too_few_nodes(void **state)
{
	static const int leaf[6] = {0, 1, 1, 1, 2, 2};
	struct ibp_oob_link k[] = {
	    L(0, 1, F), L(0, 2, F), L(5, 0, F), L(4, 0, F), L(1, 2, P),
	    L(2, 3, P), L(3, 4, P), L(4, 5, P), L(1, 3, P), L(2, 4, P),
	};
	size_t n = sizeof(k) / sizeof(k[0]);
	int sus[4];
	size_t ns;

	(void)state;
	assert_true(IBP_RDMATEST_MIN_LEAF_NODES >= 2);
	ns = ibp_rdmatest_uplink_suspects(k, n, leaf, 6, sus, 4);
	assert_int_equal(ns, 0);
	/* Its failures reach two leaves: a node, as today's rule says. */
	assert_true(ibp_rdmatest_suspect_topo(k, n, 0, true, leaf, 6, sus, ns));
}

/* One failed link inside a leaf: neither end, no leaf: the link (both ends) is named. */
static void test_rdmatest_topo_both_ends_of_one_link(void **state)
{
	struct ibp_oob_link k[] = {
	    L(0, 1, F), L(1, 2, P), L(2, 3, P), L(0, 2, P), L(1, 3, P),
	    L(3, 4, P), L(4, 5, P), L(5, 6, P), L(8, 0, P), L(7, 0, P),
	};
	size_t n = sizeof(k) / sizeof(k[0]);
	int sus[4];
	size_t ns;

	(void)state;
	ns = ibp_rdmatest_uplink_suspects(k, n, leaf9, 9, sus, 4);
	assert_int_equal(ns, 0);
	assert_false(ibp_rdmatest_suspect_topo(k, n, 0, true, leaf9, 9, sus, ns));
	assert_false(ibp_rdmatest_suspect_topo(k, n, 1, false, leaf9, 9, sus, ns));
	assert_false(ibp_rdmatest_uplink_explains(0, 1, leaf9, 9, sus, ns));
}

/* Leaf 0's uplinks cut and n8 (index 7, leaf 2) dead, in one step. */
static void test_rdmatest_topo_two_faults_at_once(void **state)
{
	struct ibp_oob_link k[] = {
	    /* leaf 0: inside passes, every link out fails */
	    L(0, 1, P),
	    L(1, 2, P),
	    L(0, 2, P),
	    L(2, 3, F),
	    L(2, 4, F),
	    L(1, 3, F),
	    L(8, 0, F),
	    /* leaf 1 and leaf 2 */
	    L(3, 4, P),
	    L(4, 5, P),
	    L(3, 5, P),
	    L(5, 6, P),
	    L(4, 6, P),
	    /* n8 dead: its links fail inside its leaf and out of it */
	    L(5, 7, F),
	    L(6, 7, F),
	    L(7, 8, F),
	    L(7, 0, F),
	    L(6, 8, P),
	    L(8, 1, F),
	};
	size_t n = sizeof(k) / sizeof(k[0]);
	int sus[4];
	size_t ns;

	(void)state;
	ns = ibp_rdmatest_uplink_suspects(k, n, leaf9, 9, sus, 4);
	assert_int_equal(ns, 1);
	assert_int_equal(sus[0], 0);
	assert_true(ibp_rdmatest_suspect_topo(k, n, 7, false, leaf9, 9, sus, ns));
	for (uint32_t i = 0; i < 9; i++)
		if (i != 7)
			assert_false(ibp_rdmatest_suspect_topo(k, n, i, false, leaf9, 9, sus, ns));
}

/* Without leaves (no topology, or unknown nodes) the rule is today's. */
static void test_rdmatest_topo_without_leaves_is_todays_rule(void **state)
{
	static const int unknown[4] = {-1, -1, -1, -1};
	struct ibp_oob_link k[] = {
	    L(0, 1, F), L(0, 2, F), L(1, 2, P), L(2, 3, P), L(3, 0, F), L(2, 0, F), L(3, 1, P),
	};
	size_t n = sizeof(k) / sizeof(k[0]);
	int sus[4];

	(void)state;
	assert_int_equal(ibp_rdmatest_uplink_suspects(k, n, NULL, 4, sus, 4), 0);
	assert_false(ibp_rdmatest_uplink_explains(0, 1, NULL, 4, sus, 0));
	assert_int_equal(ibp_rdmatest_uplink_suspects(k, n, unknown, 4, sus, 4), 0);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(ibp_rdmatest_suspect_topo(k, n, i, i == 0, NULL, 4, sus, 0),
				 ibp_rdmatest_suspect(k, n, i, i == 0));
		assert_int_equal(ibp_rdmatest_suspect_topo(k, n, i, i == 0, unknown, 4, sus, 0),
				 ibp_rdmatest_suspect(k, n, i, i == 0));
	}
	assert_true(ibp_rdmatest_suspect(k, n, 0, true));
}

/*
 * A leaf whose own links fail too is not its uplinks (the leaf itself, or a
 * node); and leaf 1, whose failed links all go to leaf 0, cannot be told
 * from leaf 0's uplinks.
 */
static void test_rdmatest_topo_failing_inside_is_not_uplinks(void **state)
{
	struct ibp_oob_link k[] = {
	    L(0, 1, F), L(1, 2, P), L(0, 2, P), L(2, 3, F), L(1, 3, F),
	    L(8, 0, F), L(2, 4, F), L(3, 4, P), L(4, 5, P),
	};
	int sus[4];

	(void)state;
	assert_int_equal(
	    ibp_rdmatest_uplink_suspects(k, sizeof(k) / sizeof(k[0]), leaf9, 9, sus, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rdmatest_topo_leaf_uplinks_blamed_not_a_node),
	    cmocka_unit_test(test_rdmatest_topo_one_foreign_leaf_names_links_not_a_node),
	    cmocka_unit_test(test_rdmatest_topo_leaf_with_too_few_nodes),
	    cmocka_unit_test(test_rdmatest_topo_both_ends_of_one_link),
	    cmocka_unit_test(test_rdmatest_topo_two_faults_at_once),
	    cmocka_unit_test(test_rdmatest_topo_without_leaves_is_todays_rule),
	    cmocka_unit_test(test_rdmatest_topo_failing_inside_is_not_uplinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
