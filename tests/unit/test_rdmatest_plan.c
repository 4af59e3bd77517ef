/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the cross-node test's plan and blame (helpers/rdmatest/rdmatest.c),
 * and a few whole runs in threads of this process over loopback (insecure
 * mode: no munged needed) under the sanitizers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/fingerprint.h"
#include "ibprep/oob.h"
#include "ibprep/rdmatest.h"
#include "ibprep/topology_conf.h"
#include "support/findings.h"

/* ---- plan ---- */

static void test_plan_every_n_consistent_ring_and_shift(void **state)
{
	(void)state;
	for (size_t n = 1; n <= 300; n++) {
		size_t *in_deg = calloc(n, sizeof(*in_deg));

		for (size_t i = 0; i < n; i++) {
			struct ibp_rdmatest_plan p, q;

			assert_int_equal(ibp_rdmatest_plan(n, i, &p), 0);
			assert_int_equal(p.n_rounds, n == 1 ? 0 : n == 2 ? 1 : 2);
			for (unsigned r = 0; r < p.n_rounds; r++) {
				assert_int_equal(p.send_to[r], (i + r + 1) % n);
				assert_int_not_equal(p.send_to[r], i);
				assert_int_not_equal(p.recv_from[r], i);
				/* mutual: my target receives from me in the same round */
				assert_int_equal(ibp_rdmatest_plan(n, p.send_to[r], &q), 0);
				assert_int_equal(q.recv_from[r], i);
				in_deg[p.send_to[r]]++;
			}
			if (p.n_rounds == 2)
				assert_int_not_equal(p.send_to[0], p.send_to[1]);
		}
		/* O(1) peers: every node receives exactly once per round */
		for (size_t i = 0; i < n; i++)
			assert_int_equal(in_deg[i], n == 1 ? 0 : n == 2 ? 1 : 2);
		free(in_deg);
	}
}

static void test_plan_bad_arguments_einval(void **state)
{
	struct ibp_rdmatest_plan p;

	(void)state;
	assert_int_equal(ibp_rdmatest_plan(0, 0, &p), -EINVAL);
	assert_int_equal(ibp_rdmatest_plan(4, 4, &p), -EINVAL);
	assert_int_equal(ibp_rdmatest_plan(IBP_HOSTLIST_MAX + 1, 0, &p), -EINVAL);
}

/*
 * The sum's tree for every N up to 600: clusters of 3 places, each headed
 * by its middle one (the first of a shorter last one) with its other
 * places as leaves, children of their head and next to it on the ring;
 * the heads a balanced tree with one root, cluster C / 2 of C, holding
 * [0, N).  Every head's range is its children's ranges and itself, in
 * place order, contiguous; every leaf is a child of exactly its head; at
 * most log2(C) + 1 hops from any place to the root.
 */
static void test_sum_tree_every_n_ranges_and_depth(void **state)
{
	struct ibp_rdmatest_tree t;

	(void)state;
	for (uint32_t n = 1; n <= 600; n++) {
		uint32_t clusters = (n + 2) / 3;
		size_t roots = 0, leaves = 0;

		for (uint32_t p = 0; p < n; p++) {
			struct ibp_rdmatest_tree c;
			uint32_t at, head = p / 3 * 3 + (n - p / 3 * 3 < 3 ? 0 : 1);
			unsigned depth = 0;

			assert_int_equal(ibp_rdmatest_sum_tree(n, p, &t), 0);
			assert_true(t.lo <= p && p < t.hi && t.hi <= n);
			if (p != head) { /* a leaf: its head's child, its neighbour */
				leaves++;
				assert_int_equal(t.parent, head);
				assert_int_equal(t.lo, p);
				assert_int_equal(t.hi, p + 1);
				assert_true(p + 1 == head || head + 1 == p);
				for (int i = 0; i < IBP_RDMATEST_TREE_KIDS; i++)
					assert_int_equal(t.kid[i], IBP_RDMATEST_TREE_NONE);
				assert_int_equal(ibp_rdmatest_sum_tree(n, head, &c), 0);
				assert_int_equal(
				    c.kid[p < head ? IBP_TREE_KID_LEFT : IBP_TREE_KID_RIGHT], p);
				continue;
			}
			/* a head: its children's ranges and its place tile [lo, hi) in order */
			at = t.lo;
			for (int i = 0; i < IBP_RDMATEST_TREE_KIDS; i++) {
				if (i == 2) {
					assert_int_equal(at, p);
					at = p + 1;
				}
				if (t.kid[i] == IBP_RDMATEST_TREE_NONE)
					continue;
				assert_int_equal(ibp_rdmatest_sum_tree(n, t.kid[i], &c), 0);
				assert_int_equal(c.parent, p);
				assert_int_equal(c.lo, at);
				at = c.hi;
			}
			assert_int_equal(at, t.hi);
			if (t.parent == IBP_RDMATEST_TREE_NONE) {
				roots++;
				assert_int_equal(p / 3, clusters / 2);
				assert_int_equal(t.lo, 0);
				assert_int_equal(t.hi, n);
			}
			for (uint32_t q = p;; depth++) {
				assert_int_equal(ibp_rdmatest_sum_tree(n, q, &c), 0);
				if (c.parent == IBP_RDMATEST_TREE_NONE)
					break;
				q = c.parent;
			}
			assert_true((1ull << depth) <= clusters);
		}
		assert_int_equal(roots, 1);
		assert_int_equal(leaves, n - clusters);
		assert_int_equal(ibp_rdmatest_sum_tree(n, n, &t), -EINVAL);
	}
}

/* The ring the fingerprint sum travels: every node once, from node 0, each sending to the next. */
static void test_ring_order_follows_the_plans_ring(void **state)
{
	static const int leaves[][12] = {
	    {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3},
	    {5, 5, 9, 9, 9, 9, 9, 1, 1, 5, 1, 1},
	    {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1},
	    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},  /* one leaf: the plain plan */
	    {0, 0, 0, 1, 1, -1, 2, 2, 2, 3, 3, 3}, /* a leaf unknown: the plain plan */
	};
	uint32_t order[12];
	unsigned round;

	(void)state;
	for (size_t n = 6; n <= 12; n++) {
		assert_int_equal(ibp_rdmatest_ring_order(n, NULL, order, &round), 0);
		assert_int_equal(round, 1);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(order[i], i);
	}
	for (size_t t = 0; t < sizeof(leaves) / sizeof(leaves[0]); t++) {
		bool seen[12] = {false};
		struct ibp_rdmatest_plan p;

		assert_int_equal(ibp_rdmatest_ring_order(12, leaves[t], order, &round), 0);
		assert_int_equal(order[0], 0);
		for (size_t i = 0; i < 12; i++) {
			assert_true(order[i] < 12);
			assert_false(seen[order[i]]);
			seen[order[i]] = true;
			assert_int_equal(ibp_rdmatest_plan_topo(12, order[i], leaves[t], &p), 0);
			assert_int_equal(round, p.topo ? 2 : 1);
			assert_int_equal(p.send_to[round - 1], order[(i + 1) % 12]);
		}
	}
	assert_int_equal(ibp_rdmatest_ring_order(0, NULL, order, &round), -EINVAL);
}

/* ---- blame: a whole step simulated as link outcomes ---- */

enum kind { DEAD, CUTOFF, CORRUPT_SEND, DEAF, CUT_LINK, TWO_DEAD };

struct scenario {
	const char *name;
	enum kind kind;
	size_t n;
	uint32_t x; /* the faulty node; CUT_LINK: the link x -> x+1 (round 1) */
};

static bool alive(const struct scenario *s, uint32_t i)
{
	if (s->kind == DEAD)
		return i != s->x;
	if (s->kind == TWO_DEAD)
		return i != s->x && i != (s->x + 1) % s->n;
	return true;
}

static uint8_t outcome(const struct scenario *s, uint32_t from, uint32_t to)
{
	switch (s->kind) {
	case DEAD:
	case CUTOFF:
		return from == s->x || to == s->x ? IBP_LINK_UNREACHABLE : IBP_LINK_PASS;
	case TWO_DEAD:
		return !alive(s, from) || !alive(s, to) ? IBP_LINK_UNREACHABLE : IBP_LINK_PASS;
	case CORRUPT_SEND:
		return from == s->x ? IBP_LINK_CORRUPT : IBP_LINK_PASS;
	case DEAF:
		return to == s->x ? IBP_LINK_TRANSPORT : IBP_LINK_PASS;
	case CUT_LINK:
		return from == s->x && to == (s->x + 1) % s->n ? IBP_LINK_UNREACHABLE
							       : IBP_LINK_PASS;
	}
	return IBP_LINK_PASS;
}

/* The links node I runs (as rdmatest.c lays them out). */
static size_t own_links(const struct scenario *s, uint32_t i, struct ibp_oob_link *v)
{
	struct ibp_rdmatest_plan p;
	size_t n = 0;

	ibp_rdmatest_plan(s->n, i, &p);
	for (unsigned r = 0; r < p.n_rounds; r++) {
		v[n++] = (struct ibp_oob_link){i, p.send_to[r], (uint8_t)(r + 1),
					       outcome(s, i, p.send_to[r]), 0};
		v[n++] = (struct ibp_oob_link){p.recv_from[r], i, (uint8_t)(r + 1),
					       outcome(s, p.recv_from[r], i), 0};
	}
	return n;
}

/*
 * What node I knows: its links, plus the summary of each peer it kept a
 * connection with (a link that connected, whatever happened after).
 */
static size_t known_at(const struct scenario *s, uint32_t i, struct ibp_oob_link *k)
{
	struct ibp_oob_link mine[8];
	size_t n = own_links(s, i, mine), nk = 0;

	memcpy(k, mine, n * sizeof(mine[0]));
	nk = n;
	for (size_t l = 0; l < n; l++) {
		uint32_t peer = mine[l].from == i ? mine[l].to : mine[l].from;
		struct ibp_oob_link theirs[8];
		size_t m;

		if (!alive(s, peer) || mine[l].status == IBP_LINK_UNREACHABLE)
			continue;
		m = own_links(s, peer, theirs);
		for (size_t t = 0; t < m; t++) {
			bool dup = false;

			for (size_t q = 0; q < nk; q++)
				dup |= k[q].from == theirs[t].from && k[q].to == theirs[t].to &&
				       k[q].round == theirs[t].round;
			if (!dup)
				k[nk++] = theirs[t];
		}
	}
	return nk;
}

