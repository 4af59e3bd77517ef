/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sysfs.c: the one reader of the system's files, confined to a root.
 *
 * Every path is resolved inside the root directory.  On kernels with
 * openat2(2) (5.6+) the kernel does it: RESOLVE_IN_ROOT makes ".." and
 * absolute symlinks stop at the root, RESOLVE_NO_MAGICLINKS refuses
 * /proc/self/fd style links.  Without openat2 (ENOSYS, or a seccomp filter
 * that says EPERM) the same semantics come from resolve_in_root(), which
 * walks the path one component at a time with readlinkat() and then opens
 * the canonical result one component at a time with O_NOFOLLOW, so a link
 * swapped in between cannot lead outside either.
 *
 * Reads never block (O_NONBLOCK; anything that is not a regular file is
 * refused before read()) and never truncate (-EFBIG).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "ibprep/sysfs.h"

/* Links followed while resolving one path, as the kernel's MAXSYMLINKS. */
#define RESOLVE_MAX_LINKS 40
/* Entries one directory listing may return (a GID table has 256). */
#define LIST_MAX_ENTRIES 65536

int ibp_sysfs_open(struct ibp_sysfs *fs, const char *root)
{
	fs->root_fd = -1;
	fs->no_openat2 = false;
	if (!root || !*root)
		return -EINVAL;
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fs->root_fd = fd;
	return 0;
}

void ibp_sysfs_close(struct ibp_sysfs *fs)
{
	if (fs && fs->root_fd >= 0) {
		close(fs->root_fd);
		fs->root_fd = -1;
	}
}

/* Drops the last component of the canonical path CANON (length *N). */
static void canon_pop(char *canon, size_t *n)
{
	while (*n > 0 && canon[*n - 1] != '/')
		(*n)--;
	if (*n > 0)
		(*n)--; /* the '/' before it */
	canon[*n] = '\0';
}

/*
 * Resolves PATH inside the root into the canonical root-relative path CANON
 * ("" is the root itself): "." dropped, ".." clamped at the root, every
 * symlink replaced by its target (absolute targets restart at the root).
 * FOLLOW_LAST says whether a link in the last component is followed.
 * A missing component is -ENOENT, too many links -ELOOP.
 */
static int resolve_in_root(const struct ibp_sysfs *fs, const char *path, bool follow_last,
			   char *canon, size_t canon_len)
{
	char rest[PATH_MAX], target[PATH_MAX];
	size_t n = 0;
	int links = 0;

	if (canon_len == 0)
		return -ENAMETOOLONG;
	if (strlen(path) >= sizeof(rest))
		return -ENAMETOOLONG;
	strcpy(rest, path);
	canon[0] = '\0';

	char *p = rest;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		char *end = strchr(p, '/');
		size_t clen = end ? (size_t)(end - p) : strlen(p);
		bool last = true;
		for (const char *q = p + clen; *q; q++)
			if (*q != '/') {
				last = false;
				break;
			}

		if (clen == 1 && p[0] == '.') {
			p += clen;
			continue;
		}
		if (clen == 2 && p[0] == '.' && p[1] == '.') {
			canon_pop(canon, &n);
			p += clen;
			continue;
		}
		if (n + (n ? 1 : 0) + clen + 1 > canon_len)
			return -ENAMETOOLONG;
		size_t before = n;
		if (n)
			canon[n++] = '/';
		memcpy(canon + n, p, clen);
		n += clen;
		canon[n] = '\0';
		p += clen;

		if (last && !follow_last)
			break;
		ssize_t tl = readlinkat(fs->root_fd, canon, target, sizeof(target));
		if (tl < 0) {
			if (errno == EINVAL)
				continue; /* not a link */
			return -errno;
		}
		if ((size_t)tl >= sizeof(target))
			return -ENAMETOOLONG;
		target[tl] = '\0';
		if (++links > RESOLVE_MAX_LINKS)
			return -ELOOP;

		/* Replace the link by its target: rest = target + "/" + p. */
		size_t plen = strlen(p);
		if ((size_t)tl + 1 + plen + 1 > sizeof(rest))
			return -ENAMETOOLONG;
		memmove(rest + tl + 1, p, plen + 1);
		memcpy(rest, target, (size_t)tl);
		rest[tl] = '/';
		p = rest;
		if (target[0] == '/') {
			n = 0;
			canon[0] = '\0';
		} else {
			n = before;
			canon[n] = '\0';
		}
	}
	return (int)n;
}

