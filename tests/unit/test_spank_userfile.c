/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_userfile.c: spank_ib_write_as_user, the one writer of the
 * user's --ib-report file (user_init's report and the step-end section):
 * replace, append and JSON member, regular files only, a FIFO never blocks,
 * the size cap, (as root) the write done as the job's user, never root,
 * with user_init's groups, and a writer that hangs (ftruncate wrapped to
 * pause, as on a hung mount) given up on: the caller is back, the child gone;
 * no handler of slurmstepd's runs in the writer (fork wrapped: fork_probe.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../spank/spank_ib.h"
#include "fork_probe.h"
#include "support/fixture.h"

/* Set: the writer's ftruncate never returns (a hung NFS or FUSE mount). */
static volatile sig_atomic_t hang_truncate;

int __wrap_ftruncate(int fd, off_t len);
int __real_ftruncate(int fd, off_t len);

int __wrap_ftruncate(int fd, off_t len)
{
	while (hang_truncate)
		pause();
	return __real_ftruncate(fd, len);
}

static char *slurp(const char *path, size_t *len)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	return buf;
}

/* As whoever runs the test (the job's user is this process's). */
static int write_self(const char *path, enum spank_ib_write_how how, const char *data, char *err,
		      size_t errlen)
{
	return spank_ib_write_as_user(path, getuid(), getgid(), NULL, -1, how, data, strlen(data),
				      err, errlen);
}

static const struct {
	const char *before; /* NULL: no file */
	enum spank_ib_write_how how;
	const char *data;
	int rc;
	const char *after; /* the file, or the message's text */
} cases[] = {
    {NULL, SPANK_IB_WRITE_REPLACE, "report\n", 0, "report\n"},
    {"an older, longer report\n", SPANK_IB_WRITE_REPLACE, "report\n", 0, "report\n"},
    {"report\n", SPANK_IB_WRITE_APPEND, "step end\n", 0, "report\nstep end\n"},
    {NULL, SPANK_IB_WRITE_APPEND, "step end\n", 0, "step end\n"},
    {"{\"node\":\"n1\"}\n", SPANK_IB_WRITE_JSON_MEMBER, ",\"step_end\":{}}\n", 0,
     "{\"node\":\"n1\",\"step_end\":{}}\n"},
    {NULL, SPANK_IB_WRITE_JSON_MEMBER, ",\"step_end\":{}}\n", 0, "{\"step_end\":{}}\n"},
    {"step end, text\n", SPANK_IB_WRITE_JSON_MEMBER, ",\"step_end\":{}}\n", -EIO,
     "not a JSON object: left as it was"},
    {"{}", SPANK_IB_WRITE_JSON_MEMBER, "{\"no\":\"comma\"}", -EINVAL, "not a JSON member"},
};

static void test_userfile_modes_table(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX], err[PATH_MAX * 2 + 128];

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/report", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got;

		unlink(path);
		if (cases[i].before)
			assert_int_equal(ibp_fixture_write(dir, "report", cases[i].before), 0);
		err[0] = '\0';
		int rc = write_self(path, cases[i].how, cases[i].data, err, sizeof(err));
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d (%s), want %d", i, rc, err, cases[i].rc);
		if (rc) {
			if (!strstr(err, cases[i].after) || !strstr(err, path))
				fail_msg("case %zu: '%s' lacks the path or '%s'", i, err,
					 cases[i].after);
			got = slurp(path, NULL);
			if (cases[i].before && (!got || strcmp(got, cases[i].before) != 0))
				fail_msg("case %zu: the file changed: '%s'", i, got ? got : "");
			continue;
		}
		got = slurp(path, NULL);
		if (!got || strcmp(got, cases[i].after) != 0)
			fail_msg("case %zu: '%s', want '%s'", i, got ? got : "(none)",
				 cases[i].after);
	}
	ibp_fixture_destroy(dir);
}

