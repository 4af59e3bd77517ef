/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_topo.c: the cross-node test's blame when Slurm's switch
 * hierarchy is known (rdmatest.h): a leaf's uplinks, a node only when its
 * failures reach more than one other leaf, the links otherwise.  Pure
 * functions of the links a node knows, like ibp_rdmatest_suspect(); and
 * the step's leaves they need (rdmatest_topo.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/rdmatest.h"
#include "rdmatest_blame.h"
#include "rdmatest_topo.h"

/* Links that say something about the hardware: rdmatest_blame.c's rule. */
static bool counts(uint8_t status)
{
	return ibp_rt_counts(status);
}

static int leaf_of(const int *leaf, size_t nnodes, uint32_t i)
{
	return i < nnodes ? leaf[i] : -1;
}

bool ibp_rt_set_add(uint32_t *set, size_t *n, size_t max, uint32_t v)
{
	for (size_t i = 0; i < *n; i++)
		if (set[i] == v)
			return false;
	if (*n < max)
		set[(*n)++] = v;
	return true;
}

size_t ibp_rdmatest_uplink_suspects(const struct ibp_oob_link *known, size_t n, const int *leaf,
				    size_t nnodes, int *out, size_t max)
{
	size_t n_out = 0;

	if (!leaf)
		return 0;
	for (size_t i = 0; i < n && n_out < max; i++) {
		int cand;
		size_t cross_fail = 0, cross_pass = 0, intra_pass = 0, intra_fail = 0;
		uint32_t mine[8], far[8], far_leaves[8];
		size_t n_mine = 0, n_far = 0, n_far_leaves = 0;
		bool dup = false;

		/* Candidates: the leaves of this known link's ends. */
		for (int end = 0; end < 2 && n_out < max; end++) {
			cand = leaf_of(leaf, nnodes, end ? known[i].to : known[i].from);
			if (cand < 0)
				continue;
			dup = false;
			for (size_t k = 0; k < n_out; k++)
				dup |= out[k] == cand;
			if (dup)
				continue;
			cross_fail = cross_pass = intra_pass = intra_fail = 0;
			n_mine = n_far = n_far_leaves = 0;
			for (size_t k = 0; k < n; k++) {
				int la = leaf_of(leaf, nnodes, known[k].from);
				int lb = leaf_of(leaf, nnodes, known[k].to);
				bool fail = known[k].status != IBP_LINK_PASS;

				if (!counts(known[k].status) || (la != cand && lb != cand))
					continue;
				if (la == cand && lb == cand) {
					intra_fail += fail;
					intra_pass += !fail;
					continue;
				}
				if (la < 0 || lb < 0)
					continue; /* the far end's leaf is unknown: no evidence */
				if (!fail) {
					cross_pass++;
					continue;
				}
				cross_fail++;
				ibp_rt_set_add(mine, &n_mine, 8,
					       la == cand ? known[k].from : known[k].to);
				ibp_rt_set_add(far, &n_far, 8,
					       la == cand ? known[k].to : known[k].from);
				ibp_rt_set_add(far_leaves, &n_far_leaves, 8,
					       (uint32_t)(la == cand ? lb : la));
			}
			if (!cross_pass && !intra_fail && intra_pass >= 1 && cross_fail >= 2 &&
			    n_mine >= IBP_RDMATEST_MIN_LEAF_NODES && n_far >= 2 &&
			    n_far_leaves >= 2)
				out[n_out++] = cand;
		}
	}
	return n_out;
}

bool ibp_rdmatest_uplink_explains(uint32_t from, uint32_t to, const int *leaf, size_t nnodes,
				  const int *sus_leaves, size_t n_sus)
{
	int la, lb;

	if (!leaf || !n_sus)
		return false;
	la = leaf_of(leaf, nnodes, from);
	lb = leaf_of(leaf, nnodes, to);
	if (la < 0 || lb < 0 || la == lb)
		return false;
	for (size_t k = 0; k < n_sus; k++)
		if (sus_leaves[k] == la || sus_leaves[k] == lb)
			return true;
	return false;
}

