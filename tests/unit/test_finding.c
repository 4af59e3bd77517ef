/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the findings list (helpers/core/finding.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/finding.h"

static void test_findings_addf_fields_and_format(void **state)
{
	struct ibp_findings f;
	char line[512];
	(void)state;

	ibp_findings_init(&f);
	assert_int_equal(ibp_findings_worst(&f), IBP_SEV_OK);
	assert_int_equal(ibp_findings_addf(&f, "width_degraded", IBP_SEV_FAIL, IBP_CLASS_NODE,
					   "mlx5_3", 1, "4X", "reseat or replace the cable",
					   "link width %uX", 1U),
			 0);
	const struct ibp_finding *x = &f.v[0];
	assert_string_equal(x->code, "width_degraded");
	assert_string_equal(x->device, "mlx5_3");
	assert_int_equal(x->port, 1);
	assert_string_equal(x->observed, "link width 1X");
	assert_string_equal(x->node, "");
	int n = ibp_finding_format(x, "gpu017", line, sizeof(line));
	assert_string_equal(line, "gpu017: mlx5_3 port 1: link width 1X, expected 4X: reseat or "
				  "replace the cable");
	assert_int_equal(n, (int)strlen(line));
	/* the length is reported without a buffer, as snprintf does */
	assert_int_equal(ibp_finding_format(x, "gpu017", NULL, 0), n);
	ibp_findings_release(&f);
	assert_null(f.v);
	assert_int_equal(f.n, 0);
}

static const struct {
	const char *device;
	int port;
	const char *node, *expected, *fix, *want;
} formats[] = {
    {NULL, 0, NULL, NULL, NULL, "n1: seen"},
    {"mlx5_0", 0, NULL, NULL, "fix it", "n1: mlx5_0: seen: fix it"},
    {"mlx5_0", 2, NULL, "x", NULL, "n1: mlx5_0 port 2: seen, expected x"},
    {NULL, 0, "other", "x", "f", "other: seen, expected x: f"},
};

static void test_finding_format_optional_parts(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct ibp_findings f = {0};
		char line[256];
		assert_int_equal(ibp_findings_addf(&f, "c", IBP_SEV_WARN, IBP_CLASS_JOB,
						   formats[i].device, formats[i].port,
						   formats[i].expected, formats[i].fix, "seen"),
				 0);
		if (formats[i].node)
			strcpy(f.v[0].node, formats[i].node);
		ibp_finding_format(&f.v[0], "n1", line, sizeof(line));
		assert_string_equal(line, formats[i].want);
		ibp_findings_release(&f);
	}
}

static void test_findings_long_text_cut_with_ellipsis(void **state)
{
	struct ibp_findings f = {0};
	char big[600];
	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(
	    ibp_findings_addf(&f, big, IBP_SEV_FAIL, IBP_CLASS_NODE, big, 1, big, big, "%s", big),
	    0);
	const struct ibp_finding *x = &f.v[0];
	assert_int_equal(strlen(x->code), IBP_CODE_MAX - 1);
	assert_int_equal(strlen(x->observed), IBP_TEXT_MAX - 1);
	assert_int_equal(strlen(x->device), IBP_DEV_MAX - 1);
	assert_string_equal(x->observed + IBP_TEXT_MAX - 4, "...");
	assert_string_equal(x->fix + IBP_TEXT_MAX - 4, "...");
	/* exactly fitting text is kept whole */
	char fit[IBP_TEXT_MAX];
	memset(fit, 'b', sizeof(fit) - 1);
	fit[sizeof(fit) - 1] = '\0';
	ibp_findings_addf(&f, "c", IBP_SEV_OK, IBP_CLASS_NODE, NULL, 0, NULL, NULL, "%s", fit);
	assert_string_equal(f.v[1].observed, fit);
	ibp_findings_release(&f);
}

/*
 * A fix of two-byte characters after one ASCII byte, cut at its field's
 * end: a cut at a fixed byte would split the last character; none is split.
 */