/* The suspects node I names, as rdmatest.c's report() picks them. */
static size_t suspects_at(const struct scenario *s, uint32_t i, uint32_t *sus)
{
	struct ibp_oob_link k[64], mine[8];
	size_t nk = known_at(s, i, k), n = own_links(s, i, mine), ns = 0, nfail = 0;

	for (size_t l = 0; l < n; l++)
		nfail += mine[l].status != IBP_LINK_PASS;
	if (nfail && ibp_rdmatest_suspect(k, nk, i, true))
		sus[ns++] = i;
	for (size_t l = 0; l < n; l++) {
		uint32_t peer = mine[l].from == i ? mine[l].to : mine[l].from;
		bool dup = false;

		if (mine[l].status == IBP_LINK_PASS)
			continue;
		for (size_t q = 0; q < ns; q++)
			dup |= sus[q] == peer;
		if (!dup && ibp_rdmatest_suspect(k, nk, peer, false))
			sus[ns++] = peer;
	}
	return ns;
}

static bool has_failure(const struct scenario *s, uint32_t i)
{
	struct ibp_oob_link mine[8];
	size_t n = own_links(s, i, mine);

	for (size_t l = 0; l < n; l++)
		if (mine[l].status != IBP_LINK_PASS)
			return true;
	return false;
}

static const struct scenario scenarios[] = {
    {"dead node, N=3", DEAD, 3, 1},
    {"dead node, N=4", DEAD, 4, 0},
    {"dead node, N=5", DEAD, 5, 2},
    {"dead node, N=16", DEAD, 16, 7},
    {"dead node, N=256", DEAD, 256, 200},
    {"node cut off (alive), N=3", CUTOFF, 3, 0},
    {"node cut off (alive), N=4 (the Slurm test)", CUTOFF, 4, 2},
    {"node cut off (alive), N=8", CUTOFF, 8, 3},
    {"node cut off (alive), N=64", CUTOFF, 64, 63},
    {"corrupting sender, N=4", CORRUPT_SEND, 4, 1},
    {"corrupting sender, N=16", CORRUPT_SEND, 16, 5},
    {"deaf receiver, N=5", DEAF, 5, 4},
    {"deaf receiver, N=32", DEAF, 32, 9},
    {"two adjacent dead nodes, N=8", TWO_DEAD, 8, 3},
    {"two adjacent dead nodes, N=64", TWO_DEAD, 64, 0},
    {"one bad link only, N=8", CUT_LINK, 8, 2},
    {"one bad link only, N=64", CUT_LINK, 64, 40},
    {"dead peer, N=2", DEAD, 2, 1},
    {"bad link, N=2", CUT_LINK, 2, 0},
};

static void test_blame_table_lands_on_the_faulty_node(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(scenarios) / sizeof(scenarios[0]); c++) {
		const struct scenario *s = &scenarios[c];
		uint32_t x2 = (s->x + 1) % (uint32_t)s->n;
		size_t blamed_x = 0, blamed_x2 = 0;

		print_message("# %s\n", s->name);
		for (uint32_t i = 0; i < s->n; i++) {
			uint32_t sus[16];
			size_t ns;

			if (!alive(s, i))
				continue;
			ns = suspects_at(s, i, sus);
			if (!has_failure(s, i)) {
				assert_int_equal(ns, 0);
				continue;
			}
			switch (s->kind) {
			case DEAD:
				if (s->n == 2) {
					assert_int_equal(ns, 0); /* N=2: the link is named */
					break;
				}
				/* fallthrough */
			case CUTOFF:
			case CORRUPT_SEND:
			case DEAF:
				assert_int_equal(ns, 1);
				assert_int_equal(sus[0], s->x);
				blamed_x++;
				break;
			case TWO_DEAD:
				for (size_t q = 0; q < ns; q++) {
					assert_true(sus[q] == s->x || sus[q] == x2);
					blamed_x += sus[q] == s->x;
					blamed_x2 += sus[q] == x2;
				}
				break;
			case CUT_LINK:
				assert_int_equal(ns, 0); /* nobody is a suspect: the link is */
				break;
			}
		}
		if (s->kind == TWO_DEAD) {
			assert_true(blamed_x >= 1);
			assert_true(blamed_x2 >= 1);
		} else if (s->kind != CUT_LINK && s->n > 2) {
			assert_true(blamed_x >= 2);
		}
	}
}

static void test_blame_empty_or_passing_never_suspect(void **state)
{
	struct ibp_oob_link k[2] = {{0, 1, 1, IBP_LINK_PASS, 0}, {2, 0, 1, IBP_LINK_PASS, 0}};

	(void)state;
	assert_false(ibp_rdmatest_suspect(NULL, 0, 0, true));
	assert_false(ibp_rdmatest_suspect(k, 2, 0, true));
	assert_false(ibp_rdmatest_suspect(k, 2, 1, false));
	/* one failed link, one peer: never enough to blame a node */
	k[0].status = IBP_LINK_CORRUPT;
	assert_false(ibp_rdmatest_suspect(k, 2, 1, false));
	assert_false(ibp_rdmatest_suspect(k, 2, 0, true));
}

/*
 * A node whose every link failed authentication (a squatter on its ports, a
 * relay, a munged with another key) is never a suspect, by itself or by
 * others, and such links count neither as a pass nor as a failure.
 */
static void test_blame_auth_failures_blame_nobody(void **state)
{
	/* node 2 of 5: its four links failed authentication; the rest pass */
	struct ibp_oob_link k[] = {
	    {1, 2, 1, IBP_LINK_AUTH, 0}, {2, 3, 1, IBP_LINK_AUTH, 0}, {0, 2, 2, IBP_LINK_AUTH, 0},
	    {2, 4, 2, IBP_LINK_AUTH, 0}, {0, 1, 1, IBP_LINK_PASS, 0}, {3, 4, 1, IBP_LINK_PASS, 0},
	    {4, 0, 1, IBP_LINK_PASS, 0}, {1, 3, 2, IBP_LINK_PASS, 0}, {3, 0, 2, IBP_LINK_PASS, 0},
	};
	size_t n = sizeof(k) / sizeof(k[0]);

	(void)state;
	for (uint32_t node = 0; node < 5; node++) {
		assert_false(ibp_rdmatest_suspect(k, n, node, true));
		assert_false(ibp_rdmatest_suspect(k, n, node, false));
	}
	/* the same links with a hardware outcome do blame node 2 */
	for (size_t i = 0; i < 4; i++)
		k[i].status = IBP_LINK_UNREACHABLE;
	assert_true(ibp_rdmatest_suspect(k, n, 2, false));
	/* an authentication failure is no pass either: node 3's and 4's passes
	 * elsewhere still confirm; node 0 with only failures and an
	 * authentication failure left is never confirmed as a witness */
	k[4].status = IBP_LINK_AUTH;
	k[6].status = IBP_LINK_AUTH;
	assert_true(ibp_rdmatest_suspect(k, n, 2, false));
	k[8].status = IBP_LINK_AUTH; /* 3 -> 0: node 0 now passes nowhere */
	k[1].status = IBP_LINK_UNREACHABLE;
	assert_false(ibp_rdmatest_suspect(k, n, 1, false));
	assert_false(ibp_rdmatest_all_slow(k, n));
}

/* "Every link slow" only when every measured link missed a floor. */
static void test_blame_all_slow_only_when_every_link_slow(void **state)
{
	struct ibp_oob_link k[4] = {{0, 1, 1, IBP_LINK_BW_LOW, 0},
				    {1, 2, 1, IBP_LINK_LAT_HIGH, 0},
				    {2, 0, 1, IBP_LINK_BW_LOW, 0},
				    {0, 2, 2, IBP_LINK_UNTESTED, 0}};

	(void)state;
	assert_false(ibp_rdmatest_all_slow(NULL, 0));
	assert_true(ibp_rdmatest_all_slow(k, 4));
	k[3].status = IBP_LINK_AUTH; /* says nothing about speed */
	assert_true(ibp_rdmatest_all_slow(k, 4));
	k[3].status = IBP_LINK_PASS; /* one fast link: the slow ones are real */
	assert_false(ibp_rdmatest_all_slow(k, 4));
	k[3].status = IBP_LINK_CORRUPT;
	assert_false(ibp_rdmatest_all_slow(k, 4));
	k[0].status = k[1].status = k[2].status = k[3].status = IBP_LINK_UNTESTED;
	assert_false(ibp_rdmatest_all_slow(k, 4));
}

/* ---- whole runs in threads, over loopback ---- */

struct node_run {
	struct ibp_rdmatest_config cfg;
	struct ibp_findings out;
	struct ibp_rdmatest_result res;
	int rc;
	pthread_t th;
};

/*
 * The defaults, but test ports any user may bind (the default range is
 * privileged, for the plugin) and below the kernel's ephemeral range (where
 * the nodes' own outgoing connections would take them).
 */
static void test_policy(struct ibp_policy *pol)
{
	char err[128];

	ibp_policy_init(pol);
	assert_int_equal(ibp_policy_set(pol, "test_ports", "30000-30999", err, sizeof(err)), 0);
}

/*
 * test_policy() with a run bound of TIMEOUT seconds and, unless NULL, a
 * latency bound of MAX_LAT_US; and, unless HL is NULL, the step's NODES
 * expanded into HL (the caller releases it).
 */
static void test_step(struct ibp_policy *pol, const char *timeout, const char *max_lat_us,
		      struct ibp_hostlist *hl, const char *nodes)
{
	char err[128];

	test_policy(pol);
	assert_int_equal(ibp_policy_set(pol, "test_timeout", timeout, err, sizeof(err)), 0);
	if (max_lat_us)
		assert_int_equal(
		    ibp_policy_set(pol, "test_max_lat_us", max_lat_us, err, sizeof(err)), 0);
	if (hl)
		assert_int_equal(ibp_hostlist_expand(nodes, 0, hl, err, sizeof(err)), 0);
}

/* One node that starts late (the others wait for it), or SIZE_MAX. */
static size_t late_node = SIZE_MAX;

static void *node_main(void *arg)
{
	struct node_run *nr = arg;

	if (nr->cfg.index == late_node)
		usleep(300 * 1000);
	nr->rc = ibp_rdmatest_run(&nr->cfg, &nr->out, &nr->res);
	return NULL;
}

/*
 * The simulated nodes' addresses, 127.A.B.1-3 with A.B from this process's
 * PID: other copies of this test running at the same time on the machine
 * (other builds) must not answer each other's nodes.
 */
