/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_pipe.c: the plan and the result frames between the plugin and
 * its test child (rdmatest_pipe.h).  One writer and one reader per frame;
 * the reader checks every field as it goes and stops at the first error.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/rdmatest_pipe.h"

/* ---- writer ------------------------------------------------------------- */

struct wbuf {
	uint8_t *p;
	size_t len, off;
	int err;
};

static void put_bytes(struct wbuf *w, const void *b, size_t n)
{
	if (w->err)
		return;
	if (n > w->len - w->off) {
		w->err = -ENOSPC;
		return;
	}
	memcpy(w->p + w->off, b, n);
	w->off += n;
}

static void put_u64(struct wbuf *w, uint64_t v, int bytes)
{
	uint8_t b[8];

	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
	put_bytes(w, b, (size_t)bytes);
}

static void put_u8(struct wbuf *w, unsigned v)
{
	put_u64(w, v, 1);
}
static void put_u16(struct wbuf *w, unsigned v)
{
	put_u64(w, v, 2);
}
static void put_u32(struct wbuf *w, uint32_t v)
{
	put_u64(w, v, 4);
}
static void put_f64(struct wbuf *w, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	put_u64(w, v, 8);
}

static bool printable(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e;
}

/*
 * A string shorter than MAX.  CLEAN: replace what the decoder would refuse
 * (the child's text may quote bytes from anywhere); else refuse it.
 */
static void put_str(struct wbuf *w, const char *s, size_t max, bool clean)
{
	size_t n = strnlen(s, max);

	if (n >= max) {
		if (!clean) {
			w->err = w->err ? w->err : -EBADMSG;
			return;
		}
		n = max - 1;
	}
	put_u16(w, (unsigned)n);
	for (size_t i = 0; i < n && !w->err; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!printable(c)) {
			if (!clean) {
				w->err = -EBADMSG;
				return;
			}
			c = '?';
		}
		put_bytes(w, &c, 1);
	}
}

static void put_header(struct wbuf *w, unsigned type)
{
	put_u32(w, IBP_PIPE_MAGIC);
	put_u16(w, IBP_PIPE_VERSION);
	put_u16(w, type);
	put_u32(w, 0); /* length, patched by finish */
}

static int finish(struct wbuf *w)
{
	size_t plen;

	if (w->err)
		return w->err;
	plen = w->off - IBP_PIPE_HDR_LEN;
	if (w->off > IBP_PIPE_FRAME_MAX)
		return -ENOSPC;
	for (int i = 0; i < 4; i++)
		w->p[8 + i] = (uint8_t)(plen >> (8 * (3 - i)));
	return (int)w->off;
}

/* ---- reader ------------------------------------------------------------- */

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	int err;
};

static uint64_t get_u64(struct rbuf *r, int bytes)
{
	uint64_t v = 0;

	if (r->err)
		return 0;
	if ((size_t)bytes > r->len - r->off) {
		r->err = -EBADMSG;
		return 0;
	}
	for (int i = 0; i < bytes; i++)
		v = (v << 8) | r->p[r->off + (size_t)i];
	r->off += (size_t)bytes;
	return v;
}

static unsigned get_u8(struct rbuf *r)
{
	return (unsigned)get_u64(r, 1);
}
static unsigned get_u16(struct rbuf *r)
{
	return (unsigned)get_u64(r, 2);
}
static uint32_t get_u32(struct rbuf *r)
{
	return (uint32_t)get_u64(r, 4);
}

static void bad(struct rbuf *r)
{
	if (!r->err)
		r->err = -EBADMSG;
}

/* A finite double in [LO, HI]. */
static double get_f64(struct rbuf *r, double lo, double hi)
{
	uint64_t v = get_u64(r, 8);
	double d;

	memcpy(&d, &v, sizeof(d));
	if (r->err)
		return 0;
	if (!isfinite(d) || d < lo || d > hi) {
		bad(r);
		return 0;
	}
	return d;
}

static uint32_t get_u32_max(struct rbuf *r, uint32_t max)
{
	uint32_t v = get_u32(r);

	if (v > max)
		bad(r);
	return r->err ? 0 : v;
}

