/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_link.c: the links' tests (rdmatest_link.h): one connection per
 * round and direction carries every rail (a channel: the rail-0 link's
 * connection, its HELLO, its keys), and the rails' data paths run at once,
 * one thread each (a crew), in phases every rail goes through together:
 *
 *   endpoints   each side sends one ENDPOINT per rail (an ABORT for a rail
 *               it could not open), all in one BATCH, then reads the peer's
 *   connect     every rail's data path (the crew)
 *   ready       each side says READY or ABORT per rail (the sender adds
 *               PATTERN_SENT); a rail goes on only when both said READY
 *   pattern     sender writes, receiver checks (the crew), then both say
 *               PATTERN_RESULT per rail still on
 *   burst       the same with BW_RESULT
 *   round trips the same with LAT_RESULT
 *   verdict     the sender's VERDICT for every rail
 *
 * After each phase both sides send one frame per rail still on, in one
 * sealed BATCH (chan_hold), and read the peer's: the same frames in the
 * same order, so both always agree which rails go on, with no rail tag on
 * the wire.  A rail whose step fails stops there; its peer's sealed
 * reason, when it gave one, is the one kept.  Each phase's data path steps end by half of what is left of
 * the round, so a dead rail holds the others back at most that long.
 *
 * After the two HELLOs every frame on a channel is sealed (seal.h):
 * nothing of a frame is used before its MAC and sequence number check.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ibprep/text.h"
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

/* The status a peer's ABORT carries, GONE when it names none. */
static enum ibp_link_status abort_status(const struct ibp_oob_ctrl *c)
{
	return c->a > IBP_LINK_PASS && c->a < IBP_LINK_STATUS_COUNT ? (enum ibp_link_status)c->a
								    : IBP_LINK_GONE;
}

/* ---- the crew: one thread per rail but rail 0's, which is the caller's ---- */

struct crew {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned gen;
	size_t pending;
	bool quit;
	void (*fn)(void *arg, size_t rail);
	void *arg;
	bool on[IBP_RDMATEST_MAX_RAILS]; /* this run's rails (a member late to wake reads it) */
	size_t n;
	/*
	 * The worker's datagram sockets, left by one round to its next
	 * (transport.h, struct ibp_tx_opts): txs are opened in the worker's
	 * own thread only (chan_run), and it frees the cache when its rounds
	 * are over (worker_end).
	 */
	struct ibp_tx_cache *cache;
	struct crew_member {
		struct crew *c;
		size_t rail;
		pthread_t th;
		bool started;
	} m[IBP_RDMATEST_MAX_RAILS];
};

static void *crew_member(void *arg)
{
	struct crew_member *m = arg;
	struct crew *c = m->c;
	unsigned seen = 0;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		void (*fn)(void *, size_t);
		void *fa;
		bool on;

		while (c->gen == seen && !c->quit)
			pthread_cond_wait(&c->go, &c->mu);
		if (c->quit)
			break;
		seen = c->gen;
		fn = c->fn;
		fa = c->arg;
		on = c->on[m->rail];
		pthread_mutex_unlock(&c->mu);
		if (on)
			fn(fa, m->rail);
		pthread_mutex_lock(&c->mu);
		if (on && --c->pending == 0)
			pthread_cond_signal(&c->done);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void crew_start(struct crew *c, size_t n)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->done, NULL);
	c->n = n;
	for (size_t k = 1; k < n; k++) {
		c->m[k] = (struct crew_member){.c = c, .rail = k};
		c->m[k].started = !pthread_create(&c->m[k].th, NULL, crew_member, &c->m[k]);
	}
}

/* FN(ARG, k) for every rail k with ON[k], at once; returns when all are done. */
static void crew_run(struct crew *c, void (*fn)(void *, size_t), void *arg, const bool *on)
{
	size_t helped = 0;

	pthread_mutex_lock(&c->mu);
	c->fn = fn;
	c->arg = arg;
	memcpy(c->on, on, sizeof(c->on));
	for (size_t k = 1; k < c->n; k++)
		helped += c->m[k].started && on[k];
	c->pending = helped;
	c->gen++;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->mu);
	if (on[0])
		fn(arg, 0);
	/* a rail whose thread did not start runs here, after the others began */
	for (size_t k = 1; k < c->n; k++)
		if (!c->m[k].started && on[k])
			fn(arg, k);
	pthread_mutex_lock(&c->mu);
	while (c->pending)
		pthread_cond_wait(&c->done, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

static void crew_stop(struct crew *c)
{
	pthread_mutex_lock(&c->mu);
	c->quit = true;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->mu);
	for (size_t k = 1; k < c->n; k++)
		if (c->m[k].started)
			pthread_join(c->m[k].th, NULL);
	pthread_cond_destroy(&c->done);
	pthread_cond_destroy(&c->go);
	pthread_mutex_destroy(&c->mu);
}

/* ---- one channel: a round's connection in one direction, every rail on it ---- */

struct rail {
	struct ibp_rt_link *l;
	struct ibp_tx *tx;
	struct ibp_endpoint peer;
	bool on;   /* still in the test */
	int rc;    /* the phase's local result */
	int64_t t; /* the phase's deadline for the data path */
	char err[IBP_TEXT_MAX];
	uint64_t seed, ns;
	size_t bad;
	struct ibp_oob_ctrl ready, pat; /* the receiver's: what the sender announced */
};

struct chan {
	struct ibp_rt_links *t;
	struct ibp_rt_link *l0; /* rail 0's link: the connection, its keys */
	int fd;
	unsigned round;
	bool out;
	size_t p; /* the rails both ends test */
	int64_t deadline;
	int broken; /* the connection failed: -errno, every rail still on fails with it */
	struct rail r[IBP_RDMATEST_MAX_RAILS];
	struct crew *crew;
	/*
	 * Every rail's word of a step (its ENDPOINT or CTRL frame) held for
	 * one BATCH (chan_hold, chan_flush; protocol 21, ENDPOINTs since 22):
	 * encoded unsealed after room for its header, sealed once and written
	 * at chan_flush: one tag, one system call and one loopback or network
	 * segment for every rail instead of one each.
	 */
	bool held;
	size_t held_len;
	uint8_t held_buf[IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX + IBP_SEAL_OVERHEAD];
	/*
	 * The peer's whole ENDPOINT and CTRL frames, read ahead in one recv
	 * (chan_take): the peer writes every rail's word of a step at once,
	 * and two reads per frame (header, then the rest) were most of what
	 * a rail beyond rail 0 cost.  Never a frame of another type (a
	 * SUMMARY after the channel is the caller's to read).
	 */
	size_t rb_off, rb_len;
	uint8_t rb[8192];
	/* the peer's BATCH being taken: its payload (in rb), the next frame's offset */
	const uint8_t *bt;
	size_t bt_off, bt_len;
};

_Static_assert(IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX + IBP_SEAL_OVERHEAD <= 8192,
	       "a batch fits the read-ahead buffer");

static void chan_broken(struct chan *c, int rc, const char *what);

/* The ENDPOINT and CTRL frames sent from now on wait for chan_flush, in one BATCH. */
static void chan_hold(struct chan *c)
{
	c->held = true;
	c->held_len = 0;
}

/* Seals the held frames' BATCH and writes it.  0 or -errno (the connection broke). */
static int chan_write_held(struct chan *c, int64_t deadline)
{
	size_t len = c->held_len;
	int rc;

	c->held_len = 0;
	if (!len)
		return 0;
	rc = ibp_seal_encode_batch(&c->l0->seal, c->held_buf, len, sizeof(c->held_buf));
	if (rc < 0)
		return rc;
	return ibp_oob_write_full(c->fd, c->held_buf, (size_t)rc, deadline);
}

static int chan_flush(struct chan *c)
{
	int rc;

	c->held = false;
	if (c->broken) {
		c->held_len = 0;
		return c->broken;
	}
	rc = chan_write_held(c, c->deadline);
	if (rc)
		chan_broken(c, rc, "control");
	return rc;
}

