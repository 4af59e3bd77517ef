/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_ib.h: the plugin's internal interfaces (not installed).
 *
 * spank_ib.c defines the slurm_spank_* symbols and dispatches on
 * spank_context() to ib_local.c (srun, sbatch, salloc), the slurmstepd
 * files (ib_remote.c init_post_opt and exit, ib_report.c user_init and the
 * report, ib_test.c the cross-node test, ib_task.c task_init) and
 * ib_prolog.c (the job prolog/epilog).  ib_options.c holds the user options,
 * ib_args.c the admin's plugstack.conf arguments.  The parsers are pure
 * functions over caller-owned structs so the unit tests can drive them
 * without Slurm.
 */
#ifndef SPANK_IB_H
#define SPANK_IB_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <slurm/spank.h>

#include "ibprep/conf.h"
#include "ibprep/finding.h"
#include "ibprep/health.h"
#include "ibprep/place.h"
#include "ibprep/policy.h"
#include "ibprep/topo.h"

/* ---- user options (--ib-*) ---- */

enum spank_ib_check { SPANK_IB_CHECK_OFF = 0, SPANK_IB_CHECK_FAIL, SPANK_IB_CHECK_WARN };
enum spank_ib_affinity { SPANK_IB_AFF_OFF = 0, SPANK_IB_AFF_ON, SPANK_IB_AFF_VERBOSE };
enum spank_ib_env { SPANK_IB_ENV_AUTO = 0, SPANK_IB_ENV_ON, SPANK_IB_ENV_FORCE, SPANK_IB_ENV_OFF };
enum spank_ib_report { SPANK_IB_REPORT_OFF = 0, SPANK_IB_REPORT_TEXT, SPANK_IB_REPORT_JSON };
enum spank_ib_test { SPANK_IB_TEST_OFF = 0, SPANK_IB_TEST_QUICK, SPANK_IB_TEST_FULL };

/* Which option: the spank_option val of each entry of the table. */
enum spank_ib_opt {
	SPANK_IB_OPT_CHECK = 1,
	SPANK_IB_OPT_AFFINITY,
	SPANK_IB_OPT_ENV,
	SPANK_IB_OPT_REPORT,
	SPANK_IB_OPT_TEST,
	SPANK_IB_OPT_WATCH,
	SPANK_IB_OPT_REQUEUE,
	SPANK_IB_OPT_N, /* one past the last */
};

struct spank_ib_opts {
	enum spank_ib_check check;
	enum spank_ib_affinity affinity;
	enum spank_ib_env env;
	enum spank_ib_report report;
	char report_file[PATH_MAX]; /* "" = stderr; may hold %n (node) and %j (job) */
	enum spank_ib_test test;
	enum ibp_watch_action
	    watch;                /* --ib-watch: the user's (DEFAULT: the admin's watch_action=) */
	bool requeue;             /* --ib-requeue: the user opts in (requeue=user) */
	bool set[SPANK_IB_OPT_N]; /* given on the command line (wins over the env) */
	bool
	    check_warn_by_user; /* --ib-check=warn asked for, test not enforced: test fails only warn */
	bool test_by_user;      /* --ib-test (or SPANK_IB_TEST) asked for, not only enforce=test */
};

void spank_ib_opts_init(struct spank_ib_opts *o);

/*
 * Applies one option value.  ARG NULL = the option given without a value.
 * Idempotent (SPANK may call an option's callback twice).  0, or -EINVAL
 * with ERR naming the option, the value and what is accepted.
 */
int spank_ib_opt_parse(struct spank_ib_opts *o, enum spank_ib_opt which, const char *arg, char *err,
		       size_t errlen);

/*
 * Fills every option not given on the command line from its environment
 * variable (SPANK_IB_CHECK ...; the pyxis convention): GET returns the
 * variable's value or NULL.  An empty variable is ignored.  0 or -EINVAL
 * (ERR names the variable).
 */
typedef const char *(*spank_ib_getenv_fn)(void *ctx, const char *name);
int spank_ib_opts_from_env(struct spank_ib_opts *o, spank_ib_getenv_fn get, void *ctx, char *err,
			   size_t errlen);

const char *spank_ib_opt_name(enum spank_ib_opt which);   /* "ib-check" */
const char *spank_ib_opt_envvar(enum spank_ib_opt which); /* "SPANK_IB_CHECK" */

/* The option table, registered with spank_option_register() in every context. */
struct spank_option;
extern struct spank_option spank_ib_option_table[];

/* The plugin's one copy of the user's options, filled by the option callbacks. */
struct spank_ib_opts *spank_ib_user_opts(void);

/* ---- admin arguments (plugstack.conf, config=: conf.h's parser) ---- */

/* This machine's short host name (gethostname up to the first dot). 0 or -errno. */
int spank_ib_short_hostname(char *buf, size_t len);

/* ---- the verdict cache (ib_cache.c) and draining (ib_drain.c) ---- */

/* Whose verdict a record is: this host, the job's id and uid (ids may be reused). */
struct spank_ib_cache_key {
	const char *host; /* a plain name ([A-Za-z0-9._-]); anything else is not cached */
	uint32_t job_id;
	uint32_t uid;
};

/*
 * Opens the cache directory DIR (root's, 0700, on a root-only path:
 * rootpath.h), creating it 0700 when missing and CREATE.  The fd, or -errno
 * with WHY naming what is wrong (then: no caching for this step).
 */
int spank_ib_cache_open(const char *dir, bool create, char *why, size_t len);
/*
 * Appends the cached node findings of K when younger than TTL s.  0, -ENOENT
 * (miss), -EBADMSG (a record refused: cut short, or bytes after it) or
 * -ENOMEM.  The verdict and the peer lookup below share one record format
 * and its loader and writer (ib_cache.c).
 */
