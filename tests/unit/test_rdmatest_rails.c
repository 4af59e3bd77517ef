/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the test's rails (helpers/rdmatest/rdmatest_rails.c) and of
 * whole runs of several rails in threads of this process over loopback
 * (insecure: no munged needed): a rail that fails on one node is named on
 * that node and rail only; two rails whose ports are each on the other's
 * network are named crossed; the rails' reach for NCCL_CROSS_NIC is a
 * note.  The crossing comes from a transport that wraps the socket one
 * and plays a fabric of rail networks: a probe reaches a port on the
 * same network, a link's data path between two networks fails.  And the
 * socket transport's steps op (every rail's step in one poll loop) alone.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/deadline.h"

#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_rails.h"
#include "ibprep/transport.h"

/* ---- the rails of a port list ---- */

static void test_rails_netdev_addr_lo_and_missing(void **state)
{
	char addr[64];

	(void)state;
	assert_int_equal(ibp_rails_netdev_addr("lo", addr, sizeof(addr)), 0);
	assert_string_equal(addr, "127.0.0.1");
	assert_int_equal(ibp_rails_netdev_addr("lo", addr, 4), -ENOSPC);
	assert_int_equal(ibp_rails_netdev_addr("ibp-none9", addr, sizeof(addr)), -ENODEV);
	assert_int_equal(ibp_rails_netdev_addr("", addr, sizeof(addr)), -ENODEV);
	assert_int_equal(
	    ibp_rails_netdev_addr("a-name-far-too-long-for-ifnamsiz", addr, sizeof(addr)), -ENODEV);
}

static void test_rails_drivable_verbs_ib_roce_only(void **state)
{
	(void)state;
	assert_true(ibp_rails_drivable(IBP_TX_VERBS, IBP_FABRIC_IB));
	assert_true(ibp_rails_drivable(IBP_TX_VERBS, IBP_FABRIC_ROCE));
	assert_false(ibp_rails_drivable(IBP_TX_VERBS, IBP_FABRIC_EFA));
	assert_false(ibp_rails_drivable(IBP_TX_VERBS, IBP_FABRIC_SLINGSHOT));
	assert_false(ibp_rails_drivable(IBP_TX_VERBS, IBP_FABRIC_OTHER));
	assert_true(ibp_rails_drivable(IBP_TX_SOCKET, IBP_FABRIC_EFA));
}

/*
 * The socket transport's rails: each port over its netdev's address, no
 * rate; none when no netdev has an address (the node's own address then);
 * a netdev without one keeps its name and no address (its links fail).
 */
static void test_rails_socket_ports_addresses_or_none(void **state)
{
	struct ibp_tx_port p[3];
	const char *nd[3] = {"lo", "ibp-none9", ""};
	const char *none[3] = {"ibp-none9", "", "ibp-none8"};

	(void)state;
	memset(p, 0, sizeof(p));
	for (int i = 0; i < 3; i++)
		p[i].rate_gbps = 400;
	assert_int_equal(ibp_rails_socket_ports(p, nd, 3), 3);
	assert_string_equal(p[0].addr, "127.0.0.1");
	assert_string_equal(p[0].ifname, "lo");
	assert_true(p[0].rate_gbps == 0);
	assert_string_equal(p[1].addr, "");
	assert_string_equal(p[1].ifname, "ibp-none9");
	assert_string_equal(p[2].addr, "");
	assert_string_equal(p[2].ifname, "-");
	assert_int_equal(ibp_rails_socket_ports(p, none, 3), 0);
	for (int i = 0; i < 3; i++)
		assert_true(!p[i].addr[0] && !p[i].ifname[0]);
}

/* ---- whole runs ---- */

#define NODES 3
#define RAILS 3

struct node_run {
	struct ibp_rdmatest_config cfg;
	struct ibp_findings out;
	struct ibp_rdmatest_result res;
	struct ibp_tx_port ports[RAILS];
	int rc;
	pthread_t th;
};

/*
 * Node I's rail K: 127.A.(B + K).(1 + I), a /24 per rail, A.B from the PID
 * (other test copies).
 */
static char addr_of[NODES][RAILS][24];
static const char *node_addrs[NODES];

static void addrs_init(void)
{
	unsigned pid = (unsigned)getpid();

	for (int i = 0; i < NODES; i++) {
		for (int k = 0; k < RAILS; k++)
			snprintf(addr_of[i][k], sizeof(addr_of[i][k]), "127.%u.%u.%d",
				 64 + pid % 128, (pid / 128) % 200 + (unsigned)k, 1 + i);
		node_addrs[i] = addr_of[i][0];
	}
}

/*
 * The fabric the wrapping transport plays: NET[i][k] is the rail network
 * node I's rail-K port sits on (normally K).  A data path whose two ends
 * sit on different networks fails as an unanswered connection does; a
 * probe reaches a port on its own network only.
 */
static int net[NODES][RAILS];

static bool where(const char *addr, int *node, int *rail)
{
	for (int i = 0; i < NODES; i++)
		for (int k = 0; k < RAILS; k++)
			if (!strcmp(addr, addr_of[i][k])) {
				*node = i;
				*rail = k;
				return true;
			}
	return false;
}

static bool ep_where(const struct ibp_endpoint *ep, int *node, int *rail)
{
	char a[24];

	snprintf(a, sizeof(a), "%u.%u.%u.%u", ep->gid[12], ep->gid[13], ep->gid[14], ep->gid[15]);
	return where(a, node, rail);
}

/* The tx's own address: what open was given (kept beside each tx). */
struct wrapped {
	struct ibp_tx *tx;
	int node, rail;
};

static int w_open(const struct ibp_tx_port *p, const struct ibp_tx_opts *o, struct ibp_tx **t)
{
	struct wrapped *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	if (!where(p->addr, &w->node, &w->rail))
		w->node = w->rail = -1;
	rc = ibp_transport_socket.open(p, o, &w->tx);
	if (rc) {
		free(w);
		*t = NULL;
		return rc;
	}
	*t = (struct ibp_tx *)w;
	return 0;
}

static struct ibp_tx *inner(struct ibp_tx *t)
{
	return ((struct wrapped *)t)->tx;
}

static int w_endpoint(struct ibp_tx *t, struct ibp_endpoint *e)
{
	return ibp_transport_socket.endpoint(inner(t), e);
}

/*
 * Node SLOW_NODE's rail SLOW_RAIL sends its first out-link's HELLO SLOW_MS
 * late (a node whose CPUs are busy): a healthy path, merely slow.
 */
static int slow_node = -1, slow_rail, slow_ms;
static atomic_bool slow_done;
/* A data path between two networks fails at its deadline, as an unanswered HELLO does. */
static bool cross_waits;
/* When r2's rail 1 first probed a rail-2 port, and when its own rail-1 out-link's path failed. */
static _Atomic int64_t t_probe_12, t_fail_1;

static void sleep_until(int64_t t)
{
	int64_t left = t - ibp_now_ns();

	if (left > 0)
		nanosleep(
		    &(struct timespec){.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000},
		    NULL);
}

static int w_connect(struct ibp_tx *t, const struct ibp_endpoint *e, enum ibp_tx_role r, int64_t d)
{
	struct wrapped *w = (struct wrapped *)t;
	int pn, pr;

	if (w->node >= 0 && ep_where(e, &pn, &pr) && net[w->node][w->rail] != net[pn][pr]) {
		int64_t none = 0;

		if (!cross_waits)
			return -ETIMEDOUT; /* at once: the suite need not wait out the round */
		sleep_until(d);
		if (w->node == 1 && w->rail == 1 && r == IBP_TX_SENDER)
			atomic_compare_exchange_strong(&t_fail_1, &none, ibp_now_ns());
		return -ETIMEDOUT;
	}
	if (w->node == slow_node && w->rail == slow_rail && r == IBP_TX_SENDER &&
	    !atomic_exchange(&slow_done, true))
		sleep_until(ibp_now_ns() + (int64_t)slow_ms * IBP_NS_PER_MS);
	return ibp_transport_socket.connect(inner(t), e, r, d);
}

/* The longest pattern each rail's sender sent (any node). */
static _Atomic size_t pattern_seen[RAILS];

static int w_send_pattern(struct ibp_tx *t, uint64_t s, size_t l, int64_t d)
{
	struct wrapped *w = (struct wrapped *)t;

	if (w->rail >= 0) {
		size_t seen = atomic_load(&pattern_seen[w->rail]);

		while (l > seen && !atomic_compare_exchange_weak(&pattern_seen[w->rail], &seen, l))
			;
	}
	return ibp_transport_socket.send_pattern(inner(t), s, l, d);
}

