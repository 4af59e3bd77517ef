/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_ports.h: which TCP ports the cross-node test may listen on.
 *
 * The test's listener must be one no local user can take: a port below
 * net.ipv4.ip_unprivileged_port_start, bound by root (the plugin's
 * init_post_opt, `ibprep rdmatest` run as root) before the network-facing
 * work is handed to an unprivileged process.  It must also stay out of the
 * node's ephemeral range (net.ipv4.ip_local_port_range), where the kernel
 * hands ports to every outgoing connection and so to any user.
 *
 * The default range 230-299: below 1024; no service in Debian's
 * /etc/services from 211 to 344 (the IANA entries there are obsolete
 * protocols); outside libtirpc's bindresvport() range (600-1023, then
 * 512-599), which rpc.statd, mountd and other RPC clients draw from, and
 * outside the kernel NFS client's reserved source ports (665-1023).
 *
 * The sysctls are read through the one root-fd reader (sysfs.h), so tests
 * give a fixture tree; the checks are pure functions over the values.
 * No globals, no printing.
 */
#ifndef IBPREP_RDMATEST_PORTS_H
#define IBPREP_RDMATEST_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/finding.h"
#include "ibprep/sysfs.h"

/* the default test_ports= range, IBP_TEST_PORTS_DEFAULT_LO-_HI, is policy.h's */
#include "ibprep/policy.h"

/* `ibprep rdmatest` run by a user who did not choose test_ports=: above the usual ephemeral range */
#define IBP_TEST_PORTS_USER_LO 61000
#define IBP_TEST_PORTS_USER_HI 61999

#define IBP_SYSCTL_UNPRIV_START "proc/sys/net/ipv4/ip_unprivileged_port_start"
#define IBP_SYSCTL_LOCAL_RANGE  "proc/sys/net/ipv4/ip_local_port_range"

struct ibp_port_sysctl {
	bool have_unpriv;
	unsigned unpriv_start; /* first port any user may bind (1024 on most hosts) */
	bool have_ephemeral;
	unsigned eph_lo, eph_hi; /* the kernel's ephemeral range */
};

/*
 * Reads both sysctls under FS's root.  A value that is missing leaves its
 * have_* false (0); a value that is there but malformed is -EINVAL.
 */
int ibp_port_sysctl_read(const struct ibp_sysfs *fs, struct ibp_port_sysctl *out);

/* "32768\t60999" (tabs or spaces); 0 or -EINVAL. */
int ibp_port_parse_local_range(const char *s, unsigned *lo, unsigned *hi);

/*
 * Judges the range [LO, HI] against S and appends what it finds to OUT:
 *   fail  test_ports_ephemeral   the range overlaps the ephemeral range (both named)
 *   warn  test_ports_unprivileged part of the range is bindable by any user
 *   warn  test_ports_all_unprivileged  ip_unprivileged_port_start is 0
 * Returns 0 (usable, maybe with warnings) or -EADDRINUSE (refused: the
 * overlap).  Unknown sysctls are not findings.  -EINVAL for a bad range.
 */
int ibp_port_range_check(unsigned lo, unsigned hi, const struct ibp_port_sysctl *s,
			 struct ibp_findings *out);

/*
 * Binds the test's listener for JOB and STEP: the first free of the
 * IBP_RDMATEST_PORT_CANDIDATES candidates in [LO, HI] (ibp_oob_ports, the
 * order every node's senders try), on ADDR (numeric; NULL = the wildcard
 * address of both families on one socket, IPv4 alone where the host has no
 * IPv6), listening,
 * O_CLOEXEC | O_NONBLOCK.  Fills
 * PORTS[i] with every candidate and FDS[i] with the bound socket or -1, in
 * the shape ibp_rdmatest_config's listen_fds/listen_ports want; MAX is the
 * arrays' size.  Returns the number of candidates (one of them bound), or
 * -EADDRINUSE (every candidate taken), -EACCES (not allowed to bind them:
 * privileged ports without root), -EINVAL (also a bad ADDR), -errno.  The caller
 * owns the fd and closes it.
 */
int ibp_rdmatest_listen(uint32_t job, uint32_t step, unsigned lo, unsigned hi, const char *addr,
			int *fds, uint16_t *ports, size_t max);

/* True when every port of [LO, HI] is below the unprivileged start. */
bool ibp_port_range_privileged(unsigned lo, unsigned hi, const struct ibp_port_sysctl *s);

#endif
