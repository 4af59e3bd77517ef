/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_probe.c: the cross-rail probes (rdmatest_probe.h): one thread
 * that starts them as the out-links bring their peers' endpoints, polls
 * them, and answers the peers' probes for the receivers handed to it.  A
 * probe's socket is closed the moment it is answered (a TCP one's peer,
 * which takes it as a stranger's, drops it at once).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmatest_probe.h"

const char *ibp_rdmatest_probe_kind_name(uint8_t kind)
{
	switch (kind) {
	case IBP_RDMATEST_PROBE_LANDING:
		return "landing";
	case IBP_RDMATEST_PROBE_ACROSS:
		return "across";
	default:
		return "?";
	}
}

void ibp_rt_probes_init(struct ibp_rt_probes *p, const struct ibp_rt_ctx *x,
			const struct ibp_transport_ops *ops, const struct ibp_tx_port *rails)
{
	memset(p, 0, sizeof(*p));
	p->x = x;
	p->ops = ops;
	p->rails = rails;
	p->wake[0] = p->wake[1] = -1;
	p->wake_at = INT64_MAX;
	for (size_t i = 0; i < IBP_RT_MAX_PROBES; i++)
		p->v[i].pr.fd = -1;
	p->enabled = ops && ops->probe && x->n_rails >= 2 && ibp_rt_n_rounds(x) > 0;
	/* the links send the across probes themselves, from rails beyond rail 0 */
	p->inband = p->enabled && ops->probe_along && ops->probe_along_result && ops->steps &&
		    x->n_rails >= 3;
	if (p->enabled)
		pthread_mutex_init(&p->mu, NULL);
}

/* ROUND's across pair: this node's rail *A to the peer's *B. */
static void across_pair(const struct ibp_rt_probes *p, unsigned round, size_t *a, size_t *b)
{
	size_t nr = p->x->n_rails;

	if (p->inband) { /* the datagram rails, 1 .. nr - 1 */
		*a = 1 + (p->x->me + round) % (nr - 1);
		*b = 1 + *a % (nr - 1);
	} else {
		*a = (p->x->me + round) % nr;
		*b = (*a + 1) % nr;
	}
}

bool ibp_rt_probe_across(const struct ibp_rt_probes *p, unsigned round, size_t *a, size_t *b)
{
	if (!p->enabled || !p->inband || round < 1 || round > 2)
		return false;
	across_pair(p, round, a, b);
	return true;
}

void ibp_rt_probe_record(struct ibp_rt_probes *p, unsigned round, size_t a, size_t b, uint8_t kind,
			 int rc)
{
	struct ibp_rt_probe *q;

	if (!p->enabled || round < 1 || round > 2 || a >= IBP_RDMATEST_MAX_RAILS ||
	    b >= IBP_RDMATEST_MAX_RAILS)
		return;
	pthread_mutex_lock(&p->mu);
	p->tried[round - 1][a][b] = true;
	if (p->n == IBP_RT_MAX_PROBES) {
		p->dropped++;
	} else {
		q = &p->v[p->n++];
		q->r = (struct ibp_rdmatest_probe){.kind = kind,
						   .from = p->x->me,
						   .to = p->x->plan->send_to[round - 1],
						   .round = (uint8_t)round,
						   .from_rail = (uint16_t)a,
						   .to_rail = (uint16_t)b,
						   .reached = rc > 0,
						   .err = rc > 0 ? 0
							  : rc   ? rc
								 : -ETIMEDOUT};
		q->pr.fd = -1;
		q->pending = false;
	}
	pthread_mutex_unlock(&p->mu);
}

static bool ensure_running(struct ibp_rt_probes *p);

static void poke(struct ibp_rt_probes *p)
{
	char c = 1;

	if (p->wake[1] >= 0)
		(void)!write(p->wake[1], &c, 1);
}

/*
 * When a data path still pending is late (rdmatest_probe.h): half-way
 * through its connection's time (the connect phase takes half of what is
 * left of the round, rdmatest_link.c), IBP_RT_LANDING_MS at the least.
 */
