/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_rdmatest_ports.c: the test's port range against the node's sysctls. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/fixture.h"
#include "ibprep/policy.h"
#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_ports.h"

static const struct {
	const char *text;
	int rc;
	unsigned lo, hi;
} range_cases[] = {
    {"32768\t60999", 0, 32768, 60999},
    {"32768\t60999\n", 0, 32768, 60999},
    {"1024 65535", 0, 1024, 65535},
    {"40000  \t 40000", 0, 40000, 40000},
    {"60999\t32768", -EINVAL, 0, 0},
    {"32768", -EINVAL, 0, 0},
    {"32768\t", -EINVAL, 0, 0},
    {"\t60999", -EINVAL, 0, 0},
    {"32768\t60999 1", -EINVAL, 0, 0},
    {"32768\t65536", -EINVAL, 0, 0},
    {"032768\t60999", -EINVAL, 0, 0},
    {"-1\t60999", -EINVAL, 0, 0},
    {"", -EINVAL, 0, 0},
};

static void test_port_local_range_table_parses_or_refuses(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(range_cases) / sizeof(range_cases[0]); i++) {
		unsigned lo = 0, hi = 0;
		int rc = ibp_port_parse_local_range(range_cases[i].text, &lo, &hi);

		if (rc != range_cases[i].rc)
			fail_msg("'%s': rc %d, expected %d", range_cases[i].text, rc,
				 range_cases[i].rc);
		if (!rc && (lo != range_cases[i].lo || hi != range_cases[i].hi))
			fail_msg("'%s': %u-%u", range_cases[i].text, lo, hi);
	}
	assert_int_equal(ibp_port_parse_local_range(NULL, NULL, NULL), -EINVAL);
}

static const struct ibp_port_sysctl linux_default = {.have_unpriv = true,
						     .unpriv_start = 1024,
						     .have_ephemeral = true,
						     .eph_lo = 32768,
						     .eph_hi = 60999};

static void test_port_range_default_privileged_and_clean(void **state)
{
	struct ibp_findings f;
	struct ibp_policy p;

	(void)state;
	ibp_policy_init(&p);
	ibp_findings_init(&f);
	assert_int_equal(p.test_port_lo, IBP_TEST_PORTS_DEFAULT_LO);
	assert_int_equal(p.test_port_hi, IBP_TEST_PORTS_DEFAULT_HI);
	assert_int_equal(ibp_port_range_check(p.test_port_lo, p.test_port_hi, &linux_default, &f),
			 0);
	assert_int_equal(f.n, 0);
	assert_true(ibp_port_range_privileged(p.test_port_lo, p.test_port_hi, &linux_default));
	/* No sysctl at all (kernels before 4.11): 1024 is fixed. */
	assert_true(ibp_port_range_privileged(230, 299, NULL));
	assert_false(ibp_port_range_privileged(1000, 1024, NULL));
	ibp_findings_release(&f);
}

static void test_port_range_ephemeral_overlap_refused_naming_both(void **state)
{
	static const unsigned cases[][2] = {
	    {47000, 47999}, {32000, 32768}, {60999, 61500}, {1, 65535}};
	struct ibp_findings f;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char a[16], b[16];

		ibp_findings_init(&f);
		assert_int_equal(ibp_port_range_check(cases[i][0], cases[i][1], &linux_default, &f),
				 -EADDRINUSE);
		assert_int_equal(f.n, 1);
		assert_string_equal(f.v[0].code, "test_ports_ephemeral");
		assert_int_equal(f.v[0].severity, IBP_SEV_FAIL);
		snprintf(a, sizeof(a), "%u-%u", cases[i][0], cases[i][1]);
		assert_non_null(strstr(f.v[0].observed, a));
		snprintf(b, sizeof(b), "%u-%u", 32768, 60999);
		assert_non_null(strstr(f.v[0].observed, b));
		assert_non_null(strstr(f.v[0].observed, "ip_local_port_range"));
		ibp_findings_release(&f);
	}
	/* Just outside on either side: accepted. */
	ibp_findings_init(&f);
	assert_int_equal(ibp_port_range_check(61000, 61999, &linux_default, &f), 0);
	assert_int_equal(ibp_port_range_check(30000, 32767, &linux_default, &f), 0);
	ibp_findings_release(&f);
}

