/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_drain_now.c: spank_ib_drain_now (ib_watch.c), the job
 * prolog's drain through the watcher run once, with this binary as the
 * watcher (watch_helper=, root's in a root-only directory).  Run as the
 * watcher, it checks what the plugin gave it: its arguments (this host, the
 * NodeName, the reason, the Slurm library the plugin runs, SLURM_CONF of
 * the plugin's process, the parent), an environment of PATH and LC_ALL
 * alone, "/" as its directory, uid 0 without any capability and with
 * no_new_privs; then answers as the reason asks: drained, Slurm's refusal,
 * nothing, bytes that are no answer, or never (killed at the 5 s bound).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../spank/spank_ib.h"
#include "ibprep/deadline.h"

extern char **environ;

static char self_path[PATH_MAX];

/* The symbol the plugin's dladdr finds the Slurm library by: this binary. */
int slurm_kill_job_step(void);
int slurm_kill_job_step(void)
{
	return 0;
}

/* ---- the watcher's side ---- */

static const char *arg_of(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], key, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
	return NULL;
}

/* "CapEff:\t0000000000000000" and "NoNewPrivs:\t1" from proc/self/status. */
static int privileges_dropped(void)
{
	char line[256];
	int ok = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strcmp(line, "CapEff:\t0000000000000000\n") ||
		    !strcmp(line, "CapPrm:\t0000000000000000\n") ||
		    !strcmp(line, "NoNewPrivs:\t1\n"))
			ok++;
	}
	fclose(f);
	return ok == 3;
}

static int watcher_main(int argc, char **argv)
{
	const char *reason = arg_of(argc, argv, "--reason"), *node = arg_of(argc, argv, "--node");
	const char *lib = arg_of(argc, argv, "--slurm-library");
	const char *conf = arg_of(argc, argv, "--slurm-conf");
	const char *parent = arg_of(argc, argv, "--parent"), *host = arg_of(argc, argv, "--host");
	char cwd[PATH_MAX], want_parent[32];
	size_t nenv = 0;
	bool env_ok = true;

	for (char **e = environ; *e; e++, nenv++)
		if (strncmp(*e, "PATH=", 5) && strcmp(*e, "LC_ALL=C"))
			env_ok = false;
	snprintf(want_parent, sizeof(want_parent), "%d", (int)getppid());
	if (argc != 8 || !reason || !node || !host || strcmp(host, "gpu-7") || !lib ||
	    strcmp(lib, self_path) || !conf || strcmp(conf, "/etc/slurm/drain-now.conf") ||
	    !parent || strcmp(parent, want_parent)) {
		printf("X\t1\tthe plugin's arguments are not what it should give\n");
		return 2;
	}
	if (!env_ok || nenv != 2 || !getcwd(cwd, sizeof(cwd)) || strcmp(cwd, "/") ||
	    getuid() != 0 || geteuid() != 0 || !privileges_dropped()) {
		printf("X\t1\tnot the process the plugin should start\n");
		return 2;
	}
	if (strstr(reason, "mode-refused")) {
		printf("X\t1\tdraining %s failed: Unable to contact slurm controller (connect "
		       "failure)\n",
		       node);
		return 2;
	}
	if (strstr(reason, "mode-silent"))
		return 0;
	if (strstr(reason, "mode-junk")) {
		printf("D\t1\t\nD\t\nQ\t1\tdrained\n\x1b[2J garbage\n");
		return 0;
	}
	if (strstr(reason, "mode-hang"))
		for (;;)
			pause();
	/* "mode-ok": drained; a control byte in the answer reaches the log escaped */
	printf("S\t1\tstarting\nD\t1\t%s\x1b\n", node[0] ? node : "n-from-conf");
	return 0;
}

/* ---- the plugin's side ---- */

static struct spank_ib_state st;

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr,
			"# not root: the one-shot's uid 0 without capabilities needs root\n");
		return -1;
	}
	memset(&st, 0, sizeof(st));
	snprintf(st.host, sizeof(st.host), "gpu-7");
	snprintf(st.conf.watch_helper, sizeof(st.conf.watch_helper), "%s", self_path);
	setenv("SLURM_CONF", "/etc/slurm/drain-now.conf", 1);
	return 0;
}

static int drain(const char *node, const char *reason, char *drained, char *what)
{
	return spank_ib_drain_now(&st, node, reason, drained, 64, what, 512);
}

static void test_drained(void **state)
{
	char drained[64], what[512];

	(void)state;
	assert_int_equal(drain("gpu-7", "spank-ib: mlx5_4 port 1: mode-ok", drained, what), 0);
	assert_string_equal(drained, "gpu-7\\x1b");
	assert_string_equal(what, "");
	/* no NodeName from the plugin: the one-shot's own */
	assert_int_equal(drain("", "spank-ib: mlx5_4 port 1: mode-ok", drained, what), 0);
	assert_string_equal(drained, "n-from-conf\\x1b");
}

static void test_not_drained(void **state)
{
	char drained[64], what[512];

	(void)state;
	assert_int_equal(drain("gpu-7", "spank-ib: mode-refused", drained, what), -EIO);
	assert_string_equal(drained, "");
	assert_string_equal(
	    what, "draining gpu-7 failed: Unable to contact slurm controller (connect failure)");
	/* nothing said at all: the helper runner's own words */
	assert_int_equal(drain("gpu-7", "spank-ib: mode-silent", drained, what), -ECHILD);
	assert_non_null(strstr(what, "exited with status 0 without a result"));
	/* an empty "D", a line of another kind, a control sequence: no drain */
	assert_int_equal(drain("gpu-7", "spank-ib: mode-junk", drained, what), -EIO);
	assert_string_equal(drained, "");
	assert_non_null(strstr(what, "did not say it drained"));
}

static void test_hung_drain_bounded(void **state)
{
	char drained[64], what[512];
	int64_t t0 = ibp_now_ns();
	double took;

	(void)state;
	assert_int_equal(drain("gpu-7", "spank-ib: mode-hang", drained, what), -ETIMEDOUT);
	took = (double)(ibp_now_ns() - t0) / 1e9;
	print_message("# a hung drain: %s (%.2f s)\n", what, took);
	assert_true(took >= 4.9 && took < 8);
	assert_non_null(strstr(what, "the prolog's drain did not finish in 5.0 s"));
	assert_string_equal(drained, "");
}

static void test_no_watcher(void **state)
{
	char drained[64], what[512];

	(void)state;
	snprintf(st.conf.watch_helper, sizeof(st.conf.watch_helper), "/nonexistent/spank-ib-watch");
	assert_int_equal(drain("gpu-7", "spank-ib: mode-ok", drained, what), -ENOENT);
	assert_non_null(strstr(what, "/nonexistent/spank-ib-watch"));
	snprintf(st.conf.watch_helper, sizeof(st.conf.watch_helper), "%s", self_path);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drained),
	    cmocka_unit_test(test_not_drained),
	    cmocka_unit_test(test_no_watcher),
	    cmocka_unit_test(test_hung_drain_bounded),
	};

	if (!realpath("/proc/self/exe", self_path))
		return 1;
	/* dladdr names the main program by its argv[0]: the plugin wants a full path */
	if (argv[0][0] != '/') {
		argv[0] = self_path;
		execv(self_path, argv);
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "--drain-now=yes"))
		return watcher_main(argc, argv);
	return cmocka_run_group_tests(tests, setup, NULL);
}