static char addr_buf[8][24];
static const char *addrs3[3];
static const char *addrs8[8];

static void addrs_init(void)
{
	unsigned pid = (unsigned)getpid();

	for (int i = 0; i < 8; i++) {
		snprintf(addr_buf[i], sizeof(addr_buf[i]), "127.%u.%u.%d", 64 + pid % 128,
			 (pid / 128) % 250, i + 1);
		addrs8[i] = addr_buf[i];
		if (i < 3)
			addrs3[i] = addr_buf[i];
	}
}

/*
 * Node I of a loopback step over ADDRS, testing in socket mode: zeroed,
 * findings ready, the common settings; the caller adds its own and starts it.
 */
/* An idle node's wake-ups (the default here), and a node too busy to judge a link. */
static double wakeup_idle(void)
{
	return 10;
}

static double wakeup_busy(void)
{
	return 50 * 1000;
}

static double (*test_wakeup)(void) = wakeup_idle;

static void node_init(struct node_run *nr, size_t i, const struct ibp_hostlist *hl,
		      const struct ibp_policy *pol, uint32_t job, const char *const *addrs)
{
	memset(nr, 0, sizeof(*nr));
	ibp_findings_init(&nr->out);
	nr->cfg.nodes = hl;
	nr->cfg.index = i;
	nr->cfg.job = job;
	nr->cfg.uid = 1000;
	nr->cfg.policy = pol;
	nr->cfg.transport = &ibp_transport_socket;
	nr->cfg.wakeup_late_us = test_wakeup;
	nr->cfg.insecure = true;
	nr->cfg.addrs = addrs;
	nr->cfg.buf_len = 4096;
	nr->cfg.burst_bytes = 65536;
}

static const struct ibp_tx_port *test_ports; /* two per node, or NULL */
static size_t test_nports[3];

/* P: port 1 of device "loDEV" at NODE's address, claiming RATE_GBPS (0: measured). */
static void loopback_port(struct ibp_tx_port *p, size_t node, size_t dev, double rate_gbps)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->addr, sizeof(p->addr), "%s", addrs3[node]);
	snprintf(p->device, sizeof(p->device), "lo%zu", dev);
	p->port = 1;
	p->rate_gbps = rate_gbps;
}

static void run_nodes(struct node_run *nr, size_t n, size_t skip, const struct ibp_policy *pol,
		      const struct ibp_hostlist *hl, uint32_t job)
{
	for (size_t i = 0; i < n; i++) {
		memset(&nr[i], 0, sizeof(nr[i]));
		if (i == skip)
			continue;
		node_init(&nr[i], i, hl, pol, job, addrs3);
		if (test_ports) {
			nr[i].cfg.ports = &test_ports[2 * i];
			nr[i].cfg.n_ports = test_nports[i];
			nr[i].cfg.mode = IBP_RDMATEST_FULL;
		}
		assert_int_equal(pthread_create(&nr[i].th, NULL, node_main, &nr[i]), 0);
	}
	for (size_t i = 0; i < n; i++)
		if (i != skip)
			pthread_join(nr[i].th, NULL);
}

/*
 * t1..t3 with node 2 missing (node 0 listens long for it) while FN(ARG)
 * talks to node 0's first port for JOB, set in *PORT.
 */
static void run_with_intruder(struct node_run *nr, const struct ibp_policy *pol,
			      const struct ibp_hostlist *hl, uint32_t job, uint16_t *port,
			      void *(*fn)(void *), void *arg)
{
	pthread_t th;

	assert_int_equal(ibp_oob_ports(job, 0, pol->test_port_lo, pol->test_port_hi, port, 1), 1);
	assert_int_equal(pthread_create(&th, NULL, fn, arg), 0);
	run_nodes(nr, 3, 2, pol, hl, job);
	pthread_join(th, NULL);
}

/*
 * A peer that starts late refuses the connections until it listens: the
 * connector sends the HELLO it made for its first try (one munge
 * credential), not a new one per try.
 */
static void test_run_late_peer_one_hello_per_link(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];

	(void)state;
	test_step(&pol, "3", "200000", &hl, "t[1-3]");
	late_node = 2; /* 300 ms: t2's link to it (round 1) is refused several times */
	run_nodes(nr, 3, SIZE_MAX, &pol, &hl, 23);
	late_node = SIZE_MAX;
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		/* two out-links each (rounds 1 and 2), one HELLO each */
		assert_int_equal(nr[i].res.hellos, 2);
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
}

static void test_run_three_nodes_in_threads_pass(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];

	(void)state;
	test_step(&pol, "3", "200000", &hl, "t[1-3]");
	run_nodes(nr, 3, SIZE_MAX, &pol, &hl, 11);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		assert_int_equal(nr[i].res.n_links, 4);
		for (size_t l = 0; l < 4; l++) {
			assert_int_equal(nr[i].res.links[l].status, IBP_LINK_PASS);
			assert_true(nr[i].res.links[l].gbps > 0);
		}
		assert_int_equal(ibp_findings_worst(&nr[i].out), IBP_SEV_OK);
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
}

/*
 * 8 nodes in threads, t3..t5 with other firmware: the sum goes around the
 * ring and the difference is said once in the whole step, by t3, with
 * step-wide counts.  Then t7 has no fingerprint: the chain breaks at its
 * neighbours, every node falls back to its neighbours and says so.
 */
static const struct ibp_topology *eight_topology; /* NULL: the plain plan */

static void run_eight(struct node_run *nr, struct ibp_fp *fp, const struct ibp_policy *pol,
		      const struct ibp_hostlist *hl, uint32_t job, size_t no_fp)
{
	for (size_t i = 0; i < 8; i++) {
		node_init(&nr[i], i, hl, pol, job, addrs8);
		nr[i].cfg.fingerprint = i == no_fp ? NULL : &fp[i];
		nr[i].cfg.topology = eight_topology;
		assert_int_equal(pthread_create(&nr[i].th, NULL, node_main, &nr[i]), 0);
	}
	for (size_t i = 0; i < 8; i++)
		pthread_join(nr[i].th, NULL);
}

/*
 * The eight ran step-wide and t3..t5's firmware was said once in the whole
 * step, with step-wide counts; by t3 as "t3,t4,t5" when IN_NODE_ORDER, else
 * in whatever order the ring put them.  Releases the findings.
 */
static void assert_eight_said_once(struct node_run *nr, bool in_node_order)
{
	size_t said = 0;

	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.step_wide);
		for (size_t k = 0; k < nr[i].out.n; k++) {
			const struct ibp_finding *c = &nr[i].out.v[k];

			if (strncmp(c->code, "consistency_", 12) != 0)
				continue;
			said++;
			assert_string_equal(c->code, "consistency_firmware");
			if (in_node_order) {
				assert_int_equal(i, 2);
				assert_string_equal(c->node, "t3,t4,t5");
			} else {
				assert_int_equal(strlen(c->node), strlen("t3,t4,t5"));
				assert_non_null(strstr(c->node, "t3"));
				assert_non_null(strstr(c->node, "t4"));
				assert_non_null(strstr(c->node, "t5"));
			}
			assert_string_equal(c->observed,
					    "firmware 28.39.1002, the other 5 nodes 28.41.1000");
		}
		ibp_findings_release(&nr[i].out);
	}
	assert_int_equal(said, 1);
}

static void test_run_eight_nodes_three_odd_said_once_step_wide(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run *nr = calloc(8, sizeof(*nr));
	struct ibp_fp *fp = calloc(8, sizeof(*fp));
	char err[128];
	size_t said = 0, partial = 0;

	(void)state;
	assert_non_null(nr);
	assert_non_null(fp);
	for (int i = 0; i < 8; i++) {
		ibp_fp_init(&fp[i]);
		ibp_fp_set(&fp[i], IBP_FP_HCA_SET, NULL, "1 rail: mlx5_3:1");
		ibp_fp_set(&fp[i], IBP_FP_FIRMWARE, "mlx5_3:1",
			   i >= 2 && i <= 4 ? "28.39.1002" : "28.41.1000");
	}
	test_step(&pol, "5", "500000", &hl, "t[1-8]");
	run_eight(nr, fp, &pol, &hl, 31, SIZE_MAX);
	/*
	 * The tree over the 8 places: clusters t1-t3, t4-t6 and t7-t8 headed
	 * by t2, t5 (the root) and t7; t1, t3, t4, t6 and t8 are leaves.  A
	 * leaf's sum goes up on the ring round's link with its head: no HELLO
	 * for the sum, only its two out-links'; t2 and t7 make one more, for
	 * their parent's connection; the root none.
	 */
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(nr[i].res.hellos, i == 1 || i == 6 ? 3 : 2);
	assert_eight_said_once(nr, true);

	/*
	 * t7 (index 6) has no fingerprint: the sum stops at its neighbours in
	 * the tree over the 8 places (t5 its parent, t8 its child), everyone
	 * falls back
	 */
	run_eight(nr, fp, &pol, &hl, 32, 6);
	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_false(nr[i].res.step_wide);
		for (size_t k = 0; k < nr[i].out.n; k++) {
			const struct ibp_finding *c = &nr[i].out.v[k];

			if (!strcmp(c->code, "consistency_partial")) {
				char here[64];

				partial++;
				/*
				 * t7 takes no part and says so to each of its tree
				 * neighbours at once: each stops the chain there, unless
				 * another's word came first.  A warning where it stopped;
				 * information elsewhere.
				 */
				assert_true(strstr(c->observed, "comparison stopped at t5: ") ||
					    strstr(c->observed, "comparison stopped at t8: "));
				snprintf(here, sizeof(here), "comparison stopped at t%zu: ", i + 1);
				assert_int_equal(c->severity, strstr(c->observed, here)
								  ? IBP_SEV_WARN
								  : IBP_SEV_OK);
				assert_non_null(strstr(c->observed, "t7 sent no fingerprint"));
			} else if (!strncmp(c->code, "consistency_", 12)) {
				said++;
				assert_non_null(strstr(c->observed, "(ring neighbours only: "));
			}
		}
		ibp_findings_release(&nr[i].out);
	}
	assert_int_equal(partial, 7); /* every node with a fingerprint */

	/*
	 * Three leaves (topology_conf=): the plan's round 1 stays inside them,
	 * so the sum takes round 2's ring across the leaves; the same verdict
	 */
	{
		static const char text[] = "SwitchName=s Switches=la,lb,lc\n"
					   "SwitchName=la Nodes=t[1-3]\n"
					   "SwitchName=lb Nodes=t[4-6]\n"
					   "SwitchName=lc Nodes=t[7-8]\n";
		struct ibp_topology t;

		ibp_topology_init(&t);
		assert_int_equal(
		    ibp_topology_parse_conf(&t, text, strlen(text), "t", err, sizeof(err)), 0);
		eight_topology = &t;
		run_eight(nr, fp, &pol, &hl, 33, SIZE_MAX);
		eight_topology = NULL;
		assert_eight_said_once(nr, false); /* named in the ring's order */
		ibp_topology_release(&t);
	}
	(void)said; /* the windows may miss the run of 3: that is what the warning says */
	ibp_hostlist_release(&hl);
	free(fp);
	free(nr);
}

