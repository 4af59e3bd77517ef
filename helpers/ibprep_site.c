/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_site.c: node mode, --slurm and Prometheus output of `ibprep check`
 * (ibprep_site.h).  The decisions live in the core (slurmd.h, nodestate.h,
 * prom.h); this file finds files and programs, runs scontrol under a time
 * bound, and prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ibprep/nodestate.h"
#include "ibprep/place.h"
#include "ibprep/prom.h"
#include "ibprep/slurmd.h"
#include "ibprep/text.h"
#include "ibprep/topo.h"
#include "ibprep/version.h"
#include "ibprep_site.h"

extern char **environ;

/* Each scontrol call; slurmd kills the whole HealthCheckProgram after 60 s. */
#define SCONTROL_TIMEOUT_MS 15000
/* slurm.conf larger than this is not read (the largest real ones are ~1 MiB). */
#define SLURM_CONF_MAX (8u << 20)

static const char *envget(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

bool ibprep_node_mode_default(void)
{
	if (envget("SLURM_JOB_ID"))
		return false;
	return envget("NHC_PID") || envget("SLURMD_NODENAME");
}

const char *ibprep_slurm_conf(char *buf, size_t len, const char **from)
{
	static const char *const defaults[] = {"/etc/slurm/slurm.conf",
					       "/run/slurm/conf/slurm.conf"};
	const char *env = envget("SLURM_CONF");
	struct stat st;

	if (env) {
		*from = "SLURM_CONF";
		if (stat(env, &st) || !S_ISREG(st.st_mode))
			return NULL;
		snprintf(buf, len, "%s", env);
		return buf;
	}
	*from = "/etc/slurm/slurm.conf, /run/slurm/conf/slurm.conf (SLURM_CONF unset)";
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		if (!stat(defaults[i], &st) && S_ISREG(st.st_mode)) {
			snprintf(buf, len, "%s", defaults[i]);
			return buf;
		}
	return NULL;
}

/* The whole text of a slurm.conf (malloc'd) or NULL. */
static char *read_conf(const char *path)
{
	FILE *fp = fopen(path, "re");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!fp)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb = ncap <= SLURM_CONF_MAX ? realloc(buf, ncap) : NULL;
			if (!nb) {
				free(buf);
				fclose(fp);
				return NULL;
			}
			buf = nb;
			cap = ncap;
		}
		size_t r = fread(buf + n, 1, 4096, fp);
		n += r;
		if (r < 4096)
			break;
	}
	bool err = ferror(fp);
	fclose(fp);
	if (err) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

static void short_host(char *buf, size_t len)
{
	if (gethostname(buf, len) != 0)
		snprintf(buf, len, "localhost");
	buf[len - 1] = '\0';
	char *dot = strchr(buf, '.');
	if (dot && dot != buf)
		*dot = '\0';
}

int ibprep_node_memlock(struct ibp_health_input *in, const struct ibp_sysfs *fs, const char *node,
			struct ibp_findings *f)
{
	char conf_path[PATH_MAX], pattern[PATH_MAX] = IBP_SLURMD_PID_FILE_DEFAULT;
	char pid_file[PATH_MAX], host[256], why[384] = "";
	const char *from, *slurmd_node = envget("SLURMD_NODENAME");
	struct ibp_slurmd sd;
	int rc;

	short_host(host, sizeof(host));
	if (ibprep_slurm_conf(conf_path, sizeof(conf_path), &from)) {
		char *text = read_conf(conf_path);
		if (text) {
			if (ibp_slurm_conf_get(text, "SlurmdPidFile", pattern, sizeof(pattern)) < 0)
				snprintf(pattern, sizeof(pattern), "%s",
					 IBP_SLURMD_PID_FILE_DEFAULT);
			free(text);
		}
	}
	rc = ibp_slurm_expand_path(pattern, slurmd_node ? slurmd_node : node, host, pid_file,
				   sizeof(pid_file));
	if (rc < 0)
		ibp_format_cut(why, sizeof(why), "SlurmdPidFile '%s' cannot be used: %s", pattern,
			       strerror(-rc));
	else
		rc = ibp_slurmd_find(fs, pid_file, &sd, why, sizeof(why));
	if (rc == 0) {
		in->memlock_source = IBP_MEMLOCK_SLURMD;
		in->memlock_kb = sd.memlock_kb;
		return 0;
	}
	in->memlock_source = IBP_MEMLOCK_UNKNOWN;
	rc = ibp_findings_addf(f, "memlock_unknown", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0,
			       "slurmd's limit (node mode)",
			       "run the node check as root while slurmd runs; SlurmdPidFile in "
			       "slurm.conf names its pid file",
			       "the locked-memory limit jobs inherit was not judged: %s", why);
	if (!rc && f->n)
		snprintf(f->v[f->n - 1].node, sizeof(f->v[0].node), "%s", in->node);
	return rc;
}

