/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bind.h: binding the calling process to a task's row of the placement.
 *
 * One implementation for the plugin (task_init, as the job's user) and
 * `ibprep exec`, so a task gets the same binding from both:
 *
 *   CPUs    the row's CPUs within the mask the process already has (Slurm's
 *           task affinity, a cgroup cpuset): never a CPU it was not given.
 *           Masks are CPU_ALLOC-sized, so machines with more than 1024 CPUs
 *           work.
 *   memory  preferred, never bound: a full node spills over instead of
 *           failing the allocation.  One node: MPOL_PREFERRED.  Several:
 *           MPOL_PREFERRED_MANY (Linux 5.15+); where the kernel lacks it
 *           (EINVAL), MPOL_INTERLEAVE over the same nodes (pages spread over
 *           every node of the task, each allocation still falls back).
 *           No node in the row: the policy is left alone.
 *
 * The plan (ibp_bind_plan) is pure and unit-tested on any topology; the
 * apply step is a few system calls.  The core never prints: the caller says
 * what went wrong.
 */
#ifndef IBPREP_BIND_H
#define IBPREP_BIND_H

#include <stddef.h>

#include <hwloc.h>

#include "ibprep/place.h"

/* The kernel's policy numbers (linux/mempolicy.h); PREFERRED_MANY may be missing from libnuma's headers. */
#define IBP_MPOL_DEFAULT        0
#define IBP_MPOL_PREFERRED      1
#define IBP_MPOL_INTERLEAVE     3
#define IBP_MPOL_PREFERRED_MANY 5

#define IBP_BIND_MAX_NODES 1024 /* memory nodes a policy can name */

struct ibp_bind_plan {
	hwloc_bitmap_t cpus; /* owned: the row's CPUs within the process's mask */
	int mempolicy;       /* IBP_MPOL_*: what to ask for (DEFAULT: leave it alone) */
	hwloc_bitmap_t mems; /* owned: the nodes of that policy */
};

void ibp_bind_plan_init(struct ibp_bind_plan *p);
void ibp_bind_plan_release(struct ibp_bind_plan *p);

/*
 * The binding of VIEW for a process whose CPU mask is HAVE (NULL: no limit).
 * 0, -ENOENT (the row has no CPU), -EXDEV (every planned CPU is outside
 * HAVE: nothing to bind to), -ERANGE (a node above IBP_BIND_MAX_NODES),
 * -ENOMEM.
 */
int ibp_bind_plan(const struct ibp_place_view *view, hwloc_const_bitmap_t have,
		  struct ibp_bind_plan *p);

/*
 * Binds the calling thread (a task's only thread at task_init, or ibprep
 * before exec) to VIEW: reads its mask, plans, applies.  OUT (may be NULL)
 * receives the plan applied, with mempolicy the one the kernel took
 * (INTERLEAVE after PREFERRED_MANY's EINVAL).  0, the plan's errors, or
 * -errno of sched_getaffinity, sched_setaffinity, set_mempolicy.
 */
int ibp_place_bind(const struct ibp_place_view *view, struct ibp_bind_plan *out);

/* "preferred", "preferred_many", "interleave", "default". */
const char *ibp_mpol_name(int mempolicy);

#endif
