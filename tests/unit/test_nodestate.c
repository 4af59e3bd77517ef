/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the drain/resume decisions of `ibprep check --slurm` (helpers/node/nodestate.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/nodestate.h"

/* Lines as scontrol show node -o prints them (22.05: Reason last, then Comment etc. if set). */
static const struct {
	const char *line, *node;
	int rc;
	const char *state;
	bool drain;
	const char *reason;
} parses[] = {
    {"NodeName=n1 Arch=x86_64 CoresPerSocket=1 State=IDLE ThreadsPerCore=1 TmpDisk=0", "n1", 0,
     "IDLE", false, ""},
    {"NodeName=n1 State=IDLE+DRAIN Weight=1 Reason=spank-ib: n1: mlx5_4 port 1: port state DOWN "
     "(physical state Polling), expected ACTIVE: check the cable [root@2026-12-01T14:00:00]",
     "n1", 0, "IDLE+DRAIN", true,
     "spank-ib: n1: mlx5_4 port 1: port state DOWN (physical state Polling), expected ACTIVE: "
     "check the cable"},
    {"NodeName=n2 State=MIXED+DRAIN Reason=maintenance [admin@2026-12-01T10:00:00] "
     "Comment=(null)",
     "n2", 0, "MIXED+DRAIN", true, "maintenance"},
    {"NodeName=n2 State=DOWN+NOT_RESPONDING Reason=Not responding [slurm@2026-12-01T10:00:00]",
     "n2", 0, "DOWN+NOT_RESPONDING", false, "Not responding"},
    {"NodeName=n3 State=DRAINED Reason=NHC: check_hw_ib:  No IB port is ACTIVE (LinkUp 400 "
     "Gb/sec). [root@2026-12-01T10:00:00]",
     "n3", 0, "DRAINED", true, "NHC: check_hw_ib:  No IB port is ACTIVE (LinkUp 400 Gb/sec)."},
    /* a device list with brackets inside the reason is not the stamp */
    {"NodeName=n1 State=IDLE+DRAIN Reason=spank-ib: counters mlx5_[0-1] [root@t]", "n1", 0,
     "IDLE+DRAIN", true, "spank-ib: counters mlx5_[0-1]"},
    /* no stamp (reason_time 0): to the end of the line */
    {"NodeName=n1 State=IDLE+DRAINING Reason=spank-ib: x y\n", "n1", 0, "IDLE+DRAINING", true,
     "spank-ib: x y"},
    {"NodeName=n10 State=IDLE", "n1", -ENOENT, "", false, ""},
    {"NodeName=n1 Arch=x86_64", "n1", -EINVAL, "", false, ""},
    {"Node n1 not found", "n1", -ENOENT, "", false, ""},
    {"", "n1", -ENOENT, "", false, ""},
};

static void test_node_state_parse_scontrol_lines(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parses) / sizeof(parses[0]); i++) {
		struct ibp_node_state st;
		int rc = ibp_node_state_parse(parses[i].line, parses[i].node, &st);
		if (rc != parses[i].rc)
			fail_msg("case %zu: rc %d, want %d", i, rc, parses[i].rc);
		if (rc)
			continue;
		assert_string_equal(st.state, parses[i].state);
		assert_int_equal(st.drain, parses[i].drain);
		assert_string_equal(st.reason, parses[i].reason);
	}
}

#define OURS   "spank-ib check: mlx5_4 port 1: port state DOWN"
#define NEW    "spank-ib check: mlx5_3 port 1: link width 1X, expected 4X"
#define LEGACY "spank-ib: n1: mlx5_4 port 1: port state DOWN" /* the previous check's */
#define PLUGIN "spank-ib: mlx5_3 port 1: link went down 2 times during job 7.0, DOWN now"

