/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_remote.c: the slurmstepd side (remote context) and the job prolog.
 *
 *   init_post_opt (root, once per node)  options in effect, then the node's
 *                                        work: inventory, health checks,
 *                                        topology, placement of every local
 *                                        task, the verdict, draining
 *   user_init     (job's user, once)     the node's message, the report
 *   task_init     (job's user, per task) the task's environment and binding;
 *                                        returns the node's verdict, so a
 *                                        bad node fails the step on 22.05 too
 *   exit          (root)                 release
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
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <numaif.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "ibprep/env.h"
#include "ibprep/finding.h"
#include "ibprep/hca.h"
#include "ibprep/health.h"
#include "ibprep/json.h"
#include "ibprep/place.h"
#include "ibprep/rdmatest.h"
#include "ibprep/report.h"
#include "ibprep/sysfs.h"
#include "ibprep/topo.h"

#include "spank_ib.h"

/* Code of the plugin's own trouble (a bad path, an unreadable topology): never drains. */
#define SETUP_CODE "spank_ib_setup"

struct spank_ib_node {
	int verdict;  /* 0 pass, -1 fail the step */
	bool printed; /* the node's message went out (user_init) */
	bool cached;  /* the health findings came from the cache */
	bool drained; /* this step drained the node */
	uint32_t job_id, step_id, ntasks, nodeid, nnodes;
	char nodename[IBP_NODE_MAX]; /* Slurm NodeName ("" when not needed) */
	char msg[SPANK_IB_MSG_MAX];  /* lines to print once per node */
	size_t msg_len;
	struct ibp_findings findings;
	struct ibp_health_input in;
	bool have_in;
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
	double work_ms;
};

/* ---- the job's environment (srun's, forwarded): data from the user ---- */

struct job_env {
	spank_t sp;
	char buf[4096];
};

static const char *job_getenv(void *ctx, const char *name)
{
	struct job_env *je = ctx;

	if (spank_getenv(je->sp, name, je->buf, sizeof(je->buf)) != ESPANK_SUCCESS)
		return NULL;
	return je->buf;
}

/* The getter env.h wants, over spank_getenv (the job's or the task's environment). */
static int spank_env_get(void *ctx, const char *name, char *buf, size_t len)
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

__attribute__((format(printf, 2, 3))) static void node_say(struct spank_ib_node *n, const char *fmt,
							   ...)
{
	static const char cut[] = "spank-ib: (more lines cut)\n";
	va_list ap;
	int w;

	if (n->msg_len + sizeof(cut) >= sizeof(n->msg))
		return;
	va_start(ap, fmt);
	w = vsnprintf(n->msg + n->msg_len, sizeof(n->msg) - sizeof(cut) - n->msg_len, fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	if ((size_t)w >= sizeof(n->msg) - sizeof(cut) - n->msg_len) {
		/* Cut: say so rather than end mid-line. */
		n->msg_len = sizeof(n->msg) - sizeof(cut);
		memcpy(n->msg + n->msg_len, cut, sizeof(cut));
		n->msg_len += sizeof(cut) - 1;
		return;
	}
	n->msg_len += (size_t)w;
}

/* The plugin's own trouble, as a finding (never drains). */
__attribute__((format(printf, 3, 4))) static void
setup_finding(struct spank_ib_node *n, enum ibp_severity sev, const char *fmt, ...)
{
	struct ibp_finding x;
	va_list ap;

	memset(&x, 0, sizeof(x));
	snprintf(x.code, sizeof(x.code), "%s", SETUP_CODE);
	x.severity = sev;
	x.fclass = IBP_CLASS_NODE;
	va_start(ap, fmt);
	vsnprintf(x.observed, sizeof(x.observed), fmt, ap);
	va_end(ap);
	snprintf(x.fix, sizeof(x.fix), "check spank_ib's arguments in plugstack.conf");
	ibp_findings_add(&n->findings, &x);
}

/* SLURM_RLIMIT_MEMLOCK: the user's limit, which slurmstepd gives the tasks. */
static void memlock_from_env(struct spank_ib_node *n, struct job_env *je)
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

static bool is_drainable(const struct ibp_finding *x)
{
	return x->severity == IBP_SEV_FAIL && x->fclass == IBP_CLASS_NODE &&
	       strcmp(x->code, SETUP_CODE) != 0;
}

/* "spank-ib: mlx5_3 port 1: width 1X, expected 4X (+2 more)" */
static void drain_reason(const struct ibp_findings *f, char *buf, size_t len)
{
	const struct ibp_finding *first = NULL;
	size_t more = 0;
	int w;

	for (size_t i = 0; i < f->n; i++) {
		if (!is_drainable(&f->v[i]))
			continue;
		if (!first)
			first = &f->v[i];
		else
			more++;
	}
	if (!first) {
		snprintf(buf, len, "spank-ib: node fault");
		return;
	}
	w = snprintf(buf, len, "spank-ib: ");
	if (first->device[0] && first->port)
		w += snprintf(buf + w, len - (size_t)w, "%s port %d: ", first->device, first->port);
	else if (first->device[0])
		w += snprintf(buf + w, len - (size_t)w, "%s: ", first->device);
	if ((size_t)w < len)
		w += snprintf(buf + w, len - (size_t)w, "%s", first->observed);
	if ((size_t)w < len && first->expected[0])
		w += snprintf(buf + w, len - (size_t)w, ", expected %s", first->expected);
	if ((size_t)w < len && more)
		snprintf(buf + w, len - (size_t)w, " (+%zu more)", more);
}

static bool want_placement(const struct spank_ib_opts *e)
{
	return e->affinity != SPANK_IB_AFF_OFF || e->env != SPANK_IB_ENV_OFF ||
	       e->report != SPANK_IB_REPORT_OFF;
}

static void load_health(struct spank_ib_state *st, struct spank_ib_node *n, struct job_env *je,
			const char *root, const char *cache_dir)
{
	struct ibp_sysfs fs = {.root_fd = -1};
	struct ibp_findings scratch;
	int rc;

	ibp_findings_init(&scratch);
	ibp_health_input_init(&n->in);
	n->have_in = true;
	rc = ibp_sysfs_open(&fs, root);
	if (rc) {
		setup_finding(n, st->eff.check == SPANK_IB_CHECK_OFF ? IBP_SEV_WARN : IBP_SEV_FAIL,
			      "sysfs_root %s: cannot open: %s", root, strerror(-rc));
		return;
	}
	if (st->eff.check != SPANK_IB_CHECK_OFF && st->conf.cache_ttl &&
	    !spank_ib_cache_load(cache_dir, n->job_id, st->conf.cache_ttl, &n->findings)) {
		/* A fresh verdict of this job: only the inventory for the placement. */
		n->cached = true;
		rc = want_placement(&st->eff) ? ibp_inventory_load(&n->in.inv, &fs, &scratch) : 0;
	} else {
		size_t before = n->findings.n;

		rc = ibp_health_gather(&n->in, &fs, &st->conf.policy, &n->findings);
		if (!rc) {
			snprintf(n->in.node, sizeof(n->in.node), "%s", st->host);
			memlock_from_env(n, je);
			rc = ibp_health_check(&n->in, &st->conf.policy, &n->findings);
		}
		if (!rc && st->eff.check != SPANK_IB_CHECK_OFF && st->conf.cache_ttl) {
			struct ibp_findings mine = {.v = n->findings.v + before,
						    .n = n->findings.n - before};
			spank_ib_cache_store(cache_dir, n->job_id, st->conf.cache_ttl, &mine);
		}
	}
	if (rc)
		setup_finding(n, IBP_SEV_FAIL, "reading %s: %s", root, strerror(-rc));
	ibp_findings_release(&scratch);
	ibp_sysfs_close(&fs);
}

/*
 * The step's GPUs on this node: SLURM_STEP_GPUS, else SLURM_JOB_GPUS (gres
 * indices, read as PCI bus order: README "Which GPUs").  Slurm sets them in
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

		rc = spank_env_get(sp, vars[i], buf, sizeof(buf));
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
		if (spank_env_get(sp, "CUDA_VISIBLE_DEVICES", buf, sizeof(buf)) > 0)
			n->cvd_mode = spank_ib_cvd_mode(buf, n->step_gpus, n->n_step_gpus);
		return 0;
	}
	return 0;
}

/* NCCL_SOCKET_IFNAME unless the policy names it: the route to another node of the step. */
static void find_ifname(struct spank_ib_state *st, struct spank_ib_node *n, struct job_env *je)
{
	char nodelist[8192] = "", launch[128] = "";
	const char *v;

	if (st->conf.policy.socket_ifname[0]) {
		snprintf(n->ifname_how, sizeof(n->ifname_how), "socket_ifname= in plugstack.conf");
		return;
	}
	v = job_getenv(je, "SLURM_STEP_NODELIST");
	if (!v)
		v = job_getenv(je, "SLURM_JOB_NODELIST");
	if (v)
		snprintf(nodelist, sizeof(nodelist), "%s", v);
	/* srun's address: SLURM_LAUNCH_NODE_IPADDR is only in the tasks' environment on 22.05 */
	v = job_getenv(je, "SLURM_LAUNCH_NODE_IPADDR");
	if (!v)
		v = job_getenv(je, "SLURM_SRUN_COMM_HOST");
	if (v)
		snprintf(launch, sizeof(launch), "%.127s", v);
	spank_ib_bootstrap_ifname(nodelist, n->nodeid, st->host, launch, 2000, n->ifname,
				  sizeof(n->ifname), n->ifname_how, sizeof(n->ifname_how));
}

static void load_placement(struct spank_ib_state *st, struct spank_ib_node *n, spank_t sp,
			   const char *topo_path)
{
	struct ibp_step step;
	int rc;

	ibp_topo_init(&n->topo);
	n->have_topo = true;
	rc = topo_path[0] ? ibp_topo_load_xml(&n->topo, topo_path) : ibp_topo_load_live(&n->topo);
	if (rc) {
		setup_finding(n, IBP_SEV_WARN, "topology %s: cannot load: %s; no placement",
			      topo_path[0] ? topo_path : "(live)", strerror(-rc));
		return;
	}
	rc = ibp_topo_apply_inventory(&n->topo, &n->in.inv, &n->findings, ibp_health_port_severity);
	if (rc) {
		setup_finding(n, IBP_SEV_WARN, "topology %s does not match sysfs: %s; no placement",
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
		setup_finding(n, IBP_SEV_WARN, "placement of %u tasks: %s", step.ntasks,
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
				      spank_env_get, sp, &n->findings);
		ibp_env_release(&env);
	}
}

/* Compose the node's message (printed once, in user_init) and decide. */
static void judge(struct spank_ib_state *st, struct spank_ib_node *n)
{
	size_t fails = 0, node_fails = 0, job_fails = 0;
	bool drain = false;
	char line[1024];

	for (size_t i = 0; i < n->findings.n; i++) {
		const struct ibp_finding *x = &n->findings.v[i];

		if (x->severity != IBP_SEV_FAIL)
			continue;
		if (st->eff.check == SPANK_IB_CHECK_OFF && x->fclass == IBP_CLASS_NODE &&
		    strcmp(x->code, SETUP_CODE) != 0)
			continue; /* health not asked for */
		fails++;
		if (x->fclass == IBP_CLASS_JOB)
			job_fails++;
		else
			node_fails++;
		if (is_drainable(x))
			drain = true;
	}
	drain = drain && st->conf.drain && st->eff.check != SPANK_IB_CHECK_OFF;
	if (drain && !n->cached) {
		char reason[256], err[256];
		int rc = spank_ib_node_name(st->host, n->nodename, sizeof(n->nodename));

		drain_reason(&n->findings, reason, sizeof(reason));
		if (rc) {
			node_say(
			    n,
			    "spank-ib: %s: not draining: no NodeName for host %s in slurm.conf "
			    "(%s)\n",
			    st->host, st->host, strerror(-rc));
		} else if (spank_ib_drain(n->nodename, reason, err, sizeof(err))) {
			node_say(n, "spank-ib: %s: draining %s failed: %s\n", st->host, n->nodename,
				 err);
		} else {
			n->drained = true;
			slurm_info("spank-ib: drained %s: %s", n->nodename, reason);
		}
	}
	/* Failures first, then warnings: the line that matters is on top. */
	for (int pass = 0; pass < 2; pass++) {
		enum ibp_severity want = pass == 0 ? IBP_SEV_FAIL : IBP_SEV_WARN;

		for (size_t i = 0; i < n->findings.n; i++) {
			const struct ibp_finding *x = &n->findings.v[i];

			if (x->severity != want)
				continue;
			if (st->eff.check == SPANK_IB_CHECK_OFF && x->fclass == IBP_CLASS_NODE &&
			    strcmp(x->code, SETUP_CODE) != 0)
				continue;
			ibp_finding_format(x, st->host, line, sizeof(line));
			node_say(n, "spank-ib: %s%s%s%s\n", want == IBP_SEV_WARN ? "warning: " : "",
				 line, n->drained && is_drainable(x) ? "; draining " : "",
				 n->drained && is_drainable(x) ? n->nodename : "");
		}
	}
	if (fails && st->eff.check == SPANK_IB_CHECK_FAIL) {
		n->verdict = -1;
		node_say(n, "spank-ib: %s: failing the step: %zu node fault%s, %zu job fault%s%s\n",
			 st->host, node_fails, node_fails == 1 ? "" : "s", job_fails,
			 job_fails == 1 ? "" : "s",
			 n->cached ? " (verdict of an earlier step)" : "");
	}
}

int spank_ib_remote_post_opt(spank_t sp, struct spank_ib_state *st)
{
	struct job_env je = {.sp = sp};
	char err[1024], root[PATH_MAX], topo[PATH_MAX], cache_dir[PATH_MAX];
	struct spank_ib_node *n;
	double t0 = now_ms();

	if (!st->conf_ok)
		return -1;
	n = calloc(1, sizeof(*n));
	if (!n) {
		slurm_error("spank-ib: %s: out of memory", st->host);
		return -1;
	}
	st->node = n;
	ibp_findings_init(&n->findings);
	if (spank_ib_effective(spank_ib_user_opts(), &st->conf, job_getenv, &je, &st->eff,
			       &st->active, err, sizeof(err))) {
		/* A job fault: fail the user's own step, never drain. */
		node_say(n, "spank-ib: %s: %s\n", st->host, err);
		n->verdict = -1;
		st->active = true;
		return 0;
	}
	if (!st->active)
		return 0; /* no flag, no enforce: cost nothing */
	spank_get_item(sp, S_JOB_ID, &n->job_id);
	spank_get_item(sp, S_JOB_STEPID, &n->step_id);
	spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &n->ntasks);
	spank_get_item(sp, S_JOB_NODEID, &n->nodeid);
	spank_get_item(sp, S_JOB_NNODES, &n->nnodes);
	/* The batch script, extern and interactive steps run no user tasks to place. */
	if (n->step_id >= SLURM_MAX_NORMAL_STEP_ID) {
		st->active = false;
		return 0;
	}
	if (spank_ib_expand(st->conf.sysfs_root, st->host, NULL, root, sizeof(root)) ||
	    spank_ib_expand(st->conf.topology, st->host, NULL, topo, sizeof(topo)) ||
	    spank_ib_expand(st->conf.cache_dir, st->host, NULL, cache_dir, sizeof(cache_dir))) {
		setup_finding(n, IBP_SEV_FAIL, "a path in plugstack.conf is too long for host %s",
			      st->host);
	} else {
		load_health(st, n, &je, root, cache_dir);
		if (st->eff.env != SPANK_IB_ENV_OFF || st->eff.report != SPANK_IB_REPORT_OFF)
			find_ifname(st, n, &je);
		if (want_placement(&st->eff))
			load_placement(st, n, sp, topo);
	}
	judge(st, n);
	n->work_ms = now_ms() - t0;
	return 0;
}

/* ---- the report ---- */

static void view_row(const struct spank_ib_node *n, size_t r, const struct ibp_place_view *t,
		     char *buf, size_t len)
{
	char gpus[128] = "", nic[80] = "-", cpus[256] = "", mems[64] = "";
	size_t o = 0;

	for (size_t g = 0; g < t->n_gpus && o < sizeof(gpus); g++)
		o += (size_t)snprintf(gpus + o, sizeof(gpus) - o, "%s%u", g ? "," : "", t->gpus[g]);
	if (!t->n_gpus)
		strcpy(gpus, "-");
	if (t->n_nics && ibp_place_nic_name(&n->topo, &t->nics[0], nic, sizeof(nic)) <= 0)
		strcpy(nic, "-");
	if (t->cpus)
		hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), t->cpus);
	if (t->mems)
		hwloc_bitmap_list_snprintf(mems, sizeof(mems), t->mems);
	snprintf(buf, len, "%4zu  %-6s %-10s %-24s %s", r, gpus, nic, cpus[0] ? cpus : "-",
		 mems[0] ? mems : "-");
}

static void task_row(const struct spank_ib_node *n, size_t r, char *buf, size_t len)
{
	struct ibp_place_view v;

	buf[0] = '\0';
	if (!ibp_place_view_task(&n->pl, r, &v))
		view_row(n, r, &v, buf, len);
}

static void report_text(FILE *fp, const struct spank_ib_state *st, const struct spank_ib_node *n)
{
	char row[512];

	fprintf(fp,
		"spank-ib: %s: job %u step %u: %zu HCAs, %zu GPUs, %zu findings, %s (%.1f ms%s)\n",
		st->host, n->job_id, n->step_id, n->have_in ? n->in.inv.n_hcas : 0,
		n->have_topo ? n->topo.n_gpus : 0, n->findings.n, n->verdict ? "fail" : "pass",
		n->work_ms, n->cached ? ", cached verdict" : "");
	if (n->ifname_how[0])
		fprintf(fp, "spank-ib: %s: NCCL_SOCKET_IFNAME %s: %s\n", st->host,
			n->ifname[0] ? n->ifname : "-", n->ifname_how);
	if (n->have_step_gpus)
		fprintf(fp, "spank-ib: %s: step GPUs from %s (%zu)\n", st->host, n->gpus_from,
			n->n_step_gpus);
	if (!n->have_pl)
		return;
	fprintf(fp, "spank-ib: %s: task  gpu    hca        cpus                     mem\n",
		st->host);
	for (size_t r = 0; r < n->pl.n_tasks; r++) {
		task_row(n, r, row, sizeof(row));
		fprintf(fp, "spank-ib: %s: %s\n", st->host, row);
	}
}

static void report_json(FILE *fp, const struct spank_ib_state *st, const struct spank_ib_node *n)
{
	struct ibp_json j;

	ibp_json_init_file(&j, fp, 0);
	ibp_json_object_begin(&j);
	ibp_json_kv_string(&j, "node", st->host);
	ibp_json_kv_uint(&j, "job", n->job_id);
	ibp_json_kv_uint(&j, "step", n->step_id);
	ibp_json_kv_string(&j, "verdict", n->verdict ? "fail" : "pass");
	ibp_json_kv_bool(&j, "drained", n->drained);
	ibp_json_kv_bool(&j, "cached", n->cached);
	ibp_json_kv_double(&j, "elapsed_ms", n->work_ms);
	ibp_json_kv_uint(&j, "hcas", n->have_in ? n->in.inv.n_hcas : 0);
	ibp_json_kv_uint(&j, "gpus", n->have_topo ? n->topo.n_gpus : 0);
	ibp_json_key(&j, "step_gpus");
	if (n->have_step_gpus) {
		ibp_json_array_begin(&j);
		for (size_t g = 0; g < n->n_step_gpus; g++)
			ibp_json_uint(&j, n->step_gpus[g]);
		ibp_json_array_end(&j);
	} else {
		ibp_json_string(&j, "all");
	}
	ibp_json_kv_string(&j, "socket_ifname", n->ifname);
	ibp_json_kv_string(&j, "socket_ifname_from", n->ifname_how);
	ibp_report_findings_json(&j, &n->findings, st->host);
	ibp_json_key(&j, "tasks");
	ibp_json_array_begin(&j);
	for (size_t r = 0; n->have_pl && r < n->pl.n_tasks; r++) {
		const struct ibp_place_task *t = &n->pl.tasks[r];
		char buf[256];

		ibp_json_object_begin(&j);
		ibp_json_kv_uint(&j, "local_rank", t->local_rank);
		ibp_json_key(&j, "gpus");
		ibp_json_array_begin(&j);
		for (size_t g = 0; g < t->n_gpus; g++)
			ibp_json_uint(&j, t->gpus[g]);
		ibp_json_array_end(&j);
		ibp_json_key(&j, "hcas");
		ibp_json_array_begin(&j);
		for (size_t k = 0; k < t->n_nics; k++)
			if (ibp_place_nic_name(&n->topo, &t->nics[k], buf, sizeof(buf)) > 0)
				ibp_json_string(&j, buf);
		ibp_json_array_end(&j);
		buf[0] = '\0';
		if (t->cpus)
			hwloc_bitmap_list_snprintf(buf, sizeof(buf), t->cpus);
		ibp_json_kv_string(&j, "cpus", buf);
		buf[0] = '\0';
		if (t->mems)
			hwloc_bitmap_list_snprintf(buf, sizeof(buf), t->mems);
		ibp_json_kv_string(&j, "mems", buf);
		ibp_json_object_end(&j);
	}
	ibp_json_array_end(&j);
	ibp_json_object_end(&j);
	ibp_json_finish(&j);
	ibp_json_release(&j);
	fputc('\n', fp);
}

/* Runs as the job's user: the report file is the user's to write. */
static void write_report(const struct spank_ib_state *st, const struct spank_ib_node *n)
{
	char path[PATH_MAX], job[16];
	FILE *fp = stderr;

	if (st->eff.report_file[0]) {
		int fd;

		snprintf(job, sizeof(job), "%u", n->job_id);
		if (spank_ib_expand(st->eff.report_file, st->host, job, path, sizeof(path))) {
			slurm_error("spank-ib: %s: --ib-report file '%s': only %%n, %%j and %%%% "
				    "may follow '%%'",
				    st->host, st->eff.report_file);
			return;
		}
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		fp = fd < 0 ? NULL : fdopen(fd, "w");
		if (!fp) {
			slurm_error("spank-ib: %s: --ib-report file %s: %s", st->host, path,
				    strerror(errno));
			if (fd >= 0)
				close(fd);
			return;
		}
	}
	if (st->eff.report == SPANK_IB_REPORT_JSON)
		report_json(fp, st, n);
	else
		report_text(fp, st, n);
	if (fp != stderr)
		fclose(fp);
	else
		fflush(stderr);
}

/* ---- the cross-node test (user_init: every node at about the same time) ---- */

/* The healthy fabric ports in rail order, for the verbs transport. */
static size_t test_ports(const struct spank_ib_node *n, struct ibp_tx_port *ports, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; n->have_pl && i < n->pl.n_fabric && k < max; i++) {
		const struct ibp_place_nic *nic = &n->pl.fabric[i];
		const struct ibp_topo_hca *h;
		const struct ibp_hca *ih;

		if (nic->hca < 0 || (size_t)nic->hca >= n->topo.n_hcas)
			continue;
		h = &n->topo.hcas[nic->hca];
		memset(&ports[k], 0, sizeof(ports[k]));
		snprintf(ports[k].device, sizeof(ports[k].device), "%s", h->name);
		ports[k].port = nic->port;
		ports[k].rail = (unsigned)k;
		ports[k].gid_index = -1;
		for (unsigned p = 0; p < h->n_ports; p++) {
			if (h->ports[p].num != nic->port)
				continue;
			ports[k].link_layer = h->ports[p].link_layer;
			ports[k].gid_index = h->ports[p].gid_index;
		}
		ih = ibp_inventory_find(&n->in.inv, h->name);
		if (ih && nic->port >= 1 && nic->port <= ih->n_ports &&
		    ih->ports[nic->port - 1].rate.known)
			ports[k].rate_gbps = ih->ports[nic->port - 1].rate.gbps;
		k++;
	}
	return k;
}

