/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep place | env | exec: parse -> load topology (+ sysfs health) ->
 * compute the placement -> report / apply.  The core does the work; this
 * file reads the environment (Slurm's variables, the user's settings),
 * prints, binds and execs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibprep/cpulist.h"
#include "ibprep/env.h"
#include "ibprep/health.h"
#include "ibprep/bind.h"
#include "ibprep/json.h"
#include "ibprep/place.h"
#include "ibprep/policy.h"
#include "ibprep/report.h"
#include "ibprep/sysfs.h"
#include "ibprep/text.h"
#include "ibprep/topo.h"
#include "ibprep_cmd.h"

extern char **environ;

enum mode { MODE_PLACE, MODE_ENV, MODE_EXEC };

struct opts {
	enum mode mode;
	const char *name; /* "place", "env", "exec" */
	const char *topology, *sysfs_root, *gpus, *peer;
	long ntasks, local_rank;
	bool json, force;
	bool help; /* --help was answered: nothing else to do */
	struct ibp_policy pol;
	char **cmd; /* exec: what follows "--" */
};

/* Everything one run holds; released in reverse order of acquisition. */
struct run {
	struct ibp_topo topo;
	struct ibp_placement pl;
	struct ibp_findings findings;
	struct ibp_env env;
	hwloc_bitmap_t own_mask;
	unsigned step_gpus[IBP_PLACE_MAX_GPUS];
	size_t n_step_gpus;
	bool all_gpus;
	const char *gpus_from; /* which source chose the GPUs */
	unsigned ntasks;
	long shown;  /* the task whose env is built (-1: all tasks shown, env of 0) */
	bool worker; /* env/exec of one GPU's worker row inside task 0 */
	char ifname[64];
};

enum {
	OPT_TOPOLOGY = 1,
	OPT_ROOT,
	OPT_NTASKS,
	OPT_LOCAL_RANK,
	OPT_GPUS,
	OPT_PEER,
	OPT_FORCE,
	OPT_JSON,
};

/* place, env and exec take the same options */
static const struct ibprep_opt place_opts[] = {
    {"topology", OPT_TOPOLOGY, 0, "FILE",
     "hwloc XML of the node (default: this machine, PCI only)"},
    {"sysfs-root", OPT_ROOT, 0, "DIR",
     "read HCA health from DIR/sys (default: / for this machine, none for a topology file: its "
     "port infos are used)"},
    {"ntasks-per-node", OPT_NTASKS, 0, "N",
     "tasks of the step on this node (default: Slurm's, else 1)"},
    {"local-rank", OPT_LOCAL_RANK, 0, "R",
     "the task (or, with one task, the GPU worker) to show/apply"},
    {"gpus", OPT_GPUS, 0, "LIST|all",
     "the step's GPUs: indices in PCI bus order or bus IDs (default: SLURM_STEP_GPUS, "
     "SLURM_JOB_GPUS, else all)"},
    {"peer", OPT_PEER, 0, "ADDR",
     "an address of another node of the step: NCCL_SOCKET_IFNAME is the interface that "
     "reaches it"},
    {"force", OPT_FORCE, 0, NULL, "replace variables the user set (default: keep and lint)"},
    {"json", OPT_JSON, 0, NULL, "one JSON object instead of text"},
    {NULL, 0, 0, NULL, NULL},
};

#define PLACE_EPILOG                                                                               \
	"exit status: 0 placed (warnings allowed), 1 no sane placement, 2 could not run\n"

const struct ibprep_cmd_spec ibprep_place_spec = {
    .name = "place",
    .synopsis = "[OPTIONS] [KEY=VALUE ...]",
    .about = "Shows each task's GPUs, HCA port, CPUs and memory node, and why.\n",
    .opts = place_opts,
    .operand = "KEY=VALUE",
    .operand_help = "policy settings (spank_ib.conf(5))",
    .epilog = PLACE_EPILOG,
};

const struct ibprep_cmd_spec ibprep_env_spec = {
    .name = "env",
    .synopsis = "[OPTIONS] [KEY=VALUE ...]",
    .about = "Prints the NCCL/UCX/MPI environment of one task as shell 'export' lines.\n",
    .opts = place_opts,
    .operand = "KEY=VALUE",
    .operand_help = "policy settings (spank_ib.conf(5))",
    .epilog = "ibprep env --resolve-child is internal: the name lookup child of spank_ib.so\n"
	      "(the names on fd 0, their addresses on fd 1).\n"
	      "\n" PLACE_EPILOG,
};

