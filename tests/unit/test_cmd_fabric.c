/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the fabric method (helpers/fabric/fabric.c) and of `ibprep fabric`
 * (helpers/ibprep_fabric.c) on generated logs whose answer is known: a
 * small fat tree of 4 leaves x 6 nodes, 2 rails, a stream of steps that run
 * the ring + second-shift plan, and one or two injected faults.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../helpers/ibprep_cmd.h"
#include "ibprep/fabric.h"
#include "ibprep/results_log.h"
#include "ibprep/topology_conf.h"

#define LEAVES 4
#define PER    6
#define NODES  (LEAVES * PER)
#define RAILS  2

static const char topo_text[] = "SwitchName=spine Switches=leaf[1-4]\n"
				"SwitchName=leaf1 Nodes=n[00-05]\n"
				"SwitchName=leaf2 Nodes=n[06-11]\n"
				"SwitchName=leaf3 Nodes=n[12-17]\n"
				"SwitchName=leaf4 Nodes=n[18-23]\n";

/* What fails: a link a->b on RAIL.  Deterministic, no randomness needed. */
struct scenario {
	int dead_node;  /* -1 none */
	int cable_node; /* -1 none */
	int cable_rail;
	int uplinks_leaf; /* -1 none: every link leaving this leaf fails (rail UPLINKS_RAIL) */
	int uplinks_rail;
};

static const struct scenario none = {-1, -1, -1, -1, -1};

static bool fails(const struct scenario *s, int a, int b, int rail)
{
	bool cross = a / PER != b / PER;

	if (a == s->dead_node || b == s->dead_node)
		return true;
	if (rail == s->cable_rail && (a == s->cable_node || b == s->cable_node))
		return true;
	if (cross && rail == s->uplinks_rail &&
	    (a / PER == s->uplinks_leaf || b / PER == s->uplinks_leaf))
		return true;
	return false;
}

static void rec(struct ibp_link_record *r, int by, int a, int b, int rail, bool ok, uint32_t job,
		int64_t t)
{
	memset(r, 0, sizeof(*r));
	r->time = t;
	r->job = job;
	r->round = 1;
	snprintf(r->by, sizeof(r->by), "n%02d", by);
	snprintf(r->a, sizeof(r->a), "n%02d", a);
	snprintf(r->b, sizeof(r->b), "n%02d", b);
	r->a_rail = r->b_rail = rail;
	snprintf(r->a_dev, sizeof(r->a_dev), "mlx5_%d", rail);
	snprintf(r->b_dev, sizeof(r->b_dev), "mlx5_%d", rail);
	r->a_port = r->b_port = 1;
	r->status = ok ? IBP_LINK_PASS : IBP_LINK_TIMEOUT;
	r->rtt_us = ok ? 2.5 : -1;
	r->gbps = ok ? 190 : -1;
}

/*
 * Steps of SIZE nodes starting at every offset (jobs 1..), each link
 * written by both ends, as JSON lines into FP (and into FAB when set).
 */
static void gen(const struct scenario *s, FILE *fp, struct ibp_fabric *fab, int size, int64_t t0)
{
	uint32_t job = 1;

	for (int first = 0; first + size <= NODES; first += size / 2, job++) {
		for (int i = 0; i < size; i++) {
			for (int shift = 1; shift <= 2 && shift < size; shift++) {
				int a = first + i, b = first + (i + shift) % size;

				if (size == 2 && shift == 1 && i == 1)
					continue; /* a 2-node step tests one pair */
				for (int rail = 0; rail < RAILS; rail++) {
					struct ibp_link_record r;
					bool ok = !fails(s, a, b, rail);
					char line[IBP_RESULTS_LOG_MAX_RECORD];

					for (int end = 0; end < 2; end++) {
						int by = end ? b : a;

						if (by == s->dead_node)
							continue; /* a dead node writes nothing */
						rec(&r, by, a, b, rail, ok, job, t0 + job * 60);
						if (fab)
							assert_int_equal(ibp_fabric_add(fab, &r),
									 0);
						if (fp) {
							int n = ibp_results_log_format(
							    &r, line, sizeof(line));

							assert_true(n > 0);
							fwrite(line, 1, (size_t)n, fp);
						}
					}
				}
			}
		}
	}
}

static struct ibp_topology topo;

static int setup(void **state)
{
	char err[256];

	(void)state;
	return ibp_topology_parse_conf(&topo, topo_text, strlen(topo_text), "t", err, sizeof(err));
}

static int teardown(void **state)
{
	(void)state;
	ibp_topology_release(&topo);
	return 0;
}

