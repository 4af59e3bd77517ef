/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_nodes.c: which nodes the step is, by Slurm's word, for the cross-node
 * test and its records in the results log.
 *
 * The test takes the step's node list from SLURM_STEP_NODELIST, which srun
 * puts in the launch request: a modified srun (an LD_PRELOAD on the user's
 * own srun is enough) sets any list there.  What slurmstepd itself was
 * launched with is no better on Slurm 22.05 (and still on 26.05):
 * S_JOB_NNODES is the request's node count, S_JOB_NODEID this node's place
 * in the request's node list (slurmstepd_job.c); slurmd only checks that
 * this node is in the credential slurmctld signed.  So two checks:
 *
 *   spank_ib_nodelist_check  the list against S_JOB_NNODES and this node at
 *                            S_JOB_NODEID, by its NodeName (slurmstepd's own
 *                            slurm.conf): free, catches a list changed
 *                            alone; the test does not run on a mismatch
 *   spank_ib_ctld_step_nodes slurmctld's own node list of the step
 *                            (slurm_job_step_layout_get): one RPC, bounded by
 *                            the cluster's MessageTimeout, asked in
 *                            init_post_opt as root when the test's links may
 *                            be kept for the results log (the only thing of
 *                            the test that outlives the step; from Slurm 24.11
 *                            on the API aborts slurmstepd in user_init); a
 *                            consistent forgery (names, count and index all
 *                            changed, which a modified srun can send) ends
 *                            here
 *
 * The Slurm API is looked up in the process that loaded the plugin
 * (ib_drain.c does the same); without it nothing is confirmed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <slurm/slurm.h>

#include "ibprep/hostlist.h"

#include "spank_ib.h"

typedef slurm_step_layout_t *(*layout_get_fn)(slurm_step_id_t *step_id);
typedef void (*layout_free_fn)(slurm_step_layout_t *layout);
typedef int (*errno_fn)(void);
typedef char *(*strerror_fn)(int err);

int spank_ib_nodelist_check(const char *nodelist, uint32_t nnodes, uint32_t nodeid,
			    const char *self, char *why, size_t len)
{
	struct ibp_hostlist hl = {0};
	char err[256];
	int rc = 0;

	if (ibp_hostlist_expand(nodelist, 0, &hl, err, sizeof(err))) {
		snprintf(why, len, "SLURM_STEP_NODELIST does not parse: %s", err);
		return -EINVAL;
	}
	if (hl.n != nnodes) {
		snprintf(why, len,
			 "SLURM_STEP_NODELIST names %zu node%s, Slurm launched this step on %u "
			 "(S_JOB_NNODES)",
			 hl.n, hl.n == 1 ? "" : "s", nnodes);
		rc = -EINVAL;
	} else if (nodeid >= hl.n || strcmp(hl.names[nodeid], self) != 0) {
		snprintf(why, len,
			 "SLURM_STEP_NODELIST has %s at this node's place %u (S_JOB_NODEID), "
			 "this node is %s",
			 nodeid < hl.n ? hl.names[nodeid] : "nothing", nodeid, self);
		rc = -EINVAL;
	}
	ibp_hostlist_release(&hl);
	return rc;
}

bool spank_ib_same_nodes(const char *a, const char *b)
{
	struct ibp_hostlist ha = {0}, hb = {0};
	char err[256];
	bool same;

	if (ibp_hostlist_expand(a, 0, &ha, err, sizeof(err)))
		return false;
	if (ibp_hostlist_expand(b, 0, &hb, err, sizeof(err))) {
		ibp_hostlist_release(&ha);
		return false;
	}
	same = ha.n == hb.n;
	for (size_t i = 0; same && i < ha.n; i++)
		same = !strcmp(ha.names[i], hb.names[i]);
	ibp_hostlist_release(&ha);
	ibp_hostlist_release(&hb);
	return same;
}

int spank_ib_ctld_step_nodes(uint32_t job, uint32_t step, char *out, size_t len, char *err,
			     size_t errlen)
{
	layout_get_fn get = (layout_get_fn)dlsym(RTLD_DEFAULT, "slurm_job_step_layout_get");
	layout_free_fn put = (layout_free_fn)dlsym(RTLD_DEFAULT, "slurm_job_step_layout_free");
	errno_fn get_errno = (errno_fn)dlsym(RTLD_DEFAULT, "slurm_get_errno");
	strerror_fn serr = (strerror_fn)dlsym(RTLD_DEFAULT, "slurm_strerror");
	slurm_step_id_t id = {.job_id = job, .step_het_comp = NO_VAL, .step_id = step};
	slurm_step_layout_t *lay;
	int rc = 0;

	out[0] = '\0';
	if (!get || !put) {
		snprintf(err, errlen, "the Slurm API is not available in this process");
		return -ENOSYS;
	}
	lay = get(&id);
	if (!lay) {
		int e = get_errno ? get_errno() : errno;

		snprintf(err, errlen, "slurmctld gave no layout for step %u.%u: %s", job, step,
			 serr ? serr(e) : strerror(e));
		return -EIO;
	}
	if (!lay->node_list || !*lay->node_list) {
		snprintf(err, errlen, "slurmctld's layout of step %u.%u has no node list", job,
			 step);
		rc = -EIO;
	} else if (snprintf(out, len, "%s", lay->node_list) >= (int)len) {
		snprintf(err, errlen,
			 "slurmctld's node list of step %u.%u is longer than %zu bytes", job, step,
			 len - 1);
		out[0] = '\0';
		rc = -ENAMETOOLONG;
	}
	put(lay);
	return rc;
}
