/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_site.h: the parts of `ibprep check` that meet a site's own tools:
 * node mode (judge the memlock limit jobs inherit from slurmd), Slurm's
 * HealthCheckProgram (--slurm: drain and resume its own node) and
 * Prometheus (--prometheus, --textfile).  Command side: these print.
 */
#ifndef IBPREP_SITE_H
#define IBPREP_SITE_H

#include <stdbool.h>
#include <stddef.h>

#include "ibprep/finding.h"
#include "ibprep/health.h"
#include "ibprep/policy.h"
#include "ibprep/sysfs.h"

/*
 * Node mode by default: under NHC (which exports NHC_PID to its checks) or
 * as slurmd's HealthCheckProgram (SLURMD_NODENAME), and not inside a job
 * (no SLURM_JOB_ID): there a job's own limit is what matters.
 */
bool ibprep_node_mode_default(void);

/*
 * slurm.conf: $SLURM_CONF, else /etc/slurm/slurm.conf, else slurmd's
 * configless cache /run/slurm/conf/slurm.conf.  The path in BUF, or NULL
 * when none exists (*FROM then says what was tried).
 */
const char *ibprep_slurm_conf(char *buf, size_t len, const char **from);

/*
 * Node mode: sets IN's memlock from slurmd (found through SlurmdPidFile in
 * slurm.conf, read inside FS's root), or, when slurmd cannot be found or
 * trusted, appends a warning (memlock_unknown) saying why.  NODE expands %n.
 * 0 or -ENOMEM.
 */
int ibprep_node_memlock(struct ibp_health_input *in, const struct ibp_sysfs *fs, const char *node,
			struct ibp_findings *f);

/*
 * --slurm, before the check: Slurm's commands and configuration are there
 * (scontrol in PATH, or /usr/bin:/bin without PATH as slurmd runs it; a
 * slurm.conf).  0, or 2 with the message printed.
 */
int ibprep_slurm_ready(void);

/*
 * --slurm, after the check: drains or resumes this node as nodestate.h
 * decides (node: SLURMD_NODENAME, else the short host name); every
 * scontrol call bounded.  Prints what it did on OUT (stderr when stdout
 * carries a document: --json, --prometheus).  0, or 2 when Slurm could
 * not be asked or refused.
 */
int ibprep_slurm_apply(const struct ibp_findings *f, FILE *out);

struct ibprep_prom_opts {
	bool to_stdout;         /* --prometheus */
	const char *textfile;   /* --textfile DIR, or NULL */
	const char *topology;   /* --topology FILE, or NULL */
	const char *sysfs_root; /* --sysfs-root DIR, or NULL (live) */
	double duration_s;
};

/* Writes the metrics; 0, or 2 with the message printed (nothing partial is left). */
int ibprep_prom_emit(const struct ibprep_prom_opts *o, const struct ibp_health_input *in,
		     const struct ibp_policy *pol, const struct ibp_findings *f);

#endif
