/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodestate.h: what `ibprep check --slurm` (Slurm's HealthCheckProgram) does
 * to its own node, decided from the node's state in Slurm and the check.
 *
 * The rules:
 *  - a node fault (a finding of severity fail and class node) on a node
 *    that is not drained and has no reason: drain it, reason
 *    "spank-ib: <the first such finding>";
 *  - drained by spank-ib (reason starting "spank-ib: ") and still faulty
 *    with another first finding: update the reason; with the same one:
 *    nothing;
 *  - drained by spank-ib and healthy again: resume;
 *  - a reason that is not spank-ib's (an admin's, NHC's "NHC: ...", Slurm's
 *    own "Not responding"): never touched, healthy or not;
 *  - healthy and not drained by spank-ib: nothing.
 * "Nothing" means no call to Slurm at all: an unchanged node costs one
 * query.
 *
 * Pure functions over text and flags; no globals; any context.
 */
#ifndef IBPREP_NODESTATE_H
#define IBPREP_NODESTATE_H

#include <stdbool.h>
#include <stddef.h>

#include "ibprep/finding.h"

#define IBP_DRAIN_PREFIX "spank-ib: "
/* Longest reason spank-ib writes (Slurm keeps more; scontrol's listing stays readable). */
#define IBP_DRAIN_REASON_MAX 256

struct ibp_node_state {
	char name[IBP_NODE_MAX];
	char state[96];                        /* "IDLE+DRAIN" */
	bool drain;                            /* the DRAIN flag (DRAINING/DRAINED) */
	char reason[IBP_DRAIN_REASON_MAX * 2]; /* without " [user@time]", "" none */
};

/*
 * Parses one line of `scontrol show node -o NODE` ("NodeName=n1 ...
 * State=IDLE+DRAIN ... Reason=spank-ib: ... [root@2026-12-01T14:00:00] ...").
 * 0, -ENOENT (not NODE's line), -EINVAL (no State=).
 */
int ibp_node_state_parse(const char *line, const char *node, struct ibp_node_state *st);

enum ibp_drain_action {
	IBP_DRAIN_NOTHING = 0,
	IBP_DRAIN_SET,    /* scontrol update nodename=N state=drain reason=R */
	IBP_DRAIN_UPDATE, /* the same, our drain with a new first finding */
	IBP_DRAIN_RESUME, /* scontrol update nodename=N state=resume */
};

/* True when REASON is spank-ib's own. */
bool ibp_drain_reason_ours(const char *reason);

/*
 * The action for node state ST given the check: NODE_FAULT (a node-class
 * failure was found) and the reason spank-ib would write, OUR_REASON
 * (ibp_drain_reason() of the findings; ignored when healthy).
 */
enum ibp_drain_action ibp_drain_decide(const struct ibp_node_state *st, bool node_fault,
				       const char *our_reason);

/*
 * The reason spank-ib writes for F: "spank-ib: " + the first node-class
 * failure's one-line text (ibp_finding_format, DEFAULT_NODE for its node)
 * + " (+N more)" when there are others, cut to IBP_DRAIN_REASON_MAX - 1 with
 * "...".  Returns false (BUF "") when F has no node-class failure.
 */
bool ibp_drain_reason(const struct ibp_findings *f, const char *default_node, char *buf,
		      size_t len);

const char *ibp_drain_action_name(enum ibp_drain_action a); /* "nothing", "drain" ... */

#endif
