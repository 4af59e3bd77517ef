/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of slurmd's pid file and memlock limit on fixture /proc trees (helpers/node/slurmd.c). */
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

#include "ibprep/slurmd.h"
#include "support/fixture.h"

static void test_slurm_conf_get_keys_comments_last_wins(void **state)
{
	char v[64];
	(void)state;
	const char *conf = "# SlurmdPidFile=/commented\n"
			   "ClusterName=c1\n"
			   "slurmdpidfile = /run/slurmd.%n.pid   # trailing comment\n"
			   "SlurmdPidFileX=/not/this\n"
			   "  SlurmdPidFile=/var/run/slurmd.pid\n"
			   "SlurmctldPidFile=/run/ctld.pid\n";
	assert_int_equal(ibp_slurm_conf_get(conf, "SlurmdPidFile", v, sizeof(v)), 19);
	assert_string_equal(v, "/var/run/slurmd.pid");
	assert_int_equal(ibp_slurm_conf_get("SlurmdPidFile=/run/slurmd.%n.pid # x\n",
					    "SlurmdPidFile", v, sizeof(v)),
			 18);
	assert_string_equal(v, "/run/slurmd.%n.pid");
	assert_int_equal(ibp_slurm_conf_get(conf, "SlurmdSpoolDir", v, sizeof(v)), -ENOENT);
	assert_int_equal(ibp_slurm_conf_get("#SlurmdPidFile=/x\n", "SlurmdPidFile", v, sizeof(v)),
			 -ENOENT);
	assert_int_equal(ibp_slurm_conf_get(conf, "SlurmdPidFile", v, 5), -ENAMETOOLONG);
}

static const struct {
	const char *pat, *node, *host;
	int rc;
	const char *want;
} expands[] = {
    {"/var/run/slurmd.pid", "n1", "h1", 19, "/var/run/slurmd.pid"},
    {"/tmp/cl/run/slurmd.%n.pid", "n1", "h1", 25, "/tmp/cl/run/slurmd.n1.pid"},
    {"/run/%h/%n%%.pid", "n1", "h1", 15, "/run/h1/n1%.pid"},
    {"/run/slurmd.%x.pid", "n1", "h1", -EINVAL, ""},
    {"run/slurmd.pid", "n1", "h1", -EINVAL, ""},
    {"/run/slurmd.%n.pid", "../../etc/x", "h1", -EINVAL, ""},
    {"/run/slurmd.%n.pid", "..", "h1", -EINVAL, ""},
    {"/run/slurmd.%n.pid", "", "h1", -EINVAL, ""},
    {"/run/slurmd.%", "n1", "h1", -EINVAL, ""},
};

static void test_slurm_expand_path_node_host(void **state)
{
	char out[64];
	(void)state;
	for (size_t i = 0; i < sizeof(expands) / sizeof(expands[0]); i++) {
		int rc = ibp_slurm_expand_path(expands[i].pat, expands[i].node, expands[i].host,
					       out, sizeof(out));
		if (rc != expands[i].rc)
			fail_msg("case %zu: rc %d, want %d", i, rc, expands[i].rc);
		if (rc >= 0)
			assert_string_equal(out, expands[i].want);
	}
	assert_int_equal(ibp_slurm_expand_path("/a/%n", "n1", "h", out, 4), -ENAMETOOLONG);
}

#define LIMITS_HEAD                                                                                \
	"Limit                     Soft Limit           Hard Limit           Units     \n"         \
	"Max cpu time              unlimited            unlimited            seconds   \n"         \
	"Max processes             127473               127473               processes \n"
#define LIMITS_TAIL "Max nice priority         0                    0                    \n"