/*
 * Runs as the job's user, bounded by test_timeout=.  The node list comes
 * from the step's environment (SLURM_STEP_NODELIST), which the user could
 * alter: a wrong list can only fail the user's own step, and every peer is
 * authenticated with munge (uid, job, step, node index).  Findings fail the
 * step (unless the user chose --ib-check=warn); they never drain: blame
 * across nodes is a suspicion, and this callback is no longer root.
 */
static void run_test(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n)
{
	struct ibp_rdmatest_config cfg;
	struct ibp_rdmatest_result *res = calloc(1, sizeof(*res));
	struct ibp_tx_port ports[IBP_RDMATEST_MAX_RAILS];
	struct ibp_findings tf;
	char nodelist[8192], line[1024];
	uint32_t uid = 0;
	size_t fails = 0;
	int rc;

	ibp_findings_init(&tf);
	memset(&cfg, 0, sizeof(cfg));
	if (!res) {
		slurm_error("spank-ib: %s: cross-node test: out of memory", st->host);
		n->verdict = -1;
		return;
	}
	if (spank_getenv(sp, "SLURM_STEP_NODELIST", nodelist, sizeof(nodelist)) != ESPANK_SUCCESS &&
	    spank_getenv(sp, "SLURM_NODELIST", nodelist, sizeof(nodelist)) != ESPANK_SUCCESS) {
		slurm_error("spank-ib: %s: cross-node test: the step's node list "
			    "(SLURM_STEP_NODELIST) is not in its environment",
			    st->host);
		n->verdict = -1;
		free(res);
		return;
	}
	spank_get_item(sp, S_JOB_UID, &uid);
	cfg.nodelist = nodelist;
	cfg.index = n->nodeid;
	cfg.job = n->job_id;
	cfg.step = n->step_id;
	cfg.uid = uid;
	if (strcmp(st->conf.policy.test_transport, "socket") != 0) {
		cfg.ports = ports;
		cfg.n_ports = test_ports(n, ports, IBP_RDMATEST_MAX_RAILS);
	}
	cfg.policy = &st->conf.policy;
	cfg.mode = st->eff.test == SPANK_IB_TEST_FULL ? IBP_RDMATEST_FULL : IBP_RDMATEST_QUICK;
	cfg.munge_socket = st->conf.munge_socket[0] ? st->conf.munge_socket : NULL;
	rc = ibp_rdmatest_run(&cfg, &tf, res);
	if (rc)
		slurm_error("spank-ib: %s: cross-node test could not run: %s", st->host,
			    strerror(-rc));
	for (size_t i = 0; i < tf.n; i++) {
		const struct ibp_finding *x = &tf.v[i];

		if (x->severity < IBP_SEV_WARN)
			continue;
		if (x->severity == IBP_SEV_FAIL)
			fails++;
		ibp_finding_format(x, st->host, line, sizeof(line));
		slurm_error("spank-ib: %s%s", x->severity == IBP_SEV_WARN ? "warning: " : "", line);
		ibp_findings_add(&n->findings, x);
	}
	if ((rc || fails) && !st->eff.check_warn_by_user) {
		n->verdict = -1;
		slurm_error("spank-ib: %s: failing the step: the cross-node test failed "
			    "(%zu finding%s, %.2f s)",
			    st->host, fails, fails == 1 ? "" : "s", res->elapsed_s);
	} else if (st->eff.affinity == SPANK_IB_AFF_VERBOSE ||
		   st->eff.report != SPANK_IB_REPORT_OFF) {
		slurm_error("spank-ib: %s: cross-node test: %s with %zu node%s in %.2f s", st->host,
			    res->pass ? "pass" : "fail", res->nnodes, res->nnodes == 1 ? "" : "s",
			    res->elapsed_s);
	}
	ibp_findings_release(&tf);
	free(res);
}

