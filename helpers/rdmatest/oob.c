/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * oob.c: the cross-node test's message codec and framed I/O (see oob.h).
 * One writer (struct wbuf) and one reader (struct rbuf, which refuses any
 * read past the payload) do every byte, so a length is checked in one place.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ibprep/oob.h"
#include "ibprep/text.h"

_Static_assert(sizeof(struct ibp_oob_msg) < 1024, "the common message stays small");

size_t ibp_oob_payload_max(unsigned type)
{
	switch (type) {
	case IBP_OOB_HELLO:
		return IBP_OOB_HELLO_MAX;
	case IBP_OOB_ENDPOINT:
		return IBP_OOB_ENDPOINT_MAX;
	case IBP_OOB_CTRL:
		return IBP_OOB_CTRL_LEN;
	case IBP_OOB_SUMMARY:
		return IBP_OOB_SUMMARY_MAX;
	case IBP_OOB_ERROR:
		return IBP_OOB_ERROR_MAX;
	case IBP_OOB_FINGERPRINT:
		return IBP_FP_WIRE_MAX;
	case IBP_OOB_FPSUM:
		return IBP_OOB_FPSUM_MAX;
	case IBP_OOB_BATCH:
		return IBP_OOB_BATCH_MAX;
	default:
		return 0;
	}
}

size_t ibp_oob_payload_min(unsigned type)
{
	switch (type) {
	case IBP_OOB_HELLO:
		return IBP_OOB_HELLO_MIN;
	case IBP_OOB_ENDPOINT:
		return IBP_OOB_ENDPOINT_MIN;
	case IBP_OOB_CTRL:
		return IBP_OOB_CTRL_LEN;
	case IBP_OOB_SUMMARY:
		return IBP_OOB_SUMMARY_MIN;
	case IBP_OOB_ERROR:
		return IBP_OOB_ERROR_MIN;
	case IBP_OOB_FINGERPRINT:
		return IBP_FP_WIRE_MIN;
	case IBP_OOB_FPSUM:
		return IBP_OOB_FPSUM_HEAD_LEN; /* BROKEN: no sum */
	case IBP_OOB_BATCH:
		return IBP_OOB_BATCH_MIN;
	default:
		return 0;
	}
}

static const char *const type_names[] = {
    [IBP_OOB_HELLO] = "HELLO", [IBP_OOB_ENDPOINT] = "ENDPOINT",
    [IBP_OOB_CTRL] = "CTRL",   [IBP_OOB_SUMMARY] = "SUMMARY",
    [IBP_OOB_ERROR] = "ERROR", [IBP_OOB_FINGERPRINT] = "FINGERPRINT",
    [IBP_OOB_FPSUM] = "FPSUM", [IBP_OOB_BATCH] = "BATCH",
};

const char *ibp_oob_type_name(unsigned type)
{
	return type < sizeof(type_names) / sizeof(type_names[0]) && type_names[type]
		   ? type_names[type]
		   : NULL;
}

bool ibp_oob_sealed(unsigned type)
{
	return type == IBP_OOB_ENDPOINT || type == IBP_OOB_CTRL || type == IBP_OOB_SUMMARY ||
	       type == IBP_OOB_FINGERPRINT || type == IBP_OOB_FPSUM || type == IBP_OOB_BATCH;
}

/* A NUL-terminated printable string filling at most LEN-1 bytes of a field. */
static int check_text(const char *s, size_t len)
{
	size_t n = strnlen(s, len);

	if (n == len)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return -EBADMSG;
	return 0;
}

static int check_endpoint(const struct ibp_endpoint *ep)
{
	if (ep->kind != IBP_TX_SOCKET && ep->kind != IBP_TX_VERBS)
		return -EBADMSG;
	if (ep->link_layer > IBP_LL_ETH)
		return -EBADMSG;
	if (ep->qpn > 0xffffff || ep->psn > 0xffffff)
		return -EBADMSG;
	switch (ep->mtu) {
	case 0:
	case 256:
	case 512:
	case 1024:
	case 2048:
	case 4096:
		break;
	default:
		return -EBADMSG;
	}
	if (ep->gid_index > 0xffff)
		return -EBADMSG;
	return 0;
}

