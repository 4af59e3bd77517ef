/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_summary.c: the summary exchange (rdmatest_summary.h).  Every
 * frame read here came sealed under a link's keys: authenticated before
 * any of it is used.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmatest_summary.h"

static void own_links(struct ibp_rt_exchange *e, struct ibp_oob_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->node = e->x->me;
	s->nnodes = e->x->n;
	s->plan = e->x->plan->digest;
	for (size_t i = 0; i < e->x->n_links && s->n_links < IBP_OOB_MAX_LINKS; i++) {
		const struct ibp_rt_link *l = &e->x->links[i];
		struct ibp_oob_link *x = &s->links[s->n_links++];

		x->from = l->r.from;
		x->to = l->r.to;
		x->round = l->r.round;
		x->rail = l->r.rail;
		x->status = (uint8_t)l->r.status;
		ibp_rt_known_add(e->known, x);
	}
	/* This node's leaf and its peers' (SLURM_TOPOLOGY_ADDR), this node first. */
	for (size_t i = 0; i < e->leaves->n && s->n_leaves < IBP_OOB_MAX_LEAVES; i++)
		s->leaves[s->n_leaves++] = e->leaves->v[i];
}

/*
 * A frame from L's peer (authenticated: it came sealed): its fingerprint or
 * its summary.  A peer may still send link messages it had queued: they
 * are skipped.
 */
static void take_frame(struct ibp_rt_exchange *e, struct ibp_rt_link *l,
		       const struct ibp_oob_msg *m, bool want_fp)
{
	const struct ibp_oob_summary *s = m->summary;

	if (m->type == IBP_OOB_FINGERPRINT && want_fp)
		ibp_rt_fp_keep(e->fps, l->peer, m->fingerprint);
	if (m->type != IBP_OOB_SUMMARY || l->summary_in)
		return;
	l->summary_in = true;
	if (s->node != l->peer || s->nnodes != e->x->n)
		return;
	e->known->n_summaries++;
	if (s->plan != e->x->plan->digest && !e->known->plan_mismatch) {
		e->known->plan_mismatch = true;
		e->known->mismatch_node = l->peer;
		e->known->mismatch_digest = s->plan;
	}
	for (size_t k = 0; k < s->n_links; k++)
		ibp_rt_known_add(e->known, &s->links[k]);
	for (size_t k = 0; k < s->n_leaves && !e->x->cfg->topology; k++)
		ibp_rt_leaves_add(e->leaves, e->x->n, s->leaves[k].node, s->leaves[k].name);
}

/* This node's fingerprint on every rail-0 link still up, for the neighbours' comparison. */
static void send_fingerprint(struct ibp_rt_exchange *e)
{
	const struct ibp_oob_msg *fpm = ibp_rt_fp_frame(e->fps);

	if (!fpm)
		return;
	for (size_t i = 0; i < e->x->n_links; i++) {
		struct ibp_rt_link *l = &e->x->links[i];

		/* not to a peer it reached already, before one of their endpoints */
		if (l->fd >= 0 && l->r.rail == 0 && !ibp_rt_fp_reached(e->fps, l) &&
		    ibp_seal_send(
			l->fd, &l->seal, fpm,
			ibp_deadline_min(e->x->end, ibp_now_ns() + 200 * IBP_NS_PER_MS))) {
			close(l->fd);
			l->fd = -1;
		}
	}
}

/* A leaf waiting for its parent's answer on the ring round's link. */
static bool leaf_waits(const struct ibp_rt_exchange *e)
{
	return e->ring->link && e->ring->state == IBP_RT_RING_FINAL;
}

/*
 * The leaf's parent answered (F), or its link closed (NULL): where the
 * chain stopped, it now says its fingerprint to its neighbours.
 */
static void leaf_heard(struct ibp_rt_exchange *e, const struct ibp_oob_fpsum *f, bool want_fp)
{
	ibp_rt_ring_leaf_hears(e->ring, f);
	if (want_fp && e->ring->state == IBP_RT_RING_BROKEN)
		send_fingerprint(e);
}

/*
 * Whether to read L now: a failed link's peer's summary (for the blame),
 * a leaf's answer from its parent, or (FPS: the step-wide sum is not here)
 * a rail-0 neighbour's fingerprint, which a leaf may send after its
 * summary, when it learns the chain stopped.
 */
static bool summary_wants(const struct ibp_rt_exchange *e, const struct ibp_rt_link *l,
			  bool all_pass, bool fps)
{
	if (l->fd < 0)
		return false;
	if (l == e->ring->link && leaf_waits(e))
		return true;
	if (!l->summary_in && !all_pass)
		return true;
	return fps && l->r.rail == 0 && !ibp_rt_fp_have(e->fps, l->peer) &&
	       (!l->summary_in || l->peer_leaf);
}

/*
 * Each node sends its link outcomes to every peer it still has a
 * connection with, sealed under that link's keys, and (unless all its own
 * links passed) reads theirs for the blame.  With a fingerprint, it goes
 * first on every rail-0 link, and the node reads its peers' rail-0 links
 * until their fingerprints arrive, for the fallback, unless the step-wide
 * sum came whole (rdmatest_ring.c): the exchange waits for the ring's
 * thread to end, by the deadline at the latest, and a leaf of the sum's
 * tree for its parent's answer on their link, which the parent sends as
 * soon as its ring and that link's round are over (here, when neither of
 * its other threads could).  A node whose sum is already whole sends no
 * fingerprint: every node that got the complete sum needs none, and one
 * whose sum stopped (every node's, but for a connection lost after its
 * half went up) stops waiting for it at the summary, comparing with the
 * neighbours that did send one.  A leaf still waiting sends its
 * fingerprint once it hears that the chain stopped.
 */
