/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_drain.c: drain this node through the Slurm API (ib_slurmapi.c), with
 * the finding as the reason.
 *
 * Runs in slurmstepd's init_post_opt (root on every release: user_init and
 * task_init already run as the job's user).  Not in the job prolog, whose
 * process cannot use Slurm's API from 24.11 on: it drains through the
 * watcher run once (spank_ib_drain_now, ib_watch.c).
 * The node's Slurm NodeName comes from slurmstepd's own slurm.conf for this
 * host's name (slurm_conf_get_nodename(gethostname())), never from the job's
 * environment, which the user controls (SLURMD_NODENAME is not even set yet
 * in init_post_opt).  The API functions are looked up in the process that
 * loaded the plugin (slurmstepd and slurmd export them from libslurmfull):
 * the plugin links no Slurm library of its own.  slurm_update_node() is one
 * RPC bounded by the cluster's MessageTimeout.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "ibprep/nodestate.h"
#include "ibprep/text.h"

#include "spank_ib.h"

bool spank_ib_drain_node(const char *host, const struct ibp_findings *f, char *node, size_t nodelen,
			 char *what, size_t whatlen)
{
	char reason[IBP_DRAIN_REASON_MAX], err[256];
	int rc;

	what[0] = '\0';
	if (!ibp_drain_reason(f, IBP_DRAIN_PREFIX, reason, sizeof(reason)))
		return false;
	rc = spank_ib_node_name(host, node, nodelen);
	if (rc) {
		ibp_format_cut(what, whatlen,
			       "not draining: no NodeName for host %s in slurm.conf (%s)", host,
			       strerror(-rc));
		return false;
	}
	if (spank_ib_drain(node, reason, err, sizeof(err))) {
		ibp_format_cut(what, whatlen, "draining %s failed: %s", node, err);
		return false;
	}
	ibp_format_cut(what, whatlen, "draining %s", node);
	slurm_info("spank-ib: drained %s: %s", node, reason);
	return true;
}