int spank_ib_cache_load(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			struct ibp_findings *f);
/*
 * The records of an open cache file FD (the loader's checks of its owner
 * and mode done): as spank_ib_cache_load, all or nothing.  The fuzz
 * target's way in.
 */
int spank_ib_cache_read(int fd, const struct spank_ib_cache_key *k, unsigned ttl,
			struct ibp_findings *f);
/* Keeps F's node-class findings only.  Root only (a no-op otherwise).  0 or -errno. */
int spank_ib_cache_store(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			 const struct ibp_findings *f);
/* Removes K's verdict and its peer lookup (the job's end).  0 or -errno. */
int spank_ib_cache_drop(int dfd, const struct spank_ib_cache_key *k);

struct spank_ib_lookup_answer;
/*
 * The step's peer lookup kept for the job's later steps on the node (the
 * same directory, key and TTL as the verdict; ib_cache.c): load 0 or
 * -ENOENT (miss), -EBADMSG (a record refused); a record holds 1 or 2 names,
 * each with a numeric address.  Store: root only (a no-op otherwise), 0 or
 * -errno.  spank_ib_lookup_cache_read is the loader past its checks of the
 * file's owner and mode (the fuzz target's way in).
 */
int spank_ib_lookup_cache_load(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
			       struct spank_ib_lookup_answer *a);
int spank_ib_lookup_cache_read(int fd, const struct spank_ib_cache_key *k, unsigned ttl,
			       struct spank_ib_lookup_answer *a);
int spank_ib_lookup_cache_store(int dfd, const struct spank_ib_cache_key *k, unsigned ttl,
				const struct spank_ib_lookup_answer *a);

/* ---- the Slurm API, looked up in the process (ib_slurmapi.c; no spank_* calls) ---- */

/* This host's Slurm NodeName from slurm.conf (not the job's env).  0 or -errno. */
int spank_ib_node_name(const char *host, char *buf, size_t len);
/* Drains NODE with REASON through the Slurm API.  0 or -errno, ERR set. */
int spank_ib_drain(const char *node, const char *reason, char *err, size_t errlen);

/* What slurmctld says of a job (never the job's environment). */
struct spank_ib_job {
	uint32_t state;    /* job_state: base state and flags */
	bool batch;        /* a batch job (only those can be requeued) */
	bool requeue;      /* the job allows requeue (--requeue, JobRequeue=1) */
	unsigned restarts; /* restart_cnt: how often it was requeued */
	time_t begin;      /* eligible_time: the begin time (0: none) */
	char admin_comment[512];
	char exc_nodes[512];
};

/* slurm_load_job.  0, -ENOENT (no such job), -EIO (ERR: Slurm's error), -ENOSYS. */
int spank_ib_job_load(uint32_t job, struct spank_ib_job *out, char *err, size_t errlen);
/* The job is pending (already requeued, or not started). */
bool spank_ib_job_pending(const struct spank_ib_job *j);
/* The job's nodes are still ending its last run (JOB_COMPLETING). */
bool spank_ib_job_completing(const struct spank_ib_job *j);
/* slurm_notify_job: TEXT on srun's (salloc's) stderr or the batch job's. 0 or -errno, ERR. */
int spank_ib_job_notify(uint32_t job, const char *text, char *err, size_t errlen);
/* slurm_kill_job_step: SIG to every task of the step on every node.  0 or -errno, ERR. */
int spank_ib_step_signal(uint32_t job, uint32_t step, int sig, char *err, size_t errlen);
/* slurm_requeue; *SLURM_ERRNO gets Slurm's error code on failure.  0 or -errno, ERR. */
int spank_ib_job_requeue(uint32_t job, int *slurm_errno, char *err, size_t errlen);
/*
 * slurm_update_job of the fields given: BEGIN (0: unchanged), ADMIN_COMMENT
 * and EXC_NODES (NULL: unchanged).  Root's (or the owner's) call.  0 or -errno, ERR.
 */
int spank_ib_job_update(uint32_t job, time_t begin, const char *admin_comment,
			const char *exc_nodes, char *err, size_t errlen);
/* KillWait of this process's slurm.conf as Slurm loaded it (30 when unknown). */
unsigned spank_ib_kill_wait(void);
/* The file of the Slurm library this process runs (libslurmfull's path).  0 or -errno. */
int spank_ib_slurm_library(char *buf, size_t len);

/* ---- requeue after a node fault (ib_requeue.c; no spank_* calls) ---- */

enum spank_ib_requeue_outcome {
	SPANK_IB_REQUEUE_DONE = 0,    /* requeued, NODE excluded, begin time set */
	SPANK_IB_REQUEUE_ALREADY,     /* another node requeued it first */
	SPANK_IB_REQUEUE_NOT_ALLOWED, /* not a batch job, or the job does not allow requeue */
	SPANK_IB_REQUEUE_BOUND,       /* restart_cnt reached requeue_max */
	SPANK_IB_REQUEUE_FAILED,      /* Slurm said no, or could not be asked */
};

struct spank_ib_requeue_req {
	uint32_t job;
	unsigned max;     /* requeue_max=: requeue while slurmctld's restart_cnt is below it */
	int begin_s;      /* requeue_begin=: seconds until it may start again; -1 auto */
	const char *node; /* this node's NodeName, excluded from the job's next runs */
	/*
	 * When set: called once the requeue is decided and before it is made,
	 * with "requeueing job J without N (run R of at most M); it may start
	 * again at HH:MM:SS", while the job still runs and can be told (once
	 * requeued, its steps are killed and a message printed later is lost).
	 */
	void (*announce)(void *arg, const char *text);
	void *announce_arg;
};

/*
 * Requeues job R->job when slurmctld says it may be and the bound allows
 * (ib_requeue.c says why no loop is possible and why the begin time is
 * safe).  WHAT gets one sentence for the user and slurmd's log.  Root.
 */
