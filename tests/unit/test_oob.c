/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the cross-node test's wire format and framed I/O
 * (helpers/rdmatest/oob.c), the deadline arithmetic (deadline.h), the credential
 * payload (helpers/rdmatest/auth.c) and the test pattern (helpers/rdmatest/transport_socket.c).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/auth.h"
#include "ibprep/deadline.h"
#include "ibprep/oob.h"
#include "ibprep/transport.h"

/*
 * The large contents the messages below point at, kept as a caller keeps
 * them (struct ibp_oob_msg holds the small ones only), and where a decoded
 * frame's go: DEST() is a message with a place for every type.
 */
static struct ibp_oob_summary summary_store, summary_out;
static struct ibp_fp fp_store, fp_out;
static struct ibp_oob_fpsum fpsum_store, fpsum_out;

static struct ibp_oob_msg dest(void)
{
	return (struct ibp_oob_msg){
	    .summary = &summary_out, .fingerprint = &fp_out, .fpsum = &fpsum_out};
}

static struct ibp_oob_msg hello(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_HELLO};

	m.u.hello.job = 1234;
	m.u.hello.step = 5;
	m.u.hello.uid = 1000;
	m.u.hello.from = 3;
	m.u.hello.to = 4;
	m.u.hello.nnodes = 16;
	m.u.hello.round = 1;
	m.u.hello.rail = 2;
	m.u.hello.n_rails = 4;
	m.u.hello.nonce = 0x1122334455667788ull;
	m.u.hello.cred_len = 6;
	memcpy(m.u.hello.cred, "MUNGE:", 6);
	return m;
}

static struct ibp_oob_msg endpoint(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_ENDPOINT};

	m.u.endpoint.rail = 1;
	m.u.endpoint.port = 1;
	strcpy(m.u.endpoint.device, "mlx5_3");
	strcpy(m.u.endpoint.leaf, "leaf07");
	m.u.endpoint.ep.kind = IBP_TX_VERBS;
	m.u.endpoint.ep.link_layer = IBP_LL_ETH;
	m.u.endpoint.ep.qpn = 0x123456;
	m.u.endpoint.ep.psn = 0xabcdef;
	m.u.endpoint.ep.mtu = 4096;
	m.u.endpoint.ep.rkey = 0xdeadbeef;
	m.u.endpoint.ep.gid_index = 3;
	m.u.endpoint.ep.addr = 0x7f0012345678ull;
	m.u.endpoint.ep.buf_len = 1 << 20;
	m.u.endpoint.ep.rate_mbps = 400000;
	for (int i = 0; i < IBP_TX_GID_LEN; i++)
		m.u.endpoint.ep.gid[i] = (uint8_t)(0xf0 + i);
	return m;
}

static struct ibp_oob_msg summary(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_SUMMARY, .summary = &summary_store};
	struct ibp_oob_summary *s = &summary_store;

	memset(s, 0, sizeof(*s));
	s->node = 7;
	s->nnodes = 10;
	s->n_links = 2;
	s->links[0] = (struct ibp_oob_link){7, 8, 1, IBP_LINK_PASS, 0};
	s->links[1] = (struct ibp_oob_link){5, 7, 2, IBP_LINK_CORRUPT, 0};
	s->plan = 0x1234567890abcdefull;
	s->n_leaves = 2;
	s->leaves[0].node = 7;
	strcpy(s->leaves[0].name, "leaf07");
	s->leaves[1].node = 5;
	strcpy(s->leaves[1].name, "leaf03");
	return m;
}

static struct ibp_oob_msg ctrl(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_CTRL};

	m.u.ctrl.op = IBP_CTRL_PATTERN_RESULT;
	m.u.ctrl.status = -EBADMSG;
	m.u.ctrl.a = 12345;
	m.u.ctrl.b = 1;
	return m;
}

/* MEASURE_AGAIN: this rail measured again, the second measurement (rdmatest_link.c) */
static struct ibp_oob_msg measure_again(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_CTRL};

	m.u.ctrl.op = IBP_CTRL_MEASURE_AGAIN;
	m.u.ctrl.a = 1;
	m.u.ctrl.b = 2;
	return m;
}

static struct ibp_oob_msg error_msg(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_ERROR};

	m.u.error.code = -EACCES;
	strcpy(m.u.error.text, "credential is for job 12, expected 13");
	return m;
}

/* A node's fingerprint as a DGX node sends it, cut short: 3 of its entries. */
static struct ibp_oob_msg fingerprint(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_FINGERPRINT, .fingerprint = &fp_store};

	memset(&fp_store, 0, sizeof(fp_store));
	ibp_fp_set(&fp_store, IBP_FP_HCA_SET, NULL, "2 rails: mlx5_0:1,mlx5_3:1");
	ibp_fp_set(&fp_store, IBP_FP_FIRMWARE, "mlx5_3:1", "28.39.1002");
	ibp_fp_set(&fp_store, IBP_FP_NCCL_IB_HCA, NULL, NULL);
	return m;
}

/* Bytes of FP's compact payload (fingerprint.h). */
static size_t fp_wire_len(const struct ibp_fp *fp)
{
	size_t n = 1;

	for (size_t i = 0; i < fp->n; i++)
		n += 1 + 1 + strlen(fp->e[i].rail) + 8 + 1 + strlen(fp->e[i].value);
	return n;
}

/*
 * Bytes of M's payload, each frame at its own length (oob.h): the fixed
 * fields, then each string as its length byte and its bytes, each table
 * as its count and its entries.
 */
static size_t wire_len(const struct ibp_oob_msg *m)
{
	size_t n = 0;

	switch (m->type) {
	case IBP_OOB_HELLO:
		return 6 * 4 + 1 + 1 + 2 + 1 + 8 + 8 + 2 + m->u.hello.cred_len;
	case IBP_OOB_ENDPOINT:
		return 2 + 4 + 1 + strlen(m->u.endpoint.device) + IBP_OOB_EP_LEN + 1 +
		       strlen(m->u.endpoint.leaf);
	case IBP_OOB_SUMMARY:
		for (size_t i = 0; i < m->summary->n_leaves; i++)
			n += 4 + 1 + strlen(m->summary->leaves[i].name);
		return 4 + 4 + 8 + 1 + 12 * (size_t)m->summary->n_links + 1 + n;
	case IBP_OOB_CTRL:
		return 1 + 4 + 8 + 8;
	case IBP_OOB_ERROR:
		return 4 + 1 + strlen(m->u.error.text);
	case IBP_OOB_FINGERPRINT:
		return fp_wire_len(m->fingerprint);
	default:
		return 0;
	}
}

/* What a message of TYPE holds, and how long it is in memory. */
static const void *content(const struct ibp_oob_msg *m, size_t *len)
{
	switch (m->type) {
	case IBP_OOB_SUMMARY:
		*len = sizeof(*m->summary);
		return m->summary;
	case IBP_OOB_FINGERPRINT:
		*len = sizeof(*m->fingerprint);
		return m->fingerprint;
	case IBP_OOB_HELLO:
		*len = sizeof(m->u.hello);
		break;
	case IBP_OOB_ENDPOINT:
		*len = sizeof(m->u.endpoint);
		break;
	case IBP_OOB_CTRL:
		*len = sizeof(m->u.ctrl);
		break;
	default:
		*len = sizeof(m->u.error);
	}
	return &m->u;
}

/*
 * Every message type survives encode -> decode unchanged, each at its own
 * length; the common struct is under 1 KB (the large contents are the
 * caller's, by pointer).
 */
static void test_oob_roundtrip_every_type_identical(void **state)
{
	struct ibp_oob_msg (*make[])(void) = {hello,     endpoint,      summary,    ctrl,
					      error_msg, measure_again, fingerprint};

	(void)state;
	assert_true(sizeof(struct ibp_oob_msg) < 1024);
	for (size_t i = 0; i < sizeof(make) / sizeof(make[0]); i++) {
		struct ibp_oob_msg in = make[i](), out = dest();
		uint8_t buf[IBP_OOB_FRAME_MAX];
		int n = ibp_oob_encode(&in, buf, sizeof(buf));
		size_t len, out_len;
		const void *a, *b;

		assert_int_equal(n, IBP_OOB_HDR_LEN + wire_len(&in));
		/* garbage where it goes: the decoder clears what it fills */
		memset(&out.u, 0xa5, sizeof(out.u));
		memset(&summary_out, 0xa5, sizeof(summary_out));
		memset(&fp_out, 0xa5, sizeof(fp_out));
		assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), n);
		assert_int_equal(out.type, in.type);
		a = content(&in, &len);
		b = content(&out, &out_len);
		assert_int_equal(len, out_len);
		assert_memory_equal(b, a, len);
	}
}

