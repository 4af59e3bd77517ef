/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_child.c: the plugin's helper processes (spank_ib_helper_run), the
 * cross-node test's above all.
 *
 * slurmstepd is root (user_init only has the job's user as effective uid:
 * real and saved uid stay 0).  The test reads bytes from other hosts, and
 * runs libmunge, the resolver and libibverbs: none of that may run where
 * one call gets root back.  Nor may it run as the job's owner: whatever
 * runs with that uid is theirs to ptrace, signal and take descriptors from,
 * and the test's child holds the root-bound listener and speaks for the
 * node.  So the plugin forks, and the test's child becomes the test's
 * system user for good (test_user=, default SPANK_IB_TEST_USER: no
 * supplementary group, setresgid, setresuid; it checks that regaining root
 * fails; never root), is not dumpable, sets PR_SET_NO_NEW_PRIVS and
 * PR_SET_PDEATHSIG (and ends itself if slurmstepd is already gone), keeps
 * only the listening sockets and two pipes, and execs the helper fixed at
 * build time (SPANK_IB_HELPER, or the admin's test_helper=, root-owned)
 * with a clean environment.  exec makes a process whose binary it can read
 * dumpable again: the helper's first instruction undoes that (ibprep.c).
 * The plugin's other helpers (a name lookup, the user's report file) work
 * for the job's user and run as that user for good (its group alone; a
 * root job's keeps uid 0 but loses every capability and, with
 * SECBIT_NOROOT, cannot get them back through exec).
 *
 * The parent writes the input, reads the output under one deadline, kills
 * the child by PID with SIGKILL past it and reaps it in a bounded loop: no
 * wait here is unbounded.  The test's result counts only from a child that
 * exited 0; it is still decoded by rdmatest_pipe.c, which trusts nothing
 * (the child reads strangers' bytes).
 *
 * Between fork and exec the child calls only async-signal-safe functions
 * (slurmstepd has threads); everything it needs is prepared before fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/securebits.h>

#include "ibprep/deadline.h"
#include "ibprep/rdmatest_pipe.h"
#include "ibprep/rootpath.h"
#include "ibprep/text.h"

#include "spank_ib.h"

#ifndef SPANK_IB_HELPER
#define SPANK_IB_HELPER "/usr/local/bin/ibprep"
#endif
/* The system user the packages create (contrib/sysusers.d, debian/, the RPM's %pre). */
#ifndef SPANK_IB_TEST_USER
#define SPANK_IB_TEST_USER "_spank-ib"
#endif

/* Exit codes of a child that never reached exec (the helper's own are 0..2). */
enum {
	CHILD_EXIT_SETUP = 120,  /* fds */
	CHILD_EXIT_DROP = 121,   /* setgroups/setresgid/setresuid or the capability drop failed */
	CHILD_EXIT_REGAIN = 122, /* root could be regained after the drop */
	CHILD_EXIT_PRCTL = 123,  /* dumpable, no_new_privs, pdeathsig; or slurmstepd gone */
	CHILD_EXIT_EXEC = 127,   /* execve failed */
};

const char *spank_ib_helper_default(void)
{
	return SPANK_IB_HELPER;
}

int spank_ib_helper_check(const char *what, const char *path, char *err, size_t errlen)
{
	char why[PATH_MAX + 256] = "";
	struct stat st;
	int fd, rc = 0;

	if (!path || path[0] != '/') {
		snprintf(err, errlen, "%s '%s': not an absolute path", what, path ? path : "");
		return -EINVAL;
	}
	/* root's, every directory on the way too (rootpath.h), not even the job user's */
	fd = ibp_rootpath_open(path, O_PATH, IBP_ROOTPATH_ROOT, why, sizeof(why));
	if (fd < 0) {
		ibp_format_cut(err, errlen, "%s %s", what, why);
		return fd == -EINVAL && path[0] == '/' ? -EACCES : fd;
	}
	if (fstat(fd, &st))
		rc = -errno;
	else if (!S_ISREG(st.st_mode) || !(st.st_mode & S_IXOTH))
		rc = -EACCES;
	close(fd);
	if (rc == -EACCES)
		snprintf(err, errlen, "%s %s: not a regular file every user may run", what, path);
	else if (rc)
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(-rc));
	return rc;
}