/* Every rail still on fails with the connection's error. */
static void chan_broken(struct chan *c, int rc, const char *what)
{
	struct ibp_oob_msg m;
	int64_t until = ibp_deadline_min(c->deadline, ibp_now_ns() + 50 * IBP_NS_PER_MS);

	/* a frame refused: which, and why (a type, a length, a tag: seal.h) */
	const char *refused = c->l0->seal.refused[0] && (rc == -EKEYREJECTED || rc == -EBADMSG)
				  ? c->l0->seal.refused
				  : NULL;

	c->broken = rc;
	c->held = false;
	for (size_t k = 0; k < c->p; k++) {
		if (!c->r[k].on)
			continue;
		c->r[k].on = false;
		ibp_rt_link_fail(c->r[k].l, status_of(rc), rc, "%s: %s%s%s", what, errtext(rc),
				 refused ? ": " : "", refused ? refused : "");
	}
	/*
	 * What this end read was bad or late (a frame that failed its MAC,
	 * out of step, the deadline): the peer learns why, one ABORT in the
	 * place of every rail's next frame (best effort, short), instead of
	 * waiting out its deadline or reading the summary as a link frame.
	 * Extra ones are skipped where the peer reads no more link frames.
	 */
	if (rc == -ECONNRESET || rc == -EPIPE || !strcmp(what, "control")) {
		c->held_len = 0;
		return;
	}
	if (chan_write_held(c, until)) /* the frames before, in their order */
		return;
	ibp_oob_msg_clear(&m, IBP_OOB_CTRL);
	m.u.ctrl.op = IBP_CTRL_ABORT;
	m.u.ctrl.status = rc < 0 && rc >= -4095 ? rc : -EIO;
	m.u.ctrl.a = (uint64_t)status_of(rc);
	for (size_t k = 0; k < c->p; k++)
		if (ibp_seal_send(c->fd, &c->l0->seal, &m, until))
			break;
}

static int chan_send(struct chan *c, const struct ibp_oob_msg *m)
{
	int rc;

	if (c->broken)
		return c->broken;
	if (c->held && (IBP_OOB_TYPE_BIT(m->type) & IBP_OOB_BATCH_TYPES)) {
		rc = ibp_oob_encode(m, c->held_buf + IBP_OOB_HDR_LEN + c->held_len,
				    IBP_OOB_BATCH_MAX - c->held_len);
		if (rc == -ENOSPC && c->held_len) { /* full: this frame opens the next batch */
			rc = chan_write_held(c, c->deadline);
			if (!rc)
				rc = ibp_oob_encode(m, c->held_buf + IBP_OOB_HDR_LEN,
						    IBP_OOB_BATCH_MAX);
		}
		if (rc < 0) {
			chan_broken(c, rc, "control");
			return rc;
		}
		c->held_len += (size_t)rc;
		return 0;
	}
	if (c->held) {
		rc = chan_write_held(c, c->deadline);
		if (rc) {
			chan_broken(c, rc, "control");
			return rc;
		}
	}
	rc = ibp_seal_send(c->fd, &c->l0->seal, m, c->deadline);
	if (rc)
		chan_broken(c, rc, "control");
	return rc;
}

static int chan_ctrl(struct chan *c, uint8_t op, int32_t status, uint64_t a, uint64_t b)
{
	struct ibp_oob_msg m;

	ibp_oob_msg_clear(&m, IBP_OOB_CTRL);
	m.u.ctrl.op = op;
	m.u.ctrl.status = status;
	m.u.ctrl.a = a;
	m.u.ctrl.b = b;
	return chan_send(c, &m);
}

/* Rail K is off: its ABORT carries its outcome so far. */
static int chan_abort(struct chan *c, size_t k)
{
	const struct ibp_rt_link *l = c->r[k].l;

	return chan_ctrl(c, IBP_CTRL_ABORT, l->r.err < 0 && l->r.err >= -4095 ? l->r.err : -EIO,
			 (uint64_t)l->r.status, 0);
}

/*
 * Waits until the channel is readable (0), or -errno (its deadline), while
 * the channel's txs that must keep answering do (transport.h, idle: a
 * datagram receiver's lost REPLY, the HELLO come again).
 */
static int chan_wait(struct chan *c)
{
	const struct ibp_transport_ops *ops = c->t->ops;
	struct pollfd pfd[1 + IBP_RDMATEST_MAX_RAILS];
	size_t who[1 + IBP_RDMATEST_MAX_RAILS];

	if (!ops->idle_fd || !ops->idle)
		return ibp_oob_wait_fd(c->fd, POLLIN, c->deadline);
	for (;;) {
		nfds_t n = 1;
		int ms = ibp_deadline_poll_ms(c->deadline, ibp_now_ns()), got;

		pfd[0] = (struct pollfd){.fd = c->fd, .events = POLLIN};
		for (size_t k = 0; k < c->p; k++) {
			int fd = c->r[k].tx ? ops->idle_fd(c->r[k].tx) : -1;

			if (fd < 0)
				continue;
			pfd[n] = (struct pollfd){.fd = fd, .events = POLLIN};
			who[n++] = k;
		}
		if (ms == 0)
			return -ETIMEDOUT;
		got = poll(pfd, n, ms);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		for (nfds_t i = 1; i < n; i++)
			if (pfd[i].revents)
				ops->idle(c->r[who[i]].tx);
		if (pfd[0].revents)
			return 0;
	}
}

/*
 * Reads ahead the whole ENDPOINT and CTRL frames waiting on the channel,
 * up to the first frame of another type or not all there: 1 when some
 * were, 0 when none (the caller reads the next frame as it comes), or
 * -errno.
 */
static int chan_read_ahead(struct chan *c)
{
	size_t take = 0;
	ssize_t n;

	c->rb_off = c->rb_len = 0;
	for (;;) {
		n = recv(c->fd, c->rb, sizeof(c->rb), MSG_PEEK | MSG_DONTWAIT);
		if (n > 0)
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || chan_wait(c))
			return 0; /* the plain read says what it is */
	}
	while (take + IBP_OOB_HDR_LEN <= (size_t)n) {
		unsigned type;
		size_t plen;

		if (ibp_oob_decode_header(c->rb + take, IBP_OOB_HDR_LEN, &type, &plen) ||
		    (type != IBP_OOB_CTRL && type != IBP_OOB_ENDPOINT && type != IBP_OOB_BATCH) ||
		    take + IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD > (size_t)n)
			break;
		take += IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD;
	}
	if (!take)
		return 0;
	n = recv(c->fd, c->rb, take, MSG_DONTWAIT); /* the bytes just seen: nobody else reads */
	if (n != (ssize_t)take)
		return n < 0 ? -errno : -EIO;
	c->rb_len = take;
	return 1;
}

/*
 * The peer's next frame as it comes, whole, into rb: 1.  ibp_seal_recv's
 * checks of its header (anything but a sealed frame is -EKEYREJECTED); a
 * frame too long for rb (a FINGERPRINT or FPSUM before the endpoints, at
 * its longest) is read through the heap and decoded into M as
 * ibp_seal_recv would (its results).
 */
static int chan_read_one(struct chan *c, struct ibp_seal *s, struct ibp_oob_msg *m)
{
	unsigned type;
	size_t plen, len;
	uint8_t *buf = c->rb;
	int rc = ibp_oob_read_full(c->fd, c->rb, IBP_OOB_HDR_LEN, c->deadline);

	if (rc)
		return rc;
	rc = ibp_oob_decode_header(c->rb, IBP_OOB_HDR_LEN, &type, &plen);
	if (rc == -EBADMSG || rc == -EPROTONOSUPPORT) {
		ibp_oob_header_why(c->rb, IBP_OOB_HDR_LEN, s->refused, sizeof(s->refused));
		return -EKEYREJECTED;
	}
	if (!rc && !ibp_oob_sealed(type)) {
		ibp_rt_setf(s->refused, sizeof(s->refused), "%s frame, never sealed",
			    ibp_oob_type_name(type));
		return -EKEYREJECTED;
	}
	if (rc)
		return rc;
	len = IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD; /* PLEN within the type's bounds */
	if (len > sizeof(c->rb)) {
		buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		memcpy(buf, c->rb, IBP_OOB_HDR_LEN);
	}
	rc = ibp_oob_read_full(c->fd, buf + IBP_OOB_HDR_LEN, len - IBP_OOB_HDR_LEN, c->deadline);
	if (buf != c->rb) {
		if (!rc)
			rc = ibp_seal_decode(s, buf, len, m);
		free(buf);
		return rc == -EBADMSG ? -EKEYREJECTED : rc;
	}
	if (rc)
		return rc;
	c->rb_off = 0;
	c->rb_len = len;
	return 1;
}

/*
 * The next frame of the peer's BATCH into M, one of TYPES (IBP_OOB_TYPE_BIT:
 * what this step reads): 0, 1 at its end, or -EKEYREJECTED (the batch is
 * no use: the link fails closed, as for a bad tag).
 */
