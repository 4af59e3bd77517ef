/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_link.c: the links' tests (rdmatest_link.h): the link protocol
 * over the sealed connection and the transport, both roles, and the link
 * workers.  After the two HELLOs every frame on a link's connection is
 * sealed (seal.h): nothing of a frame is used before its MAC and sequence
 * number check.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmatest_link.h"

static enum ibp_link_status status_of(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return IBP_LINK_TIMEOUT;
	case -ECONNRESET:
	case -EPIPE:
		return IBP_LINK_GONE;
	case -EBADMSG:
	case -EPROTONOSUPPORT:
	case -EPROTO:
		return IBP_LINK_PROTOCOL;
	case -EACCES:
	case -EKEYREJECTED:
		return IBP_LINK_AUTH;
	default:
		return IBP_LINK_TRANSPORT;
	}
}

static const char *errtext(int rc)
{
	if (rc == -EKEYREJECTED)
		return "frames failed authentication";
	return rc == -ECONNRESET ? "connection closed by the peer" : strerror(-rc);
}

static int send_ctrl(struct ibp_rt_link *l, int fd, uint8_t op, int32_t status, uint64_t a,
		     uint64_t b, int64_t deadline)
{
	struct ibp_oob_msg m;

	ibp_oob_msg_clear(&m, IBP_OOB_CTRL);
	m.u.ctrl.op = op;
	m.u.ctrl.status = status;
	m.u.ctrl.a = a;
	m.u.ctrl.b = b;
	return ibp_seal_send(fd, &l->seal, &m, deadline);
}

/* The status a peer's ABORT carries, GONE when it names none. */
static enum ibp_link_status abort_status(const struct ibp_oob_ctrl *c)
{
	return c->a > IBP_LINK_PASS && c->a < IBP_LINK_STATUS_COUNT ? (enum ibp_link_status)c->a
								    : IBP_LINK_GONE;
}

/* Receives the control message OP; an ABORT from the peer ends the link. */
static int recv_ctrl(struct ibp_rt_link *l, int fd, uint8_t op, struct ibp_oob_ctrl *c,
		     int64_t deadline)
{
	struct ibp_oob_msg m;
	int rc = ibp_seal_recv(fd, &l->seal, &m, deadline);

	if (rc) {
		ibp_rt_link_fail(l, status_of(rc), rc, "waiting for the peer: %s", errtext(rc));
		return rc;
	}
	if (m.type == IBP_OOB_CTRL && m.u.ctrl.op == IBP_CTRL_ABORT) {
		enum ibp_link_status st =
		    m.u.ctrl.a > IBP_LINK_PASS && m.u.ctrl.a < IBP_LINK_STATUS_COUNT
			? (enum ibp_link_status)m.u.ctrl.a
			: IBP_LINK_GONE;

		ibp_rt_link_fail(l, st, m.u.ctrl.status, "the peer gave up: %s (%s)",
				 ibp_link_status_name(st), errtext(m.u.ctrl.status));
		return -ECONNABORTED;
	}
	if (m.type != IBP_OOB_CTRL || m.u.ctrl.op != op) {
		ibp_rt_link_fail(l, IBP_LINK_PROTOCOL, -EPROTO,
				 "expected control message %u, got type %u op %u", op, m.type,
				 m.type == IBP_OOB_CTRL ? m.u.ctrl.op : 0);
		return -EPROTO;
	}
	*c = m.u.ctrl;
	return 0;
}

static void send_abort(struct ibp_rt_link *l, int fd)
{
	/* Best effort, short: the peer learns why instead of waiting out its deadline. */
	send_ctrl(l, fd, IBP_CTRL_ABORT, l->r.err < 0 && l->r.err >= -4095 ? l->r.err : -EIO,
		  (uint64_t)l->r.status, 0, ibp_now_ns() + 50 * IBP_NS_PER_MS);
}

static int endpoints(struct ibp_rt_links *t, struct ibp_rt_link *l, int fd, struct ibp_tx *tx,
		     struct ibp_endpoint *peer, int64_t deadline, bool *fp_here)
{
	struct ibp_oob_msg mine, theirs;
	const struct ibp_tx_port *port = &t->rails[l->r.rail];
	const struct ibp_oob_msg *sum = ibp_rt_ring_leaf_frame(t->ring, l);
	int rc;

