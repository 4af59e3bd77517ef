/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * seal.h: the per-link keys and the MAC on every frame of the cross-node
 * test after its HELLOs.
 *
 * The HELLO of each end carries, inside its munge credential (auth.h), a
 * fresh 32-byte random secret that only the test's uid can decode.  Both
 * ends then derive two keys with HKDF-SHA256 (RFC 5869 over libsodium's
 * HMAC-SHA-256):
 *
 *   IKM  = connector's secret || listener's secret
 *   salt = connector's nonce (u64 BE) || listener's nonce (u64 BE)
 *   info = "spank-ib rdmatest v2 link" || job || step || uid || from || to
 *          || round || rail          (u32 BE each; FROM = the connector)
 *   OKM  = 64 bytes: the connector-to-listener key, then the other way
 *
 * so a key belongs to one direction of one link of one round, rail, step
 * and job, and is known only to the two ends (and root on them).
 *
 * Sealed frame on the wire (types ENDPOINT, CTRL, SUMMARY, FINGERPRINT,
 * FPSUM, BATCH; oob.h):
 *
 *   header (12) | payload (its length in the header) | seq u64 BE | tag (16)
 *   tag = the Poly1305 tag of ChaCha20-Poly1305 (RFC 8439, AEAD) under the
 *         key of this direction, nonce 0 (u32) || seq (u64 BE), associated
 *         data header || payload || seq, nothing encrypted (128 bits)
 *
 * SEQ counts the frames of one direction from 0.  The receiver checks the
 * header's type and payload length (within the type's bounds: a stranger
 * cannot make it read more than the type's largest frame), reads exactly one frame, compares the tag in constant time
 * (sodium_memcmp) and the sequence number, and only then decodes the
 * payload: nothing a frame says is used before its tag is checked.  A bad
 * tag, a replayed, dropped or reordered frame (wrong seq) is -EKEYREJECTED:
 * the link fails closed ("frames failed authentication") and blames
 * nobody.  HELLO and ERROR are never sealed (no key exists yet); the test
 * trusts an ERROR for nothing.
 *
 * Insecure mode (ibprep --insecure only): both secrets are zero, so the
 * keys follow from public values: the MAC then only catches accidents and
 * authenticates nothing; the caller says so.
 *
 * No globals; keys live in the caller's struct ibp_seal and are wiped by
 * ibp_seal_clear().  Callable from any thread.
 */
#ifndef IBPREP_SEAL_H
#define IBPREP_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/auth.h"
#include "ibprep/oob.h"

#define IBP_SEAL_KEY_LEN   32
#define IBP_SEAL_TAG_LEN   16
#define IBP_SEAL_SEQ_LEN   8
#define IBP_SEAL_OVERHEAD  (IBP_SEAL_SEQ_LEN + IBP_SEAL_TAG_LEN)
#define IBP_SEAL_FRAME_MAX (IBP_OOB_FRAME_MAX + IBP_SEAL_OVERHEAD)

/* What one link's keys are bound to.  FROM is the connector, TO the listener. */
struct ibp_seal_link {
	uint32_t job, step, uid, from, to;
	uint8_t round, rail;
};

/* One end's view of a sealed connection. */
struct ibp_seal {
	uint8_t tx_key[IBP_SEAL_KEY_LEN], rx_key[IBP_SEAL_KEY_LEN];
	uint64_t tx_seq, rx_seq;
	bool ready;
	/*
	 * What the last frame refused (-EBADMSG, -EKEYREJECTED,
	 * -EPROTONOSUPPORT) by ibp_seal_decode or ibp_seal_recv was, in words
	 * for the link's message: "CTRL frame of 40 payload bytes, CTRL
	 * takes 21" (oob.h, ibp_oob_header_why), "CTRL frame whose tag does
	 * not match" ...; "" after a frame taken.
	 */
	char refused[IBP_OOB_TEXT_MAX];
};