const char *spank_ib_test_user_default(void)
{
	return SPANK_IB_TEST_USER;
}

int spank_ib_test_user(const char *name, uint32_t job_uid, uint32_t *uid, uint32_t *gid, char *err,
		       size_t errlen)
{
	struct passwd pw, *found = NULL;
	char buf[16384];
	int e;

	e = getpwnam_r(name, &pw, buf, sizeof(buf), &found);
	if (e) {
		snprintf(err, errlen, "test user '%s': looking it up failed: %s", name,
			 strerror(e));
		return -e;
	}
	if (!found) {
		snprintf(err, errlen, "test user '%s' does not exist on this node", name);
		return -ENOENT;
	}
	if (pw.pw_uid == 0 || pw.pw_gid == 0) {
		snprintf(err, errlen,
			 "test user '%s' is uid %u, gid %u: the test must not run as root or in "
			 "group root",
			 name, (unsigned)pw.pw_uid, (unsigned)pw.pw_gid);
		return -EPERM;
	}
	if (pw.pw_uid == job_uid) {
		snprintf(err, errlen,
			 "test user '%s' (uid %u) is the job's own user: its owner could take the "
			 "test's listener and speak for the node",
			 name, (unsigned)pw.pw_uid);
		return -EPERM;
	}
	*uid = (uint32_t)pw.pw_uid;
	*gid = (uint32_t)pw.pw_gid;
	return 0;
}

/* ---- the child, between fork and exec: async-signal-safe only ---- */

static int capset_none(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	return (int)syscall(SYS_capset, &hdr, data);
}

/* A root job's other helpers: uid 0 (they act for the job's user), no capability, ever. */
static int drop_root_caps(void)
{
	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		      SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
		  0, 0, 0))
		return -1;
	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -1;
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return capset_none();
}

/*
 * A child of slurmstepd that only sets up and execs, started without
 * copying slurmstepd: clone(CLONE_VM | CLONE_VFORK), as posix_spawn does.
 * A fork copies the page tables of a process with many threads and maps,
 * and every page slurmstepd writes until the child's exec is copied again;
 * here the child runs FN on its own stack in slurmstepd's memory while the
 * calling thread waits for its execve or _exit.  FN must not return into
 * the caller's frames, allocate, take a lock or call a libc function that
 * keeps state for the process (setuid() and friends signal every thread:
 * raw syscalls only); it ends in execve or _exit.  Every signal is blocked
 * across the clone, so that none of slurmstepd's handlers runs in the
 * child before FN sets them to SIG_DFL (spank_ib_child_default_signals).
 * The child's PID, or -1 with errno.
 */
pid_t spank_ib_child_spawn(int (*fn)(void *), void *arg)
{
	enum { STACK = 64 * 1024 };
	sigset_t all, old;
	char *stack;
	pid_t pid;
	int err;

	stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		     -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(fn, stack + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
	err = errno;
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)munmap(stack, STACK); /* the child has exec'd or exited: its stack is free */
	errno = err;
	return pid;
}

/*
 * Every other child of slurmstepd, the one way to fork one: a child that
 * waits before its exec (the step's watcher, exec'd only when its first
 * read falls due), one that changes its ids through libc (the helpers of
 * spank_ib_helper_start: setresuid signals every thread of the process it
 * runs in) and one that never execs (the report's writer, ib_userfile.c).
 * None of them may run in slurmstepd's memory beside its threads.  The
 * fork copies slurmstepd's page tables (copy-on-write) instead of the
 * exec's work: the binary's load, its libraries, its start; a step that
 * ends before then never pays those.  FN runs in the copy with the rules of
 * spank_ib_child_spawn (async-signal-safe only, ends in execve or _exit);
 * every signal is blocked across the fork and stays blocked in the child
 * until FN resets them (spank_ib_child_default_signals) or exits.  The
 * child's PID, or -1 with errno.
 */