static int check_hello(const struct ibp_oob_hello *h)
{
	if (h->nnodes == 0 || h->nnodes > IBP_OOB_MAX_NODES || h->from >= h->nnodes ||
	    h->to >= h->nnodes || h->from == h->to)
		return -EBADMSG;
	if (h->round < 1 || h->round > IBP_OOB_RING_ROUND ||
	    (h->round == IBP_OOB_RING_ROUND && h->rail != 0))
		return -EBADMSG;
	if (h->n_rails < 1 || h->n_rails > IBP_OOB_MAX_RAILS || h->rail >= IBP_OOB_MAX_RAILS)
		return -EBADMSG;
	if (h->flags & ~(unsigned)(IBP_HELLO_REPLY | IBP_HELLO_INSECURE | IBP_HELLO_NO_RAIL |
				   IBP_HELLO_NO_RING))
		return -EBADMSG;
	if ((h->flags & IBP_HELLO_NO_RING) &&
	    (!(h->flags & IBP_HELLO_REPLY) || (h->flags & IBP_HELLO_NO_RAIL) ||
	     h->round != IBP_OOB_RING_ROUND))
		return -EBADMSG;
	/* Only a reply saying "no such rail here" names a rail beyond its count. */
	if ((h->flags & IBP_HELLO_NO_RAIL) ? !(h->flags & IBP_HELLO_REPLY) || h->rail < h->n_rails
					   : h->rail >= h->n_rails)
		return -EBADMSG;
	if (h->cred_len > IBP_OOB_CRED_MAX - 1)
		return -EBADMSG;
	if ((h->flags & IBP_HELLO_INSECURE) ? h->cred_len != 0 : h->cred_len == 0)
		return -EBADMSG;
	for (size_t i = 0; i < h->cred_len; i++)
		if ((unsigned char)h->cred[i] < 0x21 || (unsigned char)h->cred[i] > 0x7e)
			return -EBADMSG;
	return 0;
}

static int check_summary(const struct ibp_oob_summary *s)
{
	if (s->nnodes == 0 || s->nnodes > IBP_OOB_MAX_NODES || s->node >= s->nnodes ||
	    s->n_links > IBP_OOB_MAX_LINKS || s->n_leaves > IBP_OOB_MAX_LEAVES)
		return -EBADMSG;
	for (size_t i = 0; i < s->n_leaves; i++) {
		const struct ibp_oob_leaf *f = &s->leaves[i];

		if (f->node >= s->nnodes || !f->name[0] || check_text(f->name, IBP_OOB_LEAF_MAX))
			return -EBADMSG;
	}
	for (size_t i = 0; i < s->n_links; i++) {
		const struct ibp_oob_link *l = &s->links[i];

		if (l->from >= s->nnodes || l->to >= s->nnodes || l->from == l->to ||
		    (l->from != s->node && l->to != s->node))
			return -EBADMSG;
		if (l->round < 1 || l->round > 2 || l->status >= IBP_LINK_STATUS_COUNT)
			return -EBADMSG;
	}
	return 0;
}

static int check_fpsum(const struct ibp_oob_fpsum *f, bool deep)
{
	/* a broken chain carries no sum (nothing of it goes out) */
	if (f->phase == IBP_FPSUM_BROKEN)
		return f->why == IBP_FPSUM_WHY_NONE || f->why >= IBP_FPSUM_WHY_COUNT ||
			       f->origin >= IBP_OOB_MAX_NODES || f->from >= IBP_OOB_MAX_NODES ||
			       f->sum.nnodes || f->sum.first || f->sum.n_merged || f->sum.n_keys ||
			       f->sum.n_values || f->sum.keys_dropped
			   ? -EBADMSG
			   : 0;
	if ((f->phase != IBP_FPSUM_GATHER && f->phase != IBP_FPSUM_FINAL) || f->why || f->origin ||
	    f->from || (deep && ibp_fp_sum_check(&f->sum)))
		return -EBADMSG;
	/* a final sum is complete */
	if (f->phase == IBP_FPSUM_FINAL && (f->sum.first != 0 || f->sum.n_merged != f->sum.nnodes))
		return -EBADMSG;
	return 0;
}

/*
 * DEEP: also the fingerprint or sum a FINGERPRINT or FPSUM carries.  The
 * codec leaves that to ibp_fp_encode/_decode and ibp_fp_sum_encode/_decode,
 * which check what they write or read, so that a frame is checked once.
 */
