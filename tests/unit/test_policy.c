/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the policy keys, defaults and config parser (helpers/node/policy.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/policy.h"

static void test_policy_defaults_match_readme(void **state)
{
	struct ibp_policy p;
	(void)state;
	ibp_policy_init(&p);
	assert_int_equal(p.link_layer, IBP_POLICY_LL_ANY);
	assert_true(p.min_rate == 0);
	assert_int_equal(p.min_width, 0);
	assert_string_equal(p.min_speed, "");
	assert_int_equal(p.expect_hcas, -1);
	assert_int_equal(p.expect_ports, -1);
	assert_int_equal(p.counter_window_ms, 0);
	assert_true(p.check_pcie && p.check_netdev && p.check_gdr && p.check_counters);
	assert_int_equal(p.min_mtu, 0);
	assert_true(p.min_memlock_kb == UINT64_MAX);
	assert_true(p.test_timeout_s == 5);
	assert_int_equal(p.test_port_lo, 230);
	assert_int_equal(p.test_port_hi, 299);
	assert_string_equal(p.test_transport, "verbs");
	assert_true(p.link_watch);
	assert_true(p.xmit_wait_tick_ns == 4);
	assert_true(p.watch_interval_s == 1);
	assert_true(p.watch_flap_s == 0);
	/* consistency: what breaks NCCL fails, what slows it warns */
	assert_int_equal(p.consistency[IBP_CK_HCA_SET], IBP_SEV_FAIL);
	assert_int_equal(p.consistency[IBP_CK_LINK_LAYER], IBP_SEV_FAIL);
	assert_int_equal(p.consistency[IBP_CK_GID], IBP_SEV_FAIL);
	assert_int_equal(p.consistency[IBP_CK_NCCL_ENV], IBP_SEV_FAIL);
	assert_int_equal(p.consistency[IBP_CK_FIRMWARE], IBP_SEV_WARN);
	assert_int_equal(p.consistency[IBP_CK_MTU], IBP_SEV_WARN);
	assert_int_equal(p.consistency[IBP_CK_KERNEL], IBP_SEV_WARN);
	assert_int_equal(p.consistency[IBP_CK_GDR], IBP_SEV_WARN);
	assert_string_equal(ibp_consistency_key_name(IBP_CK_RDMA_CORE), "rdma_core");
	assert_null(ibp_consistency_key_name(IBP_CK_N));
	/* infiniband-diags' error_thresholds */
	const struct ibp_counter_limit *l = ibp_policy_counter_limit(&p, "symbol_error");
	assert_non_null(l);
	assert_true(l->warn == 10 && l->fail == IBP_COUNTER_OFF);
	l = ibp_policy_counter_limit(&p, "port_xmit_discards");
	assert_true(l && l->warn == 100);
	l = ibp_policy_counter_limit(&p, "excessive_buffer_overrun_errors");
	assert_true(l && l->warn == 10);
	assert_null(ibp_policy_counter_limit(&p, "port_xmit_wait"));
	assert_null(ibp_policy_counter_limit(&p, "port_xmit_data"));
}

static const struct {
	const char *pair;
	int rc;
} pairs[] = {
    {"link_layer=ib", 0},
    {"link_layer=eth", 0},
    {"link_layer=any", 0},
    {"link_layer=fddi", -EINVAL},
    {"min_rate=400", 0},
    {"min_rate=53.125", 0},
    {"min_rate=-1", -EINVAL},
    {"min_rate=1e3", -EINVAL},
    {"min_rate=400Gb", -EINVAL},
    {"min_rate=", -EINVAL},
    {"min_rate=100001", -EINVAL},
    {"min_width=4", 0},
    {"min_width=3", -EINVAL},
    {"min_speed=ndr", 0},
    {"min_speed=NDR2", -EINVAL},
    {"expect_hcas=0", 0},
    {"expect_hcas=8", 0},
    {"expect_hcas=1025", -EINVAL},
    {"expect_hcas= 8", -EINVAL},
    {"expect_hcas=99999999999999999999999", -EINVAL},
    {"expect_ports=-1", -EINVAL},
    {"hcas=mlx5_0,mlx5_1", 0},
    {"hcas=mlx5_0,,mlx5_1", -EINVAL},
    {"hcas=mlx5_0,", -EINVAL},
    {"hcas=mlx5 0", -EINVAL},
    {"hcas=../etc", -EINVAL}, /* '/' not allowed */
    {"ignore_hcas=mlx5_bond_0", 0},
    {"counter_window=1000", 0},
    {"counter_window=10001", -EINVAL},
    {"counter_warn=symbol_error=0", 0},
    {"counter_warn=symbol_error=off", 0},
    {"counter_fail=link_downed=100", 0},
    {"counter_fail=link_downed", -EINVAL},
    {"counter_fail==5", -EINVAL},
    {"counter_fail=a/b=5", -EINVAL},
    {"check_pcie=no", 0},
    {"check_pcie=maybe", -EINVAL},
    {"min_mtu=4096", 0},
    {"min_mtu=70000", -EINVAL},
    {"min_memlock=unlimited", 0},
    {"min_memlock=64M", 0},
    {"min_memlock=64X", -EINVAL},
    {"min_memlock=99999999999999999999T", -EINVAL},
    {"nccl_hca=task", 0},
    {"nccl_hca=rank", -EINVAL},
    {"ompi_pml=ucx", 0},
    {"socket_ifname=eth0", 0},
    {"socket_ifname=eth;rm", -EINVAL},
    {"test_timeout=2.5", 0},
    {"test_timeout=0", -EINVAL},
    {"test_min_bw=1.5", -EINVAL},
    {"test_ports=47000-47999", 0},
    {"test_ports=47999-47000", -EINVAL},
    {"test_ports=80-90", 0},
    {"test_ports=0-90", -EINVAL},
    {"test_ports=230-65536", -EINVAL},
    {"test_ports=-90", -EINVAL},
    {"test_ports=90-", -EINVAL},
    {"test_ports=47000", -EINVAL},
    {"test_pairing=any", 0},
    {"test_transport=socket", 0},
    {"test_transport=tcp", -EINVAL},
    {"consistency=firmware:fail", 0},
    {"consistency=hca_set:off,kernel:fail", 0},
    {"consistency=all:warn,gid:fail", 0},
    {"consistency=", -EINVAL},
    {"consistency=firmware", -EINVAL},
    {"consistency=firmware:maybe", -EINVAL},
    {"consistency=colour:fail", -EINVAL},
    {"consistency=firmware:fail,", -EINVAL},
    {"consistency=firmware:fail,,mtu:off", -EINVAL},
    {"consistency=firmware:fail,bogus:off", -EINVAL},
    {"link_watch=no", 0},
    {"link_watch=maybe", -EINVAL},
    {"xmit_wait_tick_ns=4", 0},
    {"xmit_wait_tick_ns=0.5", 0},
    {"xmit_wait_tick_ns=0", -EINVAL},
    {"xmit_wait_tick_ns=-4", -EINVAL},
    {"xmit_wait_tick_ns=100001", -EINVAL},
    {"watch_interval=0", 0},
    {"watch_interval=0.25", 0},
    {"watch_interval=3600", 0},
    {"watch_interval=0.01", -EINVAL},
    {"watch_interval=3601", -EINVAL},
    {"watch_interval=-1", -EINVAL},
    {"watch_interval=1s", -EINVAL},
    {"watch_flap=0", 0},
    {"watch_flap=5.5", 0},
    {"watch_flap=600", 0},
    {"watch_flap=601", -EINVAL},
    {"watch_flap=", -EINVAL},
    {"no_such_key=1", -ENOENT},
    {"=1", -EINVAL},
    {"justakey", -EINVAL},
};

static void test_policy_pairs_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct ibp_policy p, before;
		char err[256] = "";
		ibp_policy_init(&p);
		before = p;
		int rc = ibp_policy_set_pair(&p, pairs[i].pair, err, sizeof(err));
		if (rc != pairs[i].rc)
			fail_msg("'%s': rc %d, want %d (%s)", pairs[i].pair, rc, pairs[i].rc, err);
		if (rc) {
			assert_true(err[0] != '\0');
			/* a refused value leaves the policy as it was */
			assert_memory_equal(&p, &before, sizeof(p));
		}
	}
}

