/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_watch.c: the step's watcher, from the plugin's side: started in
 * init_post_opt, stopped and read in slurm_spank_exit.
 *
 *   init_post_opt (root)  spank_ib_watch_start: for a normal step whose
 *                         health is checked (--ib-check or enforce=check,
 *                         link_watch=yes, watch_interval= > 0) and whose
 *                         start checks passed: start the watcher
 *                         (spank/watcher/, SPANK_IB_WATCHER or the admin's
 *                         root-owned watch_helper=) as root with the step's
 *                         ports, the policy and two pipes
 *   user_init (the job's  spank_ib_requeue_now: the node the cross-node test
 *   user)                 suspects runs the watcher once (--requeue-now) as
 *                         uid 0 without capabilities, bounded, to tell the
 *                         job and requeue it without this node
 *   job prolog (root, in  spank_ib_drain_now: a node fault found at
 *   slurmd's prolog       allocation (prolog_check=yes) drains the node
 *   process)              through the watcher run once (--drain-now), the
 *                         same way, with the fault as the reason
 *   exit (root)           spank_ib_watch_stop: close the lifeline, give the
 *                         watcher a moment to finish an action it began,
 *                         SIGKILL it past that, reap it (bounded), and read
 *                         what it did into slurmd's log and the report
 *
 * No thread in slurmstepd: the watcher is a process of its own, which polls
 * local sysfs and, on a link that fails, calls slurmctld itself (drain,
 * notify, end the step, requeue).  It never outlives its step: the exit
 * callback kills it, and when slurmstepd dies the watcher goes too, three
 * ways: PR_SET_PDEATHSIG (set before exec), the lifeline pipe whose only
 * writer is slurmstepd (EOF when its process is gone: pdeathsig alone
 * follows the forking thread, not the process), and a check of its parent
 * at every poll.  It is killed through a pidfd, so a PID reused after
 * slurmstepd's own wait reaped it is never hit.
 *
 * The watcher is exec'd just before its first read (an interval after the
 * step's start): a forked child waits on the lifeline until then
 * (spank_ib_child_fork), and leaves without exec when the step ends first.
 * Between its start and exec the child calls only async-signal-safe
 * functions: slurmstepd has threads.  Everything it needs is built before.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "ibprep/deadline.h"
#include "ibprep/text.h"
#include "ibprep/watch.h"

#include "spank_ib.h"

#ifndef SPANK_IB_WATCHER
#define SPANK_IB_WATCHER "/usr/local/libexec/spank-ib-watch"
#endif

#define WATCH_ARGS    24
#define WATCH_ARG_MAX PATH_MAX
#define WATCH_PORTS   (IBP_LW_MAX_PORTS * (IBP_DEV_MAX + 5))
#define STOP_GRACE_MS 1000 /* an action begun (one RPC) may finish */
/* the watcher is exec'd this long before its first read (deferred: interval > 2x this) */
#define EXEC_LEAD_MS   100
#define READ_MAX_BYTES (256 * 1024) /* what the watcher may say in one step */

struct spank_ib_watcher {
	pid_t pid;
	int pidfd;   /* -1: no pidfd_open (kernels before 5.3): the PID, checked by start time */
	int life_wr; /* the lifeline: closing it tells the watcher to stop */
	int out_rd;  /* what the watcher says, one line per event */
	unsigned long long
	    start_ticks; /* the child's start time (proc/PID/stat), for kill by PID */
	uint32_t job, step;
	double interval_s;
	size_t n_ports;
};

const char *spank_ib_watcher_default(void)
{
	return SPANK_IB_WATCHER;
}

/* ---- the child, between its start and exec: async-signal-safe only ---- */

struct child_args {
	const char *path;
	pid_t parent;
	int life_rd, out_wr;
	int64_t exec_at; /* CLOCK_MONOTONIC ns; 0: at once (spank_ib_child_spawn) */
	char *const *argv, *const *envp;
};

