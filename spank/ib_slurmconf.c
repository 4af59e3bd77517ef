/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_slurmconf.c: what the plugin takes from slurm.conf itself: munged's
 * socket (AuthInfo=socket=PATH), so a site with a non-default socket does
 * not configure it twice.  Read as root in init_post_opt, from slurmstepd's
 * own slurm.conf (never a path from the job's environment), parsed
 * defensively: a size cap, a line cap, only one key looked at, a value
 * that must be an absolute printable path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank_ib.h"

#ifndef SPANK_IB_SLURM_CONF
#define SPANK_IB_SLURM_CONF "/etc/slurm/slurm.conf"
#endif

#define SLURM_CONF_MAX (4 * 1024 * 1024)

const char *spank_ib_slurm_conf_path(void)
{
	/* slurmstepd's environment comes from slurmd, not from the job. */
	const char *v = getenv("SLURM_CONF");

	return v && v[0] == '/' ? v : SPANK_IB_SLURM_CONF;
}

/* "socket=/run/munge/munge.socket.2,ttl=60": the socket's path. */
static int socket_option(const char *v, size_t n, char *out, size_t len)
{
	while (n) {
		size_t k = 0;

		while (k < n && v[k] != ',')
			k++;
		if (k > 7 && !strncasecmp(v, "socket=", 7)) {
			size_t plen = k - 7;
			const char *p = v + 7;

			if (plen >= len || p[0] != '/')
				return -EINVAL;
			for (size_t i = 0; i < plen; i++)
				if (p[i] <= 0x20 || p[i] >= 0x7f)
					return -EINVAL;
			memcpy(out, p, plen);
			out[plen] = '\0';
			return 0;
		}
		v += k < n ? k + 1 : k;
		n -= k < n ? k + 1 : k;
	}
	return -ENOENT;
}

int spank_ib_authinfo_parse(const char *text, size_t len, char *out, size_t outlen)
{
	const char *end = text + len;

	for (const char *l = text; l < end;) {
		const char *e = memchr(l, '\n', (size_t)(end - l));
		const char *p = l, *v;
		size_t n;

		if (!e)
			e = end;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		/* Key names are case-insensitive in slurm.conf. */
		if ((size_t)(e - p) > 9 && !strncasecmp(p, "AuthInfo", 8)) {
			p += 8;
			while (p < e && (*p == ' ' || *p == '\t'))
				p++;
			if (p < e && *p == '=') {
				p++;
				while (p < e && (*p == ' ' || *p == '\t'))
					p++;
				v = p;
				if (p < e && *p == '"')
					v = ++p;
				while (p < e && *p != ' ' && *p != '\t' && *p != '#' && *p != '"' &&
				       *p != '\r')
					p++;
				n = (size_t)(p - v);
				/* The first AuthInfo line decides. */
				return socket_option(v, n, out, outlen);
			}
		}
		l = e + 1;
	}
	return -ENOENT;
}

int spank_ib_authinfo_socket(const char *conf, char *out, size_t len)
{
	struct stat st;
	char *text;
	ssize_t r;
	size_t got = 0;
	int fd, rc;

	fd = open(conf, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	/* Its owner (root or SlurmUser) may write it, nobody else. */
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return -EPERM;
	}
	if (st.st_size > SLURM_CONF_MAX) {
		close(fd);
		return -EFBIG;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, text + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	rc = spank_ib_authinfo_parse(text, got, out, len);
	free(text);
	return rc;
}