static const struct ibp_fabric_part *solve(struct ibp_fabric *f, size_t *n, size_t *suspects)
{
	const struct ibp_fabric_part *parts;

	assert_int_equal(ibp_fabric_solve(f, &parts, n), 0);
	assert_int_equal(ibp_fabric_evidence(f, *n), 0);
	*suspects = 0;
	for (size_t i = 0; i < *n; i++) {
		print_message("#   %zu %s %s p=%.3f a=%.1f s=%.1f peers=%u %s\n", i + 1,
			      parts[i].name, ibp_part_verdict_name(parts[i].verdict),
			      parts[i].p_fail, parts[i].attributed, parts[i].surprise,
			      parts[i].peers_fail, parts[i].reason);
		*suspects += parts[i].verdict == IBP_PART_SUSPECT;
	}
	return parts;
}

/* What each scenario's first suspects must also show. */
static void dead_node_more(const struct ibp_fabric_part *p, size_t n)
{
	(void)n;
	/* its peers' word only (it writes nothing): half a failed link per record */
	assert_true(p[0].p_fail > 0.85);
	assert_true(p[0].links_fail >= 16);
	assert_true(p[0].peers_fail >= 4);
	assert_int_equal(p[0].reporters, p[0].peers_fail);
	assert_int_equal(p[0].days, 2);
	assert_int_equal(p[0].days_fail, 2);
	assert_true(p[0].jobs_fail >= 2);
	assert_true(p[0].links_pass == 0);
	assert_true(p[0].kinds[IBP_LINK_TIMEOUT] >= 32);
}

static void bad_cable_more(const struct ibp_fabric_part *p, size_t n)
{
	assert_string_equal(p[0].device, "mlx5_1");
	/* Both ends of the cable: the node's other rail passes, so not the node. */
	for (size_t i = 0; i < n; i++)
		assert_string_not_equal(p[i].name, "n14");
}

static void uplinks_more(const struct ibp_fabric_part *p, size_t n)
{
	assert_string_equal(p[0].sw, "leaf3");
	for (size_t i = 0; i < n; i++)
		if (p[i].verdict == IBP_PART_SUSPECT)
			assert_true(p[i].kind == IBP_PART_UPLINKS);
}

#define DAY 86400

/*
 * Generated fabrics (gen(): steps of two sizes, from two start times) and
 * the suspects ibprep fabric must name, in this order (NAMES: either order).
 */
static const struct {
	const char *name;
	struct scenario s;
	int sizes[2];
	int64_t second_after; /* seconds from the first steps to the second */
	size_t suspects;
	bool at_least; /* SUSPECTS or more */
	const char *names[2];
	int kind; /* of the first, or -1 */
	void (*more)(const struct ibp_fabric_part *p, size_t n);
} scenarios[] = {
    {"a dead node is the node",
     {9, -1, -1, -1, -1},
     {6, 8},
     DAY,
     1,
     false,
     {"n09", NULL},
     IBP_PART_NODE,
     dead_node_more},
    {"a bad cable is the cable, not the node",
     {-1, 14, 1, -1, -1},
     {6, 8},
     0,
     1,
     false,
     {"n14 rail 1", NULL},
     IBP_PART_CABLE,
     bad_cable_more},
    {"lossy uplinks are the leaf's uplinks",
     {-1, -1, -1, 2 /* leaf3: n12..n17 */, 0},
     {8, 12},
     0,
     1,
     true,
     {"leaf3 uplinks rail 0", NULL},
     IBP_PART_UPLINKS,
     uplinks_more},
    {"two faults at once, both named",
     {3, -1, -1, 3 /* leaf4 */, 1},
     {8, 12},
     0,
     2,
     false,
     {"n03", "leaf4 uplinks rail 1"},
     -1,
     NULL},
    {"a healthy fabric has no suspect",
     {-1, -1, -1, -1, -1},
     {8, 0},
     0,
     0,
     false,
     {NULL, NULL},
     -1,
     NULL},
};

