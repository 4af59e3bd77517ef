/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the topology-aware plan (helpers/rdmatest/rdmatest_plan.c) and of
 * the blame over the views it gives each node (helpers/rdmatest/rdmatest_topo.c):
 * plan properties over many node counts and leaf sizes, the fallbacks to
 * the plain plan, and whole steps simulated in memory (every node's own
 * links plus its peers' summaries, as the run gathers them).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/rdmatest.h"
#include "ibprep/topology_conf.h"
#include "support/findings.h"

/* A small deterministic generator: the same combos on every run. */
static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 16) & 0x7fff;
}

/* Random leaf sizes summing to N, leaf ids scattered (switch indices), optionally shuffled. */
static size_t make_leaves(size_t n, uint32_t *seed, bool shuffle, int *leaf)
{
	size_t i = 0, k = 0;

	while (i < n) {
		size_t s = 1 + lcg(seed) % 6;

		for (size_t j = 0; j < s && i < n; j++)
			leaf[i++] = (int)(7 * k + 3);
		k++;
	}
	if (shuffle)
		for (size_t j = n; j > 1; j--) {
			size_t r = lcg(seed) % j;
			int t = leaf[j - 1];

			leaf[j - 1] = leaf[r];
			leaf[r] = t;
		}
	return k;
}

static size_t leaf_size(const int *leaf, size_t n, int id)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += leaf[i] == id;
	return c;
}

/* Checks every property of one plan over N nodes; returns whether it was topology-aware. */
static bool check_plan(size_t n, const int *leaf)
{
	struct ibp_rdmatest_plan *p = calloc(n, sizeof(*p));
	size_t *in_deg = calloc(2 * n, sizeof(*in_deg));
	size_t n_leaves = 0, maxs = 0, mins = n;
	bool topo;

	assert_non_null(p);
	assert_non_null(in_deg);
	for (size_t i = 0; i < n; i++) {
		bool first = true;
		size_t s = leaf_size(leaf, n, leaf[i]);

		for (size_t k = 0; k < i; k++)
			first &= leaf[k] != leaf[i];
		n_leaves += first;
		maxs = s > maxs ? s : maxs;
		mins = s < mins ? s : mins;
	}
	for (size_t i = 0; i < n; i++) {
		struct ibp_rdmatest_plan again;

		assert_int_equal(ibp_rdmatest_plan_topo(n, i, leaf, &p[i]), 0);
		assert_int_equal(ibp_rdmatest_plan_topo(n, i, leaf, &again), 0);
		assert_memory_equal(&p[i], &again, sizeof(again)); /* deterministic */
	}
	topo = p[0].topo;
	assert_int_equal(topo, n >= 4 && n_leaves >= 2);
	for (size_t i = 0; i < n; i++) {
		size_t s = leaf_size(leaf, n, leaf[i]);

		assert_int_equal(p[i].topo, topo);
		assert_true(p[i].digest == p[0].digest); /* every node the same plan */
		assert_int_equal(p[i].n_rounds, n == 1 ? 0 : n == 2 ? 1 : 2);
		for (unsigned r = 0; r < p[i].n_rounds; r++) {
			uint32_t to = p[i].send_to[r], from = p[i].recv_from[r];

			assert_true(to < n && from < n);
			assert_int_not_equal(to, i);
			assert_int_not_equal(from, i);
			/* symmetric: my target receives from me in the same round */
			assert_int_equal(p[to].recv_from[r], i);
			assert_int_equal(p[from].send_to[r], i);
			in_deg[2 * to + r]++;
		}
		if (!topo)
			continue;
		/*
		 * round 1 inside the leaf: 2 partners from 3 nodes on, 1 with 2
		 * (a node alone in its leaf may join the first leaf's ring)
		 */
		if (s >= 2) {
			uint32_t to = p[i].send_to[0], from = p[i].recv_from[0];

			assert_true(leaf[to] == leaf[i] || leaf_size(leaf, n, leaf[to]) == 1);
			assert_true(leaf[from] == leaf[i] || leaf_size(leaf, n, leaf[from]) == 1);
			if (s >= 3)
				assert_int_not_equal(p[i].send_to[0], p[i].recv_from[0]);
		}
		/* round 2 across: with leaves of one size, 2 partners in 2 other leaves */
		if (maxs == mins) {
			int a = leaf[p[i].send_to[1]], b = leaf[p[i].recv_from[1]];

			assert_int_not_equal(a, leaf[i]);
			assert_int_not_equal(b, leaf[i]);
			if (n_leaves >= 3)
				assert_int_not_equal(a, b);
		}
	}
	/* O(1) peers: one receive per node per round */
	for (size_t i = 0; i < n; i++)
		for (unsigned r = 0; r < p[0].n_rounds; r++)
			assert_int_equal(in_deg[2 * i + r], 1);
	if (topo) {
		/* every leaf has at least one link out in round 2 */
		for (size_t i = 0; i < n; i++) {
			bool out = false;

			for (size_t k = 0; k < n; k++)
				out |= leaf[k] == leaf[i] && leaf[p[k].send_to[1]] != leaf[i];
			assert_true(out);
		}
	}
	free(p);
	free(in_deg);
	return topo;
}

