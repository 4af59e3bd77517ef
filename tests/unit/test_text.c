/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_text: escaping user- and hardware-controlled text for logs and terminals. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/finding.h"
#include "ibprep/text.h"

static const struct {
	const char *in, *out;
} cases[] = {
    {"mlx5_0:1", "mlx5_0:1"},
    {"\x1b[2J\x1b]0;owned\x07", "\\x1b[2J\\x1b]0;owned\\x07"}, /* terminal sequences */
    {"a\nb\tc\rd", "a b c d"},                                 /* one line stays one */
    {"back\\slash", "back\\\\slash"},
    {"del\x7f", "del\\x7f"},
    {"c1\xc2\x9b"
     "2J",
     "c1\\xc2\\x9b2J"},                                       /* U+009B (CSI) is a control */
    {"bad\xff\xfe", "bad\\xff\\xfe"},                         /* not UTF-8 */
    {"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"}, /* well-formed UTF-8 kept */
};

static void test_text_escape_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[128];
		int n = ibp_text_escape(cases[i].in, out, sizeof(out));

		if (strcmp(out, cases[i].out) != 0)
			fail_msg("case %zu: '%s', expected '%s'", i, out, cases[i].out);
		assert_int_equal(n, (int)strlen(cases[i].out));
	}
}

static void test_text_escape_cut_is_marked_and_terminated(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(ibp_text_escape("\x1b\x1b\x1b\x1b", out, sizeof(out)), -ENOSPC);
	assert_true(strlen(out) < sizeof(out));
	assert_non_null(strstr(out, "..."));
	assert_int_equal(ibp_text_escape("x", NULL, 0), -EINVAL);
}

/* A finding that carries a user's value is printed escaped. */
static void test_finding_format_escapes_user_text(void **state)
{
	struct ibp_findings f;
	char line[512];

	(void)state;
	ibp_findings_init(&f);
	assert_int_equal(ibp_findings_addf(&f, "env_hca_unknown", IBP_SEV_WARN, IBP_CLASS_JOB, NULL,
					   0, NULL, "unset it", "NCCL_IB_HCA=%s names no HCA",
					   "mlx5_0\x1b[31m"),
			 0);
	ibp_finding_format(&f.v[0], "n1", line, sizeof(line));
	assert_null(strchr(line, '\x1b'));
	assert_non_null(strstr(line, "mlx5_0\\x1b[31m"));
	ibp_findings_release(&f);
}

/* The message set as ibp_format_cut sets it, the code returned, no buffer no write. */
/* A cut text keeps whole UTF-8 characters before its "..." (and its length). */
static void test_format_cut_at_a_character_boundary(void **state)
{
	static const struct {
		size_t len;
		const char *in, *out;
	} cut[] = {
	    {10, "abcdefghijkl", "abcdef..."},                       /* ASCII */
	    {10, "abcde\xe2\x82\xacxyz", "abcde..."},                /* 3 bytes, 1 kept */
	    {10, "abcd\xe2\x82\xacxyz", "abcd..."},                  /* 3 bytes, 2 kept */
	    {10, "abc\xe2\x82\xacwxyz", "abc\xe2\x82\xac..."},       /* ends at the cut */
	    {10, "abcde\xc3\xa9xyz", "abcde..."},                    /* 2 bytes, 1 kept */
	    {10, "abcd\xc3\xa9wxyz", "abcd\xc3\xa9..."},             /* ends at the cut */
	    {10, "abc\xf0\x9f\x98\x80xyz", "abc..."},                /* 4 bytes, 3 kept */
	    {10, "ab\xf0\x9f\x98\x80wxyz", "ab\xf0\x9f\x98\x80..."}, /* ends at the cut */
	    {10, "abcde\xff\xfexyz", "abcde\xff..."},                /* not UTF-8: bytes */
	    {10, "\x82\x82\x82\x82\x82\x82\x82xyz", "\x82\x82\x82\x82\x82\x82..."}, /* stray */
	    {5, "\xe2\x82\xacxy", "..."},
	    {4, "\xe2\x82\xacxy", "\xe2\x82\xac"}, /* too short for "...": vsnprintf's cut */
	    {10, "caf\xc3\xa9", "caf\xc3\xa9"},    /* not cut */
	};
	char buf[16];
	(void)state;

	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		int n = ibp_format_cut(buf, cut[i].len, "%s", cut[i].in);

		assert_int_equal(n, (int)strlen(cut[i].in));
		if (strcmp(buf, cut[i].out))
			fail_msg("case %zu: '%s', expected '%s'", i, buf, cut[i].out);
	}
}