static void test_fabric_scenarios_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		struct ibp_fabric *f;
		const struct ibp_fabric_part *p;
		const char *const *want = scenarios[i].names;
		size_t n, sus;

		print_message("# %s\n", scenarios[i].name);
		assert_int_equal(ibp_fabric_new(&f, &topo, NULL), 0);
		gen(&scenarios[i].s, NULL, f, scenarios[i].sizes[0], 1764547200);
		if (scenarios[i].sizes[1])
			gen(&scenarios[i].s, NULL, f, scenarios[i].sizes[1],
			    1764547200 + scenarios[i].second_after);
		p = solve(f, &n, &sus);
		if (scenarios[i].at_least ? sus < scenarios[i].suspects
					  : sus != scenarios[i].suspects)
			fail_msg("%s: %zu suspects, want %s%zu", scenarios[i].name, sus,
				 scenarios[i].at_least ? ">= " : "", scenarios[i].suspects);
		if (!scenarios[i].suspects)
			assert_int_equal(n, 0);
		if (want[0] && want[1])
			assert_true((!strcmp(p[0].name, want[0]) && !strcmp(p[1].name, want[1])) ||
				    (!strcmp(p[1].name, want[0]) && !strcmp(p[0].name, want[1])));
		else if (want[0])
			assert_string_equal(p[0].name, want[0]);
		if (scenarios[i].kind >= 0)
			assert_int_equal(p[0].kind, scenarios[i].kind);
		if (scenarios[i].more)
			scenarios[i].more(p, n);
		ibp_fabric_free(f);
	}
}

/* A link A->B on RAIL, written by both of its ends (the plugin's way). */
static void both_ends(struct ibp_fabric *f, int a, int b, int rail, bool ok, uint32_t job,
		      int64_t t)
{
	struct ibp_link_record r;

	rec(&r, a, a, b, rail, ok, job, t);
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	rec(&r, b, a, b, rail, ok, job, t);
	assert_int_equal(ibp_fabric_add(f, &r), 0);
}

/* Records that blame no part: too little to tell which end, too little traffic, one word. */
static void not_enough_one_sided(struct ibp_fabric *f)
{
	/* Two-node steps n04-n05 that always fail: which end is bad cannot be told. */
	for (uint32_t job = 1; job <= 12; job++)
		for (int rail = 0; rail < RAILS; rail++) {
			both_ends(f, 4, 5, rail, false, job, 1764547200 + job);
			both_ends(f, 0, 1, rail, true, job, 1764547200 + job);
		}
}

static void not_enough_little_traffic(struct ibp_fabric *f)
{
	both_ends(f, 0, 1, 0, false, 1, 1764547200);
	both_ends(f, 0, 2, 0, false, 1, 1764547200);
}

static void not_enough_one_word(struct ibp_fabric *f)
{
	struct ibp_link_record r;

	/* n07 says its links to n08 and n09 failed; nobody else says anything */
	for (uint32_t job = 1; job <= 12; job++) {
		rec(&r, 7, 7, 8 + (int)(job % 2), 0, false, job, 1764547200 + job);
		assert_int_equal(ibp_fabric_add(f, &r), 0);
	}
}

static const struct {
	void (*records)(struct ibp_fabric *f);
	const char *reason;
} not_enough[] = {
    {not_enough_one_sided, "node(s) only"},
    {not_enough_little_traffic, "links crossed it"},
    {not_enough_one_word, "one end's word with no second reporter"},
};

static void test_fabric_not_enough_evidence_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(not_enough) / sizeof(not_enough[0]); i++) {
		struct ibp_fabric *f;
		const struct ibp_fabric_part *p;
		size_t n, sus;

		assert_int_equal(ibp_fabric_new(&f, &topo, NULL), 0);
		not_enough[i].records(f);
		p = solve(f, &n, &sus);
		assert_int_equal(sus, 0);
		assert_true(n >= 1);
		assert_int_equal(p[0].verdict, IBP_PART_NOT_ENOUGH);
		if (!strstr(p[0].reason, not_enough[i].reason))
			fail_msg("case %zu: '%s' lacks '%s'", i, p[0].reason, not_enough[i].reason);
		ibp_fabric_free(f);
	}
}

/* The failures the plugin writes that are the fabric's (oob.h's vocabulary). */
static const enum ibp_link_status fabric_kinds[] = {
    IBP_LINK_UNREACHABLE, IBP_LINK_TIMEOUT,  IBP_LINK_TRANSPORT, IBP_LINK_CORRUPT,
    IBP_LINK_BW_LOW,      IBP_LINK_LAT_HIGH, IBP_LINK_GONE,
};

/*
 * How records are weighed (docs/fabric.md): half a link each; a failure
 * both ends report is a failed link, one end's word alone half of one and
 * only with a second reporter behind it; a record about a link its writer
 * is not an end of, and an outcome about the test itself, count for nothing.
 */
