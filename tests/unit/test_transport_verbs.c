/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the verbs transport (helpers/rdmatest/transport_verbs.c).
 *
 * The pure parts (GID choice, endpoint checks, MTU, completion status
 * mapping) run everywhere.  The live tests need an RDMA device with an
 * ACTIVE port: IBP_TEST_VERBS_DEVICE (default: the first such device); they
 * skip with the reason where there is none (this build machine's kernel has
 * no RDMA) and run for real in the Soft-RoCE VM (tests/vm/test_verbs.sh),
 * two tx on the same rxe device talking through the kernel's loopback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/deadline.h"
#include "ibprep/transport.h"
#include "ibprep/transport_verbs.h"

static void gid_v4(uint8_t raw[16], const char *ip)
{
	struct in_addr a;

	memset(raw, 0, 16);
	raw[10] = raw[11] = 0xff;
	assert_int_equal(inet_pton(AF_INET, ip, &a), 1);
	memcpy(raw + 12, &a, 4);
}

static void gid_v6(uint8_t raw[16], const char *ip)
{
	assert_int_equal(inet_pton(AF_INET6, ip, raw), 1);
}

/* ---- GID choice ---- */

static void test_gid_pick_prefers_own_ipv4_roce_v2(void **state)
{
	struct ibp_verbs_gid g[5];
	(void)state;

	memset(g, 0, sizeof(g));
	g[0].index = 0, g[0].type = IBP_GID_TYPE_IB_ROCE_V1, gid_v6(g[0].raw, "fe80::1");
	g[1].index = 1, g[1].type = IBP_GID_TYPE_ROCE_V2, gid_v6(g[1].raw, "fe80::1");
	g[2].index = 2, g[2].type = IBP_GID_TYPE_IB_ROCE_V1, gid_v4(g[2].raw, "10.0.0.5");
	g[3].index = 3, g[3].type = IBP_GID_TYPE_ROCE_V2, gid_v4(g[3].raw, "192.168.1.5");
	g[4].index = 5, g[4].type = IBP_GID_TYPE_ROCE_V2, gid_v4(g[4].raw, "10.0.0.5");
	/* the node's own address wins over a lower index */
	assert_int_equal(ibp_verbs_gid_pick(g, 5, "10.0.0.5"), 4);
	/* without an address: the lowest IPv4-mapped RoCE v2 */
	assert_int_equal(ibp_verbs_gid_pick(g, 5, NULL), 3);
	assert_int_equal(ibp_verbs_gid_pick(g, 5, ""), 3);
	/* an address the port does not carry changes nothing */
	assert_int_equal(ibp_verbs_gid_pick(g, 5, "172.16.0.1"), 3);
	/* not an address at all: ignored, never a crash */
	assert_int_equal(ibp_verbs_gid_pick(g, 5, "not-an-ip"), 3);
}

static void test_gid_pick_ipv6_order_and_none(void **state)
{
	struct ibp_verbs_gid g[4];
	(void)state;

	memset(g, 0, sizeof(g));
	g[0].index = 0, g[0].type = IBP_GID_TYPE_ROCE_V2,
	gid_v6(g[0].raw, "fe80::5054:ff:fe77:101");
	g[1].index = 1, g[1].type = IBP_GID_TYPE_ROCE_V2, gid_v6(g[1].raw, "fd00::7");
	g[2].index = 2, g[2].type = IBP_GID_TYPE_IB_ROCE_V1, gid_v4(g[2].raw, "10.1.1.1");
	g[3].index = 3, g[3].type = IBP_GID_TYPE_UNKNOWN, gid_v4(g[3].raw, "10.1.1.2");
	/* global IPv6 over link-local; RoCE v1 and unknown types never */
	assert_int_equal(ibp_verbs_gid_pick(g, 4, NULL), 1);
	assert_int_equal(ibp_verbs_gid_pick(g, 4, "fd00::7"), 1);
	assert_int_equal(ibp_verbs_gid_pick(g, 1, NULL), 0);
	assert_int_equal(ibp_verbs_gid_pick(g + 2, 2, NULL), -ENOENT);
	assert_int_equal(ibp_verbs_gid_pick(NULL, 0, NULL), -ENOENT);
	/* a zero GID of the right type is not a GID */
	memset(g[1].raw, 0, 16);
	assert_int_equal(ibp_verbs_gid_pick(g + 1, 1, NULL), -ENOENT);
}