static int64_t landing_due(const struct ibp_rt_probes *p, unsigned round, size_t rail)
{
	int64_t since = p->since[round - 1][rail];
	int64_t wait = (p->x->round_end[round - 1] - since) / 4;

	if (wait < IBP_RT_LANDING_MS * IBP_NS_PER_MS)
		wait = IBP_RT_LANDING_MS * IBP_NS_PER_MS;
	return since + wait;
}

void ibp_rt_probe_endpoint(struct ibp_rt_probes *p, unsigned round, size_t rail,
			   const struct ibp_endpoint *ep)
{
	size_t at, next;
	int64_t due;
	bool now;

	if (!p->enabled || round < 1 || round > 2 || rail >= IBP_RDMATEST_MAX_RAILS)
		return;
	across_pair(p, round, &at, &next);
	pthread_mutex_lock(&p->mu);
	p->ep[round - 1][rail] = *ep;
	p->have_ep[round - 1][rail] = true;
	p->since[round - 1][rail] = ibp_now_ns();
	/*
	 * Woken when the round's across probe can start now, or when this
	 * path falls due before the thread would wake anyway: once a round,
	 * as the round's paths start together and fall due in that order.
	 */
	now = !p->inband && (rail == at || rail == next) && p->have_ep[round - 1][at] &&
	      p->have_ep[round - 1][next] && !p->tried[round - 1][at][next];
	due = landing_due(p, round, rail);
	if (p->running && due < p->wake_at) {
		p->wake_at = due; /* the thread wakes by then: the next paths need not poke */
		now = true;
	}
	now = now && p->running; /* not started yet: it reads all this when it starts */
	pthread_mutex_unlock(&p->mu);
	if (now)
		poke(p);
}

int64_t ibp_rt_probe_late_at(struct ibp_rt_probes *p, unsigned round, size_t rail)
{
	int64_t due = INT64_MAX;

	if (!p->enabled || round < 1 || round > 2 || rail >= IBP_RDMATEST_MAX_RAILS)
		return due;
	pthread_mutex_lock(&p->mu);
	if (p->have_ep[round - 1][rail])
		due = landing_due(p, round, rail);
	pthread_mutex_unlock(&p->mu);
	return due;
}

void ibp_rt_probe_late(struct ibp_rt_probes *p)
{
	if (p->enabled && ensure_running(p))
		poke(p);
}

void ibp_rt_probe_path(struct ibp_rt_probes *p, unsigned round, size_t rail, bool up)
{
	if (!p->enabled || round < 1 || round > 2 || rail >= IBP_RDMATEST_MAX_RAILS)
		return;
	pthread_mutex_lock(&p->mu);
	p->path[round - 1][rail] = up ? 1 : 2;
	pthread_mutex_unlock(&p->mu);
	if (!up && ensure_running(p)) /* a failed path's landing probes: at once */
		poke(p);
}

/* Starts the probe from rail K to the peer's rail J of ROUND (under MU). */
static void start(struct ibp_rt_probes *p, unsigned round, size_t k, size_t j, uint8_t kind)
{
	struct ibp_rt_probe *q;
	int rc;

	p->tried[round - 1][k][j] = true;
	if (p->n == IBP_RT_MAX_PROBES) {
		p->dropped++;
		return;
	}
	q = &p->v[p->n++];
	q->r.kind = kind;
	q->r.from = p->x->me;
	q->r.to = p->x->plan->send_to[round - 1];
	q->r.round = (uint8_t)round;
	q->r.from_rail = (uint16_t)k;
	q->r.to_rail = (uint16_t)j;
	rc = p->ops->probe(&p->rails[k], &p->ep[round - 1][j], (unsigned)j, &q->pr);
	if (rc)
		q->pr.fd = -1;
	q->pending = rc == 0;
	q->r.err = rc;
}

/*
 * What to probe now (under MU): the round's across probe once both its
 * rails' endpoints are in; landing probes from a rail whose data path
 * failed or is late.  Returns when the next pending path falls due,
 * INT64_MAX none.
 */
