/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_userfile.c: the one writer of the user's --ib-report file, for the
 * report at user_init and the step-end section at exit (spank_ib.h).
 *
 * The path is the user's: root never opens it, and slurmstepd never
 * waits on it.  A child becomes the job's user for good (at user_init with
 * the groups Slurm gave the step, at exit with the job's) and writes; the
 * parent waits WRITE_TIMEOUT_MS, then kills it and reaps it in a bounded
 * loop, so a path on a hung NFS or FUSE mount costs the step 2-3 s, never
 * the step.  In the child: O_NOFOLLOW, O_NONBLOCK (a FIFO never blocks),
 * regular files only (checked after the open), at most
 * SPANK_IB_REPORT_MAX bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ibprep/deadline.h"
#include "ibprep/text.h"

#include "spank_ib.h"

#define WRITE_TIMEOUT_MS 2000
/* After SIGKILL: a writer stuck in the kernel (a frozen filesystem) is left, not waited for. */
#define REAP_TIMEOUT_MS 1000

/* Outcomes, also the child's exit codes. */
enum {
	UF_OK = 0,
	UF_DROP = 10,    /* cannot become the job's user */
	UF_OPEN = 11,    /* cannot open it */
	UF_NOTREG = 12,  /* not a regular file */
	UF_WRITE = 13,   /* write failed */
	UF_NOTJSON = 14, /* not a JSON object: left as it was */
	UF_FIFO = 15,    /* a FIFO without a reader (ENXIO) */
};

static int write_at(int fd, const char *data, size_t len, off_t at)
{
	while (len) {
		ssize_t w = at < 0 ? write(fd, data, len) : pwrite(fd, data, len, at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return UF_WRITE;
		data += w;
		len -= (size_t)w;
		if (at >= 0)
			at += w;
	}
	return UF_OK;
}

/*
 * DATA (",MEMBER}\n") replaces the final '}' of the JSON object in FD, so
 * the file stays one document.  An empty file gets "{MEMBER}\n".
 */
static int json_insert(int fd, off_t size, const char *data, size_t len)
{
	char tail[256];
	off_t from = size > (off_t)sizeof(tail) ? size - (off_t)sizeof(tail) : 0, at = -1;
	ssize_t n;

	if (size == 0) {
		if (write(fd, "{", 1) != 1)
			return UF_WRITE;
		data++; /* the comma */
		len--;
		at = 1;
	} else {
		n = pread(fd, tail, (size_t)(size - from), from);
		if (n != size - from)
			return UF_WRITE;
		for (ssize_t i = n - 1; i >= 0 && at < 0; i--) {
			if (tail[i] == '}')
				at = from + i;
			else if (tail[i] != '\n' && tail[i] != ' ' && tail[i] != '\t' &&
				 tail[i] != '\r')
				return UF_NOTJSON;
		}
		if (at < 0)
			return UF_NOTJSON;
	}
	if (write_at(fd, data, len, at))
		return UF_WRITE;
	return ftruncate(fd, at + (off_t)len) ? UF_WRITE : UF_OK;
}

/* Open, check, write: as whoever runs it.  Only async-signal-safe calls (a child's). */
static int write_file(const char *path, enum spank_ib_write_how how, const char *data, size_t len)
{
	static const int oflags[] = {
	    [SPANK_IB_WRITE_REPLACE] = O_WRONLY,
	    [SPANK_IB_WRITE_APPEND] = O_WRONLY | O_APPEND,
	    [SPANK_IB_WRITE_JSON_MEMBER] = O_RDWR,
	};
	struct stat sb;
	int fd, code;

	fd = open(path, oflags[how] | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
		  0644);
	if (fd < 0)
		return errno == ENXIO ? UF_FIFO : UF_OPEN;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode))
		code = UF_NOTREG;
	else if (how == SPANK_IB_WRITE_JSON_MEMBER)
		code = json_insert(fd, sb.st_size, data, len);
	else if (how == SPANK_IB_WRITE_REPLACE && ftruncate(fd, 0))
		code = UF_WRITE;
	else
		code = write_at(fd, data, len, -1);
	if (close(fd) && !code)
		code = UF_WRITE;
	return code;
}

/*
 * The child's way to the job's user, for good: from root (exit), from
 * user_init's effective uid (real and saved uid root), or nothing to do
 * when this process is that user already (not root: the unit tests).
 */
static int drop_to(uid_t uid, gid_t gid, const gid_t *groups, int n_groups)
{
	if (uid != 0 && getuid() == uid && geteuid() == uid)
		return UF_OK;
	if (geteuid() != 0 && seteuid(0))
		return UF_DROP;
	if (n_groups >= 0 ? setgroups((size_t)n_groups, groups) : setgroups(1, &gid))
		return UF_DROP;
	if (setresgid(gid, gid, gid) || setresuid(uid, uid, uid) || getuid() != uid ||
	    geteuid() != uid)
		return UF_DROP;
	return UF_OK;
}

