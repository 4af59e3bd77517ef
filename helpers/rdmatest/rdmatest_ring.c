/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_ring.c: the step-wide comparison of the cross-node test's
 * fingerprints, a reduction over the places of the plan's ring (oob.h has
 * its frames, fingerprint.h the sum).
 *
 * The sum holds places 0..N-1 on the plan's ring: a group's nodes are
 * listed in the ring's order, and every node judges the same sum.  It is
 * gathered along a tree of those places (ibp_rdmatest_sum_tree,
 * rdmatest.h): the places are cut into clusters of 3, each cluster's
 * middle place its head and the other two its leaves, and the heads form a
 * balanced binary tree over the clusters, every subtree a range of places.
 * A head's children are, in place order, KID[0] (the head of the clusters
 * before its own in its range), KID[1] and KID[2] (its leaves, p - 1 and
 * p + 1) and KID[3] (the head of the clusters after); it joins their sums
 * and its own fingerprint in that order (ibp_fp_sum_merge: adjacent
 * ranges) and sends that up to its PARENT; the root holds the whole step
 * and the complete sum goes back down.  About log2(N / 3) hops one after
 * the other up and as many down, plus the leaves'.
 *
 * The sum needs nothing but fingerprints, which every node has before its
 * first link test, so it runs beside the tests, not after them: a thread of
 * its own on each head, on connections of its own, one from each head to
 * its parent (HELLO round IBP_OOB_RING_ROUND, authenticated and sealed like
 * a link's, with keys of their own).  The thread opens the one to the
 * parent; the acceptor hands it the children heads', and stays for them as
 * for in-links.  A leaf (two places of three) is its head's neighbour on
 * the ring, and the plan's link of the ring's round joins them: the leaf
 * sends its sum on it (rail 0) before its endpoint, the parent's link
 * worker hands it to the thread, and the parent answers on
 * it once both its ring and that link's round are over (ring_thread_over,
 * ibp_rt_ring_link_over, else ibp_rt_ring_answer at the summary exchange);
 * a leaf has no thread, connection or HELLO of its own.  On the links the
 * test's frames and the summary exchange stay as they were otherwise: a
 * chain that stops falls back to the neighbours' FINGERPRINT frames there.
 *
 * Every node of a step big enough takes part unless consistency= is all
 * off, with a fingerprint or not: a node whose fingerprint could not be had
 * says so at once (BROKEN, "sent no fingerprint"), so that nobody waits for
 * its connections.
 *
 * From ibp_rt_ring_spawn to ibp_rt_ring_join the fields of struct
 * ibp_rt_ring are the thread's alone, but for the children's slots, which
 * the acceptor fills under the context's mutex.  This file calls nothing of
 * the run but rdmatest_conn.c (names, addresses, the parent's connection):
 * the owner calls in (rdmatest_ring.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rdmatest_ring.h"

/*
 * A node's tree neighbours, as bits of USES (and GOT, OWE, CAME): its
 * children KID[i] of the tree (rdmatest.h) as bit i, in place order, then
 * its parent; a side's index in CONN is its bit's.
 */
enum {
	RING_KID0 = 1,
	RING_KIDS = (1 << IBP_RT_RING_KIDS) - 1,
	RING_PARENT = 1 << IBP_RT_RING_KIDS,
};

static int ring_index(int side)
{
	return __builtin_ctz((unsigned)side);
}

/* The connection with the tree neighbour on SIDE; NULL when there is none. */
static struct ibp_rt_link *ring_conn(struct ibp_rt_ring *g, int side)
{
	return g->uses & side ? &g->conn[ring_index(side)] : NULL;
}

/* A leaf child's side: its sum comes on the ring round's link, not on a connection. */
static bool ring_linked(const struct ibp_rt_ring *g, int side)
{
	return side != RING_PARENT && g->child_link[ring_index(side)];
}

/* The sides the partial sums come from: the children. */
static int ring_up(const struct ibp_rt_ring *g)
{
	return g->uses & RING_KIDS;
}

/* The side this node's sum goes to and the complete one comes from; 0 at the root. */
static int ring_down(const struct ibp_rt_ring *g)
{
	return g->uses & RING_PARENT;
}

static bool ring_waiting(const struct ibp_rt_ring *g)
{
	return g->state == IBP_RT_RING_GATHER || g->state == IBP_RT_RING_FINAL;
}

/* Whether a frame must still come on SIDE: an awaited child's sum, or the complete sum. */
static bool ring_needs(const struct ibp_rt_ring *g, int side)
{
	if (g->state == IBP_RT_RING_GATHER && (ring_up(g) & side & ~g->got))
		return true;
	return ring_waiting(g) && side == ring_down(g);
}

/*
 * The thread's view of the connection on SIDE (CONN_STATE, its own copy
 * of the slot: the acceptor writes the slot under mu).  OPEN: the
 * thread's and open; CLOSED: it will never carry anything (any more).
 */
static bool ring_open(struct ibp_rt_ring *g, int side)
{
	return ring_conn(g, side) && !ring_linked(g, side) &&
	       g->conn_state[ring_index(side)] == IBP_RT_SLOT_LIVE;
}

static bool ring_closed(struct ibp_rt_ring *g, int side)
{
	return ring_conn(g, side) && g->conn_state[ring_index(side)] == IBP_RT_SLOT_CLOSED;
}

/* SIDE's connection is now the thread's (LIVE) or gone (CLOSED). */
static void ring_set(struct ibp_rt_ring *g, int side, enum ibp_rt_slot st)
{
	struct ibp_rt_link *c = ring_conn(g, side);

	pthread_mutex_lock(&g->x->mu);
	if (st == IBP_RT_SLOT_CLOSED && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	c->slot = st;
	pthread_mutex_unlock(&g->x->mu);
	g->conn_state[ring_index(side)] = (uint8_t)st;
}

/* F: a sum frame of PHASE (GATHER, FINAL: the sum in F is the one to go). */
static void ring_frame(struct ibp_oob_fpsum *f, uint8_t phase)
{
	f->phase = phase;
	f->origin = f->from = 0;
	f->why = 0;
}

/* F: the word that the chain stopped: where, why, with whom (no sum). */
static void ring_word(struct ibp_oob_fpsum *f, uint32_t origin, uint8_t why, uint32_t from)
{
	ring_frame(f, IBP_FPSUM_BROKEN);
	f->origin = origin;
	f->why = why;
	f->from = from;
	ibp_fp_sum_init(&f->sum, 0); /* no sum on the wire */
}

/* F, sealed, on L's connection; 0 or -errno. */
static int fpsum_send(struct ibp_rt_link *l, struct ibp_oob_fpsum *f, int64_t until)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_FPSUM, .fpsum = f};

	return ibp_seal_send(l->fd, &l->seal, &m, until);
}

/*
 * Sends PHASE on SIDE (this node's sum, or where the chain stopped); SIDE
 * open.  The sum is kept in the frame it goes out in (MSG[0]); where
 * the chain stopped goes out in the one frames are read into, whose
 * content is no longer needed then.
 */
static void ring_send(struct ibp_rt_ring *g, int side, uint8_t phase)
{
	struct ibp_rt_link *c = ring_conn(g, side);
	struct ibp_oob_fpsum *f = &g->msg[phase == IBP_FPSUM_BROKEN];

	if (phase == IBP_FPSUM_BROKEN)
		ring_word(f, g->at, g->why, g->from);
	else
		ring_frame(f, phase);
	if (fpsum_send(c, f, ibp_deadline_min(g->x->end, ibp_now_ns() + 200 * IBP_NS_PER_MS)))
		ring_set(g, side, IBP_RT_SLOT_CLOSED); /* that neighbour sees it at once */
}

/* Where the chain stopped, to the tree neighbours it is owed to, once their connections are up. */
static void ring_flush(struct ibp_rt_ring *g)
{
	for (int side = RING_KID0; side <= RING_PARENT; side <<= 1) {
		if (!(g->owe & side))
			continue;
		if (ring_linked(g, side))
			; /* said on the link once the ring is over (ring_answers_build) */
		else if (ring_open(g, side))
			ring_send(g, side, IBP_FPSUM_BROKEN);
		else if (ring_conn(g, side) && !ring_closed(g, side))
			continue; /* not up yet */
		g->owe &= (uint8_t)~side;
	}
}

/*
 * The chain stopped at ORIGIN, at its connection with FROM: fall back, and
 * tell the neighbours on the line (but the side it came from, CAME).
 */
static void ring_break(struct ibp_rt_ring *g, uint32_t origin, uint8_t why, uint32_t from, int came)
{
	if (!ring_waiting(g))
		return;
	g->state = IBP_RT_RING_BROKEN;
	g->at = origin;
	g->why = why;
	g->from = from;
	g->came = (uint8_t)came;
	g->owe = (uint8_t)((RING_KIDS | RING_PARENT) & ~came);
	ring_flush(g);
}

/* The complete sum goes on down to the children. */
static void ring_final_out(struct ibp_rt_ring *g)
{
	for (int side = RING_KID0; side < RING_PARENT; side <<= 1)
		if ((ring_up(g) & side) && ring_open(g, side))
			ring_send(g, side, IBP_FPSUM_FINAL);
}

/* Merges child I's sum, kept in the frame it came in, into SUM; false when it does not fit. */
static bool ring_merge_kid(struct ibp_rt_ring *g, int i)
{
	if (!(g->got & (1 << i)))
		return true;
	if (!ibp_fp_sum_merge(g->sum, &g->msg[2 + i].sum))
		return true;
	ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, g->conn[i].peer, 0);
	return false;
}

