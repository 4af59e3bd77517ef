/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_watcher_args.c: the arguments of spank-ib-watch
 * (spank/watcher/watch_args.c) in its three modes: the step's watch, the
 * requeue after the cross-node test (--requeue-now) and the job prolog's
 * drain (--drain-now): what each needs, a NodeName that Slurm would read as
 * several nodes, the reason's bytes (ibp_drain_reason_clean), and what the
 * error says of an argument that is not printable.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../spank/watcher/watch_args.h"

#define ARGV(...) ((const char *[]){"spank-ib-watch", __VA_ARGS__, NULL})

static struct spank_ib_watch_cfg c;
static char err[512];

static int parse(const char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	err[0] = '\0';
	return spank_ib_watch_parse_args(argc, (char **)argv, &c, err, sizeof(err));
}

static void test_drain_now(void **state)
{
	(void)state;
	assert_int_equal(
	    parse(ARGV("--drain-now=yes", "--host=n4", "--node=n4",
		       "--reason=spank-ib: mlx5_4 port 1: SM LID 0 (no subnet manager)",
		       "--slurm-library=/usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so",
		       "--slurm-conf=/etc/slurm/slurm.conf", "--parent=1234")),
	    0);
	assert_true(c.drain_now);
	assert_false(c.requeue_now);
	assert_string_equal(c.host, "n4");
	assert_string_equal(c.node, "n4");
	assert_string_equal(c.reason, "spank-ib: mlx5_4 port 1: SM LID 0 (no subnet manager)");
	assert_string_equal(c.slurm_conf, "/etc/slurm/slurm.conf");
	assert_int_equal(c.parent, 1234);
	/* no NodeName known to the plugin: the one-shot looks it up itself */
	assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4",
				    "--node=", "--reason=spank-ib: x", "--parent=99")),
			 0);
	assert_string_equal(c.node, "");
	/* the reason's '=' and a leading "--" are the reason's */
	assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4",
				    "--reason=spank-ib: a=b --node=n1,n2", "--parent=99")),
			 0);
	assert_string_equal(c.reason, "spank-ib: a=b --node=n1,n2");
	assert_string_equal(c.node, "");
}

static void test_drain_now_needs(void **state)
{
	(void)state;
	assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4", "--parent=99")), -EINVAL);
	assert_non_null(strstr(err, "--drain-now needs --host, --reason and --parent"));
	assert_int_equal(parse(ARGV("--drain-now=yes", "--reason=spank-ib: x", "--parent=99")),
			 -EINVAL);
	assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4", "--reason=spank-ib: x")),
			 -EINVAL);
	assert_int_equal(
	    parse(ARGV("--drain-now=maybe", "--host=n4", "--reason=spank-ib: x", "--parent=99")),
	    -EINVAL);
	assert_string_equal(err, "bad value: --drain-now=maybe");
	/* one run is one thing */
	assert_int_equal(parse(ARGV("--drain-now=yes", "--requeue-now=yes", "--job=7", "--host=n4",
				    "--reason=spank-ib: x", "--parent=99")),
			 -EINVAL);
	assert_non_null(strstr(err, "two runs"));
	/* --drain-now=no: the watch, which needs its ports */
	assert_int_equal(
	    parse(ARGV("--drain-now=no", "--host=n4", "--reason=spank-ib: x", "--parent=99")),
	    -EINVAL);
	assert_non_null(strstr(err, "--ports"));
}

static void test_drain_now_reason(void **state)
{
	(void)state;
	/* sysfs bytes that are no text: made '?' */
	assert_int_equal(
	    parse(ARGV("--drain-now=yes", "--host=n4",
		       "--reason=spank-ib: mlx5_0 port 1: \x1b[2J\nfake line", "--parent=99")),
	    0);
	assert_string_equal(c.reason, "spank-ib: mlx5_0 port 1: ?[2J?fake line");
	/* not spank-ib's: refused, the key named, not the bytes */
	assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4", "--reason=maintenance\x1b[2J",
				    "--parent=99")),
			 -EINVAL);
	assert_string_equal(err, "bad value: --reason (not printable)");
	assert_int_equal(
	    parse(ARGV("--drain-now=yes", "--host=n4", "--reason=Prolog error", "--parent=99")),
	    -EINVAL);
	assert_string_equal(err, "bad value: --reason=Prolog error");
	{
		char longr[400];

		memset(longr, 'x', sizeof(longr));
		memcpy(longr, "--reason=spank-ib: ", 19);
		longr[sizeof(longr) - 1] = '\0';
		assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4", longr, "--parent=99")),
				 -EINVAL);
	}
}

