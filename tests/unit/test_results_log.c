/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the per-link results log (helpers/fabric/results_log.c). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/results_log.h"

static void sample(struct ibp_link_record *r, uint32_t job, bool ok)
{
	memset(r, 0, sizeof(*r));
	r->time = 1764600000 + job;
	r->job = job;
	r->step = 2;
	r->round = 1;
	strcpy(r->by, "n01");
	strcpy(r->a, "n01");
	strcpy(r->b, "n02");
	r->a_rail = r->b_rail = 3;
	strcpy(r->a_dev, "mlx5_3");
	strcpy(r->b_dev, "mlx5_3");
	r->a_port = r->b_port = 1;
	r->status = ok ? IBP_LINK_PASS : IBP_LINK_TIMEOUT;
	r->rtt_us = ok ? 3.14159 : -1;
	r->gbps = ok ? 91.2345 : -1;
}

static void test_results_log_format_parse_round_trip(void **state)
{
	struct ibp_link_record r, back;
	char line[IBP_RESULTS_LOG_MAX_RECORD];
	int n;

	(void)state;
	sample(&r, 812, true);
	n = ibp_results_log_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_int_equal(line[n - 1], '\n');
	assert_non_null(strstr(line, "\"rtt_us\":3.1,"));
	assert_non_null(strstr(line, "\"gbps\":91.23}"));
	assert_int_equal(ibp_results_log_parse_line(line, (size_t)n - 1, &back), 0);
	assert_int_equal(back.job, 812);
	assert_int_equal(back.step, 2);
	assert_int_equal(back.time, r.time);
	assert_string_equal(back.a, "n01");
	assert_string_equal(back.b, "n02");
	assert_int_equal(back.a_rail, 3);
	assert_string_equal(back.b_dev, "mlx5_3");
	assert_int_equal(back.status, IBP_LINK_PASS);

	sample(&r, 9, false);
	n = ibp_results_log_format(&r, line, sizeof(line));
	assert_non_null(strstr(line, "\"rtt_us\":null,\"gbps\":null}"));
	assert_int_equal(ibp_results_log_parse_line(line, (size_t)n - 1, &back), 0);
	assert_non_null(strstr(line, "\"ok\":false,\"why\":\"timed out\""));
	assert_int_equal(back.status, IBP_LINK_TIMEOUT);
	assert_true(back.rtt_us < 0);

	/* Names that could break the line are escaped, and refused on read. */
	strcpy(r.a_dev, "x\"\n}");
	n = ibp_results_log_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_ptr_equal(strchr(line, '\n'), line + n - 1);
	assert_int_equal(ibp_results_log_format(&r, line, 16), -E2BIG);
}

/* A record with JOB, nodes A and B, then REST: lines that differ in one thing. */
#define LINE(job, a, b, rest)                                                                      \
	"{\"v\":1,\"t\":1,\"job\":" job ",\"step\":0,\"a\":\"" a "\",\"b\":\"" b "\"" rest "}"
#define REC(rest) LINE("1", "n1", "n2", rest)
#define PASS      ",\"ok\":true,\"why\":\"pass\""

static const char *bad_lines[] = {
    "",
    "{}",
    "[1,2]",
    REC(",\"why\":\"pass\""), /* no ok */
    REC(",\"ok\":true"),      /* no why */
    LINE("1", "n1", "n1", PASS),
    LINE("-1", "n1", "n2", PASS),
    LINE("1", "n/1", "n2", PASS),
    LINE("1.5", "n1", "n2", PASS),
    REC(",\"ok\":1,\"why\":\"pass\""),
    REC(PASS ",\"x\":{}"),
    REC(PASS) " trailing",
    REC(PASS ",\"gbps\":1e999"),
    /* the outcome: a name of the vocabulary, as written, and "ok" saying the same */
    REC(",\"ok\":false,\"why\":\"timeout\""),
    REC(",\"ok\":false,\"why\":\"Timed out\""),
    REC(",\"ok\":false,\"why\":\"timed out \""),
    REC(",\"ok\":false,\"why\":\"\""),
    REC(",\"ok\":false,\"why\":\"untested\""), /* the writer never writes it */
    REC(",\"ok\":true,\"why\":\"timed out\""),
    REC(",\"ok\":false,\"why\":\"pass\""),
    REC(",\"ok\":false,\"why\":7"),
};

