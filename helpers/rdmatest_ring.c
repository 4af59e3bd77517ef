/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_ring.c: the step-wide comparison of the cross-node test's
 * fingerprints, a reduction along the plan's ring (oob.h has its frames,
 * fingerprint.h the sum).
 *
 * The sum holds places 0..N-1 on the plan's ring.  It travels along the
 * line the ring makes without its link N-1 -> 0: places below the middle
 * M = N/2 gather forward, places above it backward, M joins both halves and
 * sends the complete sum back out both ways.  A node's line links: BACK to
 * place p-1 (its ring in-link), FWD to p+1 (its out-link), both rail 0.
 *
 * The sum needs nothing but fingerprints, which every node has before its
 * first link test, so it runs while the links are still being tested.  A
 * thread of its own (ibp_rt_ring_spawn) takes a rail-0 link as soon as
 * that link's test has ended in its verdict, and only such a link: the
 * peer reads nothing of the test after the verdict, so a frame behind it
 * cannot be mistaken for one of the test's.  Peers that finish all their
 * links send their fingerprint and summary on such a link; the thread
 * keeps them for the summary exchange (held_fp, held_sum).  When the
 * workers are done the caller's thread takes over (ibp_rt_ring_handover)
 * and the summary exchange finishes what is left, with every link.  A
 * frame the chain owes a link that cannot be used yet (where it stopped)
 * goes out as soon as it can.
 *
 * Before the handover the ring's fields of the run and the links the
 * thread took are the thread's alone; the workers publish a link's end
 * under mu (ended, clean), and the thread reads it there.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rdmatest_int.h"

enum { RING_BACK = 1, RING_FWD = 2 };

/* What the ring's thread may do with a rail-0 link (struct ibp_rt_link.ring_use). */
enum {
	RING_USE_NOT_YET = 0, /* its test still runs */
	RING_USE_OK,          /* ended in its verdict, connection open: the thread's */
	RING_USE_LATER,       /* ended otherwise, still open: after the handover */
	RING_USE_GONE,        /* ended without a connection */
};

static uint32_t ring_mid(const struct ibp_rt_run *run)
{
	return (uint32_t)(run->n / 2);
}

/* The line link on SIDE; NULL at the line's ends, and without a ring. */
static struct ibp_rt_link *ring_link(struct ibp_rt_run *run, int side)
{
	if (run->ring == IBP_RT_RING_OFF ||
	    (side == RING_BACK && run->ring_pos == 0) ||
	    (side == RING_FWD && run->ring_pos == run->n - 1))
		return NULL;
	return ibp_rt_link_at(run, 0, run->ring_round, side == RING_FWD);
}

int ibp_rt_ring_side(struct ibp_rt_run *run, const struct ibp_rt_link *l)
{
	if (run->ring == IBP_RT_RING_OFF)
		return 0;
	if (l == ring_link(run, RING_BACK))
		return RING_BACK;
	return l == ring_link(run, RING_FWD) ? RING_FWD : 0;
}

/* The sides the halves' sums come from (towards the line's ends). */
static int ring_up(const struct ibp_rt_run *run)
{
	uint32_t p = run->ring_pos, m = ring_mid(run);

	if (p == m)
		return RING_BACK | RING_FWD;
	if (p < m)
		return p > 0 ? RING_BACK : 0;
	return p < run->n - 1 ? RING_FWD : 0;
}

/* The side this node's sum goes to and the complete one comes from; 0 at M. */
static int ring_down(const struct ibp_rt_run *run)
{
	uint32_t p = run->ring_pos, m = ring_mid(run);

	return p == m ? 0 : p < m ? RING_FWD : RING_BACK;
}

bool ibp_rt_ring_waiting(const struct ibp_rt_run *run)
{
	return run->ring == IBP_RT_RING_GATHER || run->ring == IBP_RT_RING_FINAL;
}

/* Whether a frame must still come on SIDE: an awaited half, or the complete sum. */
static bool ring_needs(const struct ibp_rt_run *run, int side)
{
	if (run->ring == IBP_RT_RING_GATHER && (ring_up(run) & side & ~run->ring_got))
		return true;
	return ibp_rt_ring_waiting(run) && side == ring_down(run);
}

