/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_glue: the plugin's option parsing (also called twice),
 * environment precedence and enforce=, the verdict cache, and the context
 * dispatch of the slurm_spank_* symbols, against the link-time fake of
 * spank_* (the plugstack arguments' parser is conf.h's: test_conf.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <slurm/slurm.h>

#include "../../spank/spank_ib.h"
#include "fake_spank.h"
#include "support/fixture.h"

int slurm_spank_init(spank_t sp, int ac, char **av);
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av);
int slurm_spank_user_init(spank_t sp, int ac, char **av);
int slurm_spank_task_init(spank_t sp, int ac, char **av);
int slurm_spank_exit(spank_t sp, int ac, char **av);

static int setup(void **state)
{
	(void)state;
	fake_spank_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	slurm_spank_exit(NULL, 0, NULL);
	fake_spank_reset();
	return 0;
}

/* ---- options ---- */

static const struct {
	enum spank_ib_opt which;
	const char *arg;
	int rc;
	int value; /* the field after parsing, when rc == 0 */
} opt_cases[] = {
    {SPANK_IB_OPT_CHECK, NULL, 0, SPANK_IB_CHECK_FAIL},
    {SPANK_IB_OPT_CHECK, "", 0, SPANK_IB_CHECK_FAIL},
    {SPANK_IB_OPT_CHECK, "(null)", 0, SPANK_IB_CHECK_FAIL}, /* sbatch forwards a bare option so */
    {SPANK_IB_OPT_CHECK, "fail", 0, SPANK_IB_CHECK_FAIL},
    {SPANK_IB_OPT_CHECK, "warn", 0, SPANK_IB_CHECK_WARN},
    {SPANK_IB_OPT_CHECK, "off", 0, SPANK_IB_CHECK_OFF},
    {SPANK_IB_OPT_CHECK, "FAIL", -EINVAL, 0},
    {SPANK_IB_OPT_CHECK, "failx", -EINVAL, 0},
    {SPANK_IB_OPT_AFFINITY, NULL, 0, SPANK_IB_AFF_ON},
    {SPANK_IB_OPT_AFFINITY, "verbose", 0, SPANK_IB_AFF_VERBOSE},
    {SPANK_IB_OPT_AFFINITY, "off", 0, SPANK_IB_AFF_OFF},
    {SPANK_IB_OPT_AFFINITY, "1", -EINVAL, 0},
    {SPANK_IB_OPT_ENV, NULL, 0, SPANK_IB_ENV_ON},
    {SPANK_IB_OPT_ENV, "force", 0, SPANK_IB_ENV_FORCE},
    {SPANK_IB_OPT_ENV, "off", 0, SPANK_IB_ENV_OFF},
    {SPANK_IB_OPT_ENV, "forced", -EINVAL, 0},
    {SPANK_IB_OPT_REPORT, NULL, 0, SPANK_IB_REPORT_TEXT},
    {SPANK_IB_OPT_REPORT, "json", 0, SPANK_IB_REPORT_JSON},
    {SPANK_IB_OPT_REPORT, "text:/tmp/r.%n", 0, SPANK_IB_REPORT_TEXT},
    {SPANK_IB_OPT_REPORT, "json:", -EINVAL, 0},
    {SPANK_IB_OPT_REPORT, "xml", -EINVAL, 0},
    {SPANK_IB_OPT_REPORT, "off:x", -EINVAL, 0},
    {SPANK_IB_OPT_TEST, NULL, 0, SPANK_IB_TEST_FULL}, /* every rail by default */
    {SPANK_IB_OPT_TEST, "full", 0, SPANK_IB_TEST_FULL},
    {SPANK_IB_OPT_TEST, "quick", 0, SPANK_IB_TEST_QUICK},
    {SPANK_IB_OPT_TEST, "on", 0, SPANK_IB_TEST_FULL},
    {SPANK_IB_OPT_TEST, "slow", -EINVAL, 0},
    {SPANK_IB_OPT_WATCH, NULL, 0, IBP_WATCH_ACTION_END},
    {SPANK_IB_OPT_WATCH, "report", 0, IBP_WATCH_ACTION_REPORT},
    {SPANK_IB_OPT_WATCH, "end", 0, IBP_WATCH_ACTION_END},
    {SPANK_IB_OPT_WATCH, "default", -EINVAL, 0},
    {SPANK_IB_OPT_WATCH, "off", -EINVAL, 0},
    {SPANK_IB_OPT_REQUEUE, NULL, 0, 1},
    {SPANK_IB_OPT_REQUEUE, "yes", 0, 1},
    {SPANK_IB_OPT_REQUEUE, "no", 0, 0},
    {SPANK_IB_OPT_REQUEUE, "maybe", -EINVAL, 0},
};

static int opt_value(const struct spank_ib_opts *o, enum spank_ib_opt w)
{
	switch (w) {
	case SPANK_IB_OPT_CHECK:
		return o->check;
	case SPANK_IB_OPT_AFFINITY:
		return o->affinity;
	case SPANK_IB_OPT_ENV:
		return o->env;
	case SPANK_IB_OPT_REPORT:
		return o->report;
	case SPANK_IB_OPT_TEST:
		return o->test;
	case SPANK_IB_OPT_WATCH:
		return o->watch;
	case SPANK_IB_OPT_REQUEUE:
		return o->requeue;
	default:
		return -1;
	}
}