static void test_plan_topo_properties_many_combos(void **state)
{
	uint32_t seed = 12345;
	size_t n_topo = 0, n_combos = 0;
	int *leaf = malloc(200 * sizeof(*leaf));

	(void)state;
	assert_non_null(leaf);
	for (size_t n = 1; n <= 64; n++)
		for (int t = 0; t < 6; t++) {
			make_leaves(n, &seed, t & 1, leaf);
			n_topo += check_plan(n, leaf);
			n_combos++;
		}
	/* equal leaves: 1..8 leaves of 1..9 nodes, contiguous */
	for (size_t k = 1; k <= 8; k++)
		for (size_t s = 1; s <= 9; s++) {
			for (size_t i = 0; i < k * s; i++)
				leaf[i] = (int)(i / s);
			n_topo += check_plan(k * s, leaf);
			n_combos++;
		}
	for (size_t n = 150; n <= 200; n += 50) {
		make_leaves(n, &seed, true, leaf);
		n_topo += check_plan(n, leaf);
		n_combos++;
	}
	assert_true(n_topo > n_combos / 2);
	free(leaf);
}

/* Nine nodes in three leaves of three, contiguous: the plan, spelled out. */
static void test_plan_topo_three_leaves_of_three(void **state)
{
	static const int leaf[9] = {4, 4, 4, 9, 9, 9, 2, 2, 2};
	/* round 2 order: n1 n4 n7 n2 n5 n8 n3 n6 n9 */
	static const uint32_t r2_to[9] = {3, 4, 5, 6, 7, 8, 1, 2, 0};
	struct ibp_rdmatest_plan p;

	(void)state;
	for (uint32_t i = 0; i < 9; i++) {
		assert_int_equal(ibp_rdmatest_plan_topo(9, i, leaf, &p), 0);
		assert_true(p.topo);
		assert_int_equal(p.n_leaves, 3);
		assert_int_equal(p.send_to[0], (i / 3) * 3 + (i % 3 + 1) % 3);
		assert_int_equal(p.send_to[1], r2_to[i]);
	}
}

/* The plan depends on the partition only: other ids, same plan; another partition, another digest. */
static void test_plan_topo_digest_is_the_partition(void **state)
{
	static const int a[8] = {0, 0, 0, 0, 1, 1, 1, 1};
	static const int b[8] = {70, 70, 70, 70, 5, 5, 5, 5};
	static const int c[8] = {0, 0, 0, 1, 1, 1, 1, 1};
	struct ibp_rdmatest_plan pa, pb, pc;

	(void)state;
	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(ibp_rdmatest_plan_topo(8, i, a, &pa), 0);
		assert_int_equal(ibp_rdmatest_plan_topo(8, i, b, &pb), 0);
		assert_int_equal(ibp_rdmatest_plan_topo(8, i, c, &pc), 0);
		assert_memory_equal(&pa, &pb, sizeof(pa));
		assert_true(pa.digest != pc.digest);
		assert_true(pa.digest != 0 && pc.digest != 0);
	}
}

