/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_watch.c: `ibprep watch`: the node's ports polled every interval
 * (watch.h, the same watch the plugin runs for a step), each change printed
 * the moment it is seen, as a line or a JSON line; the exit status says
 * whether a link fault was seen.  For an admin at a node, and for a job's
 * own launcher outside Slurm (--exit-on-fault).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ibprep_cmd.h"
#include "ibprep/conf.h"
#include "ibprep/json.h"
#include "ibprep/policy.h"
#include "ibprep/report.h"
#include "ibprep/sysfs.h"
#include "ibprep/watch.h"

enum {
	OPT_ROOT = 1,
	OPT_INTERVAL,
	OPT_JSON,
	OPT_PORTS,
	OPT_DURATION,
	OPT_EXIT_ON_FAULT,
	OPT_NODE,
	OPT_CONFIG,
};

static const struct ibprep_opt watch_opts[] = {
    {"interval", OPT_INTERVAL, 'i', "S",
     "seconds between two reads of the ports (decimals allowed, at least 0.05; default "
     "watch_interval=, 1)"},
    {"json", OPT_JSON, 'j', NULL,
     "print one JSON object per event, one per line, and one last line with the counts"},
    {"sysfs-root", OPT_ROOT, 'r', "DIR",
     "read DIR/sys/... instead of /sys (a captured or generated tree)"},
    {"ports", OPT_PORTS, 'p', "LIST",
     "watch only these ports, DEVICE:PORT separated by commas (default: every port but "
     "ignore_hcas=)"},
    {"duration", OPT_DURATION, 'd', "S", "stop after S seconds (default: until interrupted)"},
    {"exit-on-fault", OPT_EXIT_ON_FAULT, 'x', NULL,
     "stop at the first link that is down for good (down longer than watch_flap=, or gone): "
     "what the plugin ends a step on"},
    {"node", OPT_NODE, 'n', "NAME",
     "node name in the lines (default: the root's hostname, else this machine's short host name)"},
    {"config", OPT_CONFIG, 'c', "FILE", "read KEY=VALUE policy lines from FILE first"},
    {NULL, 0, 0, NULL, NULL},
};