static int w_recv_pattern(struct ibp_tx *t, uint64_t s, size_t l, int64_t d, size_t *bad)
{
	return ibp_transport_socket.recv_pattern(inner(t), s, l, d, bad);
}

/* The largest burst each rail's sender was asked for (any node). */
static _Atomic uint64_t burst_seen[RAILS];

static int w_bw_send(struct ibp_tx *t, uint64_t b, int64_t d, uint64_t *ns)
{
	struct wrapped *w = (struct wrapped *)t;

	if (w->rail >= 0) {
		uint64_t seen = atomic_load(&burst_seen[w->rail]);

		while (b > seen && !atomic_compare_exchange_weak(&burst_seen[w->rail], &seen, b))
			;
	}
	return ibp_transport_socket.bw_send(inner(t), b, d, ns);
}

static int w_bw_recv(struct ibp_tx *t, uint64_t b, int64_t d)
{
	return ibp_transport_socket.bw_recv(inner(t), b, d);
}

static int w_lat_ping(struct ibp_tx *t, unsigned i, int64_t d, uint64_t *ns)
{
	return ibp_transport_socket.lat_ping(inner(t), i, d, ns);
}

static int w_lat_pong(struct ibp_tx *t, unsigned i, int64_t d)
{
	return ibp_transport_socket.lat_pong(inner(t), i, d);
}

static void w_close(struct ibp_tx *t)
{
	if (!t)
		return;
	ibp_transport_socket.close(inner(t));
	free(t);
}

static int w_idle_fd(const struct ibp_tx *t)
{
	return ibp_transport_socket.idle_fd(((const struct wrapped *)t)->tx);
}

static void w_idle(struct ibp_tx *t)
{
	ibp_transport_socket.idle(inner(t));
}

static void w_cache_free(struct ibp_tx_cache *c)
{
	ibp_transport_socket.cache_free(c);
}

/*
 * A probe: a connected socket pair end when the two ports share a network
 * (SO_ERROR 0: reached), else a pipe's write end, which polls ready at once
 * and is no socket (SO_ERROR fails: not reached).
 */
static int w_probe(const struct ibp_tx_port *from, const struct ibp_endpoint *to, unsigned rail,
		   struct ibp_tx_probe *pr)
{
	int fn, fr, tn, tr, sv[2];

	(void)rail;
	memset(pr, 0, sizeof(*pr));
	pr->fd = -1;
	pr->events = POLLOUT;

	if (!where(from->addr, &fn, &fr) || !ep_where(to, &tn, &tr))
		return -EINVAL;
	if (fn == 1 && fr == 1 && tr == 2) {
		int64_t none = 0;

		atomic_compare_exchange_strong(&t_probe_12, &none, ibp_now_ns());
	}
	if (net[fn][fr] == net[tn][tr]) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return -errno;
		close(sv[1]);
		pr->fd = sv[0];
		return 0;
	}
	if (pipe(sv))
		return -errno;
	close(sv[0]);
	pr->fd = sv[1];
	return 0;
}

static const struct ibp_transport_ops fabric = {
    .name = "socket",
    .kind = IBP_TX_SOCKET,
    .open = w_open,
    .endpoint = w_endpoint,
    .connect = w_connect,
    .send_pattern = w_send_pattern,
    .recv_pattern = w_recv_pattern,
    .bw_send = w_bw_send,
    .bw_recv = w_bw_recv,
    .lat_ping = w_lat_ping,
    .lat_pong = w_lat_pong,
    .close = w_close,
    .probe = w_probe,
    .idle_fd = w_idle_fd,
    .idle = w_idle,
    .cache_free = w_cache_free,
};

static void *node_main(void *arg)
{
	struct node_run *nr = arg;

	nr->rc = ibp_rdmatest_run(&nr->cfg, &nr->out, &nr->res);
	return NULL;
}

/* Node 1's rails 1 and 2 carry each other's addresses (run_rails). */
static bool swap_addrs;

/*
 * NODES nodes of RAILS rails each over loopback (rail K of node I on its own
 * address, prefix 24, device "ibK", netdev "lo"), through the wrapping
 * transport.  NOADDR_NODE's rail NOADDR_RAIL has a netdev without an
 * address (-1: none).
 */
/* The nodes' buffer and burst (the plugin's are 1 MiB and 8 MiB). */
static size_t run_buf = 4096;
static uint64_t run_burst = 16384;
static const char *run_timeout = "4"; /* test_timeout (s) */

static void run_rails(struct node_run *nr, uint32_t job, int noaddr_node, int noaddr_rail)
{
	static struct ibp_hostlist hl;
	static struct ibp_policy pol;
	char err[128];

	ibp_policy_init(&pol);
	assert_int_equal(ibp_policy_set(&pol, "test_ports", "30000-30999", err, sizeof(err)), 0);
	assert_int_equal(ibp_policy_set(&pol, "test_timeout", run_timeout, err, sizeof(err)), 0);
	assert_int_equal(ibp_policy_set(&pol, "test_max_lat_us", "500000", err, sizeof(err)), 0);
	ibp_hostlist_release(&hl);
	assert_int_equal(ibp_hostlist_expand("r[1-3]", 0, &hl, err, sizeof(err)), 0);
	for (int i = 0; i < NODES; i++) {
		struct node_run *n = &nr[i];

		memset(n, 0, sizeof(*n));
		ibp_findings_init(&n->out);
		for (int k = 0; k < RAILS; k++) {
			struct ibp_tx_port *p = &n->ports[k];

			snprintf(p->device, sizeof(p->device), "ib%d", k);
			p->port = 1;
			p->gid_index = -1;
			snprintf(p->ifname, sizeof(p->ifname), "lo");
			p->prefix = 24;
			if (i != noaddr_node || k != noaddr_rail)
				snprintf(p->addr, sizeof(p->addr), "%s",
					 addr_of[i][swap_addrs && i == 1 && k ? 3 - k : k]);
		}
		n->cfg.nodes = &hl;
		n->cfg.index = (size_t)i;
		n->cfg.job = job;
		n->cfg.uid = 1000;
		n->cfg.policy = &pol;
		n->cfg.transport = &fabric;
		n->cfg.insecure = true;
		n->cfg.addrs = node_addrs;
		n->cfg.ports = n->ports;
		n->cfg.n_ports = RAILS;
		n->cfg.buf_len = run_buf;
		n->cfg.burst_bytes = run_burst;
		assert_int_equal(pthread_create(&n->th, NULL, node_main, n), 0);
	}
	for (int i = 0; i < NODES; i++)
		pthread_join(nr[i].th, NULL);
}

static size_t count(const struct ibp_findings *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += !strcmp(f->v[i].code, code);
	return n;
}

static const struct ibp_finding *find(const struct ibp_findings *f, const char *code)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].code, code))
			return &f->v[i];
	return NULL;
}

static size_t landing_probes(const struct ibp_rdmatest_result *res)
{
	size_t n = 0;

	for (size_t i = 0; i < res->n_probes; i++)
		n += res->probes[i].kind == IBP_RDMATEST_PROBE_LANDING;
	return n;
}

static void release(struct node_run *nr)
{
	for (int i = 0; i < NODES; i++)
		ibp_findings_release(&nr[i].out);
}

static void fabric_rails(void)
{
	for (int i = 0; i < NODES; i++)
		for (int k = 0; k < RAILS; k++)
			net[i][k] = k;
}

/* Every rail by default: RAILS x 2 rounds x 2 directions, all pass; the isolated rails' note. */
static void test_run_every_rail_by_default_note_isolated(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	fabric_rails();
	for (int k = 0; k < RAILS; k++)
		atomic_store(&burst_seen[k], 0);
	run_rails(nr, 301, -1, -1);
	/*
	 * No floor judges a socket rail's burst: rail 0 measures with the whole
	 * burst, the others are datagram exchanges with no burst at all (their
	 * pattern is what checks their data), and no rate: 0, not measured
	 */
	assert_int_equal(burst_seen[0], 16384);
	for (int k = 1; k < RAILS; k++)
		assert_int_equal(burst_seen[k], 0);
	for (int i = 0; i < NODES; i++) {
		const struct ibp_finding *note = find(&nr[i].out, "rdmatest_rails_isolated");

		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		assert_int_equal(nr[i].res.n_links, RAILS * 2 * 2);
		for (size_t l = 0; l < nr[i].res.n_links; l++) {
			const struct ibp_rdmatest_link *k = &nr[i].res.links[l];

			assert_int_equal(k->status, IBP_LINK_PASS);
			if (k->rail)
				assert_true(k->gbps == 0); /* not measured */
			else
				assert_true(k->gbps > 0);
			assert_true(k->lat_us > 0);
		}
		/* one across probe per round, none reached: NCCL_CROSS_NIC=0, a note */
		assert_non_null(note);
		assert_int_equal(note->severity, IBP_SEV_OK);
		assert_non_null(strstr(note->fix, "NCCL_CROSS_NIC=0"));
		assert_int_equal(count(&nr[i].out, "rdmatest_rails_joined"), 0);
		assert_int_equal(count(&nr[i].out, "rdmatest_rails_crossed"), 0);
	}
	release(nr);
}

