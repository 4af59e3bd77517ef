/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * transport_socket.c: the cross-node test's data path over TCP (transport.h).
 *
 * The same steps and data checks as the verbs transport, over the network
 * NCCL bootstraps on: where no RDMA exists it runs the whole test, and it is
 * a real check that the nodes reach each other.  Each tx listens on an
 * ephemeral port of its node address; the receiver advertises it in its
 * endpoint with a random token (in rkey and qpn) that the sender must
 * present first, so a stranger who races to that port is dropped.
 *
 * A rail tested over its own network (the port's IFNAME, transport.h):
 * both ends' sockets are bound to that netdev, as an HCA port's traffic
 * can only leave and arrive through that port.  Linux lets any user bind
 * a socket to a device since 5.7; where that is refused (EPERM) the
 * sockets are bound to the rail's address only, and routing decides.
 *
 * A datagram tx (transport.h: rails beyond rail 0) has one UDP socket,
 * bound like the TCP ones, instead of a connection: the sender sends a
 * HELLO (the receiver's token, its own, its rail, a small pattern) to the
 * receiver's UDP port, the receiver answers with a REPLY naming its rail
 * (no FIN since protocol 20: the receiver's exchange ends at its REPLY).
 * Each end takes only datagrams from the other's endpoint (address and
 * port, from the sealed ENDPOINT frames) that carry both tokens, so
 * another local user can neither answer for a dead rail nor pass a wrong
 * one.  The HELLO is sent again while no REPLY came (a datagram may drop);
 * a receiver answers it again (idle) while its link waits for the
 * sender's next control frame, which comes only once the REPLY did.
 * A worker's rounds share their sockets (struct dg_share).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
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

#include "ibprep/deadline.h"
#include "ibprep/text.h"
#include "ibprep/oob.h"
#include "ibprep/transport.h"

#define LAT_MSG 8

/*
 * The pattern and the burst go through a piece of the caller's stack of
 * this size, not a buffer of BUF_LEN per tx: a stream needs no landing
 * zone, and a fresh buffer for each rail of each round was pages the
 * kernel cleared on their first touch (a fifth of the socket transport's
 * CPU with 8 rails, perf in rdmatest-sim).
 */
#define CHUNK (16 << 10)

/*
 * A datagram: magic "IBPd", type, the rail of its sender, the pattern's
 * length (HELLO only), the exchange's number (1 the CONNECT's, then one
 * per round trip measured again: a late duplicate of another is refused),
 * the addressee's token, the sender's token, the pattern.  Big-endian;
 * every length checked.
 */
#define DG_MAGIC 0x49425064u
#define DG_HDR   28
enum { DG_HELLO = 1, DG_REPLY = 2, DG_PROBE = 4, DG_PROBE_REPLY = 5 }; /* 3 was protocol 19's FIN */

/*
 * The probes a receiver's socket answers at most: a peer's every rail,
 * each probe sent twice, two rounds on the socket, 16 rails, with room (a
 * copy replayed by someone on the wire gets no more)
 */
#define DG_PROBE_ANSWERS 128
/* A datagram probe unanswered this long is sent once more */
#define DG_PROBE_AGAIN_MS 200

/* The burst's bytes: zeros, never a stack's leftovers. */
static const uint8_t zeros[CHUNK];

struct ibp_tx {
	int listen_fd, data_fd;
	int bound_fd;             /* a sender's data socket, bound at open, not connected yet */
	char ifname[IF_NAMESIZE]; /* the rail's netdev the sockets are bound to, "" none */
	struct sockaddr_storage local;
	socklen_t local_len;
	size_t buf_len;              /* the largest pattern, the burst's unit */
	uint32_t token_hi, token_lo; /* our token (rkey, qpn) */
	/* a datagram tx (opts->datagram) */
	bool dgram;
	int udp_fd;
	uint16_t udp_port;
	unsigned rail;
	struct sockaddr_storage peer_udp; /* the peer's UDP address, from its endpoint */
	socklen_t peer_udp_len;
	uint8_t peer_token[8];
	uint8_t pat[IBP_TX_DGRAM_PATTERN]; /* the pattern sent, or the one that came */
	size_t pat_len;
	bool carried;     /* the CONNECT's HELLO carried the pattern (the steps op's) */
	uint64_t rtt_ns;  /* sender: the last exchange's round trip */
	uint32_t xchg;    /* the exchange's number: 1 CONNECT's, then one per RTT again */
	unsigned rtts;    /* RTT steps so far: the first uses CONNECT's round trip */
	unsigned refused; /* datagrams refused: wrong source, tokens or form */
	unsigned late;    /* authentic ones of another exchange, or duplicates */
	char *err;
	size_t errlen;
	struct dg_share *share; /* its sockets, shared through the opener's cache */
	bool rx;                /* a receiver: answers the peers' probes */
	bool answering; /* receiver: answered exchange xchg, its HELLO answered again (idle) */
	/*
	 * receiver: no exchange awaited (its last step over, either way):
	 * idle may read the socket.  Until its first step, and while an
	 * exchange is awaited, a HELLO that came early waits there for the
	 * step (read by idle it would be one of no exchange yet, dropped, and
	 * sent again only 100 ms later); a probe waits with it.
	 */
	bool idle_ok;
	unsigned probe_answers; /* without a share: the probes answered */
	/* sender: a probe from its own socket (probe_along): 0 none, 1 sent, 2 answered */
	int pa_state;
	socklen_t pa_len;
	struct sockaddr_storage pa_addr;
	struct ibp_tx_probe pa; /* its rails, token and nonce (its fd unused) */
};

__attribute__((format(printf, 3, 4))) static int tx_fail(struct ibp_tx *tx, int rc, const char *fmt,
							 ...)
{
	va_list ap;

	if (!tx->err || !tx->errlen)
		return rc;
	va_start(ap, fmt);
	ibp_vformat_cut(tx->err, tx->errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(buf, len, ss->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}

/*
 * A datagram step's peer as text, for its messages only: written the
 * first time a message needs it (a healthy exchange formats none).
 */
static const char *dg_where(struct ibp_tx_step *s)
{
	if (!s->priv.where[0])
		addr_text(&s->tx->peer_udp, s->priv.where, sizeof(s->priv.where));
	return s->priv.where;
}

/*
 * FD bound to TX's netdev.  0 (also when the kernel refuses a user the
 * option, EPERM: the address binding still holds), or -errno.
 */
static int bind_dev(const struct ibp_tx *tx, int fd)
{
	if (!tx->ifname[0])
		return 0;
	if (!setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, tx->ifname,
			(socklen_t)strlen(tx->ifname) + 1))
		return 0;
	return errno == EPERM ? 0 : -errno;
}

/*
 * A datagram rail's socket, shared by the rounds of one worker thread
 * through its cache (transport.h, struct ibp_tx_opts).  The rounds of a
 * node's out-links run one after the other in one thread, and so do its
 * in-links': the round-2 sender of rail k takes the UDP socket round 1's
 * sender used, the round-2 receiver round 1's receiver's.  One UDP socket
 * per rail, node and direction instead of one per link end: an earlier
 * round's late datagrams come from another endpoint or carry other tokens
 * (each tx draws its own), so they are refused as any stranger's, but a
 * probe naming an earlier receiver's token (DG_SHARE_TOKENS kept) is still
 * answered.  The cache is its thread's alone (no lock); the last of the
 * cache and the txs to let go closes the socket (a kept receiver is closed
 * by another thread at the run's end: the count is atomic).
 */
#define DG_SHARE_TOKENS 8
struct dg_share {
	int udp_fd;
	uint16_t udp_port;
	bool sender;
	char ifname[IF_NAMESIZE];
	char addr[sizeof(((struct ibp_tx_port *)0)->addr)];
	struct sockaddr_storage local; /* the receiver's address */
	socklen_t local_len;
	int refs;
	const struct ibp_tx *owner; /* the tx that last took the socket: the only one to use it */
	uint8_t tok[DG_SHARE_TOKENS][8]; /* the tokens of its receivers, the latest last */
	unsigned n_tok;
	unsigned probe_answers;
};

/* A worker's rails (16 at most, rdmatest.h) fit with room; a full cache shares no more. */
#define DG_SHARE_MAX 32
struct ibp_tx_cache {
	struct dg_share *v[DG_SHARE_MAX];
	size_t n;
};

static void dg_share_put(struct dg_share *sh)
{
	if (!sh || __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (sh->udp_fd >= 0)
		close(sh->udp_fd);
	free(sh);
}

static void socket_cache_free(struct ibp_tx_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		dg_share_put(c->v[i]);
	free(c);
}

static void own_token(const struct ibp_tx *tx, uint8_t want[8]);

/* TX takes SH's socket: the only one to use it from now; a receiver's token kept for probes. */
static void dg_share_take(struct dg_share *sh, struct ibp_tx *tx)
{
	sh->owner = tx;
	tx->share = sh;
	if (!tx->rx)
		return;
	own_token(tx, sh->tok[sh->n_tok % DG_SHARE_TOKENS]);
	sh->n_tok++;
}

/* The cache's socket for PORT's rail and this role, a reference taken, or NULL. */
static struct dg_share *dg_share_get(const struct ibp_tx_cache *c, const struct ibp_tx_port *port,
				     bool sender)
{
	for (size_t i = 0; c && i < c->n; i++) {
		struct dg_share *sh = c->v[i];

		if (sh->sender == sender && !strcmp(sh->ifname, port->ifname) &&
		    !strcmp(sh->addr, port->addr)) {
			__atomic_add_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL);
			return sh;
		}
	}
	return NULL;
}

static void socket_close(struct ibp_tx *tx)
{
	if (!tx)
		return;
	if (tx->data_fd >= 0)
		close(tx->data_fd);
	if (tx->share) { /* the socket is the share's */
		dg_share_put(tx->share);
		tx->udp_fd = -1;
	}
	if (tx->udp_fd >= 0)
		close(tx->udp_fd);
	if (tx->bound_fd >= 0)
		close(tx->bound_fd);
	if (tx->listen_fd >= 0)
		close(tx->listen_fd);
	free(tx);
}

/* A datagram tx's UDP socket, bound to the rail's netdev and address. */
static int dgram_open(struct ibp_tx *tx, const struct ibp_tx_port *port)
{
	struct sockaddr_storage u = tx->local;
	socklen_t ulen = tx->local_len;
	int rc;

	tx->udp_fd = socket(u.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (tx->udp_fd < 0)
		return tx_fail(tx, -errno, "data datagram socket on %s: %s", port->addr,
			       strerror(errno));
	rc = bind_dev(tx, tx->udp_fd);
	if (rc < 0)
		return tx_fail(tx, rc, "data datagram socket on %s: bind to %s: %s", port->addr,
			       tx->ifname, strerror(-rc));
	if (bind(tx->udp_fd, (struct sockaddr *)&u, ulen) ||
	    getsockname(tx->udp_fd, (struct sockaddr *)&u, &ulen))
		return tx_fail(tx, -errno, "data datagram socket on %s: %s", port->addr,
			       strerror(errno));
	tx->udp_port = ntohs(u.ss_family == AF_INET ? ((struct sockaddr_in *)&u)->sin_port
						    : ((struct sockaddr_in6 *)&u)->sin6_port);
	return 0;
}

/* TX's sockets offered to the next tx of the rail opened with CACHE (nothing when it cannot). */
static void dg_share_new(struct ibp_tx *tx, struct ibp_tx_cache **cache,
			 const struct ibp_tx_port *port, bool sender)
{
	struct ibp_tx_cache *c;
	struct dg_share *sh;

	if (!cache)
		return;
	if (!*cache)
		*cache = calloc(1, sizeof(**cache));
	c = *cache;
	if (!c || c->n >= DG_SHARE_MAX || !(sh = calloc(1, sizeof(*sh))))
		return;
	sh->udp_fd = tx->udp_fd;
	sh->udp_port = tx->udp_port;
	sh->sender = sender;
	snprintf(sh->ifname, sizeof(sh->ifname), "%s", port->ifname);
	snprintf(sh->addr, sizeof(sh->addr), "%s", port->addr);
	sh->local = tx->local;
	sh->local_len = tx->local_len;
	sh->refs = 2; /* the cache's and the tx's */
	c->v[c->n++] = sh;
	dg_share_take(sh, tx);
}

static int socket_open(const struct ibp_tx_port *port, const struct ibp_tx_opts *opts,
		       struct ibp_tx **out)
{
	struct ibp_tx *tx = calloc(1, sizeof(*tx));
	uint32_t tok[2];
	int rc, fd;

	*out = NULL;
	if (!tx)
		return -ENOMEM;
	tx->listen_fd = tx->data_fd = tx->bound_fd = tx->udp_fd = -1;
	tx->dgram = opts->datagram;
	tx->rx = !opts->sender;
	tx->rail = port->rail;
	tx->err = opts->err;
	tx->errlen = opts->errlen;
	if (tx->err && tx->errlen)
		tx->err[0] = '\0';
	tx->buf_len = opts->buf_len ? opts->buf_len : 1 << 20;
	snprintf(tx->ifname, sizeof(tx->ifname), "%s", port->ifname);
	if (!port->addr[0] && port->ifname[0]) {
		if (!strcmp(port->ifname, "-"))
			rc = tx_fail(tx, -EADDRNOTAVAIL,
				     "the port has no netdev: the rail cannot be tested over IP");
		else
			rc = tx_fail(tx, -EADDRNOTAVAIL,
				     "%s has no IP address: the rail's network is not configured "
				     "on this node",
				     port->ifname);
		goto fail;
	}
	if (parse_addr(port->addr, &tx->local, &tx->local_len)) {
		rc = tx_fail(tx, -EINVAL, "bad node address '%s': expected a numeric IP address",
			     port->addr);
		goto fail;
	}
	if (getrandom(tok, sizeof(tok), 0) != (ssize_t)sizeof(tok)) {
		rc = tx_fail(tx, -EIO, "getrandom failed");
		goto fail;
	}
	tx->token_hi = tok[0];
	tx->token_lo = tok[1] & 0xffffff;
	if (tx->dgram && opts->cache) {
		struct dg_share *sh = dg_share_get(*opts->cache, port, opts->sender);

		if (sh) {
			dg_share_take(sh, tx);
			tx->udp_fd = sh->udp_fd;
			tx->udp_port = sh->udp_port;
			tx->local = sh->local;
			tx->local_len = sh->local_len;
			*out = tx;
			return 0;
		}
	}
	if (tx->dgram) { /* no TCP socket at all: the probes come to the UDP one */
		rc = dgram_open(tx, port);
		if (rc)
			goto fail;
		dg_share_new(tx, opts->cache, port, opts->sender);
		*out = tx;
		return 0;
	}
	/*
	 * A sender needs no listener (nobody connects to it: the peers'
	 * probes go to the receivers'): its data socket is bound now, to the
	 * rail's netdev and address, and connects later.
	 */
	fd = socket(tx->local.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (opts->sender)
		tx->bound_fd = fd;
	else
		tx->listen_fd = fd;
	if (fd >= 0 && (rc = bind_dev(tx, fd)) < 0) {
		rc = tx_fail(tx, rc, "data %s on %s: bind to %s: %s",
			     opts->sender ? "socket" : "listener", port->addr, tx->ifname,
			     strerror(-rc));
		goto fail;
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&tx->local, tx->local_len) ||
	    (!opts->sender && listen(fd, 32)) || /* room for the peers' cross-rail probes */
	    getsockname(fd, (struct sockaddr *)&tx->local, &tx->local_len)) {
		rc = tx_fail(tx, -errno, "data %s on %s: %s", opts->sender ? "socket" : "listener",
			     port->addr, strerror(errno));
		goto fail;
	}
	*out = tx;
	return 0;
fail:
	socket_close(tx);
	return rc;
}

static int socket_endpoint(struct ibp_tx *tx, struct ibp_endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->kind = IBP_TX_SOCKET;
	ep->link_layer = IBP_LL_UNKNOWN;
	ep->rkey = tx->token_hi;
	ep->qpn = tx->token_lo;
	ep->buf_len = tx->buf_len;
	if (tx->local.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&tx->local;

		ep->gid[10] = ep->gid[11] = 0xff;
		memcpy(ep->gid + 12, &a->sin_addr, 4);
		ep->tcp_port = ntohs(a->sin_port);
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&tx->local;

		memcpy(ep->gid, &a->sin6_addr, 16);
		ep->tcp_port = ntohs(a->sin6_port);
	}
	if (tx->dgram)
		ep->psn = tx->udp_port;
	return 0;
}

static void ep_addr(const struct ibp_endpoint *ep, struct sockaddr_storage *ss, socklen_t *len)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(ep->gid, v4mapped, 12)) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		memcpy(&a->sin_addr, ep->gid + 12, 4);
		a->sin_port = htons(ep->tcp_port);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		memcpy(&a->sin6_addr, ep->gid, 16);
		a->sin6_port = htons(ep->tcp_port);
		*len = sizeof(*a);
	}
}

/* A datagram endpoint's UDP address: its IP and its UDP port (psn, 1..65535, checked by the caller). */
static void ep_udp_addr(const struct ibp_endpoint *ep, struct sockaddr_storage *ss, socklen_t *len)
{
	ep_addr(ep, ss, len);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)ep->psn);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)ep->psn);
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* Best effort: only the latency figure depends on it. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The token the sender presents: the receiver's, from its endpoint (rkey, qpn). */
static void token_of(const struct ibp_endpoint *peer, uint8_t token[8])
{
	for (int i = 0; i < 4; i++) {
		token[i] = (uint8_t)(peer->rkey >> (24 - 8 * i));
		token[4 + i] = (uint8_t)(peer->qpn >> (24 - 8 * i));
	}
}