/*
 * A SUMMARY, FINGERPRINT or FPSUM where the reader has no place for one:
 * its header is checked, its type said, its payload not read (-ENOBUFS);
 * the small types need none.
 */
static void test_oob_content_without_a_place_not_decoded(void **state)
{
	struct ibp_oob_msg (*make[])(void) = {summary, fingerprint};
	uint8_t buf[IBP_OOB_FRAME_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(make) / sizeof(make[0]); i++) {
		struct ibp_oob_msg in = make[i](), out = {0};
		int n = ibp_oob_encode(&in, buf, sizeof(buf));

		assert_true(n > 0);
		buf[n - 1] ^= 0xff; /* even a payload that would not decode */
		assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), -ENOBUFS);
		assert_int_equal(out.type, in.type);
		assert_null(out.summary);
		assert_null(out.fingerprint);
		/* ... but a header that lies is refused as such */
		buf[11] ^= 0x80;
		assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), -EBADMSG);
	}
	/* the checker and the encoder want the content */
	assert_int_equal(ibp_oob_msg_check(&(struct ibp_oob_msg){.type = IBP_OOB_SUMMARY}),
			 -EBADMSG);
	assert_int_equal(
	    ibp_oob_encode(&(struct ibp_oob_msg){.type = IBP_OOB_FPSUM}, buf, sizeof(buf)),
	    -EBADMSG);
}

/* The step-wide sum's own connection opens with a HELLO of round 3, on rail 0 only. */
static void test_oob_ring_hello_rail0_roundtrips(void **state)
{
	struct ibp_oob_msg in = hello(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX];
	int n;

	(void)state;
	in.u.hello.round = IBP_OOB_RING_ROUND;
	in.u.hello.rail = 0;
	n = ibp_oob_encode(&in, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), n);
	assert_int_equal(out.u.hello.round, IBP_OOB_RING_ROUND);
	in.u.hello.rail = 1;
	assert_int_equal(ibp_oob_encode(&in, buf, sizeof(buf)), -EBADMSG);
}

static void test_oob_encode_small_buffer_enospc(void **state)
{
	struct ibp_oob_msg m = hello();
	uint8_t buf[64];

	(void)state;
	assert_int_equal(ibp_oob_encode(&m, buf, sizeof(buf)), -ENOSPC);
}

/*
 * Field mutations: each must be refused by the check the encoder and the
 * decoder share (the decoder runs it on what it parsed; the byte-level test
 * below feeds it such frames directly).
 */
struct mutation {
	const char *name;
	struct ibp_oob_msg (*make)(void);
	void (*mutate)(struct ibp_oob_msg *m);
};

#define MUT(fn, body)                                                                              \
	static void fn(struct ibp_oob_msg *m)                                                      \
	{                                                                                          \
		body;                                                                              \
	}
MUT(h_nnodes0, m->u.hello.nnodes = 0)
MUT(h_nnodes_big, m->u.hello.nnodes = IBP_OOB_MAX_NODES + 1)
MUT(h_from_range, m->u.hello.from = 16)
MUT(h_to_range, m->u.hello.to = 99)
MUT(h_self, m->u.hello.to = m->u.hello.from)
MUT(h_round0, m->u.hello.round = 0)
MUT(h_round_ring_rail, m->u.hello.round = IBP_OOB_RING_ROUND) /* the ring's, on rail 2 */
MUT(h_round4, m->u.hello.round = IBP_OOB_RING_ROUND + 1)
MUT(h_noring_round1, m->u.hello.flags = IBP_HELLO_REPLY | IBP_HELLO_NO_RING)
MUT(h_noring_hello, (m->u.hello.round = IBP_OOB_RING_ROUND, m->u.hello.rail = 0,
		     m->u.hello.flags = IBP_HELLO_NO_RING))
MUT(h_flags, m->u.hello.flags = 0x80)
MUT(h_rails0, m->u.hello.n_rails = 0)
MUT(h_rails_big, m->u.hello.n_rails = IBP_OOB_MAX_RAILS + 1)
MUT(h_rail_beyond, m->u.hello.rail = 4)
MUT(h_credlen_big, m->u.hello.cred_len = IBP_OOB_CRED_MAX)
MUT(h_cred_nonprint, m->u.hello.cred[2] = '\n')
MUT(h_cred_space, m->u.hello.cred[0] = ' ')
MUT(h_cred_past_nul, m->u.hello.cred_len = 10) /* "MUNGE:" and 4 NULs */
MUT(h_nocred, (m->u.hello.cred_len = 0, memset(m->u.hello.cred, 0, 8)))
MUT(h_insecure_with_cred, m->u.hello.flags = IBP_HELLO_INSECURE)
MUT(e_kind0, m->u.endpoint.ep.kind = 0)
MUT(e_kind3, m->u.endpoint.ep.kind = 3)
MUT(e_ll, m->u.endpoint.ep.link_layer = 7)
MUT(e_qpn, m->u.endpoint.ep.qpn = 0x1000000)
MUT(e_psn, m->u.endpoint.ep.psn = 0xffffffff)
MUT(e_mtu, m->u.endpoint.ep.mtu = 1500)
MUT(e_gid_index, m->u.endpoint.ep.gid_index = 70000)
MUT(e_port, m->u.endpoint.port = 256)
MUT(e_dev_nonul, memset(m->u.endpoint.device, 'a', IBP_DEV_MAX))
MUT(e_dev_ctrl, m->u.endpoint.device[1] = 0x1b)
MUT(e_leaf_nonul, memset(m->u.endpoint.leaf, 'a', IBP_OOB_LEAF_MAX))
MUT(e_leaf_ctrl, m->u.endpoint.leaf[2] = '\n')
MUT(s_nleaves, m->summary->n_leaves = IBP_OOB_MAX_LEAVES + 1)
MUT(s_leaf_range, m->summary->leaves[1].node = 10)
MUT(s_leaf_empty, m->summary->leaves[1].name[0] = 0)
MUT(s_leaf_ctrl, m->summary->leaves[0].name[0] = 0x7f)
MUT(c_op0, m->u.ctrl.op = 0)
MUT(c_op_big, m->u.ctrl.op = IBP_CTRL_OP_COUNT)
MUT(c_status_pos, m->u.ctrl.status = 5)
MUT(c_status_small, m->u.ctrl.status = -5000)
MUT(s_nlinks, m->summary->n_links = IBP_OOB_MAX_LINKS + 1)
MUT(s_node_range, m->summary->node = 10)
MUT(s_nnodes0, m->summary->nnodes = 0)
MUT(s_link_status, m->summary->links[0].status = IBP_LINK_STATUS_COUNT)
MUT(s_link_round, m->summary->links[1].round = 0)
MUT(s_link_range, m->summary->links[0].to = 10)
MUT(s_link_self, m->summary->links[0].to = 7)
MUT(s_link_foreign, (m->summary->links[0].from = 1, m->summary->links[0].to = 2))
MUT(x_code_pos, m->u.error.code = 1)
MUT(x_text_nonul, memset(m->u.error.text, 'a', IBP_OOB_TEXT_MAX))
MUT(x_text_ctrl, m->u.error.text[3] = '\t')
MUT(t_type0, m->type = 0)
MUT(t_type_big, m->type = 99)

