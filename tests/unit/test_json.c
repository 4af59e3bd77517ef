/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the streaming JSON writer (helpers/core/json.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/json.h"

/* One string value written alone, compact. */
static char *one_string(const char *s, size_t n)
{
	struct ibp_json j;
	ibp_json_init_buf(&j, 0);
	assert_int_equal(ibp_json_stringn(&j, s, n), 0);
	assert_int_equal(ibp_json_finish(&j), 0);
	char *out = strdup(ibp_json_buf(&j, NULL));
	ibp_json_release(&j);
	return out;
}

static const struct {
	const char *name, *in;
	size_t n; /* 0: strlen */
	const char *want;
} escapes[] = {
    {"plain", "mlx5_0", 0, "\"mlx5_0\"\n"},
    {"empty", "", 0, "\"\"\n"},
    {"quote_backslash", "a\"b\\c", 0, "\"a\\\"b\\\\c\"\n"},
    {"short_escapes", "\n\t\r\b\f", 0, "\"\\n\\t\\r\\b\\f\"\n"},
    {"control_u00xx", "\x01\x1f", 0, "\"\\u0001\\u001f\"\n"},
    {"del", "\x7f", 0, "\"\\u007f\"\n"},
    {"embedded_nul", "a\0b", 3, "\"a\\u0000b\"\n"},
    {"utf8_2byte_kept", "\xc3\xa9", 0, "\"\xc3\xa9\"\n"},
    {"utf8_3byte_kept", "\xe2\x82\xac", 0, "\"\xe2\x82\xac\"\n"},
    {"utf8_4byte_kept", "\xf0\x9f\x98\x80", 0, "\"\xf0\x9f\x98\x80\"\n"},
    {"stray_continuation", "\x80x", 0, "\"\\ufffdx\"\n"},
    {"overlong_slash", "\xc0\xaf", 0, "\"\\ufffd\\ufffd\"\n"},
    {"overlong_3byte", "\xe0\x80\xaf", 0, "\"\\ufffd\\ufffd\\ufffd\"\n"},
    {"surrogate", "\xed\xa0\x80", 0, "\"\\ufffd\\ufffd\\ufffd\"\n"},
    {"above_10ffff", "\xf4\x90\x80\x80", 0, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"\n"},
    {"truncated_at_end", "ab\xe2\x82", 0, "\"ab\\ufffd\\ufffd\"\n"},
    {"latin1_byte", "caf\xe9!", 0, "\"caf\\ufffd!\"\n"},
    {"ff_byte", "\xff", 0, "\"\\ufffd\"\n"},
};

static void test_json_string_escapes_exact(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
		size_t n = escapes[i].n ? escapes[i].n : strlen(escapes[i].in);
		char *got = one_string(escapes[i].in, n);
		if (strcmp(got, escapes[i].want))
			fail_msg("case %s: got %s want %s", escapes[i].name, got, escapes[i].want);
		free(got);
	}
}

static void test_json_document_compact_exact(void **state)
{
	struct ibp_json j;
	(void)state;
	ibp_json_init_buf(&j, 0);
	ibp_json_object_begin(&j);
	ibp_json_kv_int(&j, "schema", 1);
	ibp_json_kv_string(&j, "node", "gpu017");
	ibp_json_kv_double(&j, "rate_gbps", 400.0);
	ibp_json_kv_double(&j, "frac", 0.1);
	ibp_json_kv_double(&j, "nan", NAN);
	ibp_json_kv_uint(&j, "big", UINT64_MAX);
	ibp_json_kv_int(&j, "neg", INT64_MIN);
	ibp_json_kv_bool(&j, "t", true);
	ibp_json_kv_bool(&j, "f", false);
	ibp_json_kv_null(&j, "n");
	ibp_json_kv_string(&j, "nullstr", NULL);
	ibp_json_key(&j, "a");
	ibp_json_array_begin(&j);
	ibp_json_int(&j, 1);
	ibp_json_object_begin(&j);
	ibp_json_object_end(&j);
	ibp_json_array_begin(&j);
	ibp_json_array_end(&j);
	ibp_json_stringf(&j, "%s port %d", "mlx5_1", 1);
	ibp_json_array_end(&j);
	ibp_json_object_end(&j);
	assert_int_equal(ibp_json_finish(&j), 0);
	assert_string_equal(ibp_json_buf(&j, NULL),
			    "{\"schema\":1,\"node\":\"gpu017\",\"rate_gbps\":400,\"frac\":0.1,"
			    "\"nan\":null,\"big\":18446744073709551615,"
			    "\"neg\":-9223372036854775808,\"t\":true,\"f\":false,\"n\":null,"
			    "\"nullstr\":null,\"a\":[1,{},[],\"mlx5_1 port 1\"]}\n");
	ibp_json_release(&j);
}