/*
 * Opens the canonical path CANON (no links in it) component by component
 * with O_NOFOLLOW: a link that appeared since it was resolved is -ELOOP.
 */
static int open_canonical(const struct ibp_sysfs *fs, const char *canon, int flags)
{
	char buf[PATH_MAX];
	int dfd = fs->root_fd;

	if (!*canon)
		return openat(fs->root_fd, ".", flags);
	if (strlen(canon) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, canon);
	char *save = NULL;
	char *comp = strtok_r(buf, "/", &save);
	while (comp) {
		char *next = strtok_r(NULL, "/", &save);
		int fd = next ? openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			      : openat(dfd, comp, flags | O_NOFOLLOW);
		int err = errno;
		if (dfd != fs->root_fd)
			close(dfd);
		if (fd < 0)
			return -err;
		dfd = fd;
		comp = next;
	}
	return dfd;
}

/* Opens PATH inside the root: an fd or -errno. */
static int open_in_root(const struct ibp_sysfs *fs, const char *path, int flags)
{
	if (!fs || fs->root_fd < 0)
		return -EBADF;
	if (!path)
		return -EINVAL;
	flags |= O_CLOEXEC;
#ifdef SYS_openat2
	if (!fs->no_openat2) {
		struct open_how how = {
		    .flags = (unsigned)flags,
		    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
		};
		const char *p = *path ? path : ".";
		for (int tries = 0; tries < 8; tries++) {
			long fd = syscall(SYS_openat2, fs->root_fd, p, &how, sizeof(how));
			if (fd >= 0)
				return (int)fd;
			/* EAGAIN: a rename somewhere in the system raced with a ".."
			 * step; retry, and past a few, resolve without the kernel. */
			if (errno != EAGAIN)
				break;
		}
		if (errno != ENOSYS && errno != EPERM && errno != EAGAIN)
			return -errno;
	}
#endif
	char canon[PATH_MAX];
	int r = resolve_in_root(fs, path, true, canon, sizeof(canon));
	if (r < 0)
		return r;
	return open_canonical(fs, canon, flags);
}

int ibp_sysfs_open_dir(struct ibp_sysfs *sub, const struct ibp_sysfs *fs, const char *path)
{
	sub->root_fd = -1;
	sub->no_openat2 = fs ? fs->no_openat2 : false;
	int fd = open_in_root(fs, path, O_PATH | O_DIRECTORY);
	if (fd < 0)
		return fd;
	sub->root_fd = fd;
	return 0;
}

int ibp_sysfs_read(const struct ibp_sysfs *fs, const char *path, char *buf, size_t len)
{
	if (!buf || len == 0 || len > INT_MAX)
		return -EINVAL;
	buf[0] = '\0';
	int fd = open_in_root(fs, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fd;

	/* A FIFO, socket or device node is never read: it could block or have
	 * side effects.  sysfs attributes are regular files. */
	struct stat st;
	int ret;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -ENXIO;
		goto out;
	}

	size_t n = 0;
	bool nl_past_end = false; /* the one newline we strip arrived after a full buffer */
	for (;;) {
		char extra = 0;
		/* Once the buffer is full, one more byte decides "fits" vs -EFBIG. */
		char *dst = n < len - 1 ? buf + n : &extra;
		size_t want = n < len - 1 ? len - 1 - n : 1;
		ssize_t r = read(fd, dst, want);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		if (dst == &extra) {
			if (extra == '\n' && !nl_past_end) {
				nl_past_end = true;
				continue;
			}
			ret = -EFBIG;
			goto out;
		}
		n += (size_t)r;
		/* A regular file reads short only at its end (sysfs hands over the whole
		 * attribute in the first read): skip the read that would return 0. */
		if ((size_t)r < want)
			break;
	}
	if (!nl_past_end && n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	ret = (int)n;
out:
	if (ret < 0)
		buf[0] = '\0';
	close(fd);
	return ret;
}

__attribute__((format(printf, 3, 0))) static int vformat_path(char *path, size_t len,
							      const char *fmt, va_list ap)
{
	int n = vsnprintf(path, len, fmt, ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int ibp_sysfs_readf(const struct ibp_sysfs *fs, char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	int r = vformat_path(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (r < 0) {
		if (buf && len)
			buf[0] = '\0';
		return r;
	}
	return ibp_sysfs_read(fs, path, buf, len);
}

/* Digits of S in BASE (10 or 16) up to an optional single '\n'. */
static int parse_digits(const char *s, unsigned base, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	bool range = false;

	for (; *p && *p != '\n'; p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			return -EINVAL;
		if (v > (UINT64_MAX - d) / base)
			range = true; /* keep scanning: junk after a huge number is -EINVAL */
		else
			v = v * base + d;
	}
	if (p == s)
		return -EINVAL;
	if (*p == '\n' && p[1] != '\0')
		return -EINVAL;
	if (range)
		return -ERANGE;
	*out = v;
	return 0;
}

int ibp_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !out)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return parse_digits(s + 2, 16, out);
	return parse_digits(s, 10, out);
}

int ibp_parse_s64(const char *s, int64_t *out)
{
	uint64_t v;
	if (!s || !out)
		return -EINVAL;
	bool neg = s[0] == '-';
	int r = ibp_parse_u64(neg ? s + 1 : s, &v);
	if (r < 0)
		return r;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > (uint64_t)INT64_MAX)
			return -ERANGE;
		*out = (int64_t)v;
	}
	return 0;
}

