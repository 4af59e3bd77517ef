/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest.c: the cross-node RDMA sanity test (rdmatest.h): plan, the
 * authenticated out-of-band handshake, the link protocol over a transport,
 * the summary exchange and the blame.
 *
 * Threads of one run: the caller's thread accepts and authenticates
 * connections (the only place strangers are handled); per rail one thread
 * sends (rounds in order) and one receives (rounds in order, each waiting
 * for the connection the acceptor hands it).  A link's OOB connection stays
 * open after its test and carries the summaries at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibprep/text.h"
#include "ibprep/auth.h"
#include "ibprep/rdmatest.h"

#define HELLO_FRAME (IBP_OOB_HDR_LEN + IBP_OOB_HELLO_LEN)
#define MAX_NONCES  128

enum slot_state { SLOT_EMPTY = 0, SLOT_FILLED, SLOT_CLOSED };

struct link {
	struct ibp_rdmatest_link r; /* the public result */
	bool out;                   /* this node sends */
	uint32_t peer;
	char peer_addr[64];
	int fd;                    /* OOB connection, kept for the summary */
	enum slot_state slot;      /* in-links: handed over by the acceptor */
	char reject[IBP_TEXT_MAX]; /* in-links: why a claimant was refused */
	char skip[IBP_TEXT_MAX];   /* in-links: the peer has no such rail */
	uint64_t peer_rate_mbps;
	bool summary_in;
};

struct pending {
	int64_t deadline, since;
	size_t have;
	char from[64];
	uint8_t buf[HELLO_FRAME];
	int fd;
};

struct run {
	const struct ibp_rdmatest_config *cfg;
	struct ibp_policy pol;
	const struct ibp_transport_ops *ops;
	struct ibp_hostlist own_nodes;
	const struct ibp_hostlist *nodes;
	uint32_t n, me;
	struct ibp_rdmatest_plan plan;
	struct ibp_tx_port rails[IBP_RDMATEST_MAX_RAILS];
	size_t n_rails;
	char my_addr[64];
	struct ibp_auth auth;
	size_t buf_len;
	uint64_t burst;
	int listen_fds[IBP_RDMATEST_MAX_LISTEN]; /* -1: not listening on that candidate */
	bool own_listen;                         /* bound here: closed here */
	uint16_t cands[IBP_RDMATEST_MAX_LISTEN];
	int n_cands;
	int64_t start, round_end[2], end;
	struct link links[IBP_RDMATEST_MAX_LINKS];
	size_t n_links;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t nonces[MAX_NONCES];
	size_t n_nonces;
	unsigned dropped;
	char drop_reason[IBP_TEXT_MAX];
	struct ibp_oob_link known[IBP_RDMATEST_MAX_LINKS * 5];
	size_t n_known;
	size_t n_summaries;
};

__attribute__((format(printf, 3, 4))) static void setf(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ibp_vformat_cut(dst, len, fmt, ap);
	va_end(ap);
}

/* ---- plan and blame: pure functions ------------------------------------ */

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

static bool failed(uint8_t status)
{
	return status != IBP_LINK_PASS && status != IBP_LINK_UNTESTED;
}

/* A passing link of C that does not involve X. */
static bool passes_elsewhere(const struct ibp_oob_link *k, size_t n, uint32_t c, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (k[i].status == IBP_LINK_PASS && (k[i].from == c || k[i].to == c) &&
		    k[i].from != x && k[i].to != x)
			return true;
	return false;
}

/* C has known links not involving X, and all of them failed. */
static bool fails_elsewhere(const struct ibp_oob_link *k, size_t n, uint32_t c, uint32_t x)
{
	size_t seen = 0;

	for (size_t i = 0; i < n; i++) {
		if ((k[i].from != c && k[i].to != c) || k[i].from == x || k[i].to == x ||
		    k[i].status == IBP_LINK_UNTESTED)
			continue;
		if (!failed(k[i].status))
			return false;
		seen++;
	}
	return seen > 0;
}

/*
 * Counterparts of NODE over its known links in one direction (OUT: NODE
 * sends), when all of them failed; 0 when any passed or none is known.
 */
static size_t failed_counterparts(const struct ibp_oob_link *k, size_t n, uint32_t node, int dir,
				  uint32_t *cp, size_t max)
{
	size_t ncp = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t other;
		bool dup = false;

		if (k[i].status == IBP_LINK_UNTESTED)
			continue;
		if (dir == 0 && k[i].from == node)
			other = k[i].to;
		else if (dir == 1 && k[i].to == node)
			other = k[i].from;
		else if (dir == 2 && (k[i].from == node || k[i].to == node))
			other = k[i].from == node ? k[i].to : k[i].from;
		else
			continue;
		if (!failed(k[i].status))
			return 0;
		for (size_t j = 0; j < ncp; j++)
			dup |= cp[j] == other;
		if (!dup && ncp < max)
			cp[ncp++] = other;
	}
	return ncp;
}

bool ibp_rdmatest_suspect(const struct ibp_oob_link *known, size_t n, uint32_t node, bool self)
{
	uint32_t cp[IBP_RDMATEST_MAX_LINKS * 5];
	size_t ncp;

	for (int dir = 0; dir < 2; dir++) {
		bool confirmed = true;

		ncp = failed_counterparts(known, n, node, dir, cp, sizeof(cp) / sizeof(cp[0]));
		if (ncp < 2)
			continue;
		for (size_t j = 0; j < ncp && confirmed; j++)
			confirmed = passes_elsewhere(known, n, cp[j], node);
		if (confirmed)
			return true;
	}
	if (!self)
		return false;
	/* Every link of mine failed, both ways, with two or more peers. */
	ncp = failed_counterparts(known, n, node, 2, cp, sizeof(cp) / sizeof(cp[0]));
	if (ncp < 2)
		return false;
	/* ... unless a peer is seen failing everywhere else too: then it may be them. */
	for (size_t j = 0; j < ncp; j++)
		if (fails_elsewhere(known, n, cp[j], node))
			return false;
	return true;
}

const char *ibp_rdmatest_status_fix(enum ibp_link_status s)
{
	switch (s) {
	case IBP_LINK_UNREACHABLE:
	case IBP_LINK_TIMEOUT:
	case IBP_LINK_GONE:
		return "check that the node is up and reachable and that the test ports "
		       "(test_ports=) are open between the nodes";
	case IBP_LINK_AUTH:
		return "check munged on the node: same key as the cluster, running, clock in sync";
	case IBP_LINK_PROTOCOL:
		return "check that every node runs the same spank-ib version";
	case IBP_LINK_TRANSPORT:
		return "check the port's state, GID/LID and the subnet manager (ibprep check)";
	case IBP_LINK_CORRUPT:
		return "check the HCA, cable and switch port of this link (ibprep check, error "
		       "counters); replace the faulty part";
	case IBP_LINK_BW_LOW:
		return "check link rate, width and error counters (ibprep check); reseat or "
		       "replace the cable";
	case IBP_LINK_LAT_HIGH:
		return "check for a degraded link or congestion (ibprep check, error counters)";
	case IBP_LINK_LOCAL:
		return "raise the memlock limit (ulimit -l unlimited) or free resources on the "
		       "node";
	default:
		return "";
	}
}

/* ---- helpers ------------------------------------------------------------ */

static uint64_t random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint64_t)ibp_now_ns() * 0x9e3779b97f4a7c15ull;
	return v ? v : 1;
}

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
		return IBP_LINK_AUTH;
	default:
		return IBP_LINK_TRANSPORT;
	}
}

static const char *node_name(const struct run *run, uint32_t i)
{
	return run->nodes->names[i];
}

static int resolve(const struct run *run, uint32_t i, char *addr, size_t len)
{
	const struct ibp_rdmatest_config *cfg = run->cfg;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int rc;

	if (cfg->addrs) {
		if (!cfg->addrs[i] || !*cfg->addrs[i])
			return -ENOENT;
		setf(addr, len, "%s", cfg->addrs[i]);
		return 0;
	}
	if (cfg->resolve)
		return cfg->resolve(cfg->resolve_arg, i, node_name(run, i), addr, len);
	rc = getaddrinfo(node_name(run, i), NULL, &hints, &ai);
	if (rc)
		return -EHOSTUNREACH;
	rc =
	    getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	return rc ? -EHOSTUNREACH : 0;
}