/*
 * Every child's sum is in: SUM becomes, in place order, the clusters'
 * before (KID[0]'s, copied into SUM as it came), the leaf before this
 * place (KID[1]), this node, the leaf after (KID[2]) and the clusters'
 * after (KID[3]'s, in SUM_IN).
 */
static void ring_join(struct ibp_rt_ring *g)
{
	int down = ring_down(g);

	if (!(g->got & (1 << IBP_TREE_KID_BEFORE)))
		ibp_fp_sum_init(g->sum, g->x->n);
	if (!ring_merge_kid(g, IBP_TREE_KID_LEFT))
		return;
	if (ibp_fp_sum_add(g->sum, g->pos, g->x->cfg->fingerprint)) {
		ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, g->x->me, 0);
		return;
	}
	if (!ring_merge_kid(g, IBP_TREE_KID_RIGHT))
		return;
	if ((g->got & (1 << IBP_TREE_KID_AFTER)) && ibp_fp_sum_merge(g->sum, g->sum_in)) {
		ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, g->conn[IBP_TREE_KID_AFTER].peer, 0);
		return;
	}
	if (down) { /* this subtree's sum goes up */
		g->state = IBP_RT_RING_FINAL;
		ring_send(g, down, IBP_FPSUM_GATHER);
		return;
	}
	/*
	 * The root: the whole step's sum goes back down, without the pairs
	 * the step agrees on (the judgment is the same; a step that agrees
	 * sends a bare header)
	 */
	ibp_fp_sum_prune(g->sum);
	g->state = IBP_RT_RING_DONE;
	ring_final_out(g);
}

/*
 * Moves the chain on as far as the connections allow: stops it where one
 * it needs closed, joins once every child's sum is in and the way on is
 * up, sends what it owes.
 */