/* A sysfs number is short: 20 digits, "0x" + 16, a sign. */
#define NUM_BUF 64

/* Reads the short file named by FMT and AP into BUF (NUM_BUF bytes). */
__attribute__((format(printf, 3, 0))) static int
read_num_text(const struct ibp_sysfs *fs, char *buf, const char *fmt, va_list ap)
{
	char path[PATH_MAX];
	int r = vformat_path(path, sizeof(path), fmt, ap);

	return r < 0 ? r : ibp_sysfs_read(fs, path, buf, NUM_BUF);
}

int ibp_sysfs_read_u64(const struct ibp_sysfs *fs, uint64_t *out, const char *fmt, ...)
{
	char buf[NUM_BUF];
	va_list ap;

	va_start(ap, fmt);
	int r = read_num_text(fs, buf, fmt, ap);
	va_end(ap);
	return r < 0 ? r : ibp_parse_u64(buf, out);
}

int ibp_sysfs_read_s64(const struct ibp_sysfs *fs, int64_t *out, const char *fmt, ...)
{
	char buf[NUM_BUF];
	va_list ap;

	va_start(ap, fmt);
	int r = read_num_text(fs, buf, fmt, ap);
	va_end(ap);
	return r < 0 ? r : ibp_parse_s64(buf, out);
}

static int copy_out(const char *s, size_t slen, char *buf, size_t len)
{
	if (!buf || len == 0)
		return -EINVAL;
	if (slen >= len || slen > INT_MAX) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(buf, s, slen);
	buf[slen] = '\0';
	return (int)slen;
}

/*
 * PATH resolved by the kernel (openat2, as every read resolves it) and read
 * back through /proc/self/fd, relative to the root's own path read the same
 * way: four system calls, where resolve_in_root() takes one per component
 * (a PCI device's link, about twenty).  The length, -ENOENT or -ELOOP as the
 * walk would say, or -ENOSYS when the kernel's answer cannot be used (no
 * openat2 or /proc, a path /proc does not show under the root's): the walk.
 */
static int realpath_kernel(const struct ibp_sysfs *fs, const char *path, char *canon,
			   size_t canon_len)
{
#ifdef SYS_openat2
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char proc[64], root[PATH_MAX], got[PATH_MAX];
	ssize_t rn, gn;
	size_t skip;
	long fd;

	if (fs->no_openat2)
		return -ENOSYS;
	fd = syscall(SYS_openat2, fs->root_fd, *path ? path : ".", &how, sizeof(how));
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? -errno : -ENOSYS;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%ld", fd);
	gn = readlink(proc, got, sizeof(got) - 1);
	close((int)fd);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fs->root_fd);
	rn = readlink(proc, root, sizeof(root) - 1);
	if (gn <= 0 || rn <= 0 || (size_t)gn >= sizeof(got) - 1 || (size_t)rn >= sizeof(root) - 1)
		return -ENOSYS;
	got[gn] = '\0';
	root[rn] = '\0';
	/* "(unreachable)/...", "... (deleted)": not a path under the root */
	skip = rn == 1 ? 0 : (size_t)rn;
	if (got[0] != '/' || root[0] != '/' || strncmp(got, root, skip) != 0 ||
	    (got[skip] != '/' && got[skip] != '\0') || strstr(got, " (deleted)") ||
	    strstr(root, " (deleted)"))
		return -ENOSYS;
	while (got[skip] == '/')
		skip++;
	return copy_out(got + skip, strlen(got + skip), canon, canon_len);
