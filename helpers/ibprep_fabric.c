/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep_fabric.c: `ibprep fabric`: reads result logs (results_log.h),
 * joins them with Slurm's topology, and prints the parts of the fabric
 * ranked by suspicion with their evidence (fabric.h, docs/fabric.md).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ibprep_cmd.h"
#include "ibprep/fabric.h"
#include "ibprep/json.h"
#include "ibprep/results_log.h"
#include "ibprep/topology_conf.h"

enum {
	OPT_TOPOLOGY = 1,
	OPT_SINCE,
	OPT_JSON,
	OPT_ALL,
	OPT_MIN_LINKS,
	OPT_LIMIT,
	OPT_THREADS,
};

static const struct ibprep_opt fabric_opts[] = {
    {"topology", OPT_TOPOLOGY, 't', "FILE",
     "Slurm's topology.conf or topology.yaml (tree): adds leaves and leaf uplinks to the "
     "parts (without it: nodes, their cables and the rails)"},
    {"since", OPT_SINCE, 's', "TIME",
     "leave out links tested before TIME: epoch seconds, YYYY-MM-DD[THH:MM[:SS]] (UTC), or "
     "an age such as 36h or 7d"},
    {"json", OPT_JSON, 'j', NULL, "print one JSON document instead of the table"},
    {"all", OPT_ALL, 'a', NULL,
     "also list the parts with failures that are not enough evidence (default: the first 10 "
     "of them)"},
    {"min-links", OPT_MIN_LINKS, 0, "N",
     "links a part must have carried before it can be judged (default 8)"},
    {"limit", OPT_LIMIT, 'n', "N", "list at most N parts (default 50)"},
    {"threads", OPT_THREADS, 0, "N",
     "threads that read and parse the next logs meanwhile (default: the CPUs, at most 8; 1: "
     "none); the result is the same"},
    {NULL, 0, 0, NULL, NULL},
};

const struct ibprep_cmd_spec ibprep_fabric_spec = {
    .name = "fabric",
    .synopsis = "[OPTIONS] LOG...",
    .about = "Reads the per-link results logs that spank_ib.so writes (results_log=), joins\n"
	     "them with the switch hierarchy, and ranks the nodes, node-to-leaf cables,\n"
	     "rails (a rail's switch), leaf switches and leaf uplinks by how likely each is\n"
	     "to be failing links, with the evidence.  Parts whose failures are not enough\n"
	     "evidence are said so, not blamed.  docs/fabric.md has the method and its\n"
	     "measured accuracy.\n",
    .opts = fabric_opts,
    .operand = "LOG",
    .operand_help = "a results log (JSON lines); any number, rotated ones (.1) too",
    .epilog = "exit status: 0 no suspect part, 1 suspect parts listed, 2 could not run\n",
};

/* The default --threads: the CPUs this process may run on, at most 8. */
static unsigned cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 8 ? 8 : (unsigned)n;
}

