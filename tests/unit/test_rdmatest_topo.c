/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the cross-node test's topology-aware blame
 * (helpers/rdmatest/rdmatest_topo.c): a leaf's uplinks, a leaf with too few nodes,
 * both ends of one link, two faults at once, and the views the nodes of a
 * real step have (their own links and their peers' summaries): one table
 * of cases, each one node's view and what the blame must make of it.
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

/* NODE judged with the topology (SELF: by itself) or without it: a suspect or not. */
struct who {
	uint32_t node;
	bool self, want;
};

/* The suspect leaves explain the failed link FROM -> TO, or not. */
struct link_want {
	uint32_t from, to;
	bool want;
};

#define MAXW 9

/*
 * One node's view of a step (its links K, the leaves LEAF of NNODES nodes)
 * and what the topology-aware blame makes of it: NS suspect leaves (the
 * first SUS0), each node of SUSPECT judged with the topology, each of PLAIN
 * without it (ibp_rdmatest_suspect), each link of EXPLAINS; TODAYS: every
 * node's verdict with the topology is today's rule's (node 0 judging
 * itself).
 */
struct topo_case {
	const char *name;
	const struct ibp_oob_link *k;
	size_t n;
	const int *leaf;
	size_t nnodes;
	size_t ns;
	int sus0;
	struct who suspect[MAXW], plain[MAXW];
	size_t n_suspect, n_plain;
	struct link_want explains[4];
	size_t n_explains;
	bool todays;
};

#define NOT_SELF(i)                                                                                \
	{                                                                                          \
		(i), false, false                                                                  \
	}

static void test_rdmatest_topo_cases(void **state)
{
	static const int too_few[6] = {0, 1, 1, 1, 2, 2}; /* leaf 0: one node of the step */
	static const int unknown[4] = {-1, -1, -1, -1};
	/* n3's view with leaf 0 cut off from the others: its links and n1's and n2's summaries */
	const struct ibp_oob_link uplinks[] = {
	    L(2, 3, F), L(2, 4, F), L(0, 2, P), L(1, 2, P), /* n3's own */
	    L(0, 1, P), L(8, 0, F), L(7, 0, F),             /* n1's */
	    L(1, 3, F), L(8, 1, F),                         /* n2's */
	};
	/*
	 * n4's view of the same step: it sees leaf 0's links to it fail but none
	 * of leaf 0's own links: no uplinks, and no node either (today's rule
	 * would blame n3, whose two failures both went to leaf 1).
	 */
	const struct ibp_oob_link foreign[] = {
	    L(3, 4, P), L(3, 5, P), L(2, 3, F), L(1, 3, F), /* n4's own */
	    L(4, 5, P), L(4, 6, P), L(2, 4, F),             /* n5's */
	    L(5, 6, P), L(5, 7, P),                         /* n6's */
	};
	/* a leaf with one node in the step cannot be told from that node: no uplinks */
	const struct ibp_oob_link lone[] = {
	    L(0, 1, F), L(0, 2, F), L(5, 0, F), L(4, 0, F), L(1, 2, P),
	    L(2, 3, P), L(3, 4, P), L(4, 5, P), L(1, 3, P), L(2, 4, P),
	};
	/* one failed link inside a leaf: neither end, no leaf: the link (both ends) is named */
	const struct ibp_oob_link one_link[] = {
	    L(0, 1, F), L(1, 2, P), L(2, 3, P), L(0, 2, P), L(1, 3, P),
	    L(3, 4, P), L(4, 5, P), L(5, 6, P), L(8, 0, P), L(7, 0, P),
	};
	/* leaf 0's uplinks cut and n8 (index 7, leaf 2) dead, in one step */
	const struct ibp_oob_link two_faults[] = {
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
	/* without leaves (no topology, or unknown nodes) the rule is today's */
	const struct ibp_oob_link four[] = {
	    L(0, 1, F), L(0, 2, F), L(1, 2, P), L(2, 3, P), L(3, 0, F), L(2, 0, F), L(3, 1, P),
	};
	/*
	 * A leaf whose own links fail too is not its uplinks (the leaf itself, or a
	 * node); and leaf 1, whose failed links all go to leaf 0, cannot be told
	 * from leaf 0's uplinks.
	 */
	const struct ibp_oob_link inside[] = {
	    L(0, 1, F), L(1, 2, P), L(0, 2, P), L(2, 3, F), L(1, 3, F),
	    L(8, 0, F), L(2, 4, F), L(3, 4, P), L(4, 5, P),
	};
	const struct topo_case cases[] = {
	    {.name = "leaf 0's uplinks blamed, not a node",
	     .k = uplinks,
	     .n = N_OF(uplinks),
	     .leaf = leaf9,
	     .nnodes = 9,
	     .ns = 1,
	     .sus0 = 0,
	     .suspect = {NOT_SELF(0),
			 NOT_SELF(1),
			 {2, true, false},
			 NOT_SELF(3),
			 NOT_SELF(4),
			 NOT_SELF(5),
			 NOT_SELF(6),
			 NOT_SELF(7),
			 NOT_SELF(8)},
	     .n_suspect = 9,
	     .explains = {{2, 3, true}, {8, 0, true}, {0, 1, false}, {3, 6, false}},
	     .n_explains = 4},
	    {.name = "one foreign leaf: its links named, not a node",
	     .k = foreign,
	     .n = N_OF(foreign),
	     .leaf = leaf9,
	     .nnodes = 9,
	     .plain = {{2, false, true}}, /* without the topology */
	     .n_plain = 1,
	     .suspect = {NOT_SELF(2), {3, true, false}},
	     .n_suspect = 2},
	    {.name = "a leaf with too few nodes: its node, as today's rule says",
	     .k = lone,
	     .n = N_OF(lone),
	     .leaf = too_few,
	     .nnodes = 6,
	     .suspect = {{0, true, true}}, /* its failures reach two leaves */
	     .n_suspect = 1},
	    {.name = "both ends of one link",
	     .k = one_link,
	     .n = N_OF(one_link),
	     .leaf = leaf9,
	     .nnodes = 9,
	     .suspect = {{0, true, false}, NOT_SELF(1)},
	     .n_suspect = 2,
	     .explains = {{0, 1, false}},
	     .n_explains = 1},
	    {.name = "two faults at once",
	     .k = two_faults,
	     .n = N_OF(two_faults),
	     .leaf = leaf9,
	     .nnodes = 9,
	     .ns = 1,
	     .sus0 = 0,
	     .suspect = {{7, false, true},
			 NOT_SELF(0),
			 NOT_SELF(1),
			 NOT_SELF(2),
			 NOT_SELF(3),
			 NOT_SELF(4),
			 NOT_SELF(5),
			 NOT_SELF(6),
			 NOT_SELF(8)},
	     .n_suspect = 9},
	    {.name = "no topology: today's rule",
	     .k = four,
	     .n = N_OF(four),
	     .leaf = NULL,
	     .nnodes = 4,
	     .plain = {{0, true, true}},
	     .n_plain = 1,
	     .explains = {{0, 1, false}},
	     .n_explains = 1,
	     .todays = true},
	    {.name = "unknown nodes: today's rule",
	     .k = four,
	     .n = N_OF(four),
	     .leaf = unknown,
	     .nnodes = 4,
	     .todays = true},
	    {.name = "failing inside a leaf is not its uplinks",
	     .k = inside,
	     .n = N_OF(inside),
	     .leaf = leaf9,
	     .nnodes = 9},
	};

	(void)state;
	assert_true(IBP_RDMATEST_MIN_LEAF_NODES >= 2);
	for (size_t i = 0; i < N_OF(cases); i++) {
		const struct topo_case *c = &cases[i];
		struct step s;

		print_message("# %s\n", c->name);
		step_blame(&s, c->k, c->n, c->leaf, c->nnodes);
		assert_int_equal(s.ns, c->ns);
		if (c->ns)
			assert_int_equal(s.sus[0], c->sus0);
		for (size_t j = 0; j < c->n_plain; j++)
			assert_int_equal(
			    ibp_rdmatest_suspect(c->k, c->n, c->plain[j].node, c->plain[j].self),
			    c->plain[j].want);
		for (size_t j = 0; j < c->n_suspect; j++)
			assert_int_equal(step_suspect(&s, c->suspect[j].node, c->suspect[j].self),
					 c->suspect[j].want);
		for (size_t j = 0; j < c->n_explains; j++)
			assert_int_equal(step_explains(&s, c->explains[j].from, c->explains[j].to),
					 c->explains[j].want);
		for (uint32_t j = 0; c->todays && j < c->nnodes; j++)
			assert_int_equal(step_suspect(&s, j, j == 0),
					 ibp_rdmatest_suspect(c->k, c->n, j, j == 0));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rdmatest_topo_cases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