/* Without what it needs, the topology-aware plan is the plain one (digest 0). */
static void test_plan_topo_falls_back_to_plain(void **state)
{
	static const int one_leaf[6] = {3, 3, 3, 3, 3, 3};
	static const int unknown[6] = {0, 0, 0, 1, 1, -1};
	static const int small[3] = {0, 1, 2};
	const int *cases[] = {NULL, one_leaf, unknown};
	struct ibp_rdmatest_plan p, q;

	(void)state;
	for (size_t c = 0; c < 3; c++)
		for (size_t i = 0; i < 6; i++) {
			assert_int_equal(ibp_rdmatest_plan_topo(6, i, cases[c], &p), 0);
			assert_int_equal(ibp_rdmatest_plan(6, i, &q), 0);
			assert_memory_equal(&p, &q, sizeof(p));
			assert_false(p.topo);
			assert_true(p.digest == 0);
		}
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(ibp_rdmatest_plan_topo(3, i, small, &p), 0);
		assert_false(p.topo);
	}
	assert_int_equal(ibp_rdmatest_plan_topo(0, 0, small, &p), -EINVAL);
	assert_int_equal(ibp_rdmatest_plan_topo(3, 3, small, &p), -EINVAL);
}

/* ---- blame over the views the plan gives ---- */

typedef bool (*fails_fn)(uint32_t from, uint32_t to, const int *leaf);

#define MAXN 16

struct step {
	size_t n;
	const int *leaf;
	fails_fn fails;
	uint32_t dead;    /* a node that runs nothing (UINT32_MAX none) */
	bool control_cut; /* a failed link's control connection fails too: no summary over it */
	struct ibp_rdmatest_plan p[MAXN];
};

static void own_links(const struct step *s, uint32_t i, struct ibp_oob_link *v, size_t *n)
{
	for (unsigned r = 0; r < s->p[i].n_rounds; r++) {
		uint32_t to = s->p[i].send_to[r], from = s->p[i].recv_from[r];
		bool f_out = s->fails(i, to, s->leaf) || to == s->dead || i == s->dead;
		bool f_in = s->fails(from, i, s->leaf) || from == s->dead || i == s->dead;

		v[(*n)++] = (struct ibp_oob_link){i, to, (uint8_t)(r + 1),
						  f_out ? IBP_LINK_TIMEOUT : IBP_LINK_PASS, 0};
		v[(*n)++] = (struct ibp_oob_link){from, i, (uint8_t)(r + 1),
						  f_in ? IBP_LINK_TIMEOUT : IBP_LINK_PASS, 0};
	}
}

/* Node I's view: its links, then the summaries of its peers that are alive. */
static size_t view(const struct step *s, uint32_t i, struct ibp_oob_link *v)
{
	size_t n = 0;

	own_links(s, i, v, &n);
	for (unsigned r = 0; r < s->p[i].n_rounds; r++) {
		uint32_t peers[2] = {s->p[i].send_to[r], s->p[i].recv_from[r]};

		for (int e = 0; e < 2; e++)
			if (peers[e] != s->dead &&
			    !(s->control_cut && s->fails(i, peers[e], s->leaf)))
				own_links(s, peers[e], v, &n);
	}
	return n;
}

/* What each node says: SUS_LEAF[i] the leaves it names, NODE_BLAMED[j] by any node. */
struct verdicts {
	size_t n_leaf[MAXN];
	int leaf[MAXN][4];
	bool node_blamed[MAXN];
	size_t n_named_leaf; /* nodes naming at least one leaf */
};

