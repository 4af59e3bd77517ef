/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_int.h: what the files of the cross-node test share, and nothing
 * else includes.  One run of ibp_rdmatest_run() is split by trust boundary:
 *
 *   rdmatest.c         setup, the sending side, the link protocol over the
 *                      sealed connection, the summary exchange
 *   rdmatest_accept.c  the listeners and the acceptor: the only code that
 *                      reads bytes from connections nobody has vouched for
 *                      (slot policy, HELLO checks, munge verification)
 *   rdmatest_plan.c    who tests with whom (pure)
 *   rdmatest_blame.c   who is suspected and the findings that say so
 *   rdmatest_ring.c    the step-wide sum of the fingerprints along the
 *                      plan's ring: a thread and connections of its own,
 *                      while the links are tested
 *
 * Non-static symbols here carry the ibp_rt_ prefix (the library is linked
 * into slurmstepd next to other plugins).
 */
#ifndef IBPREP_RDMATEST_INT_H
#define IBPREP_RDMATEST_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ibprep/auth.h"
#include "ibprep/rdmatest.h"
#include "ibprep/seal.h"

#define IBP_RT_ADDR_MAX 64

/*
 * An in-link's slot: EMPTY until the acceptor hands over an authenticated
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
	char skip[IBP_TEXT_MAX];   /* in-links: the peer has no such rail */
	uint64_t peer_rate_mbps;
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
	 * Rail-0 in-links: the rail count the peer announced in its HELLO
	 * for this round, and how many of its HELLOs for rails this node has
	 * not were answered "no such rail": the acceptor stays until they are.
	 */
	uint8_t peer_rails, no_rail_answered;
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
};

/* Addresses the acceptor gives a slot: the peers this node receives from. */
struct ibp_rt_peer {
	uint32_t node;
	struct sockaddr_storage addr; /* port 0 */
	unsigned quota;               /* pending connections allowed from it */
};

#define IBP_RT_MAX_PEERS 4
/* the peers this node receives links from, and the step-wide sum's two children */
#define IBP_RT_MAX_IN_PEERS (IBP_RT_MAX_PEERS + 2)
/* this node, its peers, and their summaries' tables */
#define IBP_RT_MAX_ADDR_LEAVES (1 + IBP_RT_MAX_PEERS * (1 + IBP_OOB_MAX_LEAVES))

/* The sum's tree (rdmatest.h): a node's children, and its connections: the children's and its parent's. */
#define IBP_RT_RING_KIDS  IBP_RDMATEST_TREE_KIDS
#define IBP_RT_RING_CONNS (IBP_RT_RING_KIDS + 1)