static int check_msg(const struct ibp_oob_msg *m, bool deep)
{
	switch (m->type) {
	case IBP_OOB_HELLO:
		return check_hello(&m->u.hello);
	case IBP_OOB_ENDPOINT:
		if (m->u.endpoint.port > 255 || check_text(m->u.endpoint.device, IBP_DEV_MAX) ||
		    check_text(m->u.endpoint.leaf, IBP_OOB_LEAF_MAX))
			return -EBADMSG;
		return check_endpoint(&m->u.endpoint.ep);
	case IBP_OOB_CTRL:
		if (m->u.ctrl.op < IBP_CTRL_READY || m->u.ctrl.op >= IBP_CTRL_OP_COUNT)
			return -EBADMSG;
		if (m->u.ctrl.status > 0 || m->u.ctrl.status < -4095)
			return -EBADMSG;
		return 0;
	case IBP_OOB_SUMMARY:
		return m->summary ? check_summary(m->summary) : -EBADMSG;
	case IBP_OOB_ERROR:
		if (m->u.error.code > 0 || m->u.error.code < -4095)
			return -EBADMSG;
		return check_text(m->u.error.text, IBP_OOB_TEXT_MAX);
	case IBP_OOB_FINGERPRINT:
		if (!m->fingerprint)
			return -EBADMSG;
		return deep && ibp_fp_check(m->fingerprint) ? -EBADMSG : 0;
	case IBP_OOB_FPSUM:
		return m->fpsum ? check_fpsum(m->fpsum, deep) : -EBADMSG;
	default:
		return -EBADMSG;
	}
}

int ibp_oob_msg_check(const struct ibp_oob_msg *m)
{
	return check_msg(m, true);
}

/* The writer: the caller has checked that the frame fits. */
struct wbuf {
	uint8_t *p;
	size_t off;
};

static void put8(struct wbuf *w, uint8_t v)
{
	w->p[w->off++] = v;
}

static void put16(struct wbuf *w, uint16_t v)
{
	put8(w, (uint8_t)(v >> 8));
	put8(w, (uint8_t)v);
}

static void put32(struct wbuf *w, uint32_t v)
{
	put16(w, (uint16_t)(v >> 16));
	put16(w, (uint16_t)v);
}

static void put64(struct wbuf *w, uint64_t v)
{
	put32(w, (uint32_t)(v >> 32));
	put32(w, (uint32_t)v);
}

static void putn(struct wbuf *w, const void *src, size_t n)
{
	memcpy(w->p + w->off, src, n);
	w->off += n;
}

/* A string (checked: printable, shorter than its field): its length byte, then its bytes. */
static void put_str(struct wbuf *w, const char *s, size_t field)
{
	size_t n = strnlen(s, field);

	put8(w, (uint8_t)n);
	putn(w, s, n);
}

/*
 * The reader: every read checks what is left of the payload; one past it
 * and BAD is set, the frame refused (reads then give zeros).
 */
struct rbuf {
	const uint8_t *p;
	size_t off, end;
	bool bad;
};

static bool have(struct rbuf *r, size_t n)
{
	if (r->bad || n > r->end - r->off) {
		r->bad = true;
		return false;
	}
	return true;
}

static uint8_t get8(struct rbuf *r)
{
	return have(r, 1) ? r->p[r->off++] : 0;
}

static uint16_t get16(struct rbuf *r)
{
	uint16_t v = (uint16_t)(get8(r) << 8);

	return (uint16_t)(v | get8(r));
}

static uint32_t get32(struct rbuf *r)
{
	uint32_t v = (uint32_t)get16(r) << 16;

	return v | get16(r);
}

static uint64_t get64(struct rbuf *r)
{
	uint64_t v = (uint64_t)get32(r) << 32;

	return v | get32(r);
}

static void getn(struct rbuf *r, void *dst, size_t n)
{
	if (!have(r, n))
		return;
	memcpy(dst, r->p + r->off, n);
	r->off += n;
}

/*
 * A string into a FIELD-byte array that is all zero: shorter than the
 * field, and no NUL inside (one encoding per string); printable is the
 * message check's.
 */
static void get_str(struct rbuf *r, char *dst, size_t field)
{
	size_t n = get8(r);

	if (n >= field) {
		r->bad = true;
		return;
	}
	getn(r, dst, n);
	if (!r->bad && strnlen(dst, n) != n)
		r->bad = true;
}