static void ring_step(struct ibp_rt_ring *g)
{
	for (int side = RING_KID0; side <= RING_PARENT; side <<= 1)
		if (ring_needs(g, side) && ring_closed(g, side))
			/* a leaf child that sent its endpoint without a sum takes no part */
			ring_break(g, g->x->me,
				   ring_conn(g, side)->no_ring ? IBP_FPSUM_WHY_NO_PART
							       : IBP_FPSUM_WHY_LINK,
				   ring_conn(g, side)->peer, side);
	if (g->state == IBP_RT_RING_GATHER && !(ring_up(g) & ~g->got) &&
	    (!ring_down(g) || ring_open(g, ring_down(g)))) {
		ring_join(g);
		ring_step(g); /* when sending failed */
		return;
	}
	ring_flush(g);
}

/* The complete sum from the parent: checked, kept; false when it is not one. */
static bool ring_final_in(struct ibp_rt_ring *g, const struct ibp_oob_fpsum *f)
{
	const struct ibp_fp_sum *s = &f->sum;

	if (g->state != IBP_RT_RING_FINAL || s->nnodes != g->x->n || s->first != 0 ||
	    s->n_merged != g->x->n)
		return false;
	ibp_fp_sum_copy(g->sum, s);
	g->state = IBP_RT_RING_DONE;
	return true;
}

/* Where the chain stopped, as the neighbour PEER on SIDE tells it. */
static void ring_broken_in(struct ibp_rt_ring *g, int side, const struct ibp_oob_fpsum *f,
			   uint32_t peer)
{
	if (f->origin >= g->x->n || f->from >= g->x->n)
		ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, peer, side);
	else if ((f->why == IBP_FPSUM_WHY_NO_FP || f->why == IBP_FPSUM_WHY_NO_PART) &&
		 f->origin == peer && f->from == peer)
		/*
		 * the neighbour has no fingerprint, or takes no part: the chain
		 * stops here, said here
		 */
		ring_break(g, g->x->me, f->why, peer, side);
	else
		ring_break(g, f->origin, f->why, f->from, side);
}

/* A sum frame from the neighbour on SIDE (authenticated: it came sealed). */
static void ring_recv(struct ibp_rt_ring *g, int side, const struct ibp_oob_fpsum *f)
{
	const struct ibp_fp_sum *s = &f->sum;
	uint32_t peer = ring_conn(g, side)->peer;

	switch (f->phase) {
	case IBP_FPSUM_GATHER: {
		/* child I's places: [KID_LO[I], KID_HI[I]) */
		int i = ring_index(side);

		if (g->state != IBP_RT_RING_GATHER || !(ring_up(g) & side & ~g->got) ||
		    s->nnodes != g->x->n || s->first != g->kid_lo[i] ||
		    s->n_merged != g->kid_hi[i] - g->kid_lo[i]) {
			ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, peer, 0);
			return;
		}
		/* a leaf's stays in the frame its link handed over, in MSG[2 + I] */
		if (i == IBP_TREE_KID_BEFORE || i == IBP_TREE_KID_AFTER)
			ibp_fp_sum_copy(i == IBP_TREE_KID_BEFORE ? g->sum : g->sum_in, s);
		g->got |= (uint8_t)side;
		ring_step(g); /* a node waits for all its children */
		return;
	}
	case IBP_FPSUM_FINAL: /* from the parent */
		if (side != ring_down(g) || !ring_final_in(g, f)) {
			ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, peer, 0);
			return;
		}
		ring_final_out(g);
		return;
	case IBP_FPSUM_BROKEN:
		ring_broken_in(g, side, f, peer);
		return;
	default:
		ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, peer, 0);
	}
}

/* One frame from SIDE: these connections carry sums and nothing else. */
static void ring_read(struct ibp_rt_ring *g, int side)
{
	struct ibp_rt_link *c = ring_conn(g, side);
	struct ibp_oob_msg m = {.fpsum = &g->msg[1]};
	int rc = ibp_seal_recv(c->fd, &c->seal, &m,
			       ibp_deadline_min(g->x->end, ibp_now_ns() + 100 * IBP_NS_PER_MS));

	if (rc && rc != -ENOBUFS) {
		ring_set(g, side, IBP_RT_SLOT_CLOSED);
		ring_step(g);
		return;
	}
	if (!rc && m.type == IBP_OOB_FPSUM)
		ring_recv(g, side, m.fpsum);
	else
		ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, c->peer, 0);
}

/* places per cluster of the tree (rdmatest.h) */
#define CLUSTER IBP_RDMATEST_TREE_WIDTH

/* Cluster C's head: its middle place (the first of a shorter one). */
static uint32_t tree_head(uint32_t n, uint32_t c)
{
	return n - c * CLUSTER < CLUSTER ? c * CLUSTER : c * CLUSTER + CLUSTER / 2;
}