static int sockaddr_of(const char *addr, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		*len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

/* Small request/answer messages: Nagle plus delayed ACKs would add 40 ms each. */
static void nodelay(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void hello_claims(const struct ibp_oob_hello *h, struct ibp_auth_claims *c)
{
	memset(c, 0, sizeof(*c));
	c->job = h->job;
	c->step = h->step;
	c->uid = h->uid;
	c->from = h->from;
	c->to = h->to;
	c->nnodes = h->nnodes;
	c->round = h->round;
	c->rail = h->rail;
	c->n_rails = h->n_rails;
	c->flags = h->flags;
	c->nonce = h->nonce;
	c->echo = h->echo;
}

static int hello_make(struct run *run, struct ibp_oob_msg *m, uint32_t to, uint8_t round,
		      uint16_t rail, uint64_t echo, bool reply, char *err, size_t errlen)
{
	struct ibp_oob_hello *h = &m->u.hello;
	struct ibp_auth_claims c;
	int n;

	memset(m, 0, sizeof(*m));
	m->type = IBP_OOB_HELLO;
	h->job = run->cfg->job;
	h->step = run->cfg->step;
	h->uid = run->cfg->uid;
	h->from = run->me;
	h->to = to;
	h->nnodes = run->n;
	h->round = round;
	h->rail = (uint8_t)rail;
	h->n_rails = (uint8_t)run->n_rails;
	h->flags = (uint16_t)((reply ? IBP_HELLO_REPLY : 0) |
			      (run->auth.insecure ? IBP_HELLO_INSECURE : 0));
	h->nonce = random64();
	h->echo = echo;
	hello_claims(h, &c);
	n = ibp_auth_sign(&run->auth, &c, h->cred, sizeof(h->cred), err, errlen);
	if (n < 0)
		return n;
	h->cred_len = (uint16_t)n;
	return 0;
}

static void link_fail(struct link *l, enum ibp_link_status st, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void link_fail(struct link *l, enum ibp_link_status st, int err, const char *fmt, ...)
{
	va_list ap;

	if (failed(l->r.status))
		return; /* the first failure is the one to report */
	l->r.status = st;
	l->r.err = err;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): started just above */
	if (vsnprintf(l->r.detail, sizeof(l->r.detail), fmt, ap) >= (int)sizeof(l->r.detail))
		strcpy(l->r.detail + sizeof(l->r.detail) - 4, "...");
	va_end(ap);
}

static const char *errtext(int rc)
{
	return rc == -ECONNRESET ? "connection closed by the peer" : strerror(-rc);
}

/* ---- the sending side --------------------------------------------------- */

/* Tries one candidate port: connected and mutually authenticated fd, or -errno. */
static int try_candidate(struct run *run, struct link *l, uint16_t port, int64_t deadline,
			 char *why, size_t whylen)
{
	struct sockaddr_storage ss, src;
	socklen_t len, srclen;
	struct ibp_oob_msg hello, reply;
	struct ibp_auth_claims want;
	int fd, rc, soerr = 0;
	socklen_t sl = sizeof(soerr);
	struct pollfd pfd;
	bool sent;
	int64_t step_deadline;

	if (sockaddr_of(l->peer_addr, port, &ss, &len))
		return -EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* From this node's address: the path under test, and what the peer sees. */
	if (!sockaddr_of(run->my_addr, 0, &src, &srclen) && src.ss_family == ss.ss_family)
		(void)bind(fd, (struct sockaddr *)&src, srclen);
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		rc = -errno;
		goto out;
	}
	pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
	step_deadline = ibp_deadline_min(deadline, ibp_now_ns() + (run->end - run->start) / 4);
	for (;;) {
		int ms = ibp_deadline_poll_ms(step_deadline, ibp_now_ns());
		int pn = ms ? poll(&pfd, 1, ms) : 0;

		if (pn < 0 && errno == EINTR)
			continue;
		if (pn <= 0) {
			/* Cut short by the link's own deadline: this try proves nothing. */
			rc = step_deadline < deadline ? -ETIMEDOUT : -ECANCELED;
			if (rc == -ETIMEDOUT)
				setf(why, whylen, "no answer on port %u", port);
			goto out;
		}
		break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr) {
		rc = -soerr;
		goto out;
	}
	nodelay(fd);
	rc = hello_make(run, &hello, l->peer, l->r.round, l->r.rail, 0, false, why, whylen);
	if (rc)
		goto out;
	rc = ibp_oob_send(fd, &hello, deadline);
	sent = rc == 0;
	if (!rc)
		rc = ibp_oob_recv(fd, &reply, step_deadline);
	if (rc == -ETIMEDOUT && step_deadline >= deadline && sent) {
		rc = -ECANCELED;
		goto out;
	}
	if (rc) {
		setf(why, whylen, "%s on port %u",
		     rc == -ETIMEDOUT ? "no answer to the handshake" : errtext(rc), port);
		rc = rc == -ETIMEDOUT ? -ETIMEDOUT : -ECONNRESET;
		goto out;
	}
	if (reply.type == IBP_OOB_ERROR) {
		setf(why, whylen, "refused on port %u: %s", port, reply.u.error.text);
		rc = reply.u.error.code == -EACCES || reply.u.error.code == -EPROTO ||
			     reply.u.error.code == -ENXIO
			 ? reply.u.error.code
			 : -ECONNREFUSED;
		goto out;
	}
	if (reply.type != IBP_OOB_HELLO) {
		setf(why, whylen, "unexpected message type %u on port %u", reply.type, port);
		rc = -EPROTO;
		goto out;
	}
	hello_claims(&reply.u.hello, &want);
	want.job = run->cfg->job;
	want.step = run->cfg->step;
	want.uid = run->cfg->uid;
	want.from = l->peer;
	want.to = run->me;
	want.nnodes = run->n;
	want.round = l->r.round;
	want.rail = (uint8_t)l->r.rail;
	want.n_rails = reply.u.hello.n_rails; /* the peer's own count, bound by its credential */
	want.flags = (uint16_t)(IBP_HELLO_REPLY | (run->auth.insecure ? IBP_HELLO_INSECURE : 0));
	want.echo = hello.u.hello.nonce;
	{
		struct ibp_auth_claims got;

		hello_claims(&reply.u.hello, &got);
		if (got.job != want.job || got.step != want.step || got.uid != want.uid ||
		    got.from != want.from || got.to != want.to || got.nnodes != want.nnodes ||
		    got.round != want.round || got.rail != want.rail || got.flags != want.flags ||
		    got.echo != want.echo) {
			setf(why, whylen,
			     "answer on port %u is not from %s for this step (job %u step %u node "
			     "%u)",
			     port, node_name(run, l->peer), got.job, got.step, got.from);
			rc = -EACCES;
			goto out;
		}
	}
	rc = ibp_auth_verify(&run->auth, reply.u.hello.cred, &want, why, whylen);
	if (rc)
		goto out;
	return fd;
out:
	close(fd);
	return rc;
}

/*
 * A rail one end has and the other has not: with test_pairing=any it is
 * simply not tested; with rail pairing the nodes differ, which is named.
 */
static void rail_missing(struct run *run, struct link *l, const char *why)
{
	if (run->pol.test_pairing_any) {
		l->r.status = IBP_LINK_UNTESTED;
		setf(l->r.detail, sizeof(l->r.detail), "not tested: %s", why);
	} else {
		link_fail(l, IBP_LINK_PROTOCOL, -ENXIO, "%s", why);
	}
}

/*
 * Connects to the peer's test port: candidates in order, again and again
 * (the peer may still be starting) with a growing pause, until DEADLINE.
 * The most telling failure is kept: a refused credential over a silent
 * port over a closed one.
 */
static int oob_connect(struct run *run, struct link *l, int64_t deadline)
{
	char why[IBP_TEXT_MAX] = "", auth_why[IBP_TEXT_MAX] = "", other_why[IBP_TEXT_MAX] = "";
	int worst = -ECONNREFUSED, pause_ms = 10;

	for (;;) {
		int ms;

		for (int c = 0; c < run->n_cands; c++) {
			int rc = try_candidate(run, l, run->cands[c], deadline, why, sizeof(why));

			if (rc >= 0)
				return rc;
			if (rc == -ENOTCONN) { /* our own munged: local, final */
				link_fail(l, IBP_LINK_LOCAL, rc, "%s", why);
				return rc;
			}
			if (rc == -ENXIO) { /* the peer has no such rail: final */
				rail_missing(run, l, why);
				return rc;
			}
			if (rc == -EACCES) {
				worst = rc;
				setf(auth_why, sizeof(auth_why), "%s", why);
			} else if (rc == -EPROTO || rc == -ETIMEDOUT || rc == -ECONNRESET) {
				if (worst != -EACCES)
					worst = rc;
				setf(other_why, sizeof(other_why), "%s", why);
			}
			if (ibp_deadline_expired(deadline, ibp_now_ns()))
				goto give_up;
		}
		ms = ibp_deadline_poll_ms(deadline, ibp_now_ns());
		if (ms == 0)
			goto give_up;
		poll(NULL, 0, ms < pause_ms ? ms : pause_ms);
		if (pause_ms < 200)
			pause_ms *= 2;
	}
give_up:
	if (worst == -EACCES)
		link_fail(l, IBP_LINK_AUTH, worst, "%s", auth_why);
	else if (worst == -EPROTO)
		link_fail(l, IBP_LINK_PROTOCOL, worst, "%s", other_why);
	else if (worst == -ETIMEDOUT || worst == -ECONNRESET)
		link_fail(l, IBP_LINK_UNREACHABLE, worst, "%s", other_why);
	else
		link_fail(l, IBP_LINK_UNREACHABLE, worst, "%s: connection refused on port %u%s",
			  l->peer_addr, run->cands[0],
			  run->n_cands > 1 ? " and its fallbacks" : "");
	return worst;
}

static int send_ctrl(int fd, uint8_t op, int32_t status, uint64_t a, uint64_t b, int64_t deadline)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_CTRL};

	m.u.ctrl.op = op;
	m.u.ctrl.status = status;
	m.u.ctrl.a = a;
	m.u.ctrl.b = b;
	return ibp_oob_send(fd, &m, deadline);
}

