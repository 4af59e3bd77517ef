/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ib-watch: the watcher of one step on one node, started by the
 * plugin (spank/ib_watch.c) as root in init_post_opt and stopped in
 * slurm_spank_exit.  Not for people: its arguments are the plugin's.
 *
 * Every --interval it reads the step's ports (helpers/node/watch.c, the
 * same watch as `ibprep watch`) and acts on a link that failed, by the
 * admin's policy (raised by the user's --ib-watch):
 *
 *   drain      drain=yes: the node, with the event as the reason (a link
 *              fault is a node fault), once
 *   tell       slurm_notify_job: one line on srun's (salloc's) stderr or the
 *              batch job's, naming the node, device, port and time
 *   end        watch_action=end and a link down for good: the step's tasks
 *              on every node get watch_signal= through slurm_kill_job_step;
 *              then, requeue wanted, the batch job is requeued
 *              (ib_requeue.c: bounded, never for a job fault)
 *   record     one line per event on standard output (a pipe the plugin
 *              reads at the step's end into slurmd's log and the report),
 *              a record in results_log=, and the job's AdminComment
 *
 * It reads local sysfs only, and talks to slurmctld (root may: drain,
 * notify, signal, requeue) through the Slurm library slurmstepd itself
 * runs (--slurm-library, root-only), loaded at the first action: a step
 * without an event never loads it.  It runs as uid 0 without any
 * capability (dropped at start, no_new_privs), keeps fixed-size state, and
 * stops when its standard input ends (the plugin closed the lifeline, or
 * slurmstepd is gone), when its parent is no longer --parent, or on
 * SIGKILL from PR_SET_PDEATHSIG.
 *
 * With --requeue-now=yes it watches nothing: it is the one requeue of the
 * node the cross-node test suspects, started by the plugin in user_init
 * (where the Slurm API cannot be called from 24.11 on) as uid 0 without
 * capabilities and bounded by the plugin's deadline: the job told, "R",
 * the requeue without --node, "Q" with its outcome, exit.
 *
 * With --drain-now=yes it watches nothing either: it is the one drain of
 * the job prolog (prolog_check=yes, ib_prolog.c), where from Slurm 24.11
 * the prolog's own process cannot call Slurm, run the same way on every
 * release: this node (--node, else slurm.conf's NodeName for --host)
 * drained with --reason, "D" when it is, "X" with why not, exit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "ibprep/nodestate.h"
#include "ibprep/results_log.h"
#include "ibprep/rootpath.h"
#include "ibprep/sysfs.h"
#include "ibprep/text.h"
#include "ibprep/watch.h"

#include "../spank_ib.h"
#include "watch_args.h"

#define NOTIFY_MAX  8   /* lines told to the job per step */
#define COMMENT_MAX 4   /* events added to the AdminComment per step */
#define LINES_MAX   200 /* lines to the plugin per step */

struct state {
	struct spank_ib_watch_cfg c;
	bool slurm_tried, slurm_ok;
	char slurm_err[PATH_MAX + 128];
	bool drained, ended;
	unsigned notified, commented, lines, dropped;
	uint64_t events;
};

static struct ibp_watch watch;
static struct ibp_watch_event events[IBP_WATCH_MAX_EVENTS];

/* ---- what goes to the plugin: one write per line, never blocking ---- */

/* TEXT with tabs and line ends as spaces (the line's fields are tab-separated). */
static void flat(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n' || *s == '\r')
			*s = ' ';
}

__attribute__((format(printf, 2, 3))) static void say(struct state *st, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int n;

	if (st->lines >= LINES_MAX) {
		st->dropped++;
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(1, line, (size_t)n) != n)
		st->dropped++; /* a full pipe: the plugin reads at the end */
	else
		st->lines++;
}

static int64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* "X\tNS\ttext": the watcher's own trouble, for slurmd's log. */
__attribute__((format(printf, 2, 3))) static void trouble(struct state *st, const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	flat(text);
	say(st, "X\t%" PRId64 "\t%s", now_ns(CLOCK_REALTIME), text);
}

/* ---- privilege: uid 0 (munge vouches for root to slurmctld), no capability ---- */

static int drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];

	/*
	 * EPERM: started without CAP_SETPCAP (the plugin's helper runner drops
	 * every capability before exec, --requeue-now): its bounding set is
	 * already empty, and no_new_privs below keeps exec from adding any.
	 */
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL && errno != EPERM)
			return -errno;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0;
}

