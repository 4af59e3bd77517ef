/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cpulist.h: Linux list strings ("0-5,96-101", as in cpuset.cpus,
 * Cpus_allowed_list, local_cpulist, SLURM_STEP_GPUS) and plain index lists
 * ("0,2,3", as in CUDA_VISIBLE_DEVICES).
 *
 * Sets are hwloc bitmaps (the topology module's type), allocated by the
 * caller.  The parsers are strict and bounded: a number above
 * IBP_CPULIST_MAX, a reversed range, a stray character, an empty element or
 * an empty string is -EINVAL (-ERANGE for a number too large) and leaves OUT
 * empty, so a hostile environment variable cannot make us allocate a huge
 * bitmap.  No globals, no allocation beyond the bitmap's own growth.
 */
#ifndef IBPREP_CPULIST_H
#define IBPREP_CPULIST_H

#include <stddef.h>

#include <hwloc.h>

/* Largest CPU / node / index number accepted (the kernel's NR_CPUS max is 8192). */
#define IBP_CPULIST_MAX 65535

/* "0-5,96-101" (also "3", "0-3:2" strides are not accepted) -> OUT.  0 or -errno. */
int ibp_cpulist_parse(const char *s, hwloc_bitmap_t out);

/*
 * OUT <- the canonical list string of SET ("" for an empty set).  Returns the
 * length, or -ENOSPC when LEN is too small (BUF then holds ""), -EINVAL for
 * an infinite set.
 */
int ibp_cpulist_format(hwloc_const_bitmap_t set, char *buf, size_t len);

/*
 * Parses an ordered index list "2,0,1" (order kept, duplicates rejected,
 * ranges "0-3" allowed).  Writes at most MAX values to OUT; returns the count,
 * -EINVAL for malformed text or a duplicate, -ERANGE for a value above
 * IBP_CPULIST_MAX, -E2BIG for more than MAX values.
 */
int ibp_indexlist_parse(const char *s, unsigned *out, size_t max);

#endif
