/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_test.c: the cross-node test.
 *
 *   init_post_opt (root)       spank_ib_test_prepare: the listener, bound
 *                              below net.ipv4.ip_unprivileged_port_start so
 *                              no user can take it (test_ports=, default
 *                              230-299; a range in the ephemeral range is
 *                              refused), for a multi-node step only and
 *                              within the job's share (test_ports_per_job,
 *                              ib_ports.c), munged's socket (munge_socket=,
 *                              else slurm.conf's AuthInfo=socket=), the helper,
 *                              the test's user (test_user=)
 *   user_init (the job's user) spank_ib_run_test: every node of the step at
 *                              about the same time; the network-facing work
 *                              runs in the helper as the test's system user,
 *                              never the job's (ib_child.c), bounded by
 *                              test_timeout plus a margin; the listener is
 *                              closed as soon as it returns, before any task
 *                              is forked
 *
 * Nothing that reads other hosts' bytes runs in slurmstepd: it only reads
 * the child's result, through a decoder that trusts nothing.  Findings fail
 * the step (unless the user chose --ib-check=warn and the admin did not
 * enforce the test); they never drain: blame across nodes is a suspicion.
 * With requeue=, the node the test suspects itself (every one of its links
 * failed) requeues the job without it: no Slurm API here (spank_ib.h), so
 * through the watcher run once as root (spank_ib_requeue_now, ib_watch.c)
 * while the job still waits for this step, else as root in
 * slurm_spank_exit (ib_remote.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "ibprep/env.h"
#include "ibprep/fingerprint.h"
#include "ibprep/hca.h"
#include "ibprep/place.h"
#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_pipe.h"
#include "ibprep/rdmatest_ports.h"
#include "ibprep/rdmatest_rails.h"
#include "ibprep/sysfs.h"
#include "ibprep/text.h"
#include "ibprep/topo.h"

#include "spank_ib.h"

/* Past test_timeout the child is killed: room for its exec and its last write. */
#define CHILD_MARGIN_S 1.0

struct spank_ib_rdmatest {
	int listen_fds[IBP_RDMATEST_MAX_LISTEN]; /* in candidate order, -1 = not bound */
	uint16_t listen_ports[IBP_RDMATEST_MAX_LISTEN];
	size_t n_listen;
	char munge_socket[PATH_MAX]; /* "" = libmunge's default */
	char munge_from[48];         /* where it came from, for messages */
	char helper[PATH_MAX];
	uint32_t uid, gid;              /* the job's */
	uint32_t test_uid, test_gid;    /* the test child's (test_user=) */
	struct ibp_findings setup;      /* what stops the test before it starts */
	struct spank_ib_port_slot slot; /* the job's share of the ports (ib_ports.c) */
};

void spank_ib_test_release(struct spank_ib_node *n)
{
	struct spank_ib_rdmatest *t = n ? n->test : NULL;

	if (!t)
		return;
	for (size_t i = 0; i < t->n_listen; i++)
		if (t->listen_fds[i] >= 0)
			close(t->listen_fds[i]);
	spank_ib_port_slot_release(&t->slot); /* after the port: never two holders of one slot */
	ibp_findings_release(&t->setup);
	free(t);
	n->test = NULL;
}

__attribute__((format(printf, 4, 5))) static void
setup_fail(struct spank_ib_rdmatest *t, const char *code, const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ibp_findings_vaddf(&t->setup, code, IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0, NULL, fix, fmt,
			   ap);
	va_end(ap);
}

/* The port range against the node's sysctls: warnings kept, an overlap refused. */
static int check_ports(struct spank_ib_rdmatest *t, const struct ibp_policy *pol)
{
	struct ibp_port_sysctl sc;
	struct ibp_sysfs fs = {.root_fd = -1};
	int rc;

	memset(&sc, 0, sizeof(sc));
	/* This node's own /proc (sysfs_root= is for simulated hardware only). */
	if (!ibp_sysfs_open(&fs, "/")) {
		if (ibp_port_sysctl_read(&fs, &sc))
			memset(&sc, 0, sizeof(sc));
		ibp_sysfs_close(&fs);
	}
	rc = ibp_port_range_check(pol->test_port_lo, pol->test_port_hi, &sc, &t->setup);
	return rc;
}

/*
 * One of the job's test_ports_per_job slots on this node (ib_ports.c).  -1
 * when the job holds them all (a job fault: its own steps hold the ports);
 * 0 otherwise, also when the slots cannot be kept (cache_dir unusable: the
 * cap is not enforced, slurmd's log says why).
 */
static int take_slot(const struct spank_ib_state *st, const struct spank_ib_node *n,
		     struct spank_ib_rdmatest *t)
{
	unsigned cap = st->conf.test_ports_per_job;
	char dir[PATH_MAX], why[PATH_MAX + 512];
	int dfd, rc;

	if (ibp_conf_expand(st->conf.cache_dir, st->host, NULL, dir, sizeof(dir))) {
		slurm_info("spank-ib: %s: test_ports_per_job not enforced: cache_dir too long",
			   st->host);
		return 0;
	}
	dfd = spank_ib_cache_open(dir, geteuid() == 0, why, sizeof(why));
	if (dfd < 0) {
		slurm_info("spank-ib: %s: test_ports_per_job not enforced: cache_dir %s", st->host,
			   why);
		return 0;
	}
	rc = spank_ib_port_slot_take(&t->slot, dfd, n->job_id, cap);
	close(dfd);
	if (rc == -EBUSY) {
		ibp_findings_addf(
		    &t->setup, "rdmatest_ports_per_job", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
		    "at most test_ports_per_job steps of one job testing at "
		    "once on a node",
		    "run fewer --ib-test steps of this job at once on a node (or ask "
		    "the admin to raise test_ports_per_job= in plugstack.conf)",
		    "job %u already holds %u of this node's test ports in other steps "
		    "(test_ports_per_job=%u): this step's cross-node test did not run",
		    n->job_id, cap, cap);
		return -1;
	}
	if (rc)
		slurm_info("spank-ib: %s: test_ports_per_job not enforced for job %u step %u: %s",
			   st->host, n->job_id, n->step_id, strerror(-rc));
	return 0;
}

int spank_ib_test_prepare(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n)
{
	struct spank_ib_rdmatest *t = calloc(1, sizeof(*t));
	const struct ibp_policy *pol = &st->conf.policy;
	char err[512];
	int rc;

	if (!t)
		return -ENOMEM;
	n->test = t;
	ibp_findings_init(&t->setup);
	t->slot.fd = t->slot.dfd = -1;
	for (size_t i = 0; i < IBP_RDMATEST_MAX_LISTEN; i++)
		t->listen_fds[i] = -1;
	spank_get_item(sp, S_JOB_UID, &t->uid);
	spank_get_item(sp, S_JOB_GID, &t->gid);
	snprintf(t->helper, sizeof(t->helper), "%s",
		 st->conf.test_helper[0] ? st->conf.test_helper : spank_ib_helper_default());
	if (spank_ib_helper_check("test helper", t->helper, err, sizeof(err)))
		setup_fail(t, "rdmatest_no_helper",
			   "install ibprep from the same build as spank_ib.so, root-owned, or set "
			   "test_helper= in plugstack.conf",
			   "%s", err);
	rc = spank_ib_test_user(st->conf.test_user[0] ? st->conf.test_user
						      : spank_ib_test_user_default(),
				t->uid, &t->test_uid, &t->test_gid, err, sizeof(err));
	if (rc)
		setup_fail(t, "rdmatest_no_test_user",
			   rc == -EPERM
			       ? "set test_user= in plugstack.conf to a system user that "
				 "runs no job and owns no file (default _spank-ib)"
			       : "install the spank-ib package (it creates the system user "
				 "_spank-ib), or create test_user= with the same uid on every "
				 "node (adduser --system --group --no-create-home NAME)",
			   "%s", err);
	if (st->conf.munge_socket[0]) {
		snprintf(t->munge_socket, sizeof(t->munge_socket), "%s", st->conf.munge_socket);
		snprintf(t->munge_from, sizeof(t->munge_from), "munge_socket=");
	} else if (!spank_ib_authinfo_socket(spank_ib_slurm_conf_path(), t->munge_socket,
					     sizeof(t->munge_socket))) {
		snprintf(t->munge_from, sizeof(t->munge_from), "slurm.conf AuthInfo=socket=");
	} else {
		t->munge_socket[0] = '\0';
		snprintf(t->munge_from, sizeof(t->munge_from), "libmunge's default");
	}
	if (check_ports(t, pol))
		return 0; /* refused: its finding says why */
	if (n->nnodes <= 1)
		return 0; /* a single-node step tests no link: it holds no port */
	if (take_slot(st, n, t))
		return 0; /* over the job's share: its finding says why */
	rc = ibp_rdmatest_listen(n->job_id, n->step_id, pol->test_port_lo, pol->test_port_hi, NULL,
				 t->listen_fds, t->listen_ports, IBP_RDMATEST_MAX_LISTEN);
	if (rc < 0) {
		setup_fail(t, "rdmatest_no_listener",
			   rc == -EADDRINUSE ? "free the ports, or widen test_ports= (other steps "
					       "of this node hold them)"
					     : "check test_ports= in plugstack.conf",
			   "cannot listen on any of the test's candidate ports in %u-%u for job "
			   "%u step %u: %s",
			   pol->test_port_lo, pol->test_port_hi, n->job_id, n->step_id,
			   strerror(-rc));
		return 0;
	}
	t->n_listen = (size_t)rc;
	return 0;
}

/* The placement's kind of the fabric port PORT of HCA H. */
static enum ibp_fabric_kind port_kind(const struct spank_ib_node *n, int h, unsigned port)
{
	for (size_t i = 0; i < n->pl.n_ports; i++)
		if (n->pl.ports[i].hca == h && n->pl.ports[i].port == port)
			return n->pl.ports[i].kind;
	return n->pl.fabric_kind;
}

/*
 * The healthy fabric ports in rail order (the fingerprint's rails; the
 * test's, filtered below), with each port's netdev (NETDEV may be NULL).
 */
static size_t fabric_ports(const struct spank_ib_node *n, struct ibp_tx_port *ports,
			   enum ibp_fabric_kind *kinds, const char **netdev, size_t max)
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
		if (netdev)
			netdev[k] = "";
		for (unsigned p = 0; p < h->n_ports; p++) {
			if (h->ports[p].num != nic->port)
				continue;
			ports[k].link_layer = h->ports[p].link_layer;
			ports[k].gid_index = h->ports[p].gid_index;
			if (netdev)
				netdev[k] = h->ports[p].netdev;
		}
		ih = ibp_inventory_find(&n->in.inv, h->name);
		if (ih && nic->port >= 1 && nic->port <= ih->n_ports) {
			const struct ibp_port *ip = &ih->ports[nic->port - 1];

			if (ip->rate.known)
				ports[k].rate_gbps = ip->rate.gbps;
			if (netdev &&
			    ip->netdev[0]) /* sysfs, where the topology file may not say */
				netdev[k] = ip->netdev;
		}
		if (kinds)
			kinds[k] = port_kind(n, nic->hca, nic->port);
		k++;
	}
	return k;
}