static int32_t get_s32(struct rbuf *r, int32_t lo, int32_t hi)
{
	uint32_t u = get_u32(r);
	int32_t v;

	memcpy(&v, &u, sizeof(v));
	if (!r->err && (v < lo || v > hi))
		bad(r);
	return r->err ? 0 : v;
}

static void get_str(struct rbuf *r, char *out, size_t max)
{
	unsigned n = get_u16(r);

	out[0] = '\0';
	if (r->err)
		return;
	if (n >= max || n > r->len - r->off) {
		bad(r);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!printable(r->p[r->off + i])) {
			bad(r);
			return;
		}
	}
	memcpy(out, r->p + r->off, n);
	out[n] = '\0';
	r->off += n;
}

static int get_header(struct rbuf *r, unsigned want)
{
	uint32_t magic, plen;
	unsigned version, type;

	if (r->len < IBP_PIPE_HDR_LEN || r->len > IBP_PIPE_FRAME_MAX)
		return -EBADMSG;
	magic = get_u32(r);
	version = get_u16(r);
	type = get_u16(r);
	plen = get_u32(r);
	if (magic != IBP_PIPE_MAGIC)
		return -EBADMSG;
	if (version != IBP_PIPE_VERSION)
		return -EPROTONOSUPPORT;
	if (type != want || plen != r->len - IBP_PIPE_HDR_LEN)
		return -EBADMSG;
	return 0;
}

static int get_end(struct rbuf *r)
{
	if (r->err)
		return r->err;
	return r->off == r->len ? 0 : -EBADMSG;
}

/* ---- the plan ----------------------------------------------------------- */

void ibp_pipe_plan_init(struct ibp_pipe_plan *p)
{
	memset(p, 0, sizeof(*p));
	ibp_policy_init(&p->policy);
}

static bool plan_ok(const struct ibp_pipe_plan *p)
{
	const struct ibp_policy *pol = &p->policy;

	if (p->mode != IBP_RDMATEST_QUICK && p->mode != IBP_RDMATEST_FULL)
		return false;
	if (p->n_listen > IBP_PIPE_MAX_LISTEN || p->n_ports > IBP_RDMATEST_MAX_RAILS)
		return false;
	if (!(pol->test_timeout_s > 0 && pol->test_timeout_s <= 600) ||
	    !(pol->test_min_bw >= 0 && pol->test_min_bw <= 1) || pol->test_max_lat_us < 1 ||
	    pol->test_max_lat_us > 10000000 || pol->test_port_lo < 1 ||
	    pol->test_port_lo > pol->test_port_hi || pol->test_port_hi > 65535)
		return false;
	if (strcmp(pol->test_transport, "verbs") != 0 && strcmp(pol->test_transport, "socket") != 0)
		return false;
	for (size_t i = 0; i < p->n_listen; i++)
		if (!p->listen_ports[i])
			return false;
	for (size_t i = 0; i < p->n_ports; i++) {
		const struct ibp_tx_port *t = &p->ports[i];

		if (t->port > 255 || t->gid_index < -1 || t->gid_index > 65535 ||
		    (unsigned)t->link_layer > IBP_LL_ETH || !(t->rate_gbps >= 0) ||
		    !(t->rate_gbps <= 1e6) || t->rail >= IBP_RDMATEST_MAX_RAILS || t->prefix > 128)
			return false;
	}
	return true;
}