/* ---- Slurm: the library slurmstepd runs, loaded at the first action ---- */

static bool slurm_ready(struct state *st)
{
	char why[PATH_MAX + 256];
	void (*init)(const char *);
	void *h;
	int fd;

	if (st->slurm_tried)
		return st->slurm_ok;
	st->slurm_tried = true;
	/* root-owned, in directories only root can write: it runs as root here */
	fd = ibp_rootpath_open(st->c.slurm_library, O_RDONLY, IBP_ROOTPATH_ROOT, why, sizeof(why));
	if (fd < 0) {
		ibp_format_cut(st->slurm_err, sizeof(st->slurm_err), "the Slurm library %s", why);
		return false;
	}
	close(fd);
	h = dlopen(st->c.slurm_library, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *e = dlerror();

		snprintf(st->slurm_err, sizeof(st->slurm_err), "cannot load %s: %s",
			 st->c.slurm_library, e ? e : "?");
		return false;
	}
	init = (void (*)(const char *))dlsym(h, "slurm_init");
	if (!init) {
		snprintf(st->slurm_err, sizeof(st->slurm_err), "%s has no slurm_init",
			 st->c.slurm_library);
		return false;
	}
	/* slurmstepd's slurm.conf: --slurm-conf, else SLURM_CONF as slurmstepd's */
	init(st->c.slurm_conf[0] ? st->c.slurm_conf : NULL);
	st->slurm_ok = true;
	return true;
}

/* ---- acting on one event ---- */

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t o = strlen(buf);
	va_list ap;

	if (o + 1 >= len)
		return;
	if (o)
		o += (size_t)snprintf(buf + o, len - o, "; ");
	if (o + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + o, len - o, fmt, ap);
	va_end(ap);
}

static void record(struct state *st, const struct ibp_watch_event *e)
{
	struct ibp_link_record r;
	char err[512];

	if (!st->c.results_log[0] || e->f.severity == IBP_SEV_OK)
		return;
	memset(&r, 0, sizeof(r));
	r.time = e->real_ns / 1000000000;
	r.job = st->c.job;
	r.step = st->c.step;
	/* a port event, not a link: both ends are this node (ibprep fabric skips it) */
	snprintf(r.by, sizeof(r.by), "%s", st->c.host);
	snprintf(r.a, sizeof(r.a), "%s", st->c.host);
	snprintf(r.b, sizeof(r.b), "%s", st->c.host);
	r.a_rail = r.b_rail = -1;
	snprintf(r.a_dev, sizeof(r.a_dev), "%s", e->f.device);
	snprintf(r.b_dev, sizeof(r.b_dev), "%s", e->f.device);
	r.a_port = r.b_port = (unsigned)e->f.port;
	snprintf(r.event, sizeof(r.event), "%s", e->f.code); /* why: the code; ok: false */
	r.rtt_us = r.gbps = -1;
	if (ibp_results_log_append(st->c.results_log, st->c.results_log_max, 0, &r, 1, err,
				   sizeof(err)))
		trouble(st, "results_log: %s: this event is not recorded there", err);
}

/* The job's AdminComment, the event appended ("; " between), while it fits. */
static void comment(struct state *st, const struct ibp_watch_event *e, const char *when)
{
	struct spank_ib_job j;
	char add[256], all[512], err[512];

	if (st->commented >= COMMENT_MAX)
		return;
	st->commented++;
	snprintf(add, sizeof(add), "spank-ib %s %s %s/%d %s", when, st->c.host, e->f.device,
		 e->f.port, e->f.code);
	if (spank_ib_job_load(st->c.job, &j, err, sizeof(err))) {
		trouble(st, "AdminComment not set: %s", err);
		return;
	}
	if (strlen(j.admin_comment) + strlen(add) + 3 > sizeof(all) - 1)
		return; /* full: slurmd's log and the drain reason have it */
	ibp_format_cut(all, sizeof(all), "%s%s%s", j.admin_comment, j.admin_comment[0] ? "; " : "",
		       add);
	if (spank_ib_job_update(st->c.job, 0, all, NULL, err, sizeof(err)))
		trouble(st, "AdminComment not set: %s", err);
}

