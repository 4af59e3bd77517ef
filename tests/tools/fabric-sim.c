/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fabric-sim: a simulated two-level fat tree and a stream of jobs, to
 * measure how fast and how well `ibprep fabric`'s method (helpers/fabric/fabric.c)
 * finds injected faults, against the naive rule "the node that failed most
 * often".  Used by bench/bench_fabric.sh; deterministic for a seed.
 *
 * The fabric: 512 nodes in leaves of 16 (Slurm's topology.conf, read by
 * the library's own parser), 8 rails, each rail a plane with 8 spines;
 * every link between two leaves takes one spine of its rail
 * (ECMP, uniform).  Faults, one at a time and in pairs:
 *   dead node        every link of the node fails (it writes no records)
 *   bad cable        one rail of one node: every link on it fails
 *   lossy uplinks    one leaf's uplinks on one rail drop 30% of the links
 *                    that leave the leaf
 *   flaky spine port one spine's port facing one leaf, on one rail, fails
 *                    half of the links that take it (1/8 of the leaf's
 *                    cross-leaf links on that rail): ~6% of them
 *   intermittent     one rail of one node fails 5% of its links
 *   bad rail switch  one rail fails 30% of its links, on every node (its
 *                    switch, or a rail plane's partition or subnet manager)
 * plus a background: any link fails with probability NOISE (a test slowed
 * by load ...), and SETUP_NOISE of them end with an outcome about the test
 * itself (authentication, another build), which the method must leave
 * out.  Every record carries the outcome name the plugin would write
 * (oob.h's vocabulary), by cause.
 *
 * Jobs: sizes 2..64 nodes; placed as Slurm's topology/tree does, in as few
 * leaves as possible, contiguous (sizes up to a leaf start at a random
 * offset inside one leaf, 15% of them straddle two); every step runs the
 * cross-node test in full mode (every rail) with the library's plan: the
 * topology-aware one (as with topology_conf=), or with --plan plain the
 * ring and second shift in node order.  Both ends write their JSON-lines
 * records; they are read back with the library's log reader into the same
 * fabric code `ibprep fabric` uses.
 *
 *   fabric-sim [--trials N] [--seed S] [--affected N] [--plan topo|plain] [--verbose]
 *
 * With --log DIR it writes a fleet's logs instead, as the plugin leaves
 * them (bench/bench_fabric_scale.sh): one file per node, DIR/<node>.jsonl,
 * each node writing its own end of its links through the library's writer,
 * and DIR/topology.conf; jobs until --records N records (2,500,000), their
 * steps spread over --days D (30), with the faults --fault TYPE asks for
 * (dead, cable, uplinks, spine, intermittent, rail; each at a random place).
 * --nodes, --leaf-size and --rails change the fabric's shape in both modes.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ibprep/fabric.h"
#include "ibprep/rdmatest.h"
#include "ibprep/results_log.h"
#include "ibprep/topology_conf.h"

/* The fabric's shape: 512 nodes in leaves of 16, 8 rails, 8 spines per rail (options change it). */
static int n_nodes = 512, leaf_size = 16, n_leaves = 32, n_rails = 8, n_spines = 8;
#define NOISE    0.001
#define MAX_JOB  64 /* nodes of the largest job */
#define CHECK_AT 20 /* affected jobs at which accuracy is judged */

enum fault_type {
	F_DEAD_NODE,
	F_BAD_CABLE,
	F_LOSSY_UPLINKS,
	F_SPINE_PORT,
	F_INTERMITTENT,
	F_BAD_RAIL,
	F_N
};

static const char *const fault_names[F_N] = {"dead node",       "bad cable",
					     "lossy uplinks",   "flaky spine port",
					     "intermittent 5%", "bad rail switch"};

struct fault {
	enum fault_type type;
	int node, leaf, rail, spine;
	char part[IBP_FABRIC_NAME_MAX]; /* the name the method should give */
	char node_name[IBP_NODE_MAX];   /* for the naive rule: the node it should name */
};

static uint64_t rng_state;
static char (*node_names)[16]; /* "n000" ... (n_nodes of them, name_digits digits) */
static int name_digits = 3;
static char (*dev_names)[16]; /* "mlx5_0" ... (n_rails of them) */

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double uniform(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

static int pick(int n)
{
	return (int)(rng() % (uint64_t)n);
}

static void fault_make(struct fault *f, enum fault_type t)
{
	memset(f, 0, sizeof(*f));
	f->type = t;
	f->node = pick(n_nodes);
	f->leaf = pick(n_leaves);
	f->rail = pick(n_rails);
	f->spine = pick(n_spines);
	snprintf(f->node_name, sizeof(f->node_name), "%s", node_names[f->node]);
	switch (t) {
	case F_DEAD_NODE:
		snprintf(f->part, sizeof(f->part), "%s", node_names[f->node]);
		break;
	case F_BAD_CABLE:
	case F_INTERMITTENT:
		snprintf(f->part, sizeof(f->part), "%s rail %d", node_names[f->node], f->rail);
		break;
	case F_BAD_RAIL:
		snprintf(f->part, sizeof(f->part), "rail %d", f->rail);
		f->node_name[0] = '\0'; /* no node to name */
		break;
	default:
		snprintf(f->part, sizeof(f->part), "leaf%02d uplinks rail %d", f->leaf, f->rail);
		f->node_name[0] = '\0'; /* no node to name */
		break;
	}
}

/*
 * What a failed link's record says, by its cause: the names the plugin
 * writes (oob.h's vocabulary), so that the log's reader and the method see
 * what they see in production.
 */
static const enum ibp_link_status fault_kinds[F_N][3] = {
    [F_DEAD_NODE] = {IBP_LINK_UNREACHABLE, IBP_LINK_UNREACHABLE, IBP_LINK_UNREACHABLE},
    [F_BAD_CABLE] = {IBP_LINK_TRANSPORT, IBP_LINK_TRANSPORT, IBP_LINK_TIMEOUT},
    [F_LOSSY_UPLINKS] = {IBP_LINK_TIMEOUT, IBP_LINK_CORRUPT, IBP_LINK_BW_LOW},
    [F_SPINE_PORT] = {IBP_LINK_TIMEOUT, IBP_LINK_GONE, IBP_LINK_LAT_HIGH},
    [F_INTERMITTENT] = {IBP_LINK_CORRUPT, IBP_LINK_TIMEOUT, IBP_LINK_LAT_HIGH},
    [F_BAD_RAIL] = {IBP_LINK_TIMEOUT, IBP_LINK_UNREACHABLE, IBP_LINK_TRANSPORT},
};
/* The background: any of the fabric's failures, for no fault (a test slowed by load ...). */
static const enum ibp_link_status noise_kinds[] = {
    IBP_LINK_UNREACHABLE, IBP_LINK_TIMEOUT,  IBP_LINK_TRANSPORT, IBP_LINK_CORRUPT,
    IBP_LINK_BW_LOW,      IBP_LINK_LAT_HIGH, IBP_LINK_GONE};
/* Outcomes about the test itself (SETUP_NOISE of the links): the method must leave them out. */
static const enum ibp_link_status setup_kinds[] = {IBP_LINK_AUTH, IBP_LINK_PROTOCOL, IBP_LINK_LOCAL,
						   IBP_LINK_VERSION};
#define SETUP_NOISE 0.0002
#define PICK(arr)   (arr)[pick((int)(sizeof(arr) / sizeof((arr)[0])))]

/* The outcome of a link a->b on RAIL; AFFECTED when it crosses a fault (it may still pass). */
static enum ibp_link_status link_outcome(const struct fault *f, size_t nf, int a, int b, int rail,
					 bool *affected)
{
	bool cross = a / leaf_size != b / leaf_size;
	int spine = pick(n_spines);
	enum ibp_link_status st = IBP_LINK_PASS;

	for (size_t i = 0; i < nf; i++) {
		const struct fault *x = &f[i];
		bool hit = false;
		double pass = 1;

		switch (x->type) {
		case F_DEAD_NODE:
			hit = a == x->node || b == x->node;
			pass = 0;
			break;
		case F_BAD_CABLE:
			hit = rail == x->rail && (a == x->node || b == x->node);
			pass = 0;
			break;
		case F_INTERMITTENT:
			hit = rail == x->rail && (a == x->node || b == x->node);
			pass = 0.95;
			break;
		case F_LOSSY_UPLINKS:
			hit = cross && rail == x->rail &&
			      (a / leaf_size == x->leaf || b / leaf_size == x->leaf);
			pass = 0.7;
			break;
		case F_SPINE_PORT:
			hit = cross && rail == x->rail &&
			      (a / leaf_size == x->leaf || b / leaf_size == x->leaf);
			pass = spine == x->spine ? 0.5 : 1;
			break;
		case F_BAD_RAIL:
			hit = rail == x->rail;
			pass = 0.7;
			break;
		default:
			break;
		}
		if (hit) {
			*affected = true;
			if (st == IBP_LINK_PASS && uniform() >= pass)
				st = PICK(fault_kinds[x->type]);
		}
	}
	if (st == IBP_LINK_PASS && uniform() < NOISE)
		st = PICK(noise_kinds);
	if (st == IBP_LINK_PASS && uniform() < SETUP_NOISE)
		st = PICK(setup_kinds);
	return st;
}

static int job_size(void)
{
	static const int sizes[] = {2, 2, 4, 4, 8, 8, 8, 16, 16, 32, 64};

	return sizes[pick((int)(sizeof(sizes) / sizeof(sizes[0])))];
}

/* First node of a job of SIZE nodes, placed contiguously as topology/tree would. */
static int job_place(int size)
{
	if (size <= leaf_size) {
		int leaf = pick(n_leaves), off;

		if (uniform() < 0.15 && leaf < n_leaves - 1) /* straddles two leaves */
			off = leaf_size - size / 2;
		else
			off = pick(leaf_size - size + 1);
		return leaf * leaf_size + off;
	}
	return pick(n_leaves - size / leaf_size + 1) * leaf_size;
}

static char *log_buf;
static size_t log_len, log_cap;
static struct ibp_link_record *recs;
static int *rec_by; /* the node that wrote recs[i] */
static size_t n_recs, cap_recs;

static void rec_add(const struct ibp_link_record *r, int by)
{
	if (n_recs == cap_recs) {
		cap_recs = cap_recs ? cap_recs * 2 : 4096;
		recs = realloc(recs, cap_recs * sizeof(*recs));
		rec_by = realloc(rec_by, cap_recs * sizeof(*rec_by));
		if (!recs || !rec_by)
			abort();
	}
	rec_by[n_recs] = by;
	recs[n_recs++] = *r;
}

static void log_add(const struct ibp_link_record *r)
{
	char line[IBP_RESULTS_LOG_MAX_RECORD];
	int n = ibp_results_log_format(r, line, sizeof(line));

	if (n <= 0)
		abort();
	if (log_len + (size_t)n + 1 > log_cap) {
		log_cap = log_cap ? log_cap * 2 : 1 << 20;
		log_buf = realloc(log_buf, log_cap);
		if (!log_buf)
			abort();
	}
	memcpy(log_buf + log_len, line, (size_t)n);
	log_len += (size_t)n;
}

static void record(struct ibp_link_record *r, int by, int a, int b, int rail,
		   enum ibp_link_status st, uint32_t job, unsigned round, int64_t t)
{
	r->time = t;
	r->job = job;
	r->step = 0;
	r->round = round;
	strcpy(r->by, node_names[by]);
	strcpy(r->a, node_names[a]);
	strcpy(r->b, node_names[b]);
	r->a_rail = r->b_rail = rail;
	strcpy(r->a_dev, dev_names[rail]);
	strcpy(r->b_dev, dev_names[rail]);
	r->a_port = r->b_port = 1;
	r->status = st;
	r->rtt_us = st == IBP_LINK_PASS ? 3 + uniform() : -1;
	r->gbps = st == IBP_LINK_PASS ? 180 + 10 * uniform() : -1;
}

/* --plan plain: the ring and second shift in node order, as without topology_conf= */
static bool plain_plan;

/*
 * One job's step at time T: its records (both ends of every link, none
 * from a dead node) into recs[]; true when it met a fault.
 */
static bool gen_job(const struct fault *faults, size_t nf, uint32_t job, int64_t t)
{
	int size = job_size(), first = job_place(size);
	int leaf[MAX_JOB];
	bool affected = false;

	if (size > n_nodes)
		size = n_nodes;
	if (first + size > n_nodes)
		first = n_nodes - size;
	n_recs = 0;
	for (int i = 0; i < size; i++)
		leaf[i] = (first + i) / leaf_size;
	for (int i = 0; i < size; i++) {
		struct ibp_rdmatest_plan plan;

		if (plain_plan ? ibp_rdmatest_plan((size_t)size, (size_t)i, &plan)
			       : ibp_rdmatest_plan_topo((size_t)size, (size_t)i, leaf, &plan))
			abort();
		for (unsigned round = 0; round < plan.n_rounds; round++) {
			int a = first + i, b = first + (int)plan.send_to[round];

			for (int rail = 0; rail < n_rails; rail++) {
				struct ibp_link_record r = {0};
				bool hit = false;
				enum ibp_link_status st =
				    link_outcome(faults, nf, a, b, rail, &hit);
				bool a_dead = false, b_dead = false;

				for (size_t k = 0; k < nf; k++) {
					a_dead |=
					    faults[k].type == F_DEAD_NODE && faults[k].node == a;
					b_dead |=
					    faults[k].type == F_DEAD_NODE && faults[k].node == b;
				}
				affected |= hit;
				if (!a_dead) {
					record(&r, a, a, b, rail, st, job, round + 1, t);
					rec_add(&r, a);
				}
				if (!b_dead) {
					record(&r, b, a, b, rail, st, job, round + 1, t);
					rec_add(&r, b);
				}
			}
		}
	}
	return affected;
}

/*
 * Runs one job (a job every ten minutes) into FAB; true when it met a
 * fault.  The records of a job that met a fault are written as JSON lines
 * and read back with the log reader, as `ibprep fabric` reads them; the
 * (many) other jobs' records are handed to the fabric directly, which is
 * the same (parse(format(r)) == r, tested in test_results_log) and thirty
 * times faster.
 */
static bool run_job(struct ibp_fabric *fab, const struct fault *faults, size_t nf, uint32_t job)
{
	struct ibp_results_log_stats st = {0};

	if (!gen_job(faults, nf, job, 1764547200 + (int64_t)job * 600)) {
		for (size_t i = 0; i < n_recs; i++)
			if (ibp_fabric_add(fab, &recs[i]))
				abort();
		return false;
	}
	log_len = 0;
	for (size_t i = 0; i < n_recs; i++)
		log_add(&recs[i]);
	if (ibp_results_log_read_buf(log_buf, log_len, ibp_fabric_add, fab, &st) || st.cut ||
	    st.malformed || st.records != n_recs)
		abort();
	return true;
}

/* The fabric's topology.conf (one spine layer over the leaves) into a new string. */
static char *topology_text(size_t *len)
{
	size_t cap = 96 * (size_t)n_leaves + 256, off = 0;
	char *text = malloc(cap);

	if (!text)
		return NULL;
	off += (size_t)snprintf(text + off, cap - off, "# %d nodes, %d leaves of %d\n", n_nodes,
				n_leaves, leaf_size);
	off += (size_t)snprintf(text + off, cap - off, "SwitchName=spine Switches=leaf[00-%02d]\n",
				n_leaves - 1);
	for (int l = 0; l < n_leaves; l++)
		off += (size_t)snprintf(text + off, cap - off,
					"SwitchName=leaf%02d Nodes=n[%0*d-%0*d]\n", l, name_digits,
					l * leaf_size, name_digits, l * leaf_size + leaf_size - 1);
	*len = off;
	return text;
}

static int build_topology(struct ibp_topology *topo)
{
	char err[256];
	size_t len;
	char *text = topology_text(&len);
	int rc;

	if (!text)
		return -ENOMEM;
	rc = ibp_topology_parse_conf(topo, text, len, "sim-topology.conf", err, sizeof(err));
	if (rc)
		fprintf(stderr, "fabric-sim: %s\n", err);
	free(text);
	return rc;
}

struct result {
	unsigned trials;
	unsigned top1, top3;       /* at CHECK_AT affected jobs */
	unsigned top1_end;         /* at the end of the run */
	unsigned found;            /* ranked first (as a suspect) at some point */
	unsigned jobs_needed[400]; /* affected jobs until first ranked first */
	unsigned healthy_above;    /* trials where a healthy part ranked above a fault */
	unsigned false_suspects;   /* healthy parts called suspect, summed, at CHECK_AT */
	unsigned false_trials;     /* trials with at least one */
	unsigned naive_top1;       /* naive rule names the fault's node first, at CHECK_AT */
	unsigned naive_applicable;
	double seconds;
};

static bool is_fault(const struct fault *f, size_t nf, const char *name)
{
	for (size_t i = 0; i < nf; i++)
		if (!strcmp(f[i].part, name))
			return true;
	return false;
}

/*
 * Ranks of the faults among the suspects (0 = not a suspect); returns how
 * many healthy parts are suspects and whether one ranks above a fault.
 */
static unsigned judge(const struct ibp_fabric_part *parts, size_t n, const struct fault *f,
		      size_t nf, unsigned *rank, bool *healthy_above)
{
	unsigned healthy = 0, found = 0;

	*healthy_above = false;
	for (size_t k = 0; k < nf; k++)
		rank[k] = 0;
	for (size_t i = 0; i < n && parts[i].verdict == IBP_PART_SUSPECT; i++) {
		bool mine = false;

		for (size_t k = 0; k < nf; k++)
			if (!strcmp(parts[i].name, f[k].part) && !rank[k]) {
				rank[k] = (unsigned)i + 1;
				mine = true;
				found++;
			}
		if (!mine && !is_fault(f, nf, parts[i].name)) {
			healthy++;
			if (found < nf)
				*healthy_above = true;
		}
	}
	for (size_t k = 0; k < nf; k++)
		if (!rank[k])
			*healthy_above |= healthy > 0;
	return healthy;
}

static void run_trial(struct result *res, const struct ibp_topology *topo, enum fault_type t1,
		      int t2, unsigned max_affected, unsigned max_jobs, bool verbose)
{
	struct fault faults[2];
	size_t nf = t2 < 0 ? 1 : 2;
	struct ibp_fabric *fab;
	unsigned affected = 0, needed = 0;
	bool at_check = false;
	clock_t c0 = clock();

	fault_make(&faults[0], t1);
	if (nf == 2) {
		do
			fault_make(&faults[1], (enum fault_type)t2);
		while (!strcmp(faults[1].part, faults[0].part) ||
		       faults[1].node == faults[0].node ||
		       (faults[1].leaf == faults[0].leaf && faults[1].rail == faults[0].rail));
	}
	if (ibp_fabric_new(&fab, topo, NULL))
		abort();
	res->trials++;
	for (uint32_t job = 1; job <= max_jobs && affected < max_affected; job++) {
		const struct ibp_fabric_part *parts;
		size_t n;
		unsigned rank[2];
		bool above, all_top;
		unsigned healthy;

		if (!run_job(fab, faults, nf, job))
			continue;
		affected++;
		if (ibp_fabric_solve(fab, &parts, &n))
			abort();
		healthy = judge(parts, n, faults, nf, rank, &above);
		all_top = true;
		for (size_t k = 0; k < nf; k++)
			all_top &= rank[k] >= 1 && rank[k] <= nf;
		if (all_top && !needed) {
			needed = affected;
			res->jobs_needed[res->found++] = needed;
		}
		if (affected == CHECK_AT || (affected == max_affected && !at_check)) {
			bool top3 = true;
			char naive[2][IBP_NODE_MAX];
			size_t nn;

			at_check = true;
			for (size_t k = 0; k < nf; k++)
				top3 &= rank[k] >= 1 && rank[k] <= nf + 2;
			res->top1 += all_top;
			res->top3 += top3;
			res->healthy_above += above;
			res->false_suspects += healthy;
			res->false_trials += healthy > 0;
			if (nf == 1) {
				/* it can only name nodes: never right for a switch's uplinks */
				res->naive_applicable++;
				nn = ibp_fabric_naive_rank(fab, naive, 1);
				res->naive_top1 += nn && faults[0].node_name[0] &&
						   !strcmp(naive[0], faults[0].node_name);
			}
			if (verbose) {
				fprintf(stderr, "  %s%s%s: rank %u%s, %u healthy suspects; top:",
					faults[0].part, nf > 1 ? " + " : "",
					nf > 1 ? faults[1].part : "", rank[0],
					nf > 1 ? (rank[1] ? "+" : "+0") : "", healthy);
				for (size_t i = 0; i < n && i < 3; i++)
					fprintf(stderr, " [%s %s p=%.3f s=%.1f]", parts[i].name,
						ibp_part_verdict_name(parts[i].verdict),
						parts[i].p_fail, parts[i].surprise);
				fprintf(stderr, "\n");
			}
		}
		if (affected == max_affected)
			res->top1_end += all_top;
	}
	ibp_fabric_free(fab);
	res->seconds += (double)(clock() - c0) / CLOCKS_PER_SEC;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

static void print_row(const char *name, struct result *r, unsigned max_affected)
{
	char naive[32], med[16];

	qsort(r->jobs_needed, r->found, sizeof(r->jobs_needed[0]), cmp_uint);
	if (r->found)
		snprintf(med, sizeof(med), "%u", r->jobs_needed[(r->found - 1) / 2]);
	else
		snprintf(med, sizeof(med), "-");
	if (r->naive_applicable)
		snprintf(naive, sizeof(naive), "%5.1f%%",
			 100.0 * r->naive_top1 / r->naive_applicable);
	else
		snprintf(naive, sizeof(naive), "   n/a");
	printf("%-30s %6u %6.1f%% %6.1f%% %6.1f%% %8s %6.1f%% %7.2f %7u  %s\n", name, r->trials,
	       100.0 * r->top1 / r->trials, 100.0 * r->top3 / r->trials,
	       100.0 * r->top1_end / r->trials, med, 100.0 * r->found / r->trials,
	       (double)r->false_suspects / r->trials, r->healthy_above, naive);
	(void)max_affected;
}

/* A node's log being written: appended to DIR/<node>.jsonl whenever its buffer fills. */
struct node_log {
	char *buf;
	size_t len;
};

#define NODE_LOG_BUF (64u << 10)

static int node_log_flush(const char *dir, int node, struct node_log *l)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s.jsonl", dir, node_names[node]);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0 || write(fd, l->buf, l->len) != (ssize_t)l->len) {
		fprintf(stderr, "fabric-sim: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	l->len = 0;
	return 0;
}

/*
 * --log DIR: a fleet's results logs as the plugin leaves them: one file per
 * node (DIR/<node>.jsonl, every record through the library's writer, each
 * node writing its own end of its links) and DIR/topology.conf, jobs until
 * TARGET records, their steps spread evenly over DAYS days.
 */
static int write_logs(const char *dir, uint64_t target, double days, const struct fault *faults,
		      size_t nf)
{
	struct node_log *logs = calloc((size_t)n_nodes, sizeof(*logs));
	char path[4096], line[IBP_RESULTS_LOG_MAX_RECORD];
	uint64_t written = 0, bytes = 0;
	uint32_t job = 0;
	size_t len;
	char *topo = topology_text(&len);
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/topology.conf", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (!logs || !topo || fd < 0 || write(fd, topo, len) != (ssize_t)len) {
		fprintf(stderr, "fabric-sim: %s: %s (a new directory is needed)\n", path,
			strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	for (int i = 0; !rc && i < n_nodes; i++)
		if (!(logs[i].buf = malloc(NODE_LOG_BUF)))
			rc = -1;
	while (!rc && written < target) {
		int64_t t = 1764547200 + (int64_t)(days * 86400 * (double)written / (double)target);

		gen_job(faults, nf, ++job, t);
		for (size_t i = 0; !rc && i < n_recs; i++) {
			struct node_log *l = &logs[rec_by[i]];
			int n = ibp_results_log_format(&recs[i], line, sizeof(line));

			if (n <= 0)
				abort();
			if (l->len + (size_t)n > NODE_LOG_BUF)
				rc = node_log_flush(dir, rec_by[i], l);
			memcpy(l->buf + l->len, line, (size_t)n);
			l->len += (size_t)n;
			written++;
			bytes += (uint64_t)n;
		}
	}
	for (int i = 0; !rc && i < n_nodes; i++)
		if (logs[i].len)
			rc = node_log_flush(dir, i, &logs[i]);
	if (!rc) {
		printf("fabric-sim: %llu records (%.0f MB) of %u steps over %.0f days into %s: %d "
		       "node logs (<node>.jsonl) and topology.conf; %d nodes, %d leaves of %d, %d "
		       "rail(s)\n",
		       (unsigned long long)written, (double)bytes / 1e6, job, days, dir, n_nodes,
		       n_nodes, n_leaves, leaf_size, n_rails);
		for (size_t k = 0; k < nf; k++)
			printf("fabric-sim: fault: %s (%s)\n", faults[k].part,
			       fault_names[faults[k].type]);
	}
	for (int i = 0; logs && i < n_nodes; i++)
		free(logs[i].buf);
	free(logs);
	free(topo);
	return rc;
}

/* The rows of the faults FROM..TO (not included), one at a time. */
static void single_rows(const struct ibp_topology *topo, int from, int to, unsigned trials,
			unsigned max_affected, unsigned max_jobs, bool verbose)
{
	for (int t = from; t < to; t++) {
		struct result r;

		memset(&r, 0, sizeof(r));
		for (unsigned i = 0; i < trials; i++)
			run_trial(&r, topo, (enum fault_type)t, -1, max_affected, max_jobs,
				  verbose);
		print_row(fault_names[t], &r, max_affected);
		fflush(stdout);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fabric-sim [--trials N] [--seed S] [--affected N] [--plan topo|plain] "
		"[--verbose]\n"
		"       fabric-sim --log DIR [--records N] [--days D] [--fault TYPE]... [--seed S] "
		"[--plan topo|plain]\n"
		"  both: [--nodes N] [--leaf-size N] [--rails N]; TYPE: dead, cable, uplinks, "
		"spine, intermittent, rail\n");
}

int main(int argc, char **argv)
{
	unsigned trials = 40, max_affected = 60, max_jobs = 20000;
	uint64_t seed = 1, records = 2500000;
	double days = 30;
	const char *log_dir = NULL;
	enum fault_type log_faults[8];
	size_t n_log_faults = 0;
	bool verbose = false;
	struct ibp_topology topo;
	static const int pairs[][2] = {
	    {F_DEAD_NODE, F_BAD_CABLE},      {F_BAD_CABLE, F_LOSSY_UPLINKS},
	    {F_LOSSY_UPLINKS, F_SPINE_PORT}, {F_DEAD_NODE, F_INTERMITTENT},
	    {F_BAD_CABLE, F_INTERMITTENT},
	};
	static const char *const fault_words[F_N] = {"dead",  "cable",        "uplinks",
						     "spine", "intermittent", "rail"};
	clock_t c0 = clock();

	for (int i = 1; i < argc; i++) {
		bool more = i + 1 < argc;

		if (!strcmp(argv[i], "--trials") && more)
			trials = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && more)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--affected") && more)
			max_affected = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--verbose"))
			verbose = true;
		else if (!strcmp(argv[i], "--plan") && more &&
			 (!strcmp(argv[i + 1], "plain") || !strcmp(argv[i + 1], "topo")))
			plain_plan = !strcmp(argv[++i], "plain");
		else if (!strcmp(argv[i], "--log") && more)
			log_dir = argv[++i];
		else if (!strcmp(argv[i], "--records") && more)
			records = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--days") && more)
			days = atof(argv[++i]);
		else if (!strcmp(argv[i], "--nodes") && more)
			n_nodes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--leaf-size") && more)
			leaf_size = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rails") && more)
			n_rails = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fault") && more && n_log_faults < 8) {
			int t = F_N;

			i++;
			for (int k = 0; k < F_N; k++)
				if (!strcmp(argv[i], fault_words[k]))
					t = k;
			if (t == F_N) {
				usage();
				return 2;
			}
			log_faults[n_log_faults++] = (enum fault_type)t;
		} else {
			usage();
			return 2;
		}
	}
	/* jobs of up to MAX_JOB nodes in at least two leaves' worth of nodes */
	if (trials == 0 || trials > 400 || max_affected < CHECK_AT || leaf_size < 2 ||
	    n_nodes < 2 * MAX_JOB || n_nodes > 99999 || n_nodes % leaf_size || n_rails < 1 ||
	    n_rails > 64 || !records || !(days > 0)) {
		usage();
		return 2;
	}
	n_leaves = n_nodes / leaf_size;
	name_digits = snprintf(NULL, 0, "%d", n_nodes - 1);
	if (name_digits < 3)
		name_digits = 3;
	node_names = calloc((size_t)n_nodes, sizeof(*node_names));
	dev_names = calloc((size_t)n_rails, sizeof(*dev_names));
	if (!node_names || !dev_names)
		return 1;
	rng_state = seed;
	for (int i = 0; i < n_nodes; i++)
		snprintf(node_names[i], sizeof(node_names[i]), "n%0*d", name_digits, i);
	for (int i = 0; i < n_rails; i++)
		snprintf(dev_names[i], sizeof(dev_names[i]), "mlx5_%d", i);
	if (log_dir) {
		struct fault faults[8];

		for (size_t k = 0; k < n_log_faults; k++)
			fault_make(&faults[k], log_faults[k]);
		return write_logs(log_dir, records, days, faults, n_log_faults) ? 1 : 0;
	}
	if (build_topology(&topo))
		return 1;
	printf("fabric-sim: %d nodes, %d leaves of %d, %d rails, %d spines per rail; background "
	       "%.1f%% of links fail; seed %llu, %u trials per row; %s plan\n",
	       n_nodes, n_leaves, leaf_size, n_rails, n_spines, 100 * NOISE,
	       (unsigned long long)seed, trials,
	       plain_plan ? "plain (ring and second shift)" : "topology-aware");
	printf("accuracy at %d affected jobs; 'until 1st' = median affected jobs until the "
	       "fault is ranked first (of those found within %u)\n",
	       CHECK_AT, max_affected);
	printf("%-30s %6s %7s %7s %7s %8s %7s %7s %7s  %s\n", "fault", "trials", "top-1", "top-3",
	       "top-1@N", "until1st", "found", "false/t", "healthy>", "naive top-1");
	/* the bad rail switch last: the rows before it keep their random draws */
	single_rows(&topo, 0, F_BAD_RAIL, trials, max_affected, max_jobs, verbose);
	for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++) {
		struct result r;
		char name[64];

		memset(&r, 0, sizeof(r));
		snprintf(name, sizeof(name), "%s + %s", fault_names[pairs[p][0]],
			 fault_names[pairs[p][1]]);
		for (unsigned i = 0; i < trials; i++)
			run_trial(&r, &topo, (enum fault_type)pairs[p][0], pairs[p][1],
				  max_affected, max_jobs, verbose);
		print_row(name, &r, max_affected);
		fflush(stdout);
	}
	single_rows(&topo, F_BAD_RAIL, F_N, trials, max_affected, max_jobs, verbose);
	printf("top-1@N: at the end (N affected jobs); found: ranked first within N; false/t: "
	       "healthy parts called suspect per trial at %d; healthy>: trials where a healthy "
	       "part ranked above a fault\n",
	       CHECK_AT);
	printf("pairs: top-1 = both faults are the first two suspects, top-3 = both within the "
	       "first four; naive: the node with most failed links, counted right for a cable "
	       "when it is the cable's node\n");
	printf("cpu %.1f s\n", (double)(clock() - c0) / CLOCKS_PER_SEC);
	ibp_topology_release(&topo);
	free(log_buf);
	free(recs);
	free(rec_by);
	free(node_names);
	free(dev_names);
	return 0;
}
