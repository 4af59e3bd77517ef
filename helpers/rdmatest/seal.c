/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * seal.c: per-link keys (HKDF-SHA256) and the MAC on every frame after the
 * HELLOs (seal.h).  The keys come from libsodium's HMAC-SHA-256
 * (crypto_auth_hmacsha256), the tags from its ChaCha20-Poly1305 (below,
 * tag_of); HKDF is RFC 5869's two steps over HMAC-SHA-256, checked
 * against the RFC's test vectors, OpenSSL's HKDF, and the keys the earlier
 * OpenSSL-based build derived (tests/unit/test_seal.c), so both ends agree
 * whichever build each runs.  This file only lays out the bytes it is given.
 *
 * Why libsodium rather than OpenSSL's libcrypto: the test child is exec'd
 * for every node and step, and loading libcrypto (its ~3,500 symbol
 * relocations) cost about 1 ms of the child's 3-5 ms; libsodium loads in
 * well under 0.1 ms (docs/rdmatest.md, "test child").
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ibprep/seal.h"
#include "ibprep/text.h"

#define INFO_LABEL "spank-ib rdmatest v2 link"

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void ibp_seal_clear(struct ibp_seal *s)
{
	sodium_memzero(s, sizeof(*s));
}

/* libsodium wants sodium_init() once before use; it is idempotent and thread-safe. */
static int sodium_ready(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

/* HMAC-SHA-256 of the concatenation A || B || C (any may be empty) under KEY. */
static int hmac3(const uint8_t *key, size_t key_len, const uint8_t *a, size_t a_len,
		 const uint8_t *b, size_t b_len, const uint8_t *c, size_t c_len,
		 uint8_t out[crypto_auth_hmacsha256_BYTES])
{
	crypto_auth_hmacsha256_state st;
	int rc = 0;

	if (crypto_auth_hmacsha256_init(&st, key, key_len) ||
	    (a_len && crypto_auth_hmacsha256_update(&st, a, a_len)) ||
	    (b_len && crypto_auth_hmacsha256_update(&st, b, b_len)) ||
	    (c_len && crypto_auth_hmacsha256_update(&st, c, c_len)) ||
	    crypto_auth_hmacsha256_final(&st, out))
		rc = -EIO;
	sodium_memzero(&st, sizeof(st));
	return rc;
}

int ibp_seal_hkdf_sha256(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
			 const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len)
{
	uint8_t prk[crypto_auth_hmacsha256_BYTES], t[crypto_auth_hmacsha256_BYTES];
	size_t done = 0, t_len = 0;
	uint8_t ctr = 0;
	int rc = sodium_ready();

	if (rc)
		return rc;
	if (out_len > 255 * sizeof(t))
		return -EINVAL;
	/* Extract: PRK = HMAC(salt, IKM); an absent salt is HashLen zeros. */
	if (!salt_len) {
		static const uint8_t zeros[crypto_auth_hmacsha256_BYTES];

		salt = zeros;
		salt_len = sizeof(zeros);
	}
	rc = hmac3(salt, salt_len, ikm, ikm_len, NULL, 0, NULL, 0, prk);
	/* Expand: T(i) = HMAC(PRK, T(i-1) || info || i), OKM = T(1) || T(2) ... */
	while (!rc && done < out_len) {
		size_t n;

		ctr++;
		rc = hmac3(prk, sizeof(prk), t, t_len, info, info_len, &ctr, 1, t);
		t_len = sizeof(t);
		n = out_len - done < sizeof(t) ? out_len - done : sizeof(t);
		if (!rc)
			memcpy(out + done, t, n);
		done += n;
	}
	if (rc)
		sodium_memzero(out, out_len);
	sodium_memzero(prk, sizeof(prk));
	sodium_memzero(t, sizeof(t));
	return rc;
}

int ibp_seal_derive(struct ibp_seal *s, const uint8_t conn_secret[IBP_AUTH_SECRET_LEN],
		    const uint8_t lst_secret[IBP_AUTH_SECRET_LEN], uint64_t conn_nonce,
		    uint64_t lst_nonce, const struct ibp_seal_link *link, bool connector)
{
	uint8_t ikm[2 * IBP_AUTH_SECRET_LEN], salt[16], okm[2 * IBP_SEAL_KEY_LEN];
	uint8_t info[sizeof(INFO_LABEL) - 1 + 5 * 4 + 2];
	size_t off = sizeof(INFO_LABEL) - 1;
	int rc;

	ibp_seal_clear(s);
	memcpy(ikm, conn_secret, IBP_AUTH_SECRET_LEN);
	memcpy(ikm + IBP_AUTH_SECRET_LEN, lst_secret, IBP_AUTH_SECRET_LEN);
	be64(salt, conn_nonce);
	be64(salt + 8, lst_nonce);
	memcpy(info, INFO_LABEL, off);
	be32(info + off, link->job);
	be32(info + off + 4, link->step);
	be32(info + off + 8, link->uid);
	be32(info + off + 12, link->from);
	be32(info + off + 16, link->to);
	info[off + 20] = link->round;
	info[off + 21] = link->rail;
	rc = ibp_seal_hkdf_sha256(ikm, sizeof(ikm), salt, sizeof(salt), info, sizeof(info), okm,
				  sizeof(okm));
	if (!rc) {
		/* The first half is the connector-to-listener key. */
		memcpy(connector ? s->tx_key : s->rx_key, okm, IBP_SEAL_KEY_LEN);
		memcpy(connector ? s->rx_key : s->tx_key, okm + IBP_SEAL_KEY_LEN, IBP_SEAL_KEY_LEN);
		s->ready = true;
	}
	sodium_memzero(ikm, sizeof(ikm));
	sodium_memzero(okm, sizeof(okm));
	return rc;
}

size_t ibp_seal_frame_max(unsigned type)
{
	return ibp_oob_sealed(type)
		   ? IBP_OOB_HDR_LEN + ibp_oob_payload_max(type) + IBP_SEAL_OVERHEAD
		   : 0;
}

/*
 * The tag of the LEN bytes at P (header, payload, seq: SEQ is its last 8)
 * under KEY: ChaCha20-Poly1305 (RFC 8439) with P as the associated data,
 * nothing to encrypt, the nonce 4 zero bytes || SEQ.  A key belongs to one
 * direction of one link and SEQ never repeats in it, so no nonce is used
 * twice under one key.  Poly1305 runs at about 2.7 GB/s here against
 * HMAC-SHA-256's 0.17 (libsodium, no SHA extensions): 1.2 us for a
 * 3.2 KB frame instead of 18.7 (docs/rdmatest.md, "Sealed frames").
 */
static int tag_of(const uint8_t key[IBP_SEAL_KEY_LEN], const uint8_t *p, size_t len,
		  uint8_t tag[IBP_SEAL_TAG_LEN])
{
	uint8_t nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = {0};
	uint8_t none[1]; /* the (empty) ciphertext: libsodium wants a pointer */
	unsigned long long n = 0;

	static_assert(IBP_SEAL_TAG_LEN == crypto_aead_chacha20poly1305_ietf_ABYTES, "tag size");
	static_assert(IBP_SEAL_KEY_LEN == crypto_aead_chacha20poly1305_ietf_KEYBYTES, "key size");
	if (len < IBP_SEAL_SEQ_LEN)
		return -EIO;
	memcpy(nonce + sizeof(nonce) - IBP_SEAL_SEQ_LEN, p + len - IBP_SEAL_SEQ_LEN,
	       IBP_SEAL_SEQ_LEN);
	if (crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, tag, &n, NULL, 0, p, len, NULL,
							       nonce, key) ||
	    n != IBP_SEAL_TAG_LEN)
		return -EIO;
	return 0;
}

