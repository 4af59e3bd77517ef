/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * transport.h: the data path of the cross-node test, one interface, two
 * implementations.
 *
 *   ibp_transport_socket  helpers/rdmatest/transport_socket.c  TCP; runs everywhere
 *   ibp_transport_verbs   helpers/rdmatest/transport_verbs.c   libibverbs RC QPs
 *
 * The out-of-band exchange (oob.h) carries the endpoints and the control
 * messages; a transport only moves and checks the test data.  One struct
 * ibp_tx is one side of one directed link: the SENDER writes, the RECEIVER
 * owns the target buffer and checks what arrived.  The sequence, on both
 * ends of a link (rdmatest.c drives it, with OOB messages in between):
 *
 *   sender                                 receiver
 *   open(port, opts)                       open(port, opts)
 *   endpoint() --------- OOB ENDPOINT ---> endpoint()
 *              <-------- OOB ENDPOINT -----
 *   connect(peer_ep, SENDER)               connect(peer_ep, RECEIVER)
 *   send_pattern(seed, len)                recv_pattern(seed, len) -> bad_offset
 *   bw_send(bytes) -> ns                   bw_recv(bytes)
 *   lat_ping(iters) -> ns per round trip   lat_pong(iters)
 *   close()                                close()
 *
 * Each pair of calls runs concurrently on the two nodes; either side may
 * arrive first, so every operation waits for its counterpart under its
 * deadline.
 *
 * Semantics common to every operation:
 *   * returns 0 or -errno; never prints, never exits, no globals;
 *   * DEADLINE is absolute CLOCK_MONOTONIC ns (deadline.h); an operation
 *     that cannot complete by then returns -ETIMEDOUT, having given up its
 *     wait (no operation blocks past its deadline);
 *   * -ECONNREFUSED / -ECONNRESET / -EPIPE / -EHOSTUNREACH: the peer is gone
 *     or unreachable; -EBADMSG from recv_pattern: the data arrived corrupted
 *     (*BAD_OFFSET is the first wrong byte); -ENOMEM from open when a
 *     registration fails for RLIMIT_MEMLOCK (the caller says so);
 *     -EPROTO: the peer's endpoint is unusable (wrong kind, bad GID, MTU 0);
 *   * ERR (in struct ibp_tx_opts) receives a one-line lowercase reason for
 *     the last failure ("ibv_modify_qp to RTR: Invalid argument",
 *     "connect 127.0.0.3:40123: Connection refused"); "" when none;
 *   * close() is safe on a half-opened tx and on NULL; it releases all
 *     resources (QP, CQ, MR, PD, fds) in reverse order.
 *
 * Threads: a tx is used by one thread at a time; different tx may be used
 * concurrently (the test runs a node's sending and receiving link at once).
 */
#ifndef IBPREP_TRANSPORT_H
#define IBPREP_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/deadline.h"
#include "ibprep/hca.h"

struct ibp_tx_cache;

enum ibp_tx_kind {
	IBP_TX_SOCKET = 1,
	IBP_TX_VERBS = 2,
};

enum ibp_tx_role {
	IBP_TX_SENDER = 0,
	IBP_TX_RECEIVER = 1,
};

/*
 * The local port a tx runs on, as data from the inventory and health checks
 * (the transport does not read sysfs itself).  For the socket transport
 * ADDR and IFNAME matter: the numeric IP address to bind and advertise
 * ("127.0.0.5", "10.1.2.3", "fd00::5"), and, for a rail tested over its
 * own network (rdmatest_rails.h), the netdev whose address it is: every
 * socket is then bound to that netdev (SO_BINDTODEVICE), so the rail's
 * traffic leaves and arrives through its own port, as an HCA's does, and
 * an address that is on another rail's network is not reached through
 * this one.  IFNAME set with ADDR empty: the netdev has no address (open
 * fails, naming it).  DEVICE/PORT are kept for messages.
 */
struct ibp_tx_port {
	char device[IBP_DEV_MAX];       /* "mlx5_0", "rxe0"; "" for socket */
	unsigned port;                  /* 1-based; 0 for socket */
	int gid_index;                  /* RoCE: the RoCE v2 GID index; -1 = IB / pick */
	enum ibp_link_layer link_layer; /* IB: LID addressing, ETH: GID (RoCE) */
	double rate_gbps;               /* port rate, 0 unknown (socket: 0) */
	unsigned rail;                  /* rail number (0-based) for the pairing */
	char addr[64];                  /* numeric IP address of this node (socket) */
	char ifname[IF_NAMESIZE];       /* socket: the rail's own netdev, "" none */
	uint8_t prefix;                 /* socket: ADDR's prefix length on IFNAME, 0 unknown */
};

struct ibp_tx_opts {
	size_t buf_len; /* registered/target buffer: pattern and burst unit */
	char *err;      /* out: last failure reason (may be NULL) */
	size_t errlen;
	bool sender; /* this end will connect as IBP_TX_SENDER (socket: no listener) */
	/*
	 * socket: the data path is one UDP socket per tx instead of a TCP
	 * connection (rails beyond rail 0, protocol 19; no FIN since 20): CONNECT is an
	 * authenticated exchange of datagrams that carries a small pattern
	 * (at most IBP_TX_DGRAM_PATTERN bytes, the seed and length of the
	 * CONNECT step); PATTERN checks what came, BURST moves nothing (no
	 * rate: the caller reports none), RTT gives the exchange's round
	 * trip.  A receiver's UDP socket also answers the peers' cross-rail
	 * probes (probe, below; no TCP listener since protocol 22): while its
	 * steps run, while idle is polled, and after its link's end through
	 * idle again.  Such a tx runs through the steps op only (the blocking
	 * ops return -EOPNOTSUPP).
	 */
	bool datagram;
	/*
	 * socket, datagram (NULL: none): the caller's cache, through which a
	 * tx leaves its UDP socket to the next tx of the same rail and role
	 * opened with it (a receiver's keeps answering the probes that name
	 * an earlier tx's token).  One cache per
	 * thread that opens and steps its txs one after the other (a
	 * worker's rounds: one exchange at a time, so no demultiplexer);
	 * *CACHE starts NULL, open fills it, the caller frees it with
	 * cache_free once it opens no more txs.  A tx still open keeps its
	 * sockets past that (counted); an older tx whose sockets a newer one
	 * took fails its next step with -EBUSY instead of misrouting.
	 */
	struct ibp_tx_cache **cache;
};

/* The largest pattern a datagram tx carries (one datagram, under any rail's MTU) */
#define IBP_TX_DGRAM_PATTERN 1024u

#define IBP_TX_GID_LEN 16

/*
 * A transport's local endpoint: fixed size and plain data so oob.c can
 * encode it field by field.  verbs fills qpn/psn/lid/gid/mtu/rkey/addr;
 * socket fills ip (IPv4-mapped or IPv6, network order) and tcp_port.
 */
struct ibp_endpoint {
	uint8_t kind;       /* enum ibp_tx_kind */
	uint8_t link_layer; /* enum ibp_link_layer */
	uint16_t lid;       /* IB LID, 0 for RoCE */
	uint32_t qpn;       /* 24 bits used */
	uint32_t psn;       /* 24 bits used */
	uint32_t mtu;       /* path MTU in bytes: 256 .. 4096 (socket: 0) */
	uint32_t rkey;
	uint32_t gid_index;          /* the sender of this endpoint's own GID index */
	uint64_t addr;               /* remote-writable buffer address */
	uint64_t buf_len;            /* its length */
	uint8_t gid[IBP_TX_GID_LEN]; /* GID (RoCE / IB global), or the socket's IP */
	uint16_t tcp_port;           /* socket transport: data listener port */
	/* socket transport, a datagram tx: its UDP port is in psn (0: none) */
	uint32_t rate_mbps; /* port rate in Mb/s, 0 unknown */
};

struct ibp_tx; /* opaque, one per transport instance */

/*
 * A cross-rail probe under way (the probe op below): FD to poll for
 * EVENTS; AGAIN_AT (ibp_now_ns, 0: none) when probe_check wants calling
 * without an event (a datagram probe's one resend).  The rest is the
 * transport's.
 */
struct ibp_tx_probe {
	int fd;
	short events;
	int64_t again_at;
	bool dgram;
	unsigned rail;      /* the addressee's rail */
	unsigned from_rail; /* the prober's */
	uint8_t token[8];   /* the addressee's token, from its endpoint */
	uint8_t nonce[8];   /* the answer echoes it */
};

/* One tx's step of a phase, for a transport's steps op (below). */
enum ibp_tx_step_kind {
	IBP_TX_STEP_CONNECT, /* connect(PEER, ROLE) */
	IBP_TX_STEP_PATTERN, /* sender: send_pattern(SEED, LEN); receiver: recv_pattern */
	IBP_TX_STEP_BURST,   /* sender: bw_send(BYTES) -> NS; receiver: bw_recv(BYTES) */
	IBP_TX_STEP_RTT,     /* sender: lat_ping(ITERS) -> NS; receiver: lat_pong(ITERS) */
};

struct ibp_tx_step {
	struct ibp_tx *tx;
	enum ibp_tx_step_kind kind;
	enum ibp_tx_role role;
	const struct ibp_endpoint *peer; /* CONNECT */
	uint64_t seed;                   /* PATTERN; CONNECT of a datagram sender */
	size_t len;                      /* PATTERN; CONNECT of a datagram sender */
	uint64_t bytes;                  /* BURST */
	unsigned iters;                  /* RTT */
	int64_t deadline;
	/* called the moment this step ends (RC set), in the caller's thread; may be NULL */
	void (*done)(const struct ibp_tx_step *s);
	/* called once if the step still runs at LATE_AT (ibp_now_ns); may be NULL */
	void (*late)(const struct ibp_tx_step *s);
	int64_t late_at;
	void *arg;
	size_t index;
	int rc;      /* out: as the op's return */
	uint64_t ns; /* out: BURST, RTT (sender) */
	size_t bad;  /* out: PATTERN (receiver), the first wrong byte */
	/* the transport's own, while the steps run */
	struct {
		int state, fd;
		uint64_t off;
		unsigned i;
		int64_t t0, until;
		uint8_t msg[8];
		char where[80];
		uint64_t rt[64];
	} priv;
};

struct ibp_transport_ops {
	const char *name; /* "socket", "verbs" */
	enum ibp_tx_kind kind;

	/* Allocates *OUT; on failure *OUT is NULL and nothing is left open. */
	int (*open)(const struct ibp_tx_port *port, const struct ibp_tx_opts *opts,
		    struct ibp_tx **out);
	int (*endpoint)(struct ibp_tx *tx, struct ibp_endpoint *out);
	/* verbs: QP to RTR/RTS; socket: the sender connects, the receiver accepts. */
	int (*connect)(struct ibp_tx *tx, const struct ibp_endpoint *peer, enum ibp_tx_role role,
		       int64_t deadline);
	/*
	 * Writes ibp_pattern_fill(SEED) of LEN bytes (<= buf_len) into the peer.
	 * A transport whose burst lands in the same peer memory (verbs) returns
	 * only once the peer has checked the pattern, so the burst can never
	 * be mistaken for corruption; a stream (socket) keeps them apart anyway.
	 */
	int (*send_pattern)(struct ibp_tx *tx, uint64_t seed, size_t len, int64_t deadline);
	/* Waits for it, then checks: -EBADMSG and *BAD_OFFSET on the first wrong byte. */
	int (*recv_pattern)(struct ibp_tx *tx, uint64_t seed, size_t len, int64_t deadline,
			    size_t *bad_offset);
	/* A burst of BYTES; *NS is the sender's time until the receiver has it all. */
	int (*bw_send)(struct ibp_tx *tx, uint64_t bytes, int64_t deadline, uint64_t *ns);
	int (*bw_recv)(struct ibp_tx *tx, uint64_t bytes, int64_t deadline);
	/* ITERS small-message round trips; *NS is the median round trip. */
	int (*lat_ping)(struct ibp_tx *tx, unsigned iters, int64_t deadline, uint64_t *ns);
	int (*lat_pong)(struct ibp_tx *tx, unsigned iters, int64_t deadline);
	void (*close)(struct ibp_tx *tx);
	/*
	 * A cross-rail probe (rdmatest.h, "Rails"), or NULL when the transport
	 * has none: does FROM's port (its address and its netdev, as open
	 * binds a tx) reach the peer's receiver endpoint TO, of the peer's
	 * rail TO_RAIL?  socket: to a datagram receiver, a PROBE datagram
	 * naming TO's token, answered by that receiver's own UDP socket (bound
	 * to its rail's netdev: an answer proves the probe came in there; one
	 * that came in on another netdev finds no socket and an ICMP error
	 * comes back); to a stream receiver, a TCP connection to its listener
	 * (which takes it as a stranger's: no token).  Fills *PR; 0, or
	 * -errno when it could not start (not reached).
	 */
	int (*probe)(const struct ibp_tx_port *from, const struct ibp_endpoint *to,
		     unsigned to_rail, struct ibp_tx_probe *pr);
	/*
	 * Optional: where probe PR stands, called when its fd polled ready or
	 * AGAIN_AT passed (NOW): 1 reached, 0 not yet, -errno did not.  NULL:
	 * the fd polls POLLOUT and SO_ERROR 0 says reached.  The caller closes
	 * PR's fd.
	 */
	int (*probe_check)(struct ibp_tx_probe *pr, int64_t now);
	/*
	 * Optional (socket): the same question asked from a datagram
	 * sender's own socket, TX (rail k's, its exchange made or under way),
	 * of the peer's datagram receiver TO of rail TO_RAIL: a PROBE sent now
	 * (0, or -errno), its answer read with TX's datagrams (its steps, and
	 * idle until probe_along_result).  probe_along_result: 1 answered, 0
	 * not, -errno refused; reads what came first.  No socket or thread of
	 * its own.
	 */
	int (*probe_along)(struct ibp_tx *tx, const struct ibp_endpoint *to, unsigned to_rail);
	int (*probe_along_result)(struct ibp_tx *tx);
	/*
	 * Optional (socket; NULL: verbs): the N steps of one phase at once in
	 * the caller's thread, one poll loop over their sockets: each step
	 * does and ends as its op would (the same bytes, checks, deadlines and
	 * reasons), without a thread per tx.  The steps' txs are distinct.
	 */
	void (*steps)(struct ibp_tx_step *v, size_t n);
	/*
	 * Optional (socket; NULL: verbs): a tx that must keep answering while
	 * the caller waits for something else (a datagram receiver: the
	 * sender's HELLO come again when its REPLY was lost, the peers'
	 * probes).  idle_fd the fd to poll for POLLIN, or -1 when none; idle
	 * reads it and answers, never blocking.  Once its link is over, a
	 * receiver may be handed to another thread for idle alone.
	 */
	int (*idle_fd)(const struct ibp_tx *tx);
	void (*idle)(struct ibp_tx *tx);
	/* Optional (socket; NULL: verbs): frees a cache of struct ibp_tx_opts; NULL is fine. */
	void (*cache_free)(struct ibp_tx_cache *c);
};

extern const struct ibp_transport_ops ibp_transport_socket;
/*
 * Not weak: a weak reference does not pull transport_verbs.o out of
 * libibprep.a, so ibp_transport_find("verbs") would be NULL in every
 * program (libibverbs is a build dependency anyway).
 */
extern const struct ibp_transport_ops ibp_transport_verbs;

/*
 * The socket transport's datagrams (a datagram tx, transport_socket.c):
 * TYPE 1 HELLO (with the pattern), 2 REPLY (protocol 19's 3, FIN, is
 * gone), 4 PROBE and 5 its answer (protocol 22); RAIL the sender's; SEQ
 * the exchange's number (0 in a probe); TO the addressee's token, FROM the
 * sender's (a PROBE's: a nonce; its answer: TO the nonce, FROM the token
 * the PROBE named).  encode: the length written
 * into BUF (CAP), 0 when it does not fit or a field is out of range;
 * decode: 0, or -EBADMSG for anything but one whole datagram (*PAT points
 * into BUF).
 */
size_t ibp_tx_dgram_encode(uint8_t *buf, size_t cap, unsigned type, unsigned rail, uint32_t seq,
			   const uint8_t to[8], const uint8_t from[8], const uint8_t *pat,
			   size_t len);
int ibp_tx_dgram_decode(const uint8_t *buf, size_t n, unsigned *type, unsigned *rail, uint32_t *seq,
			uint8_t to[8], uint8_t from[8], const uint8_t **pat, size_t *len);

/* "socket" / "verbs" -> ops; NULL when unknown or not built. */
const struct ibp_transport_ops *ibp_transport_find(const char *name);

/*
 * The test pattern: a deterministic function of SEED and the byte offset
 * (xorshift64* stream), so a shifted, truncated, stale or zeroed buffer
 * never passes.  check returns the first wrong offset, or LEN when intact.
 * Transports call these; they are in transport_pattern.c.
 */
void ibp_pattern_fill(void *buf, size_t len, uint64_t seed);
size_t ibp_pattern_check(const void *buf, size_t len, uint64_t seed);
/*
 * The same for the piece of LEN bytes at offset OFF of the pattern (a
 * stream's): check returns the piece's first wrong offset (from BUF), or
 * LEN.
 */
void ibp_pattern_fill_at(void *buf, size_t off, size_t len, uint64_t seed);
size_t ibp_pattern_check_at(const void *buf, size_t off, size_t len, uint64_t seed);

#endif