/*
 * The test's rails: the fabric ports the transport can drive
 * (rdmatest_rails.h), renumbered in order; for the socket transport each
 * over its own netdev's address, or none when no port has one (one rail on
 * the node's address).  SKIPPED gets the ports left out ("mlx5_0 (EFA)"),
 * "" none; returns the number of rails, 0 with *UNDRIVEN when every
 * fabric port was left out.
 */
static size_t test_rails(const struct spank_ib_node *n, enum ibp_tx_kind tx,
			 struct ibp_tx_port *ports, char *skipped, size_t slen, bool *undriven)
{
	struct ibp_tx_port all[IBP_RDMATEST_MAX_RAILS];
	enum ibp_fabric_kind kinds[IBP_RDMATEST_MAX_RAILS];
	const char *nd_all[IBP_RDMATEST_MAX_RAILS], *nd[IBP_RDMATEST_MAX_RAILS];
	size_t na = fabric_ports(n, all, kinds, nd_all, IBP_RDMATEST_MAX_RAILS), k = 0, off = 0;

	skipped[0] = '\0';
	for (size_t i = 0; i < na; i++) {
		if (!ibp_rails_drivable(tx, kinds[i])) {
			(void)ibp_appendf(skipped, slen, &off, "%s%s (%s)", off ? ", " : "",
					  all[i].device, ibp_fabric_kind_name(kinds[i])); /* cut */
			continue;
		}
		ports[k] = all[i];
		ports[k].rail = (unsigned)k;
		nd[k] = nd_all[i];
		k++;
	}
	*undriven = na > 0 && k == 0;
	if (tx == IBP_TX_SOCKET)
		k = ibp_rails_socket_ports(ports, nd, k);
	return k;
}

