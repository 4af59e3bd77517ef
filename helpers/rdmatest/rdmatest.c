/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest.c: the cross-node RDMA sanity test (rdmatest.h), the owner of a
 * run's state: setup, then the parts it calls, each with a header of its
 * own that says what it gets (rdmatest_conn.h lists them):
 *
 *   the acceptor (rdmatest_accept.h) on the caller's thread, while
 *   the link workers (rdmatest_link.h) test, two threads per rail, and
 *   the step-wide fingerprint sum (rdmatest_ring.h) travels on a thread
 *   of its own; then the summary exchange (rdmatest_summary.h), the
 *   findings (rdmatest_report.h) and the fingerprints' comparison
 *   (rdmatest_fp.h, or the sum's judgment).
 *
 * None of them calls back into this file: what a part needs of another
 * it gets as data, or (the acceptor waking the sum's thread) as a
 * callback set here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibprep/text.h"
#include "rdmatest_accept.h"
#include "rdmatest_link.h"
#include "rdmatest_probe.h"
#include "rdmatest_report.h"
#include "rdmatest_summary.h"

struct ibp_rt_run {
	struct ibp_rt_ctx x; /* what every part reads */
	struct ibp_policy pol;
	struct ibp_hostlist own_nodes;
	struct ibp_rdmatest_plan plan;
	int *leaf; /* every node's leaf switch (NULL without a topology), owned */
	struct ibp_rt_link links[IBP_RDMATEST_MAX_LINKS];
	const struct ibp_transport_ops *ops;
	struct ibp_tx_port rails[IBP_RDMATEST_MAX_RAILS];
	size_t buf_len;
	uint64_t burst;
	/* the parts */
	struct ibp_rt_acceptor acc;
	struct ibp_rt_links tests;
	struct ibp_rt_ring ring;
	struct ibp_rt_fps fps;
	struct ibp_rt_probes probes;
	/* what the node learns: its links and the summaries, the leaves named to it */
	struct ibp_rt_known known;
	struct ibp_rt_leaves leaves;
};

/*
 * Reads what the peer already sent and nobody will read (its summary after
 * its fingerprint, on a link whose outcome we know), then closes.  A socket
 * closed with unread data resets the connection, and the reset can cost the
 * peer frames still queued for it: this node's summary.  Bounded: 256 KiB.
 */
static void drain_close(int fd)
{
	uint8_t buf[4096];

	for (int i = 0; i < 64; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
	close(fd);
}

/* ---- setup -------------------------------------------------------------- */

static int setup_nodes(struct ibp_rt_run *run, struct ibp_findings *out)
{
	const struct ibp_rdmatest_config *cfg = run->x.cfg;
	char err[IBP_TEXT_MAX] = "";
	int rc;

	if (cfg->nodes) {
		run->x.nodes = cfg->nodes;
	} else {
		rc = ibp_hostlist_expand(cfg->nodelist, 0, &run->own_nodes, err, sizeof(err));
		if (rc) {
			ibp_findings_addf(
			    out, "rdmatest_bad_nodelist", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
			    "a Slurm host list such as n[1-4,7]",
			    "do not alter SLURM_JOB_NODELIST / pass --hosts as Slurm prints it",
			    "%s", err[0] ? err : strerror(-rc));
			return rc == -ENOMEM ? rc : -EINVAL;
		}
		run->x.nodes = &run->own_nodes;
	}
	if (run->x.nodes->n == 0 || cfg->index >= run->x.nodes->n ||
	    run->x.nodes->n > IBP_OOB_MAX_NODES) {
		ibp_findings_addf(
		    out, "rdmatest_bad_nodelist", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
		    "an index below the node count", "pass this node's index in the host list",
		    "node index %zu, %zu nodes in the list", cfg->index, run->x.nodes->n);
		return -EINVAL;
	}
	run->x.n = (uint32_t)run->x.nodes->n;
	run->x.me = (uint32_t)cfg->index;
	/* The same inputs on every node, the same plan (rdmatest_plan.c). */
	run->leaf = ibp_rt_topo_leaves(cfg->topology, run->x.nodes);
	run->x.leaf = run->leaf;
	rc = ibp_rdmatest_plan_topo(run->x.n, run->x.me, run->leaf, &run->plan);
	if (rc == -ENOMEM)
		rc = ibp_rdmatest_plan(run->x.n, run->x.me, &run->plan);
	return rc;
}

static int setup_rails(struct ibp_rt_run *run, struct ibp_findings *out)
{
	const struct ibp_rdmatest_config *cfg = run->x.cfg;
	size_t want = cfg->mode == IBP_RDMATEST_FULL ? cfg->n_ports : 1;

	if (!cfg->ports || cfg->n_ports == 0) {
		if (run->ops->kind != IBP_TX_SOCKET) {
			ibp_findings_addf(
			    out, "rdmatest_no_port", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0,
			    "at least one healthy active port",
			    "fix the node's ports (ibprep check) or use test_transport=socket",
			    "no healthy RDMA port to test");
			return -ENODEV;
		}
		memset(&run->rails[0], 0, sizeof(run->rails[0]));
		ibp_rt_setf(run->rails[0].addr, sizeof(run->rails[0].addr), "%s", run->x.my_addr);
		run->x.n_rails = 1;
		return 0;
	}
	if (want > IBP_RDMATEST_MAX_RAILS)
		want = IBP_RDMATEST_MAX_RAILS;
	for (size_t k = 0; k < want; k++) {
		run->rails[k] = cfg->ports[k];
		run->rails[k].rail = (unsigned)k;
		/* a rail with a netdev of its own keeps its address, or the lack of one */
		if (!run->rails[k].addr[0] && !run->rails[k].ifname[0])
			ibp_rt_setf(run->rails[k].addr, sizeof(run->rails[k].addr), "%s",
				    run->x.my_addr);
	}
	run->x.n_rails = want;
	return 0;
}

static int setup_links(struct ibp_rt_run *run, struct ibp_findings *out)
{
	uint32_t peers[4];
	char addrs[4][64];
	size_t np = 0;

	run->x.n_links = run->x.n_rails * ibp_rt_n_rounds(&run->x) * 2;
	for (size_t k = 0; k < run->x.n_rails; k++) {
		for (unsigned r = 1; r <= ibp_rt_n_rounds(&run->x); r++) {
			for (int o = 1; o >= 0; o--) {
				struct ibp_rt_link *l = ibp_rt_link_at(&run->x, k, r, o);
				size_t j;

				memset(l, 0, sizeof(*l));
				l->fd = -1;
				l->out = o;
				l->peer = o ? run->plan.send_to[r - 1] : run->plan.recv_from[r - 1];
				l->r.from = o ? run->x.me : l->peer;
				l->r.to = o ? l->peer : run->x.me;
				l->r.round = (uint8_t)r;
				l->r.rail = (uint16_t)k;
				l->r.status = IBP_LINK_UNTESTED;
				/* rail 0's connection carries every rail: no other is taken */
				if (k)
					l->slot = IBP_RT_SLOT_CLOSED;
				ibp_rt_setf(l->r.device, sizeof(l->r.device), "%s",
					    run->rails[k].device);
				l->r.port = run->rails[k].port;
				for (j = 0; j < np && peers[j] != l->peer; j++)
					;
				if (j == np) {
					int rc = ibp_rt_resolve(&run->x, l->peer, addrs[np],
								sizeof(addrs[np]));

					if (rc) {
						ibp_rt_setf(addrs[np], sizeof(addrs[np]), "%s", "");
					}
					peers[np++] = l->peer;
				}
				if (!addrs[j][0]) {
					ibp_rt_link_fail(l, IBP_LINK_UNREACHABLE, -EHOSTUNREACH,
							 "cannot resolve the address of %s",
							 ibp_rt_node_name(&run->x, l->peer));
					l->slot = IBP_RT_SLOT_CLOSED;
				}
				ibp_rt_setf(l->peer_addr, sizeof(l->peer_addr), "%s", addrs[j]);
			}
		}
	}
	(void)out;
	return 0;
}

/*
 * munged must answer before any link is tried: a node whose munged is down
 * or refusing learns it at once, with its own words, instead of failing
 * every link after test_timeout with a resource message.
 */
static int setup_munge(struct ibp_rt_run *run, struct ibp_findings *out)
{
	struct ibp_auth_claims c = {.job = run->x.cfg->job,
				    .step = run->x.cfg->step,
				    .uid = run->x.cfg->uid,
				    .from = run->x.me,
				    .to = run->x.me,
				    .nnodes = run->x.n};
	char cred[IBP_OOB_CRED_MAX], err[IBP_TEXT_MAX] = "";
	const char *sock = run->x.auth.socket;
	int rc;

	if (run->x.auth.insecure)
		return 0;
	c.nonce = ibp_rt_random64();
	/* The probe carries no secret: it is never sent. */
	rc = ibp_auth_sign(&run->x.auth, &c, cred, sizeof(cred), err, sizeof(err));
	if (rc >= 0)
		return 0;
	if (rc == -ENOTCONN)
		ibp_findings_addf(out, "rdmatest_munge_unavailable", IBP_SEV_FAIL, IBP_CLASS_NODE,
				  NULL, 0, "munged answering on its socket",
				  sock && *sock ? "start munged, or set munge_socket= to munged's "
						  "socket"
						: "start munged (systemctl start munge), or set "
						  "munge_socket= to munged's socket",
				  "munged does not answer on %s: %s",
				  sock && *sock ? sock : "its default socket", err);
	else
		ibp_findings_addf(out, "rdmatest_munge_unavailable", IBP_SEV_FAIL, IBP_CLASS_NODE,
				  NULL, 0, "munged issuing credentials",
				  "check munged on this node (its log, key, clock), or set "
				  "munge_socket= to munged's socket",
				  "munged refuses to issue a credential: %s", err);
	return rc;
}

static void fill_result(struct ibp_rt_run *run, struct ibp_rdmatest_result *res)
{
	res->nnodes = run->x.n;
	res->index = run->x.me;
	res->n_links = run->x.n_links;
	res->hellos = 0;
	for (size_t i = 0; i < run->x.n_links; i++) {
		res->links[i] = run->links[i].r;
		res->hellos += run->links[i].hellos;
	}
	res->n_summaries = run->known.n_summaries;
	for (int i = 0; i < IBP_RT_RING_CONNS; i++)
		res->hellos += run->ring.conn[i].hellos;
	res->dropped = run->acc.dropped;
	res->dropped_outside = run->acc.dropped_away;
	res->dropped_peer = run->acc.dropped_peer;
	res->cred_checks = run->acc.cred_checks;
	ibp_rt_setf(res->drop_reason, sizeof(res->drop_reason), "%s", run->acc.drop_reason);
	res->elapsed_s = (double)(ibp_now_ns() - run->x.start) / 1e9;
}

/* The acceptor filled a slot of the sum's children: its thread takes it. */
static void ring_wake(void *ring)
{
	ibp_rt_ring_wake(ring);
}

/* The step's fingerprints compared: the whole step's sum, else the peers' that came. */
static int compare_fingerprints(struct ibp_rt_run *run, struct ibp_findings *out)
{
	char why[IBP_TEXT_MAX];
	bool broken = run->ring.state == IBP_RT_RING_BROKEN;

	if (!run->fps.v)
		return 0;
	if (run->ring.state == IBP_RT_RING_DONE)
		return ibp_rt_ring_judge(&run->ring, out);
	if (broken)
		ibp_rt_ring_why(&run->ring, why, sizeof(why));
	return ibp_rt_fp_compare(&run->fps, broken ? why : NULL, run->ring.at == run->x.me, out);
}

/* The parts' findings, once the workers are done and the summaries in. */
static void report(struct ibp_rt_run *run, struct ibp_findings *out,
		   struct ibp_rdmatest_result *res)
{
	struct ibp_rt_report_in in = {.x = &run->x,
				      .rail0 = run->x.n_rails ? &run->rails[0] : NULL,
				      .rails = run->rails,
				      .known = &run->known,
				      .leaves = &run->leaves,
				      .dropped = run->acc.dropped,
				      .dropped_away = run->acc.dropped_away,
				      .dropped_peer = run->acc.dropped_peer,
				      .drop_reason = run->acc.drop_reason,
				      .oob_port = res->oob_port,
				      .probes = res->probes,
				      .n_probes = res->n_probes};

	ibp_rt_report(&in, out, res);
	compare_fingerprints(run, out); /* -ENOMEM: no comparison, nothing else lost */
	res->n_fingerprints = run->fps.n;
	res->step_wide = run->ring.state == IBP_RT_RING_DONE;
}

/* From the listeners on: the parts' threads, the acceptor, the summaries. */
static void test(struct ibp_rt_run *run, struct ibp_findings *out, struct ibp_rdmatest_result *res)
{
	struct ibp_rt_exchange ex = {.x = &run->x,
				     .ring = &run->ring,
				     .fps = &run->fps,
				     .known = &run->known,
				     .leaves = &run->leaves};
	const struct ibp_oob_leaf *own = ibp_rt_leaves_of(&run->leaves, run->x.me);
	pthread_condattr_t ca;

	pthread_mutex_init(&run->x.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&run->x.cv, &ca);
	pthread_condattr_destroy(&ca);
	ibp_rt_ring_spawn(&run->ring);
	/* a thread that did not start takes no child's connection */
	run->acc.ring_part = ibp_rt_ring_kids(&run->ring, run->acc.ring_kids);
	run->acc.wake = ring_wake;
	run->acc.wake_arg = &run->ring;
	run->tests = (struct ibp_rt_links){.x = &run->x,
					   .ops = run->ops,
					   .rails = run->rails,
					   .buf_len = run->buf_len,
					   .burst = run->burst,
					   .own_leaf = own ? own->name : NULL,
					   .fps = &run->fps,
					   .ring = &run->ring,
					   .leaves = &run->leaves,
					   .probes = &run->probes,
					   .keep_rx = run->ops->probe && run->x.n_rails > 1};
	ibp_rt_probes_init(&run->probes, &run->x, run->ops, run->rails);
	ibp_rt_probes_spawn(&run->probes);
	ibp_rt_links_start(&run->tests);
	ibp_rt_accept(&run->acc);
	ibp_rt_ring_accept_over(&run->ring);
	ibp_rt_links_join(&run->tests);
	res->links_s = (double)(ibp_now_ns() - run->x.start) / 1e9;
	ibp_rt_links_versions(&run->x);
	ibp_rt_exchange(&ex);
	ibp_rt_probes_stop(&run->probes); /* a probe pending until the summaries are in missed */
	for (size_t i = 0; i < run->probes.n && res->n_probes < IBP_RDMATEST_MAX_PROBES; i++)
		res->probes[res->n_probes++] = run->probes.v[i].r;
	report(run, out, res);
	for (size_t i = 0; i < run->x.n_links; i++) {
		if (run->links[i].fd >= 0)
			drain_close(run->links[i].fd);
		if (run->links[i].tx)
			run->ops->close(run->links[i].tx);
		run->links[i].tx = NULL;
		ibp_seal_clear(&run->links[i].seal);
	}
	pthread_cond_destroy(&run->x.cv);
	pthread_mutex_destroy(&run->x.mu);
}

static int no_listener(struct ibp_rt_run *run, struct ibp_findings *out, int rc)
{
	const struct ibp_rdmatest_config *cfg = run->x.cfg;

	if (cfg->listen_fds)
		return ibp_findings_addf(out, "rdmatest_no_listener", IBP_SEV_FAIL, IBP_CLASS_NODE,
					 NULL, 0,
					 "a listening socket on one of the test's candidate ports",
					 "free the test ports or change test_ports=",
					 "no listening socket among the %zu candidate ports "
					 "handed to the test: %s",
					 cfg->n_listen_fds, strerror(-rc));
	return ibp_findings_addf(out, "rdmatest_no_listener", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0,
				 "a free test port", "free the ports or widen test_ports=",
				 "cannot listen on %s ports %u..%u (%d candidates): %s",
				 run->x.my_addr, run->pol.test_port_lo, run->pol.test_port_hi,
				 run->x.n_cands, strerror(-rc));
}

/* The run's context and its parts, before anything that may fail: all safe to release. */
static void init(struct ibp_rt_run *run, const struct ibp_rdmatest_config *cfg)
{
	struct ibp_rt_ctx *x = &run->x;

	x->cfg = cfg;
	x->pol = &run->pol;
	x->plan = &run->plan;
	x->links = run->links;
	if (cfg->policy)
		run->pol = *cfg->policy;
	else
		ibp_policy_init(&run->pol);
	x->start = cfg->start_ns ? cfg->start_ns : ibp_now_ns();
	x->end = ibp_deadline_after_s(x->start, run->pol.test_timeout_s);
	x->round_end[0] = ibp_deadline_split(x->start, x->end, 0.4);
	x->round_end[1] = ibp_deadline_split(x->start, x->end, 0.8);
	x->auth.socket = cfg->munge_socket;
	x->auth.insecure = cfg->insecure;
	x->auth.cred_uid = cfg->test_uid ? cfg->test_uid : cfg->uid;
	run->buf_len = cfg->buf_len ? cfg->buf_len : 1 << 20;
	run->burst = cfg->burst_bytes ? cfg->burst_bytes : 8 * (uint64_t)run->buf_len;
	run->ops = cfg->transport ? cfg->transport : ibp_transport_find(run->pol.test_transport);
	ibp_rt_acceptor_init(&run->acc, x);
	ibp_rt_ring_init(&run->ring, x, NULL);
}

int ibp_rdmatest_run(const struct ibp_rdmatest_config *cfg, struct ibp_findings *out,
		     struct ibp_rdmatest_result *res)
{
	struct ibp_rdmatest_result scratch;
	struct ibp_rt_run *run;
	int rc;

	if (!res)
		res = &scratch;
	memset(res, 0, sizeof(*res));
	run = calloc(1, sizeof(*run));
	if (!run)
		return -ENOMEM;
	init(run, cfg);
	if (!run->ops) {
		ibp_findings_addf(out, "rdmatest_no_transport", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL,
				  0, "socket or verbs",
				  "use test_transport=socket, or build spank-ib with libibverbs",
				  "transport '%s' is not available in this build",
				  run->pol.test_transport);
		free(run);
		return -EINVAL;
	}
	rc = setup_nodes(run, out);
	if (rc)
		goto out_free;
	res->nnodes = run->x.n;
	res->index = run->x.me;
	if (run->x.n == 1) {
		ibp_findings_addf(out, "rdmatest_single_node", IBP_SEV_OK, IBP_CLASS_JOB, NULL, 0,
				  NULL, NULL, "one node in the step: no peer to test");
		res->pass = true;
		goto out_free;
	}
	rc = ibp_rt_resolve(&run->x, run->x.me, run->x.my_addr, sizeof(run->x.my_addr));
	if (rc) {
		ibp_findings_addf(out, "rdmatest_no_address", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0,
				  "the node's name resolves to its address",
				  "add the node to /etc/hosts or DNS",
				  "cannot resolve this node's own name '%s': %s",
				  ibp_rt_node_name(&run->x, run->x.me), strerror(-rc));
		res->setup_err = rc;
		rc = 0;
		goto out_free;
	}
	rc = setup_rails(run, out);
	if (rc) {
		res->setup_err = rc;
		rc = rc == -ENODEV ? 0 : rc;
		goto out_free;
	}
	rc = setup_munge(run, out);
	if (rc) {
		res->setup_err = rc;
		rc = 0;
		goto out_free;
	}
	if (!cfg->topology && cfg->own_leaf)
		ibp_rt_leaves_add(&run->leaves, run->x.n, run->x.me, cfg->own_leaf);
	setup_links(run, out);
	ibp_rt_fps_init(&run->fps, &run->x);
	if (run->fps.v && run->x.n < IBP_RT_RING_MIN)
		ibp_rt_fp_frame(&run->fps); /* the link workers send it before their endpoints */
	/* before the in-peers: the sum's children are among them */
	ibp_rt_ring_init(&run->ring, &run->x, run->fps.v ? cfg->fingerprint : NULL);
	ibp_rt_ring_prepare(&run->ring);
	run->acc.ring_part = ibp_rt_ring_kids(&run->ring, run->acc.ring_kids);
	rc = ibp_rt_peers_init(&run->acc);
	if (rc)
		goto out_free;
	rc = ibp_rt_listen(&run->acc);
	if (rc < 0) {
		res->setup_err = rc;
		no_listener(run, out, rc);
		rc = 0;
		goto out_free;
	}
	res->oob_port = (uint16_t)rc;
	test(run, out, res);
	rc = 0;
out_free:
	ibp_rt_fps_free(&run->fps); /* also when the run stopped before its links */
	ibp_rt_ring_free(&run->ring);
	fill_result(run, res);
	ibp_rt_close_listeners(&run->acc);
	ibp_hostlist_release(&run->own_nodes);
	free(run->leaf);
	free(run);
	return rc;
}