struct writer_args {
	const char *path;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int n_groups;
	enum spank_ib_write_how how;
	const char *data;
	size_t len;
};

/*
 * The writer, forked (spank_ib_child_fork): only async-signal-safe calls,
 * slurmstepd has threads.  Every signal stays blocked to its _exit, so no
 * handler of slurmstepd's runs here; SIGKILL, past the deadline, still ends it.
 */
static int writer(void *arg)
{
	const struct writer_args *w = arg;
	int code = drop_to(w->uid, w->gid, w->groups, w->n_groups);

	_exit(code ? code : write_file(w->path, w->how, w->data, w->len));
}

static int write_in_child(const char *path, uid_t uid, gid_t gid, const gid_t *groups, int n_groups,
			  enum spank_ib_write_how how, const char *data, size_t len, char *err,
			  size_t errlen, const char *safe)
{
	struct writer_args w = {.path = path,
				.uid = uid,
				.gid = gid,
				.groups = groups,
				.n_groups = n_groups,
				.how = how,
				.data = data,
				.len = len};
	int64_t deadline;
	int status = -1, pidfd; /* status: reaped by someone else: "the writer died" */
	pid_t pid;

	pid = spank_ib_child_fork(writer, &w);
	if (pid < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: fork: %s", safe, strerror(e));
		return -e;
	}
	pidfd = spank_ib_pidfd_open(pid);
	deadline = ibp_deadline_after_ms(ibp_now_ns(), WRITE_TIMEOUT_MS);
	if (!spank_ib_reap_until(pid, pidfd, deadline, &status)) {
		bool reaped;

		kill(pid, SIGKILL);
		reaped = spank_ib_reap_until(
		    pid, pidfd, ibp_deadline_after_ms(ibp_now_ns(), REAP_TIMEOUT_MS), &status);
		if (pidfd >= 0)
			close(pidfd);
		snprintf(err, errlen, "%s: not written within %d ms (a hung file system?)%s", safe,
			 WRITE_TIMEOUT_MS,
			 reaped ? "" : "; the writer is stuck in the kernel and was left");
		return -ETIMEDOUT;
	}
	if (pidfd >= 0)
		close(pidfd);
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * user_init: this process has the step's supplementary groups (Slurm's
 * drop); the child keeps them, as the write in this process did.  NULL
 * (then: the primary group only) when they cannot be read.
 */
static gid_t *own_groups(uid_t uid, int *n)
{
	gid_t *g;
	int k;

	*n = -1;
	if (geteuid() != uid || uid == 0)
		return NULL;
	k = getgroups(0, NULL);
	if (k < 0 || k > 65536)
		return NULL;
	g = calloc((size_t)k + 1, sizeof(*g));
	if (!g)
		return NULL;
	k = getgroups(k, g);
	if (k < 0) {
		free(g);
		return NULL;
	}
	*n = k;
	return g;
}

int spank_ib_write_as_user(const char *path, uid_t uid, gid_t gid, const gid_t *groups,
			   int n_groups, enum spank_ib_write_how how, const char *data, size_t len,
			   char *err, size_t errlen)
{
	static const char *const why[] = {
	    [UF_DROP - UF_DROP] = "cannot become the job's user",
	    [UF_OPEN - UF_DROP] = "cannot open it as the job's user",
	    [UF_NOTREG - UF_DROP] = "not a regular file (a FIFO, a device ...): give a file path",
	    [UF_WRITE - UF_DROP] = "write failed",
	    [UF_NOTJSON - UF_DROP] = "not a JSON object: left as it was",
	    [UF_FIFO - UF_DROP] = "a FIFO without a reader: give a regular file",
	};
	char safe[PATH_MAX * 2];
	gid_t *mine = NULL;
	int code, n_mine = -1;

	ibp_text_escape(path, safe, sizeof(safe)); /* the user's text, for slurmd's log */
	if (uid == (uid_t)-1 || gid == (gid_t)-1) {
		snprintf(err, errlen, "%s: the job's user is unknown: not written", safe);
		return -EPERM;
	}
	if (how == SPANK_IB_WRITE_JSON_MEMBER && (len < 3 || data[0] != ',')) {
		snprintf(err, errlen, "%s: not a JSON member", safe);
		return -EINVAL;
	}
	if (len > SPANK_IB_REPORT_MAX)
		len = SPANK_IB_REPORT_MAX; /* bounded: no step pays for a huge report */
	if (n_groups < 0)
		mine = own_groups(uid, &n_mine);
	code = write_in_child(path, uid, gid, mine ? mine : groups, mine ? n_mine : n_groups, how,
			      data, len, err, errlen, safe);
	free(mine);
	if (code == -ETIMEDOUT || code < -1)
		return code;
	if (code == UF_OK)
		return 0;
	snprintf(err, errlen, "%s: %s", safe,
		 code >= UF_DROP && code <= UF_FIFO ? why[code - UF_DROP] : "the writer died");
	return -EIO;
}
