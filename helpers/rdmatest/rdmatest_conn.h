/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_conn.h: what the files of one run of the cross-node test share
 * (private to helpers/rdmatest/): the run's context, its links, node names
 * and addresses, the HELLO, and the connector's side of the handshake.  It
 * calls nothing else of the test, so every part may use it.
 *
 * The files of a run, each calling only those below it (make lint checks
 * that no two call each other, directly or around a longer loop):
 *
 *   rdmatest.c           the owner: setup, the threads, the run's state, the result
 *   rdmatest_link.c      one link's test and the link workers
 *   rdmatest_probe.c     the cross-rail probes, on a thread of their own
 *   rdmatest_summary.c   the summary exchange at the end
 *   rdmatest_accept.c    the listeners and the acceptor: the only code that
 *                        reads bytes from connections nobody has vouched for
 *   rdmatest_ring.c      the step-wide sum of the fingerprints
 *   rdmatest_fp.c        the neighbours' fingerprints and their comparison
 *   rdmatest_report.c    the findings: who is blamed, links named
 *   rdmatest_topo.c      the topology-aware blame rules, the step's leaves
 *   rdmatest_blame.c     the blame rule
 *   rdmatest_conn.c      this file's: context, names, addresses, HELLO, connect
 *
 * Non-static symbols carry the ibp_rt_ prefix (the library is linked into
 * slurmstepd next to other plugins).
 */
#ifndef IBPREP_RDMATEST_CONN_H
#define IBPREP_RDMATEST_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ibprep/auth.h"
#include "ibprep/rdmatest.h"
#include "ibprep/seal.h"

#define IBP_RT_ADDR_MAX 64

/*
 * An in-link's slot (rail 0's: its connection carries every rail): EMPTY until the acceptor hands over an authenticated
 * connection (FILLED); LIVE once the connector's first sealed frame came
 * (or the link ended otherwise); CLOSED when no connection is taken any
 * more.  A FILLED connection the connector closed before its first frame
 * (it gave up waiting for a slow HELLO reply and is trying again) goes
 * back to EMPTY, at most IBP_RT_REARMS times, and the acceptor stays until
 * no slot is EMPTY or FILLED.
 */
enum ibp_rt_slot {
	IBP_RT_SLOT_EMPTY = 0,
	IBP_RT_SLOT_FILLED,
	IBP_RT_SLOT_LIVE,
	IBP_RT_SLOT_CLOSED
};

#define IBP_RT_REARMS 2

/*
 * A leaf child's link at its parent (rdmatest_ring.c): the answer goes as
 * soon as both the ring and the link's round are over, from whichever
 * thread sees the second of them, or from the summary exchange.
 */
enum ibp_rt_answer {
	IBP_RT_ANSWER_BUSY = 0, /* the link's worker still tests on it */
	IBP_RT_ANSWER_IDLE,     /* its round is over: the ring's thread may answer */
	IBP_RT_ANSWER_SENDING,  /* a thread is sending the answer */
	IBP_RT_ANSWER_SENT,     /* it went (or was not owed) */
	IBP_RT_ANSWER_MAIN,     /* the summary exchange has the link */
};

struct ibp_rt_link {
	struct ibp_rdmatest_link r; /* the public result */
	bool out;                   /* this node sends */
	uint32_t peer;
	char peer_addr[IBP_RT_ADDR_MAX];
	int fd;                    /* OOB connection, kept for the summary */
	struct ibp_seal seal;      /* its keys and sequence numbers */
	enum ibp_rt_slot slot;     /* in-links: handed over by the acceptor */
	unsigned rearms;           /* in-links: times the slot went back to EMPTY */
	char reject[IBP_TEXT_MAX]; /* in-links: why a claimant from the peer's address failed */
	uint64_t peer_rate_mbps;
	/* the peer's endpoint address on this rail (socket transport; IPv4-mapped or IPv6) */
	uint8_t peer_ip[16];
	bool peer_ip_set;
	bool summary_in;
	/*
	 * The peer's address answered (out-links) or connected (in-links,
	 * under mu: the acceptor writes it) with protocol PEER_VERSION, not
	 * this build's: the link ends IBP_LINK_VERSION unless it authenticates
	 * or something of this version fails authentication on it.
	 */
	bool version_seen;
	uint16_t peer_version;
	/* out-links: failed only because the peer's port closed every hello unanswered */
	bool closed_unanswered;
	/*
	 * Rail-0 links: the rail count the peer announced in its HELLO
	 * (in-links, the acceptor writes it under mu) or its reply (out-links):
	 * the channel pairs the rails both have (rdmatest_link.c).
	 */
	uint8_t peer_rails;
	unsigned hellos; /* out-links: HELLOs made (the result's hellos) */
	/*
	 * The sum's parent connection: the parent answered it takes no part.
	 * A leaf child's side (rdmatest_ring.c): it sent its endpoint without
	 * a sum first.
	 */
	bool no_ring;
	/*
	 * Rail 0 of the ring's round, between a leaf of the sum's tree and its
	 * parent (rdmatest_ring.c): SUM_UP, the leaf's sum frame went up on
	 * it; SUM_OWED (under mu), a peer sent one this node does not take
	 * as its child's, and waits for the word that it takes no part;
	 * SUM_ANSWERED, that word went.  ANSWER (under mu, enum
	 * ibp_rt_answer): a leaf child's link, who may send the parent's
	 * answer on it, and whether it went.
	 */
	bool sum_up, sum_owed, sum_answered;
	uint8_t answer;
	/* the peer is a leaf of the sum's tree: its fingerprint may come after its summary */
	bool peer_leaf;
	/*
	 * In-links: the receiver's tx, kept open until the run ends so that
	 * the peer's cross-rail probes find it (rail 0's listener; a datagram
	 * rail's socket, answered by the probe thread: rdmatest_probe.h); the
	 * owner closes it.  NULL: closed with the link.
	 */
	struct ibp_tx *tx;
};