/* The variables the tasks will see: ours when forced, else the user's, else ours. */
struct fp_env {
	spank_t sp;
	const struct ibp_env *env;
	char buf[2048];
};

static const char *fp_getenv(void *ctx, const char *name)
{
	struct fp_env *e = ctx;
	const struct ibp_env_var *ours = NULL;
	spank_err_t rc;

	for (size_t i = 0; e->env && i < e->env->n && !ours; i++)
		if (!strcmp(e->env->v[i].name, name))
			ours = &e->env->v[i];
	if (ours && ours->action == IBP_ENV_FORCED)
		return ours->value;
	rc = spank_getenv(e->sp, name, e->buf, sizeof(e->buf));
	if (rc == ESPANK_SUCCESS)
		return e->buf;
	if (rc == ESPANK_NOSPACE)
		return "(longer than 2 KiB)";
	return ours ? ours->value : NULL;
}

/*
 * This node's fingerprint (fingerprint.h): the step's rails (the placement's
 * healthy fabric ports, whatever the transport), the node's versions read
 * through sysfs_root, and the variables task 0 will see.  NULL when nothing
 * is to be compared or on a failure (the test then runs without it).
 */
static struct ibp_fp *node_fingerprint(spank_t sp, struct spank_ib_state *st,
				       struct spank_ib_node *n)
{
	struct ibp_tx_port ports[IBP_RDMATEST_MAX_RAILS];
	struct ibp_fp_rail rails[IBP_RDMATEST_MAX_RAILS];
	struct ibp_fp_source src;
	struct ibp_sysfs fs = {.root_fd = -1};
	struct ibp_findings scratch;
	struct ibp_env env;
	struct fp_env *fe;
	struct ibp_fp *fp;
	char root[PATH_MAX];
	size_t nr;

