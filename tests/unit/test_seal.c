/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the per-link keys and the sealed frames (helpers/rdmatest/seal.c):
 * both ends derive matching keys and nothing else does, the tag is
 * ChaCha20-Poly1305's over the frame as seal.h says, and the decoder refuses a
 * truncated or overlong frame, any flipped bit, a replayed, dropped or
 * reordered frame and an unsealed type, before it decodes the payload.
 * OpenSSL's libcrypto is linked here only, as an independent reference:
 * seal.c's HKDF and tags (libsodium) must equal what OpenSSL computes, and
 * the keys of a fixed link must equal the ones the OpenSSL-based build
 * derived.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

#include "ibprep/seal.h"

static const struct ibp_seal_link link1 = {
    .job = 4242, .step = 3, .uid = 1000, .from = 7, .to = 8, .round = 1, .rail = 0};

static void secrets(uint8_t a[IBP_AUTH_SECRET_LEN], uint8_t b[IBP_AUTH_SECRET_LEN])
{
	for (size_t i = 0; i < IBP_AUTH_SECRET_LEN; i++) {
		a[i] = (uint8_t)(i * 7 + 1);
		b[i] = (uint8_t)(i * 11 + 5);
	}
}

/* A connector and a listener with keys for LINK. */
static void pair(struct ibp_seal *c, struct ibp_seal *l, const struct ibp_seal_link *link)
{
	uint8_t a[IBP_AUTH_SECRET_LEN], b[IBP_AUTH_SECRET_LEN];

	secrets(a, b);
	assert_int_equal(ibp_seal_derive(c, a, b, 0x1111, 0x2222, link, true), 0);
	assert_int_equal(ibp_seal_derive(l, a, b, 0x1111, 0x2222, link, false), 0);
}

static struct ibp_oob_msg ctrl(uint8_t op, uint64_t a)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_CTRL};

	m.u.ctrl.op = op;
	m.u.ctrl.a = a;
	m.u.ctrl.b = 99;
	return m;
}

static void test_seal_derive_ends_agree_directions_differ(void **state)
{
	struct ibp_seal c, l;

	(void)state;
	pair(&c, &l, &link1);
	assert_true(c.ready && l.ready);
	assert_memory_equal(c.tx_key, l.rx_key, IBP_SEAL_KEY_LEN);
	assert_memory_equal(c.rx_key, l.tx_key, IBP_SEAL_KEY_LEN);
	assert_memory_not_equal(c.tx_key, c.rx_key, IBP_SEAL_KEY_LEN);
	ibp_seal_clear(&c);
	assert_false(c.ready);
}

/* Every input of the derivation changes the keys. */
static void test_seal_derive_every_input_binds(void **state)
{
	uint8_t a[IBP_AUTH_SECRET_LEN], b[IBP_AUTH_SECRET_LEN];
	struct ibp_seal base, x;
	struct ibp_seal_link k;

	(void)state;
	secrets(a, b);
	assert_int_equal(ibp_seal_derive(&base, a, b, 1, 2, &link1, true), 0);
	for (int field = 0; field < 11; field++) {
		uint64_t n1 = 1, n2 = 2;

		k = link1;
		secrets(a, b);
		switch (field) {
		case 0:
			k.job++;
			break;
		case 1:
			k.step++;
			break;
		case 2:
			k.uid++;
			break;
		case 3:
			k.from++;
			break;
		case 4:
			k.to++;
			break;
		case 5:
			k.round = 2;
			break;
		case 6:
			k.rail = 1;
			break;
		case 7:
			a[31] ^= 1;
			break;
		case 8:
			b[0] ^= 0x80;
			break;
		case 9:
			n1 = 3;
			break;
		default:
			n2 = 3;
			break;
		}
		assert_int_equal(ibp_seal_derive(&x, a, b, n1, n2, &k, true), 0);
		assert_memory_not_equal(x.tx_key, base.tx_key, IBP_SEAL_KEY_LEN);
		assert_memory_not_equal(x.rx_key, base.rx_key, IBP_SEAL_KEY_LEN);
	}
	/* the two secrets are not interchangeable */
	secrets(a, b);
	assert_int_equal(ibp_seal_derive(&x, b, a, 1, 2, &link1, true), 0);
	assert_memory_not_equal(x.tx_key, base.tx_key, IBP_SEAL_KEY_LEN);
}

/* The tag of LEN bytes at P (ending in the seq) by OpenSSL's ChaCha20-Poly1305. */
static void openssl_tag(const uint8_t key[IBP_SEAL_KEY_LEN], const uint8_t *p, size_t len,
			uint8_t tag[IBP_SEAL_TAG_LEN])
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	uint8_t nonce[12] = {0};
	int out = 0;

	assert_non_null(x);
	memcpy(nonce + 4, p + len - 8, 8);
	assert_int_equal(EVP_EncryptInit_ex(x, EVP_chacha20_poly1305(), NULL, key, nonce), 1);
	assert_int_equal(EVP_EncryptUpdate(x, NULL, &out, p, (int)len), 1); /* associated data */
	assert_int_equal(EVP_EncryptFinal_ex(x, tag, &out), 1);
	assert_int_equal(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, IBP_SEAL_TAG_LEN, tag), 1);
	EVP_CIPHER_CTX_free(x);
}