int ibp_rdmatest_sum_tree(uint32_t nnodes, uint32_t place, struct ibp_rdmatest_tree *t)
{
	uint32_t c, lo, hi, mid;

	if (place >= nnodes)
		return -EINVAL;
	c = place / CLUSTER;
	for (int i = 0; i < IBP_RDMATEST_TREE_KIDS; i++)
		t->kid[i] = IBP_RDMATEST_TREE_NONE;
	t->lo = place;
	t->hi = place + 1;
	if (place != tree_head(nnodes, c)) { /* a leaf: its head is its parent */
		t->parent = tree_head(nnodes, c);
		return 0;
	}
	/* the cluster's places beside its head */
	if (place > c * CLUSTER)
		t->kid[IBP_TREE_KID_LEFT] = place - 1;
	if (place + 1 < nnodes && place + 1 < c * CLUSTER + CLUSTER)
		t->kid[IBP_TREE_KID_RIGHT] = place + 1;
	/* the heads: down the balanced tree over the clusters from its root, O(log N) */
	lo = 0;
	hi = (nnodes + CLUSTER - 1) / CLUSTER;
	mid = hi / 2;
	t->parent = IBP_RDMATEST_TREE_NONE;
	while (mid != c) {
		t->parent = tree_head(nnodes, mid);
		if (c < mid)
			hi = mid;
		else
			lo = mid + 1;
		mid = lo + (hi - lo) / 2;
	}
	t->lo = lo * CLUSTER;
	t->hi = hi * CLUSTER < nnodes ? hi * CLUSTER : nnodes;
	if (lo < c)
		t->kid[IBP_TREE_KID_BEFORE] = tree_head(nnodes, lo + (c - lo) / 2);
	if (c + 1 < hi)
		t->kid[IBP_TREE_KID_AFTER] = tree_head(nnodes, c + 1 + (hi - c - 1) / 2);
	return 0;
}

/* Whether PLACE is a leaf of the tree (not its cluster's head). */
static bool ring_leaf(const struct ibp_rt_ring *g, uint32_t place)
{
	return place != tree_head(g->x->n, place / CLUSTER);
}

/*
 * The ring round's rail-0 link with the neighbour at place Q (P +- 1): P
 * sends to P + 1 in that round and receives from P - 1.  NULL when the
 * plan's link is not with that node.
 */
static struct ibp_rt_link *ring_neighbour_link(struct ibp_rt_ring *g, uint32_t q)
{
	struct ibp_rt_link *l = ibp_rt_link_at(g->x, 0, g->round, q > g->pos);

	return l && l->peer == g->order[q] ? l : NULL;
}

/*
 * A leaf: its sum (this node alone), or where the chain stops when it
 * has none, goes up on the link with its parent before its endpoint, in
 * MSG[0], built once here; the answer comes down on the same link.
 */
static void ring_prepare_leaf(struct ibp_rt_ring *g, uint32_t parent)
{
	struct ibp_rt_link *l = ring_neighbour_link(g, parent);
	struct ibp_oob_fpsum *m;

	if (!l) /* the plan has no such link: the neighbours' comparison */
		return;
	g->msg = malloc(sizeof(*g->msg)); /* cleared as it is used */
	if (!g->msg)
		return;
	m = g->msg;
	g->up = (struct ibp_oob_msg){.type = IBP_OOB_FPSUM, .fpsum = m};
	g->link = l;
	g->state = IBP_RT_RING_FINAL;
	ring_frame(m, IBP_FPSUM_GATHER);
	if (g->fp) {
		g->sum = &m->sum;
		ibp_fp_sum_init(g->sum, g->x->n);
		if (!ibp_fp_sum_add(g->sum, g->pos, g->x->cfg->fingerprint))
			return;
		ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, g->x->me, 0);
	} else {
		ring_break(g, g->x->me, IBP_FPSUM_WHY_NO_FP, g->x->me, 0);
	}
	ring_word(m, g->at, g->why, g->from);
}

void ibp_rt_ring_init(struct ibp_rt_ring *g, struct ibp_rt_ctx *x, const struct ibp_fp *fp)
{
	memset(g, 0, sizeof(*g));
	g->x = x;
	g->fp = fp;
	g->wake_fd = g->done_fd = -1;
	for (size_t i = 0; i < IBP_RT_RING_CONNS; i++)
		g->conn[i].fd = -1;
}

