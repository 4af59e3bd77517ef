/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * deadline.h: absolute deadlines on CLOCK_MONOTONIC, in nanoseconds.
 *
 * Every wait of the cross-node test (connect, each exchange, each completion
 * poll, the whole test) is bounded by an absolute deadline computed once and
 * passed down, so nested waits can never add up beyond the outer bound.  A
 * deadline of 0 is "already expired", never "forever": there is no unbounded
 * wait.  Header-only, no state: callable from any thread and any context.
 */
#ifndef IBPREP_DEADLINE_H
#define IBPREP_DEADLINE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define IBP_NS_PER_MS 1000000LL
#define IBP_NS_PER_S  1000000000LL

static inline int64_t ibp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * IBP_NS_PER_S + ts.tv_nsec;
}

/* NOW + SECONDS (decimals allowed), saturating; negative or NaN seconds give NOW. */
static inline int64_t ibp_deadline_after_s(int64_t now, double seconds)
{
	if (!(seconds > 0))
		return now;
	if (seconds >= (double)(INT64_MAX - now) / (double)IBP_NS_PER_S)
		return INT64_MAX;
	return now + (int64_t)(seconds * (double)IBP_NS_PER_S);
}

static inline int64_t ibp_deadline_after_ms(int64_t now, int64_t ms)
{
	if (ms <= 0)
		return now;
	if (ms >= (INT64_MAX - now) / IBP_NS_PER_MS)
		return INT64_MAX;
	return now + ms * IBP_NS_PER_MS;
}

static inline int64_t ibp_deadline_min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/*
 * A point FRAC (0..1) of the way from START to END: how the test splits its
 * overall budget between rounds.
 */
static inline int64_t ibp_deadline_split(int64_t start, int64_t end, double frac)
{
	if (end <= start || !(frac > 0))
		return start;
	if (frac >= 1)
		return end;
	return start + (int64_t)((double)(end - start) * frac);
}

/*
 * Milliseconds left until DEADLINE as a poll() timeout: rounded up (a wait
 * never ends before its deadline), 0 when expired, capped at INT_MAX.
 */
static inline int ibp_deadline_poll_ms(int64_t deadline, int64_t now)
{
	int64_t left;

	if (deadline <= now)
		return 0;
	left = deadline - now;
	left = left / IBP_NS_PER_MS + (left % IBP_NS_PER_MS ? 1 : 0);
	return left > INT_MAX ? INT_MAX : (int)left;
}

static inline int ibp_deadline_expired(int64_t deadline, int64_t now)
{
	return now >= deadline;
}

static inline int ibp_ns_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of N (>= 1) durations in ns, V sorted in place: the upper one of an even N. */
static inline uint64_t ibp_median_ns(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), ibp_ns_cmp);
	return v[n / 2];
}

#endif