/*
 * What is done about one event, in an order that survives the end of the
 * step: Slurm signals the step's processes, and proctrack kills every
 * process of the step once its tasks are gone (this one too, SIGKILL), so
 * everything that must not be lost (the drain, the job told, the records,
 * this event's line) is done before the step is signalled.  A requeue comes
 * after the signal (so the tasks get watch_signal=, not only the requeue's
 * SIGTERM): its intent goes out first ("R"), its outcome after ("Q"), and
 * the plugin requeues at the step's end itself when the outcome is missing.
 */
static void act(struct state *st, const struct ibp_watch_event *e)
{
	char when[40], done[1024] = "", msg[1024], err[512], reason[IBP_DRAIN_REASON_MAX];
	char observed[sizeof(e->f.observed)], fix[sizeof(e->f.fix)], going[128], plan[512] = "";
	bool fault = e->f.severity == IBP_SEV_FAIL;
	bool end_now = fault && st->c.end && e->ends && !st->ended;
	bool requeue = false;
	struct spank_ib_requeue_req rq = {.job = st->c.job,
					  .max = st->c.requeue_max,
					  .begin_s = st->c.requeue_begin_s,
					  .node = st->c.node[0] ? st->c.node : st->c.host};

	st->events++;
	ibp_watch_time_text(e->real_ns, when, sizeof(when));
	snprintf(observed, sizeof(observed), "%s", e->f.observed);
	snprintf(fix, sizeof(fix), "%s", e->f.fix);
	flat(observed);
	flat(fix);
	if (fault && !slurm_ready(st)) {
		trouble(st, "no action on %s port %d: %s", e->f.device, e->f.port, st->slurm_err);
		fault = end_now = false;
	}
	if (fault && st->c.drain && !st->drained) {
		if (!st->c.node[0]) {
			append(done, sizeof(done), "not draining: no NodeName for host %s",
			       st->c.host);
		} else {
			snprintf(reason, sizeof(reason), "%s%s port %d: %s", IBP_DRAIN_PREFIX,
				 e->f.device, e->f.port, observed);
			if (spank_ib_drain(st->c.node, reason, err, sizeof(err)))
				append(done, sizeof(done), "draining %s failed: %s", st->c.node,
				       err);
			else {
				st->drained = true;
				append(done, sizeof(done), "drained %s", st->c.node);
			}
		}
	}
	/* the job is told about its requeue now: once requeued, it cannot be told */
	if (end_now && st->c.requeue) {
		enum spank_ib_requeue_outcome o = spank_ib_requeue_check(&rq, plan, sizeof(plan));

		requeue = o == SPANK_IB_REQUEUE_DONE;
		flat(plan);
		if (o == SPANK_IB_REQUEUE_ALREADY)
			plan[0] = '\0';
	}
	if (fault && st->notified < NOTIFY_MAX) {
		if (end_now)
			snprintf(going, sizeof(going), "ending the step (%s)", st->c.sig_name);
		else if (st->ended)
			snprintf(going, sizeof(going), "the step is being ended");
		else if (st->c.end && e->kind == IBP_WATCH_DOWN)
			snprintf(going, sizeof(going),
				 "the step is ended if the link is not ACTIVE again within %g s",
				 st->c.flap_s);
		else
			snprintf(going, sizeof(going), "the step goes on");
		snprintf(msg, sizeof(msg), "spank-ib: %s: %s port %d: %s: %s; %s%s%s%s%s",
			 st->c.host, e->f.device, e->f.port, observed, fix, going,
			 st->drained && strstr(done, "drained") ? "; draining " : "",
			 st->drained && strstr(done, "drained") ? st->c.node : "",
			 plan[0] ? "; " : "", plan);
		st->notified++;
		if (spank_ib_job_notify(st->c.job, msg, err, sizeof(err)))
			append(done, sizeof(done), "%s", err);
		else
			append(done, sizeof(done), "told the job");
	}
	if (fault)
		comment(st, e, when);
	record(st, e);
	if (end_now)
		append(done, sizeof(done), "ending step %u.%u (%s)", st->c.job, st->c.step,
		       st->c.sig_name);
	flat(done);
	say(st, "E\t%" PRId64 "\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s", e->real_ns,
	    ibp_watch_kind_name(e->kind), e->f.code, ibp_severity_name(e->f.severity),
	    e->ends ? 1 : 0, e->f.device, e->f.port, observed, done);
	if (!end_now)
		return;
	st->ended = true;
	if (requeue)
		say(st, "R\t%" PRId64 "\t%u", now_ns(CLOCK_REALTIME), st->c.job);
	else if (plan[0])
		say(st, "Q\t%" PRId64 "\t%s", now_ns(CLOCK_REALTIME), plan);
	if (spank_ib_step_signal(st->c.job, st->c.step, st->c.sig, err, sizeof(err)))
		trouble(st, "%s", err);
	if (requeue) {
		char what[512];
		enum spank_ib_requeue_outcome o = spank_ib_requeue(&rq, what, sizeof(what));

		flat(what);
		say(st, "Q\t%" PRId64 "\t%s", now_ns(CLOCK_REALTIME), what);
		/* refused after all: the job still runs and can be told */
		if (o != SPANK_IB_REQUEUE_DONE && o != SPANK_IB_REQUEUE_ALREADY &&
		    st->notified < NOTIFY_MAX) {
			snprintf(msg, sizeof(msg), "spank-ib: %s: %s", st->c.host, what);
			st->notified++;
			(void)spank_ib_job_notify(st->c.job, msg, err, sizeof(err));
		}
	}
}