static void test_seal_roundtrip_and_tag_is_chacha20_poly1305(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m = ctrl(IBP_CTRL_READY, 12345), out = {0};
	uint8_t buf[IBP_SEAL_FRAME_MAX], md[IBP_SEAL_TAG_LEN];
	int n;

	(void)state;
	pair(&c, &l, &link1);
	n = ibp_seal_encode(&c, &m, buf, sizeof(buf));
	assert_int_equal(n, (int)ibp_seal_frame_max(IBP_OOB_CTRL));
	assert_int_equal(n, IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN + IBP_SEAL_OVERHEAD);
	/*
	 * seal.h's layout: header | payload | seq | the ChaCha20-Poly1305 tag
	 * of all that as associated data, nonce 0 || seq; OpenSSL's AEAD as the
	 * reference
	 */
	for (int i = 0; i < 8; i++)
		assert_int_equal(buf[n - IBP_SEAL_OVERHEAD + i], 0); /* seq 0 */
	openssl_tag(c.tx_key, buf, (size_t)n - IBP_SEAL_TAG_LEN, md);
	assert_memory_equal(md, buf + n - IBP_SEAL_TAG_LEN, IBP_SEAL_TAG_LEN);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), 0);
	assert_int_equal(out.u.ctrl.a, 12345);
	assert_int_equal(l.rx_seq, 1);
	assert_int_equal(c.tx_seq, 1);
	/* the other direction */
	n = ibp_seal_encode(&l, &m, buf, sizeof(buf));
	assert_int_equal(ibp_seal_decode(&c, buf, (size_t)n, &out), 0);
}

/* Any flipped bit, anywhere: refused before decoding, state unchanged. */
static void test_seal_every_bit_flip_refused(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m = ctrl(IBP_CTRL_VERDICT, IBP_LINK_PASS), out = {0};
	uint8_t buf[IBP_SEAL_FRAME_MAX], bad[IBP_SEAL_FRAME_MAX];
	int n;

	(void)state;
	pair(&c, &l, &link1);
	n = ibp_seal_encode(&c, &m, buf, sizeof(buf));
	for (int i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			int rc;

			memcpy(bad, buf, (size_t)n);
			bad[i] ^= (uint8_t)(1u << bit);
			memset(&out, 0x5a, sizeof(out));
			rc = ibp_seal_decode(&l, bad, (size_t)n, &out);
			/* a header flip may be caught as a bad header first; never accepted */
			assert_true(rc == -EKEYREJECTED || rc == -EBADMSG ||
				    rc == -EPROTONOSUPPORT);
			if (i >= IBP_OOB_HDR_LEN)
				assert_int_equal(rc, -EKEYREJECTED);
			assert_int_equal(((uint8_t *)&out)[0], 0x5a);
		}
	}
	assert_int_equal(l.rx_seq, 0);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), 0);
}