static int64_t schedule(struct ibp_rt_probes *p, int64_t now)
{
	size_t nr = p->x->n_rails;
	int64_t next = INT64_MAX;

	for (unsigned r = 1; r <= ibp_rt_n_rounds(p->x) && r <= 2; r++) {
		size_t a, b;

		across_pair(p, r, &a, &b);
		if (!p->inband && p->have_ep[r - 1][a] && p->have_ep[r - 1][b] &&
		    !p->tried[r - 1][a][b])
			start(p, r, a, b, IBP_RDMATEST_PROBE_ACROSS);
		for (size_t k = 0; k < nr; k++) {
			int64_t due;

			if (!p->have_ep[r - 1][k] || p->path[r - 1][k] == 1)
				continue;
			due = landing_due(p, r, k);
			if (p->path[r - 1][k] != 2 && now < due) {
				next = due < next ? due : next;
				continue;
			}
			/* where rail k lands, and which of this node's rails reach the peer's k */
			for (size_t j = 0; j < nr; j++) {
				if (j == k)
					continue;
				if (p->have_ep[r - 1][j] && !p->tried[r - 1][k][j])
					start(p, r, k, j, IBP_RDMATEST_PROBE_LANDING);
				if (!p->tried[r - 1][j][k])
					start(p, r, j, k, IBP_RDMATEST_PROBE_LANDING);
			}
		}
	}
	return next;
}