int spank_ib_remote_user_init(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_node *n = st->node;

	if (!n || !st->active || n->printed)
		return 0;
	n->printed = true;
	if (n->msg_len) {
		char *save = NULL, *copy = strdup(n->msg);

		if (!copy)
			return 0;
		for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			slurm_error("%s", l);
		free(copy);
	}
	if (st->eff.test != SPANK_IB_TEST_OFF)
		run_test(sp, st, n);
	if (st->eff.report != SPANK_IB_REPORT_OFF)
		write_report(st, n);
	return 0;
}

/* ---- per task ---- */

static void apply_env(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n,
		      const struct ibp_place_view *view)
{
	struct ibp_env env;
	struct ibp_findings scratch;
	struct ibp_env_opts eo = {.force = st->eff.env == SPANK_IB_ENV_FORCE,
				  .socket_ifname = n->ifname[0] ? n->ifname : NULL};

	ibp_env_init(&env);
	ibp_findings_init(&scratch);
	/* Lints were reported once per node; the task's own copy is dropped. */
	if (!ibp_env_build(&env, &n->topo, &n->pl, view, &st->conf.policy, &eo, spank_env_get, sp,
			   &scratch)) {
		for (size_t i = 0; i < env.n; i++) {
			const struct ibp_env_var *v = &env.v[i];

			if (v->action == IBP_ENV_SET)
				spank_setenv(sp, v->name, v->value, 0);
			else if (v->action == IBP_ENV_FORCED)
				spank_setenv(sp, v->name, v->value, 1);
		}
	}
	ibp_findings_release(&scratch);
	ibp_env_release(&env);
}