#else
	(void)fs;
	(void)path;
	(void)canon;
	(void)canon_len;
	return -ENOSYS;
#endif
}

int ibp_sysfs_realpath(const struct ibp_sysfs *fs, const char *path, char *buf, size_t len)
{
	char canon[PATH_MAX];
	if (!fs || fs->root_fd < 0)
		return -EBADF;
	if (!path)
		return -EINVAL;
	int r = realpath_kernel(fs, path, canon, sizeof(canon));
	if (r != -ENOSYS)
		return r < 0 ? r : copy_out(canon, (size_t)r, buf, len);
	r = resolve_in_root(fs, path, true, canon, sizeof(canon));
	if (r < 0)
		return r;
	/* Resolution is lexical up to the last component: make sure it exists. */
	if (r > 0 && faccessat(fs->root_fd, canon, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return copy_out(canon, (size_t)r, buf, len);
}

int ibp_sysfs_link_name(const struct ibp_sysfs *fs, const char *path, char *buf, size_t len)
{
	char canon[PATH_MAX], target[PATH_MAX];
	if (!fs || fs->root_fd < 0)
		return -EBADF;
	if (!path)
		return -EINVAL;
	/* The link itself, not what it points to: resolve all but the last. */
	int r = resolve_in_root(fs, path, false, canon, sizeof(canon));
	if (r < 0)
		return r;
	ssize_t tl = readlinkat(fs->root_fd, r ? canon : ".", target, sizeof(target));
	if (tl < 0)
		return -errno;
	if ((size_t)tl >= sizeof(target))
		return -ENAMETOOLONG;
	while (tl > 1 && target[tl - 1] == '/')
		tl--;
	target[tl] = '\0';
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		/* "../.." names nothing by itself: use where it leads. */
		r = ibp_sysfs_realpath(fs, path, target, sizeof(target));
		if (r < 0)
			return r;
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
	}
	return copy_out(base, strlen(base), buf, len);
}

int ibp_sysfs_stat(const struct ibp_sysfs *fs, const char *path, struct stat *st)
{
	if (!st)
		return -EINVAL;
	int fd = open_in_root(fs, path, O_PATH);
	if (fd < 0)
		return fd;
	int rc = fstat(fd, st) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int ibp_natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *a0 = a, *b0 = b;
			while (*a0 == '0')
				a0++;
			while (*b0 == '0')
				b0++;
			const char *ae = a0, *be = b0;
			while (isdigit((unsigned char)*ae))
				ae++;
			while (isdigit((unsigned char)*be))
				be++;
			/* Longer digit run (without leading zeros) is the larger number. */
			if (ae - a0 != be - b0)
				return ae - a0 < be - b0 ? -1 : 1;
			int c = strncmp(a0, b0, (size_t)(ae - a0));
			if (c)
				return c < 0 ? -1 : 1;
			/* Same value: fewer leading zeros first ("1" < "01"). */
			if (a0 - a != b0 - b)
				return a0 - a < b0 - b ? -1 : 1;
			a = ae;
			b = be;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	if (*a == *b)
		return 0;
	return *a ? 1 : -1;
}

static int names_cmp(const void *x, const void *y)
{
	return ibp_natural_cmp(*(char *const *)x, *(char *const *)y);
}

void ibp_sysfs_names_free(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

int ibp_sysfs_list(const struct ibp_sysfs *fs, const char *path, char ***names)
{
	if (!names)
		return -EINVAL;
	*names = NULL;
	int fd = open_in_root(fs, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		close(fd);
		return -err;
	}

	char **v = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n + 1 >= LIST_MAX_ENTRIES) {
			ret = -E2BIG;
			goto fail;
		}
		if (n + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				ret = -ENOMEM;
				goto fail;
			}
			v = nv;
			cap = ncap;
		}
		v[n] = strdup(e->d_name);
		if (!v[n]) {
			ret = -ENOMEM;
			goto fail;
		}
		n++;
		v[n] = NULL;
		errno = 0;
	}
	if (errno) {
		ret = -errno;
		goto fail;
	}
	closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	qsort(v, n, sizeof(*v), names_cmp);
	*names = v;
	return (int)n;

fail:
	closedir(d);
	if (v) {
		v[n] = NULL;
		ibp_sysfs_names_free(v);
	}
	return ret;
}
