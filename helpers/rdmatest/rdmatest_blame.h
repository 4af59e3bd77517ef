/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_blame.h: what the blame judges (private to helpers/rdmatest/).
 * The rule itself is public (rdmatest.h: ibp_rdmatest_suspect,
 * ibp_rdmatest_all_slow, ibp_rdmatest_status_fix); rdmatest_blame.c holds
 * it and calls nothing else of the test.
 */
#ifndef IBPREP_RDMATEST_BLAME_H
#define IBPREP_RDMATEST_BLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/rdmatest.h"

/*
 * What a node knows of the step's links: its own outcomes first, then its
 * peers' summaries (the summary exchange fills it, the report reads it).
 */
struct ibp_rt_known {
	struct ibp_oob_link v[IBP_RDMATEST_MAX_LINKS * 5];
	size_t n;
	size_t n_summaries; /* peers' summaries taken */
	/*
	 * A peer whose summary carried another plan digest: the nodes did not
	 * derive the same plan (their topologies differ or one has none).
	 */
	bool plan_mismatch;
	uint32_t mismatch_node;
	uint64_t mismatch_digest;
};

/* Adds X unless a link of the same ends, round and rail is known (the first wins). */
void ibp_rt_known_add(struct ibp_rt_known *k, const struct ibp_oob_link *x);

/* Whether a link's outcome is evidence about the hardware, for the blame. */
bool ibp_rt_counts(uint8_t status);

#endif