	if (!ibp_policy_consistency_wanted(&st->conf.policy))
		return NULL;
	fp = calloc(1, sizeof(*fp));
	fe = calloc(1, sizeof(*fe));
	if (!fp || !fe) {
		free(fp);
		free(fe);
		return NULL;
	}
	nr = fabric_ports(n, ports, NULL, NULL, IBP_RDMATEST_MAX_RAILS);
	for (size_t i = 0; i < nr; i++) {
		memcpy(rails[i].device, ports[i].device, sizeof(rails[i].device));
		rails[i].port = ports[i].port;
		rails[i].gid_index = ports[i].gid_index;
	}
	ibp_env_init(&env);
	ibp_findings_init(&scratch);
	if (n->have_pl && n->pl.n_tasks && st->eff.env != SPANK_IB_ENV_OFF) {
		struct ibp_place_view view;
		struct ibp_env_opts eo = {.force = st->eff.env == SPANK_IB_ENV_FORCE,
					  .socket_ifname = n->ifname[0] ? n->ifname : NULL};

		if (!ibp_place_view_task(&n->pl, 0, &view))
			ibp_env_build(&env, &n->topo, &n->pl, &view, &st->conf.policy, &eo,
				      spank_ib_env_get, sp, &scratch);
	}
	fe->sp = sp;
	fe->env = &env;
	memset(&src, 0, sizeof(src));
	src.inv = n->have_in ? &n->in.inv : NULL;
	src.rails = rails;
	src.n_rails = nr;
	if (!ibp_conf_expand(st->conf.sysfs_root, st->host, NULL, root, sizeof(root)) &&
	    !ibp_sysfs_open(&fs, root))
		src.fs = &fs;
	src.getenv = fp_getenv;
	src.getenv_ctx = fe;
	ibp_fp_collect(fp, &src); /* -ENOSPC: the rest is compared */
	ibp_sysfs_close(&fs);
	ibp_findings_release(&scratch);
	ibp_env_release(&env);
	free(fe);
	return fp;
}

