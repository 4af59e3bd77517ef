/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_cache.c: a node's health verdict, kept for the job's later steps.
 *
 * A job with many short steps should not pay for the same checks each time:
 * slurmstepd (as root, in init_post_opt) keeps the findings of the health
 * checks in CACHE_DIR/job.<id> for cache_ttl seconds.  Never across jobs:
 * the file name and its content carry the job id, the job epilog removes
 * it, and stale files are ignored.  The directory is root's (0700); files
 * are opened with O_NOFOLLOW and must be root's regular files, so a job's
 * user cannot plant or alter a verdict.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spank_ib.h"

#define CACHE_MAGIC        0x69626331u /* "ibc1" */
#define CACHE_MAX_FINDINGS 256

struct cache_head {
	unsigned magic;
	unsigned size_of_finding; /* a build with another layout is a miss */
	uint32_t job_id;
	uint32_t n;
	int64_t written; /* CLOCK_REALTIME seconds */
};

static int cache_path(const char *dir, uint32_t job_id, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/job.%u", dir, job_id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int spank_ib_cache_load(const char *dir, uint32_t job_id, unsigned ttl, struct ibp_findings *f)
{
	char path[PATH_MAX];
	struct cache_head h;
	struct stat st;
	int fd, rc = -ENOENT;

	if (!ttl || cache_path(dir, job_id, path, sizeof(path)))
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		goto out;
	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || h.magic != CACHE_MAGIC ||
	    h.size_of_finding != sizeof(struct ibp_finding) || h.job_id != job_id ||
	    h.n > CACHE_MAX_FINDINGS)
		goto out;
	if (h.written > time(NULL) || time(NULL) - h.written > (int64_t)ttl)
		goto out; /* stale */
	for (uint32_t i = 0; i < h.n; i++) {
		struct ibp_finding x;

		if (read(fd, &x, sizeof(x)) != (ssize_t)sizeof(x)) {
			rc = -EIO;
			goto out;
		}
		/* Strings from the file are NUL-terminated before use. */
		x.code[sizeof(x.code) - 1] = x.node[sizeof(x.node) - 1] = '\0';
		x.device[sizeof(x.device) - 1] = x.observed[sizeof(x.observed) - 1] = '\0';
		x.expected[sizeof(x.expected) - 1] = x.fix[sizeof(x.fix) - 1] = '\0';
		if (ibp_findings_add(f, &x)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

int spank_ib_cache_store(const char *dir, uint32_t job_id, unsigned ttl,
			 const struct ibp_findings *f)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	struct cache_head h = {CACHE_MAGIC, sizeof(struct ibp_finding), job_id, 0, 0};
	int fd, rc = 0;
	size_t n = f->n < CACHE_MAX_FINDINGS ? f->n : CACHE_MAX_FINDINGS;

	if (!ttl || geteuid() != 0)
		return 0; /* only root writes verdicts */
	if (cache_path(dir, job_id, path, sizeof(path)))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	h.n = (uint32_t)n;
	h.written = time(NULL);
	if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h))
		rc = -EIO;
	for (size_t i = 0; !rc && i < n; i++)
		if (write(fd, &f->v[i], sizeof(f->v[i])) != (ssize_t)sizeof(f->v[i]))
			rc = -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int spank_ib_cache_drop(const char *dir, uint32_t job_id)
{
	char path[PATH_MAX];

	if (cache_path(dir, job_id, path, sizeof(path)))
		return -ENAMETOOLONG;
	return unlink(path) && errno != ENOENT ? -errno : 0;
}