static void test_opt_parse_table_matches(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(opt_cases) / sizeof(opt_cases[0]); i++) {
		struct spank_ib_opts o;
		char err[256] = "";
		int rc;

		spank_ib_opts_init(&o);
		rc = spank_ib_opt_parse(&o, opt_cases[i].which, opt_cases[i].arg, err, sizeof(err));
		if (rc != opt_cases[i].rc)
			fail_msg("case %zu (--%s=%s): rc %d, expected %d", i,
				 spank_ib_opt_name(opt_cases[i].which),
				 opt_cases[i].arg ? opt_cases[i].arg : "(none)", rc,
				 opt_cases[i].rc);
		if (rc == 0) {
			assert_int_equal(opt_value(&o, opt_cases[i].which), opt_cases[i].value);
			assert_true(o.set[opt_cases[i].which]);
		} else {
			/* The message names the option and the value. */
			assert_non_null(strstr(err, spank_ib_opt_name(opt_cases[i].which)));
			assert_non_null(strstr(err, opt_cases[i].arg));
			assert_false(o.set[opt_cases[i].which]);
		}
	}
}

static void test_opt_parse_twice_last_wins(void **state)
{
	struct spank_ib_opts o;
	char err[256];

	(void)state;
	spank_ib_opts_init(&o);
	assert_int_equal(spank_ib_opt_parse(&o, SPANK_IB_OPT_CHECK, "warn", err, sizeof(err)), 0);
	assert_int_equal(spank_ib_opt_parse(&o, SPANK_IB_OPT_CHECK, "warn", err, sizeof(err)), 0);
	assert_int_equal(o.check, SPANK_IB_CHECK_WARN);
	assert_int_equal(
	    spank_ib_opt_parse(&o, SPANK_IB_OPT_REPORT, "json:/x/%j", err, sizeof(err)), 0);
	assert_string_equal(o.report_file, "/x/%j");
	assert_int_equal(spank_ib_opt_parse(&o, SPANK_IB_OPT_REPORT, "text", err, sizeof(err)), 0);
	assert_int_equal(o.report, SPANK_IB_REPORT_TEXT);
	assert_string_equal(o.report_file, ""); /* a later value without FILE clears it */
}

static void test_opt_report_file_too_long_rejected(void **state)
{
	struct spank_ib_opts o;
	char err[256];
	char *arg = malloc(PATH_MAX + 16);

	(void)state;
	assert_non_null(arg);
	strcpy(arg, "json:/");
	memset(arg + 6, 'a', PATH_MAX);
	arg[PATH_MAX + 6] = '\0';
	spank_ib_opts_init(&o);
	assert_int_equal(spank_ib_opt_parse(&o, SPANK_IB_OPT_REPORT, arg, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(o.report, SPANK_IB_REPORT_OFF);
	free(arg);
}

/* ---- environment precedence and enforce= ---- */

static const char *tbl_getenv(void *ctx, const char *name)
{
	const char *const *kv = ctx;

	for (; kv && kv[0]; kv += 2)
		if (!strcmp(kv[0], name))
			return kv[1];
	return NULL;
}

#define ANY (-1) /* a field the case does not check */

/* The job's SPANK_IB_* variables, the user's flags, and what takes effect. */
static const struct {
	const char *name;
	const char *env[5];
	struct {
		enum spank_ib_opt which;
		const char *arg;
	} flags[2];
	size_t n_flags;
	int rc;
	const char *err; /* in the message, when rc != 0 */
	bool active;
	int check, affinity, env_mode;
} effective_cases[] = {
    {"SPANK_IB_* used when no flag",
     {"SPANK_IB_CHECK", "warn", "SPANK_IB_AFFINITY", "1", NULL},
     {{0}},
     0,
     0,
     NULL,
     true,
     SPANK_IB_CHECK_WARN,
     SPANK_IB_AFF_ON,
     SPANK_IB_ENV_ON /* on by default with affinity */},
    {"the command line wins",
     {"SPANK_IB_CHECK", "warn", "SPANK_IB_ENV", "force", NULL},
     {{SPANK_IB_OPT_CHECK, "off"}, {SPANK_IB_OPT_ENV, "off"}},
     2,
     0,
     NULL,
     false,
     SPANK_IB_CHECK_OFF,
     ANY,
     SPANK_IB_ENV_OFF},
    {"a bad value names the variable",
     {"SPANK_IB_AFFINITY", "sideways", NULL},
     {{0}},
     0,
     -EINVAL,
     "SPANK_IB_AFFINITY=sideways",
     false,
     ANY,
     ANY,
     ANY},
    {"empty and 0 mean off: a step without flags costs nothing",
     {"SPANK_IB_CHECK", "", "SPANK_IB_AFFINITY", "0", NULL},
     {{0}},
     0,
     0,
     NULL,
     false,
     ANY,
     ANY,
     ANY},
    {"--ib-report alone implies a warn check",
     {NULL},
     {{SPANK_IB_OPT_REPORT, "json"}},
     1,
     0,
     NULL,
     true,
     SPANK_IB_CHECK_WARN,
     ANY,
     SPANK_IB_ENV_OFF},
};

static void test_effective_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(effective_cases) / sizeof(effective_cases[0]); i++) {
		const char *name = effective_cases[i].name;
		struct spank_ib_opts u, eff;
		struct ibp_conf c;
		bool active = !effective_cases[i].active;
		char err[256] = "";
		int rc;

		spank_ib_opts_init(&u);
		ibp_conf_init(&c);
		for (size_t k = 0; k < effective_cases[i].n_flags; k++)
			if (spank_ib_opt_parse(&u, effective_cases[i].flags[k].which,
					       effective_cases[i].flags[k].arg, err, sizeof(err)))
				fail_msg("%s: flag %zu: %s", name, k, err);
		rc = spank_ib_effective(&u, &c, tbl_getenv, (void *)effective_cases[i].env, &eff,
					&active, err, sizeof(err));
		if (rc != effective_cases[i].rc)
			fail_msg("%s: rc %d (%s), expected %d", name, rc, err,
				 effective_cases[i].rc);
		if (rc) {
			if (!strstr(err, effective_cases[i].err))
				fail_msg("%s: '%s' lacks '%s'", name, err, effective_cases[i].err);
			continue;
		}
		if (active != effective_cases[i].active)
			fail_msg("%s: active %d", name, active);
		if ((effective_cases[i].check != ANY &&
		     (int)eff.check != effective_cases[i].check) ||
		    (effective_cases[i].affinity != ANY &&
		     (int)eff.affinity != effective_cases[i].affinity) ||
		    (effective_cases[i].env_mode != ANY &&
		     (int)eff.env != effective_cases[i].env_mode))
			fail_msg("%s: check %d affinity %d env %d", name, eff.check, eff.affinity,
				 eff.env);
	}
}

