/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: Slurm's topology.conf and topology.yaml readers, fed
 * any text.  Neither may crash; a parsed topology must be consistent (every
 * node's leaf is a switch, parents form no cycle, lookups find every node),
 * and a refused one must say why and leave nothing allocated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/topology_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct ibp_topology *t, int rc, const char *err)
{
	if (rc) {
		if (t->sw || t->nodes || t->n_sw || t->n_nodes || !err[0])
			abort();
		return;
	}
	for (size_t i = 0; i < t->n_sw; i++) {
		if (t->sw[i].parent >= (int)t->n_sw || t->sw[i].depth > IBP_TOPOLOGY_MAX_DEPTH)
			abort();
		if (ibp_topology_switch(t, t->sw[i].name) != (int)i)
			abort();
	}
	for (size_t i = 0; i < t->n_nodes; i++) {
		if (t->node_leaf[i] < 0 || (size_t)t->node_leaf[i] >= t->n_sw)
			abort();
		if (ibp_topology_node(t, t->nodes[i]) != (long)i)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_topology t;
	char err[256];
	int rc;

	if (size > 65536)
		return 0;
	err[0] = '\0';
	rc = ibp_topology_parse_conf(&t, (const char *)data, size, "f", err, sizeof(err));
	check(&t, rc, err);
	ibp_topology_release(&t);
	err[0] = '\0';
	rc = ibp_topology_parse_yaml(&t, (const char *)data, size, "f", NULL, err, sizeof(err));
	check(&t, rc, err);
	ibp_topology_release(&t);
	return 0;
}