bool ibp_rdmatest_suspect_topo(const struct ibp_oob_link *known, size_t n, uint32_t node, bool self,
			       const int *leaf, size_t nnodes, const int *sus_leaves, size_t n_sus)
{
	struct ibp_oob_link *rest;
	size_t n_rest = 0, n_leaves = 0;
	uint32_t leaves[8];
	int mine;
	bool own_leaf = false, sus;

	if (!leaf)
		return ibp_rdmatest_suspect(known, n, node, self);
	rest = malloc((n ? n : 1) * sizeof(*rest));
	if (!rest)
		return false; /* no blame rather than a wrong one */
	for (size_t i = 0; i < n; i++)
		if (known[i].status == IBP_LINK_PASS ||
		    !ibp_rdmatest_uplink_explains(known[i].from, known[i].to, leaf, nnodes,
						  sus_leaves, n_sus))
			rest[n_rest++] = known[i];
	sus = ibp_rdmatest_suspect(rest, n_rest, node, self);
	mine = leaf_of(leaf, nnodes, node);
	if (sus && mine >= 0) {
		/* Where do its failed links go? */
		for (size_t i = 0; i < n_rest; i++) {
			uint32_t other;
			int lo;

			if (!counts(rest[i].status) || rest[i].status == IBP_LINK_PASS ||
			    (rest[i].from != node && rest[i].to != node))
				continue;
			other = rest[i].from == node ? rest[i].to : rest[i].from;
			lo = leaf_of(leaf, nnodes, other);
			if (lo < 0) {
				own_leaf = true; /* unknown: today's rule */
				break;
			}
			if (lo == mine)
				own_leaf = true;
			else
				ibp_rt_set_add(leaves, &n_leaves, 8, (uint32_t)lo);
		}
		sus = own_leaf || n_leaves >= 2;
	}
	free(rest);
	return sus;
}

/* ---- the step's leaves ---- */

void ibp_rt_leaves_add(struct ibp_rt_leaves *lv, uint32_t nnodes, uint32_t node, const char *name)
{
	struct ibp_oob_leaf *x;

	if (node >= nnodes || !name || !name[0] || strlen(name) >= IBP_OOB_LEAF_MAX)
		return;
	for (const char *c = name; *c; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
			return;
	if (ibp_rt_leaves_of(lv, node))
		return; /* what a node said of itself, or heard first, wins */
	if (lv->n == IBP_RT_MAX_ADDR_LEAVES)
		return;
	x = &lv->v[lv->n++];
	memset(x, 0, sizeof(*x));
	x->node = node;
	memcpy(x->name, name, strlen(name));
}

const struct ibp_oob_leaf *ibp_rt_leaves_of(const struct ibp_rt_leaves *lv, uint32_t node)
{
	for (size_t i = 0; i < lv->n; i++)
		if (lv->v[i].node == node)
			return &lv->v[i];
	return NULL;
}

int *ibp_rt_leaves_map(const struct ibp_rt_leaves *lv, uint32_t nnodes,
		       char (**names)[IBP_OOB_LEAF_MAX])
{
	int *leaf;
	size_t n_names = 0;

	*names = NULL;
	if (!lv->n || !nnodes)
		return NULL;
	leaf = malloc(nnodes * sizeof(*leaf));
	*names = calloc(lv->n, sizeof(**names));
	if (!leaf || !*names) {
		free(leaf);
		free(*names);
		*names = NULL;
		return NULL;
	}
	for (uint32_t i = 0; i < nnodes; i++)
		leaf[i] = -1;
	for (size_t i = 0; i < lv->n; i++) {
		const struct ibp_oob_leaf *x = &lv->v[i];
		size_t id;

		for (id = 0; id < n_names && strcmp((*names)[id], x->name) != 0; id++)
			;
		if (id == n_names)
			memcpy((*names)[n_names++], x->name, sizeof(x->name));
		leaf[x->node] = (int)id;
	}
	return leaf;
}

int *ibp_rt_topo_leaves(const struct ibp_topology *t, const struct ibp_hostlist *nodes)
{
	int *leaf;

	if (!t || !nodes->n)
		return NULL;
	leaf = calloc(nodes->n, sizeof(*leaf));
	if (!leaf)
		return NULL;
	for (size_t i = 0; i < nodes->n; i++)
		leaf[i] = ibp_topology_leaf_of(t, nodes->names[i]);
	return leaf;
}
