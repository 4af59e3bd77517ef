/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest.c: the cross-node RDMA sanity test (rdmatest.h): setup, the
 * sending side of the handshake, the link protocol over the sealed
 * connection and the transport, the summary exchange.  The acceptor is in
 * rdmatest_accept.c, the plan in rdmatest_plan.c, the blame and the
 * findings in rdmatest_blame.c (rdmatest_int.h says who does what).
 *
 * Threads of one run: the caller's thread accepts and authenticates
 * connections (the only place strangers are handled); per rail one thread
 * sends (rounds in order) and one receives (rounds in order, each waiting
 * for the connection the acceptor hands it).  A link's OOB connection stays
 * open after its test and carries the summaries at the end.  After the two
 * HELLOs every frame on it is sealed (seal.h): nothing of a frame is used
 * before its MAC and sequence number check.
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

#include <sodium.h>

#include "ibprep/text.h"
#include "rdmatest_int.h"

/* ---- helpers ------------------------------------------------------------ */

void ibp_rt_setf(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ibp_vformat_cut(dst, len, fmt, ap);
	va_end(ap);
}

/* Fresh random bytes from the kernel; -EIO rather than anything weaker. */
static int random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static uint64_t random64(void)
{
	uint64_t v = 0;

	if (random_bytes(&v, sizeof(v)))
		v = (uint64_t)ibp_now_ns() * 0x9e3779b97f4a7c15ull; /* a nonce, not a key */
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
	case -EKEYREJECTED:
		return IBP_LINK_AUTH;
	default:
		return IBP_LINK_TRANSPORT;
	}
}

const char *ibp_rt_node_name(const struct ibp_rt_run *run, uint32_t i)
{
	return run->nodes->names[i];
}

size_t ibp_rt_n_rounds(const struct ibp_rt_run *run)
{
	return run->plan.n_rounds;
}

struct ibp_rt_link *ibp_rt_link_at(struct ibp_rt_run *run, size_t rail, unsigned round, bool out)
{
	return &run->links[(rail * ibp_rt_n_rounds(run) + (round - 1)) * 2 + (out ? 0 : 1)];
}

int ibp_rt_resolve(const struct ibp_rt_run *run, uint32_t i, char *addr, size_t len)
{
	const struct ibp_rdmatest_config *cfg = run->cfg;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int rc;

	if (cfg->addrs) {
		if (!cfg->addrs[i] || !*cfg->addrs[i])
			return -ENOENT;
		ibp_rt_setf(addr, len, "%s", cfg->addrs[i]);
		return 0;
	}
	if (cfg->resolve)
		return cfg->resolve(cfg->resolve_arg, i, ibp_rt_node_name(run, i), addr, len);
	rc = getaddrinfo(ibp_rt_node_name(run, i), NULL, &hints, &ai);
	if (rc)
		return -EHOSTUNREACH;
	rc =
	    getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	return rc ? -EHOSTUNREACH : 0;
}