struct ibp_rt_run {
	const struct ibp_rdmatest_config *cfg;
	struct ibp_policy pol;
	const struct ibp_transport_ops *ops;
	struct ibp_hostlist own_nodes;
	const struct ibp_hostlist *nodes;
	uint32_t n, me;
	struct ibp_rdmatest_plan plan;
	int *leaf; /* every node's leaf switch (NULL without a topology), owned */
	/*
	 * A peer whose summary carried another plan digest: the nodes did not
	 * derive the same plan (their topologies differ or one has none).
	 */
	bool plan_mismatch;
	/*
	 * Leaves learned from SLURM_TOPOLOGY_ADDR (cfg->own_leaf, the peers'
	 * ENDPOINTs and summaries; no topology file): node and name, under mu.
	 */
	struct ibp_oob_leaf addr_leaves[IBP_RT_MAX_ADDR_LEAVES];
	size_t n_addr_leaves;
	/* the blame's view of them: leaf id -> name (ibp_rt_leaf_name) */
	char (*addr_names)[IBP_OOB_LEAF_MAX];
	uint32_t mismatch_node;
	uint64_t mismatch_digest;
	struct ibp_tx_port rails[IBP_RDMATEST_MAX_RAILS];
	size_t n_rails;
	char my_addr[IBP_RT_ADDR_MAX];
	struct ibp_auth auth;
	size_t buf_len;
	uint64_t burst;
	int listen_fds[IBP_RDMATEST_MAX_LISTEN]; /* -1: not listening on that candidate */
	bool own_listen;                         /* bound here: closed here */
	uint16_t cands[IBP_RDMATEST_MAX_LISTEN];
	int n_cands;
	int64_t start, round_end[2], end;
	struct ibp_rt_link links[IBP_RDMATEST_MAX_LINKS];
	size_t n_links;
	struct ibp_rt_peer in_peers[IBP_RT_MAX_IN_PEERS];
	size_t n_in_peers;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t nonces[128];
	size_t n_nonces;
	/* The acceptor's accounting (rdmatest_accept.c); the caller's thread only. */
	unsigned dropped;      /* every connection dropped, for RES */
	unsigned dropped_away; /* from addresses that are not a peer of this node */
	unsigned dropped_peer; /* from a peer's address that did not authenticate or over quota */
	char drop_reason[IBP_TEXT_MAX];
	struct ibp_oob_link known[IBP_RDMATEST_MAX_LINKS * 5];
	size_t n_known;
	size_t n_summaries;
	/*
	 * Peers' fingerprints (cfg->fingerprint set): node index and value,
	 * heap; under mu while the link workers run (a step too small for the
	 * sum: they come before the peers' endpoints).  FP_MSG: this node's
	 * FINGERPRINT frame, for that or the summary, built once (heap).
	 */
	struct ibp_oob_msg *fp_msg;
	/*
	 * A step too small for the sum: the peers (bit = node index, under
	 * mu) whose first rail-0 link is sending this node's fingerprint
	 * (FP_CLAIMED), and those it reached (FP_REACHED); one frame per
	 * peer, not one per link (two nodes share two links).
	 */
	uint32_t fp_claimed, fp_reached;
	struct ibp_rt_fp {
		uint32_t node;
		struct ibp_fp fp;
	} * fps;
	size_t n_fps;
	/*
	 * The step-wide comparison (IBP_RT_RING_MIN nodes or more, consistency=
	 * not all off): a reduction over the places of the plan's ring
	 * (fingerprint.h; the plain plan's round 1, the topology-aware one's
	 * 2), up a tree over clusters of 3 of them and back down (rdmatest.h,
	 * oob.h), on the heads' connections of their own and the leaves' links.
	 * SUM, in RING_MSG[0], is the sum that travels, complete once RING is
	 * RING_DONE (NULL without a fingerprint); SUM_IN the sum of the head
	 * after this one's cluster (KID[3]) as it came (heap).  The ring's thread owns these fields from
	 * ibp_rt_ring_spawn to ibp_rt_ring_join.
	 */
	int ring; /* enum ibp_rt_ring */
	struct ibp_fp_sum *sum, *sum_in;
	/* [0] out (SUM is in it), [1] in, [2 + I] leaf child I's as its link handed it (heap) */
	struct ibp_oob_msg *ring_msg;
	uint8_t ring_got;   /* the children whose sums came (rdmatest_ring.c) */
	uint32_t ring_at;   /* RING_BROKEN: where the chain stopped */
	uint32_t ring_from; /* RING_BROKEN: the neighbour of RING_AT it stopped at */
	/* the plan's ring through every node (ibp_rdmatest_ring_order): heap */
	uint32_t *ring_order;
	uint32_t ring_pos;   /* this node's place on it: the sum holds places, not indices */
	unsigned ring_round; /* the plan's round whose links make the ring */
	uint8_t ring_why;    /* RING_BROKEN: enum ibp_fpsum_why, 0 the deadline */
	uint8_t ring_owe;    /* RING_BROKEN: the tree neighbours still to be told */
	/*
	 * The sum's own connections (HELLO round IBP_OOB_RING_ROUND, rail 0)
	 * with this node's neighbours in the tree over the ring's places
	 * (rdmatest_ring.c): RING_CONN[I] from child I (the tree's KID[I];
	 * slots the acceptor fills, as an in-link's, for the child heads 0 and
	 * 3), RING_CONN[IBP_RT_RING_KIDS] to its parent (the ring's thread
	 * opens it).  RING_USES says which of them this node has (bit I, the
	 * parent's last), fixed before the threads start.  Under mu: the
	 * children's slots and fds until the thread has them, RING_STOP.
	 */
	struct ibp_rt_link ring_conn[IBP_RT_RING_CONNS];
	uint8_t ring_state[IBP_RT_RING_CONNS]; /* the ring's thread's copy of their slots */
	uint8_t ring_uses;
	/*
	 * A leaf of the tree (two places of three) needs no connection,
	 * thread or HELLO of its own: its parent is its neighbour
	 * on the ring, and the link of the ring's round between them (rail 0)
	 * carries the leaf's sum up before its endpoint, and the parent's
	 * answer (the complete sum, or where the chain stopped) down once the
	 * parent's ring and that link's round are over.  RING_LINK: a leaf's link with its parent.
	 * RING_CHILD_LINK: the links of the children that are leaves (1 and 2;
	 * NULL: none, or a head); their sides in RING_CONN
	 * keep the slot (under mu: the link's worker fills it with the frame,
	 * in RING_MSG[2 + i], or closes it) but never a connection.
	 * RING_CAME: the sides the word that the chain stopped came from (it
	 * goes to the others).
	 */
	struct ibp_rt_link *ring_link;
	struct ibp_rt_link *ring_child_link[IBP_RT_RING_KIDS];
	uint8_t ring_came;
	/*
	 * Under mu: the ring's thread is over and its answers to the leaf
	 * children are built (RING_MSG[0] the complete sum, [1] where the
	 * chain stopped): a link whose round is over may carry them now.
	 */
	bool ring_over;
	/* child I's sum holds the places [KID_LO[I], KID_HI[I]) */
	uint32_t ring_kid_lo[IBP_RT_RING_KIDS], ring_kid_hi[IBP_RT_RING_KIDS];
	bool ring_stop;
	/* the ring's thread: woken by RING_WAKE, says it is done on RING_DONE (eventfds) */
	pthread_t ring_th;
	int ring_wake, ring_done; /* -1: none */
	bool ring_running;        /* started and not joined */
};