/*
 * The sender's data socket (bound at open, or here) with its connect to
 * PEER started: *FDP, and 0 when the connect is under way or done; or
 * -errno with the reason said (nothing left open).
 */
static int sender_start(struct ibp_tx *tx, const struct ibp_endpoint *peer, char *where,
			size_t wlen, int *fdp)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, rc;

	*fdp = -1;
	ep_addr(peer, &ss, &len);
	addr_text(&ss, where, wlen);
	fd = tx->bound_fd; /* bound at open to the rail's netdev and address */
	tx->bound_fd = -1;
	if (fd >= 0 && ss.ss_family != tx->local.ss_family) { /* the peer's is another family */
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return tx_fail(tx, -errno, "socket: %s", strerror(errno));
		rc = bind_dev(tx, fd);
		if (rc) {
			close(fd);
			return tx_fail(tx, rc, "bind to %s before connect %s: %s", tx->ifname,
				       where, strerror(-rc));
		}
		/* Bind to our node address: the traffic must use the interface under test. */
		if (ss.ss_family == tx->local.ss_family) {
			struct sockaddr_storage src = tx->local;

			if (src.ss_family == AF_INET)
				((struct sockaddr_in *)&src)->sin_port = 0;
			else
				((struct sockaddr_in6 *)&src)->sin6_port = 0;
			if (bind(fd, (struct sockaddr *)&src, tx->local_len)) {
				rc = tx_fail(tx, -errno, "bind before connect %s: %s", where,
					     strerror(errno));
				close(fd);
				return rc;
			}
		}
	}
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		rc = tx_fail(tx, -errno, "connect %s: %s", where, strerror(errno));
		close(fd);
		return rc;
	}
	*fdp = fd;
	return 0;
}