enum spank_ib_requeue_outcome spank_ib_requeue(const struct spank_ib_requeue_req *r, char *what,
					       size_t len);
/*
 * What spank_ib_requeue would do now, without doing it: DONE (WHAT:
 * "requeueing job J without N (run R of at most M)"), or its refusal.  For
 * the job's message, which must go out while the job still runs.
 */
enum spank_ib_requeue_outcome spank_ib_requeue_check(const struct spank_ib_requeue_req *r,
						     char *what, size_t len);
/*
 * spank_ib_requeue of JOB without this node (NODE, its NodeName when known,
 * else slurm.conf's for HOST, else HOST), by CONF's requeue_max= and
 * requeue_begin=, with ANNOUNCE (may be NULL) as in spank_ib_requeue_req.  Root.
 */
struct ibp_conf;
enum spank_ib_requeue_outcome spank_ib_requeue_here(uint32_t job, const struct ibp_conf *conf,
						    const char *host, const char *node,
						    void (*announce)(void *arg, const char *text),
						    void *announce_arg, char *what, size_t len);
/*
 * Seconds between the end of the requeued run's step on the node that
 * requeued it and the job's begin time: what the job's nodes take to end
 * the rest of the run (other steps, epilog, the messages to slurmctld).
 */
#define SPANK_IB_REQUEUE_SETTLE_S 10
/*
 * The begin time a requeued job J needs at NOW, once the step that
 * requeued it has ended on this node: NOW + SPANK_IB_REQUEUE_SETTLE_S when
 * J is pending and still completing (slurmctld has not finished the
 * requeue) and its begin time is earlier; 0 when nothing is to be done.
 */
time_t spank_ib_requeue_settle_begin(const struct spank_ib_job *j, time_t now);
/*
 * Applies spank_ib_requeue_settle_begin to JOB (slurm_load_job, then
 * slurm_update_job of the begin time): 1 when set (WHAT says to when), 0
 * when nothing was to be done, -errno (WHAT: why).  Root; slurm_spank_exit
 * of a step that requeued the job, or saw it requeued (ib_requeue.c: why).
 */
int spank_ib_requeue_settle(uint32_t job, char *what, size_t len);

/*
 * What the cross-node test's findings TF (as the child's decoder gave
 * them, before they are reworded as this node's) ask of this node, SELF
 * (its NodeName) on HOST.  SELF: the test suspects this node itself
 * (rdmatest_node_failed about it: every one of its links failed, both
 * ways, with two or more peers that pass elsewhere); the job is to be
 * requeued without it.  JOB_FAULT: so, but the step also has a job fault,
 * which would fail it on any node: nothing is requeued.  NONE: another
 * node is suspected, or none: its neighbours do nothing, so one requeue.
 */
enum spank_ib_test_blame {
	SPANK_IB_BLAME_NONE = 0,
	SPANK_IB_BLAME_SELF,
	SPANK_IB_BLAME_JOB_FAULT,
};
enum spank_ib_test_blame spank_ib_test_blame(const struct ibp_findings *tf, const char *self,
					     const char *host);
/*
 * The requeue the test's blame asked for (spank_ib_requeue_here of JOB
 * without NODE), made by the watcher's one-shot run from user_init
 * (spank_ib_requeue_now) or, when that did not say how it went, in
 * slurm_spank_exit: from Slurm 24.11 the API called in user_init itself
 * deadlocks slurmstepd.  The job is told before it is requeued
 * ("spank-ib: HOST: requeueing job J without N ..."), then INTENT (may be
 * NULL) is called, then the requeue is made; told why when it is not (the
 * bound, --no-requeue), as long as it still runs.  WHAT says what happened
 * for slurmd's log, with "(the job could not be told: ...)" when the
 * announcement failed.  Root (uid 0; no capability is needed).
 */
enum spank_ib_requeue_outcome spank_ib_requeue_blamed(uint32_t job, const struct ibp_conf *conf,
						      const char *host, const char *node,
						      void (*intent)(void *arg), void *intent_arg,
						      char *what, size_t len);
/*
 * Drains this host's node (its NodeName into NODE) for F's drainable
 * findings, with the one drain reason (ibp_drain_reason, IBP_DRAIN_PREFIX).
 * True when drained.  WHAT says what happened: "draining N", "draining N
 * failed: ERR", "not draining: no NodeName for host H in slurm.conf (ERR)";
 * "" (false) when nothing in F drains.  Root's callbacks only.
 */
bool spank_ib_drain_node(const char *host, const struct ibp_findings *f, char *node, size_t nodelen,
			 char *what, size_t whatlen);

/*
 * Drains NODE (its Slurm NodeName; "": the one-shot finds it in slurm.conf
 * for this host) with REASON (ibp_drain_reason's) through the step's
 * watcher run once (--drain-now=yes, ib_watch.c) from a process of its own,
 * as uid 0 without capabilities, with a clean environment and no argument
 * but the plugin's, bounded (5 s) and reaped: the job prolog's process
 * cannot use Slurm's API from Slurm 24.11 on.  0 with DRAINED the node
 * drained; -errno with WHAT saying why not.  Root (the job prolog).
 */
struct spank_ib_state;
int spank_ib_drain_now(const struct spank_ib_state *st, const char *node, const char *reason,
		       char *drained, size_t drainedlen, char *what, size_t whatlen);

/* ---- the step's GPUs and bootstrap interface (ib_step.c) ---- */

/* How a CUDA_VISIBLE_DEVICES list relates to the step's gres indices. */
enum spank_ib_cvd {
	SPANK_IB_CVD_UNKNOWN = 0, /* decide per list: the step's indices, else relative */
	SPANK_IB_CVD_ABSOLUTE,    /* the node's gres indices (no device cgroup) */
	SPANK_IB_CVD_RELATIVE,    /* 0..n-1 into the step's list (ConstrainDevices=yes) */
};