void ibp_rt_ring_prepare(struct ibp_rt_ring *g)
{
	unsigned round = 0;
	struct ibp_rdmatest_tree t;
	struct ibp_rt_link *by_link[IBP_RT_RING_KIDS] = {NULL};
	bool linked = false;
	uint32_t p, first;
	uint8_t uses = 0;

	/*
	 * consistency= all off: no fingerprint anywhere, no sum.  Otherwise a
	 * node whose fingerprint could not be had takes part to say so.
	 */
	if (g->x->n < IBP_RT_RING_MIN || !g->x->n_rails ||
	    (!g->x->cfg->fingerprint && !ibp_policy_consistency_wanted(g->x->pol)))
		return;
	g->order = calloc(g->x->n, sizeof(*g->order));
	/* no memory, or a ring the plan does not have: the neighbours' comparison */
	if (!g->order || ibp_rdmatest_ring_order(g->x->n, g->x->leaf, g->order, &round) ||
	    round < 1 || round > ibp_rt_n_rounds(g->x))
		return;
	for (p = 0; p < g->x->n && g->order[p] != g->x->me; p++)
		;
	if (p == g->x->n || g->x->plan->send_to[round - 1] != g->order[(p + 1) % g->x->n])
		return;
	g->pos = p;
	g->round = round;
	/* the links' peers that are leaves: they say their fingerprint late, if at all */
	for (uint32_t q = 0; q < g->x->n; q++)
		for (size_t k = 0; k < g->x->n_links; k++)
			if (g->x->links[k].peer == g->order[q])
				g->x->links[k].peer_leaf = ring_leaf(g, q);
	ibp_rdmatest_sum_tree(g->x->n, p, &t);
	if (ring_leaf(g, p)) {
		ring_prepare_leaf(g, t.parent);
		return;
	}
	/* the places each child's sum holds: clusters before, one leaf each, clusters after */
	first = p / CLUSTER * CLUSTER;
	for (int i = 0; i < IBP_RT_RING_KIDS; i++) {
		g->kid_lo[i] = t.kid[i];
		g->kid_hi[i] = t.kid[i] + 1;
	}
	g->kid_lo[IBP_TREE_KID_BEFORE] = t.lo;
	g->kid_hi[IBP_TREE_KID_BEFORE] = first;
	g->kid_lo[IBP_TREE_KID_AFTER] = first + CLUSTER;
	g->kid_hi[IBP_TREE_KID_AFTER] = t.hi;
	for (int side = RING_KID0; side <= RING_PARENT; side <<= 1) {
		/* rail 0's first link gives the template: rail, device, port */
		const struct ibp_rt_link *l = ibp_rt_link_at(g->x, 0, 1, true);
		int i = ring_index(side);
		struct ibp_rt_link *c = &g->conn[i];
		uint32_t q = side == RING_PARENT ? t.parent : t.kid[i];

		if (q == IBP_RDMATEST_TREE_NONE)
			continue;
		memset(c, 0, sizeof(*c));
		c->fd = -1;
		c->out = side == RING_PARENT;
		c->peer = g->order[q];
		c->r = l->r;
		c->r.from = c->out ? g->x->me : c->peer;
		c->r.to = c->out ? c->peer : g->x->me;
		c->r.round = IBP_OOB_RING_ROUND;
		c->r.status = IBP_LINK_UNTESTED;
		uses |= (uint8_t)side;
		if (side != RING_PARENT && ring_leaf(g, q)) {
			/* a leaf child: its sum comes on the plan's link with it */
			by_link[i] = ring_neighbour_link(g, q);
			if (!by_link[i])
				return;
			linked = true;
			c->slot = IBP_RT_SLOT_EMPTY;
		} else {
			/* a neighbour without an address: nothing to wait for */
			c->slot = ibp_rt_resolve(g->x, c->peer, c->peer_addr, sizeof(c->peer_addr))
				      ? IBP_RT_SLOT_CLOSED
				      : IBP_RT_SLOT_EMPTY;
		}
		g->conn_state[i] = (uint8_t)c->slot;
	}
	/*
	 * The frames it goes out in and comes in, allocated once: the sum
	 * lives in the first; then leaf child I's in MSG[2 + I] as its
	 * link hands it over (cleared as they are used; only what a frame
	 * holds is ever touched)
	 */
	g->msg = malloc((linked ? 2 + IBP_TREE_KID_RIGHT + 1 : 2) * sizeof(*g->msg));
	if (!g->msg)
		return; /* no ring: a HELLO for it is answered so */
	g->uses = uses;
	memcpy(g->child_link, by_link, sizeof(by_link));
	g->state = IBP_RT_RING_GATHER;
	if (!g->fp)
		return;
	g->sum_in = malloc(sizeof(*g->sum_in));
	if (!g->sum_in)
		return;
	g->sum = &g->msg[0].sum;
	ibp_fp_sum_init(g->sum, g->x->n);
}

bool ibp_rt_ring_kids(struct ibp_rt_ring *g, struct ibp_rt_link *kids[IBP_RT_RING_KIDS])
{
	for (int i = 0; i < IBP_RT_RING_KIDS; i++)
		kids[i] = ring_linked(g, 1 << i) ? NULL : ring_conn(g, 1 << i);
	return g->uses != 0;
}

/* ---- the ring's thread -------------------------------------------------- */

/*
 * A child opens its connection until this deadline, as this node opens its
 * parent's: a slot still empty then stays empty.
 */
static int64_t ring_slot_deadline(const struct ibp_rt_ring *g)
{
	return g->x->round_end[g->round - 1];
}

/*
 * Takes the children's connections once the acceptor filled their slots,
 * and the leaf children's frames once their links handed them over
 * (*HANDED: their sides); true: stop.  *WAKE: when to look again without
 * a frame or a wake-up.
 */
static bool ring_take(struct ibp_rt_ring *g, int64_t *wake, uint8_t *handed)
{
	bool stop, late = ibp_deadline_expired(ring_slot_deadline(g), ibp_now_ns());

	*wake = g->x->end;
	pthread_mutex_lock(&g->x->mu);
	stop = g->stop;
	for (int side = RING_KID0; side < RING_PARENT; side <<= 1) {
		struct ibp_rt_link *c = ring_conn(g, side);

		if (!c)
			continue;
		if (c->slot == IBP_RT_SLOT_FILLED) {
			c->slot = IBP_RT_SLOT_LIVE;
			if (ring_linked(g, side))
				*handed |= (uint8_t)side;
		} else if (c->slot == IBP_RT_SLOT_EMPTY && late)
			c->slot =
			    IBP_RT_SLOT_CLOSED; /* a late claimant is refused, as for a link */
		else if (c->slot == IBP_RT_SLOT_EMPTY)
			*wake = ibp_deadline_min(*wake, ring_slot_deadline(g));
		g->conn_state[ring_index(side)] = (uint8_t)c->slot;
	}
	pthread_mutex_unlock(&g->x->mu);
	return stop;
}

/* Opens the parent's connection: like a link's, until the ring's round's deadline. */
static void ring_connect(struct ibp_rt_ring *g)
{
	struct ibp_rt_link *c = ring_conn(g, RING_PARENT);
	int fd;

	if (!c || g->conn_state[ring_index(RING_PARENT)] != IBP_RT_SLOT_EMPTY)
		return;
	fd = ibp_rt_connect(g->x, c, ring_slot_deadline(g));
	pthread_mutex_lock(&g->x->mu);
	c->fd = fd;
	pthread_mutex_unlock(&g->x->mu);
	ring_set(g, RING_PARENT, fd >= 0 ? IBP_RT_SLOT_LIVE : IBP_RT_SLOT_CLOSED);
	/* IBP_HELLO_NO_RING: an authenticated word that it takes no part */
	if (fd < 0 && c->no_ring)
		ring_break(g, g->x->me, IBP_FPSUM_WHY_NO_PART, c->peer, 0);
}

