/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * results_log.c: the per-link JSON-lines log (see results_log.h): a writer
 * that only appends where nobody but its owner can interfere, and a reader
 * that survives whatever a crash, a full disk or a hostile edit left.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ibprep/json.h"
#include "ibprep/results_log.h"
#include "ibprep/rootpath.h"
#include "ibprep/text.h"

/* ---- format ---- */

static double round_to(double v, double unit)
{
	return round(v / unit) * unit;
}

static int kv_measure(struct ibp_json *j, const char *key, double v, double unit)
{
	if (!(v >= 0) || !isfinite(v))
		return ibp_json_kv_null(j, key);
	return ibp_json_kv_double(j, key, round_to(v, unit));
}

/* The outcomes a record may carry: a tested link's (the reader takes the same). */
static bool loggable(enum ibp_link_status st)
{
	return st != IBP_LINK_UNTESTED && (unsigned)st < IBP_LINK_STATUS_COUNT;
}

int ibp_results_log_format(const struct ibp_link_record *r, char *buf, size_t len)
{
	struct ibp_json j;
	const char *s;
	size_t n;
	int rc;

	if (!r->a[0] || !r->b[0] || !loggable(r->status))
		return -EINVAL;
	ibp_json_init_buf(&j, 0);
	ibp_json_object_begin(&j);
	ibp_json_kv_int(&j, "v", IBP_RESULTS_LOG_VERSION);
	ibp_json_kv_int(&j, "t", r->time);
	ibp_json_kv_uint(&j, "job", r->job);
	ibp_json_kv_uint(&j, "step", r->step);
	ibp_json_kv_string(&j, "by", r->by);
	ibp_json_kv_uint(&j, "round", r->round);
	ibp_json_kv_string(&j, "a", r->a);
	ibp_json_kv_int(&j, "ar", r->a_rail);
	ibp_json_kv_string(&j, "ad", r->a_dev);
	ibp_json_kv_uint(&j, "ap", r->a_port);
	ibp_json_kv_string(&j, "b", r->b);
	ibp_json_kv_int(&j, "br", r->b_rail);
	ibp_json_kv_string(&j, "bd", r->b_dev);
	ibp_json_kv_uint(&j, "bp", r->b_port);
	ibp_json_kv_bool(&j, "ok", r->status == IBP_LINK_PASS);
	ibp_json_kv_string(&j, "why", ibp_link_status_name(r->status));
	kv_measure(&j, "rtt_us", r->rtt_us, 0.1);
	kv_measure(&j, "gbps", r->gbps, 0.01);
	ibp_json_object_end(&j);
	rc = j.err;
	s = ibp_json_buf(&j, &n);
	if (!rc && n + 2 > len)
		rc = -E2BIG;
	if (!rc) {
		memcpy(buf, s, n);
		buf[n] = '\n';
		buf[n + 1] = '\0';
		rc = (int)(n + 1);
	}
	ibp_json_release(&j);
	return rc;
}

/* ---- the place check ---- */

/*
 * The directory PATH's file is in, through rootpath.h (every directory on
 * the way root's or OWNER's and not writable by group or others; the log's
 * own directory not a link and never world-writable, not even sticky): its
 * fd, and the file's name in BASE.
 */
