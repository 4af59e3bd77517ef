/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_results.c: the step's tested links into the results log
 * (results_log=, results_log.h), for `ibprep fabric`.
 *
 * The test runs in user_init (the job's user as effective uid, its child as
 * the test's user), neither of whom may write the root-owned log: the links
 * are kept in the node's state there (spank_ib_keep_results) and written
 * from slurm_spank_exit, which slurmstepd runs as root
 * (spank_ib_write_results).  The records are built from the test's own result
 * and the node list it ran with; a log that cannot be written is one
 * message, never a failed step.
 */
#include <errno.h>
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

void spank_ib_keep_results(const struct spank_ib_state *st, struct spank_ib_node *n,
			   const char *nodelist, const struct ibp_rdmatest_result *res)
{
	struct ibp_hostlist hl = {0};
	char err[256];
	int64_t now = (int64_t)time(NULL);

	if (!st->conf.results_log[0] || !res || !res->n_links || n->test_records)
		return;
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

		if (l->status == IBP_LINK_UNTESTED || l->from >= hl.n || l->to >= hl.n)
			continue;
		r->time = now;
		r->job = n->job_id;
		r->step = n->step_id;
		r->round = l->round;
		snprintf(r->by, sizeof(r->by), "%s", st->host);
		snprintf(r->a, sizeof(r->a), "%s", hl.names[l->from]);
		snprintf(r->b, sizeof(r->b), "%s", hl.names[l->to]);
		r->a_rail = r->b_rail = l->rail;
		/* this node's device is on its own side of the link */
		if (l->from == res->index) {
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
