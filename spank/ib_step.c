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

/* A numeric address (what the child must answer), not a name. */
static bool numeric(const char *s)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

/* The child's lookups get all but this of the budget (its exec, its answer). */
#define RESOLVE_MARGIN_MS 500

void spank_ib_lookup_start(struct spank_ib_lookup *lk, const struct spank_ib_child_spec *proto,
			   const char *const *names, size_t n, unsigned timeout_ms)
{
	struct spank_ib_child_spec spec = *proto;
	char *argv[] = {(char *)spec.helper, (char *)"env", (char *)"--resolve-child", NULL};
	char in[SPANK_IB_RESOLVE_MAX * SPANK_IB_NAME_MAX + 32];
	unsigned child_ms = timeout_ms > 2 * RESOLVE_MARGIN_MS ? timeout_ms - RESOLVE_MARGIN_MS
							       : timeout_ms / 2 + 1;
	size_t off;

	memset(lk, 0, sizeof(*lk));
	lk->started = true;
	lk->rc = -EINVAL;
	if (n > sizeof(lk->names) / sizeof(lk->names[0])) {
		say(lk->why, sizeof(lk->why), "more than %zu names",
		    sizeof(lk->names) / sizeof(lk->names[0]));
		return;
	}
	off = (size_t)snprintf(in, sizeof(in), "%u\n", child_ms);
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(lk->names[i], sizeof(lk->names[i]), "%s", names[i]);

		if (w < 0 || (size_t)w >= sizeof(lk->names[i]) || strchr(names[i], '\n')) {
			say(lk->why, sizeof(lk->why), "a name longer than %d bytes",
			    SPANK_IB_NAME_MAX - 1);
			return;
		}
		memcpy(in + off, lk->names[i], (size_t)w);
		off += (size_t)w;
		in[off++] = '\n';
	}
	lk->n = n;
	lk->rc = spank_ib_helper_check("test helper", spec.helper, lk->why, sizeof(lk->why));
	if (lk->rc)
		return;
	spec.budget_s = timeout_ms / 1000.0;
	spec.what = "the name lookup";
	spec.budget_why = NULL;
	spec.listen_fds = NULL;
	spec.n_listen_fds = 0;
	lk->rc = spank_ib_helper_start(&spec, argv, (const uint8_t *)in, off, &lk->hp, lk->why,
				       sizeof(lk->why));
}

int spank_ib_lookup_collect(void *ctx, const char *const *names, size_t n, unsigned timeout_ms,
			    char (*addrs)[SPANK_IB_ADDR_MAX], int *rcs, char *why, size_t whylen)
{
	struct spank_ib_lookup *lk = ctx;
	char out[SPANK_IB_RESOLVE_MAX * SPANK_IB_ADDR_MAX + 64], *save = NULL, *line;
	size_t got = 0, k = 0;
	int rc;

	(void)timeout_ms; /* the budget counts from the start */
	for (size_t i = 0; i < n; i++) {
		addrs[i][0] = '\0';
		rcs[i] = -EAGAIN;
	}
	if (!lk->started || n != lk->n) {
		say(why, whylen, "no lookup was started for these names");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], lk->names[i]) != 0) {
			say(why, whylen, "no lookup was started for %s", names[i]);
			return -EINVAL;
		}
	if (lk->rc) {
		say(why, whylen, "%s", lk->why);
		return lk->rc;
	}
	if (lk->cached) {
		for (size_t i = 0; i < n; i++) {
			memcpy(addrs[i], lk->ans.addrs[i], SPANK_IB_ADDR_MAX);
			rcs[i] = 0;
		}
		lk->rc = -EALREADY;
		return 0;
	}
	rc = spank_ib_helper_finish(&lk->hp, (uint8_t *)out, sizeof(out), &got, lk->why,
				    sizeof(lk->why));
	lk->rc = rc ? rc : -EALREADY; /* collected: once */
	if (rc) {
		say(why, whylen, "%s", lk->why);
		return rc;
	}
	out[got] = '\0';
	/* The job user's bytes: one line per name, a numeric address or "!why". */
	for (line = strtok_r(out, "\n", &save); line && k < n;
	     line = strtok_r(NULL, "\n", &save), k++) {
		if (!strcmp(line, "!timeout"))
			rcs[k] = -ETIMEDOUT;
		else if (!strcmp(line, "!noname"))
			rcs[k] = -ENOENT;
		else if (line[0] == '!')
			rcs[k] = -EHOSTUNREACH;
		else if (strlen(line) < SPANK_IB_ADDR_MAX && numeric(line)) {
			snprintf(addrs[k], SPANK_IB_ADDR_MAX, "%s", line);
			rcs[k] = 0;
		} else {
			rcs[k] = -EBADMSG;
		}
	}
	if (k != n || line) {
		say(why, whylen, "the name lookup's answer is refused");
		for (size_t i = 0; i < n; i++)
			rcs[i] = -EBADMSG;
		return -EBADMSG;
	}
	/* Every name found: the answer the job's later steps may reuse (ib_cache.c). */
	lk->answered = true;
	for (size_t i = 0; i < n; i++) {
		lk->answered &= rcs[i] == 0;
		memcpy(lk->ans.names[i], lk->names[i], SPANK_IB_NAME_MAX);
		memcpy(lk->ans.addrs[i], addrs[i], SPANK_IB_ADDR_MAX);
	}
	lk->ans.n = n;
	return 0;
}

