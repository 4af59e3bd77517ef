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

static int connect_sender(struct ibp_tx *tx, const struct ibp_endpoint *peer, int64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char where[80];
	uint8_t token[8];
	int fd, rc, soerr = 0;
	socklen_t sl = sizeof(soerr);

	ep_addr(peer, &ss, &len);
	addr_text(&ss, where, sizeof(where));
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
	for (int i = 0; i < 4; i++) {
		token[i] = (uint8_t)(peer->rkey >> (24 - 8 * i));
		token[4 + i] = (uint8_t)(peer->qpn >> (24 - 8 * i));
	}
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

/*
 * The receiver takes the first connection that presents its token before
 * the deadline; strangers are closed.  Each candidate gets at most a
 * quarter of a second to present it, so a silent stranger cannot hold the
 * slot.
 */
static int connect_receiver(struct ibp_tx *tx, int64_t deadline)
{
	uint8_t want[8], got[8];

	for (int i = 0; i < 4; i++) {
		want[i] = (uint8_t)(tx->token_hi >> (24 - 8 * i));
		want[4 + i] = (uint8_t)(tx->token_lo >> (24 - 8 * i));
	}
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

/* The burst's bytes: zeros (never the stack's leftovers), CHUNK a write. */
static int socket_bw_send(struct ibp_tx *tx, uint64_t bytes, int64_t deadline, uint64_t *ns)
{
	uint8_t chunk[CHUNK];
	int64_t t0;
	uint8_t ack;
	int rc;

	memset(chunk, 0, sizeof(chunk));
	t0 = ibp_now_ns();
	for (uint64_t left = bytes; left;) {
		size_t n = left < sizeof(chunk) ? (size_t)left : sizeof(chunk);

		rc = ibp_oob_write_full(tx->data_fd, chunk, n, deadline);
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
};
