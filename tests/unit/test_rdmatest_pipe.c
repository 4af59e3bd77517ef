/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_rdmatest_pipe.c: the frames between the plugin (root) and its test
 * child (the job's user): round trips, and a decoder that refuses every
 * byte it should, since the child's bytes are untrusted.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/rdmatest_pipe.h"

static uint8_t buf[IBP_PIPE_FRAME_MAX];

static void sample_plan(struct ibp_pipe_plan *p)
{
	ibp_pipe_plan_init(p);
	p->job = 4711;
	p->step = 3;
	p->uid = 1001;
	p->index = 2;
	p->mode = IBP_RDMATEST_FULL;
	snprintf(p->nodelist, sizeof(p->nodelist), "n[1-4]");
	snprintf(p->munge_socket, sizeof(p->munge_socket), "/run/munge/munge.socket.2");
	snprintf(p->topology_addr, sizeof(p->topology_addr), "spine.leaf07.gpu001");
	snprintf(p->topology_pattern, sizeof(p->topology_pattern), "switch.switch.node");
	p->policy.test_timeout_s = 2.5;
	p->policy.test_min_bw = 0.25;
	p->policy.test_max_lat_us = 700;
	p->policy.test_port_lo = 230;
	p->policy.test_port_hi = 299;
	p->policy.test_pairing_any = true;
	snprintf(p->policy.test_transport, sizeof(p->policy.test_transport), "socket");
	p->n_listen = 2;
	p->listen_ports[0] = 241;
	p->listen_ports[1] = 263;
	p->listen_bound[1] = true;
	p->n_ports = 2;
	for (size_t i = 0; i < 2; i++) {
		snprintf(p->ports[i].device, sizeof(p->ports[i].device), "mlx5_%zu", i);
		p->ports[i].port = 1;
		p->ports[i].gid_index = i ? 3 : -1;
		p->ports[i].link_layer = i ? IBP_LL_ETH : IBP_LL_IB;
		p->ports[i].rate_gbps = 400;
		p->ports[i].rail = (unsigned)i;
	}
	/* rail 1 over its own netdev (the socket transport's rails) */
	snprintf(p->ports[1].addr, sizeof(p->ports[1].addr), "172.30.1.12");
	snprintf(p->ports[1].ifname, sizeof(p->ports[1].ifname), "ibp64s0");
	p->ports[1].prefix = 24;
}

static void test_pipe_plan_round_trip(void **state)
{
	static struct ibp_pipe_plan p, q;
	int n;

	(void)state;
	sample_plan(&p);
	n = ibp_pipe_plan_encode(&p, buf, sizeof(buf));
	assert_true(n > IBP_PIPE_HDR_LEN);
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), 0);
	assert_int_equal(q.job, 4711);
	assert_int_equal(q.step, 3);
	assert_int_equal(q.uid, 1001);
	assert_int_equal(q.index, 2);
	assert_int_equal(q.mode, IBP_RDMATEST_FULL);
	assert_string_equal(q.nodelist, "n[1-4]");
	assert_string_equal(q.munge_socket, "/run/munge/munge.socket.2");
	assert_string_equal(q.topology_addr, "spine.leaf07.gpu001");
	assert_string_equal(q.topology_pattern, "switch.switch.node");
	assert_true(q.policy.test_timeout_s == 2.5 && q.policy.test_min_bw == 0.25);
	assert_int_equal(q.policy.test_max_lat_us, 700);
	assert_int_equal(q.policy.test_port_lo, 230);
	assert_int_equal(q.policy.test_port_hi, 299);
	assert_true(q.policy.test_pairing_any);
	assert_string_equal(q.policy.test_transport, "socket");
	assert_int_equal(q.n_listen, 2);
	assert_int_equal(q.listen_ports[1], 263);
	assert_false(q.listen_bound[0]);
	assert_true(q.listen_bound[1]);
	assert_int_equal(q.n_ports, 2);
	assert_string_equal(q.ports[1].device, "mlx5_1");
	assert_int_equal(q.ports[0].gid_index, -1);
	assert_int_equal(q.ports[1].gid_index, 3);
	assert_int_equal(q.ports[1].link_layer, IBP_LL_ETH);
	assert_true(q.ports[1].rate_gbps == 400);
	assert_int_equal(q.ports[1].rail, 1);
	assert_string_equal(q.ports[1].addr, "172.30.1.12");
	assert_string_equal(q.ports[1].ifname, "ibp64s0");
	assert_string_equal(q.ports[0].ifname, "");
	assert_int_equal(q.ports[1].prefix, 24);
	/* Too small a buffer: -ENOSPC, never a partial frame. */
	assert_int_equal(ibp_pipe_plan_encode(&p, buf, 20), -ENOSPC);
}

