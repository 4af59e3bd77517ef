/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-util.h: the timing scaffold of the bench tools (fpframe-bench.c,
 * linkwatch-bench.c, child-bench.c): the monotonic clock in microseconds or
 * milliseconds, and the median of a set of timings.  Static inline: each
 * tool is one file that the bench scripts compile alone.
 */
#ifndef IBPREP_BENCH_UTIL_H
#define IBPREP_BENCH_UTIL_H

#include <stdlib.h>

#include "ibprep/deadline.h"

/* CLOCK_MONOTONIC now, in microseconds (ibp_now_ns). */
static inline double bench_now_us(void)
{
	return (double)ibp_now_ns() / 1e3;
}

/* The same in milliseconds. */
static inline double bench_now_ms(void)
{
	return (double)ibp_now_ns() / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sorts V[0, N) and returns its median (for even N the mean of the two
 * middle values); N must be at least 1.
 */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
