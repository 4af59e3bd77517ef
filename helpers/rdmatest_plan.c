/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_plan.c: who tests with whom (rdmatest.h).  A pure function of
 * the node count and index, the same on every node, so no node needs to
 * ask another: round 1 is the ring (i sends to i+1), round 2 the second
 * shift (i sends to i+2), which gives every node two distinct senders and
 * two distinct receivers from N = 5 on, enough for the blame to tell a
 * node from a link.
 *
 * Seam: a richer plan (more rounds, rail-crossing pairs, a topology-aware
 * order) changes this function and IBP_RDMATEST_MAX_LINKS; the rest of
 * the run only iterates over plan->n_rounds.
 */
#include <errno.h>
#include <string.h>

#include "ibprep/rdmatest.h"

int ibp_rdmatest_plan(size_t nnodes, size_t index, struct ibp_rdmatest_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	if (nnodes == 0 || index >= nnodes || nnodes > IBP_HOSTLIST_MAX)
		return -EINVAL;
	plan->n_rounds = nnodes == 1 ? 0 : nnodes == 2 ? 1 : 2;
	for (unsigned r = 0; r < plan->n_rounds; r++) {
		size_t shift = r + 1;

		plan->send_to[r] = (uint32_t)((index + shift) % nnodes);
		plan->recv_from[r] = (uint32_t)((index + nnodes - shift) % nnodes);
	}
	return 0;
}
