/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_results.c: the step's tested links into the results log
 * (results_log=, results_log.h), for `ibprep fabric`.
 *
 * The test runs in user_init (the job's user as effective uid, its child as
 * the test's user), neither of whom may write the root-owned log: the links
 * are kept in the node's state there (spank_ib_keep_results) and written
 * from slurm_spank_exit, which slurmstepd runs as root
 * (spank_ib_write_results).  The records are built from the test's own
 * result and the node list it ran with, and only about this node: a link is
 * kept when one of its ends is this node's place in the step (S_JOB_NODEID,
 * not the child's word), the result must be this node's (its index and node
 * count Slurm's), and the node list must be slurmctld's own (ib_nodes.c: one
 * RPC, only when there is something to keep); otherwise nothing is kept and
 * a warning says why.  A log that cannot be written is one message, never a
 * failed step.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "ibprep/hostlist.h"
#include "ibprep/rdmatest.h"
#include "ibprep/results_log.h"

#include "spank_ib.h"

__attribute__((format(printf, 2, 3))) static void not_kept(struct ibp_findings *tf, const char *fmt,
							   ...)
{
	char why[IBP_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	ibp_findings_addf(tf, "rdmatest_links_not_recorded", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
			  "the node list slurmctld gave the step",
			  "launch the step with Slurm's srun",
			  "the test's links are not recorded: %s", why);
}

void spank_ib_keep_results(const struct spank_ib_state *st, struct spank_ib_node *n,
			   const char *nodelist, const struct ibp_rdmatest_result *res,
			   struct ibp_findings *tf)
{
	struct ibp_hostlist hl = {0};
	char err[256];
	int64_t now = (int64_t)time(NULL);

	if (!st->conf.results_log[0] || !res || !res->n_links || n->test_records)
		return;
	if (res->index != n->nodeid || res->nnodes != n->nnodes) {
		not_kept(tf,
			 "the test's result is for place %zu of %zu nodes, this node is %u of %u",
			 res->index, res->nnodes, n->nodeid, n->nnodes);
		return;
	}
	/* asked in init_post_opt (ib_remote.c): Slurm's API is not safe here, in user_init */
	if (!n->ctld_nodes) {
		not_kept(tf, "slurmctld did not confirm the step's nodes: %s",
			 n->ctld_err[0] ? n->ctld_err : "not asked");
		return;
	}
	if (!spank_ib_same_nodes(nodelist, n->ctld_nodes)) {
		not_kept(tf, "it ran over %.200s, slurmctld's node list of the step is %.200s",
			 nodelist, n->ctld_nodes);
		return;
	}
	if (ibp_hostlist_expand(nodelist, 0, &hl, err, sizeof(err)))
		return; /* the test itself said what was wrong with the list */
	n->test_records = calloc(res->n_links, sizeof(*n->test_records));
	if (!n->test_records) {
		ibp_hostlist_release(&hl);
		return;
	}
	for (size_t i = 0; i < res->n_links; i++) {
		const struct ibp_rdmatest_link *l = &res->links[i];
		struct ibp_link_record *r = &n->test_records[n->n_test_records];

		if (l->status == IBP_LINK_UNTESTED || l->from >= hl.n || l->to >= hl.n ||
		    (l->from != n->nodeid && l->to != n->nodeid) || l->from == l->to)
			continue; /* only this node's own links */
		r->time = now;
		r->job = n->job_id;
		r->step = n->step_id;
		r->round = l->round;
		snprintf(r->by, sizeof(r->by), "%s", st->host);
		snprintf(r->a, sizeof(r->a), "%s", hl.names[l->from]);
		snprintf(r->b, sizeof(r->b), "%s", hl.names[l->to]);
		r->a_rail = r->b_rail = l->rail;
		/* this node's device is on its own side of the link */
		if (l->from == n->nodeid) {
			snprintf(r->a_dev, sizeof(r->a_dev), "%s", l->device);
			snprintf(r->b_dev, sizeof(r->b_dev), "%s", l->peer_device);
			r->a_port = l->port;
			r->b_port = l->peer_port;
		} else {
			snprintf(r->b_dev, sizeof(r->b_dev), "%s", l->device);
			snprintf(r->a_dev, sizeof(r->a_dev), "%s", l->peer_device);
			r->b_port = l->port;
			r->a_port = l->peer_port;
		}
		r->status = l->status;
		r->rtt_us = l->lat_us > 0 ? l->lat_us : -1;
		r->gbps = l->gbps > 0 ? l->gbps : -1;
		n->n_test_records++;
	}
	ibp_hostlist_release(&hl);
}

void spank_ib_write_results(const struct spank_ib_state *st, struct spank_ib_node *n)
{
	char path[PATH_MAX], err[512];
	int rc;

	if (!n || !n->n_test_records || !st->conf.results_log[0])
		return;
	if (ibp_conf_expand(st->conf.results_log, st->host, NULL, path, sizeof(path))) {
		slurm_error("spank-ib: %s: results_log: path too long", st->host);
		return;
	}
	rc = ibp_results_log_append(path, st->conf.results_log_max, 0, n->test_records,
				    n->n_test_records, err, sizeof(err));
	if (rc)
		slurm_error("spank-ib: %s: results_log: %s: nothing recorded for this step",
			    st->host, err);
}