static void test_userfile_fifo_and_links_refused(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX], link[PATH_MAX], err[PATH_MAX * 2 + 128];
	int rd;

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	/* no reader: the open fails at once (never blocks) */
	assert_int_equal(write_self(path, SPANK_IB_WRITE_REPLACE, "x\n", err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "a FIFO without a reader"));
	/* a reader: refused after the open */
	rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(rd >= 0);
	assert_int_equal(write_self(path, SPANK_IB_WRITE_REPLACE, "x\n", err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "not a regular file"));
	close(rd);
	/* a symbolic link is not followed */
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(ibp_fixture_write(dir, "target", "keep\n"), 0);
	snprintf(path, sizeof(path), "%s/target", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(write_self(link, SPANK_IB_WRITE_REPLACE, "x\n", err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "cannot open it"));
	assert_string_equal(slurp(path, NULL), "keep\n");
	ibp_fixture_destroy(dir);
}

static void test_userfile_capped(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX], err[256];
	size_t big = SPANK_IB_REPORT_MAX + 4096;
	char *data = malloc(big);
	struct stat sb;

	(void)state;
	assert_non_null(dir);
	assert_non_null(data);
	memset(data, 'x', big);
	snprintf(path, sizeof(path), "%s/report", dir);
	assert_int_equal(spank_ib_write_as_user(path, getuid(), getgid(), NULL, -1,
						SPANK_IB_WRITE_REPLACE, data, big, err,
						sizeof(err)),
			 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, SPANK_IB_REPORT_MAX);
	free(data);
	ibp_fixture_destroy(dir);
}

/* As root for another job user: written by that user, never by root. */
static void test_userfile_as_the_job_user_never_root(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX], err[PATH_MAX * 2 + 128];
	struct stat sb;

	(void)state;
	if (geteuid() != 0) {
		print_message("skip: not root (the write as another user needs root)\n");
		ibp_fixture_destroy(dir);
		skip();
	}
	assert_non_null(dir);
	assert_int_equal(chmod(dir, 0755), 0); /* root's: the user may not create in it */
	snprintf(path, sizeof(path), "%s/report", dir);
	assert_int_equal(spank_ib_write_as_user(path, 65534, 65534, NULL, -1, SPANK_IB_WRITE_APPEND,
						"x\n", 2, err, sizeof(err)),
			 -EIO);
	assert_non_null(strstr(err, "cannot open it as the job's user"));
	assert_int_equal(stat(path, &sb), -1);
	/* a directory the user owns: the file is the user's */
	assert_int_equal(chown(dir, 65534, 65534), 0);
	assert_int_equal(spank_ib_write_as_user(path, 65534, 65534, NULL, -1, SPANK_IB_WRITE_APPEND,
						"x\n", 2, err, sizeof(err)),
			 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_uid, 65534);
	assert_int_equal(spank_ib_write_as_user(path, (uid_t)-1, 0, NULL, -1, SPANK_IB_WRITE_APPEND,
						"x\n", 2, err, sizeof(err)),
			 -EPERM);
	ibp_fixture_destroy(dir);
}

/* This process's children, "PID PID ..." (the kernel's list). */
static void children(char *buf, size_t len)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

/* A writer that never returns: the caller gets -ETIMEDOUT, no child is left. */
static void test_userfile_hung_writer_given_up(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX], err[PATH_MAX * 2 + 128], before[256];

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/report", dir);
	children(before, sizeof(before));
	hang_truncate = 1;
	assert_int_equal(write_self(path, SPANK_IB_WRITE_REPLACE, "x\n", err, sizeof(err)),
			 -ETIMEDOUT);
	hang_truncate = 0;
	assert_non_null(strstr(err, "not written within 2000 ms"));
	assert_non_null(strstr(err, path));
	/*
	 * Killed: gone within a bound (the writer reaps it within 1 s, or leaves
	 * it to whoever reaps later: a loaded machine, an ASan process's exit).
	 * Only children the call made count (run-suite.sh's tee is one too).
	 */
	{
		char after[256];
		int i;

		for (i = 0; i < 1000; i++) {
			children(after, sizeof(after));
			if (!strcmp(after, before))
				break;
			for (char *p = after; *p; p += strcspn(p, " "), p += *p == ' ')
				(void)waitpid(atoi(p), NULL, WNOHANG);
			usleep(10000);
		}
		assert_string_equal(after, before);
	}
	/* the next write works */
	assert_int_equal(write_self(path, SPANK_IB_WRITE_REPLACE, "y\n", err, sizeof(err)), 0);
	assert_string_equal(slurp(path, NULL), "y\n");
	ibp_fixture_destroy(dir);
}

