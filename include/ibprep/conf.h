/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conf.h: the one parser of spank_ib.conf(5): the plugin's arguments on its
 * plugstack.conf line, the config= file, and `ibprep check --config FILE`.
 *
 * A file has one KEY=VALUE per line; blank lines and spaces around key and
 * value are ignored; '#' starts a comment on a line of its own or after
 * whitespace (policy.h's tokenizer, ibp_policy_parse_text).  Policy keys go
 * to policy.h; the plugin's own keys (sysfs_root=, drain=, enforce= ...)
 * are parsed and checked here too, so that what `ibprep check --config`
 * accepts is exactly what the plugin loads, and both refuse a file with
 * the same message ("FILE:LINE: unknown key 'x'").  Only the plugin acts on
 * the plugin's keys.  config= names a file on the plugin's line only: in a
 * file it is an error (it does not nest).
 *
 * Plain data, no allocation kept; never prints; any context.
 */
#ifndef IBPREP_CONF_H
#define IBPREP_CONF_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/policy.h"

#define IBP_CONF_MAX_BYTES               (64 * 1024) /* a config file's size */
#define IBP_CONF_RESULTS_LOG_MAX_DEFAULT (64ull << 20)
#define IBP_CONF_PORTS_PER_JOB_DEFAULT   16

/* enforce=: what runs on every step without a user flag */
enum ibp_conf_enforce {
	IBP_ENFORCE_CHECK = 1u << 0,
	IBP_ENFORCE_AFFINITY = 1u << 1,
	IBP_ENFORCE_ENV = 1u << 2,
	IBP_ENFORCE_TEST = 1u << 3,
};

/* watch_action=: what the step's watcher does about a link that fails; ordered (a user may raise it) */
enum ibp_watch_action {
	IBP_WATCH_ACTION_DEFAULT = 0, /* a user's: the admin's setting */
	IBP_WATCH_ACTION_REPORT,      /* drain (drain=yes), tell the job, record */
	IBP_WATCH_ACTION_END,         /* and end the step on a link down for good */
};

/* requeue=: who wants a batch job requeued after a node fault */
enum ibp_requeue_policy {
	IBP_REQUEUE_NO = 0, /* never */
	IBP_REQUEUE_USER,   /* when the user opts in (--ib-requeue, SPANK_IB_REQUEUE) */
	IBP_REQUEUE_YES,    /* every batch job that Slurm allows to be */
};

struct ibp_conf {
	char sysfs_root[PATH_MAX];    /* "/" ; %n = short host name */
	char topology[PATH_MAX];      /* "" = live hwloc discovery; %n allowed */
	char cache_dir[PATH_MAX];     /* where verdicts are kept for cache_ttl; %n allowed */
	char munge_socket[PATH_MAX];  /* "" = slurm.conf's AuthInfo=socket=, else libmunge's */
	char test_helper[PATH_MAX];   /* "" = the build's helper */
	char test_user[64];           /* "" = the build's (_spank-ib): the test child's user */
	char results_log[PATH_MAX];   /* "" = off; the tested links, one JSON line each; %n */
	uint64_t results_log_max;     /* bytes before rotation to .1 (64 MiB) */
	char topology_conf[PATH_MAX]; /* "" = none: Slurm's topology.conf/.yaml for the blame */
	unsigned enforce;             /* IBP_ENFORCE_* */
	bool bind;                    /* apply CPU and memory binding (yes) */
	bool drain;                   /* drain the node on a node fault (no) */
	bool prolog_check;            /* check in the job prolog (no) */
	unsigned cache_ttl;           /* seconds a job's later steps reuse a verdict (60) */
	enum ibp_watch_action watch_action; /* watch_action=report|end (report) */
	int watch_signal;            /* watch_signal= what an ended step's tasks get (SIGTERM) */
	char watch_helper[PATH_MAX]; /* "" = the build's watcher */
	enum ibp_requeue_policy requeue; /* requeue=no|user|yes (user) */
	unsigned requeue_max;            /* requeue_max= while restart_cnt is below it (1) */
	int requeue_begin_s;             /* requeue_begin= seconds after the requeue, -1 auto */
	bool node_warnings_user; /* node_warnings=user: the node's warnings in srun's output too */
	unsigned test_ports_per_job; /* test ports one job may hold at once on a node (8) */
	struct ibp_policy policy;    /* every other key */
	/*
	 * config= is checked for syntax but not read (the plugin in srun, sbatch
	 * and salloc: nothing there needs the admin's settings, so a root-only
	 * 0600 file works).
	 */
	bool no_config_files;
	char config[PATH_MAX]; /* the last config= file read ("" none), for messages */
};

void ibp_conf_init(struct ibp_conf *c);

/* True when KEY is one of the plugin's own keys (policy keys: ibp_policy_has_key). */
bool ibp_conf_has_key(const char *key);

/*
 * Applies one KEY and VALUE, a plugin or a policy key (not config=: it
 * names a file on the plugin's line only).  0, -ENOENT (unknown key),
 * -EINVAL (bad value); ERR "unknown key 'x'" / "bad value 'v' for key 'k':
 * expected ...".  A bad value leaves C as it was.
 */
int ibp_conf_set(struct ibp_conf *c, const char *key, const char *value, char *err, size_t errlen);

/*
 * The plugin's arguments (plugstack.conf words, each KEY=VALUE; NULL or
 * empty words skipped).  config=FILE (%n expanded with HOST) is read where
 * it appears, unless no_config_files, and only when root alone can change
 * it (rootpath.h: else ERR names the file, its owner and mode).  Later keys
 * override earlier ones.  0 or -errno with ERR naming the argument, or the
 * file and line.
 */
int ibp_conf_parse_args(struct ibp_conf *c, int ac, char **av, const char *host, char *err,
			size_t errlen);

/* A file's text (NAME for messages: "NAME:LINE: ..."); as policy.h's tokenizer. */
int ibp_conf_parse_text(struct ibp_conf *c, const char *text, size_t len, const char *name,
			char *err, size_t errlen);

#define IBP_CONF_ROOT_ONLY 1u /* the plugin's rule: a file only root can change */

/*
 * Reads the file PATH (a regular file, at most IBP_CONF_MAX_BYTES) into C.
 * With IBP_CONF_ROOT_ONLY it is opened through ibp_rootpath_open and
 * refused (-EPERM ...) when anyone but root could change it; ERR then
 * reads "config: WHY" (WHY names the file, its owner and mode).
 */
int ibp_conf_load_file(struct ibp_conf *c, const char *path, unsigned flags, char *err,
		       size_t errlen);

/*
 * Expands "%n" (HOST) and "%%" in TEMPLATE; "%j" with JOBID when JOBID is
 * non-NULL.  Any other '%' sequence is -EINVAL; a result that does not fit
 * is -ENAMETOOLONG.
 */
int ibp_conf_expand(const char *tmpl, const char *host, const char *jobid, char *out, size_t len);

/* "TERM", "SIGUSR1", "10" (1 to 64) -> the signal number.  0 or -EINVAL. */
int ibp_conf_parse_signal(const char *v, int *out);
/* "SIGTERM", else "signal N", in BUF. */
const char *ibp_conf_signal_name(int sig, char *buf, size_t len);

/* "64M", "1G", "512K", "4096" -> bytes; 0 or -EINVAL. */
int ibp_conf_parse_size(const char *s, uint64_t *out);

#endif