const struct ibprep_cmd_spec ibprep_exec_spec = {
    .name = "exec",
    .synopsis = "[OPTIONS] [KEY=VALUE ...] -- CMD [ARGS...]",
    .about = "Binds this process to the task's CPUs and memory node, sets its environment\n"
	     "and executes CMD.\n",
    .opts = place_opts,
    .operand = "KEY=VALUE",
    .operand_help = "policy settings (spank_ib.conf(5))",
    .epilog = "exit status: CMD's, or 1 no sane placement, 2 could not run, 126/127 CMD\n"
	      "could not be executed / was not found\n",
    .command_after_dashdash = true,
};

static const char *envget(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* A decimal in [lo, hi] or -1. */
static long parse_long(const char *s, long lo, long hi)
{
	char *end;
	long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	return v;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	const struct ibprep_cmd_spec *spec = o->mode == MODE_EXEC  ? &ibprep_exec_spec
					     : o->mode == MODE_ENV ? &ibprep_env_spec
								   : &ibprep_place_spec;
	struct ibprep_args args;
	char err[256];
	int opt;

	o->ntasks = -1;
	o->local_rank = -1;
	ibp_policy_init(&o->pol);
	ibprep_args_init(&args, spec, argc, argv);
	while ((opt = ibprep_args_next(&args)) != IBPREP_ARGS_END) {
		const char *val = args.value;

		switch (opt) {
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_FORCE:
			o->force = true;
			break;
		case OPT_TOPOLOGY:
			o->topology = val;
			break;
		case OPT_ROOT:
			o->sysfs_root = val;
			break;
		case OPT_GPUS:
			o->gpus = val;
			break;
		case OPT_PEER: {
			unsigned char a[sizeof(struct in6_addr)];

			if (inet_pton(AF_INET, val, a) != 1 && inet_pton(AF_INET6, val, a) != 1) {
				fprintf(
				    stderr,
				    "ibprep %s: bad --peer '%s': expected a numeric IPv4 or IPv6 "
				    "address of another node of the step\n",
				    o->name, val);
				return -1;
			}
			o->peer = val;
			break;
		}
		case OPT_NTASKS:
			o->ntasks = parse_long(val, 1, IBP_PLACE_MAX_TASKS);
			if (o->ntasks < 0) {
				fprintf(stderr,
					"ibprep %s: bad --ntasks-per-node '%s': expected 1-%d\n",
					o->name, val, IBP_PLACE_MAX_TASKS);
				return -1;
			}
			break;
		case OPT_LOCAL_RANK:
			o->local_rank = parse_long(val, 0, IBP_PLACE_MAX_TASKS - 1);
			if (o->local_rank < 0) {
				fprintf(stderr, "ibprep %s: bad --local-rank '%s': expected 0-%d\n",
					o->name, val, IBP_PLACE_MAX_TASKS - 1);
				return -1;
			}
			break;
		case IBPREP_ARGS_OPERAND:
			if (!strchr(val, '=')) {
				fprintf(stderr, "ibprep %s: unexpected argument '%s'%s\n", o->name,
					val,
					o->mode == MODE_EXEC ? ": put the command after '--'" : "");
				ibprep_usage(spec, stderr);
				return -1;
			}
			if (ibp_policy_set_pair(&o->pol, val, err, sizeof(err))) {
				fprintf(stderr, "ibprep %s: %s\n", o->name, err);
				return -1;
			}
			break;
		case IBPREP_ARGS_HELP:
			o->help = true;
			return 1;
		default:
			return -1;
		}
	}
	if (o->mode == MODE_EXEC) {
		if (!args.command) {
			fprintf(
			    stderr,
			    "ibprep exec: no command: ibprep exec [OPTIONS] -- CMD [ARGS...]\n");
			return -1;
		}
		if (!args.command[0]) {
			fprintf(stderr, "ibprep exec: no command after '--'\n");
			return -1;
		}
		o->cmd = args.command;
	}
	return 0;
}

/*
 * "--gpus" or a Slurm variable through the core's parser; 0, or the exit
 * status (printed): 2 for a malformed list (bad input), 1 for GPUs this
 * node does not have (the request cannot be placed here).
 */
static int resolve_gpus(struct run *r, const char *list, const char *from)
{
	char err[256];
	int n = ibp_env_parse_gpus(list, from, &r->topo, r->step_gpus, IBP_PLACE_MAX_GPUS,
				   &r->all_gpus, err, sizeof(err));

	r->gpus_from = from;
	if (n < 0) {
		fprintf(stderr, "ibprep: %s\n", err[0] ? err : strerror(-n));
		return n == -ERANGE ? 1 : 2;
	}
	r->n_step_gpus = (size_t)n;
	return 0;
}

static int load(struct run *r, const struct opts *o)
{
	struct ibp_sysfs fs = {.root_fd = -1};
	struct ibp_health_input in;
	struct ibp_findings health;
	const char *root = o->sysfs_root ? o->sysfs_root : (o->topology ? NULL : "/");
	int rc;

	rc = o->topology ? ibp_topo_load_xml(&r->topo, o->topology) : ibp_topo_load_live(&r->topo);
	if (rc) {
		if (o->topology && rc == -EINVAL)
			fprintf(stderr,
				"ibprep %s: %s: not a topology hwloc %s can read (hwloc 2.x reads "
				"the 1.x "
				"and 2.x XML formats, not 3.0)\n",
				o->name, o->topology, HWLOC_VERSION);
		else
			fprintf(stderr, "ibprep %s: cannot load the topology%s%s: %s\n", o->name,
				o->topology ? " " : "", o->topology ? o->topology : "",
				strerror(-rc));
		return -1;
	}
	if (!root)
		return 0;
	if (o->sysfs_root && ibprep_sysfs_root_check(o->name, o->sysfs_root))
		return -1;
	rc = ibp_sysfs_open(&fs, root);
	if (rc) {
		fprintf(stderr, "ibprep %s: cannot open sysfs root %s: %s\n", o->name, root,
			strerror(-rc));
		return -1;
	}
	ibp_health_input_init(&in);
	ibp_findings_init(&health);
	rc = ibp_health_gather(&in, &fs, &o->pol, &health);
	if (!rc)
		rc = ibp_health_check(&in, &o->pol, &health);
	if (!rc && (o->sysfs_root || in.inv.n_hcas))
		rc = ibp_topo_apply_inventory(&r->topo, &in.inv, &health, ibp_health_port_severity);
	ibp_findings_release(&health);
	ibp_health_input_release(&in);
	ibp_sysfs_close(&fs);
	if (rc) {
		fprintf(stderr, "ibprep %s: cannot read HCA health under %s: %s\n", o->name, root,
			strerror(-rc));
		return -1;
	}
	return 0;
}

/* This process's CPU affinity.  0 or -1 (errno set). */
static int own_affinity(hwloc_bitmap_t out)
{
	for (size_t n = 1024; n <= 1 << 20; n *= 4) {
		cpu_set_t *set = CPU_ALLOC(n);
		size_t sz = CPU_ALLOC_SIZE(n);

		if (!set)
			return -1;
		if (sched_getaffinity(0, sz, set) == 0) {
			hwloc_bitmap_zero(out);
			for (size_t c = 0; c < n; c++)
				if (CPU_ISSET_S(c, sz, set))
					hwloc_bitmap_set(out, (unsigned)c);
			CPU_FREE(set);
			return 0;
		}
		CPU_FREE(set);
		if (errno != EINVAL)
			return -1;
	}
	return -1;
}

static int getenv_cb(void *ctx, const char *name, char *buf, size_t len)
{
	const char *v = getenv(name);

	(void)ctx;
	if (!v)
		return -ENOENT;
	if (strlen(v) >= len)
		return -ENOSPC;
	memcpy(buf, v, strlen(v) + 1);
	return (int)strlen(v);
}

static bool has_nvidia(const struct ibp_topo *t)
{
	for (size_t i = 0; i < t->n_gpus; i++)
		if (t->gpus[i].d.vendor == 0x10de)
			return true;
	return false;
}

/* 0, 1 (the request cannot be placed: message printed), 2 (could not run). */
static int compute(struct run *r, const struct opts *o)
{
	struct ibp_step step = {0};
	struct ibp_step_env se;
	char err[256];
	const char *from_tasks;
	int rc;

	/* Slurm's view of the step; flags override it field by field */
	rc = ibp_env_read_step(&se, &r->topo, getenv_cb, NULL, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ibprep %s: %s\n", o->name, err);
		return rc == -ERANGE ? 1 : 2; /* a GPU the node lacks; else malformed */
	}
	if (o->gpus) {
		rc = resolve_gpus(r, o->gpus, "--gpus");
	} else if (se.have_gpus) {
		memcpy(r->step_gpus, se.gpus, se.n_gpus * sizeof(se.gpus[0]));
		r->n_step_gpus = se.n_gpus;
		r->gpus_from =
		    strcmp(se.gpus_from, "SLURM_STEP_GPUS") ? "SLURM_JOB_GPUS" : "SLURM_STEP_GPUS";
	} else {
		rc = resolve_gpus(r, "all", "default");
	}
	if (rc)
		return rc;
	r->ntasks = o->ntasks > 0 ? (unsigned)o->ntasks : se.ntasks ? se.ntasks : 1;
	from_tasks = o->ntasks > 0 ? "--ntasks-per-node" : se.ntasks ? "Slurm" : "default";
	r->shown = o->local_rank;
	if (r->shown < 0 && o->mode != MODE_PLACE) {
		long lr = se.local_rank;

		if (lr < 0 && r->ntasks == 1 && envget("LOCAL_RANK")) { /* torchrun's workers */
			lr = parse_long(envget("LOCAL_RANK"), 0, IBP_PLACE_MAX_TASKS - 1);
			if (lr < 0) {
				fprintf(stderr,
					"ibprep %s: LOCAL_RANK='%s': expected a worker index 0-%d "
					"(torchrun's), or give --local-rank\n",
					o->name, envget("LOCAL_RANK"), IBP_PLACE_MAX_TASKS - 1);
				return 2;
			}
		}
		r->shown = lr;
	}
	/* one task owning several GPUs: --local-rank picks a GPU worker row */
	if (r->ntasks == 1 && r->shown >= 0 && !(r->shown == 0 && o->mode == MODE_PLACE))
		r->worker = true;
	if (!r->worker && r->shown >= (long)r->ntasks) {
		fprintf(stderr,
			"ibprep %s: local rank %ld, but the step has %u task%s on this node (%s)\n",
			o->name, r->shown, r->ntasks, r->ntasks == 1 ? "" : "s", from_tasks);
		return 1;
	}
	step.ntasks = r->ntasks;
	step.all_gpus = r->all_gpus;
	step.gpus = r->step_gpus;
	step.n_gpus = r->n_step_gpus;
	step.local_rank = r->worker ? 0 : (int)r->shown;
	step.fabric = o->pol.link_layer == IBP_POLICY_LL_IB    ? IBP_LL_IB
		      : o->pol.link_layer == IBP_POLICY_LL_ETH ? IBP_LL_ETH
							       : IBP_LL_UNKNOWN;
	if (!o->topology || o->mode == MODE_EXEC) {
		/* this machine: never place on CPUs this process may not use */
		r->own_mask = hwloc_bitmap_alloc();
		/* the kernel's mask, not hwloc's: a topology file is not this system */
		if (!r->own_mask || own_affinity(r->own_mask)) {
			fprintf(stderr, "ibprep %s: cannot read this process's CPU mask: %s\n",
				o->name, strerror(errno));
			return 2;
		}
		if (o->topology)
			step.task_allowed = r->own_mask;
		else
			step.allowed = r->own_mask;
	}
	/* CUDA's device order concerns NVIDIA GPUs only: ROCm and others have no such variable */
	if (!o->gpus && se.have_gpus && !envget("CUDA_DEVICE_ORDER") && o->mode == MODE_PLACE &&
	    has_nvidia(&r->topo))
		ibp_findings_addf(
		    &r->findings, "cuda_device_order", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
		    "PCI_BUS_ID",
		    "export CUDA_DEVICE_ORDER=PCI_BUS_ID (ibprep env and the plugin set it)",
		    "CUDA_DEVICE_ORDER is unset while Slurm numbers GPUs by PCI bus ID: "
		    "CUDA's default FASTEST_FIRST order may differ");
	rc = ibp_place_compute(&r->pl, &r->topo, &step, &r->findings);
	if (rc == -EINVAL) {
		fprintf(stderr,
			"ibprep %s: the step cannot be placed on this topology "
			"(no usable CPUs, or a GPU listed twice)\n",
			o->name);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "ibprep %s: placement failed: %s\n", o->name, strerror(-rc));
		return 2;
	}
	/* a worker rank (torchrun's LOCAL_RANK) on a task without GPUs: there is
	 * nothing to select, the worker is the task */
	if (r->worker && r->pl.n_tasks && !r->pl.tasks[0].n_gpus) {
		r->worker = false;
		r->shown = 0;
	}
	return 0;
}

