/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the cross-node test's topology-aware blame
 * (helpers/rdmatest/rdmatest_topo.c): a leaf's uplinks, a leaf with too few nodes,
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

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* One node's view of a step: its known links, the leaves, and the suspect leaves found. */
struct step {
	const struct ibp_oob_link *k;
	size_t n;
	const int *leaf;
	size_t nnodes;
	int sus[4];
	size_t ns;
};

/* Loads the view and finds its suspect leaves' uplinks (the count is in s->ns). */
static void step_blame(struct step *s, const struct ibp_oob_link *k, size_t n, const int *leaf,
		       size_t nnodes)
{
	s->k = k;
	s->n = n;
	s->leaf = leaf;
	s->nnodes = nnodes;
	s->ns = ibp_rdmatest_uplink_suspects(k, n, leaf, nnodes, s->sus, N_OF(s->sus));
}

static bool step_suspect(const struct step *s, uint32_t node, bool self)
{
	return ibp_rdmatest_suspect_topo(s->k, s->n, node, self, s->leaf, s->nnodes, s->sus, s->ns);
}

static bool step_explains(const struct step *s, uint32_t from, uint32_t to)
{
	return ibp_rdmatest_uplink_explains(from, to, s->leaf, s->nnodes, s->sus, s->ns);
}

/* n3's view with leaf 0 cut off from the others: its links and n1's and n2's summaries. */
static void test_rdmatest_topo_leaf_uplinks_blamed_not_a_node(void **state)
{
	struct ibp_oob_link k[] = {
	    L(2, 3, F), L(2, 4, F), L(0, 2, P), L(1, 2, P), /* n3's own */
	    L(0, 1, P), L(8, 0, F), L(7, 0, F),             /* n1's */
	    L(1, 3, F), L(8, 1, F),                         /* n2's */
	};
	struct step s;

	(void)state;
	step_blame(&s, k, N_OF(k), leaf9, 9);
	assert_int_equal(s.ns, 1);
	assert_int_equal(s.sus[0], 0);
	for (uint32_t i = 0; i < 9; i++)
		assert_false(step_suspect(&s, i, i == 2));
	assert_true(step_explains(&s, 2, 3));
	assert_true(step_explains(&s, 8, 0));
	assert_false(step_explains(&s, 0, 1));
	assert_false(step_explains(&s, 3, 6));
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
	struct step s;

	(void)state;
	step_blame(&s, k, N_OF(k), leaf9, 9);
	assert_int_equal(s.ns, 0);
	assert_true(ibp_rdmatest_suspect(k, s.n, 2, false)); /* without the topology */
	assert_false(step_suspect(&s, 2, false));
	assert_false(step_suspect(&s, 3, true));
}

/* A leaf with one node in the step cannot be told from that node: no uplinks. */
static void test_rdmatest_topo_leaf_with_too_few_nodes(void **state)
{
	static const int leaf[6] = {0, 1, 1, 1, 2, 2};
	struct ibp_oob_link k[] = {
	    L(0, 1, F), L(0, 2, F), L(5, 0, F), L(4, 0, F), L(1, 2, P),
	    L(2, 3, P), L(3, 4, P), L(4, 5, P), L(1, 3, P), L(2, 4, P),
	};
	struct step s;

	(void)state;
	assert_true(IBP_RDMATEST_MIN_LEAF_NODES >= 2);
	step_blame(&s, k, N_OF(k), leaf, 6);
	assert_int_equal(s.ns, 0);
	/* Its failures reach two leaves: a node, as today's rule says. */
	assert_true(step_suspect(&s, 0, true));
}

/* One failed link inside a leaf: neither end, no leaf: the link (both ends) is named. */
static void test_rdmatest_topo_both_ends_of_one_link(void **state)
{
	struct ibp_oob_link k[] = {
	    L(0, 1, F), L(1, 2, P), L(2, 3, P), L(0, 2, P), L(1, 3, P),
	    L(3, 4, P), L(4, 5, P), L(5, 6, P), L(8, 0, P), L(7, 0, P),
	};
	struct step s;

	(void)state;
	step_blame(&s, k, N_OF(k), leaf9, 9);
	assert_int_equal(s.ns, 0);
	assert_false(step_suspect(&s, 0, true));
	assert_false(step_suspect(&s, 1, false));
	assert_false(step_explains(&s, 0, 1));
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
	struct step s;

	(void)state;
	step_blame(&s, k, N_OF(k), leaf9, 9);
	assert_int_equal(s.ns, 1);
	assert_int_equal(s.sus[0], 0);
	assert_true(step_suspect(&s, 7, false));
	for (uint32_t i = 0; i < 9; i++)
		if (i != 7)
			assert_false(step_suspect(&s, i, false));
}

/* Without leaves (no topology, or unknown nodes) the rule is today's. */
static void test_rdmatest_topo_without_leaves_is_todays_rule(void **state)
{
	static const int unknown[4] = {-1, -1, -1, -1};
	struct ibp_oob_link k[] = {
	    L(0, 1, F), L(0, 2, F), L(1, 2, P), L(2, 3, P), L(3, 0, F), L(2, 0, F), L(3, 1, P),
	};
	struct step none, unk;

	(void)state;
	step_blame(&none, k, N_OF(k), NULL, 4);
	assert_int_equal(none.ns, 0);
	assert_false(step_explains(&none, 0, 1));
	step_blame(&unk, k, N_OF(k), unknown, 4);
	assert_int_equal(unk.ns, 0);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(step_suspect(&none, i, i == 0),
				 ibp_rdmatest_suspect(k, N_OF(k), i, i == 0));
		assert_int_equal(step_suspect(&unk, i, i == 0),
				 ibp_rdmatest_suspect(k, N_OF(k), i, i == 0));
	}
	assert_true(ibp_rdmatest_suspect(k, N_OF(k), 0, true));
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
	struct step s;

	(void)state;
	step_blame(&s, k, N_OF(k), leaf9, 9);
	assert_int_equal(s.ns, 0);
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