/* ---- --slurm ---------------------------------------------------------------- */

/* scontrol in PATH, or in /usr/bin:/bin when PATH is unset (slurmd gives its
 * HealthCheckProgram no PATH).  The path in BUF, or NULL. */
static const char *find_scontrol(char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
	char *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/')
			continue; /* a relative PATH entry is nothing root should run */
		int n = snprintf(buf, len, "%s/scontrol", d);
		if (n > 0 && (size_t)n < len && access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

int ibprep_slurm_ready(void)
{
	char buf[PATH_MAX];
	const char *from;

	if (!find_scontrol(buf, sizeof(buf))) {
		fprintf(stderr,
			"ibprep check: --slurm: no scontrol in %s: Slurm's commands are needed to "
			"drain or resume this node; nothing was changed\n",
			getenv("PATH") ? "PATH" : "/usr/bin:/bin (PATH unset)");
		return 2;
	}
	if (!ibprep_slurm_conf(buf, sizeof(buf), &from)) {
		fprintf(stderr,
			"ibprep check: --slurm: no slurm.conf (tried %s%s%s): without it "
			"scontrol would look the controller up in DNS; nothing was changed\n",
			from, envget("SLURM_CONF") ? " = " : "",
			envget("SLURM_CONF") ? envget("SLURM_CONF") : "");
		return 2;
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Runs ARGV (argv[0] a full path) with stdin /dev/null and SLURM_CONF set to
 * CONF when the environment has none, collecting stdout+stderr into OUT.
 * Killed after TIMEOUT_MS.  Exit status, or -ETIMEDOUT / -errno.
 */
static int run_bounded(const char *const argv[], const char *conf, char *out, size_t outlen,
		       int timeout_ms)
{
	int pfd[2];
	size_t n = 0;

	out[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0)
			_exit(127);
		if (conf && !getenv("SLURM_CONF"))
			setenv("SLURM_CONF", conf, 1); /* the child's only: no DNS lookup */
		/* execve takes char *const[]: it does not write to the strings */
		execve(argv[0], (char *const *)argv, environ);
		_exit(127);
	}
	close(pfd[1]);
	long long deadline = now_ms() + timeout_ms;
	bool timed_out = false;
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0) {
			timed_out = true;
			break;
		}
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		int r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			timed_out = r == 0;
			break;
		}
		char tmp[4096];
		ssize_t got = read(pfd[0], tmp, sizeof(tmp));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		size_t take = (size_t)got < outlen - 1 - n ? (size_t)got : outlen - 1 - n;
		memcpy(out + n, tmp, take);
		n += take;
		out[n] = '\0';
	}
	close(pfd[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (timed_out)
		return -ETIMEDOUT;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* A name Slurm could have given a node: letters, digits, '-', '_', '.'. */
static bool node_name_ok(const char *s)
{
	if (!s || !*s || strlen(s) >= IBP_NODE_MAX)
		return false;
	for (const char *c = s; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			return false;
	return true;
}

/* Last line of OUT, for a message. */
static const char *last_line(char *out)
{
	size_t l = strlen(out);
	while (l && (out[l - 1] == '\n' || out[l - 1] == '\r'))
		out[--l] = '\0';
	char *nl = strrchr(out, '\n');
	return nl ? nl + 1 : out;
}

int ibprep_slurm_apply(const struct ibp_findings *f, FILE *log)
{
	char scontrol[PATH_MAX], conf[PATH_MAX], node[256], out[16384];
	char reason[IBP_DRAIN_REASON_MAX], arg_node[300], arg_reason[IBP_DRAIN_REASON_MAX + 16];
	const char *from;
	struct ibp_node_state st;

	if (!find_scontrol(scontrol, sizeof(scontrol)) ||
	    !ibprep_slurm_conf(conf, sizeof(conf), &from))
		return ibprep_slurm_ready();
	if (envget("SLURMD_NODENAME"))
		snprintf(node, sizeof(node), "%s", envget("SLURMD_NODENAME"));
	else
		short_host(node, sizeof(node));
	if (!node_name_ok(node)) {
		fprintf(stderr,
			"ibprep check: --slurm: '%s' is not a node name; nothing was changed\n",
			node);
		return 2;
	}
	const char *const show[] = {scontrol, "show", "node", "-o", node, NULL};
	int rc = run_bounded(show, conf, out, sizeof(out), SCONTROL_TIMEOUT_MS);
	if (rc != 0 || ibp_node_state_parse(out, node, &st) != 0) {
		char what[256];
		if (rc == -ETIMEDOUT)
			snprintf(what, sizeof(what), "no answer in %d s",
				 SCONTROL_TIMEOUT_MS / 1000);
		else if (rc < 0)
			snprintf(what, sizeof(what), "%s", strerror(-rc));
		else
			ibp_format_cut(what, sizeof(what), "exit status %d: %s", rc,
				       last_line(out));
		fprintf(
		    stderr,
		    "ibprep check: --slurm: %s: cannot read the node's state (scontrol show node "
		    "-o %s: %s); nothing was changed\n",
		    node, node, what);
		return 2;
	}
	bool fault = ibp_drain_reason(f, IBP_DRAIN_PREFIX_CHECK, reason, sizeof(reason));
	enum ibp_drain_action a = ibp_drain_decide(&st, fault, reason);
	if (a == IBP_DRAIN_NOTHING) {
		fprintf(log, "slurm: %s: state %s%s%s: nothing to change\n", node, st.state,
			st.reason[0] ? ", reason: " : "", st.reason);
		return 0;
	}
	snprintf(arg_node, sizeof(arg_node), "nodename=%s", node);
	snprintf(arg_reason, sizeof(arg_reason), "reason=%s", reason);
	const char *const drain[] = {scontrol, "update", arg_node, "state=drain", arg_reason, NULL};
	const char *const resume[] = {scontrol, "update", arg_node, "state=resume", NULL};
	rc = run_bounded(a == IBP_DRAIN_RESUME ? resume : drain, conf, out, sizeof(out),
			 SCONTROL_TIMEOUT_MS);
	if (rc != 0) {
		fprintf(stderr, "ibprep check: --slurm: %s: scontrol update (%s) failed: %s\n",
			node, ibp_drain_action_name(a),
			rc == -ETIMEDOUT ? "no answer in time"
			: rc < 0         ? strerror(-rc)
					 : last_line(out));
		return 2;
	}
	if (a == IBP_DRAIN_RESUME)
		fprintf(log, "slurm: %s: resumed (healthy again; was drained: %s)\n", node,
			st.reason);
	else
		fprintf(log, "slurm: %s: %s: %s\n", node,
			a == IBP_DRAIN_SET ? "drained" : "reason updated", reason);
	return 0;
}

/* ---- Prometheus ----------------------------------------------------------- */

/* The GPU-to-HCA pairs placement makes; *KNOWN false when no topology applies. */
static int gpu_pairs(const struct ibprep_prom_opts *o, const struct ibp_health_input *in,
		     const struct ibp_policy *pol, const struct ibp_findings *f,
		     struct ibp_prom_pair **pairs, size_t *n, bool *known)
{
	struct ibp_topo topo;
	struct ibp_placement pl;
	struct ibp_findings pf;
	int rc;

	*pairs = NULL;
	*n = 0;
	*known = false;
	if (!o->topology && o->sysfs_root)
		return 0; /* a captured tree without its topology: this machine's would lie */
	ibp_topo_init(&topo);
	ibp_placement_init(&pl);
	ibp_findings_init(&pf);
	rc = o->topology ? ibp_topo_load_xml(&topo, o->topology) : ibp_topo_load_live(&topo);
	if (rc) {
		fprintf(stderr, "ibprep check: cannot load the topology %s: %s\n",
			o->topology ? o->topology : "of this machine", strerror(-rc));
		goto out;
	}
	if (in->inv.n_hcas)
		rc = ibp_topo_apply_inventory(&topo, &in->inv, f, ibp_health_port_severity);
	struct ibp_step step = {
	    .ntasks = 1,
	    .all_gpus = true,
	    .local_rank = -1,
	    .fabric = pol->link_layer == IBP_POLICY_LL_IB    ? IBP_LL_IB
		      : pol->link_layer == IBP_POLICY_LL_ETH ? IBP_LL_ETH
							     : IBP_LL_UNKNOWN,
	};
	if (!rc && topo.n_gpus)
		rc = ibp_place_compute(&pl, &topo, &step, &pf);
	if (rc) {
		fprintf(stderr, "ibprep check: cannot pair GPUs with HCAs: %s\n", strerror(-rc));
		goto out;
	}
	*known = true;
	if (pl.n_gpus) {
		*pairs = calloc(pl.n_gpus, sizeof(**pairs));
		if (!*pairs) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < pl.n_gpus; i++) {
		const struct ibp_place_nic *nic = &pl.gpus[i].nic;
		if (nic->hca < 0 || (size_t)nic->hca >= topo.n_hcas)
			continue;
		struct ibp_prom_pair *p = &(*pairs)[(*n)++];
		p->gpu = (unsigned)i;
		snprintf(p->gpu_pci, sizeof(p->gpu_pci), "%s", topo.gpus[i].d.pci);
		snprintf(p->device, sizeof(p->device), "%s", topo.hcas[nic->hca].name);
		p->port = nic->port;
		snprintf(p->distance, sizeof(p->distance), "%s", ibp_dist_name(nic->dist));
	}
out:
	ibp_findings_release(&pf);
	ibp_placement_release(&pl);
	ibp_topo_release(&topo);
	return rc;
}

int ibprep_prom_emit(const struct ibprep_prom_opts *o, const struct ibp_health_input *in,
		     const struct ibp_policy *pol, const struct ibp_findings *f)
{
	struct ibp_prom_pair *pairs;
	size_t n_pairs;
	bool known;
	char *buf = NULL;
	size_t len = 0;
	int status = 0;

	if (gpu_pairs(o, in, pol, f, &pairs, &n_pairs, &known) && o->topology)
		return 2; /* the topology the admin named cannot be read */
	FILE *mem = open_memstream(&buf, &len);
	if (!mem) {
		free(pairs);
		fprintf(stderr, "ibprep check: %s\n", strerror(errno));
		return 2;
	}
	struct ibp_prom_check c = {
	    .in = in,
	    .pol = pol,
	    .findings = f,
	    .pairs = pairs,
	    .n_pairs = n_pairs,
	    .pairs_known = known,
	    .duration_s = o->duration_s,
	    .version = IBPREP_VERSION,
	};
	int rc = ibp_prom_write_check(mem, &c);
	if (fclose(mem) != 0 && !rc)
		rc = -EIO;
	free(pairs);
	if (rc) {
		fprintf(stderr, "ibprep check: cannot write the metrics: %s\n", strerror(-rc));
		free(buf);
		return 2;
	}
	if (o->to_stdout && (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)) {
		fprintf(stderr, "ibprep check: cannot write the metrics: %s\n", strerror(EIO));
		status = 2;
	}
	if (o->textfile) {
		rc = ibp_prom_write_file(o->textfile, IBP_PROM_TEXTFILE, buf, len);
		if (rc) {
			fprintf(stderr,
				"ibprep check: --textfile: cannot write %s/%s: %s%s (nothing was "
				"written)\n",
				o->textfile, IBP_PROM_TEXTFILE, strerror(-rc),
				rc == -ENOENT || rc == -ENOTDIR
				    ? ": the directory must exist (node_exporter's "
				      "--collector.textfile.directory)"
				    : "");
			status = 2;
		}
	}
	free(buf);
	return status;
}
