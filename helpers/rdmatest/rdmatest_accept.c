/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_accept.c: the listeners and the acceptor of the cross-node test,
 * the only code that reads bytes from connections nobody has vouched for.
 * It runs on the caller's thread of ibp_rdmatest_run(); the link workers
 * get a connection from it only once the peer's munge credential checked,
 * the per-link keys exist and the reply went out.
 *
 * Slot policy (a flood is at most reported, never fails a healthy link):
 *
 *   - listeners are set to TCP_DEFER_ACCEPT: a connection that sends
 *     nothing never reaches accept() and holds nothing of ours;
 *   - a connection whose source address is not one of the peers this node
 *     receives from is closed at accept(), unread (counted as "outside");
 *   - a connection from a peer's address whose whole HELLO is there when
 *     it is accepted (a genuine sender builds it before connecting, and
 *     deferred accept waits for the data) is handled at once and needs no
 *     pending slot: no flood can keep it out or evict it;
 *   - an incomplete one waits in a pending slot: a peer's address gets at
 *     most QUOTA of them (its links plus two); a new one over quota
 *     replaces that address's oldest only when that one has had
 *     IBP_RT_GRACE_MS to complete its HELLO, else the new one is closed;
 *   - every pending connection has a short deadline to complete its HELLO;
 *   - a HELLO is checked field by field, then its source address against
 *     the node it claims to be, then its credential with munged, which is
 *     the only costly step: munged checks a credential once (a credential
 *     seen before is refused unchecked, whatever its nonce: a bogus HELLO
 *     costs a munge decode only when its sender paid a munge encode), and
 *     a peer's address gets at most IBP_RT_CHECKS_PER_PEER checks per
 *     step (a genuine peer needs a few; past that its link fails as an
 *     authentication failure saying so, which blames nobody);
 *     whatever fails gets the one word "refused" (no job, step, uid, node
 *     or count goes back) and the reason is kept locally (drop_reason).
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "ibprep/text.h"
#include "rdmatest_accept.h"

#define HELLO_FRAME_MAX (IBP_OOB_HDR_LEN + IBP_OOB_HELLO_MAX)
#define IBP_RT_GRACE_MS 50
#define IBP_RT_PEND_MAX (IBP_RDMATEST_MAX_LINKS + 2 * IBP_RT_MAX_IN_PEERS)
#define ACCEPT_BATCH    64
#define DEFER_ACCEPT_S  1
/* munge checks of credentials from one peer's address, per step */
#define IBP_RT_CHECKS_PER_PEER 64

struct pending {
	int64_t deadline, since;
	size_t have, want; /* WANT: the whole HELLO's length, once its header came */
	struct sockaddr_storage src;
	int peer; /* index in a->in_peers */
	int fd;
	char from[INET6_ADDRSTRLEN];
	uint8_t buf[HELLO_FRAME_MAX];
};

/* ---- listeners ---------------------------------------------------------- */

void ibp_rt_acceptor_init(struct ibp_rt_acceptor *a, struct ibp_rt_ctx *x)
{
	memset(a, 0, sizeof(*a));
	a->x = x;
	for (size_t c = 0; c < IBP_RDMATEST_MAX_LISTEN; c++)
		a->listen_fds[c] = -1;
}

/*
 * The acceptor is over: its listeners stop taking connections at once.  The
 * caller's (the plugin's: its parent holds them until this process exits)
 * are shut down, so that a connector of another step meets a refusal on
 * the port, not a silent backlog.
 */
void ibp_rt_close_listeners(struct ibp_rt_acceptor *a)
{
	for (int c = 0; c < a->x->n_cands; c++) {
		if (a->listen_fds[c] >= 0) {
			if (a->own_listen)
				close(a->listen_fds[c]);
			else
				(void)shutdown(a->listen_fds[c], SHUT_RDWR);
		}
		a->listen_fds[c] = -1;
	}
}