/*
 * user_init: effective uid the job's user, real uid root, the step's
 * supplementary groups set: the write is the user's, with those groups
 * (a directory only a supplementary group may write), and this process
 * is left as it was.
 */
static void test_userfile_user_init_keeps_the_step_groups(void **state)
{
	char *dir = ibp_fixture_tmpdir(), sub[PATH_MAX], path[PATH_MAX + 16],
	     err[PATH_MAX * 2 + 128];
	gid_t groups[2] = {65534, 4242}, saved[64];
	int n_saved;
	struct stat sb;
	int rc;

	(void)state;
	if (geteuid() != 0) {
		print_message("skip: not root (user_init's identity needs root)\n");
		ibp_fixture_destroy(dir);
		skip();
	}
	assert_non_null(dir);
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(sub, sizeof(sub), "%s/group", dir);
	assert_int_equal(mkdir(sub, 0770), 0);
	assert_int_equal(chown(sub, 0, 4242), 0);
	assert_int_equal(chmod(sub, 0770), 0); /* mkdir's mode is masked by the umask */
	snprintf(path, sizeof(path), "%s/report", sub);
	n_saved = getgroups(64, saved);
	assert_true(n_saved >= 0);
	assert_int_equal(setgroups(2, groups), 0);
	assert_int_equal(setegid(65534), 0);
	assert_int_equal(seteuid(65534), 0);
	rc = spank_ib_write_as_user(path, 65534, 65534, NULL, -1, SPANK_IB_WRITE_REPLACE, "r\n", 2,
				    err, sizeof(err));
	assert_int_equal(geteuid(), 65534); /* the caller's identity is untouched */
	assert_int_equal(seteuid(0), 0);
	assert_int_equal(setegid(0), 0);
	assert_int_equal(setgroups((size_t)n_saved, saved), 0);
	if (rc)
		fail_msg("rc %d: %s", rc, err);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_uid, 65534);
	ibp_fixture_destroy(dir);
}

/*
 * The writer is forked with every signal blocked (spank_ib_child_fork): a
 * signal that reaches it never runs slurmstepd's handler in it, and the
 * write is done.
 */
static void test_userfile_no_handler_of_slurmstepd_in_the_writer(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX], err[PATH_MAX * 2 + 128];
	int forks = -1, runs, rc;

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/report", dir);
	assert_int_equal(fork_probe_arm(SIGWINCH), 0);
	rc = write_self(path, SPANK_IB_WRITE_REPLACE, "report\n", err, sizeof(err));
	runs = fork_probe_disarm(&forks);
	if (rc)
		fail_msg("rc %d: %s", rc, err);
	assert_int_equal(forks, 1);
	assert_int_equal(runs, 0);
	assert_string_equal(slurp(path, NULL), "report\n");
	ibp_fixture_destroy(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_userfile_modes_table),
	    cmocka_unit_test(test_userfile_fifo_and_links_refused),
	    cmocka_unit_test(test_userfile_capped),
	    cmocka_unit_test(test_userfile_as_the_job_user_never_root),
	    cmocka_unit_test(test_userfile_hung_writer_given_up),
	    cmocka_unit_test(test_userfile_user_init_keeps_the_step_groups),
	    cmocka_unit_test(test_userfile_no_handler_of_slurmstepd_in_the_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