static int build_env(struct run *r, const struct opts *o, struct ibp_place_view *view)
{
	struct ibp_env_opts eo = {.force = o->force};
	const char *peer = o->peer ? o->peer : envget("SLURM_LAUNCH_NODE_IPADDR");
	int rc;

	rc = r->worker ? ibp_place_view_worker(&r->pl, 0, (size_t)r->shown, view)
		       : ibp_place_view_task(&r->pl, r->shown < 0 ? 0 : (size_t)r->shown, view);
	if (rc) {
		fprintf(stderr,
			"ibprep %s: local rank %ld: the task has %zu GPU%s, no worker %ld\n",
			o->name, r->shown, r->pl.tasks[0].n_gpus,
			r->pl.tasks[0].n_gpus == 1 ? "" : "s", r->shown);
		return 1;
	}
	if (peer && !o->pol.socket_ifname[0] && (!o->topology || o->peer)) {
		rc = ibp_env_route_ifname(peer, r->ifname, sizeof(r->ifname));
		if (!rc)
			eo.socket_ifname = r->ifname;
		else if (o->peer) /* asked for, so said: never a silent default */
			fprintf(stderr,
				"ibprep %s: warning: --peer %s: no local interface reaches it "
				"(%s); NCCL_SOCKET_IFNAME is not set from it\n",
				o->name, peer, strerror(-rc));
	}
	rc = ibp_env_build(&r->env, &r->topo, &r->pl, view, &o->pol, &eo, getenv_cb, NULL,
			   &r->findings);
	if (rc) {
		fprintf(stderr, "ibprep %s: cannot build the environment: %s\n", o->name,
			strerror(-rc));
		return 2;
	}
	return 0;
}

