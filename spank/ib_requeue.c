/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_requeue.c: a batch job whose step failed on a node fault goes back to
 * the queue, once this node is drained, to run again on other nodes.
 *
 * Called as root by the plugin in init_post_opt (a node fault at the start
 * of a step), by the step's watcher (a link that failed while the step
 * ran), and by the plugin in slurm_spank_exit for the node the cross-node
 * test suspects (decided in user_init: spank_ib_test_blame).  Everything it decides on is slurmctld's (slurm_load_job), never
 * the job's environment: the user can set SLURM_RESTART_COUNT to anything.
 *
 * Why a requeue loop cannot happen: a job is requeued only while Slurm's
 * own restart count of it (restart_cnt, raised by every requeue, ours or
 * anyone's) is below requeue_max; only for a node fault (the caller's
 * judgement: never a job fault such as the user's memlock limit); and the
 * node that faulted is added to the job's excluded nodes, so the next run
 * cannot land on it even when drain=no.  At most requeue_max requeues per
 * job, whatever follows it.
 *
 * Why the job starts again in seconds, and why that is safe: Slurm makes a
 * requeued batch job eligible cred_expire+1 seconds (121 s; 26.05:
 * SchedulerParameters=requeue_delay=) after the requeue is complete
 * (batch_requeue_fini in slurmctld's job_mgr.c, the same in 22.05, 24.11
 * and 26.05), so that the next run's launch credential is newer than the
 * revoke of the previous one and the previous run's sockets and
 * credential are purged by then.  The requeue is complete when the last
 * of the run's nodes has ended it (its steps, its epilog): until then the
 * job is PENDING and COMPLETING, and slurm_update_job may set its begin
 * time (root may set any time not in the past).  Slurm's own delay applies
 * only when the job's begin time has passed at that moment
 * ("begin_time <= now").  So spank-ib sets the begin time twice:
 *
 *   - right after the requeue, to BEGIN_S seconds later (requeue_begin=;
 *     auto: KillWait + 10 s, the time the nodes take to end the run);
 *   - in slurm_spank_exit of the step that requeued it (or began to),
 *     once that step's tasks are gone on this node, to at least
 *     SPANK_IB_REQUEUE_SETTLE_S seconds later, when the job is still
 *     completing (spank_ib_requeue_settle): a run slow to end (tasks that
 *     ignore SIGTERM until KillWait's SIGKILL, a loaded node) would
 *     otherwise end after the first begin time and wait Slurm's 121 s.
 *
 * The job cannot start before the requeue completes, and then after the
 * revoke (the kill of the previous run, which came first), so its new
 * credential is newer, as Slurm requires.  Slurm's own delay still applies
 * when the rest of the run (another node, the epilog) ends more than
 * SPANK_IB_REQUEUE_SETTLE_S after this step: never earlier than Slurm
 * would allow, at worst as late.
 *
 * No spank_* call: the watcher links this file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>

#include "ibprep/text.h"

#include "spank_ib.h"

/* EXC plus NODE, comma-separated, once. */
static void exclude(const char *exc, const char *node, char *out, size_t len)
{
	char copy[512], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", exc);
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, node)) {
			snprintf(out, len, "%s", exc);
			return;
		}
	snprintf(out, len, "%s%s%s", exc, exc[0] ? "," : "", node);
}

/* What slurmctld's record allows; DONE: it may be requeued now. */
static enum spank_ib_requeue_outcome check(const struct spank_ib_requeue_req *r,
					   const struct spank_ib_job *j, char *what, size_t len)
{
	if (!j->batch) {
		ibp_format_cut(what, len,
			       "not requeued: job %u is not a batch job (only sbatch jobs can be)",
			       r->job);
		return SPANK_IB_REQUEUE_NOT_ALLOWED;
	}
	if (!j->requeue) {
		ibp_format_cut(what, len,
			       "not requeued: job %u does not allow it (--no-requeue, or "
			       "JobRequeue=0 in slurm.conf)",
			       r->job);
		return SPANK_IB_REQUEUE_NOT_ALLOWED;
	}
	/*
	 * Slurm requeues a batch job that has ended, cancelled too: a job its
	 * user or an admin cancelled stays ended (the requeue after the test is
	 * made at the step's end, when a scancel may have come first).
	 */
	if ((j->state & JOB_STATE_BASE) == JOB_CANCELLED) {
		ibp_format_cut(what, len, "not requeued: job %u was cancelled", r->job);
		return SPANK_IB_REQUEUE_NOT_ALLOWED;
	}
	if (spank_ib_job_pending(j)) {
		ibp_format_cut(what, len, "job %u is already back in the queue (restart %u)",
			       r->job, j->restarts);
		return SPANK_IB_REQUEUE_ALREADY;
	}
	if (j->restarts >= r->max) {
		ibp_format_cut(what, len,
			       "not requeued: the requeue bound was reached (job %u ran %u time%s, "
			       "requeue_max=%u)",
			       r->job, j->restarts + 1, j->restarts ? "s" : "", r->max);
		return SPANK_IB_REQUEUE_BOUND;
	}
	ibp_format_cut(what, len, "requeueing job %u without %s (run %u of at most %u)", r->job,
		       r->node, j->restarts + 2, r->max + 1);
	return SPANK_IB_REQUEUE_DONE;
}