static void test_gid_format_and_family(void **state)
{
	uint8_t raw[16];
	char s[64];
	(void)state;

	gid_v4(raw, "10.77.1.2");
	assert_true(ibp_verbs_gid_is_ipv4(raw));
	ibp_verbs_gid_format(raw, s, sizeof(s));
	assert_string_equal(s, "::ffff:10.77.1.2");
	gid_v6(raw, "fe80::1");
	assert_false(ibp_verbs_gid_is_ipv4(raw));
	ibp_verbs_gid_format(raw, s, 5); /* truncated, terminated */
	assert_string_equal(s, "fe80");
}

/* ---- MTU, rate, completion status ---- */

static void test_mtu_conversions(void **state)
{
	static const struct {
		int e;
		uint32_t bytes;
	} t[] = {{IBV_MTU_256, 256},
		 {IBV_MTU_512, 512},
		 {IBV_MTU_1024, 1024},
		 {IBV_MTU_2048, 2048},
		 {IBV_MTU_4096, 4096}};
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(ibp_verbs_mtu_bytes(t[i].e), t[i].bytes);
		assert_int_equal(ibp_verbs_mtu_enum(t[i].bytes), t[i].e);
	}
	assert_int_equal(ibp_verbs_mtu_bytes(0), 0);
	assert_int_equal(ibp_verbs_mtu_bytes(6), 0);
	assert_int_equal(ibp_verbs_mtu_bytes(-1), 0);
	assert_int_equal(ibp_verbs_mtu_enum(0), 0);
	assert_int_equal(ibp_verbs_mtu_enum(1500), 0);
	assert_int_equal(ibp_verbs_mtu_enum(8192), 0);
}

static void test_rate_from_port_attr_codes(void **state)
{
	(void)state;
	assert_true(ibp_verbs_rate_gbps(2, 128) == 400.0); /* 4X NDR */
	assert_true(ibp_verbs_rate_gbps(2, 64) == 200.0);  /* 4X HDR */
	assert_true(ibp_verbs_rate_gbps(1, 1) == 2.5);     /* rxe: 1X SDR */
	assert_true(ibp_verbs_rate_gbps(16, 64) == 100.0); /* 2X HDR */
	assert_true(ibp_verbs_rate_gbps(3, 1) == 0);
	assert_true(ibp_verbs_rate_gbps(2, 3) == 0);
}

static void test_wc_status_maps_to_errno(void **state)
{
	(void)state;
	assert_int_equal(ibp_verbs_wc_errno(IBV_WC_SUCCESS), 0);
	assert_int_equal(ibp_verbs_wc_errno(IBV_WC_RETRY_EXC_ERR), -EHOSTUNREACH);
	assert_int_equal(ibp_verbs_wc_errno(IBV_WC_RNR_RETRY_EXC_ERR), -ECONNREFUSED);
	assert_int_equal(ibp_verbs_wc_errno(IBV_WC_REM_ACCESS_ERR), -EPROTO);
	assert_int_equal(ibp_verbs_wc_errno(IBV_WC_WR_FLUSH_ERR), -ECANCELED);
	assert_int_equal(ibp_verbs_wc_errno(IBV_WC_LOC_PROT_ERR), -EINVAL);
	assert_int_equal(ibp_verbs_wc_errno(IBV_WC_FATAL_ERR), -EIO);
	assert_non_null(strstr(ibp_verbs_wc_reason(IBV_WC_RETRY_EXC_ERR), "did not acknowledge"));
	assert_non_null(ibp_verbs_wc_reason(12345)); /* unknown: a string, never NULL */
}

/* ---- endpoint checks ---- */

static void good_pair(struct ibp_endpoint *l, struct ibp_endpoint *p)
{
	memset(l, 0, sizeof(*l));
	l->kind = IBP_TX_VERBS;
	l->link_layer = IBP_LL_ETH;
	l->qpn = 0x11;
	l->psn = 0x123456;
	l->mtu = 1024;
	l->buf_len = 1 << 20;
	l->gid_index = 1;
	gid_v4(l->gid, "10.77.1.1");
	*p = *l;
	p->qpn = 0x12;
	gid_v4(p->gid, "10.77.1.2");
}