static void test_seal_truncated_overlong_wrong_type_refused(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m = ctrl(IBP_CTRL_READY, 1), out = {0}, hello = {.type = IBP_OOB_HELLO};
	uint8_t buf[IBP_SEAL_FRAME_MAX + 8];
	int n;

	(void)state;
	pair(&c, &l, &link1);
	n = ibp_seal_encode(&c, &m, buf, sizeof(buf));
	for (int len = 0; len < n; len++)
		assert_int_equal(ibp_seal_decode(&l, buf, (size_t)len, &out), -EBADMSG);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n + 1, &out), -EBADMSG);
	assert_int_equal(l.rx_seq, 0);
	/* HELLO and ERROR are never sealed; a sealed type never goes unsealed */
	assert_int_equal(ibp_seal_encode(&c, &hello, buf, sizeof(buf)), -EBADMSG);
	assert_int_equal(ibp_seal_encode(&c, &m, buf, 10), -ENOSPC);
	/* no keys, no frames */
	ibp_seal_clear(&c);
	assert_int_equal(ibp_seal_encode(&c, &m, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(ibp_seal_decode(&c, buf, (size_t)n, &out), -EINVAL);
}

#define CTRL_ONLY IBP_OOB_TYPE_BIT(IBP_OOB_CTRL)

/*
 * A BATCH (protocol 21): one tag over every rail's CTRL frame of a step,
 * checked before any of them is read; one sequence number; a flipped bit
 * anywhere, a replay, or a frame in it that is not a CTRL one refused.
 */
static void test_seal_batch_one_tag_every_frame_checked(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m = {0}, out = {0};
	uint8_t buf[IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX + IBP_SEAL_OVERHEAD], bad[sizeof(buf)];
	uint8_t md[IBP_SEAL_TAG_LEN];
	size_t len = 0, off = 0, plen;
	unsigned type;
	int n;

	(void)state;
	pair(&c, &l, &link1);
	for (uint64_t k = 0; k < 8; k++) {
		m = ctrl(IBP_CTRL_READY, k);
		n = ibp_oob_encode(&m, buf + IBP_OOB_HDR_LEN + len, IBP_OOB_BATCH_MAX - len);
		assert_true(n > 0);
		len += (size_t)n;
	}
	n = ibp_seal_encode_batch(&c, buf, len, sizeof(buf));
	assert_int_equal(n, (int)(IBP_OOB_HDR_LEN + len + IBP_SEAL_OVERHEAD));
	assert_int_equal(c.tx_seq, 1);
	openssl_tag(c.tx_key, buf, (size_t)n - IBP_SEAL_TAG_LEN, md);
	assert_memory_equal(md, buf + n - IBP_SEAL_TAG_LEN, IBP_SEAL_TAG_LEN);
	assert_int_equal(ibp_oob_decode_header(buf, IBP_OOB_HDR_LEN, &type, &plen), 0);
	assert_int_equal(type, IBP_OOB_BATCH);
	/* every bit: refused before a frame of it is looked at */
	for (int i = IBP_OOB_HDR_LEN; i < n; i += 7) {
		memcpy(bad, buf, (size_t)n);
		bad[i] ^= 0x10;
		assert_int_equal(ibp_seal_decode(&l, bad, (size_t)n, &out), -EKEYREJECTED);
	}
	assert_int_equal(l.rx_seq, 0);
	/* authentic: -ENOBUFS with its type, one sequence number, then its frames */
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), -ENOBUFS);
	assert_int_equal(out.type, IBP_OOB_BATCH);
	assert_int_equal(l.rx_seq, 1);
	for (uint64_t k = 0; k < 8; k++) {
		assert_int_equal(
		    ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, plen, &off, CTRL_ONLY, &out), 1);
		assert_int_equal(out.u.ctrl.op, IBP_CTRL_READY);
		assert_int_equal(out.u.ctrl.a, k);
	}
	assert_int_equal(ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, plen, &off, CTRL_ONLY, &out), 0);
	/* replayed */
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), -EKEYREJECTED);
	/* no keys, a length out of bounds, no room */
	assert_int_equal(ibp_seal_encode_batch(&c, buf, IBP_OOB_BATCH_MIN - 1, sizeof(buf)),
			 -EBADMSG);
	assert_int_equal(ibp_seal_encode_batch(&c, buf, len, IBP_OOB_HDR_LEN + len), -ENOSPC);
	assert_int_equal(c.tx_seq, 1);
	ibp_seal_clear(&c);
	assert_int_equal(ibp_seal_encode_batch(&c, buf, len, sizeof(buf)), -EINVAL);
}

/*
 * Every rail's ENDPOINT in one BATCH (protocol 22): one tag and one
 * sequence number for the link's endpoints, checked before any of them is
 * read (a flipped bit anywhere, a replay refused); behind it each ENDPOINT
 * as it was sent, for a reader of ENDPOINTs; an authentic batch with a
 * frame of a type the reader does not take (a CTRL frame where only
 * ENDPOINTs belong, a SUMMARY anywhere) refused at that frame.
 */
