/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_cache.c: a node's health verdict, kept for the job's later steps.
 *
 * A job with many short steps should not pay for the same checks each time:
 * slurmstepd (as root, in init_post_opt) keeps the node-class findings of
 * the health checks in CACHE_DIR/job.<id>.<host> for cache_ttl seconds.
 * Job-class findings (the user's memlock limit ...) are never kept: they are
 * the step's own and judged for every step.
 *
 * The directory must be root's and grant nothing to others (0700), on a path
 * only root can change (rootpath.h); it is opened once (O_DIRECTORY,
 * O_NOFOLLOW on every component) and every file operation is an *at() call
 * on that fd, so a user cannot redirect root's writes or unlinks.  Each
 * record names the host and the job (id and uid: ids restart after a
 * rebuilt slurmctld state, and a cache directory may be shared between
 * nodes) and is ignored when either differs; stale and foreign files are
 * misses, never errors.
 *
 * The step's peer lookup (ib_step.c: NCCL_SOCKET_IFNAME's route) is kept the
 * same way in CACHE_DIR/lookup.<id>.<host>: the addresses the helper gave
 * for the step's names, so that the job's later steps on the node exec no
 * helper.  The answer is the job user's own (their helper gave it, and it
 * steers only their steps): it is kept for that job and uid alone, only
 * when every name resolved, re-checked as a numeric address when read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ibprep/atomic_write.h"
#include "ibprep/rootpath.h"

#include "spank_ib.h"

#define CACHE_MAGIC        0x69626332u /* "ibc2" */
#define LOOKUP_MAGIC       0x69626c31u /* "ibl1" */
#define CACHE_MAX_FINDINGS 256

struct cache_head {
	unsigned magic;
	unsigned size_of_finding; /* a build with another layout is a miss */
	uint32_t job_id;
	uint32_t uid;
	char host[IBP_NODE_MAX];
	uint32_t n;
	uint32_t pad;
	int64_t written; /* CLOCK_REALTIME seconds */
};

int spank_ib_cache_open(const char *dir, bool create, char *why, size_t len)
{
	char base[NAME_MAX + 1];
	int fd, pfd;

	fd = ibp_rootpath_open(dir, O_RDONLY,
			       IBP_ROOTPATH_DIR | IBP_ROOTPATH_PRIVATE | IBP_ROOTPATH_NOFOLLOW, why,
			       len);
	if (fd != -ENOENT || !create)
		return fd;
	pfd = ibp_rootpath_open_parent(dir, base, sizeof(base), why, len);
	if (pfd < 0)
		return pfd;
	if (mkdirat(pfd, base, 0700) && errno != EEXIST) {
		int e = errno;

		close(pfd);
		snprintf(why, len, "%s: cannot create: %s", dir, strerror(e));
		return -e;
	}
	close(pfd);
	return ibp_rootpath_open(dir, O_RDONLY,
				 IBP_ROOTPATH_DIR | IBP_ROOTPATH_PRIVATE | IBP_ROOTPATH_NOFOLLOW,
				 why, len);
}

/* "<kind>.<id>.<host>": a host name that is not a plain name is not cached. */
static int record_name(const char *kind, const struct spank_ib_cache_key *k, char *buf, size_t len)
{
	int n;

	if (!k->host[0] || k->host[0] == '.' || strlen(k->host) >= IBP_NODE_MAX ||
	    strspn(k->host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
		strlen(k->host))
		return -EINVAL;
	n = snprintf(buf, len, "%s.%u.%s", kind, k->job_id, k->host);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int cache_name(const struct spank_ib_cache_key *k, char *buf, size_t len)
{
	return record_name("job", k, buf, len);
}

/* The record NAME in DFD for reading: root's regular file, nothing for others.  fd or -errno. */
static int record_open(int dfd, const char *name)
{
	struct stat st;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int spank_ib_cache_read(int fd, const struct spank_ib_cache_key *k, unsigned ttl,
			struct ibp_findings *f)
{
	struct cache_head h;
	size_t before = f->n;
	int rc = -ENOENT;

	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || h.magic != CACHE_MAGIC ||
	    h.size_of_finding != sizeof(struct ibp_finding) || h.job_id != k->job_id ||
	    h.uid != k->uid || h.n > CACHE_MAX_FINDINGS)
		goto out;
	h.host[sizeof(h.host) - 1] = '\0';
	if (strcmp(h.host, k->host) != 0)
		goto out; /* another node's verdict (a shared directory) */
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
		if (x.fclass != IBP_CLASS_NODE)
			continue; /* never written; never believed either */
		if (ibp_findings_add(f, &x)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = 0;
out:
	if (rc)
		f->n = before; /* all or nothing */
	return rc;
}

int spank_ib_cache_load(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			struct ibp_findings *f)
{
	char name[128];
	int fd, rc;

	if (dfd < 0 || !ttl || cache_name(k, name, sizeof(name)))
		return -ENOENT;
	fd = record_open(dfd, name);
	if (fd < 0)
		return fd == -EPERM ? -ENOENT : fd;
	rc = spank_ib_cache_read(fd, k, ttl, f);
	close(fd);
	return rc;
}

int spank_ib_cache_store(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			 const struct ibp_findings *f)
{
	char name[128];
	struct cache_head h;
	struct ibp_finding *v;
	unsigned char *buf;
	uint32_t n = 0;
	int rc;

	if (dfd < 0 || !ttl || geteuid() != 0)
		return 0; /* only root writes verdicts */
	if (cache_name(k, name, sizeof(name)))
		return -EINVAL;
	memset(&h, 0, sizeof(h));
	h.magic = CACHE_MAGIC;
	h.size_of_finding = sizeof(struct ibp_finding);
	h.job_id = k->job_id;
	h.uid = k->uid;
	snprintf(h.host, sizeof(h.host), "%s", k->host);
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].fclass == IBP_CLASS_NODE && n < CACHE_MAX_FINDINGS)
			n++;
	h.n = n;
	h.written = time(NULL);
	buf = malloc(sizeof(h) + (size_t)n * sizeof(*v));
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &h, sizeof(h));
	v = (struct ibp_finding *)(buf + sizeof(h));
	for (size_t i = 0, w = 0; i < f->n && w < n; i++)
		if (f->v[i].fclass ==
		    IBP_CLASS_NODE) /* a job fault is the step's, not the node's */
			memcpy(&v[w++], &f->v[i], sizeof(*v));
	rc = ibp_atomic_write_at(dfd, name, buf, sizeof(h) + (size_t)n * sizeof(*v), 0600);
	free(buf);
	return rc;
}