static void test_fabric_records_weighed(void **state)
{
	struct ibp_fabric *f;
	struct ibp_link_record r;
	struct ibp_fabric_stats st;
	const struct ibp_fabric_part *p;
	size_t n;

	(void)state;
	assert_int_equal(ibp_fabric_new(&f, &topo, NULL), 0);
	/* job 7: n00 says passed, n01 failed: half a pass, half a failure on n01's word */
	rec(&r, 0, 0, 1, 0, true, 7, 1764547200);
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	rec(&r, 1, 0, 1, 0, false, 7, 1764547200);
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	/* job 8: n01's word alone */
	rec(&r, 1, 0, 1, 0, false, 8, 1764547200);
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	/* about the test, not the fabric: left out (fabric.c's not_fabric) */
	r.status = IBP_LINK_AUTH;
	r.job = 10;
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	r.status = IBP_LINK_VERSION; /* another spank-ib build: nothing tested */
	r.job = 11;
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	r.status = IBP_LINK_PROTOCOL;
	r.job = 12;
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	r.status = IBP_LINK_LOCAL;
	r.job = 13;
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	/* every other failure is one the fabric made: a lossy link's too (n01's word) */
	for (size_t i = 0; i < sizeof(fabric_kinds) / sizeof(fabric_kinds[0]); i++) {
		r.status = fabric_kinds[i];
		r.job = 20 + (uint32_t)i;
		assert_int_equal(ibp_fabric_add(f, &r), 0);
	}
	/* n05 about n00 -> n01: not its link, so not its word */
	rec(&r, 5, 0, 1, 0, false, 30, 1764547200);
	assert_int_equal(ibp_fabric_add(f, &r), 0);
	/* job 31: both ends say n02 -> n03 failed: a failed link */
	both_ends(f, 2, 3, 0, false, 31, 1764547200);
	ibp_fabric_get_stats(f, &st);
	assert_int_equal(st.records, 17);
	assert_int_equal(st.not_fabric, 4);
	assert_int_equal(st.not_own, 1);
	assert_int_equal(st.failures, 11);
	assert_true(st.links == 6.0);
	assert_int_equal(ibp_fabric_solve(f, &p, &n), 0);
	ibp_fabric_get_stats(f, &st);
	assert_true(st.confirmed == 1.0);
	assert_true(st.unconfirmed == 4.5);
	/* n01's word about n00's side, with no second reporter: left out */
	assert_true(st.discounted == 4.5);
	assert_true(st.failed == 1.0);
	ibp_fabric_free(f);
}

/*
 * One reporter floods failures about healthy nodes (issue 26: a job owner
 * could plant records): its links to nine nodes of three leaves on every
 * rail, over 40 jobs, and links between other nodes.  Their own records
 * say those links passed, or they wrote none (their logs not given).  No
 * part is a suspect, and the flood is left out, as the stats say.
 */
static void test_fabric_one_reporter_flood_no_suspect(void **state)
{
	(void)state;
	for (int their_word = 0; their_word < 2; their_word++) {
		struct ibp_fabric *f;
		struct ibp_link_record r;
		struct ibp_fabric_stats st;
		const struct ibp_fabric_part *p;
		size_t n, sus;

		print_message("# the flooded nodes %s\n",
			      their_word ? "say passed" : "say nothing");
		assert_int_equal(ibp_fabric_new(&f, &topo, NULL), 0);
		gen(&none, NULL, f, 8, 1764547200);
		gen(&none, NULL, f, 12, 1764547200 + DAY);
		for (uint32_t job = 100; job < 140; job++)
			for (int x = 6; x < NODES; x += 2)
				for (int rail = 0; rail < RAILS; rail++) {
					int64_t t = 1764547200 + (job - 100) * 3600;

					rec(&r, 3, 3, x, rail, false, job, t);
					assert_int_equal(ibp_fabric_add(f, &r), 0);
					rec(&r, 3, x, 3, rail, false, job, t);
					assert_int_equal(ibp_fabric_add(f, &r), 0);
					rec(&r, 3, x, x - 1, rail, false, job,
					    t); /* not its link */
					assert_int_equal(ibp_fabric_add(f, &r), 0);
					if (!their_word)
						continue;
					rec(&r, x, 3, x, rail, true, job, t);
					assert_int_equal(ibp_fabric_add(f, &r), 0);
					rec(&r, x, x, 3, rail, true, job, t);
					assert_int_equal(ibp_fabric_add(f, &r), 0);
				}
		p = solve(f, &n, &sus);
		ibp_fabric_get_stats(f, &st);
		assert_int_equal(sus, 0);
		for (size_t i = 0; i < n; i++)
			assert_int_not_equal(p[i].verdict, IBP_PART_SUSPECT);
		assert_int_equal(st.not_own, 40 * 9 * RAILS);
		assert_true(st.discounted == st.unconfirmed);
		assert_true(st.discounted == 40 * 9 * RAILS);
		ibp_fabric_free(f);
	}
}

