/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_cmd_args.c: the one option parser of ibprep (helpers/ibprep_args.c)
 * over every subcommand's real table: each value option in both spellings
 * ("--opt=V", "--opt V"), each flag, short letters, operands interleaved,
 * "--", the errors, re-parsing, and the help generated from the table.
 */
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

static const struct ibprep_cmd_spec *const specs[] = {
    &ibprep_check_spec,    &ibprep_place_spec,    &ibprep_env_spec,    &ibprep_exec_spec,
    &ibprep_rdmatest_spec, &ibprep_snapshot_spec, &ibprep_fabric_spec, &ibprep_watch_spec,
};
#define N_SPECS (sizeof(specs) / sizeof(specs[0]))

/* Runs the parser over a NULL-terminated argv; results[] gets each return
 * value (up to and including END/HELP/ERROR), values[] the values. */
struct parse {
	int rc[16];
	const char *val[16];
	size_t n;
	char **command;
};

static void parse(const struct ibprep_cmd_spec *spec, char **argv, struct parse *p)
{
	struct ibprep_args a;
	int argc = 0;

	while (argv[argc])
		argc++;
	memset(p, 0, sizeof(*p));
	/* the parser prints the help and errors: keep them out of the TAP stream */
	fflush(stdout);
	fflush(stderr);
	int out = dup(1), err = dup(2);
	FILE *null = fopen("/dev/null", "w");
	assert_non_null(null);
	dup2(fileno(null), 1);
	dup2(fileno(null), 2);
	ibprep_args_init(&a, spec, argc, argv);
	for (;;) {
		int rc = ibprep_args_next(&a);
		assert_true(p->n < 16);
		p->rc[p->n] = rc;
		p->val[p->n] = a.value;
		p->n++;
		if (rc == IBPREP_ARGS_END || rc == IBPREP_ARGS_HELP || rc == IBPREP_ARGS_ERROR)
			break;
	}
	p->command = a.command;
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(err, 2);
	close(out);
	close(err);
	fclose(null);
}

static void tables_are_sound(void **state)
{
	(void)state;
	for (size_t s = 0; s < N_SPECS; s++) {
		const struct ibprep_opt *o = specs[s]->opts;
		size_t n = 0;

		for (; o[n].name; n++) {
			assert_true(o[n].id > 0);
			assert_non_null(o[n].help);
			assert_string_not_equal(o[n].name, "help");
			assert_true(o[n].letter != 'h');
			for (size_t k = 0; k < n; k++) {
				if (!strcmp(o[k].name, o[n].name) || o[k].id == o[n].id ||
				    (o[k].letter && o[k].letter == o[n].letter))
					fail_msg("%s: --%s and --%s clash", specs[s]->name,
						 o[k].name, o[n].name);
			}
		}
		assert_true(n > 0 && n <= IBPREP_ARGS_MAX_OPTS);
	}
}

/* Every value option of every subcommand: "--opt=V" and "--opt V" give the same. */
static void both_spellings_everywhere(void **state)
{
	(void)state;
	for (size_t s = 0; s < N_SPECS; s++) {
		const struct ibprep_cmd_spec *spec = specs[s];

		for (const struct ibprep_opt *o = spec->opts; o->name; o++) {
			char joined[128], flag[96], eqv[128];
			struct parse p1, p2;

			snprintf(flag, sizeof(flag), "--%s", o->name);
			if (!o->arg) {
				char *argv[] = {(char *)spec->name, flag, NULL};
				parse(spec, argv, &p1);
				assert_int_equal(p1.n, 2);
				assert_int_equal(p1.rc[0], o->id);
				assert_null(p1.val[0]);
				assert_int_equal(p1.rc[1], IBPREP_ARGS_END);
				snprintf(eqv, sizeof(eqv), "--%s=yes", o->name);
				char *bad[] = {(char *)spec->name, eqv, NULL};
				parse(spec, bad, &p2);
				assert_int_equal(p2.rc[p2.n - 1], IBPREP_ARGS_ERROR);
				continue;
			}
			snprintf(joined, sizeof(joined), "--%s=v-%s", o->name, o->name);
			snprintf(eqv, sizeof(eqv), "v-%s", o->name);
			char *a1[] = {(char *)spec->name, joined, NULL};
			char *a2[] = {(char *)spec->name, flag, eqv, NULL};
			parse(spec, a1, &p1);
			parse(spec, a2, &p2);
			if (p1.n != 2 || p2.n != 2 || p1.rc[0] != o->id || p2.rc[0] != o->id)
				fail_msg("ibprep %s --%s: %d/%d vs %d/%d", spec->name, o->name,
					 p1.rc[0], (int)p1.n, p2.rc[0], (int)p2.n);
			assert_string_equal(p1.val[0], eqv);
			assert_string_equal(p2.val[0], eqv);
			/* without its value: an error, never the next argument swallowed silently */
			char *a3[] = {(char *)spec->name, flag, NULL};
			parse(spec, a3, &p1);
			assert_int_equal(p1.rc[p1.n - 1], IBPREP_ARGS_ERROR);
			if (o->letter) { /* -rV and -r V */
				char shortj[96], shortf[4] = {'-', o->letter, 0, 0};
				snprintf(shortj, sizeof(shortj), "-%cv-%s", o->letter, o->name);
				char *a4[] = {(char *)spec->name, shortj, NULL};
				char *a5[] = {(char *)spec->name, shortf, eqv, NULL};
				parse(spec, a4, &p1);
				parse(spec, a5, &p2);
				assert_int_equal(p1.rc[0], o->id);
				assert_int_equal(p2.rc[0], o->id);
				assert_string_equal(p1.val[0], eqv);
				assert_string_equal(p2.val[0], eqv);
			}
		}
	}
}