static void defer_accept(int fd)
{
	int s = DEFER_ACCEPT_S;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &s, sizeof(s));
}

/* The caller's pre-bound listeners: the first listening port, or -errno. */
static int listen_given(struct ibp_rt_acceptor *a)
{
	const struct ibp_rdmatest_config *cfg = a->x->cfg;
	int first = -EADDRINUSE;

	if (cfg->n_listen_fds == 0 || cfg->n_listen_fds > IBP_RDMATEST_MAX_LISTEN ||
	    !cfg->listen_ports)
		return -EINVAL;
	a->x->n_cands = (int)cfg->n_listen_fds;
	for (int c = 0; c < a->x->n_cands; c++) {
		a->x->cands[c] = cfg->listen_ports[c];
		a->listen_fds[c] = cfg->listen_fds[c];
		if (cfg->listen_ports[c] == 0)
			return -EINVAL;
		if (a->listen_fds[c] < 0)
			continue;
		defer_accept(a->listen_fds[c]);
		if (first < 0)
			first = cfg->listen_ports[c];
	}
	return first;
}

int ibp_rt_listen(struct ibp_rt_acceptor *a)
{
	int rc;

	if (a->x->cfg->listen_fds)
		return listen_given(a);
	rc = ibp_oob_ports(a->x->cfg->job, a->x->cfg->step, a->x->pol->test_port_lo,
			   a->x->pol->test_port_hi, a->x->cands, IBP_RDMATEST_PORT_CANDIDATES);
	if (rc < 0)
		return rc;
	a->x->n_cands = rc;
	a->own_listen = true;
	rc = -EADDRINUSE;
	for (int c = 0; c < a->x->n_cands; c++) {
		struct sockaddr_storage ss;
		socklen_t len;
		int one = 1, fd;

		if (ibp_rt_sockaddr_of(a->x->my_addr, a->x->cands[c], &ss, &len))
			return -EINVAL;
		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, (struct sockaddr *)&ss, len) && !listen(fd, 128)) {
			defer_accept(fd);
			a->listen_fds[c] = fd;
			return a->x->cands[c];
		}
		rc = -errno;
		close(fd);
		if (rc != -EADDRINUSE)
			return rc;
	}
	return rc;
}

/* ---- who may connect ---------------------------------------------------- */

