/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep check: parse -> gather (inventory, GPUs, GPUDirect, counters
 * window) -> check -> report (table or JSON) -> exit status.
 *
 * Exit status: 0 healthy (warnings allowed), 1 unhealthy, 2 could not run
 * (usage, unknown policy key or bad value, unreadable root or config).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ibprep_cmd.h"
#include "ibprep_site.h"
#include "ibprep/conf.h"
#include "ibprep/health.h"
#include "ibprep/json.h"
#include "ibprep/linkwatch.h"
#include "ibprep/nodestate.h"
#include "ibprep/policy.h"
#include "ibprep/report.h"
#include "ibprep/rootpath.h"
#include "ibprep/sysfs.h"

enum {
	OPT_ROOT = 1,
	OPT_JSON,
	OPT_NODE,
	OPT_CONFIG,
	OPT_MEMLOCK,
	OPT_NODE_MODE,
	OPT_SLURM,
	OPT_PROMETHEUS,
	OPT_TEXTFILE,
	OPT_TOPOLOGY,
	OPT_SINCE,
};

static const struct ibprep_opt check_opts[] = {
    {"sysfs-root", OPT_ROOT, 'r', "DIR",
     "read DIR/sys/... instead of /sys (a captured or generated tree)"},
    {"json", OPT_JSON, 'j', NULL, "print one JSON document (schema 1) instead of the table"},
    {"node", OPT_NODE, 'n', "NAME",
     "node name in the findings (default: the root's hostname, else this machine's short host "
     "name)"},
    {"config", OPT_CONFIG, 'c', "FILE", "read KEY=VALUE policy lines from FILE first"},
    {"memlock", OPT_MEMLOCK, 'm', "LIMIT",
     "judge this locked-memory limit (KiB or unlimited); default: this process's own limit "
     "when checking the live system, not judged with --sysfs-root"},
    {"node-mode", OPT_NODE_MODE, 0, NULL,
     "judge the limit jobs inherit: slurmd's (found through SlurmdPidFile, read inside the "
     "root); the default under NHC and as slurmd's HealthCheckProgram, outside a job"},
    {"slurm", OPT_SLURM, 0, NULL,
     "as Slurm's HealthCheckProgram (implies --node-mode): drain this node on a node fault "
     "(reason '" IBP_DRAIN_PREFIX_CHECK "...'), resume it when healthy again if the drain was "
     "this check's; the plugin's and other drains are never touched"},
    {"prometheus", OPT_PROMETHEUS, 0, NULL,
     "print Prometheus metrics (text exposition format) instead of the table"},
    {"textfile", OPT_TEXTFILE, 0, "DIR",
     "write the metrics to DIR/spank_ib.prom atomically, for node_exporter's textfile "
     "collector; prints no table"},
    {"topology", OPT_TOPOLOGY, 0, "FILE",
     "hwloc XML for the GPU-to-HCA pairs in the metrics (default: this machine; none with "
     "--sysfs-root)"},
    {"since", OPT_SINCE, 's', "SNAPSHOT",
     "also compare every port with a directory saved by 'ibprep snapshot': a link that went "
     "down or retrained since then fails, growing error counters warn with their rate per "
     "hour, port_xmit_wait growth is shown as a share of the time (xmit_wait_tick_ns=)"},
    {NULL, 0, 0, NULL, NULL},
};

const struct ibprep_cmd_spec ibprep_check_spec = {
    .name = "check",
    .synopsis = "[OPTIONS] [KEY=VALUE ...]",
    .about = "Checks the node's InfiniBand/RoCE HCAs and ports against a policy and prints\n"
	     "one line per port, one line per finding and a verdict.\n",
    .opts = check_opts,
    .operand = "KEY=VALUE",
    .operand_help = "policy settings (spank_ib.conf(5) lists every key and default)",
    .epilog = "exit status: 0 healthy (warnings allowed), 1 unhealthy, 2 could not run\n",
};

static int parse_memlock(const char *s, uint64_t *kb)
{
	char *end;

	if (!strcmp(s, "unlimited") || !strcmp(s, "infinity")) {
		*kb = UINT64_MAX;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v >= UINT64_MAX)
		return -EINVAL;
	*kb = v;
	return 0;
}

/*
 * When SNAPSHOT was taken: the "taken YYYY-MM-DDTHH:MM:SSZ" of its
 * SNAPSHOT-README (ibprep snapshot writes it), else that file's mtime.
 * CLOCK_REALTIME ns, or 0 when unknown; WHEN gets the text.
 */