	ibp_oob_msg_clear(&mine, IBP_OOB_ENDPOINT);
	rc = t->ops->endpoint(tx, &mine.u.endpoint.ep);
	if (rc) {
		ibp_rt_link_fail(l, IBP_LINK_LOCAL, rc, "local endpoint: %s", strerror(-rc));
		return rc;
	}
	mine.u.endpoint.ep.rate_mbps = (uint32_t)(port->rate_gbps * 1000);
	mine.u.endpoint.rail = l->r.rail;
	mine.u.endpoint.port = port->port;
	ibp_rt_setf(mine.u.endpoint.device, sizeof(mine.u.endpoint.device), "%s", port->device);
	if (t->own_leaf)
		memcpy(mine.u.endpoint.leaf, t->own_leaf, IBP_OOB_LEAF_MAX);
	/* a leaf of the step-wide sum's tree: its sum goes up first (rdmatest_ring.c) */
	rc = sum ? ibp_seal_send(fd, &l->seal, sum, deadline) : 0;
	if (!rc && sum)
		l->sum_up = true;
	/* a small step: this node's fingerprint, once per peer */
	if (!rc && ibp_rt_fp_early(t->fps, l) && t->fps->msg && ibp_rt_fp_claim(t->fps, l)) {
		*fp_here = true;
		rc = ibp_seal_send(fd, &l->seal, t->fps->msg, deadline);
	}
	if (!rc)
		rc = ibp_seal_send(fd, &l->seal, &mine, deadline);
	if (!rc)
		rc = ibp_seal_recv(fd, &l->seal, &theirs, deadline);
	if (!rc && theirs.type == IBP_OOB_FPSUM) { /* a leaf child's, before its endpoint */
		ibp_rt_ring_link_frame(t->ring, l, &theirs.u.fpsum);
		rc = ibp_seal_recv(fd, &l->seal, &theirs, deadline);
	}
	if (!rc && theirs.type == IBP_OOB_FINGERPRINT) { /* a small step: the peer's */
		if (ibp_rt_fp_early(t->fps, l)) {
			pthread_mutex_lock(&t->x->mu);
			ibp_rt_fp_keep(t->fps, l->peer, &theirs.u.fingerprint);
			pthread_mutex_unlock(&t->x->mu);
		}
		rc = ibp_seal_recv(fd, &l->seal, &theirs, deadline);
	}
	/*
	 * The listener's end, and the connector closed before its first
	 * frame: it gave up waiting for the HELLO reply (a slow munged) and
	 * connects again; the slot is re-armed for it (in_worker).
	 */
	if (!l->out && (rc == -ECONNRESET || rc == -EPIPE) && l->rearms < IBP_RT_REARMS)
		return -EAGAIN;
	if (!l->out && !rc) {
		pthread_mutex_lock(&t->x->mu);
		l->slot = IBP_RT_SLOT_LIVE;
		pthread_mutex_unlock(&t->x->mu);
	}
	if (rc) {
		ibp_rt_link_fail(l, status_of(rc), rc, "endpoint exchange: %s", errtext(rc));
		return rc;
	}
	if (theirs.type == IBP_OOB_CTRL && theirs.u.ctrl.op == IBP_CTRL_ABORT) {
		ibp_rt_link_fail(l, abort_status(&theirs.u.ctrl), theirs.u.ctrl.status,
				 "the peer gave up: %s (%s)",
				 ibp_link_status_name(abort_status(&theirs.u.ctrl)),
				 errtext(theirs.u.ctrl.status));
		return -ECONNABORTED;
	}
	if (theirs.type != IBP_OOB_ENDPOINT || theirs.u.endpoint.rail != l->r.rail ||
	    theirs.u.endpoint.ep.kind != t->ops->kind) {
		ibp_rt_link_fail(
		    l, IBP_LINK_PROTOCOL, -EPROTO,
		    "peer endpoint unusable: type %u rail %u kind %u, expected rail %u kind %u",
		    theirs.type, theirs.u.endpoint.rail, theirs.u.endpoint.ep.kind, l->r.rail,
		    t->ops->kind);
		return -EPROTO;
	}
	ibp_rt_ring_link_over(t->ring, l, true); /* a sum came first, or none will */
	ibp_rt_setf(l->r.peer_device, sizeof(l->r.peer_device), "%s", theirs.u.endpoint.device);
	if (theirs.u.endpoint.leaf[0] && !t->x->cfg->topology) {
		pthread_mutex_lock(&t->x->mu);
		ibp_rt_leaves_add(t->leaves, t->x->n, l->peer, theirs.u.endpoint.leaf);
		pthread_mutex_unlock(&t->x->mu);
	}
	l->r.peer_port = theirs.u.endpoint.port;
	l->peer_rate_mbps = theirs.u.endpoint.ep.rate_mbps;
	*peer = theirs.u.endpoint.ep;
	return 0;
}