static const struct mutation mutations[] = {
    {"hello nnodes 0", hello, h_nnodes0},
    {"hello nnodes too big", hello, h_nnodes_big},
    {"hello from out of range", hello, h_from_range},
    {"hello to out of range", hello, h_to_range},
    {"hello to itself", hello, h_self},
    {"hello round 0", hello, h_round0},
    {"hello ring round on another rail than 0", hello, h_round_ring_rail},
    {"hello round 4", hello, h_round4},
    {"hello 'no part in the sum' for a link", hello, h_noring_round1},
    {"hello 'no part in the sum' not in a reply", hello, h_noring_hello},
    {"hello unknown flag", hello, h_flags},
    {"hello no rails", hello, h_rails0},
    {"hello too many rails", hello, h_rails_big},
    {"hello rail beyond its rail count", hello, h_rail_beyond},
    {"hello cred_len over the field", hello, h_credlen_big},
    {"hello cred with newline", hello, h_cred_nonprint},
    {"hello cred with space", hello, h_cred_space},
    {"hello cred_len past the credential", hello, h_cred_past_nul},
    {"hello secure without credential", hello, h_nocred},
    {"hello insecure with credential", hello, h_insecure_with_cred},
    {"endpoint kind 0", endpoint, e_kind0},
    {"endpoint kind 3", endpoint, e_kind3},
    {"endpoint link layer", endpoint, e_ll},
    {"endpoint qpn 25 bits", endpoint, e_qpn},
    {"endpoint psn 32 bits", endpoint, e_psn},
    {"endpoint mtu 1500", endpoint, e_mtu},
    {"endpoint gid index", endpoint, e_gid_index},
    {"endpoint port 256", endpoint, e_port},
    {"endpoint device without NUL", endpoint, e_dev_nonul},
    {"endpoint device with ESC", endpoint, e_dev_ctrl},
    {"endpoint leaf without NUL", endpoint, e_leaf_nonul},
    {"endpoint leaf with newline", endpoint, e_leaf_ctrl},
    {"summary too many leaves", summary, s_nleaves},
    {"summary leaf node out of range", summary, s_leaf_range},
    {"summary leaf without a name", summary, s_leaf_empty},
    {"summary leaf name with DEL", summary, s_leaf_ctrl},
    {"ctrl op 0", ctrl, c_op0},
    {"ctrl op past the last", ctrl, c_op_big},
    {"ctrl positive status", ctrl, c_status_pos},
    {"ctrl status below -4095", ctrl, c_status_small},
    {"summary too many links", summary, s_nlinks},
    {"summary node out of range", summary, s_node_range},
    {"summary nnodes 0", summary, s_nnodes0},
    {"summary link status", summary, s_link_status},
    {"summary link round 0", summary, s_link_round},
    {"summary link out of range", summary, s_link_range},
    {"summary link to itself", summary, s_link_self},
    {"summary link not the node's", summary, s_link_foreign},
    {"error positive code", error_msg, x_code_pos},
    {"error text without NUL", error_msg, x_text_nonul},
    {"error text with tab", error_msg, x_text_ctrl},
    {"type 0", hello, t_type0},
    {"type 99", hello, t_type_big},
};

static void test_oob_every_malformed_field_refused(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(mutations) / sizeof(mutations[0]); i++) {
		struct ibp_oob_msg good = mutations[i].make(), bad = good, out = dest();
		struct ibp_oob_summary bad_summary;
		uint8_t buf[IBP_OOB_FRAME_MAX];
		int n;

		/* a content of its own to mutate, not the good one's */
		if (good.summary) {
			bad_summary = *good.summary;
			bad.summary = &bad_summary;
		}
		mutations[i].mutate(&bad);
		print_message("# %s\n", mutations[i].name);
		assert_int_equal(ibp_oob_msg_check(&bad), -EBADMSG);
		assert_int_equal(ibp_oob_encode(&bad, buf, sizeof(buf)), -EBADMSG);
		/* The good original still passes: the mutation alone is refused. */
		n = ibp_oob_encode(&good, buf, sizeof(buf));
		assert_true(n > 0);
		assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), n);
	}
}

/* Sets the header's payload length of the frame at BUF. */
static void put_version(uint8_t *buf, unsigned v)
{
	buf[4] = (uint8_t)(v >> 8);
	buf[5] = (uint8_t)v;
}

static void set_plen(uint8_t *buf, size_t plen)
{
	buf[8] = (uint8_t)(plen >> 24);
	buf[9] = (uint8_t)(plen >> 16);
	buf[10] = (uint8_t)(plen >> 8);
	buf[11] = (uint8_t)plen;
}

/*
 * A header whose length is wrong for its type, for every type: one byte
 * under its shortest payload and one over its longest.  Refused from the
 * header alone (-EBADMSG, before a byte of payload is read), and the
 * refusal names the type, the length and the type's bounds.
 */
static void test_oob_wrong_length_for_type_refused_naming_it(void **state)
{
	static const struct {
		unsigned type;
		const char *name;
		size_t min, max;
	} types[] = {
	    {IBP_OOB_HELLO, "HELLO", IBP_OOB_HELLO_MIN, IBP_OOB_HELLO_MAX},
	    {IBP_OOB_ENDPOINT, "ENDPOINT", IBP_OOB_ENDPOINT_MIN, IBP_OOB_ENDPOINT_MAX},
	    {IBP_OOB_CTRL, "CTRL", IBP_OOB_CTRL_LEN, IBP_OOB_CTRL_LEN},
	    {IBP_OOB_SUMMARY, "SUMMARY", IBP_OOB_SUMMARY_MIN, IBP_OOB_SUMMARY_MAX},
	    {IBP_OOB_ERROR, "ERROR", IBP_OOB_ERROR_MIN, IBP_OOB_ERROR_MAX},
	    {IBP_OOB_FINGERPRINT, "FINGERPRINT", IBP_FP_WIRE_MIN, IBP_FP_WIRE_MAX},
	    {IBP_OOB_FPSUM, "FPSUM", IBP_OOB_FPSUM_HEAD_LEN, IBP_OOB_FPSUM_MAX},
	    {IBP_OOB_BATCH, "BATCH", IBP_OOB_BATCH_MIN, IBP_OOB_BATCH_MAX},
	};
	struct ibp_oob_msg out = dest();
	uint8_t hdr[IBP_OOB_HDR_LEN];
	char why[IBP_OOB_TEXT_MAX], want[IBP_OOB_TEXT_MAX];
	unsigned type;
	size_t plen;

	(void)state;
	assert_int_equal(sizeof(types) / sizeof(types[0]), IBP_OOB_BATCH); /* every type */
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		const size_t bad[] = {types[i].min - 1, types[i].max + 1};

		assert_string_equal(ibp_oob_type_name(types[i].type), types[i].name);
		assert_int_equal(ibp_oob_payload_min(types[i].type), types[i].min);
		assert_int_equal(ibp_oob_payload_max(types[i].type), types[i].max);
		for (size_t j = 0; j < 2; j++) {
			memcpy(hdr, "IBPT", 4);
			put_version(hdr, IBP_OOB_VERSION);
			hdr[6] = 0;
			hdr[7] = (uint8_t)types[i].type;
			set_plen(hdr, bad[j]);
			assert_int_equal(ibp_oob_decode_header(hdr, sizeof(hdr), &type, &plen),
					 -EBADMSG);
			/* the frame's bytes never matter: refused at its header */
			assert_int_equal(ibp_oob_decode(hdr, sizeof(hdr), &out), -EBADMSG);
			assert_int_equal(ibp_oob_header_why(hdr, sizeof(hdr), why, sizeof(why)),
					 -EBADMSG);
			if (types[i].min == types[i].max)
				snprintf(want, sizeof(want),
					 "%s frame of %zu payload bytes, %s takes %zu",
					 types[i].name, bad[j], types[i].name, types[i].min);
			else
				snprintf(want, sizeof(want),
					 "%s frame of %zu payload bytes, %s takes %zu to %zu",
					 types[i].name, bad[j], types[i].name, types[i].min,
					 types[i].max);
			assert_string_equal(why, want);
		}
	}
	/* the other refusals of a header, each named */
	hdr[7] = IBP_OOB_BATCH + 1;
	assert_int_equal(ibp_oob_header_why(hdr, sizeof(hdr), why, sizeof(why)), -EBADMSG);
	assert_null(ibp_oob_type_name(IBP_OOB_BATCH + 1));
	assert_null(ibp_oob_type_name(0));
	snprintf(want, sizeof(want), "a frame of type %u, which does not exist", IBP_OOB_BATCH + 1);
	assert_string_equal(why, want);
	hdr[7] = IBP_OOB_CTRL;
	set_plen(hdr, IBP_OOB_CTRL_LEN);
	assert_int_equal(ibp_oob_header_why(hdr, sizeof(hdr), why, sizeof(why)), 0);
	assert_string_equal(why, "");
	put_version(hdr, IBP_OOB_VERSION - 1);
	assert_int_equal(ibp_oob_header_why(hdr, sizeof(hdr), why, sizeof(why)), -EPROTONOSUPPORT);
	snprintf(want, sizeof(want), "a frame of protocol %u, expected %u", IBP_OOB_VERSION - 1,
		 IBP_OOB_VERSION);
	assert_string_equal(why, want);
	hdr[0] = 'X';
	assert_int_equal(ibp_oob_header_why(hdr, sizeof(hdr), why, sizeof(why)), -EBADMSG);
	assert_string_equal(why, "not a frame of this test (it starts 58425054)");
	assert_int_equal(ibp_oob_header_why(hdr, 5, why, sizeof(why)), -EBADMSG);
	assert_string_equal(why, "a header of 5 bytes, expected 12");
}