/* ---- the command ---- */

struct tmp {
	char dir[64], log[128], log2[128], topo[128], out[128];
};

static void tmp_make(struct tmp *t)
{
	FILE *fp;

	strcpy(t->dir, "/tmp/test_cmd_fabric.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->log, sizeof(t->log), "%s/a.jsonl", t->dir);
	snprintf(t->log2, sizeof(t->log2), "%s/b.jsonl", t->dir);
	snprintf(t->topo, sizeof(t->topo), "%s/topology.conf", t->dir);
	snprintf(t->out, sizeof(t->out), "%s/out", t->dir);
	fp = fopen(t->topo, "w");
	assert_non_null(fp);
	fputs(topo_text, fp);
	fclose(fp);
}

static void tmp_clean(struct tmp *t)
{
	unlink(t->log);
	unlink(t->log2);
	unlink(t->topo);
	unlink(t->out);
	rmdir(t->dir);
}

/* Runs ibprep fabric with ARGV (NULL-terminated), stdout to T->out; returns its status. */
static int run(struct tmp *t, const char *const *args, char *out, size_t outlen)
{
	int argc = 0, saved, fd, rc;
	char *argv[16];
	FILE *fp;
	size_t n;

	while (args[argc] && argc < 15) {
		argv[argc] = strdup(args[argc]);
		assert_non_null(argv[argc]);
		argc++;
	}
	argv[argc] = NULL;
	fflush(stdout);
	saved = dup(1);
	fd = open(t->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, 1);
	close(fd);
	rc = ibprep_cmd_fabric(argc, argv);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	fp = fopen(t->out, "r");
	assert_non_null(fp);
	n = fread(out, 1, outlen - 1, fp);
	out[n] = '\0';
	fclose(fp);
	return rc;
}

static void test_cmd_fabric_names_the_uplinks_from_two_logs(void **state)
{
	struct tmp t;
	struct scenario s = none;
	static char out[1 << 16];
	FILE *fp;

	(void)state;
	tmp_make(&t);
	s.uplinks_leaf = 1; /* leaf2 */
	s.uplinks_rail = 1;
	fp = fopen(t.log, "w");
	assert_non_null(fp);
	gen(&s, fp, NULL, 8, 1764547200);
	fputs("{\"v\":1,\"t\":17645", fp); /* a record cut by a crash */
	fclose(fp);
	fp = fopen(t.log2, "w");
	assert_non_null(fp);
	gen(&s, fp, NULL, 12, 1764547200 + 86400);
	fclose(fp);

	const char *argv[] = {"fabric", "--topology", t.topo, "--json", t.log, t.log2, NULL};
	assert_int_equal(run(&t, argv, out, sizeof(out)), 1);
	print_message("%.2000s\n", out);
	assert_non_null(strstr(out, "\"cut\": 1"));
	char *first = strstr(out, "\"part\": ");
	assert_non_null(first);
	assert_int_equal(strncmp(first, "\"part\": \"leaf2 uplinks rail 1\"", 30), 0);
	assert_non_null(strstr(out, "\"kind\": \"uplinks\""));
	assert_non_null(strstr(out, "\"verdict\": \"suspect\""));
	assert_non_null(strstr(out, "\"days\": 2"));

	/* The table says the same; --since leaves the first day out. */
	const char *argv2[] = {"fabric",           "-t",  t.topo, "--since",
			       "2025-12-01T12:00", t.log, t.log2, NULL};
	assert_int_equal(run(&t, argv2, out, sizeof(out)), 1);
	print_message("%s\n", out);
	assert_non_null(strstr(out, "leaf2 uplinks rail 1"));
	assert_non_null(strstr(out, "SUSPECT"));
	assert_non_null(strstr(out, "before --since"));

	/* Without the topology it can only name nodes and cables (docs/fabric.md). */
	const char *argv3[] = {"fabric", "--json", t.log, t.log2, NULL};
	assert_int_not_equal(run(&t, argv3, out, sizeof(out)), 2);
	assert_null(strstr(out, "uplinks"));
	assert_non_null(strstr(out, "\"topology\": null"));
	tmp_clean(&t);
}

/*
 * Issue 28's acceptance: a log holding one record of each outcome a record
 * can carry (written by the library's writer, as the plugin writes them):
 * nothing malformed, every fabric failure counted, the rest left out.
 * (One node's log: its failures are its word alone, weighed as such.)
 */
static void test_cmd_fabric_every_outcome_read(void **state)
{
	struct tmp t;
	static char out[1 << 16];
	char want[64];
	size_t failures = 0, setup;
	FILE *fp;

	(void)state;
	tmp_make(&t);
	fp = fopen(t.log, "w");
	assert_non_null(fp);
	for (int s = 0; s < IBP_LINK_STATUS_COUNT; s++) {
		struct ibp_link_record r;
		char line[IBP_RESULTS_LOG_MAX_RECORD];
		int n;

		if (s == IBP_LINK_UNTESTED)
			continue; /* never written: the writer refuses it */
		rec(&r, 0, 0, 1 + s, 0, s == IBP_LINK_PASS, 1 + (uint32_t)s, 1764547200);
		r.status = (enum ibp_link_status)s;
		n = ibp_results_log_format(&r, line, sizeof(line));
		assert_true(n > 0);
		fwrite(line, 1, (size_t)n, fp);
		failures += s != IBP_LINK_PASS;
	}
	{
		/* and a port event, as the plugin's watcher writes it: read, left out */
		struct ibp_link_record r;
		char line[IBP_RESULTS_LOG_MAX_RECORD];
		int n;

		rec(&r, 0, 0, 0, 0, false, 99, 1764547200);
		snprintf(r.b, sizeof(r.b), "%s", r.a);
		snprintf(r.by, sizeof(r.by), "%s", r.a);
		r.status = IBP_LINK_UNTESTED;
		snprintf(r.event, sizeof(r.event), "link_went_down");
		n = ibp_results_log_format(&r, line, sizeof(line));
		assert_true(n > 0);
		fwrite(line, 1, (size_t)n, fp);
	}
	fclose(fp);
	/* the failures that are not the fabric's: about the test itself */
	setup = failures - sizeof(fabric_kinds) / sizeof(fabric_kinds[0]);
	assert_int_equal(setup, 4);
	const char *argv[] = {"fabric", "--json", t.log, NULL};
	assert_int_not_equal(run(&t, argv, out, sizeof(out)), 2);
	print_message("%.1200s\n", out);
	assert_non_null(strstr(out, "\"malformed\": 0,"));
	assert_non_null(strstr(out, "\"cut\": 0,"));
	snprintf(want, sizeof(want), "\"records\": %d,", IBP_LINK_STATUS_COUNT);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "\"port_events\": 1,"));
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), "\"failures\": %zu,", failures - setup);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), "\"not_fabric\": %zu,", setup);
	assert_non_null(strstr(out, want));
	tmp_clean(&t);
}