/* Receives the control message OP; an ABORT from the peer ends the link. */
static int recv_ctrl(struct link *l, int fd, uint8_t op, struct ibp_oob_ctrl *c, int64_t deadline)
{
	struct ibp_oob_msg m;
	int rc = ibp_oob_recv(fd, &m, deadline);

	if (rc) {
		link_fail(l, status_of(rc), rc, "waiting for the peer: %s", errtext(rc));
		return rc;
	}
	if (m.type == IBP_OOB_CTRL && m.u.ctrl.op == IBP_CTRL_ABORT) {
		enum ibp_link_status st =
		    m.u.ctrl.a > IBP_LINK_PASS && m.u.ctrl.a < IBP_LINK_STATUS_COUNT
			? (enum ibp_link_status)m.u.ctrl.a
			: IBP_LINK_GONE;

		link_fail(l, st, m.u.ctrl.status, "the peer gave up: %s (%s)",
			  ibp_link_status_name(st), strerror(-m.u.ctrl.status));
		return -ECONNABORTED;
	}
	if (m.type != IBP_OOB_CTRL || m.u.ctrl.op != op) {
		link_fail(l, IBP_LINK_PROTOCOL, -EPROTO,
			  "expected control message %u, got type %u op %u", op, m.type,
			  m.type == IBP_OOB_CTRL ? m.u.ctrl.op : 0);
		return -EPROTO;
	}
	*c = m.u.ctrl;
	return 0;
}

static void send_abort(struct link *l, int fd)
{
	/* Best effort, short: the peer learns why instead of waiting out its deadline. */
	send_ctrl(fd, IBP_CTRL_ABORT, l->r.err < 0 && l->r.err >= -4095 ? l->r.err : -EIO,
		  (uint64_t)l->r.status, 0, ibp_now_ns() + 50 * IBP_NS_PER_MS);
}

static int exchange_endpoints(struct run *run, struct link *l, int fd, struct ibp_tx *tx,
			      struct ibp_endpoint *peer, int64_t deadline)
{
	struct ibp_oob_msg mine = {.type = IBP_OOB_ENDPOINT}, theirs;
	const struct ibp_tx_port *port = &run->rails[l->r.rail];
	int rc;

	rc = run->ops->endpoint(tx, &mine.u.endpoint.ep);
	if (rc) {
		link_fail(l, IBP_LINK_LOCAL, rc, "local endpoint: %s", strerror(-rc));
		return rc;
	}
	mine.u.endpoint.ep.rate_mbps = (uint32_t)(port->rate_gbps * 1000);
	mine.u.endpoint.rail = l->r.rail;
	mine.u.endpoint.port = port->port;
	setf(mine.u.endpoint.device, sizeof(mine.u.endpoint.device), "%s", port->device);
	rc = ibp_oob_send(fd, &mine, deadline);
	if (!rc)
		rc = ibp_oob_recv(fd, &theirs, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "endpoint exchange: %s", errtext(rc));
		return rc;
	}
	if (theirs.type == IBP_OOB_CTRL && theirs.u.ctrl.op == IBP_CTRL_ABORT) {
		link_fail(l, IBP_LINK_GONE, theirs.u.ctrl.status, "the peer gave up: %s",
			  strerror(-theirs.u.ctrl.status));
		return -ECONNABORTED;
	}
	if (theirs.type != IBP_OOB_ENDPOINT || theirs.u.endpoint.rail != l->r.rail ||
	    theirs.u.endpoint.ep.kind != run->ops->kind) {
		link_fail(
		    l, IBP_LINK_PROTOCOL, -EPROTO,
		    "peer endpoint unusable: type %u rail %u kind %u, expected rail %u kind %u",
		    theirs.type, theirs.u.endpoint.rail, theirs.u.endpoint.ep.kind, l->r.rail,
		    run->ops->kind);
		return -EPROTO;
	}
	setf(l->r.peer_device, sizeof(l->r.peer_device), "%s", theirs.u.endpoint.device);
	l->r.peer_port = theirs.u.endpoint.port;
	l->peer_rate_mbps = theirs.u.endpoint.ep.rate_mbps;
	*peer = theirs.u.endpoint.ep;
	return 0;
}

static int tx_open(struct run *run, struct link *l, struct ibp_tx **tx, char *err, size_t errlen)
{
	struct ibp_tx_opts opts = {.buf_len = run->buf_len, .err = err, .errlen = errlen};
	int rc = run->ops->open(&run->rails[l->r.rail], &opts, tx);

	if (rc)
		link_fail(l, IBP_LINK_LOCAL, rc, "%s %s port %u: %s", run->ops->name,
			  l->r.device[0] ? l->r.device : run->my_addr, l->r.port,
			  err[0] ? err : strerror(-rc));
	return rc;
}

/*
 * Both roles' data path: open the local port, swap endpoints over FD,
 * connect.  0, or -1 with the link's outcome recorded; *TX may be set
 * either way (the caller closes it).  ERR stays the transport's message
 * buffer for the later operations.
 */
static int link_connect(struct run *run, struct link *l, int fd, enum ibp_tx_role role,
			struct ibp_tx **tx, char *err, size_t errlen, int64_t deadline)
{
	struct ibp_endpoint peer;
	int rc;

	if (tx_open(run, l, tx, err, errlen))
		return -1;
	if (exchange_endpoints(run, l, fd, *tx, &peer, deadline))
		return -1;
	rc = run->ops->connect(*tx, &peer, role, deadline);
	if (rc) {
		link_fail(l, rc == -ETIMEDOUT ? IBP_LINK_TIMEOUT : IBP_LINK_TRANSPORT, rc,
			  "data path: %s", err[0] ? err : strerror(-rc));
		return -1;
	}
	return 0;
}

