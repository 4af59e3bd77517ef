/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodestate.h: what `ibprep check --slurm` (Slurm's HealthCheckProgram) does
 * to its own node, decided from the node's state in Slurm and the check.
 *
 * The rules:
 *  - a node fault (a finding of severity fail and class node) on a node
 *    that is not drained and has no reason: drain it, reason
 *    "spank-ib check: <the first such finding>";
 *  - drained by the check (its own reason, ibp_drain_reason_ours()) and
 *    still faulty with another first finding: update the reason; with the
 *    same one: nothing;
 *  - drained by the check and healthy again: resume;
 *  - a reason that is not the check's (the plugin's drain=yes "spank-ib: ...",
 *    which may stand for a fault only a step sees, an admin's, NHC's
 *    "NHC: ...", Slurm's own "Not responding"): never touched, healthy or not;
 *  - healthy and not drained by the check: nothing.
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

#define IBP_DRAIN_PREFIX       "spank-ib: "       /* the plugin's drain=yes */
#define IBP_DRAIN_PREFIX_CHECK "spank-ib check: " /* ibprep check --slurm */
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

/*
 * True when REASON is a drain of `ibprep check --slurm` on NODE (the node's
 * Slurm name): it starts with IBP_DRAIN_PREFIX_CHECK, or it is the previous
 * version's "spank-ib: NODE: ..." (the plugin's reasons never name the node).
 */
bool ibp_drain_reason_ours(const char *reason, const char *node);

/*
 * The action for node state ST (its name and reason) given the check:
 * NODE_FAULT (a node-class failure was found) and the reason the check
 * would write, OUR_REASON (ibp_drain_reason() of the findings with
 * IBP_DRAIN_PREFIX_CHECK; ignored when healthy).
 */
enum ibp_drain_action ibp_drain_decide(const struct ibp_node_state *st, bool node_fault,
				       const char *our_reason);

/*
 * The one drain reason of spank-ib (the plugin's verdict, its link watch and
 * the check): PREFIX + the first drainable finding (ibp_finding_drainable)
 * as "DEVICE port P: OBSERVED, expected EXPECTED" (ibp_finding_format without
 * the node, which is the drained one, nor the fix; escaped, one line) +
 * " (+N more)" when there are other drainable findings, cut to
 * IBP_DRAIN_REASON_MAX - 1 with "...":
 *   "spank-ib: mlx5_3 port 1: link width 1X, expected 4X (+1 more)"
 * Returns false (BUF "") when F has no drainable finding.
 */
bool ibp_drain_reason(const struct ibp_findings *f, const char *prefix, char *buf, size_t len);

/*
 * A drain reason that came from another process (the plugin's argument to
 * `spank-ib-watch --drain-now`), checked and made safe before it goes to
 * slurmctld: it must start with IBP_DRAIN_PREFIX, say something after it
 * and be shorter than IBP_DRAIN_REASON_MAX.  Into OUT (LEN bytes) with
 * every byte that is neither printable ASCII nor part of well-formed UTF-8
 * (control bytes, newline, DEL, C1 controls, a sequence cut short by
 * ibp_format_cut's "...") as '?': one line that scontrol, sinfo and a
 * terminal show as text.  Text that is clean (ibp_drain_reason's, escaped)
 * is kept byte for byte.  0, or -EINVAL (OUT "").
 */
int ibp_drain_reason_clean(const char *in, char *out, size_t len);

const char *ibp_drain_action_name(enum ibp_drain_action a); /* "nothing", "drain" ... */

#endif
