/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the step's consistency fingerprint (helpers/node/fingerprint.c):
 * the majority (one odd node, ties, all different, one node, a missing
 * fingerprint, a missing rail), the policy's levels, the wire form and its
 * checks, and the collection from a generated tree.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/fixture.h"
#include "ibprep/fingerprint.h"

#define MAXN 8

struct step {
	struct ibp_fp fp[MAXN];
	const struct ibp_fp *p[MAXN];
	const char *names[MAXN];
	size_t n;
	struct ibp_policy pol; /* the defaults unless a test sets a key */
};

static const char *const node_names[MAXN] = {"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"};

/* N nodes with 3 rails, firmware FW[i] on mlx5_3:1 (NULL: "28.41.1000"). */
static struct step *make_step(size_t n, const char *const *fw)
{
	struct step *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->n = n;
	ibp_policy_init(&s->pol);
	for (size_t i = 0; i < n; i++) {
		struct ibp_fp *fp = &s->fp[i];

		ibp_fp_init(fp);
		assert_int_equal(
		    ibp_fp_set(fp, IBP_FP_HCA_SET, NULL, "3 rails: mlx5_0:1,mlx5_3:1,mlx5_4:1"), 0);
		ibp_fp_set(fp, IBP_FP_KERNEL, NULL, "6.1.0-18-amd64");
		for (int r = 0; r < 3; r++) {
			static const char *const rails[] = {"mlx5_0:1", "mlx5_3:1", "mlx5_4:1"};

			ibp_fp_set(fp, IBP_FP_FIRMWARE, rails[r],
				   r == 1 && fw && fw[i] ? fw[i] : "28.41.1000");
			ibp_fp_set(fp, IBP_FP_LINK_LAYER, rails[r], "InfiniBand");
		}
		s->p[i] = fp;
		s->names[i] = node_names[i];
	}
	return s;
}

/* S's fingerprints compared as node SELF would (-1: as the whole step), into F. */
static int step_compare(struct step *s, long self, struct ibp_findings *f)
{
	return ibp_fp_compare(s->p, s->names, s->n, &s->pol, self, f);
}

/*
 * F is the one finding of a step whose odd NODE(s) run another firmware
 * on mlx5_3:1 than the majority's 28.41.1000, saying OBSERVED.
 */
static void assert_odd_firmware(const struct ibp_findings *f, const char *node,
				const char *observed)
{
	assert_int_equal(f->n, 1);
	assert_string_equal(f->v[0].code, "consistency_firmware");
	assert_int_equal(f->v[0].severity, IBP_SEV_WARN);
	assert_int_equal(f->v[0].fclass, IBP_CLASS_JOB);
	assert_string_equal(f->v[0].node, node);
	assert_string_equal(f->v[0].device, "mlx5_3");
	assert_int_equal(f->v[0].port, 1);
	assert_string_equal(f->v[0].observed, observed);
	assert_string_equal(f->v[0].expected, "28.41.1000");
}

/* One comparison of a majority case, and what it must find. */
struct judge {
	const char *policy; /* consistency= set before it, or NULL */
	long self;          /* as node SELF would, -1 as the whole step */
	size_t n;           /* findings */
	const char *odd;    /* the odd node(s) of assert_odd_firmware(), or NULL */
	const char *observed, *within, *device; /* the first finding's, exact or as part */
	int severity;                           /* the first finding's, or -1 */
};

#define JUDGES 5
#define SAID(self_, n_)                                                                            \
	{                                                                                          \
		.self = (self_), .n = (n_), .severity = -1                                         \
	}

/*
 * The majority, step-wide: N nodes with firmware FW on mlx5_3:1 (NULL:
 * "28.41.1000"), node MISSING's fingerprint not arrived and node
 * REVERSED's entries in reverse order (-1: none), each JUDGE one
 * comparison.  The comparison's shortcut for a step that agrees (the same
 * entries in the same order on every node) must not hide a difference:
 * entries in another order are compared pair by pair, a node without a
 * fingerprint changes nothing, and one hash apart is named.
 */
static const struct {
	const char *name;
	size_t n;
	const char *fw[MAXN];
	long missing, reversed;
	struct judge judge[JUDGES];
	size_t n_judges;
} majority_cases[] = {
    {"one odd node named against the majority, each node its own part, the policy's level",
     4,
     {NULL, NULL, "28.39.1002", NULL},
     -1,
     -1,
     {{.self = -1,
       .odd = "n3",
       .observed = "firmware 28.39.1002, the other 3 nodes 28.41.1000",
       .severity = -1},
      SAID(2, 1),
      SAID(0, 0),
      {.policy = "firmware:fail", .self = -1, .n = 1, .severity = IBP_SEV_FAIL},
      {.policy = "firmware:off", .self = -1, .n = 0, .severity = -1}},
     5},
    {"n2's entries reversed, no fingerprint from n3: the same values, no finding",
     4,
     {NULL},
     2,
     1,
     {SAID(-1, 0)},
     1},
    {"n2's entries reversed, other firmware on n4: n4 named, as without the shortcut",
     4,
     {NULL, NULL, NULL, "28.39.1002"},
     -1,
     1,
     {{.self = -1,
       .odd = "n4",
       .observed = "firmware 28.39.1002, the other 3 nodes 28.41.1000",
       .severity = -1}},
     1},
    {"all in the same order, one value apart: named",
     4,
     {NULL, NULL, NULL, "28.39.1002"},
     -1,
     -1,
     {{.self = -1,
       .odd = "n4",
       .observed = "firmware 28.39.1002, the other 3 nodes 28.41.1000",
       .severity = -1}},
     1},
    {"a tie between two groups names both, said once by the first node",
     4,
     {"28.39.1002", "28.39.1002", NULL, NULL},
     -1,
     -1,
     {{.self = -1,
       .n = 1,
       .observed = "no majority for firmware across 4 nodes: n1,n2 28.39.1002; n3,n4 28.41.1000",
       .device = "mlx5_3",
       .severity = -1},
      SAID(0, 1),
      SAID(1, 0),
      SAID(2, 0),
      SAID(3, 0)},
     5},
    {"all different: no majority",
     3,
     {"1.0", "2.0", "3.0"},
     -1,
     -1,
     {{.self = -1,
       .n = 1,
       .observed = "no majority for firmware across 3 nodes: n1 1.0; n2 2.0; n3 3.0",
       .severity = -1}},
     1},
    {"two nodes that differ: a tie of one against one",
     2,
     {"1.0", "2.0"},
     -1,
     -1,
     {{.self = -1, .n = 1, .within = "no majority for firmware across 2 nodes", .severity = -1}},
     1},
    {"one node: nothing to compare", 1, {NULL, "9.9"}, -1, -1, {SAID(-1, 0)}, 1},
    {"n2's fingerprint did not arrive: left out, the other two agree",
     3,
     {NULL, "9.9", NULL},
     1,
     -1,
     {SAID(-1, 0)},
     1},
};