static void run_step(struct step *s, struct verdicts *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < s->n; i++)
		assert_int_equal(ibp_rdmatest_plan_topo(s->n, i, s->leaf, &s->p[i]), 0);
	for (uint32_t i = 0; i < s->n; i++) {
		struct ibp_oob_link v[64];
		size_t n;

		if (i == s->dead)
			continue;
		n = view(s, i, v);
		out->n_leaf[i] = ibp_rdmatest_uplink_suspects(v, n, s->leaf, s->n, out->leaf[i], 4);
		out->n_named_leaf += out->n_leaf[i] > 0;
		for (uint32_t j = 0; j < s->n; j++)
			out->node_blamed[j] |= ibp_rdmatest_suspect_topo(
			    v, n, j, j == i, s->leaf, s->n, out->leaf[i], out->n_leaf[i]);
	}
}

static bool cut_leaf0(uint32_t from, uint32_t to, const int *leaf)
{
	return (leaf[from] == 0) != (leaf[to] == 0);
}

static bool nothing(uint32_t from, uint32_t to, const int *leaf)
{
	(void)from;
	(void)to;
	(void)leaf;
	return false;
}

static bool one_cable(uint32_t from, uint32_t to, const int *leaf)
{
	(void)leaf;
	return (from == 0 && to == 1) || (from == 1 && to == 0);
}

/*
 * 3 x 3, leaf 0's data path cut, control connections passing (the RDMA
 * fabric fails, the bootstrap network does not): every node names leaf 0's
 * uplinks, the far ones too (their round-2 peers' summaries carry leaf 0's
 * links), and no node.
 */
static void test_blame_plan_cut_leaf_named_by_every_node(void **state)
{
	static const int leaf[9] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
	struct step s = {.n = 9, .leaf = leaf, .fails = cut_leaf0, .dead = UINT32_MAX};
	struct verdicts v;

	(void)state;
	run_step(&s, &v);
	for (uint32_t i = 0; i < 9; i++) {
		assert_int_equal(v.n_leaf[i], 1);
		assert_int_equal(v.leaf[i][0], 0);
		assert_false(v.node_blamed[i]);
	}
}

/*
 * The same cut with the control connections cut too (the netns cluster's
 * case): no summary crosses, so the cut leaf's own nodes name its uplinks
 * and the far nodes, which never see the leaf's inside, name links; still
 * no node anywhere.
 */
static void test_blame_plan_total_cut_named_inside(void **state)
{
	static const int leaf[9] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
	struct step s = {
	    .n = 9, .leaf = leaf, .fails = cut_leaf0, .dead = UINT32_MAX, .control_cut = true};
	struct verdicts v;

	(void)state;
	run_step(&s, &v);
	for (uint32_t i = 0; i < 9; i++) {
		assert_int_equal(v.n_leaf[i], i < 3 ? 1 : 0);
		if (i < 3)
			assert_int_equal(v.leaf[i][0], 0);
		assert_false(v.node_blamed[i]);
	}
}

/* Leaves of 2 (the minimum) still name the uplinks; a leaf of 1 cannot: its node, never uplinks. */
static void test_blame_plan_leaf_minimum(void **state)
{
	static const int two[8] = {0, 0, 1, 1, 2, 2, 3, 3};
	static const int lone[7] = {0, 1, 1, 1, 2, 2, 2};
	struct step s = {.n = 8, .leaf = two, .fails = cut_leaf0, .dead = UINT32_MAX};
	struct step t = {.n = 7, .leaf = lone, .fails = cut_leaf0, .dead = UINT32_MAX};
	struct verdicts v;

	(void)state;
	assert_int_equal(IBP_RDMATEST_MIN_LEAF_NODES, 2);
	run_step(&s, &v);
	assert_true(v.n_named_leaf >= 2);
	for (uint32_t i = 0; i < 8; i++) {
		for (size_t k = 0; k < v.n_leaf[i]; k++)
			assert_int_equal(v.leaf[i][k], 0);
		assert_false(v.node_blamed[i]);
	}
	run_step(&t, &v);
	assert_int_equal(v.n_named_leaf, 0);
	/* every link of node 0 crosses leaves and fails: a node, by today's rule */
	assert_true(v.node_blamed[0]);
	for (uint32_t i = 1; i < 7; i++)
		assert_false(v.node_blamed[i]);
}