static void print_findings(const struct run *r, const char *name)
{
	char line[1024];

	for (size_t i = 0; i < r->findings.n; i++) {
		ibp_finding_format(&r->findings.v[i],
				   r->topo.hostname[0] ? r->topo.hostname : "node", line,
				   sizeof(line));
		fprintf(stderr, "ibprep %s: %s: %s\n", name,
			ibp_severity_name(r->findings.v[i].severity), line);
	}
}

static void json_set(struct ibp_json *j, const char *key, hwloc_const_bitmap_t set)
{
	char buf[4096];

	if (!set || ibp_cpulist_format(set, buf, sizeof(buf)) < 0)
		ibp_json_kv_null(j, key);
	else
		ibp_json_kv_string(j, key, buf);
}

static void json_nic(struct ibp_json *j, const struct ibp_topo *t, const struct ibp_place_nic *n)
{
	char name[96];

	ibp_place_nic_name(t, n, name, sizeof(name));
	ibp_json_string(
	    j, n->hca >= 0 && t->hcas[n->hca].kind != IBP_NIC_RDMA ? t->hcas[n->hca].name : name);
}

/* "pcie_link": "x16 Gen5 (63.0 GB/s)" or null. */
static void json_link(struct ibp_json *j, const struct ibp_topo_dev *d)
{
	char buf[128];

	if (d->link_gbs > 0 && ibp_topo_link_text(d, buf, sizeof(buf)) > 0)
		ibp_json_kv_string(j, "pcie_link", buf);
	else
		ibp_json_kv_null(j, "pcie_link");
}