/*
 * t7 runs with consistency= all off and no fingerprint: it takes no part
 * in the sum, and its leaf child t8, whose sum went up on their link, is
 * told so at its summary (not left to wait for the deadline): it says the
 * chain stopped there, because of t7.
 */
static void test_run_eight_leaves_told_parent_takes_no_part(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol, off;
	struct node_run *nr = calloc(8, sizeof(*nr));
	struct ibp_fp *fp = calloc(8, sizeof(*fp));
	char err[128];

	(void)state;
	assert_non_null(nr);
	assert_non_null(fp);
	for (int i = 0; i < 8; i++) {
		ibp_fp_init(&fp[i]);
		ibp_fp_set(&fp[i], IBP_FP_HCA_SET, NULL, "1 rail: mlx5_3:1");
		ibp_fp_set(&fp[i], IBP_FP_FIRMWARE, "mlx5_3:1", "28.41.1000");
	}
	/*
	 * t7's parent t5 waits for its connection to the ring round's end
	 * (1.6 s); the leaves' answer comes long before the deadline (4 s),
	 * which would say "did not finish by the deadline"
	 */
	test_step(&pol, "4", "500000", &hl, "t[1-8]");
	off = pol;
	assert_int_equal(ibp_policy_set(&off, "consistency", "all:off", err, sizeof(err)), 0);
	for (size_t i = 0; i < 8; i++) {
		node_init(&nr[i], i, &hl, i == 6 ? &off : &pol, 34, addrs8);
		nr[i].cfg.fingerprint = i == 6 ? NULL : &fp[i];
		assert_int_equal(pthread_create(&nr[i].th, NULL, node_main, &nr[i]), 0);
	}
	for (size_t i = 0; i < 8; i++)
		pthread_join(nr[i].th, NULL);
	for (size_t i = 0; i < 8; i++) {
		size_t partial = 0;

		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		assert_false(nr[i].res.step_wide);
		for (size_t k = 0; k < nr[i].out.n; k++) {
			const struct ibp_finding *c = &nr[i].out.v[k];

			if (strcmp(c->code, "consistency_partial") != 0)
				continue;
			partial++;
			if (i == 7) { /* its leaf: where it stopped, a warning */
				char here[64];

				snprintf(here, sizeof(here), "comparison stopped at t%zu: ", i + 1);
				assert_non_null(strstr(c->observed, here));
				assert_non_null(strstr(c->observed, "t7 takes no part in it"));
				assert_int_equal(c->severity, IBP_SEV_WARN);
			} else {
				/* t5 waits for t7's connection to its slot's deadline */
				assert_non_null(strstr(c->observed, "no connection with t7"));
			}
		}
		assert_int_equal(partial, i == 6 ? 0 : 1); /* t7 compares nothing */
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
	free(fp);
	free(nr);
}

/* t3's mlx5_3 has other firmware: t3 says so (a warning), t1 and t2 say nothing. */
static void test_run_fingerprints_compared_odd_node_says_it(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct ibp_fp *fp = calloc(3, sizeof(*fp));

	(void)state;
	assert_non_null(fp);
	for (int i = 0; i < 3; i++) {
		ibp_fp_init(&fp[i]);
		ibp_fp_set(&fp[i], IBP_FP_HCA_SET, NULL, "1 rail: mlx5_3:1");
		ibp_fp_set(&fp[i], IBP_FP_FIRMWARE, "mlx5_3:1",
			   i == 2 ? "28.39.1002" : "28.41.1000");
	}
	test_step(&pol, "3", "200000", &hl, "t[1-3]");
	/* run_nodes gives no fingerprints: these nodes are started here */
	for (size_t i = 0; i < 3; i++) {
		node_init(&nr[i], i, &hl, &pol, 21, addrs3);
		nr[i].cfg.fingerprint = &fp[i];
		assert_int_equal(pthread_create(&nr[i].th, NULL, node_main, &nr[i]), 0);
	}
	for (size_t i = 0; i < 3; i++)
		pthread_join(nr[i].th, NULL);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_int_equal(nr[i].res.n_fingerprints, 2);
		const struct ibp_finding *c = NULL;
		size_t nc = 0;

		for (size_t k = 0; k < nr[i].out.n; k++)
			if (!strncmp(nr[i].out.v[k].code, "consistency_", 12)) {
				c = &nr[i].out.v[k];
				nc++;
			}
		assert_int_equal(ibp_findings_count(&nr[i].out, IBP_SEV_FAIL, -1), 0);
		if (i < 2) {
			assert_int_equal(nc, 0);
		} else {
			assert_int_equal(nc, 1);
			assert_string_equal(c->code, "consistency_firmware");
			assert_int_equal(c->severity, IBP_SEV_WARN);
			assert_int_equal(c->fclass, IBP_CLASS_JOB);
			assert_string_equal(c->node, "t3");
			assert_string_equal(c->observed,
					    "firmware 28.39.1002, the other 2 nodes 28.41.1000");
		}
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
	free(fp);
}

static void test_run_missing_node_blamed_by_both_others(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];

	(void)state;
	test_step(&pol, "1.5", "200000", &hl, "t[1-3]");
	run_nodes(nr, 3, 2, &pol, &hl, 12);
	for (size_t i = 0; i < 2; i++) {
		bool named = false;

		assert_int_equal(nr[i].rc, 0);
		assert_false(nr[i].res.pass);
		assert_true(nr[i].res.elapsed_s < 2.5);
		assert_int_equal(nr[i].res.n_suspects, 1);
		assert_int_equal(nr[i].res.suspects[0], 2);
		for (size_t f = 0; f < nr[i].out.n; f++)
			if (nr[i].out.v[f].severity == IBP_SEV_FAIL) {
				assert_string_equal(nr[i].out.v[f].node, "t3");
				assert_string_equal(nr[i].out.v[f].code, "rdmatest_node_failed");
				named = true;
			}
		assert_true(named);
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
}

static void test_run_bad_nodelist_job_finding(void **state)
{
	struct ibp_rdmatest_config cfg = {0};
	struct ibp_findings out;
	struct ibp_rdmatest_result res;

	(void)state;
	ibp_findings_init(&out);
	cfg.nodelist = "n[1-3";
	cfg.transport = &ibp_transport_socket;
	assert_int_equal(ibp_rdmatest_run(&cfg, &out, &res), -EINVAL);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.v[0].code, "rdmatest_bad_nodelist");
	assert_int_equal(out.v[0].fclass, IBP_CLASS_JOB);
	ibp_findings_release(&out);
	cfg.nodelist = "n[1-3]";
	cfg.index = 3;
	assert_int_equal(ibp_rdmatest_run(&cfg, &out, &res), -EINVAL);
	assert_string_equal(out.v[0].code, "rdmatest_bad_nodelist");
	ibp_findings_release(&out);
	/* one node: nothing to test, a pass */
	cfg.nodelist = "solo";
	cfg.index = 0;
	assert_int_equal(ibp_rdmatest_run(&cfg, &out, &res), 0);
	assert_true(res.pass);
	assert_string_equal(out.v[0].code, "rdmatest_single_node");
	ibp_findings_release(&out);
}

/*
 * Strangers on the test port are dropped and counted, and change no
 * verdict: node 2 is missing, so node 0 listens until the round's deadline
 * and the stranger is sure to reach it.
 */
struct stranger {
	uint16_t port;
	int sent;
};

static void *stranger_main(void *arg)
{
	struct stranger *s = arg;
	static const char junk[] = "GET / HTTP/1.0\r\n\r\n";

	for (int t = 0; t < 100 && s->sent < 3; t++) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(s->port)};
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		inet_pton(AF_INET, addrs3[0], &a.sin_addr);
		if (fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			if (send(fd, junk, sizeof(junk), MSG_NOSIGNAL) > 0)
				s->sent++;
		}
		if (fd >= 0)
			close(fd);
		usleep(5000);
	}
	return NULL;
}

static void test_run_garbage_connections_dropped_verdict_unchanged(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct stranger st = {0};

	(void)state;
	test_step(&pol, "1.5", "200000", &hl, "t[1-3]");
	run_with_intruder(nr, &pol, &hl, 13, &st.port, stranger_main, &st);
	assert_true(st.sent >= 1);
	assert_true(nr[0].res.dropped >= 1);
	assert_non_null(strstr(nr[0].res.drop_reason, "127.0.0.1"));
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(nr[i].res.n_suspects, 1);
		assert_int_equal(nr[i].res.suspects[0], 2);
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
}

/*
 * A port that claims 1000 Tb/s cannot reach half of it over loopback, and no
 * round trip takes under 1 us: both limits are named with the figures.
 */