static void test_seal_batch_endpoints_one_tag_foreign_type_refused(void **state)
{
	const unsigned eps = IBP_OOB_TYPE_BIT(IBP_OOB_ENDPOINT);
	struct ibp_seal c, l;
	struct ibp_oob_summary sum = {.node = 7, .nnodes = 8};
	struct ibp_oob_msg m = {.type = IBP_OOB_ENDPOINT}, out = {.summary = &sum};
	uint8_t buf[IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX + IBP_SEAL_OVERHEAD], bad[sizeof(buf)];
	size_t len = 0, off = 0, plen;
	int n;

	(void)state;
	pair(&c, &l, &link1);
	for (uint16_t k = 0; k < 8; k++) {
		m.u.endpoint.rail = k;
		m.u.endpoint.port = 1;
		m.u.endpoint.ep.kind = IBP_TX_SOCKET;
		m.u.endpoint.ep.psn = 40000u + k;
		snprintf(m.u.endpoint.device, sizeof(m.u.endpoint.device), "mlx5_%u", k);
		n = ibp_oob_encode(&m, buf + IBP_OOB_HDR_LEN + len, IBP_OOB_BATCH_MAX - len);
		assert_true(n > 0);
		len += (size_t)n;
	}
	n = ibp_seal_encode_batch(&c, buf, len, sizeof(buf));
	assert_int_equal(n, (int)(IBP_OOB_HDR_LEN + len + IBP_SEAL_OVERHEAD));
	assert_int_equal(c.tx_seq, 1); /* one sequence number for eight endpoints */
	for (int i = 0; i < n; i += 5) {
		memcpy(bad, buf, (size_t)n);
		bad[i] ^= 0x01;
		assert_int_not_equal(ibp_seal_decode(&l, bad, (size_t)n, &out), -ENOBUFS);
		assert_int_not_equal(ibp_seal_decode(&l, bad, (size_t)n, &out), 0);
	}
	assert_int_equal(l.rx_seq, 0);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), -ENOBUFS);
	assert_int_equal(out.type, IBP_OOB_BATCH);
	assert_int_equal(l.rx_seq, 1);
	plen = len;
	for (uint16_t k = 0; k < 8; k++) {
		char dev[16];

		assert_int_equal(ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, plen, &off, eps, &out),
				 1);
		assert_int_equal(out.type, IBP_OOB_ENDPOINT);
		assert_int_equal(out.u.endpoint.rail, k);
		assert_int_equal(out.u.endpoint.ep.psn, 40000u + k);
		snprintf(dev, sizeof(dev), "mlx5_%u", k);
		assert_string_equal(out.u.endpoint.device, dev);
	}
	assert_int_equal(ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, plen, &off, eps, &out), 0);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), -EKEYREJECTED); /* replayed */
	assert_int_equal(l.rx_seq, 1);
	/* authentic, a CTRL frame then a SUMMARY behind the first ENDPOINT */
	len = (size_t)ibp_oob_encode(&m, buf + IBP_OOB_HDR_LEN, IBP_OOB_BATCH_MAX);
	m = ctrl(IBP_CTRL_READY, 1);
	n = ibp_oob_encode(&m, buf + IBP_OOB_HDR_LEN + len, IBP_OOB_BATCH_MAX - len);
	assert_true(n > 0);
	len += (size_t)n;
	m = (struct ibp_oob_msg){.type = IBP_OOB_SUMMARY, .summary = &sum};
	n = ibp_oob_encode(&m, buf + IBP_OOB_HDR_LEN + len, IBP_OOB_BATCH_MAX - len);
	assert_true(n > 0);
	len += (size_t)n;
	n = ibp_seal_encode_batch(&c, buf, len, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), -ENOBUFS);
	off = 0;
	assert_int_equal(ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, len, &off, eps, &out), 1);
	plen = off;
	assert_int_equal(ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, len, &off, eps, &out), -EBADMSG);
	assert_int_equal(off, plen); /* refused where it is */
	assert_int_equal(
	    ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, len, &off, IBP_OOB_BATCH_TYPES, &out), 1);
	assert_int_equal(out.type, IBP_OOB_CTRL);
	assert_int_equal(ibp_oob_batch_next(buf + IBP_OOB_HDR_LEN, len, &off,
					    IBP_OOB_BATCH_TYPES | IBP_OOB_TYPE_BIT(IBP_OOB_SUMMARY),
					    &out),
			 -EBADMSG);
}

/* Replayed, dropped and reordered frames fail on their sequence number. */
static void test_seal_replay_drop_reorder_refused(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m, out = {0};
	uint8_t f0[IBP_SEAL_FRAME_MAX], f1[IBP_SEAL_FRAME_MAX], f2[IBP_SEAL_FRAME_MAX];
	int n0, n1, n2;

	(void)state;
	pair(&c, &l, &link1);
	m = ctrl(IBP_CTRL_READY, 0);
	n0 = ibp_seal_encode(&c, &m, f0, sizeof(f0));
	m = ctrl(IBP_CTRL_PATTERN_SENT, 1);
	n1 = ibp_seal_encode(&c, &m, f1, sizeof(f1));
	m = ctrl(IBP_CTRL_PATTERN_RESULT, 2);
	n2 = ibp_seal_encode(&c, &m, f2, sizeof(f2));
	/* reordered: frame 1 first */
	assert_int_equal(ibp_seal_decode(&l, f1, (size_t)n1, &out), -EKEYREJECTED);
	assert_string_equal(l.refused, "CTRL frame numbered 1, expected 0");
	assert_int_equal(ibp_seal_decode(&l, f0, (size_t)n0, &out), 0);
	assert_string_equal(l.refused, "");
	/* replayed */
	assert_int_equal(ibp_seal_decode(&l, f0, (size_t)n0, &out), -EKEYREJECTED);
	/* dropped: frame 2 where 1 is due */
	assert_int_equal(ibp_seal_decode(&l, f2, (size_t)n2, &out), -EKEYREJECTED);
	assert_int_equal(ibp_seal_decode(&l, f1, (size_t)n1, &out), 0);
	assert_int_equal(ibp_seal_decode(&l, f2, (size_t)n2, &out), 0);
	assert_int_equal(out.u.ctrl.a, 2);
	/* reflected: our own frame sent back to us */
	m = ctrl(IBP_CTRL_READY, 0);
	n0 = ibp_seal_encode(&l, &m, f0, sizeof(f0));
	assert_int_equal(ibp_seal_decode(&l, f0, (size_t)n0, &out), -EKEYREJECTED);
	/* from another link (another rail): refused */
	{
		struct ibp_seal_link other = link1;
		struct ibp_seal c2, l2;

		other.rail = 1;
		pair(&c2, &l2, &other);
		m = ctrl(IBP_CTRL_READY, 0);
		n0 = ibp_seal_encode(&c2, &m, f0, sizeof(f0));
		pair(&c, &l, &link1);
		assert_int_equal(ibp_seal_decode(&l, f0, (size_t)n0, &out), -EKEYREJECTED);
		assert_string_equal(l.refused, "CTRL frame whose tag does not match");
	}
}