static void put_ep(struct wbuf *w, const struct ibp_endpoint *ep)
{
	put8(w, ep->kind);
	put8(w, ep->link_layer);
	put16(w, ep->lid);
	put32(w, ep->qpn);
	put32(w, ep->psn);
	put32(w, ep->mtu);
	put32(w, ep->rkey);
	put32(w, ep->gid_index);
	put32(w, ep->rate_mbps);
	put64(w, ep->addr);
	put64(w, ep->buf_len);
	putn(w, ep->gid, IBP_TX_GID_LEN);
	put16(w, ep->tcp_port);
}

static void get_ep(struct rbuf *r, struct ibp_endpoint *ep)
{
	ep->kind = get8(r);
	ep->link_layer = get8(r);
	ep->lid = get16(r);
	ep->qpn = get32(r);
	ep->psn = get32(r);
	ep->mtu = get32(r);
	ep->rkey = get32(r);
	ep->gid_index = get32(r);
	ep->rate_mbps = get32(r);
	ep->addr = get64(r);
	ep->buf_len = get64(r);
	getn(r, ep->gid, IBP_TX_GID_LEN);
	ep->tcp_port = get16(r);
}

/* The payload's exact length for every type but FINGERPRINT and FPSUM (checked M), else 0. */
static size_t small_len(const struct ibp_oob_msg *m)
{
	size_t n = 0;

	switch (m->type) {
	case IBP_OOB_HELLO:
		return IBP_OOB_HELLO_MIN + m->u.hello.cred_len;
	case IBP_OOB_ENDPOINT:
		return IBP_OOB_ENDPOINT_MIN + strlen(m->u.endpoint.device) +
		       strlen(m->u.endpoint.leaf);
	case IBP_OOB_CTRL:
		return IBP_OOB_CTRL_LEN;
	case IBP_OOB_SUMMARY:
		for (size_t i = 0; i < m->summary->n_leaves; i++)
			n += 4 + 1 + strlen(m->summary->leaves[i].name);
		return IBP_OOB_SUMMARY_MIN + m->summary->n_links * (size_t)IBP_OOB_LINK_LEN + n;
	case IBP_OOB_ERROR:
		return IBP_OOB_ERROR_MIN + strlen(m->u.error.text);
	default:
		return 0;
	}
}

static void put_hello(struct wbuf *w, const struct ibp_oob_hello *h)
{
	put32(w, h->job);
	put32(w, h->step);
	put32(w, h->uid);
	put32(w, h->from);
	put32(w, h->to);
	put32(w, h->nnodes);
	put8(w, h->round);
	put8(w, h->rail);
	put16(w, h->flags);
	put8(w, h->n_rails);
	put64(w, h->nonce);
	put64(w, h->echo);
	put16(w, h->cred_len);
	putn(w, h->cred, h->cred_len);
}

static void put_summary(struct wbuf *w, const struct ibp_oob_summary *s)
{
	put32(w, s->node);
	put32(w, s->nnodes);
	put64(w, s->plan);
	put8(w, s->n_links);
	for (size_t i = 0; i < s->n_links; i++) {
		put32(w, s->links[i].from);
		put32(w, s->links[i].to);
		put8(w, s->links[i].round);
		put8(w, s->links[i].status);
		put16(w, s->links[i].rail);
	}
	put8(w, s->n_leaves);
	for (size_t i = 0; i < s->n_leaves; i++) {
		put32(w, s->leaves[i].node);
		put_str(w, s->leaves[i].name, IBP_OOB_LEAF_MAX);
	}
}

