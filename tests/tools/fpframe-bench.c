/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fpframe-bench [RUNS]: what one FINGERPRINT and one FPSUM frame of the
 * cross-node test cost (docs/consistency.md): the fingerprint
 * tests/tools/rdmatest-sim.c --fingerprint sends (a DGX-like node, 8
 * rails) and the sum of 64 such nodes, as the ring carries it.  For each:
 * the sealed frame's bytes, and the median microseconds of ibp_oob_encode,
 * ibp_oob_decode, ibp_seal_encode and ibp_seal_decode (encode or decode
 * plus the MAC), and for the sum ibp_fp_sum_check; then what a node does
 * to the sum between the two (ibp_fp_sum_add, ibp_fp_sum_merge); median
 * over RUNS batches (default 31) of 200 calls.  A bench tool, not part of the
 * library: it prints and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/fingerprint.h"
#include "ibprep/seal.h"

#include "bench-util.h"
#include "sim-fingerprint.h"

#define BATCH 200

enum op { ENCODE, DECODE, SEAL_ENCODE, SEAL_DECODE, SUM_CHECK };

/* Median microseconds of one OP on M over RUNS batches; -1 when an OP fails. */
static double time_op(enum op op, const struct ibp_oob_msg *m, int runs)
{
	static uint8_t buf[IBP_SEAL_FRAME_MAX], sealed[IBP_SEAL_FRAME_MAX];
	static struct ibp_fp fp_out;
	static struct ibp_oob_fpsum sum_out;
	struct ibp_oob_msg out = {.fingerprint = &fp_out, .fpsum = &sum_out};
	static const uint8_t zero[IBP_AUTH_SECRET_LEN];
	struct ibp_seal_link link = {1, 1, 1000, 0, 1, 1, 0};
	struct ibp_seal tx, rx;
	double *t = calloc((size_t)runs, sizeof(*t)), med;
	int n = ibp_oob_encode(m, buf, sizeof(buf)), sn;

	ibp_seal_derive(&tx, zero, zero, 1, 2, &link, true);
	ibp_seal_derive(&rx, zero, zero, 1, 2, &link, false);
	sn = ibp_seal_encode(&tx, m, sealed, sizeof(sealed));
	if (!t || n <= 0 || sn <= 0) {
		free(t);
		return -1;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = bench_now_us();
		int rc = 0;

		for (int i = 0; i < BATCH && rc >= 0; i++) {
			switch (op) {
			case ENCODE:
				rc = ibp_oob_encode(m, buf, sizeof(buf));
				break;
			case DECODE:
				rc = ibp_oob_decode(buf, (size_t)n, &out);
				break;
			case SEAL_ENCODE:
				rc = ibp_seal_encode(&tx, m, sealed, sizeof(sealed));
				break;
			case SEAL_DECODE:
				rx.rx_seq = 0; /* the same frame each time */
				rc = ibp_seal_decode(&rx, sealed, (size_t)sn, &out);
				break;
			case SUM_CHECK:
				rc = ibp_fp_sum_check(&m->fpsum->sum);
				break;
			}
		}
		if (rc < 0) {
			free(t);
			return -1;
		}
		t[r] = (bench_now_us() - t0) / BATCH;
	}
	med = bench_median(t, runs);
	free(t);
	return med;
}

static void report(const char *what, const struct ibp_oob_msg *m, int runs)
{
	static uint8_t buf[IBP_SEAL_FRAME_MAX];
	static const uint8_t zero[IBP_AUTH_SECRET_LEN];
	struct ibp_seal_link link = {1, 1, 1000, 0, 1, 1, 0};
	struct ibp_seal tx;
	int n;

	ibp_seal_derive(&tx, zero, zero, 1, 2, &link, true);
	n = ibp_seal_encode(&tx, m, buf, sizeof(buf));
	printf("%s: sealed frame %d bytes; encode_us %.2f decode_us %.2f seal_encode_us %.2f "
	       "seal_decode_us %.2f",
	       what, n, time_op(ENCODE, m, runs), time_op(DECODE, m, runs),
	       time_op(SEAL_ENCODE, m, runs), time_op(SEAL_DECODE, m, runs));
	if (m->type == IBP_OOB_FPSUM)
		printf(" sum_check_us %.2f", time_op(SUM_CHECK, m, runs));
	printf("\n");
}