static int connect_sender(struct ibp_tx *tx, const struct ibp_endpoint *peer, int64_t deadline)
{
	char where[80];
	uint8_t token[8];
	int fd, rc, soerr = 0;
	socklen_t sl = sizeof(soerr);

	rc = sender_start(tx, peer, where, sizeof(where), &fd);
	if (rc)
		return rc;
	rc = ibp_oob_wait_fd(fd, POLLOUT, deadline);
	if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
		soerr = errno;
	if (!rc && soerr)
		rc = -soerr;
	if (rc) {
		tx_fail(tx, rc, "connect %s: %s", where, strerror(-rc));
		close(fd);
		return rc;
	}
	token_of(peer, token);
	rc = ibp_oob_write_full(fd, token, sizeof(token), deadline);
	if (rc) {
		tx_fail(tx, rc, "data connection %s: %s", where, strerror(-rc));
		close(fd);
		return rc;
	}
	set_nodelay(fd);
	tx->data_fd = fd;
	return 0;
}

/* The token this receiver wants from its sender. */
static void own_token(const struct ibp_tx *tx, uint8_t want[8])
{
	for (int i = 0; i < 4; i++) {
		want[i] = (uint8_t)(tx->token_hi >> (24 - 8 * i));
		want[4 + i] = (uint8_t)(tx->token_lo >> (24 - 8 * i));
	}
}

/*
 * The receiver takes the first connection that presents its token before
 * the deadline; strangers are closed.  Each candidate gets at most a
 * quarter of a second to present it, so a silent stranger cannot hold the
 * slot.
 */
static int connect_receiver(struct ibp_tx *tx, int64_t deadline)
{
	uint8_t want[8], got[8];

	own_token(tx, want);
	for (;;) {
		int rc = ibp_oob_wait_fd(tx->listen_fd, POLLIN, deadline);
		int fd;

		if (rc)
			return tx_fail(tx, rc, "no data connection from the sender: %s",
				       strerror(-rc));
		fd = accept4(tx->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				continue;
			return tx_fail(tx, -errno, "accept: %s", strerror(errno));
		}
		rc = ibp_oob_read_full(
		    fd, got, sizeof(got),
		    ibp_deadline_min(deadline, ibp_now_ns() + 250 * IBP_NS_PER_MS));
		if (!rc && !memcmp(got, want, sizeof(want))) {
			set_nodelay(fd);
			tx->data_fd = fd;
			return 0;
		}
		close(fd);
	}
}

static void socket_steps(struct ibp_tx_step *v, size_t n);

/* A datagram tx's op: its one step through the poll loop (what steps does for many). */
static int dgram_one(struct ibp_tx *tx, enum ibp_tx_step_kind kind, enum ibp_tx_role role,
		     const struct ibp_endpoint *peer, uint64_t seed, size_t len, int64_t deadline,
		     uint64_t *ns, size_t *bad)
{
	struct ibp_tx_step s = {.tx = tx,
				.kind = kind,
				.role = role,
				.peer = peer,
				.seed = seed,
				.len = len,
				.iters = 1,
				.deadline = deadline};

	socket_steps(&s, 1);
	if (ns)
		*ns = s.ns;
	if (bad)
		*bad = s.bad;
	return s.rc;
}

static int socket_connect(struct ibp_tx *tx, const struct ibp_endpoint *peer, enum ibp_tx_role role,
			  int64_t deadline)
{
	if (tx->dgram) /* no pattern with it: send_pattern exchanges one */
		return dgram_one(tx, IBP_TX_STEP_CONNECT, role, peer, 0, 0, deadline, NULL, NULL);
	if (peer->kind != IBP_TX_SOCKET)
		return tx_fail(tx, -EPROTO, "peer endpoint is not a socket endpoint (kind %u)",
			       peer->kind);
	if (tx->data_fd >= 0)
		return tx_fail(tx, -EISCONN, "already connected");
	return role == IBP_TX_SENDER ? connect_sender(tx, peer, deadline)
				     : connect_receiver(tx, deadline);
}

static int io_fail(struct ibp_tx *tx, int rc, const char *what)
{
	return tx_fail(tx, rc, "%s: %s", what,
		       rc == -ECONNRESET ? "connection closed by the peer" : strerror(-rc));
}

static int socket_send_pattern(struct ibp_tx *tx, uint64_t seed, size_t len, int64_t deadline)
{
	uint8_t chunk[CHUNK];

	if (tx->dgram)
		return dgram_one(tx, IBP_TX_STEP_PATTERN, IBP_TX_SENDER, NULL, seed, len, deadline,
				 NULL, NULL);

	if (len > tx->buf_len)
		return tx_fail(tx, -EINVAL, "pattern of %zu bytes, buffer %zu", len, tx->buf_len);
	for (size_t off = 0; off < len;) {
		size_t n = len - off < sizeof(chunk) ? len - off : sizeof(chunk);
		int rc;

		ibp_pattern_fill_at(chunk, off, n, seed);
		rc = ibp_oob_write_full(tx->data_fd, chunk, n, deadline);
		if (rc)
			return io_fail(tx, rc, "sending the pattern");
		off += n;
	}
	return 0;
}

static int socket_recv_pattern(struct ibp_tx *tx, uint64_t seed, size_t len, int64_t deadline,
			       size_t *bad_offset)
{
	uint8_t chunk[CHUNK];

	*bad_offset = 0;

	if (tx->dgram)
		return dgram_one(tx, IBP_TX_STEP_PATTERN, IBP_TX_RECEIVER, NULL, seed, len,
				 deadline, NULL, bad_offset);
	if (len > tx->buf_len)
		return tx_fail(tx, -EINVAL, "pattern of %zu bytes, buffer %zu", len, tx->buf_len);
	for (size_t off = 0; off < len;) {
		size_t n = len - off < sizeof(chunk) ? len - off : sizeof(chunk), bad;
		int rc = ibp_oob_read_full(tx->data_fd, chunk, n, deadline);

		if (rc)
			return io_fail(tx, rc, "receiving the pattern");
		bad = ibp_pattern_check_at(chunk, off, n, seed);
		if (bad < n) {
			*bad_offset = off + bad;
			return tx_fail(tx, -EBADMSG, "pattern differs at byte %zu of %zu",
				       off + bad, len);
		}
		off += n;
	}
	return 0;
}