static int chan_batch_next(struct chan *c, struct ibp_seal *s, unsigned types,
			   struct ibp_oob_msg *m)
{
	int rc = ibp_oob_batch_next(c->bt, c->bt_len, &c->bt_off, types, m);
	unsigned type;
	size_t plen;

	if (rc == 1)
		return 0;
	if (rc == 0) {
		c->bt = NULL;
		return 1;
	}
	/* the frame refused is at bt_off */
	if (!ibp_oob_decode_header(c->bt + c->bt_off, c->bt_len - c->bt_off, &type, &plen) &&
	    !(IBP_OOB_TYPE_BIT(type) & types))
		ibp_rt_setf(s->refused, sizeof(s->refused),
			    "BATCH frame, authentic, with a %s frame where %s belongs",
			    ibp_oob_type_name(type),
			    types & IBP_OOB_TYPE_BIT(IBP_OOB_ENDPOINT) ? "an ENDPOINT or CTRL"
								       : "a CTRL");
	else
		ibp_rt_setf(
		    s->refused, sizeof(s->refused),
		    "BATCH frame, authentic, with a frame cut short or that does not decode");
	c->bt = NULL;
	return -EKEYREJECTED;
}

/*
 * The peer's next sealed frame into M (ibp_seal_recv's results), read ahead
 * when it can be; a BATCH's frames one by one, each of TYPES (the types
 * this step reads, chan_batch_next).
 */
static int chan_take(struct chan *c, struct ibp_seal *s, unsigned types, struct ibp_oob_msg *m)
{
	unsigned type;
	size_t plen, len;
	int rc;

	if (c->bt) {
		rc = chan_batch_next(c, s, types, m);
		if (rc <= 0)
			return rc;
	}
	if (c->rb_off == c->rb_len) {
		rc = chan_read_ahead(c);
		if (rc == 0) {
			rc = chan_read_one(c, s, m);
			if (rc != 1)
				return rc;
		}
		if (rc < 0)
			return rc;
	}
	/* a header already checked by chan_read_ahead or chan_read_one */
	if (ibp_oob_decode_header(c->rb + c->rb_off, IBP_OOB_HDR_LEN, &type, &plen))
		return -EIO;
	len = IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD;
	rc = ibp_seal_decode(s, c->rb + c->rb_off, len, m);
	c->rb_off += len;
	if (rc == -ENOBUFS && m->type == IBP_OOB_BATCH) { /* authentic, in sequence */
		c->bt = c->rb + c->rb_off - len + IBP_OOB_HDR_LEN;
		c->bt_len = plen;
		c->bt_off = 0;
		rc = chan_batch_next(c, s, types, m);
		if (rc == 1) /* BATCH's minimum holds one frame: never empty */
			rc = -EKEYREJECTED;
	}
	return rc == -EBADMSG ? -EKEYREJECTED : rc;
}

/*
 * The peer's next frame for rail K: the control message OP (into *OUT), or
 * its ABORT (rail K is then off, with the peer's reason: 1).  0, 1, or
 * -errno when the connection broke (every rail then fails).
 */
static int chan_recv(struct chan *c, size_t k, uint8_t op, struct ibp_oob_ctrl *out)
{
	struct ibp_oob_msg m = {0}; /* a SUMMARY, FINGERPRINT or FPSUM: -ENOBUFS, refused below */
	int rc;

	if (c->broken)
		return c->broken;
	rc = chan_take(c, &c->l0->seal, IBP_OOB_TYPE_BIT(IBP_OOB_CTRL), &m);
	if (rc && rc != -ENOBUFS) {
		chan_broken(c, rc, "waiting for the peer");
		return rc;
	}
	if (m.type == IBP_OOB_CTRL && m.u.ctrl.op == IBP_CTRL_ABORT) {
		enum ibp_link_status st = abort_status(&m.u.ctrl);

		ibp_rt_link_fail(c->r[k].l, st, m.u.ctrl.status, "the peer gave up: %s (%s)",
				 ibp_link_status_name(st), errtext(m.u.ctrl.status));
		c->r[k].on = false;
		return 1;
	}
	if (m.type != IBP_OOB_CTRL || m.u.ctrl.op != op) {
		ibp_rt_link_fail(c->r[k].l, IBP_LINK_PROTOCOL, -EPROTO,
				 "expected control message %u on rail %zu, got type %u op %u", op,
				 k, m.type, m.type == IBP_OOB_CTRL ? m.u.ctrl.op : 0);
		chan_broken(c, -EPROTO, "out of step with the peer");
		return -EPROTO;
	}
	*out = m.u.ctrl;
	return 0;
}

/*
 * The data path steps' deadline: the round's, but the connections' end by
 * half of what is left of it, so that a rail whose path never comes up
 * (only a connection can wait for a peer that is not there) leaves the
 * others the other half.
 */
static void phase_deadlines(struct chan *c, bool connect)
{
	int64_t t = connect ? ibp_deadline_split(ibp_now_ns(), c->deadline, 0.5) : c->deadline;

	for (size_t k = 0; k < c->p; k++)
		c->r[k].t = t;
}

/* ---- endpoints ---- */

/*
 * Rail K's data path is a datagram exchange (transport.h): the socket
 * transport's rails beyond rail 0 (protocol 19, no FIN since 20).  Rail 0 keeps the whole
 * test over a connection: the pattern of the buffer, the burst, the
 * round trips.  Both ends decide it alike from the rail's number.
 */
static bool dgram_of(const struct ibp_rt_links *t, size_t k)
{
	return k > 0 && t->ops->kind == IBP_TX_SOCKET;
}

static int tx_open(struct chan *c, size_t k)
{
	struct ibp_rt_links *t = c->t;
	struct rail *r = &c->r[k];
	struct ibp_tx_opts opts = {.buf_len = t->buf_len,
				   .err = r->err,
				   .errlen = sizeof(r->err),
				   .sender = c->out,
				   .datagram = dgram_of(t, k),
				   .cache = &c->crew->cache};
	int rc = t->ops->open(&t->rails[k], &opts, &r->tx);

	if (rc)
		ibp_rt_link_fail(r->l, IBP_LINK_LOCAL, rc, "%s %s port %u: %s", t->ops->name,
				 r->l->r.device[0] ? r->l->r.device : t->x->my_addr, r->l->r.port,
				 r->err[0] ? r->err : strerror(-rc));
	r->err[0] = '\0';
	return rc;
}

/* Rail K's ENDPOINT, or its ABORT when it could not open. */
static int send_endpoint(struct chan *c, size_t k)
{
	struct ibp_rt_links *t = c->t;
	const struct ibp_tx_port *port = &t->rails[k];
	struct ibp_oob_msg mine;
	int rc;

	if (!c->r[k].on)
		return chan_abort(c, k);
	ibp_oob_msg_clear(&mine, IBP_OOB_ENDPOINT);
	rc = t->ops->endpoint(c->r[k].tx, &mine.u.endpoint.ep);
	if (rc) {
		ibp_rt_link_fail(c->r[k].l, IBP_LINK_LOCAL, rc, "local endpoint: %s",
				 strerror(-rc));
		c->r[k].on = false;
		return chan_abort(c, k);
	}
	mine.u.endpoint.ep.rate_mbps = (uint32_t)(port->rate_gbps * 1000);
	mine.u.endpoint.rail = (uint16_t)k;
	mine.u.endpoint.port = port->port;
	ibp_rt_setf(mine.u.endpoint.device, sizeof(mine.u.endpoint.device), "%s", port->device);
	if (t->own_leaf)
		memcpy(mine.u.endpoint.leaf, t->own_leaf, IBP_OOB_LEAF_MAX);
	return chan_send(c, &mine);
}

/*
 * The peer's endpoint of rail K (THEIRS, already read for rail 0).  A rail
 * whose endpoint does not match is a protocol error on the channel.
 */
