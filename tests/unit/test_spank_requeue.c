/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_requeue.c: spank_ib_requeue (ib_requeue.c) and the Slurm API
 * calls it makes (ib_slurmapi.c), against fake Slurm calls exported by this
 * binary (-rdynamic): the plugin and the watcher look them up by name in
 * the process.  Every outcome: not a batch job, a job that does not allow
 * requeue, already back in the queue (before and during the call), the
 * bound reached (the count is slurmctld's restart_cnt, whatever the job's
 * environment says), Slurm refusing, and the requeue itself: the node
 * added to the job's excluded nodes once, the begin time BEGIN_S (auto:
 * KillWait + 10 s) after now, and what it says when that update fails; the
 * check before the job is told, which does nothing.  After the cross-node
 * test: who acts (spank_ib_test_blame: the suspected node itself, never its
 * neighbours, never with a job fault) and what the job hears from the
 * requeue made at the step's end (spank_ib_requeue_blamed).  The begin
 * time settled at the step's end (spank_ib_requeue_settle): pushed past the
 * rest of the run's end only while slurmctld has not finished the requeue
 * and the begin time is near or past, never otherwise.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "../../spank/spank_ib.h"

/* ---- the fake Slurm API: one job, as slurmctld would answer ---- */

static struct {
	int load_rc, requeue_rc, update_rc, err;
	uint16_t batch, requeue, restarts;
	uint32_t state;
	time_t eligible;
	char exc[128];
	/* seen */
	int loads, requeues, updates;
	int notify_rc, notifies, requeues_at_notify;
	char notified[768];
	time_t begin;
	char got_exc[256];
	bool exc_set;
} fk;

slurm_conf_t slurm_conf; /* KillWait, as slurm_init would have loaded it */

int slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags);
void slurm_free_job_info_msg(job_info_msg_t *msg);
int slurm_requeue(uint32_t job_id, uint32_t flags);
void slurm_init_job_desc_msg(job_desc_msg_t *desc);
int slurm_update_job(job_desc_msg_t *desc);
int slurm_get_errno(void);
char *slurm_strerror(int err);
int slurm_notify_job(uint32_t job_id, char *message);

int slurm_notify_job(uint32_t job_id, char *message)
{
	(void)job_id;
	fk.notifies++;
	fk.requeues_at_notify = fk.requeues;
	snprintf(fk.notified, sizeof(fk.notified), "%s", message);
	return fk.notify_rc;
}

int slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags)
{
	job_info_msg_t *m;

	(void)show_flags;
	fk.loads++;
	if (fk.load_rc)
		return fk.load_rc;
	m = calloc(1, sizeof(*m));
	m->record_count = 1;
	m->job_array = calloc(1, sizeof(*m->job_array));
	m->job_array[0].job_id = job_id;
	m->job_array[0].batch_flag = fk.batch;
	m->job_array[0].requeue = fk.requeue;
	m->job_array[0].restart_cnt = fk.restarts;
	m->job_array[0].job_state = fk.state;
	m->job_array[0].eligible_time = fk.eligible;
	m->job_array[0].exc_nodes = fk.exc[0] ? strdup(fk.exc) : NULL;
	*resp = m;
	return 0;
}

void slurm_free_job_info_msg(job_info_msg_t *msg)
{
	if (!msg)
		return;
	free(msg->job_array[0].exc_nodes);
	free(msg->job_array);
	free(msg);
}

int slurm_requeue(uint32_t job_id, uint32_t flags)
{
	(void)job_id;
	(void)flags;
	fk.requeues++;
	return fk.requeue_rc;
}

void slurm_init_job_desc_msg(job_desc_msg_t *desc)
{
	memset(desc, 0, sizeof(*desc));
}

int slurm_update_job(job_desc_msg_t *desc)
{
	fk.updates++;
	fk.begin = desc->begin_time;
	fk.exc_set = desc->exc_nodes != NULL;
	snprintf(fk.got_exc, sizeof(fk.got_exc), "%s", desc->exc_nodes ? desc->exc_nodes : "");
	return fk.update_rc;
}

int slurm_get_errno(void)
{
	return fk.err;
}

char *slurm_strerror(int err)
{
	static char pending[] = "Job is pending execution", other[] = "Access/permission denied";

	return err == ESLURM_JOB_PENDING ? pending : other;
}

/* ---- the cases ---- */

