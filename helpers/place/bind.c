/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bind.c: one binding of a process to its row of the placement (bind.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>
#include <numaif.h>

#include "ibprep/bind.h"

#define NODE_WORDS (IBP_BIND_MAX_NODES / (8 * sizeof(unsigned long)))

void ibp_bind_plan_init(struct ibp_bind_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->mempolicy = IBP_MPOL_DEFAULT;
}

void ibp_bind_plan_release(struct ibp_bind_plan *p)
{
	hwloc_bitmap_free(p->cpus);
	hwloc_bitmap_free(p->mems);
	p->cpus = p->mems = NULL;
}

const char *ibp_mpol_name(int mempolicy)
{
	switch (mempolicy) {
	case IBP_MPOL_PREFERRED:
		return "preferred";
	case IBP_MPOL_PREFERRED_MANY:
		return "preferred_many";
	case IBP_MPOL_INTERLEAVE:
		return "interleave";
	default:
		return "default";
	}
}

int ibp_bind_plan(const struct ibp_place_view *view, hwloc_const_bitmap_t have,
		  struct ibp_bind_plan *p)
{
	int n;

	ibp_bind_plan_release(p);
	ibp_bind_plan_init(p);
	if (!view->cpus || hwloc_bitmap_iszero(view->cpus))
		return -ENOENT;
	p->cpus = hwloc_bitmap_dup(view->cpus);
	p->mems = hwloc_bitmap_alloc();
	if (!p->cpus || !p->mems)
		return -ENOMEM;
	if (have)
		hwloc_bitmap_and(p->cpus, p->cpus, have);
	if (hwloc_bitmap_iszero(p->cpus))
		return -EXDEV;
	if (view->mems && !hwloc_bitmap_iszero(view->mems)) {
		if (hwloc_bitmap_last(view->mems) >= IBP_BIND_MAX_NODES ||
		    hwloc_bitmap_last(view->mems) < 0)
			return -ERANGE;
		hwloc_bitmap_copy(p->mems, view->mems);
		n = hwloc_bitmap_weight(p->mems);
		p->mempolicy = n == 1 ? IBP_MPOL_PREFERRED : IBP_MPOL_PREFERRED_MANY;
	}
	return 0;
}

/* The calling thread's CPU mask, as a bitmap.  0 or -errno. */
static int current_mask(hwloc_bitmap_t out)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	size_t ncpu = conf > 0 ? (size_t)conf : 1024;

	for (int tries = 0; tries < 8; tries++, ncpu *= 2) {
		cpu_set_t *set = CPU_ALLOC(ncpu);
		size_t sz = CPU_ALLOC_SIZE(ncpu);

		if (!set)
			return -ENOMEM;
		CPU_ZERO_S(sz, set);
		if (sched_getaffinity(0, sz, set)) {
			int e = errno;

			CPU_FREE(set);
			if (e == EINVAL)
				continue; /* more CPUs than we asked for */
			return -e;
		}
		hwloc_bitmap_zero(out);
		for (size_t c = 0; c < sz * 8; c++)
			if (CPU_ISSET_S(c, sz, set))
				hwloc_bitmap_set(out, (unsigned)c);
		CPU_FREE(set);
		return 0;
	}
	return -EINVAL;
}

static int apply_cpus(hwloc_const_bitmap_t cpus)
{
	int last = hwloc_bitmap_last(cpus), c, rc = 0;
	cpu_set_t *set;
	size_t sz;

	if (last < 0)
		return -ENOENT;
	set = CPU_ALLOC((size_t)last + 1);
	if (!set)
		return -ENOMEM;
	sz = CPU_ALLOC_SIZE((size_t)last + 1);
	CPU_ZERO_S(sz, set);
	hwloc_bitmap_foreach_begin(c, cpus)
	{
		CPU_SET_S((size_t)c, sz, set);
	}
	hwloc_bitmap_foreach_end();
	if (sched_setaffinity(0, sz, set))
		rc = -errno;
	CPU_FREE(set);
	return rc;
}

static int apply_mems(struct ibp_bind_plan *p)
{
	unsigned long mask[NODE_WORDS];
	int node;

	if (p->mempolicy == IBP_MPOL_DEFAULT)
		return 0;
	memset(mask, 0, sizeof(mask));
	hwloc_bitmap_foreach_begin(node, p->mems)
	{
		mask[(size_t)node / (8 * sizeof(unsigned long))] |=
		    1UL << ((size_t)node % (8 * sizeof(unsigned long)));
	}
	hwloc_bitmap_foreach_end();
	if (!set_mempolicy(p->mempolicy, mask, IBP_BIND_MAX_NODES))
		return 0;
	if (errno != EINVAL || p->mempolicy != IBP_MPOL_PREFERRED_MANY)
		return -errno;
	/* A kernel before 5.15: interleave over the same nodes (still falls back when full). */
	p->mempolicy = IBP_MPOL_INTERLEAVE;
	return set_mempolicy(p->mempolicy, mask, IBP_BIND_MAX_NODES) ? -errno : 0;
}

int ibp_place_bind(const struct ibp_place_view *view, struct ibp_bind_plan *out)
{
	struct ibp_bind_plan plan;
	hwloc_bitmap_t have = hwloc_bitmap_alloc();
	int rc;

	ibp_bind_plan_init(&plan);
	if (!have)
		return -ENOMEM;
	rc = current_mask(have);
	if (!rc)
		rc = ibp_bind_plan(view, have, &plan);
	if (!rc)
		rc = apply_cpus(plan.cpus);
	if (!rc)
		rc = apply_mems(&plan);
	hwloc_bitmap_free(have);
	if (out) {
		ibp_bind_plan_release(out);
		*out = plan;
	} else {
		ibp_bind_plan_release(&plan);
	}
	return rc;
}