/*
 * A buffer bigger than IBP_RDMATEST_RAIL_PATTERN: rail 0 sends its whole
 * pattern and burst; the other socket rails (datagrams) a pattern of
 * IBP_TX_DGRAM_PATTERN, checked, and no burst, and they pass.
 */
static void test_run_rails_beyond_0_lighter(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	fabric_rails();
	for (int k = 0; k < RAILS; k++) {
		atomic_store(&burst_seen[k], 0);
		atomic_store(&pattern_seen[k], 0);
	}
	run_buf = 2 * IBP_RDMATEST_RAIL_PATTERN;
	run_burst = 4 * (uint64_t)run_buf;
	run_rails(nr, 309, -1, -1);
	run_buf = 4096;
	run_burst = 16384;
	assert_int_equal(pattern_seen[0], 2 * IBP_RDMATEST_RAIL_PATTERN);
	assert_int_equal(burst_seen[0], 8 * IBP_RDMATEST_RAIL_PATTERN);
	for (int k = 1; k < RAILS; k++) {
		assert_int_equal(pattern_seen[k], IBP_TX_DGRAM_PATTERN);
		assert_int_equal(burst_seen[k], 0);
	}
	for (int i = 0; i < NODES; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		assert_int_equal(nr[i].res.n_links, RAILS * 2 * 2);
		for (size_t l = 0; l < nr[i].res.n_links; l++)
			assert_int_equal(nr[i].res.links[l].status, IBP_LINK_PASS);
	}
	release(nr);
}

/* All rails on one network: the note says they reach each other. */
static void test_run_joined_rails_note(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	memset(net, 0, sizeof(net));
	run_rails(nr, 302, -1, -1);
	for (int i = 0; i < NODES; i++) {
		assert_true(nr[i].res.pass);
		assert_int_equal(count(&nr[i].out, "rdmatest_rails_joined"), 1);
		assert_int_equal(count(&nr[i].out, "rdmatest_rails_isolated"), 0);
	}
	release(nr);
}

/*
 * Every node's run: done (rc 0) with the verdict PASS, CODE once and about
 * r2's ib1 (its fix holding FIX, unless NULL), and no finding whose code is
 * in ABSENT (NULL-terminated).
 */
static void assert_every_node_names_r2_ib1(const struct node_run *nr, bool pass, const char *code,
					   const char *fix, const char *const *absent)
{
	for (int i = 0; i < NODES; i++) {
		const struct ibp_finding *f = find(&nr[i].out, code);

		assert_int_equal(nr[i].rc, 0);
		assert_int_equal(nr[i].res.pass, pass);
		assert_non_null(f);
		assert_string_equal(f->node, "r2");
		assert_string_equal(f->device, "ib1");
		if (fix)
			assert_non_null(strstr(f->fix, fix));
		assert_int_equal(count(&nr[i].out, code), 1);
		for (const char *const *a = absent; *a; a++)
			assert_int_equal(count(&nr[i].out, *a), 0);
	}
}

/*
 * One rail of one node fails (r2's rail 1 has no address): every node names
 * r2 and ib1 on rail 1, once, and nothing else fails: not r2 as a whole,
 * not its peers, not a link.
 */
static void test_run_one_rail_down_named_on_that_rail_only(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	fabric_rails();
	run_rails(nr, 303, 1, 1);
	assert_every_node_names_r2_ib1(
	    nr, false, "rdmatest_rail_failed", NULL,
	    (const char *const[]){"rdmatest_node_failed", "rdmatest_link_failed", NULL});
	for (int i = 0; i < NODES; i++) {
		for (size_t l = 0; l < nr[i].res.n_links; l++)
			if (nr[i].res.links[l].rail != 1)
				assert_int_equal(nr[i].res.links[l].status, IBP_LINK_PASS);
	}
	release(nr);
}

/*
 * r2's ports of rails 1 and 2 each sit on the other's network: every node
 * names r2's ib1 and ib2 as crossed, with the cables to swap, and fails
 * nothing else.
 */
static void test_run_crossed_rails_named_by_every_node(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	fabric_rails();
	net[1][1] = 2;
	net[1][2] = 1;
	run_rails(nr, 304, -1, -1);
	assert_true(landing_probes(&nr[1].res) > 0); /* failed paths: probed at once */
	assert_every_node_names_r2_ib1(
	    nr, false, "rdmatest_rails_crossed", "swap the cables of ib1 and ib2",
	    (const char *const[]){"rdmatest_rail_failed", "rdmatest_node_failed",
				  "rdmatest_link_failed", NULL});
	release(nr);
}

/*
 * r2's rail 2 sends its first HELLO 450 ms late (past IBP_RT_LANDING_MS,
 * well before half-way to its connection's deadline: about 2 s with a 20 s
 * test): every link passes and r2 made no landing probe, only the across
 * ones (one a round).
 */
static void test_run_slow_rail_no_landing_probe(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	fabric_rails();
	atomic_store(&slow_done, false);
	slow_node = 1;
	slow_rail = 2;
	slow_ms = 450;
	run_timeout = "20";
	run_rails(nr, 306, -1, -1);
	slow_node = -1;
	run_timeout = "4";
	assert_true(atomic_load(&slow_done));
	for (int i = 0; i < NODES; i++) {
		assert_int_equal(nr[i].rc, 0);
		assert_true(nr[i].res.pass);
		for (size_t l = 0; l < nr[i].res.n_links; l++)
			assert_int_equal(nr[i].res.links[l].status, IBP_LINK_PASS);
		assert_int_equal(landing_probes(&nr[i].res), 0);
		assert_int_equal(nr[i].res.n_probes, 2); /* the across probes */
	}
	release(nr);
}

/*
 * Crossed rails whose paths fail only at their deadline (the HELLO goes
 * unanswered): r2 probes where its rail 1 lands half-way there, before the
 * path fails, and every node still names the crossing.
 */
static void test_run_late_crossed_rails_probed_before_they_fail(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	fabric_rails();
	net[1][1] = 2;
	net[1][2] = 1;
	cross_waits = true;
	atomic_store(&t_probe_12, 0);
	atomic_store(&t_fail_1, 0);
	/* a 10 s test: the probe falls due about 1.2 s before the path fails,
	 * room for a loaded 2-core machine under TSAN (4 s left 0.5 s) */
	run_timeout = "10";
	run_rails(nr, 307, -1, -1);
	run_timeout = "4";
	cross_waits = false;
	assert_true(atomic_load(&t_probe_12) > 0);
	assert_true(atomic_load(&t_fail_1) > 0);
	assert_true(atomic_load(&t_probe_12) < atomic_load(&t_fail_1));
	assert_true(landing_probes(&nr[1].res) > 0);
	assert_every_node_names_r2_ib1(nr, false, "rdmatest_rails_crossed", NULL,
				       (const char *const[]){"rdmatest_rail_failed", NULL});
	release(nr);
}

/*
 * r2's rails 1 and 2 carry each other's addresses, each port on its own
 * rail's wire: the links pass, and every node warns that r2's ib1 and ib2
 * look crossed by their addresses.
 */
static void test_run_rails_crossed_by_addresses_warned(void **state)
{
	struct node_run nr[NODES];

	(void)state;
	fabric_rails();
	/* the port with rail 2's address is on rail 1's wire, and back */
	net[1][2] = 1;
	net[1][1] = 2;
	swap_addrs = true;
	run_rails(nr, 305, -1, -1);
	swap_addrs = false;
	assert_every_node_names_r2_ib1(nr, true, "rdmatest_rails_crossed", "of ib1 and ib2",
				       (const char *const[]){NULL});
	for (int i = 0; i < NODES; i++)
		assert_int_equal(find(&nr[i].out, "rdmatest_rails_crossed")->severity,
				 IBP_SEV_WARN);
	release(nr);
}

/* ---- the socket transport's steps: every rail's step in one poll loop ---- */

enum { SR = 3 };