/* One bad cable between two nodes of a leaf: no leaf, no node: the link names both ends. */
static void test_blame_plan_both_ends_of_a_cable(void **state)
{
	static const int leaf[9] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
	struct step s = {.n = 9, .leaf = leaf, .fails = one_cable, .dead = UINT32_MAX};
	struct verdicts v;

	(void)state;
	run_step(&s, &v);
	assert_int_equal(v.n_named_leaf, 0);
	for (uint32_t i = 0; i < 9; i++)
		assert_false(v.node_blamed[i]);
	assert_false(ibp_rdmatest_uplink_explains(0, 1, leaf, 9, NULL, 0));
}

/* A dead node alone is blamed (by a node that sees two of its links), nobody else. */
static void test_blame_plan_dead_node(void **state)
{
	static const int leaf[12] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
	struct step s = {.n = 12, .leaf = leaf, .fails = nothing, .dead = 6};
	struct verdicts v;

	(void)state;
	run_step(&s, &v);
	assert_int_equal(v.n_named_leaf, 0);
	assert_true(v.node_blamed[6]);
	for (uint32_t i = 0; i < 12; i++)
		if (i != 6)
			assert_false(v.node_blamed[i]);
}

/* Two faults at once: leaf 0 cut and a dead node in leaf 2: the uplinks, and no healthy node. */
static void test_blame_plan_two_faults(void **state)
{
	static const int leaf[12] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
	struct step s = {.n = 12, .leaf = leaf, .fails = cut_leaf0, .dead = 9};
	struct verdicts v;

	(void)state;
	run_step(&s, &v);
	assert_true(v.n_named_leaf >= 4);
	for (uint32_t i = 0; i < 12; i++) {
		for (size_t k = 0; k < v.n_leaf[i]; k++)
			assert_int_equal(v.leaf[i][k], 0);
		if (i != 9)
			assert_false(v.node_blamed[i]);
	}
}

/* ---- whole runs: four nodes in threads over loopback (insecure: no munged) ---- */

struct node_run {
	struct ibp_rdmatest_config cfg;
	struct ibp_findings out;
	struct ibp_rdmatest_result res;
	int rc;
	pthread_t th;
};

static void *node_main(void *arg)
{
	struct node_run *nr = arg;

	nr->rc = ibp_rdmatest_run(&nr->cfg, &nr->out, &nr->res);
	return NULL;
}

/*
 * Runs t[1-N], node I with TOPO[I] (NULL: none) and OWN_LEAF[I] (NULL, or
 * a NULL array), over TX.  Addresses 127.A.B.11.. from the PID, ports any
 * user may bind: other copies of the test at the same time do not meet.
 */