/*
 * Up to 5 nodes, a node's ring neighbours (i+-1, i+-2) are the whole step:
 * their fingerprints are enough.  From 6 on, the sum travels the ring.
 */
#define IBP_RT_RING_MIN 6

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

enum ibp_rt_ring {
	IBP_RT_RING_OFF = 0,
	IBP_RT_RING_GATHER, /* waiting for the children's sums */
	IBP_RT_RING_FINAL,  /* sent ours up to the parent; waiting for the complete sum */
	IBP_RT_RING_DONE,   /* SUM is the whole step */
	IBP_RT_RING_BROKEN, /* fall back to the neighbours' fingerprints */
};

/*
 * rdmatest_ring.c.  PREPARE before the in-peers' quotas (RING stays OFF
 * without a ring); SPAWN once mu exists; the acceptor fills the slot SLOT
 * gives it for a child's HELLO (NULL: this node takes none from
 * FROM) and WAKEs the thread; ACCEPT_OVER when the acceptor is done (an
 * empty slot stays empty).  The summary exchange polls DONE_FD (-1:
 * no thread) and JOINs (STOP: tell it to end first); from then on the
 * caller's thread owns the ring's fields.  The thread opens the
 * parent's connection with CONNECT (rdmatest.c: as a link's, but
 * trying again sooner: the sum waits for it).
 */
void ibp_rt_ring_prepare(struct ibp_rt_run *run);
void ibp_rt_ring_spawn(struct ibp_rt_run *run);
struct ibp_rt_link *ibp_rt_ring_slot(struct ibp_rt_run *run, uint32_t from);
/*
 * Child I's connection (a head: 0 or 3), NULL when there is none or it is
 * a leaf: its slot is under mu.
 */
struct ibp_rt_link *ibp_rt_ring_child(struct ibp_rt_run *run, int i);
void ibp_rt_ring_wake(struct ibp_rt_run *run);
void ibp_rt_ring_accept_over(struct ibp_rt_run *run);
int ibp_rt_ring_done_fd(const struct ibp_rt_run *run);
void ibp_rt_ring_join(struct ibp_rt_run *run, bool stop);
/* Whether the whole step's sum is here now (the thread joined if it is over). */
bool ibp_rt_ring_whole(struct ibp_rt_run *run);
/* The link's (or the sum's) connection to its peer, authenticated; -1 when it failed (said in L). */
int ibp_rt_connect(struct ibp_rt_run *run, struct ibp_rt_link *l, int64_t deadline);
/* Node I's address, numeric (the config's, its resolver's or the name's); -errno. */
int ibp_rt_resolve(const struct ibp_rt_run *run, uint32_t i, char *addr, size_t len);
/* RING_DONE: the whole step's sum judged, the same way on every node */
int ibp_rt_ring_judge(struct ibp_rt_run *run, struct ibp_findings *out);
/* RING_BROKEN: why, for the fallback's findings */
void ibp_rt_ring_why(const struct ibp_rt_run *run, char *buf, size_t len);
void ibp_rt_ring_free(struct ibp_rt_run *run);
/*
 * The leaves' sums on the ring round's links (rdmatest.c's link workers
 * and summary exchange).  LEAF_FRAME: what a leaf sends up on L before
 * its endpoint (NULL: nothing, L is not its parent's link).
 * LINK_FRAME: a sum frame that came on L before the peer's endpoint.
 * LINK_OVER: L's worker is done with what comes first on it (ENDPOINT:
 * the peer's endpoint came, after a sum frame or without one), or with
 * the whole round (!ENDPOINT: a leaf child's answer may go now).
 * LINKS_MINE: the summary exchange takes the links (an answer being sent
 * finishes first).  ANSWER: the caller's thread, the ring over, sends
 * what it still owes on the links.
 * LEAF_HEARS: a leaf reads its parent's answer (NULL: the link closed).
 */