static void test_results_log_bad_lines_refused(void **state)
{
	struct ibp_link_record r;
	const char good[] = REC(PASS ",\"future\":\"key\"");
	const char escaped[] = REC(",\"ok\":false,\"why\":\"data\\u0020corrupted\"");

	(void)state;
	for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		print_message("# %s\n", bad_lines[i]);
		assert_true(ibp_results_log_parse_line(bad_lines[i], strlen(bad_lines[i]), &r) < 0);
	}
	assert_int_equal(ibp_results_log_parse_line(good, strlen(good), &r), 0);
	assert_int_equal(r.status, IBP_LINK_PASS);
	/* JSON's escapes are JSON: the same name */
	assert_int_equal(ibp_results_log_parse_line(escaped, strlen(escaped), &r), 0);
	assert_int_equal(r.status, IBP_LINK_CORRUPT);
}

/*
 * Every outcome a record can carry, through the writer and back through the
 * reader: the same record, its name written as the vocabulary spells it.
 * (The plugin's own path, spank/ib_results.c, is test_spank_results.c.)
 */
static void test_results_log_every_outcome_round_trips(void **state)
{
	(void)state;
	for (int s = 0; s < IBP_LINK_STATUS_COUNT; s++) {
		struct ibp_link_record r, back;
		char line[IBP_RESULTS_LOG_MAX_RECORD], want[64];
		int n;

		sample(&r, 100 + (uint32_t)s, s == IBP_LINK_PASS);
		r.status = (enum ibp_link_status)s;
		n = ibp_results_log_format(&r, line, sizeof(line));
		print_message("# %s", n > 0 ? line : "(refused)\n");
		if (s == IBP_LINK_UNTESTED) {
			assert_int_equal(n, -EINVAL);
			continue;
		}
		assert_true(n > 0);
		snprintf(want, sizeof(want), "\"ok\":%s,\"why\":\"%s\"",
			 s == IBP_LINK_PASS ? "true" : "false", ibp_link_status_name(r.status));
		assert_non_null(strstr(line, want));
		assert_int_equal(ibp_results_log_parse_line(line, (size_t)n - 1, &back), 0);
		assert_int_equal(back.status, s);
		assert_int_equal(back.job, r.job);
		assert_string_equal(back.by, r.by);
		assert_string_equal(back.a_dev, r.a_dev);
	}
	{
		struct ibp_link_record r;
		char line[IBP_RESULTS_LOG_MAX_RECORD];

		sample(&r, 1, false);
		r.status = IBP_LINK_STATUS_COUNT;
		assert_int_equal(ibp_results_log_format(&r, line, sizeof(line)), -EINVAL);
	}
}

/*
 * A port event as the plugin's watcher writes it (spank_ib_watch.c: this
 * node on both ends, the finding code as "why", "ok" false) reads back as
 * written; what is neither an event nor a link is refused both ways.
 */