/*
 * In a forked child (spank_ib_child_fork): until EXEC_AT, or false when the
 * lifeline (fd 0) ended first: the step is over before the first read.
 */
static bool wait_exec_at(int64_t exec_at)
{
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		struct timespec t;
		int64_t left;
		int r;

		if (clock_gettime(CLOCK_MONOTONIC, &t))
			return true;
		left = exec_at - ((int64_t)t.tv_sec * IBP_NS_PER_S + t.tv_nsec);
		if (left <= 0)
			return true;
		r = poll(&p, 1, (int)((left + 999999) / 1000000));
		if (r > 0)
			return false; /* EOF (or bytes nobody sends): the step ended */
		if (r < 0 && errno != EINTR)
			return true;
	}
}

/* Runs in slurmstepd's memory (spank_ib_child_spawn): never returns. */
static int child_exec(void *arg)
{
	const struct child_args *c = arg;
	int null_fd;

	spank_ib_child_default_signals();
	/* gone with slurmstepd; already gone: stop here */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != c->parent)
		_exit(120);
	(void)setsid(); /* out of slurmstepd's process group and session */
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || c->life_rd < 3 || c->out_wr < 3 || dup2(c->life_rd, 0) != 0 ||
	    dup2(c->out_wr, 1) != 1 || dup2(c->out_wr, 2) != 2)
		_exit(121);
	spank_ib_child_close_from(3);
	if (chdir("/"))
		_exit(122);
	if (c->exec_at && !wait_exec_at(c->exec_at))
		_exit(0); /* said nothing: spank_ib_watch_stop knows it never read */
	execve(c->path, c->argv, c->envp);
	_exit(127);
}

/* ---- the parent ---- */

/* Field 22 of proc/PID/stat: the start time in clock ticks since boot; 0 unknown. */
static unsigned long long start_ticks(pid_t pid)
{
	char path[64], buf[1024], *p, *end;
	unsigned long long t;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
	if (!p)
		return 0;
	/* ") S ppid ...": the state is field 3, the start time field 22 */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return 0;
	errno = 0;
	t = strtoull(p + 1, &end, 10);
	return errno || end == p + 1 ? 0 : t;
}

/* SIG to the watcher, never to a process that took its PID. */
static void signal_watcher(const struct spank_ib_watcher *w, int sig)
{
	if (w->pidfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, w->pidfd, sig, NULL, 0);
		return;
	}
	if (w->start_ticks && start_ticks(w->pid) == w->start_ticks)
		(void)kill(w->pid, sig);
}

/*
 * "mlx5_0:1,mlx5_3:1": the step's ports.  The placement's fabric ports when
 * there is a placement (what NCCL_IB_HCA names), else every port read at
 * the step's start (ib_linkwatch.c: all but ignore_hcas=; a verdict from
 * the cache loads no inventory).
 */
static size_t step_ports(const struct spank_ib_state *st, const struct spank_ib_node *n,
			 struct ibp_lw_port_id *ids, char *buf, size_t len)
{
	size_t count = 0, o = 0;

	memset(ids, 0, IBP_LW_MAX_PORTS * sizeof(*ids));
	if (n->have_pl && n->pl.n_fabric) {
		for (size_t i = 0; i < n->pl.n_fabric && count < IBP_LW_MAX_PORTS; i++) {
			const struct ibp_place_nic *nic = &n->pl.fabric[i];

			if (nic->hca < 0 || (size_t)nic->hca >= n->topo.n_hcas)
				continue;
			snprintf(ids[count].device, sizeof(ids[count].device), "%s",
				 n->topo.hcas[nic->hca].name);
			ids[count++].port = nic->port;
		}
	} else {
		count = spank_ib_lw_ports(st, ids, IBP_LW_MAX_PORTS);
	}
	buf[0] = '\0';
	for (size_t i = 0; i < count; i++)
		if (ibp_appendf(buf, len, &o, "%s%s:%u", i ? "," : "", ids[i].device, ids[i].port))
			return 0;
	return count;
}