static void test_run_slow_links_bandwidth_and_latency_named(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct ibp_tx_port ports[6];
	char err[128];

	(void)state;
	test_step(&pol, "3", NULL, &hl, "t[1-3]");
	assert_int_equal(ibp_policy_set(&pol, "test_min_bw", "0.5", err, sizeof(err)), 0);
	memset(ports, 0, sizeof(ports)); /* one port per node: the second of each pair unused */
	for (size_t i = 0; i < 3; i++) {
		loopback_port(&ports[2 * i], i, i, 1e6);
		test_nports[i] = 1;
	}
	test_ports = ports;
	run_nodes(nr, 3, SIZE_MAX, &pol, &hl, 14);
	for (size_t i = 0; i < 3; i++) {
		bool named = false;

		/* every link of the run is slow: inconclusive, a warning, nobody blamed */
		assert_false(nr[i].res.pass);
		assert_true(nr[i].res.inconclusive);
		assert_int_equal(nr[i].res.n_suspects, 0);
		assert_int_equal(ibp_findings_worst(&nr[i].out), IBP_SEV_WARN);
		assert_string_equal(nr[i].out.v[0].code, "rdmatest_inconclusive");
		assert_non_null(strstr(nr[i].out.v[0].observed, "inconclusive: every link slow"));
		for (size_t l = 0; l < nr[i].res.n_links; l++) {
			assert_int_equal(nr[i].res.links[l].status, IBP_LINK_BW_LOW);
			assert_true(nr[i].res.links[l].gbps > 0);
		}
		for (size_t f = 0; f < nr[i].out.n; f++)
			named |= strstr(nr[i].out.v[f].observed, "bandwidth low") &&
				 strstr(nr[i].out.v[f].observed, "floor 500000.00 Gb/s");
		assert_true(named);
		ibp_findings_release(&nr[i].out);
	}
	/* the same ports at their real speed, but a 1 us round trip limit */
	for (size_t i = 0; i < 3; i++)
		ports[2 * i].rate_gbps = 0;
	assert_int_equal(ibp_policy_set(&pol, "test_max_lat_us", "1", err, sizeof(err)), 0);
	run_nodes(nr, 3, SIZE_MAX, &pol, &hl, 15);
	test_ports = NULL;
	for (size_t i = 0; i < 3; i++) {
		for (size_t l = 0; l < nr[i].res.n_links; l++)
			assert_int_equal(nr[i].res.links[l].status, IBP_LINK_LAT_HIGH);
		assert_string_equal(nr[i].out.v[0].device[0] ? "set" : "", "set");
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
}

/*
 * The socket transport whose round trips read SLOW_US: on every
 * measurement (slow_every), or on a link's first only (a sender thread
 * connects each of its links, then measures it: FRESH is per thread).
 */
static struct ibp_transport_ops slow_socket;
static bool slow_every;
static const uint64_t SLOW_US = 5000;
static __thread bool fresh;

static int slow_connect(struct ibp_tx *tx, const struct ibp_endpoint *peer, enum ibp_tx_role role,
			int64_t deadline)
{
	fresh = true;
	return ibp_transport_socket.connect(tx, peer, role, deadline);
}

static int slow_lat_ping(struct ibp_tx *tx, unsigned iters, int64_t deadline, uint64_t *ns)
{
	int rc = ibp_transport_socket.lat_ping(tx, iters, deadline, ns);

	if (!rc && (slow_every || fresh))
		*ns = SLOW_US * 1000;
	fresh = false;
	return rc;
}

/*
 * t1..t3 over slow_socket with test_timeout TIMEOUT_S, waking WAKEUP late;
 * PORTS: NULL for one rail, else two per node (every rail tested).
 */
static void run_slow_socket(struct node_run *nr, const char *timeout_s,
			    const struct ibp_tx_port *ports, double (*wakeup)(void), uint32_t job)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;

	test_step(&pol, timeout_s, NULL, &hl, "t[1-3]");
	for (size_t i = 0; i < 3; i++) {
		node_init(&nr[i], i, &hl, &pol, job, addrs3);
		nr[i].cfg.transport = &slow_socket;
		nr[i].cfg.wakeup_late_us = wakeup;
		if (ports) {
			nr[i].cfg.ports = &ports[2 * i];
			nr[i].cfg.n_ports = 2;
			nr[i].cfg.mode = IBP_RDMATEST_FULL;
		}
		assert_int_equal(pthread_create(&nr[i].th, NULL, node_main, &nr[i]), 0);
	}
	for (size_t i = 0; i < 3; i++)
		pthread_join(nr[i].th, NULL);
	ibp_hostlist_release(&hl);
}

static void run_slow(struct node_run *nr, bool every, double (*wakeup)(void), uint32_t job)
{
	slow_socket = ibp_transport_socket;
	slow_socket.lat_ping = slow_lat_ping;
	slow_socket.connect = slow_connect;
	slow_socket.steps = NULL; /* the ops one by one (the crew), where the overrides are */
	slow_every = every;
	run_slow_socket(nr, "3", NULL, wakeup, job);
}

/* One slow measurement is measured again and the link passes on its best figures. */
static void test_run_slow_sample_measured_again_passes(void **state)
{
	struct node_run nr[3];

	(void)state;
	run_slow(nr, false, wakeup_idle, 21);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		assert_int_equal(ibp_findings_worst(&nr[i].out), IBP_SEV_OK);
		for (size_t l = 0; l < nr[i].res.n_links; l++) {
			const struct ibp_rdmatest_link *k = &nr[i].res.links[l];

			assert_int_equal(k->status, IBP_LINK_PASS);
			assert_true(k->lat_us < SLOW_US);
			if (k->from == i) /* the sender measured twice */
				assert_int_equal(k->measures, 2);
		}
		ibp_findings_release(&nr[i].out);
	}
}

/* Slow in every measurement: latency high, each measurement named. */
static void test_run_slow_every_measurement_fails_with_figures(void **state)
{
	struct node_run nr[3];

	(void)state;
	run_slow(nr, true, wakeup_idle, 22);
	for (size_t i = 0; i < 3; i++) {
		assert_false(nr[i].res.pass);
		for (size_t l = 0; l < nr[i].res.n_links; l++) {
			const struct ibp_rdmatest_link *k = &nr[i].res.links[l];

			assert_int_equal(k->status, IBP_LINK_LAT_HIGH);
			if (k->from != i)
				continue;
			assert_int_equal(k->measures, IBP_RDMATEST_MEASURES);
			assert_non_null(strstr(k->detail,
					       "round trip 5000 us at best, limit 1000 us "
					       "(4 measurements: "));
		}
		ibp_findings_release(&nr[i].out);
	}
}

/* Slow in every measurement on nodes too busy to judge: pass, and a warning that says so. */
static void test_run_slow_on_busy_node_passes_and_warns(void **state)
{
	struct node_run nr[3];

	(void)state;
	run_slow(nr, true, wakeup_busy, 23);
	for (size_t i = 0; i < 3; i++) {
		const struct ibp_finding *f = ibp_test_find_code(&nr[i].out, "rdmatest_busy", NULL);

		assert_true(nr[i].res.pass);
		assert_int_equal(nr[i].res.n_suspects, 0);
		for (size_t l = 0; l < nr[i].res.n_links; l++)
			assert_int_equal(nr[i].res.links[l].status, IBP_LINK_PASS);
		assert_non_null(f);
		assert_int_equal(f->severity, IBP_SEV_WARN);
		assert_non_null(strstr(f->observed, "not judged: this node was too busy (its own "
						    "wake-ups 50000 us late, limit 1000 us)"));
		ibp_findings_release(&nr[i].out);
	}
}

/* Rail 0's round trips read 10 us, the other rails' SLOW_US: every time. */
static int rail1_slow_lat_ping(struct ibp_tx *tx, unsigned iters, int64_t deadline, uint64_t *ns)
{
	int rc = ibp_transport_socket.lat_ping(tx, iters, deadline, ns);

	if (!rc) /* rails beyond 0 ping IBP_RDMATEST_LAT_ITERS_RAIL times */
		*ns = (iters == IBP_RDMATEST_LAT_ITERS ? 10 : SLOW_US) * 1000;
	return rc;
}

/*
 * Two rails, rail 1 slow in every measurement: only rail 1 is measured
 * again (rail 0 once), rail 1 fails latency high with its four figures,
 * rail 0 passes, and both ends of every link agree.
 */
static void test_run_slow_rail_measured_again_alone(void **state)
{
	struct node_run nr[3];
	struct ibp_tx_port ports[6];

	(void)state;
	slow_socket = ibp_transport_socket;
	slow_socket.lat_ping = rail1_slow_lat_ping;
	slow_socket.steps = NULL; /* the ops one by one (the crew), where the override is */
	for (size_t i = 0; i < 6; i++)
		loopback_port(&ports[i], i / 2, i % 2, 0);
	run_slow_socket(nr, "4", ports, wakeup_idle, 24);
	for (size_t i = 0; i < 3; i++) {
		assert_false(nr[i].res.pass);
		assert_int_equal(nr[i].res.n_links, 8);
		for (size_t l = 0; l < nr[i].res.n_links; l++) {
			const struct ibp_rdmatest_link *k = &nr[i].res.links[l];

			assert_int_equal(k->status, k->rail ? IBP_LINK_LAT_HIGH : IBP_LINK_PASS);
			if (k->from != i)
				continue;
			assert_int_equal(k->measures, k->rail ? IBP_RDMATEST_MEASURES : 1);
			if (k->rail) {
				assert_non_null(strstr(k->detail,
						       "round trip 5000 us at best, limit "
						       "1000 us (4 measurements: 5000 us, "));
				/* a datagram rail: no rate measured, none said */
				assert_null(strstr(k->detail, "Gb/s"));
				assert_true(k->gbps == 0);
			}
		}
		ibp_findings_release(&nr[i].out);
	}
}

