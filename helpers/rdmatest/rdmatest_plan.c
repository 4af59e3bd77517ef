/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_plan.c: who tests with whom (rdmatest.h).  Pure functions of
 * the node count, the index and (for the topology-aware plan) every node's
 * leaf, the same on every node, so no node needs to ask another.
 *
 * Plain plan: round 1 is the ring (i sends to i+1), round 2 the second
 * shift (i sends to i+2), which gives every node two distinct senders and
 * two distinct receivers from N = 5 on, enough for the blame to tell a
 * node from a link.
 *
 * Topology-aware plan (ibp_rdmatest_plan_topo): still two rounds, each a
 * permutation without a fixed point, so every node sends once and receives
 * once per round and time to verdict is the plain plan's.
 *
 *   round 1  inside leaves: a ring over the step's nodes of each leaf
 *            (step order); the nodes alone in their leaf form one more
 *            ring (they talk across leaves), a single one joins the
 *            first leaf's ring
 *   round 2  across leaves: a ring over all nodes interleaved by leaf:
 *            sorted by (2p + 1) / s (p a node's place in its leaf, s the
 *            leaf's nodes in the step), ties by leaf, so a node's two
 *            neighbours are in two other leaves whenever the leaves are
 *            about the same size and there are three or more
 *
 * A node of a leaf with s >= 3 step nodes gets 2 intra-leaf partners (its
 * round-1 successor and predecessor), s = 2 one (both directions); with
 * three or more leaves of similar size it gets 2 cross-leaf partners in 2
 * other leaves.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/rdmatest.h"

int ibp_rdmatest_plan(size_t nnodes, size_t index, struct ibp_rdmatest_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	if (nnodes == 0 || index >= nnodes || nnodes > IBP_HOSTLIST_MAX)
		return -EINVAL;
	plan->n_rounds = nnodes == 1 ? 0 : nnodes == 2 ? 1 : 2;
	for (unsigned r = 0; r < plan->n_rounds; r++) {
		size_t shift = r + 1;

		plan->send_to[r] = (uint32_t)((index + shift) % nnodes);
		plan->recv_from[r] = (uint32_t)((index + nnodes - shift) % nnodes);
	}
	return 0;
}

/* One node as the plan sees it. */
struct pnode {
	uint32_t node;
	int leaf;      /* the caller's leaf id */
	uint32_t rank; /* the leaf's rank: order of its first node in the step */
	uint32_t pos;  /* place among the leaf's step nodes */
	uint32_t size; /* the leaf's step nodes */
	uint32_t group;
};

static int by_leaf_then_node(const void *a, const void *b)
{
	const struct pnode *x = a, *y = b;

	if (x->leaf != y->leaf)
		return x->leaf < y->leaf ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int by_node(const void *a, const void *b)
{
	const struct pnode *x = a, *y = b;

	return x->node < y->node ? -1 : x->node > y->node;
}

/* Round 1's order: by group, then node. */
static int by_group(const void *a, const void *b)
{
	const struct pnode *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* Round 2's order: (2 pos + 1) / size, then leaf rank, then node. */
static int interleaved(const void *a, const void *b)
{
	const struct pnode *x = a, *y = b;
	uint64_t l = (2 * (uint64_t)x->pos + 1) * y->size;
	uint64_t r = (2 * (uint64_t)y->pos + 1) * x->size;

	if (l != r)
		return l < r ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* FNV-1a over the partition (leaf ranks in node order): what the plan depends on. */
static uint64_t digest_of(const struct pnode *v, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char tag[] = "ibp-plan-topo-1";

	for (size_t i = 0; i < sizeof(tag) - 1; i++)
		h = (h ^ (uint8_t)tag[i]) * 0x100000001b3ull;
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 4; b++)
			h = (h ^ ((v[i].rank >> (8 * b)) & 0xff)) * 0x100000001b3ull;
	return h ? h : 1;
}

/* This node's successor and predecessor in V (sorted), found by node index. */
static void ring_at(const struct pnode *v, size_t lo, size_t hi, uint32_t me, uint32_t *to,
		    uint32_t *from)
{
	size_t len = hi - lo;

	for (size_t i = lo; i < hi; i++)
		if (v[i].node == me) {
			*to = v[lo + (i - lo + 1) % len].node;
			*from = v[lo + (i - lo + len - 1) % len].node;
			return;
		}
}

/*
 * The step's nodes with their leaf's rank, their place in it and its size,
 * in node order, into *OUT (free()): 0, or 1 when the plain plan applies
 * (fewer than 4 nodes, a leaf unknown, one leaf), or -ENOMEM.
 */
static int topo_nodes(size_t nnodes, const int *leaf, struct pnode **out, uint32_t *n_leaves_out)
{
	struct pnode *v;
	uint32_t n_leaves = 0;

	*out = NULL;
	if (!leaf || nnodes < 4)
		return 1;
	for (size_t i = 0; i < nnodes; i++)
		if (leaf[i] < 0)
			return 1; /* a node under no known leaf: the plain plan */
	v = calloc(nnodes, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < nnodes; i++)
		v[i] = (struct pnode){.node = (uint32_t)i, .leaf = leaf[i]};
	qsort(v, nnodes, sizeof(*v), by_leaf_then_node);
	for (size_t i = 0, start = 0; i < nnodes; i++) {
		if (i + 1 < nnodes && v[i + 1].leaf == v[i].leaf)
			continue;
		for (size_t k = start; k <= i; k++) {
			v[k].pos = (uint32_t)(k - start);
			v[k].size = (uint32_t)(i + 1 - start);
			v[k].rank = v[start].node; /* made a rank below */
		}
		n_leaves++;
		start = i + 1;
	}
	if (n_leaves < 2) {
		free(v);
		return 1; /* one leaf: nothing to cross, the plain plan */
	}
	/* Ranks by first node: the smallest node index of each leaf, in step order. */
	qsort(v, nnodes, sizeof(*v), by_node);
	{
		uint32_t next = 0;
		uint32_t *rank_of_first = calloc(nnodes, sizeof(*rank_of_first));

		if (!rank_of_first) {
			free(v);
			return -ENOMEM;
		}
		for (size_t i = 0; i < nnodes; i++)
			if (v[i].rank == v[i].node) /* the first node of its leaf */
				rank_of_first[i] = ++next;
		for (size_t i = 0; i < nnodes; i++)
			v[i].rank = rank_of_first[v[i].rank] - 1;
		free(rank_of_first);
	}
	*out = v;
	*n_leaves_out = n_leaves;
	return 0;
}

int ibp_rdmatest_plan_topo(size_t nnodes, size_t index, const int *leaf,
			   struct ibp_rdmatest_plan *plan)
{
	struct pnode *v;
	uint32_t n_leaves = 0, n_single = 0, first_group = UINT32_MAX;
	size_t lo, hi;
	int rc = ibp_rdmatest_plan(nnodes, index, plan);

	if (rc)
		return rc;
	rc = topo_nodes(nnodes, leaf, &v, &n_leaves);
	if (rc)
		return rc > 0 ? 0 : rc;
	/* Round 1 groups: a leaf with >= 2 step nodes, or the lone-node leaves together. */
	for (size_t i = 0; i < nnodes; i++) {
		if (v[i].size >= 2) {
			v[i].group = v[i].rank;
			if (v[i].rank < first_group)
				first_group = v[i].rank;
		} else {
			v[i].group = UINT32_MAX;
			n_single++;
		}
	}
	if (n_single == 1)
		for (size_t i = 0; i < nnodes; i++)
			if (v[i].group == UINT32_MAX)
				v[i].group = first_group;
	plan->topo = true;
	plan->digest = digest_of(v, nnodes);
	plan->n_leaves = n_leaves;
	qsort(v, nnodes, sizeof(*v), by_group);
	for (lo = 0; lo < nnodes; lo = hi) {
		for (hi = lo + 1; hi < nnodes && v[hi].group == v[lo].group; hi++)
			;
		ring_at(v, lo, hi, (uint32_t)index, &plan->send_to[0], &plan->recv_from[0]);
	}
	qsort(v, nnodes, sizeof(*v), interleaved);
	ring_at(v, 0, nnodes, (uint32_t)index, &plan->send_to[1], &plan->recv_from[1]);
	free(v);
	return 0;
}

int ibp_rdmatest_ring_order(size_t nnodes, const int *leaf, uint32_t *order, unsigned *round)
{
	struct pnode *v;
	uint32_t n_leaves = 0;
	size_t k0 = 0;
	int rc;

	if (nnodes == 0 || nnodes > IBP_HOSTLIST_MAX)
		return -EINVAL;
	rc = topo_nodes(nnodes, leaf, &v, &n_leaves);
	if (rc < 0)
		return rc;
	if (rc > 0) { /* the plain plan: round 1 is the ring in node order */
		for (size_t i = 0; i < nnodes; i++)
			order[i] = (uint32_t)i;
		*round = 1;
		return 0;
	}
	qsort(v, nnodes, sizeof(*v), interleaved);
	while (v[k0].node != 0)
		k0++;
	for (size_t i = 0; i < nnodes; i++)
		order[i] = v[(k0 + i) % nnodes].node;
	free(v);
	*round = 2;
	return 0;
}