/*
 * The mode, from the step-wide CUDA_VISIBLE_DEVICES Slurm put beside
 * SLURM_STEP_GPUS (STEP, N_STEP): the same list is absolute, 0..n-1 for a
 * different list is relative, anything else (or nothing) unknown.
 */
enum spank_ib_cvd spank_ib_cvd_mode(const char *step_cvd, const unsigned *step, size_t n_step);

/*
 * The node's GPU indices (PCI bus order) a task's CUDA_VISIBLE_DEVICES names:
 * through the step's list STEP (N_STEP, 0 = no list: the node's indices).
 * Count, or -EINVAL (not an index list: UUIDs, MIG names, garbage), -ERANGE
 * (a GPU outside the step or the node), -E2BIG; ERR says which.
 */
int spank_ib_map_cvd(const char *cvd, const unsigned *step, size_t n_step, enum spank_ib_cvd mode,
		     size_t n_node_gpus, unsigned *out, size_t max, char *err, size_t errlen);

/*
 * Name lookups: NAMES[0..N) (at most SPANK_IB_RESOLVE_MAX) into numeric
 * ADDRS within TIMEOUT_MS, RCS 0 or -errno each (-ETIMEDOUT, -ENOENT ...).
 * 0, or -errno when nothing could be asked (WHY says why).
 */
#define SPANK_IB_RESOLVE_MAX 8
#define SPANK_IB_ADDR_MAX    64
typedef int (*spank_ib_resolve_fn)(void *ctx, const char *const *names, size_t n,
				   unsigned timeout_ms, char (*addrs)[SPANK_IB_ADDR_MAX], int *rcs,
				   char *why, size_t whylen);
/*
 * The lookups in a child, never in slurmstepd: CTX a struct
 * spank_ib_child_spec (the helper, the job's uid and gid) whose helper runs
 * "env --resolve-child"; killed at TIMEOUT_MS.  Root or user_init.
 */
int spank_ib_resolve_child(void *ctx, const char *const *names, size_t n, unsigned timeout_ms,
			   char (*addrs)[SPANK_IB_ADDR_MAX], int *rcs, char *why, size_t whylen);

/*
 * NCCL_SOCKET_IFNAME: the interface whose route reaches the next node of
 * NODELIST after NODEID (skipping SELF), its name resolved by RESOLVE
 * within TIMEOUT_MS; else the one that reaches LAUNCH_ADDR (srun's host,
 * resolved in the same call when it is a name).  HOW says which and why.
 * 0 (peer), 1 (launch node fallback), -ENOENT (none: IFNAME "").
 */
int spank_ib_bootstrap_ifname(const char *nodelist, uint32_t nodeid, const char *self,
			      const char *launch_addr, unsigned timeout_ms,
			      spank_ib_resolve_fn resolve, void *resolve_ctx, char *ifname,
			      size_t len, char *how, size_t howlen);

/* ---- a job's share of the node's test ports (ib_ports.c) ---- */

/*
 * One of at most CAP slots of job JOB in the root-only directory DFD
 * (cache_dir, spank_ib_cache_open): a lock file held as long as the step
 * holds a test port, freed by the kernel if the step dies.  0 (S holds
 * it), -EBUSY (the job holds CAP already), -errno.  Root (init_post_opt).
 */
struct spank_ib_port_slot {
	int dfd, fd; /* -1: none */
	char name[64];
};
int spank_ib_port_slot_take(struct spank_ib_port_slot *s, int dfd, uint32_t job, unsigned cap);
/* Lets go (removes the file first); safe twice and on a slot never taken. */
void spank_ib_port_slot_release(struct spank_ib_port_slot *s);

/* ---- the step's nodes by Slurm's word (ib_nodes.c) ---- */

/*
 * NODELIST (the job's SLURM_STEP_NODELIST) against what slurmstepd was
 * launched with: NNODES nodes (S_JOB_NNODES), SELF (this node's NodeName)
 * at NODEID (S_JOB_NODEID).  0, or -EINVAL with WHY saying what differs.
 */
int spank_ib_nodelist_check(const char *nodelist, uint32_t nnodes, uint32_t nodeid,
			    const char *self, char *why, size_t len);
/* Whether host lists A and B name the same nodes in the same order (false if either is bad). */
bool spank_ib_same_nodes(const char *a, const char *b);
/*
 * slurmctld's node list of step JOB.STEP into OUT (slurm_job_step_layout_get
 * in the process that loaded the plugin; one RPC bounded by MessageTimeout).
 * 0; -ENOSYS (no Slurm API here), -EIO (slurmctld said no: ERR), -ENAMETOOLONG.
 */
int spank_ib_ctld_step_nodes(uint32_t job, uint32_t step, char *out, size_t len, char *err,
			     size_t errlen);

/* ---- the cross-node test's unprivileged child (ib_child.c) ---- */

/* Between fork and exec, async-signal-safe (every child of slurmstepd's). */
void spank_ib_child_close_from(int first); /* every fd from FIRST on closed */
void spank_ib_child_default_signals(void); /* every signal SIG_DFL, none blocked */
/* A child that runs FN (set up, execve or _exit) without copying slurmstepd. */
pid_t spank_ib_child_spawn(int (*fn)(void *), void *arg);
/* The same, FN in a copy (may wait, may use libc's setresuid): every other child's way. */
pid_t spank_ib_child_fork(int (*fn)(void *), void *arg);

struct ibp_pipe_plan;
struct ibp_rdmatest_result;

struct spank_ib_child_spec {
	const char *helper; /* absolute path, checked with spank_ib_helper_check */
	uint32_t uid, gid;  /* the child's user and group, for good */
	/*
	 * The test's system user (test_user=): no supplementary group, never
	 * root.  Otherwise the job's user: its group alone; a root job's child
	 * keeps uid 0 without any capability.  spank_ib_child_run sets it.
	 */
	bool system_user;
	const int *listen_fds; /* the bound listeners, in candidate order (fds 3.. of the child) */
	size_t n_listen_fds;
	double budget_s;        /* the whole run, killed (SIGKILL) past it */
	const char *what;       /* for messages: "the cross-node test" (NULL: a default) */
	const char *budget_why; /* after the budget in the timeout message: " (...)" or NULL */
};