static void test_results_log_port_event_round_trips(void **state)
{
	struct ibp_link_record r, back;
	char line[IBP_RESULTS_LOG_MAX_RECORD];
	int n;

	(void)state;
	sample(&r, 7, false);
	strcpy(r.b, "n01");
	r.a_rail = r.b_rail = -1;
	r.status = IBP_LINK_UNTESTED;
	strcpy(r.event, "link_went_down");
	n = ibp_results_log_format(&r, line, sizeof(line));
	assert_true(n > 0);
	print_message("# %s", line);
	assert_non_null(strstr(line, "\"ok\":false,\"why\":\"link_went_down\""));
	assert_int_equal(ibp_results_log_parse_line(line, (size_t)n - 1, &back), 0);
	assert_string_equal(back.event, "link_went_down");
	assert_int_equal(back.status, IBP_LINK_UNTESTED);
	assert_string_equal(back.a, "n01");
	assert_string_equal(back.b, "n01");
	assert_string_equal(back.a_dev, "mlx5_3");
	/* a link's outcome between two nodes has no event */
	sample(&r, 8, false);
	n = ibp_results_log_format(&r, line, sizeof(line));
	assert_int_equal(ibp_results_log_parse_line(line, (size_t)n - 1, &back), 0);
	assert_string_equal(back.event, "");
	/* refused: an event between two nodes, a code that is an outcome's name, not a code */
	sample(&r, 9, false);
	strcpy(r.event, "link_went_down");
	assert_int_equal(ibp_results_log_format(&r, line, sizeof(line)), -EINVAL);
	strcpy(r.b, "n01");
	strcpy(r.event, "unreachable");
	assert_int_equal(ibp_results_log_format(&r, line, sizeof(line)), -EINVAL);
	strcpy(r.event, "Link down");
	assert_int_equal(ibp_results_log_format(&r, line, sizeof(line)), -EINVAL);
	{
		static const char *const bad[] = {
		    /* an event's code between two nodes */
		    "{\"v\":1,\"t\":1,\"job\":1,\"step\":0,\"by\":\"n1\",\"a\":\"n1\",\"b\":\"n2\","
		    "\"ok\":false,\"why\":\"link_went_down\"}",
		    /* an event said to be ok */
		    "{\"v\":1,\"t\":1,\"job\":1,\"step\":0,\"by\":\"n1\",\"a\":\"n1\",\"b\":\"n1\","
		    "\"ok\":true,\"why\":\"link_went_down\"}",
		    /* a link's outcome with one node on both ends */
		    "{\"v\":1,\"t\":1,\"job\":1,\"step\":0,\"by\":\"n1\",\"a\":\"n1\",\"b\":\"n1\","
		    "\"ok\":false,\"why\":\"timed out\"}",
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(ibp_results_log_parse_line(bad[i], strlen(bad[i]), &back),
					 -EINVAL);
	}
}

static int count_cb(void *arg, const struct ibp_link_record *r)
{
	(*(size_t *)arg) += r->job;
	return 0;
}

static void test_results_log_cut_record_skipped_with_count(void **state)
{
	struct ibp_link_record r;
	struct ibp_results_log_stats st = {0};
	char l1[IBP_RESULTS_LOG_MAX_RECORD], l2[IBP_RESULTS_LOG_MAX_RECORD];
	char text[4 * IBP_RESULTS_LOG_MAX_RECORD];
	size_t sum = 0;

	(void)state;
	sample(&r, 1, true);
	assert_true(ibp_results_log_format(&r, l1, sizeof(l1)) > 0);
	sample(&r, 10, false);
	assert_true(ibp_results_log_format(&r, l2, sizeof(l2)) > 0);
	/*
	 * Line 1 whole; line 2 cut after 30 bytes (a crash) and the next
	 * writer's record appended to it; then garbage; then a record cut at
	 * the end of the file.
	 */
	snprintf(text, sizeof(text), "%s%.30s%sgarbage\n{\"v\":2}\n%.40s", l1, l2, l2, l2);
	assert_int_equal(ibp_results_log_read_buf(text, strlen(text), count_cb, &sum, &st), 0);
	assert_int_equal(st.records, 2);
	assert_int_equal(sum, 1 + 10);
	assert_int_equal(st.cut, 2);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(st.other_version, 1);
	assert_int_equal(st.lines, 5);
}

struct tmp {
	char dir[64];
	char path[128];
};

static void tmp_make(struct tmp *t)
{
	strcpy(t->dir, "/tmp/test_results_log.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	assert_int_equal(chmod(t->dir, 0755), 0);
	snprintf(t->path, sizeof(t->path), "%s/links.jsonl", t->dir);
}

static void tmp_clean(struct tmp *t)
{
	char p[160];

	unlink(t->path);
	snprintf(p, sizeof(p), "%s.1", t->path);
	unlink(p);
	snprintf(p, sizeof(p), "%s/other", t->dir);
	unlink(p);
	rmdir(t->dir);
}

static size_t file_records(const char *path, struct ibp_results_log_stats *st)
{
	char err[256];

	memset(st, 0, sizeof(*st));
	if (ibp_results_log_read_file(path, NULL, NULL, st, err, sizeof(err)))
		return (size_t)-1;
	return st->records;
}

static void test_results_log_append_and_rotate(void **state)
{
	struct tmp t;
	struct ibp_link_record r[4];
	struct ibp_results_log_stats st;
	char err[256] = "", rotated[160], line[IBP_RESULTS_LOG_MAX_RECORD];
	struct stat sb;
	int len;

	(void)state;
	tmp_make(&t);
	for (int i = 0; i < 4; i++)
		sample(&r[i], (uint32_t)i + 1, i % 2);
	len = ibp_results_log_format(&r[0], line, sizeof(line));
	/* Room for about 6 records: the third append of 4 rotates. */
	uint64_t max = (uint64_t)len * 6 + 10;

	assert_int_equal(ibp_results_log_append(t.path, max, geteuid(), r, 4, err, sizeof(err)), 0);
	assert_int_equal(stat(t.path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	assert_int_equal(file_records(t.path, &st), 4);
	assert_int_equal(ibp_results_log_append(t.path, max, geteuid(), r, 2, err, sizeof(err)), 0);
	assert_int_equal(file_records(t.path, &st), 6);
	assert_int_equal(ibp_results_log_append(t.path, max, geteuid(), r, 4, err, sizeof(err)), 0);
	snprintf(rotated, sizeof(rotated), "%s.1", t.path);
	assert_int_equal(file_records(rotated, &st), 6);
	assert_int_equal(file_records(t.path, &st), 4);
	/* A second rotation replaces the first generation: never more than two files. */
	assert_int_equal(ibp_results_log_append(t.path, max, geteuid(), r, 4, err, sizeof(err)), 0);
	assert_int_equal(file_records(rotated, &st), 4);
	assert_int_equal(file_records(t.path, &st), 4);
	assert_int_equal(st.cut + st.malformed, 0);
	tmp_clean(&t);
}

static void test_results_log_refuses_user_writable_places(void **state)
{
	struct tmp t;
	struct ibp_link_record r;
	char err[256] = "", other[160];
	int fd;

	(void)state;
	if (geteuid() != 0) {
		skip();
		return;
	}
	tmp_make(&t);
	sample(&r, 1, true);

	assert_int_equal(chmod(t.dir, 0777), 0);
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mode 0777"));
	assert_non_null(strstr(err, "not writable by group or others"));
	assert_int_equal(chmod(t.dir, 01777), 0); /* sticky does not make the log's own dir safe */
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(t.dir, 0775), 0);
	assert_int_equal(chown(t.dir, 0, 100), 0);
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mode 0775"));
	/* group root's writing too: rootpath.h's one rule */
	assert_int_equal(chown(t.dir, 0, 0), 0);
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "mode 0775"));
	assert_int_equal(chmod(t.dir, 0755), 0);
	assert_int_equal(chown(t.dir, 65534, 0), 0); /* a user's directory */
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "(uid 65534) with mode 0755"));
	assert_int_equal(chown(t.dir, 0, 0), 0);

	/* The file itself: a symbolic link, someone else's file, a hard link. */
	snprintf(other, sizeof(other), "%s/other", t.dir);
	fd = open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(other, t.path), 0);
	assert_true(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "symbolic link"));
	unlink(t.path);
	assert_int_equal(link(other, t.path), 0);
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "links"));
	unlink(t.path);
	fd = open(t.path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 65534, 65534), 0);
	close(fd);
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "(uid 65534) with mode 0600"));
	unlink(t.path);
	assert_true(ibp_results_log_append("relative/x", 0, 0, &r, 1, err, sizeof(err)) < 0);
	/* A directory on the path that is a symbolic link is refused too. */
	snprintf(other, sizeof(other), "%s/other", t.dir);
	unlink(other);
	assert_int_equal(symlink(t.dir, other), 0);
	snprintf(other, sizeof(other), "%s/other/links.jsonl", t.dir);
	assert_true(ibp_results_log_append(other, 0, 0, &r, 1, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "symbolic link"));
	/* And the healthy case still works. */
	assert_int_equal(ibp_results_log_append(t.path, 0, 0, &r, 1, err, sizeof(err)), 0);
	tmp_clean(&t);
}

