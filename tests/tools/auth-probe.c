/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth-probe.c: the cross-node test's munge credentials (auth.h) as one
 * identity or another sees them (tests/integration/test_spank_rdmatest_hostile.sh, (k)).
 *
 *   auth-probe SOCKET sign CRED_UID JOB      prints a HELLO credential for job
 *                                            JOB, restricted to CRED_UID
 *   auth-probe SOCKET verify CRED_UID JOB    reads one from stdin; prints
 *                                            "accepted", or "refused: WHY"
 *
 * The claims are the same for both (step 0, the job's uid 4242, nodes 0 to
 * 1 of 2, round 1, rail 0) but for JOB.  Whose credential it is is the uid
 * this runs as: munged records the encoder, auth.c checks it against
 * CRED_UID.  Exit status 0 accepted or signed, 1 refused or failed, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/auth.h"
#include "ibprep/oob.h"

static void claims(struct ibp_auth_claims *c, uint32_t job)
{
	memset(c, 0, sizeof(*c));
	c->job = job;
	c->uid = 4242;
	c->from = 0;
	c->to = 1;
	c->nnodes = 2;
	c->round = 1;
	c->nonce = 0x1234567890abcdefULL;
}

int main(int argc, char **argv)
{
	struct ibp_auth a = {0};
	struct ibp_auth_claims c;
	char cred[IBP_OOB_CRED_MAX + 2], err[512] = "";
	int rc;

	if (argc != 5 || (strcmp(argv[2], "sign") && strcmp(argv[2], "verify")))
		return 2;
	a.socket = argv[1];
	a.cred_uid = (uint32_t)strtoul(argv[3], NULL, 10);
	claims(&c, (uint32_t)strtoul(argv[4], NULL, 10));
	if (!strcmp(argv[2], "sign")) {
		rc = ibp_auth_sign(&a, &c, cred, sizeof(cred), err, sizeof(err));
		if (rc < 0) {
			printf("failed: %s\n", err);
			return 1;
		}
		printf("%s\n", cred);
		return 0;
	}
	if (!fgets(cred, sizeof(cred), stdin))
		return 2;
	cred[strcspn(cred, "\n")] = '\0';
	rc = ibp_auth_verify(&a, cred, &c, NULL, err, sizeof(err));
	if (rc) {
		printf("refused: %s\n", err);
		return 1;
	}
	printf("accepted\n");
	return 0;
}