/* An IPv4-mapped IPv6 address as the IPv4 address it is. */
static void unmap(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 a6;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

	if (ss->ss_family != AF_INET6)
		return;
	memcpy(&a6, ss, sizeof(a6));
	if (!IN6_IS_ADDR_V4MAPPED(&a6.sin6_addr))
		return;
	memset(ss, 0, sizeof(*ss));
	a4->sin_family = AF_INET;
	memcpy(&a4->sin_addr, &a6.sin6_addr.s6_addr[12], 4);
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

/* One more connection from NODE at ADDR: its entry among the in-peers, added when new. */
static int in_peer_add(struct ibp_rt_acceptor *a, uint32_t node, const char *addr)
{
	struct ibp_rt_peer *p = NULL;
	socklen_t len;

	for (size_t k = 0; k < a->n_in_peers; k++)
		if (a->in_peers[k].node == node)
			p = &a->in_peers[k];
	if (!p) {
		if (a->n_in_peers == IBP_RT_MAX_IN_PEERS)
			return -E2BIG;
		p = &a->in_peers[a->n_in_peers];
		memset(p, 0, sizeof(*p));
		if (ibp_rt_sockaddr_of(addr, 0, &p->addr, &len))
			return 0;
		unmap(&p->addr);
		p->node = node;
		p->quota = 2;
		a->n_in_peers++;
	}
	p->quota++;
	return 0;
}

int ibp_rt_peers_init(struct ibp_rt_acceptor *a)
{
	int rc = 0;

	a->n_in_peers = 0;
	for (size_t i = 0; i < a->x->n_links && !rc; i++) {
		const struct ibp_rt_link *l = &a->x->links[i];

		if (!l->out && l->peer_addr[0])
			rc = in_peer_add(a, l->peer, l->peer_addr);
	}
	/* the step-wide sum's children (rdmatest_ring.c): one connection each */
	for (int i = 0; i < IBP_RDMATEST_TREE_KIDS && !rc; i++) {
		const struct ibp_rt_link *c = a->ring_kids[i];

		if (c && c->peer_addr[0])
			rc = in_peer_add(a, c->peer, c->peer_addr);
	}
	return rc;
}

static int peer_of_addr(const struct ibp_rt_acceptor *a, const struct sockaddr_storage *ss)
{
	for (size_t k = 0; k < a->n_in_peers; k++)
		if (same_host(&a->in_peers[k].addr, ss))
			return (int)k;
	return -1;
}

static int peer_of_node(const struct ibp_rt_acceptor *a, uint32_t node)
{
	for (size_t k = 0; k < a->n_in_peers; k++)
		if (a->in_peers[k].node == node)
			return (int)k;
	return -1;
}

/* The sum's child FROM's connection, NULL: FROM is no child that connects. */
static struct ibp_rt_link *ring_slot(struct ibp_rt_acceptor *a, uint32_t from)
{
	for (int i = 0; i < IBP_RDMATEST_TREE_KIDS; i++)
		if (a->ring_kids[i] && a->ring_kids[i]->peer == from)
			return a->ring_kids[i];
	return NULL;
}

/* ---- dropping ----------------------------------------------------------- */

static void note_drop(struct ibp_rt_acceptor *a, bool away, const char *from, const char *why)
{
	a->dropped++;
	if (away)
		a->dropped_away++;
	else
		a->dropped_peer++;
	ibp_rt_setf(a->drop_reason, sizeof(a->drop_reason), "%s: %s", from, why);
}

__attribute__((format(printf, 3, 4))) static void drop(struct ibp_rt_acceptor *a, struct pending *p,
						       const char *fmt, ...)
{
	va_list ap;
	char why[IBP_TEXT_MAX];

	va_start(ap, fmt);
	ibp_vformat_cut(why, sizeof(why), fmt, ap);
	va_end(ap);
	note_drop(a, p->peer < 0, p->from, why);
	close(p->fd);
	p->fd = -1;
}

/* The one word a connection that did not authenticate gets back. */
static void refuse(int fd)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_ERROR};

	m.u.error.code = -EACCES;
	memcpy(m.u.error.text, "refused", sizeof("refused"));
	ibp_oob_send(fd, &m, ibp_now_ns() + 20 * IBP_NS_PER_MS);
}

__attribute__((format(printf, 3, 4))) static void
refuse_drop(struct ibp_rt_acceptor *a, struct pending *p, const char *fmt, ...)
{
	va_list ap;
	char why[IBP_TEXT_MAX];

	va_start(ap, fmt);
	ibp_vformat_cut(why, sizeof(why), fmt, ap);
	va_end(ap);
	refuse(p->fd);
	drop(a, p, "%s", why);
}

static bool nonce_seen(struct ibp_rt_acceptor *a, uint64_t nonce)
{
	size_t max = sizeof(a->nonces) / sizeof(a->nonces[0]);
	size_t n = a->n_nonces < max ? a->n_nonces : max;

	for (size_t i = 0; i < n; i++)
		if (a->nonces[i] == nonce)
			return true;
	a->nonces[a->n_nonces++ % max] = nonce;
	return false;
}

/* Whether munged checked CRED (LEN bytes) before in this step; remembers it. */
static bool cred_seen(struct ibp_rt_acceptor *a, const char *cred, size_t len)
{
	size_t max = sizeof(a->creds) / sizeof(a->creds[0]);
	size_t n = a->n_creds < max ? a->n_creds : max;
	uint8_t d[sizeof(a->creds[0])];

	crypto_generichash(d, sizeof(d), (const unsigned char *)cred, len, NULL, 0);
	for (size_t i = 0; i < n; i++)
		if (!sodium_memcmp(a->creds[i], d, sizeof(d)))
			return true;
	memcpy(a->creds[a->n_creds++ % max], d, sizeof(d));
	return false;
}