static void operands_interleave(void **state)
{
	char *argv[] = {(char *)"check",        (char *)"a=1", (char *)"--json", (char *)"b=2",
			(char *)"--sysfs-root", (char *)"/x",  (char *)"c=3",    NULL};
	struct parse p;

	(void)state;
	parse(&ibprep_check_spec, argv, &p);
	assert_int_equal(p.n, 6);
	assert_int_equal(p.rc[0], IBPREP_ARGS_OPERAND);
	assert_string_equal(p.val[0], "a=1");
	assert_int_not_equal(p.rc[1], IBPREP_ARGS_OPERAND);
	assert_null(p.val[1]);
	assert_int_equal(p.rc[2], IBPREP_ARGS_OPERAND);
	assert_string_equal(p.val[2], "b=2");
	assert_string_equal(p.val[3], "/x");
	assert_string_equal(p.val[4], "c=3");
	assert_int_equal(p.rc[5], IBPREP_ARGS_END);
}

static void dashdash(void **state)
{
	char *exec[] = {(char *)"exec", (char *)"--json", (char *)"k=v", (char *)"--",
			(char *)"prog", (char *)"--json", (char *)"x",   NULL};
	char *exec_empty[] = {(char *)"exec", (char *)"--json", (char *)"--", NULL};
	char *exec_none[] = {(char *)"exec", (char *)"--json", NULL};
	char *check[] = {(char *)"check", (char *)"--", (char *)"--json", NULL};
	struct parse p;

	(void)state;
	parse(&ibprep_exec_spec, exec, &p);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.rc[1], IBPREP_ARGS_OPERAND);
	assert_int_equal(p.rc[2], IBPREP_ARGS_END);
	assert_non_null(p.command);
	assert_string_equal(p.command[0], "prog");
	assert_string_equal(p.command[1], "--json");
	assert_string_equal(p.command[2], "x");
	assert_null(p.command[3]);
	parse(&ibprep_exec_spec, exec_empty, &p);
	assert_non_null(p.command);
	assert_null(p.command[0]);
	parse(&ibprep_exec_spec, exec_none, &p);
	assert_null(p.command);
	/* elsewhere "--" ends the options and the rest are operands */
	parse(&ibprep_check_spec, check, &p);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.rc[0], IBPREP_ARGS_OPERAND);
	assert_string_equal(p.val[0], "--json");
	assert_null(p.command);
}

static void errors_and_help(void **state)
{
	char *unknown[] = {(char *)"place", (char *)"--frobnicate", NULL};
	char *shortunk[] = {(char *)"check", (char *)"-z", NULL};
	char *help[] = {(char *)"env", (char *)"a=b", (char *)"--help", (char *)"--frobnicate",
			NULL};
	char *h[] = {(char *)"snapshot", (char *)"-h", NULL};
	char *prefix[] = {(char *)"place", (char *)"--topo=/t.xml", NULL};
	struct parse p;

	(void)state;
	parse(&ibprep_place_spec, unknown, &p);
	assert_int_equal(p.rc[p.n - 1], IBPREP_ARGS_ERROR);
	parse(&ibprep_check_spec, shortunk, &p);
	assert_int_equal(p.rc[p.n - 1], IBPREP_ARGS_ERROR);
	parse(&ibprep_env_spec, help, &p);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.rc[1], IBPREP_ARGS_HELP);
	parse(&ibprep_snapshot_spec, h, &p);
	assert_int_equal(p.rc[0], IBPREP_ARGS_HELP);
	/* getopt_long's unambiguous prefixes, as before */
	parse(&ibprep_place_spec, prefix, &p);
	assert_true(p.rc[0] > 0);
	assert_string_equal(p.val[0], "/t.xml");
}

/* A second parse in the same process starts from the beginning. */
static void reparse(void **state)
{
	char *a[] = {(char *)"check", (char *)"--sysfs-root=/a", (char *)"x=1", NULL};
	char *b[] = {(char *)"check", (char *)"--json", NULL};
	struct parse p;

	(void)state;
	parse(&ibprep_check_spec, a, &p);
	parse(&ibprep_check_spec, b, &p);
	assert_int_equal(p.n, 2);
	assert_true(p.rc[0] > 0);
	assert_int_equal(p.rc[1], IBPREP_ARGS_END);
}

/* The help names every option of the table, and no line passes 79 columns. */
static void help_from_table(void **state)
{
	(void)state;
	for (size_t s = 0; s < N_SPECS; s++) {
		char *buf = NULL, why[256] = "";
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_non_null(f);
		ibprep_usage(specs[s], f);
		assert_int_equal(fclose(f), 0);
		for (const struct ibprep_opt *o = specs[s]->opts; o->name && !why[0]; o++) {
			char want[96];
			snprintf(want, sizeof(want), "--%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
			if (!strstr(buf, want))
				snprintf(why, sizeof(why), "--help lacks '%s'", want);
		}
		if (!why[0] && !strstr(buf, "--help"))
			snprintf(why, sizeof(why), "--help lacks itself");
		for (char *line = buf; *line && !why[0];) {
			size_t n = strcspn(line, "\n");
			if (n > 79)
				snprintf(why, sizeof(why), "%zu columns: %.*s", n, (int)n, line);
			line += n + (line[n] == '\n');
		}
		free(buf);
		if (why[0])
			fail_msg("ibprep %s: %s", specs[s]->name, why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tables_are_sound),    cmocka_unit_test(both_spellings_everywhere),
	    cmocka_unit_test(operands_interleave), cmocka_unit_test(dashdash),
	    cmocka_unit_test(errors_and_help),     cmocka_unit_test(reparse),
	    cmocka_unit_test(help_from_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