/* The helper fixed at build time (SPANK_IB_HELPER: $(BINDIR)/ibprep). */
const char *spank_ib_helper_default(void);

/* The test's user when test_user= is not set (SPANK_IB_TEST_USER: _spank-ib). */
const char *spank_ib_test_user_default(void);

/*
 * The test child's identity: user NAME's uid and primary group, looked up
 * through NSS (root's callbacks: init_post_opt).  0; -ENOENT (no such
 * user); -EPERM (root, group root, or JOB_UID itself: whatever runs as the
 * job's owner is theirs); -errno of the lookup.  ERR says which.
 */
int spank_ib_test_user(const char *name, uint32_t job_uid, uint32_t *uid, uint32_t *gid, char *err,
		       size_t errlen);

/*
 * PATH may be exec'ed as root's child: absolute, a regular file, owned by
 * root, not writable by group or others, in a root-owned directory that
 * only root can write.  0 or -errno with ERR, which names the helper by
 * WHAT ("test helper", "watcher"): "WHAT PATH: why".
 */
int spank_ib_helper_check(const char *what, const char *path, char *err, size_t errlen);

/*
 * Forks, drops to SPEC's UID/GID for good (as below), execs HELPER with
 * ARGV (argv[0] the helper), the listeners at fds 3.., IN on its stdin,
 * and reads its stdout into OUT (at most OUT_CAP - 1 bytes: more is
 * refused) until EOF, all bounded by BUDGET_S, then SIGKILL by PID and a
 * bounded reap.  0 with OUT_LEN set; -ETIMEDOUT (ERR: "WHAT did not finish
 * in N s"), -EBADMSG (too much output), -ECHILD (no output: ERR says how
 * the child ended), -errno.  Same callers as spank_ib_child_run.
 */
int spank_ib_helper_run(const struct spank_ib_child_spec *spec, char *const argv[],
			const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
			size_t *out_len, char *err, size_t errlen);

/* spank_ib_helper_run in two halves, for a child that runs while the caller works. */
struct spank_ib_helper_proc {
	pid_t pid; /* 0: not running (never started, or finished) */
	int out_fd;
	int pidfd;        /* the child's, for the reap (-1: none); closed by the finish */
	int64_t deadline; /* CLOCK_MONOTONIC ns: the budget counts from the start */
	double budget_s;
	const char *what, *budget_why, *helper;
	int status; /* the child's wait status, once finished and reaped */
};
/* Starts the child and writes IN.  0, or -errno with ERR (nothing to finish). */
int spank_ib_helper_start(const struct spank_ib_child_spec *spec, char *const argv[],
			  const uint8_t *in, size_t in_len, struct spank_ib_helper_proc *hp,
			  char *err, size_t errlen);
/* Reads its output and reaps it, by the start's deadline; as spank_ib_helper_run. */
int spank_ib_helper_finish(struct spank_ib_helper_proc *hp, uint8_t *out, size_t out_cap,
			   size_t *out_len, char *err, size_t errlen);

/*
 * A name lookup (spank_ib_resolve_child) started early and collected
 * later, so that it runs while the node is checked (ib_remote.c).
 * spank_ib_lookup_start starts "env --resolve-child" for NAMES (copied;
 * trouble kept for the collection); spank_ib_lookup_collect is a
 * spank_ib_resolve_fn over it (CTX the struct, the same names, once);
 * spank_ib_lookup_abandon kills and reaps a lookup nobody collected.
 */
#define SPANK_IB_NAME_MAX 256
/* The step's names and the numeric address of each: a lookup that found them all. */
struct spank_ib_lookup_answer {
	size_t n;
	char names[2][SPANK_IB_NAME_MAX];
	char addrs[2][SPANK_IB_ADDR_MAX];
};

struct spank_ib_lookup {
	bool started;
	int rc; /* the start's: 0 running, -errno (WHY); -EALREADY once collected */
	char names[2][SPANK_IB_NAME_MAX];
	size_t n;
	char why[512];
	struct spank_ib_helper_proc hp;
	bool cached;   /* ANS from the job's earlier step (no helper runs) */
	bool answered; /* ANS from this step's helper: every name found */
	struct spank_ib_lookup_answer ans;
};
/*
 * A lookup whose answer is ANS (the job's earlier step, ib_cache.c): no
 * helper; spank_ib_lookup_collect gives ANS for the same names.
 */
void spank_ib_lookup_cached(struct spank_ib_lookup *lk, const struct spank_ib_lookup_answer *ans);
void spank_ib_lookup_start(struct spank_ib_lookup *lk, const struct spank_ib_child_spec *spec,
			   const char *const *names, size_t n, unsigned timeout_ms);
int spank_ib_lookup_collect(void *ctx, const char *const *names, size_t n, unsigned timeout_ms,
			    char (*addrs)[SPANK_IB_ADDR_MAX], int *rcs, char *why, size_t whylen);
void spank_ib_lookup_abandon(struct spank_ib_lookup *lk);
/* The names spank_ib_bootstrap_ifname will ask RESOLVE for (NAMES[0..2)): their count. */
size_t spank_ib_bootstrap_names(const char *nodelist, uint32_t nodeid, const char *self,
				const char *launch_addr, char (*names)[SPANK_IB_NAME_MAX]);

