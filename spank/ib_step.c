/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_step.c: what the step is on this node, from the values Slurm (or the
 * user) put in the step's environment: the GPU(s) a task really sees, and
 * the interface that reaches the step's other nodes (NCCL_SOCKET_IFNAME).
 *
 * Every value here comes from the job's environment, which the user can
 * alter: it is parsed defensively, and a wrong value can only change the
 * user's own step.  Name resolution is bounded (getaddrinfo_a with a
 * deadline): a dead resolver delays the step by at most the deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ibprep/cpulist.h"
#include "ibprep/env.h"
#include "ibprep/hostlist.h"

#include "spank_ib.h"

__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized) */
	va_end(ap);
}

static bool same_list(const unsigned *a, size_t na, const unsigned *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static bool all_in(const unsigned *v, size_t n, const unsigned *set, size_t nset)
{
	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (size_t k = 0; k < nset && !found; k++)
			found = v[i] == set[k];
		if (!found)
			return false;
	}
	return true;
}

static bool all_below(const unsigned *v, size_t n, size_t bound)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] >= bound)
			return false;
	return true;
}

enum spank_ib_cvd spank_ib_cvd_mode(const char *step_cvd, const unsigned *step, size_t n_step)
{
	unsigned v[IBP_PLACE_MAX_GPUS];
	int n;

	if (!step_cvd || !n_step)
		return SPANK_IB_CVD_UNKNOWN;
	n = ibp_indexlist_parse(step_cvd, v, IBP_PLACE_MAX_GPUS);
	if (n <= 0)
		return SPANK_IB_CVD_UNKNOWN;
	if (same_list(v, (size_t)n, step, n_step))
		return SPANK_IB_CVD_ABSOLUTE;
	for (int i = 0; i < n; i++)
		if (v[i] != (unsigned)i)
			return SPANK_IB_CVD_UNKNOWN;
	return (size_t)n == n_step ? SPANK_IB_CVD_RELATIVE : SPANK_IB_CVD_UNKNOWN;
}

int spank_ib_map_cvd(const char *cvd, const unsigned *step, size_t n_step, enum spank_ib_cvd mode,
		     size_t n_node_gpus, unsigned *out, size_t max, char *err, size_t errlen)
{
	unsigned v[IBP_PLACE_MAX_GPUS];
	int n;
	bool relative;

	if (!cvd || !*cvd) {
		say(err, errlen, "CUDA_VISIBLE_DEVICES is empty (the task sees no GPU)");
		return -EINVAL;
	}
	n = ibp_indexlist_parse(cvd, v, IBP_PLACE_MAX_GPUS);
	if (n <= 0) {
		say(err, errlen,
		    "CUDA_VISIBLE_DEVICES='%s' is not a list of device indices (UUIDs and MIG "
		    "names are not mapped)",
		    cvd);
		return n == -E2BIG ? -E2BIG : -EINVAL;
	}
	if ((size_t)n > max)
		return -E2BIG;
	if (!n_step) {
		/* No step list: the indices are the node's, in PCI bus order. */
		if (!all_below(v, (size_t)n, n_node_gpus)) {
			say(err, errlen,
			    "CUDA_VISIBLE_DEVICES='%s' names a GPU the node does not have (%zu "
			    "GPU%s)",
			    cvd, n_node_gpus, n_node_gpus == 1 ? "" : "s");
			return -ERANGE;
		}
		memcpy(out, v, (size_t)n * sizeof(*v));
		return n;
	}
	switch (mode) {
	case SPANK_IB_CVD_ABSOLUTE:
		relative = false;
		break;
	case SPANK_IB_CVD_RELATIVE:
		relative = true;
		break;
	default:
		/* Absolute when every value is one of the step's GPUs, else relative. */
		relative = !all_in(v, (size_t)n, step, n_step);
		break;
	}
	if (relative) {
		if (!all_below(v, (size_t)n, n_step)) {
			say(err, errlen,
			    "CUDA_VISIBLE_DEVICES='%s' is neither the step's GPUs nor an index "
			    "into its %zu GPU%s",
			    cvd, n_step, n_step == 1 ? "" : "s");
			return -ERANGE;
		}
		for (int i = 0; i < n; i++)
			out[i] = step[v[i]];
		return n;
	}
	if (!all_in(v, (size_t)n, step, n_step)) {
		say(err, errlen, "CUDA_VISIBLE_DEVICES='%s' names a GPU outside the step's GPUs",
		    cvd);
		return -ERANGE;
	}
	memcpy(out, v, (size_t)n * sizeof(*v));
	return n;
}