/* Where probe Q stands (its fd ready, or its time to look came): settled, or still pending. */
static void resolve(const struct ibp_rt_probes *p, struct ibp_rt_probe *q, int64_t now)
{
	int rc;

	if (p->ops->probe_check) {
		rc = p->ops->probe_check(&q->pr, now);
	} else {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (getsockopt(q->pr.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
			soerr = errno;
		rc = soerr ? -soerr : 1;
	}
	if (rc == 0)
		return;
	q->r.reached = rc > 0;
	q->r.err = rc > 0 ? 0 : rc;
	q->pending = false;
	close(q->pr.fd); /* at once: a TCP one's peer drops it, it presented no token */
	q->pr.fd = -1;
}

void ibp_rt_probes_answer(struct ibp_rt_probes *p, struct ibp_tx *const *txs, size_t n, bool start)
{
	size_t added = 0;

	if (!p->enabled || !p->ops->idle_fd || !p->ops->idle)
		return;
	if (start)
		(void)ensure_running(p);
	pthread_mutex_lock(&p->mu);
	if (!p->running)
		n = 0; /* nobody to poll them */
	for (size_t i = 0; i < n && p->n_answer < IBP_RT_MAX_ANSWER; i++)
		if (txs[i] && p->ops->idle_fd(txs[i]) >= 0) {
			p->answer[p->n_answer++] = txs[i];
			added++;
		}
	pthread_mutex_unlock(&p->mu);
	if (added) /* one wake-up for them all */
		poke(p);
}

static void *probe_thread(void *arg)
{
	struct ibp_rt_probes *p = arg;
	struct pollfd fds[1 + IBP_RT_MAX_PROBES + IBP_RT_MAX_ANSWER];
	size_t idx[1 + IBP_RT_MAX_PROBES + IBP_RT_MAX_ANSWER];
	struct ibp_tx *answer[IBP_RT_MAX_ANSWER];

	for (;;) {
		size_t nf = 0, n_probe, n_answer, n_v;
		int64_t now = ibp_now_ns(), next = INT64_MAX;
		int tmo = -1;
		bool stop;

		pthread_mutex_lock(&p->mu);
		stop = p->stop;
		if (!stop)
			next = schedule(p, now);
		p->wake_at = next;
		n_v =
		    p->n; /* the links append theirs too (ibp_rt_probe_record): those below are whole */
		n_answer = p->n_answer;
		memcpy(answer, p->answer, n_answer * sizeof(answer[0]));
		pthread_mutex_unlock(&p->mu);
		if (stop)
			break;
		fds[nf++] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
		for (size_t i = 0; i < n_v; i++) {
			struct ibp_rt_probe *q = &p->v[i];

			if (!q->pending) /* only the thread's own are ever pending */
				continue;
			if (q->pr.again_at && q->pr.again_at < next)
				next = q->pr.again_at;
			idx[nf] = i;
			fds[nf++] = (struct pollfd){.fd = q->pr.fd, .events = q->pr.events};
		}
		n_probe = nf;
		for (size_t i = 0; i < n_answer; i++) {
			idx[nf] = i;
			fds[nf++] =
			    (struct pollfd){.fd = p->ops->idle_fd(answer[i]), .events = POLLIN};
		}
		/*
		 * No tick: asleep until a path falls due, a probe is answered or
		 * wants sending again, a peer's probe comes or the links' news
		 * (at 256 simulated nodes a 20 ms tick was 30 wake-ups per node
		 * and run)
		 */
		if (next != INT64_MAX)
			tmo = next <= now ? 0
					  : (int)((next - now + IBP_NS_PER_MS - 1) / IBP_NS_PER_MS);
		if (poll(fds, nf, tmo) < 0)
			continue;
		if (fds[0].revents) {
			char buf[64];

			while (read(p->wake[0], buf, sizeof(buf)) > 0)
				;
		}
		now = ibp_now_ns();
		for (size_t f = 1; f < n_probe; f++) {
			struct ibp_rt_probe *q = &p->v[idx[f]];

			if (fds[f].revents || (q->pr.again_at && now >= q->pr.again_at))
				resolve(p, q, now);
		}
		for (size_t f = n_probe; f < nf; f++)
			if (fds[f].revents)
				p->ops->idle(answer[idx[f]]);
	}
	return NULL;
}

/*
 * The thread, started unless it runs, was started or the run is stopping:
 * whether it runs now.
 */
static bool ensure_running(struct ibp_rt_probes *p)
{
	bool up;

	pthread_mutex_lock(&p->mu);
	if (!p->running && !p->tried_start && !p->stop) {
		p->tried_start = true;
		if (!pipe2(p->wake, O_CLOEXEC | O_NONBLOCK)) {
			p->running = true; /* before the thread: it reads what is in */
			if (pthread_create(&p->th, NULL, probe_thread, p)) {
				p->running = false;
				close(p->wake[0]);
				close(p->wake[1]);
				p->wake[0] = p->wake[1] = -1;
			}
		} else {
			p->wake[0] = p->wake[1] = -1;
		}
	}
	up = p->running;
	pthread_mutex_unlock(&p->mu);
	return up;
}

void ibp_rt_probes_spawn(struct ibp_rt_probes *p)
{
	/*
	 * With the across probes in the links' hands the thread starts only
	 * when a path fails or is late, or when a node's in-links ended with
	 * one failed (ensure_running): a healthy step on a steps transport
	 * never starts it.
	 */
	if (p->enabled && !p->inband)
		(void)ensure_running(p);
}

void ibp_rt_probes_stop(struct ibp_rt_probes *p)
{
	bool was;

	if (!p->enabled)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true; /* no thread starts after this */
	was = p->running;
	pthread_mutex_unlock(&p->mu);
	if (!was) {
		pthread_mutex_destroy(&p->mu);
		p->enabled = false;
		return;
	}
	poke(p);
	pthread_join(p->th, NULL);
	p->running = false;
	for (size_t i = 0; i < p->n; i++) {
		struct ibp_rt_probe *q = &p->v[i];

		if (!q->pending)
			continue;
		/* one last look: answered while the thread was stopping */
		if (poll(&(struct pollfd){.fd = q->pr.fd, .events = q->pr.events}, 1, 0) > 0) {
			q->pr.again_at = 0;
			resolve(p, q, ibp_now_ns());
			if (!q->pending)
				continue;
		}
		close(q->pr.fd);
		q->pr.fd = -1;
		q->pending = false;
		q->r.reached = false;
		q->r.err = -ETIMEDOUT;
	}
	pthread_mutex_destroy(&p->mu);
	p->enabled = false;
	close(p->wake[0]);
	close(p->wake[1]);
	p->wake[0] = p->wake[1] = -1;
}
