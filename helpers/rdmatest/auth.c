/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth.c: munge credentials binding the cross-node test's claims (auth.h).
 */
#include <errno.h>
#include <munge.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/text.h"
#include "ibprep/auth.h"

#define PAYLOAD_MAGIC   0x49425041u /* "IBPA" */
#define PAYLOAD_VERSION 2u

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void ibp_auth_claims_pack(const struct ibp_auth_claims *c, uint8_t out[IBP_AUTH_PAYLOAD_LEN])
{
	be32(out, PAYLOAD_MAGIC);
	be32(out + 4, PAYLOAD_VERSION);
	be32(out + 8, c->job);
	be32(out + 12, c->step);
	be32(out + 16, c->uid);
	be32(out + 20, c->from);
	be32(out + 24, c->to);
	be32(out + 28, c->nnodes);
	be32(out + 32, (uint32_t)c->round << 24 | (uint32_t)c->rail << 16 | c->flags);
	be32(out + 36, (uint32_t)(c->nonce >> 32));
	be32(out + 40, (uint32_t)c->nonce);
	be32(out + 44, (uint32_t)(c->echo >> 32));
	be32(out + 48, (uint32_t)c->echo);
	be32(out + 52, c->n_rails);
	memcpy(out + 56, c->secret, IBP_AUTH_SECRET_LEN);
}

int ibp_auth_claims_unpack(const uint8_t *in, size_t len, struct ibp_auth_claims *c)
{
	uint32_t w;

	if (len != IBP_AUTH_PAYLOAD_LEN || rd32(in) != PAYLOAD_MAGIC ||
	    rd32(in + 4) != PAYLOAD_VERSION || rd32(in + 52) > 0xff)
		return -EBADMSG;
	c->job = rd32(in + 8);
	c->step = rd32(in + 12);
	c->uid = rd32(in + 16);
	c->from = rd32(in + 20);
	c->to = rd32(in + 24);
	c->nnodes = rd32(in + 28);
	w = rd32(in + 32);
	c->round = (uint8_t)(w >> 24);
	c->rail = (uint8_t)(w >> 16);
	c->flags = (uint16_t)w;
	c->nonce = (uint64_t)rd32(in + 36) << 32 | rd32(in + 40);
	c->echo = (uint64_t)rd32(in + 44) << 32 | rd32(in + 48);
	c->n_rails = (uint8_t)rd32(in + 52);
	memcpy(c->secret, in + 56, IBP_AUTH_SECRET_LEN);
	return 0;
}

static munge_ctx_t ctx_new(const struct ibp_auth *a, char *err, size_t errlen)
{
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		ibp_errf(-ENOMEM, err, errlen, "munge_ctx_create failed");
		return NULL;
	}
	if (a->socket && *a->socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, a->socket)) {
		ibp_errf(-EINVAL, err, errlen, "munge socket '%s': %s", a->socket,
			 munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

int ibp_auth_sign(const struct ibp_auth *a, const struct ibp_auth_claims *c, char *cred, size_t len,
		  char *err, size_t errlen)
{
	uint8_t payload[IBP_AUTH_PAYLOAD_LEN];
	char *out = NULL;
	munge_ctx_t ctx;
	munge_err_t e;
	size_t n;
	int rc;

	if (!len)
		return -ENOSPC;
	cred[0] = '\0';
	if (a->insecure)
		return 0;
	ctx = ctx_new(a, err, errlen);
	if (!ctx)
		return -ENOMEM;
	/* Only the test's identity (or root) may decode it: nobody else learns the secret. */
	if (munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)a->cred_uid) != EMUNGE_SUCCESS) {
		rc = ibp_errf(-EIO, err, errlen, "munge uid restriction: %s",
			      munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : "refused");
		goto out;
	}
	ibp_auth_claims_pack(c, payload);
	e = munge_encode(&out, ctx, payload, sizeof(payload));
	if (e != EMUNGE_SUCCESS) {
		rc =
		    ibp_errf(e == EMUNGE_SOCKET ? -ENOTCONN : -EIO, err, errlen,
			     "munge_encode via '%s': %s", a->socket ? a->socket : "default socket",
			     munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(e));
		goto out;
	}
	n = strlen(out);
	if (n >= len) {
		rc = ibp_errf(-ENOSPC, err, errlen, "munge credential of %zu bytes, room for %zu",
			      n, len - 1);
		goto out;
	}
	memcpy(cred, out, n + 1);
	rc = (int)n;
out:
	sodium_memzero(payload, sizeof(payload));
	free(out);
	munge_ctx_destroy(ctx);
	return rc;
}