/* A valid tag over a payload the codec refuses: the payload check still runs. */
static void test_seal_authentic_but_malformed_payload_refused(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m = ctrl(IBP_CTRL_READY, 0), out = {0};
	uint8_t buf[IBP_SEAL_FRAME_MAX];
	int n;

	(void)state;
	pair(&c, &l, &link1);
	n = ibp_seal_encode(&c, &m, buf, sizeof(buf));
	buf[IBP_OOB_HDR_LEN] = 200; /* op out of range */
	openssl_tag(c.tx_key, buf, (size_t)n - IBP_SEAL_TAG_LEN, buf + n - IBP_SEAL_TAG_LEN);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), -EBADMSG);
	assert_int_equal(l.rx_seq, 0);
	assert_string_equal(l.refused,
			    "CTRL frame of 21 payload bytes, authentic, that does not decode");
}

/*
 * A frame whose length is wrong for its type, through framed I/O: a CTRL
 * that says 22 payload bytes (CTRL has 21), a FINGERPRINT longer than the
 * longest.  Refused at the header (nothing more read), as a frame that is
 * no sealed frame of this test (-EKEYREJECTED), and named: the link's
 * message says which type, how long, and what the type takes.
 */
static void test_seal_recv_wrong_length_for_type_refused_naming_it(void **state)
{
	static const struct {
		uint8_t type;
		size_t plen;
		const char *why;
	} cases[] = {
	    {IBP_OOB_CTRL, IBP_OOB_CTRL_LEN + 1, "CTRL frame of 22 payload bytes, CTRL takes 21"},
	    {IBP_OOB_CTRL, 0, "CTRL frame of 0 payload bytes, CTRL takes 21"},
	    {IBP_OOB_FINGERPRINT, IBP_FP_WIRE_MAX + 1, NULL},
	    {IBP_OOB_ENDPOINT, IBP_OOB_ENDPOINT_MIN - 1, NULL},
	};
	struct ibp_seal c, l;
	struct ibp_oob_msg out = {0};
	uint8_t hdr[IBP_OOB_HDR_LEN];
	char want[IBP_OOB_TEXT_MAX];
	int sv[2];

	(void)state;
	pair(&c, &l, &link1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *name = ibp_oob_type_name(cases[i].type);

		memcpy(hdr, "IBPT", 4);
		hdr[4] = (uint8_t)(IBP_OOB_VERSION >> 8);
		hdr[5] = (uint8_t)IBP_OOB_VERSION;
		hdr[6] = 0;
		hdr[7] = cases[i].type;
		for (int b = 0; b < 4; b++)
			hdr[8 + b] = (uint8_t)(cases[i].plen >> (24 - 8 * b));
		if (cases[i].why)
			snprintf(want, sizeof(want), "%s", cases[i].why);
		else
			snprintf(want, sizeof(want),
				 "%s frame of %zu payload bytes, %s takes %zu to %zu", name,
				 cases[i].plen, name, ibp_oob_payload_min(cases[i].type),
				 ibp_oob_payload_max(cases[i].type));
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		/* the header alone: a reader that waited for the payload would time out */
		assert_int_equal(write(sv[0], hdr, sizeof(hdr)), sizeof(hdr));
		assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + 2 * IBP_NS_PER_S),
				 -EKEYREJECTED);
		assert_string_equal(l.refused, want);
		assert_int_equal(l.rx_seq, 0);
		close(sv[0]);
		close(sv[1]);
	}
}

/* Retags the LEN-byte frame at BUF under C's sending key, as a peer holding the key could. */
static void retag(const struct ibp_seal *c, uint8_t *buf, size_t len)
{
	openssl_tag(c->tx_key, buf, len - IBP_SEAL_TAG_LEN, buf + len - IBP_SEAL_TAG_LEN);
}

/*
 * MEASURE_AGAIN (protocol 17's CTRL op) at CTRL's own 21 bytes: a sealed one
 * goes through framed I/O whole; the same frame a byte shorter or longer,
 * retagged by a holder of the key, is refused at its header (nothing more
 * read), named like any CTRL, the sequence untouched.
 */