static void link_sender(struct run *run, struct link *l, int fd, int64_t deadline)
{
	char err[IBP_TEXT_MAX] = "";
	struct ibp_oob_ctrl c;
	struct ibp_tx *tx = NULL;
	uint64_t seed = random64(), ns = 0;
	double floor_gbps = 0;
	int rc;

	if (link_connect(run, l, fd, IBP_TX_SENDER, &tx, err, sizeof(err), deadline))
		goto abort;
	rc = send_ctrl(fd, IBP_CTRL_READY, 0, run->burst, IBP_RDMATEST_LAT_ITERS, deadline);
	if (!rc)
		rc = send_ctrl(fd, IBP_CTRL_PATTERN_SENT, 0, seed, run->buf_len, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	rc = run->ops->send_pattern(tx, seed, run->buf_len, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "pattern: %s", err[0] ? err : strerror(-rc));
		goto abort;
	}
	if (recv_ctrl(l, fd, IBP_CTRL_PATTERN_RESULT, &c, deadline))
		goto done;
	if (c.status == -EBADMSG) {
		link_fail(l, IBP_LINK_CORRUPT, -EBADMSG,
			  "pattern arrived corrupted at byte %llu of %zu", (unsigned long long)c.a,
			  run->buf_len);
		goto verdict;
	}
	if (c.status) {
		link_fail(l, status_of(c.status), c.status,
			  "the receiver could not check the pattern: %s", strerror(-c.status));
		goto verdict;
	}
	rc = run->ops->bw_send(tx, run->burst, deadline, &ns);
	if (rc) {
		link_fail(l, status_of(rc), rc, "bandwidth burst: %s",
			  err[0] ? err : strerror(-rc));
		goto abort;
	}
	l->r.gbps = ns ? (double)run->burst * 8.0 / (double)ns : 0;
	if (send_ctrl(fd, IBP_CTRL_BW_RESULT, 0, run->burst, ns, deadline))
		goto done;
	rc = run->ops->lat_ping(tx, IBP_RDMATEST_LAT_ITERS, deadline, &ns);
	if (rc) {
		link_fail(l, status_of(rc), rc, "latency: %s", err[0] ? err : strerror(-rc));
		goto abort;
	}
	l->r.lat_us = (double)ns / 1000.0;
	if (send_ctrl(fd, IBP_CTRL_LAT_RESULT, 0, IBP_RDMATEST_LAT_ITERS, ns, deadline))
		goto done;
	if (run->rails[l->r.rail].rate_gbps > 0 && l->peer_rate_mbps) {
		double slower = run->rails[l->r.rail].rate_gbps;

		if (l->peer_rate_mbps / 1000.0 < slower)
			slower = l->peer_rate_mbps / 1000.0;
		floor_gbps = slower * run->pol.test_min_bw;
		l->r.expect_gbps = floor_gbps;
	}
	if (floor_gbps > 0 && l->r.gbps < floor_gbps)
		link_fail(l, IBP_LINK_BW_LOW, 0,
			  "burst of %llu bytes at %.2f Gb/s, floor %.2f Gb/s",
			  (unsigned long long)run->burst, l->r.gbps, floor_gbps);
	else if (l->r.lat_us > run->pol.test_max_lat_us)
		link_fail(l, IBP_LINK_LAT_HIGH, 0, "round trip %.0f us, limit %u us", l->r.lat_us,
			  run->pol.test_max_lat_us);
	else
		l->r.status = IBP_LINK_PASS;
verdict:
	send_ctrl(fd, IBP_CTRL_VERDICT, 0, (uint64_t)l->r.status, 0, deadline);
	goto done;
abort:
	send_abort(l, fd);
done:
	if (tx)
		run->ops->close(tx);
}

/* ---- the receiving side ------------------------------------------------- */

static void link_receiver(struct run *run, struct link *l, int fd, int64_t deadline)
{
	char err[IBP_TEXT_MAX] = "";
	struct ibp_oob_ctrl ready, pat, c;
	struct ibp_tx *tx = NULL;
	size_t bad = 0;
	int rc;

	if (link_connect(run, l, fd, IBP_TX_RECEIVER, &tx, err, sizeof(err), deadline))
		goto abort;
	if (recv_ctrl(l, fd, IBP_CTRL_READY, &ready, deadline) ||
	    recv_ctrl(l, fd, IBP_CTRL_PATTERN_SENT, &pat, deadline))
		goto done;
	if (pat.b == 0 || pat.b > run->buf_len || ready.a == 0 || ready.a > (1ull << 32) ||
	    ready.b == 0 || ready.b > 64) {
		link_fail(l, IBP_LINK_PROTOCOL, -EPROTO,
			  "peer asks for a %llu-byte pattern, %llu-byte burst, %llu pings; "
			  "limits %zu, 4 GiB, 64",
			  (unsigned long long)pat.b, (unsigned long long)ready.a,
			  (unsigned long long)ready.b, run->buf_len);
		goto abort;
	}
	rc = run->ops->recv_pattern(tx, pat.a, (size_t)pat.b, deadline, &bad);
	if (rc == -EBADMSG) {
		link_fail(l, IBP_LINK_CORRUPT, rc, "pattern arrived corrupted at byte %zu of %llu",
			  bad, (unsigned long long)pat.b);
		send_ctrl(fd, IBP_CTRL_PATTERN_RESULT, -EBADMSG, bad, 0, deadline);
		goto done;
	}
	if (rc) {
		link_fail(l, status_of(rc), rc, "pattern: %s", err[0] ? err : strerror(-rc));
		goto abort;
	}
	if (send_ctrl(fd, IBP_CTRL_PATTERN_RESULT, 0, 0, 0, deadline))
		goto done;
	rc = run->ops->bw_recv(tx, ready.a, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "bandwidth burst: %s",
			  err[0] ? err : strerror(-rc));
		goto abort;
	}
	if (recv_ctrl(l, fd, IBP_CTRL_BW_RESULT, &c, deadline))
		goto done;
	l->r.gbps = c.b ? (double)c.a * 8.0 / (double)c.b : 0;
	rc = run->ops->lat_pong(tx, (unsigned)ready.b, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "latency: %s", err[0] ? err : strerror(-rc));
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
		link_fail(l, (enum ibp_link_status)c.a, 0,
			  "the sender measured %s (%.2f Gb/s, %.0f us)",
			  ibp_link_status_name((enum ibp_link_status)c.a), l->r.gbps, l->r.lat_us);
	else
		link_fail(l, IBP_LINK_PROTOCOL, -EPROTO, "bad verdict %llu",
			  (unsigned long long)c.a);
	goto done;
abort:
	send_abort(l, fd);
done:
	if (tx)
		run->ops->close(tx);
}

/* ---- workers ------------------------------------------------------------ */

struct worker {
	struct run *run;
	size_t rail;
	pthread_t th;
	bool out;
	bool started;
};

static size_t n_rounds(const struct run *run)
{
	return run->plan.n_rounds;
}

static struct link *link_at(struct run *run, size_t rail, unsigned round, bool out)
{
	return &run->links[(rail * n_rounds(run) + (round - 1)) * 2 + (out ? 0 : 1)];
}

static int64_t round_deadline(const struct run *run, unsigned round)
{
	return run->round_end[round - 1];
}

static void *out_worker(void *arg)
{
	struct worker *w = arg;
	struct run *run = w->run;

	for (unsigned r = 1; r <= n_rounds(run); r++) {
		struct link *l = link_at(run, w->rail, r, true);
		int64_t deadline = round_deadline(run, r);
		int fd = oob_connect(run, l, deadline);

		if (fd < 0)
			continue;
		pthread_mutex_lock(&run->mu);
		l->fd = fd;
		pthread_mutex_unlock(&run->mu);
		link_sender(run, l, fd, deadline);
	}
	return NULL;
}

static int wait_slot(struct run *run, struct link *l, int64_t deadline, char *reject, size_t rlen)
{
	struct timespec ts = {.tv_sec = deadline / IBP_NS_PER_S,
			      .tv_nsec = deadline % IBP_NS_PER_S};
	int fd = -1;
	bool skipped;

	pthread_mutex_lock(&run->mu);
	while (l->slot == SLOT_EMPTY) {
		if (pthread_cond_timedwait(&run->cv, &run->mu, &ts) == ETIMEDOUT)
			break;
	}
	if (l->slot == SLOT_FILLED)
		fd = l->fd;
	else
		l->slot = SLOT_CLOSED; /* a late claimant is refused */
	setf(reject, rlen, "%s", l->skip[0] ? l->skip : l->reject);
	skipped = l->skip[0] != '\0';
	pthread_mutex_unlock(&run->mu);
	if (skipped)
		fd = -ENXIO;
	return fd;
}

static void *in_worker(void *arg)
{
	struct worker *w = arg;
	struct run *run = w->run;

	for (unsigned r = 1; r <= n_rounds(run); r++) {
		struct link *l = link_at(run, w->rail, r, false);
		int64_t deadline = round_deadline(run, r);
		char reject[IBP_TEXT_MAX];
		int fd = wait_slot(run, l, deadline, reject, sizeof(reject));

		if (fd == -ENXIO) {
			rail_missing(run, l, reject);
			continue;
		}
		if (fd < 0) {
			if (reject[0])
				link_fail(l, IBP_LINK_AUTH, -EACCES, "%s", reject);
			else
				link_fail(l, IBP_LINK_UNREACHABLE, -ETIMEDOUT,
					  "no connection from %s by the deadline",
					  node_name(run, l->peer));
			continue;
		}
		link_receiver(run, l, fd, deadline);
	}
	return NULL;
}