/*
 * The endpoints, with this node's early fingerprint: it reached the peer
 * when the exchange went through (the peer read it before this node's
 * endpoint).  Else, and when the peer connects again (-EAGAIN: it may have
 * read nothing), the claim goes back: the next try, another link or the
 * summary carries it.
 */
static int exchange_endpoints(struct ibp_rt_links *t, struct ibp_rt_link *l, int fd,
			      struct ibp_tx *tx, struct ibp_endpoint *peer, int64_t deadline)
{
	bool fp_here = false;
	int rc = endpoints(t, l, fd, tx, peer, deadline, &fp_here);

	if (fp_here)
		ibp_rt_fp_claim_done(t->fps, l, rc == 0);
	return rc;
}

static int tx_open(struct ibp_rt_links *t, struct ibp_rt_link *l, struct ibp_tx **tx, char *err,
		   size_t errlen)
{
	struct ibp_tx_opts opts = {.buf_len = t->buf_len, .err = err, .errlen = errlen};
	int rc = t->ops->open(&t->rails[l->r.rail], &opts, tx);

	if (rc)
		ibp_rt_link_fail(l, IBP_LINK_LOCAL, rc, "%s %s port %u: %s", t->ops->name,
				 l->r.device[0] ? l->r.device : t->x->my_addr, l->r.port,
				 err[0] ? err : strerror(-rc));
	return rc;
}

/*
 * After a local step failed: did the peer give up first?  Its (sealed)
 * reason is the better one: a peer that found our frames altered on the
 * way aborts, and our data path to it then fails too; that is an
 * authentication failure, not a data path down.  Waits 100 ms at most.
 */
static bool peer_gave_up(struct ibp_rt_link *l, int fd, int64_t deadline)
{
	struct ibp_oob_msg m;
	int64_t until = ibp_deadline_min(deadline, ibp_now_ns() + 100 * IBP_NS_PER_MS);

	if (ibp_oob_wait_fd(fd, POLLIN, until) || ibp_seal_recv(fd, &l->seal, &m, until) ||
	    m.type != IBP_OOB_CTRL || m.u.ctrl.op != IBP_CTRL_ABORT)
		return false;
	ibp_rt_link_fail(l, abort_status(&m.u.ctrl), m.u.ctrl.status, "the peer gave up: %s (%s)",
			 ibp_link_status_name(abort_status(&m.u.ctrl)), errtext(m.u.ctrl.status));
	return true;
}

/*
 * Both roles' data path: open the local port, swap endpoints over FD,
 * connect.  0, or -1 with the link's outcome recorded, or -EAGAIN (the
 * listener's end: the connector left before its first frame, nothing
 * recorded); *TX may be set either way (the caller closes it).  ERR stays the transport's message
 * buffer for the later operations.
 */
static int link_connect(struct ibp_rt_links *t, struct ibp_rt_link *l, int fd,
			enum ibp_tx_role role, struct ibp_tx **tx, char *err, size_t errlen,
			int64_t deadline)
{
	struct ibp_endpoint peer;
	int rc;

	if (tx_open(t, l, tx, err, errlen))
		return -1;
	rc = exchange_endpoints(t, l, fd, *tx, &peer, deadline);
	if (rc)
		return rc == -EAGAIN ? -EAGAIN : -1;
	if (l->out && t->probes)
		ibp_rt_probe_endpoint(t->probes, l->r.round, l->r.rail, &peer);
	rc = t->ops->connect(*tx, &peer, role, deadline);
	if (l->out && t->probes)
		ibp_rt_probe_path(t->probes, l->r.round, l->r.rail, rc == 0);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			ibp_rt_link_fail(l,
					 rc == -ETIMEDOUT ? IBP_LINK_TIMEOUT : IBP_LINK_TRANSPORT,
					 rc, "data path: %s", err[0] ? err : strerror(-rc));
		return -1;
	}
	return 0;
}