/*
 * Forks, becomes UID/GID for good as the test's system user (system_user
 * set: no supplementary group, not dumpable, no_new_privs, killed with
 * slurmstepd), execs "HELPER rdmatest --child" with the listeners at fds
 * 3.. and PLAN on its stdin, and decodes its result into RES and F
 * (appended) when the child exited 0.  Bounded by BUDGET_S, then SIGKILL by
 * PID and a bounded reap.  0; -ETIMEDOUT (killed at the deadline: ERR says
 * "did not finish in N s"), -EBADMSG (result refused), -ECHILD (no result:
 * ERR says how the child ended), -EPERM (UID or GID 0), -errno.  Call with
 * the job's user as effective uid and root as real or saved uid
 * (user_init), or as root.
 */
int spank_ib_child_run(const struct spank_ib_child_spec *spec, const struct ibp_pipe_plan *plan,
		       struct ibp_rdmatest_result *res, struct ibp_findings *f, char *err,
		       size_t errlen);

/*
 * waitpid(PID) without blocking past DEADLINE (CLOCK_MONOTONIC ns,
 * deadline.h): 1 reaped (STATUS set) or no longer ours, 0 still there.
 * PIDFD: the child's (spank_ib_pidfd_open), woken by its exit; the
 * caller's, left open; -1: short sleeps.
 */
int spank_ib_reap_until(pid_t pid, int pidfd, int64_t deadline, int *status);
/*
 * pidfd_open(PID): call it while PID is our unreaped child, before any
 * wait, so that it names that child.  The fd (O_CLOEXEC), or -1 (no
 * pidfd_open before Linux 5.3, or the child is already gone).
 */
int spank_ib_pidfd_open(pid_t pid);

/*
 * munged's socket from slurm.conf's AuthInfo=socket=PATH (ib_slurmconf.c),
 * for a site that set it there and not in munge_socket=.  CONF is the
 * slurm.conf of slurmstepd itself (its own SLURM_CONF, never the job's,
 * else the build's SLURM_CONFDIR); only its owner (root or SlurmUser) may
 * write it.  Include files are not followed.  0 with OUT set; -ENOENT (no AuthInfo socket), -EPERM, -EINVAL
 * (a value that is no absolute printable path), -errno.
 */
int spank_ib_authinfo_socket(const char *conf, char *out, size_t len);

/* Parses slurm.conf TEXT (LEN bytes) for AuthInfo's socket=; as above. */
int spank_ib_authinfo_parse(const char *text, size_t len, char *out, size_t outlen);

/* slurmstepd's slurm.conf: its own SLURM_CONF, else SPANK_IB_SLURM_CONF (build time). */
const char *spank_ib_slurm_conf_path(void);

/* ---- the plugin's state across callbacks (one per process) ---- */

#define SPANK_IB_MSG_MAX    8192
#define SPANK_IB_REPORT_MAX (1024 * 1024) /* bytes of one --ib-report */

struct spank_ib_lw;      /* ib_linkwatch.c: the ports as the step started */
struct spank_ib_watcher; /* ib_watch.c: the step's watcher process */

/* One event of the step's watcher, as it reported it (ib_watch.c), for the report. */
#define SPANK_IB_WATCH_KEEP 32
struct spank_ib_watch_line {
	char when[40];
	char kind[16], code[IBP_CODE_MAX], severity[8];
	char device[IBP_DEV_MAX];
	int port;
	char observed[IBP_TEXT_MAX * 2];
	char done[512]; /* what the watcher did: told the job, ended the step, drained ... */
	bool drained;
};

struct spank_ib_state {
	struct ibp_conf conf;
	bool conf_ok; /* plugstack.conf parsed */
	/*
	 * slurmstepd or slurmd: the arguments or config= refused (why, naming
	 * the file); nothing is acted on, every step fails in task_init with
	 * this as its message and nothing is drained.  "" when loaded.
	 */
	char refused[PATH_MAX + 640];
	char host[IBP_NODE_MAX];          /* short host name (gethostname) */
	struct spank_ib_opts eff;         /* options in effect: command line > env > enforce */
	bool active;                      /* any work to do in this step */
	struct spank_ib_node *node;       /* remote context, NULL until the node's work ran */
	struct spank_ib_lw *lw;           /* remote context, NULL when the links are not watched */
	struct spank_ib_watcher *watcher; /* remote context, NULL when no watcher runs */
	struct spank_ib_watch_line watch_lines[SPANK_IB_WATCH_KEEP]; /* its events (exit) */
	size_t watch_n;
	bool watch_drained;      /* the watcher drained the node (the step end does not again) */
	bool watch_requeue;      /* the watcher began a requeue and did not say how it went */
	bool requeue_settle;     /* this step requeued the job or began to: settled at exit */
	char watch_summary[256]; /* "8 ports every 1 s" */
};

/* spank_ib.c: the one state of this process. */
struct spank_ib_state *spank_ib_state(void);

/*
 * Merges the user's options, the environment defaults (GET) and the admin's
 * enforce= into EFF and says whether anything is to be done.  0 or -EINVAL
 * (ERR set) for a bad environment value.
 */
int spank_ib_effective(const struct spank_ib_opts *user, const struct ibp_conf *conf,
		       spank_ib_getenv_fn get, void *ctx, struct spank_ib_opts *eff, bool *active,
		       char *err, size_t errlen);

/* Context handlers (ib_local.c, ib_remote.c ...); SP is the callback's handle. */
int spank_ib_local_init(spank_t sp, struct spank_ib_state *st);
int spank_ib_local_post_opt(spank_t sp, struct spank_ib_state *st);
int spank_ib_remote_post_opt(spank_t sp, struct spank_ib_state *st);
int spank_ib_remote_user_init(spank_t sp, struct spank_ib_state *st);
int spank_ib_remote_task_init(spank_t sp, struct spank_ib_state *st);
int spank_ib_remote_exit(spank_t sp, struct spank_ib_state *st);
int spank_ib_job_prolog(spank_t sp, struct spank_ib_state *st);
int spank_ib_job_epilog(spank_t sp, struct spank_ib_state *st);

