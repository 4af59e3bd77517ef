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
 * One candidate's try (ibp_rt_connect runs them side by side): connect,
 * the HELLO as soon as it connects (made before: it arrives with the
 * connection), then the answer read as it comes, never waited for alone.
 */
struct cand_try {
	int64_t began, step_deadline;
	size_t have, need;
	struct hello_kept h;
	int fd; /* -1: not started, or over */
	int c;  /* its candidate: x->cands[c] */
	enum try_outcome out;
	bool tried, sent;
	char why[IBP_TEXT_MAX];
	uint8_t buf[IBP_OOB_HDR_LEN + IBP_OOB_HELLO_MAX]; /* a HELLO or an ERROR, at most */
};

/*
 * A try that has not been answered after this long gets the next candidate
 * tried beside it (it stays open: a slow peer still wins): a silent port
 * costs a connection this much, not its try's quarter of the test.
 */
#define STAGGER_MS 25

/* Its HELLO into SPARE when it never went (a refused try), else forgotten. */
static void try_end(struct cand_try *t, struct hello_kept *spare, enum try_outcome out)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->out = out;
	if (!t->sent && t->h.ready && !spare->ready && out == TRY_CLOSED)
		*spare = t->h;
	else
		hello_forget(&t->h);
	t->h.ready = false;
}

/* A HELLO of its own for try T: 0, or -errno (munged: T's WHY says so). */
static int hello_new(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, struct cand_try *t)
{
	int rc;

	t->h.made = ibp_now_ns();
	rc = ibp_rt_hello_make(x, &t->h.m, l->peer, l->r.round, l->r.rail, 0, 0, t->h.secret,
			       t->why, sizeof(t->why));
	if (rc) {
		hello_forget(&t->h);
		return rc;
	}
	t->h.ready = true;
	l->hellos++;
	return 0;
}

/* Starts candidate C: 0, or a final outcome (TRY_LOCAL: munged, socket). */
static enum try_outcome try_start(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, int c,
				  int64_t deadline, struct hello_kept *spare, struct cand_try *t)
{
	struct sockaddr_storage ss, src;
	socklen_t len, srclen;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->c = c;
	t->tried = true;
	t->out = TRY_CLOSED;
	if (ibp_rt_sockaddr_of(l->peer_addr, x->cands[c], &ss, &len))
		return TRY_CLOSED;
	if (spare->ready && ibp_now_ns() - spare->made > HELLO_KEEP_S * IBP_NS_PER_S)
		hello_forget(spare);
	if (spare->ready) {
		t->h = *spare;
		spare->ready = false;
	} else if (c == 0 && hello_new(x, l, t)) {
		/*
		 * The first candidate's HELLO is made before connecting, so that it
		 * arrives with the connection; a fallback's only once it connects:
		 * one that refuses (the usual: nothing listens there) costs no
		 * credential.
		 */
		return TRY_LOCAL;
	}
	t->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (t->fd < 0) {
		ibp_rt_setf(t->why, sizeof(t->why), "socket: %s", strerror(errno));
		try_end(t, spare, TRY_LOCAL);
		return TRY_LOCAL;
	}
	/* From this node's address: the path under test, and what the peer checks. */
	if (!ibp_rt_sockaddr_of(x->my_addr, 0, &src, &srclen) && src.ss_family == ss.ss_family)
		(void)bind(t->fd, (struct sockaddr *)&src, srclen);
	t->began = ibp_now_ns();
	t->step_deadline = ibp_deadline_min(deadline, t->began + (x->end - x->start) / 4);
	t->need = IBP_OOB_HDR_LEN;
	/*
	 * A try the deadline already cut (the credential took the last of it)
	 * connects nobody: an abandoned empty connection is what the peer
	 * counts as a dropped one, next to whatever ended this link.
	 */
	if (ibp_deadline_expired(deadline, t->began)) {
		try_end(t, spare, TRY_CUT);
		return 0;
	}
	if (connect(t->fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS)
		try_end(t, spare, TRY_CLOSED);
	return 0;
}

/*
 * Connected: the HELLO goes (made now for a fallback; it is small: the
 * socket takes it at once).  TRY_LOCAL when it cannot be made, else 0.
 */
static enum try_outcome try_send(const struct ibp_rt_ctx *x, struct ibp_rt_link *l,
				 struct cand_try *t, struct hello_kept *spare, int64_t deadline)
{
	uint16_t port = x->cands[t->c];
	socklen_t sl = sizeof(int);
	int soerr = 0;

	if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		try_end(t, spare, TRY_CLOSED);
		return 0;
	}
	if (!t->h.ready && hello_new(x, l, t)) {
		try_end(t, spare, TRY_LOCAL);
		return TRY_LOCAL;
	}
	ibp_rt_nodelay(t->fd);
	t->sent = true; /* from here it is used up, whatever happens */
	if (ibp_oob_send(t->fd, &t->h.m, ibp_deadline_min(deadline, t->step_deadline))) {
		ibp_rt_setf(t->why, sizeof(t->why), "port %u closed the connection", port);
		try_end(t, spare, TRY_HUNG_UP);
	}
	return 0;
}