int ibp_oob_encode(const struct ibp_oob_msg *m, uint8_t *buf, size_t len)
{
	size_t pmin = ibp_oob_payload_min(m->type), pmax = ibp_oob_payload_max(m->type), want, room;
	struct wbuf w = {buf, IBP_OOB_HDR_LEN}, hdr = {buf, 0};
	int n;

	if (!pmax || check_msg(m, false))
		return -EBADMSG;
	want = small_len(m);
	if (len < IBP_OOB_HDR_LEN + (want ? want : pmin))
		return -ENOSPC;
	/* room for a compact payload, which a bounded encoder writes */
	room = len - IBP_OOB_HDR_LEN < pmax ? len - IBP_OOB_HDR_LEN : pmax;
	switch (m->type) {
	case IBP_OOB_HELLO:
		put_hello(&w, &m->u.hello);
		break;
	case IBP_OOB_ENDPOINT:
		put16(&w, m->u.endpoint.rail);
		put32(&w, m->u.endpoint.port);
		put_str(&w, m->u.endpoint.device, IBP_DEV_MAX);
		put_ep(&w, &m->u.endpoint.ep);
		put_str(&w, m->u.endpoint.leaf, IBP_OOB_LEAF_MAX);
		break;
	case IBP_OOB_CTRL:
		put8(&w, m->u.ctrl.op);
		put32(&w, (uint32_t)m->u.ctrl.status);
		put64(&w, m->u.ctrl.a);
		put64(&w, m->u.ctrl.b);
		break;
	case IBP_OOB_SUMMARY:
		put_summary(&w, m->summary);
		break;
	case IBP_OOB_FINGERPRINT:
		n = ibp_fp_encode(m->fingerprint, w.p + w.off, room);
		if (n < 0)
			return n == -ENOSPC ? -ENOSPC : -EBADMSG;
		w.off += (size_t)n;
		break;
	case IBP_OOB_FPSUM:
		put8(&w, m->fpsum->phase);
		put8(&w, m->fpsum->why);
		put32(&w, m->fpsum->origin);
		put32(&w, m->fpsum->from);
		if (m->fpsum->phase == IBP_FPSUM_BROKEN)
			break; /* no sum */
		n = ibp_fp_sum_encode(&m->fpsum->sum, w.p + w.off, room - IBP_OOB_FPSUM_HEAD_LEN);
		if (n < 0)
			return n == -ENOSPC ? -ENOSPC : -EBADMSG;
		w.off += (size_t)n;
		break;
	case IBP_OOB_ERROR:
		put32(&w, (uint32_t)m->u.error.code);
		put_str(&w, m->u.error.text, IBP_OOB_TEXT_MAX);
		break;
	}
	if (w.off < IBP_OOB_HDR_LEN + pmin || w.off > IBP_OOB_HDR_LEN + pmax ||
	    (want && w.off != IBP_OOB_HDR_LEN + want))
		return -EBADMSG;
	put32(&hdr, IBP_OOB_MAGIC);
	put16(&hdr, (uint16_t)ibp_oob_wire_version());
	put16(&hdr, m->type);
	put32(&hdr, (uint32_t)(w.off - IBP_OOB_HDR_LEN));
	return (int)w.off;
}

/* A batch is never the longest frame: buffers of IBP_OOB_FRAME_MAX take one. */
_Static_assert(IBP_OOB_HDR_LEN + IBP_OOB_BATCH_MAX <= IBP_OOB_FRAME_MAX, "a batch fits a frame");

int ibp_oob_batch_header(uint8_t *buf, size_t payload_len)
{
	struct wbuf hdr = {buf, 0};

	if (payload_len < IBP_OOB_BATCH_MIN || payload_len > IBP_OOB_BATCH_MAX)
		return -EBADMSG;
	put32(&hdr, IBP_OOB_MAGIC);
	put16(&hdr, (uint16_t)ibp_oob_wire_version());
	put16(&hdr, IBP_OOB_BATCH);
	put32(&hdr, (uint32_t)payload_len);
	return 0;
}

/* Every frame a batch may carry fits one. */
_Static_assert(IBP_OOB_HDR_LEN + IBP_OOB_ENDPOINT_MAX <= IBP_OOB_BATCH_MAX, "an ENDPOINT fits");

int ibp_oob_batch_next(const uint8_t *payload, size_t len, size_t *off, unsigned types,
		       struct ibp_oob_msg *m)
{
	unsigned type;
	size_t plen;

	if (*off == len)
		return 0;
	if (*off > len || ibp_oob_decode_header(payload + *off, len - *off, &type, &plen) ||
	    !(IBP_OOB_TYPE_BIT(type) & types & IBP_OOB_BATCH_TYPES) ||
	    plen > len - *off - IBP_OOB_HDR_LEN)
		return -EBADMSG;
	if (ibp_oob_decode(payload + *off, IBP_OOB_HDR_LEN + plen, m) < 0)
		return -EBADMSG;
	*off += IBP_OOB_HDR_LEN + plen;
	return 1;
}