enum spank_ib_requeue_outcome spank_ib_requeue_check(const struct spank_ib_requeue_req *r,
						     char *what, size_t len)
{
	struct spank_ib_job j;
	char err[512];

	if (spank_ib_job_load(r->job, &j, err, sizeof(err))) {
		ibp_format_cut(what, len, "not requeued: %s", err);
		return SPANK_IB_REQUEUE_FAILED;
	}
	return check(r, &j, what, len);
}

enum spank_ib_requeue_outcome spank_ib_requeue(const struct spank_ib_requeue_req *r, char *what,
					       size_t len)
{
	struct spank_ib_job j;
	char err[512], exc[600], when[32];
	enum spank_ib_requeue_outcome o;
	unsigned begin_s;
	time_t begin;
	struct tm tm;
	int serr = 0;

	if (spank_ib_job_load(r->job, &j, err, sizeof(err))) {
		ibp_format_cut(what, len, "not requeued: %s", err);
		return SPANK_IB_REQUEUE_FAILED;
	}
	o = check(r, &j, what, len);
	if (o != SPANK_IB_REQUEUE_DONE)
		return o;
	/* the begin time is chosen now, so that the announcement can name it */
	begin_s = r->begin_s >= 0 ? (unsigned)r->begin_s
				  : spank_ib_kill_wait() + SPANK_IB_REQUEUE_SETTLE_S;
	begin = time(NULL) + (time_t)begin_s;
	if (!localtime_r(&begin, &tm) || !strftime(when, sizeof(when), "%H:%M:%S", &tm))
		snprintf(when, sizeof(when), "+%u s", begin_s);
	if (r->announce) {
		char text[600];

		ibp_format_cut(text, sizeof(text), "%s; it may start again at %s", what, when);
		r->announce(r->announce_arg, text);
	}
	if (spank_ib_job_requeue(r->job, &serr, err, sizeof(err))) {
		if (serr == ESLURM_JOB_PENDING) {
			ibp_format_cut(what, len, "job %u is already back in the queue", r->job);
			return SPANK_IB_REQUEUE_ALREADY;
		}
		ibp_format_cut(what, len, "not requeued: %s", err);
		return SPANK_IB_REQUEUE_FAILED;
	}
	exclude(j.exc_nodes, r->node, exc, sizeof(exc));
	if (spank_ib_job_update(r->job, begin, NULL, r->node[0] ? exc : NULL, err, sizeof(err)))
		ibp_format_cut(
		    what, len,
		    "requeued job %u (run %u of at most %u), without %s; it starts again "
		    "after Slurm's own delay (%s)",
		    r->job, j.restarts + 2, r->max + 1, r->node, err);
	else
		ibp_format_cut(what, len,
			       "requeued job %u (run %u of at most %u), without %s; it may start "
			       "again at %s",
			       r->job, j.restarts + 2, r->max + 1, r->node, when);
	return SPANK_IB_REQUEUE_DONE;
}

time_t spank_ib_requeue_settle_begin(const struct spank_ib_job *j, time_t now)
{
	time_t want = now + SPANK_IB_REQUEUE_SETTLE_S;

	/* not completing: slurmctld has finished the requeue and chose itself */
	if (!spank_ib_job_pending(j) || !spank_ib_job_completing(j) || j->begin >= want)
		return 0;
	return want;
}

