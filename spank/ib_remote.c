/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_remote.c: the slurmstepd side (remote context), init_post_opt and exit.
 *
 *   init_post_opt (root, once per node)  options in effect, then the node's
 *                                        work: inventory, health checks,
 *                                        topology, placement of every local
 *                                        task, the verdict, draining
 *   user_init     (job's user, once)     the node's message, the report
 *                                        (ib_report.c), the cross-node test
 *                                        (ib_test.c)
 *   task_init     (job's user, per task) the task's environment and binding
 *                                        (ib_task.c); returns the node's
 *                                        verdict, so a bad node fails the
 *                                        step on 22.05 too
 *   exit          (root)                 release
 *
 * The job prolog and epilog are in ib_prolog.c.
 *
 * Nothing here trusts the job's environment for anything beyond the user's
 * own step: paths and policy come from plugstack.conf, the node's name from
 * gethostname() and slurm.conf.  A value the user set is never replaced
 * unless --ib-env=force.  Every step is bounded: file reads, one hwloc load,
 * at most one RPC (drain).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "ibprep/env.h"
#include "ibprep/finding.h"
#include "ibprep/hca.h"
#include "ibprep/health.h"
#include "ibprep/place.h"
#include "ibprep/rootpath.h"
#include "ibprep/sysfs.h"
#include "ibprep/text.h"
#include "ibprep/topo.h"
#include "ibprep/topo_cache.h"

#include "spank_ib.h"

static const char *job_getenv(void *ctx, const char *name)
{
	struct spank_ib_job_env *je = ctx;

	if (spank_getenv(je->sp, name, je->buf, sizeof(je->buf)) != ESPANK_SUCCESS)
		return NULL;
	return je->buf;
}

/* The getter env.h wants, over spank_getenv (the job's or the task's environment). */
int spank_ib_env_get(void *ctx, const char *name, char *buf, size_t len)
{
	spank_err_t rc;

	if (len > INT32_MAX)
		len = INT32_MAX;
	rc = spank_getenv((spank_t)ctx, name, buf, (int)len);
	if (rc == ESPANK_SUCCESS)
		return (int)strlen(buf);
	if (rc == ESPANK_NOSPACE)
		return -ENOSPC;
	return -ENOENT;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Appends a formatted line to BUF (SIZE bytes, *LEN used); a cut says so rather than end mid-line. */
static void lines_add(char *buf, size_t size, size_t *len, const char *fmt, va_list ap)
{
	static const char cut[] = "spank-ib: (more lines cut)\n";
	int w;

	if (*len + sizeof(cut) >= size)
		return;
	w = vsnprintf(buf + *len, size - sizeof(cut) - *len, fmt, ap);
	if (w < 0)
		return;
	if ((size_t)w >= size - sizeof(cut) - *len) {
		*len = size - sizeof(cut);
		memcpy(buf + *len, cut, sizeof(cut));
		*len += sizeof(cut) - 1;
		return;
	}
	*len += (size_t)w;
}

__attribute__((format(printf, 2, 3))) void spank_ib_node_say(struct spank_ib_node *n,
							     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lines_add(n->msg, sizeof(n->msg), &n->msg_len, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) void spank_ib_node_note(struct spank_ib_node *n,
							      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lines_add(n->note, sizeof(n->note), &n->note_len, fmt, ap);
	va_end(ap);
}

enum spank_ib_audience spank_ib_audience_of(const struct spank_ib_state *st,
					    const struct ibp_finding *x, bool fails)
{
	if (x->severity == IBP_SEV_FAIL)
		return fails ? SPANK_IB_TO_USER_ERROR : SPANK_IB_TO_USER;
	if (x->severity != IBP_SEV_WARN)
		return SPANK_IB_TO_NOBODY;
	if (x->fclass == IBP_CLASS_JOB || st->conf.node_warnings_user)
		return SPANK_IB_TO_USER;
	return SPANK_IB_TO_LOG;
}

void spank_ib_finding_say(const struct spank_ib_state *st, struct spank_ib_node *n,
			  const struct ibp_finding *x, enum spank_ib_audience to,
			  const char *suffix)
{
	char line[1024];

	if (to == SPANK_IB_TO_NOBODY)
		return;
	ibp_finding_format(x, st->host, line, sizeof(line));
	if (to == SPANK_IB_TO_LOG)
		slurm_info("spank-ib: warning: %s%s", line, suffix);
	else if (to == SPANK_IB_TO_USER_ERROR && n->printed)
		slurm_error("spank-ib: %s%s", line, suffix);
	else if (to == SPANK_IB_TO_USER_ERROR)
		spank_ib_node_say(n, "spank-ib: %s%s\n", line, suffix);
	else if (n->printed)
		slurm_spank_log("spank-ib: warning: %s%s", line, suffix);
	else
		spank_ib_node_note(n, "spank-ib: warning: %s%s\n", line, suffix);
}

/* Prints each line of TEXT with LOG. */
static void print_lines(const char *text, void (*log)(const char *, ...))
{
	char *save = NULL, *copy = strdup(text);

	if (!copy)
		return;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		log("%s", l);
	free(copy);
}

void spank_ib_node_print(struct spank_ib_node *n)
{
	if (n->printed)
		return;
	n->printed = true;
	if (n->msg_len)
		print_lines(n->msg, slurm_error);
	if (n->note_len)
		print_lines(n->note, slurm_spank_log);
}

/* The plugin's own trouble, as a finding (never drains). */
__attribute__((format(printf, 3, 4))) void
spank_ib_setup_finding(struct spank_ib_node *n, enum ibp_severity sev, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ibp_findings_vaddf(&n->findings, SPANK_IB_SETUP_CODE, sev, IBP_CLASS_NODE, NULL, 0, NULL,
			   "check spank_ib's arguments in plugstack.conf", fmt, ap);
	va_end(ap);
}

/* SLURM_RLIMIT_MEMLOCK: the user's limit, which slurmstepd gives the tasks. */
static void memlock_from_env(struct spank_ib_node *n, struct spank_ib_job_env *je)
{
	const char *v = job_getenv(je, "SLURM_RLIMIT_MEMLOCK");
	uint64_t bytes;
	struct rlimit rl;

	if (v && !ibp_parse_u64(v, &bytes)) {
		n->in.memlock_source = IBP_MEMLOCK_USER;
		n->in.memlock_kb = bytes == (uint64_t)RLIM_INFINITY ? UINT64_MAX : bytes / 1024;
		return;
	}
	/* Not propagated: the tasks inherit slurmstepd's (slurmd's) limit. */
	if (!getrlimit(RLIMIT_MEMLOCK, &rl)) {
		n->in.memlock_source = IBP_MEMLOCK_SLURMD;
		n->in.memlock_kb = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur / 1024;
	}
}

/* The cross-node test's rails (and the fingerprint's) are the placement's fabric ports. */
static bool want_placement(const struct spank_ib_opts *e)
{
	return e->affinity != SPANK_IB_AFF_OFF || e->env != SPANK_IB_ENV_OFF ||
	       e->report != SPANK_IB_REPORT_OFF || e->test != SPANK_IB_TEST_OFF;
}

/*
 * sysfs_root steers root's reads (and, with drain=yes, whether the node is
 * drained): only root may be able to change it.  0, or a setup finding.
 */
static int check_root_only_dir(struct spank_ib_state *st, struct spank_ib_node *n, const char *key,
			       const char *path)
{
	char why[PATH_MAX + 512];
	int fd = ibp_rootpath_open(path, O_RDONLY, IBP_ROOTPATH_DIR, why, sizeof(why));

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -ENOENT)
		return 0; /* said by the open that follows ("cannot open") */
	spank_ib_setup_finding(n, st->eff.check == SPANK_IB_CHECK_OFF ? IBP_SEV_WARN : IBP_SEV_FAIL,
			       "%s: %s", key, why);
	return fd;
}

void spank_ib_load_health(struct spank_ib_state *st, struct spank_ib_node *n,
			  struct spank_ib_job_env *je, const char *root, const char *cache_dir)
{
	struct ibp_sysfs fs = {.root_fd = -1};
	struct ibp_findings scratch;
	struct spank_ib_cache_key key = {.host = st->host, .job_id = n->job_id, .uid = n->uid};
	int rc, cfd = -1;

	ibp_findings_init(&scratch);
	ibp_health_input_init(&n->in);
	n->have_in = true;
	if (check_root_only_dir(st, n, "sysfs_root", root))
		return;
	rc = ibp_sysfs_open(&fs, root);
	if (rc) {
		spank_ib_setup_finding(
		    n, st->eff.check == SPANK_IB_CHECK_OFF ? IBP_SEV_WARN : IBP_SEV_FAIL,
		    "sysfs_root %s: cannot open: %s", root, strerror(-rc));
		return;
	}
	if (st->eff.check != SPANK_IB_CHECK_OFF && st->conf.cache_ttl) {
		char why[PATH_MAX + 512];

		cfd = spank_ib_cache_open(cache_dir, geteuid() == 0, why, sizeof(why));
		if (cfd < 0)
			spank_ib_setup_finding(n, IBP_SEV_WARN,
					       "not caching verdicts: cache_dir %s", why);
	}
	if (cfd >= 0 && !spank_ib_cache_load(cfd, &key, st->conf.cache_ttl, &n->findings)) {
		/*
		 * A fresh verdict of this node for this job: the inventory for the
		 * placement only (hca.h, IBP_INVENTORY_PLACEMENT: no counters, no
		 * GID table on an InfiniBand port, none of what only the checks
		 * judge; a third of the files), with the link watch's counters when
		 * it starts from this read, and the fingerprint's when a test runs.
		 */
		unsigned flags = IBP_INVENTORY_PLACEMENT;

		if (st->eff.test != SPANK_IB_TEST_OFF)
			flags |= IBP_INVENTORY_FINGERPRINT;
		if (st->conf.policy.link_watch)
			flags |= IBP_INVENTORY_LINK_COUNTERS;
		n->cached = true;
		rc = 0;
		if (want_placement(&st->eff)) {
			rc = ibp_inventory_load_opts(&n->in.inv, &fs, flags, &scratch);
			n->in_link_counters = !rc && (flags & IBP_INVENTORY_LINK_COUNTERS);
		}
		/* The step's own faults (the user's memlock limit) are judged every step. */
		memlock_from_env(n, je);
		if (!rc)
			rc = ibp_health_check_job(&n->in, &st->conf.policy, &n->findings);
	} else {
		size_t before = n->findings.n;

		rc = ibp_health_gather(&n->in, &fs, &st->conf.policy, &n->findings);
		n->in_link_counters = !rc; /* a full load: every counter */
		if (!rc) {
			snprintf(n->in.node, sizeof(n->in.node), "%s", st->host);
			memlock_from_env(n, je);
			rc = ibp_health_check(&n->in, &st->conf.policy, &n->findings);
		}
		if (!rc && cfd >= 0) {
			struct ibp_findings mine = {.v = n->findings.v + before,
						    .n = n->findings.n - before};
			spank_ib_cache_store(cfd, &key, st->conf.cache_ttl, &mine);
		}
	}
	if (cfd >= 0)
		close(cfd);
	if (rc)
		spank_ib_setup_finding(n, IBP_SEV_FAIL, "reading %s: %s", root, strerror(-rc));
	ibp_findings_release(&scratch);
	ibp_sysfs_close(&fs);
}

/*
 * The step's GPUs on this node: SLURM_STEP_GPUS, else SLURM_JOB_GPUS (gres
 * indices, read as PCI bus order: docs/placement.md "Which GPUs").  Slurm sets them in
 * the step's environment before init_post_opt, together with the step-wide
 * CUDA_VISIBLE_DEVICES that tells whether the tasks' lists are relative.
 * A value that does not parse is a job fault: -EINVAL, no placement.
 */
static int read_step_gpus(struct spank_ib_node *n, spank_t sp)
{
	static const char *const vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"};
	char buf[1024], err[512];

	for (size_t i = 0; i < 2; i++) {
		bool all = false;
		int rc, c;

		rc = spank_ib_env_get(sp, vars[i], buf, sizeof(buf));
		if (rc == -ENOSPC) {
			ibp_findings_addf(&n->findings, "step_gpus", IBP_SEV_FAIL, IBP_CLASS_JOB,
					  NULL, 0, "a GPU list under 1024 characters",
					  "check the job's GPU request", "%s is too long", vars[i]);
			return -EINVAL;
		}
		if (rc <= 0)
			continue;
		c = ibp_env_parse_gpus(buf, vars[i], &n->topo, n->step_gpus, IBP_PLACE_MAX_GPUS,
				       &all, err, sizeof(err));
		if (c < 0) {
			ibp_findings_addf(
			    &n->findings, "step_gpus", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
			    "the step's gres indices of this node's GPUs",
			    "do not set Slurm's GPU variables by hand; check gres.conf "
			    "against the node's GPUs",
			    "%s; no placement", err[0] ? err : vars[i]);
			return -EINVAL;
		}
		snprintf(n->gpus_from, sizeof(n->gpus_from), "%s", vars[i]);
		if (all)
			return 0; /* every GPU: the default */
		n->have_step_gpus = true;
		n->n_step_gpus = (size_t)c;
		if (spank_ib_env_get(sp, "CUDA_VISIBLE_DEVICES", buf, sizeof(buf)) > 0)
			n->cvd_mode = spank_ib_cvd_mode(buf, n->step_gpus, n->n_step_gpus);
		return 0;
	}
	return 0;
}

/* NCCL_SOCKET_IFNAME's lookups: the helper is killed past this (ib_step.c). */
#define IFNAME_LOOKUP_MS 2000

/* The step's node list and srun's address, as NCCL_SOCKET_IFNAME's route needs them. */
static void ifname_inputs(struct spank_ib_job_env *je, char *nodelist, size_t nlen, char *launch,
			  size_t llen)
{
	const char *v;

	v = job_getenv(je, "SLURM_STEP_NODELIST");
	if (!v)
		v = job_getenv(je, "SLURM_JOB_NODELIST");
	snprintf(nodelist, nlen, "%s", v ? v : "");
	/* srun's address: SLURM_LAUNCH_NODE_IPADDR is only in the tasks' environment on 22.05 */
	v = job_getenv(je, "SLURM_LAUNCH_NODE_IPADDR");
	if (!v)
		v = job_getenv(je, "SLURM_SRUN_COMM_HOST");
	snprintf(launch, llen, "%.127s", v ? v : "");
}

static bool want_ifname(const struct spank_ib_state *st)
{
	return (st->eff.env != SPANK_IB_ENV_OFF || st->eff.report != SPANK_IB_REPORT_OFF) &&
	       !st->conf.policy.socket_ifname[0];
}

/* The peer lookup's record in cache_dir (ib_cache.c): -1 when none may be kept. */
static int lookup_cache_open(const struct spank_ib_state *st, const char *cache_dir, bool create)
{
	char why[PATH_MAX + 512];

	return st->conf.cache_ttl ? spank_ib_cache_open(cache_dir, create, why, sizeof(why)) : -1;
}

/*
 * The peer's name is looked up in the helper as the job's user, never in
 * slurmstepd (ib_step.c), started here so that it runs while the node is
 * checked; find_ifname collects it.  A later step of the job on this node
 * takes the answer the first one got (cache_ttl=): no helper.
 */
static void ifname_lookup_start(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n,
				struct spank_ib_job_env *je, const char *cache_dir)
{
	char nodelist[8192], launch[128], names[2][SPANK_IB_NAME_MAX];
	const char *np[2] = {names[0], names[1]};
	struct spank_ib_child_spec resolver = {
	    .helper = st->conf.test_helper[0] ? st->conf.test_helper : spank_ib_helper_default(),
	    .uid = n->uid};
	struct spank_ib_cache_key key = {.host = st->host, .job_id = n->job_id, .uid = n->uid};
	struct spank_ib_lookup_answer ans;
	size_t k;
	int cfd;

	if (!want_ifname(st))
		return;
	spank_get_item(sp, S_JOB_GID, &resolver.gid);
	ifname_inputs(je, nodelist, sizeof(nodelist), launch, sizeof(launch));
	k = spank_ib_bootstrap_names(nodelist, n->nodeid, st->host, launch, names);
	if (!k)
		return;
	cfd = lookup_cache_open(st, cache_dir, false);
	if (cfd >= 0) {
		bool same =
		    !spank_ib_lookup_cache_load(cfd, &key, st->conf.cache_ttl, &ans) && ans.n == k;

		close(cfd);
		for (size_t i = 0; same && i < k; i++)
			same = !strcmp(ans.names[i], names[i]);
		if (same) {
			spank_ib_lookup_cached(&n->lookup, &ans);
			return;
		}
	}
	spank_ib_lookup_start(&n->lookup, &resolver, np, k, IFNAME_LOOKUP_MS);
}

/* A lookup that found every name, kept for the job's later steps (root, init_post_opt). */
static void ifname_lookup_keep(const struct spank_ib_state *st, const struct spank_ib_node *n,
			       const char *cache_dir)
{
	struct spank_ib_cache_key key = {.host = st->host, .job_id = n->job_id, .uid = n->uid};
	int cfd;

	if (!n->lookup.answered || n->lookup.cached)
		return;
	cfd = lookup_cache_open(st, cache_dir, geteuid() == 0);
	if (cfd < 0)
		return; /* not kept: the verdict's cache says why in slurmd's log */
	(void)spank_ib_lookup_cache_store(cfd, &key, st->conf.cache_ttl, &n->lookup.ans);
	close(cfd);
}

/* NCCL_SOCKET_IFNAME unless the policy names it: the route to another node of the step. */
static void find_ifname(struct spank_ib_state *st, struct spank_ib_node *n,
			struct spank_ib_job_env *je)
{
	char nodelist[8192], launch[128];

	if (st->conf.policy.socket_ifname[0]) {
		snprintf(n->ifname_how, sizeof(n->ifname_how), "socket_ifname= in plugstack.conf");
		return;
	}
	ifname_inputs(je, nodelist, sizeof(nodelist), launch, sizeof(launch));
	spank_ib_bootstrap_ifname(nodelist, n->nodeid, st->host, launch, IFNAME_LOOKUP_MS,
				  spank_ib_lookup_collect, &n->lookup, n->ifname, sizeof(n->ifname),
				  n->ifname_how, sizeof(n->ifname_how));
}

/*
 * No topology=: this machine's own, discovered once per boot and hardware
 * and kept in cache_dir (topo_cache.h: root's directory, root's file), so
 * the default setup pays an XML load per step, not a PCI scan.  A
 * cache_dir it cannot use is said in slurmd's log; the discovery is live
 * then, every step.  0 or -errno of the discovery.
 */
static int load_live_topology(struct spank_ib_state *st, struct spank_ib_node *n,
			      const char *cache_dir)
{
	struct ibp_sysfs fs = {.root_fd = -1};
	char key[IBP_TOPO_CACHE_KEY_LEN] = "", why[PATH_MAX + 512] = "";
	int cfd = -1, rc;

	/* this node's own /proc and /sys: what hwloc discovers (sysfs_root= is the HCAs') */
	if (!ibp_sysfs_open(&fs, "/")) {
		if (ibp_topo_cache_key(&fs, key, sizeof(key)))
			key[0] = '\0';
		ibp_sysfs_close(&fs);
	}
	if (key[0]) {
		cfd = spank_ib_cache_open(cache_dir, geteuid() == 0, why, sizeof(why));
		if (cfd < 0)
			slurm_info("spank-ib: warning: %s: not caching the topology: cache_dir %s",
				   st->host, why);
	}
	rc = ibp_topo_load_cached(&n->topo, cfd, st->host, key, geteuid() == 0, why, sizeof(why));
	if (rc >= 0 && cfd >= 0 && why[0])
		slurm_info("spank-ib: warning: %s: topology cache in %s: %s", st->host, cache_dir,
			   why);
	if (cfd >= 0)
		close(cfd);
	return rc < 0 ? rc : 0;
}

/*
 * topology=, open on FD (checked: root's): its mapped form from cache_dir
 * when the file is unchanged (topo_cache.h: keyed by its identity), else
 * parsed and the mapped form kept for the next step.  A cache_dir it
 * cannot use is said in slurmd's log; the XML is parsed then, every step.
 */
static int load_file_topology(struct spank_ib_state *st, struct spank_ib_node *n, int fd,
			      const char *topo_path, const char *cache_dir)
{
	char why[PATH_MAX + 512] = "";
	int cfd = spank_ib_cache_open(cache_dir, geteuid() == 0, why, sizeof(why)), rc;

	if (cfd < 0)
		slurm_info("spank-ib: warning: %s: not caching topology %s: cache_dir %s", st->host,
			   topo_path, why);
	rc = ibp_topo_load_file_cached(&n->topo, fd, cfd, st->host, geteuid() == 0, why,
				       sizeof(why));
	if (rc >= 0 && cfd >= 0 && why[0])
		slurm_info("spank-ib: warning: %s: topology %s in cache %s: %s", st->host,
			   topo_path, cache_dir, why);
	if (cfd >= 0)
		close(cfd);
	return rc < 0 ? rc : 0;
}

/*
 * Which topology the step's placement used and how it was loaded, for the
 * admin (slurmd's log at verbose): mapped from cache_dir, an XML parsed, or
 * discovered live; and the hwloc load's time.
 */
static void log_topology_source(const struct spank_ib_state *st, const struct spank_ib_node *n,
				const char *topo_path, const char *cache_dir)
{
	const struct ibp_topo *t = &n->topo;
	char how[PATH_MAX + 64];

	if (t->mapped)
		snprintf(how, sizeof(how), "%smapped from cache_dir %s",
			 topo_path[0] ? "" : "this node's, ", cache_dir);
	else if (!t->from_file)
		snprintf(how, sizeof(how), "discovered (hwloc PCI scan)");
	else if (topo_path[0])
		snprintf(how, sizeof(how), "XML parsed");
	else
		snprintf(how, sizeof(how), "this node's XML from cache_dir %s parsed", cache_dir);
	slurm_verbose("spank-ib: %s: job %u.%u: topology %s: %s, hwloc load %.2f ms", st->host,
		      n->job_id, n->step_id, topo_path[0] ? topo_path : "(live)", how, t->load_ms);
}

static void load_placement(struct spank_ib_state *st, struct spank_ib_node *n, spank_t sp,
			   const char *topo_path, const char *cache_dir)
{
	struct ibp_step step;
	int rc;

	ibp_topo_init(&n->topo);
	n->have_topo = true;
	if (topo_path[0]) {
		/* an XML file steers root's placement: only root may be able to change it */
		char why[PATH_MAX + 512];
		int fd = ibp_rootpath_open(topo_path, O_RDONLY, 0, why, sizeof(why));

		if (fd < 0 && fd != -ENOENT) { /* a missing file: "cannot load" below */
			spank_ib_setup_finding(n, IBP_SEV_WARN, "topology: %s; no placement", why);
			return;
		}
		rc = fd < 0 ? fd : load_file_topology(st, n, fd, topo_path, cache_dir);
		if (fd >= 0)
			close(fd);
	} else {
		rc = load_live_topology(st, n, cache_dir);
	}
	if (rc) {
		spank_ib_setup_finding(n, IBP_SEV_WARN,
				       "topology %s: cannot load: %s; no placement",
				       topo_path[0] ? topo_path : "(live)", strerror(-rc));
		return;
	}
	log_topology_source(st, n, topo_path, cache_dir);
	rc = ibp_topo_apply_inventory(&n->topo, &n->in.inv, &n->findings, ibp_health_port_severity);
	if (rc) {
		spank_ib_setup_finding(n, IBP_SEV_WARN,
				       "topology %s does not match sysfs: %s; no placement",
				       topo_path[0] ? topo_path : "(live)", strerror(-rc));
		return;
	}
	if (read_step_gpus(n, sp))
		return;
	memset(&step, 0, sizeof(step));
	step.ntasks = n->ntasks ? n->ntasks : 1;
	step.all_gpus = !n->have_step_gpus;
	step.gpus = n->step_gpus;
	step.n_gpus = n->n_step_gpus;
	step.local_rank = -1;
	step.fabric = IBP_LL_UNKNOWN;
	if (st->conf.policy.link_layer == IBP_POLICY_LL_IB)
		step.fabric = IBP_LL_IB;
	else if (st->conf.policy.link_layer == IBP_POLICY_LL_ETH)
		step.fabric = IBP_LL_ETH;
	ibp_placement_init(&n->pl);
	rc = ibp_place_compute(&n->pl, &n->topo, &step, &n->findings);
	if (rc) {
		spank_ib_setup_finding(n, IBP_SEV_WARN, "placement of %u tasks: %s", step.ntasks,
				       strerror(-rc));
		return;
	}
	n->have_pl = true;
	/* The user's variables are linted once per node, with task 0's row. */
	if (st->eff.env != SPANK_IB_ENV_OFF && n->pl.n_tasks) {
		struct ibp_place_view view;
		struct ibp_env env;
		struct ibp_env_opts eo = {.force = st->eff.env == SPANK_IB_ENV_FORCE,
					  .socket_ifname = n->ifname[0] ? n->ifname : NULL};

		ibp_env_init(&env);
		if (!ibp_place_view_task(&n->pl, 0, &view))
			ibp_env_build(&env, &n->topo, &n->pl, &view, &st->conf.policy, &eo,
				      spank_ib_env_get, sp, &n->findings);
		ibp_env_release(&env);
	}
}

/*
 * Under pyxis/enroot, the container sees only the HCAs MELLANOX_VISIBLE_DEVICES
 * lists (enroot's mellanox hook): the step's healthy ones, as the hook numbers
 * them.  Set in the job's environment here, before any task_init: pyxis starts
 * the container from that environment in the first task's task_init.  A value
 * the user set is kept (replaced with --ib-env=force).
 */
static void set_mellanox_visible(struct spank_ib_state *st, struct spank_ib_node *n, spank_t sp,
				 const char *root)
{
	struct ibp_sysfs fs = {.root_fd = -1};
	char why[96], val[1024], skipped[512], user[16];
	bool force = st->eff.env == SPANK_IB_ENV_FORCE;
	int rc;

	if (!ibp_env_pyxis_step(spank_ib_env_get, sp, why, sizeof(why)))
		return;
	rc = spank_ib_env_get(sp, "MELLANOX_VISIBLE_DEVICES", user, sizeof(user));
	if (rc != -ENOENT && !force)
		return;
	if (ibp_sysfs_open(&fs, root))
		return; /* load_health already said why */
	rc = ibp_env_mellanox_visible(&fs, &n->topo, &n->pl, val, sizeof(val), skipped,
				      sizeof(skipped));
	ibp_sysfs_close(&fs);
	if (rc > 0)
		spank_setenv(sp, "MELLANOX_VISIBLE_DEVICES", val, force ? 1 : 0);
	if (rc >= 0 && skipped[0])
		spank_ib_setup_finding(
		    n, IBP_SEV_WARN,
		    "pyxis step (%s): %s not passed into the container: enroot's "
		    "mellanox hook only passes mlx4/mlx5 devices",
		    why, skipped);
}

/*
 * The node's verdict, and its lines to whom must act (spank_ib(8), WHO SEES
 * WHAT): a failing step's lines for the user (printed once, in user_init),
 * the node's warnings to slurmd's log now.  Drains when asked to (root).
 */
void spank_ib_judge(struct spank_ib_state *st, struct spank_ib_node *n)
{
	size_t fails = 0, node_fails = 0, job_fails = 0;
	bool drain = false, health = st->eff.check != SPANK_IB_CHECK_OFF, failing;
	char drained[IBP_NODE_MAX + 16] = "";

	for (size_t i = 0; i < n->findings.n; i++) {
		const struct ibp_finding *x = &n->findings.v[i];

		if (x->severity != IBP_SEV_FAIL || !ibp_finding_counts(x, health))
			continue;
		fails++;
		if (x->fclass == IBP_CLASS_JOB)
			job_fails++;
		else
			node_fails++;
		if (ibp_finding_drainable(x))
			drain = true;
	}
	failing = fails && st->eff.check == SPANK_IB_CHECK_FAIL;
	drain = drain && st->conf.drain && health;
	if (drain && !n->cached) {
		char what[320];

		n->drained = spank_ib_drain_node(st->host, &n->findings, n->nodename,
						 sizeof(n->nodename), what, sizeof(what));
		/* the admin's: slurmd's log (the drain itself logs "drained") */
		if (!n->drained)
			slurm_error("spank-ib: %s: %s", st->host, what);
		else
			snprintf(drained, sizeof(drained), "; draining %s", n->nodename);
	}
	/* Failures first, then warnings: the line that matters is on top. */
	for (int pass = 0; pass < 2; pass++) {
		enum ibp_severity want = pass == 0 ? IBP_SEV_FAIL : IBP_SEV_WARN;

		for (size_t i = 0; i < n->findings.n; i++) {
			const struct ibp_finding *x = &n->findings.v[i];

			if (x->severity != want || !ibp_finding_counts(x, health))
				continue;
			spank_ib_finding_say(st, n, x, spank_ib_audience_of(st, x, failing),
					     ibp_finding_drainable(x) ? drained : "");
		}
	}
	if (failing) {
		n->verdict = -1;
		spank_ib_node_say(
		    n, "spank-ib: %s: failing the step: %zu node fault%s, %zu job fault%s%s\n",
		    st->host, node_fails, node_fails == 1 ? "" : "s", job_fails,
		    job_fails == 1 ? "" : "s",
		    n->cached && node_fails ? " (verdict of an earlier step)" : "");
	}
}

/* The job is told of its requeue before it is made (spank_ib_requeue_req). */
struct requeue_news {
	const struct spank_ib_state *st;
	const struct spank_ib_node *n;
	bool told;
};

static void tell_job(void *arg, const char *text)
{
	struct requeue_news *rn = arg;
	char msg[768], err[256];

	snprintf(msg, sizeof(msg), "spank-ib: %s: %s", rn->st->host, text);
	if (!spank_ib_job_notify(rn->n->job_id, msg, err, sizeof(err)))
		rn->told = true;
	else
		slurm_info("spank-ib: %s: job %u.%u: could not tell the job of its requeue: %s",
			   rn->st->host, rn->n->job_id, rn->n->step_id, err);
}

/*
 * A batch job whose step fails here on a node fault goes back to the queue
 * without this node (requeue=, --ib-requeue; ib_requeue.c bounds it).  A
 * job fault (the user's memlock limit, NCCL_IB_HCA) would follow the job to
 * any node: never requeued.  Root: init_post_opt.
 *
 * The requeue kills the job's steps, this one too, often before user_init
 * prints the node's lines: the job is told through slurmctld (slurm_notify_job,
 * into the batch script's output) before the requeue is made.  The node's
 * lines say it only when that could not be done, or when the requeue then
 * failed (the step runs on to user_init, and fails there).
 */
static void requeue_at_start(struct spank_ib_state *st, struct spank_ib_node *n)
{
	bool health = st->eff.check != SPANK_IB_CHECK_OFF;
	size_t node_faults = 0, job_faults = 0;
	struct requeue_news rn = {.st = st, .n = n};
	char what[512];
	enum spank_ib_requeue_outcome o;

	if (!st->eff.requeue)
		return;
	for (size_t i = 0; i < n->findings.n; i++) {
		const struct ibp_finding *x = &n->findings.v[i];

		if (x->severity != IBP_SEV_FAIL || !ibp_finding_counts(x, health))
			continue;
		if (x->fclass == IBP_CLASS_JOB)
			job_faults++;
		else if (ibp_finding_drainable(x))
			node_faults++;
	}
	if (!node_faults)
		return;
	if (job_faults) {
		spank_ib_node_say(
		    n,
		    "spank-ib: %s: not requeued: the step also has a job fault, which "
		    "would fail it on any node\n",
		    st->host);
		return;
	}
	o = spank_ib_requeue_here(n->job_id, &st->conf, st->host, n->nodename, tell_job, &rn, what,
				  sizeof(what));
	st->requeue_settle |= o == SPANK_IB_REQUEUE_DONE || o == SPANK_IB_REQUEUE_ALREADY;
	if (o == SPANK_IB_REQUEUE_DONE)
		slurm_info("spank-ib: %s: job %u.%u: %s", st->host, n->job_id, n->step_id, what);
	else if (o != SPANK_IB_REQUEUE_ALREADY)
		slurm_error("spank-ib: %s: job %u.%u: %s", st->host, n->job_id, n->step_id, what);
	if (o == SPANK_IB_REQUEUE_ALREADY || (o == SPANK_IB_REQUEUE_DONE && rn.told))
		return; /* said already: by another node, or to the job */
	spank_ib_node_say(n, "spank-ib: %s: %s\n", st->host, what);
}

int spank_ib_remote_post_opt(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_job_env je = {.sp = sp};
	char err[1024], root[PATH_MAX], topo[PATH_MAX], cache_dir[PATH_MAX];
	struct spank_ib_node *n;
	double t0 = now_ms();
	bool have_root = false;

	if (!st->conf_ok && !st->refused[0])
		return -1;
	n = calloc(1, sizeof(*n));
	if (!n) {
		slurm_error("spank-ib: %s: out of memory", st->host);
		return -1;
	}
	st->node = n;
	ibp_findings_init(&n->findings);
	if (st->refused[0]) {
		/*
		 * The admin's configuration is refused (spank_ib.c): whatever it
		 * enforces is unknown, so every step of the job's tasks fails,
		 * with the reason where the user looks; nothing else is done.
		 */
		spank_get_item(sp, S_JOB_STEPID, &n->step_id);
		if (n->step_id >= SLURM_MAX_NORMAL_STEP_ID)
			return 0; /* the batch script, extern and interactive steps */
		spank_ib_node_say(n,
				  "spank-ib: %s: %s; spank-ib's configuration is refused: failing "
				  "the step (every step on %s fails until the admin fixes it)\n",
				  st->host, st->refused, st->host);
		n->verdict = -1;
		st->active = true;
		return 0;
	}
	if (spank_ib_effective(spank_ib_user_opts(), &st->conf, job_getenv, &je, &st->eff,
			       &st->active, err, sizeof(err))) {
		/* A job fault: fail the user's own step, never drain. */
		char safe[2048];

		ibp_text_escape(err, safe, sizeof(safe)); /* holds the user's value */
		spank_ib_node_say(n, "spank-ib: %s: %s\n", st->host, safe);
		n->verdict = -1;
		st->active = true;
		return 0;
	}
	if (!st->active)
		return 0; /* no flag, no enforce: cost nothing */
	spank_get_item(sp, S_JOB_ID, &n->job_id);
	spank_get_item(sp, S_JOB_UID, &n->uid);
	spank_get_item(sp, S_JOB_STEPID, &n->step_id);
	spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &n->ntasks);
	spank_get_item(sp, S_JOB_NODEID, &n->nodeid);
	spank_get_item(sp, S_JOB_NNODES, &n->nnodes);
	/* The batch script, extern and interactive steps run no user tasks to place. */
	if (n->step_id >= SLURM_MAX_NORMAL_STEP_ID) {
		st->active = false;
		return 0;
	}
	if (ibp_conf_expand(st->conf.sysfs_root, st->host, NULL, root, sizeof(root)) ||
	    ibp_conf_expand(st->conf.topology, st->host, NULL, topo, sizeof(topo)) ||
	    ibp_conf_expand(st->conf.cache_dir, st->host, NULL, cache_dir, sizeof(cache_dir))) {
		spank_ib_setup_finding(
		    n, IBP_SEV_FAIL, "a path in plugstack.conf is too long for host %s", st->host);
	} else {
		have_root = true;
		ifname_lookup_start(sp, st, n, &je, cache_dir);
		spank_ib_load_health(st, n, &je, root, cache_dir);
		/* the link watch's first read: the inventory's when it has the counters */
		if (st->eff.check != SPANK_IB_CHECK_OFF && st->conf.policy.link_watch)
			spank_ib_lw_start(sp, st, root, n->in_link_counters ? &n->in.inv : NULL,
					  n->job_id, n->step_id);
		if (st->eff.env != SPANK_IB_ENV_OFF || st->eff.report != SPANK_IB_REPORT_OFF) {
			find_ifname(st, n, &je);
			ifname_lookup_keep(st, n, cache_dir);
		}
		spank_ib_lookup_abandon(&n->lookup); /* nothing left running past init_post_opt */
		if (want_placement(&st->eff))
			load_placement(st, n, sp, topo, cache_dir);
		if (st->eff.env != SPANK_IB_ENV_OFF && n->have_pl)
			set_mellanox_visible(st, n, sp, root);
	}
	/* Root, before anything of the user's runs: the test's listener (ib_test.c). */
	if (st->eff.test != SPANK_IB_TEST_OFF && spank_ib_test_prepare(sp, st, n))
		spank_ib_setup_finding(n, IBP_SEV_FAIL, "cross-node test: out of memory");
	/* slurmctld's word on the step's nodes, for the results log: now, as root (spank_ib.h) */
	if (st->eff.test != SPANK_IB_TEST_OFF && st->conf.results_log[0] && n->nnodes > 1) {
		char ctld[8192];

		if (!spank_ib_ctld_step_nodes(n->job_id, n->step_id, ctld, sizeof(ctld),
					      n->ctld_err, sizeof(n->ctld_err)))
			n->ctld_nodes = strdup(ctld);
	}
	spank_ib_judge(st, n);
	if (n->verdict)
		requeue_at_start(st, n);
	else if (have_root && st->eff.check != SPANK_IB_CHECK_OFF && st->conf.policy.link_watch)
		spank_ib_watch_start(sp, st, n, root); /* the watch for the life of the step */
	n->work_ms = now_ms() - t0;
	return 0;
}

void spank_ib_node_free(struct spank_ib_node *n)
{
	if (!n)
		return;
	spank_ib_test_release(n);
	spank_ib_lookup_abandon(&n->lookup);
	if (n->have_pl)
		ibp_placement_release(&n->pl);
	if (n->have_topo)
		ibp_topo_release(&n->topo);
	if (n->have_in)
		ibp_health_input_release(&n->in);
	ibp_findings_release(&n->findings);
	free(n->test_records);
	free(n->ctld_nodes);
	free(n);
}

/*
 * The node the cross-node test suspects requeues the job without itself
 * (n->blamed, decided in user_init from the child's findings: ib_test.c).
 * Here, as root: from Slurm 24.11 the API called in user_init deadlocks
 * slurmstepd, and exit runs in the same process (user_init's state is
 * this one).  It is not drained: a blame across nodes is a suspicion (the
 * start checks and the watch drain by what this node reads of itself);
 * the job's excluded nodes keep its next runs off this node.  First in
 * exit: the job is told while its batch script may still run.
 */
static void requeue_blamed(struct spank_ib_state *st, struct spank_ib_node *n)
{
	enum spank_ib_requeue_outcome o;
	char what[768];

	if (!n || !n->blamed[0])
		return;
	o = spank_ib_requeue_blamed(n->job_id, &st->conf, st->host, n->blamed, NULL, NULL, what,
				    sizeof(what));
	n->blamed[0] = '\0';
	st->requeue_settle |= o == SPANK_IB_REQUEUE_DONE || o == SPANK_IB_REQUEUE_ALREADY;
	(o == SPANK_IB_REQUEUE_DONE || o == SPANK_IB_REQUEUE_ALREADY ? slurm_info : slurm_error)(
	    "spank-ib: %s: job %u.%u: after the cross-node test: %s", st->host, n->job_id,
	    n->step_id, what);
}

/*
 * The step requeued the job (or began to, or saw another node do it): its
 * tasks are gone here, the rest of the run ends soon; the begin time is
 * pushed past that when it is near, so that Slurm does not add its own
 * 121 s (ib_requeue.c).  Last in exit: as late as this step can.
 */
static void requeue_settle(struct spank_ib_state *st, uint32_t job, uint32_t step)
{
	char what[512];
	int rc;

	if (!st->requeue_settle)
		return;
	st->requeue_settle = false;
	rc = spank_ib_requeue_settle(job, what, sizeof(what));
	if (rc)
		slurm_info("spank-ib: %s: job %u.%u: %s", st->host, job, step, what);
}

int spank_ib_remote_exit(spank_t sp, struct spank_ib_state *st)
{
	uint32_t job = st->node ? st->node->job_id : 0, step = st->node ? st->node->step_id : 0;

	requeue_blamed(st, st->node);
	/* the watcher first: what it saw goes into the step end's report */
	spank_ib_watch_stop(st);
	if (st->active)
		spank_ib_lw_end(sp, st);
	spank_ib_lw_free(st);
	spank_ib_write_results(st, st->node);
	spank_ib_node_free(st->node);
	st->node = NULL;
	if (job)
		requeue_settle(st, job, step);
	return 0;
}