/* One name to a numeric address, within TIMEOUT_MS.  0 or -errno. */
static int resolve(const char *name, unsigned timeout_ms, char *addr, size_t len)
{
	struct gaicb *req = calloc(1, sizeof(*req));
	struct addrinfo *hints = calloc(1, sizeof(*hints));
	char *copy = strdup(name);
	struct gaicb *list[1];
	struct timespec ts = {.tv_sec = timeout_ms / 1000,
			      .tv_nsec = (long)(timeout_ms % 1000) * 1000000L};
	int rc;

	if (!req || !hints || !copy) {
		free(req);
		free(hints);
		free(copy);
		return -ENOMEM;
	}
	hints->ai_socktype =
	    SOCK_DGRAM; /* no AI_ADDRCONFIG: a loopback-only test box still resolves */
	req->ar_name = copy;
	req->ar_request = hints;
	list[0] = req;
	rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (rc) {
		free(req);
		free(hints);
		free(copy);
		return -EAGAIN;
	}
	rc = gai_suspend((const struct gaicb *const *)list, 1, &ts);
	if (rc == EAI_AGAIN || rc == EAI_INTR || gai_error(req) == EAI_INPROGRESS) {
		if (gai_cancel(req) == EAI_NOTCANCELED)
			return -ETIMEDOUT; /* still running: its buffers stay (a bounded leak) */
		if (gai_error(req) == 0)
			freeaddrinfo(req->ar_result);
		free(req);
		free(hints);
		free(copy);
		return -ETIMEDOUT;
	}
	rc = gai_error(req) == 0 ? -ENOENT : -EHOSTUNREACH;
	if (gai_error(req) == 0) {
		const struct addrinfo *pick = NULL;

		/* IPv4 first: what the test clusters and most bootstrap networks use. */
		for (const struct addrinfo *a = req->ar_result; a && !pick; a = a->ai_next)
			if (a->ai_family == AF_INET)
				pick = a;
		for (const struct addrinfo *a = req->ar_result; a && !pick; a = a->ai_next)
			if (a->ai_family == AF_INET6)
				pick = a;
		if (pick && getnameinfo(pick->ai_addr, pick->ai_addrlen, addr, (socklen_t)len, NULL,
					0, NI_NUMERICHOST) == 0)
			rc = 0;
		freeaddrinfo(req->ar_result);
	}
	free(req);
	free(hints);
	free(copy);
	return rc;
}

int spank_ib_bootstrap_ifname(const char *nodelist, uint32_t nodeid, const char *self,
			      const char *launch_addr, unsigned timeout_ms, char *ifname,
			      size_t len, char *how, size_t howlen)
{
	struct ibp_hostlist hl = {0};
	char err[256] = "", addr[INET6_ADDRSTRLEN + 8] = "", why[320] = "";
	const char *peer = NULL;
	int rc;

	ifname[0] = '\0';
	if (!nodelist || !*nodelist) {
		snprintf(why, sizeof(why), "no node list in the step's environment");
	} else if (ibp_hostlist_expand(nodelist, 0, &hl, err, sizeof(err))) {
		snprintf(why, sizeof(why), "node list '%.64s' unreadable: %.160s", nodelist, err);
	} else if (hl.n < 2) {
		snprintf(why, sizeof(why), "single-node step");
	} else {
		/* The next node of the step after this one that is not this host. */
		for (size_t k = 1; k < hl.n && !peer; k++) {
			const char *c = hl.names[((size_t)nodeid + k) % hl.n];

			if (!self || strcmp(c, self) != 0)
				peer = c;
		}
		if (!peer)
			snprintf(why, sizeof(why), "no other node in the step's node list");
	}
	if (peer) {
		rc = resolve(peer, timeout_ms, addr, sizeof(addr));
		if (rc) {
			snprintf(why, sizeof(why), "peer %s does not resolve%s", peer,
				 rc == -ETIMEDOUT ? " (timed out)" : "");
		} else {
			rc = ibp_env_route_ifname(addr, ifname, len);
			if (!rc) {
				say(how, howlen, "route to %s (%s)", peer, addr);
				ibp_hostlist_release(&hl);
				return 0;
			}
			snprintf(why, sizeof(why), "no interface routes to peer %s (%s): %s", peer,
				 addr, strerror(-rc));
		}
	}
	ibp_hostlist_release(&hl);
	if (launch_addr && *launch_addr) {
		rc = ibp_env_route_ifname(launch_addr, ifname, len);
		/* a name rather than an address: resolve it the same bounded way */
		if (rc == -EINVAL && !resolve(launch_addr, timeout_ms, addr, sizeof(addr)))
			rc = ibp_env_route_ifname(addr, ifname, len);
		if (!rc) {
			say(how, howlen, "route to the launch node %s (%s)", launch_addr, why);
			return 1;
		}
	}
	ifname[0] = '\0';
	say(how, howlen, "not set: %s, and no route to the launch node", why);
	return -ENOENT;
}