static void test_enforce_is_a_floor(void **state)
{
	struct spank_ib_opts u, eff;
	struct ibp_conf c;
	bool active;
	char err[256];

	(void)state;
	spank_ib_opts_init(&u);
	ibp_conf_init(&c);
	assert_int_equal(ibp_conf_set(&c, "enforce", "check,affinity", err, sizeof(err)), 0);
	assert_int_equal(
	    spank_ib_effective(&u, &c, tbl_getenv, NULL, &eff, &active, err, sizeof(err)), 0);
	assert_true(active);
	assert_int_equal(eff.check, SPANK_IB_CHECK_FAIL);
	assert_int_equal(eff.affinity, SPANK_IB_AFF_ON);
	/* The user cannot turn an enforced item off. */
	assert_int_equal(spank_ib_opt_parse(&u, SPANK_IB_OPT_CHECK, "off", err, sizeof(err)), 0);
	assert_int_equal(spank_ib_opt_parse(&u, SPANK_IB_OPT_AFFINITY, "verbose", err, sizeof(err)),
			 0);
	assert_int_equal(
	    spank_ib_effective(&u, &c, tbl_getenv, NULL, &eff, &active, err, sizeof(err)), 0);
	assert_int_equal(eff.check, SPANK_IB_CHECK_FAIL);
	assert_int_equal(eff.affinity, SPANK_IB_AFF_VERBOSE);
}

/* watch_action= is a floor the user may raise; requeue=no|user|yes against --ib-requeue. */
static void test_watch_and_requeue_policy(void **state)
{
	static const struct {
		const char *admin_watch, *user_watch;
		enum ibp_watch_action want;
	} watch[] = {
	    {"report", NULL, IBP_WATCH_ACTION_REPORT},
	    {"report", "end", IBP_WATCH_ACTION_END},
	    {"end", NULL, IBP_WATCH_ACTION_END},
	    {"end", "report", IBP_WATCH_ACTION_END},
	};
	static const struct {
		const char *admin, *user;
		bool want;
	} requeue[] = {
	    {"user", NULL, false}, {"user", "yes", true}, {"no", "yes", false},
	    {"yes", NULL, true},   {"yes", "no", true},
	};
	struct spank_ib_opts u, eff;
	struct ibp_conf c;
	bool active;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(watch) / sizeof(watch[0]); i++) {
		spank_ib_opts_init(&u);
		ibp_conf_init(&c);
		assert_int_equal(
		    ibp_conf_set(&c, "watch_action", watch[i].admin_watch, err, sizeof(err)), 0);
		if (watch[i].user_watch)
			assert_int_equal(spank_ib_opt_parse(&u, SPANK_IB_OPT_WATCH,
							    watch[i].user_watch, err, sizeof(err)),
					 0);
		assert_int_equal(
		    spank_ib_effective(&u, &c, tbl_getenv, NULL, &eff, &active, err, sizeof(err)),
		    0);
		assert_int_equal(eff.watch, watch[i].want);
	}
	for (size_t i = 0; i < sizeof(requeue) / sizeof(requeue[0]); i++) {
		spank_ib_opts_init(&u);
		ibp_conf_init(&c);
		assert_int_equal(ibp_conf_set(&c, "requeue", requeue[i].admin, err, sizeof(err)),
				 0);
		if (requeue[i].user)
			assert_int_equal(spank_ib_opt_parse(&u, SPANK_IB_OPT_REQUEUE,
							    requeue[i].user, err, sizeof(err)),
					 0);
		assert_int_equal(
		    spank_ib_effective(&u, &c, tbl_getenv, NULL, &eff, &active, err, sizeof(err)),
		    0);
		if (eff.requeue != requeue[i].want)
			fail_msg("requeue=%s --ib-requeue=%s: %d", requeue[i].admin,
				 requeue[i].user ? requeue[i].user : "(none)", eff.requeue);
	}
}