static void run_n(struct node_run *nr, size_t n, const struct ibp_topology **topo,
		  const char *const *own_leaf, const struct ibp_transport_ops *tx, uint32_t job)
{
	static char addr_buf[MAXN][24];
	static const char *addrs[MAXN];
	static struct ibp_policy pol;
	static struct ibp_hostlist hl;
	unsigned pid = (unsigned)getpid();
	char err[128], list[32];

	ibp_policy_init(&pol);
	assert_int_equal(ibp_policy_set(&pol, "test_ports", "31000-31999", err, sizeof(err)), 0);
	assert_int_equal(ibp_policy_set(&pol, "test_timeout", "3", err, sizeof(err)), 0);
	assert_int_equal(ibp_policy_set(&pol, "test_max_lat_us", "500000", err, sizeof(err)), 0);
	ibp_hostlist_release(&hl);
	snprintf(list, sizeof(list), "t[1-%zu]", n);
	assert_int_equal(ibp_hostlist_expand(list, 0, &hl, err, sizeof(err)), 0);
	for (size_t i = 0; i < n; i++) {
		snprintf(addr_buf[i], sizeof(addr_buf[i]), "127.%u.%u.%zu", 64 + pid % 128,
			 (pid / 128) % 250, i + 11);
		addrs[i] = addr_buf[i];
	}
	for (size_t i = 0; i < n; i++) {
		memset(&nr[i], 0, sizeof(nr[i]));
		ibp_findings_init(&nr[i].out);
		nr[i].cfg.nodes = &hl;
		nr[i].cfg.index = i;
		nr[i].cfg.job = job;
		nr[i].cfg.uid = 1000;
		nr[i].cfg.policy = &pol;
		nr[i].cfg.transport = tx;
		nr[i].cfg.insecure = true;
		nr[i].cfg.addrs = addrs;
		nr[i].cfg.buf_len = 4096;
		nr[i].cfg.burst_bytes = 65536;
		nr[i].cfg.topology = topo ? topo[i] : NULL;
		nr[i].cfg.own_leaf = own_leaf ? own_leaf[i] : NULL;
		assert_int_equal(pthread_create(&nr[i].th, NULL, node_main, &nr[i]), 0);
	}
	for (size_t i = 0; i < n; i++)
		pthread_join(nr[i].th, NULL);
}

static void run4(struct node_run *nr, const struct ibp_topology **topo, uint32_t job)
{
	run_n(nr, 4, topo, NULL, &ibp_transport_socket, job);
}

/*
 * The socket transport with leaf A (nodes 127.x.y.11-13) cut off from the
 * others on the data path: the connect of such a link fails on both ends.
 */
static struct ibp_transport_ops cut_ops;

static int node_of(const struct ibp_endpoint *ep)
{
	return ep->gid[15] - 11; /* v4-mapped: the address's last byte */
}

static int cut_connect(struct ibp_tx *tx, const struct ibp_endpoint *peer, enum ibp_tx_role role,
		       int64_t deadline)
{
	struct ibp_endpoint mine;

	if (ibp_transport_socket.endpoint(tx, &mine) == 0 &&
	    (node_of(&mine) < 3) != (node_of(peer) < 3))
		return -EHOSTUNREACH;
	return ibp_transport_socket.connect(tx, peer, role, deadline);
}

/*
 * No topology file: every node knows its own leaf only (SLURM_TOPOLOGY_ADDR),
 * so the plan is the plain one; the leaves travel in the ENDPOINTs and the
 * summaries' tables, and leaf A's cut is still named as its uplinks, by
 * name, and no node is blamed.
 */
static void test_run_addr_leaves_name_cut_uplinks(void **state)
{
	static const char *const leaves[9] = {"leafA", "leafA", "leafA", "leafB", "leafB",
					      "leafB", "leafC", "leafC", "leafC"};
	struct node_run nr[9];
	size_t naming = 0;

	(void)state;
	cut_ops = ibp_transport_socket;
	cut_ops.connect = cut_connect;
	cut_ops.steps = NULL; /* the ops one by one, where the override is */
	run_n(nr, 9, NULL, leaves, &cut_ops, 143);
	for (size_t i = 0; i < 9; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_int_equal(nr[i].res.pass, i == 5 || i == 6); /* no link to leaf A */
		assert_null(ibp_test_find_code(&nr[i].out, "rdmatest_node_failed", NULL));
		assert_int_equal(nr[i].res.n_suspects, 0);
		for (size_t k = 0; k < nr[i].out.n; k++)
			if (!strcmp(nr[i].out.v[k].code, "rdmatest_uplinks_failed")) {
				assert_string_equal(nr[i].out.v[k].node, "leafA uplinks");
				assert_int_equal(nr[i].out.v[k].fclass, IBP_CLASS_FABRIC);
				naming++;
			}
		ibp_findings_release(&nr[i].out);
	}
	assert_true(naming >= 1);
}