/* ---- the remote context's node (shared by ib_remote/report/test/task/prolog.c) ---- */

/* Code of the plugin's own trouble (a bad path, an unreadable topology): never drains. */
#define SPANK_IB_SETUP_CODE IBP_SETUP_CODE

struct spank_ib_node {
	int verdict;  /* 0 pass, -1 fail the step */
	bool printed; /* the node's message went out (user_init) */
	bool cached;  /* the health findings came from the cache */
	bool drained; /* this step drained the node */
	uint32_t job_id, step_id, ntasks, nodeid, nnodes;
	uint32_t uid;                /* the job's (S_JOB_UID): part of the cache key */
	char nodename[IBP_NODE_MAX]; /* Slurm NodeName ("" when not needed) */
	/*
	 * What the user sees, printed once per node in user_init (who sees
	 * what: spank_ib(8)): MSG, the lines of a failing step (slurm_error,
	 * "error:"); NOTE, what the user can act on without a failure
	 * (slurm_spank_log, no "error:").  The node's own warnings go to
	 * slurmd's log at once (spank_ib_node_log), not here.
	 */
	char msg[SPANK_IB_MSG_MAX];
	size_t msg_len;
	char note[SPANK_IB_MSG_MAX];
	size_t note_len;
	struct ibp_findings findings;
	struct ibp_health_input in;
	bool have_in;
	bool
	    in_link_counters; /* in.inv was read with the link counters: the link watch's first read */
	struct ibp_topo topo;
	bool have_topo;
	struct ibp_placement pl;
	bool have_pl;
	/* the step's GPUs (SLURM_STEP_GPUS, else SLURM_JOB_GPUS), PCI bus order indices */
	bool have_step_gpus;
	unsigned step_gpus[IBP_PLACE_MAX_GPUS];
	size_t n_step_gpus;
	char gpus_from[32];
	enum spank_ib_cvd cvd_mode;
	/* NCCL_SOCKET_IFNAME: the interface reaching the step's other nodes */
	char ifname[64];
	char ifname_how[512];
	struct spank_ib_lookup lookup; /* its peer's name, looked up in the helper */
	double work_ms;
	/* the cross-node test's links, kept for results_log= (written at exit, as root) */
	/*
	 * slurmctld's node list of the step (NULL: not asked, or not given:
	 * CTLD_ERR), asked in init_post_opt as root when the test's links may
	 * be kept: from Slurm 24.11 on, its API called in user_init aborts
	 * slurmstepd ("auth_g_create: pthread_rwlock_rdlock(): Resource
	 * deadlock avoided").
	 */
	char *ctld_nodes;
	char ctld_err[256];
	struct ibp_link_record *test_records;
	size_t n_test_records;
	struct spank_ib_rdmatest *test; /* ib_test.c: the listener and what the child needs */
	char test_said[96]; /* the test's outcome for --ib-report: "pass with 3 nodes ..." */
	/*
	 * The node the test suspects is this one (spank_ib_test_blame, user_init):
	 * its NodeName, to requeue the job without it in exit, as root; "" none.
	 */
	char blamed[IBP_NODE_MAX];
};

/* The job's environment through spank_getenv (data from the user). */
struct spank_ib_job_env {
	spank_t sp;
	char buf[4096];
};

/* The getter env.h wants, over spank_getenv (CTX is the spank_t). */
int spank_ib_env_get(void *ctx, const char *name, char *buf, size_t len);

/*
 * ib_remote.c: the node's lines for the user, printed once in user_init:
 * SAY for a failing step's (error), NOTE for the rest the user should see.
 */
__attribute__((format(printf, 2, 3))) void spank_ib_node_say(struct spank_ib_node *n,
							     const char *fmt, ...);
__attribute__((format(printf, 2, 3))) void spank_ib_node_note(struct spank_ib_node *n,
							      const char *fmt, ...);

/* Where a finding goes (who must act on it: spank_ib(8), WHO SEES WHAT). */
enum spank_ib_audience {
	SPANK_IB_TO_NOBODY = 0, /* ok, or information */
	SPANK_IB_TO_LOG,        /* the node's warning: slurmd's log (node_warnings=log) */
	SPANK_IB_TO_USER,       /* the user can act, nothing failed: slurm_spank_log */
	SPANK_IB_TO_USER_ERROR, /* it fails the step: slurm_error, in srun's output */
};
/*
 * X's audience: FAILS says whether it fails the step.  A failure the step
 * survives (--ib-check=warn) and a job's warning are the user's; a warning
 * about the node or the fabric is the admin's, in slurmd's log, unless
 * node_warnings=user.
 */
enum spank_ib_audience spank_ib_audience_of(const struct spank_ib_state *st,
					    const struct ibp_finding *x, bool fails);
/*
 * Says X to its audience as "spank-ib: [warning: ]NODE: ..." (SUFFIX
 * appended): to slurmd's log at once, or into N's lines for user_init.
 */
void spank_ib_finding_say(const struct spank_ib_state *st, struct spank_ib_node *n,
			  const struct ibp_finding *x, enum spank_ib_audience to,
			  const char *suffix);
/* N's lines to the user (user_init): the error lines, then the notes. */
void spank_ib_node_print(struct spank_ib_node *n);
__attribute__((format(printf, 3, 4))) void
spank_ib_setup_finding(struct spank_ib_node *n, enum ibp_severity sev, const char *fmt, ...);
/* Root: the node's health from sysfs ROOT, or this job's cached verdict in CACHE_DIR. */
void spank_ib_load_health(struct spank_ib_state *st, struct spank_ib_node *n,
			  struct spank_ib_job_env *je, const char *root, const char *cache_dir);
/* Composes the node's message and the verdict; drains when asked to (root). */
void spank_ib_judge(struct spank_ib_state *st, struct spank_ib_node *n);
void spank_ib_node_free(struct spank_ib_node *n);