int ibp_seal_encode(struct ibp_seal *s, const struct ibp_oob_msg *m, uint8_t *buf, size_t len)
{
	int n;

	if (!ibp_seal_frame_max(m->type))
		return -EBADMSG;
	if (!s->ready)
		return -EINVAL;
	if (len < IBP_OOB_HDR_LEN + IBP_SEAL_OVERHEAD)
		return -ENOSPC;
	/* the frame's length follows from what M holds (FINGERPRINT, FPSUM: compact) */
	n = ibp_oob_encode(m, buf, len - IBP_SEAL_OVERHEAD);
	if (n < 0)
		return n;
	be64(buf + n, s->tx_seq);
	if (tag_of(s->tx_key, buf, (size_t)n + IBP_SEAL_SEQ_LEN, buf + n + IBP_SEAL_SEQ_LEN))
		return -EIO;
	s->tx_seq++;
	return n + IBP_SEAL_OVERHEAD;
}

int ibp_seal_encode_batch(struct ibp_seal *s, uint8_t *buf, size_t payload_len, size_t len)
{
	size_t n = IBP_OOB_HDR_LEN + payload_len;

	if (!s->ready)
		return -EINVAL;
	if (ibp_oob_batch_header(buf, payload_len))
		return -EBADMSG;
	if (len < n + IBP_SEAL_OVERHEAD)
		return -ENOSPC;
	be64(buf + n, s->tx_seq);
	if (tag_of(s->tx_key, buf, n + IBP_SEAL_SEQ_LEN, buf + n + IBP_SEAL_SEQ_LEN))
		return -EIO;
	s->tx_seq++;
	return (int)(n + IBP_SEAL_OVERHEAD);
}