static void test_fp_majority_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(majority_cases) / sizeof(majority_cases[0]); i++) {
		struct step *s = make_step(majority_cases[i].n, majority_cases[i].fw);
		struct ibp_findings f = {0};
		struct ibp_fp swapped;
		long r = majority_cases[i].reversed;
		char err[256];

		print_message("# %s\n", majority_cases[i].name);
		if (r >= 0) { /* node R's entries in reverse order: the same values */
			ibp_fp_init(&swapped);
			for (size_t j = s->fp[r].n; j-- > 0;)
				ibp_fp_set(&swapped, s->fp[r].e[j].field,
					   s->fp[r].e[j].rail[0] ? s->fp[r].e[j].rail : NULL,
					   s->fp[r].e[j].value);
			assert_int_equal(swapped.n, s->fp[r].n);
			s->p[r] = &swapped;
		}
		if (majority_cases[i].missing >= 0)
			s->p[majority_cases[i].missing] = NULL;
		for (size_t j = 0; j < majority_cases[i].n_judges; j++) {
			const struct judge *w = &majority_cases[i].judge[j];

			if (w->policy)
				assert_int_equal(ibp_policy_set(&s->pol, "consistency", w->policy,
								err, sizeof(err)),
						 0);
			assert_int_equal(step_compare(s, w->self, &f), 0);
			if (w->odd) {
				assert_odd_firmware(&f, w->odd, w->observed);
			} else {
				assert_int_equal(f.n, w->n);
				if (w->observed)
					assert_string_equal(f.v[0].observed, w->observed);
				if (w->within)
					assert_non_null(strstr(f.v[0].observed, w->within));
				if (w->device)
					assert_string_equal(f.v[0].device, w->device);
			}
			if (w->severity >= 0)
				assert_int_equal(f.v[0].severity, w->severity);
			ibp_findings_release(&f);
		}
		free(s);
	}
}

/*
 * The fallback's windows (ring neighbours at +-1 and +-2 of 8 nodes, n4
 * refusing): n5 and n6 run 28.39.1002.  n3's window {n1,n2,n3,n5} shows n5
 * odd, first said by n5; n5's window {n3,n5,n6,n7} a tie, first said by
 * n3: with the whole step's rule nobody says it.  With the window's rule
 * n5 says its tie, n3 (in the majority of its window) nothing, n6 its own
 * part of its window.
 */