struct rq_case {
	const char *what;
	uint16_t batch, requeue, restarts;
	uint32_t state;
	const char *exc;
	int requeue_rc, err, update_rc;
	unsigned max;
	int begin_s;
	enum spank_ib_requeue_outcome want;
	const char *said; /* the start of WHAT */
	int requeues;
	const char *exc_after; /* the excluded nodes sent, NULL: no update */
};

static void test_requeue_outcomes(void **state)
{
	static const struct rq_case cases[] = {
	    {"not a batch job", 0, 1, 0, JOB_RUNNING, "", 0, 0, 0, 1, -1,
	     SPANK_IB_REQUEUE_NOT_ALLOWED, "not requeued: job 42 is not a batch job", 0, NULL},
	    {"--no-requeue", 1, 0, 0, JOB_RUNNING, "", 0, 0, 0, 1, -1, SPANK_IB_REQUEUE_NOT_ALLOWED,
	     "not requeued: job 42 does not allow it", 0, NULL},
	    {"cancelled (scancel before the step's end)", 1, 1, 0, JOB_CANCELLED | JOB_COMPLETING,
	     "", 0, 0, 0, 1, -1, SPANK_IB_REQUEUE_NOT_ALLOWED, "not requeued: job 42 was cancelled",
	     0, NULL},
	    {"ended (its script returned first)", 1, 1, 0, JOB_FAILED, "", 0, 0, 0, 1, -1,
	     SPANK_IB_REQUEUE_DONE, "requeued job 42 (run 2 of at most 2), without n2", 1, "n2"},
	    {"already pending", 1, 1, 1, JOB_PENDING, "", 0, 0, 0, 3, -1, SPANK_IB_REQUEUE_ALREADY,
	     "job 42 is already back in the queue (restart 1)", 0, NULL},
	    {"bound reached", 1, 1, 1, JOB_RUNNING, "", 0, 0, 0, 1, -1, SPANK_IB_REQUEUE_BOUND,
	     "not requeued: the requeue bound was reached (job 42 ran 2 times, requeue_max=1)", 0,
	     NULL},
	    {"requeue_max=0", 1, 1, 0, JOB_RUNNING, "", 0, 0, 0, 0, -1, SPANK_IB_REQUEUE_BOUND,
	     "not requeued: the requeue bound was reached (job 42 ran 1 time, requeue_max=0)", 0,
	     NULL},
	    {"pending by the time of the call", 1, 1, 0, JOB_RUNNING, "", -1, ESLURM_JOB_PENDING, 0,
	     1, -1, SPANK_IB_REQUEUE_ALREADY, "job 42 is already back in the queue", 1, NULL},
	    {"Slurm refuses", 1, 1, 0, JOB_RUNNING, "", -1, ESLURM_ACCESS_DENIED, 0, 1, -1,
	     SPANK_IB_REQUEUE_FAILED, "not requeued: requeueing the job: Access/permission denied",
	     1, NULL},
	    {"requeued, auto begin", 1, 1, 0, JOB_RUNNING, "", 0, 0, 0, 1, -1,
	     SPANK_IB_REQUEUE_DONE,
	     "requeued job 42 (run 2 of at most 2), without n2; it may start again at ", 1, "n2"},
	    {"requeued, excluded list kept", 1, 1, 1, JOB_RUNNING, "n7,n9", 0, 0, 0, 3, 5,
	     SPANK_IB_REQUEUE_DONE, "requeued job 42 (run 3 of at most 4), without n2", 1,
	     "n7,n9,n2"},
	    {"requeued, n2 already excluded", 1, 1, 0, JOB_RUNNING, "n1,n2", 0, 0, 0, 1, 5,
	     SPANK_IB_REQUEUE_DONE, "requeued job 42", 1, "n1,n2"},
	    {"requeued, the update fails", 1, 1, 0, JOB_RUNNING, "", 0, ESLURM_ACCESS_DENIED, -1, 1,
	     -1, SPANK_IB_REQUEUE_DONE,
	     "requeued job 42 (run 2 of at most 2), without n2; it starts again after Slurm's own "
	     "delay (updating the job: Access/permission denied)",
	     1, "n2"},
	};
	(void)state;

	slurm_conf.kill_wait = 7;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rq_case *c = &cases[i];
		struct spank_ib_requeue_req r = {
		    .job = 42, .max = c->max, .begin_s = c->begin_s, .node = "n2"};
		char what[512];
		enum spank_ib_requeue_outcome o;
		time_t before = time(NULL), after;
		long want_s = c->begin_s >= 0 ? c->begin_s : 7 + 10;

		memset(&fk, 0, sizeof(fk));
		fk.batch = c->batch;
		fk.requeue = c->requeue;
		fk.restarts = c->restarts;
		fk.state = c->state;
		fk.requeue_rc = c->requeue_rc;
		fk.update_rc = c->update_rc;
		fk.err = c->err;
		snprintf(fk.exc, sizeof(fk.exc), "%s", c->exc);
		o = spank_ib_requeue(&r, what, sizeof(what));
		after = time(NULL);
		if (o != c->want)
			fail_msg("%s: outcome %d, expected %d (%s)", c->what, o, c->want, what);
		if (strncmp(what, c->said, strlen(c->said)))
			fail_msg("%s: said '%s', expected '%s...'", c->what, what, c->said);
		if (fk.requeues != c->requeues)
			fail_msg("%s: %d requeue calls, expected %d", c->what, fk.requeues,
				 c->requeues);
		if (!c->exc_after) {
			if (fk.updates)
				fail_msg("%s: the job was updated", c->what);
			continue;
		}
		if (fk.updates != 1 || !fk.exc_set || strcmp(fk.got_exc, c->exc_after))
			fail_msg("%s: %d updates, excluded '%s', expected '%s'", c->what,
				 fk.updates, fk.got_exc, c->exc_after);
		if (fk.begin < before + want_s || fk.begin > after + want_s)
			fail_msg("%s: begin %ld s from now, expected %ld", c->what,
				 (long)(fk.begin - before), want_s);
	}
}

