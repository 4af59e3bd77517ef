/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_fp.c: the fingerprints of a node's test peers and their
 * comparison (rdmatest_fp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmatest_fp.h"
#include "rdmatest_ring.h"

void ibp_rt_fps_init(struct ibp_rt_fps *f, struct ibp_rt_ctx *x)
{
	memset(f, 0, sizeof(*f));
	f->x = x;
	/* not cleared: 36 KB, written only when (and if) the neighbours' fingerprints come */
	if (x->cfg->fingerprint)
		f->v = malloc(IBP_RT_MAX_PEERS * sizeof(*f->v));
}

void ibp_rt_fps_free(struct ibp_rt_fps *f)
{
	free(f->v);
	free(f->mine);
	f->v = NULL;
	f->mine = NULL;
}

/*
 * Built before the link workers start for a small step, else by the
 * summary exchange's thread; freed with the run.
 */
const struct ibp_oob_msg *ibp_rt_fp_frame(struct ibp_rt_fps *f)
{
	if (!f->mine) {
		f->mine = malloc(sizeof(*f->mine));
		if (f->mine) {
			*f->mine = *f->x->cfg->fingerprint;
			ibp_oob_msg_clear(&f->msg, IBP_OOB_FINGERPRINT);
			f->msg.fingerprint = f->mine;
		}
	}
	return ibp_rt_fp_built(f);
}

const struct ibp_oob_msg *ibp_rt_fp_built(const struct ibp_rt_fps *f)
{
	return f->mine ? &f->msg : NULL;
}

/*
 * A step too small for the step-wide sum (up to 5 nodes: a node's test
 * peers are the whole step): the fingerprints go on the rail-0 links
 * before the endpoints, so that they are in when the tests end and the
 * summary exchange waits for none.
 */
bool ibp_rt_fp_early(const struct ibp_rt_fps *f, const struct ibp_rt_link *l)
{
	return f->x->n < IBP_RT_RING_MIN && l->r.rail == 0 && f->v;
}

_Static_assert(IBP_RT_RING_MIN <= 32, "a bit per node of a small step");

/* L's peer's bit in CLAIMED and REACHED; 0 past a small step's nodes. */
static uint32_t fp_bit(const struct ibp_rt_link *l)
{
	return l->peer < 32 ? 1u << l->peer : 0;
}

bool ibp_rt_fp_claim(struct ibp_rt_fps *f, const struct ibp_rt_link *l)
{
	uint32_t bit = fp_bit(l);
	bool mine;

	pthread_mutex_lock(&f->x->mu);
	mine = !(f->claimed & bit);
	f->claimed |= bit;
	pthread_mutex_unlock(&f->x->mu);
	return mine;
}

void ibp_rt_fp_claim_done(struct ibp_rt_fps *f, const struct ibp_rt_link *l, bool sent)
{
	uint32_t bit = fp_bit(l);

	pthread_mutex_lock(&f->x->mu);
	if (sent)
		f->reached |= bit;
	else
		f->claimed &= ~bit;
	pthread_mutex_unlock(&f->x->mu);
}

bool ibp_rt_fp_reached(const struct ibp_rt_fps *f, const struct ibp_rt_link *l)
{
	return f->reached & fp_bit(l);
}

void ibp_rt_fp_keep(struct ibp_rt_fps *f, uint32_t peer, const struct ibp_fp *fp)
{
	if (ibp_rt_fp_have(f, peer))
		return;
	if (f->n < IBP_RT_MAX_PEERS) {
		f->v[f->n].node = peer;
		f->v[f->n].fp = *fp;
		f->n++;
	}
}

bool ibp_rt_fp_have(const struct ibp_rt_fps *f, uint32_t peer)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].node == peer)
			return true;
	return false;
}

/* This node and the peers whose fingerprints came, in node order: the differences to say. */
int ibp_rt_fp_compare(const struct ibp_rt_fps *f, const char *broken, bool here,
		      struct ibp_findings *out)
{
	const struct ibp_fp *fps[IBP_RT_MAX_PEERS + 1];
	const char *names[IBP_RT_MAX_PEERS + 1];
	uint32_t idx[IBP_RT_MAX_PEERS + 1];
	size_t n = 0, first = out->n;
	long self = 0;
	int rc;

	if (!f->v || !f->n)
		return 0;
	idx[n] = f->x->me;
	fps[n++] = f->x->cfg->fingerprint;
	for (size_t i = 0; i < f->n; i++) {
		idx[n] = f->v[i].node;
		fps[n++] = &f->v[i].fp;
	}
	/* node order, so that every node of a window agrees on who says a tie */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && idx[k] < idx[k - 1]; k--) {
			uint32_t t = idx[k];
			const struct ibp_fp *fp = fps[k];

			idx[k] = idx[k - 1];
			fps[k] = fps[k - 1];
			idx[k - 1] = t;
			fps[k - 1] = fp;
		}
	for (size_t i = 0; i < n; i++) {
		names[i] = ibp_rt_node_name(f->x, idx[i]);
		if (idx[i] == f->x->me)
			self = (long)i;
	}
	/*
	 * The whole step (a step too small for the sum, every fingerprint
	 * here): every node sees the same, the first node of a difference
	 * says it.  A window of neighbours: each node says its own part.
	 */
	rc = n == f->x->n ? ibp_fp_compare(fps, names, n, f->x->pol, self, out)
			  : ibp_fp_compare_window(fps, names, n, f->x->pol, self, out);
	if (!broken)
		return rc;
	/* the fallback says what it is: counts of a window, not of the step */
	for (size_t i = first; i < out->n; i++) {
		char obs[IBP_TEXT_MAX];

		ibp_rt_setf(obs, sizeof(obs), "%s", out->v[i].observed);
		ibp_rt_setf(out->v[i].observed, sizeof(out->v[i].observed),
			    "%s (ring neighbours only: %s)", obs, broken);
	}
	/* a warning from the node where the chain stopped (once), information elsewhere */
	if (!rc)
		rc = ibp_findings_addf(out, "consistency_partial", here ? IBP_SEV_WARN : IBP_SEV_OK,
				       IBP_CLASS_JOB, NULL, 0, "the whole step compared",
				       "look at the cross-node test's link findings",
				       "fingerprints compared with %zu ring neighbours only: %s",
				       n - 1, broken);
	return rc;
}
