/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_report.h: one run's links as findings (private to
 * helpers/rdmatest/): a node blamed, a leaf's uplinks, a link named with
 * both ends, a link that failed authentication or met another protocol
 * version (nobody blamed), a run where every link was slow (inconclusive),
 * the plans that differ, the connections dropped, or the pass.  The owner
 * calls it once the summaries are in, with what it needs as data.
 */
#ifndef IBPREP_RDMATEST_REPORT_H
#define IBPREP_RDMATEST_REPORT_H

#include "rdmatest_blame.h"
#include "rdmatest_conn.h"
#include "rdmatest_topo.h"

struct ibp_rt_report_in {
	const struct ibp_rt_ctx *x;       /* the nodes, the policy, the plan, the links */
	const struct ibp_tx_port *rail0;  /* the device a node-wide finding names; NULL: none */
	const struct ibp_tx_port *rails;  /* this node's rails (X->n_rails), for a rail's finding */
	const struct ibp_rt_known *known; /* this node's links and its peers' summaries */
	const struct ibp_rt_leaves *leaves; /* SLURM_TOPOLOGY_ADDR's, without a topology */
	/* the acceptor's drops (rdmatest_accept.h) on the port it listened on */
	unsigned dropped, dropped_away, dropped_peer;
	const char *drop_reason;
	uint16_t oob_port;
	/* this node's cross-rail probes (rdmatest_probe.h) */
	const struct ibp_rdmatest_probe *probes;
	size_t n_probes;
};

/* Findings to OUT; RES's pass, inconclusive and suspects. */
void ibp_rt_report(const struct ibp_rt_report_in *in, struct ibp_findings *out,
		   struct ibp_rdmatest_result *res);

#endif