/* ---- the acceptor: the only code that reads from strangers -------------- */

/* Closes the listeners this run bound; the caller's are left alone. */
static void close_listeners(struct run *run)
{
	for (int c = 0; c < run->n_cands; c++) {
		if (run->own_listen && run->listen_fds[c] >= 0)
			close(run->listen_fds[c]);
		run->listen_fds[c] = -1;
	}
}

__attribute__((format(printf, 3, 4))) static void drop(struct run *run, struct pending *p,
						       const char *fmt, ...)
{
	va_list ap;
	char why[IBP_TEXT_MAX];

	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): started just above */
	if (vsnprintf(why, sizeof(why), fmt, ap) >= (int)sizeof(why))
		strcpy(why + sizeof(why) - 4, "...");
	va_end(ap);
	run->dropped++;
	setf(run->drop_reason, sizeof(run->drop_reason), "%s: %s", p->from, why);
	close(p->fd);
	p->fd = -1;
}

static void send_error(int fd, int code, const char *text)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_ERROR};
	size_t n = 0;

	m.u.error.code = code;
	/* Only printable text goes on the wire. */
	for (const char *s = text; *s && n < sizeof(m.u.error.text) - 1; s++)
		m.u.error.text[n++] = (*s >= 0x20 && *s <= 0x7e) ? *s : '?';
	ibp_oob_send(fd, &m, ibp_now_ns() + 20 * IBP_NS_PER_MS);
}

static bool nonce_seen(struct run *run, uint64_t nonce)
{
	size_t n = run->n_nonces < MAX_NONCES ? run->n_nonces : MAX_NONCES;

	for (size_t i = 0; i < n; i++)
		if (run->nonces[i] == nonce)
			return true;
	run->nonces[run->n_nonces++ % MAX_NONCES] = nonce;
	return false;
}

static void handshake(struct run *run, struct pending *p)
{
	struct ibp_oob_msg m, reply;
	struct ibp_oob_hello *h = &m.u.hello;
	struct ibp_auth_claims want;
	struct link *l = NULL;
	char why[IBP_TEXT_MAX] = "";
	int rc = ibp_oob_decode(p->buf, sizeof(p->buf), &m);

	if (rc < 0) {
		drop(run, p, "malformed hello (%s)", strerror(-rc));
		return;
	}
	if (h->flags & IBP_HELLO_REPLY) {
		drop(run, p, "a reply where a hello was expected");
		return;
	}
	if (h->job != run->cfg->job || h->step != run->cfg->step || h->uid != run->cfg->uid ||
	    h->to != run->me || h->nnodes != run->n) {
		setf(why, sizeof(why),
		     "hello for job %u step %u uid %u node %u of %u, expected %u/%u/%u/%u/%u",
		     h->job, h->step, h->uid, h->to, h->nnodes, run->cfg->job, run->cfg->step,
		     run->cfg->uid, run->me, run->n);
		send_error(p->fd, -EACCES, why);
		drop(run, p, "%s", why);
		return;
	}
	if (h->round <= n_rounds(run) && h->rail < run->n_rails) {
		l = link_at(run, h->rail, h->round, false);
		if (l->peer != h->from)
			l = NULL;
	}
	if (!l && h->rail >= run->n_rails) {
		setf(why, sizeof(why),
		     "%s tests %zu rail%s, no rail %u: the nodes have different numbers of ports "
		     "to test",
		     node_name(run, run->me), run->n_rails, run->n_rails == 1 ? "" : "s", h->rail);
		send_error(p->fd, -ENXIO, why);
		drop(run, p, "%s", why);
		return;
	}
	if (!l) {
		setf(why, sizeof(why), "unexpected hello from node %u round %u rail %u", h->from,
		     h->round, h->rail);
		send_error(p->fd, -EPROTO, why);
		drop(run, p, "%s", why);
		return;
	}
	if (!run->auth.insecure && (h->flags & IBP_HELLO_INSECURE)) {
		setf(why, sizeof(why),
		     "%s runs without credentials (--insecure), this node does not",
		     node_name(run, h->from));
		goto refuse;
	}
	if (nonce_seen(run, h->nonce)) {
		setf(why, sizeof(why), "replayed hello from %s", p->from);
		goto refuse;
	}
	hello_claims(h, &want);
	rc = ibp_auth_verify(&run->auth, h->cred, &want, why, sizeof(why));
	if (rc)
		goto refuse;
	rc = hello_make(run, &reply, h->from, h->round, h->rail, h->nonce, true, why, sizeof(why));
	if (rc) {
		send_error(p->fd, -EIO, why);
		drop(run, p, "cannot answer: %s", why);
		return;
	}
	pthread_mutex_lock(&run->mu);
	if (l->slot != SLOT_EMPTY) {
		pthread_mutex_unlock(&run->mu);
		setf(why, sizeof(why), "second connection for node %u round %u rail %u", h->from,
		     h->round, h->rail);
		send_error(p->fd, -EALREADY, why);
		drop(run, p, "%s", why);
		return;
	}
	pthread_mutex_unlock(&run->mu);
	if (ibp_oob_send(p->fd, &reply, ibp_deadline_min(run->end, ibp_now_ns() + IBP_NS_PER_S))) {
		drop(run, p, "could not answer the hello");
		return;
	}
	pthread_mutex_lock(&run->mu);
	for (size_t k = h->n_rails; k < run->n_rails; k++) {
		for (unsigned r = 1; r <= n_rounds(run); r++) {
			struct link *x = link_at(run, k, r, false);

			if (x->peer == h->from && x->slot == SLOT_EMPTY) {
				x->slot = SLOT_CLOSED;
				setf(x->skip, sizeof(x->skip),
				     "%s tests %u rail%s, %s %zu: no rail %zu there",
				     node_name(run, h->from), h->n_rails,
				     h->n_rails == 1 ? "" : "s", node_name(run, run->me),
				     run->n_rails, k);
			}
		}
	}
	l->fd = p->fd;
	l->slot = SLOT_FILLED;
	pthread_cond_broadcast(&run->cv);
	pthread_mutex_unlock(&run->mu);
	p->fd = -1;
	return;
refuse:
	pthread_mutex_lock(&run->mu);
	setf(l->reject, sizeof(l->reject), "credential of %s refused: %s", node_name(run, h->from),
	     why);
	pthread_mutex_unlock(&run->mu);
	send_error(p->fd, -EACCES, why);
	drop(run, p, "%s", why);
}

static bool all_slots_taken(struct run *run)
{
	bool all = true;

	pthread_mutex_lock(&run->mu);
	for (size_t i = 0; i < run->n_links; i++)
		if (!run->links[i].out && run->links[i].slot == SLOT_EMPTY)
			all = false;
	pthread_mutex_unlock(&run->mu);
	return all;
}

static void accept_one(struct run *run, int lfd, struct pending *pend, int64_t conn_ns)
{
	struct sockaddr_storage ss = {0};
	socklen_t sl = sizeof(ss);
	struct pending *slot = &pend[0];
	char host[INET6_ADDRSTRLEN] = "?";
	int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	for (size_t i = 0; i < IBP_RDMATEST_MAX_PENDING; i++) {
		if (pend[i].fd < 0) {
			slot = &pend[i];
			break;
		}
		if (pend[i].since < slot->since)
			slot = &pend[i];
	}
	if (slot->fd >= 0) /* full: the oldest stranger makes room */
		drop(run, slot, "too many unauthenticated connections, oldest dropped");
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
	else if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof(host));
	nodelay(fd);
	slot->fd = fd;
	slot->have = 0;
	slot->since = ibp_now_ns();
	slot->deadline = slot->since + conn_ns;
	setf(slot->from, sizeof(slot->from), "%s", host);
}

