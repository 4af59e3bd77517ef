/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_cmd_config: one config file, two readers.  Every line of the table
 * goes into a file read by the plugin (config=FILE on its plugstack line, in
 * slurmstepd's context, through the fake spank_* calls) and by `ibprep
 * check --config FILE`: both load it, or both refuse it with the same
 * message (spank_ib.conf(5); issue 28).
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../helpers/ibprep_cmd.h"
#include "../../spank/spank_ib.h"
#include "fake_spank.h"

int slurm_spank_init(spank_t sp, int ac, char **av);

static const struct {
	const char *text;
	const char *refused; /* NULL: loaded; else how the message both give starts (after FILE) */
} lines[] = {
    {"drain = yes\nmin_rate = 400\n", NULL},
    {"drain= yes\n", NULL},
    {"drain =yes\n", NULL},
    {"  drain=yes   # drain on node faults\n\n# a comment\n", NULL},
    {"\tmin_speed = NDR\r\nexpect_hcas = 8\n", NULL},
    {"results_log = /var/log/spank-ib/links#1.log\n", NULL}, /* '#' inside a value */
    {"enforce = check,affinity\ncache_ttl = 0\n", NULL},
    {"link_layer=ib#x\n", ":1: bad value 'ib#x' for key 'link_layer'"},
    {"drain = maybe\n", ":1: bad value 'maybe' for key 'drain'"},
    {"\nbogus = 1\n", ":2: unknown key 'bogus'"},
    {"drain\n", ":1: bad line 'drain': expected KEY=VALUE"},
    {"cache_ttl = 10s\n", ":1: bad value '10s' for key 'cache_ttl'"},
    {"min_width = 3\n", ":1: bad value '3' for key 'min_width'"},
    {"sysfs_root = relative\n", ":1: bad value 'relative' for key 'sysfs_root'"},
    {"config = /etc/ibprep/other.conf\n", ":1: config= does not nest"},
};

static char dir[] = "/tmp/test_cmd_config.XXXXXX";
static char empty[PATH_MAX], sys[PATH_MAX + 8];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return -1;
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	if (mkdir(empty, 0755))
		return -1;
	/* a sysfs tree with nothing in it: a root without sys/ is refused */
	snprintf(sys, sizeof(sys), "%s/sys", empty);
	return mkdir(sys, 0755);
}

static int teardown(void **state)
{
	(void)state;
	rmdir(sys);
	rmdir(empty);
	rmdir(dir);
	return 0;
}

/* ibprep check --config PATH: its exit status, its first stderr line in ERR. */
static int ibprep_check(const char *path, char *err, size_t len)
{
	char f_out[PATH_MAX], f_err[PATH_MAX];
	char a0[] = "check", a1[] = "--sysfs-root", a3[] = "--config";
	char *argv[] = {a0, a1, empty, a3, (char *)path, NULL};
	int save_out = dup(1), save_err = dup(2), fo, fe, rc;
	FILE *f;

	snprintf(f_out, sizeof(f_out), "%s/out", dir);
	snprintf(f_err, sizeof(f_err), "%s/err", dir);
	fo = open(f_out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fe = open(f_err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(save_out >= 0 && save_err >= 0 && fo >= 0 && fe >= 0);
	fflush(stdout);
	fflush(stderr);
	dup2(fo, 1);
	dup2(fe, 2);
	rc = ibprep_cmd_check(5, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(save_out, 1);
	dup2(save_err, 2);
	close(save_out);
	close(save_err);
	close(fo);
	close(fe);
	err[0] = '\0';
	f = fopen(f_err, "r");
	assert_non_null(f);
	if (!fgets(err, (int)len, f))
		err[0] = '\0';
	fclose(f);
	err[strcspn(err, "\n")] = '\0';
	unlink(f_out);
	unlink(f_err);
	return rc;
}

static void test_same_lines_same_verdict(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		/* the plugin reads root's files only; the files here are the test's */
		print_message("skip: not root (the plugin refuses a file that is not root's)\n");
		skip();
	}
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char path[PATH_MAX], pair[PATH_MAX + 16], err[PATH_MAX + 512], want[PATH_MAX + 128];
		char *av[1] = {pair};
		bool plugin_ok, cmd_ok;
		FILE *f;
		int rc;

		snprintf(path, sizeof(path), "%s/spank_ib.conf", dir);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(lines[i].text, f);
		fclose(f);
		assert_int_equal(chmod(path, 0644), 0);

		/* the plugin in slurmstepd: plugstack.conf's config=PATH */
		fake_spank_reset();
		fake.ctx = S_CTX_REMOTE;
		snprintf(pair, sizeof(pair), "config=%s", path);
		assert_int_equal(slurm_spank_init(NULL, 1, av), 0);
		plugin_ok = spank_ib_state()->conf_ok;

		/* the command */
		rc = ibprep_check(path, err, sizeof(err));
		cmd_ok = rc != 2;
		if (plugin_ok != cmd_ok)
			fail_msg("line %zu: the plugin %s it, ibprep check %s it (exit %d: %s)", i,
				 plugin_ok ? "loads" : "refuses", cmd_ok ? "loads" : "refuses", rc,
				 err);
		if (plugin_ok != !lines[i].refused)
			fail_msg("line %zu: %s, expected %s", i, plugin_ok ? "loaded" : "refused",
				 lines[i].refused ? "refused" : "loaded");
		if (!lines[i].refused) {
			assert_int_equal(fake.n_msgs, 0);
		} else {
			const char *msg = strncmp(err, "ibprep check: ", 14) ? err : err + 14;

			snprintf(want, sizeof(want), "%s%s", path, lines[i].refused);
			if (strncmp(msg, want, strlen(want)) != 0)
				fail_msg("line %zu: ibprep check says '%s', expected '%s'", i, err,
					 want);
			if (fake_spank_msgs_with(msg) != 1)
				fail_msg("line %zu: the plugin does not say '%s' (%d messages: %s)",
					 i, msg, fake.n_msgs, fake.n_msgs ? fake.msgs[0] : "");
		}
		unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_lines_same_verdict),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