pid_t spank_ib_child_fork(int (*fn)(void *), void *arg)
{
	sigset_t all, old;
	pid_t pid;
	int err;

	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		_exit(fn(arg)); /* FN does not return */
	err = errno;
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return pid;
}

/* Between fork and exec (async-signal-safe): every fd from FIRST on closed. */
void spank_ib_child_close_from(int first)
{
	long max;

	if (!syscall(SYS_close_range, (unsigned)first, ~0U, 0))
		return;
	max = sysconf(_SC_OPEN_MAX); /* no close_range: one by one */
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = first; fd < max; fd++)
		close(fd);
}

/*
 * Between fork and exec (async-signal-safe): slurmstepd's handlers, ignored
 * signals and mask would survive exec; every signal to its default, none
 * blocked.
 */
void spank_ib_child_default_signals(void)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		(void)sigaction(s, &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/* What the child needs, built before the fork. */
struct child_args {
	const char *helper;
	uid_t uid;
	gid_t gid;
	/*
	 * The test's system user (no supplementary group at all, never root);
	 * else the job's user (its group alone; uid 0 for a root job, without
	 * capabilities).
	 */
	bool system_user;
	pid_t parent;
	int plan_rd, res_wr;
	const int *lfds;
	size_t nl;
	char *const *argv, *const *envp;
};

/*
 * Forked with every signal blocked (spank_ib_child_fork): none of
 * slurmstepd's handlers runs here before spank_ib_child_default_signals.
 */
static int child_exec(void *arg)
{
	const struct child_args *c = arg;
	const uid_t uid = c->uid;
	const gid_t gid = c->gid;
	const bool system_user = c->system_user;
	const size_t nl = c->nl;
	int hi_plan, hi_res, hi_null, hi_l[IBP_PIPE_MAX_LISTEN];
	int base = IBP_PIPE_LISTEN_FD0 + (int)nl + 1;
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	/* Out of the way of 0..3+nl first, then into place. */
	hi_plan = fcntl(c->plan_rd, F_DUPFD_CLOEXEC, base);
	hi_res = fcntl(c->res_wr, F_DUPFD_CLOEXEC, base);
	hi_null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (hi_plan < 0 || hi_res < 0 || hi_null < 0)
		_exit(CHILD_EXIT_SETUP);
	if (hi_null < base) {
		int t = fcntl(hi_null, F_DUPFD_CLOEXEC, base);

		if (t < 0)
			_exit(CHILD_EXIT_SETUP);
		hi_null = t;
	}
	for (size_t i = 0; i < nl; i++) {
		hi_l[i] = fcntl(c->lfds[i], F_DUPFD_CLOEXEC, base);
		if (hi_l[i] < 0)
			_exit(CHILD_EXIT_SETUP);
	}
	/* user_init: effective uid is the user's, real and saved are root. */
	if (geteuid() != 0 && seteuid(0))
		_exit(CHILD_EXIT_DROP);
	/* The test's user belongs to no group of slurmstepd's or of the job's. */
	if ((system_user ? setgroups(0, NULL) : setgroups(1, &gid)) || setresgid(gid, gid, gid))
		_exit(CHILD_EXIT_DROP);
	if (uid == 0 && !system_user) {
		if (drop_root_caps())
			_exit(CHILD_EXIT_DROP);
	} else {
		if (uid == 0 || setresuid(uid, uid, uid))
			_exit(CHILD_EXIT_DROP);
		if (getresuid(&ru, &eu, &su) || ru != uid || eu != uid || su != uid ||
		    getresgid(&rg, &eg, &sg) || rg != gid || eg != gid || sg != gid ||
		    (system_user && getgroups(0, NULL)))
			_exit(CHILD_EXIT_DROP);
		if (setuid(0) != -1 || seteuid(0) != -1 || setgid(0) != -1)
			_exit(CHILD_EXIT_REGAIN);
	}
	/*
	 * Not dumpable (the uid change made it so; said again for clarity): no
	 * ptrace, pidfd_getfd or /proc/PID/fd for anyone but root until exec,
	 * after which the test's helper says it again at its first instruction.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0))
		_exit(CHILD_EXIT_PRCTL);
	/* slurmstepd gone before PDEATHSIG was armed: nobody would end this child. */
	if (getppid() != c->parent)
		_exit(CHILD_EXIT_PRCTL);
	if (dup2(hi_plan, 0) != 0 || dup2(hi_res, 1) != 1 || dup2(hi_null, 2) != 2)
		_exit(CHILD_EXIT_SETUP);
	for (size_t i = 0; i < nl; i++)
		if (dup2(hi_l[i], IBP_PIPE_LISTEN_FD0 + (int)i) != IBP_PIPE_LISTEN_FD0 + (int)i)
			_exit(CHILD_EXIT_SETUP);
	spank_ib_child_close_from(IBP_PIPE_LISTEN_FD0 + (int)nl);
	spank_ib_child_default_signals();
	if (chdir("/"))
		_exit(CHILD_EXIT_SETUP);
	execve(c->helper, c->argv, c->envp);
	_exit(CHILD_EXIT_EXEC);
}

/* ---- the parent ---- */

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int spank_ib_reap_until(pid_t pid, int pidfd, int64_t deadline, int *status)
{
	/*
	 * Woken by the child's exit (its pidfd turns readable), not by a timer:
	 * every step waits here for its watcher or test child, and a sleep of
	 * a few ms per try was a few ms of every step.  The pidfd is the
	 * caller's, opened while the child was unreaped (its PID could not be
	 * reused yet); opening one here could name a process that took a PID
	 * slurmstepd's own wait freed.  Without one (Linux before 5.3), short
	 * sleeps.
	 */
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		int64_t now;

		if (r == pid || (r < 0 && errno != EINTR))
			return 1; /* reaped, or not ours any more (ECHILD): nothing left to wait for */
		now = ibp_now_ns();
		if (now >= deadline)
			return 0;
		if (pidfd >= 0) {
			struct pollfd p = {.fd = pidfd, .events = POLLIN};
			int64_t left_ms = (deadline - now + 999999) / 1000000;

			(void)poll(&p, 1, left_ms > 100 ? 100 : (int)left_ms);
		} else {
			sleep_ms(2);
		}
	}
}