static int take_endpoint(struct chan *c, size_t k, const struct ibp_oob_msg *theirs)
{
	struct ibp_rt_links *t = c->t;
	struct rail *r = &c->r[k];
	const struct ibp_oob_endpoint *e = &theirs->u.endpoint;

	if (theirs->type == IBP_OOB_CTRL && theirs->u.ctrl.op == IBP_CTRL_ABORT) {
		enum ibp_link_status st = abort_status(&theirs->u.ctrl);

		ibp_rt_link_fail(r->l, st, theirs->u.ctrl.status, "the peer gave up: %s (%s)",
				 ibp_link_status_name(st), errtext(theirs->u.ctrl.status));
		r->on = false;
		return 0;
	}
	if (theirs->type != IBP_OOB_ENDPOINT || e->rail != k || e->ep.kind != t->ops->kind) {
		ibp_rt_link_fail(
		    r->l, IBP_LINK_PROTOCOL, -EPROTO,
		    "peer endpoint unusable: type %u rail %u kind %u, expected rail %zu kind %u",
		    theirs->type, e->rail, e->ep.kind, k, t->ops->kind);
		chan_broken(c, -EPROTO, "out of step with the peer");
		return -EPROTO;
	}
	ibp_rt_setf(r->l->r.peer_device, sizeof(r->l->r.peer_device), "%s", e->device);
	r->l->r.peer_port = e->port;
	r->l->peer_rate_mbps = e->ep.rate_mbps;
	r->peer = e->ep;
	if (e->ep.kind == IBP_TX_SOCKET) { /* where the peer's rail is, by its address */
		memcpy(r->l->peer_ip, e->ep.gid, sizeof(r->l->peer_ip));
		r->l->peer_ip_set = true;
	}
	if (k == 0 && e->leaf[0] && !t->x->cfg->topology) {
		pthread_mutex_lock(&t->x->mu);
		ibp_rt_leaves_add(t->leaves, t->x->n, c->l0->peer, e->leaf);
		pthread_mutex_unlock(&t->x->mu);
	}
	return 0;
}

/* What the endpoint exchange reads in a BATCH: a rail's ENDPOINT, or its ABORT. */
#define ENDPOINT_TYPES (IBP_OOB_TYPE_BIT(IBP_OOB_ENDPOINT) | IBP_OOB_TYPE_BIT(IBP_OOB_CTRL))

/*
 * What comes before the peer's endpoints, THEIRS the frame after them (rail
 * 0's, the first of their BATCH): a leaf child's sum (into the ring's slot
 * for it, if it takes one) and a small step's fingerprint (kept if this
 * node compares them).  A frame of a type that has no place here is read
 * and left (-ENOBUFS).
 */
static int recv_before_endpoint(struct chan *c, struct ibp_oob_msg *theirs)
{
	struct ibp_rt_links *t = c->t;
	struct ibp_rt_link *l = c->l0;
	bool early = ibp_rt_fp_early(t->fps, l);
	struct ibp_fp *fp = early ? malloc(sizeof(*fp)) : NULL;
	int rc;

	theirs->fpsum = ibp_rt_ring_link_inbox(t->ring, l);
	theirs->fingerprint = fp;
	rc = chan_take(c, &l->seal, ENDPOINT_TYPES, theirs);
	theirs->fpsum = NULL; /* one sum frame at most */
	/* a leaf child's sum, before its endpoint (or a sum the ring takes none of) */
	if ((!rc || rc == -ENOBUFS) && theirs->type == IBP_OOB_FPSUM) {
		ibp_rt_ring_link_frame(t->ring, l, rc == 0);
		rc = chan_take(c, &l->seal, ENDPOINT_TYPES, theirs);
	}
	if ((!rc || rc == -ENOBUFS) && theirs->type == IBP_OOB_FINGERPRINT) { /* a small step's */
		if (!rc && early) {
			pthread_mutex_lock(&t->x->mu);
			ibp_rt_fp_keep(t->fps, l->peer, fp);
			pthread_mutex_unlock(&t->x->mu);
		}
		theirs->fingerprint = NULL;
		rc = chan_take(c, &l->seal, ENDPOINT_TYPES, theirs);
	}
	theirs->fingerprint = NULL;
	free(fp);
	/* a frame of another type where the endpoint belongs: said as such below */
	return rc == -ENOBUFS ? 0 : rc;
}

/*
 * The endpoints of every rail, after what rides before rail 0's (a leaf's
 * sum, a small step's fingerprint: rail 0's link carries them as before).
 * 0, -EAGAIN (the listener's end: the connector closed before its first
 * frame, to connect again), or -1 with the rails' outcomes said.
 */
static int endpoints(struct chan *c, bool *fp_here)
{
	struct ibp_rt_links *t = c->t;
	struct ibp_rt_link *l = c->l0;
	const struct ibp_oob_msg *sum = ibp_rt_ring_leaf_frame(t->ring, l);
	const struct ibp_oob_msg *fp = ibp_rt_fp_built(t->fps);
	struct ibp_oob_msg theirs = {0};
	int rc = 0;

	/* a leaf of the step-wide sum's tree: its sum goes up first (rdmatest_ring.c) */
	if (sum)
		rc = ibp_seal_send(c->fd, &l->seal, sum, c->deadline);
	if (!rc && sum)
		l->sum_up = true;
	/* a small step: this node's fingerprint, once per peer */
	if (!rc && ibp_rt_fp_early(t->fps, l) && fp && ibp_rt_fp_claim(t->fps, l)) {
		*fp_here = true;
		rc = ibp_seal_send(c->fd, &l->seal, fp, c->deadline);
	}
	chan_hold(c); /* every rail's ENDPOINT (or ABORT) under one tag */
	for (size_t k = 0; !rc && k < c->p; k++)
		rc = send_endpoint(c, k);
	if (!rc)
		rc = chan_flush(c);
	c->held = false;
	if (!rc)
		rc = recv_before_endpoint(c, &theirs);
	/*
	 * The listener's end, and the connector closed before its first
	 * frame: it gave up waiting for the HELLO reply (a slow munged) and
	 * connects again; the slot is re-armed for it (in_worker).
	 */
	if (!c->out && (rc == -ECONNRESET || rc == -EPIPE) && l->rearms < IBP_RT_REARMS)
		return -EAGAIN;
	if (!c->out && !rc) {
		pthread_mutex_lock(&t->x->mu);
		l->slot = IBP_RT_SLOT_LIVE;
		pthread_mutex_unlock(&t->x->mu);
	}
	if (rc && !c->broken)
		chan_broken(c, rc, "endpoint exchange");
	for (size_t k = 0; !rc && k < c->p; k++) {
		if (k)
			rc = chan_take(c, &l->seal, ENDPOINT_TYPES, &theirs);
		if (rc == -ENOBUFS) /* a frame of another type: refused as no endpoint below */
			rc = 0;
		if (rc) {
			chan_broken(c, rc, "endpoint exchange");
			break;
		}
		rc = take_endpoint(c, k, &theirs);
	}
	if (!c->broken)
		ibp_rt_ring_link_over(t->ring, l, true); /* a sum came first, or none will */
	for (size_t k = 0; c->out && t->probes && k < c->p; k++)
		if (c->r[k].on)
			ibp_rt_probe_endpoint(t->probes, c->round, k, &c->r[k].peer);
	return c->broken ? -1 : 0;
}

/* ---- the phases' data path steps, each rail on its own thread ---- */

/*
 * Round trips per rail: rail 0 takes IBP_RDMATEST_LAT_ITERS; the others,
 * whose links share the node's CPUs with it while they run at once, the
 * median of IBP_RDMATEST_LAT_ITERS_RAIL (a round trip over the limit is
 * still one in every sample; the burst and the pattern are whole on every
 * rail).
 */
static unsigned lat_iters(size_t rail)
{
	return rail ? IBP_RDMATEST_LAT_ITERS_RAIL : IBP_RDMATEST_LAT_ITERS;
}

static uint64_t burst_of(const struct chan *c, size_t k);
static size_t pattern_of(const struct chan *c, size_t k);

static void step_connect(void *arg, size_t k)
{
	struct chan *c = arg;
	struct rail *r = &c->r[k];

	r->rc = c->t->ops->connect(r->tx, &r->peer, c->out ? IBP_TX_SENDER : IBP_TX_RECEIVER, r->t);
	/* at once, not at the phase's end: only a late or failed path is probed */
	if (c->out && c->t->probes)
		ibp_rt_probe_path(c->t->probes, c->round, k, !r->rc);
}

static void step_pattern(void *arg, size_t k)
{
	struct chan *c = arg;
	struct rail *r = &c->r[k];

	r->bad = 0;
	if (c->out)
		r->rc = c->t->ops->send_pattern(r->tx, r->seed, pattern_of(c, k), r->t);
	else
		r->rc = c->t->ops->recv_pattern(r->tx, r->pat.a, (size_t)r->pat.b, r->t, &r->bad);
}

