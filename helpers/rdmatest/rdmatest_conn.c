/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_conn.c: what every file of a run of the cross-node test uses
 * (rdmatest_conn.h): names and addresses, the HELLO, and the sending side
 * of the handshake, which a link's worker and the step-wide sum's thread
 * both open their connections with.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "ibprep/text.h"
#include "rdmatest_conn.h"

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

uint64_t ibp_rt_random64(void)
{
	uint64_t v = 0;

	if (random_bytes(&v, sizeof(v)))
		v = (uint64_t)ibp_now_ns() * 0x9e3779b97f4a7c15ull; /* a nonce, not a key */
	return v ? v : 1;
}

const char *ibp_rt_node_name(const struct ibp_rt_ctx *x, uint32_t i)
{
	return x->nodes->names[i];
}

int ibp_rt_resolve(const struct ibp_rt_ctx *x, uint32_t i, char *addr, size_t len)
{
	const struct ibp_rdmatest_config *cfg = x->cfg;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int rc;

	if (cfg->addrs) {
		if (!cfg->addrs[i] || !*cfg->addrs[i])
			return -ENOENT;
		ibp_rt_setf(addr, len, "%s", cfg->addrs[i]);
		return 0;
	}
	if (cfg->resolve)
		return cfg->resolve(cfg->resolve_arg, i, ibp_rt_node_name(x, i), addr, len);
	rc = getaddrinfo(ibp_rt_node_name(x, i), NULL, &hints, &ai);
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

int ibp_rt_hello_make(const struct ibp_rt_ctx *x, struct ibp_oob_msg *m, uint32_t to, uint8_t round,
		      uint16_t rail, uint64_t echo, uint16_t flags,
		      uint8_t secret[IBP_AUTH_SECRET_LEN], char *err, size_t errlen)
{
	struct ibp_oob_hello *h = &m->u.hello;
	struct ibp_auth_claims c;
	int n;

	ibp_oob_msg_clear(m, IBP_OOB_HELLO);
	memset(secret, 0, IBP_AUTH_SECRET_LEN);
	h->job = x->cfg->job;
	h->step = x->cfg->step;
	h->uid = x->cfg->uid;
	h->from = x->me;
	h->to = to;
	h->nnodes = x->n;
	h->round = round;
	h->rail = (uint8_t)rail;
	h->n_rails = (uint8_t)x->n_rails;
	h->flags = (uint16_t)(flags | (x->auth.insecure ? IBP_HELLO_INSECURE : 0));
	h->nonce = ibp_rt_random64();
	h->echo = echo;
	ibp_rt_hello_claims(h, &c);
	/* Insecure: no credential, so no secret either (the keys are public). */
	if (!x->auth.insecure && random_bytes(secret, IBP_AUTH_SECRET_LEN)) {
		ibp_rt_setf(err, errlen, "getrandom failed: no secret for the link's keys");
		return -EIO;
	}
	memcpy(c.secret, secret, IBP_AUTH_SECRET_LEN);
	n = ibp_auth_sign(&x->auth, &c, h->cred, sizeof(h->cred), err, errlen);
	sodium_memzero(&c, sizeof(c));
	if (n < 0)
		return n;
	h->cred_len = (uint16_t)n;
	return 0;
}

void ibp_rt_link_fail(struct ibp_rt_link *l, enum ibp_link_status st, int err, const char *fmt, ...)
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
static enum try_outcome check_reply(const struct ibp_rt_ctx *x, struct ibp_rt_link *l,
				    const struct ibp_oob_msg *hello, const uint8_t mine[],
				    const struct ibp_oob_msg *reply, char *why, size_t whylen)
{
	const struct ibp_oob_hello *h = &reply->u.hello;
	struct ibp_auth_claims want, got;
	struct ibp_seal_link sl = {.job = x->cfg->job,
				   .step = x->cfg->step,
				   .uid = x->cfg->uid,
				   .from = x->me,
				   .to = l->peer,
				   .round = l->r.round,
				   .rail = (uint8_t)l->r.rail};
	uint16_t flags = (uint16_t)(IBP_HELLO_REPLY | (x->auth.insecure ? IBP_HELLO_INSECURE : 0));
	uint8_t theirs[IBP_AUTH_SECRET_LEN];
	int rc;

	if (reply->type != IBP_OOB_HELLO) {
		ibp_rt_setf(why, whylen, "a frame of type %u", reply->type);
		return TRY_UNAUTH;
	}
	ibp_rt_hello_claims(h, &got);
	want = got;
	want.job = x->cfg->job;
	want.step = x->cfg->step;
	want.uid = x->cfg->uid;
	want.from = l->peer;
	want.to = x->me;
	want.nnodes = x->n;
	want.round = l->r.round;
	want.rail = (uint8_t)l->r.rail;
	want.echo = hello->u.hello.nonce;
	if ((got.flags & ~(IBP_HELLO_NO_RAIL | IBP_HELLO_NO_RING)) != flags ||
	    got.job != want.job || got.step != want.step || got.uid != want.uid ||
	    got.from != want.from || got.to != want.to || got.nnodes != want.nnodes ||
	    got.round != want.round || got.rail != want.rail || got.echo != want.echo) {
		ibp_rt_setf(why, whylen, "a hello that is not %s's answer for this link",
			    ibp_rt_node_name(x, l->peer));
		return TRY_UNAUTH;
	}
	rc = ibp_auth_verify(&x->auth, h->cred, &want, theirs, why, whylen);
	if (rc == -ENOTCONN)
		return TRY_LOCAL;
	if (rc)
		return TRY_UNAUTH;
	if (got.flags & IBP_HELLO_NO_RAIL) {
		sodium_memzero(theirs, sizeof(theirs));
		ibp_rt_setf(why, whylen,
			    "%s tests %u rail%s, %s %zu: no rail %u there: the nodes have "
			    "different numbers of ports to test",
			    ibp_rt_node_name(x, l->peer), got.n_rails, got.n_rails == 1 ? "" : "s",
			    ibp_rt_node_name(x, x->me), x->n_rails, l->r.rail);
		return TRY_NO_RAIL;
	}
	if (got.flags & IBP_HELLO_NO_RING) { /* final too: the ring's thread says so */
		sodium_memzero(theirs, sizeof(theirs));
		ibp_rt_setf(why, whylen, "%s takes no part in the step-wide sum",
			    ibp_rt_node_name(x, l->peer));
		return TRY_NO_RING;
	}
	rc = ibp_seal_derive(&l->seal, mine, theirs, hello->u.hello.nonce, h->nonce, &sl, true);
	sodium_memzero(theirs, sizeof(theirs));
	l->peer_rails = got.n_rails; /* the rails the channel pairs */
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
static enum try_outcome try_candidate(const struct ibp_rt_ctx *x, struct ibp_rt_link *l,
				      uint16_t port, int64_t deadline, struct hello_kept *h,
				      int *fdp, char *why, size_t whylen)
{
	struct sockaddr_storage ss, src;
	socklen_t len, srclen, sl = sizeof(int);
	struct ibp_oob_msg reply = {0};
	char refused[IBP_OOB_TEXT_MAX] = "";
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
		rc = ibp_rt_hello_make(x, &h->m, l->peer, l->r.round, l->r.rail, 0, 0, h->secret,
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
	if (!ibp_rt_sockaddr_of(x->my_addr, 0, &src, &srclen) && src.ss_family == ss.ss_family)
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
	step_deadline = ibp_deadline_min(deadline, ibp_now_ns() + (x->end - x->start) / 4);
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
		rc = ibp_oob_recv_version(fd, &reply, step_deadline, &version, refused,
					  sizeof(refused));
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
		ibp_rt_setf(why, whylen, "undecodable answer (%s)",
			    refused[0] ? refused : strerror(-rc));
		out = TRY_UNAUTH;
		goto out;
	}
	if (reply.type == IBP_OOB_ERROR) {
		/* Unauthenticated: its words are not repeated, it ends nothing. */
		ibp_rt_setf(why, whylen, "an error frame");
		out = TRY_UNAUTH;
		goto out;
	}
	out = check_reply(x, l, &h->m, h->secret, &reply, why, whylen);
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
void ibp_rt_rail_missing(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, const char *why)
{
	if (x->pol->test_pairing_any) {
		l->r.status = IBP_LINK_UNTESTED;
		ibp_rt_setf(l->r.detail, sizeof(l->r.detail), "not tested: %s", why);
	} else {
		ibp_rt_link_fail(l, IBP_LINK_PROTOCOL, -ENXIO, "%s", why);
	}
}

/* The first candidate port whose last try was closed unanswered, 0 none. */
static uint16_t first_hung(const struct ibp_rt_ctx *x, const bool *hung)
{
	for (int c = 0; c < x->n_cands; c++)
		if (hung[c])
			return x->cands[c];
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
int ibp_rt_connect(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, int64_t deadline)
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

		for (int c = 0; c < x->n_cands; c++) {
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
			t = try_candidate(x, l, x->cands[c], deadline, &h, &fd, why, sizeof(why));
			if (c == 0)
				first_refused = t == TRY_CLOSED;
			if (t != TRY_CUT)
				hung[c] = t == TRY_HUNG_UP;
			switch (t) {
			case TRY_OK:
				return fd;
			case TRY_LOCAL:
				ibp_rt_link_fail(l, IBP_LINK_LOCAL,
						 strstr(why, "munge") ? -ENOTCONN : -EIO, "%s",
						 why);
				return -1;
			case TRY_NO_RAIL:
				ibp_rt_rail_missing(x, l, why);
				return -1;
			case TRY_NO_RING: /* the sum's connection only: rdmatest_ring.c */
				l->no_ring = true;
				l->r.status = IBP_LINK_UNTESTED;
				ibp_rt_setf(l->r.detail, sizeof(l->r.detail), "%s", why);
				return -1;
			case TRY_UNAUTH:
				unauth_port = x->cands[c];
				ibp_rt_setf(unauth, sizeof(unauth), "%s", why);
				break;
			case TRY_VERSION:
				/* Go on: the peer may listen on another candidate. */
				version_port = x->cands[c];
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
		ibp_rt_link_fail(l, IBP_LINK_AUTH, -EACCES,
				 "no candidate port of %s answered with valid credentials; port %u "
				 "answered without valid credentials (ignored: %s)%s",
				 ibp_rt_node_name(x, l->peer), unauth_port, unauth,
				 version_port ? "; an answer came in another protocol version"
					      : "");
	else if (version_port)
		ibp_rt_link_fail(l, IBP_LINK_VERSION, -EPROTONOSUPPORT,
				 "%s answers with protocol %u (port %u), %s speaks %u: not tested",
				 ibp_rt_node_name(x, l->peer), l->peer_version, version_port,
				 ibp_rt_node_name(x, x->me), ibp_oob_wire_version());
	else if ((hung_port = first_hung(x, hung))) {
		/*
		 * Something listens there to the end and closes every hello
		 * unanswered: not a node that is gone (that refuses, or stays
		 * silent), and nothing that authenticated.  A build before
		 * version 7 does this to another version's hello.
		 */
		l->closed_unanswered = true;
		ibp_rt_link_fail(
		    l, IBP_LINK_AUTH, -EACCES,
		    "port %u of %s accepted this node's hello and closed it unanswered until "
		    "the deadline (a spank-ib build before protocol version 7, or another "
		    "program on the port)",
		    hung_port, ibp_rt_node_name(x, l->peer));
	} else if (silent[0])
		ibp_rt_link_fail(l, IBP_LINK_UNREACHABLE, -ETIMEDOUT, "%s: %s", l->peer_addr,
				 silent);
	else
		ibp_rt_link_fail(l, IBP_LINK_UNREACHABLE, -ECONNREFUSED,
				 "%s: connection refused on port %u%s", l->peer_addr, x->cands[0],
				 x->n_cands > 1 ? " and its fallbacks" : "");
	return -1;
}