static void ring_thread_over(struct ibp_rt_ring *g); /* the leaves' links, below */

static void *ring_thread(void *arg)
{
	struct ibp_rt_ring *g = arg;
	uint64_t one = 1;
	int64_t wake;
	ssize_t w;

	/* no fingerprint to add: nobody is to wait for this node */
	if (!g->sum || !g->sum_in)
		ring_break(g, g->x->me, IBP_FPSUM_WHY_NO_FP, g->x->me, 0);
	ring_connect(g);
	for (;;) {
		struct pollfd pfd[4];
		int side[4];
		size_t np = 1;
		uint8_t handed = 0;
		int n;

		if (ring_take(g, &wake, &handed))
			break;
		/* a leaf child's frame, as its link's worker read it (written before FILLED) */
		for (int s = RING_KID0; s < RING_PARENT; s <<= 1)
			if (handed & s)
				ring_recv(g, s, &g->msg[2 + ring_index(s)]);
		ring_step(g);
		if (!ring_waiting(g) && !g->owe)
			break;
		pfd[0] = (struct pollfd){.fd = g->wake_fd, .events = POLLIN};
		for (int s = RING_KID0; s <= RING_PARENT; s <<= 1) {
			if (!ring_open(g, s))
				continue;
			pfd[np] = (struct pollfd){.fd = ring_conn(g, s)->fd, .events = POLLIN};
			side[np++] = s;
		}
		n = poll(pfd, np, ibp_deadline_poll_ms(wake, ibp_now_ns()));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n == 0 && ibp_deadline_expired(g->x->end, ibp_now_ns())))
			break; /* the deadline: the summary exchange says so */
		if (pfd[0].revents) {
			uint64_t v;

			if (read(g->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
		}
		for (size_t i = 1; i < np; i++)
			if (pfd[i].revents && ring_open(g, side[i]))
				ring_read(g, side[i]);
	}
	ring_thread_over(g);
	w = write(g->done_fd, &one, sizeof(one));
	(void)w; /* the exchange also ends at the deadline */
	return NULL;
}

void ibp_rt_ring_spawn(struct ibp_rt_ring *g)
{
	/* a leaf has no thread: its links carry its sum and the answer */
	if (!ring_waiting(g) || g->link)
		return;
	g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->wake_fd >= 0 && g->done_fd >= 0)
		g->running = !pthread_create(&g->th, NULL, ring_thread, g);
	if (!g->running) { /* the neighbours' comparison; the slot is refused */
		g->state = IBP_RT_RING_BROKEN;
		g->uses = 0;
		/* a leaf child's frame is then answered that this node takes no part */
		g->child_link[0] = g->child_link[1] = NULL;
	}
}

/*
 * Wakes the thread.  An eventfd's write fails only when its count is
 * full, and then the thread is awake anyway.
 */
void ibp_rt_ring_wake(struct ibp_rt_ring *g)
{
	uint64_t one = 1;
	ssize_t w = 0;

	if (g->running)
		w = write(g->wake_fd, &one, sizeof(one));
	(void)w;
}

void ibp_rt_ring_accept_over(struct ibp_rt_ring *g)
{
	pthread_mutex_lock(&g->x->mu);
	for (int side = RING_KID0; side < RING_PARENT; side <<= 1) {
		struct ibp_rt_link *c = ring_conn(g, side);

		/* a leaf child's side is its link's worker's to close */
		if (c && !ring_linked(g, side) && c->slot == IBP_RT_SLOT_EMPTY)
			c->slot = IBP_RT_SLOT_CLOSED;
	}
	pthread_mutex_unlock(&g->x->mu);
	ibp_rt_ring_wake(g);
}

int ibp_rt_ring_done_fd(const struct ibp_rt_ring *g)
{
	return g->running ? g->done_fd : -1;
}

void ibp_rt_ring_join(struct ibp_rt_ring *g, bool stop)
{
	if (g->running) {
		if (stop) {
			pthread_mutex_lock(&g->x->mu);
			g->stop = true;
			pthread_mutex_unlock(&g->x->mu);
			ibp_rt_ring_wake(g);
		}
		pthread_join(g->th, NULL);
		g->running = false;
	}
	if (!ring_waiting(g))
		return;
	/* the deadline, or a connection closed with a frame still to come */
	g->why = IBP_FPSUM_WHY_NONE;
	g->at = g->x->me;
	for (int side = RING_KID0; side <= RING_PARENT; side <<= 1) {
		if (ring_needs(g, side) && ring_closed(g, side)) {
			g->why = IBP_FPSUM_WHY_LINK;
			g->from = ring_conn(g, side)->peer;
		}
	}
	g->state = IBP_RT_RING_BROKEN;
}

bool ibp_rt_ring_whole(struct ibp_rt_ring *g)
{
	struct pollfd pfd = {.fd = ibp_rt_ring_done_fd(g), .events = POLLIN};

	if (pfd.fd >= 0 && poll(&pfd, 1, 0) == 1)
		ibp_rt_ring_join(g, false);
	return !g->running && g->state == IBP_RT_RING_DONE;
}

int ibp_rt_ring_judge(const struct ibp_rt_ring *g, struct ibp_findings *out)
{
	const char **names = calloc(g->x->n, sizeof(*names));
	int rc;

	if (!names)
		return -ENOMEM;
	/* the sum counts places on the ring: NAMES by place */
	for (uint32_t i = 0; i < g->x->n; i++)
		names[i] = ibp_rt_node_name(g->x, g->order[i]);
	rc = ibp_fp_sum_judge(g->sum, names, g->x->pol, g->pos, out);
	free(names);
	return rc;
}