static void test_cmd_fabric_bad_input_exit_2(void **state)
{
	struct tmp t;
	static char out[4096];
	FILE *fp;

	(void)state;
	tmp_make(&t);
	const char *a1[] = {"fabric", NULL};
	assert_int_equal(run(&t, a1, out, sizeof(out)), 2);
	const char *a2[] = {"fabric", "/nonexistent/log", NULL};
	assert_int_equal(run(&t, a2, out, sizeof(out)), 2);
	const char *a3[] = {"fabric", "--since", "yesterday", t.log, NULL};
	assert_int_equal(run(&t, a3, out, sizeof(out)), 2);
	fp = fopen(t.topo, "w");
	assert_non_null(fp);
	fputs("SwitchName=s1 Nodes=n[5-1]\n", fp);
	fclose(fp);
	fp = fopen(t.log, "w");
	assert_non_null(fp);
	fclose(fp);
	const char *a4[] = {"fabric", "--topology", t.topo, t.log, NULL};
	assert_int_equal(run(&t, a4, out, sizeof(out)), 2);
	/* An empty log is not an error: nothing to explain. */
	const char *a5[] = {"fabric", t.log, NULL};
	assert_int_equal(run(&t, a5, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "no part has failures"));
	tmp_clean(&t);
}

/* ---- a rail's switch: 64 nodes of 8 rails (issue 30) ---- */

#define FLEET       64
#define FLEET_RAILS 8

static const char fleet_topo_text[] = "SwitchName=core Switches=l[1-4]\n"
				      "SwitchName=l1 Nodes=g[00-15]\n"
				      "SwitchName=l2 Nodes=g[16-31]\n"
				      "SwitchName=l3 Nodes=g[32-47]\n"
				      "SwitchName=l4 Nodes=g[48-63]\n";