static int parse_uint(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 1000000000ul)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* TIME as epoch seconds, an age ("36h", "7d", "90m") or a UTC date. */
static int parse_since(const char *s, time_t now, int64_t *out)
{
	struct tm tm;
	char *end;
	long long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (!errno && end != s && v >= 0) {
		if (!*end && v > 100000) {
			*out = v;
			return 0;
		}
		if (end[0] && !end[1]) {
			long long unit = end[0] == 'd'   ? 86400
					 : end[0] == 'h' ? 3600
					 : end[0] == 'm' ? 60
							 : 0;

			if (unit && v < 100000) {
				*out = (int64_t)now - v * unit;
				return 0;
			}
		}
	}
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%d", &tm);
	if (end && *end == 'T') {
		char *e2 = strptime(end + 1, "%H:%M:%S", &tm);

		end = e2 ? e2 : strptime(end + 1, "%H:%M", &tm);
	}
	if (!end || *end)
		return -EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

static void print_time(FILE *out, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char buf[32];

	if (!t || !gmtime_r(&tt, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d", &tm))
		fprintf(out, "-");
	else
		fprintf(out, "%s", buf);
}

/* The commonest failure outcome of P and its share of P's failure records ("" none). */
static const char *top_kind(const struct ibp_fabric_part *p, double *share)
{
	unsigned total = 0, best = 0;
	int k = -1;

	for (int i = 0; i < IBP_LINK_STATUS_COUNT; i++) {
		total += p->kinds[i];
		if (p->kinds[i] > best) {
			best = p->kinds[i];
			k = i;
		}
	}
	*share = total ? (double)best / total : 0;
	return k < 0 ? "" : ibp_link_status_name((enum ibp_link_status)k);
}

/* A rail's device and port as "mlx5_3 port 1", or "" when its nodes name it differently. */
static const char *rail_port(const struct ibp_fabric_part *p, char *buf, size_t len)
{
	buf[0] = '\0';
	if (p->device[0])
		snprintf(buf, len, "%s port %u", p->device, p->port);
	return buf;
}

/* What to do about a suspect rail: its switch, where every node's port on it is cabled. */
static void rail_fix(const struct ibp_fabric_part *p, char *buf, size_t len)
{
	char port[IBP_DEV_MAX + 16];

	if (rail_port(p, port, sizeof(port))[0])
		snprintf(
		    buf, len,
		    "check rail %d's switch and its ports, where every node's %s is cabled "
		    "(its port counters, its partition, the subnet manager or VLAN of rail %d), "
		    "not the nodes",
		    p->rail, port, p->rail);
	else
		snprintf(buf, len,
			 "check rail %d's switch and its ports, where every node's rail-%d port is "
			 "cabled (its port counters, its partition, the subnet manager or VLAN of "
			 "rail %d), not the nodes",
			 p->rail, p->rail, p->rail);
}

static void json_part(struct ibp_json *j, const struct ibp_fabric_part *p)
{
	ibp_json_object_begin(j);
	ibp_json_kv_string(j, "part", p->name);
	ibp_json_kv_string(j, "kind", ibp_part_kind_name(p->kind));
	ibp_json_kv_string(j, "verdict", ibp_part_verdict_name(p->verdict));
	if (p->node[0] && p->kind != IBP_PART_RAIL)
		ibp_json_kv_string(j, "node", p->node);
	else
		ibp_json_kv_null(j, "node");
	if (p->sw[0])
		ibp_json_kv_string(j, "switch", p->sw);
	else
		ibp_json_kv_null(j, "switch");
	if (p->rail >= 0)
		ibp_json_kv_int(j, "rail", p->rail);
	else
		ibp_json_kv_null(j, "rail");
	if (p->device[0]) {
		ibp_json_kv_string(j, "device", p->device);
		ibp_json_kv_uint(j, "port", p->port);
	} else {
		ibp_json_kv_null(j, "device");
		ibp_json_kv_null(j, "port");
	}
	ibp_json_kv_double(j, "p_fail", p->p_fail);
	ibp_json_kv_double(j, "failed_attributed", p->attributed);
	ibp_json_kv_double(j, "surprise", p->surprise);
	ibp_json_kv_double(j, "links_failed", p->links_fail);
	ibp_json_kv_double(j, "links_failed_recorded", p->links_fail_recorded);
	ibp_json_kv_double(j, "links_passed", p->links_pass);
	ibp_json_kv_uint(j, "jobs_failed", p->jobs_fail);
	ibp_json_kv_uint(j, "days", p->days);
	ibp_json_kv_uint(j, "days_failed", p->days_fail);
	ibp_json_kv_uint(j, "neighbours_failed", p->peers_fail);
	ibp_json_kv_uint(j, "reporters", p->reporters);
	if (p->kind == IBP_PART_RAIL) {
		char fix[256];

		/* a rail's: its failures are many nodes', the other rails pass (or not) */
		ibp_json_kv_uint(j, "nodes_failed", p->peers_fail);
		if (p->node[0])
			ibp_json_kv_string(j, "most_failed_node", p->node);
		else
			ibp_json_kv_null(j, "most_failed_node");
		ibp_json_kv_double(j, "most_failed_node_links_failed", p->node_fail);
		ibp_json_kv_double(j, "other_rails_links_failed", p->others_fail);
		ibp_json_kv_double(j, "other_rails_links_passed", p->others_pass);
		rail_fix(p, fix, sizeof(fix));
		if (p->verdict == IBP_PART_SUSPECT)
			ibp_json_kv_string(j, "fix", fix);
		else
			ibp_json_kv_null(j, "fix");
	}
	ibp_json_kv_int(j, "first", p->first);
	ibp_json_kv_int(j, "last", p->last);
	/* failure records by outcome, in the results log's names */
	ibp_json_key(j, "failures");
	ibp_json_object_begin(j);
	for (int i = 0; i < IBP_LINK_STATUS_COUNT; i++)
		if (p->kinds[i])
			ibp_json_kv_uint(j, ibp_link_status_name((enum ibp_link_status)i),
					 p->kinds[i]);
	ibp_json_object_end(j);
	if (p->reason[0])
		ibp_json_kv_string(j, "reason", p->reason);
	else
		ibp_json_kv_null(j, "reason");
	ibp_json_object_end(j);
}

static int print_json(const struct ibp_fabric_part *parts, size_t n,
		      const struct ibp_fabric_stats *st, const struct ibp_results_log_stats *ls,
		      const struct ibp_topology *topo)
{
	struct ibp_json j;

	ibp_json_init_file(&j, stdout, IBP_JSON_PRETTY);
	ibp_json_object_begin(&j);
	ibp_json_kv_int(&j, "schema", 3);
	ibp_json_key(&j, "input");
	ibp_json_object_begin(&j);
	ibp_json_kv_uint(&j, "records", ls->records);
	ibp_json_kv_uint(&j, "cut", ls->cut);
	ibp_json_kv_uint(&j, "malformed", ls->malformed);
	ibp_json_kv_uint(&j, "other_version", ls->other_version);
	ibp_json_kv_uint(&j, "too_old", st->too_old);
	ibp_json_kv_uint(&j, "not_fabric", st->not_fabric);
	ibp_json_kv_uint(&j, "not_own_link", st->not_own);
	ibp_json_kv_uint(&j, "port_events", st->port_events);
	ibp_json_kv_uint(&j, "failures", st->failures);
	ibp_json_kv_double(&j, "links", st->links);
	ibp_json_kv_double(&j, "links_failed", st->failed);
	ibp_json_kv_double(&j, "links_failed_both_ends", st->confirmed);
	ibp_json_kv_double(&j, "links_failed_one_end", st->unconfirmed);
	ibp_json_kv_double(&j, "links_failed_left_out", st->discounted);
	ibp_json_kv_uint(&j, "records_outside_topology", st->unplaced);
	ibp_json_kv_string(&j, "topology", topo ? topo->source : NULL);
	ibp_json_object_end(&j);
	ibp_json_key(&j, "model");
	ibp_json_object_begin(&j);
	ibp_json_kv_uint(&j, "parts", st->parts);
	ibp_json_kv_uint(&j, "parts_little_traffic", st->little_traffic);
	ibp_json_kv_double(&j, "background", st->background);
	ibp_json_kv_double(&j, "min_surprise", st->min_surprise);
	ibp_json_kv_uint(&j, "sweeps", st->sweeps);
	ibp_json_object_end(&j);
	ibp_json_key(&j, "parts");
	ibp_json_array_begin(&j);
	for (size_t i = 0; i < n; i++)
		json_part(&j, &parts[i]);
	ibp_json_array_end(&j);
	ibp_json_object_end(&j);
	return ibp_json_finish(&j);
}

/* A count of links (halves from one end's records): whole when it is. */
static const char *links_str(double v, char *buf, size_t len)
{
	snprintf(buf, len, v == floor(v) ? "%.0f" : "%.1f", v);
	return buf;
}

static void print_table(const struct ibp_fabric_part *parts, size_t n,
			const struct ibp_fabric_stats *st, const struct ibp_results_log_stats *ls)
{
	size_t suspects = 0;
	char a[32], b[32], c[32], d[32];

	printf("%zu records: %s links, %s failed (%s on both ends' word, %s on one end's)\n",
	       ls->records, links_str(st->links, a, sizeof(a)), links_str(st->failed, b, sizeof(b)),
	       links_str(st->confirmed, c, sizeof(c)),
	       links_str(st->unconfirmed - st->discounted, d, sizeof(d)));
	if (st->discounted > 0)
		printf("left out: %s failed links on one end's word with no second reporter behind "
		       "them\n",
		       links_str(st->discounted, a, sizeof(a)));
	if (ls->cut || ls->malformed || ls->other_version)
		printf("skipped: %zu cut, %zu malformed, %zu of another version\n", ls->cut,
		       ls->malformed, ls->other_version);
	if (st->too_old || st->not_fabric || st->not_own || st->port_events)
		printf("left out: %zu records before --since, %zu about the test itself "
		       "(authentication, protocol, local failure, version), %zu about a link their "
		       "writer is not an end of, %zu port events (the watcher's)\n",
		       st->too_old, st->not_fabric, st->not_own, st->port_events);
	printf("%zu parts, %zu with too little traffic to judge; background %.2g failures per "
	       "link\n\n",
	       st->parts, st->little_traffic, st->background);
	if (!n) {
		printf("no part has failures to explain\n");
		return;
	}
	printf("%-4s %-26s %-7s %-10s %7s %12s %5s %7s %4s %3s %-18s %10s  %s\n", "rank", "part",
	       "kind", "verdict", "p(fail)", "fail/pass", "jobs", "days", "nbrs", "by", "mostly",
	       "first", "last / why");
	for (size_t i = 0; i < n; i++) {
		const struct ibp_fabric_part *p = &parts[i];
		char fp[80], days[24], kind[40];
		double share;
		const char *k = top_kind(p, &share);

		snprintf(fp, sizeof(fp), "%s/%s", links_str(p->links_fail, a, sizeof(a)),
			 links_str(p->links_pass, b, sizeof(b)));
		snprintf(days, sizeof(days), "%u/%u", p->days_fail, p->days);
		if (k[0])
			snprintf(kind, sizeof(kind), "%s %.0f%%", k, 100 * share);
		else
			snprintf(kind, sizeof(kind), "-");
		printf("%-4zu %-26s %-7s %-10s %6.1f%% %12s %5u %7s %4u %3u %-18s ", i + 1, p->name,
		       ibp_part_kind_name(p->kind),
		       p->verdict == IBP_PART_SUSPECT ? "SUSPECT" : "not enough", 100 * p->p_fail,
		       fp, p->jobs_fail, days, p->peers_fail, p->reporters, kind);
		print_time(stdout, p->first);
		printf("  ");
		if (p->verdict == IBP_PART_SUSPECT)
			print_time(stdout, p->last);
		else
			printf("%s", p->reason);
		printf("\n");
		suspects += p->verdict == IBP_PART_SUSPECT;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ibp_fabric_part *p = &parts[i];
		char port[IBP_DEV_MAX + 16], fix[256], e[32], g[32];

		if (p->kind != IBP_PART_RAIL || p->verdict != IBP_PART_SUSPECT)
			continue;
		rail_port(p, port, sizeof(port));
		rail_fix(p, fix, sizeof(fix));
		printf(
		    "\n%s%s%s%s: %s of %s links failed on this rail, across %u nodes (at most %s "
		    "with one node, %s), against %s of %s on the other rails: %s\n",
		    p->name, port[0] ? " (" : "", port, port[0] ? ")" : "",
		    links_str(p->links_fail, a, sizeof(a)),
		    links_str(p->links_fail + p->links_pass, b, sizeof(b)), p->peers_fail,
		    links_str(p->node_fail, c, sizeof(c)), p->node[0] ? p->node : "-",
		    links_str(p->others_fail, e, sizeof(e)),
		    links_str(p->others_fail + p->others_pass, g, sizeof(g)), fix);
	}
	printf("\n%zu suspect part(s); fail/pass: links through the part (a record is its end's "
	       "half of a link); jobs: with a failure; days: with a failure / with a link; nbrs: "
	       "distinct far ends of its failed links; by: nodes whose records they rest on; "
	       "mostly: the commonest outcome of its failures; first, last: failures\n",
	       suspects);
}

int ibprep_cmd_fabric(int argc, char **argv)
{
	const char *topo_path = NULL;
	const char **logs = calloc((size_t)argc + 1, sizeof(*logs));
	size_t n_logs = 0, limit = 50, shown_ne = 0, n_parts, n_show = 0;
	bool json = false, all = false;
	struct ibp_fabric_opts o;
	struct ibp_topology topo;
	struct ibp_fabric *fab = NULL;
	struct ibp_results_log_stats ls = {0};
	struct ibp_fabric_stats st;
	const struct ibp_fabric_part *parts;
	struct ibp_fabric_part *show = NULL;
	struct ibprep_args args;
	char err[512];
	unsigned u, threads = cpus();
	int opt, rc = 2;

	ibp_fabric_opts_init(&o);
	ibp_topology_init(&topo);
	if (!logs) {
		fprintf(stderr, "ibprep fabric: out of memory\n");
		return 2;
	}
	ibprep_args_init(&args, &ibprep_fabric_spec, argc, argv);
	while ((opt = ibprep_args_next(&args)) != IBPREP_ARGS_END) {
		switch (opt) {
		case OPT_TOPOLOGY:
			topo_path = args.value;
			break;
		case OPT_SINCE:
			if (parse_since(args.value, time(NULL), &o.since)) {
				fprintf(stderr,
					"ibprep fabric: bad value '%s' for --since: expected epoch "
					"seconds, YYYY-MM-DD[THH:MM[:SS]] or an age like 7d, 36h\n",
					args.value);
				goto out;
			}
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_ALL:
			all = true;
			break;
		case OPT_MIN_LINKS:
		case OPT_LIMIT:
		case OPT_THREADS:
			if (parse_uint(args.value, &u) || (opt != OPT_MIN_LINKS && !u) ||
			    (opt == OPT_THREADS && u > 64)) {
				fprintf(stderr, "ibprep fabric: bad value '%s' for %s\n",
					args.value, args.option);
				goto out;
			}
			if (opt == OPT_LIMIT)
				limit = u;
			else if (opt == OPT_THREADS)
				threads = u;
			else
				o.min_links = u;
			break;
		case IBPREP_ARGS_OPERAND:
			logs[n_logs++] = args.value;
			break;
		case IBPREP_ARGS_HELP:
			rc = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (!n_logs) {
		fprintf(stderr, "ibprep fabric: no LOG given\n");
		ibprep_usage(&ibprep_fabric_spec, stderr);
		goto out;
	}
	if (topo_path && ibp_topology_load_file(&topo, topo_path, err, sizeof(err))) {
		fprintf(stderr, "ibprep fabric: %s\n", err);
		goto out;
	}
	if (ibp_fabric_new(&fab, topo_path ? &topo : NULL, &o)) {
		fprintf(stderr, "ibprep fabric: out of memory\n");
		goto out;
	}
	err[0] = '\0';
	{
		int r = ibp_results_log_read_files(logs, n_logs, threads, ibp_fabric_add, fab, &ls,
						   err, sizeof(err));

		if (r == -E2BIG && !err[0])
			fprintf(stderr,
				"ibprep fabric: the logs name more than %u nodes or rails "
				"numbered %d or more\n",
				IBP_FABRIC_MAX_NODES, IBP_FABRIC_MAX_RAILS);
		else if (r)
			fprintf(stderr, "ibprep fabric: %s\n", err[0] ? err : strerror(-r));
		if (r)
			goto out;
	}
	if (ibp_fabric_solve(fab, &parts, &n_parts)) {
		fprintf(stderr, "ibprep fabric: out of memory\n");
		goto out;
	}
	/* Suspects, then (all, or the first 10) not-enough-evidence parts, up to LIMIT. */
	show = calloc(n_parts ? n_parts : 1, sizeof(*show));
	if (!show || ibp_fabric_evidence(fab, n_parts)) {
		fprintf(stderr, "ibprep fabric: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < n_parts && n_show < limit; i++) {
		if (parts[i].verdict == IBP_PART_NOT_ENOUGH && !all && shown_ne++ >= 10)
			break;
		show[n_show++] = parts[i];
	}
	ibp_fabric_get_stats(fab, &st);
	rc = 0;
	for (size_t i = 0; i < n_parts; i++)
		if (parts[i].verdict == IBP_PART_SUSPECT)
			rc = 1;
	if (json) {
		if (print_json(show, n_show, &st, &ls, topo_path ? &topo : NULL)) {
			fprintf(stderr, "ibprep fabric: cannot write the JSON\n");
			rc = 2;
		}
	} else {
		print_table(show, n_show, &st, &ls);
	}
out:
	free(logs);
	free(show);
	ibp_fabric_free(fab);
	ibp_topology_release(&topo);
	return rc;
}