void ibp_rt_ring_why(const struct ibp_rt_ring *g, char *buf, size_t len)
{
	const char *from = ibp_rt_node_name(g->x, g->from);
	const char *at = ibp_rt_node_name(g->x, g->at);

	switch (g->why) {
	case IBP_FPSUM_WHY_LINK:
		ibp_rt_setf(buf, len,
			    "the step-wide comparison stopped at %s: no connection with %s", at,
			    from);
		break;
	case IBP_FPSUM_WHY_NO_FP:
		ibp_rt_setf(buf, len,
			    "the step-wide comparison stopped at %s: %s sent no fingerprint", at,
			    from);
		break;
	case IBP_FPSUM_WHY_NO_PART:
		ibp_rt_setf(buf, len,
			    "the step-wide comparison stopped at %s: %s takes no part in it", at,
			    from);
		break;
	case IBP_FPSUM_WHY_BAD:
		ibp_rt_setf(
		    buf, len,
		    "the step-wide comparison stopped at %s: %s's sum was not the expected one", at,
		    from);
		break;
	default:
		ibp_rt_setf(buf, len, "the step-wide comparison did not finish by the deadline");
	}
}

void ibp_rt_ring_free(struct ibp_rt_ring *g)
{
	for (int i = 0; i < IBP_RT_RING_CONNS; i++) {
		if (g->conn[i].fd >= 0)
			close(g->conn[i].fd);
		g->conn[i].fd = -1;
		ibp_seal_clear(&g->conn[i].seal);
	}
	if (g->wake_fd >= 0)
		close(g->wake_fd);
	if (g->done_fd >= 0)
		close(g->done_fd);
	g->wake_fd = g->done_fd = -1;
	free(g->msg);
	free(g->sum_in);
	free(g->order);
	g->msg = NULL;
	g->sum = g->sum_in = NULL;
	g->order = NULL;
}

/* ---- the leaves' links -------------------------------------------------- */

/* Which leaf child L is the link of (its index among the children), -1 none. */
static int ring_child_of(const struct ibp_rt_ring *g, const struct ibp_rt_link *l)
{
	for (int i = 0; i < IBP_RT_RING_KIDS; i++)
		if (g->child_link[i] == l)
			return i;
	return -1;
}

const struct ibp_oob_msg *ibp_rt_ring_leaf_frame(struct ibp_rt_ring *g, const struct ibp_rt_link *l)
{
	/* built by ring_prepare_leaf and only read from then on, until the summary */
	return g->link && l == g->link ? &g->up : NULL;
}

/*
 * The frame of leaf child I is decoded straight into MSG[2 + I] by its
 * link's worker, without the lock: nobody reads it before the slot is
 * FILLED (under mu, by LINK_FRAME), and once it is, no worker is given it
 * again.
 */
struct ibp_oob_fpsum *ibp_rt_ring_link_inbox(struct ibp_rt_ring *g, const struct ibp_rt_link *l)
{
	int i = ring_child_of(g, l);
	struct ibp_oob_fpsum *in = NULL;

	if (i < 0)
		return NULL;
	pthread_mutex_lock(&g->x->mu);
	if (g->conn[i].slot == IBP_RT_SLOT_EMPTY)
		in = &g->msg[2 + i];
	pthread_mutex_unlock(&g->x->mu);
	return in;
}

void ibp_rt_ring_link_frame(struct ibp_rt_ring *g, struct ibp_rt_link *l, bool kept)
{
	int i = ring_child_of(g, l);
	bool wake = false;

	pthread_mutex_lock(&g->x->mu);
	if (i < 0) {
		l->sum_owed = true; /* not a child of this node's: told so at the summary */
	} else if (kept && g->conn[i].slot == IBP_RT_SLOT_EMPTY) {
		g->conn[i].slot = IBP_RT_SLOT_FILLED;
		wake = true;
	} /* else the connection came again: the first frame counts */
	pthread_mutex_unlock(&g->x->mu);
	if (wake)
		ibp_rt_ring_wake(g);
}

/*
 * The ring is over (its thread's last act, or the caller's thread once it
 * joined it): the answers to the leaf children, built once and only read
 * from then on, the complete sum in MSG[0] or where the chain stopped
 * in MSG[1] (the frame read into: no longer needed).
 */
static bool ring_answers_build(struct ibp_rt_ring *g)
{
	if (ring_waiting(g))
		return false;
	bool linked = false;

	for (int i = 0; i < IBP_RT_RING_KIDS; i++)
		linked |= g->child_link[i] != NULL;
	if (!linked)
		return true;
	if (g->state == IBP_RT_RING_DONE)
		ring_frame(&g->msg[0], IBP_FPSUM_FINAL);
	else
		ring_word(&g->msg[1], g->at, g->why, g->from);
	return true;
}

/*
 * Whether leaf child I is owed the answer now (under mu): its frame came,
 * the ring is over and said nothing to it yet; SENT when the word that the
 * chain stopped came from there.
 */
static bool ring_answer_owed(struct ibp_rt_ring *g, int i)
{
	struct ibp_rt_link *l = g->child_link[i];

	if (!l || !g->over || ring_waiting(g) || l->answer == IBP_RT_ANSWER_SENDING ||
	    l->answer == IBP_RT_ANSWER_SENT ||
	    (g->conn[i].slot != IBP_RT_SLOT_FILLED && g->conn[i].slot != IBP_RT_SLOT_LIVE))
		return false;
	if (g->state != IBP_RT_RING_DONE && (g->came & (1 << i))) {
		l->answer = IBP_RT_ANSWER_SENT;
		return false;
	}
	return true;
}