/* ---- the HELLO ---------------------------------------------------------- */

/* The peer asked to join a step-wide sum this node has no part in: say so, authenticated. */
static void answer_no_rail(struct ibp_rt_acceptor *a, struct pending *p,
			   const struct ibp_oob_hello *h)
{
	struct ibp_oob_msg reply;
	uint8_t secret[IBP_AUTH_SECRET_LEN];
	char why[IBP_TEXT_MAX] = "";
	uint16_t no = h->round == IBP_OOB_RING_ROUND ? IBP_HELLO_NO_RING : IBP_HELLO_NO_RAIL;
	int rc = ibp_rt_hello_make(a->x, &reply, h->from, h->round, h->rail, h->nonce,
				   IBP_HELLO_REPLY | no, secret, why, sizeof(why));

	if (!rc)
		rc = ibp_oob_send(p->fd, &reply,
				  ibp_deadline_min(a->x->end, ibp_now_ns() + IBP_NS_PER_S));
	if (h->round == IBP_OOB_RING_ROUND)
		drop(a, p, "%s opens the step-wide sum's connection, this node takes no part%s%s",
		     ibp_rt_node_name(a->x, h->from), rc ? ": cannot answer: " : "", rc ? why : "");
	else
		drop(a, p, "%s asks for rail %u, this node tests %zu%s%s",
		     ibp_rt_node_name(a->x, h->from), h->rail, a->x->n_rails,
		     rc ? ": cannot answer: " : "", rc ? why : "");
}