/* Whether the chain may use L now: after the handover every open link. */
static bool ring_usable(const struct ibp_rt_run *run, const struct ibp_rt_link *l)
{
	return l && l->fd >= 0 && (run->ring_handed || l->ring_use == RING_USE_OK);
}

/* L is closed for good: ended without a connection, or closed since. */
static bool ring_closed(const struct ibp_rt_run *run, const struct ibp_rt_link *l)
{
	return l && l->fd < 0 && (run->ring_handed || l->ring_use != RING_USE_NOT_YET);
}

bool ibp_rt_ring_reads(struct ibp_rt_run *run, const struct ibp_rt_link *l)
{
	/* the line links until the sum is through; every rail-0 link once the complete one may come */
	return ibp_rt_ring_waiting(run) && (ibp_rt_ring_side(run, l) ||
					    (run->ring == IBP_RT_RING_FINAL && l->r.rail == 0));
}

/* Closes L after a frame that could not be sent or read: its neighbour sees the chain break. */
static void ring_close(struct ibp_rt_run *run, struct ibp_rt_link *l)
{
	pthread_mutex_lock(&run->mu);
	close(l->fd);
	l->fd = -1;
	pthread_mutex_unlock(&run->mu);
}

/* Sends PHASE on L (this node's sum, or where the chain stopped); L usable. */
static void ring_send_on(struct ibp_rt_run *run, struct ibp_rt_link *l, uint8_t phase)
{
	struct ibp_oob_msg *m = calloc(1, sizeof(*m));

	if (!m)
		return;
	m->type = IBP_OOB_FPSUM;
	m->u.fpsum.phase = phase;
	if (phase == IBP_FPSUM_BROKEN) {
		m->u.fpsum.origin = run->ring_at;
		m->u.fpsum.why = run->ring_why;
		m->u.fpsum.from = run->ring_from;
	} else {
		m->u.fpsum.sum = *run->sum;
	}
	if (ibp_seal_send(l->fd, &l->seal, m,
			  ibp_deadline_min(run->end, ibp_now_ns() + 200 * IBP_NS_PER_MS)))
		ring_close(run, l);
	free(m);
}

/*
 * The complete sum goes on outwards, away from the middle, on every usable
 * rail-0 link to a node farther out on the same side (the middle: to every
 * one): with the plain plan's i+1 and i+2 links it gains two places a hop
 * where both are through their tests, and a node takes the first copy that
 * comes.  The line links towards the ends are usable: the halves came on them.
 */
static void ring_final_out(struct ibp_rt_run *run)
{
	uint32_t p = run->ring_pos, m = ring_mid(run);

	for (size_t i = 0; i < run->n_links; i++) {
		struct ibp_rt_link *l = &run->links[i];
		uint32_t q = run->ring_places[l->peer];
		bool again = false;

		if (l->r.rail != 0 || !ring_usable(run, l) ||
		    !((p <= m && q < p) || (p >= m && q > p)))
			continue;
		for (size_t k = 0; k < i && !again; k++)
			again = run->links[k].r.rail == 0 && run->links[k].peer == l->peer;
		if (!again)
			ring_send_on(run, l, IBP_FPSUM_FINAL);
	}
}

/* Where the chain stopped, to the line neighbours it is owed to, as soon as their links can take it. */
static void ring_flush(struct ibp_rt_run *run)
{
	for (int side = RING_BACK; side <= RING_FWD; side++) {
		struct ibp_rt_link *l = ring_link(run, side);

		if (!(run->ring_owe & side))
			continue;
		if (ring_usable(run, l))
			ring_send_on(run, l, IBP_FPSUM_BROKEN);
		else if (l && !ring_closed(run, l) && !run->ring_handed)
			continue; /* its test still runs: later */
		run->ring_owe &= (uint8_t)~side;
	}
}

/*
 * The chain stopped at ORIGIN, at its link with FROM: fall back, and tell
 * the neighbours on the line (but the side it came from, CAME).
 */
static void ring_break(struct ibp_rt_run *run, uint32_t origin, uint8_t why, uint32_t from,
		       int came)
{
	if (!ibp_rt_ring_waiting(run))
		return;
	run->ring = IBP_RT_RING_BROKEN;
	run->ring_at = origin;
	run->ring_why = why;
	run->ring_from = from;
	run->ring_owe = (uint8_t)((RING_BACK | RING_FWD) & ~came);
	ring_flush(run);
}