int ibp_pipe_plan_encode(const struct ibp_pipe_plan *p, uint8_t *buf, size_t len)
{
	struct wbuf w = {.p = buf, .len = len};
	const struct ibp_policy *pol = &p->policy;

	if (!plan_ok(p))
		return -EBADMSG;
	put_header(&w, IBP_PIPE_PLAN);
	put_u32(&w, p->job);
	put_u32(&w, p->step);
	put_u32(&w, p->uid);
	put_u32(&w, p->index);
	put_u8(&w, (unsigned)p->mode);
	put_str(&w, p->nodelist, sizeof(p->nodelist), false);
	put_str(&w, p->munge_socket, sizeof(p->munge_socket), false);
	put_str(&w, p->topology_conf, sizeof(p->topology_conf), false);
	put_str(&w, p->topology_addr, sizeof(p->topology_addr), false);
	put_str(&w, p->topology_pattern, sizeof(p->topology_pattern), false);
	put_f64(&w, pol->test_timeout_s);
	put_f64(&w, pol->test_min_bw);
	put_u32(&w, pol->test_max_lat_us);
	put_u16(&w, pol->test_port_lo);
	put_u16(&w, pol->test_port_hi);
	put_u8(&w, pol->test_pairing_any);
	put_str(&w, pol->test_transport, sizeof(pol->test_transport), false);
	put_u8(&w, (unsigned)p->n_listen);
	for (size_t i = 0; i < p->n_listen; i++) {
		put_u16(&w, p->listen_ports[i]);
		put_u8(&w, p->listen_bound[i] ? 1 : 0);
	}
	put_u8(&w, (unsigned)p->n_ports);
	for (size_t i = 0; i < p->n_ports; i++) {
		const struct ibp_tx_port *t = &p->ports[i];

		put_str(&w, t->device, sizeof(t->device), false);
		put_u32(&w, t->port);
		put_u32(&w, (uint32_t)t->gid_index);
		put_u8(&w, (unsigned)t->link_layer);
		put_f64(&w, t->rate_gbps);
		put_u32(&w, t->rail);
		put_str(&w, t->addr, sizeof(t->addr), false);
		put_str(&w, t->ifname, sizeof(t->ifname), false);
		put_u8(&w, t->prefix);
	}
	for (int k = 0; k < IBP_CK_N; k++)
		put_u8(&w, pol->consistency[k] == IBP_CONSISTENCY_OFF
			       ? 0
			       : (unsigned)pol->consistency[k]);
	put_u8(&w, p->has_fp ? 1 : 0);
	if (p->has_fp) {
		/* the fingerprint's compact wire form (fingerprint.h), after its length */
		uint8_t *fpw = malloc(IBP_FP_WIRE_MAX);
		int n = fpw ? ibp_fp_encode(&p->fp, fpw, IBP_FP_WIRE_MAX) : -ENOMEM;

		if (n < 0) {
			w.err = w.err ? w.err : -EBADMSG;
		} else {
			put_u16(&w, (unsigned)n);
			put_bytes(&w, fpw, (size_t)n);
		}
		free(fpw);
	}
	return finish(&w);
}