/* Where a frame read at the summary goes (heap: 32 KB). */
struct inbox {
	struct ibp_oob_summary summary;
	struct ibp_fp fp;
	struct ibp_oob_fpsum sum;
};

/*
 * One frame from L into IN: a summary, a fingerprint when they are
 * compared, a sum frame from a leaf's parent.  0, -ENOBUFS (a frame of
 * another type, left), or -errno: the link is closed.
 */
static int read_frame(struct ibp_rt_exchange *e, struct ibp_rt_link *l, struct inbox *in,
		      bool want_fp, struct ibp_oob_msg *m)
{
	int64_t until = ibp_deadline_min(e->x->end, ibp_now_ns() + 100 * IBP_NS_PER_MS);
	int rc;

	*m = (struct ibp_oob_msg){.summary = &in->summary,
				  .fingerprint = want_fp ? &in->fp : NULL,
				  .fpsum = l == e->ring->link ? &in->sum : NULL};
	rc = ibp_seal_recv(l->fd, &l->seal, m, until);
	if (rc && rc != -ENOBUFS) {
		close(l->fd);
		l->fd = -1;
	}
	return rc;
}

void ibp_rt_exchange(struct ibp_rt_exchange *e)
{
	struct ibp_oob_summary own;
	struct ibp_oob_msg mine = {.type = IBP_OOB_SUMMARY, .summary = &own};
	struct inbox *in = NULL;
	bool all_pass = true, want_fp = e->x->cfg->fingerprint && e->fps->v;
	int64_t deadline = e->x->end;

	ibp_rt_ring_links_mine(e->ring); /* the leaf children's links are this thread's now */
	/* a leaf whose sum did not go up, or whose link with its parent is gone */
	if (leaf_waits(e) && (!e->ring->link->sum_up || e->ring->link->fd < 0))
		ibp_rt_ring_leaf_hears(e->ring, NULL);
	if (want_fp && !ibp_rt_ring_whole(e->ring) && !leaf_waits(e))
		send_fingerprint(e);
	own_links(e, &own);
	for (size_t i = 0; i < e->x->n_links; i++) {
		struct ibp_rt_link *l = &e->x->links[i];
		int64_t d = ibp_deadline_min(deadline, ibp_now_ns() + 200 * IBP_NS_PER_MS);

		if (l->r.status != IBP_LINK_PASS)
			all_pass = false;
		if (l->fd >= 0 && ibp_seal_send(l->fd, &l->seal, &mine, d)) {
			close(l->fd);
			l->fd = -1;
		}
	}
	ibp_rt_ring_answer(e->ring); /* the leaf children, when the ring is over already */
	for (;;) {
		struct pollfd pfd[IBP_RDMATEST_MAX_LINKS + 1];
		struct ibp_rt_link *who[IBP_RDMATEST_MAX_LINKS + 1];
		size_t np = 0;
		int ms = ibp_deadline_poll_ms(deadline, ibp_now_ns()), n;
		int ring_fd = ibp_rt_ring_done_fd(e->ring);
		bool fps;

		/* a leaf's link with its parent closed (a frame could not go): no answer comes */
		if (leaf_waits(e) && e->ring->link->fd < 0)
			leaf_heard(e, NULL, want_fp);
		/*
		 * The neighbours' fingerprints are for when the step-wide sum
		 * does not come: read once that is known (no ring, or it
		 * stopped), not while it may still come (they wait in the
		 * sockets meanwhile)
		 */
		fps =
		    want_fp && ring_fd < 0 && e->ring->state != IBP_RT_RING_DONE && !leaf_waits(e);

		for (size_t i = 0; i < e->x->n_links; i++) {
			if (!summary_wants(e, &e->x->links[i], all_pass, fps))
				continue;
			pfd[np] = (struct pollfd){.fd = e->x->links[i].fd, .events = POLLIN};
			who[np++] = &e->x->links[i];
		}
		if (ring_fd >= 0) {
			pfd[np] = (struct pollfd){.fd = ring_fd, .events = POLLIN};
			who[np++] = NULL;
		}
		if (np == 0 || ms == 0)
			break;
		n = poll(pfd, np, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (size_t i = 0; i < np; i++) {
			struct ibp_oob_msg m;
			struct ibp_rt_link *l = who[i];

			if (!pfd[i].revents)
				continue;
			if (!l) { /* the ring's thread is done: RING is final */
				ibp_rt_ring_join(e->ring, false);
				ibp_rt_ring_answer(e->ring);
				continue;
			}
			if (!in)
				in = malloc(sizeof(*in));
			if (!in) {
				close(l->fd);
				l->fd = -1;
				continue;
			}
			if (read_frame(e, l, in, want_fp, &m))
				continue;
			if (m.type == IBP_OOB_FPSUM && l == e->ring->link)
				leaf_heard(e, m.fpsum, want_fp);
			else
				take_frame(e, l, &m, want_fp);
		}
	}
	free(in);
	ibp_rt_ring_join(e->ring, true); /* the deadline */
}
