/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_ring.h: the step-wide comparison of the fingerprints, a sum
 * gathered along a tree over the places of the plan's ring
 * (rdmatest_ring.c says how).  The owner of the run (rdmatest.c) keeps a
 * struct ibp_rt_ring in its state and calls, in this order:
 *
 *   PREPARE      before the acceptor's in-peers (its children are among them)
 *   KIDS         the children's connections the acceptor fills, like an
 *                in-link's slot (again after SPAWN: a thread that did not
 *                start takes none)
 *   SPAWN        once the context's mutex exists: the thread of a head
 *   WAKE         a child's slot was filled (the acceptor's callback)
 *   ACCEPT_OVER  the acceptor is done: an empty slot stays empty
 *   (the link workers: LEAF_FRAME, LINK_FRAME, LINK_OVER, below)
 *   (the summary exchange: LINKS_MINE, DONE_FD, JOIN, WHOLE, ANSWER, LEAF_HEARS)
 *   JUDGE or WHY the comparison's findings, then FREE.
 *
 * From SPAWN to JOIN the fields are the ring's thread's, but the
 * children's slots, which the acceptor and the link workers fill under
 * the context's mutex; after JOIN they are the caller's to read.
 */
#ifndef IBPREP_RDMATEST_RING_H
#define IBPREP_RDMATEST_RING_H

#include "rdmatest_conn.h"

/*
 * Up to 5 nodes, a node's ring neighbours (i+-1, i+-2) are the whole step:
 * their fingerprints are enough.  From 6 on, the sum travels the ring.
 */
#define IBP_RT_RING_MIN 6

/* The sum's tree (rdmatest.h): a node's children, and its connections: the children's and its parent's. */
#define IBP_RT_RING_KIDS  IBP_RDMATEST_TREE_KIDS
#define IBP_RT_RING_CONNS (IBP_RT_RING_KIDS + 1)

enum ibp_rt_ring_state {
	IBP_RT_RING_OFF = 0,
	IBP_RT_RING_GATHER, /* waiting for the children's sums */
	IBP_RT_RING_FINAL,  /* sent ours up to the parent; waiting for the complete sum */
	IBP_RT_RING_DONE,   /* SUM is the whole step */
	IBP_RT_RING_BROKEN, /* fall back to the neighbours' fingerprints */
};

struct ibp_rt_ring {
	/* the owner's, set before PREPARE */
	struct ibp_rt_ctx *x;
	/* this node's fingerprint when the comparison is on (NULL: it adds none) */
	const struct ibp_fp *fp;

	int state; /* enum ibp_rt_ring_state */
	/*
	 * SUM, in MSG[0], is the sum that travels, complete once STATE is
	 * DONE (NULL without a fingerprint); SUM_IN the sum of the head after
	 * this one's cluster (KID[3]) as it came (heap).
	 */
	struct ibp_fp_sum *sum, *sum_in;
	/*
	 * The sum frames: [0] out (SUM is in it), [1] in, [2 + I] leaf child
	 * I's as its link's worker decoded it (heap); UP, a leaf's frame to
	 * its parent, MSG[0].
	 */
	struct ibp_oob_fpsum *msg;
	struct ibp_oob_msg up;
	uint8_t got;   /* the children whose sums came */
	uint32_t at;   /* BROKEN: where the chain stopped */
	uint32_t from; /* BROKEN: the neighbour of AT it stopped at */
	/* the plan's ring through every node (ibp_rdmatest_ring_order): heap */
	uint32_t *order;
	uint32_t pos;   /* this node's place on it: the sum holds places, not indices */
	unsigned round; /* the plan's round whose links make the ring */
	uint8_t why;    /* BROKEN: enum ibp_fpsum_why, 0 the deadline */
	uint8_t owe;    /* BROKEN: the tree neighbours still to be told */
	/*
	 * The sum's own connections (HELLO round IBP_OOB_RING_ROUND, rail 0)
	 * with this node's neighbours in the tree: CONN[I] from child I (the
	 * tree's KID[I]; slots the acceptor fills, as an in-link's, for the
	 * child heads 0 and 3), CONN[IBP_RT_RING_KIDS] to its parent (the
	 * ring's thread opens it).  USES says which of them this node has (bit
	 * I, the parent's last), fixed before the threads start.  Under mu:
	 * the children's slots and fds until the thread has them, STOP.
	 */
	struct ibp_rt_link conn[IBP_RT_RING_CONNS];
	uint8_t conn_state[IBP_RT_RING_CONNS]; /* the ring's thread's copy of their slots */
	uint8_t uses;
	/*
	 * A leaf of the tree (two places of three) needs no connection,
	 * thread or HELLO of its own: its parent is its neighbour on the
	 * ring, and the link of the ring's round between them (rail 0)
	 * carries the leaf's sum up before its endpoint, and the parent's
	 * answer down once the parent's ring and that link's round are over.
	 * LINK: a leaf's link with its parent.  CHILD_LINK: the links of the
	 * children that are leaves (1 and 2; NULL: none, or a head); their
	 * sides in CONN keep the slot (under mu: the link's worker fills it
	 * with the frame, in MSG[2 + i], or closes it) but never a
	 * connection.  CAME: the sides the word that the chain stopped came
	 * from (it goes to the others).
	 */
	struct ibp_rt_link *link;
	struct ibp_rt_link *child_link[IBP_RT_RING_KIDS];
	uint8_t came;
	/* under mu: the thread is over and its answers to the leaf children are built */
	bool over;
	/* child I's sum holds the places [KID_LO[I], KID_HI[I]) */
	uint32_t kid_lo[IBP_RT_RING_KIDS], kid_hi[IBP_RT_RING_KIDS];
	bool stop;
	/* the thread: woken by WAKE_FD, says it is done on DONE_FD (eventfds, -1: none) */
	pthread_t th;
	int wake_fd, done_fd;
	bool running; /* started and not joined */
};