static int socket_bw_send(struct ibp_tx *tx, uint64_t bytes, int64_t deadline, uint64_t *ns)
{
	int64_t t0 = ibp_now_ns();
	uint8_t ack;
	int rc;

	if (tx->dgram)
		return dgram_one(tx, IBP_TX_STEP_BURST, IBP_TX_SENDER, NULL, 0, 0, deadline, ns,
				 NULL);

	for (uint64_t left = bytes; left;) {
		size_t n = left < CHUNK ? (size_t)left : CHUNK;

		rc = ibp_oob_write_full(tx->data_fd, zeros, n, deadline);
		if (rc)
			return io_fail(tx, rc, "bandwidth burst");
		left -= n;
	}
	rc = ibp_oob_read_full(tx->data_fd, &ack, 1, deadline);
	if (rc)
		return io_fail(tx, rc, "bandwidth acknowledgement");
	*ns = (uint64_t)(ibp_now_ns() - t0);
	return 0;
}

static int socket_bw_recv(struct ibp_tx *tx, uint64_t bytes, int64_t deadline)
{
	uint8_t chunk[CHUNK], ack = 1;
	int rc;

	if (tx->dgram)
		return dgram_one(tx, IBP_TX_STEP_BURST, IBP_TX_RECEIVER, NULL, 0, 0, deadline, NULL,
				 NULL);

	for (uint64_t left = bytes; left;) {
		size_t n = left < sizeof(chunk) ? (size_t)left : sizeof(chunk);

		rc = ibp_oob_read_full(tx->data_fd, chunk, n, deadline);
		if (rc)
			return io_fail(tx, rc, "bandwidth burst");
		left -= n;
	}
	rc = ibp_oob_write_full(tx->data_fd, &ack, 1, deadline);
	return rc ? io_fail(tx, rc, "bandwidth acknowledgement") : 0;
}

static int socket_lat_ping(struct ibp_tx *tx, unsigned iters, int64_t deadline, uint64_t *ns)
{
	uint64_t rt[64] = {0};
	unsigned n = iters > 64 ? 64 : (iters ? iters : 1);

	if (tx->dgram)
		return dgram_one(tx, IBP_TX_STEP_RTT, IBP_TX_SENDER, NULL, 0, 0, deadline, ns,
				 NULL);

	for (unsigned i = 0; i < n; i++) {
		uint8_t msg[LAT_MSG], back[LAT_MSG];
		int64_t t0 = ibp_now_ns();
		int rc;

		memset(msg, (int)i, sizeof(msg));
		rc = ibp_oob_write_full(tx->data_fd, msg, sizeof(msg), deadline);
		if (!rc)
			rc = ibp_oob_read_full(tx->data_fd, back, sizeof(back), deadline);
		if (rc)
			return io_fail(tx, rc, "latency ping");
		if (memcmp(msg, back, sizeof(msg)) != 0)
			return tx_fail(tx, -EBADMSG, "latency ping %u came back altered", i);
		rt[i] = (uint64_t)(ibp_now_ns() - t0);
	}
	*ns = ibp_median_ns(rt, n);
	return 0;
}

static int socket_lat_pong(struct ibp_tx *tx, unsigned iters, int64_t deadline)
{
	unsigned n = iters > 64 ? 64 : (iters ? iters : 1);

	if (tx->dgram)
		return dgram_one(tx, IBP_TX_STEP_RTT, IBP_TX_RECEIVER, NULL, 0, 0, deadline, NULL,
				 NULL);

	for (unsigned i = 0; i < n; i++) {
		uint8_t msg[LAT_MSG];
		int rc = ibp_oob_read_full(tx->data_fd, msg, sizeof(msg), deadline);

		if (!rc)
			rc = ibp_oob_write_full(tx->data_fd, msg, sizeof(msg), deadline);
		if (rc)
			return io_fail(tx, rc, "latency pong");
	}
	return 0;
}

/* A datagram probe PR from rail FROM_RAIL to TO, of rail TO_RAIL: its token and a fresh nonce. */
static int probe_prepare(struct ibp_tx_probe *pr, const struct ibp_endpoint *to, unsigned to_rail,
			 unsigned from_rail)
{
	pr->rail = to_rail;
	pr->from_rail = from_rail;
	token_of(to, pr->token);
	return getrandom(pr->nonce, sizeof(pr->nonce), 0) == (ssize_t)sizeof(pr->nonce) ? 0 : -EIO;
}

/*
 * PR's datagram to its addressee over FD (to ADDR, or FD's connected peer
 * when NULL): the PROBE naming its token, with the nonce.  0 (sent, or
 * dropped here: a datagram's fate anyway), or -errno.
 */
static int probe_send(const struct ibp_tx_probe *pr, int fd, const struct sockaddr_storage *addr,
		      socklen_t alen)
{
	uint8_t buf[DG_HDR];
	size_t n = ibp_tx_dgram_encode(buf, sizeof(buf), DG_PROBE, pr->from_rail, 0, pr->token,
				       pr->nonce, NULL, 0);

	if (!n)
		return -EINVAL;
	if (sendto(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)addr,
		   addr ? alen : 0) == (ssize_t)n)
		return 0;
	return errno == EAGAIN || errno == ENOBUFS || errno == EINTR ? 0 : -errno;
}

/* Is the datagram (TYPE, RAIL, TO, BY) PR's answer: from its rail, echoing its nonce and token? */
static bool probe_answer_is(const struct ibp_tx_probe *pr, unsigned type, unsigned rail,
			    const uint8_t to[8], const uint8_t by[8])
{
	return type == DG_PROBE_REPLY && rail == pr->rail && !memcmp(to, pr->nonce, 8) &&
	       !memcmp(by, pr->token, 8);
}