static void test_json_document_pretty_exact(void **state)
{
	struct ibp_json j;
	(void)state;
	ibp_json_init_buf(&j, IBP_JSON_PRETTY);
	ibp_json_object_begin(&j);
	ibp_json_kv_int(&j, "a", 1);
	ibp_json_key(&j, "b");
	ibp_json_array_begin(&j);
	ibp_json_string(&j, "x");
	ibp_json_array_end(&j);
	ibp_json_key(&j, "c");
	ibp_json_object_begin(&j);
	ibp_json_object_end(&j);
	ibp_json_object_end(&j);
	assert_int_equal(ibp_json_finish(&j), 0);
	assert_string_equal(ibp_json_buf(&j, NULL),
			    "{\n  \"a\": 1,\n  \"b\": [\n    \"x\"\n  ],\n  \"c\": {}\n}\n");
	ibp_json_release(&j);
}

/* Each misuse is -EINVAL, sticky, and stops output. */
static void test_json_misuse_einval_sticky(void **state)
{
	struct ibp_json j;
	size_t len;
	(void)state;

	ibp_json_init_buf(&j, 0); /* value without a key inside an object */
	ibp_json_object_begin(&j);
	assert_int_equal(ibp_json_int(&j, 1), -EINVAL);
	assert_int_equal(ibp_json_kv_int(&j, "x", 1), -EINVAL);
	ibp_json_buf(&j, &len);
	assert_int_equal(len, 1);
	assert_int_equal(ibp_json_finish(&j), -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_buf(&j, 0); /* key inside an array */
	ibp_json_array_begin(&j);
	assert_int_equal(ibp_json_key(&j, "k"), -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_buf(&j, 0); /* mismatched end */
	ibp_json_array_begin(&j);
	assert_int_equal(ibp_json_object_end(&j), -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_buf(&j, 0); /* key without value then end */
	ibp_json_object_begin(&j);
	ibp_json_key(&j, "k");
	assert_int_equal(ibp_json_object_end(&j), -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_buf(&j, 0); /* two top-level values */
	ibp_json_int(&j, 1);
	assert_int_equal(ibp_json_int(&j, 2), -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_buf(&j, 0); /* unclosed document */
	ibp_json_object_begin(&j);
	assert_int_equal(ibp_json_finish(&j), -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_buf(&j, 0); /* empty document */
	assert_int_equal(ibp_json_finish(&j), -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_buf(&j, 0); /* too deep */
	int rc = 0;
	for (int i = 0; i <= IBP_JSON_MAX_DEPTH && !rc; i++)
		rc = ibp_json_array_begin(&j);
	assert_int_equal(rc, -EINVAL);
	ibp_json_release(&j);

	ibp_json_init_file(&j, NULL, 0); /* no stream */
	assert_int_equal(ibp_json_null(&j), -EINVAL);
}

static void test_json_file_output_matches_buffer(void **state)
{
	struct ibp_json j;
	char *mem = NULL;
	size_t memlen = 0;
	(void)state;
	FILE *fp = open_memstream(&mem, &memlen);
	assert_non_null(fp);
	ibp_json_init_file(&j, fp, 0);
	ibp_json_object_begin(&j);
	ibp_json_kv_string(&j, "k", "v\x01");
	ibp_json_object_end(&j);
	assert_int_equal(ibp_json_finish(&j), 0);
	fclose(fp);
	assert_string_equal(mem, "{\"k\":\"v\\u0001\"}\n");
	free(mem);
}

static void test_json_large_buffer_grows(void **state)
{
	struct ibp_json j;
	size_t len;
	(void)state;
	ibp_json_init_buf(&j, 0);
	ibp_json_array_begin(&j);
	for (int i = 0; i < 10000; i++)
		ibp_json_int(&j, i);
	ibp_json_array_end(&j);
	assert_int_equal(ibp_json_finish(&j), 0);
	const char *b = ibp_json_buf(&j, &len);
	assert_true(len > 40000);
	assert_int_equal(b[0], '[');
	assert_non_null(strstr(b, ",9999]\n"));
	ibp_json_release(&j);

	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ibp_json_init_buf(&j, 0);
	assert_int_equal(ibp_json_stringf(&j, "%s%s", big, big), 0);
	ibp_json_buf(&j, &len);
	assert_int_equal(len, 2 * 999 + 2);
	ibp_json_release(&j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_string_escapes_exact),
	    cmocka_unit_test(test_json_document_compact_exact),
	    cmocka_unit_test(test_json_document_pretty_exact),
	    cmocka_unit_test(test_json_misuse_einval_sticky),
	    cmocka_unit_test(test_json_file_output_matches_buffer),
	    cmocka_unit_test(test_json_large_buffer_grows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