int spank_ib_cache_drop(int dfd, const struct spank_ib_cache_key *k)
{
	char name[128];
	int rc = 0;

	for (int i = 0; i < 2; i++) {
		if (dfd < 0 || record_name(i ? "lookup" : "job", k, name, sizeof(name)))
			return -EINVAL;
		if (unlinkat(dfd, name, 0) && errno != ENOENT && !rc)
			rc = -errno;
	}
	return rc;
}

/* ---- the step's peer lookup ---- */

struct lookup_head {
	unsigned magic;
	uint32_t job_id;
	uint32_t uid;
	char host[IBP_NODE_MAX];
	uint32_t n;
	int64_t written; /* CLOCK_REALTIME seconds */
};

struct lookup_entry {
	char name[SPANK_IB_NAME_MAX];
	char addr[SPANK_IB_ADDR_MAX];
};

static bool numeric_addr(const char *s)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

int spank_ib_lookup_cache_read(int fd, const struct spank_ib_cache_key *k, unsigned ttl,
			       struct spank_ib_lookup_answer *a)
{
	struct lookup_head h;
	struct lookup_entry e;
	char extra;

	memset(a, 0, sizeof(*a));
	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || h.magic != LOOKUP_MAGIC ||
	    h.job_id != k->job_id || h.uid != k->uid || h.n < 1 ||
	    h.n > sizeof(a->names) / sizeof(a->names[0]))
		return -ENOENT;
	h.host[sizeof(h.host) - 1] = '\0';
	if (strcmp(h.host, k->host) != 0 || h.written > time(NULL) ||
	    time(NULL) - h.written > (int64_t)ttl)
		return -ENOENT; /* another node's, or stale */
	for (uint32_t i = 0; i < h.n; i++) {
		if (read(fd, &e, sizeof(e)) != (ssize_t)sizeof(e))
			goto refused;
		e.name[sizeof(e.name) - 1] = e.addr[sizeof(e.addr) - 1] = '\0';
		if (!e.name[0] || !numeric_addr(e.addr))
			goto refused;
		memcpy(a->names[i], e.name, sizeof(e.name));
		memcpy(a->addrs[i], e.addr, sizeof(e.addr));
	}
	if (read(fd, &extra, 1) != 0)
		goto refused; /* all of the file, or none of it */
	a->n = h.n;
	return 0;
refused:
	memset(a, 0, sizeof(*a));
	return -EBADMSG;
}

int spank_ib_lookup_cache_load(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			       struct spank_ib_lookup_answer *a)
{
	char name[128];
	int fd, rc;

	memset(a, 0, sizeof(*a));
	if (dfd < 0 || !ttl || record_name("lookup", k, name, sizeof(name)))
		return -ENOENT;
	fd = record_open(dfd, name);
	if (fd < 0)
		return fd == -EPERM ? -ENOENT : fd;
	rc = spank_ib_lookup_cache_read(fd, k, ttl, a);
	close(fd);
	return rc;
}

int spank_ib_lookup_cache_store(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
				const struct spank_ib_lookup_answer *a)
{
	char name[128];
	struct {
		struct lookup_head h;
		struct lookup_entry e[sizeof(a->names) / sizeof(a->names[0])];
	} r;

	if (dfd < 0 || !ttl || geteuid() != 0)
		return 0; /* only root writes */
	if (record_name("lookup", k, name, sizeof(name)) || a->n < 1 ||
	    a->n > sizeof(a->names) / sizeof(a->names[0]))
		return -EINVAL;
	for (size_t i = 0; i < a->n; i++)
		if (!a->names[i][0] || !memchr(a->names[i], '\0', sizeof(a->names[i])) ||
		    !memchr(a->addrs[i], '\0', sizeof(a->addrs[i])) || !numeric_addr(a->addrs[i]))
			return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.h.magic = LOOKUP_MAGIC;
	r.h.job_id = k->job_id;
	r.h.uid = k->uid;
	snprintf(r.h.host, sizeof(r.h.host), "%s", k->host);
	r.h.n = (uint32_t)a->n;
	r.h.written = time(NULL);
	for (size_t i = 0; i < a->n; i++) {
		memcpy(r.e[i].name, a->names[i], sizeof(r.e[i].name));
		memcpy(r.e[i].addr, a->addrs[i], sizeof(r.e[i].addr));
	}
	/* the entries follow the head without a gap (the loader reads them so) */
	return ibp_atomic_write_at(dfd, name, &r, sizeof(r.h) + a->n * sizeof(r.e[0]), 0600);
}