/* enforce=test: neither --ib-check=warn nor SPANK_IB_CHECK=warn lowers the test's failures. */
static void test_enforced_test_not_lowered_by_warn(void **state)
{
	static const char *const env_warn[] = {"SPANK_IB_CHECK", "warn", NULL};
	struct spank_ib_opts u, eff;
	struct ibp_conf c;
	bool active;
	char err[256];

	(void)state;
	spank_ib_opts_init(&u);
	ibp_conf_init(&c);
	assert_int_equal(spank_ib_opt_parse(&u, SPANK_IB_OPT_CHECK, "warn", err, sizeof(err)), 0);
	assert_int_equal(spank_ib_opt_parse(&u, SPANK_IB_OPT_TEST, NULL, err, sizeof(err)), 0);
	assert_int_equal(
	    spank_ib_effective(&u, &c, tbl_getenv, NULL, &eff, &active, err, sizeof(err)), 0);
	assert_true(eff.check_warn_by_user); /* not enforced: the user's own choice */
	assert_int_equal(ibp_conf_set(&c, "enforce", "test", err, sizeof(err)), 0);
	assert_int_equal(
	    spank_ib_effective(&u, &c, tbl_getenv, NULL, &eff, &active, err, sizeof(err)), 0);
	assert_false(eff.check_warn_by_user);
	assert_int_equal(eff.test, SPANK_IB_TEST_FULL);
	/* the enforced test covers every rail: a user's quick (rail 0) is raised */
	assert_int_equal(spank_ib_opt_parse(&u, SPANK_IB_OPT_TEST, "quick", err, sizeof(err)), 0);
	assert_int_equal(
	    spank_ib_effective(&u, &c, tbl_getenv, NULL, &eff, &active, err, sizeof(err)), 0);
	assert_int_equal(eff.test, SPANK_IB_TEST_FULL);
	spank_ib_opts_init(&u);
	assert_int_equal(spank_ib_effective(&u, &c, tbl_getenv, (void *)env_warn, &eff, &active,
					    err, sizeof(err)),
			 0);
	assert_int_equal(eff.check, SPANK_IB_CHECK_WARN);
	assert_false(eff.check_warn_by_user);
}

/* ---- slurm.conf's AuthInfo=socket= ---- */

static const struct {
	const char *text;
	int rc;
	const char *sock;
} authinfo_cases[] = {
    {"AuthType=auth/munge\nAuthInfo=socket=/run/munge/m.sock\n", 0, "/run/munge/m.sock"},
    {"authinfo = ttl=60,socket=/tmp/x/munge.sock # comment\n", 0, "/tmp/x/munge.sock"},
    {"  AuthInfo=\"socket=/a/b\"\n", 0, "/a/b"},
    {"#AuthInfo=socket=/a\nAuthInfo=socket=/b\r\n", 0, "/b"},
    {"AuthInfo=socket=/first\nAuthInfo=socket=/second\n", 0, "/first"},
    {"AuthInfo=ttl=60\n", -ENOENT, ""},
    {"AuthInfoX=socket=/a\n", -ENOENT, ""},
    {"AuthAltTypes=auth/jwt\n", -ENOENT, ""},
    {"AuthInfo=socket=relative\n", -EINVAL, ""},
    {"AuthInfo=socket=/a\x01b\n", -EINVAL, ""},
    {"AuthInfo=socket=", -ENOENT, ""},
    {"", -ENOENT, ""},
};

static void test_authinfo_socket_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(authinfo_cases) / sizeof(authinfo_cases[0]); i++) {
		char out[64] = "";
		int rc = spank_ib_authinfo_parse(authinfo_cases[i].text,
						 strlen(authinfo_cases[i].text), out, sizeof(out));

		if (rc != authinfo_cases[i].rc || (!rc && strcmp(out, authinfo_cases[i].sock)))
			fail_msg("case %zu: rc %d '%s'", i, rc, out);
	}
	/* A path longer than the buffer is refused, never cut. */
	{
		char small[4];

		assert_int_equal(
		    spank_ib_authinfo_parse("AuthInfo=socket=/abcdef\n", 24, small, sizeof(small)),
		    -EINVAL);
	}
}