static void read_pending(struct run *run, struct pending *p)
{
	for (;;) {
		size_t want = p->have < IBP_OOB_HDR_LEN ? IBP_OOB_HDR_LEN : HELLO_FRAME;
		ssize_t n = recv(p->fd, p->buf + p->have, want - p->have, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0) {
			drop(run, p,
			     n == 0 ? "closed before its hello was complete (%zu bytes)"
				    : "read error after %zu bytes",
			     p->have);
			return;
		}
		p->have += (size_t)n;
		if (p->have == IBP_OOB_HDR_LEN) {
			unsigned type;
			size_t plen;
			int rc = ibp_oob_decode_header(p->buf, p->have, &type, &plen);

			if (rc || type != IBP_OOB_HELLO) {
				drop(run, p, "bad first message (%s)",
				     rc ? strerror(-rc) : "not a hello");
				return;
			}
		}
		if (p->have == HELLO_FRAME) {
			handshake(run, p);
			return;
		}
	}
}

static void acceptor(struct run *run)
{
	struct pending pend[IBP_RDMATEST_MAX_PENDING];
	int64_t last = round_deadline(run, (unsigned)n_rounds(run));
	int64_t conn_ns = (run->end - run->start) / 4;

	if (conn_ns > IBP_NS_PER_S)
		conn_ns = IBP_NS_PER_S;
	for (size_t i = 0; i < IBP_RDMATEST_MAX_PENDING; i++)
		pend[i].fd = -1;
	while (!all_slots_taken(run)) {
		struct pollfd pfd[IBP_RDMATEST_MAX_PENDING + IBP_RDMATEST_MAX_LISTEN];
		struct pending *who[IBP_RDMATEST_MAX_PENDING + IBP_RDMATEST_MAX_LISTEN];
		int64_t now = ibp_now_ns(), wake = last;
		size_t np = 0, nl;
		int n, ms;

		if (now >= last)
			break;
		for (int c = 0; c < run->n_cands; c++) {
			if (run->listen_fds[c] < 0)
				continue;
			pfd[np] = (struct pollfd){.fd = run->listen_fds[c], .events = POLLIN};
			who[np++] = NULL;
		}
		nl = np;
		for (size_t i = 0; i < IBP_RDMATEST_MAX_PENDING; i++) {
			if (pend[i].fd < 0)
				continue;
			if (now >= pend[i].deadline) {
				drop(run, &pend[i], "no complete hello within %lld ms (%zu bytes)",
				     (long long)(conn_ns / IBP_NS_PER_MS), pend[i].have);
				continue;
			}
			wake = ibp_deadline_min(wake, pend[i].deadline);
			pfd[np] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
			who[np++] = &pend[i];
		}
		/* Wake at least every 50 ms: a worker may have closed its slot. */
		ms = ibp_deadline_poll_ms(wake, now);
		n = poll(pfd, np, ms > 50 ? 50 : ms);
		if (n < 0 && errno != EINTR)
			break;
		for (size_t i = nl; n > 0 && i < np; i++)
			if (pfd[i].revents)
				read_pending(run, who[i]);
		for (size_t i = 0; n > 0 && i < nl; i++)
			if (pfd[i].revents & POLLIN)
				accept_one(run, pfd[i].fd, pend, conn_ns);
	}
	for (size_t i = 0; i < IBP_RDMATEST_MAX_PENDING; i++)
		if (pend[i].fd >= 0)
			drop(run, &pend[i], "the test is over");
	close_listeners(run);
}

/* The caller's pre-bound listeners: the first listening port, or -errno. */
static int listen_given(struct run *run)
{
	const struct ibp_rdmatest_config *cfg = run->cfg;
	int first = -EADDRINUSE;

	if (cfg->n_listen_fds == 0 || cfg->n_listen_fds > IBP_RDMATEST_MAX_LISTEN ||
	    !cfg->listen_ports)
		return -EINVAL;
	run->n_cands = (int)cfg->n_listen_fds;
	for (int c = 0; c < run->n_cands; c++) {
		run->cands[c] = cfg->listen_ports[c];
		run->listen_fds[c] = cfg->listen_fds[c];
		if (cfg->listen_ports[c] == 0)
			return -EINVAL;
		if (run->listen_fds[c] >= 0 && first < 0)
			first = cfg->listen_ports[c];
	}
	return first;
}

/* The port listened on, or -errno (-EADDRINUSE: every candidate is taken). */
static int listen_on(struct run *run)
{
	int rc;

	if (run->cfg->listen_fds)
		return listen_given(run);
	rc = ibp_oob_ports(run->cfg->job, run->cfg->step, run->pol.test_port_lo,
			   run->pol.test_port_hi, run->cands, IBP_RDMATEST_PORT_CANDIDATES);
	if (rc < 0)
		return rc;
	run->n_cands = rc;
	run->own_listen = true;
	rc = -EADDRINUSE;
	for (int c = 0; c < run->n_cands; c++) {
		struct sockaddr_storage ss;
		socklen_t len;
		int one = 1, fd;

		if (sockaddr_of(run->my_addr, run->cands[c], &ss, &len))
			return -EINVAL;
		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, (struct sockaddr *)&ss, len) && !listen(fd, 64)) {
			run->listen_fds[c] = fd;
			return run->cands[c];
		}
		rc = -errno;
		close(fd);
		if (rc != -EADDRINUSE)
			return rc;
	}
	return rc;
}

/* ---- summaries ---------------------------------------------------------- */

static void known_add(struct run *run, const struct ibp_oob_link *x)
{
	for (size_t i = 0; i < run->n_known; i++) {
		struct ibp_oob_link *k = &run->known[i];

		if (k->from == x->from && k->to == x->to && k->round == x->round &&
		    k->rail == x->rail)
			return; /* own observations come first and win */
	}
	if (run->n_known < sizeof(run->known) / sizeof(run->known[0]))
		run->known[run->n_known++] = *x;
}

static void own_links(struct run *run, struct ibp_oob_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->node = run->me;
	s->nnodes = run->n;
	for (size_t i = 0; i < run->n_links && s->n_links < IBP_OOB_MAX_LINKS; i++) {
		const struct link *l = &run->links[i];
		struct ibp_oob_link *x = &s->links[s->n_links++];

		x->from = l->r.from;
		x->to = l->r.to;
		x->round = l->r.round;
		x->rail = l->r.rail;
		x->status = (uint8_t)l->r.status;
		known_add(run, x);
	}
}

static void exchange_summaries(struct run *run)
{
	struct ibp_oob_msg mine = {.type = IBP_OOB_SUMMARY};
	bool all_pass = true;
	int64_t deadline = run->end;

	own_links(run, &mine.u.summary);
	for (size_t i = 0; i < run->n_links; i++) {
		struct link *l = &run->links[i];

		if (l->r.status != IBP_LINK_PASS)
			all_pass = false;
		if (l->fd >= 0 &&
		    ibp_oob_send(l->fd, &mine,
				 ibp_deadline_min(deadline, ibp_now_ns() + 200 * IBP_NS_PER_MS))) {
			close(l->fd);
			l->fd = -1;
		}
	}
	/* All passed: nothing to learn from the peers; they have our summary. */
	while (!all_pass) {
		struct pollfd pfd[IBP_RDMATEST_MAX_LINKS];
		struct link *who[IBP_RDMATEST_MAX_LINKS];
		size_t np = 0;
		int ms = ibp_deadline_poll_ms(deadline, ibp_now_ns()), n;

		for (size_t i = 0; i < run->n_links; i++) {
			if (run->links[i].fd < 0 || run->links[i].summary_in)
				continue;
			pfd[np] = (struct pollfd){.fd = run->links[i].fd, .events = POLLIN};
			who[np++] = &run->links[i];
		}
		if (np == 0 || ms == 0)
			break;
		n = poll(pfd, np, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (size_t i = 0; i < np; i++) {
			struct ibp_oob_msg m;
			struct link *l = who[i];

			if (!pfd[i].revents)
				continue;
			/* A peer may still send link messages it had queued: skip them. */
			if (ibp_oob_recv(
				l->fd, &m,
				ibp_deadline_min(deadline, ibp_now_ns() + 100 * IBP_NS_PER_MS))) {
				close(l->fd);
				l->fd = -1;
				continue;
			}
			if (m.type != IBP_OOB_SUMMARY)
				continue;
			l->summary_in = true;
			if (m.u.summary.node != l->peer || m.u.summary.nnodes != run->n)
				continue;
			run->n_summaries++;
			for (size_t k = 0; k < m.u.summary.n_links; k++)
				known_add(run, &m.u.summary.links[k]);
		}
	}
}

/* ---- findings ----------------------------------------------------------- */

static size_t worst_link_of(struct run *run, uint32_t node)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < run->n_links; i++) {
		const struct link *l = &run->links[i];

		if (!failed(l->r.status) || (l->r.from != node && l->r.to != node))
			continue;
		if (best == SIZE_MAX || l->r.status > run->links[best].r.status)
			best = i;
	}
	return best;
}