const struct ibp_oob_msg *ibp_rt_ring_leaf_frame(struct ibp_rt_run *run,
						 const struct ibp_rt_link *l);
void ibp_rt_ring_link_frame(struct ibp_rt_run *run, struct ibp_rt_link *l,
			    const struct ibp_oob_fpsum *f);
void ibp_rt_ring_link_over(struct ibp_rt_run *run, struct ibp_rt_link *l, bool endpoint);
void ibp_rt_ring_links_mine(struct ibp_rt_run *run);
void ibp_rt_ring_answer(struct ibp_rt_run *run);
void ibp_rt_ring_leaf_hears(struct ibp_rt_run *run, const struct ibp_oob_fpsum *f);

void ibp_rt_setf(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ibp_rt_node_name(const struct ibp_rt_run *run, uint32_t i);
/*
 * rdmatest_topo.c: the step's nodes' leaves (NULL without a topology;
 * free()), the uplinks' findings, the plan mismatch's finding.
 */
int *ibp_rt_topo_leaves(const struct ibp_rt_run *run);
void ibp_rt_topo_findings(struct ibp_rt_run *run, struct ibp_findings *out, const int *leaf,
			  const int *sus, size_t n_sus, const char *expected);
void ibp_rt_plan_mismatch(struct ibp_rt_run *run, struct ibp_findings *out);
/* SLURM_TOPOLOGY_ADDR's leaves: keep one (first wins), and the step's leaves from them (free()). */
void ibp_rt_addr_leaf_add(struct ibp_rt_run *run, uint32_t node, const char *name);
int *ibp_rt_addr_leaves(struct ibp_rt_run *run);
const char *ibp_rt_leaf_name(const struct ibp_rt_run *run, int leaf);
size_t ibp_rt_n_rounds(const struct ibp_rt_run *run);
struct ibp_rt_link *ibp_rt_link_at(struct ibp_rt_run *run, size_t rail, unsigned round, bool out);
int ibp_rt_sockaddr_of(const char *addr, uint16_t port, struct sockaddr_storage *ss,
		       socklen_t *len);
void ibp_rt_nodelay(int fd);
bool ibp_rt_failed(uint8_t status);
/* Whether a link's outcome is evidence about the hardware, for the blame. */
bool ibp_rt_counts(uint8_t status);

/*
 * A HELLO from this node to TO for ROUND and RAIL with FLAGS (and ECHO, the
 * nonce it answers), its credential carrying a fresh secret, returned in
 * SECRET.  0 or -errno (-ENOTCONN: munged unreachable) with ERR set.
 */
int ibp_rt_hello_make(struct ibp_rt_run *run, struct ibp_oob_msg *m, uint32_t to, uint8_t round,
		      uint16_t rail, uint64_t echo, uint16_t flags,
		      uint8_t secret[IBP_AUTH_SECRET_LEN], char *err, size_t errlen);
void ibp_rt_hello_claims(const struct ibp_oob_hello *h, struct ibp_auth_claims *c);

/* rdmatest_accept.c */
int ibp_rt_listen(struct ibp_rt_run *run);
void ibp_rt_close_listeners(struct ibp_rt_run *run);
int ibp_rt_peers_init(struct ibp_rt_run *run);
void ibp_rt_acceptor(struct ibp_rt_run *run);

/* rdmatest_blame.c */
void ibp_rt_report(struct ibp_rt_run *run, struct ibp_findings *out,
		   struct ibp_rdmatest_result *res);

#endif
