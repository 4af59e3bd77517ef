/* SPDX-License-Identifier: GPL-2.0-or-later */
/* slurmd.c: slurmd's pid file, its process and its memlock limit (slurmd.h). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ibprep/slurmd.h"
#include "ibprep/text.h"

static const char *skip_blank(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
		s++;
	return s;
}

int ibp_slurm_conf_get(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = key ? strlen(key) : 0;
	int found = -ENOENT;

	if (!text || !klen || !out || !len)
		return -EINVAL;
	out[0] = '\0';
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		const char *end = eol ? eol : line + strlen(line);
		const char *hash = memchr(line, '#', (size_t)(end - line));
		const char *s = skip_blank(line, hash ? hash : end);
		const char *stop = hash ? hash : end;

		line = eol ? eol + 1 : end;
		if ((size_t)(stop - s) <= klen || strncasecmp(s, key, klen) != 0)
			continue;
		s = skip_blank(s + klen, stop);
		if (s >= stop || *s != '=')
			continue;
		s = skip_blank(s + 1, stop);
		const char *v = s;
		while (s < stop && *s != ' ' && *s != '\t' && *s != '\r')
			s++;
		size_t vlen = (size_t)(s - v);
		if (vlen >= len) {
			found = -ENAMETOOLONG;
			out[0] = '\0';
			continue;
		}
		memcpy(out, v, vlen);
		out[vlen] = '\0';
		found = (int)vlen;
	}
	return found;
}

int ibp_slurm_expand_path(const char *pattern, const char *node, const char *host, char *out,
			  size_t len)
{
	size_t o = 0;

	if (!pattern || pattern[0] != '/' || !out || !len)
		return -EINVAL;
	for (const char *p = pattern; *p; p++) {
		const char *rep = NULL;
		char one[2] = {*p, '\0'};
		if (*p == '%') {
			p++;
			if (*p == 'n')
				rep = node;
			else if (*p == 'h')
				rep = host;
			else if (*p == '%')
				rep = "%";
			else
				return -EINVAL;
			/* a name that is empty or walks directories is no name */
			if (!rep || !*rep || strchr(rep, '/') || !strcmp(rep, "..") ||
			    !strcmp(rep, "."))
				return -EINVAL;
		} else {
			rep = one;
		}
		size_t rl = strlen(rep);
		if (o + rl >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, rep, rl);
		o += rl;
	}
	out[o] = '\0';
	return (int)o;
}

/* A decimal number of at most 20 digits; *END after it.  0 or -EINVAL/-ERANGE. */
static int parse_dec(const char *s, const char **end, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	if (p == s)
		return -EINVAL;
	*end = p;
	*v = x;
	return 0;
}

int ibp_proc_parse_memlock(const char *limits, uint64_t *kb)
{
	static const char name[] = "Max locked memory";

	if (!limits || !kb)
		return -EINVAL;
	for (const char *line = limits; *line;) {
		const char *eol = strchr(line, '\n');
		const char *next = eol ? eol + 1 : line + strlen(line);
		if (strncmp(line, name, sizeof(name) - 1) != 0 || line[sizeof(name) - 1] != ' ') {
			line = next;
			continue;
		}
		/* "Max locked memory  SOFT  HARD  bytes": the soft limit decides */
		const char *s = line + sizeof(name) - 1;
		while (*s == ' ')
			s++;
		uint64_t bytes;
		const char *e;
		if (!strncmp(s, "unlimited", 9)) {
			*kb = UINT64_MAX;
			e = s + 9;
		} else {
			int rc = parse_dec(s, &e, &bytes);
			if (rc)
				return -EINVAL;
			*kb = bytes / 1024;
		}
		if (*e != ' ')
			return -EINVAL;
		while (*e == ' ')
			e++;
		/* the hard limit and the unit must be there: a cut line is malformed */
		if (strncmp(e, "unlimited", 9) != 0 && !(*e >= '0' && *e <= '9'))
			return -EINVAL;
		if (!strstr(e, "bytes") || (eol && strstr(e, "bytes") > eol))
			return -EINVAL;
		return 0;
	}
	return -ENOENT;
}