/*
 * Derives both keys (above) for the end CONNECTOR (true: this end connected
 * and sent the first HELLO).  0, or -EIO when libsodium fails (S is then
 * cleared and not ready).
 */
int ibp_seal_derive(struct ibp_seal *s, const uint8_t conn_secret[IBP_AUTH_SECRET_LEN],
		    const uint8_t lst_secret[IBP_AUTH_SECRET_LEN], uint64_t conn_nonce,
		    uint64_t lst_nonce, const struct ibp_seal_link *link, bool connector);

/*
 * HKDF-SHA256 (RFC 5869): OUT_LEN bytes (at most 255 * 32) from IKM, SALT
 * (none: 32 zero bytes) and INFO.  0, -EINVAL, or -EIO (OUT is then zeroed).
 */
int ibp_seal_hkdf_sha256(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
			 const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len);

/* Wipes the keys. */
void ibp_seal_clear(struct ibp_seal *s);

/*
 * The longest sealed frame of TYPE on the wire (the only length, for the
 * fixed-size types), 0 when TYPE is not sealed.
 */
size_t ibp_seal_frame_max(unsigned type);

/*
 * Encodes M as the next frame of S (its sequence number, its tag) into BUF.
 * Frame length, -EBADMSG (M invalid or not a sealed type), -ENOSPC, -EINVAL
 * (S not ready), -EIO (libsodium).  Advances S's send sequence on success.
 */
int ibp_seal_encode(struct ibp_seal *s, const struct ibp_oob_msg *m, uint8_t *buf, size_t len);

/*
 * Seals a BATCH (oob.h) whose PAYLOAD_LEN bytes of ENDPOINT or CTRL frames
 * the caller encoded at BUF + IBP_OOB_HDR_LEN: writes its header before
 * them, its sequence number and tag after (BUF holds LEN bytes).  One tag
 * for every rail's frame of a step.  Frame length, -EBADMSG (a length outside
 * BATCH's bounds), -ENOSPC, -EINVAL (S not ready), -EIO.  The receiver
 * takes it with ibp_seal_decode (-ENOBUFS, type BATCH, once its tag and
 * sequence number checked), then its frames with ibp_oob_batch_next.
 */
int ibp_seal_encode_batch(struct ibp_seal *s, uint8_t *buf, size_t payload_len, size_t len);

/*
 * Checks and decodes one sealed frame of LEN bytes from BUF: the header
 * (-EBADMSG, -EPROTONOSUPPORT), the length (-EBADMSG unless exactly one
 * frame), then the tag and the sequence number (-EKEYREJECTED), and only
 * then the payload (-EBADMSG).  0 with M filled (as ibp_oob_decode: its
 * type and what that type holds) and S's receive sequence advanced; or
 * -ENOBUFS, an authentic frame of a type M has no place for (its TYPE set,
 * nothing decoded), the sequence advanced too.  On any other error S's
 * keys and sequence numbers are unchanged and S->refused says what was
 * refused; M is untouched unless the payload itself did not decode (an
 * authentic frame that is not a message: M is then no message to use).
 */
int ibp_seal_decode(struct ibp_seal *s, const uint8_t *buf, size_t len, struct ibp_oob_msg *m);

/*
 * Framed, sealed I/O under DEADLINE (as ibp_oob_send / ibp_oob_recv): the
 * header is checked before the rest is read, so a lying peer costs one
 * frame of the type's maximum size at most.  A FINGERPRINT or FPSUM frame
 * goes through the heap (-ENOMEM), every other one through the stack.
 * recv: any frame that is not a well-formed, authentic, in-sequence
 * sealed frame is -EKEYREJECTED (after the HELLOs a genuine peer sends
 * nothing else); -ENOBUFS as ibp_seal_decode; -ETIMEDOUT, -ECONNRESET,
 * -errno.
 */
int ibp_seal_send(int fd, struct ibp_seal *s, const struct ibp_oob_msg *m, int64_t deadline);
int ibp_seal_recv(int fd, struct ibp_seal *s, struct ibp_oob_msg *m, int64_t deadline);

#endif