static void handshake(struct ibp_rt_acceptor *a, struct pending *p)
{
	struct ibp_oob_msg m = {0}, reply;
	struct ibp_oob_hello *h = &m.u.hello;
	struct ibp_auth_claims want;
	struct ibp_seal seal;
	struct ibp_seal_link sl;
	struct ibp_rt_link *l = NULL;
	uint8_t theirs[IBP_AUTH_SECRET_LEN], mine[IBP_AUTH_SECRET_LEN];
	char why[IBP_TEXT_MAX] = "";
	int rc = ibp_oob_decode(p->buf, p->have, &m), k;

	if (rc < 0) {
		drop(a, p, "malformed hello: HELLO frame of %zu payload bytes that does not decode",
		     p->have - IBP_OOB_HDR_LEN);
		return;
	}
	if (h->flags & (IBP_HELLO_REPLY | IBP_HELLO_NO_RAIL | IBP_HELLO_NO_RING)) {
		refuse_drop(a, p, "a reply where a hello was expected");
		return;
	}
	if (h->job != a->x->cfg->job || h->step != a->x->cfg->step || h->uid != a->x->cfg->uid ||
	    h->to != a->x->me || h->nnodes != a->x->n) {
		refuse_drop(a, p,
			    "hello for job %u step %u uid %u node %u of %u, expected "
			    "%u/%u/%u/%u/%u",
			    h->job, h->step, h->uid, h->to, h->nnodes, a->x->cfg->job,
			    a->x->cfg->step, a->x->cfg->uid, a->x->me, a->x->n);
		return;
	}
	/* The address it connects from must be the node it claims to be. */
	k = peer_of_node(a, h->from);
	if (k < 0 || !same_host(&a->in_peers[k].addr, &p->src)) {
		refuse_drop(a, p, "hello claiming to be %s from another address%s",
			    ibp_rt_node_name(a->x, h->from),
			    k < 0 ? " (not a node this one receives from)" : "");
		return;
	}
	if (!a->x->auth.insecure && (h->flags & IBP_HELLO_INSECURE)) {
		ibp_rt_setf(why, sizeof(why),
			    "%s runs without credentials (--insecure), this node does not",
			    ibp_rt_node_name(a->x, h->from));
		goto refused;
	}
	if (nonce_seen(a, h->nonce)) {
		ibp_rt_setf(why, sizeof(why), "replayed hello");
		goto refused;
	}
	/* insecure (both sides, checked above): no credential, nothing costly */
	if (!a->x->auth.insecure && cred_seen(a, h->cred, h->cred_len)) {
		ibp_rt_setf(why, sizeof(why), "a credential used before");
		goto refused;
	}
	if (!a->x->auth.insecure && a->in_peers[k].checks >= IBP_RT_CHECKS_PER_PEER) {
		ibp_rt_setf(why, sizeof(why),
			    "over the %d credential checks allowed from %s's address",
			    IBP_RT_CHECKS_PER_PEER, ibp_rt_node_name(a->x, h->from));
		goto refused;
	}
	a->in_peers[k].checks++;
	a->cred_checks++;
	ibp_rt_hello_claims(h, &want);
	rc = ibp_auth_verify(&a->x->auth, h->cred, &want, theirs, why, sizeof(why));
	if (rc)
		goto refused;
	/* From here the sender is the peer, vouched for by munge. */
	/* one connection per round and direction carries every rail (rdmatest_link.c) */
	if (h->rail != 0) {
		refuse_drop(a, p,
			    "a hello for rail %u from %s: rail 0's connection carries every rail",
			    h->rail, ibp_rt_node_name(a->x, h->from));
		return;
	}
	if (h->round == IBP_OOB_RING_ROUND) {
		l = ring_slot(a, h->from);
		/* nothing to add to the sum here: said at once, nobody waits for it */
		if (!l && !a->ring_part) {
			answer_no_rail(a, p, h);
			return;
		}
	} else if (h->round <= ibp_rt_n_rounds(a->x)) {
		l = ibp_rt_link_at(a->x, h->rail, h->round, false);
		if (l->peer != h->from)
			l = NULL;
	}
	if (!l) {
		refuse_drop(a, p, "unexpected hello from %s round %u rail %u",
			    ibp_rt_node_name(a->x, h->from), h->round, h->rail);
		return;
	}
	pthread_mutex_lock(&a->x->mu);
	rc = l->slot != IBP_RT_SLOT_EMPTY;
	pthread_mutex_unlock(&a->x->mu);
	if (rc) {
		refuse_drop(a, p, "second connection for %s round %u rail %u",
			    ibp_rt_node_name(a->x, h->from), h->round, h->rail);
		return;
	}
	rc = ibp_rt_hello_make(a->x, &reply, h->from, h->round, h->rail, h->nonce, IBP_HELLO_REPLY,
			       mine, why, sizeof(why));
	sl = (struct ibp_seal_link){.job = a->x->cfg->job,
				    .step = a->x->cfg->step,
				    .uid = a->x->cfg->uid,
				    .from = h->from,
				    .to = a->x->me,
				    .round = h->round,
				    .rail = h->rail};
	if (!rc)
		rc =
		    ibp_seal_derive(&seal, theirs, mine, h->nonce, reply.u.hello.nonce, &sl, false);
	sodium_memzero(theirs, sizeof(theirs));
	sodium_memzero(mine, sizeof(mine));
	if (rc) {
		refuse_drop(a, p, "cannot answer: %s", why[0] ? why : strerror(-rc));
		return;
	}
	if (ibp_oob_send(p->fd, &reply, ibp_deadline_min(a->x->end, ibp_now_ns() + IBP_NS_PER_S))) {
		ibp_seal_clear(&seal);
		drop(a, p, "could not answer the hello");
		return;
	}
	pthread_mutex_lock(&a->x->mu);
	if (h->round <= ibp_rt_n_rounds(a->x)) {
		struct ibp_rt_link *x = ibp_rt_link_at(a->x, 0, h->round, false);

		if (x->peer == h->from)
			x->peer_rails = h->n_rails;
	}
	l->fd = p->fd;
	l->seal = seal;
	l->slot = IBP_RT_SLOT_FILLED;
	pthread_cond_broadcast(&a->x->cv);
	pthread_mutex_unlock(&a->x->mu);
	if (h->round == IBP_OOB_RING_ROUND && a->wake)
		a->wake(a->wake_arg);
	ibp_seal_clear(&seal);
	p->fd = -1;
	return;
refused:
	/*
	 * From the peer's address, but not vouched for: kept for the link's
	 * outcome should the peer never authenticate.
	 */
	if (h->round <= ibp_rt_n_rounds(a->x) && h->rail < a->x->n_rails) {
		l = ibp_rt_link_at(a->x, h->rail, h->round, false);
		if (l->peer == h->from) {
			pthread_mutex_lock(&a->x->mu);
			ibp_rt_setf(l->reject, sizeof(l->reject),
				    "a hello from %s's address failed authentication: %s",
				    ibp_rt_node_name(a->x, h->from), why);
			pthread_mutex_unlock(&a->x->mu);
		}
	}
	refuse_drop(a, p, "%s", why);
}