const struct ibprep_cmd_spec ibprep_watch_spec = {
    .name = "watch",
    .synopsis = "[OPTIONS] [KEY=VALUE ...]",
    .about = "Reads the node's InfiniBand/RoCE ports every interval and prints each change\n"
	     "when it is seen: a link that went down, came back (a flap, or after\n"
	     "watch_flap= seconds), retrained or vanished, and error counters that grew.\n"
	     "It runs until interrupted (SIGINT, SIGTERM), --duration or --exit-on-fault.\n",
    .opts = watch_opts,
    .operand = "KEY=VALUE",
    .operand_help = "policy settings: watch_interval=, watch_flap=, ignore_hcas= "
		    "(spank_ib.conf(5))",
    .epilog = "exit status: 0 no link fault seen (counters may have grown), 1 a link fault\n"
	      "was seen, 2 could not run\n",
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* "S" seconds, decimals allowed, within [LO, HI]. */
static int parse_seconds(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!s || !*s || (*s != '.' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

static void print_event(const struct ibp_watch_event *e, const char *node, bool json)
{
	char line[1024], when[40];

	ibp_watch_time_text(e->real_ns, when, sizeof(when));
	if (json) {
		struct ibp_json j;

		ibp_json_init_file(&j, stdout, 0);
		ibp_json_object_begin(&j);
		ibp_json_kv_string(&j, "time", when);
		ibp_json_kv_double(&j, "t", (double)e->real_ns / 1e9);
		ibp_json_kv_string(&j, "node", node);
		ibp_json_kv_string(&j, "event", ibp_watch_kind_name(e->kind));
		ibp_json_kv_string(&j, "code", e->f.code);
		ibp_json_kv_string(&j, "severity", ibp_severity_name(e->f.severity));
		ibp_json_kv_string(&j, "device", e->f.device);
		ibp_json_kv_int(&j, "port", e->f.port);
		ibp_json_kv_bool(&j, "ends", e->ends);
		if (e->down_s >= 0)
			ibp_json_kv_double(&j, "down_s", e->down_s);
		else
			ibp_json_kv_null(&j, "down_s");
		ibp_json_kv_string(&j, "observed", e->f.observed);
		ibp_json_kv_string(&j, "fix", e->f.fix);
		ibp_json_object_end(&j);
		ibp_json_finish(&j); /* with its newline */
	} else {
		ibp_report_finding_line(&e->f, node, line, sizeof(line));
		printf("%s %s\n", when, line);
	}
	fflush(stdout);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps until the monotonic time AT (or a signal). */
static void sleep_until(int64_t at)
{
	struct timespec ts = {.tv_sec = (time_t)(at / 1000000000), .tv_nsec = at % 1000000000};

	(void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int ibprep_cmd_watch(int argc, char **argv)
{
	const char *root = "/", *node = NULL, *config = NULL, *ports = NULL;
	const char *interval_s = NULL, *duration_s = NULL, *pairs[256];
	const char *ignore[IBP_POLICY_MAX_NAMES + 1];
	double interval, duration = 0;
	bool json = false, exit_on_fault = false, fault = false, stopped = false;
	struct ibp_lw_port_id ids[IBP_LW_MAX_PORTS];
	struct ibp_watch_event ev[IBP_WATCH_MAX_EVENTS];
	size_t n_pairs = 0, n_ids = 0, counts[IBP_WATCH_N_KINDS] = {0};
	struct ibp_sysfs fs = {.root_fd = -1};
	struct ibp_watch *w = NULL;
	struct ibp_policy pol;
	struct ibprep_args args;
	struct sigaction sa;
	char err[PATH_MAX + 512], host[256];
	int64_t start, next;
	int opt, rc = 2;

	ibp_policy_init(&pol);
	ibprep_args_init(&args, &ibprep_watch_spec, argc, argv);
	while ((opt = ibprep_args_next(&args)) != IBPREP_ARGS_END) {
		switch (opt) {
		case OPT_ROOT:
			root = args.value;
			break;
		case OPT_INTERVAL:
			interval_s = args.value;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_PORTS:
			ports = args.value;
			break;
		case OPT_DURATION:
			duration_s = args.value;
			break;
		case OPT_EXIT_ON_FAULT:
			exit_on_fault = true;
			break;
		case OPT_NODE:
			node = args.value;
			break;
		case OPT_CONFIG:
			config = args.value;
			break;
		case IBPREP_ARGS_OPERAND:
			if (n_pairs == sizeof(pairs) / sizeof(pairs[0])) {
				fprintf(stderr, "ibprep watch: too many KEY=VALUE arguments\n");
				return 2;
			}
			pairs[n_pairs++] = args.value;
			break;
		case IBPREP_ARGS_HELP:
			return 0;
		default:
			return 2;
		}
	}
	if (config) {
		/* the plugin's config= file, one parser (conf.h); its plugin keys checked, not used */
		struct ibp_conf *conf = malloc(sizeof(*conf));

		if (!conf) {
			fprintf(stderr, "ibprep watch: out of memory\n");
			return 2;
		}
		ibp_conf_init(conf);
		if (ibp_conf_load_file(conf, config, 0, err, sizeof(err))) {
			fprintf(stderr, "ibprep watch: %s\n", err);
			free(conf);
			return 2;
		}
		pol = conf->policy;
		free(conf);
	}
	if (strcmp(root, "/") != 0 && ibprep_sysfs_root_check("watch", root))
		return 2; /* one level off: it would read as a node without ports */
	for (size_t i = 0; i < n_pairs; i++) {
		if (ibp_policy_set_pair(&pol, pairs[i], err, sizeof(err))) {
			fprintf(stderr, "ibprep watch: %s\n", err);
			return 2;
		}
	}
	interval = pol.watch_interval_s;
	if (interval_s && parse_seconds(interval_s, 0.05, 3600, &interval)) {
		fprintf(stderr,
			"ibprep watch: bad value '%s' for --interval: expected seconds from "
			"0.05 to 3600\n",
			interval_s);
		return 2;
	}
	if (interval <= 0) {
		fprintf(stderr,
			"ibprep watch: watch_interval=0 turns the watch off: nothing to do\n");
		return 2;
	}
	if (duration_s && parse_seconds(duration_s, 0, 31536000, &duration)) {
		fprintf(stderr, "ibprep watch: bad value '%s' for --duration: expected seconds\n",
			duration_s);
		return 2;
	}
	if (ports && ibp_lw_port_ids_parse(ports, ids, IBP_LW_MAX_PORTS, &n_ids)) {
		fprintf(stderr,
			"ibprep watch: bad value '%s' for --ports: expected DEVICE:PORT,... (at "
			"most %d)\n",
			ports, IBP_LW_MAX_PORTS);
		return 2;
	}
	for (size_t i = 0; i < pol.n_ignore_hcas; i++)
		ignore[i] = pol.ignore_hcas[i];
	ignore[pol.n_ignore_hcas] = NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "ibprep watch: out of memory\n");
		return 2;
	}
	if (ibp_watch_init(w, pol.watch_flap_s, ids, n_ids, ignore)) {
		fprintf(stderr, "ibprep watch: bad port name in --ports\n");
		goto out;
	}
	int e = ibp_sysfs_open(&fs, root);
	if (e) {
		fprintf(stderr, "ibprep watch: cannot open %s: %s\n", root, strerror(-e));
		goto out;
	}
	if (node)
		snprintf(host, sizeof(host), "%s", node);
	else
		ibprep_node_name(&fs, strcmp(root, "/") != 0, host, sizeof(host));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the sleep ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	size_t n = 0;
	e = ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n);
	if (e) {
		fprintf(stderr, "ibprep watch: cannot read the ports under %s: %s\n", root,
			strerror(-e));
		goto out;
	}
	if (!w->prev.n_ports)
		fprintf(stderr, "ibprep watch: %s: no RDMA port%s under %s\n", host,
			n_ids ? " of --ports" : "", root);
	fprintf(stderr, "ibprep watch: %s: watching %zu port%s every %g s%s\n", host,
		w->prev.n_ports, w->prev.n_ports == 1 ? "" : "s", interval,
		duration > 0 ? "" : " (Ctrl-C to stop)");
	start = next = mono_ns();
	for (;;) {
		next += (int64_t)(interval * 1e9);
		if (duration > 0 && next > start + (int64_t)(duration * 1e9))
			break;
		sleep_until(next);
		if (stop_signal) {
			stopped = true;
			break;
		}
		e = ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n);
		if (e) {
			fprintf(stderr, "ibprep watch: reading %s: %s\n", root, strerror(-e));
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			print_event(&ev[i], host, json);
			counts[ev[i].kind]++;
			fault |= ev[i].f.severity == IBP_SEV_FAIL;
		}
		if (exit_on_fault) {
			bool ends = false;

			for (size_t i = 0; i < n; i++)
				ends |= ev[i].ends;
			if (ends)
				break;
		}
		if (mono_ns() > next + (int64_t)(interval * 1e9))
			next = mono_ns(); /* suspended or starved: no burst of catch-up reads */
	}
	if (json) {
		struct ibp_json j;

		ibp_json_init_file(&j, stdout, 0);
		ibp_json_object_begin(&j);
		ibp_json_kv_string(&j, "node", host);
		ibp_json_kv_uint(&j, "polls", w->polls);
		ibp_json_kv_uint(&j, "ports", w->prev.n_ports);
		ibp_json_key(&j, "events");
		ibp_json_object_begin(&j);
		for (int k = 0; k < IBP_WATCH_N_KINDS; k++)
			ibp_json_kv_uint(&j, ibp_watch_kind_name((enum ibp_watch_kind)k),
					 counts[k]);
		ibp_json_object_end(&j);
		ibp_json_kv_string(&j, "verdict", fault ? "fail" : "pass");
		ibp_json_kv_bool(&j, "interrupted", stopped);
		ibp_json_object_end(&j);
		ibp_json_finish(&j); /* with its newline */
	} else {
		size_t total = 0;

		for (int k = 0; k < IBP_WATCH_N_KINDS; k++)
			total += counts[k];
		fprintf(stderr, "ibprep watch: %s: %llu reads, %zu event%s, %s\n", host,
			(unsigned long long)w->polls, total, total == 1 ? "" : "s",
			fault ? "a link fault was seen" : "no link fault");
	}
	fflush(stdout);
	rc = fault ? 1 : 0;
out:
	ibp_sysfs_close(&fs);
	free(w);
	return rc;
}
