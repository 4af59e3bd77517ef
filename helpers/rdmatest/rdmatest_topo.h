/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_topo.h: the step's leaf switches, as the blame knows them
 * (private to helpers/rdmatest/).  The topology-aware blame rules are
 * public (rdmatest.h: ibp_rdmatest_uplink_suspects, _suspect_topo,
 * _uplink_explains); rdmatest_topo.c holds them and these, and calls
 * nothing of the test but the blame rule (rdmatest_blame.c).
 */
#ifndef IBPREP_RDMATEST_TOPO_H
#define IBPREP_RDMATEST_TOPO_H

#include "rdmatest_conn.h"

/* this node, its peers, and their summaries' tables */
#define IBP_RT_MAX_ADDR_LEAVES (1 + IBP_RT_MAX_PEERS * (1 + IBP_OOB_MAX_LEAVES))

/*
 * Leaves learned from SLURM_TOPOLOGY_ADDR (the config's own_leaf, the
 * peers' ENDPOINTs and summaries; no topology file): node and name.  The
 * caller guards it (the link workers add under the context's mutex).
 */
struct ibp_rt_leaves {
	struct ibp_oob_leaf v[IBP_RT_MAX_ADDR_LEAVES];
	size_t n;
};

/* Keeps NODE's leaf NAME (printable, not empty) unless NODE has one: the first wins. */
void ibp_rt_leaves_add(struct ibp_rt_leaves *lv, uint32_t nnodes, uint32_t node, const char *name);
/* NODE's entry, or NULL. */
const struct ibp_oob_leaf *ibp_rt_leaves_of(const struct ibp_rt_leaves *lv, uint32_t node);
/*
 * The step's leaves from LV: a leaf id per node (-1 unknown) and each id's
 * name in *NAMES; both heap (free()), NULL when LV is empty or no memory.
 */
int *ibp_rt_leaves_map(const struct ibp_rt_leaves *lv, uint32_t nnodes,
		       char (**names)[IBP_OOB_LEAF_MAX]);
/* Adds V to the set SET of *N (at most MAX kept): false when V was in it already. */
bool ibp_rt_set_add(uint32_t *set, size_t *n, size_t max, uint32_t v);

/* Every node's leaf switch in T (-1 unknown; heap, free()), NULL without T. */
int *ibp_rt_topo_leaves(const struct ibp_topology *t, const struct ibp_hostlist *nodes);

#endif