static void test_fp_window_each_node_says_its_own_part(void **state)
{
	const char *const fw3[] = {NULL, NULL, NULL, "28.39.1002"};
	const char *const fw5[] = {NULL, "28.39.1002", "28.39.1002", NULL};
	const char *const fw6[] = {"28.39.1002", "28.39.1002", NULL, NULL};
	struct step *w3 = make_step(4, fw3), *w5 = make_step(4, fw5), *w6 = make_step(4, fw6);
	const char *n3[] = {"n1", "n2", "n3", "n5"}, *n5[] = {"n3", "n5", "n6", "n7"},
		   *n6[] = {"n5", "n6", "n7", "n8"};
	struct ibp_findings f = {0};
	(void)state;

	memcpy(w3->names, n3, sizeof(n3));
	memcpy(w5->names, n5, sizeof(n5));
	memcpy(w6->names, n6, sizeof(n6));
	/* the whole step's rule: silent in both windows */
	assert_int_equal(step_compare(w3, 2, &f), 0);
	assert_int_equal(step_compare(w5, 1, &f), 0);
	assert_int_equal(f.n, 0);
	/* the window's rule */
	assert_int_equal(ibp_fp_compare_window(w3->p, w3->names, 4, &w3->pol, 2, &f), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(ibp_fp_compare_window(w5->p, w5->names, 4, &w5->pol, 1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].observed, "no majority for firmware across 4 nodes: n3,n7 "
					     "28.41.1000; n5,n6 28.39.1002");
	ibp_findings_release(&f);
	/* n6's window: n5,n6 against n7,n8, a tie n6 is part of; n8 too */
	assert_int_equal(ibp_fp_compare_window(w6->p, w6->names, 4, &w6->pol, 1, &f), 0);
	assert_int_equal(f.n, 1);
	ibp_findings_release(&f);
	assert_int_equal(ibp_fp_compare_window(w6->p, w6->names, 4, &w6->pol, 3, &f), 0);
	assert_int_equal(f.n, 1);
	ibp_findings_release(&f);
	/* an odd group: each of its nodes says it, the majority's nodes nothing */
	assert_int_equal(ibp_fp_compare_window(w3->p, w3->names, 4, &w3->pol, 3, &f), 0);
	assert_odd_firmware(&f, "n5", "firmware 28.39.1002, the other 3 nodes 28.41.1000");
	ibp_findings_release(&f);
	for (long self = 0; self < 3; self++) {
		assert_int_equal(ibp_fp_compare_window(w3->p, w3->names, 4, &w3->pol, self, &f), 0);
		assert_int_equal(f.n, 0);
	}
	free(w3);
	free(w5);
	free(w6);
}

static void test_fp_missing_rail_fails_on_the_hca_set_only(void **state)
{
	struct step *s = make_step(4, NULL);
	struct ibp_findings f = {0};
	struct ibp_fp *odd;
	(void)state;

	/* n4 has lost mlx5_4 */
	odd = &s->fp[3];
	ibp_fp_init(odd);
	ibp_fp_set(odd, IBP_FP_HCA_SET, NULL, "2 rails: mlx5_0:1,mlx5_3:1");
	ibp_fp_set(odd, IBP_FP_KERNEL, NULL, "6.1.0-18-amd64");
	ibp_fp_set(odd, IBP_FP_FIRMWARE, "mlx5_0:1", "28.41.1000");
	ibp_fp_set(odd, IBP_FP_FIRMWARE, "mlx5_3:1", "28.41.1000");
	ibp_fp_set(odd, IBP_FP_LINK_LAYER, "mlx5_0:1", "InfiniBand");
	ibp_fp_set(odd, IBP_FP_LINK_LAYER, "mlx5_3:1", "InfiniBand");
	assert_int_equal(step_compare(s, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "consistency_hca_set");
	assert_int_equal(f.v[0].severity, IBP_SEV_FAIL);
	assert_string_equal(f.v[0].node, "n4");
	assert_string_equal(f.v[0].device, "");
	assert_string_equal(f.v[0].observed,
			    "HCA set 2 rails: mlx5_0:1,mlx5_3:1, the other 3 nodes 3 rails: "
			    "mlx5_0:1,mlx5_3:1,mlx5_4:1");
	ibp_findings_release(&f);
	free(s);
}

static void test_fp_long_values_compared_whole(void **state)
{
	struct ibp_fp *a = calloc(2, sizeof(*a)), *b = a + 1;
	const struct ibp_fp *p[2] = {a, b};
	const char *const names[2] = {"n1", "n2"};
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	char v1[128], v2[128];
	(void)state;

	assert_non_null(a);
	memset(v1, 'x', 100);
	v1[100] = '\0';
	memcpy(v2, v1, sizeof(v1));
	v2[90] = 'y'; /* differs past the shown part */
	ibp_fp_set(a, IBP_FP_NCCL_IB_HCA, NULL, v1);
	ibp_fp_set(b, IBP_FP_NCCL_IB_HCA, NULL, v2);
	assert_string_equal(a->e[0].value, b->e[0].value);
	assert_int_equal(strlen(a->e[0].value), IBP_FP_VALUE_MAX - 1);
	assert_string_equal(a->e[0].value + IBP_FP_VALUE_MAX - 4, "...");
	ibp_policy_init(&pol);
	assert_int_equal(ibp_fp_compare(p, names, 2, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "consistency_nccl_env");
	assert_int_equal(f.v[0].severity, IBP_SEV_FAIL);
	ibp_findings_release(&f);
	/* control characters are not shown as they are */
	ibp_fp_set(a, IBP_FP_NCCL_NET, NULL, "IB\033[31m");
	assert_string_equal(a->e[1].value, "IB?[31m");
	free(a);
}

/* One byte of a valid wire form set to a value the decoder must refuse. */
struct corruption {
	const char *what;
	size_t at;
	uint8_t byte;
};

/*
 * A strict decoder under test: DECODE into BACK, and whether a refused
 * decode left BACK empty (nothing half-decoded is ever used).
 */
struct wire_decoder {
	int (*decode)(const uint8_t *buf, size_t len, void *back);
	bool (*left_empty)(const void *back);
	void *back;
};

/*
 * GOOD (N valid bytes, room for N + 1) with each of CASES applied in turn
 * in BAD, then cut to every shorter length, then with a byte left over:
 * every one refused with -EINVAL.
 */
static void wire_refuses(const struct wire_decoder *d, uint8_t *good, size_t n, uint8_t *bad,
			 const struct corruption *cases, size_t n_cases)
{
	for (size_t i = 0; i < n_cases; i++) {
		memcpy(bad, good, n);
		bad[cases[i].at] = cases[i].byte;
		if (d->decode(bad, n, d->back) != -EINVAL)
			fail_msg("%s: accepted", cases[i].what);
		if (!d->left_empty(d->back))
			fail_msg("%s: refused but left entries decoded", cases[i].what);
	}
	for (size_t len = 0; len < n; len++)
		if (d->decode(good, len, d->back) != -EINVAL)
			fail_msg("cut to %zu bytes: accepted", len);
	good[n] = 0;
	if (d->decode(good, n + 1, d->back) != -EINVAL)
		fail_msg("one byte left over: accepted");
}

static int fp_decode(const uint8_t *buf, size_t len, void *back)
{
	return ibp_fp_decode(buf, len, back);
}

static bool fp_left_empty(const void *back)
{
	return ((const struct ibp_fp *)back)->n == 0;
}

static int sum_decode(const uint8_t *buf, size_t len, void *back)
{
	return ibp_fp_sum_decode(buf, len, back);
}

static bool sum_left_empty(const void *back)
{
	return ((const struct ibp_fp_sum *)back)->n_merged == 0;
}

/* Encodes FP, checks the length, decodes it back to the same entries. */
static void wire_round_trip(const struct ibp_fp *fp, size_t want_len)
{
	struct ibp_fp *back = calloc(1, sizeof(*back));
	uint8_t *buf = malloc(IBP_FP_WIRE_MAX);
	int n;

	assert_non_null(back);
	assert_non_null(buf);
	n = ibp_fp_encode(fp, buf, IBP_FP_WIRE_MAX);
	assert_int_equal(n, (int)want_len);
	assert_int_equal(ibp_fp_encode(fp, buf, want_len - 1), -ENOSPC);
	assert_int_equal(ibp_fp_decode(buf, (size_t)n, back), 0);
	assert_int_equal(back->n, fp->n);
	assert_memory_equal(back->e, fp->e, fp->n * sizeof(back->e[0]));
	free(buf);
	free(back);
}

static void test_fp_wire_round_trip_empty_typical_maximal(void **state)
{
	const char *const fw[] = {"28.39.1002"};
	struct step *s = make_step(1, fw);
	struct ibp_fp *fp = calloc(1, sizeof(*fp));
	size_t typical = 1;
	(void)state;

	assert_non_null(fp);
	ibp_fp_init(fp);
	wire_round_trip(fp, IBP_FP_WIRE_MIN);
	/* only the entries in use, each string as a length byte and its bytes */
	for (size_t i = 0; i < s->fp[0].n; i++)
		typical += 1 + 1 + strlen(s->fp[0].e[i].rail) + 8 + 1 + strlen(s->fp[0].e[i].value);
	wire_round_trip(&s->fp[0], typical);
	/* every entry, every string at its longest: the bound */
	for (size_t i = 0; i < IBP_FP_MAX_ENTRIES; i++) {
		char rail[IBP_FP_RAIL_MAX], value[IBP_FP_VALUE_MAX];

		memset(rail, 'r', sizeof(rail) - 1);
		rail[sizeof(rail) - 1] = '\0';
		rail[0] = (char)('0' + i / 100);
		rail[1] = (char)('0' + i / 10 % 10);
		rail[2] = (char)('0' + i % 10);
		memset(value, 'v', sizeof(value) - 1);
		value[sizeof(value) - 1] = '\0';
		assert_int_equal(ibp_fp_set(fp, IBP_FP_FIRMWARE, rail, value), 0);
		assert_int_equal(strlen(fp->e[i].rail), IBP_FP_RAIL_MAX - 1);
	}
	assert_int_equal(fp->n, IBP_FP_MAX_ENTRIES);
	wire_round_trip(fp, IBP_FP_WIRE_MAX);
	free(fp);
	free(s);
}

/*
 * Two entries: (hca_set, "", "2 rails") and (firmware, "mlx5_0:1",
 * "28.41.1000"), laid out as
 *   0 n | 1 field | 2 rail len (0) | 3 hash | 11 value len | 12 "2 rails"
 *   | 19 field | 20 rail len | 21 "mlx5_0:1" | 29 hash | 37 value len | 38 "28.41.1000"
 */
#define FP2_LEN 48

static void fp2(struct ibp_fp *fp, uint8_t *buf)
{
	ibp_fp_init(fp);
	ibp_fp_set(fp, IBP_FP_HCA_SET, NULL, "2 rails");
	ibp_fp_set(fp, IBP_FP_FIRMWARE, "mlx5_0:1", "28.41.1000");
	assert_int_equal(ibp_fp_encode(fp, buf, FP2_LEN), FP2_LEN);
	assert_int_equal(buf[20], 8);
	assert_int_equal(buf[37], 10);
}

static void test_fp_wire_refuses_every_malformed_form(void **state)
{
	struct ibp_fp *fp = calloc(1, sizeof(*fp)), *back = calloc(1, sizeof(*back));
	uint8_t buf[FP2_LEN + 1], bad[2 * FP2_LEN];
	static const struct corruption cases[] = {
	    {"count above the maximum", 0, IBP_FP_MAX_ENTRIES + 1},
	    {"count above the entries present", 0, 3},
	    {"unknown field", 1, IBP_FP_N_FIELDS},
	    {"control character in a value", 12, 0x1b},
	    {"high byte in a rail", 21, 0xc3},
	    {"rail length of its whole field", 20, IBP_FP_RAIL_MAX},
	    {"value length of its whole field", 37, IBP_FP_VALUE_MAX},
	    {"value length past the end", 37, 11},
	    {"shorter value length: bytes left over", 37, 9},
	    {"count below the entries present: bytes left over", 0, 1},
	};
	(void)state;

	assert_non_null(fp);
	assert_non_null(back);
	fp2(fp, buf);
	assert_int_equal(ibp_fp_decode(buf, FP2_LEN, back), 0);
	wire_refuses(&(struct wire_decoder){fp_decode, fp_left_empty, back}, buf, FP2_LEN, bad,
		     cases, sizeof(cases) / sizeof(cases[0]));
	/* the same (field, rail) twice */
	bad[0] = 2;
	memcpy(bad + 1, buf + 1, 18);
	memcpy(bad + 19, buf + 1, 18);
	assert_int_equal(ibp_fp_decode(bad, 37, back), -EINVAL);
	bad[19] = IBP_FP_KERNEL; /* another field: fine */
	assert_int_equal(ibp_fp_decode(bad, 37, back), 0);
	assert_int_equal(back->n, 2);
	free(fp);
	free(back);
}

static void test_fp_wire_encoder_refuses_what_the_decoder_would(void **state)
{
	struct ibp_fp *fp = calloc(1, sizeof(*fp));
	uint8_t buf[FP2_LEN];
	(void)state;

	assert_non_null(fp);
	fp2(fp, buf);
	assert_int_equal(ibp_fp_check(fp), 0);
	fp->e[1].value[3] = '\n';
	assert_int_equal(ibp_fp_encode(fp, buf, sizeof(buf)), -EINVAL);
	fp2(fp, buf);
	memset(fp->e[1].rail, 'r', sizeof(fp->e[1].rail)); /* no terminator */
	assert_int_equal(ibp_fp_check(fp), -EINVAL);
	fp2(fp, buf);
	fp->e[1].field = IBP_FP_N_FIELDS;
	assert_int_equal(ibp_fp_check(fp), -EINVAL);
	fp2(fp, buf);
	fp->e[1] = fp->e[0]; /* the same (field, rail) twice */
	assert_int_equal(ibp_fp_encode(fp, buf, sizeof(buf)), -EINVAL);
	fp2(fp, buf);
	fp->n = IBP_FP_MAX_ENTRIES + 1;
	assert_int_equal(ibp_fp_check(fp), -EINVAL);
	free(fp);
}

static void test_fp_hca_set_in_bracket_form(void **state)
{
	static const char *const devs[] = {"mlx5_11", "mlx5_0", "mlx5_3",  "mlx5_4",      "mlx5_5",
					   "mlx5_6",  "mlx5_9", "mlx5_10", "mlx5_bond_0", "ib07"};
	struct ibp_fp_rail rails[10];
	struct ibp_fp *fp = calloc(1, sizeof(*fp));
	struct ibp_fp_source src;
	(void)state;

	assert_non_null(fp);
	memset(rails, 0, sizeof(rails));
	for (size_t i = 0; i < 10; i++) {
		snprintf(rails[i].device, sizeof(rails[i].device), "%s", devs[i]);
		rails[i].port = 1;
		rails[i].gid_index = -1;
	}
	memset(&src, 0, sizeof(src));
	src.rails = rails;
	src.n_rails = 8;
	src.rdma_core = "44.0";
	assert_int_equal(ibp_fp_collect(fp, &src), 0);
	assert_int_equal(fp->e[0].field, IBP_FP_HCA_SET);
	assert_string_equal(fp->e[0].value, "8 rails: mlx5_[0,3-6,9-11]:1");
	ibp_fp_init(fp);
	src.n_rails = 10; /* other prefixes, and a leading zero, stay as they are */
	assert_int_equal(ibp_fp_collect(fp, &src), 0);
	assert_string_equal(fp->e[0].value, "10 rails: mlx5_[0,3-6,9-11]:1,mlx5_b...");
	free(fp);
}

static const char *fake_env(void *ctx, const char *name)
{
	(void)ctx;
	return !strcmp(name, "NCCL_IB_HCA") ? "=mlx5_0:1,mlx5_1:1" : NULL;
}

static void test_fp_collect_from_a_generated_tree(void **state)
{
	char *root = ibp_fixture_make("--preset", "roce", "--node", "r1", (char *)NULL);
	struct ibp_fp *fp = calloc(1, sizeof(*fp));
	struct ibp_inventory inv;
	struct ibp_findings f = {0};
	struct ibp_sysfs fs;
	struct ibp_fp_rail rails[1];
	struct ibp_fp_source src;
	const struct ibp_fp_entry *e;
	(void)state;

	assert_non_null(root);
	assert_non_null(fp);
	assert_int_equal(ibp_fixture_write(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n"),
			 0);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	ibp_inventory_init(&inv);
	assert_int_equal(ibp_inventory_load(&inv, &fs, &f), 0);
	assert_true(inv.n_hcas >= 1);
	memset(rails, 0, sizeof(rails));
	snprintf(rails[0].device, sizeof(rails[0].device), "%s", inv.hcas[0].name);
	rails[0].port = 1;
	rails[0].gid_index = -1;
	for (size_t g = 0; g < inv.hcas[0].ports[0].n_gids; g++)
		if (inv.hcas[0].ports[0].gids[g].type == IBP_GID_TYPE_ROCE_V2 &&
		    inv.hcas[0].ports[0].gids[g].ipv4_mapped)
			rails[0].gid_index = (int)inv.hcas[0].ports[0].gids[g].index;
	memset(&src, 0, sizeof(src));
	src.inv = &inv;
	src.rails = rails;
	src.n_rails = 1;
	src.fs = &fs;
	src.rdma_core = "44.0";
	src.getenv = fake_env;
	assert_int_equal(ibp_fp_collect(fp, &src), 0);
	e = NULL;
	for (size_t i = 0; i < fp->n; i++) {
		char want[96];

		switch (fp->e[i].field) {
		case IBP_FP_HCA_SET:
			snprintf(want, sizeof(want), "1 rail: %s:1", inv.hcas[0].name);
			assert_string_equal(fp->e[i].value, want);
			break;
		case IBP_FP_FIRMWARE:
			assert_string_equal(fp->e[i].value, inv.hcas[0].fw_ver);
			break;
		case IBP_FP_LINK_LAYER:
			assert_string_equal(fp->e[i].value, "Ethernet");
			break;
		case IBP_FP_GID:
			e = &fp->e[i];
			break;
		case IBP_FP_KERNEL:
			assert_string_equal(fp->e[i].value, "6.1.0-18-amd64");
			break;
		case IBP_FP_RDMA_CORE:
			assert_string_equal(fp->e[i].value, "44.0");
			break;
		case IBP_FP_NCCL_IB_HCA:
			assert_string_equal(fp->e[i].value, "=mlx5_0:1,mlx5_1:1");
			break;
		case IBP_FP_NCCL_NET:
			assert_string_equal(fp->e[i].value, "(unset)");
			break;
		default:
			break;
		}
	}
	assert_non_null(e);
	if (rails[0].gid_index >= 0)
		assert_non_null(strstr(e->value, "RoCE v2"));
	ibp_inventory_release(&inv);
	ibp_findings_release(&f);
	ibp_sysfs_close(&fs);
	free(fp);
	ibp_fixture_destroy(root);
}

/* ---- the step-wide sum (the reduction along the ring) ---- */

#define SUM_MAXN 600
static char sum_name_buf[SUM_MAXN][16];
static const char *sum_names[SUM_MAXN];

static void sum_names_init(void)
{
	for (size_t i = 0; i < SUM_MAXN; i++) {
		snprintf(sum_name_buf[i], sizeof(sum_name_buf[i]), "n%zu", i + 1);
		sum_names[i] = sum_name_buf[i];
	}
}

/* A node of the sum tests: kernel KERNEL, firmware FW on mlx5_3:1. */
static void sum_node(struct ibp_fp *fp, const char *kernel, const char *fw)
{
	ibp_fp_init(fp);
	ibp_fp_set(fp, IBP_FP_HCA_SET, NULL, "3 rails: mlx5_0:1,mlx5_3:1,mlx5_4:1");
	ibp_fp_set(fp, IBP_FP_KERNEL, NULL, kernel);
	ibp_fp_set(fp, IBP_FP_FIRMWARE, "mlx5_3:1", fw);
}

/* The sum of N nodes, firmware FW(i); along the ring, as rdmatest.c builds it. */
static struct ibp_fp_sum *sum_of(size_t n, const char *(*fw)(size_t), const char *(*kern)(size_t))
{
	struct ibp_fp_sum *s = malloc(sizeof(*s));
	struct ibp_fp *fp = malloc(sizeof(*fp));

	assert_non_null(s);
	assert_non_null(fp);
	ibp_fp_sum_init(s, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		sum_node(fp, kern ? kern(i) : "6.1.0-18-amd64", fw(i));
		assert_int_equal(ibp_fp_sum_add(s, (uint32_t)i, fp), 0);
	}
	free(fp);
	return s;
}

static const char *fw_three_odd(size_t i)
{
	return i >= 2 && i <= 4 ? "28.39.1002" : "28.41.1000";
}

static size_t consistency_findings(const struct ibp_findings *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += !strcmp(f->v[i].code, code);
	return n;
}

/* 8 nodes, n3..n5 odd: named together against the 5 others, said once, by n3. */
static void test_sum_three_consecutive_odd_named_once_step_wide(void **state)
{
	struct ibp_fp_sum *s = sum_of(8, fw_three_odd, NULL);
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	size_t said = 0;
	(void)state;

	sum_names_init();
	ibp_policy_init(&pol);
	assert_int_equal(s->n_merged, 8);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_odd_firmware(&f, "n3,n4,n5", "firmware 28.39.1002, the other 5 nodes 28.41.1000");
	ibp_findings_release(&f);
	for (long self = 0; self < 8; self++) {
		assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, self, &f), 0);
		if (f.n)
			assert_int_equal(self, 2);
		said += f.n;
		ibp_findings_release(&f);
	}
	assert_int_equal(said, 1);
	/* consistency=firmware:fail makes it a failure; :off silences it */
	char err[128];

	assert_int_equal(ibp_policy_set(&pol, "consistency", "firmware:fail", err, sizeof(err)), 0);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(ibp_findings_worst(&f), IBP_SEV_FAIL);
	ibp_findings_release(&f);
	assert_int_equal(ibp_policy_set(&pol, "consistency", "firmware:off", err, sizeof(err)), 0);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(f.n, 0);
	free(s);
}

static const char *fw_half(size_t i)
{
	return i < 4 ? "28.39.1002" : "28.41.1000";
}

static const char *fw_same(size_t i)
{
	(void)i;
	return "28.41.1000";
}

static const char *fw_all_different(size_t i)
{
	static char buf[SUM_MAXN][24];

	snprintf(buf[i], sizeof(buf[i]), "28.%zu", i);
	return buf[i];
}

static void test_sum_tie_all_different_one_node(void **state)
{
	struct ibp_fp_sum *s = sum_of(8, fw_half, NULL);
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	(void)state;

	sum_names_init();
	ibp_policy_init(&pol);
	/* 4 against 4: both groups named, by n1 only */
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].node, "n1");
	assert_string_equal(f.v[0].observed, "no majority for firmware across 8 nodes: n1,n2,n3,n4 "
					     "28.39.1002; n5,n6,n7,n8 28.41.1000");
	ibp_findings_release(&f);
	for (long self = 1; self < 8; self++) {
		assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, self, &f), 0);
		assert_int_equal(f.n, 0);
	}
	free(s);
	/* every node different: no majority, the groups named as far as they fit */
	s = sum_of(6, fw_all_different, NULL);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_non_null(strstr(f.v[0].observed, "no majority for firmware across 6 nodes: n1 28.0; "
						"n2 28.1; n3 28.2"));
	ibp_findings_release(&f);
	free(s);
	/* one node, and a step that agrees: nothing to say */
	s = sum_of(1, fw_same, NULL);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(f.n, 0);
	free(s);
	s = sum_of(300, fw_same, NULL);
	assert_int_equal(s->n_values, 3);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(f.n, 0);
	/* incomplete: refused */
	s->n_merged = 299;
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), -EINVAL);
	free(s);
}