int ibp_pipe_plan_decode(const uint8_t *buf, size_t len, struct ibp_pipe_plan *p)
{
	struct rbuf r = {.p = buf, .len = len};
	struct ibp_policy *pol = &p->policy;
	unsigned v;
	int rc;

	ibp_pipe_plan_init(p);
	rc = get_header(&r, IBP_PIPE_PLAN);
	if (rc)
		return rc;
	p->job = get_u32(&r);
	p->step = get_u32(&r);
	p->uid = get_u32(&r);
	p->index = get_u32_max(&r, IBP_OOB_MAX_NODES - 1);
	v = get_u8(&r);
	if (v != IBP_RDMATEST_QUICK && v != IBP_RDMATEST_FULL)
		bad(&r);
	p->mode = (enum ibp_rdmatest_mode)v;
	get_str(&r, p->nodelist, sizeof(p->nodelist));
	get_str(&r, p->munge_socket, sizeof(p->munge_socket));
	get_str(&r, p->topology_conf, sizeof(p->topology_conf));
	get_str(&r, p->topology_addr, sizeof(p->topology_addr));
	get_str(&r, p->topology_pattern, sizeof(p->topology_pattern));
	pol->test_timeout_s = get_f64(&r, 1e-9, 600);
	pol->test_min_bw = get_f64(&r, 0, 1);
	pol->test_max_lat_us = get_u32_max(&r, 10000000);
	pol->test_port_lo = get_u16(&r);
	pol->test_port_hi = get_u16(&r);
	v = get_u8(&r);
	if (v > 1)
		bad(&r);
	pol->test_pairing_any = v == 1;
	get_str(&r, pol->test_transport, sizeof(pol->test_transport));
	p->n_listen = get_u8(&r);
	if (p->n_listen > IBP_PIPE_MAX_LISTEN)
		bad(&r);
	for (size_t i = 0; !r.err && i < p->n_listen; i++) {
		p->listen_ports[i] = (uint16_t)get_u16(&r);
		v = get_u8(&r);
		if (v > 1)
			bad(&r);
		p->listen_bound[i] = v == 1;
	}
	p->n_ports = get_u8(&r);
	if (p->n_ports > IBP_RDMATEST_MAX_RAILS)
		bad(&r);
	for (size_t i = 0; !r.err && i < p->n_ports; i++) {
		struct ibp_tx_port *t = &p->ports[i];

		get_str(&r, t->device, sizeof(t->device));
		t->port = get_u32(&r);
		t->gid_index = (int)get_u32(&r);
		t->link_layer = (enum ibp_link_layer)get_u8(&r);
		t->rate_gbps = get_f64(&r, 0, 1e6);
		t->rail = get_u32(&r);
		get_str(&r, t->addr, sizeof(t->addr));
		get_str(&r, t->ifname, sizeof(t->ifname));
		t->prefix = (uint8_t)get_u8(&r);
		if (t->prefix > 128)
			bad(&r);
	}
	for (int k = 0; !r.err && k < IBP_CK_N; k++) {
		v = get_u8(&r);
		if (v != 0 && v != IBP_SEV_WARN && v != IBP_SEV_FAIL)
			bad(&r);
		pol->consistency[k] = v ? (int)v : IBP_CONSISTENCY_OFF;
	}
	v = get_u8(&r);
	if (v > 1)
		bad(&r);
	p->has_fp = v == 1;
	if (p->has_fp && !r.err) {
		size_t n = get_u16(&r);
		uint8_t *fpw = malloc(IBP_FP_WIRE_MAX);

		if (!fpw || n < IBP_FP_WIRE_MIN || n > IBP_FP_WIRE_MAX) {
			bad(&r);
		} else {
			for (size_t i = 0; i < n && !r.err; i++)
				fpw[i] = (uint8_t)get_u8(&r);
			if (!r.err && ibp_fp_decode(fpw, n, &p->fp))
				bad(&r);
		}
		free(fpw);
	}
	rc = get_end(&r);
	if (!rc && !plan_ok(p))
		rc = -EBADMSG;
	if (rc)
		ibp_pipe_plan_init(p);
	return rc;
}

/* ---- the result --------------------------------------------------------- */

#define FIGURE_MAX 1e9 /* Gb/s, us, s: anything larger is not a measurement */

static bool code_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static void put_finding(struct wbuf *w, const struct ibp_finding *x)
{
	char code[IBP_CODE_MAX];

	snprintf(code, sizeof(code), "%s", x->code);
	if (!code_ok(code))
		snprintf(code, sizeof(code), "rdmatest_child_finding");
	put_str(w, code, sizeof(x->code), false);
	put_u8(w, x->severity <= IBP_SEV_FAIL ? (unsigned)x->severity : IBP_SEV_FAIL);
	put_u8(w, x->fclass == IBP_CLASS_JOB ? IBP_CLASS_JOB : IBP_CLASS_NODE);
	put_str(w, x->node, sizeof(x->node), true);
	put_str(w, x->device, sizeof(x->device), true);
	put_u32(w, x->port >= 0 && x->port <= 65535 ? (uint32_t)x->port : 0);
	put_str(w, x->observed, sizeof(x->observed), true);
	put_str(w, x->expected, sizeof(x->expected), true);
	put_str(w, x->fix, sizeof(x->fix), true);
}

static double figure(double d)
{
	return isfinite(d) && d >= 0 && d <= FIGURE_MAX ? d : 0;
}

