/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the step-wide fingerprint sum (fingerprint.h), as a
 * peer on the ring sends it.  The bytes are taken as the sum's compact
 * wire form, exactly as many as there are.  The decoder must never crash
 * or read out of bounds; what it accepts must pass the checker, re-encode
 * to the same bytes (one encoding per sum), take one
 * more node's fingerprint and still pass, and be judged (once complete)
 * without crashing, with every finding's strings terminated, the same way
 * once pruned (ibp_fp_sum_prune: what the root sends back down).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/fingerprint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *names[IBP_FPS_MAX_NODES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[IBP_FPS_WIRE_MAX];
	static struct ibp_fp_sum s, one;
	static struct ibp_fp fp;
	struct ibp_findings f = {0};
	struct ibp_policy pol;
	uint32_t next;

	if (!names[0])
		for (size_t i = 0; i < IBP_FPS_MAX_NODES; i++)
			names[i] = "node";
	if (ibp_fp_sum_decode(data, size, &s) != 0) {
		if (s.n_merged || s.n_keys || s.n_values)
			abort(); /* a refusal leaves nothing behind */
		return 0;
	}
	if (ibp_fp_sum_check(&s) != 0)
		abort();
	if (ibp_fp_sum_encode(&s, again, sizeof(again)) != (int)size || memcmp(data, again, size))
		abort();
	ibp_fp_init(&fp);
	ibp_fp_set(&fp, IBP_FP_HCA_SET, NULL, "1 rail: mlx5_0:1");
	ibp_fp_set(&fp, IBP_FP_FIRMWARE, "mlx5_0:1", "28.39.1002");
	/* the node below puts itself in front, as in the ring's upper half */
	if (s.first > 0) {
		ibp_fp_sum_init(&one, s.nnodes);
		if (ibp_fp_sum_add(&one, s.first - 1, &fp) != 0 ||
		    ibp_fp_sum_merge(&one, &s) != 0 || ibp_fp_sum_check(&one) != 0 ||
		    one.first != s.first - 1 || one.n_merged != s.n_merged + 1)
			abort();
	}
	/* the next node adds itself, as in the lower half */
	next = s.first + s.n_merged;
	if (next < s.nnodes) {
		if (ibp_fp_sum_add(&s, next, &fp) != 0 || ibp_fp_sum_check(&s) != 0)
			abort();
	} else if (ibp_fp_sum_add(&s, next, &fp) != -EINVAL) {
		abort();
	}
	/* judged as if complete: counts only loosen */
	s.first = 0;
	s.n_merged = s.nnodes;
	if (ibp_fp_sum_check(&s) != 0)
		abort();
	ibp_policy_init(&pol);
	if (ibp_fp_sum_judge(&s, names, &pol, -1, &f) == 0) {
		struct ibp_findings g = {0};

		for (size_t i = 0; i < f.n; i++)
			if (!memchr(f.v[i].observed, 0, sizeof(f.v[i].observed)) ||
			    !memchr(f.v[i].node, 0, sizeof(f.v[i].node)))
				abort();
		ibp_fp_sum_copy(&one, &s);
		ibp_fp_sum_prune(&one);
		if (ibp_fp_sum_check(&one) != 0 ||
		    ibp_fp_sum_judge(&one, names, &pol, -1, &g) != 0 || g.n != f.n)
			abort();
		for (size_t i = 0; i < f.n; i++)
			if (strcmp(f.v[i].code, g.v[i].code) || strcmp(f.v[i].node, g.v[i].node) ||
			    strcmp(f.v[i].observed, g.v[i].observed))
				abort();
		ibp_findings_release(&g);
	}
	ibp_findings_release(&f);
	return 0;
}
