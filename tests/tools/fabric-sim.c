/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fabric-sim: a simulated two-level fat tree and a stream of jobs, to
 * measure how fast and how well `ibprep fabric`'s method (helpers/fabric/fabric.c)
 * finds injected faults, against the naive rule "the node that failed most
 * often".  Used by bench/bench_fabric.sh; deterministic for a seed.
 *
 * The fabric: NODES nodes in leaves of LEAF_SIZE (Slurm's topology.conf,
 * read by the library's own parser), RAILS rails, each rail a plane with
 * SPINES spines; every link between two leaves takes one spine of its rail
 * (ECMP, uniform).  Faults, one at a time and in pairs:
 *   dead node        every link of the node fails (it writes no records)
 *   bad cable        one rail of one node: every link on it fails
 *   lossy uplinks    one leaf's uplinks on one rail drop 30% of the links
 *                    that leave the leaf
 *   flaky spine port one spine's port facing one leaf, on one rail, fails
 *                    half of the links that take it (1/SPINES of the leaf's
 *                    cross-leaf links on that rail): ~6% of them
 *   intermittent     one rail of one node fails 5% of its links
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
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibprep/fabric.h"
#include "ibprep/rdmatest.h"
#include "ibprep/results_log.h"
#include "ibprep/topology_conf.h"

#define NODES     512
#define LEAF_SIZE 16
#define LEAVES    (NODES / LEAF_SIZE)
#define RAILS     8
#define SPINES    8
#define NOISE     0.001
#define CHECK_AT  20 /* affected jobs at which accuracy is judged */

enum fault_type { F_DEAD_NODE, F_BAD_CABLE, F_LOSSY_UPLINKS, F_SPINE_PORT, F_INTERMITTENT, F_N };

static const char *const fault_names[F_N] = {"dead node", "bad cable", "lossy uplinks",
					     "flaky spine port", "intermittent 5%"};

struct fault {
	enum fault_type type;
	int node, leaf, rail, spine;
	char part[IBP_FABRIC_NAME_MAX]; /* the name the method should give */
	char node_name[IBP_NODE_MAX];   /* for the naive rule: the node it should name */
};

static uint64_t rng_state;

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
	f->node = pick(NODES);
	f->leaf = pick(LEAVES);
	f->rail = pick(RAILS);
	f->spine = pick(SPINES);
	snprintf(f->node_name, sizeof(f->node_name), "n%03d", f->node);
	switch (t) {
	case F_DEAD_NODE:
		snprintf(f->part, sizeof(f->part), "n%03d", f->node);
		break;
	case F_BAD_CABLE:
	case F_INTERMITTENT:
		snprintf(f->part, sizeof(f->part), "n%03d rail %d", f->node, f->rail);
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
	bool cross = a / LEAF_SIZE != b / LEAF_SIZE;
	int spine = pick(SPINES);
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
			      (a / LEAF_SIZE == x->leaf || b / LEAF_SIZE == x->leaf);
			pass = 0.7;
			break;
		case F_SPINE_PORT:
			hit = cross && rail == x->rail &&
			      (a / LEAF_SIZE == x->leaf || b / LEAF_SIZE == x->leaf);
			pass = spine == x->spine ? 0.5 : 1;
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
	if (size <= LEAF_SIZE) {
		int leaf = pick(LEAVES), off;

		if (uniform() < 0.15 && leaf < LEAVES - 1) /* straddles two leaves */
			off = LEAF_SIZE - size / 2;
		else
			off = pick(LEAF_SIZE - size + 1);
		return leaf * LEAF_SIZE + off;
	}
	return pick(LEAVES - size / LEAF_SIZE + 1) * LEAF_SIZE;
}

static char *log_buf;
static size_t log_len, log_cap;
static struct ibp_link_record *recs;
static size_t n_recs, cap_recs;
static char node_names[NODES][8], dev_names[RAILS][16];

static void rec_add(const struct ibp_link_record *r)
{
	if (n_recs == cap_recs) {
		cap_recs = cap_recs ? cap_recs * 2 : 4096;
		recs = realloc(recs, cap_recs * sizeof(*recs));
		if (!recs)
			abort();
	}
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

/*
 * Runs one job; true when it met a fault.  The records of a job that met a
 * fault are written as JSON lines and read back with the log reader, as
 * `ibprep fabric` reads them; the (many) other jobs' records are handed to
 * the fabric directly, which is the same (parse(format(r)) == r, tested in
 * test_results_log) and thirty times faster.
 */
/* --plan plain: the ring and second shift in node order, as without topology_conf= */
static bool plain_plan;

static bool run_job(struct ibp_fabric *fab, const struct fault *faults, size_t nf, uint32_t job)
{
	int size = job_size(), first = job_place(size);
	int leaf[NODES];
	int64_t t = 1764547200 + (int64_t)job * 600; /* a job every ten minutes */
	bool affected = false;
	struct ibp_results_log_stats st = {0};

	if (first + size > NODES)
		first = NODES - size;
	n_recs = 0;
	for (int i = 0; i < size; i++)
		leaf[i] = (first + i) / LEAF_SIZE;
	for (int i = 0; i < size; i++) {
		struct ibp_rdmatest_plan plan;

		if (plain_plan ? ibp_rdmatest_plan((size_t)size, (size_t)i, &plan)
			       : ibp_rdmatest_plan_topo((size_t)size, (size_t)i, leaf, &plan))
			abort();
		for (unsigned round = 0; round < plan.n_rounds; round++) {
			int a = first + i, b = first + (int)plan.send_to[round];

			for (int rail = 0; rail < RAILS; rail++) {
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
					rec_add(&r);
				}
				if (!b_dead) {
					record(&r, b, a, b, rail, st, job, round + 1, t);
					rec_add(&r);
				}
			}
		}
	}
	if (!affected) {
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

static int build_topology(struct ibp_topology *topo)
{
	char *text = malloc(64 * LEAVES + 256), err[256];
	size_t off = 0;
	int rc;

	if (!text)
		return -ENOMEM;
	off +=
	    (size_t)sprintf(text + off, "# %d nodes, %d leaves of %d\n", NODES, LEAVES, LEAF_SIZE);
	off += (size_t)sprintf(text + off, "SwitchName=spine Switches=leaf[00-%02d]\n", LEAVES - 1);
	for (int l = 0; l < LEAVES; l++)
		off += (size_t)sprintf(text + off, "SwitchName=leaf%02d Nodes=n[%03d-%03d]\n", l,
				       l * LEAF_SIZE, l * LEAF_SIZE + LEAF_SIZE - 1);
	rc = ibp_topology_parse_conf(topo, text, off, "sim-topology.conf", err, sizeof(err));
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

int main(int argc, char **argv)
{
	unsigned trials = 40, max_affected = 60, max_jobs = 20000;
	uint64_t seed = 1;
	bool verbose = false;
	struct ibp_topology topo;
	static const int pairs[][2] = {
	    {F_DEAD_NODE, F_BAD_CABLE},      {F_BAD_CABLE, F_LOSSY_UPLINKS},
	    {F_LOSSY_UPLINKS, F_SPINE_PORT}, {F_DEAD_NODE, F_INTERMITTENT},
	    {F_BAD_CABLE, F_INTERMITTENT},
	};
	clock_t c0 = clock();

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--trials") && i + 1 < argc)
			trials = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--affected") && i + 1 < argc)
			max_affected = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--verbose"))
			verbose = true;
		else if (!strcmp(argv[i], "--plan") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "plain") || !strcmp(argv[i + 1], "topo")))
			plain_plan = !strcmp(argv[++i], "plain");
		else {
			fprintf(stderr, "usage: fabric-sim [--trials N] [--seed S] [--affected N] "
					"[--plan topo|plain] [--verbose]\n");
			return 2;
		}
	}
	if (trials == 0 || trials > 400 || max_affected < CHECK_AT)
		return 2;
	rng_state = seed;
	for (int i = 0; i < NODES; i++)
		snprintf(node_names[i], sizeof(node_names[i]), "n%03d", i);
	for (int i = 0; i < RAILS; i++)
		snprintf(dev_names[i], sizeof(dev_names[i]), "mlx5_%d", i);
	if (build_topology(&topo))
		return 1;
	printf("fabric-sim: %d nodes, %d leaves of %d, %d rails, %d spines per rail; background "
	       "%.1f%% of links fail; seed %llu, %u trials per row; %s plan\n",
	       NODES, LEAVES, LEAF_SIZE, RAILS, SPINES, 100 * NOISE, (unsigned long long)seed,
	       trials, plain_plan ? "plain (ring and second shift)" : "topology-aware");
	printf("accuracy at %d affected jobs; 'until 1st' = median affected jobs until the "
	       "fault is ranked first (of those found within %u)\n",
	       CHECK_AT, max_affected);
	printf("%-30s %6s %7s %7s %7s %8s %7s %7s %7s  %s\n", "fault", "trials", "top-1", "top-3",
	       "top-1@N", "until1st", "found", "false/t", "healthy>", "naive top-1");
	for (int t = 0; t < F_N; t++) {
		struct result r;

		memset(&r, 0, sizeof(r));
		for (unsigned i = 0; i < trials; i++)
			run_trial(&r, &topo, (enum fault_type)t, -1, max_affected, max_jobs,
				  verbose);
		print_row(fault_names[t], &r, max_affected);
		fflush(stdout);
	}
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
	return 0;
}