static void test_policy_values_applied(void **state)
{
	struct ibp_policy p;
	char err[256];
	(void)state;
	ibp_policy_init(&p);
	assert_int_equal(ibp_policy_set(&p, "min_speed", "ndr", err, sizeof(err)), 0);
	assert_string_equal(p.min_speed, "NDR");
	ibp_policy_set(&p, "min_rate", "53.125", err, sizeof(err));
	assert_true(p.min_rate == 53.125);
	ibp_policy_set(&p, "hcas", "mlx5_0,mlx5_10", err, sizeof(err));
	assert_int_equal(p.n_hcas, 2);
	assert_string_equal(p.hcas[1], "mlx5_10");
	ibp_policy_set(&p, "hcas", "", err, sizeof(err));
	assert_int_equal(p.n_hcas, 0);
	ibp_policy_set(&p, "min_memlock", "64M", err, sizeof(err));
	assert_true(p.min_memlock_kb == 65536);
	ibp_policy_set(&p, "counter_fail", "symbol_error=5", err, sizeof(err));
	const struct ibp_counter_limit *l = ibp_policy_counter_limit(&p, "symbol_error");
	assert_true(l->warn == 10 && l->fail == 5);
	ibp_policy_set(&p, "counter_warn", "port_xmit_wait=1000", err, sizeof(err));
	l = ibp_policy_counter_limit(&p, "port_xmit_wait");
	assert_true(l && l->warn == 1000 && l->fail == IBP_COUNTER_OFF);
	ibp_policy_set(&p, "test_ports", "50000-50010", err, sizeof(err));
	assert_int_equal(p.test_port_lo, 50000);
	assert_int_equal(p.test_port_hi, 50010);
	ibp_policy_set(&p, "link_layer", "roce", err, sizeof(err));
	assert_int_equal(p.link_layer, IBP_POLICY_LL_ETH);
	assert_int_equal(
	    ibp_policy_set(&p, "consistency", "firmware:fail,hca_set:off", err, sizeof(err)), 0);
	assert_int_equal(p.consistency[IBP_CK_FIRMWARE], IBP_SEV_FAIL);
	assert_int_equal(p.consistency[IBP_CK_HCA_SET], IBP_CONSISTENCY_OFF);
	assert_int_equal(p.consistency[IBP_CK_GID], IBP_SEV_FAIL);
	ibp_policy_set(&p, "consistency", "all:off,gid:warn", err, sizeof(err));
	assert_int_equal(p.consistency[IBP_CK_FIRMWARE], IBP_CONSISTENCY_OFF);
	assert_int_equal(p.consistency[IBP_CK_GID], IBP_SEV_WARN);
	/* a bad item anywhere changes nothing */
	assert_int_not_equal(
	    ibp_policy_set(&p, "consistency", "gid:fail,bogus:off", err, sizeof(err)), 0);
	assert_int_equal(p.consistency[IBP_CK_GID], IBP_SEV_WARN);
	ibp_policy_set(&p, "link_watch", "no", err, sizeof(err));
	assert_false(p.link_watch);
	ibp_policy_set(&p, "xmit_wait_tick_ns", "32", err, sizeof(err));
	assert_true(p.xmit_wait_tick_ns == 32);
	ibp_policy_set(&p, "watch_interval", "0.5", err, sizeof(err));
	assert_true(p.watch_interval_s == 0.5);
	ibp_policy_set(&p, "watch_flap", "10", err, sizeof(err));
	assert_true(p.watch_flap_s == 10);
	assert_int_equal(ibp_link_speed_rank("HDR"), 7);
	assert_true(ibp_link_speed_rank("FDR10") < ibp_link_speed_rank("FDR"));
	assert_int_equal(ibp_link_speed_rank("bogus"), 0);
}