/* "fabric": in the node's fabric or not, "reason": why. */
static void json_port_role(struct ibp_json *j, const struct ibp_placement *pl, size_t hca,
			   unsigned port)
{
	for (size_t k = 0; k < pl->n_ports; k++)
		if (pl->ports[k].hca == (int)hca && pl->ports[k].port == port) {
			ibp_json_kv_bool(j, "fabric", pl->ports[k].fabric);
			ibp_json_kv_string(j, "reason", pl->ports[k].why);
			return;
		}
	ibp_json_kv_bool(j, "fabric", false);
	ibp_json_kv_null(j, "reason");
}

static int print_json(const struct run *r, const struct opts *o)
{
	const struct ibp_topo *t = &r->topo;
	struct ibp_json j;
	char advice[512];

	ibp_json_init_file(&j, stdout, IBP_JSON_PRETTY);
	ibp_json_object_begin(&j);
	ibp_json_kv_string(&j, "schema", "ibprep.place/1");
	ibp_json_kv_string(&j, "node", t->hostname);
	ibp_json_kv_string(&j, "source", t->from_file ? "xml" : "live");
	ibp_json_kv_string(&j, "fabric",
			   r->pl.fabric_ll == IBP_LL_ETH  ? "Ethernet"
			   : r->pl.fabric_ll == IBP_LL_IB ? "InfiniBand"
							  : "unknown");
	ibp_json_kv_string(&j, "fabric_kind", ibp_fabric_kind_name(r->pl.fabric_kind));
	if (ibp_place_fabric_advice(&r->pl, t, advice, sizeof(advice)) >= 0)
		ibp_json_kv_string(&j, "fabric_advice", advice);
	else
		ibp_json_kv_null(&j, "fabric_advice");
	ibp_json_kv_string(&j, "gpus_from", r->gpus_from);
	ibp_json_kv_uint(&j, "ntasks", r->ntasks);
	ibp_json_key(&j, "fabric_ports");
	ibp_json_array_begin(&j);
	for (size_t i = 0; i < r->pl.n_fabric; i++)
		json_nic(&j, t, &r->pl.fabric[i]);
	ibp_json_array_end(&j);
	ibp_json_key(&j, "gpus");
	ibp_json_array_begin(&j);
	for (size_t i = 0; i < t->n_gpus; i++) {
		const struct ibp_topo_gpu *g = &t->gpus[i];
		const struct ibp_place_gpu *pg = &r->pl.gpus[i];

		ibp_json_object_begin(&j);
		ibp_json_kv_uint(&j, "index", g->index);
		ibp_json_kv_string(&j, "pci_bus_id", g->d.pci);
		ibp_json_kv_string(&j, "vendor",
				   g->d.vendor == 0x10de   ? "nvidia"
				   : g->d.vendor == 0x1002 ? "amd"
				   : g->d.vendor == 0x8086 ? "intel"
							   : "other");
		ibp_json_key(&j, "device_id");
		ibp_json_stringf(&j, "%04x:%04x", g->d.vendor, g->d.device);
		ibp_json_kv_string(&j, "family", g->d.id ? g->d.id->family : "");
		if (g->n_parts > 1) {
			ibp_json_kv_uint(&j, "partition", g->part);
			ibp_json_kv_uint(&j, "partitions", g->n_parts);
			ibp_json_kv_string(&j, "osdev", g->osdev);
		}
		if (g->d.numa >= 0)
			ibp_json_kv_int(&j, "numa", g->d.numa);
		else
			ibp_json_kv_null(&j, "numa");
		json_set(&j, "local_cpus", g->d.cpuset);
		json_link(&j, &g->d);
		if (pg->nic.hca >= 0) {
			ibp_json_kv_string(&j, "hca", t->hcas[pg->nic.hca].name);
			ibp_json_kv_uint(&j, "port", pg->nic.port);
			ibp_json_kv_string(&j, "distance", ibp_dist_name(pg->nic.dist));
		} else {
			ibp_json_kv_null(&j, "hca");
			ibp_json_kv_null(&j, "port");
			ibp_json_kv_null(&j, "distance");
		}
		ibp_json_kv_string(&j, "hca_reason", pg->why);
		ibp_json_kv_bool(&j, "in_step", pg->in_step);
		if (pg->task >= 0)
			ibp_json_kv_int(&j, "task", pg->task);
		else
			ibp_json_kv_null(&j, "task");
		json_set(&j, "worker_cpus", pg->cpus);
		json_set(&j, "worker_mems", pg->mems);
		ibp_json_object_end(&j);
	}
	ibp_json_array_end(&j);
	ibp_json_key(&j, "hcas");
	ibp_json_array_begin(&j);
	for (size_t i = 0; i < t->n_hcas; i++) {
		const struct ibp_topo_hca *h = &t->hcas[i];

		ibp_json_object_begin(&j);
		ibp_json_kv_string(&j, "name", h->name);
		ibp_json_kv_string(&j, "pci_bus_id", h->d.pci);
		ibp_json_kv_string(&j, "kind", ibp_nic_kind_name(h->kind));
		ibp_json_kv_string(&j, "transport", ibp_transport_name(h->transport));
		if (h->d.numa >= 0)
			ibp_json_kv_int(&j, "numa", h->d.numa);
		else
			ibp_json_kv_null(&j, "numa");
		json_link(&j, &h->d);
		ibp_json_key(&j, "ports");
		ibp_json_array_begin(&j);
		for (unsigned p = 0; p < h->n_ports; p++) {
			const struct ibp_topo_port *tp = &h->ports[p];

			ibp_json_object_begin(&j);
			ibp_json_kv_uint(&j, "port", tp->num);
			ibp_json_kv_string(&j, "link_layer",
					   tp->link_layer == IBP_LL_IB    ? "InfiniBand"
					   : tp->link_layer == IBP_LL_ETH ? "Ethernet"
									  : "unknown");
			ibp_json_kv_bool(&j, "healthy", tp->healthy);
			if (!tp->healthy)
				ibp_json_kv_string(&j, "why", tp->why);
			json_port_role(&j, &r->pl, i, tp->num);
			ibp_json_object_end(&j);
		}
		ibp_json_array_end(&j);
		ibp_json_object_end(&j);
	}
	ibp_json_array_end(&j);
	ibp_json_key(&j, "tasks");
	ibp_json_array_begin(&j);
	for (size_t i = 0; i < r->pl.n_tasks; i++) {
		struct ibp_place_view view;

		if (o->mode == MODE_PLACE && r->shown >= 0 && !r->worker && (long)i != r->shown)
			continue;
		/* the plugin's --ib-report=json writes the same rows */
		if (!ibp_place_view_task(&r->pl, i, &view))
			ibp_report_task_json(&j, t, &view);
	}
	ibp_json_array_end(&j);
	ibp_json_key(&j, "env");
	ibp_json_object_begin(&j);
	for (size_t i = 0; i < r->env.n; i++)
		ibp_json_kv_string(&j, r->env.v[i].name, r->env.v[i].value);
	ibp_json_object_end(&j);
	ibp_json_key(&j, "env_user_kept");
	ibp_json_object_begin(&j);
	for (size_t i = 0; i < r->env.n; i++)
		if (r->env.v[i].action == IBP_ENV_USER_KEPT)
			ibp_json_kv_string(&j, r->env.v[i].name, r->env.v[i].user);
	ibp_json_object_end(&j);
	ibp_report_findings_json(&j, &r->findings, t->hostname);
	ibp_json_object_end(&j);
	return ibp_json_finish(&j) ? 2 : 0;
}

