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
#define LOOKUP_MAGIC       0x69626c32u /* "ibl2": the record head of the verdict's layout */
#define CACHE_MAX_FINDINGS 256

/*
 * One record file, for the verdict and the peer lookup alike: a head naming
 * its kind, the job (id and uid), the host and when it was written, then N
 * entries of the kind's one size.  A head that does not match (another kind
 * or layout, another job, user or node, stale) is a miss; a body cut short,
 * longer than N entries or with an entry the kind refuses is refused whole.
 */
struct record_head {
	uint32_t magic;
	uint32_t entry_size; /* a build with another layout is a miss */
	uint32_t job_id;
	uint32_t uid;
	char host[IBP_NODE_MAX];
	uint32_t n;
	uint32_t pad;
	int64_t written; /* CLOCK_REALTIME seconds */
};

struct lookup_entry {
	char name[SPANK_IB_NAME_MAX];
	char addr[SPANK_IB_ADDR_MAX];
};

union record_entry {
	struct ibp_finding finding;
	struct lookup_entry lookup;
};

struct record_kind {
	const char *prefix; /* the file: "<prefix>.<job id>.<host>" */
	uint32_t magic, entry_size, min_n, max_n;
	/* Load: entry I read from the file (its strings unterminated): 0, or -errno refusing the record. */
	int (*take)(void *ctx, uint32_t i, union record_entry *e);
	/* Store: entry I (zeroed) from CTX: 0, or -errno writing nothing. */
	int (*give)(void *ctx, uint32_t i, union record_entry *e);
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

/* KIND's record for K in the open file FD, entry by entry into CTX.  0, -ENOENT (miss) or -errno. */
static int record_read(int fd, const struct record_kind *kind, const struct spank_ib_cache_key *k,
		       unsigned ttl, void *ctx)
{
	struct record_head h;
	union record_entry e;
	char extra;
	int rc;

	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || h.magic != kind->magic ||
	    h.entry_size != kind->entry_size || h.job_id != k->job_id || h.uid != k->uid ||
	    h.n < kind->min_n || h.n > kind->max_n)
		return -ENOENT;
	h.host[sizeof(h.host) - 1] = '\0';
	if (strcmp(h.host, k->host) != 0 || h.written > time(NULL) ||
	    time(NULL) - h.written > (int64_t)ttl)
		return -ENOENT; /* another node's (a shared directory), or stale */
	for (uint32_t i = 0; i < h.n; i++) {
		if (read(fd, &e, kind->entry_size) != (ssize_t)kind->entry_size)
			return -EBADMSG;
		rc = kind->take(ctx, i, &e);
		if (rc)
			return rc;
	}
	if (read(fd, &extra, 1) != 0)
		return -EBADMSG; /* all of the file, or none of it */
	return 0;
}

static int record_load(int dfd, const struct record_kind *kind, const struct spank_ib_cache_key *k,
		       unsigned ttl, void *ctx)
{
	char name[128];
	int fd, rc;

	if (dfd < 0 || !ttl || record_name(kind->prefix, k, name, sizeof(name)))
		return -ENOENT;
	fd = record_open(dfd, name);
	if (fd < 0)
		return fd == -EPERM ? -ENOENT : fd;
	rc = record_read(fd, kind, k, ttl, ctx);
	close(fd);
	return rc;
}

/* KIND's record for K with N entries from CTX: root's file (0600), replaced in one step. */
static int record_store(int dfd, const struct record_kind *kind, const struct spank_ib_cache_key *k,
			unsigned ttl, uint32_t n, void *ctx)
{
	char name[128];
	struct record_head *h;
	union record_entry *e;
	size_t len = sizeof(*h) + (size_t)n * kind->entry_size;
	int rc = 0;

	if (dfd < 0 || !ttl || geteuid() != 0)
		return 0; /* only root writes */
	if (record_name(kind->prefix, k, name, sizeof(name)) || n < kind->min_n || n > kind->max_n)
		return -EINVAL;
	h = calloc(1, len + sizeof(*e)); /* room for the last entry's union */
	if (!h)
		return -ENOMEM;
	h->magic = kind->magic;
	h->entry_size = kind->entry_size;
	h->job_id = k->job_id;
	h->uid = k->uid;
	snprintf(h->host, sizeof(h->host), "%s", k->host);
	h->n = n;
	h->written = time(NULL);
	for (uint32_t i = 0; !rc && i < n; i++) {
		e = (union record_entry *)((char *)(h + 1) + (size_t)i * kind->entry_size);
		rc = kind->give(ctx, i, e);
	}
	if (!rc)
		rc = ibp_atomic_write_at(dfd, name, h, len, 0600);
	free(h);
	return rc;
}

/* ---- the verdict: the node's findings ---- */

struct verdict_ctx {
	const struct ibp_findings *f; /* store: the step's findings */
	struct ibp_findings *out;     /* load: appended to */
	size_t next;                  /* store: the next of F to look at */
};