/* Byte-level corruption of good frames: header fields, lengths and counts. */
static void test_oob_decode_bad_frames_refused(void **state)
{
	struct ibp_oob_msg m = hello(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX], bad[IBP_OOB_FRAME_MAX];
	/* the credential's length (header + 6 words + 5 bytes + 2 nonces) */
	const size_t cred_len_at = IBP_OOB_HDR_LEN + 24 + 5 + 16;
	/* the summary's link count, and its first leaf's name length */
	const size_t n_links_at = IBP_OOB_HDR_LEN + 16;
	const size_t leaf_name_at = n_links_at + 1 + 2 * IBP_OOB_LINK_LEN + 1 + 4;
	int n;

	(void)state;
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	/* magic */
	memcpy(bad, buf, (size_t)n);
	bad[0] ^= 0xff;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* version */
	memcpy(bad, buf, (size_t)n);
	bad[5] = 1; /* the first version, before frames were sealed */
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EPROTONOSUPPORT);
	/* type of another size */
	memcpy(bad, buf, (size_t)n);
	bad[7] = IBP_OOB_CTRL;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* length that lies */
	memcpy(bad, buf, (size_t)n);
	bad[11] ^= 1;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* truncated: header only, and one byte short */
	assert_int_equal(ibp_oob_decode(buf, IBP_OOB_HDR_LEN - 1, &out), -EBADMSG);
	assert_int_equal(ibp_oob_decode(buf, (size_t)n - 1, &out), -EBADMSG);
	/* round 9 on the wire (offset: header + 6 words) */
	memcpy(bad, buf, (size_t)n);
	bad[IBP_OOB_HDR_LEN + 24] = 9;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* a credential length past the frame, and one short of it */
	memcpy(bad, buf, (size_t)n);
	bad[cred_len_at + 1]++;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	bad[cred_len_at + 1] -= 2;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* a byte after the credential */
	memcpy(bad, buf, (size_t)n);
	set_plen(bad, (size_t)n - IBP_OOB_HDR_LEN + 1);
	bad[n] = 'z';
	assert_int_equal(ibp_oob_decode(bad, (size_t)n + 1, &out), -EBADMSG);
	/* the endpoint's device: a length past its field, a NUL inside */
	m = endpoint();
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	memcpy(bad, buf, (size_t)n);
	bad[IBP_OOB_HDR_LEN + 6] = IBP_DEV_MAX;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	memcpy(bad, buf, (size_t)n);
	bad[IBP_OOB_HDR_LEN + 6 + 1 + 2] = 0;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* the error's text: a NUL inside, a length past the frame */
	m = error_msg();
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	memcpy(bad, buf, (size_t)n);
	bad[n - 2] = 0;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	memcpy(bad, buf, (size_t)n);
	bad[IBP_OOB_HDR_LEN + 4]++;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* the summary: more links than its bytes, more than 64, a leaf name of 0 bytes */
	m = summary();
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	memcpy(bad, buf, (size_t)n);
	bad[n_links_at] = 3;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	bad[n_links_at] = IBP_OOB_MAX_LINKS + 1;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	memcpy(bad, buf, (size_t)n);
	assert_int_equal(bad[leaf_name_at], strlen("leaf07"));
	bad[leaf_name_at] = 0;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* ... more leaves than 5 */
	memcpy(bad, buf, (size_t)n);
	bad[leaf_name_at - 5] = IBP_OOB_MAX_LEAVES + 1;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
}

/*
 * A payload has any length within its type's bounds (CTRL has one), and
 * must be consumed exactly.
 */
static void test_oob_variable_length_bounds_and_exact_consumption(void **state)
{
	struct ibp_oob_msg m = fingerprint(), out = dest();
	struct ibp_fp empty = {0};
	uint8_t buf[IBP_OOB_FRAME_MAX + 1], bad[IBP_OOB_FRAME_MAX + 1];
	unsigned type;
	size_t plen;
	int n;

	(void)state;
	assert_int_equal(ibp_oob_payload_min(IBP_OOB_FINGERPRINT), IBP_FP_WIRE_MIN);
	assert_int_equal(ibp_oob_payload_max(IBP_OOB_FINGERPRINT), IBP_FP_WIRE_MAX);
	assert_int_equal(ibp_oob_payload_min(IBP_OOB_CTRL), ibp_oob_payload_max(IBP_OOB_CTRL));
	assert_int_equal(ibp_oob_payload_min(IBP_OOB_HELLO), IBP_OOB_HELLO_MIN);
	assert_int_equal(ibp_oob_payload_max(IBP_OOB_HELLO),
			 IBP_OOB_HELLO_MIN + IBP_OOB_CRED_MAX - 1);
	assert_int_equal(ibp_oob_payload_min(IBP_OOB_SUMMARY), IBP_OOB_SUMMARY_MIN);
	assert_int_equal(ibp_oob_payload_min(99), 0);
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_int_equal(n, IBP_OOB_HDR_LEN + fp_wire_len(m.fingerprint));
	assert_int_equal(ibp_oob_decode_header(buf, (size_t)n, &type, &plen), 0);
	assert_int_equal(plen, (size_t)n - IBP_OOB_HDR_LEN);
	/* a buffer one byte short of this frame */
	assert_int_equal(ibp_oob_encode(&m, bad, (size_t)n - 1), -ENOSPC);
	/* the header's length above the maximum, below the minimum */
	memcpy(bad, buf, (size_t)n);
	set_plen(bad, IBP_FP_WIRE_MAX + 1);
	assert_int_equal(ibp_oob_decode_header(bad, IBP_OOB_HDR_LEN, &type, &plen), -EBADMSG);
	set_plen(bad, 0);
	assert_int_equal(ibp_oob_decode_header(bad, IBP_OOB_HDR_LEN, &type, &plen), -EBADMSG);
	/* a length one short (the payload's last byte cut) and one long (a byte left over) */
	set_plen(bad, plen - 1);
	assert_int_equal(ibp_oob_decode(bad, (size_t)n - 1, &out), -EBADMSG);
	set_plen(bad, plen + 1);
	bad[n] = 0;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n + 1, &out), -EBADMSG);
	/* the frame cut anywhere */
	for (int len = 0; len < n; len++)
		assert_true(ibp_oob_decode(buf, (size_t)len, &out) < 0);
	/* the empty fingerprint: one byte, the count */
	m = (struct ibp_oob_msg){.type = IBP_OOB_FINGERPRINT, .fingerprint = &empty};
	assert_int_equal(ibp_oob_encode(&m, buf, sizeof(buf)), IBP_OOB_HDR_LEN + IBP_FP_WIRE_MIN);
	assert_int_equal(ibp_oob_decode(buf, IBP_OOB_HDR_LEN + IBP_FP_WIRE_MIN, &out),
			 IBP_OOB_HDR_LEN + IBP_FP_WIRE_MIN);
	assert_int_equal(out.fingerprint->n, 0);
	/* a fixed-size type with one byte more or less */
	m = ctrl();
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	memcpy(bad, buf, (size_t)n);
	set_plen(bad, IBP_OOB_CTRL_LEN + 1);
	bad[n] = 0;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n + 1, &out), -EBADMSG);
	set_plen(bad, IBP_OOB_CTRL_LEN - 1);
	assert_int_equal(ibp_oob_decode(bad, (size_t)n - 1, &out), -EBADMSG);
}

/* The check refuses a bad fingerprint without encoding it; so do encoder and decoder. */
static void test_oob_bad_fingerprint_refused_by_check_and_codec(void **state)
{
	struct ibp_oob_msg m = fingerprint(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX];
	int n;

	(void)state;
	assert_int_equal(ibp_oob_msg_check(&m), 0);
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	m.fingerprint->e[1].value[0] = '\t';
	assert_int_equal(ibp_oob_msg_check(&m), -EBADMSG);
	assert_int_equal(ibp_oob_encode(&m, buf, sizeof(buf)), -EBADMSG);
	m = fingerprint();
	m.fingerprint->e[2].field = m.fingerprint->e[0].field; /* (hca_set, "") twice */
	assert_int_equal(ibp_oob_msg_check(&m), -EBADMSG);
	assert_int_equal(ibp_oob_encode(&m, buf, sizeof(buf)), -EBADMSG);
	/* on the wire: the value's first byte */
	m = fingerprint();
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	buf[IBP_OOB_HDR_LEN + 1 + 1 + 1 + 8 + 1] = 0x7f;
	assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), -EBADMSG);
}

/* A sum of nodes [1, 3) of 4, going down the ring's upper half (oob.h). */
static struct ibp_oob_msg fpsum(void)
{
	struct ibp_oob_msg m = {.type = IBP_OOB_FPSUM, .fpsum = &fpsum_store};
	struct ibp_oob_fpsum *f = &fpsum_store;
	struct ibp_fp fp = {0};