static const struct {
	bool drain;
	const char *reason;
	bool fault;
	const char *ours;
	enum ibp_drain_action want;
} decisions[] = {
    /* healthy */
    {false, "", false, NULL, IBP_DRAIN_NOTHING},
    {true, OURS, false, NULL, IBP_DRAIN_RESUME},
    {true, "maintenance", false, NULL, IBP_DRAIN_NOTHING},
    {true, "NHC: check_fs_mount: /scratch not mounted", false, NULL, IBP_DRAIN_NOTHING},
    {true, "", false, NULL, IBP_DRAIN_NOTHING},
    {false, "Not responding", false, NULL, IBP_DRAIN_NOTHING},
    {false, OURS, false, NULL, IBP_DRAIN_NOTHING},
    /* a node fault */
    {false, "", true, OURS, IBP_DRAIN_SET},
    {true, OURS, true, OURS, IBP_DRAIN_NOTHING},
    {true, OURS, true, NEW, IBP_DRAIN_UPDATE},
    {true, "maintenance", true, OURS, IBP_DRAIN_NOTHING},
    {true, "NHC: check_hw_ib: no port", true, OURS, IBP_DRAIN_NOTHING},
    {false, "Not responding", true, OURS, IBP_DRAIN_NOTHING},
    {true, "", true, OURS, IBP_DRAIN_NOTHING},
    {false, OURS, true, OURS, IBP_DRAIN_SET},
    /* "spank-ib:" without the space is not the prefix */
    {true, "spank-ib:x", false, NULL, IBP_DRAIN_NOTHING},
    {true, "spank-ib check:x", false, NULL, IBP_DRAIN_NOTHING},
    /* the previous version's check drains are the check's: resumed, updated */
    {true, LEGACY, false, NULL, IBP_DRAIN_RESUME},
    {true, LEGACY, true, NEW, IBP_DRAIN_UPDATE},
    /* another node's name is not this node's (n1) */
    {true, "spank-ib: n10: mlx5_4 port 1: port state DOWN", false, NULL, IBP_DRAIN_NOTHING},
    {true, "spank-ib: n1 mlx5_4", false, NULL, IBP_DRAIN_NOTHING},
    /* the plugin's drains (a step's link flap, the cross-node test): never touched */
    {true, PLUGIN, false, NULL, IBP_DRAIN_NOTHING},
    {true, PLUGIN, true, NEW, IBP_DRAIN_NOTHING},
    {true, "spank-ib: mlx5_3 port 1: link width 1X, expected 4X", false, NULL, IBP_DRAIN_NOTHING},
};

static void test_drain_decide_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(decisions) / sizeof(decisions[0]); i++) {
		struct ibp_node_state st = {.name = "n1", .drain = decisions[i].drain};
		snprintf(st.reason, sizeof(st.reason), "%s", decisions[i].reason);
		enum ibp_drain_action a =
		    ibp_drain_decide(&st, decisions[i].fault, decisions[i].ours);
		if (a != decisions[i].want)
			fail_msg("case %zu: %s, want %s", i, ibp_drain_action_name(a),
				 ibp_drain_action_name(decisions[i].want));
	}
}

static void test_drain_reason_ours_needs_the_node(void **state)
{
	(void)state;
	assert_true(ibp_drain_reason_ours(OURS, NULL));
	assert_true(ibp_drain_reason_ours(LEGACY, "n1"));
	assert_false(ibp_drain_reason_ours(LEGACY, NULL));
	assert_false(ibp_drain_reason_ours(LEGACY, ""));
	assert_false(ibp_drain_reason_ours(LEGACY, "n"));
	assert_false(ibp_drain_reason_ours(PLUGIN, "n1"));
	assert_false(ibp_drain_reason_ours(NULL, "n1"));
	assert_false(ibp_drain_reason_ours("spank-ib: n1", "n1"));
}

/* The one formatter: the plugin's prefix and the check's, the same text after it. */
static const struct {
	const char *prefix;
	const char *device;
	int port;
	const char *expected;
	const char *observed;
	const char *want;
} reasons[] = {
    {IBP_DRAIN_PREFIX, "mlx5_3", 1, "4X", "link width 1X",
     "spank-ib: mlx5_3 port 1: link width 1X, expected 4X"},
    {IBP_DRAIN_PREFIX_CHECK, "mlx5_3", 1, "4X", "link width 1X",
     "spank-ib check: mlx5_3 port 1: link width 1X, expected 4X"},
    /* the link watch's findings have no expected value */
    {IBP_DRAIN_PREFIX, "mlx5_3", 1, NULL, "link went down 2 times during job 7.0, DOWN now",
     "spank-ib: mlx5_3 port 1: link went down 2 times during job 7.0, DOWN now"},
    {IBP_DRAIN_PREFIX, "mlx5_3", 0, NULL, "gone", "spank-ib: mlx5_3: gone"},
    {IBP_DRAIN_PREFIX, NULL, 0, "8 rails", "HCA set 7 rails",
     "spank-ib: HCA set 7 rails, expected 8 rails"},
    /* sysfs and user text: one line, control bytes escaped */
    {IBP_DRAIN_PREFIX_CHECK, "mlx5_4", 1, "ACTIVE", "port state DOWN\n(\x1b[2J)",
     "spank-ib check: mlx5_4 port 1: port state DOWN (\\x1b[2J), expected ACTIVE"},
};

