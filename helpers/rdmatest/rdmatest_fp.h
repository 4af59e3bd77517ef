/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_fp.h: the fingerprints of a node's test peers (private to
 * helpers/rdmatest/): this node's FINGERPRINT frame, the peers' as they
 * come on the rail-0 links, and their comparison when the step-wide sum
 * (rdmatest_ring.h) is not there.  A step too small for the sum (up to 5
 * nodes) sends its fingerprints early, before the endpoints, once per
 * peer.  Calls nothing of the run but rdmatest_conn.c.
 */
#ifndef IBPREP_RDMATEST_FP_H
#define IBPREP_RDMATEST_FP_H

#include "rdmatest_conn.h"

struct ibp_rt_fps {
	struct ibp_rt_ctx *x;
	/*
	 * This node's FINGERPRINT frame, built once: MINE a copy of the
	 * config's fingerprint (heap; NULL: not yet, or no memory), MSG the
	 * frame that points at it.
	 */
	struct ibp_fp *mine;
	struct ibp_oob_msg msg;
	/*
	 * A small step: the peers (bit = node index, under mu) whose first
	 * rail-0 link is sending this node's fingerprint (CLAIMED), and
	 * those it reached (REACHED); one frame per peer, not one per link
	 * (two nodes share two links).
	 */
	uint32_t claimed, reached;
	/*
	 * The peers' fingerprints (the config's fingerprint set; NULL: no
	 * comparison, or no memory): node index and value, heap; under mu
	 * while the link workers run.
	 */
	struct ibp_rt_fp {
		uint32_t node;
		struct ibp_fp fp;
	} * v;
	size_t n;
};

/* F for X; the comparison is on when X's config has a fingerprint (and memory). */
void ibp_rt_fps_init(struct ibp_rt_fps *f, struct ibp_rt_ctx *x);
void ibp_rt_fps_free(struct ibp_rt_fps *f);
/* This node's FINGERPRINT frame, built on first use (NULL: no memory). */
const struct ibp_oob_msg *ibp_rt_fp_frame(struct ibp_rt_fps *f);
/* The frame if it is built (NULL: not, or no memory): what any thread may read. */
const struct ibp_oob_msg *ibp_rt_fp_built(const struct ibp_rt_fps *f);

/* Whether L carries the fingerprints before the endpoints (a small step's rail 0). */
bool ibp_rt_fp_early(const struct ibp_rt_fps *f, const struct ibp_rt_link *l);
/*
 * Whether L is to carry this node's early fingerprint: the first of its
 * peer's rail-0 links to get there does, the others do not while that
 * one's frame is on its way or went.  DONE: it went (SENT), or not, and
 * another link may carry it.
 */
bool ibp_rt_fp_claim(struct ibp_rt_fps *f, const struct ibp_rt_link *l);
void ibp_rt_fp_claim_done(struct ibp_rt_fps *f, const struct ibp_rt_link *l, bool sent);
/* Whether this node's early fingerprint reached L's peer (after the link workers). */
bool ibp_rt_fp_reached(const struct ibp_rt_fps *f, const struct ibp_rt_link *l);

/* Keeps PEER's fingerprint (the first that comes); the caller guards F. */
void ibp_rt_fp_keep(struct ibp_rt_fps *f, uint32_t peer, const struct ibp_fp *fp);
bool ibp_rt_fp_have(const struct ibp_rt_fps *f, uint32_t peer);

/*
 * This node's and the peers' fingerprints compared, the differences to
 * OUT.  BROKEN (NULL: no step-wide sum was to come): why the sum stopped,
 * said in each finding, with consistency_partial (a warning where it
 * stopped, HERE).  0 or -ENOMEM.
 */
int ibp_rt_fp_compare(const struct ibp_rt_fps *f, const char *broken, bool here,
		      struct ibp_findings *out);

#endif