/* ---- --requeue-now: the requeue after the cross-node test ---- */

static void said_intent(void *arg)
{
	struct state *st = arg;

	say(st, "R\t%" PRId64 "\t%u", now_ns(CLOCK_REALTIME), st->c.job);
}

/*
 * The job is told, "R" says the requeue is being made (a missing "Q" after
 * it: the plugin's exit finds the job back in the queue), "Q" its outcome.
 */
static int requeue_now(struct state *st)
{
	struct ibp_conf conf;
	char what[768];

	if (!slurm_ready(st)) {
		trouble(st, "not requeued: %s", st->slurm_err);
		return 2;
	}
	ibp_conf_init(&conf);
	conf.requeue_max = st->c.requeue_max;
	conf.requeue_begin_s = st->c.requeue_begin_s;
	(void)spank_ib_requeue_blamed(st->c.job, &conf, st->c.host,
				      st->c.node[0] ? st->c.node : st->c.host, said_intent, st,
				      what, sizeof(what));
	flat(what);
	say(st, "Q\t%" PRId64 "\t%s", now_ns(CLOCK_REALTIME), what);
	return 0;
}

/* ---- --drain-now: the job prolog's drain ---- */

/*
 * One slurm_update_node (one RPC, bounded by MessageTimeout; the plugin
 * kills this process past its own, shorter deadline).  "D\tNS\tNODE" when
 * drained; "X" lines say why not.
 */
static int drain_now(struct state *st)
{
	char node[IBP_NODE_MAX], err[512];
	int rc;

	if (!slurm_ready(st)) {
		trouble(st, "not drained: %s", st->slurm_err);
		return 2;
	}
	if (st->c.node[0]) {
		snprintf(node, sizeof(node), "%s", st->c.node);
	} else {
		/* this process's own slurm.conf (slurm_init above), never an environment's */
		rc = spank_ib_node_name(st->c.host, node, sizeof(node));
		if (rc) {
			trouble(st, "not drained: no NodeName for host %s in slurm.conf (%s)",
				st->c.host, strerror(-rc));
			return 2;
		}
	}
	if (spank_ib_drain(node, st->c.reason, err, sizeof(err))) {
		flat(err);
		trouble(st, "draining %s failed: %s", node, err);
		return 2;
	}
	say(st, "D\t%" PRId64 "\t%s", now_ns(CLOCK_REALTIME), node);
	return 0;
}

/* ---- the loop ---- */

/* false when the step is over: the lifeline ended, or the parent is gone */
static bool wait_tick(const struct state *st, int64_t next)
{
	for (;;) {
		int64_t left = next - now_ns(CLOCK_MONOTONIC);
		struct pollfd p = {.fd = 0, .events = POLLIN};
		int r;

		if (getppid() != st->c.parent)
			return false;
		if (left <= 0)
			return true;
		r = poll(&p, 1, (int)((left + 999999) / 1000000));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 0) {
			char b[64];

			/* EOF, an error, or bytes nobody should send: the step is over */
			if (r < 0 || read(0, b, sizeof(b)) <= 0 ||
			    (p.revents & (POLLHUP | POLLERR)))
				return false;
		}
	}
}