/*
 * What a node of the chain does between decoding and encoding: add its
 * fingerprint FP after nodes [0, 63) of 64 (the lower half), or put its own
 * in front of nodes [1, 64) (the upper half: a one-node sum, then merge).
 * Each call starts from a copy of the sum (22 KB): copy_us says what that
 * alone costs.
 */
static void ring_work(const struct ibp_fp *fp, int runs)
{
	struct ibp_fp_sum *lo = malloc(sizeof(*lo)), *hi = malloc(sizeof(*hi)),
			  *one = malloc(sizeof(*one)), *t = malloc(sizeof(*t));
	double *c = calloc((size_t)runs, sizeof(*c)), *a = calloc((size_t)runs, sizeof(*a)),
	       *g = calloc((size_t)runs, sizeof(*g));
	int rc = 0;

	if (!lo || !hi || !one || !t || !c || !a || !g)
		return;
	ibp_fp_sum_init(lo, 64);
	ibp_fp_sum_init(hi, 64);
	hi->first = 1;
	ibp_fp_sum_init(one, 64);
	for (uint32_t i = 0; i < 64; i++)
		rc |= i < 63 ? ibp_fp_sum_add(lo, i, fp) : 0;
	for (uint32_t i = 1; i < 64; i++)
		rc |= ibp_fp_sum_add(hi, i, fp);
	rc |= ibp_fp_sum_add(one, 0, fp);
	for (int r = 0; r < runs && !rc; r++) {
		double t0 = bench_now_us();

		for (int i = 0; i < BATCH; i++)
			memcpy(t, lo, sizeof(*t));
		c[r] = (bench_now_us() - t0) / BATCH;
		t0 = bench_now_us();
		for (int i = 0; i < BATCH && !rc; i++) {
			memcpy(t, lo, sizeof(*t));
			rc = ibp_fp_sum_add(t, 63, fp);
		}
		a[r] = (bench_now_us() - t0) / BATCH;
		t0 = bench_now_us();
		for (int i = 0; i < BATCH && !rc; i++) {
			memcpy(t, one, sizeof(*t));
			rc = ibp_fp_sum_merge(t, hi);
		}
		g[r] = (bench_now_us() - t0) / BATCH;
	}
	if (rc) {
		printf("ring work: the sum refused a node\n");
	} else {
		printf("ring work (64 nodes): copy_us %.2f add_us %.2f merge_us %.2f (each with a "
		       "copy)\n",
		       bench_median(c, runs), bench_median(a, runs), bench_median(g, runs));
	}
	free(c);
	free(a);
	free(g);
	free(lo);
	free(hi);
	free(one);
	free(t);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 31;
	struct ibp_fp *f = calloc(1, sizeof(*f));
	struct ibp_oob_fpsum *s = calloc(1, sizeof(*s));
	struct ibp_oob_msg fp = {.type = IBP_OOB_FINGERPRINT, .fingerprint = f},
			   sum = {.type = IBP_OOB_FPSUM, .fpsum = s};
	char what[128];

	if (runs < 1 || !f || !s) {
		fprintf(stderr, "usage: fpframe-bench [RUNS]\n");
		return 2;
	}
	sim_fingerprint(f, "28.39.1002");
	snprintf(what, sizeof(what), "FINGERPRINT (rdmatest-sim's, %zu entries)", f->n);
	report(what, &fp, runs);
	s->phase = IBP_FPSUM_GATHER;
	ibp_fp_sum_init(&s->sum, 64);
	for (uint32_t i = 0; i < 64; i++)
		if (ibp_fp_sum_add(&s->sum, i, f)) {
			fprintf(stderr, "fpframe-bench: the sum refused node %u\n", (unsigned)i);
			return 1;
		}
	snprintf(what, sizeof(what), "FPSUM (64 nodes, %u keys, %u values)",
		 (unsigned)s->sum.n_keys, (unsigned)s->sum.n_values);
	report(what, &sum, runs);
	ring_work(f, runs);
	free(f);
	free(s);
	return 0;
}
