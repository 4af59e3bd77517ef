/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * topology_conf.h: the switch hierarchy Slurm already knows, read from the
 * same files Slurm reads (topology/tree).
 *
 *   topology.conf (every release):
 *     SwitchName=leaf01 Nodes=gpu[001-016] LinkSpeed=400
 *     SwitchName=spine1 Switches=leaf[01-32]
 *   topology.yaml (25.05 and later; the tree form only):
 *     - topology: fabric
 *       cluster_default: true
 *       tree:
 *         switches:
 *           - switch: spine1
 *             children: leaf[01-32]
 *           - switch: leaf01
 *             nodes: gpu[001-016]
 *   SLURM_TOPOLOGY_ADDR=spine1.leaf01.gpu001 with
 *   SLURM_TOPOLOGY_ADDR_PATTERN=switch.switch.node (one task's own path).
 *
 * Nodes= and Switches= take Slurm's host list syntax (hostlist.h).  Keys
 * are case-insensitive; '#' starts a comment; a line ending in '\' goes on
 * on the next one (as Slurm's parser).  A switch may be defined once, have
 * at most one parent and appear before or after its parent; a node may be
 * under one switch only (otherwise the blame of a node's cable would be
 * ambiguous); a node under no switch is allowed and has no leaf.  Nesting
 * of any depth is allowed, cycles are refused.
 *
 * The files come from the admin (the plugin takes the path only from
 * plugstack.conf and only when root owns it) or from the command line; they
 * are still parsed as untrusted text: every malformed line is a message
 * naming the file, the line and what was wrong, never a crash, and sizes
 * are capped (IBP_TOPOLOGY_MAX_* ) before allocation grows with them.
 *
 * Plain data, no globals; any context.  The core never prints.
 */
#ifndef IBPREP_TOPOLOGY_CONF_H
#define IBPREP_TOPOLOGY_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/finding.h"

#define IBP_TOPOLOGY_MAX_SWITCHES 65536
#define IBP_TOPOLOGY_MAX_NODES    262144
#define IBP_TOPOLOGY_MAX_FILE     (16u << 20) /* bytes of a topology file */
#define IBP_TOPOLOGY_MAX_DEPTH    16

struct ibp_switch {
	char name[IBP_NODE_MAX];
	int parent;          /* switch index, -1 for a root */
	unsigned depth;      /* 0 for a root */
	unsigned link_speed; /* LinkSpeed= / link_speed:, 0 when not given */
	size_t n_nodes;      /* nodes directly under it (> 0: a leaf) */
	size_t n_children;   /* switches directly under it */
	unsigned line;       /* where it was defined */
};

struct ibp_topology {
	struct ibp_switch *sw; /* owned */
	size_t n_sw, cap_sw;
	char (*nodes)[IBP_NODE_MAX]; /* owned; every node under some switch */
	int *node_leaf;              /* owned; switch index of nodes[i] */
	size_t n_nodes, cap_nodes;
	size_t *order;           /* owned; node indices sorted by name, for lookups */
	size_t *sw_order;        /* owned; switch indices sorted by name */
	char source[16];         /* "topology.conf", "topology.yaml", "" */
	char name[IBP_NODE_MAX]; /* the yaml topology chosen, "" for .conf */
};

/* Zeroes T (an empty topology: every node has no leaf). */
void ibp_topology_init(struct ibp_topology *t);
void ibp_topology_release(struct ibp_topology *t);

/*
 * Parses topology.conf text (LEN bytes, need not be NUL-terminated) into T
 * (initialised, empty).  NAME names the source in messages.  0, or -EINVAL
 * with ERR = "NAME:LINE: what" ("topology.conf:7: switch 'leaf02' has two
 * parents: 'spine1' (line 3) and 'spine2'"), -E2BIG past a cap, -ENOMEM.
 * On error T is released.
 */
int ibp_topology_parse_conf(struct ibp_topology *t, const char *text, size_t len, const char *name,
			    char *err, size_t errlen);

/*
 * Parses topology.yaml text: the subset Slurm documents (a sequence of
 * topologies, each "topology: NAME", "cluster_default: BOOL" and one of
 * "tree:", "block:", "flat:"; a tree's "switches:" is a sequence of
 * "switch: NAME" with "children:", "nodes:", "link_speed:").  The tree
 * topology with cluster_default true is taken, else the first tree one;
 * WANT (may be NULL) picks one by name.  Values are host lists, plain,
 * quoted, a flow sequence [a, b] or a block sequence of "- item" lines.
 * Anchors, aliases, tags and multi-line scalars are refused with a message.
 * -ENOENT (ERR says so) when there is no tree topology.
 */
int ibp_topology_parse_yaml(struct ibp_topology *t, const char *text, size_t len, const char *name,
			    const char *want, char *err, size_t errlen);

/*
 * Reads PATH (at most IBP_TOPOLOGY_MAX_FILE bytes, O_CLOEXEC) and parses it
 * as yaml when the name ends in ".yaml" or ".yml", else as topology.conf.
 * -errno of open/read with ERR naming the file, or the parse error.
 */
int ibp_topology_load_file(struct ibp_topology *t, const char *path, char *err, size_t errlen);
/* The same from an open file (the caller checked who owns it); NAME for messages and the format. */
int ibp_topology_load_fd(struct ibp_topology *t, int fd, const char *name, char *err,
			 size_t errlen);

/* Index of node NAME in t->nodes, or -1 (O(log n)). */
long ibp_topology_node(const struct ibp_topology *t, const char *name);

/* The leaf switch index of node NAME, or -1 when it is under no switch. */
int ibp_topology_leaf_of(const struct ibp_topology *t, const char *name);

/* Index of switch NAME, or -1. */
int ibp_topology_switch(const struct ibp_topology *t, const char *name);

/* The deepest switch that is an ancestor of (or equal to) both A and B, -1 none. */
int ibp_topology_common(const struct ibp_topology *t, int a, int b);

/*
 * One task's own path from SLURM_TOPOLOGY_ADDR and _PATTERN: "s1.leaf3.n7"
 * with "switch.switch.node" gives the switches root first in SW (at most
 * MAX), their count in N_SW and the node name in NODE.  The pattern must
 * have the same number of parts, every part "switch" but the last "node".
 * 0 or -EINVAL with ERR.  A node under no switch has ADDR = its name and
 * PATTERN = "node".
 */
int ibp_topology_parse_addr(const char *addr, const char *pattern, char (*sw)[IBP_NODE_MAX],
			    size_t max, size_t *n_sw, char *node, size_t nodelen, char *err,
			    size_t errlen);

#endif