/*
 * What every part of a run reads: fixed before the run's threads start
 * (the owner, rdmatest.c, fills it), but LINKS' fields (each says whose
 * they are) and MU and CV, which guard them.
 */
struct ibp_rt_ctx {
	const struct ibp_rdmatest_config *cfg;
	const struct ibp_policy *pol;
	const struct ibp_hostlist *nodes;
	uint32_t n, me;
	const struct ibp_rdmatest_plan *plan;
	const int *leaf; /* every node's leaf switch from the topology; NULL without one */
	size_t n_rails;
	struct ibp_auth auth;
	char my_addr[IBP_RT_ADDR_MAX];
	/* the candidate ports, in the order the peers are tried (rdmatest_accept.c's listen) */
	uint16_t cands[IBP_RDMATEST_MAX_LISTEN];
	int n_cands;
	int64_t start, round_end[2], end;
	/* rail by rail, round by round, out then in (ibp_rt_link_at) */
	struct ibp_rt_link *links;
	size_t n_links;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

/* the peers a node tests with: 2 per round */
#define IBP_RT_MAX_PEERS 4

static inline size_t ibp_rt_n_rounds(const struct ibp_rt_ctx *x)
{
	return x->plan->n_rounds;
}

static inline struct ibp_rt_link *ibp_rt_link_at(const struct ibp_rt_ctx *x, size_t rail,
						 unsigned round, bool out)
{
	return &x->links[(rail * ibp_rt_n_rounds(x) + (round - 1)) * 2 + (out ? 0 : 1)];
}

/* A link's outcome that is neither a pass nor untested. */
static inline bool ibp_rt_failed(uint8_t status)
{
	return status != IBP_LINK_PASS && status != IBP_LINK_UNTESTED;
}

void ibp_rt_setf(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ibp_rt_node_name(const struct ibp_rt_ctx *x, uint32_t i);
/* A fresh nonce (never 0). */
uint64_t ibp_rt_random64(void);

/* Node I's address, numeric (the config's, its resolver's or the name's); -errno. */
int ibp_rt_resolve(const struct ibp_rt_ctx *x, uint32_t i, char *addr, size_t len);
int ibp_rt_sockaddr_of(const char *addr, uint16_t port, struct sockaddr_storage *ss,
		       socklen_t *len);
void ibp_rt_nodelay(int fd);

/* L's outcome, unless it has failed already (the first failure is the one to report). */
void ibp_rt_link_fail(struct ibp_rt_link *l, enum ibp_link_status st, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* L's rail is one the peer has not (WHY): untested with test_pairing=any, else failed. */
void ibp_rt_rail_missing(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, const char *why);

/*
 * A HELLO from this node to TO for ROUND and RAIL with FLAGS (and ECHO, the
 * nonce it answers), its credential carrying a fresh secret, returned in
 * SECRET.  0 or -errno (-ENOTCONN: munged unreachable) with ERR set.
 */
int ibp_rt_hello_make(const struct ibp_rt_ctx *x, struct ibp_oob_msg *m, uint32_t to, uint8_t round,
		      uint16_t rail, uint64_t echo, uint16_t flags,
		      uint8_t secret[IBP_AUTH_SECRET_LEN], char *err, size_t errlen);
void ibp_rt_hello_claims(const struct ibp_oob_hello *h, struct ibp_auth_claims *c);

/*
 * L's connection (a link's, or the sum's) to its peer, mutually
 * authenticated, with L's keys: the peer's candidate ports again and again
 * until DEADLINE.  The fd, or -1 with L's outcome said.  Any thread; L is
 * the caller's.
 */
int ibp_rt_connect(const struct ibp_rt_ctx *x, struct ibp_rt_link *l, int64_t deadline);

#endif