/* Only what the pipe's encoder takes (printable ASCII). */
static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* Runs the child; its findings (or the reason there are none) go to TF. */
static void run_child(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n,
		      struct spank_ib_rdmatest *t, const char *self, struct ibp_findings *tf,
		      struct ibp_rdmatest_result *res)
{
	struct ibp_pipe_plan *plan = calloc(1, sizeof(*plan));
	struct spank_ib_child_spec spec = {
	    .helper = t->helper, .uid = t->test_uid, .gid = t->test_gid};
	int bound[IBP_RDMATEST_MAX_LISTEN];
	char err[512], why[512];
	size_t nb = 0;
	int rc;

	if (!plan) {
		setup_fail(t, "rdmatest_child_failed", "", "out of memory");
		return;
	}
	ibp_pipe_plan_init(plan);
	if (spank_getenv(sp, "SLURM_STEP_NODELIST", plan->nodelist, sizeof(plan->nodelist)) !=
		ESPANK_SUCCESS &&
	    spank_getenv(sp, "SLURM_NODELIST", plan->nodelist, sizeof(plan->nodelist)) !=
		ESPANK_SUCCESS) {
		ibp_findings_addf(tf, "rdmatest_no_nodelist", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
				  "SLURM_STEP_NODELIST in the step's environment",
				  "do not unset Slurm's variables",
				  "the step's node list is not in its environment");
		free(plan);
		return;
	}
	/*
	 * The list is srun's word: only the one slurmstepd was launched with
	 * (its node count, this node at its index) is tested (ib_nodes.c).
	 */
	if (spank_ib_nodelist_check(plan->nodelist, n->nnodes, n->nodeid, self, why, sizeof(why))) {
		ibp_findings_addf(tf, "rdmatest_nodelist_mismatch", IBP_SEV_FAIL, IBP_CLASS_JOB,
				  NULL, 0, "the node list Slurm launched the step with",
				  "launch the step with Slurm's srun: the test runs only over the "
				  "nodes Slurm gave the step",
				  "cross-node test not run: %s", why);
		free(plan);
		return;
	}
	plan->job = n->job_id;
	plan->step = n->step_id;
	plan->uid = t->uid;
	plan->index = n->nodeid;
	plan->mode = st->eff.test == SPANK_IB_TEST_FULL ? IBP_RDMATEST_FULL : IBP_RDMATEST_QUICK;
	snprintf(plan->munge_socket, sizeof(plan->munge_socket), "%s", t->munge_socket);
	snprintf(plan->topology_conf, sizeof(plan->topology_conf), "%s", st->conf.topology_conf);
	/*
	 * No topology file: this node's own path as slurmd set it in the job's
	 * environment (it overwrites what srun passed).  Read as data: the
	 * child parses it; too long or absent, it is simply not used.
	 */
	if (!plan->topology_conf[0] &&
	    (spank_getenv(sp, "SLURM_TOPOLOGY_ADDR", plan->topology_addr,
			  sizeof(plan->topology_addr)) != ESPANK_SUCCESS ||
	     spank_getenv(sp, "SLURM_TOPOLOGY_ADDR_PATTERN", plan->topology_pattern,
			  sizeof(plan->topology_pattern)) != ESPANK_SUCCESS ||
	     !printable(plan->topology_addr) || !printable(plan->topology_pattern))) {
		plan->topology_addr[0] = '\0';
		plan->topology_pattern[0] = '\0';
	}
	plan->policy = st->conf.policy;
	plan->n_listen = t->n_listen;
	for (size_t i = 0; i < t->n_listen; i++) {
		plan->listen_ports[i] = t->listen_ports[i];
		plan->listen_bound[i] = t->listen_fds[i] >= 0;
		if (t->listen_fds[i] >= 0)
			bound[nb++] = t->listen_fds[i];
	}
	{
		bool socket = !strcmp(st->conf.policy.test_transport, "socket"), undriven;
		char skipped[IBP_TEXT_MAX];

		plan->n_ports = test_rails(n, socket ? IBP_TX_SOCKET : IBP_TX_VERBS, plan->ports,
					   skipped, sizeof(skipped), &undriven);
		if (skipped[0])
			ibp_findings_addf(
			    tf, "rdmatest_ports_skipped", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0,
			    "InfiniBand or RoCE ports, which the verbs transport drives with RC "
			    "QPs",
			    "test these nodes with test_transport=socket (their IP networks), or "
			    "with the fabric's own libfabric tools (fi_pingpong)",
			    "cross-node test: %s not tested: the verbs transport needs RC queue "
			    "pairs, which EFA (libfabric's efa, SRD), Slingshot (libfabric's cxi) "
			    "and iWARP or usNIC ports do not have%s",
			    skipped, undriven ? "; no port of this node's fabric is tested" : "");
		if (undriven) {
			free(plan);
			return;
		}
	}
	{
		struct ibp_fp *fp = node_fingerprint(sp, st, n);

		if (fp) {
			plan->fp = *fp;
			plan->has_fp = true;
			free(fp);
		}
	}
	spec.listen_fds = bound;
	spec.n_listen_fds = nb;
	spec.budget_s = st->conf.policy.test_timeout_s + CHILD_MARGIN_S;
	rc = spank_ib_child_run(&spec, plan, res, tf, err, sizeof(err));
	if (!rc) /* results_log= (ib_results.c): the child's links, already checked by the decoder */
		spank_ib_keep_results(st, n, plan->nodelist, res, tf);
	if (rc == -ETIMEDOUT)
		ibp_findings_addf(tf, "rdmatest_child_timeout", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL,
				  0, NULL,
				  "check that munged answers on this node (munge_socket=) and that "
				  "the step's node names resolve quickly",
				  "%s", err);
	else if (rc)
		ibp_findings_addf(tf, "rdmatest_child_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL,
				  0, NULL, "check test_helper= and the installed ibprep", "%s",
				  err);
	free(plan);
}

