/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_summary.h: the summary exchange at the end of a run (private to
 * helpers/rdmatest/), once the link workers are done: each node sends its
 * link outcomes to every peer it still has a connection with, sealed
 * under that link's keys, and (unless all its own links passed) reads
 * theirs for the blame; the step-wide sum's last words and the
 * neighbours' fingerprints come the same way.
 */
#ifndef IBPREP_RDMATEST_SUMMARY_H
#define IBPREP_RDMATEST_SUMMARY_H

#include "rdmatest_blame.h"
#include "rdmatest_conn.h"
#include "rdmatest_fp.h"
#include "rdmatest_ring.h"
#include "rdmatest_topo.h"

/* The owner's parts the exchange reads and fills (the caller's thread's, the workers joined). */
struct ibp_rt_exchange {
	struct ibp_rt_ctx *x;
	struct ibp_rt_ring *ring;
	struct ibp_rt_fps *fps;
	struct ibp_rt_known *known;   /* this node's links, then what the summaries say */
	struct ibp_rt_leaves *leaves; /* the leaves the summaries name (without a topology) */
};

/* Until every summary and fingerprint awaited came, or the run's end; the ring joined. */
void ibp_rt_exchange(struct ibp_rt_exchange *e);

#endif