/* ib_report.c: a task's row of the text report; the report (as the job's user). */
void spank_ib_view_row(const struct spank_ib_node *n, size_t r, const struct ibp_place_view *t,
		       char *buf, size_t len);
void spank_ib_write_report(const struct spank_ib_state *st, const struct spank_ib_node *n);

/* ib_test.c: the cross-node test (user_init; its child as the test's user). */
void spank_ib_run_test(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n);
/* The test's notes (NCCL_CROSS_NIC): no fault, the user's to act on, listed by --ib-report. */
bool spank_ib_finding_is_note(const struct ibp_finding *x);
/*
 * init_post_opt, root: binds the test's listener (privileged ports), finds
 * munged's socket and the helper.  0 or -ENOMEM; trouble is kept as the
 * test's own findings, reported by spank_ib_run_test.
 */
int spank_ib_test_prepare(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n);
/* Closes the listener and frees the test's state; safe twice and on NULL. */
void spank_ib_test_release(struct spank_ib_node *n);

/*
 * ib_results.c: the test's links kept (user_init), then appended to
 * results_log= (exit, root); only this node's links, from a result of this
 * node and a node list slurmctld confirms, else a warning in TF says why.
 */
struct ibp_rdmatest_result;
void spank_ib_keep_results(const struct spank_ib_state *st, struct spank_ib_node *n,
			   const char *nodelist, const struct ibp_rdmatest_result *res,
			   struct ibp_findings *tf);
void spank_ib_write_results(const struct spank_ib_state *st, struct spank_ib_node *n);

/* ---- link events during the step (ib_linkwatch.c) ---- */

/*
 * init_post_opt (root): the first read of every port under ROOT (the
 * expanded sysfs_root), kept with the job's ids and user in ST->lw: taken
 * from INV, the inventory just read from ROOT with the link counters
 * (IBP_INVENTORY_LINK_COUNTERS or a full load), or read here when INV is
 * NULL or cannot give it (linkwatch.h).  Call only for a step whose health
 * is checked; a failure leaves ST->lw NULL.
 */
struct ibp_inventory;
void spank_ib_lw_start(spank_t sp, struct spank_ib_state *st, const char *root,
		       const struct ibp_inventory *inv, uint32_t job, uint32_t step);
/*
 * slurm_spank_exit (root): reads the ports of the first read again (what
 * the comparison uses: state and link counters), logs one line to slurmd's
 * log, drains on a link fault (drain=yes), appends the step-end section to
 * the user's --ib-report file as the user, and frees ST->lw.  No-op when
 * nothing was kept.
 */
void spank_ib_lw_end(spank_t sp, struct spank_ib_state *st);
void spank_ib_lw_free(struct spank_ib_state *st);
/* The ports read at step start (every port but ignore_hcas=), at most MAX. */
struct ibp_lw_port_id;
size_t spank_ib_lw_ports(const struct spank_ib_state *st, struct ibp_lw_port_id *ids, size_t max);
/* The ports as read at the step's start (spank_ib_lw_start), or NULL. */
const struct ibp_linkwatch *spank_ib_lw_before(const struct spank_ib_state *st);

/* ---- the watch while the step runs (ib_watch.c; the process: spank/watcher/) ---- */

/* The watcher fixed at build time (SPANK_IB_WATCHER: $(LIBEXECDIR)/spank-ib-watch). */
const char *spank_ib_watcher_default(void);
/*
 * init_post_opt (root), for a step whose health is checked and whose start
 * checks passed: starts the watcher on the step's ports under ROOT (the
 * expanded sysfs_root).  Trouble goes to slurmd's log; the step runs anyway.
 */
void spank_ib_watch_start(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n,
			  const char *root);
/*
 * user_init, the node the cross-node test suspects (NODE, its NodeName):
 * the watcher run once with --requeue-now as uid 0 without capabilities,
 * bounded (10 s) and reaped, tells the job and requeues it without NODE
 * while its batch script still waits for this step (the Slurm API cannot
 * be called in user_init itself from 24.11 on).  True when it said how it
 * went (slurmd's log has it); false: the caller leaves the requeue to
 * slurm_spank_exit (a requeue already made is then found in the queue).
 */
bool spank_ib_requeue_now(struct spank_ib_state *st, const struct spank_ib_node *n,
			  const char *node);
/* slurm_spank_exit (root): stops the watcher (bounded), logs what it did, keeps its events. */
void spank_ib_watch_stop(struct spank_ib_state *st);
void spank_ib_watch_free(struct spank_ib_state *st);

enum spank_ib_write_how {
	SPANK_IB_WRITE_REPLACE,     /* the file's content becomes DATA */
	SPANK_IB_WRITE_APPEND,      /* DATA appended */
	SPANK_IB_WRITE_JSON_MEMBER, /* DATA ',"key":value}\n' replaces the object's final '}' */
};

/*
 * The one writer of the user's --ib-report file (ib_userfile.c): DATA to
 * PATH (created 0644 if missing) as the job's user UID/GID/GROUPS (N_GROUPS
 * -1: the primary group only, or at user_init the step's groups), never as
 * root on a path the user chose, never in this process: a child that has
 * become the user for good writes, killed past 2 s (a hung NFS or FUSE
 * mount), reaped within 1 s more or left if the kernel holds it.  HOW:
 * replace, append, or insert a JSON member so the file stays one document.
 * Regular files only (checked after the open), O_NOFOLLOW, non-blocking (a
 * FIFO never blocks the step), at most SPANK_IB_REPORT_MAX bytes.  0 or
 * -errno with ERR "PATH: why" (PATH escaped).
 */
int spank_ib_write_as_user(const char *path, uid_t uid, gid_t gid, const gid_t *groups,
			   int n_groups, enum spank_ib_write_how how, const char *data, size_t len,
			   char *err, size_t errlen);

#endif