static void test_errf_returns_the_code_with_the_message(void **state)
{
	char err[16] = "unchanged";

	(void)state;
	assert_int_equal(ibp_errf(-EPERM, err, sizeof(err), "%s: %d", "x", 7), -EPERM);
	assert_string_equal(err, "x: 7");
	assert_int_equal(ibp_errf(-EINVAL, err, sizeof(err), "%s", "a message too long"), -EINVAL);
	assert_string_equal(err, "a message to...");
	assert_int_equal(ibp_errf(-ENOENT, NULL, 0, "%s", "nowhere"), -ENOENT);
	assert_int_equal(ibp_errf(0, err, 0, "%s", "nothing"), 0);
	assert_string_equal(err, "a message to...");
}

/* Pieces appended in turn into LEN bytes: each one's return, the text and offset after. */
static const struct {
	const char *name;
	size_t len;
	const char *piece[3];
	int rc[3];
	const char *text;
	size_t off;
} appends[] = {
    {"empty into one byte", 1, {"", "", NULL}, {0, 0}, "", 0},
    {"exact fit", 6, {"abc", "de", NULL}, {0, 0}, "abcde", 5},
    {"exact fit, then empty", 6, {"abcde", "", NULL}, {0, 0}, "abcde", 5},
    {"cut", 6, {"abc", "def", NULL}, {0, -ENOSPC}, "abcde", 5},
    {"after a cut, refused", 6, {"abcdefg", "x", ""}, {-ENOSPC, -ENOSPC, 0}, "abcde", 5},
    {"no room at all", 0, {"a", NULL, NULL}, {-ENOSPC}, "sentinel", 0},
};

static void test_appendf_cut_fit_empty(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(appends) / sizeof(appends[0]); i++) {
		char buf[16] = "sentinel";
		size_t off = 0;

		for (size_t k = 0; k < 3 && appends[i].piece[k]; k++) {
			int rc = ibp_appendf(buf, appends[i].len, &off, "%s", appends[i].piece[k]);

			if (rc != appends[i].rc[k])
				fail_msg("%s: piece %zu: %d, expected %d", appends[i].name, k, rc,
					 appends[i].rc[k]);
		}
		assert_string_equal(buf, appends[i].text);
		assert_int_equal(off, appends[i].off);
		assert_int_equal(buf[appends[i].len ? appends[i].len - 1 : 0],
				 appends[i].len ? '\0' : 's');
	}
}

static void test_appendf_offset_past_end_refused(void **state)
{
	char buf[8] = "abcdefg";
	size_t off = 9;

	(void)state;
	assert_int_equal(ibp_appendf(buf, sizeof(buf), &off, "x"), -ENOSPC);
	assert_int_equal(off, 9);
	assert_string_equal(buf, "abcdefg");
	off = 2;
	assert_int_equal(ibp_appendf(buf, sizeof(buf), &off, "%d:%s", 4, "x"), 0);
	assert_int_equal(off, 5);
	assert_string_equal(buf, "ab4:x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_escape_cases),
	    cmocka_unit_test(test_text_escape_cut_is_marked_and_terminated),
	    cmocka_unit_test(test_finding_format_escapes_user_text),
	    cmocka_unit_test(test_errf_returns_the_code_with_the_message),
	    cmocka_unit_test(test_format_cut_at_a_character_boundary),
	    cmocka_unit_test(test_appendf_cut_fit_empty),
	    cmocka_unit_test(test_appendf_offset_past_end_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