static const char topo_text[] = "SwitchName=s Switches=la,lb\n"
				"SwitchName=la Nodes=t[1-2]\n"
				"SwitchName=lb Nodes=t[3-4]\n";

/* Every node with the same topology: the plan pairs t1-t2 and t3-t4 in round 1, all pass. */
static void test_run_same_topology_plan_used(void **state)
{
	struct ibp_topology t;
	const struct ibp_topology *topo[4] = {&t, &t, &t, &t};
	struct node_run nr[4];
	char err[256];

	(void)state;
	ibp_topology_init(&t);
	assert_int_equal(
	    ibp_topology_parse_conf(&t, topo_text, strlen(topo_text), "t", err, sizeof(err)), 0);
	run4(nr, topo, 141);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		for (size_t l = 0; l < nr[i].res.n_links; l++) {
			const struct ibp_rdmatest_link *x = &nr[i].res.links[l];

			assert_int_equal(x->status, IBP_LINK_PASS);
			/* round 1 inside a leaf, round 2 across */
			assert_int_equal(x->from / 2 == x->to / 2, x->round == 1);
		}
		ibp_findings_release(&nr[i].out);
	}
	ibp_topology_release(&t);
}

/*
 * t4 has no topology (its file missing): it plans the plain way, the
 * others from the leaves.  The nodes that meet it say the plans differ,
 * and they blame no node and no switch.
 */
static void test_run_topology_mismatch_said_nobody_blamed(void **state)
{
	struct ibp_topology t;
	const struct ibp_topology *topo[4] = {&t, &t, &t, NULL};
	struct node_run nr[4];
	size_t saying = 0;
	char err[256];

	(void)state;
	ibp_topology_init(&t);
	assert_int_equal(
	    ibp_topology_parse_conf(&t, topo_text, strlen(topo_text), "t", err, sizeof(err)), 0);
	run4(nr, topo, 142);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_null(ibp_test_find_code(&nr[i].out, "rdmatest_uplinks_failed", NULL));
		if (ibp_test_find_code(&nr[i].out, "rdmatest_plan_mismatch", NULL)) {
			saying++;
			assert_null(ibp_test_find_code(&nr[i].out, "rdmatest_node_failed", NULL));
			assert_int_equal(nr[i].res.n_suspects, 0);
		}
	}
	assert_true(nr[3].res.n_summaries == 0 ||
		    ibp_test_find_code(&nr[3].out, "rdmatest_plan_mismatch", NULL));
	assert_true(saying >= 1);
	for (size_t i = 0; i < 4; i++)
		ibp_findings_release(&nr[i].out);
	ibp_topology_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan_topo_properties_many_combos),
	    cmocka_unit_test(test_plan_topo_three_leaves_of_three),
	    cmocka_unit_test(test_plan_topo_digest_is_the_partition),
	    cmocka_unit_test(test_plan_topo_falls_back_to_plain),
	    cmocka_unit_test(test_blame_plan_cut_leaf_named_by_every_node),
	    cmocka_unit_test(test_blame_plan_total_cut_named_inside),
	    cmocka_unit_test(test_blame_plan_leaf_minimum),
	    cmocka_unit_test(test_blame_plan_both_ends_of_a_cable),
	    cmocka_unit_test(test_blame_plan_dead_node),
	    cmocka_unit_test(test_blame_plan_two_faults),
	    cmocka_unit_test(test_run_same_topology_plan_used),
	    cmocka_unit_test(test_run_topology_mismatch_said_nobody_blamed),
	    cmocka_unit_test(test_run_addr_leaves_name_cut_uplinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