/* Full mode with two ports on t1 and one on the others: rail 1 is named, rail 0 passes. */
static void test_run_rail_count_mismatch_named(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct ibp_tx_port ports[6];
	char err[128];
	bool named = false;

	(void)state;
	/* Generous: the run ends when its links are done; the bound only matters under load. */
	test_step(&pol, "4", "200000", &hl, "t[1-3]");
	for (size_t i = 0; i < 6; i++)
		loopback_port(&ports[i], i / 2, i % 2, 0);
	test_nports[0] = 2;
	test_nports[1] = test_nports[2] = 1;
	test_ports = ports;
	run_nodes(nr, 3, SIZE_MAX, &pol, &hl, 16);
	test_ports = NULL;
	assert_int_equal(nr[0].res.n_links, 8);
	for (size_t l = 0; l < nr[0].res.n_links; l++)
		if (nr[0].res.links[l].rail == 0)
			assert_int_equal(nr[0].res.links[l].status, IBP_LINK_PASS);
		else
			assert_int_not_equal(nr[0].res.links[l].status, IBP_LINK_PASS);
	for (size_t f = 0; f < nr[0].out.n; f++)
		named |= strstr(nr[0].out.v[f].observed, "different numbers of ports") != NULL;
	assert_true(named);
	assert_true(nr[1].res.pass);
	assert_true(nr[2].res.pass);
	for (size_t i = 0; i < 3; i++)
		ibp_findings_release(&nr[i].out);
	/* test_pairing=any: the extra rail is simply not tested, and all pass */
	assert_int_equal(ibp_policy_set(&pol, "test_pairing", "any", err, sizeof(err)), 0);
	test_ports = ports;
	run_nodes(nr, 3, SIZE_MAX, &pol, &hl, 17);
	test_ports = NULL;
	for (size_t l = 0; l < nr[0].res.n_links; l++)
		assert_int_equal(nr[0].res.links[l].status,
				 nr[0].res.links[l].rail == 0 ? IBP_LINK_PASS : IBP_LINK_UNTESTED);
	for (size_t i = 0; i < 3; i++) {
		assert_true(nr[i].res.pass);
		assert_true(nr[i].res.elapsed_s <
			    1.0); /* nobody waits for a rail that is not there */
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
}

/*
 * Runs node 0 of t[1-2] over loopback as CFG sets it up (the helper adds
 * the step, and a 20 s bound): a failure of its setup must come back at
 * once, first as the node finding WANT_CODE.  The caller releases OUT.
 */
static void run_fails_at_setup(struct ibp_rdmatest_config *cfg, struct ibp_policy *pol,
			       struct ibp_findings *out, struct ibp_rdmatest_result *res,
			       const char *want_code)
{
	test_step(pol, "20", NULL, NULL, NULL);
	ibp_findings_init(out);
	cfg->nodelist = "t[1-2]";
	cfg->addrs = addrs3;
	cfg->policy = pol;
	cfg->transport = &ibp_transport_socket;
	assert_int_equal(ibp_rdmatest_run(cfg, out, res), 0);
	assert_false(res->pass);
	assert_true(res->elapsed_s < 10);
	assert_true(out->n >= 1);
	assert_string_equal(out->v[0].code, want_code);
	assert_int_equal(out->v[0].fclass, IBP_CLASS_NODE);
}

/*
 * munged unreachable is a setup failure of this node, known before any
 * link: its own code and fix text (never the memlock one), and the run
 * returns without waiting out test_timeout (20 s here; it takes
 * milliseconds, the bound only proves it did not wait).
 */
static void test_run_munge_unreachable_setup_failure_at_once(void **state)
{
	struct ibp_rdmatest_config cfg = {
	    .job = 18,
	    .uid = (uint32_t)getuid(),
	    .munge_socket = "/nonexistent/spank-ib-test/munge.socket",
	};
	struct ibp_rdmatest_result res;
	struct ibp_findings out;
	struct ibp_policy pol;

	(void)state;
	run_fails_at_setup(&cfg, &pol, &out, &res, "rdmatest_munge_unavailable");
	assert_int_not_equal(res.setup_err, 0);
	assert_int_equal(res.n_links, 0);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].severity, IBP_SEV_FAIL);
	assert_non_null(strstr(out.v[0].fix, "munge_socket="));
	assert_non_null(strstr(out.v[0].observed, "/nonexistent/spank-ib-test/munge.socket"));
	assert_null(strstr(out.v[0].fix, "memlock"));
	ibp_findings_release(&out);
}

/*
 * Listeners bound by the caller (as the plugin does as root): the run uses
 * them, the first candidate missing on one node (fd -1) is skipped by the
 * senders, and every fd is still open and listening afterwards.
 */
static int bound_listener(const char *addr, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, addr, &a.sin_addr);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Binds every candidate of JOB on the three nodes but node 1's first:
 * true, or false with nothing left open (a port in use on this shared
 * machine: the caller tries another job).
 */
static bool bind_all(uint32_t job, const struct ibp_policy *pol, uint16_t *ports,
		     int fds[3][IBP_RDMATEST_PORT_CANDIDATES], int *np)
{
	bool ok = true;

	*np = ibp_oob_ports(job, 0, pol->test_port_lo, pol->test_port_hi, ports,
			    IBP_RDMATEST_PORT_CANDIDATES);
	assert_int_equal(*np, IBP_RDMATEST_PORT_CANDIDATES);
	for (size_t i = 0; i < 3; i++)
		for (int c = 0; c < *np; c++) {
			fds[i][c] = i == 1 && c == 0 ? -1 : bound_listener(addrs3[i], ports[c]);
			ok &= fds[i][c] >= 0 || (i == 1 && c == 0);
		}
	if (!ok)
		for (size_t i = 0; i < 3; i++)
			for (int c = 0; c < *np; c++)
				if (fds[i][c] >= 0)
					close(fds[i][c]);
	return ok;
}

/* Three loopback nodes of step JOB on the caller's listeners FDS (N per node, on PORTS). */
static void run_listening(struct node_run *nr, const struct ibp_hostlist *hl,
			  const struct ibp_policy *pol, uint32_t job,
			  int (*fds)[IBP_RDMATEST_PORT_CANDIDATES], const uint16_t *ports, int n)
{
	for (size_t i = 0; i < 3; i++) {
		node_init(&nr[i], i, hl, pol, job, addrs3);
		nr[i].cfg.listen_fds = fds[i];
		nr[i].cfg.listen_ports = ports;
		nr[i].cfg.n_listen_fds = (size_t)n;
		assert_int_equal(pthread_create(&nr[i].th, NULL, node_main, &nr[i]), 0);
	}
	for (size_t i = 0; i < 3; i++)
		pthread_join(nr[i].th, NULL);
}

/*
 * The caller's listeners (the plugin's) are used, left open for the caller
 * to close, and shut down once the run's acceptor is over: a connector of
 * another step that tries the port then is refused at once, not left to
 * wait on a backlog nobody accepts from.
 */
static void test_run_caller_listeners_used_left_open_shut_down(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	uint16_t ports[IBP_RDMATEST_PORT_CANDIDATES];
	int fds[3][IBP_RDMATEST_PORT_CANDIDATES];
	uint32_t job = 19;
	int n;

	(void)state;
	test_step(&pol, "4", "200000", &hl, "t[1-3]");
	while (!bind_all(job, &pol, ports, fds, &n) && job < 20000)
		job += 1000;
	assert_true(job < 20000);
	run_listening(nr, &hl, &pol, job, fds, ports, n);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		assert_int_equal(nr[i].res.setup_err, 0);
		assert_int_equal(nr[i].res.oob_port, i == 1 ? ports[1] : ports[0]);
		for (int c = 0; c < n; c++) {
			int acc = 1, fd;
			socklen_t sl = sizeof(acc);
			struct sockaddr_in to = {.sin_family = AF_INET,
						 .sin_port = htons(ports[c])};

			if (fds[i][c] < 0)
				continue;
			assert_true(fcntl(fds[i][c], F_GETFD) >= 0);
			assert_int_equal(
			    getsockopt(fds[i][c], SOL_SOCKET, SO_ACCEPTCONN, &acc, &sl), 0);
			assert_int_equal(acc, 0);
			inet_pton(AF_INET, addrs3[i], &to.sin_addr);
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			assert_true(fd >= 0);
			assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), -1);
			assert_int_equal(errno, ECONNREFUSED);
			close(fd);
			close(fds[i][c]);
		}
		ibp_findings_release(&nr[i].out);
	}
	ibp_hostlist_release(&hl);
}

/*
 * Silence is not evidence: at node 1's address two candidates are held by
 * listeners that never accept (another program, a finished step's socket),
 * node 1 listens on the third.  Its peers' links to it pass: a silent port
 * costs them a short wait beside the next candidate, not a quarter of the
 * test each (at test_timeout=2, two quarters came after round 1's end, and
 * the links read "unreachable: no answer to the handshake").
 */
static void test_connect_silent_candidates_cost_nothing(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	uint16_t ports[IBP_RDMATEST_PORT_CANDIDATES];
	int fds[3][IBP_RDMATEST_PORT_CANDIDATES], silent[2] = {-1, -1};
	uint32_t job = 27;
	bool ok = false;
	int n = 0;

	(void)state;
	test_step(&pol, "2", "200000", &hl, "t[1-3]");
	for (; !ok && job < 20000; job += 1000) {
		n = ibp_oob_ports(job, 0, pol.test_port_lo, pol.test_port_hi, ports,
				  IBP_RDMATEST_PORT_CANDIDATES);
		assert_int_equal(n, IBP_RDMATEST_PORT_CANDIDATES);
		ok = true;
		for (size_t i = 0; i < 3; i++)
			for (int c = 0; c < n; c++) {
				bool real = i == 1 ? c == 2 : c == 0;

				fds[i][c] = real ? bound_listener(addrs3[i], ports[c]) : -1;
				ok &= !real || fds[i][c] >= 0;
			}
		for (int c = 0; c < 2 && ok; c++) {
			silent[c] = bound_listener(addrs3[1], ports[c]);
			ok = silent[c] >= 0;
		}
		if (ok)
			break;
		for (size_t i = 0; i < 3; i++)
			for (int c = 0; c < n; c++)
				if (fds[i][c] >= 0)
					close(fds[i][c]);
		for (int c = 0; c < 2; c++)
			if (silent[c] >= 0)
				close(silent[c]);
		silent[0] = silent[1] = -1;
	}
	assert_true(ok);
	run_listening(nr, &hl, &pol, job, fds, ports, n);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nr[i].rc, 0);
		if (!nr[i].res.pass)
			for (size_t k = 0; k < nr[i].out.n; k++)
				print_message("# t%zu: %s\n", i + 1, nr[i].out.v[k].observed);
		assert_true(nr[i].res.pass);
		assert_int_equal(nr[i].res.oob_port, ports[i == 1 ? 2 : 0]);
		for (int c = 0; c < n; c++)
			if (fds[i][c] >= 0)
				close(fds[i][c]);
		ibp_findings_release(&nr[i].out);
	}
	for (int c = 0; c < 2; c++)
		close(silent[c]);
	ibp_hostlist_release(&hl);
}

/* Every caller listener missing: no listener, at once. */
static void test_run_no_caller_listener_setup_failure(void **state)
{
	const int fds[2] = {-1, -1};
	const uint16_t ports[2] = {47001, 47002};
	struct ibp_rdmatest_config cfg = {
	    .insecure = true,
	    .listen_fds = fds,
	    .listen_ports = ports,
	    .n_listen_fds = 2,
	};
	struct ibp_rdmatest_result res;
	struct ibp_findings out;
	struct ibp_policy pol;

	(void)state;
	run_fails_at_setup(&cfg, &pol, &out, &res, "rdmatest_no_listener");
	assert_int_equal(res.setup_err, -EADDRINUSE);
	ibp_findings_release(&out);
}

/* ---- the acceptor's policy ---- */

