/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_ports.c: the test's port range against the node's sysctls
 * (rdmatest_ports.h says why each rule exists).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibprep/oob.h"
#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_ports.h"

/* Kernels before 4.11 have no ip_unprivileged_port_start: 1024, fixed. */
#define UNPRIV_FIXED 1024

static int parse_port(const char *s, const char **end, unsigned *out)
{
	unsigned v = 0;
	int digits = 0;

	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (unsigned)(*s - '0');
		if (v > 65535 || ++digits > 5)
			return -EINVAL;
		s++;
	}
	if (!digits)
		return -EINVAL;
	*out = v;
	*end = s;
	return 0;
}

int ibp_port_parse_local_range(const char *s, unsigned *lo, unsigned *hi)
{
	const char *p = s;
	unsigned a, b;

	if (!s || parse_port(p, &p, &a))
		return -EINVAL;
	if (*p != ' ' && *p != '\t')
		return -EINVAL;
	while (*p == ' ' || *p == '\t')
		p++;
	if (parse_port(p, &p, &b))
		return -EINVAL;
	if (*p == '\n')
		p++;
	if (*p || a > b)
		return -EINVAL;
	*lo = a;
	*hi = b;
	return 0;
}

int ibp_port_sysctl_read(const struct ibp_sysfs *fs, struct ibp_port_sysctl *out)
{
	char buf[64];
	uint64_t v;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = ibp_sysfs_read(fs, IBP_SYSCTL_UNPRIV_START, buf, sizeof(buf));
	if (rc >= 0) {
		/* The kernel accepts 0..65535 here. */
		if (ibp_parse_u64(buf, &v) || v > 65535)
			return -EINVAL;
		out->have_unpriv = true;
		out->unpriv_start = (unsigned)v;
	} else if (rc != -ENOENT) {
		return rc;
	}
	rc = ibp_sysfs_read(fs, IBP_SYSCTL_LOCAL_RANGE, buf, sizeof(buf));
	if (rc >= 0) {
		if (ibp_port_parse_local_range(buf, &out->eph_lo, &out->eph_hi))
			return -EINVAL;
		out->have_ephemeral = true;
	} else if (rc != -ENOENT) {
		return rc;
	}
	return 0;
}

static unsigned unpriv_start(const struct ibp_port_sysctl *s)
{
	return s && s->have_unpriv ? s->unpriv_start : UNPRIV_FIXED;
}

bool ibp_port_range_privileged(unsigned lo, unsigned hi, const struct ibp_port_sysctl *s)
{
	return lo >= 1 && lo <= hi && hi < unpriv_start(s);
}

int ibp_port_range_check(unsigned lo, unsigned hi, const struct ibp_port_sysctl *s,
			 struct ibp_findings *out)
{
	unsigned start = unpriv_start(s);
	char expect[96];

	if (lo < 1 || lo > hi || hi > 65535)
		return -EINVAL;
	if (s && s->have_ephemeral && lo <= s->eph_hi && s->eph_lo <= hi) {
		snprintf(expect, sizeof(expect), "a range outside %u-%u", s->eph_lo, s->eph_hi);
		ibp_findings_addf(
		    out, "test_ports_ephemeral", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0, expect,
		    "set test_ports= outside the ephemeral range (default 230-299), or "
		    "move net.ipv4.ip_local_port_range",
		    "test_ports=%u-%u overlaps the node's ephemeral port range %u-%u "
		    "(net.ipv4.ip_local_port_range), where any outgoing connection of "
		    "any user may hold a test port: refused",
		    lo, hi, s->eph_lo, s->eph_hi);
		return -EADDRINUSE;
	}
	if (s && s->have_unpriv && s->unpriv_start == 0) {
		ibp_findings_addf(out, "test_ports_all_unprivileged", IBP_SEV_WARN, IBP_CLASS_NODE,
				  NULL, 0, "net.ipv4.ip_unprivileged_port_start=1024",
				  "set the sysctl net.ipv4.ip_unprivileged_port_start back to 1024",
				  "net.ipv4.ip_unprivileged_port_start is 0: any local user can "
				  "bind the test ports %u-%u and make the test fail",
				  lo, hi);
		return 0;
	}
	if (hi >= start) {
		unsigned from = lo > start ? lo : start;

		snprintf(expect, sizeof(expect), "ports below %u", start);
		ibp_findings_addf(
		    out, "test_ports_unprivileged", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0, expect,
		    "set test_ports= below net.ipv4.ip_unprivileged_port_start (default "
		    "230-299)",
		    "test_ports=%u-%u: ports %u-%u are unprivileged "
		    "(net.ipv4.ip_unprivileged_port_start=%u): any local user can bind "
		    "them and make the test fail",
		    lo, hi, from, hi, start);
	}
	return 0;
}

/* One listening socket on PORT, at ADDR (numeric) or any address; the fd or -errno. */
static int listen_one(int family, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd, rc;

	memset(&ss, 0, sizeof(ss));
	if (addr) {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
			a4->sin_family = AF_INET;
			a4->sin_port = htons(port);
			len = sizeof(*a4);
		} else if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
			a6->sin6_family = AF_INET6;
			a6->sin6_port = htons(port);
			len = sizeof(*a6);
		} else {
			return -EINVAL;
		}
		family = ss.ss_family;
	} else if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		a->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		a->sin6_addr = in6addr_any;
		len = sizeof(*a);
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A port left in TIME_WAIT by the previous step is free again at once. */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* The wildcard takes both families, whatever net.ipv6.bindv6only says. */
	if (family == AF_INET6 && !addr) {
		int zero = 0;

		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	}
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 128)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int ibp_rdmatest_listen(uint32_t job, uint32_t step, unsigned lo, unsigned hi, const char *addr,
			int *fds, uint16_t *ports, size_t max)
{
	/*
	 * The wildcard: IPv6 and IPv4 on one socket (its IPv4 peers come as
	 * IPv4-mapped addresses, which the acceptor reads as IPv4), so a node
	 * whose name resolves to IPv6 first is reached as well as one whose
	 * name resolves to IPv4; IPv4 alone on a host without IPv6.
	 */
	int n, rc = -EADDRINUSE, family = AF_INET6;

	if (max < IBP_RDMATEST_PORT_CANDIDATES)
		return -EINVAL;
	n = ibp_oob_ports(job, step, lo, hi, ports, IBP_RDMATEST_PORT_CANDIDATES);
	if (n < 0)
		return n;
	for (int c = 0; c < n; c++)
		fds[c] = -1;
	for (int c = 0; c < n; c++) {
		int fd = listen_one(family, addr, ports[c]);

		if ((fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL) && family == AF_INET6 && !addr) {
			family = AF_INET; /* a host without IPv6 */
			fd = listen_one(family, NULL, ports[c]);
		}
		if (fd >= 0) {
			fds[c] = fd;
			return n;
		}
		if (fd != -EADDRINUSE)
			return fd;
		rc = fd;
	}
	return rc;
}
