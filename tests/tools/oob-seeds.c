/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * oob-seeds DIR: writes the fuzz seeds of the cross-node test's frames at
 * this build's protocol version (oob.h) into DIR/fuzz_oob_decode/ (one
 * frame of every type: HELLO, ENDPOINT, SUMMARY, CTRL (READY and
 * MEASURE_AGAIN), ERROR, FINGERPRINT, the three FPSUM phases, BATCHes of
 * CTRL and of ENDPOINT frames) and DIR/fuzz_frame_auth/ (its first byte the
 * mode: 1 a frame the target seals itself, 0 one sealed here under another
 * link's key, as a relay could replay it: every check up to the tag; every
 * type, HELLO and ERROR as plain frames only, which no seal takes).
 * After a version bump:
 *
 *   cc -std=gnu11 -D_GNU_SOURCE -Iinclude -o /tmp/oob-seeds tests/tools/oob-seeds.c \
 *       build/libibprep.a $(pkg-config --libs hwloc libibverbs numa libsodium) -lmunge \
 *       && /tmp/oob-seeds fuzz/corpus
 *
 * A tool, not part of the library: it prints and exits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ibprep/seal.h"

#include "sim-fingerprint.h"

static const char *dir;

static int put(const char *target, const char *name, uint8_t mode, const uint8_t *p, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	(void)mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || (mode != 0xff && fputc(mode, f) == EOF) || fwrite(p, 1, len, f) != len) {
		fprintf(stderr, "oob-seeds: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return 1;
	}
	return fclose(f) ? 1 : 0;
}

/* M as a plain frame into fuzz_oob_decode/NAME; 1 on failure. */
static int frame(const char *name, const struct ibp_oob_msg *m)
{
	static uint8_t buf[IBP_OOB_FRAME_MAX];
	int n = ibp_oob_encode(m, buf, sizeof(buf));

	if (n < 0) {
		fprintf(stderr, "oob-seeds: %s does not encode: %s\n", name, strerror(-n));
		return 1;
	}
	return put("fuzz_oob_decode", name, 0xff, buf, (size_t)n);
}

/* M for fuzz_frame_auth: plain (the target seals it), and sealed under a key not the target's. */
static int frames_auth(const char *name, const struct ibp_oob_msg *m)
{
	static const struct ibp_seal_link link = {
	    .job = 1, .step = 2, .uid = 3, .from = 4, .to = 5, .round = 1, .rail = 0};
	static uint8_t buf[IBP_SEAL_FRAME_MAX];
	uint8_t a[IBP_AUTH_SECRET_LEN], b[IBP_AUTH_SECRET_LEN];
	struct ibp_seal tx;
	char sealed[64];
	int n = ibp_oob_encode(m, buf, sizeof(buf));

	if (n < 0 || put("fuzz_frame_auth", name, 1, buf, (size_t)n))
		return 1;
	/* HELLO, ERROR: no seal takes them; a relay could still send one as it is */
	snprintf(sealed, sizeof(sealed), "%s_%s", name,
		 ibp_oob_sealed(m->type) ? "sealed" : "plain");
	if (!ibp_oob_sealed(m->type))
		return put("fuzz_frame_auth", sealed, 0, buf, (size_t)n);
	/* not the target's secrets (fuzz/fuzz_frame_auth.c: 0xa5, 0x5a): its tag never checks */
	memset(a, 0x11, sizeof(a));
	memset(b, 0x22, sizeof(b));
	n = ibp_seal_derive(&tx, a, b, 6, 7, &link, true);
	if (!n)
		n = ibp_seal_encode(&tx, m, buf, sizeof(buf));
	return n < 0 || put("fuzz_frame_auth", sealed, 0, buf, (size_t)n);
}

/*
 * A BATCH NAME of two frames (CTRL ones since protocol 21, ENDPOINT ones
 * since 22) for both targets: its header and frames as they are
 * (fuzz_oob_decode), and to be sealed (fuzz_frame_auth).
 */
static int batch(const char *name, const struct ibp_oob_msg *a, const struct ibp_oob_msg *b)
{
	static uint8_t buf[IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX];
	int n1 = ibp_oob_encode(a, buf + IBP_OOB_HDR_LEN, IBP_OOB_BATCH_MAX), n2 = -1;

	if (n1 > 0)
		n2 = ibp_oob_encode(b, buf + IBP_OOB_HDR_LEN + n1, IBP_OOB_BATCH_MAX - (size_t)n1);
	if (n2 < 0 || ibp_oob_batch_header(buf, (size_t)(n1 + n2))) {
		fprintf(stderr, "oob-seeds: %s does not encode\n", name);
		return 1;
	}
	return put("fuzz_oob_decode", name, 0xff, buf, IBP_OOB_HDR_LEN + (size_t)(n1 + n2)) ||
	       put("fuzz_frame_auth", name, 1, buf, IBP_OOB_HDR_LEN + (size_t)(n1 + n2));
}