/* Sends leaf child I its answer on its link (the caller has the link); SENT after. */
static void ring_answer_send(struct ibp_rt_ring *g, int i)
{
	struct ibp_rt_link *l = g->child_link[i];
	struct ibp_oob_fpsum *f = &g->msg[g->state == IBP_RT_RING_DONE ? 0 : 1];

	if (l->fd >= 0)
		(void)fpsum_send(l, f,
				 ibp_deadline_min(g->x->end, ibp_now_ns() + 200 * IBP_NS_PER_MS));
	pthread_mutex_lock(&g->x->mu);
	l->answer = IBP_RT_ANSWER_SENT;
	pthread_cond_broadcast(&g->x->cv);
	pthread_mutex_unlock(&g->x->mu);
}

/*
 * The ring's thread is over: the leaf children whose links are idle get
 * their answer now (not when it stopped waiting: the caller's thread says
 * that at the summary exchange, if there is still time).
 */
static void ring_thread_over(struct ibp_rt_ring *g)
{
	bool send[IBP_RT_RING_KIDS] = {false};

	if (!ring_answers_build(g))
		return;
	pthread_mutex_lock(&g->x->mu);
	g->over = true;
	for (int i = 0; i < IBP_RT_RING_KIDS; i++)
		if (ring_answer_owed(g, i) && g->child_link[i]->answer == IBP_RT_ANSWER_IDLE) {
			g->child_link[i]->answer = IBP_RT_ANSWER_SENDING;
			send[i] = true;
		}
	pthread_mutex_unlock(&g->x->mu);
	for (int i = 0; i < IBP_RT_RING_KIDS; i++)
		if (send[i])
			ring_answer_send(g, i);
}

void ibp_rt_ring_link_over(struct ibp_rt_ring *g, struct ibp_rt_link *l, bool endpoint)
{
	int i = ring_child_of(g, l);
	bool wake = false, send = false;

	if (i < 0)
		return;
	pthread_mutex_lock(&g->x->mu);
	if (g->conn[i].slot == IBP_RT_SLOT_EMPTY) {
		/* its endpoint without a sum first: it takes no part; else the link failed */
		g->conn[i].no_ring = endpoint;
		g->conn[i].slot = IBP_RT_SLOT_CLOSED;
		wake = true;
	}
	if (!endpoint && l->answer == IBP_RT_ANSWER_BUSY) {
		/* the round is over: the answer goes now if the ring is, else when it is */
		l->answer = IBP_RT_ANSWER_IDLE;
		if (ring_answer_owed(g, i)) {
			l->answer = IBP_RT_ANSWER_SENDING;
			send = true;
		}
	}
	pthread_mutex_unlock(&g->x->mu);
	if (wake)
		ibp_rt_ring_wake(g);
	if (send)
		ring_answer_send(g, i);
}

void ibp_rt_ring_links_mine(struct ibp_rt_ring *g)
{
	int64_t until = ibp_deadline_min(g->x->end, ibp_now_ns() + 300 * IBP_NS_PER_MS);
	struct timespec ts = {.tv_sec = until / IBP_NS_PER_S, .tv_nsec = until % IBP_NS_PER_S};

	pthread_mutex_lock(&g->x->mu);
	for (int i = 0; i < IBP_RT_RING_KIDS; i++) {
		struct ibp_rt_link *l = g->child_link[i];

		if (!l)
			continue;
		/* an answer on its way (the ring's thread): the link is the summary's after it */
		while (l->answer == IBP_RT_ANSWER_SENDING)
			if (pthread_cond_timedwait(&g->x->cv, &g->x->mu, &ts) == ETIMEDOUT)
				break;
		if (l->answer != IBP_RT_ANSWER_SENT)
			l->answer = IBP_RT_ANSWER_MAIN;
	}
	pthread_mutex_unlock(&g->x->mu);
}

void ibp_rt_ring_answer(struct ibp_rt_ring *g)
{
	struct ibp_oob_fpsum *word = NULL;

	if (g->running || ring_waiting(g))
		return; /* not over yet */
	/* the thread never ran, or stopped waiting: the answers are built here */
	if (!g->over)
		g->over = ring_answers_build(g);
	for (int i = 0; i < IBP_RT_RING_KIDS; i++)
		if (g->child_link[i] && g->child_link[i]->answer == IBP_RT_ANSWER_MAIN &&
		    ring_answer_owed(g, i))
			ring_answer_send(g, i);
	for (size_t k = 0; k < g->x->n_links; k++) {
		struct ibp_rt_link *l = &g->x->links[k];

		if (!l->sum_owed || l->sum_answered || l->fd < 0)
			continue;
		if (!word)
			word = malloc(sizeof(*word));
		if (!word)
			return; /* it waits to its deadline */
		ring_word(word, g->x->me, IBP_FPSUM_WHY_NO_PART, g->x->me);
		l->sum_answered = true;
		if (fpsum_send(l, word,
			       ibp_deadline_min(g->x->end, ibp_now_ns() + 200 * IBP_NS_PER_MS))) {
			close(l->fd);
			l->fd = -1;
		}
	}
	free(word);
}

void ibp_rt_ring_leaf_hears(struct ibp_rt_ring *g, const struct ibp_oob_fpsum *f)
{
	uint32_t parent = g->link->peer;

	if (g->state != IBP_RT_RING_FINAL)
		return;
	if (!f)
		ring_break(g, g->x->me, IBP_FPSUM_WHY_LINK, parent, 0);
	else if (f->phase == IBP_FPSUM_BROKEN)
		ring_broken_in(g, 0, f, parent);
	else if (f->phase != IBP_FPSUM_FINAL || !ring_final_in(g, f))
		ring_break(g, g->x->me, IBP_FPSUM_WHY_BAD, parent, 0);
}