static void test_sum_add_in_order_each_node_once(void **state)
{
	struct ibp_fp_sum *s = malloc(sizeof(*s));
	struct ibp_fp *fp = malloc(sizeof(*fp));
	(void)state;

	assert_non_null(s);
	assert_non_null(fp);
	sum_node(fp, "6.1", "1.0");
	ibp_fp_sum_init(s, 3);
	assert_int_equal(ibp_fp_sum_add(s, 3, fp), -EINVAL); /* past the step */
	/* an empty sum takes any node: then it holds [1, 2) and takes 2 next */
	assert_int_equal(ibp_fp_sum_add(s, 1, fp), 0);
	assert_int_equal(s->first, 1);
	assert_int_equal(ibp_fp_sum_add(s, 0, fp), -EINVAL); /* out of order */
	assert_int_equal(ibp_fp_sum_add(s, 1, fp), -EINVAL); /* the same node again */
	assert_int_equal(ibp_fp_sum_add(s, 2, fp), 0);
	assert_int_equal(s->n_merged, 2);
	ibp_fp_sum_init(s, 3);
	assert_int_equal(ibp_fp_sum_add(s, 0, fp), 0);
	assert_int_equal(s->first, 0);
	assert_int_equal(ibp_fp_sum_add(s, 0, fp), -EINVAL); /* the same node again */
	assert_int_equal(ibp_fp_sum_add(s, 1, fp), 0);
	assert_int_equal(ibp_fp_sum_add(s, 2, fp), 0);
	assert_int_equal(ibp_fp_sum_add(s, 3, fp), -EINVAL); /* past the step */
	assert_int_equal(s->n_merged, 3);
	assert_int_equal(s->values[1].count, 3); /* duplicates of a value: one group */
	assert_int_equal(s->values[1].n_ex, 3);
	/* a fingerprint with the same (field, rail) twice is refused whole */
	ibp_fp_sum_init(s, 2);
	fp->e[1] = fp->e[0];
	assert_int_equal(ibp_fp_sum_add(s, 0, fp), -EINVAL);
	assert_int_equal(s->n_merged, 0);
	assert_int_equal(s->n_keys, 0);
	free(fp);
	free(s);
}

