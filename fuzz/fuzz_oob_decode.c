/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the cross-node test's message decoder, fed anything a
 * stranger on the test port could send.  It must never crash, read out of
 * bounds or accept what the checker refuses; whatever it accepts must
 * re-encode to the very same bytes (one encoding per message).  Every
 * frame is read at its own length: the header's, exactly; a header it
 * refuses is named (ibp_oob_header_why) with the decoder's own verdict.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/oob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a place for every type: the large contents are the caller's */
	static struct ibp_oob_summary summary;
	static struct ibp_fp fp;
	static struct ibp_oob_fpsum sum;
	static uint8_t again[IBP_OOB_FRAME_MAX];
	struct ibp_oob_msg m = {.summary = &summary, .fingerprint = &fp, .fpsum = &sum};
	char why[IBP_OOB_TEXT_MAX];
	unsigned type;
	size_t plen;
	int n = ibp_oob_decode(data, size, &m),
	    hrc = ibp_oob_decode_header(data, size, &type, &plen);

	if (hrc == 0 && n > 0 && (size_t)n != IBP_OOB_HDR_LEN + plen)
		abort();
	/* a refused header is said in words, a good one not: the same verdict */
	if (ibp_oob_header_why(data, size, why, sizeof(why)) != hrc || !hrc != !why[0])
		abort();
	if (n <= 0)
		return 0;
	if (ibp_oob_msg_check(&m) != 0)
		abort();
	if (ibp_oob_encode(&m, again, sizeof(again)) != n || memcmp(again, data, (size_t)n) != 0)
		abort();
	(void)ibp_link_status_name((enum ibp_link_status)m.type);
	return 0;
}
