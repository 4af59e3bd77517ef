/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch_args.h: the arguments of spank-ib-watch (spank_ib_watch.c), the
 * plugin's only (ib_watch.c builds them), checked anyway: a pure parser over
 * a caller-owned struct, so the unit tests drive it without Slurm.
 *
 * Three modes: the step's watch (--host, --root, --ports, --parent), the
 * one requeue after the cross-node test (--requeue-now=yes: --job, --host,
 * --parent) and the one drain of the job prolog (--drain-now=yes: --host,
 * --reason, --parent; --node when the plugin knows the NodeName).
 */
#ifndef SPANK_IB_WATCH_ARGS_H
#define SPANK_IB_WATCH_ARGS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ibprep/linkwatch.h"
#include "ibprep/nodestate.h"

struct spank_ib_watch_cfg {
	uint32_t job, step;
	char host[IBP_NODE_MAX];
	char node[IBP_NODE_MAX]; /* Slurm NodeName, "" unknown: no drain (the watch) */
	char root[PATH_MAX];
	struct ibp_lw_port_id ports[IBP_LW_MAX_PORTS];
	size_t n_ports;
	struct ibp_linkwatch base; /* the plugin's read at the step's start (--baseline) */
	bool have_base;
	double interval_s, flap_s;
	bool end;
	int sig;
	char sig_name[32];
	bool drain, requeue;
	unsigned requeue_max;
	int requeue_begin_s;
	char results_log[PATH_MAX];
	uint64_t results_log_max;
	char slurm_library[PATH_MAX];
	char slurm_conf[PATH_MAX]; /* "" SLURM_CONF of its environment */
	bool requeue_now;
	bool drain_now;
	char reason[IBP_DRAIN_REASON_MAX]; /* --drain-now: ibp_drain_reason_clean's */
	pid_t parent;
	int64_t first_read_ns; /* CLOCK_MONOTONIC; 0: an interval after its start (--first-read) */
};

/*
 * ARGV[1..ARGC) ("--KEY=VALUE" each) into C (zeroed first, then the
 * defaults).  0, or -EINVAL / -ENOENT with ERR naming the argument (its text
 * only when printable) or what is missing.
 */
int spank_ib_watch_parse_args(int argc, char **argv, struct spank_ib_watch_cfg *c, char *err,
			      size_t errlen);

#endif