int ibp_oob_header_version(const uint8_t *buf, size_t len)
{
	struct rbuf r = {buf, 0, len, false};

	if (len < IBP_OOB_HDR_LEN || get32(&r) != IBP_OOB_MAGIC)
		return -EBADMSG;
	return get16(&r);
}

int ibp_oob_decode_header(const uint8_t *buf, size_t len, unsigned *type, size_t *payload_len)
{
	struct rbuf r = {buf, 0, len, false};
	uint32_t magic, plen;
	uint16_t version, t;

	if (len < IBP_OOB_HDR_LEN)
		return -EBADMSG;
	magic = get32(&r);
	version = get16(&r);
	t = get16(&r);
	plen = get32(&r);
	if (magic != IBP_OOB_MAGIC)
		return -EBADMSG;
	if (version != ibp_oob_wire_version())
		return -EPROTONOSUPPORT;
	if (!ibp_oob_payload_max(t) || plen < ibp_oob_payload_min(t) ||
	    plen > ibp_oob_payload_max(t))
		return -EBADMSG;
	*type = t;
	*payload_len = plen;
	return 0;
}

int ibp_oob_header_why(const uint8_t *buf, size_t len, char *why, size_t whylen)
{
	unsigned type;
	size_t plen, lo, hi;
	int rc = ibp_oob_decode_header(buf, len, &type, &plen);
	const char *name;

	if (!whylen)
		return rc;
	why[0] = '\0';
	if (!rc)
		return rc;
	if (len < IBP_OOB_HDR_LEN) {
		ibp_format_cut(why, whylen, "a header of %zu bytes, expected %d", len,
			       IBP_OOB_HDR_LEN);
		return rc;
	}
	type = (unsigned)buf[6] << 8 | buf[7];
	plen = (size_t)buf[8] << 24 | (size_t)buf[9] << 16 | (size_t)buf[10] << 8 | buf[11];
	name = ibp_oob_type_name(type);
	lo = ibp_oob_payload_min(type);
	hi = ibp_oob_payload_max(type);
	if (ibp_oob_header_version(buf, len) < 0)
		ibp_format_cut(why, whylen, "not a frame of this test (it starts %02x%02x%02x%02x)",
			       buf[0], buf[1], buf[2], buf[3]);
	else if (rc == -EPROTONOSUPPORT)
		ibp_format_cut(why, whylen, "a frame of protocol %d, expected %u",
			       ibp_oob_header_version(buf, len), ibp_oob_wire_version());
	else if (!name)
		ibp_format_cut(why, whylen, "a frame of type %u, which does not exist", type);
	else if (lo == hi)
		ibp_format_cut(why, whylen, "%s frame of %zu payload bytes, %s takes %zu", name,
			       plen, name, lo);
	else
		ibp_format_cut(why, whylen, "%s frame of %zu payload bytes, %s takes %zu to %zu",
			       name, plen, name, lo, hi);
	return rc;
}

void ibp_oob_msg_clear(struct ibp_oob_msg *m, unsigned type)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint16_t)type;
}

static void get_hello(struct rbuf *r, struct ibp_oob_hello *h)
{
	h->job = get32(r);
	h->step = get32(r);
	h->uid = get32(r);
	h->from = get32(r);
	h->to = get32(r);
	h->nnodes = get32(r);
	h->round = get8(r);
	h->rail = get8(r);
	h->flags = get16(r);
	h->n_rails = get8(r);
	h->nonce = get64(r);
	h->echo = get64(r);
	h->cred_len = get16(r);
	if (h->cred_len >= IBP_OOB_CRED_MAX)
		r->bad = true;
	else
		getn(r, h->cred, h->cred_len); /* NUL-terminated: cleared before */
}

static void get_summary(struct rbuf *r, struct ibp_oob_summary *s)
{
	s->node = get32(r);
	s->nnodes = get32(r);
	s->plan = get64(r);
	s->n_links = get8(r);
	if (s->n_links > IBP_OOB_MAX_LINKS)
		r->bad = true;
	for (size_t i = 0; i < s->n_links && !r->bad; i++) {
		s->links[i].from = get32(r);
		s->links[i].to = get32(r);
		s->links[i].round = get8(r);
		s->links[i].status = get8(r);
		s->links[i].rail = get16(r);
	}
	s->n_leaves = get8(r);
	if (s->n_leaves > IBP_OOB_MAX_LEAVES)
		r->bad = true;
	for (size_t i = 0; i < s->n_leaves && !r->bad; i++) {
		s->leaves[i].node = get32(r);
		get_str(r, s->leaves[i].name, IBP_OOB_LEAF_MAX);
	}
}

