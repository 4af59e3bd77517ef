/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_conf: spank_ib.conf(5)'s one parser (helpers/node/conf.c): the
 * plugin's keys and their values, the plugstack arguments, config= files
 * (root-only, no nesting, the tokenizer's spaces and comments), %n
 * expansion and sizes.
 */
#include <errno.h>
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

#include "ibprep/conf.h"

static char *write_tmp(const char *text, mode_t mode)
{
	char *path = strdup("/tmp/test_conf.XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

/* config=PATH through the plugin's entry point (plugstack words). */
static int parse_config(struct ibp_conf *c, const char *path, char *err, size_t errlen)
{
	char pair[PATH_MAX + 16];
	char *av[1] = {pair};

	snprintf(pair, sizeof(pair), "config=%s", path);
	return ibp_conf_parse_args(c, 1, av, "n1", err, errlen);
}

static void test_conf_defaults(void **state)
{
	struct ibp_conf c;

	(void)state;
	ibp_conf_init(&c);
	assert_string_equal(c.sysfs_root, "/");
	assert_string_equal(c.topology, "");
	assert_string_equal(c.cache_dir, "/run/spank-ib");
	assert_true(c.bind);
	assert_false(c.drain);
	assert_false(c.prolog_check);
	assert_int_equal(c.enforce, 0);
	assert_int_equal(c.cache_ttl, 60);
	assert_int_equal(c.test_ports_per_job, 16);
	assert_int_equal(c.results_log_max, 64ull << 20);
	assert_int_equal(c.watch_action, IBP_WATCH_ACTION_REPORT);
	assert_int_equal(c.watch_signal, 15);
	assert_string_equal(c.watch_helper, "");
	assert_int_equal(c.requeue, IBP_REQUEUE_USER);
	assert_int_equal(c.requeue_max, 1);
	assert_int_equal(c.requeue_begin_s, -1);
}

static void test_conf_keys_applied(void **state)
{
	struct ibp_conf c;
	char err[256] = "";
	const char *args[] = {"sysfs_root=/srv/%n/root",
			      "topology=/etc/ibprep/%n.xml",
			      "bind=no",
			      "drain=yes",
			      "prolog_check=yes",
			      "cache_ttl=5",
			      "enforce=check",
			      "link_layer=ib",
			      "results_log_max=1G",
			      "test_ports_per_job=3",
			      "",
			      NULL,
			      "watch_action=end",
			      "watch_signal=USR1",
			      "watch_helper=/opt/spank-ib/watch",
			      "requeue=yes",
			      "requeue_max=3",
			      "requeue_begin=20"};
	char **av = (char **)args;

	(void)state;
	ibp_conf_init(&c);
	assert_int_equal(ibp_conf_parse_args(&c, 18, av, "n1", err, sizeof(err)), 0);
	assert_int_equal(c.watch_action, IBP_WATCH_ACTION_END);
	assert_int_equal(c.watch_signal, 10);
	assert_string_equal(c.watch_helper, "/opt/spank-ib/watch");
	assert_int_equal(c.requeue, IBP_REQUEUE_YES);
	assert_int_equal(c.requeue_max, 3);
	assert_int_equal(c.requeue_begin_s, 20);
	assert_int_equal(c.test_ports_per_job, 3);
	assert_string_equal(c.sysfs_root, "/srv/%n/root");
	assert_string_equal(c.topology, "/etc/ibprep/%n.xml");
	assert_false(c.bind);
	assert_true(c.drain);
	assert_true(c.prolog_check);
	assert_int_equal(c.cache_ttl, 5);
	assert_int_equal(c.enforce, IBP_ENFORCE_CHECK);
	assert_int_equal(c.policy.link_layer, IBP_POLICY_LL_IB);
	assert_int_equal(c.results_log_max, 1ull << 30);
	assert_true(ibp_conf_has_key("drain"));
	assert_false(ibp_conf_has_key("min_rate")); /* a policy key: policy.h's */
}

static const struct {
	const char *arg, *needle;
} bad_args[] = {
    {"colour=blue", "unknown key 'colour'"},
    {"drain=maybe", "bad value 'maybe' for key 'drain'"},
    {"bind=", "key 'bind'"},
    {"cache_ttl=-1", "key 'cache_ttl'"},
    {"cache_ttl=+5", "key 'cache_ttl'"},
    {"cache_ttl=10s", "key 'cache_ttl'"},
    {"cache_ttl=86401", "key 'cache_ttl'"},
    {"cache_ttl=99999999999999999999999", "key 'cache_ttl'"},
    {"sysfs_root=relative/path", "key 'sysfs_root'"},
    {"sysfs_root=", "key 'sysfs_root'"},
    {"topology=/x/%h.xml", "key 'topology'"},
    {"enforce=check,everything", "'everything'"},
    {"results_log_max=1GB", "key 'results_log_max'"},
    {"test_ports_per_job=0", "key 'test_ports_per_job': expected 1 to 1024"},
    {"test_ports_per_job=1025", "key 'test_ports_per_job'"},
    {"test_ports_per_job=-1", "key 'test_ports_per_job'"},
    {"test_ports_per_job=99999999999999999999999", "key 'test_ports_per_job'"},
    {"noequals", "KEY=VALUE"},
    {"=x", "KEY=VALUE"},
    {"link_layer=fibre", "link_layer"},
    {"config=relative.conf", "absolute"},
    {"config=/nonexistent/spank_ib.conf", "/nonexistent/spank_ib.conf"},
    {"watch_action=stop", "key 'watch_action'"},
    {"watch_signal=FOO", "key 'watch_signal'"},
    {"watch_signal=0", "key 'watch_signal'"},
    {"watch_signal=65", "key 'watch_signal'"},
    {"watch_helper=relative", "key 'watch_helper'"},
    {"requeue=maybe", "key 'requeue'"},
    {"requeue_max=101", "key 'requeue_max'"},
    {"requeue_max=-1", "key 'requeue_max'"},
    {"requeue_begin=0", "key 'requeue_begin'"},
    {"requeue_begin=3601", "key 'requeue_begin'"},
};

static void test_conf_bad_args_named(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
		struct ibp_conf c;
		char err[512] = "";
		char *av[1] = {(char *)bad_args[i].arg};

		ibp_conf_init(&c);
		if (ibp_conf_parse_args(&c, 1, av, "n1", err, sizeof(err)) >= 0)
			fail_msg("'%s' accepted", bad_args[i].arg);
		if (!strstr(err, bad_args[i].needle))
			fail_msg("'%s': message '%s' lacks '%s'", bad_args[i].arg, err,
				 bad_args[i].needle);
	}
}

/* spank_ib.conf(5): spaces around key and value, '#' after whitespace only. */
static void test_conf_file_spaces_and_comments(void **state)
{
	char *path = write_tmp("# site policy\n\ndrain = no\n  drain= yes   # comment\n"
			       "\tcache_ttl =7\nmin_rate = 400\nresults_log=/var/log/ib#1.log\n",
			       0644);
	struct ibp_conf c;
	char err[512] = "";

	(void)state;
	ibp_conf_init(&c);
	assert_int_equal(parse_config(&c, path, err, sizeof(err)), 0);
	assert_true(c.drain);
	assert_int_equal(c.cache_ttl, 7);
	assert_true(c.policy.min_rate == 400);
	assert_string_equal(c.results_log, "/var/log/ib#1.log"); /* '#' inside a value */
	assert_string_equal(c.config, path);
	unlink(path);
	free(path);
}

static void test_conf_file_errors_name_file_and_line(void **state)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
	    {"drain=yes\nbogus = 1\n", ":2: unknown key 'bogus'"},
	    {"\n\ndrain=sometimes\n", ":3: bad value 'sometimes' for key 'drain'"},
	    {"min_width = 3\n", ":1: bad value '3' for key 'min_width'"},
	    {"drain\n", ":1: bad line 'drain': expected KEY=VALUE"},
	    {"config=/etc/other.conf\n", ":1: config= does not nest"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = write_tmp(cases[i].text, 0644);
		char want[PATH_MAX + 128], err[PATH_MAX + 256] = "";
		struct ibp_conf c;

		ibp_conf_init(&c);
		snprintf(want, sizeof(want), "%s%s", path, cases[i].needle);
		if (parse_config(&c, path, err, sizeof(err)) >= 0)
			fail_msg("case %zu accepted", i);
		if (!strstr(err, want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, want);
		unlink(path);
		free(path);
	}
}

static void test_conf_file_world_writable_refused(void **state)
{
	char *path = write_tmp("drain=yes\n", 0666);
	struct ibp_conf c;
	char err[512] = "";

	(void)state;
	ibp_conf_init(&c);
	assert_true(parse_config(&c, path, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "writable"));
	assert_false(c.drain);
	/* ibprep check --config (no root-only rule) reads it */
	ibp_conf_init(&c);
	assert_int_equal(ibp_conf_load_file(&c, path, 0, err, sizeof(err)), 0);
	assert_true(c.drain);
	unlink(path);
	free(path);
}

/* Only root may be able to change it: another owner or group write is refused, named. */
static void test_conf_file_not_root_only_refused_with_owner_and_mode(void **state)
{
	struct ibp_conf c;
	char err[1024] = "";
	char *path;

	(void)state;
	if (geteuid() != 0) {
		print_message("skip: not root (chown)\n");
		skip();
	}
	path = write_tmp("drain=yes\n", 0644);
	assert_int_equal(chown(path, 65534, 0), 0);
	ibp_conf_init(&c);
	assert_true(parse_config(&c, path, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "uid 65534"));
	assert_non_null(strstr(err, "mode 0644"));
	assert_false(c.drain);
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(chmod(path, 0664), 0);
	ibp_conf_init(&c);
	assert_true(parse_config(&c, path, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "mode 0664"));
	assert_false(c.drain);
	/* root's 0600: read by root */
	assert_int_equal(chmod(path, 0600), 0);
	ibp_conf_init(&c);
	assert_int_equal(parse_config(&c, path, err, sizeof(err)), 0);
	assert_true(c.drain);
	unlink(path);
	free(path);
}

/* srun/sbatch (no_config_files): config= checked for syntax, never opened. */
static void test_conf_file_not_read_in_local_context(void **state)
{
	struct ibp_conf c;
	char err[512] = "";

	(void)state;
	ibp_conf_init(&c);
	c.no_config_files = true;
	assert_int_equal(parse_config(&c, "/nonexistent/spank_ib.conf", err, sizeof(err)), 0);
	assert_true(parse_config(&c, "relative.conf", err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "absolute"));
}

/* %n in config= is the host given by the caller (the plugin: gethostname). */
static void test_conf_file_path_expanded(void **state)
{
	char dir[] = "/tmp/test_conf_dir.XXXXXX", path[PATH_MAX], pair[PATH_MAX];
	char err[512] = "";
	struct ibp_conf c;
	char *av[1] = {pair};
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/gpu7.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("cache_ttl=9\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0644), 0);
	snprintf(pair, sizeof(pair), "config=%s/%%n.conf", dir);
	ibp_conf_init(&c);
	assert_int_equal(ibp_conf_parse_args(&c, 1, av, "gpu7", err, sizeof(err)), 0);
	assert_int_equal(c.cache_ttl, 9);
	unlink(path);
	rmdir(dir);
}

static void test_conf_load_file_limits(void **state)
{
	struct ibp_conf c;
	char err[512] = "", block[4096];
	char *path;
	FILE *f;

	(void)state;
	ibp_conf_init(&c);
	assert_int_equal(ibp_conf_load_file(&c, "/nonexistent/x.conf", 0, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/x.conf"));
	assert_true(ibp_conf_load_file(&c, "/tmp", 0, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "not a regular file"));
	path = write_tmp("", 0644);
	f = fopen(path, "w");
	assert_non_null(f);
	memset(block, '#', sizeof(block));
	for (int i = 0; i < 17; i++)
		assert_int_equal(fwrite(block, 1, sizeof(block), f), sizeof(block));
	fclose(f);
	assert_int_equal(ibp_conf_load_file(&c, path, 0, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "larger than"));
	unlink(path);
	free(path);
}

static void test_conf_expand_cases(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(ibp_conf_expand("/a/%n/b", "gpu017", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "/a/gpu017/b");
	assert_int_equal(ibp_conf_expand("100%%-%n", "n1", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "100%-n1");
	assert_int_equal(ibp_conf_expand("/r.%j.%n", "n1", "77", out, sizeof(out)), 0);
	assert_string_equal(out, "/r.77.n1");
	assert_int_equal(ibp_conf_expand("/r.%j", "n1", NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(ibp_conf_expand("/r.%", "n1", NULL, out, sizeof(out)), -EINVAL);
	assert_int_equal(
	    ibp_conf_expand("/0123456789012345678901234567/%n", "n1", NULL, out, sizeof(out)),
	    -ENAMETOOLONG);
}

static void test_conf_signal_names(void **state)
{
	static const struct {
		const char *in;
		int rc, sig;
		const char *name;
	} cases[] = {
	    {"TERM", 0, 15, "SIGTERM"},
	    {"SIGUSR1", 0, 10, "SIGUSR1"},
	    {"USR2", 0, 12, "SIGUSR2"},
	    {"9", 0, 9, "SIGKILL"},
	    {"40", 0, 40, "signal 40"},
	    {"0", -EINVAL, 0, NULL},
	    {"65", -EINVAL, 0, NULL},
	    {"TERMX", -EINVAL, 0, NULL},
	    {"", -EINVAL, 0, NULL},
	    {"-1", -EINVAL, 0, NULL},
	    {"999999999999", -EINVAL, 0, NULL},
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int sig = 0;
		char buf[32];

		if (ibp_conf_parse_signal(cases[i].in, &sig) != cases[i].rc)
			fail_msg("'%s': not %d", cases[i].in, cases[i].rc);
		if (cases[i].rc)
			continue;
		assert_int_equal(sig, cases[i].sig);
		assert_string_equal(ibp_conf_signal_name(sig, buf, sizeof(buf)), cases[i].name);
	}
}

static void test_conf_parse_size(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(ibp_conf_parse_size("64M", &v), 0);
	assert_int_equal(v, 64ull << 20);
	assert_int_equal(ibp_conf_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(ibp_conf_parse_size("1G", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(ibp_conf_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(ibp_conf_parse_size("1GB", &v), -EINVAL);
	assert_int_equal(ibp_conf_parse_size("-1", &v), -EINVAL);
	assert_int_equal(ibp_conf_parse_size("", &v), -EINVAL);
	assert_int_equal(ibp_conf_parse_size("99999999999999999999", &v), -EINVAL);
	assert_int_equal(ibp_conf_parse_size("17179869184G", &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conf_defaults),
	    cmocka_unit_test(test_conf_keys_applied),
	    cmocka_unit_test(test_conf_bad_args_named),
	    cmocka_unit_test(test_conf_signal_names),
	    cmocka_unit_test(test_conf_file_spaces_and_comments),
	    cmocka_unit_test(test_conf_file_errors_name_file_and_line),
	    cmocka_unit_test(test_conf_file_world_writable_refused),
	    cmocka_unit_test(test_conf_file_not_root_only_refused_with_owner_and_mode),
	    cmocka_unit_test(test_conf_file_not_read_in_local_context),
	    cmocka_unit_test(test_conf_file_path_expanded),
	    cmocka_unit_test(test_conf_load_file_limits),
	    cmocka_unit_test(test_conf_expand_cases),
	    cmocka_unit_test(test_conf_parse_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