static const struct {
	const char *text;
	int rc;
	uint64_t kb;
} limits[] = {
    {LIMITS_HEAD
     "Max locked memory         8388608              8388608              bytes     \n" LIMITS_TAIL,
     0, 8192},
    {LIMITS_HEAD "Max locked memory         unlimited            unlimited            bytes     \n",
     0, UINT64_MAX},
    {LIMITS_HEAD "Max locked memory         65536                unlimited            bytes     \n",
     0, 64},
    {LIMITS_HEAD "Max locked memory         1023                 1023                 bytes     \n",
     0, 0},
    {LIMITS_HEAD LIMITS_TAIL, -ENOENT, 0},
    {LIMITS_HEAD "Max locked memory         lots                 8388608              bytes\n",
     -EINVAL, 0},
    {LIMITS_HEAD "Max locked memory         8388608\n", -EINVAL, 0},
    {LIMITS_HEAD "Max locked memory         99999999999999999999999  1  bytes\n", -EINVAL, 0},
    {"", -ENOENT, 0},
};

static void test_proc_parse_memlock_soft_limit(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		uint64_t kb = 12345;
		int rc = ibp_proc_parse_memlock(limits[i].text, &kb);
		if (rc != limits[i].rc)
			fail_msg("case %zu: rc %d, want %d", i, rc, limits[i].rc);
		if (!rc)
			assert_int_equal(kb, limits[i].kb);
	}
}

#define PIDFILE "/run/slurmd.n1.pid"
#define LIMITS_64K                                                                                 \
	LIMITS_HEAD                                                                                \
	"Max locked memory         65536                65536                bytes     \n"

/* A root with a root-owned pid file naming process 4242, whose exe is slurmd. */
static char *proc_tree(void)
{
	char *root = ibp_fixture_tmpdir();
	char p[512];
	assert_non_null(root);
	assert_int_equal(ibp_fixture_write(root, PIDFILE + 1, "4242\n"), 0);
	assert_int_equal(ibp_fixture_write(root, "proc/4242/limits", LIMITS_64K), 0);
	assert_int_equal(ibp_fixture_symlink(root, "proc/4242/exe", "/usr/sbin/slurmd"), 0);
	snprintf(p, sizeof(p), "%s%s", root, PIDFILE);
	assert_int_equal(chmod(p, 0644), 0);
	return root;
}

static int find(const char *root, const char *pidfile, struct ibp_slurmd *sd, char *why,
		size_t whylen)
{
	struct ibp_sysfs fs;
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	int rc = ibp_slurmd_find(&fs, pidfile, sd, why, whylen);
	ibp_sysfs_close(&fs);
	return rc;
}

static void test_slurmd_find_reads_limit_through_pid_file(void **state)
{
	struct ibp_slurmd sd;
	char why[256];
	(void)state;
	if (geteuid() != 0) {
		print_message(
		    "# skip: not root: the fixture's files must be root's, as on a node\n");
		skip();
		return;
	}
	char *root = proc_tree();
	assert_int_equal(find(root, PIDFILE, &sd, why, sizeof(why)), 0);
	assert_int_equal(sd.pid, 4242);
	assert_int_equal(sd.memlock_kb, 64);
	/* slurmd replaced by an upgrade: still slurmd */
	assert_int_equal(ibp_fixture_remove(root, "proc/4242/exe"), 0);
	assert_int_equal(ibp_fixture_symlink(root, "proc/4242/exe", "/usr/sbin/slurmd (deleted)"),
			 0);
	assert_int_equal(find(root, PIDFILE, &sd, why, sizeof(why)), 0);
	ibp_fixture_destroy(root);
}

enum tamper {
	T_NO_PIDFILE,
	T_GROUP_WRITABLE,
	T_PIDFILE_USERS,
	T_PROC_USERS,
	T_NOT_SLURMD,
	T_STALE,
	T_GARBAGE_PID,
	T_PID_ONE,
	T_NO_LIMITS_LINE,
	T_PIDFILE_FIFO
};