/* slurm_update_node reads node_names as a host list: one plain name only. */
static void test_node_is_one_name(void **state)
{
	static const char *bad[] = {"--node=n[1-4]", "--node=n1,n2", "--node=n1 n2",
				    "--node=n1;x",   "--node=n*",    "--node=n1\n"};
	static const char *good[] = {"--node=n1", "--node=gpu-a.01_x", "--node="};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4", bad[i],
					    "--reason=spank-ib: x", "--parent=99")),
				 -EINVAL);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(parse(ARGV("--drain-now=yes", "--host=n4", good[i],
					    "--reason=spank-ib: x", "--parent=99")),
				 0);
	/* the step's watch takes the same names */
	assert_int_equal(parse(ARGV("--host=n4", "--node=n[1-2]", "--root=/", "--ports=mlx5_0:1",
				    "--parent=99")),
			 -EINVAL);
}

/* The other two modes, as the plugin starts them (ib_watch.c). */
static void test_watch_and_requeue_now(void **state)
{
	(void)state;
	assert_int_equal(parse(ARGV("--job=12", "--step=0", "--host=n1", "--node=n1", "--root=/",
				    "--ports=mlx5_0:1,mlx5_3:1", "--interval=1", "--flap=5",
				    "--action=end", "--signal=15", "--signal-name=SIGTERM",
				    "--drain=yes", "--requeue=no", "--requeue-max=3",
				    "--requeue-begin=-1", "--results-log=", "--results-log-max=0",
				    "--slurm-library=/usr/lib/libslurmfull.so", "--parent=77")),
			 0);
	assert_false(c.drain_now);
	assert_false(c.requeue_now);
	assert_int_equal(c.n_ports, 2);
	assert_true(c.end);
	assert_true(c.drain);
	assert_int_equal(c.requeue_begin_s, -1);
	assert_int_equal(parse(ARGV("--requeue-now=yes", "--job=12", "--step=0", "--host=n1",
				    "--node=n1", "--requeue-max=3", "--requeue-begin=30",
				    "--slurm-conf=/etc/slurm/slurm.conf", "--parent=77")),
			 0);
	assert_true(c.requeue_now);
	assert_int_equal(c.requeue_begin_s, 30);
	assert_int_equal(parse(ARGV("--requeue-now=yes", "--host=n1", "--parent=77")), -EINVAL);
	assert_non_null(strstr(err, "--requeue-now needs --job"));
	assert_int_equal(parse(ARGV("--colour=blue")), -ENOENT);
	assert_string_equal(err, "unknown argument: --colour=blue");
	assert_int_equal(parse(ARGV("--slurm-conf=etc/slurm.conf")), -EINVAL);
}

/* --baseline: the plugin's read of the ports, checked token by token; "" is none. */
static void test_watch_baseline(void **state)
{
	(void)state;
	assert_int_equal(
	    parse(ARGV("--host=n1", "--root=/", "--ports=mlx5_0:1,mlx5_3:1", "--parent=77",
		       "--baseline=100 200 mlx5_0:1 4 5 0 0 0 0 0 9 mlx5_3:1 1 2 1 - - - - -")),
	    0);
	assert_true(c.have_base);
	assert_int_equal(c.base.n_ports, 2);
	assert_int_equal(c.base.mono_ns, 100);
	assert_int_equal(c.base.ports[1].state, 1);
	assert_int_equal(c.base.ports[0].c[5].value, 9);
	assert_false(c.base.ports[1].c[1].known);
	assert_int_equal(
	    parse(ARGV("--host=n1", "--root=/", "--ports=mlx5_0:1", "--parent=77", "--baseline=")),
	    0);
	assert_false(c.have_base);
	assert_int_equal(parse(ARGV("--host=n1", "--root=/", "--ports=mlx5_0:1", "--parent=77",
				    "--baseline=100 200 mlx5_0:1 9 5 0 0 0 0 0 0")),
			 -EINVAL);
	assert_non_null(strstr(err, "--baseline"));
}

/* When the first read is due (the plugin execs the watcher just before it). */
static void test_watch_first_read(void **state)
{
	(void)state;
	assert_int_equal(parse(ARGV("--host=n1", "--root=/", "--ports=mlx5_0:1", "--parent=77")),
			 0);
	assert_int_equal(c.first_read_ns, 0); /* none: an interval after its start */
	assert_int_equal(parse(ARGV("--host=n1", "--root=/", "--ports=mlx5_0:1", "--parent=77",
				    "--first-read=123456789012")),
			 0);
	assert_int_equal(c.first_read_ns, 123456789012LL);
	assert_int_equal(parse(ARGV("--host=n1", "--root=/", "--ports=mlx5_0:1", "--parent=77",
				    "--first-read=-5")),
			 -EINVAL);
	assert_non_null(strstr(err, "--first-read"));
	assert_int_equal(parse(ARGV("--host=n1", "--root=/", "--ports=mlx5_0:1", "--parent=77",
				    "--first-read=99999999999999999999")),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drain_now),
	    cmocka_unit_test(test_drain_now_needs),
	    cmocka_unit_test(test_drain_now_reason),
	    cmocka_unit_test(test_node_is_one_name),
	    cmocka_unit_test(test_watch_and_requeue_now),
	    cmocka_unit_test(test_watch_baseline),
	    cmocka_unit_test(test_watch_first_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