static const char *fw_ten_odd_of_twenty(size_t i)
{
	return i >= 5 && i < 15 ? "28.39.1002" : "28.41.1000";
}

static const char *kern_many(size_t i)
{
	static char buf[SUM_MAXN][24];

	if (i < 400)
		return "6.1";
	snprintf(buf[i], sizeof(buf[i]), "k%zu", i);
	return buf[i];
}

static const char *kern_many_first(size_t i)
{
	static char buf[SUM_MAXN][24];

	if (i >= 200)
		return "6.1";
	snprintf(buf[i], sizeof(buf[i]), "k%zu", i);
	return buf[i];
}

/* Bounds: examples ("and N more"), the value table (the "other" group), the pair table. */
static void test_sum_bounds_said(void **state)
{
	struct ibp_fp_sum *s;
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	size_t other = 0;
	(void)state;

	sum_names_init();
	ibp_policy_init(&pol);
	s = sum_of(20, fw_ten_odd_of_twenty, NULL);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	/* 10 against 10 is a tie */
	assert_int_equal(f.n, 1);
	assert_non_null(strstr(f.v[0].observed, "n6,n7,n8,n9 and 6 more 28.39.1002"));
	ibp_findings_release(&f);
	free(s);
	/* 400 agree, then 200 different kernels: the table keeps 192 values */
	s = sum_of(600, fw_same, kern_many);
	assert_int_equal(s->n_values, IBP_FPS_MAX_VALUES);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	for (size_t i = 0; i < f.n; i++) {
		assert_string_equal(f.v[i].code, "consistency_kernel");
		assert_string_equal(f.v[i].expected, "6.1");
		if (strstr(f.v[i].observed, "past the 192")) {
			other++;
			/* 3 values of node 0, then 189 kernels kept: 11 nodes past the table */
			assert_string_equal(f.v[i].node, "n590,n591,n592,n593 and 7 more");
			assert_non_null(strstr(f.v[i].observed, "kernel not 6.1 (11 nodes;"));
			assert_non_null(strstr(f.v[i].observed, "400 of the other 589 nodes 6.1"));
		}
	}
	assert_int_equal(other, 1);
	assert_int_equal(f.n, 1 + 189);
	ibp_findings_release(&f);
	free(s);
	/* 200 different kernels first: the majority itself is past the table, no majority said */
	s = sum_of(600, fw_same, kern_many_first);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(f.n, 1);
	assert_non_null(strstr(f.v[0].observed, "no majority for kernel across 600 nodes"));
	ibp_findings_release(&f);
	free(s);
	/* more (field, rail) pairs than the table: counted, said once (ok) */
	s = malloc(sizeof(*s));
	struct ibp_fp *fp = malloc(sizeof(*fp));

	assert_non_null(s);
	assert_non_null(fp);
	ibp_fp_sum_init(s, 2);
	for (uint32_t node = 0; node < 2; node++) {
		ibp_fp_init(fp);
		for (int r = 0; r < 100; r++) {
			char rail[IBP_FP_RAIL_MAX];

			snprintf(rail, sizeof(rail), "d%u_%d:1", node, r);
			ibp_fp_set(fp, IBP_FP_FIRMWARE, rail, "1.0");
		}
		assert_int_equal(ibp_fp_sum_add(s, node, fp), 0);
	}
	assert_int_equal(s->n_keys, IBP_FPS_MAX_KEYS);
	assert_int_equal(s->keys_dropped, 200 - IBP_FPS_MAX_KEYS);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &f), 0);
	assert_int_equal(consistency_findings(&f, "consistency_partial"), 1);
	ibp_findings_release(&f);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, 1, &f), 0);
	assert_int_equal(f.n, 0);
	free(fp);
	free(s);
}