static void test_endpoint_check_table(void **state)
{
	static const struct {
		const char *field, *want;
	} cases[] = {
	    {"kind", "expected verbs"},
	    {"ll", "link layer"},
	    {"qpn0", "qp number"},
	    {"qpn25", "qp number"},
	    {"psn25", "psn"},
	    {"mtu0", "peer mtu 0"},
	    {"mtu1500", "peer mtu 1500"},
	    {"buf", "peer buffer"},
	    {"gid0", "gid is zero"},
	    {"family", "address families"},
	    {"iblid0", "not a unicast"},
	    {"iblidmc", "not a unicast"},
	};
	struct ibp_endpoint l, p;
	char why[IBP_TEXT_MAX];
	(void)state;

	good_pair(&l, &p);
	assert_int_equal(ibp_verbs_endpoint_check(&l, &p, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *f = cases[i].field;

		good_pair(&l, &p);
		if (!strcmp(f, "kind"))
			p.kind = IBP_TX_SOCKET;
		else if (!strcmp(f, "ll"))
			p.link_layer = IBP_LL_IB;
		else if (!strcmp(f, "qpn0"))
			p.qpn = 0;
		else if (!strcmp(f, "qpn25"))
			p.qpn = 0x1000000;
		else if (!strcmp(f, "psn25"))
			p.psn = 0x1000000;
		else if (!strcmp(f, "mtu0"))
			p.mtu = 0;
		else if (!strcmp(f, "mtu1500"))
			p.mtu = 1500;
		else if (!strcmp(f, "buf"))
			p.buf_len = 4;
		else if (!strcmp(f, "gid0"))
			memset(p.gid, 0, 16);
		else if (!strcmp(f, "family"))
			gid_v6(p.gid, "fe80::1");
		else if (!strcmp(f, "iblid0") || !strcmp(f, "iblidmc")) {
			l.link_layer = p.link_layer = IBP_LL_IB;
			l.lid = 1;
			p.lid = strcmp(f, "iblid0") ? 0xc001 : 0;
		}
		assert_int_equal(ibp_verbs_endpoint_check(&l, &p, why, sizeof(why)), -EPROTO);
		if (!strstr(why, cases[i].want))
			fail_msg("case %s: reason '%s' lacks '%s'", f, why, cases[i].want);
	}
	/* IB with a good LID passes; a tiny WHY buffer is safe */
	good_pair(&l, &p);
	l.link_layer = p.link_layer = IBP_LL_IB;
	p.lid = 7;
	assert_int_equal(ibp_verbs_endpoint_check(&l, &p, why, 1), 0);
	p.kind = 9;
	assert_int_equal(ibp_verbs_endpoint_check(&l, &p, why, 1), -EPROTO);
	assert_int_equal(ibp_verbs_endpoint_check(&l, &p, NULL, 0), -EPROTO);
}

/* ---- open without a device, close on nothing ---- */

static void test_open_missing_device_is_clean_error(void **state)
{
	struct ibp_tx_port port;
	struct ibp_tx_opts opts;
	struct ibp_tx *tx = (struct ibp_tx *)&port; /* must be reset to NULL */
	char err[256] = "stale";
	int rc;
	(void)state;

	assert_non_null(&ibp_transport_verbs);
	assert_ptr_equal(ibp_transport_find("verbs"), &ibp_transport_verbs);
	memset(&port, 0, sizeof(port));
	snprintf(port.device, sizeof(port.device), "ibp_no_such_dev9");
	port.port = 1;
	port.gid_index = -1;
	memset(&opts, 0, sizeof(opts));
	opts.buf_len = 4096;
	opts.err = err;
	opts.errlen = sizeof(err);
	rc = ibp_transport_verbs.open(&port, &opts, &tx);
	assert_int_equal(rc, -ENODEV);
	assert_null(tx);
	/* says what is missing (the caller names the device and port) */
	assert_true(strstr(err, "no such rdma device") || strstr(err, "no rdma device"));

	port.port = 0;
	assert_int_equal(ibp_transport_verbs.open(&port, &opts, &tx), -EINVAL);
	port.port = 1;
	opts.buf_len = 8;
	assert_int_equal(ibp_transport_verbs.open(&port, &opts, &tx), -EINVAL);
	assert_non_null(strstr(err, "buffer of 8 bytes"));
	assert_int_equal(ibp_transport_verbs.open(NULL, &opts, &tx), -EINVAL);
	assert_int_equal(ibp_transport_verbs.open(&port, &opts, NULL), -EINVAL);
	ibp_transport_verbs.close(NULL);
}

/* ---- live: a real device (the Soft-RoCE VM) ---- */

struct live {
	char device[IBP_DEV_MAX];
	char why[256];
};

static int live_setup(void **state)
{
	static struct live lv;
	struct ibv_device **list;
	const char *want = getenv("IBP_TEST_VERBS_DEVICE");
	int n = 0;

	memset(&lv, 0, sizeof(lv));
	*state = &lv;
	list = ibv_get_device_list(&n);
	if (!list) {
		snprintf(lv.why, sizeof(lv.why), "no rdma device: ibv_get_device_list: %s",
			 strerror(errno));
		return 0;
	}
	for (int i = 0; i < n && !lv.device[0]; i++) {
		struct ibv_context *ctx;
		struct ibv_port_attr pa;
		const char *name = ibv_get_device_name(list[i]);

		if (want && strcmp(want, name))
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			continue;
		if (!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE)
			snprintf(lv.device, sizeof(lv.device), "%s", name);
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	if (!lv.device[0])
		snprintf(lv.why, sizeof(lv.why), "no rdma device with an ACTIVE port 1%s%s",
			 want ? " named " : "", want ? want : "");
	return 0;
}

#define LIVE_OR_SKIP(lv)                                                                           \
	do {                                                                                       \
		if (!(lv)->device[0]) {                                                            \
			print_message("# skip: %s\n", (lv)->why);                                  \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

struct side {
	struct ibp_tx *tx;
	struct ibp_endpoint peer;
	enum ibp_tx_role role;
	int64_t deadline;
	uint64_t seed_send, seed_check;
	size_t len;
	uint64_t burst;
	unsigned iters;
	int rc_connect, rc_pattern, rc_bw, rc_lat;
	size_t bad;
	uint64_t bw_ns, lat_ns;
	char err[256];
};

static void *side_run(void *arg)
{
	struct side *s = arg;
	const struct ibp_transport_ops *o = &ibp_transport_verbs;

	s->rc_connect = o->connect(s->tx, &s->peer, s->role, s->deadline);
	if (s->rc_connect)
		return NULL;
	if (s->role == IBP_TX_SENDER) {
		s->rc_pattern = o->send_pattern(s->tx, s->seed_send, s->len, s->deadline);
		if (!s->rc_pattern && s->burst)
			s->rc_bw = o->bw_send(s->tx, s->burst, s->deadline, &s->bw_ns);
		if (!s->rc_pattern && !s->rc_bw && s->iters)
			s->rc_lat = o->lat_ping(s->tx, s->iters, s->deadline, &s->lat_ns);
	} else {
		s->rc_pattern = o->recv_pattern(s->tx, s->seed_check, s->len, s->deadline, &s->bad);
		if (!s->rc_pattern && s->burst)
			s->rc_bw = o->bw_recv(s->tx, s->burst, s->deadline);
		if (!s->rc_pattern && !s->rc_bw && s->iters)
			s->rc_lat = o->lat_pong(s->tx, s->iters, s->deadline);
	}
	return NULL;
}

static int open_side(const struct live *lv, struct side *s, int gid_index, size_t buf_len)
{
	struct ibp_tx_port port;
	struct ibp_tx_opts opts;
	int rc;

	memset(&port, 0, sizeof(port));
	snprintf(port.device, sizeof(port.device), "%s", lv->device);
	port.port = 1;
	port.gid_index = gid_index;
	memset(&opts, 0, sizeof(opts));
	opts.buf_len = buf_len;
	opts.err = s->err;
	opts.errlen = sizeof(s->err);
	rc = ibp_transport_verbs.open(&port, &opts, &s->tx);
	if (rc)
		print_message("# open %s gid index %d: %d: %s\n", lv->device, gid_index, rc,
			      s->err);
	return rc;
}

/* Opens two tx, swaps endpoints, runs both sides concurrently. */
static void run_pair(const struct live *lv, struct side *a, struct side *b, double seconds)
{
	struct ibp_endpoint ea, eb;
	pthread_t ta, tb;

	assert_int_equal(ibp_transport_verbs.endpoint(a->tx, &ea), 0);
	assert_int_equal(ibp_transport_verbs.endpoint(b->tx, &eb), 0);
	a->peer = eb;
	b->peer = ea;
	a->role = IBP_TX_SENDER;
	b->role = IBP_TX_RECEIVER;
	a->deadline = b->deadline = ibp_deadline_after_s(ibp_now_ns(), seconds);
	assert_int_equal(pthread_create(&ta, NULL, side_run, a), 0);
	assert_int_equal(pthread_create(&tb, NULL, side_run, b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	(void)lv;
}

static void test_live_loopback_pattern_burst_latency_pass(void **state)
{
	struct live *lv = *state;
	struct side a, b;
	struct ibp_endpoint ea;
	char g[64];

	LIVE_OR_SKIP(lv);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(open_side(lv, &a, -1, 1 << 20), 0);
	assert_int_equal(open_side(lv, &b, -1, 1 << 20), 0);
	assert_int_equal(ibp_transport_verbs.endpoint(a.tx, &ea), 0);
	assert_int_equal(ea.kind, IBP_TX_VERBS);
	assert_true(ibp_verbs_mtu_enum(ea.mtu) > 0);
	assert_true(ea.qpn > 0 && ea.qpn <= 0xffffff);
	if (ea.link_layer == IBP_LL_ETH) {
		/* the chosen GID is the IPv4-mapped RoCE v2 one (the VM gives eth0 IPv4) */
		ibp_verbs_gid_format(ea.gid, g, sizeof(g));
		print_message("# %s: gid index %u %s, mtu %u\n", lv->device, ea.gid_index, g,
			      ea.mtu);
		assert_true(ibp_verbs_gid_is_ipv4(ea.gid));
	}
	a.seed_send = b.seed_check = 0x5eed;
	a.len = b.len = 1 << 20;
	a.burst = b.burst = 2u << 20;
	a.iters = b.iters = 16;
	run_pair(lv, &a, &b, 60);
	if (a.rc_connect || b.rc_connect || a.rc_pattern || b.rc_pattern || a.rc_bw || b.rc_bw ||
	    a.rc_lat || b.rc_lat) {
		/* On stdout as a TAP comment: the VM suite shows the lines around a failure. */
		print_message(
		    "# sender connect/pattern/bw/lat %d/%d/%d/%d '%s', receiver %d/%d/%d/%d "
		    "'%s'\n",
		    a.rc_connect, a.rc_pattern, a.rc_bw, a.rc_lat, a.err, b.rc_connect,
		    b.rc_pattern, b.rc_bw, b.rc_lat, b.err);
		fail();
	}
	assert_true(a.bw_ns > 0);
	assert_true(a.lat_ns > 0);
	print_message("# burst 2 MiB in %.1f ms (%.3f Gb/s), median round trip %.1f us\n",
		      a.bw_ns / 1e6, 2.0 * 8 * 1048576 / (double)a.bw_ns, a.lat_ns / 1e3);
	ibp_transport_verbs.close(a.tx);
	ibp_transport_verbs.close(b.tx);
}

static void test_live_wrong_seed_is_ebadmsg_with_offset(void **state)
{
	struct live *lv = *state;
	struct side a, b;

	LIVE_OR_SKIP(lv);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(open_side(lv, &a, -1, 65536), 0);
	assert_int_equal(open_side(lv, &b, -1, 65536), 0);
	a.seed_send = 1;
	b.seed_check = 2;
	a.len = b.len = 65536;
	run_pair(lv, &a, &b, 10);
	assert_int_equal(a.rc_connect, 0);
	assert_int_equal(b.rc_connect, 0);
	assert_int_equal(a.rc_pattern, 0);
	assert_int_equal(b.rc_pattern, -EBADMSG);
	assert_true(b.bad < 65536);
	assert_non_null(strstr(b.err, "pattern differs at byte"));
	/* a tx that failed refuses more work rather than reading stale queues */
	ibp_transport_verbs.close(a.tx);
	ibp_transport_verbs.close(b.tx);
}

static void test_live_peer_not_connected_times_out_in_bound(void **state)
{
	struct live *lv = *state;
	struct side a, b;
	struct ibp_endpoint eb;
	int64_t t0, took;
	int rc;

	LIVE_OR_SKIP(lv);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(open_side(lv, &a, -1, 4096), 0);
	assert_int_equal(open_side(lv, &b, -1, 4096), 0);
	/* B never connects: its QP stays in INIT and drops A's hello */
	assert_int_equal(ibp_transport_verbs.endpoint(b.tx, &eb), 0);
	t0 = ibp_now_ns();
	rc = ibp_transport_verbs.connect(a.tx, &eb, IBP_TX_SENDER, t0 + 400 * IBP_NS_PER_MS);
	took = ibp_now_ns() - t0;
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(took >= 400 * IBP_NS_PER_MS);
	/* bounded by the deadline, not by the QP's retries (7 x 1 s on rxe) */
	assert_true(took < 3 * IBP_NS_PER_S);
	assert_non_null(strstr(a.err, "deadline"));
	/* and the failed tx stays failed */
	assert_int_equal(ibp_transport_verbs.send_pattern(a.tx, 1, 64, ibp_now_ns() + IBP_NS_PER_S),
			 -ETIMEDOUT);
	ibp_transport_verbs.close(a.tx);
	ibp_transport_verbs.close(b.tx);
}

static void test_live_bad_gid_index_is_named(void **state)
{
	struct live *lv = *state;
	struct side a, b;
	struct ibp_endpoint ea, eb;
	char why[IBP_TEXT_MAX];
	int rc;

	LIVE_OR_SKIP(lv);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(open_side(lv, &a, -1, 4096), 0);
	assert_int_equal(ibp_transport_verbs.endpoint(a.tx, &ea), 0);
	if (ea.link_layer != IBP_LL_ETH) {
		ibp_transport_verbs.close(a.tx);
		print_message("# skip: %s is not RoCE\n", lv->device);
		skip();
	}
	/* an index past the used entries is empty */
	rc = open_side(lv, &b, 200, 4096);
	assert_int_equal(rc, -EINVAL);
	assert_null(b.tx);
	assert_non_null(strstr(b.err, "gid index 200 is empty"));
	/* index 0 on rxe is the link-local IPv6 GID: a family mismatch with an IPv4 peer */
	rc = open_side(lv, &b, 0, 4096);
	assert_int_equal(rc, 0);
	assert_int_equal(ibp_transport_verbs.endpoint(b.tx, &eb), 0);
	if (ibp_verbs_gid_is_ipv4(eb.gid)) {
		ibp_transport_verbs.close(a.tx);
		ibp_transport_verbs.close(b.tx);
		print_message("# skip: gid index 0 is IPv4-mapped here\n");
		skip();
	}
	assert_int_equal(ibp_verbs_endpoint_check(&ea, &eb, why, sizeof(why)), -EPROTO);
	rc = ibp_transport_verbs.connect(a.tx, &eb, IBP_TX_SENDER, ibp_now_ns() + IBP_NS_PER_S);
	assert_int_equal(rc, -EPROTO);
	assert_non_null(strstr(a.err, "index 0"));
	ibp_transport_verbs.close(a.tx);
	ibp_transport_verbs.close(b.tx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gid_pick_prefers_own_ipv4_roce_v2),
	    cmocka_unit_test(test_gid_pick_ipv6_order_and_none),
	    cmocka_unit_test(test_gid_format_and_family),
	    cmocka_unit_test(test_mtu_conversions),
	    cmocka_unit_test(test_rate_from_port_attr_codes),
	    cmocka_unit_test(test_wc_status_maps_to_errno),
	    cmocka_unit_test(test_endpoint_check_table),
	    cmocka_unit_test(test_open_missing_device_is_clean_error),
	    cmocka_unit_test_setup(test_live_loopback_pattern_burst_latency_pass, live_setup),
	    cmocka_unit_test_setup(test_live_wrong_seed_is_ebadmsg_with_offset, live_setup),
	    cmocka_unit_test_setup(test_live_peer_not_connected_times_out_in_bound, live_setup),
	    cmocka_unit_test_setup(test_live_bad_gid_index_is_named, live_setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