/* The argv of the watcher, in ARGS (WATCH_ARGS buffers of WATCH_ARG_MAX). */
struct argv_buf {
	char *v[WATCH_ARGS + 1];
	char s[WATCH_ARGS][WATCH_ARG_MAX];
	size_t n;
};

/*
 * The step's watcher's argv and what only it carries: its ports and the
 * baseline read (IBP_LW_TEXT_MAX, 13 KB), which the one-shots
 * (spank_ib_requeue_now, spank_ib_drain_now) do not allocate.
 */
struct watch_argv {
	struct argv_buf a;
	char ports[WATCH_PORTS];
	struct ibp_lw_port_id ids[IBP_LW_MAX_PORTS];
	char baseline[sizeof("--baseline=") + IBP_LW_TEXT_MAX];
};

__attribute__((format(printf, 2, 3))) static int arg(struct argv_buf *a, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (a->n == WATCH_ARGS)
		return -E2BIG;
	va_start(ap, fmt);
	w = vsnprintf(a->s[a->n], WATCH_ARG_MAX, fmt, ap);
	va_end(ap);
	if (w < 0 || w >= WATCH_ARG_MAX)
		return -ENAMETOOLONG;
	a->v[a->n] = a->s[a->n];
	a->n++;
	a->v[a->n] = NULL;
	return 0;
}

