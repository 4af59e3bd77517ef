/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the sealed-frame decoder of the cross-node test
 * (seal.h), fed anything a relay on the path could put on a link after its
 * HELLOs.  The first byte picks a mode:
 *
 *   even  the rest is taken as a frame as it came off the wire: whatever
 *         it is, it must be refused unless it authenticates (a fuzzer
 *         cannot forge a tag: an accepted frame is a finding), and a
 *         refusal leaves the receiver's state untouched;
 *   odd   the rest is taken as header + payload and sealed correctly under
 *         the link's key before decoding, so the payload decoder behind
 *         the MAC sees arbitrary authentic input: it must never crash,
 *         and what it accepts must re-seal to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ibprep/seal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void keys(struct ibp_seal *tx, struct ibp_seal *rx)
{
	static const struct ibp_seal_link link = {
	    .job = 1, .step = 2, .uid = 3, .from = 4, .to = 5, .round = 1, .rail = 0};
	uint8_t a[IBP_AUTH_SECRET_LEN], b[IBP_AUTH_SECRET_LEN];

	memset(a, 0xa5, sizeof(a));
	memset(b, 0x5a, sizeof(b));
	if (ibp_seal_derive(tx, a, b, 6, 7, &link, true) ||
	    ibp_seal_derive(rx, a, b, 6, 7, &link, false))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ibp_seal tx, rx;
	static int ready;
	uint8_t frame[IBP_SEAL_FRAME_MAX + 64], again[IBP_SEAL_FRAME_MAX];
	struct ibp_oob_msg m;
	struct ibp_seal before, sender;
	size_t len;
	int rc;

	if (!ready) {
		keys(&tx, &rx);
		ready = 1;
	}
	if (size < 1 || size - 1 > sizeof(frame) - IBP_SEAL_OVERHEAD)
		return 0;
	len = size - 1;
	memcpy(frame, data + 1, len);
	rx.rx_seq = 0;
	before = rx;
	if (!(data[0] & 1)) {
		rc = ibp_seal_decode(&rx, frame, len, &m);
		if (rc == 0)
			abort(); /* a forged frame authenticated */
		if (memcmp(&before, &rx, sizeof(rx)) != 0)
			abort(); /* a refusal changed the receiver */
		return 0;
	}
	/* Seal whatever the input is, as a sender holding the key would. */
	{
		uint8_t seq[IBP_SEAL_SEQ_LEN] = {0}, md[crypto_auth_hmacsha256_BYTES];
		crypto_auth_hmacsha256_state st;

		memcpy(frame + len, seq, sizeof(seq));
		if (crypto_auth_hmacsha256_init(&st, tx.tx_key, IBP_SEAL_KEY_LEN) ||
		    crypto_auth_hmacsha256_update(&st, frame, len + sizeof(seq)) ||
		    crypto_auth_hmacsha256_final(&st, md))
			abort();
		memcpy(frame + len + sizeof(seq), md, IBP_SEAL_TAG_LEN);
		len += IBP_SEAL_OVERHEAD;
	}
	rc = ibp_seal_decode(&rx, frame, len, &m);
	if (rc) {
		if (memcmp(&before, &rx, sizeof(rx)) != 0)
			abort();
		return 0;
	}
	if (rx.rx_seq != 1 || ibp_oob_msg_check(&m) != 0)
		abort();
	sender = tx;
	sender.tx_seq = 0;
	if (ibp_seal_encode(&sender, &m, again, sizeof(again)) != (int)len ||
	    memcmp(again, frame, len) != 0)
		abort(); /* one encoding per message */
	return 0;
}