int ibp_pipe_result_encode(const struct ibp_rdmatest_result *r, const struct ibp_findings *f,
			   uint8_t *buf, size_t len)
{
	struct wbuf w = {.p = buf, .len = len};
	size_t n_links = r->n_links < IBP_RDMATEST_MAX_LINKS ? r->n_links : IBP_RDMATEST_MAX_LINKS;
	size_t n_susp = r->n_suspects < 8 ? r->n_suspects : 8;
	size_t n_find = f ? f->n : 0;
	uint32_t nnodes = r->nnodes <= IBP_OOB_MAX_NODES ? (uint32_t)r->nnodes : 0;

	put_header(&w, IBP_PIPE_RESULT);
	put_u8(&w, r->pass ? 1 : 0);
	put_u8(&w, r->inconclusive ? 1 : 0);
	put_u32(&w, nnodes);
	put_u32(&w, r->index < nnodes ? (uint32_t)r->index : 0);
	put_u16(&w, r->oob_port);
	put_u32(&w, r->n_summaries <= UINT32_MAX ? (uint32_t)r->n_summaries : UINT32_MAX);
	put_u32(&w, (uint32_t)(r->setup_err >= -4095 && r->setup_err <= 0 ? r->setup_err : -EIO));
	put_u32(&w, r->dropped);
	put_u32(&w, r->dropped_outside);
	put_u32(&w, r->dropped_peer);
	put_str(&w, r->drop_reason, sizeof(r->drop_reason), true);
	put_f64(&w, figure(r->elapsed_s));
	put_u8(&w, (unsigned)n_susp);
	for (size_t i = 0; i < n_susp; i++)
		put_u32(&w, r->suspects[i] < nnodes ? r->suspects[i] : 0);
	put_u16(&w, (unsigned)n_links);
	for (size_t i = 0; i < n_links; i++) {
		const struct ibp_rdmatest_link *l = &r->links[i];

		put_u32(&w, l->from < nnodes ? l->from : 0);
		put_u32(&w, l->to < nnodes ? l->to : 0);
		put_u8(&w, l->round);
		put_u16(&w, l->rail);
		put_u8(&w, l->status < IBP_LINK_STATUS_COUNT ? (unsigned)l->status : 0);
		put_u32(&w, (uint32_t)(l->err >= -4095 && l->err <= 0 ? l->err : -EIO));
		put_str(&w, l->device, sizeof(l->device), true);
		put_u32(&w, l->port <= 255 ? l->port : 0);
		put_str(&w, l->peer_device, sizeof(l->peer_device), true);
		put_u32(&w, l->peer_port <= 255 ? l->peer_port : 0);
		put_f64(&w, figure(l->gbps));
		put_f64(&w, figure(l->lat_us));
		put_f64(&w, figure(l->expect_gbps));
		put_str(&w, l->detail, sizeof(l->detail), true);
	}
	if (n_find > IBP_PIPE_MAX_FINDINGS)
		n_find = IBP_PIPE_MAX_FINDINGS;
	put_u16(&w, (unsigned)n_find);
	for (size_t i = 0; i < n_find; i++) {
		if (i == IBP_PIPE_MAX_FINDINGS - 1 && f->n > IBP_PIPE_MAX_FINDINGS) {
			struct ibp_finding cut = {.severity = IBP_SEV_WARN};

			snprintf(cut.code, sizeof(cut.code), "rdmatest_findings_cut");
			snprintf(cut.observed, sizeof(cut.observed),
				 "%zu more findings of the test were not passed on",
				 f->n - (IBP_PIPE_MAX_FINDINGS - 1));
			put_finding(&w, &cut);
			break;
		}
		put_finding(&w, &f->v[i]);
	}
	return finish(&w);
}

static void get_finding(struct rbuf *r, struct ibp_finding *x)
{
	unsigned v;

	memset(x, 0, sizeof(*x));
	get_str(r, x->code, sizeof(x->code));
	if (!r->err && !code_ok(x->code))
		bad(r);
	v = get_u8(r);
	if (v > IBP_SEV_FAIL)
		bad(r);
	x->severity = (enum ibp_severity)v;
	v = get_u8(r);
	if (v > IBP_CLASS_JOB)
		bad(r);
	x->fclass = (enum ibp_fault_class)v;
	get_str(r, x->node, sizeof(x->node));
	get_str(r, x->device, sizeof(x->device));
	x->port = (int)get_u32_max(r, 65535);
	get_str(r, x->observed, sizeof(x->observed));
	get_str(r, x->expected, sizeof(x->expected));
	get_str(r, x->fix, sizeof(x->fix));
}