static void link_sender(struct ibp_rt_links *t, struct ibp_rt_link *l, int fd, int64_t deadline)
{
	char err[IBP_TEXT_MAX] = "";
	struct ibp_oob_ctrl c;
	struct ibp_tx *tx = NULL;
	uint64_t seed = ibp_rt_random64(), ns = 0;
	double floor_gbps = 0;
	int rc;

	if (link_connect(t, l, fd, IBP_TX_SENDER, &tx, err, sizeof(err), deadline))
		goto abort;
	rc = send_ctrl(l, fd, IBP_CTRL_READY, 0, t->burst, IBP_RDMATEST_LAT_ITERS, deadline);
	if (!rc)
		rc = send_ctrl(l, fd, IBP_CTRL_PATTERN_SENT, 0, seed, t->buf_len, deadline);
	if (rc) {
		ibp_rt_link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	rc = t->ops->send_pattern(tx, seed, t->buf_len, deadline);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			ibp_rt_link_fail(l, status_of(rc), rc, "pattern: %s",
					 err[0] ? err : strerror(-rc));
		goto abort;
	}
	if (recv_ctrl(l, fd, IBP_CTRL_PATTERN_RESULT, &c, deadline))
		goto done;
	if (c.status == -EBADMSG) {
		ibp_rt_link_fail(l, IBP_LINK_CORRUPT, -EBADMSG,
				 "pattern arrived corrupted at byte %llu of %zu",
				 (unsigned long long)c.a, t->buf_len);
		goto verdict;
	}
	if (c.status) {
		ibp_rt_link_fail(l, status_of(c.status), c.status,
				 "the receiver could not check the pattern: %s",
				 strerror(-c.status));
		goto verdict;
	}
	rc = t->ops->bw_send(tx, t->burst, deadline, &ns);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			ibp_rt_link_fail(l, status_of(rc), rc, "bandwidth burst: %s",
					 err[0] ? err : strerror(-rc));
		goto abort;
	}
	l->r.gbps = ns ? (double)t->burst * 8.0 / (double)ns : 0;
	rc = send_ctrl(l, fd, IBP_CTRL_BW_RESULT, 0, t->burst, ns, deadline);
	if (rc) {
		/* Without an outcome the link would stay untested: no record, no blame. */
		ibp_rt_link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	rc = t->ops->lat_ping(tx, IBP_RDMATEST_LAT_ITERS, deadline, &ns);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			ibp_rt_link_fail(l, status_of(rc), rc, "latency: %s",
					 err[0] ? err : strerror(-rc));
		goto abort;
	}
	l->r.lat_us = (double)ns / 1000.0;
	rc = send_ctrl(l, fd, IBP_CTRL_LAT_RESULT, 0, IBP_RDMATEST_LAT_ITERS, ns, deadline);
	if (rc) {
		ibp_rt_link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	if (t->rails[l->r.rail].rate_gbps > 0 && l->peer_rate_mbps) {
		double slower = t->rails[l->r.rail].rate_gbps;

		if (l->peer_rate_mbps / 1000.0 < slower)
			slower = l->peer_rate_mbps / 1000.0;
		floor_gbps = slower * t->x->pol->test_min_bw;
		l->r.expect_gbps = floor_gbps;
	}
	if (floor_gbps > 0 && l->r.gbps < floor_gbps)
		ibp_rt_link_fail(l, IBP_LINK_BW_LOW, 0,
				 "burst of %llu bytes at %.2f Gb/s, floor %.2f Gb/s",
				 (unsigned long long)t->burst, l->r.gbps, floor_gbps);
	else if (l->r.lat_us > t->x->pol->test_max_lat_us)
		ibp_rt_link_fail(l, IBP_LINK_LAT_HIGH, 0, "round trip %.0f us, limit %u us",
				 l->r.lat_us, t->x->pol->test_max_lat_us);
	else
		l->r.status = IBP_LINK_PASS;
verdict:
	send_ctrl(l, fd, IBP_CTRL_VERDICT, 0, (uint64_t)l->r.status, 0, deadline);
	goto done;
abort:
	send_abort(l, fd);
done:
	if (tx)
		t->ops->close(tx);
}