/* What fails in the fleet, link a->b on RAIL of JOB: by a hash, so the same every run. */
struct fleet {
	int bad_rail;     /* -1 none: this rail fails RAIL_LOSS of its links on every node */
	double rail_loss; /* 0.3 */
	int cable_node;   /* -1 none: this node's port on CABLE_RAIL fails every link */
	int cable_rail;
	double noise; /* every link fails this often, for no fault */
};

static double fleet_draw(int a, int b, int rail, uint32_t job, uint32_t salt)
{
	uint64_t z = ((uint64_t)a << 48) ^ ((uint64_t)b << 32) ^ ((uint64_t)rail << 24) ^
		     ((uint64_t)job << 4) ^ salt;

	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

static bool fleet_fails(const struct fleet *s, int a, int b, int rail, uint32_t job)
{
	if (rail == s->bad_rail && fleet_draw(a, b, rail, job, 1) < s->rail_loss)
		return true;
	if (rail == s->cable_rail && (a == s->cable_node || b == s->cable_node))
		return true;
	return fleet_draw(a, b, rail, job, 2) < s->noise;
}

/* Link a->b on RAIL of JOB at T, written by both ends into FAB and, when FP is set, FP. */
static void fleet_link(const struct fleet *s, struct ibp_fabric *fab, FILE *fp, int a, int b,
		       int rail, uint32_t job, int64_t t)
{
	bool ok = !fleet_fails(s, a, b, rail, job);

	for (int end = 0; end < 2; end++) {
		struct ibp_link_record r;
		char line[IBP_RESULTS_LOG_MAX_RECORD];
		int n;

		rec(&r, end ? b : a, a, b, rail, ok, job, t);
		r.by[0] = r.a[0] = r.b[0] = 'g';
		if (fab)
			assert_int_equal(ibp_fabric_add(fab, &r), 0);
		if (!fp)
			continue;
		n = ibp_results_log_format(&r, line, sizeof(line));
		assert_true(n > 0);
		fwrite(line, 1, (size_t)n, fp);
	}
}

/*
 * Three days of steps of 8 and of 16 nodes at every half-step offset, the
 * ring and second shift on every rail, both ends writing.
 */
static void fleet_gen(const struct fleet *s, struct ibp_fabric *fab, FILE *fp)
{
	uint32_t job = 1;

	for (int day = 0; day < 3; day++)
		for (int size = 8; size <= 16; size += 8)
			for (int first = 0; first + size <= FLEET; first += size / 2, job++)
				for (int i = 0; i < size * 2 * FLEET_RAILS; i++) {
					int node = i / (2 * FLEET_RAILS);
					int shift = 1 + (i / FLEET_RAILS) % 2,
					    rail = i % FLEET_RAILS;

					fleet_link(s, fab, fp, first + node,
						   first + (node + shift) % size, rail, job,
						   1764547200 + day * DAY + job * 60);
				}
}

/*
 * Rail 3 failing 30% of its links on every node of 64, the other seven
 * rails passing (a 0.2% background on all): rail 3 is ranked first, as a
 * rail, with its device and its evidence, and no node or cable is a
 * suspect; with and without the topology.
 */
static void test_fabric_bad_rail_switch_ranked_first(void **state)
{
	struct fleet s = {3, 0.3, -1, -1, 0.002};
	struct ibp_topology ft;
	char err[256];

	(void)state;
	assert_int_equal(ibp_topology_parse_conf(&ft, fleet_topo_text, strlen(fleet_topo_text), "t",
						 err, sizeof(err)),
			 0);
	for (int with_topo = 0; with_topo < 2; with_topo++) {
		struct ibp_fabric *f;
		const struct ibp_fabric_part *p;
		size_t n, suspects;

		print_message("# %s the topology\n", with_topo ? "with" : "without");
		assert_int_equal(ibp_fabric_new(&f, with_topo ? &ft : NULL, NULL), 0);
		fleet_gen(&s, f, NULL);
		p = solve(f, &n, &suspects);
		assert_true(n >= 1);
		assert_int_equal(suspects, 1);
		assert_int_equal(p[0].kind, IBP_PART_RAIL);
		assert_string_equal(p[0].name, "rail 3");
		assert_int_equal(p[0].verdict, IBP_PART_SUSPECT);
		assert_int_equal(p[0].rail, 3);
		assert_string_equal(p[0].device, "mlx5_3");
		assert_int_equal(p[0].port, 1);
		/* its failed share beyond the other rails' */
		assert_true(p[0].p_fail > 0.1 && p[0].p_fail < 0.4);
		/* the evidence: many nodes, none of them most of it; the other rails pass */
		assert_true(p[0].peers_fail >= 48);
		assert_true(p[0].node_fail < 0.1 * p[0].links_fail);
		assert_true(p[0].links_fail > 0.2 * (p[0].links_fail + p[0].links_pass));
		assert_true(p[0].others_pass > 6 * p[0].links_pass);
		assert_true(p[0].others_fail < 0.01 * (p[0].others_fail + p[0].others_pass));
		assert_true(p[0].jobs_fail >= 30);
		assert_int_equal(p[0].days_fail, 3);
		ibp_fabric_free(f);
	}
	ibp_topology_release(&ft);
}

/*
 * One node's port on rail 3 failing every link (the rest of the fleet
 * healthy but for the background): that node's port, never the rail's
 * switch; and a healthy fleet: nothing, and no rail listed.
 */
static void test_fabric_one_port_not_a_rail_switch(void **state)
{
	struct fleet cable = {-1, 0, 17, 3, 0.002}, healthy = {-1, 0, -1, -1, 0.002};
	struct ibp_fabric *f;
	const struct ibp_fabric_part *p;
	size_t n, suspects;

	(void)state;
	assert_int_equal(ibp_fabric_new(&f, NULL, NULL), 0);
	fleet_gen(&cable, f, NULL);
	p = solve(f, &n, &suspects);
	assert_int_equal(suspects, 1);
	assert_string_equal(p[0].name, "g17 rail 3");
	assert_int_equal(p[0].kind, IBP_PART_CABLE);
	assert_string_equal(p[0].device, "mlx5_3");
	for (size_t i = 0; i < n; i++)
		if (p[i].kind == IBP_PART_RAIL)
			assert_int_not_equal(p[i].verdict, IBP_PART_SUSPECT);
	ibp_fabric_free(f);

	assert_int_equal(ibp_fabric_new(&f, NULL, NULL), 0);
	fleet_gen(&healthy, f, NULL);
	p = solve(f, &n, &suspects);
	assert_int_equal(suspects, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(p[i].kind, IBP_PART_RAIL);
	ibp_fabric_free(f);
}

/* `ibprep fabric` names the rail's switch, its evidence and the fix, in the table and --json. */
static void test_cmd_fabric_names_the_rail_switch(void **state)
{
	struct fleet s = {5, 0.3, -1, -1, 0.002};
	struct tmp t;
	static char out[1 << 17];
	FILE *fp;

	(void)state;
	tmp_make(&t);
	fp = fopen(t.log, "w");
	assert_non_null(fp);
	fleet_gen(&s, NULL, fp);
	fclose(fp);

	const char *argv[] = {"fabric", "--json", t.log, NULL};
	assert_int_equal(run(&t, argv, out, sizeof(out)), 1);
	print_message("%.2500s\n", out);
	char *first = strstr(out, "\"part\": ");
	assert_non_null(first);
	assert_int_equal(strncmp(first, "\"part\": \"rail 5\"", 16), 0);
	assert_non_null(strstr(first, "\"kind\": \"rail\""));
	assert_non_null(strstr(first, "\"device\": \"mlx5_5\""));
	assert_non_null(strstr(first, "\"other_rails_links_passed\": "));
	assert_non_null(strstr(first, "\"nodes_failed\": "));
	assert_non_null(strstr(first, "\"fix\": \"check rail 5's switch"));

	const char *argv2[] = {"fabric", t.log, NULL};
	assert_int_equal(run(&t, argv2, out, sizeof(out)), 1);
	print_message("%s\n", out);
	assert_non_null(strstr(out, "rail 5 (mlx5_5 port 1): "));
	assert_non_null(strstr(out, "check rail 5's switch"));
	tmp_clean(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fabric_scenarios_table),
	    cmocka_unit_test(test_fabric_not_enough_evidence_table),
	    cmocka_unit_test(test_fabric_records_weighed),
	    cmocka_unit_test(test_fabric_one_reporter_flood_no_suspect),
	    cmocka_unit_test(test_fabric_bad_rail_switch_ranked_first),
	    cmocka_unit_test(test_fabric_one_port_not_a_rail_switch),
	    cmocka_unit_test(test_cmd_fabric_names_the_uplinks_from_two_logs),
	    cmocka_unit_test(test_cmd_fabric_every_outcome_read),
	    cmocka_unit_test(test_cmd_fabric_names_the_rail_switch),
	    cmocka_unit_test(test_cmd_fabric_bad_input_exit_2),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