	memset(f, 0, sizeof(*f));
	f->phase = IBP_FPSUM_GATHER;
	ibp_fp_set(&fp, IBP_FP_FIRMWARE, "mlx5_3:1", "28.39.1002");
	ibp_fp_sum_init(&f->sum, 4);
	f->sum.first = 1;
	f->sum.n_merged = 0;
	assert_int_equal(ibp_fp_sum_add(&f->sum, 1, &fp), 0);
	assert_int_equal(ibp_fp_sum_add(&f->sum, 2, &fp), 0);
	return m;
}

/* FPSUM: the sum in its compact form after phase, why, origin, from; BROKEN: nothing after. */
static void test_oob_fpsum_compact_and_broken_bare(void **state)
{
	struct ibp_oob_msg m = fpsum(), out = dest();
	static struct ibp_oob_fpsum broken; /* 22 KB: not on the stack */
	uint8_t buf[IBP_OOB_FRAME_MAX + 1], bad[IBP_OOB_FRAME_MAX + 1];
	const size_t head = IBP_OOB_HDR_LEN + IBP_OOB_FPSUM_HEAD_LEN;
	/* the sum: header, one pair (rail of 8), one group (value of 10, 2 examples) */
	const size_t sum = IBP_FPS_WIRE_MIN + (1 + 1 + 8 + 4 + 1) + (1 + 8 + 1 + 10 + 4 + 1 + 8);
	int n;

	(void)state;
	assert_int_equal(ibp_oob_payload_min(IBP_OOB_FPSUM), IBP_OOB_FPSUM_HEAD_LEN);
	assert_int_equal(ibp_oob_payload_max(IBP_OOB_FPSUM),
			 IBP_OOB_FPSUM_HEAD_LEN + IBP_FPS_WIRE_MAX);
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_int_equal(n, head + sum);
	memset(out.fpsum, 0xa5, sizeof(*out.fpsum)); /* the decoder clears what it fills */
	assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), n);
	assert_int_equal(out.fpsum->sum.first, 1);
	assert_int_equal(out.fpsum->sum.n_merged, 2);
	assert_memory_equal(&out.fpsum->sum, &m.fpsum->sum, offsetof(struct ibp_fp_sum, keys));
	assert_memory_equal(out.fpsum->sum.keys, m.fpsum->sum.keys,
			    m.fpsum->sum.n_keys * sizeof(m.fpsum->sum.keys[0]));
	assert_memory_equal(out.fpsum->sum.values, m.fpsum->sum.values,
			    m.fpsum->sum.n_values * sizeof(m.fpsum->sum.values[0]));
	/* a byte left over after the sum, the sum cut short */
	memcpy(bad, buf, (size_t)n);
	bad[11]++;
	bad[n] = 0;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n + 1, &out), -EBADMSG);
	bad[11] -= 2;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n - 1, &out), -EBADMSG);
	/* a final sum is complete, from node 0 */
	m.fpsum->phase = IBP_FPSUM_FINAL;
	assert_int_equal(ibp_oob_encode(&m, buf, sizeof(buf)), -EBADMSG);
	/* BROKEN: no sum on the wire at all */
	m = (struct ibp_oob_msg){.type = IBP_OOB_FPSUM, .fpsum = &broken};
	broken.phase = IBP_FPSUM_BROKEN;
	broken.why = IBP_FPSUM_WHY_LINK;
	broken.origin = 3;
	broken.from = 2;
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_int_equal(n, head);
	memset(out.fpsum, 0xa5, sizeof(*out.fpsum));
	assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), n);
	assert_int_equal(out.fpsum->origin, 3);
	assert_int_equal(out.fpsum->from, 2);
	assert_int_equal(out.fpsum->sum.n_merged, 0); /* no sum: an empty one */
	assert_int_equal(out.fpsum->sum.n_keys, 0);
	/* ... and one that carries a sum is refused */
	m = fpsum();
	n = ibp_oob_encode(&m, bad, sizeof(bad));
	bad[IBP_OOB_HDR_LEN] = IBP_FPSUM_BROKEN;
	bad[IBP_OOB_HDR_LEN + 1] = IBP_FPSUM_WHY_LINK;
	assert_int_equal(ibp_oob_decode(bad, (size_t)n, &out), -EBADMSG);
	/* a header length below the shortest FPSUM (no room for its head) */
	memcpy(bad, buf, head);
	bad[11]--;
	assert_int_equal(ibp_oob_decode(bad, head - 1, &out), -EBADMSG);
}

/* ---- framed I/O ---- */

#define CTRL_ONLY IBP_OOB_TYPE_BIT(IBP_OOB_CTRL)

/*
 * BATCH: its header written at the payload's length within bounds, its
 * CTRL frames taken one by one in order, anything else in it refused; the
 * plain codec never encodes one and decodes none (-ENOBUFS, the seal's).
 */
static void test_oob_batch_frames_in_order_others_refused(void **state)
{
	struct ibp_oob_msg in = {.type = IBP_OOB_CTRL}, out = dest(), ep = endpoint();
	uint8_t buf[IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX], *p = buf + IBP_OOB_HDR_LEN;
	size_t len = 0, off = 0, plen;
	unsigned type;
	int n;

	(void)state;
	for (uint64_t i = 0; i < 3; i++) {
		in.u.ctrl.op = IBP_CTRL_VERDICT;
		in.u.ctrl.a = 100 + i;
		n = ibp_oob_encode(&in, p + len, sizeof(buf) - IBP_OOB_HDR_LEN - len);
		assert_int_equal(n, IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN);
		len += (size_t)n;
	}
	assert_int_equal(ibp_oob_batch_header(buf, len), 0);
	assert_int_equal(ibp_oob_decode_header(buf, IBP_OOB_HDR_LEN, &type, &plen), 0);
	assert_int_equal(type, IBP_OOB_BATCH);
	assert_int_equal(plen, len);
	assert_int_equal(ibp_oob_decode(buf, IBP_OOB_HDR_LEN + len, &out), -ENOBUFS);
	assert_int_equal(out.type, IBP_OOB_BATCH);
	assert_int_equal(
	    ibp_oob_encode(&(struct ibp_oob_msg){.type = IBP_OOB_BATCH}, buf, sizeof(buf)),
	    -EBADMSG);
	for (uint64_t i = 0; i < 3; i++) {
		assert_int_equal(ibp_oob_batch_next(p, len, &off, CTRL_ONLY, &out), 1);
		assert_int_equal(out.type, IBP_OOB_CTRL);
		assert_int_equal(out.u.ctrl.a, 100 + i);
	}
	assert_int_equal(ibp_oob_batch_next(p, len, &off, CTRL_ONLY, &out), 0);
	/* cut short: the last frame does not fit */
	off = 2 * (IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN);
	assert_int_equal(ibp_oob_batch_next(p, len - 1, &off, CTRL_ONLY, &out), -EBADMSG);
	/* a frame of another type than the reader's, a bad op: refused */
	n = ibp_oob_encode(&ep, p, sizeof(buf) - IBP_OOB_HDR_LEN);
	assert_true(n > 0);
	off = 0;
	assert_int_equal(ibp_oob_batch_next(p, (size_t)n, &off, CTRL_ONLY, &out), -EBADMSG);
	assert_int_equal(off, 0);
	assert_int_equal(ibp_oob_encode(&in, p, IBP_OOB_BATCH_MAX),
			 IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN);
	p[IBP_OOB_HDR_LEN] = IBP_CTRL_OP_COUNT;
	off = 0;
	assert_int_equal(
	    ibp_oob_batch_next(p, IBP_OOB_HDR_LEN + IBP_OOB_CTRL_LEN, &off, CTRL_ONLY, &out),
	    -EBADMSG);
	/* the bounds */
	assert_int_equal(ibp_oob_batch_header(buf, IBP_OOB_BATCH_MIN - 1), -EBADMSG);
	assert_int_equal(ibp_oob_batch_header(buf, IBP_OOB_BATCH_MAX + 1), -EBADMSG);
	assert_int_equal(ibp_oob_batch_header(buf, IBP_OOB_BATCH_MAX), 0);
}

/*
 * A BATCH of every rail's ENDPOINT (protocol 22), a rail's ABORT among them:
 * each comes back as it went for a reader of ENDPOINT and CTRL frames; a
 * reader of CTRL frames alone refuses the first ENDPOINT, one of ENDPOINTs
 * alone the ABORT; a type no batch carries is refused whatever the reader
 * asks for, and a reader asking for nothing takes nothing.
 */