/*
 * A first frame of another protocol version from a peer's address: another
 * spank-ib build (a rolling upgrade), or someone claiming to be one.  The
 * version is kept on the in-links from that peer, for the finding should
 * the peer never authenticate; it is counted as no drop (an older build
 * retries all round long and would read as a flood).  The answer is an
 * ERROR frame of this version: a build of this one or later reads the
 * version from its header; older ones (version 6 and before) refuse it as
 * "undecodable answer (Protocol not supported)", a failed authentication
 * that blames nobody, where closing unanswered read "connection refused",
 * a node fault.  What the connection sent is read first (a little, without
 * waiting) so that the close does not reset the answer away.
 */
static void other_version(struct ibp_rt_acceptor *a, struct pending *p, int version)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_ERROR};
	uint32_t node = a->in_peers[p->peer].node;
	uint8_t sink[512];

	for (int i = 0; i < 8 && recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	m.u.error.code = -EPROTONOSUPPORT;
	ibp_rt_setf(m.u.error.text, sizeof(m.u.error.text), "protocol %u", ibp_oob_wire_version());
	ibp_oob_send(p->fd, &m, ibp_now_ns() + 20 * IBP_NS_PER_MS);
	pthread_mutex_lock(&a->x->mu);
	for (size_t i = 0; i < a->x->n_links; i++) {
		struct ibp_rt_link *l = &a->x->links[i];

		if (!l->out && l->peer == node) {
			l->version_seen = true;
			l->peer_version = (uint16_t)version;
		}
	}
	pthread_mutex_unlock(&a->x->mu);
	close(p->fd);
	p->fd = -1;
}

/* ---- the acceptor ------------------------------------------------------- */

/* Where the in-links' slots stand, for the acceptor's loop. */
enum slots_state {
	SLOTS_DONE,    /* every slot LIVE or CLOSED: nothing more to accept */
	SLOTS_WAITING, /* a slot is EMPTY */
	SLOTS_HANDED,  /* none EMPTY, but one handed over awaits its first frame */
};

static enum slots_state slots_state(struct ibp_rt_acceptor *a)
{
	enum slots_state st = SLOTS_DONE;

	pthread_mutex_lock(&a->x->mu);
	for (size_t i = 0; i < a->x->n_links; i++) {
		const struct ibp_rt_link *l = &a->x->links[i];

		if (l->out)
			continue;
		if (l->slot == IBP_RT_SLOT_EMPTY)
			st = SLOTS_WAITING;
		else if (l->slot == IBP_RT_SLOT_FILLED && st == SLOTS_DONE)
			st = SLOTS_HANDED;
	}
	/* the step-wide sum's connections from this node's children: slots like a link's */
	for (int i = 0; i < IBP_RDMATEST_TREE_KIDS; i++) {
		const struct ibp_rt_link *c = a->ring_kids[i];

		if (c && c->slot == IBP_RT_SLOT_EMPTY)
			st = SLOTS_WAITING;
		else if (c && c->slot == IBP_RT_SLOT_FILLED && st == SLOTS_DONE)
			st = SLOTS_HANDED;
	}
	pthread_mutex_unlock(&a->x->mu);
	return st;
}