static void step_burst(void *arg, size_t k)
{
	struct chan *c = arg;
	struct rail *r = &c->r[k];

	r->ns = 0;
	if (c->out)
		r->rc = c->t->ops->bw_send(r->tx, burst_of(c, k), r->t, &r->ns);
	else
		r->rc = c->t->ops->bw_recv(r->tx, r->ready.a, r->t);
}

static void step_rtt(void *arg, size_t k)
{
	struct chan *c = arg;
	struct rail *r = &c->r[k];

	r->ns = 0;
	if (c->out)
		r->rc = c->t->ops->lat_ping(r->tx, lat_iters(k), r->t, &r->ns);
	else
		r->rc = c->t->ops->lat_pong(r->tx, (unsigned)r->ready.b, r->t);
}

/* IN: the rails still on (and in WANT, when given). */
static void rails_on(const struct chan *c, const bool *want, bool *in)
{
	for (size_t k = 0; k < c->p; k++)
		in[k] = c->r[k].on && (!want || want[k]);
}

/* An out-link's connect still under way at its landing time: the probes start. */
static void step_late(const struct ibp_tx_step *s)
{
	struct chan *c = s->arg;

	ibp_rt_probe_late(c->t->probes);
}

/* A rail's step ended (the transport's steps op): a connect is told the probes at once. */
static void step_told(const struct ibp_tx_step *s)
{
	struct chan *c = s->arg;

	if (s->kind == IBP_TX_STEP_CONNECT && c->out && c->t->probes)
		ibp_rt_probe_path(c->t->probes, c->round, s->index, !s->rc);
}

/*
 * STEP on the rails of ON through the transport's steps op (the socket
 * transport: all of them in this thread, one poll loop, instead of a
 * thread per rail): the same arguments and results as the step functions
 * above.  False when the transport has none.
 */
static bool phase_steps(struct chan *c, void (*step)(void *, size_t), const bool *on)
{
	struct ibp_tx_step v[IBP_RDMATEST_MAX_RAILS];
	enum ibp_tx_step_kind kind;
	size_t n = 0;

	if (!c->t->ops->steps)
		return false;
	if (step == step_connect)
		kind = IBP_TX_STEP_CONNECT;
	else if (step == step_pattern)
		kind = IBP_TX_STEP_PATTERN;
	else if (step == step_burst)
		kind = IBP_TX_STEP_BURST;
	else
		kind = IBP_TX_STEP_RTT;
	for (size_t k = 0; k < c->p; k++) {
		struct rail *r = &c->r[k];
		struct ibp_tx_step *s = &v[n];

		if (!on[k])
			continue;
		memset(s, 0, sizeof(*s));
		s->tx = r->tx;
		s->kind = kind;
		s->role = c->out ? IBP_TX_SENDER : IBP_TX_RECEIVER;
		s->deadline = r->t;
		s->done = step_told;
		s->arg = c;
		s->index = k;
		r->bad = 0;
		r->ns = 0;
		if (kind == IBP_TX_STEP_CONNECT) {
			if (c->out && c->t->probes) { /* where a late path lands: probed half-way */
				s->late = step_late;
				s->late_at = ibp_rt_probe_late_at(c->t->probes, c->round, k);
			}
			s->peer = &r->peer;
			s->seed = c->out ? r->seed : 0; /* a datagram's pattern goes with it */
			s->len = c->out ? pattern_of(c, k) : 0;
		} else if (kind == IBP_TX_STEP_PATTERN) {
			s->seed = c->out ? r->seed : r->pat.a;
			s->len = c->out ? pattern_of(c, k) : (size_t)r->pat.b;
		} else if (kind == IBP_TX_STEP_BURST) {
			s->bytes = c->out ? burst_of(c, k) : r->ready.a;
		} else {
			s->iters = c->out ? lat_iters(k) : (unsigned)r->ready.b;
		}
		n++;
	}
	c->t->ops->steps(v, n);
	for (size_t i = 0; i < n; i++) {
		struct rail *r = &c->r[v[i].index];

		r->rc = v[i].rc;
		r->bad = v[i].bad;
		r->ns = v[i].ns;
	}
	return true;
}

/* Runs STEP at once on every rail still on (and in WANT, when given). */
static void phase(struct chan *c, void (*step)(void *, size_t), const bool *want)
{
	bool on[IBP_RDMATEST_MAX_RAILS] = {false};

	phase_deadlines(c, step == step_connect);
	rails_on(c, want, on);
	for (size_t k = 0; k < c->p; k++) {
		c->r[k].rc = 0;
		c->r[k].err[0] = '\0';
	}
	if (!phase_steps(c, step, on))
		crew_run(c->crew, step, c, on);
}

/* A rail's step failed here: its own reason (a damaged pattern is the data's). */
static void local_fail(struct chan *c, size_t k, const char *what)
{
	struct rail *r = &c->r[k];

	if (r->rc == -EBADMSG && !c->out && !strcmp(what, "pattern"))
		ibp_rt_link_fail(r->l, IBP_LINK_CORRUPT, -EBADMSG,
				 "pattern arrived corrupted at byte %zu of %llu", r->bad,
				 (unsigned long long)r->pat.b);
	else if (!strcmp(what, "data path"))
		ibp_rt_link_fail(r->l, r->rc == -ETIMEDOUT ? IBP_LINK_TIMEOUT : IBP_LINK_TRANSPORT,
				 r->rc, "%s: %s", what, r->err[0] ? r->err : strerror(-r->rc));
	else
		ibp_rt_link_fail(r->l, status_of(r->rc), r->rc, "%s: %s", what,
				 r->err[0] ? r->err : strerror(-r->rc));
	r->on = false;
}

/* A peer's word that its step failed: the peer's reason. */
static void peer_fail(struct chan *c, size_t k, uint8_t op, const char *what,
		      const struct ibp_oob_ctrl *m)
{
	struct rail *r = &c->r[k];

	if (op == IBP_CTRL_PATTERN_RESULT && c->out && m->status == -EBADMSG)
		ibp_rt_link_fail(r->l, IBP_LINK_CORRUPT, -EBADMSG,
				 "pattern arrived corrupted at byte %llu of %zu",
				 (unsigned long long)m->a, pattern_of(c, k));
	else
		ibp_rt_link_fail(r->l, status_of(m->status), m->status, "%s: the peer's side: %s",
				 what, errtext(m->status));
	r->on = false;
}

/* This side's word on rail K after a step: OP with the step's result and figures. */
static int say(struct chan *c, size_t k, uint8_t op)
{
	struct rail *r = &c->r[k];
	int32_t st = r->rc < 0 && r->rc >= -4095 ? r->rc : (r->rc ? -EIO : 0);
	uint64_t a = 0, b = 0;

	if (op == IBP_CTRL_READY && c->out) {
		a = burst_of(c, k);
		b = lat_iters(k);
	} else if (op == IBP_CTRL_PATTERN_RESULT && !c->out) {
		a = r->bad;
	} else if (op == IBP_CTRL_BW_RESULT && c->out) {
		a = burst_of(c, k);
		b = r->ns;
	} else if (op == IBP_CTRL_LAT_RESULT && c->out) {
		a = lat_iters(k);
		b = r->ns;
	}
	if (chan_ctrl(c, op, st, a, b))
		return -1;
	if (op == IBP_CTRL_READY && c->out && !st) {
		if (!dgram_of(c->t, k)) /* a datagram's went with its CONNECT */
			r->seed = ibp_rt_random64();
		return chan_ctrl(c, IBP_CTRL_PATTERN_SENT, 0, r->seed, pattern_of(c, k)) ? -1 : 0;
	}
	return 0;
}

/*
 * After a phase: this side's word for every rail of IN (the rails on when
 * the phase began), then the peer's, in rail order: both sides send and read
 * the same frames, so they agree which rails go on (those both sides' steps
 * passed).  PEER gets the peer's messages.
 */
static void exchange(struct chan *c, const bool *in, uint8_t op, const char *what,
		     struct ibp_oob_ctrl *peer)
{
	chan_hold(c);
	for (size_t k = 0; k < c->p && !c->broken; k++)
		if (in[k] && say(c, k, op))
			break;
	if (chan_flush(c))
		return;
	for (size_t k = 0; k < c->p && !c->broken; k++) {
		struct rail *r = &c->r[k];
		bool was_on = r->on;
		int rc;

		if (!in[k])
			continue;
		rc = chan_recv(c, k, op, &peer[k]);
		if (rc < 0)
			return;
		if (rc == 0 && op == IBP_CTRL_READY && !c->out && !peer[k].status) {
			r->ready = peer[k];
			rc = chan_recv(c, k, IBP_CTRL_PATTERN_SENT, &r->pat);
			if (rc < 0)
				return;
		}
		if (rc == 1) /* the peer's ABORT: its reason is kept */
			continue;
		if (!was_on)
			continue;
		if (r->rc)
			local_fail(c, k, what);
		else if (peer[k].status)
			peer_fail(c, k, op, what, &peer[k]);
	}
}