/* Which of this node's links all failed: " it sends", " it receives" or "". */
static const char *own_direction(const struct run *run)
{
	bool out_ok = false, in_ok = false;

	for (size_t i = 0; i < run->n_links; i++) {
		if (run->links[i].r.status != IBP_LINK_PASS)
			continue;
		if (run->links[i].out)
			out_ok = true;
		else
			in_ok = true;
	}
	return out_ok == in_ok ? "" : out_ok ? " it receives" : " it sends";
}

static bool passes_same_way(const struct run *run, const struct link *l)
{
	for (size_t i = 0; i < run->n_links; i++) {
		const struct link *x = &run->links[i];

		if (x != l && x->out == l->out && x->peer != l->peer &&
		    x->r.status == IBP_LINK_PASS)
			return true;
	}
	return false;
}

static void expected_text(const struct run *run, char *buf, size_t len)
{
	double floor_gbps = 0;

	for (size_t i = 0; i < run->n_links; i++)
		if (run->links[i].r.expect_gbps > floor_gbps)
			floor_gbps = run->links[i].r.expect_gbps;
	if (floor_gbps > 0)
		setf(buf, len,
		     "intact data at >= %.1f Gb/s and round trips <= %u us with every peer",
		     floor_gbps, run->pol.test_max_lat_us);
	else
		setf(buf, len, "intact data and round trips <= %u us with every peer",
		     run->pol.test_max_lat_us);
}

static void report(struct run *run, struct ibp_findings *out, struct ibp_rdmatest_result *res)
{
	uint32_t sus[8];
	size_t nsus = 0;
	char expected[IBP_TEXT_MAX];
	size_t n_fail = 0;

	expected_text(run, expected, sizeof(expected));
	for (size_t i = 0; i < run->n_links; i++)
		n_fail += failed(run->links[i].r.status);
	/* Suspects: this node, then each peer of a failed link. */
	if (n_fail && ibp_rdmatest_suspect(run->known, run->n_known, run->me, true))
		sus[nsus++] = run->me;
	for (size_t i = 0; i < run->n_links && nsus < 8; i++) {
		const struct link *l = &run->links[i];
		bool dup = false;

		if (!failed(l->r.status))
			continue;
		for (size_t k = 0; k < nsus; k++)
			dup |= sus[k] == l->peer;
		if (!dup && ibp_rdmatest_suspect(run->known, run->n_known, l->peer, false))
			sus[nsus++] = l->peer;
	}
	for (size_t k = 0; k < nsus; k++) {
		size_t w = worst_link_of(run, sus[k]);
		const struct link *l = &run->links[w];
		bool self = sus[k] == run->me;
		char peers[IBP_TEXT_MAX] = "";
		size_t nbad = 0, off = 0, n_seen = 0;
		uint32_t seen[IBP_RDMATEST_MAX_LINKS];
		struct ibp_finding *f;

		for (size_t i = 0; i < run->n_links; i++) {
			const struct link *x = &run->links[i];
			uint32_t other = self ? x->peer : run->me;

			if (!failed(x->r.status) || (!self && x->peer != sus[k]))
				continue;
			nbad++;
			for (size_t s = 0; s < n_seen && other != UINT32_MAX; s++)
				if (seen[s] == other)
					other = UINT32_MAX;
			if (other == UINT32_MAX)
				continue;
			seen[n_seen++] = other;
			if (off < sizeof(peers) - 1)
				off += (size_t)snprintf(peers + off, sizeof(peers) - off, "%s%s",
							off ? "," : "", node_name(run, other));
			if (off >= sizeof(peers))
				off = sizeof(peers) - 1;
		}
		if (ibp_findings_addf(out, "rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE,
				      self ? l->r.device : l->r.peer_device,
				      (int)(self ? l->r.port : l->r.peer_port), expected,
				      ibp_rdmatest_status_fix(l->r.status),
				      "rdma test %s on %s link%s %s %s (%s)",
				      ibp_link_status_name(l->r.status), self ? "every" : "its",
				      self ? own_direction(run) : (nbad == 1 ? "" : "s"),
				      self ? "with" : "seen from", peers, l->r.detail))
			continue;
		f = &out->v[out->n - 1];
		setf(f->node, sizeof(f->node), "%s", node_name(run, sus[k]));
	}
	for (size_t i = 0; i < run->n_links; i++) {
		const struct link *l = &run->links[i];
		bool covered = false;

		if (!failed(l->r.status))
			continue;
		for (size_t k = 0; k < nsus; k++)
			covered |= sus[k] == run->me || sus[k] == l->peer;
		if (covered)
			continue;
		if (ibp_findings_addf(out, "rdmatest_link_failed", IBP_SEV_FAIL, IBP_CLASS_NODE,
				      l->r.device, (int)l->r.port, expected,
				      ibp_rdmatest_status_fix(l->r.status),
				      "rdma test %s on link %s -> %s (round %u, rail %u): %s",
				      ibp_link_status_name(l->r.status), node_name(run, l->r.from),
				      node_name(run, l->r.to), l->r.round, l->r.rail, l->r.detail))
			continue;
		/*
		 * When this end passes with other peers in the same direction, the
		 * far end (or the path to it) is the better lead: name it.
		 */
		if (passes_same_way(run, l)) {
			struct ibp_finding *f = &out->v[out->n - 1];

			setf(f->node, sizeof(f->node), "%s", node_name(run, l->peer));
			setf(f->device, sizeof(f->device), "%s", l->r.peer_device);
			f->port = (int)l->r.peer_port;
		}
	}
	if (run->dropped)
		ibp_findings_addf(out, "rdmatest_dropped_connections", IBP_SEV_WARN, IBP_CLASS_NODE,
				  NULL, 0, "only the step's nodes connect to the test port",
				  "find what connects to the test ports (ss -tnp), or pick another "
				  "range with test_ports=",
				  "dropped %u connection%s on test port %u (last: %s)",
				  run->dropped, run->dropped == 1 ? "" : "s", res->oob_port,
				  run->drop_reason);
	if (!n_fail) {
		double min_bw = 0, max_lat = 0;
		size_t n_pass = 0;

		for (size_t i = 0; i < run->n_links; i++) {
			const struct link *l = &run->links[i];

			n_pass += l->r.status == IBP_LINK_PASS;
			if (min_bw == 0 || (l->r.gbps > 0 && l->r.gbps < min_bw))
				min_bw = l->r.gbps;
			if (l->r.lat_us > max_lat)
				max_lat = l->r.lat_us;
		}
		ibp_findings_addf(
		    out, "rdmatest_passed", IBP_SEV_OK, IBP_CLASS_NODE,
		    run->n_rails ? run->rails[0].device : NULL,
		    run->n_rails ? (int)run->rails[0].port : 0, expected, NULL,
		    "%zu links with %zu peers over %zu rail%s passed%s: min %.2f Gb/s, "
		    "max round trip %.0f us",
		    n_pass,
		    (size_t)(run->n <= 2   ? run->n - 1
			     : run->n == 3 ? 2
					   : 4),
		    run->n_rails, run->n_rails == 1 ? "" : "s",
		    n_pass < run->n_links ? " (the rest not tested: rails only one side has)" : "",
		    min_bw, max_lat);
	}
	res->pass = n_fail == 0;
	res->n_suspects = nsus;
	memcpy(res->suspects, sus, nsus * sizeof(sus[0]));
}

/* ---- setup and the run -------------------------------------------------- */

static int setup_nodes(struct run *run, struct ibp_findings *out)
{
	const struct ibp_rdmatest_config *cfg = run->cfg;
	char err[IBP_TEXT_MAX] = "";
	int rc;

	if (cfg->nodes) {
		run->nodes = cfg->nodes;
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
		run->nodes = &run->own_nodes;
	}
	if (run->nodes->n == 0 || cfg->index >= run->nodes->n ||
	    run->nodes->n > IBP_OOB_MAX_NODES) {
		ibp_findings_addf(
		    out, "rdmatest_bad_nodelist", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
		    "an index below the node count", "pass this node's index in the host list",
		    "node index %zu, %zu nodes in the list", cfg->index, run->nodes->n);
		return -EINVAL;
	}
	run->n = (uint32_t)run->nodes->n;
	run->me = (uint32_t)cfg->index;
	return ibp_rdmatest_plan(run->n, run->me, &run->plan);
}