/*
 * GPU selection: a task that sees more GPUs than its row gets its own, as
 * CUDA indices in PCI bus order (the order CUDA_DEVICE_ORDER=PCI_BUS_ID
 * gives).  A CUDA_VISIBLE_DEVICES already there (Slurm's GRES binding, or
 * the user) is respected: the task keeps the GPUs it was given.
 */
static void apply_gpus(spank_t sp, const struct spank_ib_node *n, const struct ibp_place_view *view)
{
	char buf[512];
	size_t o = 0;

	if (!view->n_gpus || view->n_gpus >= n->topo.n_gpus)
		return;
	if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", buf, sizeof(buf)) != ESPANK_ENV_NOEXIST)
		return;
	for (size_t g = 0; g < view->n_gpus; g++) {
		const struct ibp_topo_gpu *gpu = &n->topo.gpus[view->gpus[g]];
		int w;

		if (gpu->d.vendor != 0x10de)
			return; /* CUDA's variable names NVIDIA GPUs only */
		w = snprintf(buf + o, sizeof(buf) - o, "%s%u", g ? "," : "", gpu->index);
		if (w < 0 || (size_t)w >= sizeof(buf) - o)
			return;
		o += (size_t)w;
	}
	spank_setenv(sp, "CUDA_VISIBLE_DEVICES", buf, 0);
}

