/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * steal-fds.c: what a job's owner can take from the processes of their own
 * steps (tests/integration/test_spank_rdmatest_hostile.sh, (g)).
 *
 *   [STEAL_CHILD=PATTERN] steal-fds STATUS STOPFILE LO HI [TEST_UID]
 *
 * Run as the job's owner.  Until STOPFILE exists it polls /proc and tries,
 * on every process it can see, pidfd_getfd on each of its descriptors and
 * (once per process, and once more when it has become a test child)
 * PTRACE_SEIZE, releasing at once whatever it could attach.  Every socket
 * it gets that is bound to a TCP port in LO..HI, or that listens, is kept
 * open, as a thief would keep it.  Then it writes one line to STATUS and
 * holds what it took until it is killed:
 *
 *   done cycles C seen S children K child_as_owner O child_signalable K2 child_fds F child_ptraced P
 *        child_nondumpable D stepd_fds G stepd_ptraced Q stepd_signalable S2
 *        listeners L port_sockets T
 *
 * children: processes whose command line holds PATTERN (default
 * "rdmatest --child"; "--requeue-now=yes" for the plugin's one-shot watcher,
 * TEST_UID 0: test_spank_requeue_hostile.sh; from the environment, so that
 * the poller's own command line does not hold it) and
 * that run as the poller's uid or TEST_UID (other clusters' children on
 * the same machine are left out of the count, not out of the tries);
 * child_as_owner: those of them that ran as the poller's uid;
 * child_signalable, stepd_signalable: the test children and slurmstepds
 * kill(pid, 0) allowed (the permission to signal; signal 0 sends nothing);
 * child_nondumpable: how many of them were seen at least once running as
 * someone other than root with /proc/PID/environ owned by root (the
 * kernel's mark of a process that is not dumpable); stepd: slurmstepd;
 * own: the other processes of the poller's real uid (srun, the tasks, a
 * task's slurmstepd fork before its exec), theirs to take and not counted;
 * child_fds and stepd_fds: every descriptor taken; listeners: listening
 * TCP sockets taken from anything but one's own, port_sockets: sockets on
 * a port of LO..HI taken from anything, each counted once however often
 * taken.
 * Exit status 2 on bad usage.  It never sends a signal.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define MAX_SEEN 4194304 /* the largest pid_max */
#define MAX_HELD 4096

enum kind { K_OTHER = 0, K_CHILD, K_STEPD, K_OWN };

struct counts {
	long cycles, seen, children, child_as_owner, child_signalable, child_fds, child_ptraced,
	    child_nondumpable;
	long stepd_fds, stepd_ptraced, stepd_signalable, listeners, port_sockets;
};

static int held[MAX_HELD];
static ino_t
    held_ino[MAX_HELD]; /* one fd kept per socket: a socket taken again is not counted again */
static size_t n_held;
/* pids already probed with ptrace (as anything, as a child) and children counted */
static unsigned char probed[MAX_SEEN / 8], probed_child[MAX_SEEN / 8], counted[MAX_SEEN / 8],
    nodump[MAX_SEEN / 8], signalled[MAX_SEEN / 8];

static bool bit(const unsigned char *set, long pid)
{
	return pid > 0 && pid < MAX_SEEN && (set[pid / 8] >> (pid % 8)) & 1;
}

static void set_bit(unsigned char *set, long pid)
{
	if (pid > 0 && pid < MAX_SEEN)
		set[pid / 8] |= (unsigned char)(1u << (pid % 8));
}

/* The real uid of PID from /proc/PID/status, or -1. */
static long real_uid(long pid)
{
	char path[64], buf[2048], *p;
	unsigned ruid;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%u", &ruid) != 1)
		return -1;
	return (long)ruid;
}

/*
 * 1 when the process runs as someone other than root while /proc/PID/environ
 * is root's: the kernel's mark of a process that is not dumpable (the
 * directory /proc/PID itself always shows the task's effective uid).
 */
static int nondumpable(long pid)
{
	char path[64];
	struct stat st;
	long ruid = real_uid(pid);

	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	if (ruid <= 0 || stat(path, &st))
		return 0;
	return st.st_uid == 0;
}

static long test_uid = -1;
static const char *child_pattern = "rdmatest --child";

static enum kind classify(long pid)
{
	char path[64], buf[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return K_OTHER;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return K_OTHER;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	if (strstr(buf, child_pattern)) {
		long ruid = real_uid(pid);

		return ruid == (long)getuid() || ruid == test_uid ? K_CHILD : K_OTHER;
	}
	/* the owner's own (srun, the tasks, slurmstepd's fork of a task before its exec) */
	if (real_uid(pid) == (long)getuid())
		return K_OWN;
	if (strstr(buf, "slurmstepd"))
		return K_STEPD;
	return K_OTHER;
}

/* A socket bound to a port of LO..HI, or listening (not OWN): kept; anything else closed. */
static void judge(int fd, bool own, unsigned lo, unsigned hi, struct counts *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int acc = 0;
	socklen_t al = sizeof(acc);
	struct stat st;
	unsigned port = 0;
	bool keep = false;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode)) {
		close(fd);
		return;
	}
	for (size_t i = 0; i < n_held; i++)
		if (held_ino[i] == st.st_ino) {
			close(fd);
			return;
		}
	memset(&ss, 0, sizeof(ss));
	if (!getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		if (ss.ss_family == AF_INET)
			port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	if (!own && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
	    !getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) && acc) {
		c->listeners++;
		keep = true;
	}
	if (port >= lo && port <= hi) {
		c->port_sockets++;
		keep = true;
	}
	if (keep && n_held < MAX_HELD) {
		held_ino[n_held] = st.st_ino;
		held[n_held++] = fd;
	} else {
		close(fd);
	}
}