static void test_oob_batch_endpoints_roundtrip_reader_types(void **state)
{
	struct ibp_oob_msg in[IBP_OOB_MAX_RAILS], out = dest(), sm = summary();
	uint8_t buf[IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX], *p = buf + IBP_OOB_HDR_LEN;
	const unsigned both = IBP_OOB_TYPE_BIT(IBP_OOB_ENDPOINT) | CTRL_ONLY;
	size_t len = 0, off = 0, plen, at[IBP_OOB_MAX_RAILS];
	unsigned type;
	int n;

	(void)state;
	for (uint16_t k = 0; k < IBP_OOB_MAX_RAILS; k++) {
		in[k] = endpoint();
		in[k].u.endpoint.rail = k;
		in[k].u.endpoint.ep.qpn = 0x1000u + k;
		snprintf(in[k].u.endpoint.device, sizeof(in[k].u.endpoint.device), "mlx5_%u", k);
		if (k == 5) { /* a rail that could not open: its ABORT in its place */
			ibp_oob_msg_clear(&in[k], IBP_OOB_CTRL);
			in[k].u.ctrl.op = IBP_CTRL_ABORT;
			in[k].u.ctrl.status = -ENOMEM;
			in[k].u.ctrl.a = IBP_LINK_LOCAL;
		}
		at[k] = len;
		n = ibp_oob_encode(&in[k], p + len, IBP_OOB_BATCH_MAX - len);
		assert_true(n > 0);
		len += (size_t)n;
	}
	assert_int_equal(ibp_oob_batch_header(buf, len), 0); /* 16 rails fit one batch */
	assert_int_equal(ibp_oob_decode_header(buf, IBP_OOB_HDR_LEN, &type, &plen), 0);
	assert_int_equal(type, IBP_OOB_BATCH);
	assert_int_equal(plen, len);
	for (size_t k = 0; k < IBP_OOB_MAX_RAILS; k++) {
		assert_int_equal(ibp_oob_batch_next(p, len, &off, both, &out), 1);
		assert_int_equal(out.type, in[k].type);
		if (k == 5) {
			assert_memory_equal(&out.u.ctrl, &in[k].u.ctrl, sizeof(out.u.ctrl));
			continue;
		}
		assert_int_equal(out.u.endpoint.rail, k);
		assert_string_equal(out.u.endpoint.device, in[k].u.endpoint.device);
		assert_string_equal(out.u.endpoint.leaf, "leaf07");
		assert_memory_equal(&out.u.endpoint.ep, &in[k].u.endpoint.ep,
				    sizeof(out.u.endpoint.ep));
	}
	assert_int_equal(ibp_oob_batch_next(p, len, &off, both, &out), 0);
	/* the reader's types: refused where the frame is, *OFF left at it */
	off = 0;
	assert_int_equal(ibp_oob_batch_next(p, len, &off, CTRL_ONLY, &out), -EBADMSG);
	assert_int_equal(off, 0);
	off = at[4];
	assert_int_equal(ibp_oob_batch_next(p, len, &off, IBP_OOB_TYPE_BIT(IBP_OOB_ENDPOINT), &out),
			 1);
	assert_int_equal(off, at[5]);
	assert_int_equal(ibp_oob_batch_next(p, len, &off, IBP_OOB_TYPE_BIT(IBP_OOB_ENDPOINT), &out),
			 -EBADMSG);
	assert_int_equal(off, at[5]);
	off = 0;
	assert_int_equal(ibp_oob_batch_next(p, len, &off, 0, &out), -EBADMSG);
	/* a SUMMARY never travels in a batch, whoever asks for one */
	n = ibp_oob_encode(&sm, p, IBP_OOB_BATCH_MAX);
	assert_true(n > 0);
	off = 0;
	assert_int_equal(
	    ibp_oob_batch_next(p, (size_t)n, &off, both | IBP_OOB_TYPE_BIT(IBP_OOB_SUMMARY), &out),
	    -EBADMSG);
	assert_int_equal(off, 0);
}

