/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * finding.h: what the checks found, as data.
 *
 * A problem on the machine is not an error of the code: every module hands
 * its observations to the caller as findings, and only the callers (the
 * ibprep command, the SPANK glue) decide how to show them.  The one-line text
 * form follows DESIGN.md:
 *
 *   gpu017: mlx5_3 port 1: link width 1X, expected 4X: reseat or replace the cable
 *
 * Fixed-size fields so findings can be copied, sent and kept without
 * ownership questions; text longer than a field is cut with "..." (never an
 * overflow).
 */
#ifndef IBPREP_FINDING_H
#define IBPREP_FINDING_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum ibp_severity {
	IBP_SEV_OK = 0,
	IBP_SEV_WARN = 1,
	IBP_SEV_FAIL = 2,
};

enum ibp_fault_class {
	IBP_CLASS_NODE = 0,   /* bad hardware or node setup: may drain */
	IBP_CLASS_JOB = 1,    /* the user's request or environment: never drains */
	IBP_CLASS_FABRIC = 2, /* a switch's links ("leaf07 uplinks"): never drains a node */
};

#define IBP_CODE_MAX 40
#define IBP_NODE_MAX 64
#define IBP_DEV_MAX  64
#define IBP_TEXT_MAX 192

struct ibp_finding {
	char code[IBP_CODE_MAX]; /* stable, snake_case: "port_not_active" */
	enum ibp_severity severity;
	enum ibp_fault_class fclass;
	char node[IBP_NODE_MAX];     /* "" = this node (filled in by the reporter) */
	char device[IBP_DEV_MAX];    /* "" = none (node-wide finding) */
	int port;                    /* 0 = none */
	char observed[IBP_TEXT_MAX]; /* "link width 1X" */
	char expected[IBP_TEXT_MAX]; /* "4X" ("" when nothing sensible) */
	char fix[IBP_TEXT_MAX];      /* "reseat or replace the cable" */
};

/* A growable list; zero-initialised is an empty list. */
struct ibp_findings {
	struct ibp_finding *v;
	size_t n, cap;
};

void ibp_findings_init(struct ibp_findings *f);
void ibp_findings_release(struct ibp_findings *f); /* frees, leaves it empty */

/* Appends a copy.  0 or -ENOMEM. */
int ibp_findings_add(struct ibp_findings *f, const struct ibp_finding *x);

/*
 * Builds and appends a finding.  DEVICE may be NULL, PORT 0; FIX may be NULL.
 * OBSERVED is printf-style; EXPECTED is a plain string (may be NULL).
 */
int ibp_findings_addf(struct ibp_findings *f, const char *code, enum ibp_severity sev,
		      enum ibp_fault_class fclass, const char *device, int port,
		      const char *expected, const char *fix, const char *observed_fmt, ...)
    __attribute__((format(printf, 9, 10)));
/* The same with the observed text's arguments as a va_list (callers' own wrappers). */
int ibp_findings_vaddf(struct ibp_findings *f, const char *code, enum ibp_severity sev,
		       enum ibp_fault_class fclass, const char *device, int port,
		       const char *expected, const char *fix, const char *observed_fmt, va_list ap)
    __attribute__((format(printf, 9, 0)));

/* The worst severity in the list (IBP_SEV_OK for an empty list). */
enum ibp_severity ibp_findings_worst(const struct ibp_findings *f);
/* "pass" (no warning), "warn" (warnings only), "fail" (any failure). */
const char *ibp_findings_verdict(const struct ibp_findings *f);

/* Count of findings of severity >= SEV and, when FCLASS >= 0, of that class. */
size_t ibp_findings_count(const struct ibp_findings *f, enum ibp_severity sev, int fclass);

/*
 * The code of a finding about the tool's own setup (a path it may not use,
 * a topology it cannot load): it counts toward the verdict but never drains.
 */
#define IBP_SETUP_CODE "spank_ib_setup"

/*
 * The one filter of what a verdict counts and what drains (the plugin's
 * step, its prolog, and the node check share it):
 *   counts     job faults and setup findings always; the node's own findings
 *              only when the health check was asked for (HEALTH)
 *   drainable  a failure of the node's own (class node, not setup)
 */
bool ibp_finding_counts(const struct ibp_finding *x, bool health);
bool ibp_finding_drainable(const struct ibp_finding *x);

const char *ibp_severity_name(enum ibp_severity s); /* "ok", "warn", "fail" */
const char *ibp_class_name(enum ibp_fault_class c); /* "node", "job", "fabric" */

/*
 * The one-line text of a finding, DESIGN.md's wording, without "spank-ib: ":
 * "NODE: DEVICE port P: OBSERVED, expected EXPECTED: FIX".  NODE is the
 * finding's node, or DEFAULT_NODE when that is empty.  The fields hold user
 * and sysfs text: the line is escaped for a log or a terminal
 * (ibp_text_escape).  Returns the length snprintf would have written for the
 * unescaped line (the caller may detect truncation).
 */
int ibp_finding_format(const struct ibp_finding *x, const char *default_node, char *buf,
		       size_t len);

#endif