/* consistency= and the node's fingerprint reach the child as they were. */
static void test_pipe_plan_carries_consistency_and_fingerprint(void **state)
{
	static struct ibp_pipe_plan p, q;
	int n, fpl;

	(void)state;
	sample_plan(&p);
	p.policy.consistency[IBP_CK_FIRMWARE] = IBP_SEV_FAIL;
	p.policy.consistency[IBP_CK_KERNEL] = IBP_CONSISTENCY_OFF;
	n = ibp_pipe_plan_encode(&p, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), 0);
	assert_false(q.has_fp);
	assert_memory_equal(q.policy.consistency, p.policy.consistency,
			    sizeof(p.policy.consistency));
	p.has_fp = true;
	ibp_fp_set(&p.fp, IBP_FP_FIRMWARE, "mlx5_3:1", "28.39.1002");
	ibp_fp_set(&p.fp, IBP_FP_NCCL_IB_HCA, NULL, "=mlx5_0:1");
	n = ibp_pipe_plan_encode(&p, buf, sizeof(buf));
	/* the fingerprint's compact form (1 + 2 entries), after its u16 length */
	fpl = 1 + (1 + 1 + 8 + 8 + 1 + 10) + (1 + 1 + 0 + 8 + 1 + 9);
	assert_int_equal(buf[n - fpl - 2], 0);
	assert_int_equal(buf[n - fpl - 1], fpl);
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), 0);
	assert_true(q.has_fp);
	assert_int_equal(q.fp.n, 2);
	assert_memory_equal(q.fp.e, p.fp.e, 2 * sizeof(q.fp.e[0]));
	/* a bad level or a damaged fingerprint: the whole plan is refused */
	buf[n - fpl - 2 - 1 - IBP_CK_N] = 7;
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), -EBADMSG);
	n = ibp_pipe_plan_encode(&p, buf, sizeof(buf));
	buf[n - fpl] = 0xff; /* the entry count */
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), -EBADMSG);
	assert_false(q.has_fp);
	/* a length that is not the fingerprint's: short, long, past the bound */
	n = ibp_pipe_plan_encode(&p, buf, sizeof(buf));
	buf[n - fpl - 1] = (uint8_t)(fpl - 1);
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), -EBADMSG);
	buf[n - fpl - 1] = (uint8_t)(fpl + 1);
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), -EBADMSG);
	buf[n - fpl - 2] = 0xff;
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), -EBADMSG);
}

static void test_pipe_plan_encode_refuses_what_decode_would(void **state)
{
	static struct ibp_pipe_plan p;

	(void)state;
	sample_plan(&p);
	snprintf(p.munge_socket, sizeof(p.munge_socket), "/tmp/a\nb");
	assert_int_equal(ibp_pipe_plan_encode(&p, buf, sizeof(buf)), -EBADMSG);
	sample_plan(&p);
	snprintf(p.topology_addr, sizeof(p.topology_addr), "spine.le\taf.n1");
	assert_int_equal(ibp_pipe_plan_encode(&p, buf, sizeof(buf)), -EBADMSG);
	sample_plan(&p);
	p.n_listen = IBP_PIPE_MAX_LISTEN + 1;
	assert_int_equal(ibp_pipe_plan_encode(&p, buf, sizeof(buf)), -EBADMSG);
	sample_plan(&p);
	p.policy.test_timeout_s = NAN;
	assert_int_equal(ibp_pipe_plan_encode(&p, buf, sizeof(buf)), -EBADMSG);
	sample_plan(&p);
	snprintf(p.policy.test_transport, sizeof(p.policy.test_transport), "tcp");
	assert_int_equal(ibp_pipe_plan_encode(&p, buf, sizeof(buf)), -EBADMSG);
	sample_plan(&p);
	p.listen_ports[0] = 0;
	assert_int_equal(ibp_pipe_plan_encode(&p, buf, sizeof(buf)), -EBADMSG);
}