/* ---- the receiving side ------------------------------------------------- */

/* The listener's end of one link; false, or true when the slot is to be re-armed. */
static bool link_receiver(struct ibp_rt_links *t, struct ibp_rt_link *l, int fd, int64_t deadline)
{
	char err[IBP_TEXT_MAX] = "";
	struct ibp_oob_ctrl ready, pat, c;
	struct ibp_tx *tx = NULL;
	size_t bad = 0;
	int rc;

	rc = link_connect(t, l, fd, IBP_TX_RECEIVER, &tx, err, sizeof(err), deadline);
	if (rc == -EAGAIN) {
		if (tx)
			t->ops->close(tx);
		return true;
	}
	if (rc)
		goto abort;
	if (recv_ctrl(l, fd, IBP_CTRL_READY, &ready, deadline) ||
	    recv_ctrl(l, fd, IBP_CTRL_PATTERN_SENT, &pat, deadline))
		goto done;
	if (pat.b == 0 || pat.b > t->buf_len || ready.a == 0 || ready.a > (1ull << 32) ||
	    ready.b == 0 || ready.b > 64) {
		ibp_rt_link_fail(l, IBP_LINK_PROTOCOL, -EPROTO,
				 "peer asks for a %llu-byte pattern, %llu-byte burst, %llu pings; "
				 "limits %zu, 4 GiB, 64",
				 (unsigned long long)pat.b, (unsigned long long)ready.a,
				 (unsigned long long)ready.b, t->buf_len);
		goto abort;
	}
	rc = t->ops->recv_pattern(tx, pat.a, (size_t)pat.b, deadline, &bad);
	if (rc == -EBADMSG) {
		ibp_rt_link_fail(l, IBP_LINK_CORRUPT, rc,
				 "pattern arrived corrupted at byte %zu of %llu", bad,
				 (unsigned long long)pat.b);
		send_ctrl(l, fd, IBP_CTRL_PATTERN_RESULT, -EBADMSG, bad, 0, deadline);
		goto done;
	}
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			ibp_rt_link_fail(l, status_of(rc), rc, "pattern: %s",
					 err[0] ? err : strerror(-rc));
		goto abort;
	}
	rc = send_ctrl(l, fd, IBP_CTRL_PATTERN_RESULT, 0, 0, 0, deadline);
	if (rc) {
		ibp_rt_link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	rc = t->ops->bw_recv(tx, ready.a, deadline);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			ibp_rt_link_fail(l, status_of(rc), rc, "bandwidth burst: %s",
					 err[0] ? err : strerror(-rc));
		goto abort;
	}
	if (recv_ctrl(l, fd, IBP_CTRL_BW_RESULT, &c, deadline))
		goto done;
	l->r.gbps = c.b ? (double)c.a * 8.0 / (double)c.b : 0;
	rc = t->ops->lat_pong(tx, (unsigned)ready.b, deadline);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			ibp_rt_link_fail(l, status_of(rc), rc, "latency: %s",
					 err[0] ? err : strerror(-rc));
		goto abort;
	}
	if (recv_ctrl(l, fd, IBP_CTRL_LAT_RESULT, &c, deadline))
		goto done;
	l->r.lat_us = (double)c.b / 1000.0;
	if (recv_ctrl(l, fd, IBP_CTRL_VERDICT, &c, deadline))
		goto done;
	if (c.a == IBP_LINK_PASS)
		l->r.status = IBP_LINK_PASS;
	else if (c.a < IBP_LINK_STATUS_COUNT)
		ibp_rt_link_fail(
		    l, (enum ibp_link_status)c.a, 0, "the sender measured %s (%.2f Gb/s, %.0f us)",
		    ibp_link_status_name((enum ibp_link_status)c.a), l->r.gbps, l->r.lat_us);
	else
		ibp_rt_link_fail(l, IBP_LINK_PROTOCOL, -EPROTO, "bad verdict %llu",
				 (unsigned long long)c.a);
	goto done;