/* Every awaited half is in: SUM becomes [lower half] + this node + [upper half]. */
static void ring_join(struct ibp_rt_run *run)
{
	const struct ibp_rt_link *fwd = ring_link(run, RING_FWD);
	int down = ring_down(run);

	if (!(run->ring_got & RING_BACK))
		ibp_fp_sum_init(run->sum, run->n);
	if (ibp_fp_sum_add(run->sum, run->ring_pos, run->cfg->fingerprint)) {
		ring_break(run, run->me, IBP_FPSUM_WHY_BAD, run->me, 0);
		return;
	}
	if ((run->ring_got & RING_FWD) && ibp_fp_sum_merge(run->sum, run->sum_in)) {
		ring_break(run, run->me, IBP_FPSUM_WHY_BAD, fwd ? fwd->peer : run->me, 0);
		return;
	}
	if (down) { /* this node's half goes on towards the middle */
		run->ring = IBP_RT_RING_FINAL;
		ring_send_on(run, ring_link(run, down), IBP_FPSUM_GATHER);
		return;
	}
	/* the middle: the whole step's sum goes back out both ways */
	run->ring = IBP_RT_RING_DONE;
	ring_final_out(run);
}

void ibp_rt_ring_step(struct ibp_rt_run *run)
{
	for (int side = RING_BACK; side <= RING_FWD; side++) {
		const struct ibp_rt_link *l = ring_link(run, side);

		if (ring_needs(run, side) && ring_closed(run, l))
			ring_break(run, run->me, IBP_FPSUM_WHY_LINK, l->peer, side);
	}
	if (run->ring == IBP_RT_RING_GATHER && !(ring_up(run) & ~run->ring_got) &&
	    (!ring_down(run) || ring_usable(run, ring_link(run, ring_down(run))))) {
		ring_join(run);
		ibp_rt_ring_step(run); /* when sending failed */
		return;
	}
	ring_flush(run);
}

void ibp_rt_ring_prepare(struct ibp_rt_run *run)
{
	unsigned round = 0;

	if (!run->cfg->fingerprint || !run->fps || run->n < IBP_RT_RING_MIN || !run->n_rails)
		return;
	run->sum = malloc(sizeof(*run->sum));
	run->sum_in = malloc(sizeof(*run->sum_in));
	run->ring_order = calloc(run->n, sizeof(*run->ring_order));
	run->ring_places = calloc(run->n, sizeof(*run->ring_places));
	/* no memory, or a ring the plan does not have: the neighbours' comparison */
	if (!run->sum || !run->sum_in || !run->ring_order || !run->ring_places ||
	    ibp_rdmatest_ring_order(run->n, run->leaf, run->ring_order, &round) || round < 1 ||
	    round > ibp_rt_n_rounds(run))
		return;
	for (uint32_t p = 0; p < run->n; p++)
		run->ring_places[run->ring_order[p] < run->n ? run->ring_order[p] : 0] = p;
	run->ring_pos = run->ring_places[run->me];
	if (run->ring_order[run->ring_pos] != run->me ||
	    run->plan.send_to[round - 1] != run->ring_order[(run->ring_pos + 1) % run->n])
		return;
	run->ring_round = round;
	ibp_fp_sum_init(run->sum, run->n);
	run->ring = IBP_RT_RING_GATHER;
}

