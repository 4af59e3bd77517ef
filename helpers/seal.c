/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * seal.c: per-link keys (HKDF-SHA256) and the MAC on every frame after the
 * HELLOs (seal.h).  All cryptography is OpenSSL's libcrypto; this file only
 * lays out the bytes it is given.
 */
#include <errno.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "ibprep/seal.h"

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
	OPENSSL_cleanse(s, sizeof(*s));
}

static int hkdf(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
		const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM params[5];
	int rc = -EIO;

	if (!ctx)
		goto out;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
	params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
	params[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
	params[4] = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(ctx, out, out_len, params) == 1)
		rc = 0;
out:
	EVP_KDF_CTX_free(ctx);
	EVP_KDF_free(kdf);
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
	rc = hkdf(ikm, sizeof(ikm), salt, sizeof(salt), info, sizeof(info), okm, sizeof(okm));
	if (!rc) {
		/* The first half is the connector-to-listener key. */
		memcpy(connector ? s->tx_key : s->rx_key, okm, IBP_SEAL_KEY_LEN);
		memcpy(connector ? s->rx_key : s->tx_key, okm + IBP_SEAL_KEY_LEN, IBP_SEAL_KEY_LEN);
		s->ready = true;
	}
	OPENSSL_cleanse(ikm, sizeof(ikm));
	OPENSSL_cleanse(okm, sizeof(okm));
	return rc;
}

size_t ibp_seal_frame_len(unsigned type)
{
	return ibp_oob_sealed(type)
		   ? IBP_OOB_HDR_LEN + ibp_oob_payload_len(type) + IBP_SEAL_OVERHEAD
		   : 0;
}

/* The tag of the LEN bytes at P (header, payload, seq) under KEY. */
static int tag_of(const uint8_t key[IBP_SEAL_KEY_LEN], const uint8_t *p, size_t len,
		  uint8_t tag[IBP_SEAL_TAG_LEN])
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;

	if (!HMAC(EVP_sha256(), key, IBP_SEAL_KEY_LEN, p, len, md, &mdlen) ||
	    mdlen < IBP_SEAL_TAG_LEN)
		return -EIO;
	memcpy(tag, md, IBP_SEAL_TAG_LEN);
	OPENSSL_cleanse(md, sizeof(md));
	return 0;
}

int ibp_seal_encode(struct ibp_seal *s, const struct ibp_oob_msg *m, uint8_t *buf, size_t len)
{
	size_t flen = ibp_seal_frame_len(m->type);
	int n;

	if (!flen)
		return -EBADMSG;
	if (!s->ready)
		return -EINVAL;
	if (len < flen)
		return -ENOSPC;
	n = ibp_oob_encode(m, buf, len);
	if (n < 0)
		return n;
	if ((size_t)n + IBP_SEAL_OVERHEAD != flen)
		return -EBADMSG;
	be64(buf + n, s->tx_seq);
	if (tag_of(s->tx_key, buf, (size_t)n + IBP_SEAL_SEQ_LEN, buf + n + IBP_SEAL_SEQ_LEN))
		return -EIO;
	s->tx_seq++;
	return (int)flen;
}

int ibp_seal_decode(struct ibp_seal *s, const uint8_t *buf, size_t len, struct ibp_oob_msg *m)
{
	uint8_t tag[IBP_SEAL_TAG_LEN];
	struct ibp_oob_msg tmp;
	unsigned type;
	size_t plen, body;
	int rc;

	if (!s->ready)
		return -EINVAL;
	rc = ibp_oob_decode_header(buf, len, &type, &plen);
	if (rc)
		return rc;
	if (!ibp_oob_sealed(type) || len != ibp_seal_frame_len(type))
		return -EBADMSG;
	body = IBP_OOB_HDR_LEN + plen;
	/* The tag first: nothing of the payload is looked at before it checks. */
	if (tag_of(s->rx_key, buf, body + IBP_SEAL_SEQ_LEN, tag))
		return -EIO;
	if (CRYPTO_memcmp(tag, buf + body + IBP_SEAL_SEQ_LEN, IBP_SEAL_TAG_LEN) != 0 ||
	    rd64(buf + body) != s->rx_seq)
		return -EKEYREJECTED;
	rc = ibp_oob_decode(buf, body, &tmp);
	if (rc < 0)
		return rc;
	*m = tmp;
	s->rx_seq++;
	return 0;
}

int ibp_seal_send(int fd, struct ibp_seal *s, const struct ibp_oob_msg *m, int64_t deadline)
{
	uint8_t buf[IBP_SEAL_FRAME_MAX];
	int n = ibp_seal_encode(s, m, buf, sizeof(buf));

	if (n < 0)
		return n;
	return ibp_oob_write_full(fd, buf, (size_t)n, deadline);
}

int ibp_seal_recv(int fd, struct ibp_seal *s, struct ibp_oob_msg *m, int64_t deadline)
{
	uint8_t buf[IBP_SEAL_FRAME_MAX];
	unsigned type;
	size_t plen;
	int rc = ibp_oob_read_full(fd, buf, IBP_OOB_HDR_LEN, deadline);

	if (rc)
		return rc;
	rc = ibp_oob_decode_header(buf, IBP_OOB_HDR_LEN, &type, &plen);
	/*
	 * Once the keys exist the peer sends nothing else: a frame that is not
	 * a well-formed sealed one was forged or altered on the way.
	 */
	if (rc == -EBADMSG || rc == -EPROTONOSUPPORT || (!rc && !ibp_oob_sealed(type)))
		return -EKEYREJECTED;
	if (rc)
		return rc;
	rc = ibp_oob_read_full(fd, buf + IBP_OOB_HDR_LEN, plen + IBP_SEAL_OVERHEAD, deadline);
	if (rc)
		return rc;
	rc = ibp_seal_decode(s, buf, ibp_seal_frame_len(type), m);
	return rc == -EBADMSG ? -EKEYREJECTED : rc;
}