static void test_drain_reason_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		struct ibp_findings f;
		char buf[IBP_DRAIN_REASON_MAX];

		ibp_findings_init(&f);
		assert_int_equal(ibp_findings_addf(&f, "x_code", IBP_SEV_FAIL, IBP_CLASS_NODE,
						   reasons[i].device, reasons[i].port,
						   reasons[i].expected, "the fix is not in it",
						   "%s", reasons[i].observed),
				 0);
		strcpy(f.v[0].node, "n1"); /* the drained node is not named either */
		assert_true(ibp_drain_reason(&f, reasons[i].prefix, buf, sizeof(buf)));
		if (strcmp(buf, reasons[i].want) != 0)
			fail_msg("case %zu: '%s', want '%s'", i, buf, reasons[i].want);
		ibp_findings_release(&f);
	}
}

static void test_drain_reason_first_node_failure(void **state)
{
	struct ibp_findings f;
	char buf[IBP_DRAIN_REASON_MAX];
	(void)state;

	ibp_findings_init(&f);
	assert_false(ibp_drain_reason(&f, IBP_DRAIN_PREFIX_CHECK, buf, sizeof(buf)));
	assert_string_equal(buf, "");
	/* warnings, job faults and setup findings never drain */
	assert_int_equal(ibp_findings_addf(&f, "counter_high", IBP_SEV_WARN, IBP_CLASS_NODE,
					   "mlx5_0", 1, NULL, NULL, "symbol_error 12"),
			 0);
	assert_int_equal(ibp_findings_addf(&f, "memlock_low", IBP_SEV_FAIL, IBP_CLASS_JOB, NULL, 0,
					   "unlimited", NULL, "64 KiB"),
			 0);
	assert_int_equal(ibp_findings_addf(&f, IBP_SETUP_CODE, IBP_SEV_FAIL, IBP_CLASS_NODE, NULL,
					   0, NULL, NULL, "topology= not root's"),
			 0);
	assert_false(ibp_drain_reason(&f, IBP_DRAIN_PREFIX_CHECK, buf, sizeof(buf)));
	assert_int_equal(ibp_findings_addf(&f, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE,
					   "mlx5_4", 1, "ACTIVE", "check the cable",
					   "port state DOWN\n(physical state Polling)"),
			 0);
	assert_true(ibp_drain_reason(&f, IBP_DRAIN_PREFIX_CHECK, buf, sizeof(buf)));
	assert_string_equal(buf, "spank-ib check: mlx5_4 port 1: port state DOWN (physical state "
				 "Polling), expected ACTIVE");
	assert_true(ibp_drain_reason_ours(buf, "n1"));
	char fix[200];
	memset(fix, 'x', sizeof(fix) - 1);
	fix[sizeof(fix) - 1] = '\0';
	assert_int_equal(ibp_findings_addf(&f, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE,
					   "mlx5_3", 1, "4X", fix, "link width 1X"),
			 0);
	assert_true(ibp_drain_reason(&f, IBP_DRAIN_PREFIX_CHECK, buf, sizeof(buf)));
	assert_non_null(strstr(buf, "(+1 more)"));
	/* cut, never longer than the limit */
	struct ibp_findings g;
	ibp_findings_init(&g);
	assert_int_equal(ibp_findings_addf(&g, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE,
					   "mlx5_3", 1, fix, fix, "%s", fix),
			 0);
	char big[1024];
	assert_true(ibp_drain_reason(&g, IBP_DRAIN_PREFIX, big, sizeof(big)));
	assert_int_equal(strlen(big), IBP_DRAIN_REASON_MAX - 1);
	assert_string_equal(big + strlen(big) - 3, "...");
	/* a smaller buffer: cut to it */
	char small[40];
	assert_true(ibp_drain_reason(&g, IBP_DRAIN_PREFIX, small, sizeof(small)));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_string_equal(small + strlen(small) - 3, "...");
	ibp_findings_release(&g);
	ibp_findings_release(&f);
}

/*
 * The one-shot drain's reason (spank-ib-watch --drain-now): what it takes
 * from its argument.  Clean text byte for byte; control bytes, DEL, C1
 * controls and broken UTF-8 as '?'; well-formed UTF-8 kept; no prefix,
 * nothing after it, too long: refused.
 */