static int setup_rails(struct run *run, struct ibp_findings *out)
{
	const struct ibp_rdmatest_config *cfg = run->cfg;
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
		setf(run->rails[0].addr, sizeof(run->rails[0].addr), "%s", run->my_addr);
		run->n_rails = 1;
		return 0;
	}
	if (want > IBP_RDMATEST_MAX_RAILS)
		want = IBP_RDMATEST_MAX_RAILS;
	for (size_t k = 0; k < want; k++) {
		run->rails[k] = cfg->ports[k];
		run->rails[k].rail = (unsigned)k;
		if (!run->rails[k].addr[0])
			setf(run->rails[k].addr, sizeof(run->rails[k].addr), "%s", run->my_addr);
	}
	run->n_rails = want;
	return 0;
}

static int setup_links(struct run *run, struct ibp_findings *out)
{
	uint32_t peers[4];
	char addrs[4][64];
	size_t np = 0;

	run->n_links = run->n_rails * n_rounds(run) * 2;
	for (size_t k = 0; k < run->n_rails; k++) {
		for (unsigned r = 1; r <= n_rounds(run); r++) {
			for (int o = 1; o >= 0; o--) {
				struct link *l = link_at(run, k, r, o);
				size_t j;

				memset(l, 0, sizeof(*l));
				l->fd = -1;
				l->out = o;
				l->peer = o ? run->plan.send_to[r - 1] : run->plan.recv_from[r - 1];
				l->r.from = o ? run->me : l->peer;
				l->r.to = o ? l->peer : run->me;
				l->r.round = (uint8_t)r;
				l->r.rail = (uint16_t)k;
				l->r.status = IBP_LINK_UNTESTED;
				setf(l->r.device, sizeof(l->r.device), "%s", run->rails[k].device);
				l->r.port = run->rails[k].port;
				for (j = 0; j < np && peers[j] != l->peer; j++)
					;
				if (j == np) {
					int rc =
					    resolve(run, l->peer, addrs[np], sizeof(addrs[np]));

					if (rc) {
						setf(addrs[np], sizeof(addrs[np]), "%s", "");
					}
					peers[np++] = l->peer;
				}
				if (!addrs[j][0]) {
					link_fail(l, IBP_LINK_UNREACHABLE, -EHOSTUNREACH,
						  "cannot resolve the address of %s",
						  node_name(run, l->peer));
					l->slot = SLOT_CLOSED;
				}
				setf(l->peer_addr, sizeof(l->peer_addr), "%s", addrs[j]);
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
static int setup_munge(struct run *run, struct ibp_findings *out)
{
	struct ibp_auth_claims c = {.job = run->cfg->job,
				    .step = run->cfg->step,
				    .uid = run->cfg->uid,
				    .from = run->me,
				    .to = run->me,
				    .nnodes = run->n};
	char cred[IBP_OOB_CRED_MAX], err[IBP_TEXT_MAX] = "";
	const char *sock = run->auth.socket;
	int rc;

	if (run->auth.insecure)
		return 0;
	c.nonce = random64();
	rc = ibp_auth_sign(&run->auth, &c, cred, sizeof(cred), err, sizeof(err));
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

static void fill_result(struct run *run, struct ibp_rdmatest_result *res)
{
	res->nnodes = run->n;
	res->index = run->me;
	res->n_links = run->n_links;
	for (size_t i = 0; i < run->n_links; i++)
		res->links[i] = run->links[i].r;
	res->n_summaries = run->n_summaries;
	res->dropped = run->dropped;
	setf(res->drop_reason, sizeof(res->drop_reason), "%s", run->drop_reason);
	res->elapsed_s = (double)(ibp_now_ns() - run->start) / 1e9;
}

int ibp_rdmatest_run(const struct ibp_rdmatest_config *cfg, struct ibp_findings *out,
		     struct ibp_rdmatest_result *res)
{
	struct ibp_rdmatest_result scratch;
	struct worker workers[2 * IBP_RDMATEST_MAX_RAILS];
	pthread_condattr_t ca;
	struct run *run;
	size_t nw = 0;
	int rc;

	if (!res)
		res = &scratch;
	memset(res, 0, sizeof(*res));
	run = calloc(1, sizeof(*run));
	if (!run)
		return -ENOMEM;
	run->cfg = cfg;
	for (size_t c = 0; c < IBP_RDMATEST_MAX_LISTEN; c++)
		run->listen_fds[c] = -1;
	run->start = cfg->start_ns ? cfg->start_ns : ibp_now_ns();
	if (cfg->policy)
		run->pol = *cfg->policy;
	else
		ibp_policy_init(&run->pol);
	run->end = ibp_deadline_after_s(run->start, run->pol.test_timeout_s);
	run->round_end[0] = ibp_deadline_split(run->start, run->end, 0.4);
	run->round_end[1] = ibp_deadline_split(run->start, run->end, 0.8);
	run->auth.socket = cfg->munge_socket;
	run->auth.insecure = cfg->insecure;
	run->buf_len = cfg->buf_len ? cfg->buf_len : 1 << 20;
	run->burst = cfg->burst_bytes ? cfg->burst_bytes : 8 * (uint64_t)run->buf_len;
	run->ops = cfg->transport ? cfg->transport : ibp_transport_find(run->pol.test_transport);
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
	res->nnodes = run->n;
	res->index = run->me;
	if (run->n == 1) {
		ibp_findings_addf(out, "rdmatest_single_node", IBP_SEV_OK, IBP_CLASS_JOB, NULL, 0,
				  NULL, NULL, "one node in the step: no peer to test");
		res->pass = true;
		goto out_free;
	}
	rc = resolve(run, run->me, run->my_addr, sizeof(run->my_addr));
	if (rc) {
		ibp_findings_addf(out, "rdmatest_no_address", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0,
				  "the node's name resolves to its address",
				  "add the node to /etc/hosts or DNS",
				  "cannot resolve this node's own name '%s': %s",
				  node_name(run, run->me), strerror(-rc));
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
	setup_links(run, out);
	rc = listen_on(run);
	if (rc < 0) {
		res->setup_err = rc;
		if (cfg->listen_fds)
			ibp_findings_addf(out, "rdmatest_no_listener", IBP_SEV_FAIL, IBP_CLASS_NODE,
					  NULL, 0,
					  "a listening socket on one of the test's candidate ports",
					  "free the test ports or change test_ports=",
					  "no listening socket among the %zu candidate ports "
					  "handed to the test: %s",
					  cfg->n_listen_fds, strerror(-rc));
		else
			ibp_findings_addf(out, "rdmatest_no_listener", IBP_SEV_FAIL, IBP_CLASS_NODE,
					  NULL, 0, "a free test port",
					  "free the ports or widen test_ports=",
					  "cannot listen on %s ports %u..%u (%d candidates): %s",
					  run->my_addr, run->pol.test_port_lo,
					  run->pol.test_port_hi, run->n_cands, strerror(-rc));
		rc = 0;
		goto out_free;
	}
	res->oob_port = (uint16_t)rc;
	pthread_mutex_init(&run->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&run->cv, &ca);
	pthread_condattr_destroy(&ca);
	for (size_t k = 0; k < run->n_rails; k++) {
		for (int o = 0; o < 2; o++) {
			struct worker *w = &workers[nw];

			*w = (struct worker){.run = run, .rail = k, .out = o};
			w->started = !pthread_create(&w->th, NULL, o ? out_worker : in_worker, w);
			if (!w->started)
				for (unsigned r = 1; r <= n_rounds(run); r++)
					link_fail(link_at(run, k, r, o), IBP_LINK_LOCAL, -EAGAIN,
						  "cannot start a test thread");
			nw++;
		}
	}
	acceptor(run);
	for (size_t i = 0; i < nw; i++)
		if (workers[i].started)
			pthread_join(workers[i].th, NULL);
	exchange_summaries(run);
	report(run, out, res);
	for (size_t i = 0; i < run->n_links; i++)
		if (run->links[i].fd >= 0)
			close(run->links[i].fd);
	pthread_cond_destroy(&run->cv);
	pthread_mutex_destroy(&run->mu);
	rc = 0;
out_free:
	fill_result(run, res);
	close_listeners(run);
	ibp_hostlist_release(&run->own_nodes);
	free(run);
	return rc;
}