struct steps_side {
	struct ibp_tx *tx[SR];
	const struct ibp_endpoint *peer; /* the receivers' endpoints (the sender's side) */
	enum ibp_tx_role role;
	uint64_t seed[SR];
	struct ibp_tx_step conn[SR], pat[SR], burst[SR], rtt[SR];
	_Atomic unsigned done;
};

static void steps_done(const struct ibp_tx_step *s)
{
	struct steps_side *d = s->arg;

	atomic_fetch_add(&d->done, 1);
}

static void steps_fill(struct steps_side *d, struct ibp_tx_step *v, enum ibp_tx_step_kind kind,
		       size_t n)
{
	for (size_t k = 0; k < n; k++) {
		memset(&v[k], 0, sizeof(v[k]));
		v[k].tx = d->tx[k];
		v[k].kind = kind;
		v[k].role = d->role;
		v[k].peer = &d->peer[k];
		v[k].seed = d->seed[k];
		v[k].len = 40000; /* three pieces of the transport's 16 KiB */
		v[k].bytes = 300000;
		v[k].iters = 5;
		v[k].deadline = ibp_deadline_after_s(ibp_now_ns(), 5);
		v[k].done = steps_done;
		v[k].arg = d;
		v[k].index = k;
	}
}

/* Connect, pattern, then the burst and round trips on the rails whose pattern passed (0, 1). */
static void *steps_main(void *arg)
{
	struct steps_side *d = arg;

	steps_fill(d, d->conn, IBP_TX_STEP_CONNECT, SR);
	ibp_transport_socket.steps(d->conn, SR);
	steps_fill(d, d->pat, IBP_TX_STEP_PATTERN, SR);
	ibp_transport_socket.steps(d->pat, SR);
	steps_fill(d, d->burst, IBP_TX_STEP_BURST, SR - 1);
	ibp_transport_socket.steps(d->burst, SR - 1);
	steps_fill(d, d->rtt, IBP_TX_STEP_RTT, SR - 1);
	ibp_transport_socket.steps(d->rtt, SR - 1);
	return NULL;
}

static void test_socket_steps_every_stage(void **state)
{
	struct steps_side snd = {.role = IBP_TX_SENDER}, rcv = {.role = IBP_TX_RECEIVER};
	struct ibp_endpoint eps[SR];
	struct ibp_tx_port port = {0};
	char err_s[SR][256], err_r[SR][256];
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	pthread_t ts, tr;
	int stranger;

	(void)state;
	snprintf(port.addr, sizeof(port.addr), "127.0.0.1");
	for (size_t k = 0; k < SR; k++) {
		struct ibp_tx_opts os = {
		    .buf_len = 1 << 17, .err = err_s[k], .errlen = 256, .sender = true};
		struct ibp_tx_opts orx = {.buf_len = 1 << 17, .err = err_r[k], .errlen = 256};

		assert_int_equal(ibp_transport_socket.open(&port, &os, &snd.tx[k]), 0);
		assert_int_equal(ibp_transport_socket.open(&port, &orx, &rcv.tx[k]), 0);
		assert_int_equal(ibp_transport_socket.endpoint(rcv.tx[k], &eps[k]), 0);
		snd.seed[k] = rcv.seed[k] = 1000 + k;
	}
	rcv.seed[2] ^= 1; /* rail 2's receiver expects another pattern: corrupt */
	snd.peer = rcv.peer = eps;
	/* a stranger first on rail 0: connected, a wrong token; the receiver goes on to the sender */
	stranger = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_port = htons(eps[0].tcp_port);
	assert_int_equal(connect(stranger, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(write(stranger, "12345678", 8), 8);
	assert_int_equal(pthread_create(&tr, NULL, steps_main, &rcv), 0);
	assert_int_equal(pthread_create(&ts, NULL, steps_main, &snd), 0);
	pthread_join(ts, NULL);
	pthread_join(tr, NULL);
	close(stranger);
	for (size_t k = 0; k < SR; k++) {
		assert_int_equal(snd.conn[k].rc, 0);
		assert_int_equal(rcv.conn[k].rc, 0);
		assert_int_equal(snd.pat[k].rc, 0);
	}
	assert_int_equal(rcv.pat[0].rc, 0);
	assert_int_equal(rcv.pat[1].rc, 0);
	assert_int_equal(rcv.pat[2].rc, -EBADMSG);
	assert_true(rcv.pat[2].bad < 8);
	assert_non_null(strstr(err_r[2], "pattern differs at byte"));
	for (size_t k = 0; k < SR - 1; k++) {
		assert_int_equal(snd.burst[k].rc, 0);
		assert_int_equal(rcv.burst[k].rc, 0);
		assert_true(snd.burst[k].ns > 0);
		assert_int_equal(snd.rtt[k].rc, 0);
		assert_int_equal(rcv.rtt[k].rc, 0);
		assert_true(snd.rtt[k].ns > 0);
	}
	/* every step told its end once: connect and pattern on 3 rails, burst and rtt on 2 */
	assert_int_equal(atomic_load(&snd.done), 2 * SR + 2 * (SR - 1));
	assert_int_equal(atomic_load(&rcv.done), 2 * SR + 2 * (SR - 1));
	for (size_t k = 0; k < SR; k++) {
		ibp_transport_socket.close(snd.tx[k]);
		ibp_transport_socket.close(rcv.tx[k]);
	}
}

/* A receiver whose sender never comes, and a sender whose receiver does not listen: by the deadline, said. */
static void test_socket_steps_deadline_and_refused(void **state)
{
	struct ibp_tx *rx, *tx, *gone;
	struct ibp_endpoint ep, ep_gone;
	struct ibp_tx_port port = {0};
	char err_r[256], err_s[256], err_g[256];
	struct ibp_tx_opts orx = {.buf_len = 4096, .err = err_r, .errlen = sizeof(err_r)};
	struct ibp_tx_opts ogone = {.buf_len = 4096, .err = err_g, .errlen = sizeof(err_g)};
	struct ibp_tx_opts os = {
	    .buf_len = 4096, .err = err_s, .errlen = sizeof(err_s), .sender = true};
	struct ibp_tx_step v[2];
	int64_t t0 = ibp_now_ns();

	(void)state;
	snprintf(port.addr, sizeof(port.addr), "127.0.0.1");
	assert_int_equal(ibp_transport_socket.open(&port, &orx, &rx), 0);
	assert_int_equal(ibp_transport_socket.open(&port, &os, &tx), 0);
	assert_int_equal(ibp_transport_socket.open(&port, &ogone, &gone), 0);
	assert_int_equal(ibp_transport_socket.endpoint(rx, &ep), 0);
	assert_int_equal(ibp_transport_socket.endpoint(gone, &ep_gone), 0);
	ibp_transport_socket.close(gone); /* its port: nobody listens there now */
	memset(v, 0, sizeof(v));
	v[0] = (struct ibp_tx_step){.tx = rx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_RECEIVER,
				    .peer = &ep,
				    .deadline = t0 + 300 * IBP_NS_PER_MS};
	v[1] = (struct ibp_tx_step){.tx = tx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_SENDER,
				    .peer = &ep_gone,
				    .deadline = t0 + 300 * IBP_NS_PER_MS};
	ibp_transport_socket.steps(v, 2);
	assert_int_equal(v[0].rc, -ETIMEDOUT);
	assert_true(ibp_now_ns() - t0 >= 300 * IBP_NS_PER_MS);
	assert_string_equal(err_r, "no data connection from the sender: Connection timed out");
	assert_int_equal(v[1].rc, -ECONNREFUSED);
	assert_non_null(strstr(err_s, "connect 127.0.0.1:"));
	assert_non_null(strstr(err_s, "Connection refused"));
	ibp_transport_socket.close(rx);
	ibp_transport_socket.close(tx);
}

/* ---- the datagram data path (rails beyond rail 0) ---- */

static void tok_bytes(const struct ibp_endpoint *ep, uint8_t t[8])
{
	for (int i = 0; i < 4; i++) {
		t[i] = (uint8_t)(ep->rkey >> (24 - 8 * i));
		t[4 + i] = (uint8_t)(ep->qpn >> (24 - 8 * i));
	}
}

static void test_dgram_codec_every_length_checked(void **state)
{
	uint8_t buf[64 + IBP_TX_DGRAM_PATTERN], to[8] = {1, 2, 3, 4, 5, 6, 7, 8}, from[8] = {9},
						got_to[8], got_from[8], pat[16] = {0xab};
	const uint8_t *p;
	unsigned type, rail;
	uint32_t seq;
	size_t n, len;

	(void)state;
	n = ibp_tx_dgram_encode(buf, sizeof(buf), 1, 3, 7, to, from, pat, sizeof(pat));
	assert_int_equal(n, 28 + sizeof(pat));
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n, &type, &rail, &seq, got_to, got_from, &p, &len), 0);
	assert_int_equal(type, 1);
	assert_int_equal(rail, 3);
	assert_int_equal(seq, 7);
	assert_int_equal(len, sizeof(pat));
	assert_memory_equal(got_to, to, 8);
	assert_memory_equal(got_from, from, 8);
	assert_memory_equal(p, pat, sizeof(pat));
	/* one byte short, one too many, a bad magic, an unknown type: refused */
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n - 1, &type, &rail, &seq, got_to, got_from, &p, &len),
	    -EBADMSG);
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n + 1, &type, &rail, &seq, got_to, got_from, &p, &len),
	    -EBADMSG);
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, 27, &type, &rail, &seq, got_to, got_from, &p, &len), -EBADMSG);
	buf[0] ^= 1;
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n, &type, &rail, &seq, got_to, got_from, &p, &len), -EBADMSG);
	buf[0] ^= 1;
	buf[4] = 6; /* no such type */
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n, &type, &rail, &seq, got_to, got_from, &p, &len), -EBADMSG);
	buf[4] = 4; /* a PROBE (protocol 22) carries no pattern either */
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n, &type, &rail, &seq, got_to, got_from, &p, &len), -EBADMSG);
	buf[4] = 3; /* protocol 19's FIN: no such datagram since 20 */
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n, &type, &rail, &seq, got_to, got_from, &p, &len), -EBADMSG);
	/* a REPLY carries no pattern; nothing over IBP_TX_DGRAM_PATTERN */
	buf[4] = 2;
	assert_int_equal(
	    ibp_tx_dgram_decode(buf, n, &type, &rail, &seq, got_to, got_from, &p, &len), -EBADMSG);
	assert_int_equal(ibp_tx_dgram_encode(buf, sizeof(buf), 2, 0, 1, to, from, pat, 1), 0);
	assert_int_equal(ibp_tx_dgram_encode(buf, sizeof(buf), 4, 0, 0, to, from, pat, 1), 0);
	/* a PROBE and its answer, bare */
	for (unsigned t = 4; t <= 5; t++) {
		n = ibp_tx_dgram_encode(buf, sizeof(buf), t, 2, 0, to, from, NULL, 0);
		assert_int_equal(n, 28);
		assert_int_equal(
		    ibp_tx_dgram_decode(buf, n, &type, &rail, &seq, got_to, got_from, &p, &len), 0);
		assert_int_equal(type, t);
		assert_int_equal(rail, 2);
		assert_int_equal(len, 0);
		assert_memory_equal(got_to, to, 8);
		assert_memory_equal(got_from, from, 8);
	}
	assert_int_equal(
	    ibp_tx_dgram_encode(buf, sizeof(buf), 1, 0, 1, to, from, buf, IBP_TX_DGRAM_PATTERN + 1),
	    0);
	assert_int_equal(ibp_tx_dgram_encode(buf, 30, 1, 0, 1, to, from, pat, sizeof(pat)), 0);
	assert_int_equal(ibp_tx_dgram_encode(buf, sizeof(buf), 1, 256, 1, to, from, pat, 1), 0);
	n = ibp_tx_dgram_encode(buf, sizeof(buf), 1, 0, 1, to, from, pat, 0);
	buf[6] = (uint8_t)((IBP_TX_DGRAM_PATTERN + 1) >> 8);
	buf[7] = (uint8_t)(IBP_TX_DGRAM_PATTERN + 1);
	assert_int_equal(ibp_tx_dgram_decode(buf, n + IBP_TX_DGRAM_PATTERN + 1, &type, &rail, &seq,
					     got_to, got_from, &p, &len),
			 -EBADMSG);
}