static void test_authinfo_socket_file_checks(void **state)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX + 16], out[256];

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/slurm.conf", dir);
	assert_int_equal(ibp_fixture_write(dir, "slurm.conf", "AuthInfo=socket=/s/munge.sock\n"),
			 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(spank_ib_authinfo_socket(path, out, sizeof(out)), 0);
	assert_string_equal(out, "/s/munge.sock");
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(spank_ib_authinfo_socket(path, out, sizeof(out)), -EPERM);
	assert_int_equal(chmod(path, 0664), 0);
	assert_int_equal(spank_ib_authinfo_socket(path, out, sizeof(out)), -EPERM);
	ibp_fixture_destroy(dir);
	assert_true(spank_ib_authinfo_socket("/nonexistent/slurm.conf", out, sizeof(out)) < 0);
}

/* ---- verdict cache ---- */

static int cache_tmpdir(char *dir)
{
	char why[512] = "";
	int fd;

	assert_non_null(mkdtemp(dir)); /* root's, 0700, in /tmp (root's, sticky) */
	fd = spank_ib_cache_open(dir, false, why, sizeof(why));
	if (fd < 0)
		fail_msg("%s: %s", dir, why);
	return fd;
}

static void test_cache_roundtrip_per_host_and_job_only(void **state)
{
	char dir[] = "/tmp/test_spank_cache.XXXXXX", path[PATH_MAX];
	struct spank_ib_cache_key k = {.host = "n1", .job_id = 7, .uid = 1000};
	struct spank_ib_cache_key other = k;
	struct ibp_findings f, got;
	int dfd;

	(void)state;
	if (geteuid() != 0)
		skip(); /* only root writes verdicts */
	dfd = cache_tmpdir(dir);
	ibp_findings_init(&f);
	ibp_findings_init(&got);
	assert_int_equal(ibp_findings_addf(&f, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE,
					   "mlx5_3", 1, "4X", "reseat", "link width %dX", 1),
			 0);
	assert_int_equal(ibp_findings_addf(&f, "memlock_low", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
					   "unlimited", "ulimit -l", "locked-memory limit 64 KiB"),
			 0);
	assert_int_equal(spank_ib_cache_store(dfd, &k, 60, &f), 0);
	assert_int_equal(spank_ib_cache_load(dfd, &k, 60, &got), 0);
	/* the node's finding only: a job fault is never cached */
	assert_int_equal(got.n, 1);
	assert_string_equal(got.v[0].code, "width_degraded");
	assert_string_equal(got.v[0].device, "mlx5_3");
	assert_int_equal(got.v[0].port, 1);
	/* Another job, a reused id of another user, another host, or no cache: a miss. */
	other.job_id = 8;
	assert_int_not_equal(spank_ib_cache_load(dfd, &other, 60, &got), 0);
	other = k;
	other.uid = 1001;
	assert_int_not_equal(spank_ib_cache_load(dfd, &other, 60, &got), 0);
	other = k;
	other.host = "n2";
	assert_int_not_equal(spank_ib_cache_load(dfd, &other, 60, &got), 0);
	assert_int_not_equal(spank_ib_cache_load(dfd, &k, 0, &got), 0);
	assert_int_equal(got.n, 1);
	/* n1's record renamed to n2's name: the record says n1, so n2 ignores it. */
	snprintf(path, sizeof(path), "%s/job.7.n1", dir);
	{
		char to[PATH_MAX];

		snprintf(to, sizeof(to), "%s/job.7.n2", dir);
		assert_int_equal(link(path, to), 0);
		assert_int_not_equal(spank_ib_cache_load(dfd, &other, 60, &got), 0);
		assert_int_equal(unlink(to), 0);
	}
	/* A file others could have written is not trusted. */
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_not_equal(spank_ib_cache_load(dfd, &k, 60, &got), 0);
	assert_int_equal(got.n, 1);
	assert_int_equal(spank_ib_cache_drop(dfd, &k), 0);
	assert_int_equal(spank_ib_cache_drop(dfd, &k), 0); /* gone is fine */
	/* a host name that is not a plain name is not cached */
	other.host = "../x";
	assert_int_equal(spank_ib_cache_store(dfd, &other, 60, &f), -EINVAL);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
	ibp_findings_release(&f);
	ibp_findings_release(&got);
}