int ibp_seal_decode(struct ibp_seal *s, const uint8_t *buf, size_t len, struct ibp_oob_msg *m)
{
	uint8_t tag[IBP_SEAL_TAG_LEN];
	const char *name;
	unsigned type;
	size_t plen, body;
	int rc;

	if (!s->ready)
		return -EINVAL;
	rc = ibp_oob_decode_header(buf, len, &type, &plen);
	if (rc) {
		ibp_oob_header_why(buf, len, s->refused, sizeof(s->refused));
		return rc;
	}
	name = ibp_oob_type_name(type);
	/* PLEN is within the type's bounds (the header's check): one frame, exactly */
	if (!ibp_oob_sealed(type)) {
		ibp_format_cut(s->refused, sizeof(s->refused), "%s frame, never sealed", name);
		return -EBADMSG;
	}
	if (len != IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD) {
		ibp_format_cut(s->refused, sizeof(s->refused),
			       "%s frame of %zu bytes with its seal, its header says %zu", name,
			       len, IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD);
		return -EBADMSG;
	}
	body = IBP_OOB_HDR_LEN + plen;
	/* The tag first: nothing of the payload is looked at before it checks. */
	if (tag_of(s->rx_key, buf, body + IBP_SEAL_SEQ_LEN, tag))
		return -EIO;
	if (sodium_memcmp(tag, buf + body + IBP_SEAL_SEQ_LEN, IBP_SEAL_TAG_LEN) != 0) {
		ibp_format_cut(s->refused, sizeof(s->refused), "%s frame whose tag does not match",
			       name);
		return -EKEYREJECTED;
	}
	if (rd64(buf + body) != s->rx_seq) {
		ibp_format_cut(s->refused, sizeof(s->refused),
			       "%s frame numbered %llu, expected %llu", name,
			       (unsigned long long)rd64(buf + body), (unsigned long long)s->rx_seq);
		return -EKEYREJECTED;
	}
	/* authentic and in sequence: decoded in place, into what M points at */
	rc = ibp_oob_decode(buf, body, m);
	if (rc < 0 && rc != -ENOBUFS) {
		ibp_format_cut(s->refused, sizeof(s->refused),
			       "%s frame of %zu payload bytes, authentic, that does not decode",
			       name, plen);
		return rc;
	}
	s->rx_seq++; /* -ENOBUFS: a frame of its own, authentic, that M takes nothing of */
	s->refused[0] = '\0';
	return rc < 0 ? rc : 0;
}

/* A frame of TYPE goes through the stack when it is small, else the heap. */
static uint8_t *frame_buf(unsigned type, uint8_t *small, size_t small_len, size_t *len)
{
	*len = ibp_seal_frame_max(type);
	return *len <= small_len ? small : malloc(*len);
}

int ibp_seal_send(int fd, struct ibp_seal *s, const struct ibp_oob_msg *m, int64_t deadline)
{
	uint8_t small[IBP_OOB_SMALL_FRAME + IBP_SEAL_OVERHEAD], *buf;
	size_t len;
	int n;

	if (!ibp_seal_frame_max(m->type))
		return -EBADMSG;
	buf = frame_buf(m->type, small, sizeof(small), &len);
	if (!buf)
		return -ENOMEM;
	n = ibp_seal_encode(s, m, buf, len);
	if (n >= 0)
		n = ibp_oob_write_full(fd, buf, (size_t)n, deadline);
	if (buf != small)
		free(buf);
	return n;
}

int ibp_seal_recv(int fd, struct ibp_seal *s, struct ibp_oob_msg *m, int64_t deadline)
{
	uint8_t small[IBP_OOB_SMALL_FRAME + IBP_SEAL_OVERHEAD], hdr[IBP_OOB_HDR_LEN], *buf;
	unsigned type;
	size_t plen, len;
	int rc = ibp_oob_read_full(fd, hdr, IBP_OOB_HDR_LEN, deadline);

	if (rc)
		return rc;
	rc = ibp_oob_decode_header(hdr, IBP_OOB_HDR_LEN, &type, &plen);
	/*
	 * Once the keys exist the peer sends nothing else: a frame that is not
	 * a well-formed sealed one was forged or altered on the way.
	 */
	if (rc == -EBADMSG || rc == -EPROTONOSUPPORT) {
		ibp_oob_header_why(hdr, IBP_OOB_HDR_LEN, s->refused, sizeof(s->refused));
		return -EKEYREJECTED;
	}
	if (!rc && !ibp_oob_sealed(type)) {
		ibp_format_cut(s->refused, sizeof(s->refused), "%s frame, never sealed",
			       ibp_oob_type_name(type));
		return -EKEYREJECTED;
	}
	if (rc)
		return rc;
	/* PLEN is at most the type's maximum: the frame fits BUF */
	buf = frame_buf(type, small, sizeof(small), &len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, hdr, IBP_OOB_HDR_LEN);
	rc = ibp_oob_read_full(fd, buf + IBP_OOB_HDR_LEN, plen + IBP_SEAL_OVERHEAD, deadline);
	if (!rc)
		rc = ibp_seal_decode(s, buf, IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD, m);
	if (buf != small)
		free(buf);
	return rc == -EBADMSG ? -EKEYREJECTED : rc;
}