static void test_oob_send_recv_socketpair_ok(void **state)
{
	int sv[2];
	struct ibp_oob_msg in = hello(), out = dest(), sealed = summary();
	uint8_t buf[IBP_OOB_FRAME_MAX];
	int n;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(ibp_oob_send(sv[0], &in, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(ibp_oob_recv(sv[1], &out, ibp_now_ns() + IBP_NS_PER_S), 0);
	assert_int_equal(out.u.hello.nonce, in.u.hello.nonce);
	/* the sealed types never travel plain, either way */
	assert_int_equal(ibp_oob_send(sv[0], &sealed, ibp_now_ns() + IBP_NS_PER_S), -EBADMSG);
	n = ibp_oob_encode(&sealed, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(write(sv[0], buf, (size_t)n), n);
	assert_int_equal(ibp_oob_recv(sv[1], &out, ibp_now_ns() + IBP_NS_PER_S), -EBADMSG);
	close(sv[0]);
	close(sv[1]);
}

/* A peer that sends half a frame and stalls costs the deadline, not more. */
static void test_oob_recv_stalled_peer_timeout_on_deadline(void **state)
{
	int sv[2];
	struct ibp_oob_msg m = hello(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX];
	int n;
	int64_t t0, dt;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_int_equal(write(sv[0], buf, (size_t)n / 2), n / 2);
	t0 = ibp_now_ns();
	assert_int_equal(ibp_oob_recv(sv[1], &out, t0 + 150 * IBP_NS_PER_MS), -ETIMEDOUT);
	dt = ibp_now_ns() - t0;
	assert_true(dt >= 150 * IBP_NS_PER_MS);
	assert_true(dt < 1000 * IBP_NS_PER_MS);
	close(sv[0]);
	close(sv[1]);
}

static void test_oob_recv_eof_mid_frame_connreset(void **state)
{
	int sv[2];
	struct ibp_oob_msg m = hello(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX];
	int n;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_true(n > 20);
	assert_int_equal(write(sv[0], buf, (size_t)n - 10), n - 10);
	close(sv[0]);
	assert_int_equal(ibp_oob_recv(sv[1], &out, ibp_now_ns() + IBP_NS_PER_S), -ECONNRESET);
	close(sv[1]);
}

/* A bad header is refused at once, without waiting for a payload. */
static void test_oob_recv_bad_header_refused_immediately(void **state)
{
	int sv[2];
	struct ibp_oob_msg out = dest();
	uint8_t hdr[IBP_OOB_HDR_LEN] = {'I', 'B', 'P',  'T',  0,    IBP_OOB_VERSION,
					0,   1,   0x7f, 0xff, 0xff, 0xff};
	int64_t t0;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	t0 = ibp_now_ns();
	assert_int_equal(ibp_oob_recv(sv[1], &out, t0 + 2 * IBP_NS_PER_S), -EBADMSG);
	assert_true(ibp_now_ns() - t0 < 500 * IBP_NS_PER_MS);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Another protocol version: the header's first 12 bytes are the part every
 * version keeps, so its version is read whatever the type and length say
 * (a later version may add types or change a payload's length), the frame
 * is refused as -EPROTONOSUPPORT before any payload is read, and the
 * version comes back to the caller for the finding.
 */
static void test_oob_other_version_read_from_header_and_refused(void **state)
{
	const unsigned versions[] = {0,      1,     IBP_OOB_VERSION - 1, IBP_OOB_VERSION + 1,
				     0x0100, 0xffff};
	struct ibp_oob_msg m = hello(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX], frame[IBP_OOB_FRAME_MAX];
	unsigned type;
	size_t plen;
	int n;

	(void)state;
	n = ibp_oob_encode(&m, frame, sizeof(frame));
	assert_true(n > 0);
	assert_int_equal(ibp_oob_wire_version(), IBP_OOB_VERSION);
	assert_int_equal(ibp_oob_header_version(frame, (size_t)n), IBP_OOB_VERSION);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		memcpy(buf, frame, (size_t)n);
		put_version(buf, versions[i]);
		assert_int_equal(ibp_oob_header_version(buf, IBP_OOB_HDR_LEN), (int)versions[i]);
		assert_int_equal(ibp_oob_decode_header(buf, IBP_OOB_HDR_LEN, &type, &plen),
				 -EPROTONOSUPPORT);
		assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), -EPROTONOSUPPORT);
		/* an unknown type and a length no type of ours has: still the version */
		buf[6] = 0x7f;
		buf[7] = 0xff;
		memset(buf + 8, 0xff, 4);
		assert_int_equal(ibp_oob_header_version(buf, IBP_OOB_HDR_LEN), (int)versions[i]);
		assert_int_equal(ibp_oob_decode_header(buf, IBP_OOB_HDR_LEN, &type, &plen),
				 -EPROTONOSUPPORT);
	}
	/* no version without the magic or a whole header */
	assert_int_equal(ibp_oob_header_version(frame, IBP_OOB_HDR_LEN - 1), -EBADMSG);
	memcpy(buf, frame, IBP_OOB_HDR_LEN);
	buf[0] ^= 0x20;
	assert_int_equal(ibp_oob_header_version(buf, IBP_OOB_HDR_LEN), -EBADMSG);
	assert_string_equal(ibp_link_status_name(IBP_LINK_VERSION), "other protocol version");
}

/* The receiver learns the version and stops at the header: nothing more is awaited. */
static void test_oob_recv_version_other_version_at_once(void **state)
{
	struct ibp_oob_msg m = hello(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX];
	char why[IBP_OOB_TEXT_MAX];
	unsigned version = 12345;
	int sv[2], n;
	int64_t t0;

	(void)state;
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	/* this version: decoded, and its version said */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(write(sv[0], buf, (size_t)n), n);
	assert_int_equal(ibp_oob_recv_version(sv[1], &out, ibp_now_ns() + IBP_NS_PER_S, &version,
					      why, sizeof(why)),
			 0);
	assert_string_equal(why, "");
	assert_int_equal(version, IBP_OOB_VERSION);
	assert_int_equal(out.type, IBP_OOB_HELLO);
	/* a later version's header alone (its payload never comes): refused at once */
	put_version(buf, IBP_OOB_VERSION + 1);
	assert_int_equal(write(sv[0], buf, IBP_OOB_HDR_LEN), IBP_OOB_HDR_LEN);
	t0 = ibp_now_ns();
	assert_int_equal(
	    ibp_oob_recv_version(sv[1], &out, t0 + 2 * IBP_NS_PER_S, &version, why, sizeof(why)),
	    -EPROTONOSUPPORT);
	assert_true(ibp_now_ns() - t0 < 500 * IBP_NS_PER_MS);
	assert_int_equal(version, IBP_OOB_VERSION + 1);
	/* another magic: no version to tell, VERSION untouched */
	version = 12345;
	buf[0] ^= 0x20;
	assert_int_equal(write(sv[0], buf, IBP_OOB_HDR_LEN), IBP_OOB_HDR_LEN);
	assert_int_equal(
	    ibp_oob_recv_version(sv[1], &out, ibp_now_ns() + IBP_NS_PER_S, &version, NULL, 0),
	    -EBADMSG);
	assert_int_equal(version, 12345);
	close(sv[0]);
	close(sv[1]);
}

/* A summary may carry the new outcome (this version's peers know it), and nothing above it. */
static void test_oob_summary_link_status_version_roundtrip(void **state)
{
	struct ibp_oob_msg m = summary(), out = dest();
	uint8_t buf[IBP_OOB_FRAME_MAX];
	int n;

	(void)state;
	m.summary->links[0].status = IBP_LINK_VERSION;
	n = ibp_oob_encode(&m, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(ibp_oob_decode(buf, (size_t)n, &out), n);
	assert_int_equal(out.summary->links[0].status, IBP_LINK_VERSION);
	m.summary->links[0].status = IBP_LINK_VERSION + 1;
	assert_int_equal(ibp_oob_encode(&m, buf, sizeof(buf)), -EBADMSG);
}

static void test_oob_expired_deadline_never_waits(void **state)
{
	int sv[2];
	struct ibp_oob_msg out = dest();

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(ibp_oob_recv(sv[1], &out, 0), -ETIMEDOUT);
	close(sv[0]);
	close(sv[1]);
}

/* ---- ports ---- */

static void test_oob_ports_deterministic_distinct_in_range(void **state)
{
	uint16_t a[8], b[8];

	(void)state;
	for (uint32_t job = 1; job < 200; job += 7) {
		int n = ibp_oob_ports(job, 3, 47000, 47999, a, 4);

		assert_int_equal(n, 4);
		assert_int_equal(ibp_oob_ports(job, 3, 47000, 47999, b, 4), 4);
		assert_memory_equal(a, b, sizeof(a[0]) * 4);
		for (int i = 0; i < 4; i++) {
			assert_in_range(a[i], 47000, 47999);
			for (int k = 0; k < i; k++)
				assert_int_not_equal(a[i], a[k]);
		}
	}
	/* small ranges: as many as fit, all distinct */
	assert_int_equal(ibp_oob_ports(9, 9, 5000, 5001, a, 4), 2);
	assert_int_not_equal(a[0], a[1]);
	assert_int_equal(ibp_oob_ports(9, 9, 5000, 5000, a, 4), 1);
	assert_int_equal(a[0], 5000);
	/* two steps of one job rarely share their first port */
	{
		int same = 0;

		for (uint32_t s = 0; s < 100; s++) {
			ibp_oob_ports(77, s, 47000, 47999, a, 1);
			ibp_oob_ports(77, s + 1, 47000, 47999, b, 1);
			same += a[0] == b[0];
		}
		assert_true(same < 5);
	}
	assert_int_equal(ibp_oob_ports(1, 1, 0, 10, a, 4), -EINVAL);
	assert_int_equal(ibp_oob_ports(1, 1, 20, 10, a, 4), -EINVAL);
	assert_int_equal(ibp_oob_ports(1, 1, 10, 70000, a, 4), -EINVAL);
	assert_int_equal(ibp_oob_ports(1, 1, 10, 20, a, 9), -EINVAL);
}

/* ---- deadline arithmetic ---- */

static void test_deadline_poll_ms_rounds_up_and_clamps(void **state)
{
	(void)state;
	assert_int_equal(ibp_deadline_poll_ms(1000, 1000), 0);
	assert_int_equal(ibp_deadline_poll_ms(1000, 2000), 0);
	assert_int_equal(ibp_deadline_poll_ms(1000 + 1, 1000), 1); /* 1 ns left: wait 1 ms */
	assert_int_equal(ibp_deadline_poll_ms(IBP_NS_PER_MS * 5, 0), 5);
	assert_int_equal(ibp_deadline_poll_ms(IBP_NS_PER_MS * 5 + 1, 0), 6);
	assert_int_equal(ibp_deadline_poll_ms(INT64_MAX, 0), INT_MAX);
}

static void test_deadline_after_saturates(void **state)
{
	(void)state;
	assert_int_equal(ibp_deadline_after_s(100, 1.5), 100 + 1500 * IBP_NS_PER_MS);
	assert_int_equal(ibp_deadline_after_s(100, 0.001), 100 + IBP_NS_PER_MS);
	assert_int_equal(ibp_deadline_after_s(100, -3), 100);
	assert_int_equal(ibp_deadline_after_s(100, 0.0 / 0.0), 100);
	assert_true(ibp_deadline_after_s(INT64_MAX - 10, 5) == INT64_MAX);
	assert_true(ibp_deadline_after_s(0, 1e300) == INT64_MAX);
	assert_int_equal(ibp_deadline_after_ms(7, 3), 7 + 3 * IBP_NS_PER_MS);
	assert_int_equal(ibp_deadline_after_ms(7, -3), 7);
	assert_true(ibp_deadline_after_ms(INT64_MAX - 10, 5) == INT64_MAX);
	assert_int_equal(ibp_deadline_min(3, 9), 3);
	assert_int_equal(ibp_deadline_min(9, 3), 3);
	assert_true(ibp_deadline_expired(5, 5));
	assert_false(ibp_deadline_expired(6, 5));
}

static void test_deadline_split_rounds_inside_budget(void **state)
{
	int64_t s = 1000, e = 1000 + 5 * IBP_NS_PER_S;

	(void)state;
	assert_int_equal(ibp_deadline_split(s, e, 0.4), s + 2 * IBP_NS_PER_S);
	assert_int_equal(ibp_deadline_split(s, e, 0.8), s + 4 * IBP_NS_PER_S);
	assert_int_equal(ibp_deadline_split(s, e, 1.5), e);
	assert_int_equal(ibp_deadline_split(s, e, 0), s);
	assert_int_equal(ibp_deadline_split(e, s, 0.5), e); /* inverted: never beyond start */
	assert_true(ibp_deadline_split(s, e, 0.4) < ibp_deadline_split(s, e, 0.8));
}

/* ---- credential payload ---- */

static void test_auth_claims_roundtrip_and_refusals(void **state)
{
	struct ibp_auth_claims c = {.job = 9,
				    .step = 4294967294u,
				    .uid = 1000,
				    .from = 1,
				    .to = 2,
				    .nnodes = 3,
				    .round = 2,
				    .rail = 7,
				    .n_rails = 8,
				    .flags = 1,
				    .nonce = 0xfedcba9876543210ull,
				    .echo = 42},
			       d;
	uint8_t p[IBP_AUTH_PAYLOAD_LEN];

	(void)state;
	ibp_auth_claims_pack(&c, p);
	assert_int_equal(ibp_auth_claims_unpack(p, sizeof(p), &d), 0);
	assert_int_equal(d.step, c.step);
	assert_true(d.nonce == c.nonce && d.echo == c.echo);
	assert_int_equal(d.round, 2);
	assert_int_equal(d.rail, 7);
	assert_int_equal(d.n_rails, 8);
	assert_int_equal(d.flags, 1);
	assert_int_equal(ibp_auth_claims_unpack(p, sizeof(p) - 1, &d), -EBADMSG);
	p[0] ^= 1;
	assert_int_equal(ibp_auth_claims_unpack(p, sizeof(p), &d), -EBADMSG);
	p[0] ^= 1;
	p[54] = 1; /* the rail count word above 255 */
	assert_int_equal(ibp_auth_claims_unpack(p, sizeof(p), &d), -EBADMSG);
}

static void test_auth_insecure_signs_nothing_accepts_all(void **state)
{
	struct ibp_auth a = {.insecure = true};
	struct ibp_auth_claims c = {0};
	char cred[16] = "x";

	(void)state;
	assert_int_equal(ibp_auth_sign(&a, &c, cred, sizeof(cred), NULL, 0), 0);
	assert_string_equal(cred, "");
	assert_int_equal(ibp_auth_verify(&a, "", &c, NULL, NULL, 0), 0);
}

static void test_auth_unreachable_munged_enotconn(void **state)
{
	struct ibp_auth a = {.socket = "/nonexistent/ibp-test/munge.sock"};
	struct ibp_auth_claims c = {0};
	char cred[IBP_OOB_CRED_MAX], err[256] = "";

	(void)state;
	assert_int_equal(ibp_auth_sign(&a, &c, cred, sizeof(cred), err, sizeof(err)), -ENOTCONN);
	assert_non_null(strstr(err, "/nonexistent/ibp-test/munge.sock"));
	assert_int_equal(ibp_auth_verify(&a, "MUNGE:AAAA:", &c, NULL, err, sizeof(err)), -ENOTCONN);
	/* no credential at all is the peer's fault, whatever munged does */
	assert_int_equal(ibp_auth_verify(&a, "", &c, NULL, err, sizeof(err)), -EACCES);
}

/* ---- test pattern ---- */

static void test_pattern_detects_flip_shift_and_stale(void **state)
{
	size_t len = 4099; /* not a multiple of 8 */
	uint8_t *a = malloc(len), *b = malloc(len + 1);

	(void)state;
	ibp_pattern_fill(a, len, 77);
	assert_int_equal(ibp_pattern_check(a, len, 77), len);
	a[4098] ^= 0x10;
	assert_int_equal(ibp_pattern_check(a, len, 77), 4098);
	a[4098] ^= 0x10;
	assert_int_equal(ibp_pattern_check(a, len, 78), 0); /* stale: another seed */
	ibp_pattern_fill(b + 1, len, 77);
	b[0] = a[0];
	assert_true(ibp_pattern_check(b, len, 77) < len); /* shifted by one byte */
	memset(a, 0, len);
	assert_int_equal(ibp_pattern_check(a, len, 77), 0);
	free(a);
	free(b);
}

/*
 * The pattern's bytes are the wire's (builds of every version check each
 * other's): byte 8w + b is byte b of word w, little-endian, whatever the
 * length; seed 77's first bytes as the byte-loop writer of main at
 * e7e627d wrote them, and a flip in every byte of a tail and of
 * an unaligned buffer is found where it is.
 */
static void test_pattern_bytes_fixed_and_every_flip_found(void **state)
{
	static const uint8_t want[11] = {0x81, 0xf0, 0x1f, 0x7c, 0xe0, 0xcb,
					 0x58, 0x62, 0x54, 0x9e, 0x96};
	uint8_t buf[64 + 2], ref[64]; /* one byte before, one after */

	(void)state;
	ibp_pattern_fill(ref, sizeof(ref), 77);
	for (size_t len = 0; len <= sizeof(ref); len++) {
		uint8_t *p = buf + 1; /* not 8-byte aligned */

		memset(buf, 0xee, sizeof(buf));
		ibp_pattern_fill(p, len, 77);
		assert_memory_equal(p, ref, len); /* a prefix of the longer pattern */
		assert_int_equal(p[len], 0xee);   /* nothing past LEN */
		assert_int_equal(ibp_pattern_check(p, len, 77), len);
		for (size_t i = 0; i < len; i++) {
			p[i] ^= 0x01;
			assert_int_equal(ibp_pattern_check(p, len, 77), i);
			p[i] ^= 0x01;
		}
	}
	assert_memory_equal(ref, want, sizeof(want));
}

/*
 * A stream's pieces (the socket transport writes and checks the pattern a
 * piece at a time, cut wherever a short write or read ends): every piece
 * at every offset is that part of the whole pattern, and a flip in it is
 * found where it is, relative to the piece.
 */
static void test_pattern_pieces_at_any_offset(void **state)
{
	uint8_t ref[80], buf[40 + 2];

	(void)state;
	ibp_pattern_fill(ref, sizeof(ref), 91);
	for (size_t off = 0; off < 40; off++) {
		for (size_t len = 0; len <= 40; len++) {
			uint8_t *p = buf + 1; /* not 8-byte aligned */

			memset(buf, 0xee, sizeof(buf));
			ibp_pattern_fill_at(p, off, len, 91);
			assert_memory_equal(p, ref + off, len);
			assert_int_equal(p[len], 0xee);
			assert_int_equal(ibp_pattern_check_at(p, off, len, 91), len);
			assert_int_equal(ibp_pattern_check_at(ref + off, off, len, 91), len);
			for (size_t i = 0; i < len; i++) {
				p[i] ^= 0x80;
				assert_int_equal(ibp_pattern_check_at(p, off, len, 91), i);
				p[i] ^= 0x80;
			}
			/* the right bytes at the wrong offset: stale or shifted */
			if (len >= 8)
				assert_true(ibp_pattern_check_at(p, off + 1, len, 91) < len);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oob_roundtrip_every_type_identical),
	    cmocka_unit_test(test_pattern_bytes_fixed_and_every_flip_found),
	    cmocka_unit_test(test_pattern_pieces_at_any_offset),
	    cmocka_unit_test(test_oob_content_without_a_place_not_decoded),
	    cmocka_unit_test(test_oob_ring_hello_rail0_roundtrips),
	    cmocka_unit_test(test_oob_encode_small_buffer_enospc),
	    cmocka_unit_test(test_oob_every_malformed_field_refused),
	    cmocka_unit_test(test_oob_wrong_length_for_type_refused_naming_it),
	    cmocka_unit_test(test_oob_decode_bad_frames_refused),
	    cmocka_unit_test(test_oob_variable_length_bounds_and_exact_consumption),
	    cmocka_unit_test(test_oob_bad_fingerprint_refused_by_check_and_codec),
	    cmocka_unit_test(test_oob_fpsum_compact_and_broken_bare),
	    cmocka_unit_test(test_oob_batch_frames_in_order_others_refused),
	    cmocka_unit_test(test_oob_batch_endpoints_roundtrip_reader_types),
	    cmocka_unit_test(test_oob_send_recv_socketpair_ok),
	    cmocka_unit_test(test_oob_recv_stalled_peer_timeout_on_deadline),
	    cmocka_unit_test(test_oob_recv_eof_mid_frame_connreset),
	    cmocka_unit_test(test_oob_recv_bad_header_refused_immediately),
	    cmocka_unit_test(test_oob_expired_deadline_never_waits),
	    cmocka_unit_test(test_oob_ports_deterministic_distinct_in_range),
	    cmocka_unit_test(test_deadline_poll_ms_rounds_up_and_clamps),
	    cmocka_unit_test(test_deadline_after_saturates),
	    cmocka_unit_test(test_deadline_split_rounds_inside_budget),
	    cmocka_unit_test(test_oob_other_version_read_from_header_and_refused),
	    cmocka_unit_test(test_oob_recv_version_other_version_at_once),
	    cmocka_unit_test(test_oob_summary_link_status_version_roundtrip),
	    cmocka_unit_test(test_auth_claims_roundtrip_and_refusals),
	    cmocka_unit_test(test_auth_insecure_signs_nothing_accepts_all),
	    cmocka_unit_test(test_auth_unreachable_munged_enotconn),
	    cmocka_unit_test(test_pattern_detects_flip_shift_and_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
