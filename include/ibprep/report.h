/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * report.h: the check's results for people (a table and finding lines) and
 * for programs (one JSON document, schema 1, described in docs/json.md).
 *
 * Both take what ibp_health_gather/ibp_health_check produced and write to a
 * stream (open_memstream gives a buffer); they never read the system.  The
 * SPANK glue uses ibp_report_finding_line() for its one-line messages.
 */
#ifndef IBPREP_REPORT_H
#define IBPREP_REPORT_H

#include <stdio.h>

#include "ibprep/finding.h"
#include "ibprep/health.h"
#include "ibprep/json.h"
#include "ibprep/place.h"
#include "ibprep/policy.h"
#include "ibprep/topo.h"

#define IBP_REPORT_SCHEMA 1

/*
 * The table: one line per port (device, port, state, physical state, rate,
 * link layer, PCI address, NUMA node, verdict), then one line per finding
 * ("fail NODE: DEVICE port P: OBSERVED, expected EXPECTED: FIX"; "info" for
 * severity ok), then "verdict: ...".  0 or -EIO.
 */
int ibp_report_text(FILE *out, const struct ibp_health_input *in, const struct ibp_policy *p,
		    const struct ibp_findings *f);

/* Writes the JSON document with J (which the caller initialised and finishes). */
int ibp_report_json(struct ibp_json *j, const struct ibp_health_input *in,
		    const struct ibp_policy *p, const struct ibp_findings *f);

/*
 * Writes the key "findings" and the array of F with J: every command's JSON
 * uses this one form (code, severity, class, node — DEFAULT_NODE where the
 * finding names none — device, port, observed, expected, fix; null for a
 * device, port, expected or fix the finding does not have).
 */
int ibp_report_findings_json(struct ibp_json *j, const struct ibp_findings *f,
			     const char *default_node);

/*
 * One task's row as a JSON object with J: the one schema of `ibprep place
 * --json` and the plugin's --ib-report=json (docs/json.md): local_rank,
 * gpus (PCI bus IDs), gpu_indices (PCI bus order: partitions share a bus
 * ID), hcas ("mlx5_0:1", or a Slingshot interface name), distances (one per
 * HCA), cpus and mems (lists, null when the row has none).
 */
int ibp_report_task_json(struct ibp_json *j, const struct ibp_topo *t,
			 const struct ibp_place_view *v);

/* "fail gpu017: mlx5_3 port 1: ...": the severity word, then ibp_finding_format. */
int ibp_report_finding_line(const struct ibp_finding *x, const char *default_node, char *buf,
			    size_t len);

#endif
