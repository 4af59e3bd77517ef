/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_atomic_write: a file replaced in one step (helpers/core/atomic_write.c):
 * the caller's mode whatever the umask, no temporary file left on success or
 * failure, nothing planted followed, every operation on the directory fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/atomic_write.h"
#include "support/fixture.h"

/* fsync fails on demand: the old file must then be left as it was. */
int __wrap_fsync(int fd);
int __real_fsync(int fd);
static int fail_fsync, fsyncs;

int __wrap_fsync(int fd)
{
	fsyncs++;
	if (fail_fsync) {
		errno = EIO;
		return -1;
	}
	return __real_fsync(fd);
}

static void assert_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[PATH_MAX], buf[256];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_NOFOLLOW);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, mode);
	assert_int_equal(st.st_uid, geteuid());
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, text);
}

static void test_atomic_write_replaces_with_mode_whatever_umask(void **state)
{
	char *dir = ibp_fixture_tmpdir();
	mode_t old;
	int dfd;

	(void)state;
	assert_non_null(dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	old = umask(0077);
	fsyncs = 0;
	assert_int_equal(ibp_atomic_write_at(dfd, "a.prom", "a 1\n", 4, 0644), 0);
	assert_int_equal(fsyncs, 2); /* the file, then the directory (the rename) */
	umask(0);
	assert_file(dir, "a.prom", "a 1\n", 0644);
	assert_int_equal(ibp_atomic_write_at(dfd, "a.prom", "a 22\n", 5, 0600), 0);
	assert_file(dir, "a.prom", "a 22\n", 0600);
	/* empty is a content too */
	assert_int_equal(ibp_atomic_write_at(dfd, "empty", NULL, 0, 0600), 0);
	assert_file(dir, "empty", "", 0600);
	umask(old);
	assert_int_equal(ibp_fixture_count_entries(dir), 2); /* no temporary file left */
	close(dfd);
	ibp_fixture_destroy(dir);
}

/* A failure half way leaves the old file and no temporary one. */
static void test_atomic_write_failure_keeps_old_file(void **state)
{
	char *dir = ibp_fixture_tmpdir();
	int dfd;

	(void)state;
	assert_non_null(dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(ibp_atomic_write_at(dfd, "job.7.n1", "old", 3, 0600), 0);
	fail_fsync = 1;
	assert_int_equal(ibp_atomic_write_at(dfd, "job.7.n1", "new", 3, 0600), -EIO);
	fail_fsync = 0;
	assert_file(dir, "job.7.n1", "old", 0600);
	assert_int_equal(ibp_fixture_count_entries(dir), 1);
	close(dfd);
	ibp_fixture_destroy(dir);
}

/* Links planted under the temporary name or the name itself: never followed. */
static void test_atomic_write_planted_links_not_followed(void **state)
{
	char *dir = ibp_fixture_tmpdir();
	char victim[PATH_MAX], tmp[128], path[PATH_MAX];
	struct stat st;
	int dfd;

	(void)state;
	assert_non_null(dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(ibp_fixture_write(dir, "victim", "keep"), 0);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	/* this process's first temporary name, planted: the next one is taken */
	snprintf(tmp, sizeof(tmp), ".rec.%ld.0", (long)getpid());
	assert_int_equal(symlinkat(victim, dfd, tmp), 0);
	assert_int_equal(symlinkat(victim, dfd, "rec"), 0);
	assert_int_equal(ibp_atomic_write_at(dfd, "rec", "mine", 4, 0600), 0);
	assert_file(dir, "rec", "mine", 0600); /* the link itself replaced */
	assert_file(dir, "victim", "keep", 0644);
	snprintf(path, sizeof(path), "%s/%s", dir, tmp);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode)); /* not ours: left alone */
	assert_int_equal(ibp_fixture_count_entries(dir), 3);
	close(dfd);
	ibp_fixture_destroy(dir);
}

/* Every operation is on the directory fd: a renamed directory is still the one written. */
static void test_atomic_write_relative_to_dir_fd(void **state)
{
	char *dir = ibp_fixture_tmpdir();
	char from[PATH_MAX], to[PATH_MAX];
	int dfd;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(ibp_fixture_mkdir(dir, "d"), 0);
	snprintf(from, sizeof(from), "%s/d", dir);
	snprintf(to, sizeof(to), "%s/moved", dir);
	dfd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(ibp_fixture_mkdir(dir, "d"), 0); /* another one under the old path */
	assert_int_equal(ibp_atomic_write_at(dfd, "f", "x", 1, 0600), 0);
	assert_file(to, "f", "x", 0600);
	assert_int_equal(ibp_fixture_count_entries(from), 0);
	close(dfd);
	ibp_fixture_destroy(dir);
}

static void test_atomic_write_bad_arguments_refused(void **state)
{
	static const char *const bad[] = {"", ".", "..", "../x", "a/b", NULL};
	char *dir = ibp_fixture_tmpdir();
	char long_name[NAME_MAX + 1];
	int dfd;

	(void)state;
	assert_non_null(dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	for (size_t i = 0; bad[i]; i++)
		assert_int_equal(ibp_atomic_write_at(dfd, bad[i], "x", 1, 0600), -EINVAL);
	assert_int_equal(ibp_atomic_write_at(dfd, NULL, "x", 1, 0600), -EINVAL);
	assert_int_equal(ibp_atomic_write_at(dfd, "f", NULL, 1, 0600), -EINVAL);
	assert_int_equal(ibp_atomic_write_at(dfd, "f", "x", 1, 04755), -EINVAL);
	assert_int_equal(ibp_atomic_write_at(-1, "f", "x", 1, 0600), -EBADF);
	/* a name that fits but whose temporary name would not */
	memset(long_name, 'a', NAME_MAX - 2);
	long_name[NAME_MAX - 2] = '\0';
	assert_int_equal(ibp_atomic_write_at(dfd, long_name, "x", 1, 0600), -ENAMETOOLONG);
	assert_int_equal(ibp_fixture_count_entries(dir), 0);
	close(dfd);
	ibp_fixture_destroy(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_atomic_write_replaces_with_mode_whatever_umask),
	    cmocka_unit_test(test_atomic_write_failure_keeps_old_file),
	    cmocka_unit_test(test_atomic_write_planted_links_not_followed),
	    cmocka_unit_test(test_atomic_write_relative_to_dir_fd),
	    cmocka_unit_test(test_atomic_write_bad_arguments_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