/* A receiver and a sender of rail RAIL_RX / RAIL_TX on 127.0.0.1, datagram txs. */
static void dgram_pair(struct ibp_tx **rx, struct ibp_tx **tx, unsigned rail_rx, unsigned rail_tx,
		       struct ibp_endpoint *ep_rx, struct ibp_endpoint *ep_tx, char *err_r,
		       char *err_s)
{
	struct ibp_tx_port port = {.rail = rail_rx};
	struct ibp_tx_opts orx = {.buf_len = 4096, .err = err_r, .errlen = 256, .datagram = true};
	struct ibp_tx_opts os = {
	    .buf_len = 4096, .err = err_s, .errlen = 256, .sender = true, .datagram = true};

	snprintf(port.addr, sizeof(port.addr), "127.0.0.1");
	assert_int_equal(ibp_transport_socket.open(&port, &orx, rx), 0);
	port.rail = rail_tx;
	assert_int_equal(ibp_transport_socket.open(&port, &os, tx), 0);
	assert_int_equal(ibp_transport_socket.endpoint(*rx, ep_rx), 0);
	assert_int_equal(ibp_transport_socket.endpoint(*tx, ep_tx), 0);
	assert_int_not_equal(ep_rx->psn, 0);
	assert_int_not_equal(ep_tx->psn, 0);
	assert_int_equal(ep_rx->tcp_port, 0); /* no listener: its UDP socket answers probes */
}

/*
 * Every stage over datagrams: the CONNECT carries the pattern, PATTERN
 * checks it (and a wrong seed is named at its byte), BURST moves nothing,
 * RTT gives the exchange's round trip, and a second RTT a new exchange.
 */
static void test_dgram_steps_every_stage(void **state)
{
	struct ibp_tx *rx, *tx;
	struct ibp_endpoint ep_rx, ep_tx;
	char err_r[256], err_s[256];
	struct ibp_tx_step v[2];
	enum ibp_tx_step_kind kinds[] = {IBP_TX_STEP_CONNECT, IBP_TX_STEP_PATTERN,
					 IBP_TX_STEP_BURST, IBP_TX_STEP_RTT, IBP_TX_STEP_RTT};

	(void)state;
	dgram_pair(&rx, &tx, 1, 1, &ep_rx, &ep_tx, err_r, err_s);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		int64_t d = ibp_now_ns() + 2000 * IBP_NS_PER_MS;

		v[0] = (struct ibp_tx_step){.tx = rx,
					    .kind = kinds[i],
					    .role = IBP_TX_RECEIVER,
					    .peer = &ep_tx,
					    .seed = 42,
					    .len = 1000,
					    .iters = 1,
					    .deadline = d};
		v[1] = v[0];
		v[1].tx = tx;
		v[1].role = IBP_TX_SENDER;
		v[1].peer = &ep_rx;
		ibp_transport_socket.steps(v, 2);
		assert_int_equal(v[0].rc, 0);
		assert_int_equal(v[1].rc, 0);
		if (kinds[i] == IBP_TX_STEP_RTT)
			assert_true(v[1].ns > 0);
		if (kinds[i] == IBP_TX_STEP_BURST)
			assert_int_equal(v[1].ns, 0); /* no rate */
	}
	/* the receiver checks against what PATTERN_SENT says: another seed fails */
	v[0].kind = IBP_TX_STEP_PATTERN;
	v[0].seed = 43;
	v[0].deadline = ibp_now_ns() + 1000 * IBP_NS_PER_MS;
	ibp_transport_socket.steps(v, 1);
	assert_int_equal(v[0].rc, -EBADMSG);
	assert_non_null(strstr(err_r, "pattern differs at byte"));
	ibp_transport_socket.close(rx);
	ibp_transport_socket.close(tx);
}

/*
 * A hostile local user who even knows both tokens cannot answer for a
 * dead rail: a HELLO from another source than the sender's endpoint is
 * refused (the receiver times out), a REPLY from another source than the
 * receiver's is refused (the sender times out); and a receiver of another
 * rail is named as such by both ends.
 */