/* A task's row built from the GPUs it really sees (owned copies). */
struct seen_view {
	struct ibp_place_view v;
	unsigned gpus[IBP_PLACE_MAX_GPUS];
	struct ibp_place_nic nics[IBP_PLACE_MAX_GPUS];
	hwloc_bitmap_t cpus, mems;
};

static int uint_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/*
 * The row of a task that sees GPUS (node indices, from its
 * CUDA_VISIBLE_DEVICES): each GPU's nearest healthy port and its share of
 * CPUs from the placement's per-GPU rows (the same shares the PCI-order deal
 * hands out, so tasks that see different GPUs never overlap).  0 or -ENOMEM.
 */
static int seen_view_build(struct seen_view *sv, const struct spank_ib_node *n, unsigned task,
			   const unsigned *gpus, size_t n_gpus)
{
	memset(sv, 0, sizeof(*sv));
	sv->cpus = hwloc_bitmap_alloc();
	sv->mems = hwloc_bitmap_alloc();
	if (!sv->cpus || !sv->mems)
		return -ENOMEM;
	memcpy(sv->gpus, gpus, n_gpus * sizeof(*gpus));
	qsort(sv->gpus, n_gpus, sizeof(*sv->gpus), uint_cmp);
	sv->v.local_rank = task;
	sv->v.gpus = sv->gpus;
	sv->v.n_gpus = n_gpus;
	for (size_t i = 0; i < n_gpus; i++) {
		const struct ibp_place_gpu *pg = &n->pl.gpus[sv->gpus[i]];
		bool dup = false;

		if (pg->cpus)
			hwloc_bitmap_or(sv->cpus, sv->cpus, pg->cpus);
		else /* not in the placed step: the GPU's local CPUs */
			hwloc_bitmap_or(sv->cpus, sv->cpus, n->topo.gpus[sv->gpus[i]].d.cpuset);
		if (pg->mems)
			hwloc_bitmap_or(sv->mems, sv->mems, pg->mems);
		if (pg->nic.hca < 0)
			continue;
		for (size_t k = 0; k < sv->v.n_nics && !dup; k++)
			dup = sv->nics[k].hca == pg->nic.hca && sv->nics[k].port == pg->nic.port;
		if (!dup)
			sv->nics[sv->v.n_nics++] = pg->nic;
	}
	/* nearest first, stable */
	for (size_t i = 1; i < sv->v.n_nics; i++)
		for (size_t k = i; k > 0 && sv->nics[k].dist < sv->nics[k - 1].dist; k--) {
			struct ibp_place_nic t = sv->nics[k];

			sv->nics[k] = sv->nics[k - 1];
			sv->nics[k - 1] = t;
		}
	if (hwloc_bitmap_iszero(sv->mems) && !hwloc_bitmap_iszero(sv->cpus))
		hwloc_cpuset_to_nodeset(n->topo.t, sv->cpus, sv->mems);
	sv->v.nics = sv->nics;
	sv->v.cpus = sv->cpus;
	sv->v.mems = sv->mems;
	return 0;
}