void ibp_rt_ring_recv(struct ibp_rt_run *run, int side, const struct ibp_rt_link *l,
		      const struct ibp_oob_fpsum *f)
{
	const struct ibp_fp_sum *s = &f->sum;
	uint32_t p = run->ring_pos;

	switch (f->phase) {
	case IBP_FPSUM_GATHER:
		/* from below: places [0, p); from above: (p, N) */
		if (run->ring != IBP_RT_RING_GATHER || !(ring_up(run) & side & ~run->ring_got) ||
		    s->nnodes != run->n ||
		    (side == RING_BACK ? s->first != 0 || s->n_merged != p
				       : s->first != p + 1 || s->n_merged != run->n - p - 1)) {
			ring_break(run, run->me, IBP_FPSUM_WHY_BAD, l->peer, 0);
			return;
		}
		*(side == RING_BACK ? run->sum : run->sum_in) = *s;
		run->ring_got |= (uint8_t)side;
		ibp_rt_ring_step(run); /* the middle waits for both halves */
		return;
	case IBP_FPSUM_FINAL: /* on any rail-0 link from nearer the middle */
		if (run->ring != IBP_RT_RING_FINAL || s->nnodes != run->n || s->first != 0 ||
		    s->n_merged != run->n) {
			ring_break(run, run->me, IBP_FPSUM_WHY_BAD, l->peer, 0);
			return;
		}
		*run->sum = *s;
		run->ring = IBP_RT_RING_DONE;
		ring_final_out(run);
		return;
	case IBP_FPSUM_BROKEN:
		if (f->origin >= run->n || f->from >= run->n)
			ring_break(run, run->me, IBP_FPSUM_WHY_BAD, l->peer, side);
		else
			ring_break(run, f->origin, f->why, f->from, side);
		return;
	default:
		ring_break(run, run->me, IBP_FPSUM_WHY_BAD, l->peer, 0);
	}
}

void ibp_rt_ring_summary(struct ibp_rt_run *run, const struct ibp_rt_link *l, bool had_fp)
{
	int side = ibp_rt_ring_side(run, l);

	if (side && !had_fp && ring_needs(run, side))
		ring_break(run, run->me, IBP_FPSUM_WHY_NO_FP, l->peer, side);
}

/* ---- the ring's thread, while the links are tested ---------------------- */

/*
 * One frame from L, a link the thread took: the chain's, or the peer's
 * fingerprint and summary kept for the exchange (links carry nothing else
 * after their verdict).
 */
static void ring_read(struct ibp_rt_run *run, struct ibp_rt_link *l)
{
	struct ibp_oob_msg *m = malloc(sizeof(*m));

	if (!m || ibp_seal_recv(l->fd, &l->seal, m,
				ibp_deadline_min(run->end, ibp_now_ns() + 100 * IBP_NS_PER_MS))) {
		free(m);
		ring_close(run, l);
		return;
	}
	if (m->type == IBP_OOB_FPSUM) {
		ibp_rt_ring_recv(run, ibp_rt_ring_side(run, l), l, &m->u.fpsum);
	} else if (m->type == IBP_OOB_FINGERPRINT && !l->held_fp && !l->held_sum) {
		l->held_fp = m;
		return;
	} else if (m->type == IBP_OOB_SUMMARY && !l->held_sum) {
		l->held_sum = m;
		/* a peer with a fingerprint sends it on the link before its summary */
		ibp_rt_ring_summary(run, l, l->held_fp != NULL);
		return;
	}
	free(m);
}

/* Takes the rail-0 links whose tests ended since; true when the caller's thread takes over. */
static bool ring_take_ended(struct ibp_rt_run *run)
{
	bool stop;

	pthread_mutex_lock(&run->mu);
	stop = run->ring_stop;
	for (size_t i = 0; i < run->n_links; i++) {
		struct ibp_rt_link *l = &run->links[i];

		if (l->r.rail == 0 && l->ended && l->ring_use == RING_USE_NOT_YET)
			l->ring_use = l->fd < 0 ? RING_USE_GONE
				      : l->clean ? RING_USE_OK
						 : RING_USE_LATER;
	}
	pthread_mutex_unlock(&run->mu);
	return stop;
}