static void read_pending(struct ibp_rt_acceptor *a, struct pending *p)
{
	while (p->fd >= 0) {
		size_t want = p->want ? p->want : IBP_OOB_HDR_LEN;
		ssize_t n = recv(p->fd, p->buf + p->have, want - p->have, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0) {
			drop(a, p,
			     n == 0 ? "closed before its hello was complete (%zu bytes)"
				    : "read error after %zu bytes",
			     p->have);
			return;
		}
		p->have += (size_t)n;
		if (!p->want && p->have == IBP_OOB_HDR_LEN) {
			unsigned type;
			size_t plen;
			int rc = ibp_oob_decode_header(p->buf, p->have, &type, &plen);

			if (rc == -EPROTONOSUPPORT) {
				other_version(a, p, ibp_oob_header_version(p->buf, p->have));
				return;
			}
			if (rc || type != IBP_OOB_HELLO) {
				char why[IBP_OOB_TEXT_MAX];

				if (rc)
					ibp_oob_header_why(p->buf, p->have, why, sizeof(why));
				else
					ibp_rt_setf(why, sizeof(why), "%s frame, not a HELLO",
						    ibp_oob_type_name(type));
				drop(a, p, "bad first message: %s", why);
				return;
			}
			/* a HELLO's bounds: within BUF */
			p->want = IBP_OOB_HDR_LEN + plen;
		}
		if (p->want && p->have == p->want) {
			handshake(a, p);
			return;
		}
	}
}

/*
 * A pending entry for a new connection from in-peer K: a free one within
 * K's quota, else K's oldest once it had its grace, else NULL (the new
 * connection is the one to go).
 */
static struct pending *slot_for(struct ibp_rt_acceptor *a, struct pending *pend, int k, int64_t now)
{
	struct pending *free_slot = NULL, *oldest = NULL;
	unsigned used = 0;

	for (size_t i = 0; i < IBP_RT_PEND_MAX; i++) {
		if (pend[i].fd < 0) {
			if (!free_slot)
				free_slot = &pend[i];
			continue;
		}
		if (pend[i].peer != k)
			continue;
		used++;
		if (!oldest || pend[i].since < oldest->since)
			oldest = &pend[i];
	}
	if (used < a->in_peers[k].quota && free_slot)
		return free_slot;
	if (oldest && now - oldest->since >= IBP_RT_GRACE_MS * IBP_NS_PER_MS) {
		drop(a, oldest,
		     "%u connections pending from this address, the oldest dropped after %d ms",
		     used, IBP_RT_GRACE_MS);
		return oldest;
	}
	return NULL;
}

/* Accepts what is queued on listener LFD (a batch at most). */
static void accept_batch(struct ibp_rt_acceptor *a, int lfd, struct pending *pend, int64_t conn_ns)
{
	for (int b = 0; b < ACCEPT_BATCH; b++) {
		struct sockaddr_storage ss = {0};
		socklen_t sl = sizeof(ss);
		struct pollfd pfd = {.fd = lfd, .events = POLLIN};
		char host[INET6_ADDRSTRLEN] = "?";
		struct pending *p, fresh;
		int fd, k;
		int64_t now;

		/* The caller's listener may be blocking: accept only what is there. */
		if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLIN))
			return;
		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		unmap(&ss);
		if (ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host,
				  sizeof(host));
		else if (ss.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host,
				  sizeof(host));
		k = peer_of_addr(a, &ss);
		if (k < 0) {
			/* Not a node this one receives from: closed unread. */
			close(fd);
			note_drop(a, true, host, "not the address of a peer of this node");
			continue;
		}
		now = ibp_now_ns();
		ibp_rt_nodelay(fd);
		memset(&fresh, 0, sizeof(fresh));
		fresh.fd = fd;
		fresh.peer = k;
		fresh.since = now;
		fresh.deadline = now + conn_ns;
		fresh.src = ss;
		ibp_rt_setf(fresh.from, sizeof(fresh.from), "%s", host);
		/*
		 * A genuine HELLO is already there (built before connecting,
		 * deferred accept): handled now, it needs no pending slot, so
		 * no flood can keep it out.
		 */
		read_pending(a, &fresh);
		if (fresh.fd < 0)
			continue;
		p = slot_for(a, pend, k, now);
		if (!p) {
			close(fresh.fd);
			note_drop(a, false, host,
				  "over the limit of pending connections from this address");
			continue;
		}
		*p = fresh;
	}
}