/* The receiver checks what the sender asks of it before the data. */
static void check_asks(struct chan *c)
{
	for (size_t k = 0; k < c->p && !c->out; k++) {
		struct rail *r = &c->r[k];

		if (!r->on ||
		    (r->pat.b && r->pat.b <= c->t->buf_len && (r->ready.a || dgram_of(c->t, k)) &&
		     r->ready.a <= (1ull << 32) && r->ready.b && r->ready.b <= 64 &&
		     (!dgram_of(c->t, k) || (r->pat.b <= IBP_TX_DGRAM_PATTERN && !r->ready.a))))
			continue;
		ibp_rt_link_fail(r->l, IBP_LINK_PROTOCOL, -EPROTO,
				 "peer asks for a %llu-byte pattern, %llu-byte burst, %llu pings; "
				 "limits %zu, 4 GiB, 64",
				 (unsigned long long)r->pat.b, (unsigned long long)r->ready.a,
				 (unsigned long long)r->ready.b, c->t->buf_len);
		r->on = false;
	}
}

/* The floor of rail K's burst, from both ends' rates (0: no rate known). */
static double floor_of(const struct chan *c, size_t k)
{
	const struct ibp_rt_links *t = c->t;
	const struct ibp_rt_link *l = c->r[k].l;
	double slower = t->rails[k].rate_gbps;

	if (slower <= 0 || !l->peer_rate_mbps)
		return 0;
	if (l->peer_rate_mbps / 1000.0 < slower)
		slower = l->peer_rate_mbps / 1000.0;
	return slower * t->x->pol->test_min_bw;
}

/*
 * Rail K's pattern: the whole buffer on rail 0 and where a floor judges
 * the rail; at most IBP_RDMATEST_RAIL_PATTERN on the other rails (the
 * socket transport, a port of unknown rate), where it proves that the
 * rail's full-size segments cross intact: a bigger one proves no more and
 * cost every rail of every link its fill, copies and check (the plugin's
 * buffer is 1 MiB).  The receiver checks what PATTERN_SENT says.
 */
static size_t pattern_of(const struct chan *c, size_t k)
{
	const struct ibp_rt_links *t = c->t;

	if (dgram_of(t, k)) /* one datagram's */
		return t->buf_len < IBP_TX_DGRAM_PATTERN ? t->buf_len : IBP_TX_DGRAM_PATTERN;
	if (k == 0 || t->buf_len <= IBP_RDMATEST_RAIL_PATTERN || floor_of(c, k) > 0)
		return t->buf_len;
	return IBP_RDMATEST_RAIL_PATTERN;
}

/*
 * Rail K's burst: the whole one where a floor judges it, and on rail 0;
 * one pattern's length on the other rails where none does (the socket
 * transport, a port of unknown rate): there the burst only measures a
 * rate nobody judges, and the data's integrity is the pattern's.
 */
static uint64_t burst_of(const struct chan *c, size_t k)
{
	const struct ibp_rt_links *t = c->t;

	if (dgram_of(t, k)) /* none: no rate is measured, none reported (gbps 0) */
		return 0;
	if (k == 0 || t->burst <= pattern_of(c, k) || floor_of(c, k) > 0)
		return t->burst;
	return pattern_of(c, k);
}

static bool misses(const struct chan *c, size_t k)
{
	const struct ibp_rt_link *l = c->r[k].l;
	double floor_gbps = floor_of(c, k);

	return (floor_gbps > 0 && l->r.gbps < floor_gbps) ||
	       l->r.lat_us > c->t->x->pol->test_max_lat_us;
}

/*
 * A node whose own wake-ups are late by half the latency limit cannot tell
 * a slow link from its own queue for the CPU (the netns cluster on two
 * cores; a node shared with other work on a real one).
 */
double ibp_rdmatest_wakeup_late_us(void)
{
	enum { N = 7, SLEEP_NS = 200 * 1000 };
	uint64_t late[N];

	for (int i = 0; i < N; i++) {
		struct timespec ts = {0, SLEEP_NS};
		int64_t t0 = ibp_now_ns(), slept;

		nanosleep(&ts, NULL);
		slept = ibp_now_ns() - t0;
		late[i] = slept > SLEEP_NS ? (uint64_t)(slept - SLEEP_NS) : 0;
	}
	return (double)ibp_median_ns(late, N) / 1000.0;
}

/*
 * The sender's verdict on each rail still on, from its best figures.  A
 * miss on a node too busy to judge it (its own wake-ups late by half the
 * latency limit) passes with busy_us set: the report warns (rdmatest_busy).
 */
static void judge(struct chan *c)
{
	struct ibp_rt_links *t = c->t;
	unsigned limit = t->x->pol->test_max_lat_us;
	double late = -1;

	for (size_t k = 0; k < c->p; k++) {
		struct ibp_rt_link *l = c->r[k].l;
		double floor_gbps = floor_of(c, k);
		char each[IBP_TEXT_MAX];

		if (!c->r[k].on)
			continue;
		l->r.expect_gbps = floor_gbps;
		ibp_rt_setf(each, sizeof(each), "%s", l->r.detail);
		l->r.detail[0] = '\0';
		if (!misses(c, k)) {
			l->r.status = IBP_LINK_PASS;
			continue;
		}
		if (late < 0) /* once per channel, and only on a miss */
			late = t->x->cfg->wakeup_late_us ? t->x->cfg->wakeup_late_us()
							 : ibp_rdmatest_wakeup_late_us();
		if (late * 2 >= limit && late >= IBP_RDMATEST_BUSY_FLOOR_US) {
			l->r.busy_us = late;
			l->r.status = IBP_LINK_PASS;
		} else if (floor_gbps > 0 && l->r.gbps < floor_gbps) {
			ibp_rt_link_fail(
			    l, IBP_LINK_BW_LOW, 0,
			    "bursts of %llu bytes at %.2f Gb/s at best, floor %.2f Gb/s "
			    "(%u measurement%s: %s)",
			    (unsigned long long)burst_of(c, k), l->r.gbps, floor_gbps,
			    l->r.measures, l->r.measures == 1 ? "" : "s", each);
		} else {
			ibp_rt_link_fail(
			    l, IBP_LINK_LAT_HIGH, 0,
			    "round trip %.0f us at best, limit %u us (%u measurement%s: "
			    "%s)",
			    l->r.lat_us, limit, l->r.measures, l->r.measures == 1 ? "" : "s", each);
		}
	}
}

/* "12.34 Gb/s, " into BUF: a measured rate, for a message */
static const char *gbps_text(double gbps, char *buf, size_t len)
{
	snprintf(buf, len, "%.2f Gb/s, ", gbps);
	return buf;
}

/* The sender's VERDICT for every rail of ON1; the receiver takes those of its rails still on. */
static void verdicts(struct chan *c, const bool *on1)
{
	struct ibp_oob_ctrl v;
	char rate[32];

	if (c->out) {
		chan_hold(c);
		for (size_t k = 0; k < c->p && !c->broken; k++)
			if (on1[k] &&
			    chan_ctrl(c, IBP_CTRL_VERDICT, 0, (uint64_t)c->r[k].l->r.status, 0))
				break;
		chan_flush(c);
		return;
	}
	for (size_t k = 0; k < c->p && !c->broken; k++) {
		struct ibp_rt_link *l = c->r[k].l;

		if (!on1[k])
			continue;
		if (chan_recv(c, k, IBP_CTRL_VERDICT, &v) || !c->r[k].on)
			continue; /* this side's own failure stands */
		if (v.a == IBP_LINK_PASS)
			l->r.status = IBP_LINK_PASS;
		else if (v.a < IBP_LINK_STATUS_COUNT)
			ibp_rt_link_fail(
			    l, (enum ibp_link_status)v.a, 0, "the sender measured %s (%s%.0f us)",
			    ibp_link_status_name((enum ibp_link_status)v.a),
			    l->r.gbps > 0 ? gbps_text(l->r.gbps, rate, sizeof(rate)) : "",
			    l->r.lat_us);
		else
			ibp_rt_link_fail(l, IBP_LINK_PROTOCOL, -EPROTO, "bad verdict %llu",
					 (unsigned long long)v.a);
	}
}