static void print_table(const struct run *r, const struct opts *o)
{
	const struct ibp_topo *t = &r->topo;
	char fab[512] = "", advice[512];
	size_t l = 0;

	for (size_t i = 0; i < r->pl.n_fabric; i++) {
		char n[96];

		if (t->hcas[r->pl.fabric[i].hca].kind == IBP_NIC_RDMA)
			ibp_place_nic_name(t, &r->pl.fabric[i], n, sizeof(n));
		else /* named as IBPREP_HCAS names them: libfabric devices have no verbs port */
			snprintf(n, sizeof(n), "%s", t->hcas[r->pl.fabric[i].hca].name);
		(void)ibp_appendf(fab, sizeof(fab), &l, "%s%s", l ? "," : "", n); /* cut */
	}
	printf("node %s (%s, loaded in %.1f ms): %zu GPU%s, ", t->hostname[0] ? t->hostname : "?",
	       t->from_file ? o->topology : "live", t->load_ms, t->n_gpus,
	       t->n_gpus == 1 ? "" : "s");
	if (t->n_hcas)
		printf("%zu %s fabric port%s%s%s", r->pl.n_fabric,
		       r->pl.fabric_kind == IBP_FABRIC_OTHER ? "RDMA (iWARP, usNIC or unknown)"
		       : r->pl.fabric_kind != IBP_FABRIC_NONE
			   ? ibp_fabric_kind_name(r->pl.fabric_kind)
		       : r->pl.fabric_ll == IBP_LL_ETH ? "Ethernet"
		       : r->pl.fabric_ll == IBP_LL_IB  ? "InfiniBand"
						       : "RDMA (link layer unknown)",
		       r->pl.n_fabric == 1 ? "" : "s", r->pl.n_fabric ? " " : "", fab);
	else
		printf("no RDMA device");
	printf("; %u task%s, GPUs from %s\n", r->ntasks, r->ntasks == 1 ? "" : "s", r->gpus_from);
	if (ibp_place_fabric_advice(&r->pl, t, advice, sizeof(advice)) > 0)
		printf("fabric: %s\n", advice);
	/* a healthy port left out of the fabric: the reader may have expected it */
	for (size_t k = 0; k < r->pl.n_ports; k++) {
		const struct ibp_place_port *pp = &r->pl.ports[k];
		const struct ibp_topo_hca *h = &t->hcas[pp->hca];

		for (unsigned p = 0; !pp->fabric && p < h->n_ports; p++)
			if (h->ports[p].num == pp->port && h->ports[p].healthy)
				printf("not used: %s:%u: %s\n", h->name, pp->port, pp->why);
	}
	printf("%-5s %-14s %-12s %-5s %-24s %s\n", "task", "gpu", "hca:port", "dist", "cpus",
	       "mems");
	for (size_t i = 0; i < r->pl.n_tasks; i++) {
		const struct ibp_place_task *tk = &r->pl.tasks[i];
		size_t rows = tk->n_gpus > tk->n_nics ? tk->n_gpus : tk->n_nics;
		char cpus[4096], mems[256];

		if (r->shown >= 0 && !r->worker && (long)i != r->shown)
			continue;
		ibp_cpulist_format(tk->cpus, cpus, sizeof(cpus));
		ibp_cpulist_format(tk->mems, mems, sizeof(mems));
		if (!rows)
			rows = 1;
		for (size_t k = 0; k < rows; k++) {
			char nic[96] = "-";
			const struct ibp_place_nic *n = NULL;

			if (k < tk->n_gpus && r->pl.gpus[tk->gpus[k]].nic.hca >= 0)
				n = &r->pl.gpus[tk->gpus[k]].nic;
			else if (k >= tk->n_gpus && k < tk->n_nics)
				n = &tk->nics[k];
			if (n && t->hcas[n->hca].kind != IBP_NIC_RDMA)
				snprintf(nic, sizeof(nic), "%s", t->hcas[n->hca].name);
			else if (n)
				ibp_place_nic_name(t, n, nic, sizeof(nic));
			char gpu[48] = "-";

			/* a compute partition: its bus ID and partition number */
			if (k < tk->n_gpus && t->gpus[tk->gpus[k]].n_parts > 1)
				snprintf(gpu, sizeof(gpu), "%s/%u", t->gpus[tk->gpus[k]].d.pci,
					 t->gpus[tk->gpus[k]].part);
			else if (k < tk->n_gpus)
				snprintf(gpu, sizeof(gpu), "%s", t->gpus[tk->gpus[k]].d.pci);
			if (k == 0)
				printf("%-5zu ", i);
			else
				printf("%-5s ", "");
			printf("%-14s %-12s %-5s %-24s %s\n", gpu, nic,
			       n ? ibp_dist_name(n->dist) : "-", k == 0 ? cpus : "",
			       k == 0 ? mems : "");
		}
	}
}