/*
 * The sum of N nodes as the ring builds it (oob.h): places [0, MID) one by
 * one, places (MID, N) from the top down, each node's own in front of what
 * came, and MID joining the two halves.
 */
static struct ibp_fp_sum *sum_by_halves(size_t n, size_t mid, const char *(*fw)(size_t),
					const char *(*kern)(size_t))
{
	struct ibp_fp_sum *lo = malloc(sizeof(*lo)), *hi = malloc(sizeof(*hi)),
			  *t = malloc(sizeof(*t));
	struct ibp_fp *fp = malloc(sizeof(*fp));

	assert_true(lo && hi && t && fp);
	ibp_fp_sum_init(lo, (uint32_t)n);
	ibp_fp_sum_init(hi, (uint32_t)n);
	for (size_t i = 0; i <= mid; i++) {
		sum_node(fp, kern ? kern(i) : "6.1.0-18-amd64", fw(i));
		assert_int_equal(ibp_fp_sum_add(lo, (uint32_t)i, fp), 0);
	}
	for (size_t i = n - 1; i > mid; i--) {
		sum_node(fp, kern ? kern(i) : "6.1.0-18-amd64", fw(i));
		ibp_fp_sum_init(t, (uint32_t)n);
		assert_int_equal(ibp_fp_sum_add(t, (uint32_t)i, fp), 0);
		if (hi->n_merged)
			assert_int_equal(ibp_fp_sum_merge(t, hi), 0);
		*hi = *t;
	}
	if (hi->n_merged)
		assert_int_equal(ibp_fp_sum_merge(lo, hi), 0);
	free(fp);
	free(t);
	free(hi);
	return lo;
}

/* The same sum: the counts and the entries in use (fingerprint.h: the rest is never read). */
static bool sum_same(const struct ibp_fp_sum *a, const struct ibp_fp_sum *b)
{
	return !memcmp(a, b, offsetof(struct ibp_fp_sum, keys)) &&
	       !memcmp(a->keys, b->keys, a->n_keys * sizeof(a->keys[0])) &&
	       !memcmp(a->values, b->values, a->n_values * sizeof(a->values[0]));
}

/* Merging the halves gives the sum one by one gives; past a bound, a sum still whole and sound. */
static void test_sum_merge_halves_as_one_by_one(void **state)
{
	struct ibp_fp_sum *one = sum_of(20, fw_ten_odd_of_twenty, NULL), *two, *x;
	struct ibp_fp *fp = malloc(sizeof(*fp));
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	(void)state;

	assert_non_null(fp);
	sum_names_init();
	ibp_policy_init(&pol);
	for (size_t mid = 0; mid < 20; mid++) {
		two = sum_by_halves(20, mid, fw_ten_odd_of_twenty, NULL);
		if (!sum_same(one, two))
			fail_msg("halves joined at %zu: not the sum one by one", mid);
		free(two);
	}
	/* 600 nodes, 200 kernels past the value table: complete, every node counted once */
	two = sum_by_halves(600, 300, fw_same, kern_many);
	assert_int_equal(ibp_fp_sum_check(two), 0);
	assert_int_equal(two->first, 0);
	assert_int_equal(two->n_merged, 600);
	for (size_t k = 0; k < two->n_keys; k++) {
		uint64_t n = two->keys[k].other;

		for (size_t v = 0; v < two->n_values; v++)
			n += two->values[v].key == k ? two->values[v].count : 0;
		assert_int_equal(n, 600);
	}
	assert_int_equal(ibp_fp_sum_judge(two, sum_names, &pol, -1, &f), 0);
	assert_int_equal(consistency_findings(&f, "consistency_kernel"), 1 + 189);
	ibp_findings_release(&f);
	free(two);

	/* refusals: not adjacent, another step, nothing to merge; DST unchanged */
	x = malloc(sizeof(*x));
	two = malloc(sizeof(*two));
	assert_true(x && two);
	sum_node(fp, "6.1", "1.0");
	ibp_fp_sum_init(x, 20);
	assert_int_equal(ibp_fp_sum_add(x, 5, fp), 0);
	*two = *one;
	assert_int_equal(ibp_fp_sum_merge(two, x), -EINVAL); /* [0, 20) then [5, 6) */
	assert_true(sum_same(two, one));
	ibp_fp_sum_init(two, 21);
	assert_int_equal(ibp_fp_sum_add(two, 4, fp), 0);
	assert_int_equal(ibp_fp_sum_merge(two, x), -EINVAL); /* a step of 21 nodes */
	ibp_fp_sum_init(two, 20);
	assert_int_equal(ibp_fp_sum_add(two, 4, fp), 0);
	ibp_fp_sum_init(x, 20);
	assert_int_equal(ibp_fp_sum_merge(two, x), -EINVAL); /* empty */
	assert_int_equal(two->n_merged, 1);
	free(x);
	free(two);
	free(fp);
	free(one);
}