static void sample_result(struct ibp_rdmatest_result *r, struct ibp_findings *f)
{
	memset(r, 0, sizeof(*r));
	r->pass = false;
	r->nnodes = 4;
	r->index = 1;
	r->oob_port = 241;
	r->n_summaries = 2;
	r->dropped = 7;
	r->dropped_outside = 5;
	r->dropped_peer = 2;
	r->inconclusive = true;
	r->setup_err = -ENOTCONN;
	snprintf(r->drop_reason, sizeof(r->drop_reason), "not a node of this step");
	r->elapsed_s = 0.125;
	r->n_suspects = 1;
	r->suspects[0] = 3;
	r->n_links = 2;
	for (size_t i = 0; i < 2; i++) {
		struct ibp_rdmatest_link *l = &r->links[i];

		l->from = 1;
		l->to = (uint32_t)(2 + i);
		l->round = (uint8_t)(1 + i);
		l->status = i ? IBP_LINK_AUTH : IBP_LINK_PASS;
		l->err = i ? -EACCES : 0;
		snprintf(l->device, sizeof(l->device), "mlx5_0");
		l->port = 1;
		l->gbps = 350.5;
		l->lat_us = 3.25;
		l->expect_gbps = 40;
		snprintf(l->detail, sizeof(l->detail), "%s",
			 i ? "frames failed authentication" : "");
	}
	ibp_findings_init(f);
	ibp_findings_addf(f, "rdmatest_link_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, "mlx5_0", 1,
			  "pass", "check the cable", "link to n4 failed: \x01stranger\xff text");
}

static void test_pipe_result_round_trip_cleans_text(void **state)
{
	static struct ibp_rdmatest_result r, q;
	struct ibp_findings f, g;
	int n;

	(void)state;
	sample_result(&r, &f);
	n = ibp_pipe_result_encode(&r, &f, buf, sizeof(buf));
	assert_true(n > IBP_PIPE_HDR_LEN);
	ibp_findings_init(&g);
	assert_int_equal(ibp_pipe_result_decode(buf, (size_t)n, &q, &g), 0);
	assert_false(q.pass);
	assert_int_equal(q.nnodes, 4);
	assert_int_equal(q.index, 1);
	assert_int_equal(q.oob_port, 241);
	assert_int_equal(q.dropped, 7);
	assert_int_equal(q.dropped_outside, 5);
	assert_int_equal(q.dropped_peer, 2);
	assert_true(q.inconclusive);
	assert_int_equal(q.setup_err, -ENOTCONN);
	assert_string_equal(q.drop_reason, "not a node of this step");
	assert_true(q.elapsed_s == 0.125);
	assert_int_equal(q.n_suspects, 1);
	assert_int_equal(q.suspects[0], 3);
	assert_int_equal(q.n_links, 2);
	assert_int_equal(q.links[1].status, IBP_LINK_AUTH);
	assert_int_equal(q.links[1].err, -EACCES);
	assert_true(q.links[0].gbps == 350.5 && q.links[0].lat_us == 3.25);
	assert_string_equal(q.links[1].detail, "frames failed authentication");
	assert_int_equal(g.n, 1);
	assert_string_equal(g.v[0].code, "rdmatest_link_failed");
	assert_int_equal(g.v[0].severity, IBP_SEV_FAIL);
	assert_string_equal(g.v[0].device, "mlx5_0");
	/* A stranger's bytes quoted in a finding reach the parent as printable ASCII. */
	assert_string_equal(g.v[0].observed, "link to n4 failed: ?stranger? text");
	ibp_findings_release(&f);
	ibp_findings_release(&g);
}