/* A load that fails: nothing is requeued, the reason is Slurm's. */
static void test_requeue_load_fails(void **state)
{
	struct spank_ib_requeue_req r = {.job = 42, .max = 1, .begin_s = -1, .node = "n2"};
	char what[512];
	(void)state;

	memset(&fk, 0, sizeof(fk));
	fk.load_rc = -1;
	fk.err = ESLURM_ACCESS_DENIED;
	assert_int_equal(spank_ib_requeue(&r, what, sizeof(what)), SPANK_IB_REQUEUE_FAILED);
	assert_string_equal(what, "not requeued: loading the job: Access/permission denied");
	assert_int_equal(fk.requeues, 0);
}

/* The check before the job is told: what would happen, nothing done. */
static void test_requeue_check_does_nothing(void **state)
{
	struct spank_ib_requeue_req r = {.job = 42, .max = 2, .begin_s = -1, .node = "n2"};
	char what[512];
	(void)state;

	memset(&fk, 0, sizeof(fk));
	fk.batch = fk.requeue = 1;
	fk.restarts = 1;
	fk.state = JOB_RUNNING;
	assert_int_equal(spank_ib_requeue_check(&r, what, sizeof(what)), SPANK_IB_REQUEUE_DONE);
	assert_string_equal(what, "requeueing job 42 without n2 (run 3 of at most 3)");
	fk.restarts = 2;
	assert_int_equal(spank_ib_requeue_check(&r, what, sizeof(what)), SPANK_IB_REQUEUE_BOUND);
	assert_int_equal(fk.requeues, 0);
	assert_int_equal(fk.updates, 0);
	assert_int_equal(fk.loads, 2);
}

/* What the announcement saw: its text, and how many requeues were made by then. */
struct heard {
	int calls, requeues_before;
	char text[600];
};

static void hear(void *arg, const char *text)
{
	struct heard *h = arg;

	h->calls++;
	h->requeues_before = fk.requeues;
	snprintf(h->text, sizeof(h->text), "%s", text);
}

/*
 * The job is told before the requeue is made (it is killed by it), with the
 * time it may start again; never when nothing will be requeued.
 */