static void test_policy_errors_name_key_and_value(void **state)
{
	struct ibp_policy p;
	char err[256];
	(void)state;
	ibp_policy_init(&p);
	assert_int_equal(ibp_policy_set(&p, "min_rat", "1", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "unknown key 'min_rat'");
	assert_int_equal(ibp_policy_set(&p, "min_width", "3", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bad value '3' for key 'min_width': expected lanes: 0 (from the "
				 "node's peers), 1, 2, 4, 8 or 12");
	/* control characters never reach the message */
	ibp_policy_set(&p, "link_layer", "x\ny\x1b[2J", err, sizeof(err));
	assert_null(strchr(err, '\n'));
	assert_null(strchr(err, '\x1b'));
	/* counters beyond the table's room */
	int rc = 0;
	for (int i = 0; i < 40 && !rc; i++) {
		char v[64];
		snprintf(v, sizeof(v), "extra_%d=1", i);
		rc = ibp_policy_set(&p, "counter_warn", v, err, sizeof(err));
	}
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, "at most 32"));
	assert_true(ibp_policy_has_key("counter_window"));
	assert_false(ibp_policy_has_key("sysfs_root"));
	assert_false(ibp_policy_has_key(NULL));
}

struct other_seen {
	int calls;
	char last[64];
};

static int other_key(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
	struct other_seen *s = arg;
	if (strcmp(key, "drain")) {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -ENOENT;
	}
	s->calls++;
	snprintf(s->last, sizeof(s->last), "%s", value);
	return 0;
}

static void test_policy_config_text(void **state)
{
	struct ibp_policy p;
	struct other_seen seen = {0};
	char err[256];
	(void)state;
	static const char good[] = "# site policy\n"
				   "\n"
				   "  min_rate = 400   # NDR\n"
				   "link_layer=ib\r\n"
				   "drain=yes\n"
				   "hcas=mlx5_0\t# trailing comment";
	ibp_policy_init(&p);
	assert_int_equal(ibp_policy_parse_text(&p, good, strlen(good), "site.conf", other_key,
					       &seen, err, sizeof(err)),
			 0);
	assert_true(p.min_rate == 400);
	assert_int_equal(p.link_layer, IBP_POLICY_LL_IB);
	assert_int_equal(seen.calls, 1);
	assert_string_equal(seen.last, "yes");
	assert_string_equal(p.hcas[0], "mlx5_0");
	/* '#' inside a value is not a comment: the value is refused whole */
	static const char hash[] = "link_layer=ib#x\n";
	assert_int_equal(
	    ibp_policy_parse_text(&p, hash, strlen(hash), "c", NULL, NULL, err, sizeof(err)),
	    -EINVAL);

	static const char badline[] = "min_rate=400\nmin_width=3\n";
	assert_int_equal(ibp_policy_parse_text(&p, badline, strlen(badline), "site.conf", NULL,
					       NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "site.conf:2: bad value '3' for key 'min_width'"));
	static const char nokey[] = "drain=yes\n";
	assert_int_equal(
	    ibp_policy_parse_text(&p, nokey, strlen(nokey), "c", NULL, NULL, err, sizeof(err)),
	    -ENOENT);
	assert_string_equal(err, "c:1: unknown key 'drain'");
	static const char noeq[] = "\n\nmin_rate\n";
	assert_int_equal(
	    ibp_policy_parse_text(&p, noeq, strlen(noeq), "c", NULL, NULL, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "c:3: bad line 'min_rate'"));
	static char huge[IBP_POLICY_LINE_MAX + 10];
	memset(huge, 'a', sizeof(huge));
	assert_int_equal(
	    ibp_policy_parse_text(&p, huge, sizeof(huge), "c", NULL, NULL, err, sizeof(err)),
	    -E2BIG);
	static const char nul[] = "min_rate=4\0 0\n";
	assert_int_equal(
	    ibp_policy_parse_text(&p, nul, sizeof(nul) - 1, "c", NULL, NULL, err, sizeof(err)),
	    -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_policy_defaults_match_readme),
	    cmocka_unit_test(test_policy_pairs_table),
	    cmocka_unit_test(test_policy_values_applied),
	    cmocka_unit_test(test_policy_errors_name_key_and_value),
	    cmocka_unit_test(test_policy_config_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
