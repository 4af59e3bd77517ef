/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fixture.c: fake sysfs roots for the unit tests (see fixture.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

#define RUN_LIMIT_MS 60000
#define MAX_ARGS     64

char *ibp_fixture_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/ibprep-test.XXXXXX", t && *t ? t : "/tmp");
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	if (!mkdtemp(path))
		return NULL;
	return strdup(path);
}

int ibp_fixture_run(char *const argv[])
{
	/* posix_spawn, not fork: forking an ASan process copies its huge maps. */
	posix_spawn_file_actions_t fa;
	pid_t pid;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return -ENOMEM;
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -r;
	/* Bounded: poll for the child, kill it past the limit. */
	for (int waited = 0;; waited += 5) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (waited >= RUN_LIMIT_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

char *ibp_fixture_make(const char *arg, ...)
{
	const char *argv[MAX_ARGS + 4];
	const char *script = getenv("IBP_MKSYSFS");
	size_t n = 0;
	va_list ap;

	char *dir = ibp_fixture_tmpdir();
	if (!dir)
		return NULL;
	char *root = malloc(strlen(dir) + 6);
	if (!root) {
		ibp_fixture_rmrf(dir);
		free(dir);
		return NULL;
	}
	sprintf(root, "%s/root", dir);
	free(dir);

	/* The system interpreter when there is one: version-manager shims
	 * (pyenv) cost a quarter second per tree. */
	const char *py = getenv("IBP_PYTHON");
	if (!py || !*py)
		py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
	argv[n++] = py;
	argv[n++] = script && *script ? script : "tests/fixtures/mksysfs.py";
	va_start(ap, arg);
	for (const char *a = arg; a && n < MAX_ARGS; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n++] = root;
	argv[n] = NULL;
	if (ibp_fixture_run((char *const *)argv) != 0) {
		ibp_fixture_destroy(root);
		return NULL;
	}
	return root;
}

void ibp_fixture_destroy(char *root)
{
	if (!root)
		return;
	/* ".../ibprep-test.XXXXXX/root" -> remove the temp dir itself. */
	char *slash = strrchr(root, '/');
	if (slash && !strcmp(slash, "/root") && strstr(root, "/ibprep-test."))
		*slash = '\0';
	ibp_fixture_rmrf(root);
	free(root);
}

static int join(char *out, size_t len, const char *root, const char *rel)
{
	int n = snprintf(out, len, "%s/%s", root, rel);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

static int mkparents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int r = mkdir(path, 0755);
		*p = '/';
		if (r < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

int ibp_fixture_write(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	int r = join(path, sizeof(path), root, rel);
	if (r < 0 || (r = mkparents(path)) < 0)
		return r;
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		ibp_fixture_rmrf(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		off += (size_t)w;
	}
	return close(fd) < 0 ? -errno : 0;
}

int ibp_fixture_symlink(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];
	int r = join(path, sizeof(path), root, rel);
	if (r < 0 || (r = mkparents(path)) < 0)
		return r;
	return symlink(target, path) < 0 ? -errno : 0;
}

int ibp_fixture_mkdir(const char *root, const char *rel)
{
	char path[PATH_MAX];
	int r = join(path, sizeof(path), root, rel);
	if (r < 0 || (r = mkparents(path)) < 0)
		return r;
	return (mkdir(path, 0755) < 0 && errno != EEXIST) ? -errno : 0;
}

int ibp_fixture_remove(const char *root, const char *rel)
{
	char path[PATH_MAX];
	int r = join(path, sizeof(path), root, rel);
	return r < 0 ? r : ibp_fixture_rmrf(path);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int r = type == FTW_DP ? rmdir(path) : unlink(path);
	return r < 0 && errno != ENOENT ? -1 : 0;
}

static int make_writable(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D)
		chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

int ibp_fixture_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int ibp_fixture_rmrf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? -errno : 0;
	nftw(path, make_writable, 16, FTW_PHYS);
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -EIO : 0;
}

int ibp_fixture_copy(const char *src, const char *dst)
{
	char *argv[] = {(char *)"cp", (char *)"-R", (char *)"-P", (char *)src, (char *)dst, NULL};
	int r = ibp_fixture_run(argv);
	if (r != 0)
		return r < 0 ? r : -EIO;
	/* Captures are read-only: make the copy writable so tests can edit it. */
	char *chm[] = {(char *)"chmod", (char *)"-R", (char *)"u+w", (char *)dst, NULL};
	r = ibp_fixture_run(chm);
	return r == 0 ? 0 : (r < 0 ? r : -EIO);
}

const char *ibp_fixture_real_dir(void)
{
	static char dir[PATH_MAX];
	const char *e = getenv("IBP_REAL_FIXTURES");
	struct stat st;
	snprintf(dir, sizeof(dir), "%s", e && *e ? e : "../shared/fixtures/real");
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return NULL;
	return dir;
}