static void test_requeue_announced_before(void **state)
{
	struct heard h = {0};
	struct spank_ib_requeue_req r = {
	    .job = 42, .max = 2, .begin_s = 30, .node = "n2", .announce = hear, .announce_arg = &h};
	char what[512], when[32], want[128];
	time_t begin;
	struct tm tm;
	(void)state;

	memset(&fk, 0, sizeof(fk));
	fk.batch = fk.requeue = 1;
	fk.state = JOB_RUNNING;
	assert_int_equal(spank_ib_requeue(&r, what, sizeof(what)), SPANK_IB_REQUEUE_DONE);
	assert_int_equal(h.calls, 1);
	assert_int_equal(h.requeues_before, 0);
	assert_int_equal(fk.requeues, 1);
	/* the time it names is the begin time the job gets */
	begin = fk.begin;
	assert_non_null(localtime_r(&begin, &tm));
	assert_true(strftime(when, sizeof(when), "%H:%M:%S", &tm) > 0);
	snprintf(want, sizeof(want),
		 "requeueing job 42 without n2 (run 2 of at most 3); it may start again at %s",
		 when);
	assert_string_equal(h.text, want);

	/* the bound: nothing to announce */
	memset(&h, 0, sizeof(h));
	fk.restarts = 2;
	fk.requeues = 0;
	assert_int_equal(spank_ib_requeue(&r, what, sizeof(what)), SPANK_IB_REQUEUE_BOUND);
	assert_int_equal(h.calls, 0);

	/* Slurm refuses after the announcement: the caller says so (the job runs on) */
	fk.restarts = 0;
	fk.requeue_rc = -1;
	fk.err = ESLURM_ACCESS_DENIED;
	assert_int_equal(spank_ib_requeue(&r, what, sizeof(what)), SPANK_IB_REQUEUE_FAILED);
	assert_int_equal(h.calls, 1);
	assert_string_equal(what, "not requeued: requeueing the job: Access/permission denied");
}

/* A finding of the child's, as its decoder hands it over. */
static void add(struct ibp_findings *f, const char *code, enum ibp_severity sev,
		enum ibp_fault_class cls, const char *node)
{
	struct ibp_finding x;

	memset(&x, 0, sizeof(x));
	snprintf(x.code, sizeof(x.code), "%s", code);
	x.severity = sev;
	x.fclass = cls;
	snprintf(x.node, sizeof(x.node), "%s", node);
	assert_int_equal(ibp_findings_add(f, &x), 0);
}

/*
 * Who acts after the test: n3 (NodeName n3, host n3-eth) requeues only when
 * the test suspects n3 itself; a neighbour's view of n3, another node's
 * blame, a warning or a link finding does nothing here; with a job fault
 * nothing is requeued.
 */