void spank_ib_lookup_cached(struct spank_ib_lookup *lk, const struct spank_ib_lookup_answer *ans)
{
	memset(lk, 0, sizeof(*lk));
	lk->started = true;
	lk->cached = true;
	lk->n = ans->n;
	memcpy(lk->names, ans->names, sizeof(lk->names));
	lk->ans = *ans;
}

void spank_ib_lookup_abandon(struct spank_ib_lookup *lk)
{
	char out[8], why[8];
	size_t got;

	if (!lk || !lk->started || lk->rc || lk->hp.pid <= 0)
		return;
	lk->hp.deadline = 0; /* now: killed and reaped, bounded */
	(void)spank_ib_helper_finish(&lk->hp, (uint8_t *)out, sizeof(out), &got, why, sizeof(why));
	lk->rc = -ECANCELED;
}

int spank_ib_resolve_child(void *ctx, const char *const *names, size_t n, unsigned timeout_ms,
			   char (*addrs)[SPANK_IB_ADDR_MAX], int *rcs, char *why, size_t whylen)
{
	struct spank_ib_lookup *lk = calloc(1, sizeof(*lk));
	int rc;

	if (!lk)
		return -ENOMEM;
	spank_ib_lookup_start(lk, ctx, names, n, timeout_ms);
	rc = spank_ib_lookup_collect(lk, names, n, timeout_ms, addrs, rcs, why, whylen);
	free(lk);
	return rc;
}

static const char *lookup_failed(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return " (timed out)";
	case -ENOENT:
		return "";
	default:
		return " (lookup failed)";
	}
}

/* The next node of the step after NODEID that is not SELF, or NULL (WHY says why). */
static const char *pick_peer(const char *nodelist, uint32_t nodeid, const char *self,
			     struct ibp_hostlist *hl, char *why, size_t whylen)
{
	char err[256] = "";

	if (!nodelist || !*nodelist) {
		say(why, whylen, "no node list in the step's environment");
		return NULL;
	}
	if (ibp_hostlist_expand(nodelist, 0, hl, err, sizeof(err))) {
		say(why, whylen, "node list '%.64s' unreadable: %.160s", nodelist, err);
		return NULL;
	}
	if (hl->n < 2) {
		say(why, whylen, "single-node step");
		return NULL;
	}
	for (size_t k = 1; k < hl->n; k++) {
		const char *c = hl->names[((size_t)nodeid + k) % hl->n];

		if (!self || strcmp(c, self) != 0)
			return c;
	}
	say(why, whylen, "no other node in the step's node list");
	return NULL;
}