static int64_t snapshot_time(const char *dir, char *when, size_t len)
{
	char path[4096], buf[512];
	struct stat sb;
	struct tm tm;
	ssize_t n;
	int fd;

	snprintf(when, len, "unknown time");
	if (snprintf(path, sizeof(path), "%s/SNAPSHOT-README", dir) >= (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	const char *t = strstr(buf, " taken ");
	memset(&tm, 0, sizeof(tm));
	if (t && strchr(buf, '\n') > t) {
		const char *end = strptime(t + 7, "%Y-%m-%dT%H:%M:%SZ", &tm);
		time_t secs = end ? timegm(&tm) : (time_t)-1;

		if (end && secs != (time_t)-1) {
			snprintf(when, len, "%.*s", (int)(end - (t + 7)), t + 7);
			return (int64_t)secs * 1000000000;
		}
	}
	if (gmtime_r(&sb.st_mtim.tv_sec, &tm))
		strftime(when, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
}

/* --since: the links' events between SNAPSHOT and FS, appended to F.  0 or the exit status. */
static int since_snapshot(const char *snapshot, const struct ibp_sysfs *fs,
			  const struct ibp_policy *pol, struct ibp_findings *f)
{
	const char *ignore[IBP_POLICY_MAX_NAMES + 1];
	struct ibp_linkwatch *lw = calloc(2, sizeof(*lw));
	struct ibp_linkwatch_opts o;
	struct ibp_sysfs snap;
	char when[64], during[96];
	int rc;

	if (!lw) {
		fprintf(stderr, "ibprep check: out of memory\n");
		return 2;
	}
	for (size_t i = 0; i <= pol->n_ignore_hcas; i++)
		ignore[i] = i < pol->n_ignore_hcas ? pol->ignore_hcas[i] : NULL;
	rc = ibp_sysfs_open(&snap, snapshot);
	if (!rc) {
		rc = ibp_linkwatch_read(&lw[0], &snap, ignore);
		ibp_sysfs_close(&snap);
	}
	if (rc) {
		fprintf(stderr, "ibprep check: --since %s: cannot read the snapshot: %s\n",
			snapshot, strerror(-rc));
		free(lw);
		return 2;
	}
	if (!lw[0].n_ports) {
		fprintf(stderr,
			"ibprep check: --since %s: no RDMA port in it (expected a directory "
			"written by 'ibprep snapshot')\n",
			snapshot);
		free(lw);
		return 2;
	}
	rc = ibp_linkwatch_read(&lw[1], fs, ignore);
	if (rc) {
		fprintf(stderr, "ibprep check: --since: cannot read the ports: %s\n",
			strerror(-rc));
		free(lw);
		return 2;
	}
	lw[0].mono_ns = lw[1].mono_ns = 0; /* two processes: wall clock only */
	lw[0].real_ns = snapshot_time(snapshot, when, sizeof(when));
	snprintf(during, sizeof(during), "since the snapshot of %s", when);
	memset(&o, 0, sizeof(o));
	o.during = during;
	o.tick_ns = pol->xmit_wait_tick_ns;
	rc = ibp_linkwatch_compare(&lw[0], &lw[1], &o, f);
	free(lw);
	if (rc) {
		fprintf(stderr, "ibprep check: out of memory\n");
		return 2;
	}
	return 0;
}

/*
 * --config FILE: the plugin's config= file, through the one parser of
 * spank_ib.conf(5) (conf.h): the plugin's keys are checked as the plugin
 * checks them and not used here, the policy keys go to POL.  The plugin
 * reads a file only when root alone can change it: one that it would
 * refuse is said on stderr, and still read.  0, or 2 said on stderr.
 */
static int load_config(const char *path, struct ibp_policy *pol)
{
	struct ibp_conf *conf = malloc(sizeof(*conf));
	char err[PATH_MAX + 512];
	int fd;

	if (!conf) {
		fprintf(stderr, "ibprep check: out of memory\n");
		return 2;
	}
	ibp_conf_init(conf);
	conf->policy = *pol;
	if (ibp_conf_load_file(conf, path, 0, err, sizeof(err))) {
		fprintf(stderr, "ibprep check: %s\n", err);
		free(conf);
		return 2;
	}
	*pol = conf->policy;
	free(conf);
	fd = path[0] == '/' ? ibp_rootpath_open(path, O_RDONLY, IBP_ROOTPATH_ROOT, err, sizeof(err))
			    : -EINVAL;
	if (fd >= 0)
		close(fd);
	else if (path[0] != '/')
		fprintf(stderr,
			"ibprep check: note: spank_ib.so takes config= as an absolute path only\n");
	else
		fprintf(stderr, "ibprep check: note: spank_ib.so would refuse this file: %s\n",
			err);
	return 0;
}

int ibprep_cmd_check(int argc, char **argv)
{
	const char *root = NULL, *node = NULL, *config = NULL, *memlock = NULL, *since = NULL;
	bool json = false, node_mode = ibprep_node_mode_default(), slurm = false;
	struct ibprep_prom_opts prom = {0};
	struct timespec t0, t1;
	struct ibp_policy pol;
	struct ibprep_args args;
	const char *pairs[256];
	size_t n_pairs = 0;
	char err[512];
	int opt;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ibp_policy_init(&pol);
	ibprep_args_init(&args, &ibprep_check_spec, argc, argv);
	while ((opt = ibprep_args_next(&args)) != IBPREP_ARGS_END) {
		switch (opt) {
		case OPT_ROOT:
			root = args.value;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_NODE:
			node = args.value;
			break;
		case OPT_CONFIG:
			config = args.value;
			break;
		case OPT_MEMLOCK:
			memlock = args.value;
			break;
		case OPT_NODE_MODE:
			node_mode = true;
			break;
		case OPT_SLURM:
			slurm = node_mode = true;
			break;
		case OPT_PROMETHEUS:
			prom.to_stdout = true;
			break;
		case OPT_TEXTFILE:
			prom.textfile = args.value;
			break;
		case OPT_TOPOLOGY:
			prom.topology = args.value;
			break;
		case OPT_SINCE:
			since = args.value;
			break;
		case IBPREP_ARGS_OPERAND:
			if (n_pairs == sizeof(pairs) / sizeof(pairs[0])) {
				fprintf(stderr, "ibprep check: too many KEY=VALUE arguments\n");
				return 2;
			}
			pairs[n_pairs++] = args.value; /* applied after --config */
			break;
		case IBPREP_ARGS_HELP:
			return 0;
		default:
			return 2;
		}
	}
	if (json && prom.to_stdout) {
		fprintf(stderr, "ibprep check: --json and --prometheus: choose one output\n");
		return 2;
	}
	/* never a drain from a half-configured node: no Slurm, no change */
	if (slurm && ibprep_slurm_ready() != 0)
		return 2;
	if (config && load_config(config, &pol))
		return 2;
	for (size_t i = 0; i < n_pairs; i++) {
		if (ibp_policy_set_pair(&pol, pairs[i], err, sizeof(err))) {
			fprintf(stderr, "ibprep check: %s\n", err);
			return 2;
		}
	}

	struct ibp_health_input in;
	ibp_health_input_init(&in);
	if (memlock) {
		if (parse_memlock(memlock, &in.memlock_kb)) {
			fprintf(stderr,
				"ibprep check: bad value '%s' for --memlock: expected KiB or "
				"unlimited\n",
				memlock);
			return 2;
		}
		in.memlock_source = IBP_MEMLOCK_SELF;
	} else if (!root && !node_mode) {
		/* the live system: the limit this process (and what it starts) has */
		struct rlimit rl;
		if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
			in.memlock_source = IBP_MEMLOCK_SELF;
			in.memlock_kb = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX
								     : (uint64_t)rl.rlim_cur / 1024;
		}
	}

	struct ibp_sysfs fs;
	int rc = ibprep_sysfs_root_check("check", root);
	if (rc)
		return rc;
	rc = ibp_sysfs_open(&fs, root ? root : "/");
	if (rc) {
		fprintf(stderr, "ibprep check: cannot open sysfs root %s: %s\n", root ? root : "/",
			strerror(-rc));
		return 2;
	}
	if (node)
		snprintf(in.node, sizeof(in.node), "%s", node);
	else
		ibprep_node_name(&fs, root != NULL, in.node, sizeof(in.node));

	struct ibp_findings f;
	ibp_findings_init(&f);
	/* node mode: the limit jobs inherit, slurmd's, read inside the root */
	rc = !memlock && node_mode ? ibprep_node_memlock(&in, &fs, in.node, &f) : 0;
	if (!rc)
		rc = ibp_health_gather(&in, &fs, &pol, &f);
	if (!rc)
		rc = ibp_health_check(&in, &pol, &f);
	if (!rc && since) {
		int st = since_snapshot(since, &fs, &pol, &f);

		if (st) {
			ibp_sysfs_close(&fs);
			ibp_findings_release(&f);
			ibp_health_input_release(&in);
			return st;
		}
	}
	ibp_sysfs_close(&fs);
	if (rc) {
		fprintf(stderr, "ibprep check: %s: cannot read the RDMA devices under %s: %s\n",
			in.node, root ? root : "/", strerror(-rc));
		ibp_findings_release(&f);
		ibp_health_input_release(&in);
		return 2;
	}

	clock_gettime(CLOCK_MONOTONIC, &t1);
	prom.sysfs_root = root;
	prom.duration_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	int out_status = 0;
	if (prom.to_stdout || prom.textfile)
		out_status = ibprep_prom_emit(&prom, &in, &pol, &f);
	if (prom.to_stdout || (prom.textfile && !json)) {
		rc = 0; /* the metrics were the output */
	} else if (json) {
		struct ibp_json j;
		ibp_json_init_file(&j, stdout, IBP_JSON_PRETTY);
		ibp_report_json(&j, &in, &pol, &f);
		rc = ibp_json_finish(&j);
	} else {
		rc = ibp_report_text(stdout, &in, &pol, &f);
		if (!rc && fflush(stdout) != 0)
			rc = -EIO;
	}
	int status = ibp_findings_worst(&f) == IBP_SEV_FAIL ? 1 : 0;
	/* one document on stdout with --json or --prometheus: what --slurm did goes to stderr */
	if (!rc && slurm && ibprep_slurm_apply(&f, json || prom.to_stdout ? stderr : stdout) != 0)
		out_status = 2;
	ibp_findings_release(&f);
	ibp_health_input_release(&in);
	if (rc) {
		fprintf(stderr, "ibprep check: cannot write the report: %s\n", strerror(-rc));
		return 2;
	}
	return out_status ? out_status : status;
}