static void seen_view_release(struct seen_view *sv)
{
	hwloc_bitmap_free(sv->cpus);
	hwloc_bitmap_free(sv->mems);
	sv->cpus = sv->mems = NULL;
}

/*
 * The GPU(s) the task really sees: Slurm's per-task CUDA_VISIBLE_DEVICES
 * (--gpus-per-task, --gpu-bind) or the user's, mapped through the step's
 * GPU list when relative.  A task that sees the GPU(s) of its row in the
 * deal (possibly among others: the step's whole list) keeps that row: 0.
 * One that does not is placed by the GPUs it sees: 1, SV holds its row.
 */
static int task_seen_gpus(spank_t sp, struct spank_ib_state *st, const struct spank_ib_node *n,
			  const struct ibp_place_view *deal, int task, struct seen_view *sv)
{
	unsigned gpus[IBP_PLACE_MAX_GPUS];
	char cvd[1024], err[512];
	int c;

	if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", cvd, sizeof(cvd)) != ESPANK_SUCCESS)
		return 0;
	c = spank_ib_map_cvd(cvd, n->step_gpus, n->have_step_gpus ? n->n_step_gpus : 0, n->cvd_mode,
			     n->topo.n_gpus, gpus, IBP_PLACE_MAX_GPUS, err, sizeof(err));
	if (c < 0) {
		fprintf(stderr,
			"spank-ib: %s: warning: task %d: %s: its IBPREP_*, HCA and CPUs follow the "
			"plugin's PCI-order deal, which may not be the GPU it uses; fix: let "
			"Slurm set CUDA_VISIBLE_DEVICES, or give indices of the step's GPUs\n",
			st->host, task, err);
		return 0;
	}
	if (c == 0)
		return 0;
	/* It sees the GPU(s) the deal gave it (and maybe more: the step's whole list). */
	if (deal->n_gpus) {
		size_t have = 0;

		for (size_t d = 0; d < deal->n_gpus; d++)
			for (int k = 0; k < c; k++)
				if (gpus[k] == deal->gpus[d]) {
					have++;
					break;
				}
		if (have == deal->n_gpus)
			return 0;
	}
	if (seen_view_build(sv, n, (unsigned)task, gpus, (size_t)c)) {
		seen_view_release(sv);
		return 0;
	}
	return 1;
}