int spank_ib_requeue_settle(uint32_t job, char *what, size_t len)
{
	struct spank_ib_job j;
	char err[512], when[32];
	time_t begin;
	struct tm tm;
	int rc;

	what[0] = '\0';
	rc = spank_ib_job_load(job, &j, err, sizeof(err));
	if (rc) {
		ibp_format_cut(what, len, "the requeued job's begin time is not settled: %s", err);
		return rc;
	}
	begin = spank_ib_requeue_settle_begin(&j, time(NULL));
	if (!begin)
		return 0;
	rc = spank_ib_job_update(job, begin, NULL, NULL, err, sizeof(err));
	if (rc) {
		ibp_format_cut(what, len,
			       "the requeued job's begin time is not settled (%s): it starts again "
			       "after Slurm's own delay when its run ends after the begin time",
			       err);
		return rc;
	}
	if (!localtime_r(&begin, &tm) || !strftime(when, sizeof(when), "%H:%M:%S", &tm))
		snprintf(when, sizeof(when), "+%d s", SPANK_IB_REQUEUE_SETTLE_S);
	ibp_format_cut(what, len,
		       "the requeued job may start again at %s, %d s after its run ended here "
		       "(its nodes end the run; Slurm's own delay would apply past its begin time)",
		       when, SPANK_IB_REQUEUE_SETTLE_S);
	return 1;
}

enum spank_ib_requeue_outcome spank_ib_requeue_here(uint32_t job, const struct ibp_conf *conf,
						    const char *host, const char *node,
						    void (*announce)(void *arg, const char *text),
						    void *announce_arg, char *what, size_t len)
{
	struct spank_ib_requeue_req r;
	char name[IBP_NODE_MAX];

	if (node && node[0])
		snprintf(name, sizeof(name), "%s", node);
	else if (spank_ib_node_name(host, name, sizeof(name)))
		snprintf(name, sizeof(name), "%s", host);
	memset(&r, 0, sizeof(r));
	r.job = job;
	r.max = conf->requeue_max;
	r.begin_s = conf->requeue_begin_s;
	r.node = name;
	r.announce = announce;
	r.announce_arg = announce_arg;
	return spank_ib_requeue(&r, what, len);
}

enum spank_ib_test_blame spank_ib_test_blame(const struct ibp_findings *tf, const char *self,
					     const char *host)
{
	bool me = false, job_fault = false;

	for (size_t i = 0; i < tf->n; i++) {
		const struct ibp_finding *x = &tf->v[i];

		if (x->severity != IBP_SEV_FAIL)
			continue;
		if (x->fclass == IBP_CLASS_JOB)
			job_fault = true;
		else if (!strcmp(x->code, "rdmatest_node_failed"))
			me |= !x->node[0] || !strcmp(x->node, self) || !strcmp(x->node, host);
	}
	if (!me)
		return SPANK_IB_BLAME_NONE;
	return job_fault ? SPANK_IB_BLAME_JOB_FAULT : SPANK_IB_BLAME_SELF;
}

struct blamed_news {
	uint32_t job;
	const char *host;
	void (*intent)(void *arg);
	void *intent_arg;
	bool told;
	char err[256];
};

static void tell_blamed(void *arg, const char *text)
{
	struct blamed_news *bn = arg;
	char msg[768];

	ibp_format_cut(msg, sizeof(msg), "spank-ib: %s: %s", bn->host, text);
	bn->told = !spank_ib_job_notify(bn->job, msg, bn->err, sizeof(bn->err));
	if (bn->intent)
		bn->intent(bn->intent_arg);
}

enum spank_ib_requeue_outcome spank_ib_requeue_blamed(uint32_t job, const struct ibp_conf *conf,
						      const char *host, const char *node,
						      void (*intent)(void *arg), void *intent_arg,
						      char *what, size_t len)
{
	struct blamed_news bn = {
	    .job = job, .host = host, .intent = intent, .intent_arg = intent_arg};
	enum spank_ib_requeue_outcome o;
	char msg[768];
	size_t w;

	o = spank_ib_requeue_here(job, conf, host, node, tell_blamed, &bn, what, len);
	if (o == SPANK_IB_REQUEUE_DONE && !bn.told && bn.err[0]) {
		w = strlen(what);
		ibp_format_cut(what + w, len - w, " (the job could not be told: %s)", bn.err);
	} else if (o != SPANK_IB_REQUEUE_DONE && o != SPANK_IB_REQUEUE_ALREADY) {
		/* the job runs on, or has just ended: it hears why when it still can */
		ibp_format_cut(msg, sizeof(msg), "spank-ib: %s: %s", host, what);
		(void)spank_ib_job_notify(job, msg, bn.err, sizeof(bn.err));
	}
	return o;
}
