/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostlist.c: Slurm host list expansion (see hostlist.h).  Two passes over
 * the spec: the first only counts (so the cap is enforced before any
 * allocation proportional to the input), the second writes the names.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/text.h"
#include "ibprep/hostlist.h"

#define MAX_GROUPS 4
#define MAX_DIGITS 9

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.';
}

/* One bracket group "1-4,7": ranges kept as text offsets into the item. */
struct group {
	const char *body; /* after '[' */
	size_t len;       /* up to ']' */
	size_t count;     /* numbers it yields */
};

struct item {
	const char *text[MAX_GROUPS + 1]; /* literal pieces around the groups */
	size_t text_len[MAX_GROUPS + 1];
	struct group g[MAX_GROUPS];
	size_t n_groups;
};

static int parse_number(const char *s, size_t len, unsigned long *v, size_t *width)
{
	unsigned long x = 0;

	if (len == 0 || len > MAX_DIGITS)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		x = x * 10 + (unsigned long)(s[i] - '0');
	}
	*v = x;
	*width = (len > 1 && s[0] == '0') ? len : 0;
	return 0;
}

/*
 * Walks the ranges of a group.  With OUT NULL only validates and counts;
 * otherwise writes the INDEX-th number (formatted) to OUT.
 */
static int group_walk(const struct group *g, const char *item, size_t cap, size_t index, char *out,
		      size_t outlen, char *err, size_t errlen)
{
	const char *p = g->body, *end = g->body + g->len;
	size_t count = 0;

	if (g->len == 0)
		return ibp_errf(-EINVAL, err, errlen, "empty brackets in '%s'", item);
	while (p <= end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		const char *dash = memchr(p, '-', (size_t)(stop - p));
		unsigned long lo, hi;
		size_t wlo, whi, n;

		if (parse_number(p, (size_t)((dash ? dash : stop) - p), &lo, &wlo) ||
		    (dash && parse_number(dash + 1, (size_t)(stop - dash - 1), &hi, &whi)))
			return ibp_errf(-EINVAL, err, errlen,
					"bad range '%.*s' in '%s': expected N or N-M",
					(int)(stop - p), p, item);
		if (!dash)
			hi = lo;
		if (hi < lo)
			return ibp_errf(-EINVAL, err, errlen,
					"bad range '%.*s' in '%s': the first bound is larger",
					(int)(stop - p), p, item);
		n = hi - lo + 1;
		if (n > cap || count > cap - n)
			return -E2BIG;
		if (out && index >= count && index < count + n) {
			int w = snprintf(out, outlen, "%0*lu", (int)wlo,
					 (unsigned long)(lo + (index - count)));

			return (w < 0 || (size_t)w >= outlen) ? -ENAMETOOLONG : 0;
		}
		count += n;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (!out)
		return (int)(count > (size_t)INT32_MAX ? INT32_MAX : count);
	return -ERANGE;
}

/* Splits one item into literal text and bracket groups; counts its hosts. */
static int item_parse(const char *s, size_t len, char *itemtxt, size_t cap, struct item *it,
		      size_t *hosts, char *err, size_t errlen)
{
	size_t i = 0, start = 0, total = 1;

	memset(it, 0, sizeof(*it));
	if (len == 0)
		return ibp_errf(-EINVAL, err, errlen, "empty host name in the list");
	while (i < len) {
		if (s[i] == '[') {
			const char *close = memchr(s + i, ']', len - i);
			struct group *g;
			int c;

			if (!close)
				return ibp_errf(-EINVAL, err, errlen, "unclosed '[' in '%s'",
						itemtxt);
			if (it->n_groups == MAX_GROUPS)
				return ibp_errf(-EINVAL, err, errlen,
						"more than %d bracket groups in '%s'", MAX_GROUPS,
						itemtxt);
			it->text[it->n_groups] = s + start;
			it->text_len[it->n_groups] = i - start;
			g = &it->g[it->n_groups++];
			g->body = s + i + 1;
			g->len = (size_t)(close - (s + i + 1));
			if (memchr(g->body, '[', g->len))
				return ibp_errf(-EINVAL, err, errlen, "nested '[' in '%s'",
						itemtxt);
			c = group_walk(g, itemtxt, cap, 0, NULL, 0, err, errlen);
			if (c <= 0)
				return c < 0 ? c
					     : ibp_errf(-EINVAL, err, errlen,
							"empty brackets in '%s'", itemtxt);
			g->count = (size_t)c;
			if (total > cap / g->count)
				return -E2BIG;
			total *= g->count;
			i = (size_t)(close - s) + 1;
			start = i;
			continue;
		}
		if (s[i] == ']')
			return ibp_errf(-EINVAL, err, errlen, "unexpected ']' in '%s'", itemtxt);
		if (!name_char(s[i]))
			return ibp_errf(-EINVAL, err, errlen,
					"bad character '%c' (0x%02x) in host list item '%s'",
					(s[i] > 0x20 && s[i] < 0x7f) ? s[i] : '?',
					(unsigned char)s[i], itemtxt);
		i++;
	}
	it->text[it->n_groups] = s + start;
	it->text_len[it->n_groups] = len - start;
	*hosts = total;
	return 0;
}

/* The INDEX-th host of an item (last group varies fastest). */
static int item_host(const struct item *it, const char *itemtxt, size_t index, char *out,
		     size_t outlen, char *err, size_t errlen)
{
	size_t pos[MAX_GROUPS], off = 0;

	for (size_t k = it->n_groups; k-- > 0;) {
		pos[k] = index % it->g[k].count;
		index /= it->g[k].count;
	}
	for (size_t k = 0; k <= it->n_groups; k++) {
		if (off + it->text_len[k] >= outlen)
			return ibp_errf(-EINVAL, err, errlen,
					"host name too long in '%s' (at most %zu bytes)", itemtxt,
					outlen - 1);
		memcpy(out + off, it->text[k], it->text_len[k]);
		off += it->text_len[k];
		out[off] = '\0';
		if (k < it->n_groups) {
			int rc = group_walk(&it->g[k], itemtxt, SIZE_MAX, pos[k], out + off,
					    outlen - off, err, errlen);

			if (rc == -ENAMETOOLONG)
				return ibp_errf(-EINVAL, err, errlen,
						"host name too long in '%s' (at most %zu bytes)",
						itemtxt, outlen - 1);
			if (rc)
				return rc;
			off += strlen(out + off);
		}
	}
	return 0;
}

/* Top-level item boundaries: commas outside brackets. */
static size_t item_len(const char *s)
{
	int depth = 0;
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] == '[')
			depth++;
		else if (s[i] == ']')
			depth--;
		else if (s[i] == ',' && depth <= 0)
			break;
	}
	return i;
}