/* CPU and memory binding, within the mask Slurm already gave the task. */
static void apply_binding(struct spank_ib_state *st, struct spank_ib_node *n,
			  const struct ibp_place_view *view, int task)
{
	cpu_set_t have, want, both;
	hwloc_bitmap_t set = hwloc_bitmap_alloc();

	if (!set || !view->cpus)
		goto out;
	if (sched_getaffinity(0, sizeof(have), &have) ||
	    hwloc_cpuset_to_glibc_sched_affinity(n->topo.t, view->cpus, &want, sizeof(want)))
		goto out;
	CPU_AND(&both, &have, &want);
	if (!CPU_COUNT(&both)) {
		fprintf(stderr,
			"spank-ib: %s: task %d: planned CPUs are outside the task's CPU mask from "
			"Slurm: not binding\n",
			st->host, task);
		goto out;
	}
	if (sched_setaffinity(0, sizeof(both), &both))
		fprintf(stderr, "spank-ib: %s: task %d: sched_setaffinity: %s\n", st->host, task,
			strerror(errno));
	if (view->mems && !hwloc_bitmap_iszero(view->mems)) {
		int first = hwloc_bitmap_first(view->mems);
		unsigned long mask =
		    first >= 0 && first < (int)(8 * sizeof(unsigned long)) ? 1UL << first : 0;
		/* Preferred, not bound: a full node spills over instead of failing. */
		if (mask && set_mempolicy(MPOL_PREFERRED, &mask, 8 * sizeof(mask)))
			fprintf(stderr, "spank-ib: %s: task %d: set_mempolicy: %s\n", st->host,
				task, strerror(errno));
	}
out:
	hwloc_bitmap_free(set);
}