static void test_dgram_wrong_source_or_rail_refused(void **state)
{
	struct ibp_tx *rx, *tx;
	struct ibp_endpoint ep_rx, ep_tx;
	char err_r[256], err_s[256];
	uint8_t t_rx[8], t_tx[8], buf[64 + IBP_TX_DGRAM_PATTERN], pat[1000];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	struct ibp_tx_step v[2];
	int64_t t0;
	size_t n;
	int h;

	(void)state;
	dgram_pair(&rx, &tx, 1, 1, &ep_rx, &ep_tx, err_r, err_s);
	tok_bytes(&ep_rx, t_rx);
	tok_bytes(&ep_tx, t_tx);
	h = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(h >= 0);
	/* the sender is dead; the hostile socket sends its perfect HELLO, three times */
	ibp_pattern_fill(pat, sizeof(pat), 42);
	n = ibp_tx_dgram_encode(buf, sizeof(buf), 1, 1, 1, t_rx, t_tx, pat, sizeof(pat));
	assert_int_not_equal(n, 0);
	to.sin_port = htons((uint16_t)ep_rx.psn);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sendto(h, buf, n, 0, (struct sockaddr *)&to, sizeof(to)),
				 (ssize_t)n);
	t0 = ibp_now_ns();
	v[0] = (struct ibp_tx_step){.tx = rx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_RECEIVER,
				    .peer = &ep_tx,
				    .deadline = t0 + 300 * IBP_NS_PER_MS};
	ibp_transport_socket.steps(v, 1);
	assert_int_equal(v[0].rc, -ETIMEDOUT);
	assert_non_null(strstr(err_r, "no datagram from the sender 127.0.0.1:"));
	/* the receiver is dead; the hostile socket answers the sender's HELLOs for it */
	n = ibp_tx_dgram_encode(buf, sizeof(buf), 2, 1, 1, t_tx, t_rx, NULL, 0);
	to.sin_port = htons((uint16_t)ep_tx.psn);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sendto(h, buf, n, 0, (struct sockaddr *)&to, sizeof(to)),
				 (ssize_t)n);
	t0 = ibp_now_ns();
	v[1] = (struct ibp_tx_step){.tx = tx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_SENDER,
				    .peer = &ep_rx,
				    .seed = 42,
				    .len = sizeof(pat),
				    .deadline = t0 + 300 * IBP_NS_PER_MS};
	ibp_transport_socket.steps(&v[1], 1);
	assert_int_equal(v[1].rc, -ETIMEDOUT);
	assert_non_null(strstr(err_s, "no answer"));
	close(h);
	ibp_transport_socket.close(rx);
	ibp_transport_socket.close(tx);
	/* rail 1's sender reaches a rail-2 receiver: both name the rails */
	dgram_pair(&rx, &tx, 2, 1, &ep_rx, &ep_tx, err_r, err_s);
	v[0] = (struct ibp_tx_step){.tx = rx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_RECEIVER,
				    .peer = &ep_tx,
				    .deadline = ibp_now_ns() + 2000 * IBP_NS_PER_MS};
	v[1] = v[0];
	v[1].tx = tx;
	v[1].role = IBP_TX_SENDER;
	v[1].peer = &ep_rx;
	v[1].seed = 42;
	v[1].len = 100;
	ibp_transport_socket.steps(v, 2);
	assert_int_equal(v[0].rc, -EPROTO);
	assert_non_null(strstr(err_r, "the sender's rail 1, expected rail 2"));
	assert_int_equal(v[1].rc, -EPROTO);
	assert_non_null(strstr(err_s, "answered by the peer's rail 2 port, expected its rail 1"));
	ibp_transport_socket.close(rx);
	ibp_transport_socket.close(tx);
}

/*
 * A REPLY lost (no FIN any more): the receiver's CONNECT ends at once
 * after its REPLY, and while its link waits for the sender's next control
 * frame (idle) it answers the sender's HELLO sent again, from the
 * sender's endpoint with both tokens only; a stranger's copy of it gets
 * nothing.  The sender here is a socket of the test at ep_tx's tokens.
 */