/*
 * Reads what the answer has so far; at its end, what it is.  TRY_OK with
 * the link's keys set (the caller takes the fd); -1 while it is not whole.
 */
static int try_read(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, struct cand_try *t,
		    struct hello_kept *spare)
{
	uint16_t port = x->cands[t->c];
	struct ibp_oob_msg reply = {0}; /* no place for SUMMARY, FINGERPRINT, FPSUM */
	char refused[IBP_OOB_TEXT_MAX] = "";
	enum try_outcome out;
	unsigned type = 0;
	size_t plen = 0;
	int rc;

	for (;;) {
		ssize_t n = recv(t->fd, t->buf + t->have, t->need - t->have, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return -1;
		if (n <= 0) {
			ibp_rt_setf(t->why, sizeof(t->why), "port %u closed the connection", port);
			try_end(t, spare, TRY_HUNG_UP);
			return (int)TRY_HUNG_UP;
		}
		t->have += (size_t)n;
		if (t->have < t->need)
			continue;
		if (t->need > IBP_OOB_HDR_LEN)
			break;
		rc = ibp_oob_decode_header(t->buf, t->have, &type, &plen);
		if (rc == -EPROTONOSUPPORT) {
			/* Another build: remembered for the finding, trusted for nothing else. */
			l->version_seen = true;
			l->peer_version = (uint16_t)ibp_oob_header_version(t->buf, t->have);
			ibp_rt_setf(t->why, sizeof(t->why), "port %u answers with protocol %u",
				    port, l->peer_version);
			try_end(t, spare, TRY_VERSION);
			return (int)TRY_VERSION;
		}
		if (rc)
			ibp_oob_header_why(t->buf, t->have, refused, sizeof(refused));
		else if (ibp_oob_sealed(type)) /* a sealed frame where a plain one must be */
			ibp_format_cut(refused, sizeof(refused), "%s frame, sealed, before any key",
				       ibp_oob_type_name(type));
		else if (IBP_OOB_HDR_LEN + plen > sizeof(t->buf))
			ibp_format_cut(refused, sizeof(refused),
				       "%s frame of %zu payload bytes, longer than an answer",
				       ibp_oob_type_name(type), plen);
		if (refused[0]) {
			ibp_rt_setf(t->why, sizeof(t->why), "undecodable answer (%s)", refused);
			try_end(t, spare, TRY_UNAUTH);
			return (int)TRY_UNAUTH;
		}
		t->need = IBP_OOB_HDR_LEN + plen;
		if (!plen)
			break;
	}
	rc = ibp_oob_decode(t->buf, t->have, &reply);
	if (rc < 0) { /* a frame that does not even decode */
		ibp_rt_setf(
		    t->why, sizeof(t->why),
		    "undecodable answer (%s frame of %zu payload bytes that does not decode)",
		    ibp_oob_type_name(type), t->have - IBP_OOB_HDR_LEN);
		out = TRY_UNAUTH;
	} else if (reply.type == IBP_OOB_ERROR) {
		/* Unauthenticated: its words are not repeated, it ends nothing. */
		ibp_rt_setf(t->why, sizeof(t->why), "an error frame");
		out = TRY_UNAUTH;
	} else {
		out = check_reply(x, l, &t->h.m, t->h.secret, &reply, t->why, sizeof(t->why));
	}
	if (out == TRY_OK) {
		hello_forget(&t->h);
		t->out = TRY_OK;
		return (int)TRY_OK; /* the fd stays open: the caller's */
	}
	try_end(t, spare, out);
	return (int)out;
}

static bool final(enum try_outcome o)
{
	return o == TRY_OK || o == TRY_LOCAL || o == TRY_NO_RAIL || o == TRY_NO_RING;
}

/*
 * One round of tries on the candidates: the first alone, each next one
 * once the tries before it are over or STAGGER_MS silent (the silent ones
 * stay open beside it), the first answer that authenticates wins.  In an
 * EARLY round a refused first candidate ends the round: nothing listens
 * at the peer's address yet (it is still starting), the fallbacks wait.
 * T holds every candidate's outcome (TRIED false when not tried); the
 * return is a final outcome's index in T, or -1.
 */
static int try_round(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, int64_t deadline,
		     bool early, struct hello_kept *spare, struct cand_try *t)
{
	int next = 0, n = x->n_cands;

	for (int c = 0; c < n; c++) {
		t[c].fd = -1;
		t[c].tried = false;
		t[c].sent = false;
		t[c].h.ready = false;
		t[c].out = TRY_CLOSED;
		t[c].why[0] = '\0';
	}
	for (;;) {
		struct pollfd pfd[IBP_RDMATEST_MAX_LISTEN];
		int who[IBP_RDMATEST_MAX_LISTEN], np = 0, ms;
		int64_t now = ibp_now_ns(), wake = deadline, last_began = 0;
		bool open = false;

		for (int c = 0; c < next; c++) {
			if (t[c].fd < 0)
				continue;
			if (now >= t[c].step_deadline) {
				bool cut = t[c].step_deadline >= deadline;

				ibp_rt_setf(t[c].why, sizeof(t[c].why),
					    t[c].sent ? "no answer to the handshake on port %u"
						      : "no answer on port %u",
					    x->cands[c]);
				try_end(&t[c], spare, cut ? TRY_CUT : TRY_SILENT);
				continue;
			}
			open = true;
			if (t[c].began > last_began)
				last_began = t[c].began;
		}
		/* the next candidate: when nothing is open, or the open ones are silent */
		if (next < n && !(early && t[0].fd < 0 && t[0].out == TRY_CLOSED) &&
		    (!open || now - last_began >= STAGGER_MS * IBP_NS_PER_MS)) {
			enum try_outcome o = try_start(x, l, next, deadline, spare, &t[next]);

			if (o) {
				t[next].out = o;
				return next;
			}
			next++;
			continue;
		}
		if (!open)
			return -1; /* every candidate said its word */
		for (int c = 0; c < next; c++) {
			if (t[c].fd < 0)
				continue;
			pfd[np] =
			    (struct pollfd){.fd = t[c].fd, .events = t[c].sent ? POLLIN : POLLOUT};
			who[np++] = c;
			wake = ibp_deadline_min(wake, t[c].step_deadline);
		}
		if (next < n)
			wake = ibp_deadline_min(wake, last_began + STAGGER_MS * IBP_NS_PER_MS);
		ms = ibp_deadline_poll_ms(wake, now);
		if (poll(pfd, (nfds_t)np, ms) < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < np; i++) {
			struct cand_try *c = &t[who[i]];
			int r;

			if (!pfd[i].revents || c->fd < 0)
				continue;
			if (!c->sent)
				r = try_send(x, l, c, spare, deadline) == TRY_LOCAL ? (int)TRY_LOCAL
										    : -1;
			else
				r = try_read(x, l, c, spare);
			if (r >= 0 && final((enum try_outcome)r)) {
				for (int k = 0; k < next; k++)
					if (k != who[i] && t[k].fd >= 0)
						try_end(&t[k], spare, TRY_CUT);
				return who[i];
			}
		}
		if (ibp_deadline_expired(deadline, ibp_now_ns())) {
			for (int k = 0; k < next; k++)
				if (t[k].fd >= 0)
					try_end(&t[k], spare, TRY_CUT);
			return -1;
		}
	}
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
	char unauth[IBP_TEXT_MAX] = "", silent[IBP_TEXT_MAX] = "";
	uint16_t unauth_port = 0, version_port = 0, hung_port = 0;
	/* candidates whose last try was accepted and closed unanswered */
	bool hung[IBP_RDMATEST_MAX_LISTEN] = {false};
	struct cand_try t[IBP_RDMATEST_MAX_LISTEN];
	struct hello_kept spare;

	spare.ready = false;

	for (unsigned round = 0;; round++) {
		int ms, w;

		/*
		 * The first candidate refused: nothing listens at the peer's
		 * address yet (while it starts); a port taken there by another
		 * program answers, or refuses only if bound without listening.
		 * The fallbacks wait for the third round, 6 ms on.
		 */
		w = try_round(x, l, deadline, round < 2, &spare, t);
		for (int c = 0; c < x->n_cands; c++) {
			if (!t[c].tried)
				continue;
			if (t[c].out != TRY_CUT)
				hung[c] = t[c].out == TRY_HUNG_UP;
			if (t[c].out == TRY_UNAUTH) {
				unauth_port = x->cands[c];
				ibp_rt_setf(unauth, sizeof(unauth), "%s", t[c].why);
			} else if (t[c].out == TRY_VERSION) {
				/* Go on: the peer may listen on another candidate. */
				version_port = x->cands[c];
			} else if (t[c].out == TRY_SILENT) {
				ibp_rt_setf(silent, sizeof(silent), "%s", t[c].why);
			}
		}
		if (w >= 0) {
			switch (t[w].out) {
			case TRY_OK:
				hello_forget(&spare);
				return t[w].fd;
			case TRY_LOCAL:
				hello_forget(&spare);
				ibp_rt_link_fail(l, IBP_LINK_LOCAL,
						 strstr(t[w].why, "munge") ? -ENOTCONN : -EIO, "%s",
						 t[w].why);
				return -1;
			case TRY_NO_RAIL:
				hello_forget(&spare);
				ibp_rt_rail_missing(x, l, t[w].why);
				return -1;
			case TRY_NO_RING: /* the sum's connection only: rdmatest_ring.c */
				hello_forget(&spare);
				l->no_ring = true;
				l->r.status = IBP_LINK_UNTESTED;
				ibp_rt_setf(l->r.detail, sizeof(l->r.detail), "%s", t[w].why);
				return -1;
			default:
				break;
			}
		}
		ms = ibp_deadline_poll_ms(deadline, ibp_now_ns());
		if (ms == 0)
			goto give_up;
		poll(NULL, 0, ms < pause_ms ? ms : pause_ms);
		if (pause_ms < 200)
			pause_ms *= 2;
	}
give_up:
	hello_forget(&spare); /* the last tries were refused: never sent */
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