int spank_ib_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Writes the child's input without ever taking SIGPIPE (the child may be gone). */
static int write_input(int fd, const uint8_t *buf, size_t len, int64_t deadline)
{
	sigset_t pipe_set, old;
	size_t off = 0;
	int rc = 0;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	while (off < len) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		ssize_t w;
		int n = poll(&p, 1, ibp_deadline_poll_ms(deadline, ibp_now_ns()));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -ETIMEDOUT;
			break;
		}
		w = write(fd, buf + off, len - off);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w < 0) {
			rc = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (rc == -EPIPE) {
		const struct timespec zero = {0, 0};

		(void)sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/*
 * Reads until EOF, DEADLINE or more than a frame.  Bytes read, -ETIMEDOUT,
 * -EFBIG, -errno.
 */
static long read_output(int fd, uint8_t *buf, size_t cap, int64_t deadline)
{
	size_t got = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;
		int n = poll(&p, 1, ibp_deadline_poll_ms(deadline, ibp_now_ns()));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		r = read(fd, buf + got, cap - got);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return (long)got;
		got += (size_t)r;
		if (got == cap)
			return -EFBIG;
	}
}

static void describe_exit(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status)) {
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
		return;
	}
	switch (WEXITSTATUS(status)) {
	case CHILD_EXIT_SETUP:
		snprintf(buf, len, "could not set up its file descriptors");
		break;
	case CHILD_EXIT_DROP:
		snprintf(buf, len, "could not become its user for good");
		break;
	case CHILD_EXIT_REGAIN:
		snprintf(buf, len, "could still regain root after dropping it: not run");
		break;
	case CHILD_EXIT_PRCTL:
		snprintf(buf, len, "could not set no_new_privs or its parent-death signal");
		break;
	case CHILD_EXIT_EXEC:
		snprintf(buf, len, "could not execute the helper");
		break;
	default:
		snprintf(buf, len, "exited with status %d without a result", WEXITSTATUS(status));
	}
}