int main(int argc, char **argv)
{
	static struct ibp_oob_summary s;
	static struct ibp_fp fp;
	static struct ibp_oob_fpsum sum, final, broken;
	struct ibp_oob_msg hello = {.type = IBP_OOB_HELLO}, ep = {.type = IBP_OOB_ENDPOINT}, ep0,
			   ab = {.type = IBP_OOB_CTRL}, ctrl = {.type = IBP_OOB_CTRL},
			   again = {.type = IBP_OOB_CTRL}, err = {.type = IBP_OOB_ERROR},
			   sm = {.type = IBP_OOB_SUMMARY, .summary = &s},
			   fm = {.type = IBP_OOB_FINGERPRINT, .fingerprint = &fp},
			   gm = {.type = IBP_OOB_FPSUM, .fpsum = &sum},
			   zm = {.type = IBP_OOB_FPSUM, .fpsum = &final},
			   bm = {.type = IBP_OOB_FPSUM, .fpsum = &broken};
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: oob-seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	hello.u.hello = (struct ibp_oob_hello){.job = 1234,
					       .step = 5,
					       .uid = 1000,
					       .from = 3,
					       .to = 4,
					       .nnodes = 16,
					       .round = 1,
					       .rail = 0,
					       .n_rails = 2,
					       .nonce = 0x1122334455667788ull,
					       .cred_len = 32};
	memset(hello.u.hello.cred, 'M', 32);
	ep.u.endpoint.rail = 1;
	ep.u.endpoint.port = 1;
	strcpy(ep.u.endpoint.device, "mlx5_3");
	strcpy(ep.u.endpoint.leaf, "leaf07");
	ep.u.endpoint.ep = (struct ibp_endpoint){.kind = IBP_TX_VERBS,
						 .link_layer = IBP_LL_ETH,
						 .qpn = 0x123456,
						 .psn = 0xabcdef,
						 .mtu = 4096,
						 .rkey = 0xdeadbeef,
						 .gid_index = 3,
						 .addr = 0x7f0012345678ull,
						 .buf_len = 1 << 20,
						 .rate_mbps = 400000};
	ctrl.u.ctrl = (struct ibp_oob_ctrl){.op = IBP_CTRL_READY, .a = 8 << 20, .b = 16};
	/* this rail measured again, the second measurement */
	again.u.ctrl = (struct ibp_oob_ctrl){.op = IBP_CTRL_MEASURE_AGAIN, .a = 1, .b = 2};
	err.u.error.code = -EACCES;
	strcpy(err.u.error.text, "refused");
	s.node = 7;
	s.nnodes = 10;
	s.plan = 0x1234567890abcdefull;
	s.n_links = 4;
	s.links[0] = (struct ibp_oob_link){7, 8, 1, IBP_LINK_PASS, 0};
	s.links[1] = (struct ibp_oob_link){6, 7, 1, IBP_LINK_PASS, 0};
	s.links[2] = (struct ibp_oob_link){7, 9, 2, IBP_LINK_CORRUPT, 0};
	s.links[3] = (struct ibp_oob_link){5, 7, 2, IBP_LINK_VERSION, 0};
	s.n_leaves = 2;
	s.leaves[0].node = 7;
	strcpy(s.leaves[0].name, "leaf07");
	s.leaves[1].node = 8;
	strcpy(s.leaves[1].name, "leaf08");
	sim_fingerprint(&fp, "28.39.1002");
	/* the sum of places [0, 4) of 8, gathering; the whole step's, final; a broken chain */
	sum.phase = IBP_FPSUM_GATHER;
	ibp_fp_sum_init(&sum.sum, 8);
	final.phase = IBP_FPSUM_FINAL;
	ibp_fp_sum_init(&final.sum, 8);
	for (uint32_t i = 0; i < 8; i++) {
		bad |= i < 4 && ibp_fp_sum_add(&sum.sum, i, &fp);
		bad |= ibp_fp_sum_add(&final.sum, i, &fp);
	}
	broken = (struct ibp_oob_fpsum){
	    .phase = IBP_FPSUM_BROKEN, .why = IBP_FPSUM_WHY_LINK, .origin = 3, .from = 4};
	if (bad) {
		fprintf(stderr, "oob-seeds: the sum refused a node\n");
		return 1;
	}
	bad |= frame("hello", &hello) || frame("endpoint", &ep) || frame("summary", &sm) ||
	       frame("ctrl", &ctrl) || frame("ctrl_measure_again", &again) ||
	       frame("error", &err) || frame("fingerprint", &fm) || frame("fpsum_gather", &gm) ||
	       frame("fpsum_final", &zm) || frame("fpsum_broken", &bm);
	/* every sealed type, and the two that never are (refused sealed or not) */
	bad |= frames_auth("ctrl", &ctrl) || frames_auth("ctrl_measure_again", &again) ||
	       frames_auth("summary", &sm) || frames_auth("endpoint", &ep) ||
	       frames_auth("fingerprint", &fm) || frames_auth("fpsum_gather", &gm) ||
	       frames_auth("fpsum_final", &zm) || frames_auth("fpsum_broken", &bm) ||
	       frames_auth("hello", &hello) || frames_auth("error", &err);
	/* BATCH: the frames of a step under one seal; the endpoints' with a rail's ABORT */
	ep0 = ep;
	ep0.u.endpoint.rail = 0;
	ab.u.ctrl =
	    (struct ibp_oob_ctrl){.op = IBP_CTRL_ABORT, .status = -EIO, .a = IBP_LINK_LOCAL};
	bad |= batch("batch", &ctrl, &again) || batch("batch_endpoints", &ep0, &ep) ||
	       batch("batch_endpoint_abort", &ep0, &ab);
	printf("oob-seeds: protocol %u seeds in %s/fuzz_oob_decode and %s/fuzz_frame_auth\n",
	       ibp_oob_wire_version(), dir, dir);
	return bad ? 1 : 0;
}