static void test_drain_reason_clean_table(void **state)
{
	static const struct {
		const char *in;
		int rc;
		const char *out;
	} cases[] = {
	    {"spank-ib: mlx5_4 port 1: SM LID 0 (no subnet manager)", 0,
	     "spank-ib: mlx5_4 port 1: SM LID 0 (no subnet manager)"},
	    /* what ibp_text_escape made of a control byte stays as it is */
	    {"spank-ib: mlx5_0 port 1: fw \\x1b[2J", 0, "spank-ib: mlx5_0 port 1: fw \\x1b[2J"},
	    {"spank-ib: a\nb\rc\td", 0, "spank-ib: a?b?c?d"},
	    {"spank-ib: \x1b[2Jx\x7f", 0, "spank-ib: ?[2Jx?"},
	    {"spank-ib: caf\xc3\xa9 \xe2\x82\xac", 0, "spank-ib: caf\xc3\xa9 \xe2\x82\xac"},
	    /* C1 control (U+0085), a lone continuation byte, an overlong form */
	    {"spank-ib: \xc2\x85|\x80|\xc0\xaf", 0, "spank-ib: ??|?|??"},
	    /* a sequence cut short by ibp_format_cut's "..." */
	    {"spank-ib: x \xe2\x82...", 0, "spank-ib: x ??..."},
	    {"spank-ib: ", -EINVAL, ""},
	    {"spank-ib check: mlx5_0 port 1: down", -EINVAL, ""},
	    {"Prolog error", -EINVAL, ""},
	    {"", -EINVAL, ""},
	    {" spank-ib: x", -EINVAL, ""},
	};
	char out[IBP_DRAIN_REASON_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(out, 'Z', sizeof(out));
		assert_int_equal(ibp_drain_reason_clean(cases[i].in, out, sizeof(out)),
				 cases[i].rc);
		assert_string_equal(out, cases[i].out);
	}
	assert_int_equal(ibp_drain_reason_clean(NULL, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "");
	assert_int_equal(ibp_drain_reason_clean("spank-ib: x", NULL, 0), -EINVAL);
}

static void test_drain_reason_clean_length(void **state)
{
	char in[IBP_DRAIN_REASON_MAX + 8], out[IBP_DRAIN_REASON_MAX], small[16];

	(void)state;
	/* the longest reason spank-ib writes passes; one byte more does not */
	memset(in, 'x', sizeof(in));
	memcpy(in, IBP_DRAIN_PREFIX, strlen(IBP_DRAIN_PREFIX));
	in[IBP_DRAIN_REASON_MAX - 1] = '\0';
	assert_int_equal(ibp_drain_reason_clean(in, out, sizeof(out)), 0);
	assert_string_equal(out, in);
	in[IBP_DRAIN_REASON_MAX - 1] = 'x';
	in[IBP_DRAIN_REASON_MAX] = '\0';
	assert_int_equal(ibp_drain_reason_clean(in, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "");
	/* never past OUT */
	assert_int_equal(ibp_drain_reason_clean("spank-ib: 0123456789", small, sizeof(small)),
			 -EINVAL);
	assert_string_equal(small, "");
}

/* Whatever ibp_drain_reason writes (cut inside a UTF-8 character too) passes. */
static void test_drain_reason_clean_takes_every_reason(void **state)
{
	char text[600], reason[IBP_DRAIN_REASON_MAX], out[IBP_DRAIN_REASON_MAX];

	(void)state;
	for (size_t shift = 0; shift < 3; shift++) {
		struct ibp_findings f;
		size_t o = 0;

		ibp_findings_init(&f);
		for (size_t i = 0; i < shift; i++)
			text[o++] = 'a';
		while (o + 3 < sizeof(text)) {
			memcpy(text + o, "\xe2\x82\xac", 3); /* the euro sign, 3 bytes */
			o += 3;
		}
		text[o] = '\0';
		assert_int_equal(ibp_findings_addf(&f, "port_down", IBP_SEV_FAIL, IBP_CLASS_NODE,
						   "mlx5_3", 1, "", "", "%s", text),
				 0);
		assert_true(ibp_drain_reason(&f, IBP_DRAIN_PREFIX, reason, sizeof(reason)));
		assert_int_equal(ibp_drain_reason_clean(reason, out, sizeof(out)), 0);
		assert_int_equal(strlen(out), strlen(reason));
		assert_memory_equal(out, reason, strlen(IBP_DRAIN_PREFIX) + 10);
		ibp_findings_release(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_state_parse_scontrol_lines),
	    cmocka_unit_test(test_drain_decide_table),
	    cmocka_unit_test(test_drain_reason_ours_needs_the_node),
	    cmocka_unit_test(test_drain_reason_table),
	    cmocka_unit_test(test_drain_reason_first_node_failure),
	    cmocka_unit_test(test_drain_reason_clean_table),
	    cmocka_unit_test(test_drain_reason_clean_length),
	    cmocka_unit_test(test_drain_reason_clean_takes_every_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