abort:
	send_abort(l, fd);
done:
	if (tx && t->keep_rx)
		l->tx =
		    tx; /* its listener answers the peer's cross-rail probes until the run ends */
	else if (tx)
		t->ops->close(tx);
	return false;
}

/* ---- workers ------------------------------------------------------------ */

static int64_t round_deadline(const struct ibp_rt_links *t, unsigned round)
{
	return t->x->round_end[round - 1];
}

static void *out_worker(void *arg)
{
	struct ibp_rt_worker *w = arg;
	struct ibp_rt_links *t = w->t;

	for (unsigned r = 1; r <= ibp_rt_n_rounds(t->x); r++) {
		struct ibp_rt_link *l = ibp_rt_link_at(t->x, w->rail, r, true);
		int64_t deadline = round_deadline(t, r);
		int fd = ibp_rt_connect(t->x, l, deadline);

		if (fd >= 0) {
			pthread_mutex_lock(&t->x->mu);
			l->fd = fd;
			pthread_mutex_unlock(&t->x->mu);
			link_sender(t, l, fd, deadline);
		}
		ibp_rt_ring_link_over(t->ring, l, false); /* no leaf child's sum after this */
	}
	return NULL;
}

static int wait_slot(struct ibp_rt_links *t, struct ibp_rt_link *l, int64_t deadline, char *reject,
		     size_t rlen)
{
	struct timespec ts = {.tv_sec = deadline / IBP_NS_PER_S,
			      .tv_nsec = deadline % IBP_NS_PER_S};
	int fd = -1;
	bool skipped;

	pthread_mutex_lock(&t->x->mu);
	while (l->slot == IBP_RT_SLOT_EMPTY) {
		if (pthread_cond_timedwait(&t->x->cv, &t->x->mu, &ts) == ETIMEDOUT)
			break;
	}
	if (l->slot == IBP_RT_SLOT_FILLED)
		fd = l->fd;
	else
		l->slot = IBP_RT_SLOT_CLOSED; /* a late claimant is refused */
	ibp_rt_setf(reject, rlen, "%s", l->skip[0] ? l->skip : l->reject);
	skipped = l->skip[0] != '\0';
	pthread_mutex_unlock(&t->x->mu);
	if (skipped)
		fd = -ENXIO;
	return fd;
}

/* One round of an in-link: the connections the acceptor hands over, and the test on them. */
static void in_round(struct ibp_rt_links *t, struct ibp_rt_link *l, int64_t deadline)
{
	char reject[IBP_TEXT_MAX];
	int fd = wait_slot(t, l, deadline, reject, sizeof(reject));
	bool version_seen;
	unsigned version;

	while (fd >= 0 && link_receiver(t, l, fd, deadline)) {
		pthread_mutex_lock(&t->x->mu);
		close(l->fd);
		l->fd = -1;
		ibp_seal_clear(&l->seal);
		l->rearms++;
		l->slot = IBP_RT_SLOT_EMPTY;
		pthread_mutex_unlock(&t->x->mu);
		fd = wait_slot(t, l, deadline, reject, sizeof(reject));
	}
	pthread_mutex_lock(&t->x->mu);
	if (l->slot == IBP_RT_SLOT_FILLED)
		l->slot = IBP_RT_SLOT_LIVE; /* the link ended: the acceptor need not stay */
	version_seen = l->version_seen;
	version = l->peer_version;
	pthread_mutex_unlock(&t->x->mu);
	if (fd == -ENXIO) {
		ibp_rt_rail_missing(t->x, l, reject);
		return;
	}
	if (fd >= 0)
		return;
	/* Only a hello from the peer's own address leaves a reject. */
	if (reject[0])
		ibp_rt_link_fail(l, IBP_LINK_AUTH, -EACCES,
				 "no connection from %s authenticated by the deadline; %s",
				 ibp_rt_node_name(t->x, l->peer), reject);
	else if (version_seen && !l->rearms)
		/*
		 * As on the sending side, a reject of this version outweighs
		 * it, and so does a connection of this version that
		 * authenticated (then closed): the claim was not the peer's.
		 */
		ibp_rt_link_fail(
		    l, IBP_LINK_VERSION, -EPROTONOSUPPORT,
		    "%s answers with protocol %u (its hello from %s), %s speaks %u: not tested",
		    ibp_rt_node_name(t->x, l->peer), version, l->peer_addr,
		    ibp_rt_node_name(t->x, t->x->me), ibp_oob_wire_version());
	else
		ibp_rt_link_fail(
		    l, IBP_LINK_UNREACHABLE, -ETIMEDOUT, "no connection from %s by the deadline%s",
		    ibp_rt_node_name(t->x, l->peer),
		    l->rearms ? " (it had closed an authenticated one before its first frame)"
			      : "");
}