/* Every descriptor of PID through a pidfd; the number taken. */
static long take_fds(long pid, bool own, unsigned lo, unsigned hi, struct counts *c)
{
	int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	long taken = 0;

	if (pfd < 0)
		return 0;
	for (int fd = 0; fd < 64; fd++) {
		int got = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);

		if (got < 0) {
			if (errno == EPERM || errno == ESRCH)
				break; /* the permission is per process: no other fd will do */
			continue;
		}
		taken++;
		judge(got, own, lo, hi, c);
	}
	close(pfd);
	return taken;
}

/*
 * PTRACE_SEIZE; when it works, the tracee is stopped once (PTRACE_INTERRUPT,
 * waited for at most a second) and released (PTRACE_DETACH), or released
 * when this process exits.
 */
static bool try_ptrace(long pid)
{
	int status;

	if (ptrace(PTRACE_SEIZE, (pid_t)pid, NULL, NULL))
		return false;
	if (!ptrace(PTRACE_INTERRUPT, (pid_t)pid, NULL, NULL)) {
		for (int i = 0; i < 1000; i++) {
			struct timespec ts = {0, 1000000};
			pid_t r = waitpid((pid_t)pid, &status, WNOHANG | __WALL);

			if (r == (pid_t)pid || (r < 0 && errno != EINTR))
				break;
			nanosleep(&ts, NULL);
		}
		(void)ptrace(PTRACE_DETACH, (pid_t)pid, NULL, NULL);
	}
	return true;
}

static void cycle(unsigned lo, unsigned hi, struct counts *c)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long self = (long)getpid();

	if (!d)
		return;
	while ((e = readdir(d))) {
		long pid;
		enum kind k;
		long taken;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtol(e->d_name, NULL, 10);
		if (pid == self)
			continue;
		c->seen++;
		k = classify(pid);
		if (k == K_CHILD && !bit(counted, pid)) {
			set_bit(counted, pid);
			c->children++;
			c->child_as_owner += real_uid(pid) == (long)getuid();
			/* signal 0: the permission check of kill(2), nothing sent */
			c->child_signalable += kill((pid_t)pid, 0) == 0;
		}
		if (k == K_CHILD && !bit(nodump, pid) && nondumpable(pid)) {
			set_bit(nodump, pid);
			c->child_nondumpable++;
		}
		/*
		 * Counted only if still slurmstepd's after the check: Slurm's fork
		 * of a task classified just before its setuid to the owner is the
		 * owner's by the time kill(2) is asked (seen once in 180,000 looks).
		 */
		if (k == K_STEPD && !bit(signalled, pid)) {
			set_bit(signalled, pid);
			c->stepd_signalable += kill((pid_t)pid, 0) == 0 && classify(pid) == K_STEPD;
		}
		taken = take_fds(pid, k == K_OWN, lo, hi, c);
		if (k == K_CHILD)
			c->child_fds += taken;
		else if (k == K_STEPD)
			c->stepd_fds += taken;
		/* once per process, and once more when it has become the child (after exec) */
		if (k == K_CHILD && !bit(probed_child, pid)) {
			set_bit(probed_child, pid);
			if (try_ptrace(pid))
				c->child_ptraced++;
		} else if (k != K_CHILD && !bit(probed, pid)) {
			set_bit(probed, pid);
			if (try_ptrace(pid) && k == K_STEPD)
				c->stepd_ptraced++;
		}
	}
	closedir(d);
	c->cycles++;
}

int main(int argc, char **argv)
{
	struct counts c;
	unsigned lo, hi;
	FILE *f;
	char tmp[4096];

	if (argc != 5 && argc != 6)
		return 2;
	if (argc == 6)
		test_uid = strtol(argv[5], NULL, 10);
	if (getenv("STEAL_CHILD") && getenv("STEAL_CHILD")[0])
		child_pattern = getenv("STEAL_CHILD");
	lo = (unsigned)strtoul(argv[3], NULL, 10);
	hi = (unsigned)strtoul(argv[4], NULL, 10);
	if (!lo || hi < lo || hi > 65535)
		return 2;
	memset(&c, 0, sizeof(c));
	signal(SIGPIPE, SIG_IGN);
	while (access(argv[2], F_OK)) {
		struct timespec ts = {0, 200000}; /* 0.2 ms between sweeps */

		cycle(lo, hi, &c);
		nanosleep(&ts, NULL);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f)
		return 1;
	fprintf(f,
		"done cycles %ld seen %ld children %ld child_as_owner %ld child_signalable %ld "
		"child_fds %ld child_ptraced %ld child_nondumpable %ld stepd_fds %ld "
		"stepd_ptraced %ld stepd_signalable %ld listeners %ld port_sockets %ld\n",
		c.cycles, c.seen, c.children, c.child_as_owner, c.child_signalable, c.child_fds,
		c.child_ptraced, c.child_nondumpable, c.stepd_fds, c.stepd_ptraced,
		c.stepd_signalable, c.listeners, c.port_sockets);
	if (fclose(f) || rename(tmp, argv[1]))
		return 1;
	for (;;)
		pause(); /* holds what it took until the test kills it */
}