static void test_blame_who_acts(void **state)
{
	static const struct {
		const char *what;
		struct {
			const char *code;
			enum ibp_severity sev;
			enum ibp_fault_class cls;
			const char *node;
		} f[3];
		enum spank_ib_test_blame want;
	} cases[] = {
	    {"no finding", {{NULL, 0, 0, NULL}}, SPANK_IB_BLAME_NONE},
	    {"self-blame by NodeName",
	     {{"rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n3"}},
	     SPANK_IB_BLAME_SELF},
	    {"self-blame by host name",
	     {{"rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n3-eth"}},
	     SPANK_IB_BLAME_SELF},
	    {"a peer blamed (this node is its neighbour)",
	     {{"rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n1"}},
	     SPANK_IB_BLAME_NONE},
	    {"a name that only starts like this node's",
	     {{"rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n33"}},
	     SPANK_IB_BLAME_NONE},
	    {"a link failed, no node suspected",
	     {{"rdmatest_link_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n3"}},
	     SPANK_IB_BLAME_NONE},
	    {"a warning about this node",
	     {{"rdmatest_node_failed", IBP_SEV_WARN, IBP_CLASS_NODE, "n3"}},
	     SPANK_IB_BLAME_NONE},
	    {"self-blame with a job fault",
	     {{"rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n3"},
	      {"rdmatest_nodelist_mismatch", IBP_SEV_FAIL, IBP_CLASS_JOB, ""}},
	     SPANK_IB_BLAME_JOB_FAULT},
	    {"a job fault alone",
	     {{"rdmatest_no_nodelist", IBP_SEV_FAIL, IBP_CLASS_JOB, ""}},
	     SPANK_IB_BLAME_NONE},
	    {"self and a peer blamed",
	     {{"rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n1"},
	      {"rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "n3"}},
	     SPANK_IB_BLAME_SELF},
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibp_findings tf;
		enum spank_ib_test_blame got;

		ibp_findings_init(&tf);
		for (size_t k = 0; k < 3 && cases[i].f[k].code; k++)
			add(&tf, cases[i].f[k].code, cases[i].f[k].sev, cases[i].f[k].cls,
			    cases[i].f[k].node);
		got = spank_ib_test_blame(&tf, "n3", "n3-eth");
		if (got != cases[i].want)
			fail_msg("%s: %d, expected %d", cases[i].what, got, cases[i].want);
		ibp_findings_release(&tf);
	}
}

/*
 * The requeue the blame asked for, at the step's end: the job is told
 * before it is made; at the bound (or not allowed) nothing is requeued and
 * the job hears why; already back in the queue, silence; a job that cannot
 * be told is still requeued, and slurmd's log says it was not told.
 */
/* The one-shot's "R": after the job was told, before the requeue. */
static int intents, requeues_at_intent, notifies_at_intent;

static void intent(void *arg)
{
	(void)arg;
	intents++;
	requeues_at_intent = fk.requeues;
	notifies_at_intent = fk.notifies;
}

static void test_blame_requeue_told(void **state)
{
	struct ibp_conf conf;
	char what[768];
	(void)state;

	ibp_conf_init(&conf);
	conf.requeue_max = 1;
	conf.requeue_begin_s = 30;

	memset(&fk, 0, sizeof(fk));
	fk.batch = fk.requeue = 1;
	fk.state = JOB_RUNNING;
	assert_int_equal(
	    spank_ib_requeue_blamed(42, &conf, "n3", "n3", intent, NULL, what, sizeof(what)),
	    SPANK_IB_REQUEUE_DONE);
	assert_int_equal(fk.requeues, 1);
	assert_int_equal(fk.notifies, 1);
	assert_int_equal(fk.requeues_at_notify, 0);
	if (strncmp(fk.notified,
		    "spank-ib: n3: requeueing job 42 without n3 (run 2 of at most 2); it may "
		    "start again at ",
		    strlen("spank-ib: n3: requeueing job 42 without n3 (run 2 of at most 2); it "
			   "may start again at ")))
		fail_msg("told '%s'", fk.notified);
	assert_string_equal(fk.got_exc, "n3");
	assert_null(strstr(what, "could not be told"));
	assert_int_equal(intents, 1);
	assert_int_equal(notifies_at_intent, 1);
	assert_int_equal(requeues_at_intent, 0);
	intents = 0;

	/* the bound: not requeued, and the job hears why */
	memset(&fk, 0, sizeof(fk));
	fk.batch = fk.requeue = 1;
	fk.restarts = 1;
	fk.state = JOB_RUNNING;
	assert_int_equal(
	    spank_ib_requeue_blamed(42, &conf, "n3", "n3", intent, NULL, what, sizeof(what)),
	    SPANK_IB_REQUEUE_BOUND);
	assert_int_equal(fk.requeues, 0);
	assert_int_equal(fk.notifies, 1);
	assert_string_equal(fk.notified, "spank-ib: n3: not requeued: the requeue bound was "
					 "reached (job 42 ran 2 times, requeue_max=1)");
	assert_int_equal(intents, 0); /* nothing to be made */

	/* --no-requeue: the same, in its own words */
	memset(&fk, 0, sizeof(fk));
	fk.batch = 1;
	fk.state = JOB_RUNNING;
	assert_int_equal(
	    spank_ib_requeue_blamed(42, &conf, "n3", "n3", intent, NULL, what, sizeof(what)),
	    SPANK_IB_REQUEUE_NOT_ALLOWED);
	assert_int_equal(fk.requeues, 0);
	assert_non_null(strstr(fk.notified, "not requeued: job 42 does not allow it"));

	/* back in the queue already: nothing to say */
	memset(&fk, 0, sizeof(fk));
	fk.batch = fk.requeue = 1;
	fk.state = JOB_PENDING;
	assert_int_equal(
	    spank_ib_requeue_blamed(42, &conf, "n3", "n3", intent, NULL, what, sizeof(what)),
	    SPANK_IB_REQUEUE_ALREADY);
	assert_int_equal(fk.requeues, 0);
	assert_int_equal(fk.notifies, 0);

	/* the job's script has ended: it cannot be told, it is requeued all the same */
	memset(&fk, 0, sizeof(fk));
	fk.batch = fk.requeue = 1;
	fk.state = JOB_COMPLETE;
	fk.notify_rc = -1;
	fk.err = ESLURM_ACCESS_DENIED;
	assert_int_equal(
	    spank_ib_requeue_blamed(42, &conf, "n3", "n3", intent, NULL, what, sizeof(what)),
	    SPANK_IB_REQUEUE_DONE);
	assert_int_equal(fk.requeues, 1);
	assert_non_null(strstr(what, "requeued job 42 (run 2 of at most 2), without n3"));
	assert_non_null(strstr(what, "(the job could not be told: telling the job: "
				     "Access/permission denied)"));
}

/*
 * The begin time at the step's end: only a job still completing its
 * requeue (slurmctld applies its own delay at the end of it when the begin
 * time has passed), only to make it later.
 */
static void test_requeue_settle_begin(void **state)
{
	static const struct {
		const char *what;
		uint32_t state;
		long begin_from_now; /* LONG_MIN: none (0) */
		bool moved;
	} cases[] = {
	    {"completing, begin passed", JOB_PENDING | JOB_COMPLETING, -5, true},
	    {"completing, no begin time", JOB_PENDING | JOB_COMPLETING, LONG_MIN, true},
	    {"completing, begin in 3 s", JOB_PENDING | JOB_COMPLETING, 3, true},
	    {"completing, begin exactly settled", JOB_PENDING | JOB_COMPLETING,
	     SPANK_IB_REQUEUE_SETTLE_S, false},
	    {"completing, begin later", JOB_PENDING | JOB_COMPLETING, 40, false},
	    {"requeue complete (Slurm chose)", JOB_PENDING, -5, false},
	    {"running again", JOB_RUNNING, -5, false},
	    {"cancelled while completing", JOB_CANCELLED | JOB_COMPLETING, -5, false},
	};
	const time_t now = 1700000000;
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct spank_ib_job j = {.state = cases[i].state, .batch = true, .requeue = true};
		time_t got;

		j.begin = cases[i].begin_from_now == LONG_MIN ? 0 : now + cases[i].begin_from_now;
		got = spank_ib_requeue_settle_begin(&j, now);
		if (cases[i].moved ? got != now + SPANK_IB_REQUEUE_SETTLE_S : got != 0)
			fail_msg("%s: %ld, expected %s", cases[i].what, (long)(got ? got - now : 0),
				 cases[i].moved ? "+SETTLE_S" : "nothing");
	}
}

/* The settle against slurmctld: loaded, updated once, said; its failures said. */
static void test_requeue_settle(void **state)
{
	char what[512];
	time_t before;
	(void)state;

	memset(&fk, 0, sizeof(fk));
	fk.state = JOB_PENDING | JOB_COMPLETING;
	before = time(NULL);
	fk.eligible = before - 3;
	assert_int_equal(spank_ib_requeue_settle(42, what, sizeof(what)), 1);
	assert_int_equal(fk.updates, 1);
	assert_false(fk.exc_set);
	assert_true(fk.begin >= before + SPANK_IB_REQUEUE_SETTLE_S &&
		    fk.begin <= time(NULL) + SPANK_IB_REQUEUE_SETTLE_S);
	assert_non_null(strstr(what, "the requeued job may start again at "));
	assert_non_null(strstr(what, ", 10 s after its run ended here"));

	/* slurmctld finished the requeue: its begin time stands */
	memset(&fk, 0, sizeof(fk));
	fk.state = JOB_PENDING;
	fk.eligible = time(NULL) + 121;
	assert_int_equal(spank_ib_requeue_settle(42, what, sizeof(what)), 0);
	assert_int_equal(fk.updates, 0);

	memset(&fk, 0, sizeof(fk));
	fk.state = JOB_PENDING | JOB_COMPLETING;
	fk.update_rc = -1;
	fk.err = ESLURM_ACCESS_DENIED;
	assert_true(spank_ib_requeue_settle(42, what, sizeof(what)) < 0);
	assert_string_equal(what, "the requeued job's begin time is not settled (updating the "
				  "job: Access/permission denied): it starts again after Slurm's "
				  "own delay when its run ends after the begin time");

	memset(&fk, 0, sizeof(fk));
	fk.load_rc = -1;
	fk.err = ESLURM_ACCESS_DENIED;
	assert_true(spank_ib_requeue_settle(42, what, sizeof(what)) < 0);
	assert_string_equal(what, "the requeued job's begin time is not settled: loading the job: "
				  "Access/permission denied");
	assert_int_equal(fk.updates, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_requeue_outcomes),
	    cmocka_unit_test(test_requeue_load_fails),
	    cmocka_unit_test(test_requeue_check_does_nothing),
	    cmocka_unit_test(test_requeue_announced_before),
	    cmocka_unit_test(test_blame_who_acts),
	    cmocka_unit_test(test_blame_requeue_told),
	    cmocka_unit_test(test_requeue_settle_begin),
	    cmocka_unit_test(test_requeue_settle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