int ibp_rt_sockaddr_of(const char *addr, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
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
void ibp_rt_nodelay(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void ibp_rt_hello_claims(const struct ibp_oob_hello *h, struct ibp_auth_claims *c)
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

int ibp_rt_hello_make(struct ibp_rt_run *run, struct ibp_oob_msg *m, uint32_t to, uint8_t round,
		      uint16_t rail, uint64_t echo, uint16_t flags,
		      uint8_t secret[IBP_AUTH_SECRET_LEN], char *err, size_t errlen)
{
	struct ibp_oob_hello *h = &m->u.hello;
	struct ibp_auth_claims c;
	int n;

	ibp_oob_msg_clear(m, IBP_OOB_HELLO);
	memset(secret, 0, IBP_AUTH_SECRET_LEN);
	h->job = run->cfg->job;
	h->step = run->cfg->step;
	h->uid = run->cfg->uid;
	h->from = run->me;
	h->to = to;
	h->nnodes = run->n;
	h->round = round;
	h->rail = (uint8_t)rail;
	h->n_rails = (uint8_t)run->n_rails;
	h->flags = (uint16_t)(flags | (run->auth.insecure ? IBP_HELLO_INSECURE : 0));
	h->nonce = random64();
	h->echo = echo;
	ibp_rt_hello_claims(h, &c);
	/* Insecure: no credential, so no secret either (the keys are public). */
	if (!run->auth.insecure && random_bytes(secret, IBP_AUTH_SECRET_LEN)) {
		ibp_rt_setf(err, errlen, "getrandom failed: no secret for the link's keys");
		return -EIO;
	}
	memcpy(c.secret, secret, IBP_AUTH_SECRET_LEN);
	n = ibp_auth_sign(&run->auth, &c, h->cred, sizeof(h->cred), err, errlen);
	sodium_memzero(&c, sizeof(c));
	if (n < 0)
		return n;
	h->cred_len = (uint16_t)n;
	return 0;
}

static void link_fail(struct ibp_rt_link *l, enum ibp_link_status st, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void link_fail(struct ibp_rt_link *l, enum ibp_link_status st, int err, const char *fmt, ...)
{
	va_list ap;

	if (ibp_rt_failed(l->r.status))
		return; /* the first failure is the one to report */
	l->r.status = st;
	l->r.err = err;
	va_start(ap, fmt);
	ibp_vformat_cut(l->r.detail, sizeof(l->r.detail), fmt, ap);
	va_end(ap);
}

static const char *errtext(int rc)
{
	if (rc == -EKEYREJECTED)
		return "frames failed authentication";
	return rc == -ECONNRESET ? "connection closed by the peer" : strerror(-rc);
}

/* ---- the sending side --------------------------------------------------- */

/* What one candidate port gave. */
enum try_outcome {
	TRY_OK = 0,
	TRY_CLOSED,  /* refused, or no listener: nothing said */
	TRY_HUNG_UP, /* accepted the hello, then closed without a word */
	TRY_SILENT,  /* connected, no answer in its time */
	TRY_UNAUTH,  /* answered, but without valid credentials: ignored */
	TRY_NO_RAIL, /* the peer, authenticated, has no such rail: final */
	TRY_NO_RING, /* the peer, authenticated, takes no part in the step-wide sum: final */
	TRY_LOCAL,   /* this end failed (munged, getrandom): final */
	TRY_CUT,     /* the link's own deadline cut the try short: proves nothing */
	TRY_VERSION, /* answered in another protocol version (l->peer_version): ignored */
};

/*
 * Checks the peer's reply to HELLO (sent to it for link L): fields, then
 * its credential, then derives the link's keys into L.  TRY_OK, TRY_UNAUTH
 * (WHY says why, for the local record only), TRY_NO_RAIL, TRY_NO_RING or
 * TRY_LOCAL.
 */
static enum try_outcome check_reply(struct ibp_rt_run *run, struct ibp_rt_link *l,
				    const struct ibp_oob_msg *hello, const uint8_t mine[],
				    const struct ibp_oob_msg *reply, char *why, size_t whylen)
{
	const struct ibp_oob_hello *h = &reply->u.hello;
	struct ibp_auth_claims want, got;
	struct ibp_seal_link sl = {.job = run->cfg->job,
				   .step = run->cfg->step,
				   .uid = run->cfg->uid,
				   .from = run->me,
				   .to = l->peer,
				   .round = l->r.round,
				   .rail = (uint8_t)l->r.rail};
	uint16_t flags =
	    (uint16_t)(IBP_HELLO_REPLY | (run->auth.insecure ? IBP_HELLO_INSECURE : 0));
	uint8_t theirs[IBP_AUTH_SECRET_LEN];
	int rc;

	if (reply->type != IBP_OOB_HELLO) {
		ibp_rt_setf(why, whylen, "a frame of type %u", reply->type);
		return TRY_UNAUTH;
	}
	ibp_rt_hello_claims(h, &got);
	want = got;
	want.job = run->cfg->job;
	want.step = run->cfg->step;
	want.uid = run->cfg->uid;
	want.from = l->peer;
	want.to = run->me;
	want.nnodes = run->n;
	want.round = l->r.round;
	want.rail = (uint8_t)l->r.rail;
	want.echo = hello->u.hello.nonce;
	if ((got.flags & ~(IBP_HELLO_NO_RAIL | IBP_HELLO_NO_RING)) != flags ||
	    got.job != want.job || got.step != want.step || got.uid != want.uid ||
	    got.from != want.from || got.to != want.to || got.nnodes != want.nnodes ||
	    got.round != want.round || got.rail != want.rail || got.echo != want.echo) {
		ibp_rt_setf(why, whylen, "a hello that is not %s's answer for this link",
			    ibp_rt_node_name(run, l->peer));
		return TRY_UNAUTH;
	}
	rc = ibp_auth_verify(&run->auth, h->cred, &want, theirs, why, whylen);
	if (rc == -ENOTCONN)
		return TRY_LOCAL;
	if (rc)
		return TRY_UNAUTH;
	if (got.flags & IBP_HELLO_NO_RAIL) {
		sodium_memzero(theirs, sizeof(theirs));
		ibp_rt_setf(why, whylen,
			    "%s tests %u rail%s, %s %zu: no rail %u there: the nodes have "
			    "different numbers of ports to test",
			    ibp_rt_node_name(run, l->peer), got.n_rails,
			    got.n_rails == 1 ? "" : "s", ibp_rt_node_name(run, run->me),
			    run->n_rails, l->r.rail);
		return TRY_NO_RAIL;
	}
	if (got.flags & IBP_HELLO_NO_RING) { /* final too: the ring's thread says so */
		sodium_memzero(theirs, sizeof(theirs));
		ibp_rt_setf(why, whylen, "%s takes no part in the step-wide sum",
			    ibp_rt_node_name(run, l->peer));
		return TRY_NO_RING;
	}
	rc = ibp_seal_derive(&l->seal, mine, theirs, hello->u.hello.nonce, h->nonce, &sl, true);
	sodium_memzero(theirs, sizeof(theirs));
	if (rc) {
		ibp_rt_setf(why, whylen, "cannot derive the link's keys (libsodium)");
		return TRY_LOCAL;
	}
	return TRY_OK;
}

/*
 * The HELLO a connector sends, with the secret its credential carries:
 * kept from one try to the next while no try sent it (every candidate
 * refused: the peer is still starting), so that a link whose peer comes
 * up late costs one munge credential, not one per try.  Once sent it is
 * never sent again (munged refuses a credential decoded twice), and it is
 * made anew after HELLO_KEEP_S (a credential lives 300 s by default, a
 * test up to 600).
 */
#define HELLO_KEEP_S 10

struct hello_kept {
	bool ready;
	int64_t made;
	struct ibp_oob_msg m; /* only its HELLO member is ever written */
	uint8_t secret[IBP_AUTH_SECRET_LEN];
};

static void hello_forget(struct hello_kept *h)
{
	h->ready = false;
	sodium_memzero(h->secret, sizeof(h->secret));
}

/*
 * Tries one candidate port: *FD connected and mutually authenticated, with
 * L's keys, on TRY_OK.  The HELLO (and its munge credential) is built
 * before connecting, so it arrives with the connection, or kept from a try
 * that did not send it (H).
 */
static enum try_outcome try_candidate(struct ibp_rt_run *run, struct ibp_rt_link *l, uint16_t port,
				      int64_t deadline, struct hello_kept *h, int *fdp, char *why,
				      size_t whylen)
{
	struct sockaddr_storage ss, src;
	socklen_t len, srclen, sl = sizeof(int);
	struct ibp_oob_msg reply;
	enum try_outcome out;
	int fd, rc, soerr = 0;
	unsigned version = 0;
	int64_t step_deadline;

	*fdp = -1;
	if (ibp_rt_sockaddr_of(l->peer_addr, port, &ss, &len))
		return TRY_CLOSED;
	if (h->ready && ibp_now_ns() - h->made > HELLO_KEEP_S * IBP_NS_PER_S)
		hello_forget(h);
	if (!h->ready) {
		h->made = ibp_now_ns();
		rc = ibp_rt_hello_make(run, &h->m, l->peer, l->r.round, l->r.rail, 0, 0, h->secret,
				       why, whylen);
		if (rc) {
			hello_forget(h);
			return TRY_LOCAL;
		}
		h->ready = true;
		l->hellos++;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ibp_rt_setf(why, whylen, "socket: %s", strerror(errno));
		out = TRY_LOCAL;
		goto out;
	}
	/* From this node's address: the path under test, and what the peer checks. */
	if (!ibp_rt_sockaddr_of(run->my_addr, 0, &src, &srclen) && src.ss_family == ss.ss_family)
		(void)bind(fd, (struct sockaddr *)&src, srclen);
	/*
	 * A try the deadline already cut (the credential took the last of it)
	 * connects nobody: an abandoned empty connection is what the peer
	 * counts as a dropped one, next to whatever ended this link.
	 */
	out = TRY_CUT;
	if (ibp_deadline_expired(deadline, ibp_now_ns()))
		goto out;
	out = TRY_CLOSED;
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS)
		goto out;
	step_deadline = ibp_deadline_min(deadline, ibp_now_ns() + (run->end - run->start) / 4);
	rc = ibp_oob_wait_fd(fd, POLLOUT, step_deadline);
	if (rc == -ETIMEDOUT) {
		out = step_deadline < deadline ? TRY_SILENT : TRY_CUT;
		ibp_rt_setf(why, whylen, "no answer on port %u", port);
		goto out;
	}
	if (rc || (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr))
		goto out;
	ibp_rt_nodelay(fd);
	rc = ibp_oob_send(fd, &h->m, deadline);
	if (!rc)
		rc = ibp_oob_recv_version(fd, &reply, step_deadline, &version);
	if (rc == -ETIMEDOUT) {
		out = step_deadline < deadline ? TRY_SILENT : TRY_CUT;
		ibp_rt_setf(why, whylen, "no answer to the handshake on port %u", port);
		goto out;
	}
	if (rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -EPIPE) {
		ibp_rt_setf(why, whylen, "port %u closed the connection", port);
		out = TRY_HUNG_UP;
		goto out;
	}
	if (rc == -EPROTONOSUPPORT) {
		/* Another build: remembered for the finding, trusted for nothing else. */
		l->version_seen = true;
		l->peer_version = (uint16_t)version;
		ibp_rt_setf(why, whylen, "port %u answers with protocol %u", port, version);
		out = TRY_VERSION;
		goto out;
	}
	if (rc) { /* a frame that does not even decode */
		ibp_rt_setf(why, whylen, "undecodable answer (%s)", strerror(-rc));
		out = TRY_UNAUTH;
		goto out;
	}
	if (reply.type == IBP_OOB_ERROR) {
		/* Unauthenticated: its words are not repeated, it ends nothing. */
		ibp_rt_setf(why, whylen, "an error frame");
		out = TRY_UNAUTH;
		goto out;
	}
	out = check_reply(run, l, &h->m, h->secret, &reply, why, whylen);
	if (out == TRY_OK) {
		*fdp = fd;
		fd = -1;
	}
out:
	if (out != TRY_CLOSED) /* sent (or no use any more): a new one next time */
		hello_forget(h);
	if (fd >= 0)
		close(fd);
	return out;
}

/*
 * A rail one end has and the other has not: with test_pairing=any it is
 * simply not tested; with rail pairing the nodes differ, which is named.
 */
static void rail_missing(struct ibp_rt_run *run, struct ibp_rt_link *l, const char *why)
{
	if (run->pol.test_pairing_any) {
		l->r.status = IBP_LINK_UNTESTED;
		ibp_rt_setf(l->r.detail, sizeof(l->r.detail), "not tested: %s", why);
	} else {
		link_fail(l, IBP_LINK_PROTOCOL, -ENXIO, "%s", why);
	}
}

/* The first candidate port whose last try was closed unanswered, 0 none. */
static uint16_t first_hung(const struct ibp_rt_run *run, const bool *hung)
{
	for (int c = 0; c < run->n_cands; c++)
		if (hung[c])
			return run->cands[c];
	return 0;
}

/*
 * Connects to the peer's test port: candidates in order, again and again
 * (the peer may still be starting) with a growing pause, until DEADLINE.
 * Only an answer that authenticates as the peer for this link counts: a
 * port that answers anything else (an error frame, garbage, another
 * credential) is noted and skipped, never taken as the peer's word.  When
 * no candidate authenticates, the link fails as an authentication failure
 * if some port answered without valid credentials (nobody is blamed), else
 * as unreachable.
 *
 * The pauses are 2, 4, 8 ... 200 ms: nodes of a step start a few ms apart,
 * and a first pause of 10 ms, as links had until December 2026, made one
 * 2-node step in seven wait 10 ms for a peer that listened 1-3 ms later; the
 * shorter start costs 0.1-0.15 more refused tries a connection at 64-256
 * nodes on 2 cores (docs/rdmatest.md).
 */
int ibp_rt_connect(struct ibp_rt_run *run, struct ibp_rt_link *l, int64_t deadline)
{
	int pause_ms = 2;
	char why[IBP_TEXT_MAX] = "", unauth[IBP_TEXT_MAX] = "", silent[IBP_TEXT_MAX] = "";
	uint16_t unauth_port = 0, version_port = 0, hung_port = 0;
	/* candidates whose last try was accepted and closed unanswered */
	bool hung[IBP_RDMATEST_MAX_LISTEN] = {false};
	struct hello_kept h;
	bool first_refused = false;
	int fd;

	h.ready = false;

	for (unsigned round = 0;; round++) {
		int ms;

		for (int c = 0; c < run->n_cands; c++) {
			enum try_outcome t;

			/*
			 * The first candidate refused: nothing listens at the
			 * peer's address yet (while it starts); a port taken
			 * there by another program answers, or refuses only if
			 * bound without listening.  The fallbacks wait for the
			 * third round, 6 ms on.
			 */
			if (c > 0 && round < 2 && first_refused)
				break;
			why[0] = '\0';
			t = try_candidate(run, l, run->cands[c], deadline, &h, &fd, why,
					  sizeof(why));
			if (c == 0)
				first_refused = t == TRY_CLOSED;
			if (t != TRY_CUT)
				hung[c] = t == TRY_HUNG_UP;
			switch (t) {
			case TRY_OK:
				return fd;
			case TRY_LOCAL:
				link_fail(l, IBP_LINK_LOCAL,
					  strstr(why, "munge") ? -ENOTCONN : -EIO, "%s", why);
				return -1;
			case TRY_NO_RAIL:
				rail_missing(run, l, why);
				return -1;
			case TRY_NO_RING: /* the sum's connection only: rdmatest_ring.c */
				l->no_ring = true;
				l->r.status = IBP_LINK_UNTESTED;
				ibp_rt_setf(l->r.detail, sizeof(l->r.detail), "%s", why);
				return -1;
			case TRY_UNAUTH:
				unauth_port = run->cands[c];
				ibp_rt_setf(unauth, sizeof(unauth), "%s", why);
				break;
			case TRY_VERSION:
				/* Go on: the peer may listen on another candidate. */
				version_port = run->cands[c];
				break;
			case TRY_SILENT:
				ibp_rt_setf(silent, sizeof(silent), "%s", why);
				break;
			case TRY_CLOSED:
			case TRY_HUNG_UP:
			case TRY_CUT:
				break;
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
	hello_forget(&h); /* the last tries were refused: never sent */
	/*
	 * An answer of this version that failed authentication outweighs any
	 * version claim: a stranger's claim must not turn an authentication
	 * failure into a mere warning (docs/security.md).
	 */
	if (unauth_port)
		link_fail(l, IBP_LINK_AUTH, -EACCES,
			  "no candidate port of %s answered with valid credentials; port %u "
			  "answered without valid credentials (ignored: %s)%s",
			  ibp_rt_node_name(run, l->peer), unauth_port, unauth,
			  version_port ? "; an answer came in another protocol version" : "");
	else if (version_port)
		link_fail(l, IBP_LINK_VERSION, -EPROTONOSUPPORT,
			  "%s answers with protocol %u (port %u), %s speaks %u: not tested",
			  ibp_rt_node_name(run, l->peer), l->peer_version, version_port,
			  ibp_rt_node_name(run, run->me), ibp_oob_wire_version());
	else if ((hung_port = first_hung(run, hung))) {
		/*
		 * Something listens there to the end and closes every hello
		 * unanswered: not a node that is gone (that refuses, or stays
		 * silent), and nothing that authenticated.  A build before
		 * version 7 does this to another version's hello.
		 */
		l->closed_unanswered = true;
		link_fail(l, IBP_LINK_AUTH, -EACCES,
			  "port %u of %s accepted this node's hello and closed it unanswered until "
			  "the deadline (a spank-ib build before protocol version 7, or another "
			  "program on the port)",
			  hung_port, ibp_rt_node_name(run, l->peer));
	} else if (silent[0])
		link_fail(l, IBP_LINK_UNREACHABLE, -ETIMEDOUT, "%s: %s", l->peer_addr, silent);
	else
		link_fail(l, IBP_LINK_UNREACHABLE, -ECONNREFUSED,
			  "%s: connection refused on port %u%s", l->peer_addr, run->cands[0],
			  run->n_cands > 1 ? " and its fallbacks" : "");
	return -1;
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
		link_fail(l, status_of(rc), rc, "waiting for the peer: %s", errtext(rc));
		return rc;
	}
	if (m.type == IBP_OOB_CTRL && m.u.ctrl.op == IBP_CTRL_ABORT) {
		enum ibp_link_status st =
		    m.u.ctrl.a > IBP_LINK_PASS && m.u.ctrl.a < IBP_LINK_STATUS_COUNT
			? (enum ibp_link_status)m.u.ctrl.a
			: IBP_LINK_GONE;

		link_fail(l, st, m.u.ctrl.status, "the peer gave up: %s (%s)",
			  ibp_link_status_name(st), errtext(m.u.ctrl.status));
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

static void send_abort(struct ibp_rt_link *l, int fd)
{
	/* Best effort, short: the peer learns why instead of waiting out its deadline. */
	send_ctrl(l, fd, IBP_CTRL_ABORT, l->r.err < 0 && l->r.err >= -4095 ? l->r.err : -EIO,
		  (uint64_t)l->r.status, 0, ibp_now_ns() + 50 * IBP_NS_PER_MS);
}

static void fp_keep(struct ibp_rt_run *run, uint32_t peer, const struct ibp_fp *fp);

/*
 * This node's FINGERPRINT frame, built once on first use (NULL: no memory):
 * before the link workers start for a small step, else by the summary
 * exchange's thread; freed with the run.
 */
static const struct ibp_oob_msg *fp_frame(struct ibp_rt_run *run)
{
	if (!run->fp_msg) {
		run->fp_msg = malloc(sizeof(*run->fp_msg));
		if (run->fp_msg) {
			run->fp_msg->type = IBP_OOB_FINGERPRINT;
			run->fp_msg->u.fingerprint = *run->cfg->fingerprint;
		}
	}
	return run->fp_msg;
}

/*
 * A step too small for the step-wide sum (up to 5 nodes: a node's test
 * peers are the whole step): the fingerprints go on the rail-0 links
 * before the endpoints, so that they are in when the tests end and the
 * summary exchange waits for none.
 */
static bool fp_early(const struct ibp_rt_run *run, const struct ibp_rt_link *l)
{
	return run->n < IBP_RT_RING_MIN && l->r.rail == 0 && run->fps;
}

_Static_assert(IBP_RT_RING_MIN <= 32, "a bit per node of a small step");

/* L's peer's bit in FP_CLAIMED and FP_REACHED; 0 past a small step's nodes. */
static uint32_t fp_bit(const struct ibp_rt_link *l)
{
	return l->peer < 32 ? 1u << l->peer : 0;
}

/*
 * Whether L is to carry this node's early fingerprint: the first of its
 * peer's rail-0 links to get there does (then FP_CLAIMED), the others do
 * not while that one's frame is on its way or went (FP_REACHED).
 */
static bool fp_claim(struct ibp_rt_run *run, const struct ibp_rt_link *l)
{
	uint32_t bit = fp_bit(l);
	bool mine;

	pthread_mutex_lock(&run->mu);
	mine = !(run->fp_claimed & bit);
	run->fp_claimed |= bit;
	pthread_mutex_unlock(&run->mu);
	return mine;
}

/* L's early fingerprint went (SENT) or did not: another link may carry it at the summary. */
static void fp_claim_done(struct ibp_rt_run *run, const struct ibp_rt_link *l, bool sent)
{
	uint32_t bit = fp_bit(l);

	pthread_mutex_lock(&run->mu);
	if (sent)
		run->fp_reached |= bit;
	else
		run->fp_claimed &= ~bit;
	pthread_mutex_unlock(&run->mu);
}

static int endpoints(struct ibp_rt_run *run, struct ibp_rt_link *l, int fd, struct ibp_tx *tx,
		     struct ibp_endpoint *peer, int64_t deadline, bool *fp_here)
{
	struct ibp_oob_msg mine, theirs;
	const struct ibp_tx_port *port = &run->rails[l->r.rail];
	const struct ibp_oob_msg *sum = ibp_rt_ring_leaf_frame(run, l);
	int rc;

	ibp_oob_msg_clear(&mine, IBP_OOB_ENDPOINT);
	rc = run->ops->endpoint(tx, &mine.u.endpoint.ep);
	if (rc) {
		link_fail(l, IBP_LINK_LOCAL, rc, "local endpoint: %s", strerror(-rc));
		return rc;
	}
	mine.u.endpoint.ep.rate_mbps = (uint32_t)(port->rate_gbps * 1000);
	mine.u.endpoint.rail = l->r.rail;
	mine.u.endpoint.port = port->port;
	ibp_rt_setf(mine.u.endpoint.device, sizeof(mine.u.endpoint.device), "%s", port->device);
	pthread_mutex_lock(&run->mu);
	for (size_t i = 0; i < run->n_addr_leaves; i++)
		if (run->addr_leaves[i].node == run->me)
			memcpy(mine.u.endpoint.leaf, run->addr_leaves[i].name, IBP_OOB_LEAF_MAX);
	pthread_mutex_unlock(&run->mu);
	/* a leaf of the step-wide sum's tree: its sum goes up first (rdmatest_ring.c) */
	rc = sum ? ibp_seal_send(fd, &l->seal, sum, deadline) : 0;
	if (!rc && sum)
		l->sum_up = true;
	/* a small step: this node's fingerprint, once per peer */
	if (!rc && fp_early(run, l) && run->fp_msg && fp_claim(run, l)) {
		*fp_here = true;
		rc = ibp_seal_send(fd, &l->seal, run->fp_msg, deadline);
	}
	if (!rc)
		rc = ibp_seal_send(fd, &l->seal, &mine, deadline);
	if (!rc)
		rc = ibp_seal_recv(fd, &l->seal, &theirs, deadline);
	if (!rc && theirs.type == IBP_OOB_FPSUM) { /* a leaf child's, before its endpoint */
		ibp_rt_ring_link_frame(run, l, &theirs.u.fpsum);
		rc = ibp_seal_recv(fd, &l->seal, &theirs, deadline);
	}
	if (!rc && theirs.type == IBP_OOB_FINGERPRINT) { /* a small step: the peer's */
		if (fp_early(run, l)) {
			pthread_mutex_lock(&run->mu);
			fp_keep(run, l->peer, &theirs.u.fingerprint);
			pthread_mutex_unlock(&run->mu);
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
		pthread_mutex_lock(&run->mu);
		l->slot = IBP_RT_SLOT_LIVE;
		pthread_mutex_unlock(&run->mu);
	}
	if (rc) {
		link_fail(l, status_of(rc), rc, "endpoint exchange: %s", errtext(rc));
		return rc;
	}
	if (theirs.type == IBP_OOB_CTRL && theirs.u.ctrl.op == IBP_CTRL_ABORT) {
		link_fail(l, abort_status(&theirs.u.ctrl), theirs.u.ctrl.status,
			  "the peer gave up: %s (%s)",
			  ibp_link_status_name(abort_status(&theirs.u.ctrl)),
			  errtext(theirs.u.ctrl.status));
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
	ibp_rt_ring_link_over(run, l, true); /* a sum came first, or none will */
	ibp_rt_setf(l->r.peer_device, sizeof(l->r.peer_device), "%s", theirs.u.endpoint.device);
	if (theirs.u.endpoint.leaf[0] && !run->cfg->topology) {
		pthread_mutex_lock(&run->mu);
		ibp_rt_addr_leaf_add(run, l->peer, theirs.u.endpoint.leaf);
		pthread_mutex_unlock(&run->mu);
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
static int exchange_endpoints(struct ibp_rt_run *run, struct ibp_rt_link *l, int fd,
			      struct ibp_tx *tx, struct ibp_endpoint *peer, int64_t deadline)
{
	bool fp_here = false;
	int rc = endpoints(run, l, fd, tx, peer, deadline, &fp_here);

	if (fp_here)
		fp_claim_done(run, l, rc == 0);
	return rc;
}

static int tx_open(struct ibp_rt_run *run, struct ibp_rt_link *l, struct ibp_tx **tx, char *err,
		   size_t errlen)
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
	link_fail(l, abort_status(&m.u.ctrl), m.u.ctrl.status, "the peer gave up: %s (%s)",
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
static int link_connect(struct ibp_rt_run *run, struct ibp_rt_link *l, int fd,
			enum ibp_tx_role role, struct ibp_tx **tx, char *err, size_t errlen,
			int64_t deadline)
{
	struct ibp_endpoint peer;
	int rc;

	if (tx_open(run, l, tx, err, errlen))
		return -1;
	rc = exchange_endpoints(run, l, fd, *tx, &peer, deadline);
	if (rc)
		return rc == -EAGAIN ? -EAGAIN : -1;
	rc = run->ops->connect(*tx, &peer, role, deadline);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			link_fail(l, rc == -ETIMEDOUT ? IBP_LINK_TIMEOUT : IBP_LINK_TRANSPORT, rc,
				  "data path: %s", err[0] ? err : strerror(-rc));
		return -1;
	}
	return 0;
}

static void link_sender(struct ibp_rt_run *run, struct ibp_rt_link *l, int fd, int64_t deadline)
{
	char err[IBP_TEXT_MAX] = "";
	struct ibp_oob_ctrl c;
	struct ibp_tx *tx = NULL;
	uint64_t seed = random64(), ns = 0;
	double floor_gbps = 0;
	int rc;

	if (link_connect(run, l, fd, IBP_TX_SENDER, &tx, err, sizeof(err), deadline))
		goto abort;
	rc = send_ctrl(l, fd, IBP_CTRL_READY, 0, run->burst, IBP_RDMATEST_LAT_ITERS, deadline);
	if (!rc)
		rc = send_ctrl(l, fd, IBP_CTRL_PATTERN_SENT, 0, seed, run->buf_len, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	rc = run->ops->send_pattern(tx, seed, run->buf_len, deadline);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			link_fail(l, status_of(rc), rc, "pattern: %s",
				  err[0] ? err : strerror(-rc));
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
		if (!peer_gave_up(l, fd, deadline))
			link_fail(l, status_of(rc), rc, "bandwidth burst: %s",
				  err[0] ? err : strerror(-rc));
		goto abort;
	}
	l->r.gbps = ns ? (double)run->burst * 8.0 / (double)ns : 0;
	rc = send_ctrl(l, fd, IBP_CTRL_BW_RESULT, 0, run->burst, ns, deadline);
	if (rc) {
		/* Without an outcome the link would stay untested: no record, no blame. */
		link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	rc = run->ops->lat_ping(tx, IBP_RDMATEST_LAT_ITERS, deadline, &ns);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			link_fail(l, status_of(rc), rc, "latency: %s",
				  err[0] ? err : strerror(-rc));
		goto abort;
	}
	l->r.lat_us = (double)ns / 1000.0;
	rc = send_ctrl(l, fd, IBP_CTRL_LAT_RESULT, 0, IBP_RDMATEST_LAT_ITERS, ns, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
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
	send_ctrl(l, fd, IBP_CTRL_VERDICT, 0, (uint64_t)l->r.status, 0, deadline);
	goto done;
abort:
	send_abort(l, fd);
done:
	if (tx)
		run->ops->close(tx);
}

/* ---- the receiving side ------------------------------------------------- */

/* The listener's end of one link; false, or true when the slot is to be re-armed. */
static bool link_receiver(struct ibp_rt_run *run, struct ibp_rt_link *l, int fd, int64_t deadline)
{
	char err[IBP_TEXT_MAX] = "";
	struct ibp_oob_ctrl ready, pat, c;
	struct ibp_tx *tx = NULL;
	size_t bad = 0;
	int rc;

	rc = link_connect(run, l, fd, IBP_TX_RECEIVER, &tx, err, sizeof(err), deadline);
	if (rc == -EAGAIN) {
		if (tx)
			run->ops->close(tx);
		return true;
	}
	if (rc)
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
		send_ctrl(l, fd, IBP_CTRL_PATTERN_RESULT, -EBADMSG, bad, 0, deadline);
		goto done;
	}
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			link_fail(l, status_of(rc), rc, "pattern: %s",
				  err[0] ? err : strerror(-rc));
		goto abort;
	}
	rc = send_ctrl(l, fd, IBP_CTRL_PATTERN_RESULT, 0, 0, 0, deadline);
	if (rc) {
		link_fail(l, status_of(rc), rc, "control: %s", errtext(rc));
		goto done;
	}
	rc = run->ops->bw_recv(tx, ready.a, deadline);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			link_fail(l, status_of(rc), rc, "bandwidth burst: %s",
				  err[0] ? err : strerror(-rc));
		goto abort;
	}
	if (recv_ctrl(l, fd, IBP_CTRL_BW_RESULT, &c, deadline))
		goto done;
	l->r.gbps = c.b ? (double)c.a * 8.0 / (double)c.b : 0;
	rc = run->ops->lat_pong(tx, (unsigned)ready.b, deadline);
	if (rc) {
		if (!peer_gave_up(l, fd, deadline))
			link_fail(l, status_of(rc), rc, "latency: %s",
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
	return false;
}

/* ---- workers ------------------------------------------------------------ */

struct worker {
	struct ibp_rt_run *run;
	size_t rail;
	pthread_t th;
	bool out;
	bool started;
};

static int64_t round_deadline(const struct ibp_rt_run *run, unsigned round)
{
	return run->round_end[round - 1];
}

static void *out_worker(void *arg)
{
	struct worker *w = arg;
	struct ibp_rt_run *run = w->run;

	for (unsigned r = 1; r <= ibp_rt_n_rounds(run); r++) {
		struct ibp_rt_link *l = ibp_rt_link_at(run, w->rail, r, true);
		int64_t deadline = round_deadline(run, r);
		int fd = ibp_rt_connect(run, l, deadline);

		if (fd >= 0) {
			pthread_mutex_lock(&run->mu);
			l->fd = fd;
			pthread_mutex_unlock(&run->mu);
			link_sender(run, l, fd, deadline);
		}
		ibp_rt_ring_link_over(run, l, false); /* no leaf child's sum after this */
	}
	return NULL;
}

static int wait_slot(struct ibp_rt_run *run, struct ibp_rt_link *l, int64_t deadline, char *reject,
		     size_t rlen)
{
	struct timespec ts = {.tv_sec = deadline / IBP_NS_PER_S,
			      .tv_nsec = deadline % IBP_NS_PER_S};
	int fd = -1;
	bool skipped;

	pthread_mutex_lock(&run->mu);
	while (l->slot == IBP_RT_SLOT_EMPTY) {
		if (pthread_cond_timedwait(&run->cv, &run->mu, &ts) == ETIMEDOUT)
			break;
	}
	if (l->slot == IBP_RT_SLOT_FILLED)
		fd = l->fd;
	else
		l->slot = IBP_RT_SLOT_CLOSED; /* a late claimant is refused */
	ibp_rt_setf(reject, rlen, "%s", l->skip[0] ? l->skip : l->reject);
	skipped = l->skip[0] != '\0';
	pthread_mutex_unlock(&run->mu);
	if (skipped)
		fd = -ENXIO;
	return fd;
}

/* One round of an in-link: the connections the acceptor hands over, and the test on them. */
static void in_round(struct ibp_rt_run *run, struct ibp_rt_link *l, int64_t deadline)
{
	char reject[IBP_TEXT_MAX];
	int fd = wait_slot(run, l, deadline, reject, sizeof(reject));
	bool version_seen;
	unsigned version;

	while (fd >= 0 && link_receiver(run, l, fd, deadline)) {
		pthread_mutex_lock(&run->mu);
		close(l->fd);
		l->fd = -1;
		ibp_seal_clear(&l->seal);
		l->rearms++;
		l->slot = IBP_RT_SLOT_EMPTY;
		pthread_mutex_unlock(&run->mu);
		fd = wait_slot(run, l, deadline, reject, sizeof(reject));
	}
	pthread_mutex_lock(&run->mu);
	if (l->slot == IBP_RT_SLOT_FILLED)
		l->slot = IBP_RT_SLOT_LIVE; /* the link ended: the acceptor need not stay */
	version_seen = l->version_seen;
	version = l->peer_version;
	pthread_mutex_unlock(&run->mu);
	if (fd == -ENXIO) {
		rail_missing(run, l, reject);
		return;
	}
	if (fd >= 0)
		return;
	/* Only a hello from the peer's own address leaves a reject. */
	if (reject[0])
		link_fail(l, IBP_LINK_AUTH, -EACCES,
			  "no connection from %s authenticated by the deadline; %s",
			  ibp_rt_node_name(run, l->peer), reject);
	else if (version_seen && !l->rearms)
		/*
		 * As on the sending side, a reject of this version outweighs
		 * it, and so does a connection of this version that
		 * authenticated (then closed): the claim was not the peer's.
		 */
		link_fail(
		    l, IBP_LINK_VERSION, -EPROTONOSUPPORT,
		    "%s answers with protocol %u (its hello from %s), %s speaks %u: not tested",
		    ibp_rt_node_name(run, l->peer), version, l->peer_addr,
		    ibp_rt_node_name(run, run->me), ibp_oob_wire_version());
	else
		link_fail(l, IBP_LINK_UNREACHABLE, -ETIMEDOUT,
			  "no connection from %s by the deadline%s", ibp_rt_node_name(run, l->peer),
			  l->rearms ? " (it had closed an authenticated one before its first frame)"
				    : "");
}

static void *in_worker(void *arg)
{
	struct worker *w = arg;
	struct ibp_rt_run *run = w->run;

	for (unsigned r = 1; r <= ibp_rt_n_rounds(run); r++) {
		struct ibp_rt_link *l = ibp_rt_link_at(run, w->rail, r, false);

		in_round(run, l, round_deadline(run, r));
		ibp_rt_ring_link_over(run, l, false); /* no leaf child's sum after this */
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
static void version_out_links(struct ibp_rt_run *run)
{
	for (size_t i = 0; i < run->n_links; i++) {
		struct ibp_rt_link *l = &run->links[i];

		if (!l->out || (l->r.status != IBP_LINK_UNREACHABLE &&
				(l->r.status != IBP_LINK_AUTH || !l->closed_unanswered)))
			continue;
		for (size_t k = 0; k < run->n_links; k++) {
			const struct ibp_rt_link *x = &run->links[k];

			/* the in-link itself ended so: the peer never authenticated on it */
			if (x->out || x->peer != l->peer || x->r.status != IBP_LINK_VERSION)
				continue;
			l->r.status = IBP_LINK_VERSION;
			l->r.err = -EPROTONOSUPPORT;
			l->version_seen = true;
			l->peer_version = x->peer_version;
			ibp_rt_setf(
			    l->r.detail, sizeof(l->r.detail),
			    "%s answers with protocol %u (its hello from %s), %s speaks %u: "
			    "no answer to this node's hello there; not tested",
			    ibp_rt_node_name(run, l->peer), x->peer_version, x->peer_addr,
			    ibp_rt_node_name(run, run->me), ibp_oob_wire_version());
			break;
		}
	}
}

/* ---- summaries ---------------------------------------------------------- */

static void known_add(struct ibp_rt_run *run, const struct ibp_oob_link *x)
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

static void own_links(struct ibp_rt_run *run, struct ibp_oob_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->node = run->me;
	s->nnodes = run->n;
	s->plan = run->plan.digest;
	for (size_t i = 0; i < run->n_links && s->n_links < IBP_OOB_MAX_LINKS; i++) {
		const struct ibp_rt_link *l = &run->links[i];
		struct ibp_oob_link *x = &s->links[s->n_links++];

		x->from = l->r.from;
		x->to = l->r.to;
		x->round = l->r.round;
		x->rail = l->r.rail;
		x->status = (uint8_t)l->r.status;
		known_add(run, x);
	}
	/* This node's leaf and its peers' (SLURM_TOPOLOGY_ADDR), this node first. */
	for (size_t i = 0; i < run->n_addr_leaves && s->n_leaves < IBP_OOB_MAX_LEAVES; i++)
		s->leaves[s->n_leaves++] = run->addr_leaves[i];
}

/*
 * Each node sends its link outcomes to every peer it still has a
 * connection with, sealed under that link's keys, and (unless all its own
 * links passed) reads theirs for the blame.
 *
 * Seam: the summary is the one message every peer gets from every other
 * at the end; a per-node fingerprint (software, firmware, settings) to
 * compare across the step belongs in struct ibp_oob_summary (oob.h, a new
 * protocol version) and is read here, where m.u.summary is authenticated.
 */
/* Keeps the fingerprint of PEER (the first one that arrives). */
static void fp_keep(struct ibp_rt_run *run, uint32_t peer, const struct ibp_fp *fp)
{
	for (size_t i = 0; i < run->n_fps; i++)
		if (run->fps[i].node == peer)
			return;
	if (run->n_fps < IBP_RT_MAX_PEERS) {
		run->fps[run->n_fps].node = peer;
		run->fps[run->n_fps].fp = *fp;
		run->n_fps++;
	}
}

static bool fp_have(const struct ibp_rt_run *run, uint32_t peer)
{
	for (size_t i = 0; i < run->n_fps; i++)
		if (run->fps[i].node == peer)
			return true;
	return false;
}

/*
 * A frame from L's peer (authenticated: it came sealed): its fingerprint or
 * its summary.  A peer may still send link messages it had queued: they
 * are skipped.
 */
static void take_frame(struct ibp_rt_run *run, struct ibp_rt_link *l, const struct ibp_oob_msg *m,
		       bool want_fp)
{
	const struct ibp_oob_summary *s = &m->u.summary;

	if (m->type == IBP_OOB_FINGERPRINT && want_fp)
		fp_keep(run, l->peer, &m->u.fingerprint);
	if (m->type != IBP_OOB_SUMMARY || l->summary_in)
		return;
	l->summary_in = true;
	if (s->node != l->peer || s->nnodes != run->n)
		return;
	run->n_summaries++;
	if (s->plan != run->plan.digest && !run->plan_mismatch) {
		run->plan_mismatch = true;
		run->mismatch_node = l->peer;
		run->mismatch_digest = s->plan;
	}
	for (size_t k = 0; k < s->n_links; k++)
		known_add(run, &s->links[k]);
	for (size_t k = 0; k < s->n_leaves && !run->cfg->topology; k++)
		ibp_rt_addr_leaf_add(run, s->leaves[k].node, s->leaves[k].name);
}

/* This node's fingerprint on every rail-0 link still up, for the neighbours' comparison. */
static void send_fingerprint(struct ibp_rt_run *run)
{
	const struct ibp_oob_msg *fpm = fp_frame(run);

	if (!fpm)
		return;
	for (size_t i = 0; i < run->n_links; i++) {
		struct ibp_rt_link *l = &run->links[i];

		/* not to a peer it reached already, before one of their endpoints */
		if (l->fd >= 0 && l->r.rail == 0 && !(run->fp_reached & fp_bit(l)) &&
		    ibp_seal_send(l->fd, &l->seal, fpm,
				  ibp_deadline_min(run->end, ibp_now_ns() + 200 * IBP_NS_PER_MS))) {
			close(l->fd);
			l->fd = -1;
		}
	}
}

/* A leaf waiting for its parent's answer on the ring round's link. */
static bool leaf_waits(const struct ibp_rt_run *run)
{
	return run->ring_link && run->ring == IBP_RT_RING_FINAL;
}

/*
 * The leaf's parent answered (F), or its link closed (NULL): where the
 * chain stopped, it now says its fingerprint to its neighbours.
 */
static void leaf_heard(struct ibp_rt_run *run, const struct ibp_oob_fpsum *f, bool want_fp)
{
	ibp_rt_ring_leaf_hears(run, f);
	if (want_fp && run->ring == IBP_RT_RING_BROKEN)
		send_fingerprint(run);
}

/*
 * Whether to read L now: a failed link's peer's summary (for the blame),
 * a leaf's answer from its parent, or (FPS: the step-wide sum is not here)
 * a rail-0 neighbour's fingerprint, which a leaf may send after its
 * summary, when it learns the chain stopped.
 */
static bool summary_wants(const struct ibp_rt_run *run, const struct ibp_rt_link *l, bool all_pass,
			  bool fps)
{
	if (l->fd < 0)
		return false;
	if (l == run->ring_link && leaf_waits(run))
		return true;
	if (!l->summary_in && !all_pass)
		return true;
	return fps && l->r.rail == 0 && !fp_have(run, l->peer) && (!l->summary_in || l->peer_leaf);
}

/*
 * Each node sends its link outcomes to every peer it still has a
 * connection with, sealed under that link's keys, and (unless all its own
 * links passed) reads theirs for the blame.  With a fingerprint, it goes
 * first on every rail-0 link, and the node reads its peers' rail-0 links
 * until their fingerprints arrive, for the fallback, unless the step-wide
 * sum came whole (rdmatest_ring.c): the exchange waits for the ring's
 * thread to end, by the deadline at the latest, and a leaf of the sum's
 * tree for its parent's answer on their link, which the parent sends as
 * soon as its ring and that link's round are over (here, when neither of
 * its other threads could).  A node whose sum is already whole sends no
 * fingerprint: every node that got the complete sum needs none, and one
 * whose sum stopped (every node's, but for a connection lost after its
 * half went up) stops waiting for it at the summary, comparing with the
 * neighbours that did send one.  A leaf still waiting sends its
 * fingerprint once it hears that the chain stopped.
 */
static void exchange_summaries(struct ibp_rt_run *run)
{
	struct ibp_oob_msg mine;
	bool all_pass = true, want_fp = run->cfg->fingerprint && run->fps;
	int64_t deadline = run->end;

	ibp_oob_msg_clear(&mine, IBP_OOB_SUMMARY);
	ibp_rt_ring_links_mine(run); /* the leaf children's links are this thread's now */
	/* a leaf whose sum did not go up, or whose link with its parent is gone */
	if (leaf_waits(run) && (!run->ring_link->sum_up || run->ring_link->fd < 0))
		ibp_rt_ring_leaf_hears(run, NULL);
	if (want_fp && !ibp_rt_ring_whole(run) && !leaf_waits(run))
		send_fingerprint(run);
	own_links(run, &mine.u.summary);
	for (size_t i = 0; i < run->n_links; i++) {
		struct ibp_rt_link *l = &run->links[i];
		int64_t d = ibp_deadline_min(deadline, ibp_now_ns() + 200 * IBP_NS_PER_MS);

		if (l->r.status != IBP_LINK_PASS)
			all_pass = false;
		if (l->fd >= 0 && ibp_seal_send(l->fd, &l->seal, &mine, d)) {
			close(l->fd);
			l->fd = -1;
		}
	}
	ibp_rt_ring_answer(run); /* the leaf children, when the ring is over already */
	for (;;) {
		struct pollfd pfd[IBP_RDMATEST_MAX_LINKS + 1];
		struct ibp_rt_link *who[IBP_RDMATEST_MAX_LINKS + 1];
		size_t np = 0;
		int ms = ibp_deadline_poll_ms(deadline, ibp_now_ns()), n;
		int ring_fd = ibp_rt_ring_done_fd(run);
		bool fps;

		/* a leaf's link with its parent closed (a frame could not go): no answer comes */
		if (leaf_waits(run) && run->ring_link->fd < 0)
			leaf_heard(run, NULL, want_fp);
		/*
		 * The neighbours' fingerprints are for when the step-wide sum
		 * does not come: read once that is known (no ring, or it
		 * stopped), not while it may still come (they wait in the
		 * sockets meanwhile)
		 */
		fps = want_fp && ring_fd < 0 && run->ring != IBP_RT_RING_DONE && !leaf_waits(run);

		for (size_t i = 0; i < run->n_links; i++) {
			if (!summary_wants(run, &run->links[i], all_pass, fps))
				continue;
			pfd[np] = (struct pollfd){.fd = run->links[i].fd, .events = POLLIN};
			who[np++] = &run->links[i];
		}
		if (ring_fd >= 0) {
			pfd[np] = (struct pollfd){.fd = ring_fd, .events = POLLIN};
			who[np++] = NULL;
		}
		if (np == 0 || ms == 0)
			break;
		n = poll(pfd, np, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (size_t i = 0; i < np; i++) {
			struct ibp_oob_msg *m = NULL;
			struct ibp_rt_link *l = who[i];

			if (!pfd[i].revents)
				continue;
			if (!l) { /* the ring's thread is done: RING is final */
				ibp_rt_ring_join(run, false);
				ibp_rt_ring_answer(run);
				continue;
			}
			m = malloc(sizeof(*m));
			if (!m ||
			    ibp_seal_recv(
				l->fd, &l->seal, m,
				ibp_deadline_min(deadline, ibp_now_ns() + 100 * IBP_NS_PER_MS))) {
				free(m);
				close(l->fd);
				l->fd = -1;
				continue;
			}
			if (m->type == IBP_OOB_FPSUM && l == run->ring_link)
				leaf_heard(run, &m->u.fpsum, want_fp);
			else
				take_frame(run, l, m, want_fp);
			free(m);
		}
	}
	ibp_rt_ring_join(run, true); /* the deadline */
}

/* This node and the peers whose fingerprints came, in node order: the differences to say. */
static int compare_fingerprints(struct ibp_rt_run *run, struct ibp_findings *out)
{
	const struct ibp_fp *fps[IBP_RT_MAX_PEERS + 1];
	const char *names[IBP_RT_MAX_PEERS + 1];
	uint32_t idx[IBP_RT_MAX_PEERS + 1];
	size_t n = 0, first = out->n;
	long self = 0;
	char why[IBP_TEXT_MAX];
	int rc;

	if (!run->cfg->fingerprint || !run->fps)
		return 0;
	if (run->ring == IBP_RT_RING_DONE)
		return ibp_rt_ring_judge(run, out);
	if (!run->n_fps)
		return 0;
	idx[n] = run->me;
	fps[n++] = run->cfg->fingerprint;
	for (size_t i = 0; i < run->n_fps; i++) {
		idx[n] = run->fps[i].node;
		fps[n++] = &run->fps[i].fp;
	}
	/* node order, so that every node of a window agrees on who says a tie */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && idx[k] < idx[k - 1]; k--) {
			uint32_t t = idx[k];
			const struct ibp_fp *f = fps[k];

			idx[k] = idx[k - 1];
			fps[k] = fps[k - 1];
			idx[k - 1] = t;
			fps[k - 1] = f;
		}
	for (size_t i = 0; i < n; i++) {
		names[i] = ibp_rt_node_name(run, idx[i]);
		if (idx[i] == run->me)
			self = (long)i;
	}
	/*
	 * The whole step (a step too small for the sum, every fingerprint
	 * here): every node sees the same, the first node of a difference
	 * says it.  A window of neighbours: each node says its own part.
	 */
	rc = n == run->n ? ibp_fp_compare(fps, names, n, &run->pol, self, out)
			 : ibp_fp_compare_window(fps, names, n, &run->pol, self, out);
	if (run->ring != IBP_RT_RING_BROKEN)
		return rc;
	/* the fallback says what it is: counts of a window, not of the step */
	ibp_rt_ring_why(run, why, sizeof(why));
	for (size_t i = first; i < out->n; i++) {
		char obs[IBP_TEXT_MAX];

		ibp_rt_setf(obs, sizeof(obs), "%s", out->v[i].observed);
		ibp_rt_setf(out->v[i].observed, sizeof(out->v[i].observed),
			    "%s (ring neighbours only: %s)", obs, why);
	}
	/* a warning from the node where the chain stopped (once), information elsewhere */
	if (!rc)
		rc = ibp_findings_addf(
		    out, "consistency_partial", run->ring_at == run->me ? IBP_SEV_WARN : IBP_SEV_OK,
		    IBP_CLASS_JOB, NULL, 0, "the whole step compared",
		    "look at the cross-node test's link findings",
		    "fingerprints compared with %zu ring neighbours only: %s", n - 1, why);
	return rc;
}

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

/* ---- setup and the run -------------------------------------------------- */

static int setup_nodes(struct ibp_rt_run *run, struct ibp_findings *out)
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
	/* The same inputs on every node, the same plan (rdmatest_plan.c). */
	run->leaf = ibp_rt_topo_leaves(run);
	rc = ibp_rdmatest_plan_topo(run->n, run->me, run->leaf, &run->plan);
	if (rc == -ENOMEM)
		rc = ibp_rdmatest_plan(run->n, run->me, &run->plan);
	return rc;
}

static int setup_rails(struct ibp_rt_run *run, struct ibp_findings *out)
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
		ibp_rt_setf(run->rails[0].addr, sizeof(run->rails[0].addr), "%s", run->my_addr);
		run->n_rails = 1;
		return 0;
	}
	if (want > IBP_RDMATEST_MAX_RAILS)
		want = IBP_RDMATEST_MAX_RAILS;
	for (size_t k = 0; k < want; k++) {
		run->rails[k] = cfg->ports[k];
		run->rails[k].rail = (unsigned)k;
		if (!run->rails[k].addr[0])
			ibp_rt_setf(run->rails[k].addr, sizeof(run->rails[k].addr), "%s",
				    run->my_addr);
	}
	run->n_rails = want;
	return 0;
}

static int setup_links(struct ibp_rt_run *run, struct ibp_findings *out)
{
	uint32_t peers[4];
	char addrs[4][64];
	size_t np = 0;

	run->n_links = run->n_rails * ibp_rt_n_rounds(run) * 2;
	for (size_t k = 0; k < run->n_rails; k++) {
		for (unsigned r = 1; r <= ibp_rt_n_rounds(run); r++) {
			for (int o = 1; o >= 0; o--) {
				struct ibp_rt_link *l = ibp_rt_link_at(run, k, r, o);
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
				ibp_rt_setf(l->r.device, sizeof(l->r.device), "%s",
					    run->rails[k].device);
				l->r.port = run->rails[k].port;
				for (j = 0; j < np && peers[j] != l->peer; j++)
					;
				if (j == np) {
					int rc = ibp_rt_resolve(run, l->peer, addrs[np],
								sizeof(addrs[np]));

					if (rc) {
						ibp_rt_setf(addrs[np], sizeof(addrs[np]), "%s", "");
					}
					peers[np++] = l->peer;
				}
				if (!addrs[j][0]) {
					link_fail(l, IBP_LINK_UNREACHABLE, -EHOSTUNREACH,
						  "cannot resolve the address of %s",
						  ibp_rt_node_name(run, l->peer));
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
	/* The probe carries no secret: it is never sent. */
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

static void fill_result(struct ibp_rt_run *run, struct ibp_rdmatest_result *res)
{
	res->nnodes = run->n;
	res->index = run->me;
	res->n_links = run->n_links;
	res->hellos = 0;
	for (size_t i = 0; i < run->n_links; i++) {
		res->links[i] = run->links[i].r;
		res->hellos += run->links[i].hellos;
	}
	res->n_summaries = run->n_summaries;
	for (int i = 0; i < IBP_RT_RING_CONNS; i++)
		res->hellos += run->ring_conn[i].hellos;
	res->dropped = run->dropped;
	res->dropped_outside = run->dropped_away;
	res->dropped_peer = run->dropped_peer;
	ibp_rt_setf(res->drop_reason, sizeof(res->drop_reason), "%s", run->drop_reason);
	res->elapsed_s = (double)(ibp_now_ns() - run->start) / 1e9;
}

int ibp_rdmatest_run(const struct ibp_rdmatest_config *cfg, struct ibp_findings *out,
		     struct ibp_rdmatest_result *res)
{
	struct ibp_rdmatest_result scratch;
	struct worker workers[2 * IBP_RDMATEST_MAX_RAILS];
	pthread_condattr_t ca;
	struct ibp_rt_run *run;
	size_t nw = 0;
	int rc;

	if (!res)
		res = &scratch;
	memset(res, 0, sizeof(*res));
	run = calloc(1, sizeof(*run));
	if (!run)
		return -ENOMEM;
	run->cfg = cfg;
	run->ring_wake = run->ring_done = -1;
	for (size_t i = 0; i < IBP_RT_RING_CONNS; i++)
		run->ring_conn[i].fd = -1;
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
	rc = ibp_rt_resolve(run, run->me, run->my_addr, sizeof(run->my_addr));
	if (rc) {
		ibp_findings_addf(out, "rdmatest_no_address", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0,
				  "the node's name resolves to its address",
				  "add the node to /etc/hosts or DNS",
				  "cannot resolve this node's own name '%s': %s",
				  ibp_rt_node_name(run, run->me), strerror(-rc));
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
		ibp_rt_addr_leaf_add(run, run->me, cfg->own_leaf);
	setup_links(run, out);
	/* not cleared: 36 KB, written only when (and if) the neighbours' fingerprints come */
	if (cfg->fingerprint)
		run->fps = malloc(IBP_RT_MAX_PEERS * sizeof(*run->fps));
	if (run->fps && run->n < IBP_RT_RING_MIN)
		fp_frame(run);    /* the link workers send it before their endpoints */
	ibp_rt_ring_prepare(run); /* before the in-peers: the sum's children are among them */
	rc = ibp_rt_peers_init(run);
	if (rc)
		goto out_free;
	rc = ibp_rt_listen(run);
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
	ibp_rt_ring_spawn(run);
	for (size_t k = 0; k < run->n_rails; k++) {
		for (int o = 0; o < 2; o++) {
			struct worker *w = &workers[nw];

			*w = (struct worker){.run = run, .rail = k, .out = o};
			w->started = !pthread_create(&w->th, NULL, o ? out_worker : in_worker, w);
			if (!w->started)
				for (unsigned r = 1; r <= ibp_rt_n_rounds(run); r++)
					link_fail(ibp_rt_link_at(run, k, r, o), IBP_LINK_LOCAL,
						  -EAGAIN, "cannot start a test thread");
			nw++;
		}
	}
	ibp_rt_acceptor(run);
	ibp_rt_ring_accept_over(run);
	for (size_t i = 0; i < nw; i++)
		if (workers[i].started)
			pthread_join(workers[i].th, NULL);
	res->links_s = (double)(ibp_now_ns() - run->start) / 1e9;
	version_out_links(run);
	exchange_summaries(run);
	ibp_rt_report(run, out, res);
	compare_fingerprints(run, out); /* -ENOMEM: no comparison, nothing else lost */
	res->n_fingerprints = run->n_fps;
	res->step_wide = run->ring == IBP_RT_RING_DONE;
	for (size_t i = 0; i < run->n_links; i++) {
		if (run->links[i].fd >= 0)
			drain_close(run->links[i].fd);
		ibp_seal_clear(&run->links[i].seal);
	}
	pthread_cond_destroy(&run->cv);
	pthread_mutex_destroy(&run->mu);
	rc = 0;
out_free:
	free(run->fps); /* also when the run stopped before its links (it leaked then) */
	free(run->fp_msg);
	run->fps = NULL;
	run->fp_msg = NULL;
	ibp_rt_ring_free(run);
	fill_result(run, res);
	ibp_rt_close_listeners(run);
	ibp_hostlist_release(&run->own_nodes);
	free(run->leaf);
	free(run);
	return rc;
}
