/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth.h: authentication of the cross-node test's connections with munge.
 *
 * Every HELLO carries a munge credential whose payload binds the claims
 * below: job, step, uid, the sender's and the addressee's node index, the
 * round and rail, a fresh nonce and (in a reply) the nonce it answers, and
 * a fresh random secret (getrandom) from which both ends derive the link's
 * frame keys (seal.h).  The credential is encoded by the test's identity
 * (CRED_UID: in the plugin the test's system user, the same uid on every
 * node; by hand the user's own) with MUNGE_OPT_UID_RESTRICTION set to that
 * uid: munged decodes it only for that uid (or root), so no local user,
 * the job's owner included, who copies the bytes off the wire can learn the
 * secret, and munge encrypts the payload with the cluster key, so neither
 * can a host without it.  The receiver decodes it with its own munged
 * (same key across the cluster), and accepts the connection only when
 * munge vouches that CRED_UID encoded it (a credential the job's owner
 * mints names the owner's uid) and the payload equals, field for field,
 * what the HELLO claims and what this node expects (the job's uid among
 * them).  Replays: munged refuses a credential decoded
 * twice, a reply binds the caller's nonce, and credentials expire after
 * MUNGE's TTL.
 *
 * Insecure mode (ibprep rdmatest --insecure only, never the plugin by
 * default): no credential and no secret at all; the caller must warn that
 * neither the connections nor the frames are authenticated.
 *
 * libmunge talks to munged over a Unix socket (SOCKET, NULL = munge's
 * default); no globals; thread-safe (one munge context per call).
 */
#ifndef IBPREP_AUTH_H
#define IBPREP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IBP_AUTH_SECRET_LEN  32
#define IBP_AUTH_PAYLOAD_LEN (56 + IBP_AUTH_SECRET_LEN)

struct ibp_auth_claims {
	uint32_t job, step, uid;
	uint32_t from, to, nnodes;
	uint8_t round, rail, n_rails;
	uint16_t flags; /* the HELLO's flags (reply bit) */
	uint64_t nonce, echo;
	uint8_t secret[IBP_AUTH_SECRET_LEN]; /* fresh per HELLO; never compared */
};

struct ibp_auth {
	const char *socket; /* munged socket, NULL = default */
	bool insecure;      /* no credentials: sign gives "", verify accepts */
	uint32_t cred_uid;  /* who encodes, and alone may decode, every credential */
};

/*
 * Encodes a credential for C into CRED (NUL-terminated), decodable only by
 * A->cred_uid (MUNGE_OPT_UID_RESTRICTION).  Length, or -ENOTCONN (munged not
 * reachable), -ENOSPC (CRED too small), -EIO (other munge error); ERR says
 * which, with munge's own words.
 */
int ibp_auth_sign(const struct ibp_auth *a, const struct ibp_auth_claims *c, char *cred, size_t len,
		  char *err, size_t errlen);

/*
 * Checks CRED against EXPECT (every field but the secret).  0 with the
 * sender's secret in SECRET (may be NULL; zeros when insecure); -EACCES
 * when the credential is invalid, expired, replayed, encoded by a uid other
 * than A->cred_uid, or its payload differs from EXPECT (ERR names the field: "credential is for
 * job 12, expected 13"); -ENOTCONN when munged is not reachable (a local
 * problem, not the peer's).
 */
int ibp_auth_verify(const struct ibp_auth *a, const char *cred,
		    const struct ibp_auth_claims *expect, uint8_t secret[IBP_AUTH_SECRET_LEN],
		    char *err, size_t errlen);

/* The payload bytes, exposed for the tests. */
void ibp_auth_claims_pack(const struct ibp_auth_claims *c, uint8_t out[IBP_AUTH_PAYLOAD_LEN]);
int ibp_auth_claims_unpack(const uint8_t *in, size_t len, struct ibp_auth_claims *c);

#endif
