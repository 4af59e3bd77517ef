/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_prolog.c: the job prolog and epilog (root, in slurmd; PrologFlags=Alloc:
 * at allocation): the node's health check before any step, and dropping the
 * job's cached verdict at its end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "ibprep/deadline.h"
#include "ibprep/finding.h"
#include "ibprep/nodestate.h"
#include "ibprep/sysfs.h"

#include "spank_ib.h"

static uint32_t prolog_job_id(spank_t sp)
{
	uint32_t id = 0;
	const char *v;
	uint64_t x;

	if (spank_get_item(sp, S_JOB_ID, &id) == ESPANK_SUCCESS && id)
		return id;
	/* slurmd sets the prolog's environment: not the user's. */
	v = getenv("SLURM_JOB_ID");
	if (v && !ibp_parse_u64(v, &x) && x <= UINT32_MAX)
		return (uint32_t)x;
	return 0;
}

/* The job's uid (part of the cache key): Slurm's item, else slurmd's SLURM_JOB_UID. */
static uint32_t prolog_job_uid(spank_t sp)
{
	uid_t uid = 0;
	const char *v;
	uint64_t x;

	if (spank_get_item(sp, S_JOB_UID, &uid) == ESPANK_SUCCESS)
		return (uint32_t)uid;
	v = getenv("SLURM_JOB_UID");
	if (v && !ibp_parse_u64(v, &x) && x <= UINT32_MAX)
		return (uint32_t)x;
	return 0;
}

/*
 * This node's Slurm NodeName in the job prolog: SLURMD_NODENAME, which
 * slurmd itself sets in the prolog's environment (prep_script_slurmd.c
 * _build_env: after the job's SPANK_* variables, the only ones a user can
 * put there), so it is slurmd's own name even with several slurmds on one
 * host.  Else "": the one-shot looks this host up in slurm.conf itself (a
 * fresh process; this one has no NodeName from 24.11 on).  A name that is
 * not [A-Za-z0-9._-] is not used: Slurm would read "n[1-4]" or "n1,n2" as
 * several nodes.
 */
static const char *prolog_node_name(char *node, size_t len)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789._-";
	const char *v = getenv("SLURMD_NODENAME");

	if (v && *v && strlen(v) < len && strspn(v, plain) == strlen(v)) {
		strcpy(node, v);
		return "SLURMD_NODENAME";
	}
	node[0] = '\0';
	return "slurm.conf";
}

/*
 * The node drained with the fault as the reason before the prolog fails
 * (Slurm keeps a reason already set, so the node does not end with its
 * bare "Prolog error"), through the watcher run once (spank_ib_drain_now),
 * on every release: from Slurm 24.11 the API called here ends the prolog
 * ("fatal: No hash plugins loaded" on 24.11, a segmentation fault on
 * 26.05).  When that fails, slurmd's log says why and the node keeps
 * Slurm's "Prolog error".
 */
static void prolog_drain(struct spank_ib_state *st, struct spank_ib_node *n)
{
	char reason[IBP_DRAIN_REASON_MAX], node[IBP_NODE_MAX], what[PATH_MAX + 320];
	const char *from;
	int64_t t0 = ibp_now_ns();

	if (!ibp_drain_reason(&n->findings, IBP_DRAIN_PREFIX, reason, sizeof(reason)))
		return;
	from = prolog_node_name(node, sizeof(node));
	if (spank_ib_drain_now(st, node, reason, n->nodename, sizeof(n->nodename), what,
			       sizeof(what))) {
		slurm_error(
		    "spank-ib: %s: not draining %s with the fault as the reason (%s, after "
		    "%.0f ms): the failed prolog leaves Slurm's own reason \"Prolog error\"",
		    st->host, node[0] ? node : "this node", what,
		    (double)(ibp_now_ns() - t0) / 1e6);
		return;
	}
	n->drained = true;
	slurm_info("spank-ib: %s: drained %s (NodeName from %s) in %.0f ms: %s", st->host,
		   n->nodename, from, (double)(ibp_now_ns() - t0) / 1e6, reason);
}

int spank_ib_job_prolog(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_node *n;
	struct spank_ib_job_env je = {.sp = sp};
	char root[PATH_MAX], cache_dir[PATH_MAX];
	int verdict;

	/* A refused config= (load_conf said so in slurmd's log): the steps fail, not the prolog. */
	if (!st->conf_ok || !st->conf.prolog_check)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n) {
		slurm_error("spank-ib: %s: out of memory", st->host);
		return -1;
	}
	ibp_findings_init(&n->findings);
	n->job_id = prolog_job_id(sp);
	n->uid = prolog_job_uid(sp);
	memset(&st->eff, 0, sizeof(st->eff));
	st->eff.check = SPANK_IB_CHECK_FAIL;
	if (ibp_conf_expand(st->conf.sysfs_root, st->host, NULL, root, sizeof(root)) ||
	    ibp_conf_expand(st->conf.cache_dir, st->host, NULL, cache_dir, sizeof(cache_dir)))
		spank_ib_setup_finding(
		    n, IBP_SEV_FAIL, "a path in plugstack.conf is too long for host %s", st->host);
	else
		spank_ib_load_health(st, n, &je, root, cache_dir);
	/*
	 * The verdict and the node's lines (slurmd's log).  The drain is not
	 * the in-process one of spank_ib_judge: from Slurm 24.11 this process
	 * cannot call Slurm (prolog_drain).
	 */
	{
		bool drain = st->conf.drain;

		st->conf.drain = false;
		spank_ib_judge(st, n);
		st->conf.drain = drain;
	}
	/* slurmd's log (the node's warnings went there already) */
	spank_ib_node_print(n);
	/*
	 * Slurm drains a node whose prolog fails, with the reason "Prolog
	 * error": only a node fault may do that.  The plugin's own trouble (a
	 * path refused, an unreadable sysfs_root) and a job's fault are said
	 * in slurmd's log above, and the job's steps meet them again.
	 */
	verdict = 0;
	for (size_t i = 0; i < n->findings.n; i++)
		if (ibp_finding_drainable(&n->findings.v[i]))
			verdict = n->verdict;
	/* prolog_check= implies draining, with the fault as the reason */
	if (verdict)
		prolog_drain(st, n);
	spank_ib_node_free(n);
	return verdict;
}

int spank_ib_job_epilog(spank_t sp, struct spank_ib_state *st)
{
	char cache_dir[PATH_MAX], why[PATH_MAX + 512];
	struct spank_ib_cache_key key = {.host = st->host, .job_id = prolog_job_id(sp)};
	int cfd;

	if (!key.job_id ||
	    ibp_conf_expand(st->conf.cache_dir, st->host, NULL, cache_dir, sizeof(cache_dir)))
		return 0;
	/* Only in a directory that passes the same checks as for storing. */
	cfd = spank_ib_cache_open(cache_dir, false, why, sizeof(why));
	if (cfd < 0)
		return 0;
	spank_ib_cache_drop(cfd, &key);
	close(cfd);
	return 0;
}