int spank_ib_helper_start(const struct spank_ib_child_spec *spec, char *const argv[],
			  const uint8_t *in, size_t in_len, struct spank_ib_helper_proc *hp,
			  char *err, size_t errlen)
{
	static const char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, rc = 0;
	pid_t pid;

	memset(hp, 0, sizeof(*hp));
	hp->out_fd = -1;
	hp->pidfd = -1;
	hp->deadline = ibp_deadline_after_s(ibp_now_ns(), spec->budget_s);
	hp->budget_s = spec->budget_s;
	hp->what = spec->what ? spec->what : "the helper";
	hp->budget_why = spec->budget_why ? spec->budget_why : "";
	hp->helper = spec->helper;
	if (spec->n_listen_fds > IBP_PIPE_MAX_LISTEN) {
		snprintf(err, errlen, "too many listening sockets (%zu)", spec->n_listen_fds);
		return -EINVAL;
	}
	if (spec->system_user && (spec->uid == 0 || spec->gid == 0)) {
		snprintf(err, errlen, "the test child must not run as root (uid %u, gid %u)",
			 (unsigned)spec->uid, (unsigned)spec->gid);
		return -EPERM;
	}
	if (pipe2(in_p, O_CLOEXEC) || pipe2(out_p, O_CLOEXEC)) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(-rc));
		goto out;
	}
	{
		struct child_args c = {.helper = spec->helper,
				       .uid = spec->uid,
				       .gid = spec->gid,
				       .system_user = spec->system_user,
				       .parent = getpid(),
				       .plan_rd = in_p[0],
				       .res_wr = out_p[1],
				       .lfds = spec->listen_fds,
				       .nl = spec->n_listen_fds,
				       .argv = argv,
				       .envp = (char *const *)env};

		pid = spank_ib_child_fork(child_exec, &c);
	}
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "fork: %s", strerror(-rc));
		goto out;
	}
	hp->pid = pid;
	hp->pidfd = spank_ib_pidfd_open(pid); /* unreaped: still our child's */
	close(in_p[0]);
	close(out_p[1]);
	in_p[0] = out_p[1] = -1;
	(void)fcntl(in_p[1], F_SETFL, O_NONBLOCK);
	(void)fcntl(out_p[0], F_SETFL, O_NONBLOCK);
	/*
	 * Input that could not be written all (the child died early) ends in a
	 * child without output, whose exit status says why: read on.
	 */
	(void)write_input(in_p[1], in, in_len, hp->deadline);
	hp->out_fd = out_p[0];
	out_p[0] = -1;
out:
	for (int i = 0; i < 2; i++) {
		if (in_p[i] >= 0)
			close(in_p[i]);
		if (out_p[i] >= 0)
			close(out_p[i]);
	}
	return rc;
}