static void test_seal_measure_again_sized_and_wrong_length_refused(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m = ctrl(IBP_CTRL_MEASURE_AGAIN, 1), out = {0};
	uint8_t buf[IBP_SEAL_FRAME_MAX], bad[IBP_SEAL_FRAME_MAX];
	char want[IBP_OOB_TEXT_MAX];
	int sv[2], n;

	(void)state;
	pair(&c, &l, &link1);
	m.u.ctrl.b = 2; /* the second measurement */
	n = ibp_seal_encode(&c, &m, buf, sizeof(buf));
	assert_int_equal(n, IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN + IBP_SEAL_OVERHEAD);
	for (size_t plen = IBP_OOB_CTRL_LEN - 1; plen <= IBP_OOB_CTRL_LEN + 1; plen += 2) {
		size_t len = IBP_OOB_HDR_LEN + plen + IBP_SEAL_OVERHEAD;

		memset(bad, 0, sizeof(bad));
		/* the payload cut, or a zero byte after it */
		memcpy(bad, buf,
		       IBP_OOB_HDR_LEN + (plen < IBP_OOB_CTRL_LEN ? plen : IBP_OOB_CTRL_LEN));
		bad[11] = (uint8_t)plen;
		memcpy(bad + IBP_OOB_HDR_LEN + plen, buf + IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN,
		       IBP_SEAL_SEQ_LEN);
		retag(&c, bad, len);
		snprintf(want, sizeof(want), "CTRL frame of %zu payload bytes, CTRL takes %d", plen,
			 IBP_OOB_CTRL_LEN);
		assert_int_equal(ibp_seal_decode(&l, bad, len, &out), -EBADMSG);
		assert_string_equal(l.refused, want);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		assert_int_equal(write(sv[0], bad, len), (ssize_t)len);
		assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + 2 * IBP_NS_PER_S),
				 -EKEYREJECTED);
		assert_string_equal(l.refused, want);
		assert_int_equal(l.rx_seq, 0);
		close(sv[0]);
		close(sv[1]);
	}
	/* the frame as sent: whole, decoded */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[0], buf, (size_t)n), n);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + 2 * IBP_NS_PER_S), 0);
	assert_int_equal(out.type, IBP_OOB_CTRL);
	assert_int_equal(out.u.ctrl.op, IBP_CTRL_MEASURE_AGAIN);
	assert_int_equal(out.u.ctrl.a, 1);
	assert_int_equal(out.u.ctrl.b, 2);
	assert_int_equal(l.rx_seq, 1);
	close(sv[0]);
	close(sv[1]);
}

/*
 * A variable-length frame (FINGERPRINT): its length comes from its header,
 * bounded by the type's maximum; the tag covers header, payload and seq,
 * and only an authentic frame's payload is parsed, exactly.
 */
static void test_seal_variable_length_frame_roundtrip_and_refusals(void **state)
{
	struct ibp_seal c, l;
	static struct ibp_fp fp, fp_out; /* the caller's: 9 KB each */
	struct ibp_oob_msg m = {.type = IBP_OOB_FINGERPRINT, .fingerprint = &fp},
			   out = {.fingerprint = &fp_out};
	uint8_t buf[IBP_SEAL_FRAME_MAX + 1], bad[IBP_SEAL_FRAME_MAX + 1], md[IBP_SEAL_TAG_LEN];
	size_t plen;
	int n, sv[2];

	(void)state;
	ibp_fp_set(&fp, IBP_FP_HCA_SET, NULL, "1 rail: mlx5_0:1");
	ibp_fp_set(&fp, IBP_FP_FIRMWARE, "mlx5_0:1", "28.39.1002");
	pair(&c, &l, &link1);
	n = ibp_seal_encode(&c, &m, buf, sizeof(buf));
	plen = (size_t)n - IBP_OOB_HDR_LEN - IBP_SEAL_OVERHEAD;
	assert_int_equal(plen, 1 + (1 + 1 + 0 + 8 + 1 + 16) + (1 + 1 + 8 + 8 + 1 + 10));
	assert_int_equal(buf[11], plen);
	assert_true((size_t)n < ibp_seal_frame_max(IBP_OOB_FINGERPRINT));
	openssl_tag(c.tx_key, buf, (size_t)n - IBP_SEAL_TAG_LEN, md);
	assert_memory_equal(md, buf + n - IBP_SEAL_TAG_LEN, IBP_SEAL_TAG_LEN);
	/* too small a buffer for this frame */
	assert_int_equal(ibp_seal_encode(&c, &m, bad, (size_t)n - 1), -ENOSPC);
	/* cut anywhere, or one byte more than the header says */
	for (int len = 0; len < n; len++)
		assert_int_equal(ibp_seal_decode(&l, buf, (size_t)len, &out), -EBADMSG);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n + 1, &out), -EBADMSG);
	/* a header that claims one byte more, with the frame to match: the tag fails */
	memcpy(bad, buf, IBP_OOB_HDR_LEN + plen);
	bad[11]++;
	bad[IBP_OOB_HDR_LEN + plen] = 0;
	memcpy(bad + IBP_OOB_HDR_LEN + plen + 1, buf + IBP_OOB_HDR_LEN + plen, IBP_SEAL_OVERHEAD);
	assert_int_equal(ibp_seal_decode(&l, bad, (size_t)n + 1, &out), -EKEYREJECTED);
	/* ... and authentic (retagged by the key's holder): the byte left over is refused */
	retag(&c, bad, (size_t)n + 1);
	assert_int_equal(ibp_seal_decode(&l, bad, (size_t)n + 1, &out), -EBADMSG);
	/* a length above the type's maximum */
	memcpy(bad, buf, (size_t)n);
	bad[8] = 0x7f;
	assert_int_equal(ibp_seal_decode(&l, bad, (size_t)n, &out), -EBADMSG);
	assert_int_equal(l.rx_seq, 0);
	assert_int_equal(ibp_seal_decode(&l, buf, (size_t)n, &out), 0);
	assert_int_equal(out.fingerprint->n, 2);
	assert_memory_equal(out.fingerprint->e, fp.e, 2 * sizeof(fp.e[0]));
	/* over a socket, then a header past the maximum: refused before anything more is read */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(ibp_seal_send(sv[0], &c, &m, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(out.fingerprint->n, 2);
	/* a reader with no place for one: read, authenticated, left (the sequence goes on) */
	out.fingerprint = NULL;
	assert_int_equal(ibp_seal_send(sv[0], &c, &m, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + IBP_NS_PER_S), -ENOBUFS);
	assert_int_equal(out.type, IBP_OOB_FINGERPRINT);
	assert_int_equal(l.rx_seq, c.tx_seq);
	assert_int_equal(write(sv[0], bad, IBP_OOB_HDR_LEN), IBP_OOB_HDR_LEN);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + 60 * IBP_NS_PER_S),
			 -EKEYREJECTED);
	close(sv[0]);
	close(sv[1]);
}