void spank_ib_watch_start(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n,
			  const char *root)
{
	const struct ibp_policy *pol = &st->conf.policy;
	char helper[PATH_MAX], lib[PATH_MAX], node[IBP_NODE_MAX] = "", results[PATH_MAX] = "";
	char err[PATH_MAX + 256], conf_env[PATH_MAX + 16];
	static const char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", lc_env[] = "LC_ALL=C";
	char *envp[4];
	struct spank_ib_watcher *w = NULL;
	struct watch_argv *wa = NULL;
	struct argv_buf *a;
	const struct ibp_linkwatch *base;
	int life[2] = {-1, -1}, out[2] = {-1, -1}, rc = 0;
	size_t n_ports;
	int64_t first_read = 0;
	pid_t pid, self = getpid();

	(void)sp;
	spank_ib_watch_free(st);
	st->watch_n = 0;
	st->watch_drained = false;
	st->watch_summary[0] = '\0';
	if (pol->watch_interval_s <= 0)
		return;
	snprintf(helper, sizeof(helper), "%s",
		 st->conf.watch_helper[0] ? st->conf.watch_helper : spank_ib_watcher_default());
	/*
	 * The watcher's own trouble (not started, its "X" lines, what else it
	 * wrote, not reaped) is the admin's: slurmd's log at info, never an
	 * error in the user's step.  A fault it saw ("E", fail) stays an error:
	 * the job was told by the watcher itself (scontrol notify).
	 */
	if (spank_ib_helper_check("watcher", helper, err, sizeof(err))) {
		slurm_info("spank-ib: %s: job %u.%u: no link watch: %s", st->host, n->job_id,
			   n->step_id, err);
		return;
	}
	if (spank_ib_slurm_library(lib, sizeof(lib))) {
		slurm_info("spank-ib: %s: job %u.%u: no link watch: the Slurm library of this "
			   "slurmstepd cannot be found (dladdr)",
			   st->host, n->job_id, n->step_id);
		return;
	}
	if (spank_ib_node_name(st->host, node, sizeof(node)))
		node[0] = '\0'; /* the watcher then drains nothing, and says so */
	if (st->conf.results_log[0] &&
	    ibp_conf_expand(st->conf.results_log, st->host, NULL, results, sizeof(results)))
		results[0] = '\0';
	wa = calloc(1, sizeof(*wa));
	w = calloc(1, sizeof(*w));
	if (!wa || !w)
		goto fail;
	a = &wa->a;
	n_ports = step_ports(st, n, wa->ids, wa->ports, sizeof(wa->ports));
	if (!n_ports) {
		free(wa);
		free(w);
		return; /* no RDMA port: nothing to watch (the checks said what they found) */
	}
	{
		char sig[32];

		rc |= arg(a, "%s", helper);
		rc |= arg(a, "--job=%" PRIu32, n->job_id);
		rc |= arg(a, "--step=%" PRIu32, n->step_id);
		rc |= arg(a, "--host=%s", st->host);
		rc |= arg(a, "--node=%s", node);
		rc |= arg(a, "--root=%s", root);
		rc |= arg(a, "--ports=%s", wa->ports);
		rc |= arg(a, "--interval=%g", pol->watch_interval_s);
		rc |= arg(a, "--flap=%g", pol->watch_flap_s);
		rc |=
		    arg(a, "--action=%s", st->eff.watch == IBP_WATCH_ACTION_END ? "end" : "report");
		rc |= arg(a, "--signal=%d", st->conf.watch_signal);
		rc |= arg(a, "--signal-name=%s",
			  ibp_conf_signal_name(st->conf.watch_signal, sig, sizeof(sig)));
		rc |= arg(a, "--drain=%s", st->conf.drain ? "yes" : "no");
		rc |= arg(a, "--requeue=%s", st->eff.requeue ? "yes" : "no");
		rc |= arg(a, "--requeue-max=%u", st->conf.requeue_max);
		rc |= arg(a, "--requeue-begin=%d", st->conf.requeue_begin_s);
		rc |= arg(a, "--results-log=%s", results);
		rc |= arg(a, "--results-log-max=%" PRIu64, st->conf.results_log_max);
		rc |= arg(a, "--slurm-library=%s", lib);
		rc |= arg(a, "--parent=%d", (int)self);
		/*
		 * Its first read is due an interval after now, as ever: the
		 * watcher is exec'd just before that read, so that a step that
		 * ends sooner never pays its exec and start (the step-end
		 * comparison covers such a step alone).
		 */
		if (pol->watch_interval_s * 1000 > 2 * EXEC_LEAD_MS) {
			first_read = ibp_now_ns() + (int64_t)(pol->watch_interval_s * 1e9);
			rc |= arg(a, "--first-read=%" PRId64, first_read);
		}
		/*
		 * The ports as the plugin read them at the step's start: the
		 * watcher compares its first read with this one instead of reading
		 * once more while the step's tasks start (none: it reads its own).
		 */
		base = spank_ib_lw_before(st);
		memcpy(wa->baseline, "--baseline=", sizeof("--baseline="));
		if (!rc && base && a->n < WATCH_ARGS &&
		    !ibp_linkwatch_to_text(base, wa->ids, n_ports,
					   wa->baseline + sizeof("--baseline=") - 1,
					   sizeof(wa->baseline) - sizeof("--baseline=") + 1)) {
			a->v[a->n++] = wa->baseline;
			a->v[a->n] = NULL;
		}
	}
	if (rc)
		goto fail;
	snprintf(conf_env, sizeof(conf_env), "SLURM_CONF=%s", spank_ib_slurm_conf_path());
	envp[0] = (char *)path_env;
	envp[1] = (char *)lc_env;
	envp[2] = conf_env;
	envp[3] = NULL;
	if (pipe2(life, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		goto fail;
	{
		struct child_args c = {
		    .path = helper,
		    .parent = self,
		    .life_rd = life[0],
		    .out_wr = out[1],
		    .exec_at = first_read ? first_read - EXEC_LEAD_MS * IBP_NS_PER_MS : 0,
		    .argv = a->v,
		    .envp = envp};

		pid = c.exec_at ? spank_ib_child_fork(child_exec, &c)
				: spank_ib_child_spawn(child_exec, &c);
	}
	if (pid < 0)
		goto fail;
	close(life[0]);
	close(out[1]);
	(void)fcntl(out[0], F_SETFL, O_NONBLOCK);
	w->pid = pid;
	w->pidfd = spank_ib_pidfd_open(pid); /* closed by spank_ib_watch_free */
	if (w->pidfd < 0)
		w->start_ticks = start_ticks(pid);
	w->life_wr = life[1];
	w->out_rd = out[0];
	w->job = n->job_id;
	w->step = n->step_id;
	w->interval_s = pol->watch_interval_s;
	w->n_ports = n_ports;
	st->watcher = w;
	free(wa);
	return;
fail:
	slurm_info("spank-ib: %s: job %u.%u: no link watch: cannot start %s: %s", st->host,
		   n->job_id, n->step_id, helper, rc ? "arguments too long" : strerror(errno));
	for (int i = 0; i < 2; i++) {
		if (life[i] >= 0)
			close(life[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	free(wa);
	free(w);
}

/* ---- what the watcher said ---- */

static void append_done(struct spank_ib_watch_line *k, const char *text);

/* Splits LINE at tabs into at most MAX fields; the count. */
static size_t split_tabs(char *line, char **f, size_t max)
{
	size_t n = 0;

	while (n < max) {
		f[n++] = line;
		line = strchr(line, '\t');
		if (!line)
			break;
		*line++ = '\0';
	}
	return n;
}

/*
 * One line of the watcher: "E\tNS\tKIND\tCODE\tSEV\tENDS\tDEV\tPORT\tOBSERVED\tDONE",
 * "X\tNS\tTEXT" (its trouble) or anything else (Slurm's library on its
 * stderr).  Into slurmd's log and ST's list for the report.
 */
static void take_line(struct spank_ib_state *st, const struct spank_ib_watcher *w, char *line)
{
	char safe[2048], when[40], orig[2048], *f[10];
	size_t nf;
	int64_t ns = 0;

	snprintf(orig, sizeof(orig), "%s", line); /* for a line that is none of ours */
	nf = split_tabs(line, f, 10);
	if (nf >= 2 && f[1][0] >= '0' && f[1][0] <= '9')
		ns = strtoll(f[1], NULL, 10);
	ibp_watch_time_text(ns, when, sizeof(when));
	if (nf == 10 && !strcmp(f[0], "E")) {
		char text[1536];
		bool fail = !strcmp(f[4], "fail");

		snprintf(text, sizeof(text), "%s port %s: %s%s%s", f[6], f[7], f[8],
			 f[9][0] ? "; " : "", f[9]);
		ibp_text_escape(text, safe, sizeof(safe));
		if (fail)
			slurm_error("spank-ib: %s: job %u.%u watch: %s", st->host, w->job, w->step,
				    safe);
		else
			slurm_info("spank-ib: %s: job %u.%u watch: %s", st->host, w->job, w->step,
				   safe);
		if (st->watch_n < SPANK_IB_WATCH_KEEP) {
			struct spank_ib_watch_line *k = &st->watch_lines[st->watch_n++];

			snprintf(k->when, sizeof(k->when), "%s", when);
			snprintf(k->kind, sizeof(k->kind), "%s", f[2]);
			snprintf(k->code, sizeof(k->code), "%s", f[3]);
			snprintf(k->severity, sizeof(k->severity), "%s", f[4]);
			snprintf(k->device, sizeof(k->device), "%s", f[6]);
			k->port = (int)strtol(f[7], NULL, 10);
			ibp_text_escape(f[8], k->observed, sizeof(k->observed));
			ibp_text_escape(f[9], k->done, sizeof(k->done));
			k->drained = strstr(f[9], "drained ") != NULL;
			st->watch_drained |= k->drained;
		}
		return;
	}
	if (nf == 3 && !strcmp(f[0], "R")) {
		st->watch_requeue = true; /* its outcome ("Q") should follow */
		st->requeue_settle = true;
		return;
	}
	if (nf == 3 && !strcmp(f[0], "Q")) {
		st->watch_requeue = false;
		ibp_text_escape(f[2], safe, sizeof(safe));
		slurm_info("spank-ib: %s: job %u.%u watch: %s", st->host, w->job, w->step, safe);
		if (st->watch_n)
			append_done(&st->watch_lines[st->watch_n - 1], safe);
		return;
	}
	if (nf == 3 && (!strcmp(f[0], "X") || !strcmp(f[0], "S"))) {
		ibp_text_escape(f[2], safe, sizeof(safe));
		if (f[0][0] == 'X')
			slurm_info("spank-ib: %s: job %u.%u watch: %s", st->host, w->job, w->step,
				   safe);
		else
			snprintf(st->watch_summary, sizeof(st->watch_summary), "%.200s", safe);
		return;
	}
	/* Slurm's library on the watcher's stderr, or a line cut short */
	for (char *t = orig; *t; t++)
		if (*t == '\t')
			*t = ' ';
	ibp_text_escape(orig, safe, sizeof(safe));
	if (safe[0])
		slurm_info("spank-ib: %s: job %u.%u watch: %s", st->host, w->job, w->step, safe);
}

static void append_done(struct spank_ib_watch_line *k, const char *text)
{
	size_t o = strlen(k->done);

	(void)ibp_appendf(k->done, sizeof(k->done), &o, "%s%s", o ? "; " : "", text); /* cut */
}

/* Reads what is left in the pipe (the watcher is gone: EOF ends it), line by line. */
static void read_lines(struct spank_ib_state *st, const struct spank_ib_watcher *w)
{
	char *buf = malloc(READ_MAX_BYTES + 1);
	size_t got = 0, start = 0;

	if (!buf)
		return;
	for (;;) {
		ssize_t r = read(w->out_rd, buf + got, READ_MAX_BYTES - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break; /* EOF, or nothing more (a writer we do not know of) */
		got += (size_t)r;
		if (got == READ_MAX_BYTES)
			break;
	}
	buf[got] = '\0';
	for (size_t i = 0; i < got; i++) {
		if (buf[i] != '\n' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (i > start)
			take_line(st, w, buf + start);
		start = i + 1;
	}
	if (start < got) /* a last line without its newline */
		take_line(st, w, buf + start);
	free(buf);
}

/*
 * The watcher ended the step and meant to requeue the job, but was killed
 * before it said how that went (the step's processes are killed once its
 * tasks are gone): the requeue is done here, as root, and the job told.
 */
static void requeue_backstop(struct spank_ib_state *st, const struct spank_ib_watcher *w)
{
	char what[512], msg[600], err[256];
	enum spank_ib_requeue_outcome o;

	o = spank_ib_requeue_here(w->job, &st->conf, st->host, NULL, NULL, NULL, what,
				  sizeof(what));
	st->requeue_settle |= o == SPANK_IB_REQUEUE_DONE || o == SPANK_IB_REQUEUE_ALREADY;
	slurm_info("spank-ib: %s: job %u.%u watch (at the step's end): %s", st->host, w->job,
		   w->step, what);
	if (st->watch_n)
		append_done(&st->watch_lines[st->watch_n - 1], what);
	/* the job was told it would be; a refusal it can still hear (it runs) */
	if (o != SPANK_IB_REQUEUE_DONE && o != SPANK_IB_REQUEUE_ALREADY) {
		snprintf(msg, sizeof(msg), "spank-ib: %s: %s", st->host, what);
		(void)spank_ib_job_notify(w->job, msg, err, sizeof(err));
	}
}

void spank_ib_watch_stop(struct spank_ib_state *st)
{
	struct spank_ib_watcher *w = st->watcher;
	int64_t deadline;
	bool gone = false;
	int status;

	if (!w)
		return;
	/* EOF on its stdin: it stops after what it is doing */
	close(w->life_wr);
	w->life_wr = -1;
	deadline = ibp_now_ns() + (int64_t)STOP_GRACE_MS * 1000000;
	gone = spank_ib_reap_until(w->pid, w->pidfd, deadline, &status);
	if (!gone) {
		signal_watcher(w, SIGKILL);
		deadline = ibp_now_ns() + 2 * IBP_NS_PER_S;
		gone = spank_ib_reap_until(w->pid, w->pidfd, deadline, &status);
		if (!gone)
			slurm_info(
			    "spank-ib: %s: job %u.%u watch: watcher %d not reaped within 2 s "
			    "of SIGKILL",
			    st->host, w->job, w->step, (int)w->pid);
	}
	st->watch_requeue = false;
	read_lines(st, w);
	/* exited before its exec, as it does when the step ends before its first read */
	if (gone && !st->watch_summary[0] && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		snprintf(st->watch_summary, sizeof(st->watch_summary),
			 "nothing: the step ended before the first read, due %g s in",
			 w->interval_s);
	if (st->watch_requeue)
		requeue_backstop(st, w);
	spank_ib_watch_free(st);
}

/* The one-shot's whole run (its RPCs are bounded by MessageTimeout each); its say. */
#define REQUEUE_NOW_BUDGET_S 10.0
#define REQUEUE_NOW_OUT      8192

bool spank_ib_requeue_now(struct spank_ib_state *st, const struct spank_ib_node *n,
			  const char *node)
{
	struct spank_ib_child_spec spec = {.uid = 0,
					   .gid = 0,
					   .budget_s = REQUEUE_NOW_BUDGET_S,
					   .what = "the requeue after the cross-node test"};
	char helper[PATH_MAX], lib[PATH_MAX], err[PATH_MAX + 256] = "", *out = NULL, *line, *save;
	struct argv_buf *a = NULL;
	bool said = false, intent = false;
	size_t got = 0;
	int rc = 0;

	snprintf(helper, sizeof(helper), "%s",
		 st->conf.watch_helper[0] ? st->conf.watch_helper : spank_ib_watcher_default());
	if (spank_ib_helper_check("watcher", helper, err, sizeof(err)) ||
	    spank_ib_slurm_library(lib, sizeof(lib))) {
		slurm_info("spank-ib: %s: job %u.%u: the requeue is left to the step's end: %s",
			   st->host, n->job_id, n->step_id,
			   err[0] ? err : "the Slurm library of this slurmstepd is not found");
		return false;
	}
	a = calloc(1, sizeof(*a));
	out = malloc(REQUEUE_NOW_OUT);
	if (!a || !out)
		goto done;
	rc |= arg(a, "%s", helper);
	rc |= arg(a, "--requeue-now=yes");
	rc |= arg(a, "--job=%" PRIu32, n->job_id);
	rc |= arg(a, "--step=%" PRIu32, n->step_id);
	rc |= arg(a, "--host=%s", st->host);
	rc |= arg(a, "--node=%s", node);
	rc |= arg(a, "--requeue-max=%u", st->conf.requeue_max);
	rc |= arg(a, "--requeue-begin=%d", st->conf.requeue_begin_s);
	rc |= arg(a, "--slurm-library=%s", lib);
	rc |= arg(a, "--slurm-conf=%s", spank_ib_slurm_conf_path());
	rc |= arg(a, "--parent=%d", (int)getpid());
	if (rc)
		goto done;
	spec.helper = helper;
	/* uid 0 without any capability, bounded, reaped (ib_child.c) */
	rc = spank_ib_helper_run(&spec, a->v, NULL, 0, (uint8_t *)out, REQUEUE_NOW_OUT, &got, err,
				 sizeof(err));
	if (rc) {
		slurm_info("spank-ib: %s: job %u.%u: the requeue is left to the step's end: %s",
			   st->host, n->job_id, n->step_id, err);
		goto done;
	}
	out[got] = '\0';
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[3], safe[1024];
		size_t nf = split_tabs(line, f, 3);

		if (nf == 3 && !strcmp(f[0], "R")) {
			intent = true;
		} else if (nf == 3 && (!strcmp(f[0], "Q") || !strcmp(f[0], "X"))) {
			ibp_text_escape(f[2], safe, sizeof(safe));
			slurm_info("spank-ib: %s: job %u.%u: after the cross-node test: %s",
				   st->host, n->job_id, n->step_id, safe);
			said |= f[0][0] == 'Q';
		}
	}
	st->requeue_settle |= intent || said;
	if (intent && !said)
		slurm_info("spank-ib: %s: job %u.%u: the requeue after the cross-node test did not "
			   "say how it went: the step's end sees to it",
			   st->host, n->job_id, n->step_id);
done:
	free(a);
	free(out);
	return said;
}

/*
 * The job prolog's drain (ib_prolog.c): the one-shot's whole run, bounded
 * well below the prolog's own time (slurmctld down: Slurm's client retries
 * its connection for up to MessageTimeout), and what it may say.
 */
#define DRAIN_NOW_BUDGET_S 5.0
#define DRAIN_NOW_OUT      4096

int spank_ib_drain_now(const struct spank_ib_state *st, const char *node, const char *reason,
		       char *drained, size_t drainedlen, char *what, size_t whatlen)
{
	struct spank_ib_child_spec spec = {
	    .uid = 0, .gid = 0, .budget_s = DRAIN_NOW_BUDGET_S, .what = "the prolog's drain"};
	char helper[PATH_MAX], lib[PATH_MAX], err[PATH_MAX + 256] = "", *out = NULL, *line, *save;
	struct argv_buf *a = NULL;
	size_t got = 0;
	int rc = 0;

	drained[0] = what[0] = '\0';
	snprintf(helper, sizeof(helper), "%s",
		 st->conf.watch_helper[0] ? st->conf.watch_helper : spank_ib_watcher_default());
	if (spank_ib_helper_check("watcher", helper, err, sizeof(err))) {
		ibp_format_cut(what, whatlen, "%s", err);
		return -ENOENT;
	}
	if (spank_ib_slurm_library(lib, sizeof(lib))) {
		snprintf(what, whatlen, "the Slurm library of this process is not found (dladdr)");
		return -ENOENT;
	}
	a = calloc(1, sizeof(*a));
	out = malloc(DRAIN_NOW_OUT);
	if (!a || !out) {
		rc = -ENOMEM;
		snprintf(what, whatlen, "out of memory");
		goto done;
	}
	rc |= arg(a, "%s", helper);
	rc |= arg(a, "--drain-now=yes");
	rc |= arg(a, "--host=%s", st->host);
	rc |= arg(a, "--node=%s", node);
	rc |= arg(a, "--reason=%s", reason);
	rc |= arg(a, "--slurm-library=%s", lib);
	rc |= arg(a, "--slurm-conf=%s", spank_ib_slurm_conf_path());
	rc |= arg(a, "--parent=%d", (int)getpid());
	if (rc) {
		snprintf(what, whatlen, "arguments too long");
		goto done;
	}
	spec.helper = helper;
	/* uid 0 without any capability, clean environment, cwd /, bounded, reaped (ib_child.c) */
	rc = spank_ib_helper_run(&spec, a->v, NULL, 0, (uint8_t *)out, DRAIN_NOW_OUT, &got, err,
				 sizeof(err));
	if (rc) {
		ibp_format_cut(what, whatlen, "%s", err);
		goto done;
	}
	out[got] = '\0';
	rc = -EIO;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[3], safe[1024];
		size_t nf = split_tabs(line, f, 3);

		if (nf == 3 && !strcmp(f[0], "D") && f[2][0]) {
			ibp_text_escape(f[2], drained, drainedlen);
			rc = 0;
		} else if (nf == 3 && !strcmp(f[0], "X") && !what[0]) {
			ibp_text_escape(f[2], safe, sizeof(safe));
			ibp_format_cut(what, whatlen, "%s", safe);
		}
	}
	if (rc && !what[0])
		snprintf(what, whatlen, "the watcher (%s) did not say it drained", helper);
done:
	free(a);
	free(out);
	return rc;
}

void spank_ib_watch_free(struct spank_ib_state *st)
{
	struct spank_ib_watcher *w = st->watcher;

	if (!w)
		return;
	if (w->life_wr >= 0)
		close(w->life_wr);
	if (w->out_rd >= 0)
		close(w->out_rd);
	if (w->pidfd >= 0)
		close(w->pidfd);
	free(w);
	st->watcher = NULL;
}