/* The item as quoted in messages: at most 100 bytes, control bytes as '?'. */
static void item_text(char *dst, size_t len, const char *p, size_t n)
{
	snprintf(dst, len, "%.*s", (int)(n < 100 ? n : 100), p);
	for (char *c = dst; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_duplicates(const struct ibp_hostlist *hl, char *err, size_t errlen)
{
	const char **v = malloc(hl->n * sizeof(*v));
	int rc = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < hl->n; i++)
		v[i] = hl->names[i];
	qsort(v, hl->n, sizeof(*v), cmp_names);
	for (size_t i = 1; i < hl->n && !rc; i++)
		if (!strcmp(v[i - 1], v[i]))
			rc = ibp_errf(-EINVAL, err, errlen, "host '%s' appears twice in the list",
				      v[i]);
	free(v);
	return rc;
}

int ibp_hostlist_expand(const char *spec, size_t max_hosts, struct ibp_hostlist *out, char *err,
			size_t errlen)
{
	size_t cap =
	    (max_hosts == 0 || max_hosts > IBP_HOSTLIST_MAX) ? IBP_HOSTLIST_MAX : max_hosts;
	size_t total = 0, k = 0;
	char itemtxt[128];
	int rc;

	out->names = NULL;
	out->n = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!spec || !*spec)
		return ibp_errf(-EINVAL, err, errlen, "empty host list");
	/* Pass 1: validate and count. */
	for (const char *p = spec;;) {
		size_t len = item_len(p), hosts = 0;
		struct item it;

		item_text(itemtxt, sizeof(itemtxt), p, len);
		rc = item_parse(p, len, itemtxt, cap, &it, &hosts, err, errlen);
		if (rc == -E2BIG || (!rc && hosts > cap - total)) {
			snprintf(err ? err : itemtxt, err ? errlen : 0,
				 "host list has more than %zu hosts", cap);
			return -E2BIG;
		}
		if (rc)
			return rc;
		total += hosts;
		if (!p[len])
			break;
		p += len + 1;
	}
	if (total == 0)
		return ibp_errf(-EINVAL, err, errlen, "empty host list");
	out->names = calloc(total, sizeof(*out->names));
	if (!out->names)
		return -ENOMEM;
	/* Pass 2: write. */
	for (const char *p = spec;;) {
		size_t len = item_len(p), hosts = 0;
		struct item it;

		item_text(itemtxt, sizeof(itemtxt), p, len);
		rc = item_parse(p, len, itemtxt, cap, &it, &hosts, err, errlen);
		for (size_t h = 0; !rc && h < hosts; h++)
			rc = item_host(&it, itemtxt, h, out->names[k++], IBP_NODE_MAX, err, errlen);
		if (rc)
			goto fail;
		if (!p[len])
			break;
		p += len + 1;
	}
	out->n = total;
	rc = check_duplicates(out, err, errlen);
	if (rc)
		goto fail;
	return 0;
fail:
	ibp_hostlist_release(out);
	return rc;
}

void ibp_hostlist_release(struct ibp_hostlist *hl)
{
	free(hl->names);
	hl->names = NULL;
	hl->n = 0;
}

long ibp_hostlist_find(const struct ibp_hostlist *hl, const char *name)
{
	for (size_t i = 0; i < hl->n; i++)
		if (!strcmp(hl->names[i], name))
			return (long)i;
	return -1;
}