int main(int argc, char **argv)
{
	static struct state st;
	struct ibp_sysfs fs = {.root_fd = -1};
	char err[1024];
	int64_t next;
	size_t n;
	int rc;

	(void)fcntl(1, F_SETFL, O_NONBLOCK);
	/*
	 * The step's signals are not for the watcher: Slurm signals every
	 * process of the step (scancel --signal, the time limit, the ending
	 * above).  What ends it: its lifeline, its parent's end, SIGKILL.
	 */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGSEGV && sig != SIGBUS &&
		    sig != SIGFPE && sig != SIGILL && sig != SIGTRAP && sig != SIGSYS &&
		    sig != SIGABRT)
			(void)signal(sig, SIG_IGN);
	if (spank_ib_watch_parse_args(argc, argv, &st.c, err, sizeof(err))) {
		trouble(&st, "not started: %s", err);
		return 2;
	}
	if (getppid() != st.c.parent)
		return 0; /* slurmstepd is already gone */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != st.c.parent)
		return 0;
	rc = drop_capabilities();
	if (rc) {
		trouble(&st, "not started: cannot drop capabilities: %s", strerror(-rc));
		return 2;
	}
	if (st.c.requeue_now)
		return requeue_now(&st);
	if (st.c.drain_now)
		return drain_now(&st);
	rc = ibp_sysfs_open(&fs, st.c.root);
	if (!rc)
		rc = ibp_watch_init(&watch, st.c.flap_s, st.c.ports, st.c.n_ports, NULL);
	/*
	 * The first comparison's "before": the plugin's own read of the ports at
	 * the step's start when it passed one (no second read while the tasks
	 * start, and nothing missed between its read and this one), else a read
	 * now.
	 */
	if (!rc)
		rc = st.c.have_base
			 ? ibp_watch_update(&watch, &st.c.base, events, IBP_WATCH_MAX_EVENTS, &n)
			 : ibp_watch_poll(&watch, &fs, events, IBP_WATCH_MAX_EVENTS, &n);
	if (rc) {
		trouble(&st, "not started: %s: %s", st.c.root, strerror(-rc));
		return 2;
	}
	say(&st, "S\t%" PRId64 "\t%zu ports every %g s", now_ns(CLOCK_REALTIME), st.c.n_ports,
	    st.c.interval_s);
	/*
	 * The first read an interval after the step's start: the plugin starts
	 * the watcher (execs it) only shortly before that read is due and says
	 * when it is (--first-read), else an interval from now.
	 */
	next = now_ns(CLOCK_MONOTONIC);
	if (st.c.first_read_ns > 0 && st.c.first_read_ns < next + (int64_t)(st.c.interval_s * 1e9))
		next = st.c.first_read_ns - (int64_t)(st.c.interval_s * 1e9); /* never later */
	for (;;) {
		next += (int64_t)(st.c.interval_s * 1e9);
		if (!wait_tick(&st, next))
			break;
		rc = ibp_watch_poll(&watch, &fs, events, IBP_WATCH_MAX_EVENTS, &n);
		if (rc) {
			trouble(&st, "reading %s: %s", st.c.root, strerror(-rc));
			continue;
		}
		for (size_t i = 0; i < n; i++)
			act(&st, &events[i]);
		if (now_ns(CLOCK_MONOTONIC) > next + (int64_t)(st.c.interval_s * 1e9))
			next = now_ns(CLOCK_MONOTONIC); /* starved: no burst of catch-up reads */
	}
	say(&st, "S\t%" PRId64 "\t%zu ports every %g s, %" PRIu64 " reads, %" PRIu64 " event%s%s",
	    now_ns(CLOCK_REALTIME), st.c.n_ports, st.c.interval_s, watch.polls, st.events,
	    st.events == 1 ? "" : "s", st.dropped ? ", some lines dropped" : "");
	ibp_sysfs_close(&fs);
	return 0;
}
