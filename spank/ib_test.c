/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_test.c: the cross-node test (user_init, as the job's user: every node
 * of the step at about the same time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "ibprep/hca.h"
#include "ibprep/place.h"
#include "ibprep/rdmatest.h"
#include "ibprep/topo.h"

#include "spank_ib.h"

/* The healthy fabric ports in rail order, for the verbs transport. */
static size_t test_ports(const struct spank_ib_node *n, struct ibp_tx_port *ports, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; n->have_pl && i < n->pl.n_fabric && k < max; i++) {
		const struct ibp_place_nic *nic = &n->pl.fabric[i];
		const struct ibp_topo_hca *h;
		const struct ibp_hca *ih;

		if (nic->hca < 0 || (size_t)nic->hca >= n->topo.n_hcas)
			continue;
		h = &n->topo.hcas[nic->hca];
		memset(&ports[k], 0, sizeof(ports[k]));
		snprintf(ports[k].device, sizeof(ports[k].device), "%s", h->name);
		ports[k].port = nic->port;
		ports[k].rail = (unsigned)k;
		ports[k].gid_index = -1;
		for (unsigned p = 0; p < h->n_ports; p++) {
			if (h->ports[p].num != nic->port)
				continue;
			ports[k].link_layer = h->ports[p].link_layer;
			ports[k].gid_index = h->ports[p].gid_index;
		}
		ih = ibp_inventory_find(&n->in.inv, h->name);
		if (ih && nic->port >= 1 && nic->port <= ih->n_ports &&
		    ih->ports[nic->port - 1].rate.known)
			ports[k].rate_gbps = ih->ports[nic->port - 1].rate.gbps;
		k++;
	}
	return k;
}

/*
 * Runs as the job's user, bounded by test_timeout=.  The node list comes
 * from the step's environment (SLURM_STEP_NODELIST), which the user could
 * alter: a wrong list can only fail the user's own step, and every peer is
 * authenticated with munge (uid, job, step, node index).  Findings fail the
 * step (unless the user chose --ib-check=warn); they never drain: blame
 * across nodes is a suspicion, and this callback is no longer root.
 */
void spank_ib_run_test(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n)
{
	struct ibp_rdmatest_config cfg;
	struct ibp_rdmatest_result *res = calloc(1, sizeof(*res));
	struct ibp_tx_port ports[IBP_RDMATEST_MAX_RAILS];
	struct ibp_findings tf;
	char nodelist[8192], line[1024];
	uint32_t uid = 0;
	size_t fails = 0;
	int rc;

	ibp_findings_init(&tf);
	memset(&cfg, 0, sizeof(cfg));
	if (!res) {
		slurm_error("spank-ib: %s: cross-node test: out of memory", st->host);
		n->verdict = -1;
		return;
	}
	if (spank_getenv(sp, "SLURM_STEP_NODELIST", nodelist, sizeof(nodelist)) != ESPANK_SUCCESS &&
	    spank_getenv(sp, "SLURM_NODELIST", nodelist, sizeof(nodelist)) != ESPANK_SUCCESS) {
		slurm_error("spank-ib: %s: cross-node test: the step's node list "
			    "(SLURM_STEP_NODELIST) is not in its environment",
			    st->host);
		n->verdict = -1;
		free(res);
		return;
	}
	spank_get_item(sp, S_JOB_UID, &uid);
	cfg.nodelist = nodelist;
	cfg.index = n->nodeid;
	cfg.job = n->job_id;
	cfg.step = n->step_id;
	cfg.uid = uid;
	if (strcmp(st->conf.policy.test_transport, "socket") != 0) {
		cfg.ports = ports;
		cfg.n_ports = test_ports(n, ports, IBP_RDMATEST_MAX_RAILS);
	}
	cfg.policy = &st->conf.policy;
	cfg.mode = st->eff.test == SPANK_IB_TEST_FULL ? IBP_RDMATEST_FULL : IBP_RDMATEST_QUICK;
	cfg.munge_socket = st->conf.munge_socket[0] ? st->conf.munge_socket : NULL;
	rc = ibp_rdmatest_run(&cfg, &tf, res);
	spank_ib_keep_results(st, n, nodelist, res);
	if (rc)
		slurm_error("spank-ib: %s: cross-node test could not run: %s", st->host,
			    strerror(-rc));
	for (size_t i = 0; i < tf.n; i++) {
		const struct ibp_finding *x = &tf.v[i];

		if (x->severity < IBP_SEV_WARN)
			continue;
		if (x->severity == IBP_SEV_FAIL)
			fails++;
		ibp_finding_format(x, st->host, line, sizeof(line));
		slurm_error("spank-ib: %s%s", x->severity == IBP_SEV_WARN ? "warning: " : "", line);
		ibp_findings_add(&n->findings, x);
	}
	if ((rc || fails) && !st->eff.check_warn_by_user) {
		n->verdict = -1;
		slurm_error("spank-ib: %s: failing the step: the cross-node test failed "
			    "(%zu finding%s, %.2f s)",
			    st->host, fails, fails == 1 ? "" : "s", res->elapsed_s);
	} else if (st->eff.affinity == SPANK_IB_AFF_VERBOSE ||
		   st->eff.report != SPANK_IB_REPORT_OFF) {
		slurm_error("spank-ib: %s: cross-node test: %s with %zu node%s in %.2f s", st->host,
			    res->pass ? "pass" : "fail", res->nnodes, res->nnodes == 1 ? "" : "s",
			    res->elapsed_s);
	}
	ibp_findings_release(&tf);
	free(res);
}