int spank_ib_remote_task_init(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_node *n = st->node;
	struct ibp_place_view deal;
	const struct ibp_place_view *view = &deal;
	struct seen_view sv = {0};
	bool seen;
	int task = -1;

	if (!n || !st->active)
		return 0;
	if (!n->have_pl || n->verdict)
		return n->verdict;
	if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS || task < 0 ||
	    ibp_place_view_task(&n->pl, (size_t)task, &deal))
		return n->verdict;
	/* The GPU the task really uses decides its HCA, CPUs and environment. */
	seen = task_seen_gpus(sp, st, n, &deal, task, &sv) == 1;
	if (seen)
		view = &sv.v;
	if (st->eff.env != SPANK_IB_ENV_OFF) {
		apply_env(sp, st, n, view);
		if (st->eff.affinity != SPANK_IB_AFF_OFF)
			apply_gpus(sp, n, view);
	}
	if (st->eff.affinity != SPANK_IB_AFF_OFF && st->conf.bind)
		apply_binding(st, n, view, task);
	if (st->eff.affinity == SPANK_IB_AFF_VERBOSE) {
		char row[512];

		view_row(n, (size_t)task, view, row, sizeof(row));
		fprintf(stderr, "spank-ib: %s: %s%s%s\n", st->host, row,
			seen ? " (GPUs from CUDA_VISIBLE_DEVICES)" : "",
			st->conf.bind ? "" : " (not bound: bind=no)");
	}
	if (seen)
		seen_view_release(&sv);
	return n->verdict;
}

static void node_free(struct spank_ib_node *n)
{
	if (!n)
		return;
	if (n->have_pl)
		ibp_placement_release(&n->pl);
	if (n->have_topo)
		ibp_topo_release(&n->topo);
	if (n->have_in)
		ibp_health_input_release(&n->in);
	ibp_findings_release(&n->findings);
	free(n);
}

int spank_ib_remote_exit(spank_t sp, struct spank_ib_state *st)
{
	(void)sp;
	node_free(st->node);
	st->node = NULL;
	return 0;
}

/* ---- the job prolog (root, in slurmd; PrologFlags=Alloc: at allocation) ---- */

static uint32_t prolog_job_id(spank_t sp)
{
	uint32_t id = 0;
	const char *v;
	uint64_t x;

	if (spank_get_item(sp, S_JOB_ID, &id) == ESPANK_SUCCESS && id)
		return id;
	/* slurmd sets the prolog's environment: not the user's. */
	v = getenv("SLURM_JOB_ID");
	if (v && !ibp_parse_u64(v, &x) && x <= UINT32_MAX)
		return (uint32_t)x;
	return 0;
}

int spank_ib_job_prolog(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_node *n;
	struct job_env je = {.sp = sp};
	char root[PATH_MAX], cache_dir[PATH_MAX];
	int verdict;

	if (!st->conf.prolog_check)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n) {
		slurm_error("spank-ib: %s: out of memory", st->host);
		return -1;
	}
	ibp_findings_init(&n->findings);
	n->job_id = prolog_job_id(sp);
	memset(&st->eff, 0, sizeof(st->eff));
	st->eff.check = SPANK_IB_CHECK_FAIL;
	if (spank_ib_expand(st->conf.sysfs_root, st->host, NULL, root, sizeof(root)) ||
	    spank_ib_expand(st->conf.cache_dir, st->host, NULL, cache_dir, sizeof(cache_dir)))
		setup_finding(n, IBP_SEV_FAIL, "a path in plugstack.conf is too long for host %s",
			      st->host);
	else
		load_health(st, n, &je, root, cache_dir);
	judge(st, n);
	/* slurmd logs these; Slurm drains a node whose prolog fails. */
	for (char *l = n->msg, *e; *l; l = e + 1) {
		e = strchr(l, '\n');
		if (!e)
			break;
		*e = '\0';
		slurm_error("%s", l);
	}
	verdict = n->verdict;
	node_free(n);
	return verdict;
}

int spank_ib_job_epilog(spank_t sp, struct spank_ib_state *st)
{
	char cache_dir[PATH_MAX];
	uint32_t id = prolog_job_id(sp);

	if (id &&
	    !spank_ib_expand(st->conf.cache_dir, st->host, NULL, cache_dir, sizeof(cache_dir)))
		spank_ib_cache_drop(cache_dir, id);
	return 0;
}
