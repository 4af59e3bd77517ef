/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_topo.c: the cross-node test's blame when Slurm's switch
 * hierarchy is known (rdmatest.h): a leaf's uplinks, a node only when its
 * failures reach more than one other leaf, the links otherwise.  Pure
 * functions of the links a node knows, like ibp_rdmatest_suspect().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/rdmatest.h"
#include "rdmatest_int.h"

/* Links that say something about the hardware: rdmatest_blame.c's rule. */
static bool counts(uint8_t status)
{
	return ibp_rt_counts(status);
}

static int leaf_of(const int *leaf, size_t nnodes, uint32_t i)
{
	return i < nnodes ? leaf[i] : -1;
}

static bool small_add(uint32_t *set, size_t *n, size_t max, uint32_t v)
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
				small_add(mine, &n_mine, 8,
					  la == cand ? known[k].from : known[k].to);
				small_add(far, &n_far, 8, la == cand ? known[k].to : known[k].from);
				small_add(far_leaves, &n_far_leaves, 8,
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
				small_add(leaves, &n_leaves, 8, (uint32_t)lo);
		}
		sus = own_leaf || n_leaves >= 2;
	}
	free(rest);
	return sus;
}

/* ---- in the run (rdmatest_blame.c's report) ---- */

void ibp_rt_addr_leaf_add(struct ibp_rt_run *run, uint32_t node, const char *name)
{
	struct ibp_oob_leaf *x;

	if (node >= run->n || !name || !name[0] || strlen(name) >= IBP_OOB_LEAF_MAX)
		return;
	for (const char *c = name; *c; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
			return;
	for (size_t i = 0; i < run->n_addr_leaves; i++)
		if (run->addr_leaves[i].node == node)
			return; /* what a node said of itself, or heard first, wins */
	if (run->n_addr_leaves == IBP_RT_MAX_ADDR_LEAVES)
		return;
	x = &run->addr_leaves[run->n_addr_leaves++];
	memset(x, 0, sizeof(*x));
	x->node = node;
	memcpy(x->name, name, strlen(name));
}

int *ibp_rt_addr_leaves(struct ibp_rt_run *run)
{
	int *leaf;
	size_t n_names = 0;

	if (run->cfg->topology || !run->n_addr_leaves || !run->n)
		return NULL;
	leaf = malloc(run->n * sizeof(*leaf));
	run->addr_names = calloc(run->n_addr_leaves, sizeof(*run->addr_names));
	if (!leaf || !run->addr_names) {
		free(leaf);
		free(run->addr_names);
		run->addr_names = NULL;
		return NULL;
	}
	for (uint32_t i = 0; i < run->n; i++)
		leaf[i] = -1;
	for (size_t i = 0; i < run->n_addr_leaves; i++) {
		const struct ibp_oob_leaf *x = &run->addr_leaves[i];
		size_t id;

		for (id = 0; id < n_names && strcmp(run->addr_names[id], x->name) != 0; id++)
			;
		if (id == n_names)
			memcpy(run->addr_names[n_names++], x->name, sizeof(x->name));
		leaf[x->node] = (int)id;
	}
	return leaf;
}

const char *ibp_rt_leaf_name(const struct ibp_rt_run *run, int leaf)
{
	if (leaf < 0)
		return "?";
	if (run->cfg->topology)
		return (size_t)leaf < run->cfg->topology->n_sw ? run->cfg->topology->sw[leaf].name
							       : "?";
	return run->addr_names && (size_t)leaf < run->n_addr_leaves ? run->addr_names[leaf] : "?";
}

void ibp_rt_plan_mismatch(struct ibp_rt_run *run, struct ibp_findings *out)
{
	ibp_findings_addf(
	    out, "rdmatest_plan_mismatch", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
	    "every node of the step pairing links from the same leaf assignment",
	    "give every node the same topology_conf= file (root's, readable)",
	    "%s planned the test %s (digest %016llx), %s %s (digest %016llx): their "
	    "topologies differ or one has none, so some pairs did not meet; failed links "
	    "are named as links, no node or switch is blamed",
	    ibp_rt_node_name(run, run->mismatch_node),
	    run->mismatch_digest ? "from a topology" : "without a topology",
	    (unsigned long long)run->mismatch_digest, ibp_rt_node_name(run, run->me),
	    run->plan.topo ? "from its topology" : "without one",
	    (unsigned long long)run->plan.digest);
}

int *ibp_rt_topo_leaves(const struct ibp_rt_run *run)
{
	int *leaf;

	if (!run->cfg->topology || !run->n)
		return NULL;
	leaf = calloc(run->n, sizeof(*leaf));
	if (!leaf)
		return NULL;
	for (uint32_t i = 0; i < run->n; i++)
		leaf[i] = ibp_topology_leaf_of(run->cfg->topology, ibp_rt_node_name(run, i));
	return leaf;
}

void ibp_rt_topo_findings(struct ibp_rt_run *run, struct ibp_findings *out, const int *leaf,
			  const int *sus, size_t n_sus, const char *expected)
{
	for (size_t k = 0; k < n_sus; k++) {
		const char *name = ibp_rt_leaf_name(run, sus[k]);
		char mine[IBP_TEXT_MAX] = "", far[IBP_TEXT_MAX] = "";
		size_t om = 0, of = 0;
		uint32_t seen[64];
		size_t n_seen = 0;
		struct ibp_finding *f;

		for (size_t i = 0; i < run->n_known; i++) {
			const struct ibp_oob_link *l = &run->known[i];
			uint32_t ends[2] = {l->from, l->to};

			if (l->status == IBP_LINK_PASS ||
			    !ibp_rdmatest_uplink_explains(l->from, l->to, leaf, run->n, &sus[k], 1))
				continue;
			for (int e = 0; e < 2; e++) {
				bool in = leaf[ends[e]] == sus[k];
				char *buf = in ? mine : far;
				size_t *off = in ? &om : &of;

				if (!small_add(seen, &n_seen, 64, ends[e]) ||
				    *off >= IBP_TEXT_MAX - 1)
					continue;
				*off += (size_t)snprintf(buf + *off, IBP_TEXT_MAX - *off, "%s%s",
							 *off ? "," : "",
							 ibp_rt_node_name(run, ends[e]));
				if (*off >= IBP_TEXT_MAX)
					*off = IBP_TEXT_MAX - 1;
			}
		}
		if (ibp_findings_addf(
			out, "rdmatest_uplinks_failed", IBP_SEV_FAIL, IBP_CLASS_FABRIC, NULL, 0,
			expected,
			"check the switch's uplink ports and cables (its error "
			"counters, then reseat or replace); the nodes under it are not "
			"at fault",
			"rdma test failed on every link between %s (%s) and other "
			"leaves (%s) while links inside %s passed",
			name, mine, far, name))
			continue;
		f = &out->v[out->n - 1];
		ibp_rt_setf(f->node, sizeof(f->node), "%s uplinks", name);
	}
}