/* Connects to ADDR:PORT from SRC (NULL: the kernel's choice); -1 on failure. */
static int dial_from(const char *src, const char *addr, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct sockaddr_in s = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, addr, &a.sin_addr);
	if (src) {
		inet_pton(AF_INET, src, &s.sin_addr);
		if (bind(fd, (struct sockaddr *)&s, sizeof(s))) {
			close(fd);
			return -1;
		}
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

struct probe {
	uint32_t job;
	uint16_t port;
	struct ibp_oob_msg reply; /* what node 0 said to a peer's address */
	int reply_rc;
	int outside_rc; /* what it said to an address outside the step */
};

/* A HELLO from SRC to node 0 of 3 for JOB, ROUND, with NONCE; the answer in REPLY. */
static int probe_hello(const struct probe *pr, const char *src, uint32_t job, uint8_t round,
		       uint64_t nonce, struct ibp_oob_msg *reply)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_HELLO};
	int fd = -1, rc;

	for (int t = 0; t < 200 && fd < 0; t++) {
		fd = dial_from(src, addrs3[0], pr->port);
		if (fd < 0)
			usleep(5000);
	}
	if (fd < 0)
		return -ECONNREFUSED;
	m.u.hello.job = job;
	m.u.hello.uid = 1000;
	m.u.hello.from = 2;
	m.u.hello.to = 0;
	m.u.hello.nnodes = 3;
	m.u.hello.round = round;
	m.u.hello.n_rails = 1;
	m.u.hello.flags = IBP_HELLO_INSECURE;
	m.u.hello.nonce = nonce;
	rc = ibp_oob_send(fd, &m, ibp_now_ns() + IBP_NS_PER_S);
	if (!rc)
		rc = ibp_oob_recv(fd, reply, ibp_now_ns() + IBP_NS_PER_S);
	close(fd);
	return rc;
}

static void *probe_main(void *arg)
{
	struct probe *pr = arg;
	struct ibp_oob_msg outside;

	/* another job: must not authenticate */
	pr->reply_rc = probe_hello(pr, addrs3[2], pr->job + 1000, 1, 42, &pr->reply);
	pr->outside_rc = probe_hello(pr, "127.0.0.1", pr->job + 1000, 1, 42, &outside);
	return NULL;
}

/*
 * A HELLO that does not authenticate gets the one word "refused" (not the
 * job, step, uid, node or count this node expected); one from an address
 * outside the step's peers is closed unread.  Both are counted apart.
 */
static void test_accept_stranger_gets_refused_and_nothing_else(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct probe pr = {.job = 20};

	(void)state;
	test_step(&pol, "3", "200000", &hl, "t[1-3]");
	run_with_intruder(nr, &pol, &hl, pr.job, &pr.port, probe_main, &pr);
	assert_int_equal(pr.reply_rc, 0);
	assert_int_equal(pr.reply.type, IBP_OOB_ERROR);
	assert_int_equal(pr.reply.u.error.code, -EACCES);
	assert_string_equal(pr.reply.u.error.text, "refused");
	assert_true(pr.outside_rc == -ECONNRESET || pr.outside_rc == -EPIPE);
	assert_true(nr[0].res.dropped_peer >= 1);
	assert_true(nr[0].res.dropped_outside >= 1);
	assert_int_equal(nr[0].res.dropped, nr[0].res.dropped_peer + nr[0].res.dropped_outside);
	for (size_t i = 0; i < 2; i++)
		ibp_findings_release(&nr[i].out);
	ibp_hostlist_release(&hl);
}

/*
 * The step-wide sum's HELLO (round 3) from a peer's address to a node that
 * has no ring (3 nodes): an authenticated "no part" reply, so that the
 * peer knows at once this node takes no part instead of trying all round.
 */
static void *ring_probe_main(void *arg)
{
	struct probe *pr = arg;

	pr->reply_rc = probe_hello(pr, addrs3[2], pr->job, IBP_OOB_RING_ROUND, 44, &pr->reply);
	return NULL;
}

static void test_accept_ring_hello_without_ring_answered_no_part(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct probe pr = {.job = 24};

	(void)state;
	test_step(&pol, "3", "200000", &hl, "t[1-3]");
	run_with_intruder(nr, &pol, &hl, pr.job, &pr.port, ring_probe_main, &pr);
	assert_int_equal(pr.reply_rc, 0);
	assert_int_equal(pr.reply.type, IBP_OOB_HELLO);
	assert_int_equal(pr.reply.u.hello.flags,
			 IBP_HELLO_REPLY | IBP_HELLO_NO_RING | IBP_HELLO_INSECURE);
	assert_int_equal(pr.reply.u.hello.round, IBP_OOB_RING_ROUND);
	assert_int_equal(pr.reply.u.hello.echo, 44);
	assert_non_null(strstr(nr[0].res.drop_reason,
			       "t3 opens the step-wide sum's connection, this node takes no part"));
	for (size_t i = 0; i < 2; i++)
		ibp_findings_release(&nr[i].out);
	ibp_hostlist_release(&hl);
}

/*
 * Another build's HELLO (protocol 17's, in its fixed-size layout) from a
 * peer's address: the answer is an ERROR frame of this build's version, whole and followed
 * by a clean close, so the older build reads a version it does not speak
 * (its "Protocol not supported": no node blamed) instead of a reset.
 */
struct old_build {
	uint32_t job;
	uint16_t port;
	uint8_t answer[IBP_OOB_FRAME_MAX];
	ssize_t got;   /* bytes of the answer */
	ssize_t after; /* what a read after it gave: 0 is a clean close */
};

/*
 * A HELLO of protocol 17 (MEASURE_AGAIN; 14's to 16's alike), the last version before
 * frames took their own length: its fields in their fixed 688-byte layout (six words, round,
 * rail, flags, rail count, a reserved byte, two nonces, the credential's
 * length and 640 bytes for it), from node 2 to node 0 of 3, insecure.
 */
static int v17_hello(uint8_t *f, uint32_t job)
{
	const uint32_t words[6] = {job, 0, 1000, 2, 0, 3};
	size_t o = 12;

	memset(f, 0, 12 + 688);
	memcpy(f, "IBPT", 4);
	f[5] = 17;
	f[7] = IBP_OOB_HELLO;
	f[10] = 688 >> 8;
	f[11] = 688 & 0xff;
	for (int i = 0; i < 6; i++, o += 4) {
		f[o] = (uint8_t)(words[i] >> 24);
		f[o + 1] = (uint8_t)(words[i] >> 16);
		f[o + 2] = (uint8_t)(words[i] >> 8);
		f[o + 3] = (uint8_t)words[i];
	}
	f[o] = 1;                      /* round */
	f[o + 3] = IBP_HELLO_INSECURE; /* flags, after the rail */
	f[o + 4] = 1;                  /* rails */
	f[o + 13] = 43;                /* the nonce, after the reserved byte */
	return 12 + 688;
}

static void *old_build_main(void *arg)
{
	struct old_build *ob = arg;
	uint8_t frame[IBP_OOB_FRAME_MAX];
	int fd = -1, n;

	ob->got = ob->after = -1;
	for (int t = 0; t < 200 && fd < 0; t++) {
		fd = dial_from(addrs3[2], addrs3[0], ob->port);
		if (fd < 0)
			usleep(5000);
	}
	if (fd < 0)
		return NULL;
	n = v17_hello(frame, ob->job);
	if (send(fd, frame, (size_t)n, MSG_NOSIGNAL) == n) {
		struct timeval tv = {.tv_sec = 2};
		ssize_t want = IBP_OOB_HDR_LEN;

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		/* the answer's header, then as much as it says (within reason) */
		ob->got = 0;
		while (ob->got < want) {
			ssize_t r = recv(fd, ob->answer + ob->got, (size_t)(want - ob->got), 0);

			if (r <= 0)
				break;
			ob->got += r;
			if (ob->got == IBP_OOB_HDR_LEN && ob->answer[8] == 0 && ob->answer[9] == 0)
				want = IBP_OOB_HDR_LEN + (ob->answer[10] << 8 | ob->answer[11]);
		}
		ob->after = recv(fd, frame, sizeof(frame), 0);
	}
	close(fd);
	return NULL;
}

static void test_accept_other_version_answered_in_ours_and_named(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct old_build ob = {.job = 21};
	struct ibp_oob_msg ans = {0};
	const struct ibp_finding *f;
	char want[64];

	(void)state;
	test_step(&pol, "3", "200000", &hl, "t[1-3]");
	/* node 2's address speaks the old version */
	run_with_intruder(nr, &pol, &hl, ob.job, &ob.port, old_build_main, &ob);
	/* the answer: this build's version in a header any build reads, then a clean close */
	assert_true(ob.got > IBP_OOB_HDR_LEN);
	assert_int_equal(ob.after, 0);
	assert_int_equal(ibp_oob_header_version(ob.answer, (size_t)ob.got), IBP_OOB_VERSION);
	assert_int_equal(ibp_oob_decode(ob.answer, (size_t)ob.got, &ans), ob.got);
	assert_int_equal(ans.type, IBP_OOB_ERROR);
	assert_int_equal(ans.u.error.code, -EPROTONOSUPPORT);
	/* node 0: both links with t3 untested, said once, naming t3 and both versions */
	for (size_t i = 0; i < nr[0].res.n_links; i++)
		if (nr[0].res.links[i].from == 2 || nr[0].res.links[i].to == 2)
			assert_int_equal(nr[0].res.links[i].status, IBP_LINK_VERSION);
	f = ibp_test_find_code(&nr[0].out, "rdmatest_version_mismatch", NULL);
	assert_non_null(f);
	assert_string_equal(f->node, "t3");
	assert_int_equal(f->severity, IBP_SEV_WARN);
	assert_int_equal(f->fclass, IBP_CLASS_JOB);
	snprintf(want, sizeof(want), "protocol 17, t1 speaks %u", IBP_OOB_VERSION);
	assert_non_null(strstr(f->observed, want));
	assert_non_null(strstr(f->observed, "2 links not tested"));
	assert_null(ibp_test_find_code(&nr[0].out, "rdmatest_auth_failed", NULL));
	assert_null(ibp_test_find_code(&nr[0].out, "rdmatest_dropped_connections", NULL));
	assert_int_equal(nr[0].res.n_suspects, 0);
	assert_int_equal(ibp_findings_worst(&nr[0].out), IBP_SEV_WARN);
	/*
	 * Node 1 heard nothing from t3: its links with t3 still fail.  A claim
	 * from t3's address (anyone's, unauthenticated) changes only the links
	 * of the node that heard it.
	 */
	assert_int_equal(ibp_findings_worst(&nr[1].out), IBP_SEV_FAIL);
	assert_null(ibp_test_find_code(&nr[1].out, "rdmatest_version_mismatch", NULL));
	for (size_t i = 0; i < 2; i++)
		ibp_findings_release(&nr[i].out);
	ibp_hostlist_release(&hl);
}