static int verdict_take(void *ctx, uint32_t i, union record_entry *e)
{
	struct verdict_ctx *c = ctx;
	struct ibp_finding *x = &e->finding;

	(void)i;
	/* Strings from the file are NUL-terminated before use. */
	x->code[sizeof(x->code) - 1] = x->node[sizeof(x->node) - 1] = '\0';
	x->device[sizeof(x->device) - 1] = x->observed[sizeof(x->observed) - 1] = '\0';
	x->expected[sizeof(x->expected) - 1] = x->fix[sizeof(x->fix) - 1] = '\0';
	if (x->fclass != IBP_CLASS_NODE)
		return 0; /* never written; never believed either */
	return ibp_findings_add(c->out, x) ? -ENOMEM : 0;
}

static int verdict_give(void *ctx, uint32_t i, union record_entry *e)
{
	struct verdict_ctx *c = ctx;

	(void)i;
	while (c->f->v[c->next].fclass != IBP_CLASS_NODE)
		c->next++; /* a job fault is the step's, not the node's (counted: one is there) */
	memcpy(&e->finding, &c->f->v[c->next++], sizeof(e->finding));
	return 0;
}

static const struct record_kind verdict_kind = {
    .prefix = "job",
    .magic = CACHE_MAGIC,
    .entry_size = sizeof(struct ibp_finding),
    .min_n = 0,
    .max_n = CACHE_MAX_FINDINGS,
    .take = verdict_take,
    .give = verdict_give,
};

int spank_ib_cache_read(int fd, const struct spank_ib_cache_key *k, unsigned ttl,
			struct ibp_findings *f)
{
	struct verdict_ctx c = {.out = f};
	size_t before = f->n;
	int rc = record_read(fd, &verdict_kind, k, ttl, &c);

	if (rc)
		f->n = before; /* all or nothing */
	return rc;
}

int spank_ib_cache_load(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			struct ibp_findings *f)
{
	struct verdict_ctx c = {.out = f};
	size_t before = f->n;
	int rc = record_load(dfd, &verdict_kind, k, ttl, &c);

	if (rc)
		f->n = before;
	return rc;
}

int spank_ib_cache_store(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			 const struct ibp_findings *f)
{
	struct verdict_ctx c = {.f = f};
	uint32_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].fclass == IBP_CLASS_NODE && n < CACHE_MAX_FINDINGS)
			n++;
	return record_store(dfd, &verdict_kind, k, ttl, n, &c);
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

static bool numeric_addr(const char *s)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static int lookup_take(void *ctx, uint32_t i, union record_entry *e)
{
	struct spank_ib_lookup_answer *a = ctx;
	struct lookup_entry *x = &e->lookup;

	x->name[sizeof(x->name) - 1] = x->addr[sizeof(x->addr) - 1] = '\0';
	if (!x->name[0] || !numeric_addr(x->addr))
		return -EBADMSG;
	memcpy(a->names[i], x->name, sizeof(x->name));
	memcpy(a->addrs[i], x->addr, sizeof(x->addr));
	a->n = i + 1;
	return 0;
}

/* What the helper would say wrong is never written: a name, not an address. */
static int lookup_give(void *ctx, uint32_t i, union record_entry *e)
{
	const struct spank_ib_lookup_answer *a = ctx;

	if (!a->names[i][0] || !memchr(a->names[i], '\0', sizeof(a->names[i])) ||
	    !memchr(a->addrs[i], '\0', sizeof(a->addrs[i])) || !numeric_addr(a->addrs[i]))
		return -EINVAL;
	memcpy(e->lookup.name, a->names[i], sizeof(e->lookup.name));
	memcpy(e->lookup.addr, a->addrs[i], sizeof(e->lookup.addr));
	return 0;
}

static const struct record_kind lookup_kind = {
    .prefix = "lookup",
    .magic = LOOKUP_MAGIC,
    .entry_size = sizeof(struct lookup_entry),
    .min_n = 1,
    .max_n = sizeof(((struct spank_ib_lookup_answer *)0)->names) /
	     sizeof(((struct spank_ib_lookup_answer *)0)->names[0]),
    .take = lookup_take,
    .give = lookup_give,
};

int spank_ib_lookup_cache_read(int fd, const struct spank_ib_cache_key *k, unsigned ttl,
			       struct spank_ib_lookup_answer *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	rc = record_read(fd, &lookup_kind, k, ttl, a);
	if (rc)
		memset(a, 0, sizeof(*a)); /* all or nothing */
	return rc;
}

int spank_ib_lookup_cache_load(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			       struct spank_ib_lookup_answer *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	rc = record_load(dfd, &lookup_kind, k, ttl, a);
	if (rc)
		memset(a, 0, sizeof(*a));
	return rc;
}

int spank_ib_lookup_cache_store(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
				const struct spank_ib_lookup_answer *a)
{
	uint32_t n = a->n > lookup_kind.max_n ? UINT32_MAX : (uint32_t)a->n; /* refused there */

	return record_store(dfd, &lookup_kind, k, ttl, n, (void *)a); /* lookup_give only reads A */
}