static void run_release(struct run *r)
{
	ibp_env_release(&r->env);
	ibp_placement_release(&r->pl);
	ibp_findings_release(&r->findings);
	hwloc_bitmap_free(r->own_mask);
	r->own_mask = NULL;
	ibp_topo_release(&r->topo);
}

/* Everything up to the environment; 0 or an exit status. */
static int prepare(int argc, char **argv, struct opts *o, struct run *r,
		   struct ibp_place_view *view)
{
	int rc = parse_args(argc, argv, o);

	memset(r, 0, sizeof(*r));
	memset(view, 0, sizeof(*view));
	ibp_topo_init(&r->topo);
	ibp_placement_init(&r->pl);
	ibp_findings_init(&r->findings);
	ibp_env_init(&r->env);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (load(r, o))
		return 2;
	rc = compute(r, o);
	if (rc)
		return rc;
	return build_env(r, o, view);
}

static int finish_status(const struct run *r)
{
	/* a failing job-class finding means no sane placement; warnings are fine */
	return ibp_findings_count(&r->findings, IBP_SEV_FAIL, -1) ? 1 : 0;
}

int ibprep_cmd_place(int argc, char **argv)
{
	struct opts o = {.mode = MODE_PLACE, .name = "place"};
	struct run r;
	struct ibp_place_view view;
	int rc = prepare(argc, argv, &o, &r, &view);

	if (rc || o.help)
		goto out;
	if (o.json) {
		rc = print_json(&r, &o);
	} else {
		print_table(&r, &o);
		print_findings(&r, "place");
	}
	if (!rc)
		rc = finish_status(&r);
out:
	run_release(&r);
	return rc;
}