/*
 * The sending side's rule: a claim of another version ends a link as such
 * only when no answer of this version failed authentication.  Node 2 of 3
 * is absent; on its address one program answers every HELLO in another
 * version, and (second run) another answers "refused" in this one.
 */
struct answerer {
	int lfd[2];
	unsigned version[2]; /* the version of each one's ERROR frame; 0: hangs up unanswered */
	volatile int stop;
};

static void *answerer_main(void *arg)
{
	struct answerer *a = arg;

	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd[2] = {{.fd = a->lfd[0], .events = POLLIN},
					{.fd = a->lfd[1], .events = POLLIN}};

		if (poll(pfd, 2, 20) <= 0)
			continue;
		for (int k = 0; k < 2; k++) {
			struct ibp_oob_msg m = {.type = IBP_OOB_ERROR};
			uint8_t buf[IBP_OOB_FRAME_MAX];
			int fd, n;

			if (!(pfd[k].revents & POLLIN))
				continue;
			fd = accept(a->lfd[k], NULL, NULL);
			if (fd < 0)
				continue;
			(void)recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (!a->version[k]) {
				close(fd); /* what a build before version 7 does to another's */
				continue;
			}
			m.u.error.code = -EACCES;
			strcpy(m.u.error.text, "refused");
			n = ibp_oob_encode(&m, buf, sizeof(buf));
			buf[4] = (uint8_t)(a->version[k] >> 8);
			buf[5] = (uint8_t)a->version[k];
			if (n > 0)
				(void)send(fd, buf, (size_t)n, MSG_NOSIGNAL);
			close(fd);
		}
	}
	return NULL;
}

static enum ibp_link_status link_to(const struct node_run *nr, uint32_t to)
{
	for (size_t i = 0; i < nr->res.n_links; i++)
		if (nr->res.links[i].to == to)
			return nr->res.links[i].status;
	return IBP_LINK_STATUS_COUNT;
}

static void run_answered(uint32_t job, unsigned first, unsigned second, struct node_run *nr)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct answerer a = {.version = {first, second}};
	uint16_t ports[2];
	pthread_t th;

	test_step(&pol, "2", "200000", &hl, "t[1-3]");
	assert_int_equal(ibp_oob_ports(job, 0, pol.test_port_lo, pol.test_port_hi, ports, 2), 2);
	for (int k = 0; k < 2; k++) {
		a.lfd[k] = bound_listener(addrs3[2], ports[k]);
		assert_true(a.lfd[k] >= 0);
	}
	assert_int_equal(pthread_create(&th, NULL, answerer_main, &a), 0);
	run_nodes(nr, 3, 2, &pol, &hl, job);
	__atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	close(a.lfd[0]);
	close(a.lfd[1]);
	ibp_hostlist_release(&hl);
}

static void test_connect_version_claim_never_hides_auth_failure(void **state)
{
	struct node_run nr[3];

	(void)state;
	/* only a claim of another version: the links to t3 are that, not tested */
	run_answered(22, IBP_OOB_VERSION + 1, IBP_OOB_VERSION + 1, nr);
	assert_int_equal(link_to(&nr[0], 2), IBP_LINK_VERSION);
	assert_int_equal(link_to(&nr[1], 2), IBP_LINK_VERSION);
	assert_non_null(ibp_test_find_code(&nr[1].out, "rdmatest_version_mismatch", NULL));
	for (size_t i = 0; i < 2; i++)
		ibp_findings_release(&nr[i].out);
	/* the same claim beside a refusal of this version: authentication failed */
	run_answered(23, IBP_OOB_VERSION + 1, IBP_OOB_VERSION, nr);
	assert_int_equal(link_to(&nr[0], 2), IBP_LINK_AUTH);
	assert_int_equal(link_to(&nr[1], 2), IBP_LINK_AUTH);
	assert_non_null(ibp_test_find_code(&nr[1].out, "rdmatest_auth_failed", NULL));
	assert_null(ibp_test_find_code(&nr[1].out, "rdmatest_version_mismatch", NULL));
	for (size_t i = 0; i < 2; i++)
		ibp_findings_release(&nr[i].out);
}

/*
 * A port that accepts every hello and closes it unanswered to the end (a
 * build before version 7 meeting this one, or another program): not a node
 * that is gone, which refuses or stays silent.  The link fails as an
 * authentication failure that says so, not as "unreachable", which the
 * blame would count against the node.
 */
static void test_connect_hung_up_to_the_end_is_no_unreachable(void **state)
{
	struct node_run nr[3];

	(void)state;
	run_answered(24, 0, 0, nr);
	for (size_t i = 0; i < 2; i++) {
		const struct ibp_rdmatest_link *l = NULL;

		for (size_t k = 0; k < nr[i].res.n_links; k++)
			if (nr[i].res.links[k].to == 2)
				l = &nr[i].res.links[k];
		assert_non_null(l);
		assert_int_equal(l->status, IBP_LINK_AUTH);
		assert_non_null(strstr(l->detail, "closed it unanswered until the deadline"));
		ibp_findings_release(&nr[i].out);
	}
}

struct flood {
	uint16_t port;
	volatile int stop;
	unsigned made;
};

/* Slowloris connections from node 0's first peer's address and from outside. */
static void *flood_main(void *arg)
{
	struct flood *f = arg;
	int held[32];
	size_t n = 0;

	for (size_t i = 0; i < 32; i++)
		held[i] = -1;
	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		const char *src = (f->made & 1) ? addrs3[2] : "127.0.0.1";
		int fd = dial_from(src, addrs3[0], f->port);

		if (fd >= 0) {
			(void)send(fd, "I", 1,
				   MSG_NOSIGNAL); /* one byte of a header, then nothing */
			if (held[n] >= 0)
				close(held[n]);
			held[n] = fd;
			n = (n + 1) % 32;
			f->made++;
		}
		usleep(100);
	}
	for (size_t i = 0; i < 32; i++)
		if (held[i] >= 0)
			close(held[i]);
	return NULL;
}

/* A flood from a peer's address and from outside never fails a healthy link. */
static void test_accept_flood_from_peer_address_every_link_passes(void **state)
{
	struct ibp_hostlist hl = {0};
	struct ibp_policy pol;
	struct node_run nr[3];
	struct flood f = {0};
	pthread_t th;

	(void)state;
	test_step(&pol, "4", "200000", &hl, "t[1-3]");
	assert_int_equal(ibp_oob_ports(21, 0, pol.test_port_lo, pol.test_port_hi, &f.port, 1), 1);
	assert_int_equal(pthread_create(&th, NULL, flood_main, &f), 0);
	/*
	 * Node 2, node 0's first peer, starts 300 ms late: node 0 listens
	 * for it meanwhile and the flood is sure to reach it.
	 */
	late_node = 2;
	run_nodes(nr, 3, SIZE_MAX, &pol, &hl, 21);
	late_node = SIZE_MAX;
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		ibp_findings_release(&nr[i].out);
	}
	print_message("# flood: %u connections made, node 0 dropped %u outside, %u from the "
		      "peer's address\n",
		      f.made, nr[0].res.dropped_outside, nr[0].res.dropped_peer);
	assert_true(f.made > 0);
	assert_true(nr[0].res.dropped_outside >= 1);
	assert_true(nr[0].res.dropped_peer >= 1);
	ibp_hostlist_release(&hl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan_every_n_consistent_ring_and_shift),
	    cmocka_unit_test(test_plan_bad_arguments_einval),
	    cmocka_unit_test(test_blame_table_lands_on_the_faulty_node),
	    cmocka_unit_test(test_blame_empty_or_passing_never_suspect),
	    cmocka_unit_test(test_blame_auth_failures_blame_nobody),
	    cmocka_unit_test(test_blame_all_slow_only_when_every_link_slow),
	    cmocka_unit_test(test_run_three_nodes_in_threads_pass),
	    cmocka_unit_test(test_run_late_peer_one_hello_per_link),
	    cmocka_unit_test(test_run_fingerprints_compared_odd_node_says_it),
	    cmocka_unit_test(test_run_eight_nodes_three_odd_said_once_step_wide),
	    cmocka_unit_test(test_run_eight_leaves_told_parent_takes_no_part),
	    cmocka_unit_test(test_ring_order_follows_the_plans_ring),
	    cmocka_unit_test(test_sum_tree_every_n_ranges_and_depth),
	    cmocka_unit_test(test_run_missing_node_blamed_by_both_others),
	    cmocka_unit_test(test_run_bad_nodelist_job_finding),
	    cmocka_unit_test(test_run_garbage_connections_dropped_verdict_unchanged),
	    cmocka_unit_test(test_run_slow_links_bandwidth_and_latency_named),
	    cmocka_unit_test(test_run_rail_count_mismatch_named),
	    cmocka_unit_test(test_run_slow_sample_measured_again_passes),
	    cmocka_unit_test(test_run_slow_every_measurement_fails_with_figures),
	    cmocka_unit_test(test_run_slow_on_busy_node_passes_and_warns),
	    cmocka_unit_test(test_run_slow_rail_measured_again_alone),
	    cmocka_unit_test(test_run_munge_unreachable_setup_failure_at_once),
	    cmocka_unit_test(test_run_caller_listeners_used_left_open_shut_down),
	    cmocka_unit_test(test_run_no_caller_listener_setup_failure),
	    cmocka_unit_test(test_accept_stranger_gets_refused_and_nothing_else),
	    cmocka_unit_test(test_accept_ring_hello_without_ring_answered_no_part),
	    cmocka_unit_test(test_accept_flood_from_peer_address_every_link_passes),
	    cmocka_unit_test(test_accept_other_version_answered_in_ours_and_named),
	    cmocka_unit_test(test_connect_version_claim_never_hides_auth_failure),
	    cmocka_unit_test(test_connect_hung_up_to_the_end_is_no_unreachable),
	    cmocka_unit_test(test_connect_silent_candidates_cost_nothing),
	};

	addrs_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