/* Over a socket: an unsealed frame (a relay's ERROR) where a sealed one is due. */
static void test_seal_recv_unsealed_frame_is_auth_failure(void **state)
{
	struct ibp_seal c, l;
	struct ibp_oob_msg m = ctrl(IBP_CTRL_READY, 5), out = {0}, err = {.type = IBP_OOB_ERROR};
	int sv[2];

	(void)state;
	pair(&c, &l, &link1);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(ibp_seal_send(sv[0], &c, &m, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(out.u.ctrl.a, 5);
	err.u.error.code = -EACCES;
	strcpy(err.u.error.text, "node failed");
	assert_int_equal(ibp_oob_send(sv[0], &err, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + IBP_NS_PER_S),
			 -EKEYREJECTED);
	assert_string_equal(l.refused, "ERROR frame, never sealed");
	close(sv[0]);
	close(sv[1]);
	/* garbage, then the peer gone */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[0], "GET / HTTP/1.0\r\n", 16), 16);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + IBP_NS_PER_S),
			 -EKEYREJECTED);
	close(sv[0]);
	assert_int_equal(ibp_seal_recv(sv[1], &l, &out, ibp_now_ns() + IBP_NS_PER_S), -ECONNRESET);
	close(sv[1]);
}

static void unhex(const char *hex, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	assert_int_equal(strlen(hex), 2 * len);
}

/* RFC 5869, appendix A.1-A.3 (SHA-256): basic, long inputs, no salt and no info. */
static void test_seal_hkdf_rfc5869_vectors(void **state)
{
	static const struct {
		uint8_t ikm_from, ikm_len, salt_from, salt_len, info_from, info_len, okm_len;
		bool ikm_0b;
		const char *okm;
	} v[] = {
	    {0, 22, 0x00, 13, 0xf0, 10, 42, true,
	     "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b88718586"
	     "5"},
	    {0x00, 80, 0x60, 80, 0xb0, 80, 82, false,
	     "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb4"
	     "1"
	     "c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"},
	    {0, 22, 0, 0, 0, 0, 42, true,
	     "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c"
	     "8"},
	};

	(void)state;
	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		uint8_t ikm[80], salt[80], info[80], okm[82], want[82];

		for (int i = 0; i < 80; i++) {
			ikm[i] = v[k].ikm_0b ? 0x0b : (uint8_t)(v[k].ikm_from + i);
			salt[i] = (uint8_t)(v[k].salt_from + i);
			info[i] = (uint8_t)(v[k].info_from + i);
		}
		unhex(v[k].okm, want, v[k].okm_len);
		assert_int_equal(ibp_seal_hkdf_sha256(ikm, v[k].ikm_len, salt, v[k].salt_len, info,
						      v[k].info_len, okm, v[k].okm_len),
				 0);
		assert_memory_equal(okm, want, v[k].okm_len);
	}
}