static int open_safe_dir(const char *path, uid_t owner, char *base, size_t baselen, char *err,
			 size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash;

	if (!path || path[0] != '/')
		return ibp_errf(-EINVAL, err, errlen, "%s: not an absolute path",
				path ? path : "(null)");
	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(path, '/');
	if (!slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return ibp_errf(-EINVAL, err, errlen, "%s: not a file name", path);
	if (strlen(slash + 1) >= baselen)
		return -ENAMETOOLONG;
	strcpy(base, slash + 1);
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash == path ? 1 : slash - path] = '\0';
	return ibp_rootpath_open(dir, O_RDONLY,
				 IBP_ROOTPATH_DIR | IBP_ROOTPATH_NOFOLLOW |
				     (owner == 0 ? IBP_ROOTPATH_ROOT : 0),
				 err, errlen);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* flock with a bound: a holder that never lets go costs us a record, not the step. */
static int lock_bounded(int fd, int64_t deadline)
{
	for (;;) {
		struct timespec ms10 = {0, 10 * 1000 * 1000};

		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return -EWOULDBLOCK;
		nanosleep(&ms10, NULL);
	}
}

static int check_file(int fd, uid_t owner, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return ibp_errf(-EINVAL, err, errlen, "%s: not a regular file", path);
	rc = ibp_rootpath_check_fd(fd, path, owner == 0 ? IBP_ROOTPATH_ROOT : 0, err, errlen);
	if (rc)
		return rc;
	if (st.st_nlink != 1)
		return ibp_errf(-EPERM, err, errlen, "%s: has %lu links, expected 1", path,
				(unsigned long)st.st_nlink);
	return 0;
}

/* Opens and locks the current file; -EAGAIN when it was rotated meanwhile. */
static int open_locked(int dirfd, const char *base, uid_t owner, const char *path, int flags,
		       int64_t deadline, int *out, char *err, size_t errlen)
{
	struct stat a, b;
	int fd, rc;

	fd = openat(dirfd, base, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | flags,
		    0640);
	if (fd < 0) {
		rc = -errno;
		if (rc == -EEXIST)
			return -EAGAIN;
		ibp_errf(-EINVAL, err, errlen, "%s: %s", path,
			 rc == -ELOOP ? "a symbolic link" : strerror(-rc));
		return rc;
	}
	rc = check_file(fd, owner, path, err, errlen);
	if (!rc) {
		rc = lock_bounded(fd, deadline);
		if (rc == -EWOULDBLOCK)
			ibp_errf(-EINVAL, err, errlen, "%s: locked by another writer for %d ms",
				 path, IBP_RESULTS_LOG_LOCK_MS);
	}
	if (!rc && (fstat(fd, &a) || fstatat(dirfd, base, &b, AT_SYMLINK_NOFOLLOW) ||
		    a.st_ino != b.st_ino || a.st_dev != b.st_dev))
		rc = -EAGAIN;
	if (rc) {
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

int ibp_results_log_append(const char *path, uint64_t max_bytes, uid_t owner,
			   const struct ibp_link_record *r, size_t n, char *err, size_t errlen)
{
	char base[NAME_MAX + 1], rotated[NAME_MAX + 3];
	char(*lines)[IBP_RESULTS_LOG_MAX_RECORD] = NULL;
	size_t *lens = NULL, total = 0;
	int64_t deadline = now_ms() + IBP_RESULTS_LOG_LOCK_MS;
	int dirfd, fd = -1, rc = 0;

	if (!n)
		return 0;
	lines = calloc(n, sizeof(*lines));
	lens = calloc(n, sizeof(*lens));
	if (!lines || !lens) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++) {
		int len = ibp_results_log_format(&r[i], lines[i], sizeof(lines[i]));

		if (len < 0) {
			rc = ibp_errf(-EINVAL, err, errlen, "record %zu: cannot be written (%s)", i,
				      strerror(-len));
			goto out_free;
		}
		lens[i] = (size_t)len;
		total += lens[i];
	}
	dirfd = open_safe_dir(path, owner, base, sizeof(base) - 2, err, errlen);
	if (dirfd < 0) {
		rc = dirfd;
		goto out_free;
	}
	snprintf(rotated, sizeof(rotated), "%s.1", base);
	for (int attempt = 0; attempt < 8; attempt++) {
		struct stat st;

		rc = open_locked(dirfd, base, owner, path, O_CREAT, deadline, &fd, err, errlen);
		if (rc == -EAGAIN)
			continue;
		if (rc)
			break;
		if (fstat(fd, &st)) {
			rc = -errno;
			break;
		}
		if (max_bytes && st.st_size > 0 && (uint64_t)st.st_size + total > max_bytes) {
			/* Rotate under the lock, then write into a fresh file. */
			if (renameat(dirfd, base, dirfd, rotated)) {
				rc = -errno;
				ibp_errf(-EINVAL, err, errlen, "%s: rotating to %s: %s", path,
					 rotated, strerror(-rc));
				break;
			}
			close(fd);
			fd = -1;
			rc = open_locked(dirfd, base, owner, path, O_CREAT | O_EXCL, deadline, &fd,
					 err, errlen);
			if (rc == -EAGAIN)
				continue; /* another writer created it first: start over */
			if (rc)
				break;
		}
		break;
	}
	if (!rc && fd < 0) {
		rc = -EAGAIN;
		ibp_errf(-EINVAL, err, errlen, "%s: rotated repeatedly under us", path);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		ssize_t w = write(fd, lines[i], lens[i]);

		if (w < 0)
			rc = -errno;
		else if ((size_t)w != lens[i])
			rc = -EIO;
		if (rc)
			ibp_errf(-EINVAL, err, errlen, "%s: write: %s", path, strerror(-rc));
	}
	if (fd >= 0)
		close(fd); /* drops the lock */
	close(dirfd);
out_free:
	free(lines);
	free(lens);
	return rc;
}

/* ---- reader ---- */

struct cursor {
	const char *p, *end;
};

static void skip_ws(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A JSON string into OUT (cut strings are refused, not truncated). */
static int parse_string(struct cursor *c, char *out, size_t outlen)
{
	size_t o = 0;

	if (c->p >= c->end || *c->p != '"')
		return -EINVAL;
	c->p++;
	while (c->p < c->end && *c->p != '"') {
		char ch = *c->p++;

		if ((unsigned char)ch < 0x20)
			return -EINVAL;
		if (ch == '\\') {
			if (c->p >= c->end)
				return -EINVAL;
			ch = *c->p++;
			switch (ch) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				ch = '\b';
				break;
			case 'f':
				ch = '\f';
				break;
			case 'n':
				ch = '\n';
				break;
			case 'r':
				ch = '\r';
				break;
			case 't':
				ch = '\t';
				break;
			case 'u': {
				int v = 0;

				if (c->end - c->p < 4)
					return -EINVAL;
				for (int k = 0; k < 4; k++) {
					int h = hexval(c->p[k]);

					if (h < 0)
						return -EINVAL;
					v = v * 16 + h;
				}
				c->p += 4;
				ch = (v > 0 && v < 0x80) ? (char)v : '?';
				break;
			}
			default:
				return -EINVAL;
			}
		}
		if (o + 1 >= outlen)
			return -EINVAL;
		out[o++] = ch;
	}
	if (c->p >= c->end)
		return -EINVAL;
	c->p++;
	out[o] = '\0';
	return 0;
}

enum vtype { V_STR, V_NUM, V_BOOL, V_NULL };

struct value {
	enum vtype type;
	char s[IBP_NODE_MAX > IBP_DEV_MAX ? IBP_NODE_MAX : IBP_DEV_MAX];
	double num;
	bool b;
};

static int parse_value(struct cursor *c, struct value *v)
{
	skip_ws(c);
	if (c->p >= c->end)
		return -EINVAL;
	if (*c->p == '"') {
		v->type = V_STR;
		return parse_string(c, v->s, sizeof(v->s));
	}
	if ((size_t)(c->end - c->p) >= 4 && !memcmp(c->p, "true", 4)) {
		v->type = V_BOOL;
		v->b = true;
		c->p += 4;
		return 0;
	}
	if ((size_t)(c->end - c->p) >= 5 && !memcmp(c->p, "false", 5)) {
		v->type = V_BOOL;
		v->b = false;
		c->p += 5;
		return 0;
	}
	if ((size_t)(c->end - c->p) >= 4 && !memcmp(c->p, "null", 4)) {
		v->type = V_NULL;
		c->p += 4;
		return 0;
	}
	if (*c->p == '-' || isdigit((unsigned char)*c->p)) {
		char num[40];
		size_t k = 0;
		char *end;

		while (c->p < c->end && k + 1 < sizeof(num) &&
		       (isdigit((unsigned char)*c->p) || strchr("+-.eE", *c->p)))
			num[k++] = *c->p++;
		num[k] = '\0';
		errno = 0;
		v->num = strtod(num, &end);
		if (*end || errno || !isfinite(v->num))
			return -EINVAL;
		v->type = V_NUM;
		return 0;
	}
	return -EINVAL; /* objects and arrays are not part of a record */
}

static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
			return false;
	return true;
}

static bool int_in(const struct value *v, double lo, double hi)
{
	return v->type == V_NUM && v->num >= lo && v->num <= hi && v->num == floor(v->num);
}

enum {
	HAVE_V = 1 << 0,
	HAVE_T = 1 << 1,
	HAVE_JOB = 1 << 2,
	HAVE_A = 1 << 3,
	HAVE_B = 1 << 4,
	HAVE_OK = 1 << 5,
	HAVE_STEP = 1 << 6,
	HAVE_WHY = 1 << 7,
	OK_TRUE = 1 << 8, /* the value of "ok" */
	REQUIRED = HAVE_V | HAVE_T | HAVE_JOB | HAVE_STEP | HAVE_A | HAVE_B | HAVE_OK | HAVE_WHY,
};

/* Node and device names: the characters of a host name, or empty. */
static int set_str(char *dst, size_t size, const struct value *v)
{
	if (v->type != V_STR || strlen(v->s) >= size || (v->s[0] && !name_ok(v->s)))
		return -EINVAL;
	strcpy(dst, v->s);
	return 0;
}

static int apply(struct ibp_link_record *r, const char *key, const struct value *v, unsigned *have)
{
	bool is_str = v->type == V_STR;
	if (!strcmp(key, "v")) {
		if (!int_in(v, 0, 1e6))
			return -EINVAL;
		*have |= HAVE_V;
		if ((int)v->num != IBP_RESULTS_LOG_VERSION)
			return -ERANGE;
	} else if (!strcmp(key, "t")) {
		if (!int_in(v, 0, 1e13))
			return -EINVAL;
		r->time = (int64_t)v->num;
		*have |= HAVE_T;
	} else if (!strcmp(key, "job") || !strcmp(key, "step") || !strcmp(key, "round")) {
		if (!int_in(v, 0, 4294967295.0))
			return -EINVAL;
		if (key[0] == 'j')
			r->job = (uint32_t)v->num, *have |= HAVE_JOB;
		else if (key[0] == 's')
			r->step = (uint32_t)v->num, *have |= HAVE_STEP;
		else
			r->round = (unsigned)v->num;
	} else if (!strcmp(key, "by")) {
		return set_str(r->by, sizeof(r->by), v);
	} else if (!strcmp(key, "a") || !strcmp(key, "b")) {
		if (!is_str || !name_ok(v->s) || strlen(v->s) >= IBP_NODE_MAX)
			return -EINVAL;
		strcpy(key[0] == 'a' ? r->a : r->b, v->s);
		*have |= key[0] == 'a' ? HAVE_A : HAVE_B;
	} else if (!strcmp(key, "ar") || !strcmp(key, "br")) {
		if (!int_in(v, -1, 65535))
			return -EINVAL;
		*(key[0] == 'a' ? &r->a_rail : &r->b_rail) = (int)v->num;
	} else if (!strcmp(key, "ad")) {
		return set_str(r->a_dev, sizeof(r->a_dev), v);
	} else if (!strcmp(key, "bd")) {
		return set_str(r->b_dev, sizeof(r->b_dev), v);
	} else if (!strcmp(key, "ap") || !strcmp(key, "bp")) {
		if (!int_in(v, 0, 255))
			return -EINVAL;
		*(key[0] == 'a' ? &r->a_port : &r->b_port) = (unsigned)v->num;
	} else if (!strcmp(key, "ok")) {
		if (v->type != V_BOOL)
			return -EINVAL;
		*have = (*have & ~(unsigned)OK_TRUE) | HAVE_OK | (v->b ? OK_TRUE : 0);
	} else if (!strcmp(key, "why")) {
		/* the vocabulary's names only (oob.h), as the writer writes them */
		if (!is_str || ibp_link_status_parse(v->s, strlen(v->s), &r->status) ||
		    !loggable(r->status))
			return -EINVAL;
		*have |= HAVE_WHY;
	} else if (!strcmp(key, "rtt_us") || !strcmp(key, "gbps")) {
		double x = -1;

		if (v->type == V_NUM && v->num >= 0 && v->num < 1e12)
			x = v->num;
		else if (v->type != V_NULL)
			return -EINVAL;
		*(key[0] == 'r' ? &r->rtt_us : &r->gbps) = x;
	}
	/* unknown keys: ignored */
	return 0;
}

int ibp_results_log_parse_line(const char *line, size_t len, struct ibp_link_record *r)
{
	struct cursor c = {line, line + len};
	unsigned have = 0;
	bool first = true;
	int rc;

	memset(r, 0, sizeof(*r));
	r->a_rail = r->b_rail = -1;
	r->rtt_us = r->gbps = -1;
	skip_ws(&c);
	if (c.p >= c.end || *c.p != '{')
		return -EINVAL;
	c.p++;
	for (;;) {
		char key[16];
		struct value v;

		skip_ws(&c);
		if (c.p < c.end && *c.p == '}' && first) {
			c.p++;
			break;
		}
		if (parse_string(&c, key, sizeof(key)))
			return -EINVAL;
		skip_ws(&c);
		if (c.p >= c.end || *c.p != ':')
			return -EINVAL;
		c.p++;
		if (parse_value(&c, &v))
			return -EINVAL;
		rc = apply(r, key, &v, &have);
		if (rc)
			return rc;
		first = false;
		skip_ws(&c);
		if (c.p < c.end && *c.p == ',') {
			c.p++;
			continue;
		}
		if (c.p < c.end && *c.p == '}') {
			c.p++;
			break;
		}
		return -EINVAL;
	}
	skip_ws(&c);
	if (c.p != c.end)
		return -EINVAL;
	if ((have & REQUIRED) != REQUIRED)
		return -EINVAL;
	if (!strcmp(r->a, r->b))
		return -EINVAL;
	/* "ok" says what "why" says, as the writer derives it */
	if (!(have & OK_TRUE) != (r->status != IBP_LINK_PASS))
		return -EINVAL;
	return 0;
}

/* Finds the last record start after the first byte (a good record after a cut one). */
static const char *last_start(const char *line, size_t len)
{
	static const char mark[] = "{\"v\":";

	for (size_t i = len; i-- > 1;)
		if (i + sizeof(mark) - 1 <= len && !memcmp(line + i, mark, sizeof(mark) - 1))
			return line + i;
	return NULL;
}

static int one_line(const char *line, size_t len, bool complete, ibp_results_log_fn fn, void *arg,
		    struct ibp_results_log_stats *st)
{
	struct ibp_link_record r;
	int rc;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (!len)
		return 0;
	st->lines++;
	if (!complete) {
		st->cut++;
		return 0;
	}
	rc = len < IBP_RESULTS_LOG_MAX_RECORD ? ibp_results_log_parse_line(line, len, &r) : -EINVAL;
	if (rc) {
		const char *s =
		    len < 64 * IBP_RESULTS_LOG_MAX_RECORD ? last_start(line, len) : NULL;

		if (s && (size_t)(line + len - s) < IBP_RESULTS_LOG_MAX_RECORD &&
		    !ibp_results_log_parse_line(s, (size_t)(line + len - s), &r)) {
			st->cut++; /* the part before it was cut */
		} else {
			if (rc == -ERANGE)
				st->other_version++;
			else if (s)
				st->cut++;
			else
				st->malformed++;
			return 0;
		}
	}
	st->records++;
	return fn ? fn(arg, &r) : 0;
}

int ibp_results_log_read_buf(const char *text, size_t len, ibp_results_log_fn fn, void *arg,
			     struct ibp_results_log_stats *stats)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;
		int rc = one_line(text + i, end - i, nl != NULL, fn, arg, stats);

		if (rc)
			return rc;
		i = end + 1;
	}
	return 0;
}