static void *in_worker(void *arg)
{
	struct ibp_rt_worker *w = arg;
	struct ibp_rt_links *t = w->t;

	for (unsigned r = 1; r <= ibp_rt_n_rounds(t->x); r++) {
		struct ibp_rt_link *l = ibp_rt_link_at(t->x, w->rail, r, false);

		in_round(t, l, round_deadline(t, r));
		ibp_rt_ring_link_over(t->ring, l, false); /* no leaf child's sum after this */
	}
	return NULL;
}

/*
 * A peer whose own hello to this node came in another protocol version
 * (and never one of this version that authenticated or failed to): builds
 * before this one (version 6 and older) close a hello of another version
 * unanswered, so this node's links to it found "nobody" and read
 * unreachable.  They are the same mismatch, not a dead peer: said so,
 * before the summaries carry them.  Only links that got no answer at all
 * (an answer of this version that failed authentication stays
 * IBP_LINK_AUTH), and only on what this node heard itself, as unverified
 * as any version claim (docs/security.md).
 */
void ibp_rt_links_versions(const struct ibp_rt_ctx *x)
{
	for (size_t i = 0; i < x->n_links; i++) {
		struct ibp_rt_link *l = &x->links[i];

		if (!l->out || (l->r.status != IBP_LINK_UNREACHABLE &&
				(l->r.status != IBP_LINK_AUTH || !l->closed_unanswered)))
			continue;
		for (size_t k = 0; k < x->n_links; k++) {
			const struct ibp_rt_link *in = &x->links[k];

			/* the in-link itself ended so: the peer never authenticated on it */
			if (in->out || in->peer != l->peer || in->r.status != IBP_LINK_VERSION)
				continue;
			l->r.status = IBP_LINK_VERSION;
			l->r.err = -EPROTONOSUPPORT;
			l->version_seen = true;
			l->peer_version = in->peer_version;
			ibp_rt_setf(
			    l->r.detail, sizeof(l->r.detail),
			    "%s answers with protocol %u (its hello from %s), %s speaks %u: "
			    "no answer to this node's hello there; not tested",
			    ibp_rt_node_name(x, l->peer), in->peer_version, in->peer_addr,
			    ibp_rt_node_name(x, x->me), ibp_oob_wire_version());
			break;
		}
	}
}

void ibp_rt_links_start(struct ibp_rt_links *t)
{
	t->n_w = 0;
	for (size_t k = 0; k < t->x->n_rails; k++) {
		for (int o = 0; o < 2; o++) {
			struct ibp_rt_worker *w = &t->w[t->n_w++];

			*w = (struct ibp_rt_worker){.t = t, .rail = k, .out = o};
			w->started = !pthread_create(&w->th, NULL, o ? out_worker : in_worker, w);
			if (!w->started)
				for (unsigned r = 1; r <= ibp_rt_n_rounds(t->x); r++)
					ibp_rt_link_fail(ibp_rt_link_at(t->x, k, r, o),
							 IBP_LINK_LOCAL, -EAGAIN,
							 "cannot start a test thread");
		}
	}
}

void ibp_rt_links_join(struct ibp_rt_links *t)
{
	for (size_t i = 0; i < t->n_w; i++)
		if (t->w[i].started)
			pthread_join(t->w[i].th, NULL);
}