/* The same function as OpenSSL's HKDF over many lengths, and its bound. */
static void test_seal_hkdf_equals_openssl(void **state)
{
	uint8_t ikm[100], salt[70], info[90], a[200], b[200];

	(void)state;
	for (size_t i = 0; i < sizeof(ikm); i++)
		ikm[i] = (uint8_t)(i * 31 + 7);
	for (size_t i = 0; i < sizeof(salt); i++)
		salt[i] = (uint8_t)(i * 13 + 1);
	for (size_t i = 0; i < sizeof(info); i++)
		info[i] = (uint8_t)(i * 5 + 3);
	for (size_t len = 1; len <= sizeof(a); len += 13) {
		size_t il = len % sizeof(ikm) + 1, sl = len % sizeof(salt) + 1,
		       nl = len % sizeof(info);
		EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
		EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
		OSSL_PARAM p[] = {
		    OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, ikm, il),
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt, sl),
		    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, nl),
		    OSSL_PARAM_construct_end()};

		assert_non_null(ctx);
		assert_int_equal(EVP_KDF_derive(ctx, b, len, p), 1);
		EVP_KDF_CTX_free(ctx);
		EVP_KDF_free(kdf);
		assert_int_equal(ibp_seal_hkdf_sha256(ikm, il, salt, sl, info, nl, a, len), 0);
		assert_memory_equal(a, b, len);
	}
	assert_int_equal(ibp_seal_hkdf_sha256(ikm, 1, salt, 1, info, 1, a, 255 * 32 + 1), -EINVAL);
}

/* The keys of one fixed link, as the OpenSSL-based build derived them. */
static void test_seal_keys_match_previous_build(void **state)
{
	static const struct ibp_seal_link link = {
	    .job = 1234, .step = 5, .uid = 1000, .from = 3, .to = 4, .round = 2, .rail = 1};
	static const uint8_t tx[IBP_SEAL_KEY_LEN] = {
	    0x76, 0x7b, 0x79, 0x18, 0x09, 0xb6, 0xe1, 0xc7, 0x99, 0xa1, 0x22,
	    0x63, 0x1e, 0x57, 0x89, 0x31, 0x8d, 0xee, 0x1e, 0x1a, 0xf0, 0x86,
	    0xb0, 0xce, 0x8d, 0x23, 0x3c, 0xda, 0x6f, 0x1b, 0x9d, 0xd8};
	static const uint8_t rx[IBP_SEAL_KEY_LEN] = {
	    0x64, 0xf3, 0x9b, 0x33, 0xa3, 0x88, 0xe6, 0xd9, 0x60, 0x64, 0xab,
	    0x9f, 0xbf, 0xde, 0x84, 0xa1, 0xc0, 0xa4, 0xc2, 0x4f, 0x78, 0x6c,
	    0xa3, 0xd9, 0x24, 0x8b, 0xdb, 0xbc, 0x27, 0x38, 0xd3, 0x31};
	uint8_t a[IBP_AUTH_SECRET_LEN], b[IBP_AUTH_SECRET_LEN];
	struct ibp_seal s;

	(void)state;
	for (int i = 0; i < IBP_AUTH_SECRET_LEN; i++) {
		a[i] = (uint8_t)i;
		b[i] = (uint8_t)(0xa0 + i);
	}
	assert_int_equal(
	    ibp_seal_derive(&s, a, b, 0x0102030405060708ULL, 0x1112131415161718ULL, &link, true),
	    0);
	assert_memory_equal(s.tx_key, tx, sizeof(tx));
	assert_memory_equal(s.rx_key, rx, sizeof(rx));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_seal_hkdf_rfc5869_vectors),
	    cmocka_unit_test(test_seal_hkdf_equals_openssl),
	    cmocka_unit_test(test_seal_keys_match_previous_build),
	    cmocka_unit_test(test_seal_derive_ends_agree_directions_differ),
	    cmocka_unit_test(test_seal_derive_every_input_binds),
	    cmocka_unit_test(test_seal_roundtrip_and_tag_is_chacha20_poly1305),
	    cmocka_unit_test(test_seal_every_bit_flip_refused),
	    cmocka_unit_test(test_seal_truncated_overlong_wrong_type_refused),
	    cmocka_unit_test(test_seal_replay_drop_reorder_refused),
	    cmocka_unit_test(test_seal_authentic_but_malformed_payload_refused),
	    cmocka_unit_test(test_seal_variable_length_frame_roundtrip_and_refusals),
	    cmocka_unit_test(test_seal_recv_unsealed_frame_is_auth_failure),
	    cmocka_unit_test(test_seal_batch_one_tag_every_frame_checked),
	    cmocka_unit_test(test_seal_batch_endpoints_one_tag_foreign_type_refused),
	    cmocka_unit_test(test_seal_recv_wrong_length_for_type_refused_naming_it),
	    cmocka_unit_test(test_seal_measure_again_sized_and_wrong_length_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