/* The cross-node test's note on NCCL_CROSS_NIC: whether the rails reach each other. */
bool spank_ib_finding_is_note(const struct ibp_finding *x)
{
	return x->severity == IBP_SEV_OK && (!strcmp(x->code, "rdmatest_rails_isolated") ||
					     !strcmp(x->code, "rdmatest_rails_joined"));
}

/*
 * A finding of the child is this node's word: its node is this node.  One
 * about another node (the blame, a neighbour's fingerprint, a switch's
 * uplinks) says so in its text, with that node's device and port, so that
 * this node's log never reads as another node's own line.
 */
static void own_node(struct ibp_finding *x, const char *host, const char *self)
{
	char about[sizeof(x->observed)];

	if (!x->node[0] || !strcmp(x->node, host) || !strcmp(x->node, self)) {
		snprintf(x->node, sizeof(x->node), "%s", host);
		return;
	}
	/* cut: the end says so, and no character is split */
	if (x->device[0] && x->port > 0)
		ibp_format_cut(about, sizeof(about), "about %s %s port %d: %s", x->node, x->device,
			       x->port, x->observed);
	else if (x->device[0])
		ibp_format_cut(about, sizeof(about), "about %s %s: %s", x->node, x->device,
			       x->observed);
	else
		ibp_format_cut(about, sizeof(about), "about %s: %s", x->node, x->observed);
	memcpy(x->observed, about, sizeof(x->observed));
	snprintf(x->node, sizeof(x->node), "%s", host);
	x->device[0] = '\0';
	x->port = 0;
}

/* This node's Slurm NodeName (slurmstepd's slurm.conf), else its host name. */
static void self_name(const struct spank_ib_state *st, char *self, size_t len)
{
	if (spank_ib_node_name(st->host, self, len))
		snprintf(self, len, "%s", st->host);
}

