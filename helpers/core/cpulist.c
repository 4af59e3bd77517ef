/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cpulist.c: strict Linux list strings; see include/ibprep/cpulist.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ibprep/cpulist.h"
#include "ibprep/text.h"

/* One decimal number at *P, advancing it; no sign, no spaces, bounded. */
static int parse_num(const char **p, unsigned *out)
{
	const char *s = *p;
	unsigned long v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > IBP_CPULIST_MAX)
			return -ERANGE;
		s++;
	}
	*p = s;
	*out = (unsigned)v;
	return 0;
}

/* One element "N" or "N-M" at *P. */
static int parse_range(const char **p, unsigned *lo, unsigned *hi)
{
	int rc = parse_num(p, lo);

	if (rc)
		return rc;
	*hi = *lo;
	if (**p == '-') {
		(*p)++;
		rc = parse_num(p, hi);
		if (rc)
			return rc;
		if (*hi < *lo)
			return -EINVAL;
	}
	return 0;
}

int ibp_cpulist_parse(const char *s, hwloc_bitmap_t out)
{
	const char *p = s;
	int rc;

	if (!s || !out)
		return -EINVAL;
	hwloc_bitmap_zero(out);
	/* sysfs and /proc values end in one newline; the caller usually strips it */
	if (!*p || *p == '\n')
		return -EINVAL;
	for (;;) {
		unsigned lo, hi;

		rc = parse_range(&p, &lo, &hi);
		if (rc)
			goto bad;
		if (hwloc_bitmap_set_range(out, lo, (int)hi) < 0) {
			rc = -ENOMEM;
			goto bad;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == '\n' && p[1] == '\0')
			p++;
		if (*p != '\0') {
			rc = -EINVAL;
			goto bad;
		}
		return 0;
	}
bad:
	hwloc_bitmap_zero(out);
	return rc;
}

int ibp_cpulist_format(hwloc_const_bitmap_t set, char *buf, size_t len)
{
	size_t used = 0;
	int i, first;

	if (!buf || !len)
		return -ENOSPC;
	buf[0] = '\0';
	if (hwloc_bitmap_weight(set) < 0)
		return -EINVAL;
	first = hwloc_bitmap_first(set);
	for (i = first; i >= 0;) {
		int end = i, n;

		while (hwloc_bitmap_isset(set, (unsigned)end + 1))
			end++;
		if (end == i)
			n = ibp_appendf(buf, len, &used, "%s%d", used ? "," : "", i);
		else
			n = ibp_appendf(buf, len, &used, "%s%d-%d", used ? "," : "", i, end);
		if (n) {
			buf[0] = '\0';
			return -ENOSPC;
		}
		i = hwloc_bitmap_next(set, end);
	}
	return (int)used;
}

int ibp_indexlist_parse(const char *s, unsigned *out, size_t max)
{
	const char *p = s;
	size_t n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		unsigned lo, hi;
		int rc = parse_range(&p, &lo, &hi);

		if (rc)
			return rc;
		for (unsigned v = lo;; v++) {
			for (size_t k = 0; k < n; k++)
				if (out[k] == v)
					return -EINVAL;
			if (n >= max)
				return -E2BIG;
			out[n++] = v;
			if (v == hi)
				break;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p != '\0')
			return -EINVAL;
		return (int)n;
	}
}