void ibp_rt_accept(struct ibp_rt_acceptor *a)
{
	static_assert(IBP_RT_PEND_MAX + IBP_RDMATEST_MAX_LISTEN <= 128, "poll set size");
	struct pending pend[IBP_RT_PEND_MAX];
	int64_t last = a->x->round_end[ibp_rt_n_rounds(a->x) - 1];
	int64_t conn_ns = (a->x->end - a->x->start) / 4;
	enum slots_state st;

	if (conn_ns > IBP_NS_PER_S)
		conn_ns = IBP_NS_PER_S;
	for (size_t i = 0; i < IBP_RT_PEND_MAX; i++) {
		pend[i].fd = -1;
		pend[i].peer = -1;
	}
	while ((st = slots_state(a)) != SLOTS_DONE) {
		struct pollfd pfd[IBP_RT_PEND_MAX + IBP_RDMATEST_MAX_LISTEN];
		struct pending *who[IBP_RT_PEND_MAX + IBP_RDMATEST_MAX_LISTEN];
		int64_t now = ibp_now_ns(), wake = last;
		size_t np = 0, nl;
		int n, ms, cap;

		if (now >= last)
			break;
		for (int c = 0; c < a->x->n_cands; c++) {
			if (a->listen_fds[c] < 0)
				continue;
			pfd[np] = (struct pollfd){.fd = a->listen_fds[c], .events = POLLIN};
			who[np++] = NULL;
		}
		nl = np;
		for (size_t i = 0; i < IBP_RT_PEND_MAX; i++) {
			if (pend[i].fd < 0)
				continue;
			if (now >= pend[i].deadline) {
				drop(a, &pend[i], "no complete hello within %lld ms (%zu bytes)",
				     (long long)(conn_ns / IBP_NS_PER_MS), pend[i].have);
				continue;
			}
			wake = ibp_deadline_min(wake, pend[i].deadline);
			pfd[np] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
			who[np++] = &pend[i];
		}
		/*
		 * Wake at least every 50 ms: a worker may have closed its slot;
		 * every millisecond while the last handed-over connections await
		 * their first frame, so the test does not wait on this loop once
		 * they arrive (or are handed back).
		 */
		ms = ibp_deadline_poll_ms(wake, now);
		cap = st == SLOTS_HANDED ? 1 : 50;
		n = poll(pfd, np, ms > cap ? cap : ms);
		if (n < 0 && errno != EINTR)
			break;
		for (size_t i = nl; n > 0 && i < np; i++)
			if (pfd[i].revents && who[i]->fd >= 0)
				read_pending(a, who[i]);
		for (size_t i = 0; n > 0 && i < nl; i++)
			if (pfd[i].revents & POLLIN)
				accept_batch(a, pfd[i].fd, pend, conn_ns);
	}
	for (size_t i = 0; i < IBP_RT_PEND_MAX; i++)
		if (pend[i].fd >= 0)
			drop(a, &pend[i], "the test is over");
	ibp_rt_close_listeners(a);
}
