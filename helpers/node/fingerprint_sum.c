/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fingerprint_sum.c: the step-wide comparison (fingerprint.h): a bounded
 * sum of every node's fingerprint, built along the test's ring, its wire
 * form (strangers' bytes: a strict decoder) and its judgement.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "ibprep/fingerprint.h"
#include "ibprep/text.h"
#include "fp_wire.h"

/*
 * The counts only: a pair or a group is cleared when it comes into use
 * (new_key, new_value, the decoder), so a sum costs what it holds, not its
 * 22 KB of tables.
 */
void ibp_fp_sum_init(struct ibp_fp_sum *s, uint32_t nnodes)
{
	memset(s, 0, offsetof(struct ibp_fp_sum, keys));
	s->nnodes = nnodes;
}

void ibp_fp_sum_copy(struct ibp_fp_sum *dst, const struct ibp_fp_sum *src)
{
	if (dst == src)
		return;
	memcpy(dst, src, offsetof(struct ibp_fp_sum, keys));
	memcpy(dst->keys, src->keys, src->n_keys * sizeof(src->keys[0]));
	memcpy(dst->values, src->values, src->n_values * sizeof(src->values[0]));
}

void ibp_fp_sum_prune(struct ibp_fp_sum *s)
{
	uint8_t groups[IBP_FPS_MAX_KEYS] = {0};
	int map[IBP_FPS_MAX_KEYS];
	uint16_t nk = 0, nv = 0;

	for (size_t v = 0; v < s->n_values; v++)
		if (s->values[v].key < s->n_keys && groups[s->values[v].key] < 2)
			groups[s->values[v].key]++;
	for (size_t k = 0; k < IBP_FPS_MAX_KEYS; k++)
		map[k] = -1;
	for (size_t k = 0; k < s->n_keys; k++) {
		if (groups[k] < 2 && !s->keys[k].other)
			continue; /* agreed: nothing to say about it */
		map[k] = nk;
		if (nk != k)
			s->keys[nk] = s->keys[k];
		nk++;
	}
	for (size_t v = 0; v < s->n_values; v++) {
		if (s->values[v].key >= s->n_keys || map[s->values[v].key] < 0)
			continue;
		if (nv != v)
			s->values[nv] = s->values[v];
		s->values[nv].key = (uint8_t)map[s->values[v].key];
		nv++;
	}
	s->n_keys = nk;
	s->n_values = nv;
}

/* Pair K, cleared, in use from now on: FIELD of RAIL. */
static struct ibp_fps_key *new_key(struct ibp_fp_sum *s, int k, uint8_t field,
				   const char rail[IBP_FP_RAIL_MAX])
{
	struct ibp_fps_key *key = &s->keys[k];

	memset(key, 0, sizeof(*key));
	key->field = field;
	memcpy(key->rail, rail, sizeof(key->rail));
	return key;
}

static int find_key(const struct ibp_fp_sum *s, uint8_t field, const char *rail)
{
	for (int k = 0; k < s->n_keys; k++)
		if (s->keys[k].field == field && !strcmp(s->keys[k].rail, rail))
			return k;
	return -1;
}

static void add_example(uint32_t *ex, uint8_t *n_ex, uint32_t node)
{
	if (*n_ex < IBP_FPS_EXAMPLES)
		ex[(*n_ex)++] = node;
}

static bool entry_ok(const struct ibp_fp_entry *e)
{
	return e->field < IBP_FP_N_FIELDS && memchr(e->rail, 0, sizeof(e->rail)) &&
	       memchr(e->value, 0, sizeof(e->value));
}

int ibp_fp_sum_add(struct ibp_fp_sum *s, uint32_t node, const struct ibp_fp *fp)
{
	/* an empty sum takes any node of the step; then only the next one */
	if (!fp || (s->n_merged && node != s->first + s->n_merged) || node >= s->nnodes ||
	    s->nnodes > IBP_FPS_MAX_NODES || fp->n > IBP_FP_MAX_ENTRIES)
		return -EINVAL;
	for (size_t i = 0; i < fp->n; i++) {
		if (!entry_ok(&fp->e[i]))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (fp->e[j].field == fp->e[i].field &&
			    !strcmp(fp->e[j].rail, fp->e[i].rail))
				return -EINVAL; /* one value per (field, rail) */
	}
	for (size_t i = 0; i < fp->n; i++) {
		const struct ibp_fp_entry *e = &fp->e[i];
		int k = find_key(s, e->field, e->rail);
		int v;

		if (k < 0) {
			if (s->n_keys == IBP_FPS_MAX_KEYS) {
				s->keys_dropped++;
				continue;
			}
			k = s->n_keys++;
			new_key(s, k, e->field, e->rail);
		}
		for (v = 0; v < s->n_values; v++)
			if (s->values[v].key == k && s->values[v].hash == e->hash)
				break;
		if (v == s->n_values) {
			struct ibp_fps_key *key = &s->keys[k];

			if (s->n_values == IBP_FPS_MAX_VALUES) {
				key->other++;
				add_example(key->other_ex, &key->n_other_ex, node);
				continue;
			}
			s->n_values++;
			memset(&s->values[v], 0, sizeof(s->values[v]));
			s->values[v].key = (uint8_t)k;
			s->values[v].hash = e->hash;
			memcpy(s->values[v].value, e->value, sizeof(e->value));
		}
		s->values[v].count++;
		add_example(s->values[v].ex, &s->values[v].n_ex, node);
	}
	if (!s->n_merged)
		s->first = node;
	s->n_merged++;
	return 0;
}

/* Appends SRC's examples (all above DST's: the ranges follow each other) while room. */
static void add_examples(uint32_t *ex, uint8_t *n_ex, const uint32_t *src, uint8_t n_src)
{
	for (size_t i = 0; i < n_src; i++)
		add_example(ex, n_ex, src[i]);
}

/*
 * SRC's "other" examples and a group's examples that lose their value to
 * the bound both land in a pair's other_ex, which must stay ascending:
 * merge the two lists, keep the lowest IBP_FPS_EXAMPLES.
 */
static void merge_examples(uint32_t *ex, uint8_t *n_ex, const uint32_t *src, uint8_t n_src)
{
	uint32_t out[IBP_FPS_EXAMPLES] = {0};
	size_t a = 0, b = 0, n = 0;

	while (n < IBP_FPS_EXAMPLES && (a < *n_ex || b < n_src))
		out[n++] = b == n_src || (a < *n_ex && ex[a] < src[b]) ? ex[a++] : src[b++];
	memcpy(ex, out, n * sizeof(*out));
	*n_ex = (uint8_t)n;
}

int ibp_fp_sum_merge(struct ibp_fp_sum *dst, const struct ibp_fp_sum *src)
{
	int map[IBP_FPS_MAX_KEYS];

	if (src->nnodes != dst->nnodes || !src->n_merged || ibp_fp_sum_check(src) ||
	    (dst->n_merged && (ibp_fp_sum_check(dst) || src->first != dst->first + dst->n_merged)))
		return -EINVAL;
	if (!dst->n_merged) {
		ibp_fp_sum_copy(dst, src);
		return 0;
	}
	for (size_t k = 0; k < src->n_keys; k++) {
		const struct ibp_fps_key *sk = &src->keys[k];

		map[k] = find_key(dst, sk->field, sk->rail);
		if (map[k] < 0 && dst->n_keys < IBP_FPS_MAX_KEYS) {
			map[k] = dst->n_keys++;
			new_key(dst, map[k], sk->field, sk->rail);
		}
		if (map[k] < 0) { /* past the pair bound: every entry of it is dropped */
			dst->keys_dropped += sk->other;
			continue;
		}
		dst->keys[map[k]].other += sk->other;
		merge_examples(dst->keys[map[k]].other_ex, &dst->keys[map[k]].n_other_ex,
			       sk->other_ex, sk->n_other_ex);
	}
	for (size_t v = 0; v < src->n_values; v++) {
		const struct ibp_fps_value *sv = &src->values[v];
		int k = map[sv->key], d;

		if (k < 0) {
			dst->keys_dropped += sv->count;
			continue;
		}
		for (d = 0; d < dst->n_values; d++)
			if (dst->values[d].key == k && dst->values[d].hash == sv->hash)
				break;
		if (d == dst->n_values && dst->n_values == IBP_FPS_MAX_VALUES) {
			struct ibp_fps_key *key = &dst->keys[k];

			key->other += sv->count;
			merge_examples(key->other_ex, &key->n_other_ex, sv->ex, sv->n_ex);
			continue;
		}
		if (d == dst->n_values) {
			dst->n_values++;
			dst->values[d] = *sv;
			dst->values[d].key = (uint8_t)k;
			continue;
		}
		dst->values[d].count += sv->count;
		add_examples(dst->values[d].ex, &dst->values[d].n_ex, sv->ex, sv->n_ex);
	}
	dst->keys_dropped += src->keys_dropped;
	dst->n_merged += src->n_merged;
	return 0;
}

/* ---- checks ---- */

/* Examples: N_EX == min(COUNT, bound), ascending, among S's nodes, unused slots 0. */
static bool examples_ok(const struct ibp_fp_sum *s, const uint32_t *ex, uint8_t n_ex,
			uint32_t count)
{
	if (n_ex != (count < IBP_FPS_EXAMPLES ? count : IBP_FPS_EXAMPLES))
		return false;
	for (size_t i = 0; i < IBP_FPS_EXAMPLES; i++) {
		if (i >= n_ex ? ex[i] != 0
			      : ex[i] < s->first || ex[i] - s->first >= s->n_merged ||
				    (i && ex[i] <= ex[i - 1]))
			return false;
	}
	return true;
}

/* Two ascending example lists share no node (one merge pass). */
static bool disjoint(const uint32_t *a, uint8_t na, const uint32_t *b, uint8_t nb)
{
	for (size_t i = 0, j = 0; i < na && j < nb;) {
		if (a[i] == b[j])
			return false;
		if (a[i] < b[j])
			i++;
		else
			j++;
	}
	return true;
}

/*
 * The groups of one pair are chained (head[key], next[value]), and the
 * pairs of one field (by_field[field], next_key[key]), so that comparing
 * them with each other costs little in the usual sum (one group per pair,
 * a few rails per field) and is quadratic only within one pair or field.
 */
static bool sum_ok(const struct ibp_fp_sum *s)
{
	uint64_t per_key[IBP_FPS_MAX_KEYS];
	int16_t head[IBP_FPS_MAX_KEYS], by_field[IBP_FP_N_FIELDS];
	/* each set before it is read; cppcheck cannot tell */
	int16_t next_key[IBP_FPS_MAX_KEYS] = {0}, next[IBP_FPS_MAX_VALUES] = {0};

	if (s->nnodes == 0 || s->nnodes > IBP_FPS_MAX_NODES || s->n_merged == 0 ||
	    s->first >= s->nnodes || s->n_merged > s->nnodes - s->first ||
	    s->n_keys > IBP_FPS_MAX_KEYS || s->n_values > IBP_FPS_MAX_VALUES ||
	    (uint64_t)s->keys_dropped > (uint64_t)s->n_merged * IBP_FP_MAX_ENTRIES)
		return false;
	for (size_t f = 0; f < IBP_FP_N_FIELDS; f++)
		by_field[f] = -1;
	for (size_t k = 0; k < s->n_keys; k++) {
		const struct ibp_fps_key *key = &s->keys[k];

		if (key->field >= IBP_FP_N_FIELDS || key->other > s->n_merged ||
		    !examples_ok(s, key->other_ex, key->n_other_ex, key->other))
			return false;
		/* a pair once: the pairs of one field are chained too */
		for (int j = by_field[key->field]; j >= 0; j = next_key[j])
			if (!strcmp(s->keys[j].rail, key->rail))
				return false;
		next_key[k] = by_field[key->field];
		by_field[key->field] = (int16_t)k;
		per_key[k] = key->other;
		head[k] = -1;
	}
	for (size_t v = 0; v < s->n_values; v++) {
		const struct ibp_fps_value *x = &s->values[v];
		const struct ibp_fps_key *key;

		if (x->key >= s->n_keys || x->count < 1 || x->count > s->n_merged ||
		    !examples_ok(s, x->ex, x->n_ex, x->count))
			return false;
		/* a node is in one group per pair; a (pair, value) is one group */
		key = &s->keys[x->key];
		if (!disjoint(x->ex, x->n_ex, key->other_ex, key->n_other_ex))
			return false;
		for (int u = head[x->key]; u >= 0; u = next[u])
			if (s->values[u].hash == x->hash ||
			    !disjoint(x->ex, x->n_ex, s->values[u].ex, s->values[u].n_ex))
				return false;
		next[v] = head[x->key];
		head[x->key] = (int16_t)v;
		per_key[x->key] += x->count;
	}
	/* every pair has a group; no pair counts more nodes than were merged */
	for (size_t k = 0; k < s->n_keys; k++)
		if (per_key[k] < 1 || per_key[k] > s->n_merged)
			return false;
	return true;
}

int ibp_fp_sum_check(const struct ibp_fp_sum *s)
{
	for (size_t k = 0; k < s->n_keys && k < IBP_FPS_MAX_KEYS; k++)
		if (!fpw_str_ok(s->keys[k].rail, IBP_FP_RAIL_MAX))
			return -EINVAL;
	for (size_t v = 0; v < s->n_values && v < IBP_FPS_MAX_VALUES; v++)
		if (!fpw_str_ok(s->values[v].value, IBP_FP_VALUE_MAX))
			return -EINVAL;
	return sum_ok(s) ? 0 : -EINVAL;
}

/* ---- wire form (fingerprint.h; the codec's reader and writer: fp_wire.h) ---- */

_Static_assert(IBP_FPS_MAX_KEYS <= 255 && IBP_FPS_MAX_VALUES <= 255, "counts are one byte");
_Static_assert(IBP_FPS_MAX_VALUES <= INT16_MAX, "value chains are int16_t");

static void put_examples(struct fpw_out *w, const uint32_t *ex, uint8_t n_ex)
{
	fpw_put8(w, n_ex);
	for (size_t i = 0; i < n_ex; i++)
		fpw_put32(w, ex[i]);
}

static void get_examples(struct fpw_in *r, uint32_t *ex, uint8_t *n_ex)
{
	*n_ex = fpw_get8(r);
	if (*n_ex > IBP_FPS_EXAMPLES)
		r->err = -EINVAL;
	for (size_t i = 0; i < *n_ex && !r->err; i++)
		ex[i] = fpw_get32(r);
}

int ibp_fp_sum_encode(const struct ibp_fp_sum *s, uint8_t *buf, size_t len)
{
	struct fpw_out w = {buf, len, 0, 0};

	if (ibp_fp_sum_check(s))
		return -EINVAL;
	fpw_put32(&w, s->nnodes);
	fpw_put32(&w, s->first);
	fpw_put32(&w, s->n_merged);
	fpw_put8(&w, (uint8_t)s->n_keys);
	fpw_put8(&w, (uint8_t)s->n_values);
	fpw_put32(&w, s->keys_dropped);
	for (size_t k = 0; k < s->n_keys; k++) {
		const struct ibp_fps_key *key = &s->keys[k];

		fpw_put8(&w, key->field);
		fpw_put_str(&w, key->rail);
		fpw_put32(&w, key->other);
		put_examples(&w, key->other_ex, key->n_other_ex);
	}
	for (size_t v = 0; v < s->n_values; v++) {
		const struct ibp_fps_value *x = &s->values[v];

		fpw_put8(&w, x->key);
		fpw_put64(&w, x->hash);
		fpw_put_str(&w, x->value);
		fpw_put32(&w, x->count);
		put_examples(&w, x->ex, x->n_ex);
	}
	return w.err ? w.err : (int)w.off;
}

int ibp_fp_sum_decode(const uint8_t *buf, size_t len, struct ibp_fp_sum *s)
{
	struct fpw_in r = {buf, len, 0, 0};

	ibp_fp_sum_init(s, 0);
	s->nnodes = fpw_get32(&r);
	s->first = fpw_get32(&r);
	s->n_merged = fpw_get32(&r);
	s->n_keys = fpw_get8(&r);
	s->n_values = fpw_get8(&r);
	s->keys_dropped = fpw_get32(&r);
	if (s->n_keys > IBP_FPS_MAX_KEYS || s->n_values > IBP_FPS_MAX_VALUES)
		r.err = -EINVAL;
	for (size_t k = 0; k < s->n_keys && !r.err; k++) {
		struct ibp_fps_key *key = &s->keys[k];

		memset(key, 0, sizeof(*key));
		key->field = fpw_get8(&r);
		fpw_get_str(&r, key->rail, sizeof(key->rail));
		key->other = fpw_get32(&r);
		get_examples(&r, key->other_ex, &key->n_other_ex);
	}
	for (size_t v = 0; v < s->n_values && !r.err; v++) {
		struct ibp_fps_value *x = &s->values[v];

		memset(x, 0, sizeof(*x));
		x->key = fpw_get8(&r);
		x->hash = fpw_get64(&r);
		fpw_get_str(&r, x->value, sizeof(x->value));
		x->count = fpw_get32(&r);
		get_examples(&r, x->ex, &x->n_ex);
	}
	/* short, bad, bytes left over, or not a sum ibp_fp_sum_add could have built */
	if (r.err || r.off != len || !sum_ok(s)) {
		ibp_fp_sum_init(s, 0);
		return -EINVAL;
	}
	return 0;
}

/* ---- the judgement ---- */

/* "n7,n8,n9", "n7,n8,n9,n10 and 5 more": as many examples as fit in LEN. */
static void group_list(const uint32_t *ex, uint8_t n_ex, uint32_t count, const char *const *names,
		       char *buf, size_t len)
{
	for (size_t shown = n_ex; shown >= 1; shown--) {
		size_t o = 0;
		bool fits = true;

		for (size_t i = 0; i < shown && fits; i++)
			fits = !ibp_appendf(buf, len, &o, "%s%s", i ? "," : "", names[ex[i]]);
		if (fits && count > shown)
			fits = !ibp_appendf(buf, len, &o, " and %u more", count - (unsigned)shown);
		if (fits || shown == 1) {
			if (!fits)
				ibp_format_cut(buf, len, "%s and %u more", names[ex[0]], count - 1);
			return;
		}
	}
	buf[0] = '\0';
}

struct sum_group {
	const char *value; /* NULL: the "other" group, values not kept */
	const uint32_t *ex;
	uint32_t count;
	uint8_t n_ex;
};

static int add_finding(struct ibp_findings *out, const char *code, int level, const char *node,
		       const char *rail, const char *observed, const char *expected,
		       const char *fix)
{
	struct ibp_finding x;
	const char *colon = strrchr(rail, ':');

	memset(&x, 0, sizeof(x));
	snprintf(x.code, sizeof(x.code), "%s", code);
	x.severity = (enum ibp_severity)level;
	x.fclass = IBP_CLASS_JOB;
	snprintf(x.node, sizeof(x.node), "%s", node);
	if (rail[0]) {
		uint64_t num;

		snprintf(x.device, sizeof(x.device), "%.*s",
			 (int)(colon ? colon - rail : (long)strlen(rail)), rail);
		x.port = colon && !ibp_parse_u64(colon + 1, &num) && num <= 255 ? (int)num : 0;
	}
	ibp_format_cut(x.observed, sizeof(x.observed), "%s", observed);
	snprintf(x.expected, sizeof(x.expected), "%s", expected ? expected : "");
	snprintf(x.fix, sizeof(x.fix), "%s", fix);
	return ibp_findings_add(out, &x);
}

static const char *fix_of(uint8_t field)
{
	return ibp_fp_field_fix((enum ibp_fp_field)field);
}

static int judge_key(const struct ibp_fp_sum *s, size_t k, const char *const *names,
		     const struct ibp_policy *p, long self, struct ibp_findings *out)
{
	const struct ibp_fps_key *key = &s->keys[k];
	enum ibp_consistency_key ck = ibp_fp_field_key((enum ibp_fp_field)key->field);
	int level = p->consistency[ck];
	const char *label = ibp_fp_field_label((enum ibp_fp_field)key->field);
	struct sum_group g[IBP_FPS_MAX_VALUES + 1];
	size_t ng = 0, top = 0, ties = 0;
	uint32_t present = 0, best = 0;
	char code[IBP_CODE_MAX], obs[IBP_TEXT_MAX * 2], nodes[IBP_NODE_MAX];
	int rc;

	if (level == IBP_CONSISTENCY_OFF)
		return 0;
	for (size_t v = 0; v < s->n_values; v++)
		if (s->values[v].key == k)
			g[ng++] = (struct sum_group){s->values[v].value, s->values[v].ex,
						     s->values[v].count, s->values[v].n_ex};
	if (key->other)
		g[ng++] = (struct sum_group){NULL, key->other_ex, key->other, key->n_other_ex};
	if (ng < 2)
		return 0;
	for (size_t i = 0; i < ng; i++) {
		present += g[i].count;
		if (g[i].count > best) {
			best = g[i].count;
			top = i;
		}
	}
	for (size_t i = 0; i < ng; i++)
		ties += g[i].count == best;
	snprintf(code, sizeof(code), "consistency_%s", ibp_consistency_key_name(ck));
	/* no majority: a tie, or the largest group is made of values the table did not keep */
	if (ties > 1 || !g[top].value) {
		uint32_t first = UINT32_MAX;
		size_t o;

		for (size_t i = 0; i < ng; i++)
			if (g[i].ex[0] < first)
				first = g[i].ex[0];
		if (self >= 0 && (uint32_t)self != first)
			return 0;
		o = (size_t)snprintf(obs, sizeof(obs), "no majority for %s across %u nodes:", label,
				     present);
		for (size_t i = 0; i < ng; i++) {
			group_list(g[i].ex, g[i].n_ex, g[i].count, names, nodes, sizeof(nodes));
			if (ibp_appendf(obs, sizeof(obs), &o, "%s %s %s", i ? ";" : "", nodes,
					g[i].value ? g[i].value : "(values past the table)"))
				break; /* cut */
		}
		return add_finding(out, code, level, names[first], key->rail, obs, NULL,
				   fix_of(key->field));
	}
	for (size_t i = 0; i < ng; i++) {
		uint32_t others = present - g[i].count;

		if (i == top || (self >= 0 && (uint32_t)self != g[i].ex[0]))
			continue;
		char what[IBP_TEXT_MAX], rest[IBP_TEXT_MAX];

		group_list(g[i].ex, g[i].n_ex, g[i].count, names, nodes, sizeof(nodes));
		if (g[i].value)
			snprintf(what, sizeof(what), "%s", g[i].value);
		else
			ibp_format_cut(
			    what, sizeof(what),
			    "not %s (%u node%s; the values are past the %d the step-wide "
			    "comparison keeps)",
			    g[top].value, g[i].count, g[i].count == 1 ? "" : "s",
			    IBP_FPS_MAX_VALUES);
		if (best == others)
			snprintf(rest, sizeof(rest), "the other %u node%s", best,
				 best == 1 ? "" : "s");
		else
			snprintf(rest, sizeof(rest), "%u of the other %u nodes", best, others);
		ibp_format_cut(obs, sizeof(obs), "%s %s, %s %s", label, what, rest, g[top].value);
		rc = add_finding(out, code, level, nodes, key->rail, obs, g[top].value,
				 fix_of(key->field));
		if (rc)
			return rc;
	}
	return 0;
}

int ibp_fp_sum_judge(const struct ibp_fp_sum *s, const char *const *names,
		     const struct ibp_policy *p, long self, struct ibp_findings *out)
{
	int rc = 0;

	if (s->first != 0 || s->n_merged != s->nnodes || !sum_ok(s))
		return -EINVAL;
	for (size_t k = 0; k < s->n_keys && !rc; k++)
		rc = judge_key(s, k, names, p, self, out);
	if (!rc && s->keys_dropped && self <= 0) {
		char obs[IBP_TEXT_MAX];

		snprintf(obs, sizeof(obs),
			 "%u fingerprint entries were not compared: the step's nodes have more "
			 "than %d different (field, rail) pairs",
			 s->keys_dropped, IBP_FPS_MAX_KEYS);
		rc = add_finding(out, "consistency_partial", IBP_SEV_OK, names[0], "", obs, NULL,
				 "give the step's nodes the same rails");
	}
	return rc;
}