/* Each refusal of the cache directory, named; a refused directory is never written. */
static void test_cache_dir_not_root_private_refused(void **state)
{
	char dir[] = "/tmp/test_spank_cache.XXXXXX", sub[PATH_MAX], link_[PATH_MAX], why[1024] = "";
	int fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	close(cache_tmpdir(dir));
	snprintf(sub, sizeof(sub), "%s/c", dir);
	/* missing: created 0700 */
	fd = spank_ib_cache_open(sub, true, why, sizeof(why));
	if (fd < 0)
		fail_msg("%s", why);
	close(fd);
	/* readable by others: refused, mode named */
	assert_int_equal(chmod(sub, 0755), 0);
	assert_int_equal(spank_ib_cache_open(sub, true, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0755"));
	/* a user's directory (a user could plant symlinks in it): refused, owner named */
	assert_int_equal(chmod(sub, 0700), 0);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	assert_int_equal(spank_ib_cache_open(sub, true, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "uid 65534"));
	assert_int_equal(chown(sub, 0, 0), 0);
	/* a symbolic link to it: refused */
	snprintf(link_, sizeof(link_), "%s/l", dir);
	assert_int_equal(symlink(sub, link_), 0);
	assert_int_equal(spank_ib_cache_open(link_, true, why, sizeof(why)), -ELOOP);
	/* in a directory others can write: refused */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(spank_ib_cache_open(sub, true, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "the directory"));
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(unlink(link_), 0);
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* A symlink planted under the record's name: never followed, and dropping it spares the target. */
static void test_cache_planted_symlink_not_followed(void **state)
{
	char dir[] = "/tmp/test_spank_cache.XXXXXX", victim[] = "/tmp/test_spank_victim.XXXXXX";
	char name[PATH_MAX];
	struct spank_ib_cache_key k = {.host = "n1", .job_id = 9, .uid = 1000};
	struct ibp_findings got;
	struct stat st;
	int dfd, vfd;

	(void)state;
	if (geteuid() != 0)
		skip();
	dfd = cache_tmpdir(dir);
	vfd = mkstemp(victim);
	assert_true(vfd >= 0);
	close(vfd);
	snprintf(name, sizeof(name), "%s/job.9.n1", dir);
	assert_int_equal(symlink(victim, name), 0);
	ibp_findings_init(&got);
	assert_int_not_equal(spank_ib_cache_load(dfd, &k, 60, &got), 0);
	assert_int_equal(spank_ib_cache_drop(dfd, &k), 0);
	assert_int_equal(stat(victim, &st), 0); /* the target is still there */
	assert_int_equal(lstat(name, &st), -1); /* the link is gone */
	ibp_findings_release(&got);
	close(dfd);
	unlink(victim);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- the peer lookup, kept for the job's later steps ---- */

static void answer(struct spank_ib_lookup_answer *a, const char *n0, const char *a0, const char *n1,
		   const char *a1)
{
	memset(a, 0, sizeof(*a));
	a->n = n1 ? 2 : 1;
	snprintf(a->names[0], sizeof(a->names[0]), "%s", n0);
	snprintf(a->addrs[0], sizeof(a->addrs[0]), "%s", a0);
	if (n1) {
		snprintf(a->names[1], sizeof(a->names[1]), "%s", n1);
		snprintf(a->addrs[1], sizeof(a->addrs[1]), "%s", a1);
	}
}

static void test_lookup_cache_roundtrip_per_job_refuses_bad_records(void **state)
{
	char dir[] = "/tmp/test_spank_cache.XXXXXX", path[PATH_MAX], buf[4096];
	struct spank_ib_cache_key k = {.host = "n1", .job_id = 7, .uid = 1000}, other = k;
	struct spank_ib_lookup_answer a, got;
	ssize_t len;
	char *at;
	int dfd, fd;

	(void)state;
	if (geteuid() != 0)
		skip(); /* only root writes */
	dfd = cache_tmpdir(dir);
	answer(&a, "n2", "10.0.0.12", "login1", "fd00::1");
	assert_int_equal(spank_ib_lookup_cache_store(dfd, &k, 60, &a), 0);
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &k, 60, &got), 0);
	assert_int_equal(got.n, 2);
	assert_string_equal(got.names[0], "n2");
	assert_string_equal(got.addrs[0], "10.0.0.12");
	assert_string_equal(got.names[1], "login1");
	assert_string_equal(got.addrs[1], "fd00::1");
	/* Another job, another user with the same job id, another host, no TTL: a miss. */
	other.job_id = 8;
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &other, 60, &got), -ENOENT);
	other = k;
	other.uid = 1001;
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &other, 60, &got), -ENOENT);
	other = k;
	other.host = "n2";
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &other, 60, &got), -ENOENT);
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &k, 0, &got), -ENOENT);
	assert_int_equal(got.n, 0);
	/* What the helper would say wrong is never written: a name, not an address. */
	answer(&a, "n2", "n2.example", NULL, NULL);
	assert_int_equal(spank_ib_lookup_cache_store(dfd, &k, 60, &a), -EINVAL);
	answer(&a, "", "10.0.0.12", NULL, NULL);
	assert_int_equal(spank_ib_lookup_cache_store(dfd, &k, 60, &a), -EINVAL);
	/* ... nor believed when the file says it: the whole record is refused. */
	snprintf(path, sizeof(path), "%s/lookup.7.n1", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	len = read(fd, buf, sizeof(buf));
	assert_true(len > 0);
	at = memmem(buf, (size_t)len, "10.0.0.12", 9);
	assert_non_null(at);
	memcpy(at, "10.0.0.x2", 9);
	assert_int_equal(pwrite(fd, buf, (size_t)len, 0), len);
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &k, 60, &got), -EBADMSG);
	assert_int_equal(got.n, 0);
	/* cut short, or with bytes after: refused */
	memcpy(at, "10.0.0.12", 9);
	assert_int_equal(pwrite(fd, buf, (size_t)len, 0), len);
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &k, 60, &got), 0);
	assert_int_equal(ftruncate(fd, len - 1), 0);
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &k, 60, &got), -EBADMSG);
	assert_int_equal(pwrite(fd, buf, (size_t)len, 0), len);
	assert_int_equal(pwrite(fd, "x", 1, len), 1);
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &k, 60, &got), -EBADMSG);
	close(fd);
	/* A file others could have written is not trusted. */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(spank_ib_lookup_cache_load(dfd, &k, 60, &got), -ENOENT);
	/* The job's end drops the verdict and the lookup alike. */
	answer(&a, "n2", "10.0.0.12", NULL, NULL);
	assert_int_equal(spank_ib_lookup_cache_store(dfd, &k, 60, &a), 0);
	assert_int_equal(spank_ib_cache_drop(dfd, &k), 0);
	assert_int_equal(access(path, F_OK), -1);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
}