/* Bytes of key K and of value V of S in the compact wire form (fingerprint.h). */
static size_t key_wire(const struct ibp_fp_sum *s, size_t k)
{
	return 1 + 1 + strlen(s->keys[k].rail) + 4 + 1 + 4 * (size_t)s->keys[k].n_other_ex;
}

static size_t value_wire(const struct ibp_fp_sum *s, size_t v)
{
	return 1 + 8 + 1 + strlen(s->values[v].value) + 4 + 1 + 4 * (size_t)s->values[v].n_ex;
}

static size_t sum_wire(const struct ibp_fp_sum *s)
{
	size_t n = IBP_FPS_WIRE_MIN;

	for (size_t k = 0; k < s->n_keys; k++)
		n += key_wire(s, k);
	for (size_t v = 0; v < s->n_values; v++)
		n += value_wire(s, v);
	return n;
}

/* Encodes S at its computed length, decodes it back, re-encodes it to the same bytes. */
static void sum_round_trip(const struct ibp_fp_sum *s)
{
	struct ibp_fp_sum *back = malloc(sizeof(*back));
	uint8_t *buf = malloc(IBP_FPS_WIRE_MAX), *again = malloc(IBP_FPS_WIRE_MAX);
	int n;

	assert_non_null(back);
	assert_non_null(buf);
	assert_non_null(again);
	n = ibp_fp_sum_encode(s, buf, IBP_FPS_WIRE_MAX);
	assert_int_equal(n, (int)sum_wire(s));
	assert_int_equal(ibp_fp_sum_encode(s, buf, (size_t)n - 1), -ENOSPC);
	assert_int_equal(ibp_fp_sum_decode(buf, (size_t)n, back), 0);
	assert_int_equal(back->n_keys, s->n_keys);
	assert_int_equal(back->n_values, s->n_values);
	assert_memory_equal(back->keys, s->keys, s->n_keys * sizeof(s->keys[0]));
	assert_memory_equal(back->values, s->values, s->n_values * sizeof(s->values[0]));
	assert_int_equal(ibp_fp_sum_encode(back, again, IBP_FPS_WIRE_MAX), n);
	assert_memory_equal(buf, again, (size_t)n);
	free(again);
	free(buf);
	free(back);
}

/* Every pair and group in use, every string at its longest, every example slot: the bound. */
static void maximal_sum(struct ibp_fp_sum *s)
{
	ibp_fp_sum_init(s, 16);
	s->n_merged = 16;
	s->n_keys = IBP_FPS_MAX_KEYS;
	s->n_values = IBP_FPS_MAX_VALUES;
	/* the tables as entries coming into use are: cleared (ibp_fp_sum_init clears the counts) */
	memset(s->keys, 0, sizeof(s->keys));
	memset(s->values, 0, sizeof(s->values));
	for (size_t k = 0; k < IBP_FPS_MAX_KEYS; k++) {
		struct ibp_fps_key *key = &s->keys[k];

		key->field = IBP_FP_FIRMWARE;
		memset(key->rail, 'r', sizeof(key->rail) - 1);
		snprintf(key->rail, 4, "%03zu", k);
		key->rail[3] = 'r';
		key->other = 4;
		key->n_other_ex = 4;
		for (uint32_t i = 0; i < 4; i++)
			key->other_ex[i] = i;
	}
	/* keys 0..63 have two groups, the others one; a pair's nodes never overlap */
	for (size_t v = 0; v < IBP_FPS_MAX_VALUES; v++) {
		struct ibp_fps_value *x = &s->values[v];
		uint32_t j = (uint32_t)(v / IBP_FPS_MAX_KEYS);

		x->key = (uint8_t)(v % IBP_FPS_MAX_KEYS);
		x->hash = 0x1000 + v;
		memset(x->value, 'v', sizeof(x->value) - 1);
		x->count = 4;
		x->n_ex = 4;
		for (uint32_t i = 0; i < 4; i++)
			x->ex[i] = 4 + 4 * j + i;
	}
}

/* The findings of F as one string each: code, node, observed. */
static void findings_text(const struct ibp_findings *f, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < f->n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s|%s|%s\n", f->v[i].code, f->v[i].node,
				      f->v[i].observed);
}

/* Pruned, a complete sum judges the same; a step that agrees keeps a bare header. */
static void test_sum_prune_judges_the_same(void **state)
{
	struct ibp_fp_sum *s = sum_of(8, fw_three_odd, NULL), *t = malloc(sizeof(*t));
	struct ibp_findings a = {0}, b = {0};
	struct ibp_policy pol;
	char before[4096], after[4096];
	(void)state;

	assert_non_null(t);
	sum_names_init();
	ibp_policy_init(&pol);
	assert_true(s->n_keys > 1);
	for (long self = -1; self < 8; self++) {
		assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, self, &a), 0);
		ibp_fp_sum_copy(t, s);
		ibp_fp_sum_prune(t);
		assert_int_equal(ibp_fp_sum_check(t), 0);
		assert_int_equal(ibp_fp_sum_judge(t, sum_names, &pol, self, &b), 0);
		findings_text(&a, before, sizeof(before));
		findings_text(&b, after, sizeof(after));
		assert_string_equal(before, after);
		ibp_findings_release(&a);
		ibp_findings_release(&b);
	}
	/* only the odd pair is left: firmware on one rail, its two groups */
	assert_int_equal(t->n_keys, 1);
	assert_int_equal(t->n_values, 2);
	assert_int_equal(t->keys[0].field, IBP_FP_FIRMWARE);
	sum_round_trip(t);
	free(s);
	/* a step that agrees: nothing is left but the counts */
	s = sum_of(8, fw_same, NULL);
	ibp_fp_sum_prune(s);
	assert_int_equal(s->n_keys, 0);
	assert_int_equal(s->n_values, 0);
	assert_int_equal(s->n_merged, 8);
	assert_int_equal(ibp_fp_sum_judge(s, sum_names, &pol, -1, &a), 0);
	assert_int_equal(a.n, 0);
	assert_int_equal(sum_wire(s), IBP_FPS_WIRE_MIN);
	free(s);
	free(t);
}