static void test_findings_cut_keeps_utf8_whole(void **state)
{
	struct ibp_findings f = {0};
	char fix[2 * IBP_TEXT_MAX + 2] = "x";
	size_t n;
	(void)state;
	for (size_t i = 1; i + 2 < sizeof(fix); i += 2)
		memcpy(fix + i, "\xc3\xa9", 2); /* e acute */
	fix[sizeof(fix) - 1] = '\0';
	assert_int_equal(
	    ibp_findings_addf(&f, "c", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0, NULL, fix, "seen"),
	    0);
	n = strlen(f.v[0].fix);
	assert_true(n >= IBP_TEXT_MAX - 5 && n <= IBP_TEXT_MAX - 1);
	assert_string_equal(f.v[0].fix + n - 3, "...");
	assert_int_equal((n - 3 - 1) % 2, 0);
	for (size_t i = 1; i < n - 3; i += 2)
		assert_memory_equal(f.v[0].fix + i, "\xc3\xa9", 2);
	ibp_findings_release(&f);
}

static void test_findings_worst_count_and_names(void **state)
{
	struct ibp_findings f;
	(void)state;
	ibp_findings_init(&f);
	for (int i = 0; i < 100; i++) /* grows past the first allocation */
		ibp_findings_addf(&f, "c", i == 50 ? IBP_SEV_FAIL : IBP_SEV_WARN,
				  i % 2 ? IBP_CLASS_JOB : IBP_CLASS_NODE, NULL, 0, NULL, NULL, "%d",
				  i);
	ibp_findings_addf(&f, "info", IBP_SEV_OK, IBP_CLASS_NODE, NULL, 0, NULL, NULL, "x");
	assert_int_equal(f.n, 101);
	assert_string_equal(f.v[99].observed, "99");
	assert_int_equal(ibp_findings_worst(&f), IBP_SEV_FAIL);
	assert_int_equal(ibp_findings_count(&f, IBP_SEV_OK, -1), 101);
	assert_int_equal(ibp_findings_count(&f, IBP_SEV_WARN, -1), 100);
	assert_int_equal(ibp_findings_count(&f, IBP_SEV_FAIL, -1), 1);
	assert_int_equal(ibp_findings_count(&f, IBP_SEV_WARN, IBP_CLASS_JOB), 50);
	assert_int_equal(ibp_findings_count(&f, IBP_SEV_FAIL, IBP_CLASS_JOB), 0);
	assert_string_equal(ibp_severity_name(IBP_SEV_OK), "ok");
	assert_string_equal(ibp_severity_name(IBP_SEV_WARN), "warn");
	assert_string_equal(ibp_severity_name(IBP_SEV_FAIL), "fail");
	assert_string_equal(ibp_class_name(IBP_CLASS_NODE), "node");
	assert_string_equal(ibp_class_name(IBP_CLASS_JOB), "job");
	ibp_findings_release(&f);
	ibp_findings_release(&f); /* safe twice */
}

/* The one filter: what counts toward a verdict, what drains. */
static void test_finding_counts_and_drainable(void **state)
{
	struct ibp_finding node = {.severity = IBP_SEV_FAIL, .fclass = IBP_CLASS_NODE};
	struct ibp_finding job = {.severity = IBP_SEV_FAIL, .fclass = IBP_CLASS_JOB};
	struct ibp_finding setup = {.severity = IBP_SEV_FAIL, .fclass = IBP_CLASS_NODE};
	struct ibp_finding warn = {.severity = IBP_SEV_WARN, .fclass = IBP_CLASS_NODE};

	(void)state;
	strcpy(node.code, "width_degraded");
	strcpy(job.code, "memlock_low");
	strcpy(setup.code, IBP_SETUP_CODE);
	strcpy(warn.code, "counter_high");
	/* health asked for: everything counts */
	assert_true(ibp_finding_counts(&node, true));
	assert_true(ibp_finding_counts(&job, true));
	/* not asked for: the node's findings do not, job faults and setup do */
	assert_false(ibp_finding_counts(&node, false));
	assert_true(ibp_finding_counts(&job, false));
	assert_true(ibp_finding_counts(&setup, false));
	/* only a node failure of the node's own drains */
	assert_true(ibp_finding_drainable(&node));
	assert_false(ibp_finding_drainable(&job));
	assert_false(ibp_finding_drainable(&setup));
	assert_false(ibp_finding_drainable(&warn));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_findings_addf_fields_and_format),
	    cmocka_unit_test(test_finding_format_optional_parts),
	    cmocka_unit_test(test_findings_long_text_cut_with_ellipsis),
	    cmocka_unit_test(test_findings_cut_keeps_utf8_whole),
	    cmocka_unit_test(test_findings_worst_count_and_names),
	    cmocka_unit_test(test_finding_counts_and_drainable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