/* G cleared, its fds -1, for X and this node's fingerprint FP (NULL: none). */
void ibp_rt_ring_init(struct ibp_rt_ring *g, struct ibp_rt_ctx *x, const struct ibp_fp *fp);
/* STATE stays OFF without a ring (a step too small, consistency= all off, no memory). */
void ibp_rt_ring_prepare(struct ibp_rt_ring *g);
/*
 * The children's connections the acceptor fills (KIDS[I], NULL: none, or
 * a leaf's, which comes on its link); true when this node takes part in
 * the sum at all (else a HELLO for it is answered that it takes none).
 */
bool ibp_rt_ring_kids(struct ibp_rt_ring *g, struct ibp_rt_link *kids[IBP_RT_RING_KIDS]);
void ibp_rt_ring_spawn(struct ibp_rt_ring *g);
void ibp_rt_ring_wake(struct ibp_rt_ring *g);
void ibp_rt_ring_accept_over(struct ibp_rt_ring *g);

/*
 * The leaves' sums on the ring round's links (the link workers).
 * LEAF_FRAME: what a leaf sends up on L before its endpoint (NULL:
 * nothing, L is not its parent's link).  LINK_INBOX: where a sum frame on
 * L is decoded (NULL: nowhere, L is not an awaited leaf child's), and
 * LINK_FRAME once one came before the peer's endpoint (KEPT: decoded
 * there).  LINK_OVER: L's worker is done with
 * what comes first on it (ENDPOINT: the peer's endpoint came, after a sum
 * frame or without one), or with the whole round (!ENDPOINT: a leaf
 * child's answer may go now).
 */
const struct ibp_oob_msg *ibp_rt_ring_leaf_frame(struct ibp_rt_ring *g,
						 const struct ibp_rt_link *l);
struct ibp_oob_fpsum *ibp_rt_ring_link_inbox(struct ibp_rt_ring *g, const struct ibp_rt_link *l);
void ibp_rt_ring_link_frame(struct ibp_rt_ring *g, struct ibp_rt_link *l, bool kept);
void ibp_rt_ring_link_over(struct ibp_rt_ring *g, struct ibp_rt_link *l, bool endpoint);

/*
 * The summary exchange.  LINKS_MINE: it takes the links (an answer being
 * sent finishes first).  DONE_FD: readable once the thread is done (-1:
 * no thread); JOIN it then (STOP: tell it to end first), after which the
 * caller's thread owns the fields.  WHOLE: whether the whole step's sum is
 * here now (joining a thread that is over).  ANSWER: the ring over, sends
 * what it still owes on the links.  LEAF_HEARS: a leaf reads its parent's
 * answer (NULL: the link closed).
 */
void ibp_rt_ring_links_mine(struct ibp_rt_ring *g);
int ibp_rt_ring_done_fd(const struct ibp_rt_ring *g);
void ibp_rt_ring_join(struct ibp_rt_ring *g, bool stop);
bool ibp_rt_ring_whole(struct ibp_rt_ring *g);
void ibp_rt_ring_answer(struct ibp_rt_ring *g);
void ibp_rt_ring_leaf_hears(struct ibp_rt_ring *g, const struct ibp_oob_fpsum *f);

/* DONE: the whole step's sum judged, the same way on every node */
int ibp_rt_ring_judge(const struct ibp_rt_ring *g, struct ibp_findings *out);
/* BROKEN: why, for the fallback's findings */
void ibp_rt_ring_why(const struct ibp_rt_ring *g, char *buf, size_t len);
void ibp_rt_ring_free(struct ibp_rt_ring *g);

#endif