/*
 * After measurement N of the rails in WANT, started at T0: the sender asks
 * again on each rail still on whose best figures miss a limit, while it has
 * measured fewer than IBP_RDMATEST_MEASURES times and the round's deadline
 * holds two more of the last one's length (one slow sample on a busy node
 * or fabric is not a slow link); the receiver takes its word.  Both sides
 * then hold the same WANT; false when it is empty.
 */
static bool again(struct chan *c, bool *want, unsigned n, int64_t t0)
{
	bool in[IBP_RDMATEST_MAX_RAILS] = {false}, any = false;
	int64_t now = ibp_now_ns();
	struct ibp_oob_ctrl m;

	rails_on(c, want, in);
	if (c->out)
		chan_hold(c);
	for (size_t k = 0; k < c->p && !c->broken; k++) {
		want[k] = false;
		if (!in[k])
			continue;
		if (c->out) {
			want[k] = misses(c, k) && n < IBP_RDMATEST_MEASURES &&
				  now + 2 * (now - t0) < c->deadline;
			if (chan_ctrl(c, IBP_CTRL_MEASURE_AGAIN, 0, want[k], n + 1))
				break;
		} else if (chan_recv(c, k, IBP_CTRL_MEASURE_AGAIN, &m) == 0) {
			if (m.a > 1 || m.b != n + 1 || (m.a && n >= IBP_RDMATEST_MEASURES)) {
				chan_broken(
				    c, -EPROTO,
				    "the peer's MEASURE_AGAIN is malformed or beyond the limit");
				return false;
			}
			want[k] = m.a == 1;
		}
		any |= want[k];
	}
	if (c->out && chan_flush(c))
		return false;
	return any && !c->broken;
}

/*
 * The bursts and the round trips, measured again on the rails whose figures
 * miss (again()); the best figures stay in each link, the sender's each
 * measurement in its detail for the verdict's message.  PEER gets the
 * peer's last messages.
 */
static void measure(struct chan *c, struct ibp_oob_ctrl *peer)
{
	bool want[IBP_RDMATEST_MAX_RAILS] = {false}, in[IBP_RDMATEST_MAX_RAILS] = {false};
	double gbps[IBP_RDMATEST_MAX_RAILS] = {0};
	size_t off[IBP_RDMATEST_MAX_RAILS] = {0};

	for (size_t k = 0; k < c->p; k++) {
		want[k] = c->r[k].on;
		if (want[k]) /* a rail already failed keeps its reason */
			c->r[k].l->r.detail[0] = '\0';
	}
	for (unsigned n = 1;; n++) {
		int64_t t0 = ibp_now_ns();
		bool bw[IBP_RDMATEST_MAX_RAILS] = {false};

		/* no burst on a datagram rail, nor its BW_RESULT: both ends leave it out */
		for (size_t k = 0; k < c->p; k++)
			bw[k] = want[k] && !dgram_of(c->t, k);
		phase(c, step_burst, bw);
		rails_on(c, bw, in);
		for (size_t k = 0; k < c->p; k++) {
			if (in[k] && c->out && !c->r[k].rc)
				gbps[k] = c->r[k].ns
					      ? (double)burst_of(c, k) * 8.0 / (double)c->r[k].ns
					      : 0;
		}
		exchange(c, in, IBP_CTRL_BW_RESULT, "bandwidth burst", peer);
		for (size_t k = 0; k < c->p; k++) {
			struct ibp_rt_link *l = c->r[k].l;

			if (!in[k] || !c->r[k].on)
				continue;
			if (!c->out)
				gbps[k] =
				    peer[k].b ? (double)peer[k].a * 8.0 / (double)peer[k].b : 0;
			if (n == 1 || gbps[k] > l->r.gbps) /* the best: the highest */
				l->r.gbps = gbps[k];
		}
		phase(c, step_rtt, want);
		rails_on(c, want, in);
		exchange(c, in, IBP_CTRL_LAT_RESULT, "latency", peer);
		for (size_t k = 0; k < c->p; k++) {
			struct ibp_rt_link *l = c->r[k].l;
			double lat = (double)(c->out ? c->r[k].ns : peer[k].b) / 1000.0;

			if (!in[k] || !c->r[k].on)
				continue;
			if (n == 1 || lat < l->r.lat_us) /* the best: the lowest */
				l->r.lat_us = lat;
			if (!c->out)
				continue;
			l->r.measures = n;
			if (gbps[k] > 0) /* a cut detail stays cut (text.h) */
				(void)ibp_appendf(l->r.detail, sizeof(l->r.detail), &off[k],
						  "%s%.2f Gb/s %.0f us", off[k] ? ", " : "",
						  gbps[k], lat);
			else /* no rate measured (a datagram rail): none said */
				(void)ibp_appendf(l->r.detail, sizeof(l->r.detail), &off[k],
						  "%s%.0f us", off[k] ? ", " : "", lat);
		}
		if (!again(c, want, n, t0))
			return;
	}
}

/*
 * The round's across probe (rdmatest_probe.h), when the links send it:
 * from this out-link's rail *A's own socket to the peer's rail *B, both
 * datagram rails with their endpoints in, before the data paths so that
 * the peer answers while it waits for them.  True when it went.
 */
static bool across_start(struct chan *c, size_t *a, size_t *b)
{
	int rc;

	if (!c->out || !c->t->probes || !ibp_rt_probe_across(c->t->probes, c->round, a, b) ||
	    *a >= c->p || *b >= c->p || !c->r[*a].on || !c->r[*b].on || !c->r[*a].tx)
		return false;
	rc = c->t->ops->probe_along(c->r[*a].tx, &c->r[*b].peer, (unsigned)*b);
	if (rc) { /* it could not go: not reached */
		ibp_rt_probe_record(c->t->probes, c->round, *a, *b, IBP_RDMATEST_PROBE_ACROSS, rc);
		return false;
	}
	return true;
}

/*
 * One channel, both roles: open every rail, the endpoints, then the phases.
 * 0, or -EAGAIN (the listener's end: the connector left before its first
 * frame; nothing recorded, the caller re-arms the slot).
 */
static int chan_run(struct chan *c)
{
	struct ibp_rt_links *t = c->t;
	struct ibp_oob_ctrl peer[IBP_RDMATEST_MAX_RAILS] = {{0}};
	bool on1[IBP_RDMATEST_MAX_RAILS] = {false}, in[IBP_RDMATEST_MAX_RAILS] = {false};
	bool fp_here = false, across;
	size_t a = 0, b = 0;
	int rc;

	for (size_t k = 0; k < c->p; k++)
		c->r[k].on = !tx_open(c, k);
	rc = endpoints(c, &fp_here);
	if (fp_here)
		ibp_rt_fp_claim_done(t->fps, c->l0, rc == 0);
	if (rc == -EAGAIN)
		return -EAGAIN;
	rails_on(c, NULL, on1);
	for (size_t k = 0; k < c->p && c->out; k++)
		if (dgram_of(t, k))
			c->r[k].seed = ibp_rt_random64();
	across = across_start(c, &a, &b);
	/* the data paths */
	phase(c, step_connect, NULL);
	rails_on(c, NULL, in);
	exchange(c, in, IBP_CTRL_READY, "data path", peer);
	check_asks(c);
	/* the pattern */
	phase(c, step_pattern, NULL);
	rails_on(c, NULL, in);
	exchange(c, in, IBP_CTRL_PATTERN_RESULT, "pattern", peer);
	measure(c, peer);
	if (c->out)
		judge(c);
	verdicts(c, on1);
	/* the across probe's answer came in the meantime (the peer answers as it waits) */
	if (across)
		ibp_rt_probe_record(t->probes, c->round, a, b, IBP_RDMATEST_PROBE_ACROSS,
				    t->ops->probe_along_result(c->r[a].tx));
	return 0;
}

/* The rails of the channel's round this node tests and the peer does not (RAILS: the peer's). */
static void rails_missing(struct ibp_rt_links *t, unsigned round, bool out, unsigned peer_rails,
			  uint32_t peer)
{
	for (size_t k = peer_rails; k < t->x->n_rails; k++) {
		char why[IBP_TEXT_MAX];

		ibp_rt_setf(
		    why, sizeof(why),
		    "%s tests %u rail%s, %s %zu: no rail %zu there: the nodes have different "
		    "numbers of ports to test",
		    ibp_rt_node_name(t->x, peer), peer_rails, peer_rails == 1 ? "" : "s",
		    ibp_rt_node_name(t->x, t->x->me), t->x->n_rails, k);
		ibp_rt_rail_missing(t->x, ibp_rt_link_at(t->x, k, round, out), why);
	}
}