void spank_ib_run_test(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n)
{
	struct spank_ib_rdmatest *t = n->test;
	struct ibp_rdmatest_result *res = calloc(1, sizeof(*res));
	struct ibp_findings tf;
	char line[1024], self[IBP_NODE_MAX];
	size_t fails = 0;
	bool failing, start_failed = n->verdict != 0;
	enum spank_ib_test_blame blame;

	ibp_findings_init(&tf);
	if (!t) {
		free(res);
		return; /* init_post_opt stopped early and said why */
	}
	if (!res) {
		slurm_error("spank-ib: %s: cross-node test: out of memory", st->host);
		n->verdict = -1;
		free(res);
		return;
	}
	/* Setup trouble first; a refused range or a missing helper stops the test here. */
	for (size_t i = 0; i < t->setup.n; i++)
		ibp_findings_add(&tf, &t->setup.v[i]);
	self_name(st, self, sizeof(self));
	if (ibp_findings_worst(&t->setup) != IBP_SEV_FAIL)
		run_child(sp, st, n, t, self, &tf, res);
	/* who the child suspects, read before its findings are reworded as this node's */
	blame = spank_ib_test_blame(&tf, self, st->host);
	/* The step fails on the test's failures unless the user chose --ib-check=warn. */
	failing = !st->eff.check_warn_by_user;
	for (size_t i = 0; i < tf.n; i++) {
		struct ibp_finding *x = &tf.v[i];
		enum spank_ib_audience to;

		own_node(x, st->host, self);
		to = spank_ib_audience_of(st, x, failing);
		if (x->severity < IBP_SEV_WARN)
			continue;
		if (x->severity == IBP_SEV_FAIL)
			fails++;
		spank_ib_finding_say(st, n, x, to, "");
		if (!strcmp(x->code, "rdmatest_munge_unavailable"))
			(to == SPANK_IB_TO_USER_ERROR ? slurm_error : slurm_info)(
			    "spank-ib: %s: munged's socket: %s (from %s)", st->host,
			    t->munge_socket[0] ? t->munge_socket : "libmunge's default",
			    t->munge_from);
		ibp_findings_add(&n->findings, x);
	}
	if (fails && failing) {
		n->verdict = -1;
		slurm_error("spank-ib: %s: failing the step: the cross-node test failed "
			    "(%zu finding%s, %.2f s)",
			    st->host, fails, fails == 1 ? "" : "s", res->elapsed_s);
		/*
		 * Only the suspected node acts (its neighbours saw it from their
		 * side), and only when the test failed the step: a step that
		 * failed at its start was requeued or refused there.
		 */
		if (st->eff.requeue && !start_failed && blame == SPANK_IB_BLAME_SELF &&
		    !spank_ib_requeue_now(st, n, self))
			snprintf(n->blamed, sizeof(n->blamed), "%s", self);
		else if (st->eff.requeue && !start_failed && blame == SPANK_IB_BLAME_JOB_FAULT)
			slurm_error("spank-ib: %s: not requeued: the step also has a job fault, "
				    "which would fail it on any node",
				    st->host);
	}
	snprintf(n->test_said, sizeof(n->test_said), "%s with %zu node%s in %.3f s",
		 fails       ? "fail"
		 : res->pass ? "pass"
			     : "warn", /* inconclusive, another build: the step runs */
		 res->nnodes, res->nnodes == 1 ? "" : "s", res->elapsed_s);
	/*
	 * One line for the step, from its first node, when the user asked for
	 * the test (not only the admin's enforce=test); a report on stderr
	 * carries each node's own instead.  The rails' note for NCCL_CROSS_NIC
	 * (the user's to act on, a note of the whole step) follows it only
	 * with --ib-affinity=verbose; the report lists it.
	 */
	if (!(fails && failing) && n->nodeid == 0 &&
	    (st->eff.test_by_user || st->eff.affinity == SPANK_IB_AFF_VERBOSE) &&
	    (st->eff.report == SPANK_IB_REPORT_OFF || st->eff.report_file[0])) {
		slurm_spank_log("spank-ib: %s: cross-node test: %s", st->host, n->test_said);
		for (size_t i = 0; i < tf.n && st->eff.affinity == SPANK_IB_AFF_VERBOSE; i++)
			if (spank_ib_finding_is_note(&tf.v[i])) {
				ibp_finding_format(&tf.v[i], st->host, line, sizeof(line));
				slurm_spank_log("spank-ib: note: %s", line);
			}
	}
	/* the rails' note goes into --ib-report (text and json) too */
	for (size_t i = 0; i < tf.n; i++)
		if (spank_ib_finding_is_note(&tf.v[i]))
			ibp_findings_add(&n->findings, &tf.v[i]);
	/* The listener lives until the child is done, and not a task longer. */
	spank_ib_test_release(n);
	ibp_findings_release(&tf);
	free(res);
}
