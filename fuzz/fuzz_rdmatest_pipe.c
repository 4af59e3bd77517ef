/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the plugin's decoder of its test child's result (the
 * child is the job's user; the parent is root in slurmstepd), and the
 * child's decoder of the plan.  Never a crash or an out-of-bounds read;
 * nothing appended on a refused frame; whatever is accepted re-encodes to
 * the very same bytes (one encoding per message).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/rdmatest_pipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ibp_rdmatest_result r;
	static struct ibp_pipe_plan p;
	static uint8_t again[IBP_PIPE_FRAME_MAX];
	struct ibp_findings f;
	int rc, n;

	ibp_findings_init(&f);
	rc = ibp_pipe_result_decode(data, size, &r, &f);
	if (rc && f.n)
		abort();
	if (!rc) {
		n = ibp_pipe_result_encode(&r, &f, again, sizeof(again));
		if (n != (int)size || memcmp(again, data, size) != 0)
			abort();
	}
	ibp_findings_release(&f);
	if (!ibp_pipe_plan_decode(data, size, &p)) {
		n = ibp_pipe_plan_encode(&p, again, sizeof(again));
		if (n != (int)size || memcmp(again, data, size) != 0)
			abort();
	}
	return 0;
}