size_t spank_ib_bootstrap_names(const char *nodelist, uint32_t nodeid, const char *self,
				const char *launch_addr, char (*names)[SPANK_IB_NAME_MAX])
{
	struct ibp_hostlist hl = {0};
	const char *peer = pick_peer(nodelist, nodeid, self, &hl, NULL, 0);
	size_t n = 0;

	if (peer && strlen(peer) < SPANK_IB_NAME_MAX)
		snprintf(names[n++], SPANK_IB_NAME_MAX, "%s", peer);
	if (launch_addr && *launch_addr && !numeric(launch_addr) &&
	    strlen(launch_addr) < SPANK_IB_NAME_MAX)
		snprintf(names[n++], SPANK_IB_NAME_MAX, "%s", launch_addr);
	ibp_hostlist_release(&hl);
	return n;
}

int spank_ib_bootstrap_ifname(const char *nodelist, uint32_t nodeid, const char *self,
			      const char *launch_addr, unsigned timeout_ms,
			      spank_ib_resolve_fn resolve, void *resolve_ctx, char *ifname,
			      size_t len, char *how, size_t howlen)
{
	struct ibp_hostlist hl = {0};
	char why[320] = "", lwhy[256] = "", addrs[2][SPANK_IB_ADDR_MAX];
	const char *peer, *names[2];
	int rcs[2] = {-ENOENT, -ENOENT}, rc;
	size_t n = 0, ip = 2, il = 2;
	bool have_launch = launch_addr && *launch_addr;

	ifname[0] = '\0';
	peer = pick_peer(nodelist, nodeid, self, &hl, why, sizeof(why));
	/* One child for both names (spank_ib_bootstrap_names): the launch node's is the fallback. */
	if (peer && strlen(peer) < SPANK_IB_NAME_MAX) {
		ip = n;
		names[n++] = peer;
	}
	if (have_launch && !numeric(launch_addr) && strlen(launch_addr) < SPANK_IB_NAME_MAX) {
		il = n;
		names[n++] = launch_addr;
	}
	if (n && (!resolve ||
		  resolve(resolve_ctx, names, n, timeout_ms, addrs, rcs, lwhy, sizeof(lwhy)) < 0)) {
		for (size_t i = 0; i < n; i++)
			if (rcs[i] != -EBADMSG)
				rcs[i] = -EAGAIN;
	}
	if (peer) {
		rc = ip < n ? rcs[ip] : -ENAMETOOLONG;
		if (rc && lwhy[0]) {
			snprintf(why, sizeof(why), "peer %s not resolved: %.200s", peer, lwhy);
		} else if (rc) {
			snprintf(why, sizeof(why), "peer %s does not resolve%s", peer,
				 lookup_failed(rc));
		} else {
			rc = ibp_env_route_ifname(addrs[ip], ifname, len);
			if (!rc) {
				say(how, howlen, "route to %s (%s)", peer, addrs[ip]);
				ibp_hostlist_release(&hl);
				return 0;
			}
			snprintf(why, sizeof(why), "no interface routes to peer %s (%s): %s", peer,
				 addrs[ip], strerror(-rc));
		}
	}
	ibp_hostlist_release(&hl);
	if (have_launch) {
		rc = numeric(launch_addr) ? ibp_env_route_ifname(launch_addr, ifname, len)
		     : il >= n            ? -ENAMETOOLONG
		     : rcs[il]            ? rcs[il]
					  : ibp_env_route_ifname(addrs[il], ifname, len);
		if (!rc) {
			say(how, howlen, "route to the launch node %s (%s)", launch_addr, why);
			return 1;
		}
	}
	ifname[0] = '\0';
	say(how, howlen, "not set: %s, and no route to the launch node", why);
	return -ENOENT;
}