/* The channel of link L0 (rail 0 of its round and direction) on FD. */
static int channel(struct ibp_rt_links *t, struct crew *crew, struct ibp_rt_link *l0, int fd,
		   int64_t deadline)
{
	struct chan *c = calloc(1, sizeof(*c));
	unsigned peer_rails = l0->peer_rails ? l0->peer_rails : 1;
	int rc;

	if (!c) {
		for (size_t k = 0; k < t->x->n_rails; k++)
			ibp_rt_link_fail(ibp_rt_link_at(t->x, k, l0->r.round, l0->out),
					 IBP_LINK_LOCAL, -ENOMEM, "out of memory");
		return 0;
	}
	c->t = t;
	c->l0 = l0;
	c->fd = fd;
	c->round = l0->r.round;
	c->out = l0->out;
	c->deadline = deadline;
	c->crew = crew;
	c->p = peer_rails < t->x->n_rails ? peer_rails : t->x->n_rails;
	for (size_t k = 0; k < c->p; k++)
		c->r[k].l = ibp_rt_link_at(t->x, k, c->round, c->out);
	rc = chan_run(c);
	for (size_t k = 0; rc == -EAGAIN && k < c->p; k++) { /* nothing happened: all anew */
		c->r[k].l->r.status = IBP_LINK_UNTESTED;
		c->r[k].l->r.err = 0;
		c->r[k].l->r.detail[0] = '\0';
	}
	for (size_t k = 0; k < c->p; k++) {
		struct rail *r = &c->r[k];

		if (!r->tx)
			continue;
		if (!c->out && t->keep_rx && rc != -EAGAIN)
			r->l->tx = r->tx; /* it answers the peer's probes until the run ends */
		else
			t->ops->close(r->tx);
	}
	if (rc != -EAGAIN)
		rails_missing(t, c->round, c->out, peer_rails, l0->peer);
	free(c);
	return rc;
}

/* ---- workers ------------------------------------------------------------ */

static int64_t round_deadline(const struct ibp_rt_links *t, unsigned round)
{
	return t->x->round_end[round - 1];
}

/* Every rail of ROUND in one direction failed like rail 0's link before its channel. */
static void all_rails_like_rail0(struct ibp_rt_links *t, unsigned round, bool out)
{
	const struct ibp_rt_link *l0 = ibp_rt_link_at(t->x, 0, round, out);

	for (size_t k = 1; k < t->x->n_rails; k++) {
		struct ibp_rt_link *l = ibp_rt_link_at(t->x, k, round, out);

		if (l->r.status != IBP_LINK_UNTESTED)
			continue;
		l->r.status = l0->r.status;
		l->r.err = l0->r.err;
		l->version_seen = l0->version_seen;
		l->peer_version = l0->peer_version;
		l->closed_unanswered = l0->closed_unanswered;
		ibp_rt_setf(l->r.detail, sizeof(l->r.detail), "%s", l0->r.detail);
	}
}

/* A worker's rounds are over: its crew stopped, its cache's share of the sockets let go. */
static void worker_end(struct ibp_rt_links *t, struct crew *crew)
{
	crew_stop(crew);
	if (t->ops->cache_free)
		t->ops->cache_free(crew->cache);
	crew->cache = NULL;
}

static void *out_worker(void *arg)
{
	struct ibp_rt_worker *w = arg;
	struct ibp_rt_links *t = w->t;
	struct crew crew;

	crew_start(&crew, t->ops->steps ? 1 : t->x->n_rails); /* steps: no thread per rail */
	for (unsigned r = 1; r <= ibp_rt_n_rounds(t->x); r++) {
		struct ibp_rt_link *l = ibp_rt_link_at(t->x, 0, r, true);
		int64_t deadline = round_deadline(t, r);
		int fd = ibp_rt_connect(t->x, l, deadline);

		if (fd >= 0) {
			pthread_mutex_lock(&t->x->mu);
			l->fd = fd;
			pthread_mutex_unlock(&t->x->mu);
			channel(t, &crew, l, fd, deadline);
		} else {
			all_rails_like_rail0(t, r, true);
		}
		ibp_rt_ring_link_over(t->ring, l, false); /* no leaf child's sum after this */
	}
	worker_end(t, &crew);
	return NULL;
}

static int wait_slot(struct ibp_rt_links *t, struct ibp_rt_link *l, int64_t deadline, char *reject,
		     size_t rlen)
{
	struct timespec ts = {.tv_sec = deadline / IBP_NS_PER_S,
			      .tv_nsec = deadline % IBP_NS_PER_S};
	int fd = -1;

	pthread_mutex_lock(&t->x->mu);
	while (l->slot == IBP_RT_SLOT_EMPTY) {
		if (pthread_cond_timedwait(&t->x->cv, &t->x->mu, &ts) == ETIMEDOUT)
			break;
	}
	if (l->slot == IBP_RT_SLOT_FILLED)
		fd = l->fd;
	else
		l->slot = IBP_RT_SLOT_CLOSED; /* a late claimant is refused */
	ibp_rt_setf(reject, rlen, "%s", l->reject);
	pthread_mutex_unlock(&t->x->mu);
	return fd;
}

/* One round of the in-links: the connection the acceptor hands over, every rail on it. */
static void in_round(struct ibp_rt_links *t, struct crew *crew, struct ibp_rt_link *l,
		     int64_t deadline)
{
	char reject[IBP_TEXT_MAX];
	int fd = wait_slot(t, l, deadline, reject, sizeof(reject));
	bool version_seen;
	unsigned version;

	while (fd >= 0 && channel(t, crew, l, fd, deadline) == -EAGAIN) {
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
	all_rails_like_rail0(t, l->r.round, false);
}

static void *in_worker(void *arg)
{
	struct ibp_rt_worker *w = arg;
	struct ibp_rt_links *t = w->t;
	struct crew crew;

	crew_start(&crew, t->ops->steps ? 1 : t->x->n_rails); /* steps: no thread per rail */
	for (unsigned r = 1; r <= ibp_rt_n_rounds(t->x); r++) {
		struct ibp_rt_link *l = ibp_rt_link_at(t->x, 0, r, false);

		in_round(t, &crew, l, round_deadline(t, r));
		ibp_rt_ring_link_over(t->ring, l, false); /* no leaf child's sum after this */
	}
	worker_end(t, &crew);
	/*
	 * The kept receivers' datagram sockets answer the peers' late probes
	 * from the probe thread now (rail 0's listener needs nobody): only the
	 * last tx of each socket has one to poll (transport.h, idle_fd).
	 */
	if (t->probes && t->keep_rx) {
		struct ibp_tx *kept[IBP_RT_MAX_ANSWER];
		size_t n = 0;
		bool failed = false; /* then a peer may probe late: someone must answer */

		for (unsigned r = ibp_rt_n_rounds(t->x); r >= 1; r--) /* the last round's first */
			for (size_t k = 0; k < t->x->n_rails && n < IBP_RT_MAX_ANSWER; k++) {
				const struct ibp_rt_link *l = ibp_rt_link_at(t->x, k, r, false);

				kept[n++] = l->tx;
				failed |= l->r.status != IBP_LINK_PASS;
			}
		ibp_rt_probes_answer(t->probes, kept, n, failed);
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

/* Two workers, one per direction, each with a crew of a thread per rail beyond rail 0. */
void ibp_rt_links_start(struct ibp_rt_links *t)
{
	t->n_w = 0;
	for (int o = 0; o < 2; o++) {
		struct ibp_rt_worker *w = &t->w[t->n_w++];

		*w = (struct ibp_rt_worker){.t = t, .rail = 0, .out = o};
		w->started = !pthread_create(&w->th, NULL, o ? out_worker : in_worker, w);
		if (!w->started)
			for (size_t k = 0; k < t->x->n_rails; k++)
				for (unsigned r = 1; r <= ibp_rt_n_rounds(t->x); r++)
					ibp_rt_link_fail(ibp_rt_link_at(t->x, k, r, o),
							 IBP_LINK_LOCAL, -EAGAIN,
							 "cannot start a test thread");
	}
}

void ibp_rt_links_join(struct ibp_rt_links *t)
{
	for (size_t i = 0; i < t->n_w; i++)
		if (t->w[i].started)
			pthread_join(t->w[i].th, NULL);
}