static void test_results_log_lock_held_is_bounded(void **state)
{
	struct tmp t;
	struct ibp_link_record r;
	char err[256] = "";
	int fd;

	(void)state;
	tmp_make(&t);
	sample(&r, 1, true);
	assert_int_equal(ibp_results_log_append(t.path, 0, geteuid(), &r, 1, err, sizeof(err)), 0);
	fd = open(t.path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(ibp_results_log_append(t.path, 0, geteuid(), &r, 1, err, sizeof(err)),
			 -EWOULDBLOCK);
	assert_non_null(strstr(err, "locked"));
	close(fd);
	assert_int_equal(ibp_results_log_append(t.path, 0, geteuid(), &r, 1, err, sizeof(err)), 0);
	tmp_clean(&t);
}

/* ---- several files, parsed ahead by threads ---- */

struct seen {
	uint64_t sum; /* of (index + 1) * job: the order matters */
	size_t n, stop_at;
};

static int seen_cb(void *arg, const struct ibp_link_record *r)
{
	struct seen *s = arg;

	s->n++;
	s->sum += (uint64_t)s->n * (r->job + (uint64_t)r->status * 1000003u);
	return s->stop_at && s->n == s->stop_at ? 42 : 0;
}

/* File I of the set: many records, and the reader's hard cases. */
static void write_set_file(const char *path, int i)
{
	FILE *fp = fopen(path, "w");
	char line[IBP_RESULTS_LOG_MAX_RECORD];
	size_t many = i == 1 ? 9000 : i == 3 ? 1 : 700; /* file 1 wraps a thread's ring twice */

	assert_non_null(fp);
	for (size_t k = 0; k < many; k++) {
		struct ibp_link_record r;

		sample(&r, (uint32_t)(i * 100000 + k), k % 7 != 0);
		if (k % 7 == 0)
			r.status = (enum ibp_link_status)(2 + k % 11);
		assert_true(ibp_results_log_format(&r, line, sizeof(line)) > 0);
		fputs(line, fp);
		if (k == 5 && i != 3) {
			fputs("garbage\n{\"v\":2}\n", fp);
			fprintf(fp, "%.30s%s", line, line); /* a cut record, then a good one */
			for (int j = 0; j < 70000; j++)     /* a line too long to keep */
				fputc('x', fp);
			fputc('\n', fp);
		}
	}
	if (i == 2)
		fprintf(fp, "%.40s", line); /* cut at the end of the file */
	fclose(fp);
}

static void test_results_log_read_files_threads_same(void **state)
{
	char dir[] = "/tmp/test_results_log_files.XXXXXX", paths[5][96], err[256];
	const char *p[5];
	struct ibp_results_log_stats one = {0};
	struct seen s1 = {0};

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 5; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/n%d.jsonl", dir, i);
		write_set_file(paths[i], i);
		p[i] = paths[i];
	}
	assert_int_equal(ibp_results_log_read_files(p, 5, 1, seen_cb, &s1, &one, err, sizeof(err)),
			 0);
	assert_int_equal(one.records, 700 * 3 + 9000 + 1 + 4);
	assert_int_equal(one.cut, 4 + 1);
	assert_int_equal(one.malformed, 4 + 4);
	assert_int_equal(one.other_version, 4);
	for (unsigned threads = 2; threads <= 6; threads += 2) {
		struct ibp_results_log_stats st = {0};
		struct seen s = {0};

		print_message("# %u threads\n", threads);
		assert_int_equal(
		    ibp_results_log_read_files(p, 5, threads, seen_cb, &s, &st, err, sizeof(err)),
		    0);
		assert_int_equal(s.n, s1.n);
		assert_true(s.sum == s1.sum); /* the same records in the same order */
		assert_memory_equal(&st, &one, sizeof(st));
	}
	/* the callback stops it, at the same record, whatever the threads */
	for (unsigned threads = 1; threads <= 3; threads++) {
		struct ibp_results_log_stats st = {0};
		struct seen s = {.stop_at = 9500};

		assert_int_equal(
		    ibp_results_log_read_files(p, 5, threads, seen_cb, &s, &st, err, sizeof(err)),
		    42);
		assert_int_equal(s.n, 9500);
	}
	/* a file that cannot be read stops it, naming the file */
	unlink(paths[2]);
	for (unsigned threads = 1; threads <= 3; threads++) {
		struct ibp_results_log_stats st = {0};
		struct seen s = {0};

		err[0] = '\0';
		assert_int_equal(
		    ibp_results_log_read_files(p, 5, threads, seen_cb, &s, &st, err, sizeof(err)),
		    -ENOENT);
		assert_non_null(strstr(err, paths[2]));
		assert_int_equal(s.n, 700 + 9000 + 2); /* files 0 and 1 were read */
	}
	for (int i = 0; i < 5; i++)
		unlink(paths[i]);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_results_log_format_parse_round_trip),
	    cmocka_unit_test(test_results_log_bad_lines_refused),
	    cmocka_unit_test(test_results_log_every_outcome_round_trips),
	    cmocka_unit_test(test_results_log_port_event_round_trips),
	    cmocka_unit_test(test_results_log_cut_record_skipped_with_count),
	    cmocka_unit_test(test_results_log_append_and_rotate),
	    cmocka_unit_test(test_results_log_refuses_user_writable_places),
	    cmocka_unit_test(test_results_log_lock_held_is_bounded),
	    cmocka_unit_test(test_results_log_read_files_threads_same),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