static const struct {
	enum tamper t;
	int rc;
	const char *why;
} tampers[] = {
    {T_NO_PIDFILE, -ENOENT, "/run/slurmd.n1.pid: No such file or directory (is slurmd running?"},
    {T_GROUP_WRITABLE, -EPERM, "/run/slurmd.n1.pid is not trusted: owner uid 0, mode 0664"},
    {T_PIDFILE_USERS, -EPERM, "/run/slurmd.n1.pid is not trusted: owner uid 65534"},
    {T_PROC_USERS, -EPERM, "names process 4242, which is uid 65534's, not root's"},
    {T_NOT_SLURMD, -EPERM, "process 4242 is 'sleep', not slurmd"},
    {T_STALE, -ENOENT, "names process 4242: No such file or directory (a stale pid file)"},
    {T_GARBAGE_PID, -EINVAL, "'4242abc' is not a process id"},
    {T_PID_ONE, -EINVAL, "'1' is not a process id"},
    {T_NO_LIMITS_LINE, -EINVAL, "/proc/4242/limits: no well-formed 'Max locked memory' line"},
    {T_PIDFILE_FIFO, -EPERM, "is not trusted"},
};

static void test_slurmd_find_refuses_what_a_user_controls(void **state)
{
	struct ibp_slurmd sd;
	char why[256], p[512];
	(void)state;
	if (geteuid() != 0) {
		print_message("# skip: not root: the fixture's files must be root's (chown)\n");
		skip();
		return;
	}
	for (size_t i = 0; i < sizeof(tampers) / sizeof(tampers[0]); i++) {
		char *root = proc_tree();
		snprintf(p, sizeof(p), "%s%s", root, PIDFILE);
		switch (tampers[i].t) {
		case T_NO_PIDFILE:
			assert_int_equal(unlink(p), 0);
			break;
		case T_GROUP_WRITABLE:
			assert_int_equal(chmod(p, 0664), 0);
			break;
		case T_PIDFILE_USERS:
			assert_int_equal(chown(p, 65534, 65534), 0);
			break;
		case T_PROC_USERS:
			snprintf(p, sizeof(p), "%s/proc/4242", root);
			assert_int_equal(chown(p, 65534, 65534), 0);
			break;
		case T_NOT_SLURMD:
			assert_int_equal(ibp_fixture_remove(root, "proc/4242/exe"), 0);
			assert_int_equal(
			    ibp_fixture_symlink(root, "proc/4242/exe", "/usr/bin/sleep"), 0);
			break;
		case T_STALE:
			assert_int_equal(ibp_fixture_remove(root, "proc/4242"), 0);
			break;
		case T_GARBAGE_PID:
			assert_int_equal(ibp_fixture_write(root, PIDFILE + 1, "4242abc\n"), 0);
			break;
		case T_PID_ONE:
			assert_int_equal(ibp_fixture_write(root, PIDFILE + 1, "1\n"), 0);
			break;
		case T_NO_LIMITS_LINE:
			assert_int_equal(
			    ibp_fixture_write(root, "proc/4242/limits", LIMITS_HEAD LIMITS_TAIL),
			    0);
			break;
		case T_PIDFILE_FIFO:
			assert_int_equal(unlink(p), 0);
			assert_int_equal(mkfifo(p, 0644), 0);
			break;
		}
		int rc = find(root, PIDFILE, &sd, why, sizeof(why));
		if (rc != tampers[i].rc || !strstr(why, tampers[i].why))
			fail_msg("case %zu: rc %d (want %d), why '%s' (want '%s')", i, rc,
				 tampers[i].rc, why, tampers[i].why);
		ibp_fixture_destroy(root);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slurm_conf_get_keys_comments_last_wins),
	    cmocka_unit_test(test_slurm_expand_path_node_host),
	    cmocka_unit_test(test_proc_parse_memlock_soft_limit),
	    cmocka_unit_test(test_slurmd_find_reads_limit_through_pid_file),
	    cmocka_unit_test(test_slurmd_find_refuses_what_a_user_controls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