static void test_port_range_unprivileged_warns(void **state)
{
	struct ibp_findings f;

	(void)state;
	ibp_findings_init(&f);
	assert_int_equal(ibp_port_range_check(1000, 1100, &linux_default, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "test_ports_unprivileged");
	assert_int_equal(f.v[0].severity, IBP_SEV_WARN);
	assert_non_null(strstr(f.v[0].observed, "1024-1100"));
	assert_non_null(strstr(f.v[0].observed, "ip_unprivileged_port_start=1024"));
	assert_false(ibp_port_range_privileged(1000, 1100, &linux_default));
	ibp_findings_release(&f);
}

static void test_port_range_sysctl_zero_warns_naming_it(void **state)
{
	struct ibp_port_sysctl s = linux_default;
	struct ibp_findings f;

	(void)state;
	s.unpriv_start = 0;
	ibp_findings_init(&f);
	assert_int_equal(ibp_port_range_check(230, 299, &s, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "test_ports_all_unprivileged");
	assert_non_null(strstr(f.v[0].observed, "net.ipv4.ip_unprivileged_port_start is 0"));
	assert_false(ibp_port_range_privileged(230, 299, &s));
	ibp_findings_release(&f);
}

static void test_port_range_bad_range_einval(void **state)
{
	struct ibp_findings f;

	(void)state;
	ibp_findings_init(&f);
	assert_int_equal(ibp_port_range_check(0, 10, &linux_default, &f), -EINVAL);
	assert_int_equal(ibp_port_range_check(20, 10, &linux_default, &f), -EINVAL);
	assert_int_equal(ibp_port_range_check(10, 65536, &linux_default, &f), -EINVAL);
	assert_int_equal(f.n, 0);
	ibp_findings_release(&f);
}

static void test_port_sysctl_read_fixture(void **state)
{
	char *root = ibp_fixture_tmpdir();
	struct ibp_port_sysctl s;
	struct ibp_sysfs fs;

	(void)state;
	assert_non_null(root);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	/* Nothing there: both unknown, not an error. */
	assert_int_equal(ibp_port_sysctl_read(&fs, &s), 0);
	assert_false(s.have_unpriv);
	assert_false(s.have_ephemeral);
	assert_int_equal(ibp_fixture_write(root, IBP_SYSCTL_UNPRIV_START, "0\n"), 0);
	assert_int_equal(ibp_fixture_write(root, IBP_SYSCTL_LOCAL_RANGE, "1024\t65535\n"), 0);
	assert_int_equal(ibp_port_sysctl_read(&fs, &s), 0);
	assert_true(s.have_unpriv && s.unpriv_start == 0);
	assert_true(s.have_ephemeral && s.eph_lo == 1024 && s.eph_hi == 65535);
	assert_int_equal(ibp_fixture_write(root, IBP_SYSCTL_UNPRIV_START, "70000\n"), 0);
	assert_int_equal(ibp_port_sysctl_read(&fs, &s), -EINVAL);
	assert_int_equal(ibp_fixture_write(root, IBP_SYSCTL_UNPRIV_START, "1024\n"), 0);
	assert_int_equal(ibp_fixture_write(root, IBP_SYSCTL_LOCAL_RANGE, "junk\n"), 0);
	assert_int_equal(ibp_port_sysctl_read(&fs, &s), -EINVAL);
	ibp_sysfs_close(&fs);
	ibp_fixture_destroy(root);
}

/* This machine's own values read through the same reader on "/". */
static void test_port_sysctl_read_live(void **state)
{
	struct ibp_port_sysctl s;
	struct ibp_sysfs fs;

	(void)state;
	assert_int_equal(ibp_sysfs_open(&fs, "/"), 0);
	assert_int_equal(ibp_port_sysctl_read(&fs, &s), 0);
	if (s.have_ephemeral)
		assert_true(s.eph_lo <= s.eph_hi);
	ibp_sysfs_close(&fs);
}

static int bound_port(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int acc = 0;
	socklen_t al = sizeof(acc);

	if (getsockname(fd, (struct sockaddr *)&a, &len) ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) || !acc)
		return -1;
	return ntohs(a.sin_port);
}

/* Candidates in order; the first free is bound; all taken is -EADDRINUSE. */
static void test_rdmatest_listen_first_free_candidate(void **state)
{
	int fds[4][IBP_RDMATEST_PORT_CANDIDATES], extra[IBP_RDMATEST_PORT_CANDIDATES];
	uint16_t ports[IBP_RDMATEST_PORT_CANDIDATES], p2[IBP_RDMATEST_PORT_CANDIDATES];
	int n;

	(void)state;
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, NULL, fds[0], ports, 2), -EINVAL);
	n = ibp_rdmatest_listen(7, 1, 61500, 61599, NULL, fds[0], ports,
				IBP_RDMATEST_PORT_CANDIDATES);
	if (n == -EADDRINUSE)
		skip(); /* someone else holds these ports on this machine */
	assert_int_equal(n, IBP_RDMATEST_PORT_CANDIDATES);
	assert_true(fds[0][0] >= 0);
	assert_int_equal(bound_port(fds[0][0]), ports[0]);
	for (int c = 1; c < n; c++)
		assert_int_equal(fds[0][c], -1);
	assert_true(fcntl(fds[0][0], F_GETFD) & FD_CLOEXEC);
	/* The same step again: its first candidate is taken, the second is bound. */
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, NULL, fds[1], p2, 4), n);
	assert_memory_equal(ports, p2, sizeof(ports));
	assert_int_equal(fds[1][0], -1);
	assert_int_equal(bound_port(fds[1][1]), ports[1]);
	/* Hold the other two: nothing left. */
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, NULL, fds[2], p2, 4), n);
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, NULL, fds[3], p2, 4), n);
	assert_int_equal(bound_port(fds[3][3]), ports[3]);
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, NULL, extra, p2, 4), -EADDRINUSE);
	for (int i = 0; i < 4; i++)
		for (int c = 0; c < n; c++)
			if (fds[i][c] >= 0)
				close(fds[i][c]);
	assert_int_equal(ibp_rdmatest_listen(7, 1, 0, 10, NULL, extra, p2, 4), -EINVAL);
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, "n1", extra, p2, 4), -EINVAL);
	/* On one address: another address keeps its own first candidate. */
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, "127.0.0.1", fds[0], p2, 4), n);
	assert_int_equal(ibp_rdmatest_listen(7, 1, 61500, 61599, "127.0.0.2", fds[1], p2, 4), n);
	assert_true(fds[0][0] >= 0 && fds[1][0] >= 0);
	close(fds[0][0]);
	close(fds[1][0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_port_local_range_table_parses_or_refuses),
	    cmocka_unit_test(test_port_range_default_privileged_and_clean),
	    cmocka_unit_test(test_port_range_ephemeral_overlap_refused_naming_both),
	    cmocka_unit_test(test_port_range_unprivileged_warns),
	    cmocka_unit_test(test_port_range_sysctl_zero_warns_naming_it),
	    cmocka_unit_test(test_port_range_bad_range_einval),
	    cmocka_unit_test(test_port_sysctl_read_fixture),
	    cmocka_unit_test(test_port_sysctl_read_live),
	    cmocka_unit_test(test_rdmatest_listen_first_free_candidate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