/* The executable of PID is slurmd (after an upgrade the link reads "slurmd (deleted)"). */
static int check_exe(const struct ibp_sysfs *fs, long pid, char *why, size_t whylen)
{
	char exe[256], path[64];

	snprintf(path, sizeof(path), "proc/%ld/exe", pid);
	int rc = ibp_sysfs_link_name(fs, path, exe, sizeof(exe));
	if (rc < 0) {
		if (rc == -EACCES || rc == -EPERM) {
			ibp_format_cut(why, whylen,
				       "cannot read /proc/%ld/exe: %s (slurmd's limit is read as "
				       "root)",
				       pid, strerror(-rc));
			return -EACCES;
		}
		ibp_format_cut(why, whylen, "cannot read /proc/%ld/exe: %s", pid, strerror(-rc));
		return rc;
	}
	if (strcmp(exe, "slurmd") != 0 && strcmp(exe, "slurmd (deleted)") != 0) {
		ibp_format_cut(why, whylen, "process %ld is '%s', not slurmd", pid, exe);
		return -EPERM;
	}
	return 0;
}

int ibp_slurmd_find(const struct ibp_sysfs *fs, const char *pid_file, struct ibp_slurmd *out,
		    char *why, size_t whylen)
{
	char buf[4096], path[64];
	struct stat st;
	uint64_t pid;
	const char *e;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (!fs || !pid_file || pid_file[0] != '/' || !out)
		return -EINVAL;
	out->pid = -1;
	out->memlock_kb = UINT64_MAX;
	rc = ibp_sysfs_stat(fs, pid_file + 1, &st);
	if (rc) {
		ibp_format_cut(why, whylen, "%s: %s%s", pid_file, strerror(-rc),
			       rc == -ENOENT ? " (is slurmd running? SlurmdPidFile in slurm.conf)"
					     : "");
		return rc;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
		ibp_format_cut(why, whylen,
			       "%s is not trusted: owner uid %u, mode %04o (expected a regular "
			       "file owned by root, not writable by group or others)",
			       pid_file, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	rc = ibp_sysfs_read(fs, pid_file + 1, buf, 64);
	if (rc < 0) {
		ibp_format_cut(why, whylen, "%s: %s", pid_file, strerror(-rc));
		return rc == -EFBIG ? -EINVAL : rc;
	}
	rc = parse_dec(buf, &e, &pid);
	if (rc || *e || pid < 2 || pid > INT_MAX) {
		ibp_format_cut(why, whylen, "%s: '%s' is not a process id", pid_file, buf);
		return -EINVAL;
	}
	out->pid = (long)pid;
	snprintf(path, sizeof(path), "proc/%ld", out->pid);
	rc = ibp_sysfs_stat(fs, path, &st);
	if (rc) {
		ibp_format_cut(why, whylen, "%s names process %ld: %s%s", pid_file, out->pid,
			       strerror(-rc), rc == -ENOENT ? " (a stale pid file)" : "");
		return rc;
	}
	if (st.st_uid != 0) {
		ibp_format_cut(why, whylen, "%s names process %ld, which is uid %u's, not root's",
			       pid_file, out->pid, (unsigned)st.st_uid);
		return -EPERM;
	}
	rc = check_exe(fs, out->pid, why, whylen);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "proc/%ld/limits", out->pid);
	rc = ibp_sysfs_read(fs, path, buf, sizeof(buf));
	if (rc < 0) {
		ibp_format_cut(why, whylen, "/%s: %s", path, strerror(-rc));
		return rc == -EFBIG ? -EINVAL : rc;
	}
	rc = ibp_proc_parse_memlock(buf, &out->memlock_kb);
	if (rc) {
		ibp_format_cut(why, whylen, "/%s: no well-formed 'Max locked memory' line", path);
		return -EINVAL;
	}
	/* the pid was not reused by something else while we read */
	return check_exe(fs, out->pid, why, whylen);
}