static void test_dgram_lost_reply_answered_while_idle(void **state)
{
	struct ibp_tx *rx, *tx;
	struct ibp_endpoint ep_rx, ep_tx;
	char err_r[256], err_s[256];
	uint8_t t_rx[8], t_tx[8], buf[64 + IBP_TX_DGRAM_PATTERN], got[64], pat[1000];
	uint8_t g_to[8], g_by[8];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	struct sockaddr_in me = to;
	socklen_t ml = sizeof(me);
	struct ibp_tx_step v;
	const uint8_t *gp;
	unsigned type, rail;
	uint32_t seq;
	size_t n, glen;
	int64_t t0;
	int h, h2;

	(void)state;
	dgram_pair(&rx, &tx, 1, 1, &ep_rx, &ep_tx, err_r, err_s);
	tok_bytes(&ep_rx, t_rx);
	tok_bytes(&ep_tx, t_tx);
	h = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	h2 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(h >= 0 && h2 >= 0);
	assert_int_equal(bind(h, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_int_equal(getsockname(h, (struct sockaddr *)&me, &ml), 0);
	ep_tx.psn = ntohs(me.sin_port); /* the sender's endpoint: this socket */
	ibp_pattern_fill(pat, sizeof(pat), 42);
	n = ibp_tx_dgram_encode(buf, sizeof(buf), 1, 1, 1, t_rx, t_tx, pat, sizeof(pat));
	to.sin_port = htons((uint16_t)ep_rx.psn);
	assert_int_equal(sendto(h, buf, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	t0 = ibp_now_ns();
	v = (struct ibp_tx_step){.tx = rx,
				 .kind = IBP_TX_STEP_CONNECT,
				 .role = IBP_TX_RECEIVER,
				 .peer = &ep_tx,
				 .deadline = t0 + 2000 * IBP_NS_PER_MS};
	ibp_transport_socket.steps(&v, 1);
	assert_int_equal(v.rc, 0);
	assert_true(ibp_now_ns() - t0 < 300 * IBP_NS_PER_MS); /* no wait for a FIN */
	/* the REPLY came; say it was lost: the HELLO again, and a stranger's copy */
	assert_int_equal(recv(h, got, sizeof(got), 0) > 0, 1);
	assert_true(ibp_transport_socket.idle_fd(rx) >= 0);
	assert_int_equal(sendto(h2, buf, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	assert_int_equal(sendto(h, buf, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	{
		struct pollfd p = {.fd = ibp_transport_socket.idle_fd(rx), .events = POLLIN};

		assert_int_equal(poll(&p, 1, 1000), 1);
	}
	usleep(20000); /* both datagrams in the queue */
	ibp_transport_socket.idle(rx);
	{
		struct pollfd p = {.fd = h, .events = POLLIN};

		assert_int_equal(poll(&p, 1, 1000), 1);
	}
	ssize_t m = recv(h, got, sizeof(got), MSG_DONTWAIT);
	assert_true(m > 0);
	assert_int_equal(
	    ibp_tx_dgram_decode(got, (size_t)m, &type, &rail, &seq, g_to, g_by, &gp, &glen), 0);
	assert_int_equal(type, 2); /* REPLY */
	assert_int_equal(seq, 1);
	assert_int_equal(rail, 1);
	assert_memory_equal(g_to, t_tx, 8);
	assert_int_equal(recv(h2, got, sizeof(got), MSG_DONTWAIT), -1); /* the stranger: nothing */
	close(h);
	close(h2);
	ibp_transport_socket.close(rx);
	ibp_transport_socket.close(tx);
}

/* Rail 1's CONNECT between RX and TX (the sender's endpoint EP_TX, the receiver's EP_RX) */
static void dgram_connect(struct ibp_tx *rx, struct ibp_tx *tx, const struct ibp_endpoint *ep_rx,
			  const struct ibp_endpoint *ep_tx, int *rc_rx, int *rc_tx)
{
	struct ibp_tx_step v[2];

	v[0] = (struct ibp_tx_step){.tx = rx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_RECEIVER,
				    .peer = ep_tx,
				    .seed = 7,
				    .len = 100,
				    .deadline = ibp_now_ns() + 2000 * IBP_NS_PER_MS};
	v[1] = v[0];
	v[1].tx = tx;
	v[1].role = IBP_TX_SENDER;
	v[1].peer = ep_rx;
	ibp_transport_socket.steps(v, 2);
	*rc_rx = v[0].rc;
	*rc_tx = v[1].rc;
}

/*
 * A cross-rail probe from 127.0.0.1 (lo, rail FROM_RAIL) to endpoint TO of
 * rail TO_RAIL, IDLE's socket answering through the transport's idle op
 * (NULL: nobody reads): the probe op's verdict within WAIT_MS.
 */
static int probe_once(const struct ibp_endpoint *to, unsigned to_rail, struct ibp_tx *idle,
		      int wait_ms)
{
	struct ibp_tx_port from = {.rail = 3};
	struct ibp_tx_probe pr;
	int64_t end = ibp_now_ns() + (int64_t)wait_ms * IBP_NS_PER_MS;
	int rc;

	snprintf(from.addr, sizeof(from.addr), "127.0.0.1");
	snprintf(from.ifname, sizeof(from.ifname), "lo");
	rc = ibp_transport_socket.probe(&from, to, to_rail, &pr);
	if (rc)
		return rc;
	assert_true(pr.dgram);
	for (rc = 0; rc == 0 && ibp_now_ns() < end;) {
		if (idle && ibp_transport_socket.idle_fd(idle) >= 0)
			ibp_transport_socket.idle(idle);
		(void)poll(&(struct pollfd){.fd = pr.fd, .events = pr.events}, 1, 20);
		rc = ibp_transport_socket.probe_check(&pr, ibp_now_ns());
	}
	close(pr.fd);
	return rc;
}

/*
 * A worker's rounds through one cache (struct ibp_tx_opts): round 2's
 * receiver and sender of a rail take round 1's UDP sockets (same ports),
 * with tokens of their own, and exchange over them; round 1's txs, whose
 * sockets were taken, fail their next step with -EBUSY, named; the
 * sockets outlive the cache while a tx holds them: the kept receiver
 * answers a probe naming round 1's token as round 2's, and once the last
 * holder closed the socket a probe is refused (ICMP).
 */
static void test_dgram_cache_rounds_share_sockets(void **state)
{
	struct ibp_tx_cache *cr = NULL, *cs = NULL;
	struct ibp_tx *rx[2], *tx[2];
	struct ibp_endpoint ep_rx[2], ep_tx[2];
	char err_r[2][256], err_s[2][256];
	struct ibp_tx_port port = {.rail = 1};
	int rc_rx, rc_tx;

	(void)state;
	snprintf(port.addr, sizeof(port.addr), "127.0.0.1");
	for (int i = 0; i < 2; i++) {
		struct ibp_tx_opts orx = {.buf_len = 4096,
					  .err = err_r[i],
					  .errlen = 256,
					  .datagram = true,
					  .cache = &cr};
		struct ibp_tx_opts os = {.buf_len = 4096,
					 .err = err_s[i],
					 .errlen = 256,
					 .sender = true,
					 .datagram = true,
					 .cache = &cs};

		assert_int_equal(ibp_transport_socket.open(&port, &orx, &rx[i]), 0);
		assert_int_equal(ibp_transport_socket.open(&port, &os, &tx[i]), 0);
		assert_non_null(cr);
		assert_non_null(cs);
		assert_int_equal(ibp_transport_socket.endpoint(rx[i], &ep_rx[i]), 0);
		assert_int_equal(ibp_transport_socket.endpoint(tx[i], &ep_tx[i]), 0);
		dgram_connect(rx[i], tx[i], &ep_rx[i], &ep_tx[i], &rc_rx, &rc_tx);
		assert_int_equal(rc_rx, 0);
		assert_int_equal(rc_tx, 0);
	}
	assert_int_equal(ep_rx[1].psn, ep_rx[0].psn); /* the receiver's UDP socket */
	assert_int_equal(ep_tx[1].psn, ep_tx[0].psn); /* the sender's UDP socket */
	assert_true(ep_rx[1].rkey != ep_rx[0].rkey || ep_rx[1].qpn != ep_rx[0].qpn);
	/* round 1's txs no longer own the sockets */
	dgram_connect(rx[0], tx[0], &ep_rx[0], &ep_tx[0], &rc_rx, &rc_tx);
	assert_int_equal(rc_rx, -EBUSY);
	assert_int_equal(rc_tx, -EBUSY);
	assert_non_null(strstr(err_r[0], "taken by another link of this thread"));
	assert_int_equal(ibp_transport_socket.idle_fd(rx[0]), -1);
	assert_int_equal(ibp_transport_socket.idle_fd(tx[1]), -1); /* a sender answers nothing */
	ibp_transport_socket.close(tx[1]);
	ibp_transport_socket.close(tx[0]);
	ibp_transport_socket.cache_free(cr);
	ibp_transport_socket.cache_free(cs);
	/* the kept receiver (round 2's) answers for round 1's link, and its own */
	assert_int_equal(probe_once(&ep_rx[0], 1, rx[1], 2000), 1);
	assert_int_equal(probe_once(&ep_rx[1], 1, rx[1], 2000), 1);
	ibp_transport_socket.close(rx[1]);
	ibp_transport_socket.close(rx[0]);
	/* the last holder closed it */
	assert_int_equal(probe_once(&ep_rx[0], 1, NULL, 2000), -ECONNREFUSED);
}

/*
 * A HELLO lost: another socket's junk fills the receiver's buffer, so the
 * kernel drops the sender's first HELLO; the receiver drains and refuses
 * the junk, the HELLO sent again 100 ms later gets its REPLY, both pass.
 */
static void test_dgram_lost_hello_sent_again(void **state)
{
	struct ibp_tx *rx, *tx;
	struct ibp_endpoint ep_rx, ep_tx;
	char err_r[256], err_s[256];
	uint8_t junk[16] = {0}; /* small: the queue fills to the last byte a HELLO needs */
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	struct ibp_tx_step v[2];
	int rcvbuf = 0, h;
	socklen_t sl = sizeof(rcvbuf);
	int64_t t0;

	(void)state;
	dgram_pair(&rx, &tx, 1, 1, &ep_rx, &ep_tx, err_r, err_s);
	h = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(h >= 0);
	assert_int_equal(getsockopt(h, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &sl), 0);
	to.sin_port = htons((uint16_t)ep_rx.psn);
	/* well over the receive buffer: the queue is full when the HELLO comes */
	for (int i = 0; i < rcvbuf / 50 + 64; i++)
		(void)sendto(h, junk, sizeof(junk), 0, (struct sockaddr *)&to, sizeof(to));
	t0 = ibp_now_ns();
	v[0] = (struct ibp_tx_step){.tx = tx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_SENDER,
				    .peer = &ep_rx,
				    .seed = 42,
				    .len = 1000,
				    .deadline = t0 + 3000 * IBP_NS_PER_MS};
	v[1] = (struct ibp_tx_step){.tx = rx,
				    .kind = IBP_TX_STEP_CONNECT,
				    .role = IBP_TX_RECEIVER,
				    .peer = &ep_tx,
				    .deadline = t0 + 3000 * IBP_NS_PER_MS};
	ibp_transport_socket.steps(v, 2); /* the sender first: its HELLO meets the full queue */
	assert_int_equal(v[0].rc, 0);
	assert_int_equal(v[1].rc, 0);
	assert_true(ibp_now_ns() - t0 >= 100 * IBP_NS_PER_MS); /* the second HELLO's */
	v[1].kind = IBP_TX_STEP_PATTERN; /* and the pattern it carried is whole */
	v[1].seed = 42;
	v[1].len = 1000;
	ibp_transport_socket.steps(&v[1], 1);
	assert_int_equal(v[1].rc, 0);
	close(h);
	ibp_transport_socket.close(rx);
	ibp_transport_socket.close(tx);
}

/*
 * A datagram receiver answers a probe (protocol 22) that names its token,
 * from its own socket, whoever sent it; never one naming another token,
 * nor a sender's socket; at most 128 per socket, however many come (a
 * copy replayed on the wire); once its socket is closed, the probe is
 * refused (ICMP port unreachable, read as ECONNREFUSED).
 */
static void test_dgram_probe_answered_checked_and_capped(void **state)
{
	struct ibp_tx *rx, *tx;
	struct ibp_endpoint ep_rx, ep_tx, forged;
	char err_r[256], err_s[256];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	uint8_t buf[64], token[8], nonce[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	size_t n;
	int fd, answers = 0;

	int rc_rx, rc_tx;

	(void)state;
	dgram_pair(&rx, &tx, 1, 1, &ep_rx, &ep_tx, err_r, err_s);
	/*
	 * Before its exchange, idle leaves the socket alone: a HELLO come
	 * early waits there for the step (read by idle it would be dropped
	 * and sent again only 100 ms later), and a probe with it.
	 */
	assert_int_equal(ibp_transport_socket.idle_fd(rx), -1);
	dgram_connect(rx, tx, &ep_rx, &ep_tx, &rc_rx, &rc_tx);
	assert_int_equal(rc_rx, 0);
	assert_int_equal(rc_tx, 0);
	assert_true(ibp_transport_socket.idle_fd(rx) >= 0);
	/* nobody reads: no answer, the probe still pending */
	assert_int_equal(probe_once(&ep_rx, 1, NULL, 100), 0);
	assert_int_equal(probe_once(&ep_rx, 1, rx, 2000), 1);
	/* the answer must name the rail probed */
	assert_int_equal(probe_once(&ep_rx, 2, rx, 300), 0);
	forged = ep_rx;
	forged.qpn ^= 1;
	assert_int_equal(probe_once(&forged, 1, rx, 300), 0);
	assert_int_equal(ibp_transport_socket.idle_fd(tx), -1);
	/* 200 probes with the right token from one socket: 128 answers at most */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	to.sin_port = htons((uint16_t)ep_rx.psn);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	for (int i = 0; i < 4; i++) {
		token[i] = (uint8_t)(ep_rx.rkey >> (24 - 8 * i));
		token[4 + i] = (uint8_t)(ep_rx.qpn >> (24 - 8 * i));
	}
	n = ibp_tx_dgram_encode(buf, sizeof(buf), 4, 0, 0, token, nonce, NULL, 0);
	assert_int_not_equal(n, 0);
	for (int round = 0; round < 4; round++) {
		int before = answers;

		for (int i = 0; i < 50; i++)
			assert_int_equal(send(fd, buf, n, 0), (ssize_t)n);
		ibp_transport_socket.idle(rx);
		while (recv(fd, buf + 32, 32, MSG_DONTWAIT) > 0)
			answers++;
		if (round == 3) /* the cap was reached before: nothing more */
			assert_int_equal(answers, before);
	}
	/* the probe_once answers above (2 to 5, with the resends) count too */
	assert_in_range(answers, 128 - 5, 128 - 2);
	close(fd);
	ibp_transport_socket.close(tx);
	ibp_transport_socket.close(rx);
	assert_int_equal(probe_once(&ep_rx, 1, NULL, 2000), -ECONNREFUSED);
}

struct late_probe {
	struct ibp_tx *tx1;
	const struct ibp_endpoint *ep_rx1;
	int rc_tx, probe;
	int64_t probed_at;
};

/* Rail 1's sender makes its exchange, then probes rail 1's receiver, whose step is over. */
static void *late_probe_main(void *arg)
{
	struct late_probe *lp = arg;

	lp->rc_tx = ibp_transport_socket.connect(lp->tx1, lp->ep_rx1, IBP_TX_SENDER,
						 ibp_now_ns() + 2000 * IBP_NS_PER_MS);
	lp->probe = probe_once(lp->ep_rx1, 1, NULL, 1500);
	lp->probed_at = ibp_now_ns();
	return NULL;
}

/*
 * While a phase waits for one rail (a crossed rail's HELLO that never
 * comes), the receiver whose exchange is over answers a probe at once
 * from the steps' poll loop, not after the phase: a crossed rail's landing
 * probes come just then.
 */
static void test_dgram_probe_answered_while_steps_wait(void **state)
{
	struct ibp_tx *rx1, *tx1, *rx2, *tx2;
	struct ibp_endpoint ep_rx1, ep_tx1, ep_rx2, ep_tx2;
	char err[4][256];
	struct ibp_tx_step v[2];
	struct late_probe lp;
	pthread_t th;
	int64_t deadline;

	(void)state;
	dgram_pair(&rx1, &tx1, 1, 1, &ep_rx1, &ep_tx1, err[0], err[1]);
	dgram_pair(&rx2, &tx2, 2, 2, &ep_rx2, &ep_tx2, err[2], err[3]);
	deadline = ibp_now_ns() + 3000 * IBP_NS_PER_MS;
	for (int i = 0; i < 2; i++)
		v[i] = (struct ibp_tx_step){.tx = i ? rx2 : rx1,
					    .kind = IBP_TX_STEP_CONNECT,
					    .role = IBP_TX_RECEIVER,
					    .peer = i ? &ep_tx2 : &ep_tx1,
					    .deadline = deadline};
	lp = (struct late_probe){.tx1 = tx1, .ep_rx1 = &ep_rx1};
	assert_int_equal(pthread_create(&th, NULL, late_probe_main, &lp), 0);
	ibp_transport_socket.steps(v, 2); /* rail 2's sender never comes */
	pthread_join(th, NULL);
	assert_int_equal(v[0].rc, 0);
	assert_int_equal(v[1].rc, -ETIMEDOUT);
	assert_int_equal(lp.rc_tx, 0);
	assert_int_equal(lp.probe, 1);
	assert_true(lp.probed_at < deadline); /* answered while rail 2 was still awaited */
	ibp_transport_socket.close(tx1);
	ibp_transport_socket.close(rx1);
	ibp_transport_socket.close(tx2);
	ibp_transport_socket.close(rx2);
}

/*
 * The across probe from a sender's own socket (probe_along): rail 1's
 * sender asks rail 2's receiver, whose exchange is over; nothing until the
 * receiver reads (its idle answers), then answered; to a socket since
 * closed it stays unanswered; a receiver cannot send one.
 */
static void test_dgram_probe_along_answered_by_the_receiver(void **state)
{
	struct ibp_tx *rx1, *tx1, *rx2, *tx2;
	struct ibp_endpoint ep_rx1, ep_tx1, ep_rx2, ep_tx2;
	char err[4][256];
	int rc_rx, rc_tx;

	(void)state;
	dgram_pair(&rx1, &tx1, 1, 1, &ep_rx1, &ep_tx1, err[0], err[1]);
	dgram_pair(&rx2, &tx2, 2, 2, &ep_rx2, &ep_tx2, err[2], err[3]);
	dgram_connect(rx1, tx1, &ep_rx1, &ep_tx1, &rc_rx, &rc_tx);
	assert_int_equal(rc_rx + rc_tx, 0);
	dgram_connect(rx2, tx2, &ep_rx2, &ep_tx2, &rc_rx, &rc_tx);
	assert_int_equal(rc_rx + rc_tx, 0);
	assert_int_equal(ibp_transport_socket.probe_along_result(tx1), 0); /* none sent */
	assert_int_equal(ibp_transport_socket.probe_along(rx1, &ep_rx2, 2), -EINVAL);
	assert_int_equal(ibp_transport_socket.probe_along(tx1, &ep_rx2, 2), 0);
	assert_true(ibp_transport_socket.idle_fd(tx1) >= 0); /* its answer is awaited */
	poll(NULL, 0, 20);
	assert_int_equal(ibp_transport_socket.probe_along_result(tx1), 0);
	ibp_transport_socket.idle(rx2);
	poll(NULL, 0, 20);
	assert_int_equal(ibp_transport_socket.probe_along_result(tx1), 1);
	assert_int_equal(ibp_transport_socket.idle_fd(tx1), -1); /* nothing awaited now */
	/* an answer must name the rail asked */
	assert_int_equal(ibp_transport_socket.probe_along(tx2, &ep_rx1, 2), 0);
	ibp_transport_socket.idle(rx1);
	poll(NULL, 0, 20);
	assert_int_equal(ibp_transport_socket.probe_along_result(tx2), 0);
	ibp_transport_socket.close(rx1);
	assert_int_equal(ibp_transport_socket.probe_along(tx2, &ep_rx1, 1), 0);
	poll(NULL, 0, 20);
	assert_int_equal(ibp_transport_socket.probe_along_result(tx2), 0);
	ibp_transport_socket.close(tx1);
	ibp_transport_socket.close(tx2);
	ibp_transport_socket.close(rx2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rails_netdev_addr_lo_and_missing),
	    cmocka_unit_test(test_socket_steps_every_stage),
	    cmocka_unit_test(test_socket_steps_deadline_and_refused),
	    cmocka_unit_test(test_dgram_codec_every_length_checked),
	    cmocka_unit_test(test_dgram_steps_every_stage),
	    cmocka_unit_test(test_dgram_wrong_source_or_rail_refused),
	    cmocka_unit_test(test_dgram_lost_hello_sent_again),
	    cmocka_unit_test(test_dgram_lost_reply_answered_while_idle),
	    cmocka_unit_test(test_dgram_cache_rounds_share_sockets),
	    cmocka_unit_test(test_dgram_probe_answered_checked_and_capped),
	    cmocka_unit_test(test_dgram_probe_answered_while_steps_wait),
	    cmocka_unit_test(test_dgram_probe_along_answered_by_the_receiver),
	    cmocka_unit_test(test_rails_drivable_verbs_ib_roce_only),
	    cmocka_unit_test(test_rails_socket_ports_addresses_or_none),
	    cmocka_unit_test(test_run_every_rail_by_default_note_isolated),
	    cmocka_unit_test(test_run_rails_beyond_0_lighter),
	    cmocka_unit_test(test_run_joined_rails_note),
	    cmocka_unit_test(test_run_one_rail_down_named_on_that_rail_only),
	    cmocka_unit_test(test_run_crossed_rails_named_by_every_node),
	    cmocka_unit_test(test_run_slow_rail_no_landing_probe),
	    cmocka_unit_test(test_run_late_crossed_rails_probed_before_they_fail),
	    cmocka_unit_test(test_run_rails_crossed_by_addresses_warned),
	};

	addrs_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