static void test_pipe_result_too_many_findings_cut_and_said(void **state)
{
	static struct ibp_rdmatest_result r, q;
	struct ibp_findings f, g;
	int n;

	(void)state;
	memset(&r, 0, sizeof(r));
	ibp_findings_init(&f);
	ibp_findings_init(&g);
	for (int i = 0; i < IBP_PIPE_MAX_FINDINGS + 10; i++)
		ibp_findings_addf(&f, "x", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0, NULL, NULL, "%d",
				  i);
	n = ibp_pipe_result_encode(&r, &f, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(ibp_pipe_result_decode(buf, (size_t)n, &q, &g), 0);
	assert_int_equal(g.n, IBP_PIPE_MAX_FINDINGS);
	assert_string_equal(g.v[g.n - 1].code, "rdmatest_findings_cut");
	assert_non_null(strstr(g.v[g.n - 1].observed, "11 more findings"));
	ibp_findings_release(&f);
	ibp_findings_release(&g);
}

/* Offsets into the sample result frame (after the 12-byte header). */
#define R_PASS   12
#define R_NNODES 14
#define R_INDEX  18

static int decode_mutated(size_t off, uint8_t val, size_t len_delta, struct ibp_findings *g)
{
	static struct ibp_rdmatest_result r, q;
	static uint8_t m[IBP_PIPE_FRAME_MAX];
	struct ibp_findings f;
	int n;

	sample_result(&r, &f);
	n = ibp_pipe_result_encode(&r, &f, m, sizeof(m));
	ibp_findings_release(&f);
	assert_true(n > 0);
	if (off < (size_t)n)
		m[off] = val;
	return ibp_pipe_result_decode(m, (size_t)n - len_delta, &q, g);
}

static void test_pipe_result_decoder_refuses_bad_frames(void **state)
{
	struct ibp_findings g;

	(void)state;
	ibp_findings_init(&g);
	assert_int_equal(decode_mutated(SIZE_MAX, 0, 0, &g), 0);
	assert_int_equal(g.n, 1);
	ibp_findings_release(&g);
	ibp_findings_init(&g);
	assert_int_equal(decode_mutated(0, 'X', 0, &g), -EBADMSG);           /* magic */
	assert_int_equal(decode_mutated(5, 9, 0, &g), -EPROTONOSUPPORT);     /* version */
	assert_int_equal(decode_mutated(7, IBP_PIPE_PLAN, 0, &g), -EBADMSG); /* type */
	assert_int_equal(decode_mutated(11, 0, 0, &g), -EBADMSG);            /* length */
	assert_int_equal(decode_mutated(R_PASS, 2, 0, &g), -EBADMSG);        /* bool */
	assert_int_equal(decode_mutated(R_NNODES, 0xff, 0, &g), -EBADMSG);   /* > max nodes */
	assert_int_equal(decode_mutated(R_INDEX + 3, 9, 0, &g), -EBADMSG);   /* index >= nnodes */
	assert_int_equal(decode_mutated(SIZE_MAX, 0, 1, &g), -EBADMSG);      /* truncated */
	assert_int_equal(g.n, 0); /* nothing appended on any error */
	ibp_findings_release(&g);
}

/* Every single-byte change and every truncation: no crash, nothing half-appended. */
static void test_pipe_result_every_byte_mutation_safe(void **state)
{
	static struct ibp_rdmatest_result r, q;
	static uint8_t m[IBP_PIPE_FRAME_MAX], orig[IBP_PIPE_FRAME_MAX];
	struct ibp_findings f, g;
	int n;

	(void)state;
	sample_result(&r, &f);
	n = ibp_pipe_result_encode(&r, &f, orig, sizeof(orig));
	ibp_findings_release(&f);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		static const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};

		for (size_t v = 0; v < sizeof(vals); v++) {
			int rc;

			memcpy(m, orig, (size_t)n);
			m[i] = vals[v];
			ibp_findings_init(&g);
			rc = ibp_pipe_result_decode(m, (size_t)n, &q, &g);
			if (rc)
				assert_int_equal(g.n, 0);
			else
				assert_true(q.nnodes <= IBP_OOB_MAX_NODES && g.n <= 1);
			ibp_findings_release(&g);
		}
		ibp_findings_init(&g);
		assert_int_not_equal(ibp_pipe_result_decode(orig, (size_t)i, &q, &g), 0);
		assert_int_equal(g.n, 0);
		ibp_findings_release(&g);
	}
}

static void test_pipe_plan_decoder_refuses_bad_frames(void **state)
{
	static struct ibp_pipe_plan p, q;
	int n;

	(void)state;
	sample_plan(&p);
	n = ibp_pipe_plan_encode(&p, buf, sizeof(buf));
	assert_true(n > 0);
	/* A result frame is not a plan. */
	buf[7] = IBP_PIPE_RESULT;
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), -EBADMSG);
	buf[7] = IBP_PIPE_PLAN;
	/* Trailing bytes. */
	buf[n] = 0;
	buf[11]++;
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n + 1, &q), -EBADMSG);
	buf[11]--;
	/* mode 2 */
	buf[IBP_PIPE_HDR_LEN + 16] = 2;
	assert_int_equal(ibp_pipe_plan_decode(buf, (size_t)n, &q), -EBADMSG);
	assert_string_equal(q.nodelist, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pipe_plan_round_trip),
	    cmocka_unit_test(test_pipe_plan_carries_consistency_and_fingerprint),
	    cmocka_unit_test(test_pipe_plan_encode_refuses_what_decode_would),
	    cmocka_unit_test(test_pipe_plan_decoder_refuses_bad_frames),
	    cmocka_unit_test(test_pipe_result_round_trip_cleans_text),
	    cmocka_unit_test(test_pipe_result_too_many_findings_cut_and_said),
	    cmocka_unit_test(test_pipe_result_decoder_refuses_bad_frames),
	    cmocka_unit_test(test_pipe_result_every_byte_mutation_safe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