static void *ring_thread(void *arg)
{
	struct ibp_rt_run *run = arg;

	while (!ring_take_ended(run)) {
		struct pollfd pfd[1 + IBP_RDMATEST_MAX_LINKS];
		struct ibp_rt_link *who[1 + IBP_RDMATEST_MAX_LINKS];
		size_t np = 1;
		int n;

		ibp_rt_ring_step(run);
		if (!ibp_rt_ring_waiting(run) && !run->ring_owe)
			break;
		pfd[0] = (struct pollfd){.fd = run->ring_wake, .events = POLLIN};
		for (size_t i = 0; i < run->n_links; i++) {
			struct ibp_rt_link *l = &run->links[i];

			if (ring_usable(run, l) && ibp_rt_ring_reads(run, l)) {
				pfd[np] = (struct pollfd){.fd = l->fd, .events = POLLIN};
				who[np++] = l;
			}
		}
		n = poll(pfd, np, ibp_deadline_poll_ms(run->end, ibp_now_ns()));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the deadline: the summary exchange says so */
		if (pfd[0].revents) {
			uint64_t v;

			if (read(run->ring_wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
		}
		for (size_t i = 1; i < np; i++)
			if (pfd[i].revents && ring_usable(run, who[i]) &&
			    ibp_rt_ring_reads(run, who[i]))
				ring_read(run, who[i]);
	}
	return NULL;
}

/*
 * Wakes the thread.  An eventfd's write fails only when its count is
 * full, and then the thread is awake anyway.
 */
static void ring_wake(struct ibp_rt_run *run)
{
	uint64_t one = 1;
	ssize_t w = 0;

	if (run->ring_wake >= 0)
		w = write(run->ring_wake, &one, sizeof(one));
	(void)w;
}

void ibp_rt_ring_spawn(struct ibp_rt_run *run)
{
	if (!ibp_rt_ring_waiting(run))
		return;
	run->ring_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (run->ring_wake < 0)
		return; /* the summary exchange does it all */
	run->ring_running = !pthread_create(&run->ring_th, NULL, ring_thread, run);
	if (!run->ring_running) {
		close(run->ring_wake);
		run->ring_wake = -1;
	}
}

void ibp_rt_ring_link_ended(struct ibp_rt_run *run, struct ibp_rt_link *l)
{
	pthread_mutex_lock(&run->mu);
	l->ended = true;
	pthread_mutex_unlock(&run->mu);
	if (l->r.rail == 0)
		ring_wake(run);
}

void ibp_rt_ring_handover(struct ibp_rt_run *run)
{
	if (run->ring_running) {
		pthread_mutex_lock(&run->mu);
		run->ring_stop = true;
		pthread_mutex_unlock(&run->mu);
		ring_wake(run);
		pthread_join(run->ring_th, NULL);
		run->ring_running = false;
	}
	if (run->ring_wake >= 0)
		close(run->ring_wake);
	run->ring_wake = -1;
	run->ring_handed = true;
	ibp_rt_ring_step(run);
}

void ibp_rt_ring_deadline(struct ibp_rt_run *run)
{
	if (!ibp_rt_ring_waiting(run))
		return;
	/* the deadline, or a line link closed unread */
	run->ring_why = IBP_FPSUM_WHY_NONE;
	run->ring_at = run->me;
	for (int side = RING_BACK; side <= RING_FWD; side++) {
		const struct ibp_rt_link *l = ring_link(run, side);

		if (ring_needs(run, side) && ring_closed(run, l)) {
			run->ring_why = IBP_FPSUM_WHY_LINK;
			run->ring_from = l->peer;
		}
	}
	run->ring = IBP_RT_RING_BROKEN;
}

int ibp_rt_ring_judge(struct ibp_rt_run *run, struct ibp_findings *out)
{
	const char **names = calloc(run->n, sizeof(*names));
	int rc;

	if (!names)
		return -ENOMEM;
	/* the sum counts places on the ring: NAMES by place */
	for (uint32_t i = 0; i < run->n; i++)
		names[i] = ibp_rt_node_name(run, run->ring_order[i]);
	rc = ibp_fp_sum_judge(run->sum, names, &run->pol, run->ring_pos, out);
	free(names);
	return rc;
}

void ibp_rt_ring_why(const struct ibp_rt_run *run, char *buf, size_t len)
{
	const char *from = ibp_rt_node_name(run, run->ring_from);
	const char *at = ibp_rt_node_name(run, run->ring_at);

	switch (run->ring_why) {
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

void ibp_rt_ring_free(struct ibp_rt_run *run)
{
	if (run->ring_wake >= 0)
		close(run->ring_wake);
	run->ring_wake = -1;
	for (size_t i = 0; i < run->n_links; i++) {
		free(run->links[i].held_fp);
		free(run->links[i].held_sum);
		run->links[i].held_fp = run->links[i].held_sum = NULL;
	}
	free(run->sum);
	free(run->sum_in);
	free(run->ring_order);
	free(run->ring_places);
	run->sum = run->sum_in = NULL;
	run->ring_order = run->ring_places = NULL;
}
