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
	char *err;
	size_t errlen;
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

static void socket_close(struct ibp_tx *tx)
{
	if (!tx)
		return;
	if (tx->data_fd >= 0)
		close(tx->data_fd);
	if (tx->bound_fd >= 0)
		close(tx->bound_fd);
	if (tx->listen_fd >= 0)
		close(tx->listen_fd);
	free(tx);
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
	tx->listen_fd = tx->data_fd = tx->bound_fd = -1;
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

static int socket_connect(struct ibp_tx *tx, const struct ibp_endpoint *peer, enum ibp_tx_role role,
			  int64_t deadline)
{
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

static int socket_probe(const struct ibp_tx_port *from, const struct ibp_endpoint *to, int *fdp)
{
	struct ibp_tx tx = {.listen_fd = -1, .data_fd = -1};
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, rc;

	*fdp = -1;
	snprintf(tx.ifname, sizeof(tx.ifname), "%s", from->ifname);
	if (!from->addr[0] || parse_addr(from->addr, &tx.local, &tx.local_len))
		return -EADDRNOTAVAIL;
	if (to->kind != IBP_TX_SOCKET)
		return -EPROTO;
	ep_addr(to, &ss, &len);
	if (ss.ss_family != tx.local.ss_family)
		return -EAFNOSUPPORT;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
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
	if (bind(fd, (struct sockaddr *)&tx.local, tx.local_len) ||
	    (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	*fdp = fd;
	return 0;
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
	S_DONE,
};

static void step_end(struct ibp_tx_step *s, int rc)
{
	if (s->priv.fd >= 0 && s->priv.fd != s->tx->data_fd) /* a connection not taken */
		close(s->priv.fd);
	s->priv.fd = -1;
	s->rc = rc;
	s->priv.state = S_DONE;
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

static void socket_steps(struct ibp_tx_step *v, size_t n)
{
	uint8_t chunk[CHUNK];
	struct pollfd small[32], *pfd = small;
	size_t sidx[32], *idx = sidx;

	if (n > 32) {
		pfd = calloc(n, sizeof(*pfd));
		idx = calloc(n, sizeof(*idx));
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
		if (v[i].priv.state != S_DONE)
			step_advance(&v[i], chunk);
	}
	for (;;) {
		int64_t now = ibp_now_ns(), first = INT64_MAX;
		size_t np = 0;
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
				} else {
					step_fail(s, -ETIMEDOUT);
					continue;
				}
			}
			pfd[np] = (struct pollfd){.events = step_events(s, &fd)};
			pfd[np].fd = fd;
			idx[np++] = i;
			if (s->priv.until < first)
				first = s->priv.until;
		}
		if (!np)
			break;
		got = poll(pfd, np, ibp_deadline_poll_ms(first, now));
		if (got < 0 && errno != EINTR) {
			int rc = -errno;

			for (size_t p = 0; p < np; p++)
				step_fail(&v[idx[p]], rc);
			break;
		}
		for (size_t p = 0; got > 0 && p < np; p++)
			if (pfd[p].revents)
				step_advance(&v[idx[p]], chunk);
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
    .probe = socket_probe,
    .steps = socket_steps,
};