static int socket_probe(const struct ibp_tx_port *from, const struct ibp_endpoint *to,
			unsigned to_rail, struct ibp_tx_probe *pr)
{
	struct ibp_tx tx = {.listen_fd = -1, .data_fd = -1};
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, rc;

	memset(pr, 0, sizeof(*pr));
	pr->fd = -1;
	snprintf(tx.ifname, sizeof(tx.ifname), "%s", from->ifname);
	if (!from->addr[0] || parse_addr(from->addr, &tx.local, &tx.local_len))
		return -EADDRNOTAVAIL;
	if (to->kind != IBP_TX_SOCKET || to->psn > 0xffff)
		return -EPROTO;
	pr->dgram = to->psn != 0; /* a datagram receiver: its UDP socket answers */
	if (pr->dgram)
		ep_udp_addr(to, &ss, &len);
	else
		ep_addr(to, &ss, &len);
	if (ss.ss_family != tx.local.ss_family)
		return -EAFNOSUPPORT;
	if (pr->dgram && probe_prepare(pr, to, to_rail, from->rail))
		return -EIO;
	fd = socket(ss.ss_family,
		    (pr->dgram ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Only through FROM's own port: unbound, routing would pick the peer's rail. */
	if (!tx.ifname[0] || setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, tx.ifname,
					(socklen_t)strlen(tx.ifname) + 1)) {
		rc = tx.ifname[0] ? -errno : -ENODEV;
		close(fd);
		return rc;
	}
	if (tx.local.ss_family == AF_INET)
		((struct sockaddr_in *)&tx.local)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&tx.local)->sin6_port = 0;
	/*
	 * A connected UDP socket takes datagrams from the addressee alone, and
	 * an ICMP error (the probe came in on a netdev where no socket of that
	 * port is bound) reads back as ECONNREFUSED, as a TCP reset would.
	 */
	if (bind(fd, (struct sockaddr *)&tx.local, tx.local_len) ||
	    (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	pr->fd = fd;
	if (!pr->dgram) {
		pr->events = POLLOUT;
		return 0;
	}
	pr->events = POLLIN;
	rc = probe_send(pr, fd, NULL, 0);
	if (rc) {
		close(fd);
		pr->fd = -1;
		return rc;
	}
	pr->again_at = ibp_now_ns() + DG_PROBE_AGAIN_MS * IBP_NS_PER_MS;
	return 0;
}

static int socket_probe_check(struct ibp_tx_probe *pr, int64_t now)
{
	uint8_t buf[DG_HDR + 1];

	if (!pr->dgram) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (getsockopt(pr->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
			return -errno;
		return soerr ? -soerr : 1;
	}
	for (;;) {
		uint8_t to[8], by[8];
		const uint8_t *pat;
		unsigned type, rail;
		uint32_t seq;
		size_t len;
		ssize_t m = recv(pr->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (m < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			break;
		if (m < 0)
			return -errno; /* ECONNREFUSED: in on another netdev; unreachable */
		if (!ibp_tx_dgram_decode(buf, (size_t)m, &type, &rail, &seq, to, by, &pat, &len) &&
		    probe_answer_is(pr, type, rail, to, by))
			return 1;
		/* anything else from there: not the answer */
	}
	if (pr->again_at && now >= pr->again_at) { /* once more: a datagram can be lost */
		pr->again_at = 0;
		(void)probe_send(pr, pr->fd, NULL,
				 0); /* failing, the first one's answer may still come */
	}
	return 0;
}

/*
 * A cross-rail probe from a datagram sender's own socket (transport.h,
 * probe_along): the peer's receiver TO answers it from its socket as any
 * probe; the answer comes to TX's socket and is taken as it reads its
 * datagrams (dgram_recv_one).
 */
static int socket_probe_along(struct ibp_tx *tx, const struct ibp_endpoint *to, unsigned to_rail)
{
	int rc;

	if (!tx || !tx->dgram || tx->rx || tx->udp_fd < 0 || to->kind != IBP_TX_SOCKET ||
	    !to->psn || to->psn > 0xffff)
		return -EINVAL;
	ep_udp_addr(to, &tx->pa_addr, &tx->pa_len);
	if (tx->pa_addr.ss_family != tx->local.ss_family)
		return -EAFNOSUPPORT;
	if (probe_prepare(&tx->pa, to, to_rail, tx->rail))
		return -EIO;
	rc = probe_send(&tx->pa, tx->udp_fd, &tx->pa_addr, tx->pa_len);
	if (rc)
		return rc;
	tx->pa_state = 1;
	return 0;
}

static void socket_idle(struct ibp_tx *tx);

static int socket_probe_along_result(struct ibp_tx *tx)
{
	if (!tx || !tx->pa_state)
		return 0;
	if (tx->pa_state == 1)
		socket_idle(tx); /* what came since the last read */
	return tx->pa_state == 2 ? 1 : 0;
}

/* ---- every rail's step of a phase at once: one poll loop (ops->steps) ---- */

enum {
	S_START,
	S_CONNECTING, /* sender: the connect under way (POLLOUT) */
	S_TOKEN_OUT,  /* sender: the token */
	S_ACCEPT,     /* receiver: the listener (POLLIN) */
	S_TOKEN_IN,   /* receiver: a candidate's token, a quarter of a second at most */
	S_OUT,        /* pattern, burst: the bytes out */
	S_IN,         /* pattern, burst: the bytes in */
	S_ACK_IN,     /* burst sender: the acknowledgement */
	S_ACK_OUT,    /* burst receiver: the acknowledgement */
	S_PING_OUT,   /* round trips: this one's message out */
	S_PING_IN,    /* round trips: this one's message in */
	S_DG_HELLO,   /* datagram sender: the HELLO out, the REPLY awaited (sent again) */
	S_DG_WAIT,    /* datagram receiver: the HELLO awaited */
	S_DONE,
};

/* The first retry of a HELLO (then doubling, to DG_RETRY_MAX) */
#define DG_RETRY_MS     100
#define DG_RETRY_MAX_MS 400

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

size_t ibp_tx_dgram_encode(uint8_t *buf, size_t cap, unsigned type, unsigned rail, uint32_t seq,
			   const uint8_t to[8], const uint8_t from[8], const uint8_t *pat,
			   size_t len)
{
	if (len > IBP_TX_DGRAM_PATTERN || (type != DG_HELLO && len) || cap < DG_HDR + len ||
	    rail > 255)
		return 0;
	put_be(buf, DG_MAGIC, 4);
	buf[4] = (uint8_t)type;
	buf[5] = (uint8_t)rail;
	put_be(buf + 6, len, 2);
	put_be(buf + 8, seq, 4);
	memcpy(buf + 12, to, 8);
	memcpy(buf + 20, from, 8);
	if (len)
		memcpy(buf + DG_HDR, pat, len);
	return DG_HDR + len;
}

int ibp_tx_dgram_decode(const uint8_t *buf, size_t n, unsigned *type, unsigned *rail, uint32_t *seq,
			uint8_t to[8], uint8_t from[8], const uint8_t **pat, size_t *len)
{
	if (n < DG_HDR || get_be(buf, 4) != DG_MAGIC || buf[4] < DG_HELLO ||
	    buf[4] > DG_PROBE_REPLY || buf[4] == 3)
		return -EBADMSG;
	*type = buf[4];
	*rail = buf[5];
	*len = (size_t)get_be(buf + 6, 2);
	if (*len > IBP_TX_DGRAM_PATTERN || n != DG_HDR + *len || (*type != DG_HELLO && *len))
		return -EBADMSG;
	*seq = (uint32_t)get_be(buf + 8, 4);
	memcpy(to, buf + 12, 8);
	memcpy(from, buf + 20, 8);
	*pat = buf + DG_HDR;
	return 0;
}

static void step_end(struct ibp_tx_step *s, int rc)
{
	if (s->priv.fd >= 0 && s->priv.fd != s->tx->data_fd &&
	    s->priv.fd != s->tx->udp_fd) /* a connection not taken */
		close(s->priv.fd);
	s->priv.fd = -1;
	s->rc = rc;
	s->priv.state = S_DONE;
	if (s->tx->dgram)
		s->tx->idle_ok = true; /* no exchange awaited now */
	if (s->done)
		s->done(s);
}

/* The step failed (RC): the reason its op gives for that stage. */
static void step_fail(struct ibp_tx_step *s, int rc)
{
	struct ibp_tx *tx = s->tx;
	bool out = s->role == IBP_TX_SENDER;

	switch (s->priv.state) {
	case S_CONNECTING:
		tx_fail(tx, rc, "connect %s: %s", s->priv.where, strerror(-rc));
		break;
	case S_DG_HELLO:
		tx_fail(tx, rc, "datagram to %s: %s", dg_where(s),
			rc == -ETIMEDOUT ? "no answer (sent again while the deadline held)"
					 : strerror(-rc));
		break;
	case S_DG_WAIT:
		tx_fail(tx, rc, "no datagram from the sender %s: %s", dg_where(s), strerror(-rc));
		break;
	case S_TOKEN_OUT:
		tx_fail(tx, rc, "data connection %s: %s", s->priv.where, strerror(-rc));
		break;
	case S_ACCEPT:
	case S_TOKEN_IN:
		tx_fail(tx, rc, "no data connection from the sender: %s", strerror(-rc));
		break;
	case S_OUT:
	case S_IN:
		io_fail(tx, rc,
			s->kind == IBP_TX_STEP_BURST ? "bandwidth burst"
			: out                        ? "sending the pattern"
						     : "receiving the pattern");
		break;
	case S_ACK_IN:
	case S_ACK_OUT:
		io_fail(tx, rc, "bandwidth acknowledgement");
		break;
	default:
		io_fail(tx, rc, out ? "latency ping" : "latency pong");
		break;
	}
	step_end(s, rc);
}

/* -errno of a send or recv that did not move bytes, 0 when it would block. */
static int io_errno(ssize_t n)
{
	if (n == 0)
		return -ECONNRESET;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return errno == EPIPE ? -ECONNRESET : -errno;
}

#define STEP_SEND(fd, p, n) send((fd), (p), (n), MSG_NOSIGNAL | MSG_DONTWAIT)
#define STEP_RECV(fd, p, n) recv((fd), (p), (n), MSG_DONTWAIT)

/* ---- a datagram tx's steps ---- */

/* TYPE to the peer's UDP address: 0 (sent, or dropped here: sent again later), or -errno. */
static int dgram_send(struct ibp_tx_step *s, unsigned type)
{
	struct ibp_tx *tx = s->tx;
	uint8_t buf[DG_HDR + IBP_TX_DGRAM_PATTERN], me[8];
	size_t n;

	own_token(tx, me);
	n = ibp_tx_dgram_encode(buf, sizeof(buf), type, tx->rail, tx->xchg, tx->peer_token, me,
				tx->pat, type == DG_HELLO ? tx->pat_len : 0);
	if (!n)
		return -EINVAL;
	if (sendto(tx->udp_fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL,
		   (const struct sockaddr *)&tx->peer_udp, tx->peer_udp_len) == (ssize_t)n)
		return 0;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR)
		return 0;
	return -errno;
}

/* The sender's HELLO, first or again; the next try after twice the wait. */
static void dgram_hello(struct ibp_tx_step *s)
{
	int64_t now = ibp_now_ns(), wait = (int64_t)DG_RETRY_MS << (s->priv.i < 3 ? s->priv.i : 3);
	int rc;

	if (wait > DG_RETRY_MAX_MS)
		wait = DG_RETRY_MAX_MS;
	s->priv.i++;
	s->priv.t0 = now;
	s->priv.until = ibp_deadline_min(s->deadline, now + wait * IBP_NS_PER_MS);
	rc = dgram_send(s, DG_HELLO);
	if (rc)
		step_fail(s, rc);
}

/* Is SS (LEN) the address P (PLEN), port included? */
static bool same_addr(const struct sockaddr_storage *ss, socklen_t len,
		      const struct sockaddr_storage *p, socklen_t plen)
{
	if (ss->ss_family != p->ss_family || len < plen)
		return false;
	if (p->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss, *b = (const void *)p;

		return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *a = (const void *)ss, *b = (const void *)p;

	return a->sin6_port == b->sin6_port &&
	       !memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr));
}

/* Is SS (LEN) the peer's UDP address, port included? */
static bool dgram_from_peer(const struct ibp_tx *tx, const struct sockaddr_storage *ss,
			    socklen_t len)
{
	return same_addr(ss, len, &tx->peer_udp, tx->peer_udp_len);
}

/* The pattern that came against the one PATTERN_SENT told (S: SEED, LEN): 0 or -EBADMSG. */
static int dgram_check(struct ibp_tx_step *s)
{
	struct ibp_tx *tx = s->tx;

	s->bad = 0;
	if (tx->pat_len != s->len) {
		s->bad = tx->pat_len < s->len ? tx->pat_len : s->len;
		return tx_fail(tx, -EBADMSG, "a pattern of %zu bytes came, %zu expected",
			       tx->pat_len, s->len);
	}
	s->bad = ibp_pattern_check(tx->pat, s->len, s->seed);
	if (s->bad < s->len)
		return tx_fail(tx, -EBADMSG, "pattern differs at byte %zu of %zu", s->bad, s->len);
	s->bad = 0;
	return 0;
}

/* A receiver's exchange is over (its REPLY sent). */
static void dgram_over(struct ibp_tx_step *s)
{
	step_end(s, s->kind == IBP_TX_STEP_PATTERN ? dgram_check(s) : 0);
}

/* One datagram that passed the checks: what it does to the step. */
static void dgram_take(struct ibp_tx_step *s, unsigned type, unsigned rail, const uint8_t *pat,
		       size_t len)
{
	struct ibp_tx *tx = s->tx;
	int rc;

	if (s->priv.state == S_DG_HELLO && type == DG_REPLY) {
		tx->rtt_ns = (uint64_t)(ibp_now_ns() - s->priv.t0);
		s->ns = s->kind == IBP_TX_STEP_RTT ? tx->rtt_ns : 0;
		if (rail != tx->rail) {
			step_end(s, tx_fail(tx, -EPROTO,
					    "datagram to %s: answered by the peer's rail %u port, "
					    "expected its rail %u",
					    dg_where(s), rail, tx->rail));
			return;
		}
		step_end(s, 0);
		return;
	}
	if (s->priv.state == S_DG_WAIT && type == DG_HELLO) {
		if (s->kind == IBP_TX_STEP_CONNECT || s->kind == IBP_TX_STEP_PATTERN) {
			memcpy(tx->pat, pat, len); /* checked by PATTERN */
			tx->pat_len = len;
			tx->carried = len > 0;
		}
		rc = dgram_send(s, DG_REPLY); /* lost: the HELLO comes again */
		if (rail != tx->rail) {
			step_end(s,
				 tx_fail(tx, -EPROTO,
					 "datagram from %s: the sender's rail %u, expected rail %u",
					 dg_where(s), rail, tx->rail));
			return;
		}
		if (rc) {
			step_fail(s, rc);
			return;
		}
		/*
		 * No FIN: the exchange is over for this end.  A lost REPLY
		 * brings the HELLO again, which idle answers while the link
		 * waits for the sender's next control frame (sent only once
		 * the REPLY came).
		 */
		tx->answering = true;
		dgram_over(s);
		return;
	}
	/* authentic but out of place (a duplicate): dropped */
}

/*
 * A peer's cross-rail probe that came to this receiver's socket, so in
 * through its rail's netdev (bound to it): answered from it to where it
 * came from when it names this tx's token or an earlier round's of the
 * same socket, at most DG_PROBE_ANSWERS times per socket; anything else
 * dropped unanswered.
 */
static void dgram_probe_answer(struct ibp_tx *tx, const struct sockaddr_storage *from,
			       socklen_t flen, const uint8_t to[8], const uint8_t nonce[8])
{
	unsigned *answered = tx->share ? &tx->share->probe_answers : &tx->probe_answers;
	uint8_t me[8], buf[DG_HDR];
	bool known;
	size_t n;

	if (!tx->rx || *answered >= DG_PROBE_ANSWERS || from->ss_family != tx->local.ss_family)
		return;
	own_token(tx, me);
	known = !memcmp(to, me, 8);
	for (unsigned i = 0; tx->share && !known && i < tx->share->n_tok && i < DG_SHARE_TOKENS;
	     i++)
		known = !memcmp(to, tx->share->tok[i], 8);
	if (!known)
		return;
	n = ibp_tx_dgram_encode(buf, sizeof(buf), DG_PROBE_REPLY, tx->rail, 0, nonce, to, NULL, 0);
	if (n && sendto(tx->udp_fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL,
			(const struct sockaddr *)from, flen) == (ssize_t)n)
		(*answered)++;
}

enum { DG_NONE_LEFT, DG_DROPPED, DG_OURS };

/*
 * One datagram off TX's socket into BUF (CAP), checked: DG_NONE_LEFT;
 * DG_DROPPED, a stranger's, forged, malformed or another exchange's (never
 * answered), or a probe (answered when authentic); DG_OURS, one of this
 * link's exchange from the peer's address with both tokens, its fields out.
 * The one gate every datagram a tx reads goes through.
 */
static int dgram_recv_one(struct ibp_tx *tx, uint8_t *buf, size_t cap, unsigned *type,
			  unsigned *rail, const uint8_t **pat, size_t *len)
{
	struct sockaddr_storage from;
	socklen_t flen = sizeof(from);
	uint8_t to[8], by[8], me[8];
	uint32_t seq;
	ssize_t m;

	memset(&from, 0, sizeof(from));
	m = recvfrom(tx->udp_fd, buf, cap, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
	if (m < 0)
		return DG_NONE_LEFT; /* (or an ICMP error's report: the next try) */
	if (ibp_tx_dgram_decode(buf, (size_t)m, type, rail, &seq, to, by, pat, len))
		return DG_DROPPED;
	if (*type == DG_PROBE) {
		dgram_probe_answer(tx, &from, flen, to, by);
		return DG_DROPPED;
	}
	if (*type == DG_PROBE_REPLY) { /* probe_along's answer, from where it went */
		if (tx->pa_state == 1 && same_addr(&from, flen, &tx->pa_addr, tx->pa_len) &&
		    probe_answer_is(&tx->pa, *type, *rail, to, by))
			tx->pa_state = 2;
		return DG_DROPPED;
	}
	own_token(tx, me);
	if (!dgram_from_peer(tx, &from, flen) || memcmp(to, me, 8) != 0 ||
	    memcmp(by, tx->peer_token, 8) != 0 || seq != tx->xchg)
		return DG_DROPPED;
	return DG_OURS;
}

/* Every datagram waiting on the step's socket, checked and taken, until none is left or it ends. */
static void dgram_read(struct ibp_tx_step *s)
{
	struct ibp_tx *tx = s->tx;
	uint8_t buf[DG_HDR + IBP_TX_DGRAM_PATTERN + 1];

	while (s->priv.state != S_DONE) {
		const uint8_t *pat;
		unsigned type, rail;
		size_t len;
		int got = dgram_recv_one(tx, buf, sizeof(buf), &type, &rail, &pat, &len);

		if (got == DG_NONE_LEFT)
			return;
		if (got == DG_OURS)
			dgram_take(s, type, rail, pat, len);
	}
}

/* The socket idle wants polled (POLLIN) while the caller waits elsewhere, or -1 (transport.h). */
static int socket_idle_fd(const struct ibp_tx *tx)
{
	return tx && tx->dgram && (tx->rx || tx->pa_state == 1) && tx->idle_ok && tx->udp_fd >= 0 &&
		       (!tx->share || tx->share->owner == tx)
		   ? tx->udp_fd
		   : -1;
}

/*
 * A receiver between exchanges, or after its link: every waiting datagram
 * read; the peer's HELLO of the exchange it answered (its REPLY was lost)
 * answered again, a probe answered, everything else dropped, as dgram_read
 * would.
 */
static void socket_idle(struct ibp_tx *tx)
{
	uint8_t buf[DG_HDR + IBP_TX_DGRAM_PATTERN + 1];
	struct ibp_tx_step s = {.tx = tx};

	if (socket_idle_fd(tx) < 0)
		return;
	for (;;) {
		const uint8_t *pat;
		unsigned type, rail;
		size_t len;
		int got = dgram_recv_one(tx, buf, sizeof(buf), &type, &rail, &pat, &len);

		if (got == DG_NONE_LEFT)
			return;
		if (got == DG_OURS && tx->rx && tx->answering && type == DG_HELLO &&
		    rail == tx->rail)
			(void)dgram_send(&s, DG_REPLY);
	}
}

/*
 * An exchange begins: the sender's HELLO (the step's pattern, if any: its
 * SEED and LEN), the receiver's wait for it.
 */
static void dgram_exchange(struct ibp_tx_step *s, bool out)
{
	struct ibp_tx *tx = s->tx;

	s->priv.fd = tx->udp_fd;
	tx->answering = false; /* a new exchange: the last one's HELLOs are duplicates */
	tx->idle_ok = false;
	s->priv.where[0] = '\0'; /* dg_where, when a message needs it */
	if (!out) {
		s->priv.state = S_DG_WAIT;
		return;
	}
	if (s->kind == IBP_TX_STEP_RTT) {
		tx->pat_len = 0;
	} else {
		if (s->len > IBP_TX_DGRAM_PATTERN || s->len > tx->buf_len) {
			step_end(s, tx_fail(tx, -EINVAL,
					    "pattern of %zu bytes, at most %u by datagram", s->len,
					    IBP_TX_DGRAM_PATTERN));
			return;
		}
		ibp_pattern_fill(tx->pat, s->len, s->seed);
		tx->pat_len = s->len;
		if (s->kind == IBP_TX_STEP_CONNECT)
			tx->carried = s->len > 0;
	}
	s->priv.state = S_DG_HELLO;
	dgram_hello(s);
}

/* A datagram tx's step begins: CONNECT exchanges, the others use what it brought. */
static void dgram_start(struct ibp_tx_step *s)
{
	struct ibp_tx *tx = s->tx;
	bool out = s->role == IBP_TX_SENDER;

	if (tx->share && tx->share->owner != tx) { /* a later link of this thread took them */
		step_end(s, tx_fail(tx, -EBUSY,
				    "datagram socket of rail %u taken by another link "
				    "of this thread",
				    tx->rail));
		return;
	}
	switch (s->kind) {
	case IBP_TX_STEP_CONNECT:
		if (s->peer->kind != IBP_TX_SOCKET || !s->peer->psn || s->peer->psn > 0xffff) {
			step_end(s, tx_fail(tx, -EPROTO,
					    "the peer's endpoint has no datagram port (kind %u)",
					    s->peer->kind));
			return;
		}
		ep_udp_addr(s->peer, &tx->peer_udp, &tx->peer_udp_len);
		s->priv.where[0] = '\0';
		if (tx->peer_udp.ss_family != tx->local.ss_family) {
			step_end(s, tx_fail(tx, -EAFNOSUPPORT,
					    "datagram to %s: another address family than %s's",
					    dg_where(s), tx->ifname[0] ? tx->ifname : "ours"));
			return;
		}
		token_of(s->peer, tx->peer_token);
		tx->pat_len = 0;
		tx->carried = false;
		tx->xchg = 1;
		tx->rtts = 0;
		dgram_exchange(s, out);
		return;
	case IBP_TX_STEP_PATTERN:
		if (!tx->xchg) {
			step_end(s, tx_fail(tx, -ENOTCONN, "no datagram exchange yet"));
			return;
		}
		if (tx->carried) { /* it came with the CONNECT */
			step_end(s, out ? 0 : dgram_check(s));
			return;
		}
		tx->xchg++; /* the blocking ops: an exchange of its own */
		dgram_exchange(s, out);
		return;
	case IBP_TX_STEP_BURST: /* no rate over datagrams: the caller reports none */
		step_end(s, 0);
		return;
	case IBP_TX_STEP_RTT:
		if (!tx->xchg) {
			step_end(s, tx_fail(tx, -ENOTCONN, "no datagram exchange yet"));
			return;
		}
		if (tx->rtts++ == 0) { /* the first: CONNECT's exchange, just made */
			s->ns = out ? tx->rtt_ns : 0;
			step_end(s, 0);
			return;
		}
		tx->xchg++; /* measured again: a new exchange, no pattern */
		dgram_exchange(s, out);
		return;
	}
	step_end(s, -EINVAL);
}

static void step_start(struct ibp_tx_step *s)
{
	struct ibp_tx *tx = s->tx;
	bool out = s->role == IBP_TX_SENDER;
	int rc;

	s->rc = 0;
	s->ns = 0;
	s->bad = 0;
	memset(&s->priv, 0, sizeof(s->priv));
	s->priv.fd = -1;
	s->priv.until = s->deadline;
	if (tx->err && tx->errlen)
		tx->err[0] = '\0';
	if (tx->dgram) {
		dgram_start(s);
		return;
	}
	switch (s->kind) {
	case IBP_TX_STEP_CONNECT:
		if (s->peer->kind != IBP_TX_SOCKET) {
			step_end(s, tx_fail(tx, -EPROTO,
					    "peer endpoint is not a socket endpoint (kind %u)",
					    s->peer->kind));
			return;
		}
		if (tx->data_fd >= 0) {
			step_end(s, tx_fail(tx, -EISCONN, "already connected"));
			return;
		}
		if (!out) {
			own_token(tx, s->priv.msg);
			s->priv.state = S_ACCEPT;
			return;
		}
		rc = sender_start(tx, s->peer, s->priv.where, sizeof(s->priv.where), &s->priv.fd);
		if (rc) {
			step_end(s, rc);
			return;
		}
		token_of(s->peer, s->priv.msg);
		s->priv.state = S_CONNECTING;
		return;
	case IBP_TX_STEP_PATTERN:
		if (s->len > tx->buf_len) {
			step_end(s, tx_fail(tx, -EINVAL, "pattern of %zu bytes, buffer %zu", s->len,
					    tx->buf_len));
			return;
		}
		s->priv.fd = tx->data_fd;
		s->priv.state = out ? S_OUT : S_IN;
		return;
	case IBP_TX_STEP_BURST:
		s->priv.fd = tx->data_fd;
		s->priv.t0 = ibp_now_ns();
		s->priv.state = out ? S_OUT : S_IN;
		return;
	case IBP_TX_STEP_RTT:
		s->priv.fd = tx->data_fd;
		s->iters = s->iters > 64 ? 64 : (s->iters ? s->iters : 1);
		s->priv.t0 = ibp_now_ns();
		memset(s->priv.msg, 0, sizeof(s->priv.msg));
		s->priv.state = out ? S_PING_OUT : S_PING_IN;
		return;
	}
	step_end(s, -EINVAL);
}

/* The bytes of a pattern or a burst, out or in, as far as the socket takes them now. */
static void step_data(struct ibp_tx_step *s, uint8_t *chunk)
{
	bool pattern = s->kind == IBP_TX_STEP_PATTERN;
	uint64_t total = pattern ? s->len : s->bytes;

	while (s->priv.off < total) {
		uint64_t left = total - s->priv.off;
		size_t n = left < CHUNK ? (size_t)left : CHUNK;
		ssize_t m;
		int rc;

		if (s->priv.state == S_OUT) {
			if (pattern)
				ibp_pattern_fill_at(chunk, s->priv.off, n, s->seed);
			m = STEP_SEND(s->priv.fd, pattern ? chunk : zeros, n);
		} else {
			m = STEP_RECV(s->priv.fd, chunk, n);
		}
		if (m <= 0) {
			rc = io_errno(m);
			if (rc)
				step_fail(s, rc);
			return;
		}
		if (pattern && s->priv.state == S_IN) {
			size_t bad = ibp_pattern_check_at(chunk, s->priv.off, (size_t)m, s->seed);

			if (bad < (size_t)m) {
				s->bad = s->priv.off + bad;
				step_end(s, tx_fail(s->tx, -EBADMSG,
						    "pattern differs at byte %zu of %zu", s->bad,
						    s->len));
				return;
			}
		}
		s->priv.off += (uint64_t)m;
	}
	if (pattern) {
		step_end(s, 0);
		return;
	}
	s->priv.state = s->priv.state == S_OUT ? S_ACK_IN : S_ACK_OUT;
}

/* Does what the step's sockets take now, stage after stage, until one would block or it ends. */
static void step_advance(struct ibp_tx_step *s, uint8_t *chunk)
{
	if (s->tx->dgram) {
		dgram_read(s);
		return;
	}
	for (;;) {
		int state = s->priv.state, rc, soerr = 0;
		socklen_t sl = sizeof(soerr);
		ssize_t m;
		uint8_t b = 1, back[8];

		switch (state) {
		case S_CONNECTING:
			if (poll(&(struct pollfd){.fd = s->priv.fd, .events = POLLOUT}, 1, 0) <= 0)
				return;
			if (getsockopt(s->priv.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
				soerr = errno;
			if (soerr) {
				step_fail(s, -soerr);
				return;
			}
			s->priv.state = S_TOKEN_OUT;
			break;
		case S_TOKEN_OUT:
			m = STEP_SEND(s->priv.fd, s->priv.msg + s->priv.off, 8 - s->priv.off);
			if (m <= 0) {
				if ((rc = io_errno(m)))
					step_fail(s, rc);
				return;
			}
			s->priv.off += (uint64_t)m;
			if (s->priv.off < 8)
				break;
			set_nodelay(s->priv.fd);
			s->tx->data_fd = s->priv.fd;
			step_end(s, 0);
			return;
		case S_ACCEPT:
			s->priv.fd =
			    accept4(s->tx->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (s->priv.fd < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
				    errno == ECONNABORTED)
					return;
				step_end(s, tx_fail(s->tx, -errno, "accept: %s", strerror(errno)));
				return;
			}
			s->priv.off = 0;
			s->priv.until =
			    ibp_deadline_min(s->deadline, ibp_now_ns() + 250 * IBP_NS_PER_MS);
			s->priv.state = S_TOKEN_IN;
			break;
		case S_TOKEN_IN:
			m = STEP_RECV(s->priv.fd, back, 8 - s->priv.off);
			if (m > 0 && !memcmp(back, s->priv.msg + s->priv.off, (size_t)m)) {
				s->priv.off += (uint64_t)m;
				if (s->priv.off < 8)
					break;
				set_nodelay(s->priv.fd);
				s->tx->data_fd = s->priv.fd;
				step_end(s, 0);
				return;
			}
			if (m < 0 && !io_errno(m))
				return;
			close(s->priv.fd); /* a stranger: the next one */
			s->priv.fd = -1;
			s->priv.until = s->deadline;
			s->priv.state = S_ACCEPT;
			break;
		case S_OUT:
		case S_IN:
			step_data(s, chunk);
			if (s->priv.state == state)
				return; /* would block, or ended */
			break;
		case S_ACK_IN:
		case S_ACK_OUT:
			m = state == S_ACK_IN ? STEP_RECV(s->priv.fd, &b, 1)
					      : STEP_SEND(s->priv.fd, &b, 1);
			if (m <= 0) {
				if ((rc = io_errno(m)))
					step_fail(s, rc);
				return;
			}
			if (state == S_ACK_IN)
				s->ns = (uint64_t)(ibp_now_ns() - s->priv.t0);
			step_end(s, 0);
			return;
		case S_PING_OUT:
			m = STEP_SEND(s->priv.fd, s->priv.msg + s->priv.off, 8 - s->priv.off);
			if (m <= 0) {
				if ((rc = io_errno(m)))
					step_fail(s, rc);
				return;
			}
			s->priv.off += (uint64_t)m;
			if (s->priv.off < 8)
				break;
			s->priv.off = 0;
			if (s->role == IBP_TX_SENDER) {
				s->priv.state = S_PING_IN;
				break;
			}
			if (++s->priv.i == s->iters) { /* the last pong */
				step_end(s, 0);
				return;
			}
			s->priv.state = S_PING_IN;
			break;
		case S_PING_IN:
			if (s->role == IBP_TX_SENDER) { /* the ping's echo, checked as it comes */
				m = STEP_RECV(s->priv.fd, back, 8 - s->priv.off);
				if (m > 0 &&
				    memcmp(back, s->priv.msg + s->priv.off, (size_t)m) != 0) {
					step_end(s, tx_fail(s->tx, -EBADMSG,
							    "latency ping %u came back altered",
							    s->priv.i));
					return;
				}
			} else {
				m = STEP_RECV(s->priv.fd, s->priv.msg + s->priv.off,
					      8 - s->priv.off);
			}
			if (m <= 0) {
				if ((rc = io_errno(m)))
					step_fail(s, rc);
				return;
			}
			s->priv.off += (uint64_t)m;
			if (s->priv.off < 8)
				break;
			s->priv.off = 0;
			s->priv.state = S_PING_OUT;
			if (s->role != IBP_TX_SENDER)
				break;
			s->priv.rt[s->priv.i] = (uint64_t)(ibp_now_ns() - s->priv.t0);
			if (++s->priv.i == s->iters) {
				s->ns = ibp_median_ns(s->priv.rt, s->iters);
				step_end(s, 0);
				return;
			}
			memset(s->priv.msg, (int)s->priv.i, sizeof(s->priv.msg));
			s->priv.t0 = ibp_now_ns();
			break;
		default:
			return;
		}
	}
}

/* What the step waits for: its socket and events. */
static short step_events(const struct ibp_tx_step *s, int *fd)
{
	*fd = s->priv.fd;
	switch (s->priv.state) {
	case S_CONNECTING:
	case S_TOKEN_OUT:
	case S_OUT:
	case S_ACK_OUT:
	case S_PING_OUT:
		return POLLOUT;
	case S_ACCEPT:
		*fd = s->tx->listen_fd;
		return POLLIN;
	default:
		return POLLIN;
	}
}

/*
 * Every step of a phase in one poll loop.  A datagram receiver whose step
 * is over still has its socket polled while the others run (idle): a
 * peer's probe that came in there is answered at once, not after the
 * phase (a crossed rail's landing probes come while the phase waits for
 * that rail).
 */
static void socket_steps(struct ibp_tx_step *v, size_t n)
{
	uint8_t chunk[CHUNK];
	struct pollfd small[64], *pfd = small;
	size_t sidx[64], *idx = sidx;

	if (2 * n > 64) {
		pfd = calloc(2 * n, sizeof(*pfd));
		idx = calloc(2 * n, sizeof(*idx));
		if (!pfd || !idx) {
			free(pfd);
			free(idx);
			for (size_t i = 0; i < n; i++) {
				v[i].priv.fd = -1;
				step_end(&v[i], tx_fail(v[i].tx, -ENOMEM, "out of memory"));
			}
			return;
		}
	}
	for (size_t i = 0; i < n; i++) {
		step_start(&v[i]);
		/* a HELLO just sent has no REPLY yet: the poll first */
		if (v[i].priv.state != S_DONE && v[i].priv.state != S_DG_HELLO)
			step_advance(&v[i], chunk);
	}
	for (;;) {
		int64_t now = ibp_now_ns(), first = INT64_MAX;
		size_t np = 0, busy;
		int got;

		for (size_t i = 0; i < n; i++) {
			struct ibp_tx_step *s = &v[i];
			int fd;

			if (s->priv.state == S_DONE)
				continue;
			if (now >= s->priv.until) {
				if (s->priv.state == S_TOKEN_IN && now < s->deadline) {
					close(s->priv.fd); /* a silent candidate: the next one */
					s->priv.fd = -1;
					s->priv.until = s->deadline;
					s->priv.state = S_ACCEPT;
				} else if (s->priv.state == S_DG_HELLO && now < s->deadline) {
					dgram_hello(s); /* no REPLY yet: the HELLO again */
					if (s->priv.state == S_DONE)
						continue;
				} else {
					step_fail(s, -ETIMEDOUT);
					continue;
				}
			}
			if (s->late && now >= s->late_at) { /* once: told it is late */
				s->late_at = INT64_MAX;
				s->late(s);
			}
			pfd[np] = (struct pollfd){.events = step_events(s, &fd)};
			pfd[np].fd = fd;
			idx[np++] = i;
			if (s->priv.until < first)
				first = s->priv.until;
			if (s->late && s->late_at < first)
				first = s->late_at;
		}
		if (!np)
			break;
		busy = np;
		for (size_t i = 0; i < n; i++) {
			int fd = v[i].priv.state == S_DONE ? socket_idle_fd(v[i].tx) : -1;

			if (fd >= 0) {
				pfd[np] = (struct pollfd){.fd = fd, .events = POLLIN};
				idx[np++] = i;
			}
		}
		got = poll(pfd, np, ibp_deadline_poll_ms(first, now));
		if (got < 0 && errno != EINTR) {
			int rc = -errno;

			for (size_t p = 0; p < busy; p++)
				step_fail(&v[idx[p]], rc);
			break;
		}
		for (size_t p = 0; got > 0 && p < np; p++) {
			if (!pfd[p].revents)
				continue;
			if (p < busy)
				step_advance(&v[idx[p]], chunk);
			else
				socket_idle(v[idx[p]].tx);
		}
	}
	if (pfd != small) {
		free(pfd);
		free(idx);
	}
}

const struct ibp_transport_ops ibp_transport_socket = {
    .name = "socket",
    .kind = IBP_TX_SOCKET,
    .open = socket_open,
    .endpoint = socket_endpoint,
    .connect = socket_connect,
    .send_pattern = socket_send_pattern,
    .recv_pattern = socket_recv_pattern,
    .bw_send = socket_bw_send,
    .bw_recv = socket_bw_recv,
    .lat_ping = socket_lat_ping,
    .lat_pong = socket_lat_pong,
    .close = socket_close,
    .idle_fd = socket_idle_fd,
    .idle = socket_idle,
    .cache_free = socket_cache_free,
    .probe = socket_probe,
    .probe_check = socket_probe_check,
    .probe_along = socket_probe_along,
    .probe_along_result = socket_probe_along_result,
    .steps = socket_steps,
};
