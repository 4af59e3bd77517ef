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
#include <pthread.h>
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

/* A finding code's characters (finding.h's snake_case), and room for it. */
static bool code_chars(const char *s, size_t n)
{
	if (!n || n >= IBP_CODE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* A port event's code: a finding code that is not one of the link outcomes' names. */
static bool event_ok(const char *s, size_t n)
{
	enum ibp_link_status st;

	return code_chars(s, n) && ibp_link_status_parse(s, n, &st) != 0;
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

	bool ev = r->event[0] != '\0';

	if (!r->a[0] || !r->b[0])
		return -EINVAL;
	if (ev ? strcmp(r->a, r->b) != 0 || !event_ok(r->event, strnlen(r->event, IBP_CODE_MAX))
	       : !loggable(r->status))
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
	ibp_json_kv_bool(&j, "ok", !ev && r->status == IBP_LINK_PASS);
	ibp_json_kv_string(&j, "why", ev ? r->event : ibp_link_status_name(r->status));
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

/* What a byte can be in a record, looked up once per byte. */
enum {
	C_NAME = 1,  /* in a node's or a device's name: a host name's characters */
	C_DIGIT = 2, /* 0-9 */
	C_NUM = 4,   /* in a number: 0-9 + - . e E */
	C_STOP = 8,  /* ends a string without escapes: '"', '\\', a control character */
};

static const unsigned char cls[256] = {
    [0 ... 0x1f] = C_STOP,  ['"'] = C_STOP,
    ['\\'] = C_STOP,        ['a' ... 'd'] = C_NAME,
    ['e'] = C_NAME | C_NUM, ['f' ... 'z'] = C_NAME,
    ['A' ... 'D'] = C_NAME, ['E'] = C_NAME | C_NUM,
    ['F' ... 'Z'] = C_NAME, ['0' ... '9'] = C_NAME | C_DIGIT | C_NUM,
    ['-'] = C_NAME | C_NUM, ['.'] = C_NAME | C_NUM,
    ['_'] = C_NAME,         ['+'] = C_NUM,
};

static bool is(char ch, unsigned what)
{
	return cls[(unsigned char)ch] & what;
}

static void skip_ws_loop(struct cursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
}

/* Records have no white space: one test in the usual case. */
static inline void skip_ws(struct cursor *c)
{
	if (c->p < c->end && (unsigned char)*c->p <= ' ')
		skip_ws_loop(c);
}

/* Takes CH, the next character after any white space; false when it is not. */
static inline bool eat(struct cursor *c, char ch)
{
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	skip_ws_loop(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
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

/* The rest of a string from C (after its quote), with escapes, decoded into BUF. */
static int parse_escaped(struct cursor *c, char *buf, size_t buflen, const char **s, size_t *n)
{
	size_t o = 0;

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
		if (o + 1 >= buflen)
			return -EINVAL;
		buf[o++] = ch;
	}
	if (c->p >= c->end)
		return -EINVAL;
	c->p++;
	*s = buf;
	*n = o;
	return 0;
}

/*
 * A JSON string: its bytes in *S (N of them, fewer than BUFLEN: longer
 * strings are refused, never cut).  The usual string has no escape: *S
 * points into the line; an escaped one is decoded into BUF.
 */
static inline int parse_string(struct cursor *c, char *buf, size_t buflen, const char **s,
			       size_t *n)
{
	const char *q;

	if (c->p >= c->end || *c->p != '"')
		return -EINVAL;
	c->p++;
	for (q = c->p; q < c->end && !is(*q, C_STOP); q++)
		;
	if (q < c->end && *q == '"') {
		if ((size_t)(q - c->p) >= buflen)
			return -EINVAL;
		*s = c->p;
		*n = (size_t)(q - c->p);
		c->p = q + 1;
		return 0;
	}
	return parse_escaped(c, buf, buflen, s, n);
}

/*
 * A number: the characters [0-9+-.eE] from a '-' or a digit, all of which
 * strtod must take.  The usual one (an integer, or a decimal of at most
 * 15 significant digits: the results log's) is read here, exactly as
 * strtod reads it (a 15-digit mantissa and a power of ten up to 10^15 are
 * exact doubles, their quotient rounded once); anything else by strtod.
 */
static int parse_number(struct cursor *c, double *out)
{
	static const double pow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
				       1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
	const char *p = c->p;
	uint64_t m = 0;
	int digits = 0, frac = 0;
	bool neg = p < c->end && *p == '-';
	char num[40], *end;
	size_t k = 0;

	p += neg;
	while (p < c->end && is(*p, C_DIGIT) && digits < 16)
		m = m * 10 + (uint64_t)(*p++ - '0'), digits++;
	if (digits && p < c->end && *p == '.') {
		p++;
		while (p < c->end && is(*p, C_DIGIT) && digits < 16)
			m = m * 10 + (uint64_t)(*p++ - '0'), digits++, frac++;
	}
	if (digits && digits <= 15 && (p >= c->end || !is(*p, C_NUM))) {
		*out = (double)m / pow10[frac];
		if (neg)
			*out = -*out;
		c->p = p;
		return 0;
	}
	while (c->p < c->end && k + 1 < sizeof(num) && is(*c->p, C_NUM))
		num[k++] = *c->p++;
	num[k] = '\0';
	errno = 0;
	*out = strtod(num, &end);
	if (*end || errno || !isfinite(*out))
		return -EINVAL;
	return 0;
}

enum vtype { V_STR, V_NUM, V_BOOL, V_NULL };

struct value {
	enum vtype type;
	const char *s; /* a string's N bytes, in the line or in BUF */
	size_t n;
	char buf[IBP_NODE_MAX > IBP_DEV_MAX ? IBP_NODE_MAX : IBP_DEV_MAX];
	double num;
	bool b;
};

static int parse_value(struct cursor *c, struct value *v)
{
	v->num = 0; /* read only for V_NUM; never left undefined */
	skip_ws(c);
	if (c->p >= c->end)
		return -EINVAL;
	if (*c->p == '"') {
		v->type = V_STR;
		return parse_string(c, v->buf, sizeof(v->buf), &v->s, &v->n);
	}
	if (*c->p == '-' || is(*c->p, C_DIGIT)) {
		v->type = V_NUM;
		return parse_number(c, &v->num);
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
	return -EINVAL; /* objects and arrays are not part of a record */
}

/* The characters of a host name: S (N bytes) not empty. */
static bool name_ok(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is(s[i], C_NAME))
			return false;
	return true;
}

/* A whole number in [LO, HI] (at most 1e13 apart from 0: exact as an int64). */
static bool int_in(const struct value *v, double lo, double hi)
{
	return v->type == V_NUM && v->num >= lo && v->num <= hi &&
	       v->num == (double)(int64_t)v->num;
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
	if (v->type != V_STR || v->n >= size || (v->n && !name_ok(v->s, v->n)))
		return -EINVAL;
	memcpy(dst, v->s, v->n);
	dst[v->n] = '\0';
	return 0;
}

/* The keys of a record; any other is ignored (later versions may add some). */
enum key {
	K_OTHER,
	K_V,
	K_T,
	K_JOB,
	K_STEP,
	K_ROUND,
	K_BY,
	K_A,
	K_B,
	K_AR,
	K_BR,
	K_AD,
	K_BD,
	K_AP,
	K_BP,
	K_OK,
	K_WHY,
	K_RTT,
	K_GBPS,
};

/* K (N bytes): which key, by its length and letters. */
static enum key key_of(const char *k, size_t n)
{
	switch (n) {
	case 1:
		return k[0] == 'v'   ? K_V
		       : k[0] == 't' ? K_T
		       : k[0] == 'a' ? K_A
		       : k[0] == 'b' ? K_B
				     : K_OTHER;
	case 2:
		if (k[0] == 'a' || k[0] == 'b') {
			bool a = k[0] == 'a';

			if (k[1] == 'r')
				return a ? K_AR : K_BR;
			if (k[1] == 'd')
				return a ? K_AD : K_BD;
			if (k[1] == 'p')
				return a ? K_AP : K_BP;
			if (k[1] == 'y' && !a)
				return K_BY;
			return K_OTHER;
		}
		return k[0] == 'o' && k[1] == 'k' ? K_OK : K_OTHER;
	case 3:
		return !memcmp(k, "job", 3) ? K_JOB : !memcmp(k, "why", 3) ? K_WHY : K_OTHER;
	case 4:
		return !memcmp(k, "step", 4) ? K_STEP : !memcmp(k, "gbps", 4) ? K_GBPS : K_OTHER;
	case 5:
		return !memcmp(k, "round", 5) ? K_ROUND : K_OTHER;
	case 6:
		return !memcmp(k, "rtt_us", 6) ? K_RTT : K_OTHER;
	default:
		return K_OTHER;
	}
}

static int apply(struct ibp_link_record *r, enum key key, const struct value *v, unsigned *have)
{
	switch (key) {
	case K_V:
		if (!int_in(v, 0, 1e6))
			return -EINVAL;
		*have |= HAVE_V;
		if ((int)v->num != IBP_RESULTS_LOG_VERSION)
			return -ERANGE;
		return 0;
	case K_T:
		if (!int_in(v, 0, 1e13))
			return -EINVAL;
		r->time = (int64_t)v->num;
		*have |= HAVE_T;
		return 0;
	case K_JOB:
	case K_STEP:
	case K_ROUND:
		if (!int_in(v, 0, 4294967295.0))
			return -EINVAL;
		if (key == K_JOB)
			r->job = (uint32_t)v->num, *have |= HAVE_JOB;
		else if (key == K_STEP)
			r->step = (uint32_t)v->num, *have |= HAVE_STEP;
		else
			r->round = (unsigned)v->num;
		return 0;
	case K_BY:
		return set_str(r->by, sizeof(r->by), v);
	case K_A:
	case K_B:
		if (v->type != V_STR || v->n >= IBP_NODE_MAX || !name_ok(v->s, v->n))
			return -EINVAL;
		memcpy(key == K_A ? r->a : r->b, v->s, v->n);
		(key == K_A ? r->a : r->b)[v->n] = '\0';
		*have |= key == K_A ? HAVE_A : HAVE_B;
		return 0;
	case K_AR:
	case K_BR:
		if (!int_in(v, -1, 65535))
			return -EINVAL;
		*(key == K_AR ? &r->a_rail : &r->b_rail) = (int)v->num;
		return 0;
	case K_AD:
		return set_str(r->a_dev, sizeof(r->a_dev), v);
	case K_BD:
		return set_str(r->b_dev, sizeof(r->b_dev), v);
	case K_AP:
	case K_BP:
		if (!int_in(v, 0, 255))
			return -EINVAL;
		*(key == K_AP ? &r->a_port : &r->b_port) = (unsigned)v->num;
		return 0;
	case K_OK:
		if (v->type != V_BOOL)
			return -EINVAL;
		*have = (*have & ~(unsigned)OK_TRUE) | HAVE_OK | (v->b ? OK_TRUE : 0);
		return 0;
	case K_WHY:
		/* the vocabulary's names (oob.h), or a port event's code, as the writer writes them */
		if (v->type != V_STR)
			return -EINVAL;
		r->event[0] = '\0';
		r->status = IBP_LINK_UNTESTED;
		if (!ibp_link_status_parse(v->s, v->n, &r->status)) {
			if (!loggable(r->status))
				return -EINVAL;
		} else if (code_chars(v->s, v->n)) {
			memcpy(r->event, v->s, v->n);
			r->event[v->n] = '\0';
		} else {
			return -EINVAL;
		}
		*have |= HAVE_WHY;
		return 0;
	case K_RTT:
	case K_GBPS: {
		double x = -1;

		if (v->type == V_NUM && v->num >= 0 && v->num < 1e12)
			x = v->num;
		else if (v->type != V_NULL)
			return -EINVAL;
		*(key == K_RTT ? &r->rtt_us : &r->gbps) = x;
		return 0;
	}
	default:
		return 0; /* unknown keys: ignored */
	}
}

int ibp_results_log_parse_line(const char *line, size_t len, struct ibp_link_record *r)
{
	struct cursor c = {line, line + len};
	unsigned have = 0;
	bool first = true;
	int rc;

	/* every field, without clearing the names' bytes past their end */
	r->time = 0;
	r->job = r->step = 0;
	r->round = 0;
	r->by[0] = r->a[0] = r->b[0] = r->a_dev[0] = r->b_dev[0] = '\0';
	r->a_rail = r->b_rail = -1;
	r->a_port = r->b_port = 0;
	r->status = IBP_LINK_UNTESTED;
	r->event[0] = '\0';
	r->rtt_us = r->gbps = -1;
	if (!eat(&c, '{'))
		return -EINVAL;
	for (;;) {
		char keybuf[16];
		const char *key;
		size_t keylen;
		struct value v;

		skip_ws(&c);
		if (first && eat(&c, '}'))
			break;
		if (parse_string(&c, keybuf, sizeof(keybuf), &key, &keylen) || !eat(&c, ':') ||
		    parse_value(&c, &v))
			return -EINVAL;
		rc = apply(r, key_of(key, keylen), &v, &have);
		if (rc)
			return rc;
		first = false;
		if (eat(&c, ','))
			continue;
		if (eat(&c, '}'))
			break;
		return -EINVAL;
	}
	skip_ws(&c);
	if (c.p != c.end)
		return -EINVAL;
	if ((have & REQUIRED) != REQUIRED)
		return -EINVAL;
	/* a port event: this node on both ends, never "ok" */
	if (r->event[0])
		return strcmp(r->a, r->b) != 0 || (have & OK_TRUE) ? -EINVAL : 0;
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
	enum { CHUNK = 1 << 20, LINE_MAX_KEEP = 64 * IBP_RESULTS_LOG_MAX_RECORD };
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

/* ---- several files, parsed ahead by threads ---- */

#define AHEAD 4096 /* records (about 2.5 MB) a parsing thread may hold ahead of the caller */

/* One parsing thread's records, handed to the caller in order; END marks a file's end. */
struct ahead {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* any change of HEAD, TAIL or STOP */
	struct ahead_item {
		struct ibp_link_record r;
		bool end;
	} * ring;
	size_t head; /* under MU: items the thread published (written outside the lock, below it) */
	size_t tail; /* under MU: items the caller has taken */
	size_t mine; /* the thread's: items written, published as HEAD */
	size_t
	    room;  /* the thread's: it may write while MINE < ROOM (TAIL + AHEAD when it looked) */
	bool stop; /* under MU: the caller gave up */
};

struct file_done {
	struct ibp_results_log_stats st;
	int rc;
	char err[256];
};

struct reader {
	const char *const *paths;
	size_t n;
	unsigned threads;
	struct ahead *ahead;
	struct file_done *done;
};

/*
 * The thread publishes what it wrote and learns how far it may write; it
 * waits while the ring is full (WAIT).  -ECANCELED once the caller stopped.
 */
static int ahead_publish(struct ahead *a, bool wait)
{
	int rc = 0;

	pthread_mutex_lock(&a->mu);
	a->head = a->mine;
	pthread_cond_broadcast(&a->cv);
	while (!a->stop && wait && a->mine - a->tail >= AHEAD)
		pthread_cond_wait(&a->cv, &a->mu);
	a->room = a->tail + AHEAD;
	if (a->stop)
		rc = -ECANCELED;
	pthread_mutex_unlock(&a->mu);
	return rc;
}

/* Room for one more item: publishes every 64 items, and waits when the ring is full. */
static int ahead_room(struct ahead *a)
{
	if (a->mine < a->room && a->mine % 64)
		return 0;
	return ahead_publish(a, a->mine >= a->room);
}

static int ahead_push(void *arg, const struct ibp_link_record *r)
{
	struct ahead *a = arg;
	struct ahead_item *it;
	int rc = ahead_room(a);

	if (rc)
		return rc;
	it = &a->ring[a->mine % AHEAD];
	it->r = *r;
	it->end = false;
	a->mine++;
	return 0;
}

struct worker {
	struct reader *rd;
	unsigned index;
};

/* Files INDEX, INDEX + THREADS ... into this thread's ring, each followed by its END. */
static void *reader_thread(void *arg)
{
	struct worker *w = arg;
	struct reader *rd = w->rd;
	struct ahead *a = &rd->ahead[w->index];

	for (size_t f = w->index; f < rd->n; f += rd->threads) {
		struct file_done *d = &rd->done[f];

		memset(&d->st, 0, sizeof(d->st));
		d->rc = ibp_results_log_read_file(rd->paths[f], ahead_push, a, &d->st, d->err,
						  sizeof(d->err));
		if (d->rc == -ECANCELED)
			break;
		/* the END item, published at once with the file's outcome */
		if (ahead_room(a))
			break;
		a->ring[a->mine % AHEAD].end = true;
		a->mine++;
		if (ahead_publish(a, false) || d->rc)
			break;
	}
	return NULL;
}

static void stats_add(struct ibp_results_log_stats *to, const struct ibp_results_log_stats *st)
{
	to->lines += st->lines;
	to->records += st->records;
	to->cut += st->cut;
	to->malformed += st->malformed;
	to->other_version += st->other_version;
}

/*
 * The caller's side: file F's records from its thread's ring, in order, to
 * FN; *END once the file's end was taken (then its outcome may be read).
 */
static int take_file(struct reader *rd, size_t f, ibp_results_log_fn fn, void *arg, bool *done)
{
	struct ahead *a = &rd->ahead[f % rd->threads];

	for (;;) {
		size_t head, tail;
		bool end = false;
		int rc = 0;

		pthread_mutex_lock(&a->mu);
		while (a->head == a->tail)
			pthread_cond_wait(&a->cv, &a->mu);
		head = a->head;
		tail = a->tail;
		pthread_mutex_unlock(&a->mu);
		while (tail < head && !rc && !end) {
			const struct ahead_item *it = &a->ring[tail % AHEAD];

			tail++;
			end = it->end; /* this file is done: the next one's items stay */
			if (!end && fn)
				rc = fn(arg, &it->r);
		}
		pthread_mutex_lock(&a->mu);
		a->tail = tail;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		*done = end;
		if (rc || end)
			return rc;
	}
}

int ibp_results_log_read_files(const char *const *paths, size_t n, unsigned threads,
			       ibp_results_log_fn fn, void *arg,
			       struct ibp_results_log_stats *stats, char *err, size_t errlen)
{
	struct reader rd = {.paths = paths, .n = n};
	struct worker *w = NULL;
	pthread_t *tid = NULL;
	unsigned started = 0;
	bool end;
	int rc = 0;

	if (threads > n)
		threads = (unsigned)n;
	if (threads <= 1) {
		for (size_t f = 0; f < n && !rc; f++)
			rc = ibp_results_log_read_file(paths[f], fn, arg, stats, err, errlen);
		return rc;
	}
	rd.threads = threads;
	rd.ahead = calloc(threads, sizeof(*rd.ahead));
	rd.done = calloc(n, sizeof(*rd.done));
	w = calloc(threads, sizeof(*w));
	tid = calloc(threads, sizeof(*tid));
	if (!rd.ahead || !rd.done || !w || !tid) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < threads; i++) {
		rd.ahead[i].ring = malloc(AHEAD * sizeof(*rd.ahead[i].ring));
		if (!rd.ahead[i].ring) {
			rc = -ENOMEM;
			goto out;
		}
		pthread_mutex_init(&rd.ahead[i].mu, NULL);
		pthread_cond_init(&rd.ahead[i].cv, NULL);
		rd.ahead[i].room = AHEAD;
	}
	for (; started < threads; started++) {
		w[started] = (struct worker){&rd, started};
		if (pthread_create(&tid[started], NULL, reader_thread, &w[started])) {
			rc = -EAGAIN;
			break;
		}
	}
	for (size_t f = 0; !rc && f < n; f++) {
		if (started < threads && f % threads >= started) {
			/* a thread that could not start: this file by the caller itself */
			rc = ibp_results_log_read_file(paths[f], fn, arg, stats, err, errlen);
			continue;
		}
		rc = take_file(&rd, f, fn, arg, &end);
		if (!end)
			break; /* FN stopped it inside the file */
		stats_add(stats, &rd.done[f].st);
		if (!rc && rd.done[f].rc) {
			rc = rd.done[f].rc;
			if (err && errlen)
				snprintf(err, errlen, "%s", rd.done[f].err);
		}
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_mutex_lock(&rd.ahead[i].mu);
		rd.ahead[i].stop = true;
		pthread_cond_broadcast(&rd.ahead[i].cv);
		pthread_mutex_unlock(&rd.ahead[i].mu);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
out:
	for (unsigned i = 0; rd.ahead && i < threads; i++) {
		if (!rd.ahead[i].ring)
			continue;
		free(rd.ahead[i].ring);
		pthread_mutex_destroy(&rd.ahead[i].mu);
		pthread_cond_destroy(&rd.ahead[i].cv);
	}
	free(rd.ahead);
	free(rd.done);
	free(w);
	free(tid);
	return rc;
}