int ibp_oob_decode(const uint8_t *buf, size_t len, struct ibp_oob_msg *m)
{
	struct rbuf r = {buf, IBP_OOB_HDR_LEN, 0, false};
	size_t plen;
	unsigned type;
	int rc = ibp_oob_decode_header(buf, len, &type, &plen);

	if (rc)
		return rc;
	if (len < IBP_OOB_HDR_LEN + plen)
		return -EBADMSG;
	r.end = IBP_OOB_HDR_LEN + plen;
	m->type = (uint16_t)type;
	/* what the caller keeps: decoded where it points, if it gave a place */
	if ((type == IBP_OOB_SUMMARY && !m->summary) ||
	    (type == IBP_OOB_FINGERPRINT && !m->fingerprint) ||
	    (type == IBP_OOB_FPSUM && !m->fpsum) || type == IBP_OOB_BATCH)
		return -ENOBUFS;
	switch (type) {
	case IBP_OOB_HELLO:
		memset(&m->u, 0, sizeof(m->u));
		get_hello(&r, &m->u.hello);
		break;
	case IBP_OOB_ENDPOINT:
		memset(&m->u, 0, sizeof(m->u));
		m->u.endpoint.rail = get16(&r);
		m->u.endpoint.port = get32(&r);
		get_str(&r, m->u.endpoint.device, IBP_DEV_MAX);
		get_ep(&r, &m->u.endpoint.ep);
		get_str(&r, m->u.endpoint.leaf, IBP_OOB_LEAF_MAX);
		break;
	case IBP_OOB_CTRL:
		memset(&m->u, 0, sizeof(m->u));
		m->u.ctrl.op = get8(&r);
		m->u.ctrl.status = (int32_t)get32(&r);
		m->u.ctrl.a = get64(&r);
		m->u.ctrl.b = get64(&r);
		break;
	case IBP_OOB_SUMMARY:
		memset(m->summary, 0, sizeof(*m->summary));
		get_summary(&r, m->summary);
		break;
	case IBP_OOB_FINGERPRINT:
		/* the fingerprint's decoder clears what it fills */
		if (ibp_fp_decode(r.p + r.off, plen, m->fingerprint))
			return -EBADMSG;
		r.off += plen;
		break;
	case IBP_OOB_FPSUM:
		m->fpsum->phase = get8(&r);
		m->fpsum->why = get8(&r);
		m->fpsum->origin = get32(&r);
		m->fpsum->from = get32(&r);
		if (m->fpsum->phase == IBP_FPSUM_BROKEN) {
			ibp_fp_sum_init(&m->fpsum->sum, 0);
			break; /* no sum: the length check below refuses one */
		}
		/* the sum's decoder clears what it fills, and takes exactly the rest */
		if (ibp_fp_sum_decode(r.p + r.off, r.end - r.off, &m->fpsum->sum))
			return -EBADMSG;
		r.off = r.end;
		break;
	case IBP_OOB_ERROR:
		memset(&m->u, 0, sizeof(m->u));
		m->u.error.code = (int32_t)get32(&r);
		get_str(&r, m->u.error.text, IBP_OOB_TEXT_MAX);
		break;
	}
	if (r.bad || r.off != r.end || check_msg(m, false))
		return -EBADMSG;
	return (int)r.off;
}

int ibp_oob_wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = events};
		int ms = ibp_deadline_poll_ms(deadline, ibp_now_ns());
		int n;

		if (ms == 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 0; /* readable, writable, or an error the next call reports */
	}
}