int ibprep_cmd_env(int argc, char **argv)
{
	struct opts o = {.mode = MODE_ENV, .name = "env"};
	struct run r;
	struct ibp_place_view view;
	int rc;

	/* The plugin's lookup child: nothing else on its command line. */
	if (argc == 2 && !strcmp(argv[1], "--resolve-child"))
		return ibprep_resolve_child();
	rc = prepare(argc, argv, &o, &r, &view);

	if (rc || o.help)
		goto out;
	if (o.json) {
		rc = print_json(&r, &o);
	} else {
		for (size_t i = 0; i < r.env.n; i++) {
			const struct ibp_env_var *v = &r.env.v[i];
			char q[8192];

			if (v->action == IBP_ENV_USER_KEPT) {
				printf("# %s kept as the user set it (spank-ib would set %s)\n",
				       v->name, v->value);
				continue;
			}
			if (ibp_shell_quote(v->value, q, sizeof(q)) < 0) {
				fprintf(stderr, "ibprep env: %s is too long to print\n", v->name);
				rc = 2;
				break;
			}
			printf("export %s=%s\n", v->name, q);
		}
		print_findings(&r, "env");
	}
	if (!rc)
		rc = finish_status(&r);
out:
	run_release(&r);
	return rc;
}

/* Binds this process the way the plugin binds a task (bind.h). */
static int apply(const struct ibp_place_view *view)
{
	char cpus[1024] = "";
	int rc = ibp_place_bind(view, NULL);

	if (!rc)
		return 0;
	if (view->cpus)
		ibp_cpulist_format(view->cpus, cpus, sizeof(cpus));
	if (rc == -ENOENT)
		fprintf(stderr, "ibprep exec: the placement has no CPU for this task\n");
	else if (rc == -EXDEV)
		fprintf(stderr,
			"ibprep exec: the planned CPUs %s are outside this process's CPU mask\n",
			cpus);
	else
		fprintf(stderr, "ibprep exec: cannot bind to CPUs %s: %s\n", cpus, strerror(-rc));
	return rc == -ENOMEM ? 2 : 1;
}

int ibprep_cmd_exec(int argc, char **argv)
{
	struct opts o = {.mode = MODE_EXEC, .name = "exec"};
	struct run r;
	struct ibp_place_view view;
	int rc = prepare(argc, argv, &o, &r, &view);

	if (rc || o.help)
		goto out;
	print_findings(&r, "exec");
	rc = finish_status(&r);
	if (rc)
		goto out;
	rc = apply(&view);
	if (rc)
		goto out;
	for (size_t i = 0; i < r.env.n; i++)
		if (r.env.v[i].action != IBP_ENV_USER_KEPT &&
		    setenv(r.env.v[i].name, r.env.v[i].value, 1) < 0) {
			fprintf(stderr, "ibprep exec: cannot set %s: %s\n", r.env.v[i].name,
				strerror(errno));
			rc = 2;
			goto out;
		}
	run_release(&r);
	execvp(o.cmd[0], o.cmd);
	fprintf(stderr, "ibprep exec: cannot run %s: %s\n", o.cmd[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
out:
	run_release(&r);
	return rc;
}
