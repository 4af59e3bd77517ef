/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the sealed-frame decoder of the cross-node test
 * (seal.h), fed anything a relay on the path could put on a link after its
 * HELLOs.  The first byte picks a mode:
 *
 *   even  the rest is taken as a frame as it came off the wire: whatever
 *         it is, it must be refused unless it authenticates (a fuzzer
 *         cannot forge a tag: an accepted frame is a finding), and a
 *         refusal leaves the receiver's keys and sequence numbers
 *         untouched and says why (what the link's message will name);
 *   odd   the rest is taken as header + payload and sealed correctly under
 *         the link's key before decoding (seal.c's tag: ChaCha20-Poly1305
 *         over header, payload and sequence number), so the payload
 *         decoder behind the tag sees arbitrary authentic input: it must
 *         never crash, and what it accepts must re-seal to the same bytes;
 *         an authentic BATCH (-ENOBUFS, protocol 21) has its frames taken
 *         (ibp_oob_batch_next), each accepted one an ENDPOINT or CTRL
 *         frame encoding to its bytes, taken by a reader of its type and
 *         refused by a reader of the other.
 *
 * The decoder is given a place for every type (the large contents are the
 * caller's: struct ibp_oob_msg points at them).
 */
#include <errno.h>
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

/* The tag of the LEN bytes at P (its last 8 the sequence number) under KEY, as seal.c makes it. */
static void tag(const uint8_t *key, const uint8_t *p, size_t len, uint8_t *out)
{
	uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = {0}, none[1];
	unsigned long long n = 0;

	memcpy(nonce + sizeof(nonce) - IBP_SEAL_SEQ_LEN, p + len - IBP_SEAL_SEQ_LEN,
	       IBP_SEAL_SEQ_LEN);
	if (crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, out, &n, NULL, 0, p, len, NULL,
							       nonce, key) ||
	    n != IBP_SEAL_TAG_LEN)
		abort();
}

/* A refusal may say why (S->refused), and changes nothing else: keys, sequence numbers. */
static int same_state(const struct ibp_seal *a, const struct ibp_seal *b)
{
	return !memcmp(a->tx_key, b->tx_key, sizeof(a->tx_key)) &&
	       !memcmp(a->rx_key, b->rx_key, sizeof(a->rx_key)) && a->tx_seq == b->tx_seq &&
	       a->rx_seq == b->rx_seq && a->ready == b->ready;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ibp_seal tx, rx;
	static int ready;
	static uint8_t frame[IBP_SEAL_FRAME_MAX + 64], again[IBP_SEAL_FRAME_MAX];
	static struct ibp_oob_summary summary;
	static struct ibp_fp fp;
	static struct ibp_oob_fpsum sum;
	struct ibp_oob_msg m = {.summary = &summary, .fingerprint = &fp, .fpsum = &sum};
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
		if (!same_state(&before, &rx) || !rx.refused[0] ||
		    !memchr(rx.refused, '\0', sizeof(rx.refused)))
			abort(); /* a refusal changed the receiver, or did not say why */
		return 0;
	}
	/* Seal whatever the input is, as a sender holding the key would (sequence 0). */
	memset(frame + len, 0, IBP_SEAL_SEQ_LEN);
	tag(tx.tx_key, frame, len + IBP_SEAL_SEQ_LEN, frame + len + IBP_SEAL_SEQ_LEN);
	len += IBP_SEAL_OVERHEAD;
	rc = ibp_seal_decode(&rx, frame, len, &m);
	if (rc == -ENOBUFS && m.type == IBP_OOB_BATCH) {
		size_t off = 0, plen = len - IBP_OOB_HDR_LEN - IBP_SEAL_OVERHEAD;
		const uint8_t *p = frame + IBP_OOB_HDR_LEN;

		if (rx.rx_seq != 1)
			abort();
		for (;;) {
			size_t at = off;

			size_t one = at, other = at;
			unsigned bit;

			rc = ibp_oob_batch_next(p, plen, &off, IBP_OOB_BATCH_TYPES, &m);
			if (rc <= 0)
				break;
			if ((m.type != IBP_OOB_CTRL && m.type != IBP_OOB_ENDPOINT) ||
			    ibp_oob_msg_check(&m) != 0 ||
			    ibp_oob_encode(&m, again, sizeof(again)) != (int)(off - at) ||
			    memcmp(again, p + at, off - at) != 0)
				abort(); /* only ENDPOINT and CTRL frames, one encoding each */
			/* the reader's types: its own taken, the other's refused in place */
			bit = IBP_OOB_TYPE_BIT(m.type);
			if (ibp_oob_batch_next(p, plen, &one, bit, &m) != 1 || one != off ||
			    ibp_oob_batch_next(p, plen, &other, IBP_OOB_BATCH_TYPES & ~bit, &m) !=
				-EBADMSG ||
			    other != at)
				abort();
		}
		if (rc < 0 && off > plen)
			abort();
		return 0;
	}
	if (rc) {
		if (!same_state(&before, &rx) || !rx.refused[0])
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