static int compare(const struct ibp_auth_claims *got, const struct ibp_auth_claims *want, char *err,
		   size_t errlen)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
	    {"job", offsetof(struct ibp_auth_claims, job)},
	    {"step", offsetof(struct ibp_auth_claims, step)},
	    {"uid", offsetof(struct ibp_auth_claims, uid)},
	    {"sender node index", offsetof(struct ibp_auth_claims, from)},
	    {"addressee node index", offsetof(struct ibp_auth_claims, to)},
	    {"node count", offsetof(struct ibp_auth_claims, nnodes)},
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint32_t g, w;

		memcpy(&g, (const char *)got + fields[i].off, sizeof(g));
		memcpy(&w, (const char *)want + fields[i].off, sizeof(w));
		if (g != w)
			return ibp_errf(-EACCES, err, errlen,
					"credential is for %s %u, expected %u", fields[i].name, g,
					w);
	}
	if (got->round != want->round || got->rail != want->rail || got->flags != want->flags ||
	    got->n_rails != want->n_rails)
		return ibp_errf(-EACCES, err, errlen,
				"credential is for round %u rail %u flags %#x, expected %u/%u/%#x",
				got->round, got->rail, got->flags, want->round, want->rail,
				want->flags);
	if (got->nonce != want->nonce || got->echo != want->echo)
		return ibp_errf(-EACCES, err, errlen,
				"credential nonce does not match the message (replayed or forged)");
	return 0;
}

int ibp_auth_verify(const struct ibp_auth *a, const char *cred,
		    const struct ibp_auth_claims *expect, uint8_t secret[IBP_AUTH_SECRET_LEN],
		    char *err, size_t errlen)
{
	struct ibp_auth_claims got = {0};
	void *payload = NULL;
	int plen = 0, rc;
	uid_t uid;
	gid_t gid;
	munge_ctx_t ctx;
	munge_err_t e;

	if (secret)
		memset(secret, 0, IBP_AUTH_SECRET_LEN);
	if (a->insecure)
		return 0;
	if (!cred || !*cred)
		return ibp_errf(-EACCES, err, errlen, "no credential (peer runs without munge)");
	ctx = ctx_new(a, err, errlen);
	if (!ctx)
		return -ENOMEM;
	e = munge_decode(cred, ctx, &payload, &plen, &uid, &gid);
	if (e != EMUNGE_SUCCESS) {
		rc =
		    ibp_errf(e == EMUNGE_SOCKET ? -ENOTCONN : -EACCES, err, errlen,
			     "munge credential refused: %s",
			     munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(e));
		goto out;
	}
	if (uid != (uid_t)a->cred_uid) {
		rc = ibp_errf(-EACCES, err, errlen,
			      "credential is from uid %u, expected %u (the uid the test runs as "
			      "here: the same on every node)",
			      (unsigned)uid, a->cred_uid);
		goto out;
	}
	if (plen < 0 || ibp_auth_claims_unpack(payload, (size_t)plen, &got)) {
		rc = ibp_errf(-EACCES, err, errlen, "credential payload is not a spank-ib claim");
		goto out;
	}
	rc = compare(&got, expect, err, errlen);
	if (!rc && secret)
		memcpy(secret, got.secret, IBP_AUTH_SECRET_LEN);
out:
	sodium_memzero(&got, sizeof(got));
	if (payload && plen > 0)
		sodium_memzero(payload, (size_t)plen);
	free(payload);
	munge_ctx_destroy(ctx);
	return rc;
}