static void test_sum_wire_round_trip_empty_typical_maximal(void **state)
{
	struct ibp_fp_sum *s = malloc(sizeof(*s));
	struct ibp_fp *fp = malloc(sizeof(*fp));
	(void)state;

	assert_non_null(s);
	assert_non_null(fp);
	/* one node with an empty fingerprint: no pair, no group */
	ibp_fp_init(fp);
	ibp_fp_sum_init(s, 3);
	assert_int_equal(ibp_fp_sum_add(s, 0, fp), 0);
	assert_int_equal(sum_wire(s), IBP_FPS_WIRE_MIN);
	sum_round_trip(s);
	free(s);
	/* typical: 8 nodes, three of them odd */
	s = sum_of(8, fw_three_odd, NULL);
	sum_round_trip(s);
	maximal_sum(s);
	assert_int_equal(ibp_fp_sum_check(s), 0);
	assert_int_equal(sum_wire(s), IBP_FPS_WIRE_MAX);
	sum_round_trip(s);
	free(fp);
	free(s);
}

/*
 * The strict decoder (the sum comes from other hosts), on the 8-node sum
 * of three odd firmware: pairs hca_set, kernel (rail ""), firmware
 * mlx5_3:1; groups hca_set, kernel (8 nodes), firmware 28.41.1000 (5),
 * 28.39.1002 (3).
 */
static void test_sum_wire_refuses_every_malformed_form(void **state)
{
	struct ibp_fp_sum *s = sum_of(8, fw_three_odd, NULL), *back = malloc(sizeof(*back));
	uint8_t *buf = malloc(IBP_FPS_WIRE_MAX + 1), *bad = malloc(IBP_FPS_WIRE_MAX + 1);
	size_t k0 = IBP_FPS_WIRE_MIN, k1, k2, v0, v1, v2, v3, l1, n;
	(void)state;

	assert_non_null(back);
	assert_non_null(buf);
	assert_non_null(bad);
	assert_int_equal(s->n_keys, 3);
	assert_int_equal(s->n_values, 4);
	assert_int_equal(s->values[2].count, 5);
	assert_int_equal(s->values[3].count, 3);
	k1 = k0 + key_wire(s, 0);
	k2 = k1 + key_wire(s, 1);
	v0 = k2 + key_wire(s, 2);
	v1 = v0 + value_wire(s, 0);
	v2 = v1 + value_wire(s, 1);
	v3 = v2 + value_wire(s, 2);
	l1 = strlen(s->values[1].value); /* v1: key | hash | len | value | count | n_ex | ex */
	n = (size_t)ibp_fp_sum_encode(s, buf, IBP_FPS_WIRE_MAX);
	assert_int_equal(n, sum_wire(s));

	const struct corruption cases[] = {
	    {"no nodes", 3, 0},
	    {"the first node past the step", 7, 8},
	    {"nodes past the step's last", 7, 1},
	    {"more merged than nodes", 11, 9},
	    {"pair count above the table", 12, IBP_FPS_MAX_KEYS + 1},
	    {"group count above the table", 13, IBP_FPS_MAX_VALUES + 1},
	    {"pair count above the pairs present", 12, 4},
	    {"pair count below the pairs present", 12, 2},
	    {"dropped entries beyond any node's", 14, 0xff},
	    {"unknown field", k0, IBP_FP_N_FIELDS},
	    {"control character in a rail", k2 + 2, 0x07},
	    {"rail length of its whole field", k2 + 1, IBP_FP_RAIL_MAX},
	    {"'other' examples above the bound", k1 + 6, IBP_FPS_EXAMPLES + 1},
	    {"a group of a pair that does not exist", v1, 3},
	    {"control character in a value", v1 + 10, 0x1b},
	    {"value length of its whole field", v1 + 9, IBP_FP_VALUE_MAX},
	    {"value length past the end", v3 + 9, IBP_FP_VALUE_MAX - 1},
	    {"count zero", v1 + 13 + l1, 0},
	    {"count above the nodes merged", v1 + 13 + l1, 9},
	    {"examples not the count's", v1 + 13 + l1, 3},
	    {"examples above the bound", v1 + 14 + l1, IBP_FPS_EXAMPLES + 1},
	    {"example past the nodes merged", v1 + 15 + l1 + 3, 8},
	    {"examples out of order", v1 + 15 + l1 + 4 + 3, 0},
	    {"a node in two groups of one pair", v3 + 15 + 10 + 3, 0},
	    {"more nodes in a pair's groups than merged", v2 + 13 + 10, 6},
	};
	wire_refuses(&(struct wire_decoder){sum_decode, sum_left_empty, back}, buf, n, bad, cases,
		     sizeof(cases) / sizeof(cases[0]));
	/* the same pair twice: kernel's pair made a copy of hca_set's (same size) */
	memcpy(bad, buf, n);
	memcpy(bad + k1, bad + k0, k1 - k0);
	assert_int_equal(ibp_fp_sum_decode(bad, n, back), -EINVAL);
	/* the same (pair, value) twice: the odd firmware's hash made the majority's */
	memcpy(bad, buf, n);
	memcpy(bad + v3 + 1, bad + v2 + 1, 8);
	assert_int_equal(ibp_fp_sum_decode(bad, n, back), -EINVAL);
	/* the encoder refuses what the decoder would */
	s->values[3].ex[0] = 0;
	assert_int_equal(ibp_fp_sum_encode(s, buf, IBP_FPS_WIRE_MAX), -EINVAL);
	s->values[3].ex[0] = 3;
	s->values[1].value[0] = '\n';
	assert_int_equal(ibp_fp_sum_encode(s, buf, IBP_FPS_WIRE_MAX), -EINVAL);
	free(buf);
	free(bad);
	free(back);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fp_majority_cases),
	    cmocka_unit_test(test_fp_window_each_node_says_its_own_part),
	    cmocka_unit_test(test_fp_missing_rail_fails_on_the_hca_set_only),
	    cmocka_unit_test(test_fp_long_values_compared_whole),
	    cmocka_unit_test(test_fp_wire_round_trip_empty_typical_maximal),
	    cmocka_unit_test(test_fp_wire_refuses_every_malformed_form),
	    cmocka_unit_test(test_fp_wire_encoder_refuses_what_the_decoder_would),
	    cmocka_unit_test(test_fp_hca_set_in_bracket_form),
	    cmocka_unit_test(test_fp_collect_from_a_generated_tree),
	    cmocka_unit_test(test_sum_three_consecutive_odd_named_once_step_wide),
	    cmocka_unit_test(test_sum_tie_all_different_one_node),
	    cmocka_unit_test(test_sum_add_in_order_each_node_once),
	    cmocka_unit_test(test_sum_bounds_said),
	    cmocka_unit_test(test_sum_merge_halves_as_one_by_one),
	    cmocka_unit_test(test_sum_wire_round_trip_empty_typical_maximal),
	    cmocka_unit_test(test_sum_prune_judges_the_same),
	    cmocka_unit_test(test_sum_wire_refuses_every_malformed_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