int ibp_pipe_result_decode(const uint8_t *buf, size_t len, struct ibp_rdmatest_result *res,
			   struct ibp_findings *f)
{
	struct rbuf r = {.p = buf, .len = len};
	struct ibp_findings got;
	size_t before;
	uint32_t nnodes;
	unsigned v, n;
	int rc;

	memset(res, 0, sizeof(*res));
	ibp_findings_init(&got);
	rc = get_header(&r, IBP_PIPE_RESULT);
	if (rc)
		return rc;
	v = get_u8(&r);
	if (v > 1)
		bad(&r);
	res->pass = v == 1;
	v = get_u8(&r);
	if (v > 1)
		bad(&r);
	res->inconclusive = v == 1;
	nnodes = get_u32_max(&r, IBP_OOB_MAX_NODES);
	res->nnodes = nnodes;
	res->index = get_u32(&r);
	if (!r.err && res->index >= nnodes && !(nnodes == 0 && res->index == 0))
		bad(&r);
	res->oob_port = (uint16_t)get_u16(&r);
	res->n_summaries = get_u32(&r);
	res->setup_err = get_s32(&r, -4095, 0);
	res->dropped = get_u32(&r);
	res->dropped_outside = get_u32(&r);
	res->dropped_peer = get_u32(&r);
	get_str(&r, res->drop_reason, sizeof(res->drop_reason));
	res->elapsed_s = get_f64(&r, 0, FIGURE_MAX);
	n = get_u8(&r);
	if (n > 8)
		bad(&r);
	for (unsigned i = 0; !r.err && i < n; i++) {
		res->suspects[i] = get_u32(&r);
		if (res->suspects[i] >= nnodes)
			bad(&r);
	}
	res->n_suspects = r.err ? 0 : n;
	n = get_u16(&r);
	if (n > IBP_RDMATEST_MAX_LINKS)
		bad(&r);
	for (unsigned i = 0; !r.err && i < n; i++) {
		struct ibp_rdmatest_link *l = &res->links[i];

		l->from = get_u32(&r);
		l->to = get_u32(&r);
		if (!r.err && (l->from >= nnodes || l->to >= nnodes))
			bad(&r);
		l->round = (uint8_t)get_u8(&r);
		l->rail = (uint16_t)get_u16(&r);
		v = get_u8(&r);
		if (v >= IBP_LINK_STATUS_COUNT)
			bad(&r);
		l->status = (enum ibp_link_status)v;
		l->err = get_s32(&r, -4095, 0);
		get_str(&r, l->device, sizeof(l->device));
		l->port = get_u32_max(&r, 255);
		get_str(&r, l->peer_device, sizeof(l->peer_device));
		l->peer_port = get_u32_max(&r, 255);
		l->gbps = get_f64(&r, 0, FIGURE_MAX);
		l->lat_us = get_f64(&r, 0, FIGURE_MAX);
		l->expect_gbps = get_f64(&r, 0, FIGURE_MAX);
		get_str(&r, l->detail, sizeof(l->detail));
	}
	res->n_links = r.err ? 0 : n;
	n = get_u16(&r);
	if (n > IBP_PIPE_MAX_FINDINGS)
		bad(&r);
	for (unsigned i = 0; !r.err && i < n; i++) {
		struct ibp_finding x;

		get_finding(&r, &x);
		if (!r.err && ibp_findings_add(&got, &x))
			r.err = -ENOMEM;
	}
	rc = get_end(&r);
	before = f->n;
	for (size_t i = 0; !rc && i < got.n; i++)
		if (ibp_findings_add(f, &got.v[i]))
			rc = -ENOMEM;
	if (rc)
		f->n = before; /* nothing appended */
	ibp_findings_release(&got);
	if (rc)
		memset(res, 0, sizeof(*res));
	return rc;
}