/* A kept answer serves the same names once, as a helper's would; no helper runs. */
static void test_lookup_cached_answers_same_names_once(void **state)
{
	struct spank_ib_lookup lk;
	struct spank_ib_lookup_answer a;
	const char *names[2] = {"n2", "login1"}, *wrong[1] = {"n3"};
	char addrs[2][SPANK_IB_ADDR_MAX], why[256] = "";
	int rcs[2];

	(void)state;
	answer(&a, "n2", "10.0.0.12", "login1", "10.0.0.1");
	spank_ib_lookup_cached(&lk, &a);
	assert_int_equal(spank_ib_lookup_collect(&lk, wrong, 1, 2000, addrs, rcs, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(spank_ib_lookup_collect(&lk, names, 2, 2000, addrs, rcs, why, sizeof(why)),
			 0);
	assert_int_equal(rcs[0], 0);
	assert_int_equal(rcs[1], 0);
	assert_string_equal(addrs[0], "10.0.0.12");
	assert_string_equal(addrs[1], "10.0.0.1");
	assert_int_equal(lk.hp.pid, 0);
	assert_false(lk.answered); /* nothing new to keep */
	assert_int_not_equal(
	    spank_ib_lookup_collect(&lk, names, 2, 2000, addrs, rcs, why, sizeof(why)), 0);
	spank_ib_lookup_abandon(&lk); /* nothing to end */
}

/* ---- dispatch ---- */

/* The options of the table (the plugin registers each one). */
static int n_options(void)
{
	int n = 0;

	while (spank_ib_option_table[n].name)
		n++;
	return n;
}

static void test_init_registers_options_in_each_context(void **state)
{
	static const struct {
		spank_context_t ctx;
		int n;
	} cases[] = {
	    {S_CTX_LOCAL, 1},  {S_CTX_REMOTE, 1},     {S_CTX_ALLOCATOR, 1},
	    {S_CTX_SLURMD, 0}, {S_CTX_JOB_SCRIPT, 0},
	}; /* 1: every option of the table */

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_spank_reset();
		fake.ctx = cases[i].ctx;
		assert_int_equal(slurm_spank_init(NULL, 0, NULL), 0);
		assert_int_equal(fake.n_opts, cases[i].n ? n_options() : 0);
		slurm_spank_exit(NULL, 0, NULL);
	}
	fake_spank_reset();
	fake.ctx = S_CTX_LOCAL;
	assert_int_equal(slurm_spank_init(NULL, 0, NULL), 0);
	assert_string_equal(fake.opts[0].name, "ib-check");
	assert_int_equal(fake.opts[0].has_arg, 2);
}

/* srun, sbatch, salloc: a bad plugstack argument stops the command, named. */
static void test_init_bad_plugstack_arg_fails_srun_with_message(void **state)
{
	const char *args[] = {"drain=yes", "colour=blue"};
	char **av = (char **)args;

	(void)state;
	fake.ctx = S_CTX_LOCAL;
	assert_int_equal(slurm_spank_init(NULL, 2, av), -1);
	assert_int_equal(fake_spank_msgs_with("unknown key 'colour'"), 1);
}

/*
 * slurmstepd: a refused configuration does not fail init (which says only
 * "Plugin initialization failed" to the user and drains nothing useful): the
 * options are registered, the step fails from task_init with the reason,
 * said once; the batch script's step is left alone.
 */
static void test_init_refused_conf_fails_the_steps_with_the_reason(void **state)
{
	const char *args[] = {"drain=yes", "colour=blue"};
	char **av = (char **)args;

	(void)state;
	fake.ctx = S_CTX_REMOTE;
	fake.local_tasks = 2;
	assert_int_equal(slurm_spank_init(NULL, 2, av), 0);
	assert_int_equal(fake.n_opts, n_options());
	assert_int_equal(fake_spank_msgs_with("unknown key 'colour'"), 1); /* slurmd's log */
	assert_int_equal(slurm_spank_init_post_opt(NULL, 2, av), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 2, av), 0);
	assert_int_equal(fake_spank_msgs_with("configuration is refused: failing the step"), 1);
	for (int t = 0; t < 2; t++) {
		fake.task_id = t;
		assert_int_equal(slurm_spank_task_init(NULL, 2, av), -1);
	}
	assert_int_equal(slurm_spank_exit(NULL, 2, av), 0);
	/* the batch script: nothing */
	fake_spank_reset();
	fake.ctx = S_CTX_REMOTE;
	fake.step_id = SLURM_BATCH_SCRIPT;
	assert_int_equal(slurm_spank_init(NULL, 2, av), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 2, av), 0);
	assert_int_equal(slurm_spank_task_init(NULL, 2, av), 0);
	assert_int_equal(slurm_spank_exit(NULL, 2, av), 0);
	/* slurmd's job prolog: never fails on it (Slurm would drain with "Prolog error") */
	fake_spank_reset();
	fake.ctx = S_CTX_JOB_SCRIPT;
	assert_int_equal(slurm_spank_init(NULL, 2, av), 0);
	assert_int_equal(slurm_spank_job_prolog(NULL, 2, av), 0);
	assert_int_equal(fake_spank_msgs_with("nothing is drained"), 1);
}