int ibp_results_log_read_file(const char *path, ibp_results_log_fn fn, void *arg,
			      struct ibp_results_log_stats *stats, char *err, size_t errlen)
{
	enum { CHUNK = 1 << 16, LINE_MAX_KEEP = 64 * IBP_RESULTS_LOG_MAX_RECORD };
	char *buf;
	size_t have = 0;
	bool skipping = false; /* inside a line too long to keep */
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		ibp_errf(-EINVAL, err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	buf = malloc(LINE_MAX_KEEP + CHUNK);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, buf + have, CHUNK);
		size_t start = 0;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			ibp_errf(-EINVAL, err, errlen, "%s: %s", path, strerror(-rc));
			break;
		}
		if (r == 0) {
			if (have && !skipping)
				rc = one_line(buf, have, false, fn, arg, stats);
			break;
		}
		have += (size_t)r;
		for (;;) {
			char *nl = memchr(buf + start, '\n', have - start);

			if (!nl)
				break;
			if (skipping) {
				skipping = false;
			} else {
				rc = one_line(buf + start, (size_t)(nl - buf) - start, true, fn,
					      arg, stats);
				if (rc)
					goto out;
			}
			start = (size_t)(nl - buf) + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have >= LINE_MAX_KEEP) {
			if (!skipping) {
				stats->lines++;
				stats->malformed++;
			}
			skipping = true;
			have = 0;
		}
	}
out:
	free(buf);
	close(fd);
	return rc;
}