int spank_ib_helper_finish(struct spank_ib_helper_proc *hp, uint8_t *out, size_t out_cap,
			   size_t *out_len, char *err, size_t errlen)
{
	bool reaped = false, killed = false;
	int status = 0, rc = 0;
	long got;

	*out_len = 0;
	if (hp->pid <= 0) {
		snprintf(err, errlen, "%s was not started", hp->what ? hp->what : "the helper");
		return -ECHILD;
	}
	got = read_output(hp->out_fd, out, out_cap, hp->deadline);
	close(hp->out_fd);
	hp->out_fd = -1;
	if (got >= 0)
		reaped = spank_ib_reap_until(hp->pid, hp->pidfd, hp->deadline, &status);
	if (!reaped) {
		killed = true;
		kill(hp->pid, SIGKILL);
		/* SIGKILL ends it unless it sits in the kernel: give that a bound too. */
		reaped = spank_ib_reap_until(hp->pid, hp->pidfd, ibp_now_ns() + 2 * IBP_NS_PER_S,
					     &status);
	}
	if (hp->pidfd >= 0)
		close(hp->pidfd);
	hp->pidfd = -1;
	if (killed && (got >= 0 || got == -ETIMEDOUT)) {
		snprintf(err, errlen, "%s did not finish in %.1f s%s: child %d killed%s", hp->what,
			 hp->budget_s, hp->budget_why, (int)hp->pid,
			 reaped ? "" : ", not yet reaped");
		rc = -ETIMEDOUT;
	} else if (got == -EFBIG) {
		snprintf(err, errlen, "%s wrote more than %zu bytes: refused", hp->what,
			 out_cap - 1);
		rc = -EBADMSG;
	} else if (got <= 0) {
		char why[128];

		describe_exit(status, why, sizeof(why));
		snprintf(err, errlen, "%s (%s) %s", hp->what, hp->helper, why);
		rc = got < 0 ? (int)got : -ECHILD;
	} else {
		*out_len = (size_t)got;
	}
	hp->status = status;
	hp->pid = 0;
	return rc;
}

int spank_ib_helper_run(const struct spank_ib_child_spec *spec, char *const argv[],
			const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
			size_t *out_len, char *err, size_t errlen)
{
	struct spank_ib_helper_proc hp;
	int rc = spank_ib_helper_start(spec, argv, in, in_len, &hp, err, errlen);

	*out_len = 0;
	return rc ? rc : spank_ib_helper_finish(&hp, out, out_cap, out_len, err, errlen);
}

int spank_ib_child_run(const struct spank_ib_child_spec *spec, const struct ibp_pipe_plan *plan,
		       struct ibp_rdmatest_result *res, struct ibp_findings *f, char *err,
		       size_t errlen)
{
	char *argv[] = {(char *)spec->helper, (char *)"rdmatest", (char *)"--child", NULL};
	struct spank_ib_child_spec sp = *spec;
	struct spank_ib_helper_proc hp;
	uint8_t *buf = NULL;
	size_t got = 0;
	int n, rc;

	memset(res, 0, sizeof(*res));
	if (spec->n_listen_fds > IBP_PIPE_MAX_LISTEN) {
		snprintf(err, errlen, "too many listening sockets (%zu)", spec->n_listen_fds);
		return -EINVAL;
	}
	buf = malloc(IBP_PIPE_FRAME_MAX + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = ibp_pipe_plan_encode(plan, buf, IBP_PIPE_FRAME_MAX);
	if (n < 0) {
		snprintf(err, errlen, "the test's plan cannot be encoded: %s", strerror(-n));
		free(buf);
		return n;
	}
	if (!sp.what)
		sp.what = "the cross-node test";
	if (!sp.budget_why)
		sp.budget_why = " (test_timeout plus margin)";
	sp.system_user = true;
	/* the plan is read from BUF before the result overwrites it */
	rc = spank_ib_helper_start(&sp, argv, buf, (size_t)n, &hp, err, errlen);
	if (!rc)
		rc = spank_ib_helper_finish(&hp, buf, IBP_PIPE_FRAME_MAX + 1, &got, err, errlen);
	/* A child killed or failing after it wrote: nothing of it counts. */
	if (!rc && (!WIFEXITED(hp.status) || WEXITSTATUS(hp.status) != 0)) {
		char why[64];

		if (WIFSIGNALED(hp.status))
			snprintf(why, sizeof(why), "was killed by signal %d", WTERMSIG(hp.status));
		else
			snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(hp.status));
		snprintf(err, errlen,
			 "the test child (%s) %s after writing %zu bytes: result refused",
			 spec->helper, why, got);
		rc = -EBADMSG;
	}
	if (!rc) {
		rc = ibp_pipe_result_decode(buf, got, res, f);
		if (rc)
			snprintf(err, errlen, "the test child's result (%zu bytes) is refused: %s",
				 got, strerror(-rc));
	}
	free(buf);
	return rc;
}
