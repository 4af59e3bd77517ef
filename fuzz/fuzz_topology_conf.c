/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: Slurm's topology.conf and topology.yaml readers, fed
 * any text.  Neither may crash; a parsed topology must be consistent (every
 * node's leaf is a switch, parents form no cycle, lookups find every node),
 * and a refused one must say why and leave nothing allocated.  The text's
 * first two lines are also a SLURM_TOPOLOGY_ADDR and its _PATTERN
 * (ibp_topology_parse_addr: the test child's own path from the job's
 * environment): a parsed one joins back to the address, part for part.
 */
#include <stdint.h>
#include <stdio.h>
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

/* The first two lines of DATA as ADDR and PATTERN (C strings: stop at a NUL). */
static void check_addr(const uint8_t *data, size_t size)
{
	char line[2][512], sw[IBP_TOPOLOGY_MAX_DEPTH][IBP_NODE_MAX], node[IBP_NODE_MAX],
	    joined[IBP_TOPOLOGY_MAX_DEPTH * IBP_NODE_MAX + IBP_NODE_MAX], err[256];
	size_t at = 0, n_sw = 0, o = 0;
	size_t nodelen = size ? 1 + data[0] % sizeof(node) : sizeof(node);
	int rc;

	for (int l = 0; l < 2; l++) {
		size_t k = 0;

		while (at < size && data[at] != '\n' && k < sizeof(line[l]) - 1)
			line[l][k++] = (char)data[at++];
		line[l][k] = '\0';
		at++;
	}
	err[0] = '\0';
	memset(node, 'x', sizeof(node));
	rc = ibp_topology_parse_addr(line[0], line[1], sw, IBP_TOPOLOGY_MAX_DEPTH, &n_sw, node,
				     nodelen, err, sizeof(err));
	if (rc) {
		if (!err[0] || strnlen(err, sizeof(err)) == sizeof(err) || strchr(err, '\n') ||
		    n_sw != 0)
			abort();
		return;
	}
	if (n_sw > IBP_TOPOLOGY_MAX_DEPTH || strnlen(node, nodelen) >= nodelen || !node[0])
		abort();
	for (size_t i = 0; i < n_sw; i++) {
		if (!sw[i][0] || strnlen(sw[i], IBP_NODE_MAX) == IBP_NODE_MAX)
			abort();
		o += (size_t)snprintf(joined + o, sizeof(joined) - o, "%s.", sw[i]);
	}
	snprintf(joined + o, sizeof(joined) - o, "%s", node);
	if (strcmp(joined, line[0]) != 0)
		abort(); /* the parts are the address's, nothing added or lost */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_topology t;
	char err[256];
	int rc;

	if (size > 65536)
		return 0;
	check_addr(data, size);
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