int ibp_oob_write_full(int fd, const void *buf, size_t len, int64_t deadline)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n;
		int rc;

		if (ibp_deadline_expired(deadline, ibp_now_ns()))
			return -ETIMEDOUT;
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return errno == EPIPE ? -ECONNRESET : -errno;
			rc = ibp_oob_wait_fd(fd, POLLOUT, deadline);
			if (rc)
				return rc;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ibp_oob_read_full(int fd, void *buf, size_t len, int64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n;
		int rc;

		if (ibp_deadline_expired(deadline, ibp_now_ns()))
			return -ETIMEDOUT;
		n = recv(fd, p, len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			rc = ibp_oob_wait_fd(fd, POLLIN, deadline);
			if (rc)
				return rc;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* HELLO and ERROR, the unsealed types, are small: their frames go through the stack. */
_Static_assert(IBP_OOB_HDR_LEN + IBP_OOB_HELLO_MAX <= IBP_OOB_SMALL_FRAME &&
		   IBP_OOB_HDR_LEN + IBP_OOB_ERROR_MAX <= IBP_OOB_SMALL_FRAME,
	       "an unsealed frame is small");

int ibp_oob_send(int fd, const struct ibp_oob_msg *m, int64_t deadline)
{
	uint8_t buf[IBP_OOB_SMALL_FRAME];
	int n;

	if (ibp_oob_sealed(m->type))
		return -EBADMSG; /* only ever sent sealed (seal.h) */
	n = ibp_oob_encode(m, buf, sizeof(buf));
	if (n < 0)
		return n;
	return ibp_oob_write_full(fd, buf, (size_t)n, deadline);
}

int ibp_oob_recv(int fd, struct ibp_oob_msg *m, int64_t deadline)
{
	return ibp_oob_recv_version(fd, m, deadline, NULL, NULL, 0);
}

int ibp_oob_recv_version(int fd, struct ibp_oob_msg *m, int64_t deadline, unsigned *version,
			 char *why, size_t whylen)
{
	uint8_t buf[IBP_OOB_SMALL_FRAME];
	unsigned type;
	size_t plen;
	int v, rc = ibp_oob_read_full(fd, buf, IBP_OOB_HDR_LEN, deadline);

	if (why && whylen)
		why[0] = '\0';
	if (rc)
		return rc;
	v = ibp_oob_header_version(buf, IBP_OOB_HDR_LEN);
	if (version && v >= 0)
		*version = (unsigned)v;
	rc = ibp_oob_decode_header(buf, IBP_OOB_HDR_LEN, &type, &plen);
	if (rc) {
		if (why)
			ibp_oob_header_why(buf, IBP_OOB_HDR_LEN, why, whylen);
		return rc;
	}
	if (ibp_oob_sealed(type)) { /* a sealed frame where a plain one must be */
		if (why)
			ibp_format_cut(why, whylen, "%s frame, sealed, before any key",
				       ibp_oob_type_name(type));
		return -EBADMSG;
	}
	rc = ibp_oob_read_full(fd, buf + IBP_OOB_HDR_LEN, plen, deadline);
	if (rc)
		return rc;
	rc = ibp_oob_decode(buf, IBP_OOB_HDR_LEN + plen, m);
	if (rc < 0 && why)
		ibp_format_cut(why, whylen, "%s frame of %zu payload bytes that does not decode",
			       ibp_oob_type_name(type), plen);
	return rc < 0 ? rc : 0;
}

/* splitmix64: a fixed, well-mixed function of job and step. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int gcd_is_not_one(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a != 1;
}

int ibp_oob_ports(uint32_t job, uint32_t step, unsigned lo, unsigned hi, uint16_t *ports,
		  int n_cand)
{
	uint64_t span, h, stride;
	int n;

	if (lo == 0 || hi > 65535 || lo > hi || n_cand < 1 || n_cand > 8)
		return -EINVAL;
	span = (uint64_t)hi - lo + 1;
	if (span == 1) {
		ports[0] = (uint16_t)lo;
		return 1;
	}
	n = span < (uint64_t)n_cand ? (int)span : n_cand;
	h = mix64(((uint64_t)job << 32) | step);
	/*
	 * Candidates walk the range with a stride coprime to it, so they are
	 * distinct and a neighbouring step's candidates interleave rather than
	 * collide one for one.
	 */
	stride = 1 + (mix64(h) % (span - 1));
	while (gcd_is_not_one(stride, span))
		stride = stride % (span - 1) + 1;
	for (int i = 0; i < n; i++)
		ports[i] = (uint16_t)(lo + (h + (uint64_t)i * stride) % span);
	return n;
}