static void test_init_register_failure_fails(void **state)
{
	(void)state;
	fake.ctx = S_CTX_LOCAL;
	fake.register_fail = 1;
	assert_int_equal(slurm_spank_init(NULL, 0, NULL), -1);
	assert_int_equal(fake_spank_msgs_with("cannot register --ib-check"), 1);
}

static void test_option_callback_sets_and_rejects(void **state)
{
	(void)state;
	fake.ctx = S_CTX_LOCAL;
	assert_int_equal(slurm_spank_init(NULL, 0, NULL), 0);
	assert_int_equal(fake.opts[0].cb(fake.opts[0].val, "warn", 0), 0);
	assert_int_equal(fake.opts[0].cb(fake.opts[0].val, "warn", 0), 0); /* twice */
	assert_int_equal(spank_ib_user_opts()->check, SPANK_IB_CHECK_WARN);
	assert_int_equal(fake.opts[1].cb(fake.opts[1].val, "bogus", 0), -1);
	assert_int_equal(fake_spank_msgs_with("--ib-affinity: bad value 'bogus'"), 1);
}

static void test_local_bad_env_default_fails_srun(void **state)
{
	(void)state;
	fake.ctx = S_CTX_LOCAL;
	assert_int_equal(slurm_spank_init(NULL, 0, NULL), 0);
	setenv("SPANK_IB_CHECK", "maybe", 1);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	unsetenv("SPANK_IB_CHECK");
	assert_int_equal(fake_spank_msgs_with("SPANK_IB_CHECK=maybe"), 1);
}

static void test_remote_without_flags_does_nothing(void **state)
{
	(void)state;
	fake.ctx = S_CTX_REMOTE;
	fake_spank_setenv("PATH", "/usr/bin");
	assert_int_equal(slurm_spank_init(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_task_init(NULL, 0, NULL), 0);
	assert_int_equal(fake.n_env, 1); /* the task's environment untouched */
	assert_int_equal(fake.n_msgs, 0);
}

static void test_remote_bad_job_env_fails_every_task_once_said(void **state)
{
	(void)state;
	fake.ctx = S_CTX_REMOTE;
	fake.local_tasks = 3;
	fake_spank_setenv("SPANK_IB_REPORT", "xml");
	assert_int_equal(slurm_spank_init(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	for (int t = 0; t < 3; t++) {
		fake.task_id = t;
		assert_int_equal(slurm_spank_task_init(NULL, 0, NULL), -1);
	}
	assert_int_equal(fake_spank_msgs_with("SPANK_IB_REPORT=xml"), 1);
}

static void test_job_script_context_ignores_user_callbacks(void **state)
{
	(void)state;
	fake.ctx = S_CTX_JOB_SCRIPT;
	assert_int_equal(slurm_spank_init(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_task_init(NULL, 0, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_opt_parse_table_matches),
	    cmocka_unit_test(test_opt_parse_twice_last_wins),
	    cmocka_unit_test(test_opt_report_file_too_long_rejected),
	    cmocka_unit_test(test_effective_table),
	    cmocka_unit_test(test_enforce_is_a_floor),
	    cmocka_unit_test(test_enforced_test_not_lowered_by_warn),
	    cmocka_unit_test(test_watch_and_requeue_policy),
	    cmocka_unit_test(test_authinfo_socket_table),
	    cmocka_unit_test(test_authinfo_socket_file_checks),
	    cmocka_unit_test(test_cache_roundtrip_per_host_and_job_only),
	    cmocka_unit_test(test_lookup_cache_roundtrip_per_job_refuses_bad_records),
	    cmocka_unit_test(test_lookup_cached_answers_same_names_once),
	    cmocka_unit_test(test_cache_dir_not_root_private_refused),
	    cmocka_unit_test(test_cache_planted_symlink_not_followed),
	    cmocka_unit_test_setup_teardown(test_init_registers_options_in_each_context, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_init_bad_plugstack_arg_fails_srun_with_message,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_init_refused_conf_fails_the_steps_with_the_reason,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_init_register_failure_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_option_callback_sets_and_rejects, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_local_bad_env_default_fails_srun, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_remote_without_flags_does_nothing, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_remote_bad_job_env_fails_every_task_once_said,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_job_script_context_ignores_user_callbacks, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
