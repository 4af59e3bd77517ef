/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * transport_verbs.c: the cross-node test's data path over libibverbs RC QPs
 * (transport.h, transport_verbs.h).
 *
 * libibverbs mixes conventions: ibv_modify_qp, ibv_query_port,
 * ibv_req_notify_cq and ibv_post_* return a positive errno, ibv_open_device
 * and the ibv_create_* / ibv_reg_mr calls NULL with errno, ibv_poll_cq a
 * negative count.  Every call is converted to -errno where it is made.
 * Resources are acquired in open() in one order and released by
 * verbs_close() in the reverse order; every pointer starts NULL, so close
 * is safe on whatever open() managed to build.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ibprep/text.h"
#include "ibprep/deadline.h"
#include "ibprep/transport.h"
#include "ibprep/transport_verbs.h"

#define SQ_DEPTH     128
#define RQ_DEPTH     64
#define SIGNAL_EVERY 8
#define MAX_INLINE   64
/*
 * Burst messages in flight: 16 x 64 KiB = 1 MiB, several times the
 * bandwidth-delay product of a 400 Gb/s link.
 */
#define BW_DEPTH 16
/* RC ack timeout 4.096 us * 2^15 = 134 ms, 7 retries: about 1 s of grace. */
#define ACK_TIMEOUT   15
#define RETRY_CNT     7
#define RNR_RETRY     6
#define MIN_RNR_TIMER 12
/*
 * Soft-RoCE (rxe, vendor id 0xffffff) acks at the speed of a CPU, under
 * emulation tens to hundreds of milliseconds late: with 134 ms and 1 MiB in
 * flight it retransmits whole messages, and 6.1's rxe then fails writes
 * with "invalid request" (seen: completer_retry_err, duplicate_request).  A
 * 1 s timeout (NCCL's default is 18 too) and 256 KiB in flight there.
 */
#define SOFT_VENDOR_ID   0xffffff
#define ACK_TIMEOUT_SOFT 18
#define BW_DEPTH_SOFT    4
/* Completion waits spin this long before sleeping on the channel. */
#define SPIN_NS     (50 * 1000LL)
#define SPIN_LAT_NS (200 * 1000LL)

/*
 * OP_CHECKED: the receiver has checked the pattern.  The burst reuses the
 * peer's buffer from offset 0, so the sender must not start it before the
 * receiver is done reading: without this a slow check (a loaded node, or
 * simply a 1 MiB compare against a 400 Gb/s burst) sees burst bytes and
 * blames a healthy link for corruption.
 */
enum imm_op {
	OP_HELLO = 1,
	OP_PATTERN = 2,
	OP_BW = 3,
	OP_PING = 4,
	OP_PONG = 5,
	OP_CHECKED = 6,
	OP_COUNT
};

struct cq_ctl {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	unsigned unacked; /* events to ack before destroy */
};

struct ibp_tx {
	char device[IBP_DEV_MAX];
	unsigned port;
	char *err;
	size_t errlen;

	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint8_t *sbuf, *rbuf; /* source (local only), target (remote write) */
	size_t buf_len;
	struct ibv_mr *smr, *rmr;
	struct cq_ctl scq, rcq;
	struct ibv_qp *qp;
	uint32_t max_inline;
	bool soft; /* a software device (rxe): see ACK_TIMEOUT_SOFT */

	enum ibp_link_layer ll;
	int active_mtu;
	int gid_index;
	union ibv_gid gid;
	struct ibp_endpoint local, peer;
	enum ibp_tx_role role;
	bool connected;
	int broken; /* -errno of the failure that left requests behind, 0 */

	unsigned sq_outstanding, sq_unsignaled;
	unsigned sq_limit; /* requests in flight allowed by the current operation */
	uint32_t send_seq[OP_COUNT], recv_seq[OP_COUNT];
	bool hello_seen;
};

/* The reason goes to the caller's ERR without the device: the caller names it. */
__attribute__((format(printf, 3, 4))) static int tx_fail(struct ibp_tx *tx, int rc, const char *fmt,
							 ...)
{
	va_list ap;

	if (!tx->err || !tx->errlen)
		return rc;
	va_start(ap, fmt);
	ibp_vformat_cut(tx->err, tx->errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* A failure that may leave work requests queued: no further operation. */
static int tx_break(struct ibp_tx *tx, int rc)
{
	if (!tx->broken)
		tx->broken = rc;
	return rc;
}

/* ---- pure helpers (transport_verbs.h) ---- */

int ibp_verbs_gid_is_ipv4(const uint8_t raw[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(raw, prefix, sizeof(prefix));
}

static bool gid_is_zero(const uint8_t raw[16])
{
	for (int i = 0; i < 16; i++)
		if (raw[i])
			return false;
	return true;
}

void ibp_verbs_gid_format(const uint8_t raw[16], char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];

	if (!len)
		return;
	if (!inet_ntop(AF_INET6, raw, tmp, sizeof(tmp)))
		snprintf(tmp, sizeof(tmp), "?");
	snprintf(buf, len, "%s", tmp);
}

static int gid_score(const struct ibp_verbs_gid *g, const uint8_t *want)
{
	if (g->type != IBP_GID_TYPE_ROCE_V2 || gid_is_zero(g->raw))
		return 0;
	if (want && !memcmp(g->raw, want, 16))
		return 5;
	if (ibp_verbs_gid_is_ipv4(g->raw))
		return 4;
	if (g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80)
		return 2; /* fe80::/10, link-local: not routable */
	return 3;
}

int ibp_verbs_gid_pick(const struct ibp_verbs_gid *g, size_t n, const char *local_addr)
{
	uint8_t want[16];
	const uint8_t *wantp = NULL;
	struct in_addr a4;
	int best = -ENOENT, best_score = 0;

	if (local_addr && *local_addr) {
		if (inet_pton(AF_INET, local_addr, &a4) == 1) {
			memset(want, 0, 10);
			want[10] = want[11] = 0xff;
			memcpy(want + 12, &a4, 4);
			wantp = want;
		} else if (inet_pton(AF_INET6, local_addr, want) == 1) {
			wantp = want;
		}
	}
	for (size_t i = 0; g && i < n; i++) {
		int s = gid_score(&g[i], wantp);

		if (s > best_score || (s && s == best_score && g[i].index < g[best].index)) {
			best = (int)i;
			best_score = s;
		}
	}
	return best;
}

uint32_t ibp_verbs_mtu_bytes(int mtu_enum)
{
	if (mtu_enum < IBV_MTU_256 || mtu_enum > IBV_MTU_4096)
		return 0;
	return 128u << mtu_enum;
}

int ibp_verbs_mtu_enum(uint32_t bytes)
{
	for (int m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
		if (ibp_verbs_mtu_bytes(m) == bytes)
			return m;
	return 0;
}

__attribute__((format(printf, 3, 4))) static int why_fail(char *why, size_t len, const char *fmt,
							  ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		ibp_vformat_cut(why, len, fmt, ap);
		va_end(ap);
	}
	return -EPROTO;
}

int ibp_verbs_endpoint_check(const struct ibp_endpoint *local, const struct ibp_endpoint *peer,
			     char *why, size_t len)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	if (why && len)
		why[0] = '\0';
	if (peer->kind != IBP_TX_VERBS)
		return why_fail(why, len,
				"peer endpoint is of kind %u, expected verbs (%d): "
				"both ends must use the same transport",
				peer->kind, IBP_TX_VERBS);
	if (peer->link_layer != local->link_layer)
		return why_fail(why, len, "peer port link layer is %s, this port is %s",
				ibp_link_layer_name((enum ibp_link_layer)peer->link_layer),
				ibp_link_layer_name((enum ibp_link_layer)local->link_layer));
	if (!peer->qpn || peer->qpn > 0xffffff)
		return why_fail(why, len, "peer qp number %#x is not a 24-bit qp number",
				peer->qpn);
	if (peer->psn > 0xffffff)
		return why_fail(why, len, "peer psn %#x is not a 24-bit psn", peer->psn);
	if (!ibp_verbs_mtu_enum(peer->mtu))
		return why_fail(why, len, "peer mtu %u, expected 256, 512, 1024, 2048 or 4096",
				peer->mtu);
	if (peer->buf_len < IBP_VERBS_LAT_MSG)
		return why_fail(why, len, "peer buffer of %llu bytes, expected at least %u",
				(unsigned long long)peer->buf_len, IBP_VERBS_LAT_MSG);
	if (peer->link_layer == IBP_LL_ETH) {
		if (gid_is_zero(peer->gid))
			return why_fail(why, len,
					"peer gid is zero: the peer has no usable RoCE gid");
		if (ibp_verbs_gid_is_ipv4(peer->gid) != ibp_verbs_gid_is_ipv4(local->gid)) {
			ibp_verbs_gid_format(peer->gid, a, sizeof(a));
			ibp_verbs_gid_format(local->gid, b, sizeof(b));
			return why_fail(
			    why, len,
			    "peer gid %s (index %u) and local gid %s (index %u) are of "
			    "different address families: use the IPv4-mapped RoCE v2 gid on "
			    "both ends",
			    a, peer->gid_index, b, local->gid_index);
		}
	} else if (!peer->lid || peer->lid >= 0xc000) {
		return why_fail(why, len,
				"peer lid %#x is not a unicast lid: is the subnet manager "
				"running?",
				peer->lid);
	}
	return 0;
}

int ibp_verbs_wc_errno(int status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_RETRY_EXC_ERR:
		return -EHOSTUNREACH;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ECONNREFUSED;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_BAD_RESP_ERR:
		return -EPROTO;
	case IBV_WC_WR_FLUSH_ERR:
		return -ECANCELED;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_MW_BIND_ERR:
		return -EINVAL;
	default:
		return -EIO;
	}
}

const char *ibp_verbs_wc_reason(int status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return "success";
	case IBV_WC_RETRY_EXC_ERR:
		return "transport retry counter exceeded: the peer did not acknowledge (link down, "
		       "peer gone, or unroutable gid)";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "receiver not ready, retries exceeded: the peer posted no receive";
	case IBV_WC_REM_ACCESS_ERR:
		return "remote access error: the peer refused the write (rkey or range)";
	case IBV_WC_REM_INV_REQ_ERR:
		return "remote invalid request: the peer rejected the request";
	case IBV_WC_REM_OP_ERR:
		return "remote operation error at the peer";
	case IBV_WC_BAD_RESP_ERR:
		return "unexpected response from the peer";
	case IBV_WC_WR_FLUSH_ERR:
		return "flushed: the queue pair is in error state";
	case IBV_WC_LOC_LEN_ERR:
		return "local length error";
	case IBV_WC_LOC_PROT_ERR:
		return "local protection error (memory registration)";
	case IBV_WC_LOC_QP_OP_ERR:
		return "local queue pair operation error";
	default:
		return ibv_wc_status_str((enum ibv_wc_status)status);
	}
}

double ibp_verbs_rate_gbps(unsigned active_width, unsigned active_speed)
{
	/* active_width bit -> lanes; active_speed bit -> Gb/s per lane (FDR10 10, FDR 14 ...) */
	static const double lanes[] = {1, 4, 8, 12, 2};
	static const double lane[] = {2.5, 5, 10, 10, 14, 25, 50, 100};
	int w = __builtin_ffs((int)active_width) - 1, sp = __builtin_ffs((int)active_speed) - 1;

	if (w < 0 || active_width != 1u << w || w >= (int)(sizeof(lanes) / sizeof(lanes[0])))
		return 0;
	if (sp < 0 || active_speed != 1u << sp || sp >= (int)(sizeof(lane) / sizeof(lane[0])))
		return 0;
	return lanes[w] * lane[sp];
}

/* ---- resources ---- */

static int cq_ctl_create(struct ibp_tx *tx, struct cq_ctl *c, int depth, const char *what)
{
	int fl;

	c->ch = ibv_create_comp_channel(tx->ctx);
	if (!c->ch)
		return tx_fail(tx, -(errno ? errno : ENOMEM), "ibv_create_comp_channel (%s): %s",
			       what, strerror(errno ? errno : ENOMEM));
	/* Non-blocking: ibv_get_cq_event only after poll() said so, never a hang. */
	fl = fcntl(c->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(c->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(c->ch->fd, F_SETFD, FD_CLOEXEC) < 0)
		return tx_fail(tx, -errno, "fcntl on the completion channel: %s", strerror(errno));
	c->cq = ibv_create_cq(tx->ctx, depth, NULL, c->ch, 0);
	if (!c->cq)
		return tx_fail(tx, -(errno ? errno : ENOMEM), "ibv_create_cq (%s, %d entries): %s",
			       what, depth, strerror(errno ? errno : ENOMEM));
	return 0;
}

static void cq_ctl_destroy(struct cq_ctl *c)
{
	if (c->cq) {
		if (c->unacked)
			ibv_ack_cq_events(c->cq, c->unacked);
		c->unacked = 0;
		ibv_destroy_cq(c->cq);
		c->cq = NULL;
	}
	if (c->ch) {
		ibv_destroy_comp_channel(c->ch);
		c->ch = NULL;
	}
}

static void verbs_close(struct ibp_tx *tx)
{
	if (!tx)
		return;
	if (tx->qp)
		ibv_destroy_qp(tx->qp);
	tx->qp = NULL;
	cq_ctl_destroy(&tx->rcq);
	cq_ctl_destroy(&tx->scq);
	if (tx->rmr)
		ibv_dereg_mr(tx->rmr);
	tx->rmr = NULL;
	if (tx->smr)
		ibv_dereg_mr(tx->smr);
	tx->smr = NULL;
	if (tx->pd)
		ibv_dealloc_pd(tx->pd);
	tx->pd = NULL;
	if (tx->ctx)
		ibv_close_device(tx->ctx);
	tx->ctx = NULL;
	free(tx->rbuf);
	free(tx->sbuf);
	free(tx);
}

static int open_device(struct ibp_tx *tx)
{
	struct ibv_device **list;
	int n = 0, rc = 0;

	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list) {
		rc = errno ? errno : ENODEV;
		return tx_fail(
		    tx, -ENODEV,
		    "no rdma device: ibv_get_device_list: %s (is the kernel's rdma stack "
		    "and the device's driver loaded?)",
		    strerror(rc));
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), tx->device) != 0)
			continue;
		errno = 0;
		tx->ctx = ibv_open_device(list[i]);
		if (!tx->ctx)
			rc = -(errno ? errno : ENODEV);
		break;
	}
	ibv_free_device_list(list);
	if (rc)
		return tx_fail(tx, rc, "ibv_open_device: %s", strerror(-rc));
	if (!tx->ctx)
		return tx_fail(tx, -ENODEV, "no such rdma device (%d found)", n);
	return 0;
}

static enum ibp_gid_type gid_type_of(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB:
	case IBV_GID_TYPE_ROCE_V1:
		return IBP_GID_TYPE_IB_ROCE_V1;
	case IBV_GID_TYPE_ROCE_V2:
		return IBP_GID_TYPE_ROCE_V2;
	default:
		return IBP_GID_TYPE_UNKNOWN;
	}
}

/* RoCE: the forced gid index must exist and be RoCE v2; -1 picks (header). */
static int choose_gid(struct ibp_tx *tx, const struct ibp_tx_port *port,
		      const struct ibv_port_attr *pa)
{
	struct ibv_gid_entry e, *tab = NULL;
	struct ibp_verbs_gid *g = NULL;
	char s[INET6_ADDRSTRLEN];
	ssize_t n;
	size_t cnt = 0, cap;
	int rc, best;

	if (port->gid_index >= 0) {
		rc = ibv_query_gid_ex(tx->ctx, tx->port, (uint32_t)port->gid_index, &e, 0);
		if (rc == ENODATA || (!rc && gid_is_zero(e.gid.raw)))
			return tx_fail(tx, -EINVAL,
				       "gid index %d is empty, expected a RoCE v2 gid: fix the gid "
				       "index (the port's table has %d entries)",
				       port->gid_index, pa->gid_tbl_len);
		if (rc)
			return tx_fail(tx, -rc, "ibv_query_gid_ex index %d: %s", port->gid_index,
				       strerror(rc));
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2) {
			ibp_verbs_gid_format(e.gid.raw, s, sizeof(s));
			return tx_fail(tx, -EINVAL,
				       "gid index %d (%s) is RoCE v1, expected RoCE v2: use the "
				       "RoCE v2 gid index of the port",
				       port->gid_index, s);
		}
		tx->gid_index = port->gid_index;
		tx->gid = e.gid;
		return 0;
	}
	/*
	 * The whole device's table in one call (never a file read per entry).
	 * The ioctl's attribute length is 16 bits: at most 2047 entries of 32
	 * bytes; a device with more valid GIDs falls back to one query per index.
	 */
	cap = 65535 / sizeof(*tab);
	tab = calloc(cap, sizeof(*tab));
	g = calloc((size_t)pa->gid_tbl_len > cap ? (size_t)pa->gid_tbl_len : cap, sizeof(*g));
	if (!tab || !g) {
		free(tab);
		free(g);
		return tx_fail(tx, -ENOMEM, "out of memory for the gid table");
	}
	n = ibv_query_gid_table(tx->ctx, tab, cap, 0);
	for (ssize_t i = 0; i < n; i++) {
		if (tab[i].port_num != tx->port)
			continue;
		g[cnt].index = tab[i].gid_index;
		memcpy(g[cnt].raw, tab[i].gid.raw, 16);
		g[cnt].type = gid_type_of(tab[i].gid_type);
		cnt++;
	}
	for (int i = 0; n < 0 && i < pa->gid_tbl_len; i++) {
		if (ibv_query_gid_ex(tx->ctx, tx->port, (uint32_t)i, &e, 0))
			continue; /* ENODATA: an empty entry */
		g[cnt].index = (unsigned)i;
		memcpy(g[cnt].raw, e.gid.raw, 16);
		g[cnt].type = gid_type_of(e.gid_type);
		cnt++;
	}
	best = ibp_verbs_gid_pick(g, cnt, port->addr);
	if (best >= 0) {
		tx->gid_index = (int)g[best].index;
		memcpy(tx->gid.raw, g[best].raw, 16);
	}
	free(g);
	free(tab);
	if (best < 0)
		return tx_fail(tx, -EADDRNOTAVAIL,
			       "no RoCE v2 gid (%zu gids on the port): give the port's netdev an "
			       "IP address",
			       cnt);
	return 0;
}

static int reg_buffers(struct ibp_tx *tx)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	void *p = NULL;
	int rc;

	rc = posix_memalign(&p, 4096, tx->buf_len);
	if (rc)
		return tx_fail(tx, -rc, "cannot allocate %zu bytes", tx->buf_len);
	tx->sbuf = p;
	p = NULL;
	rc = posix_memalign(&p, 4096, tx->buf_len);
	if (rc)
		return tx_fail(tx, -rc, "cannot allocate %zu bytes", tx->buf_len);
	tx->rbuf = p;
	memset(tx->sbuf, 0, tx->buf_len);
	memset(tx->rbuf, 0, tx->buf_len);

	errno = 0;
	tx->smr = ibv_reg_mr(tx->pd, tx->sbuf, tx->buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (tx->smr) {
		errno = 0;
		tx->rmr = ibv_reg_mr(tx->pd, tx->rbuf, tx->buf_len, acc);
	}
	if (!tx->smr || !tx->rmr) {
		struct rlimit rl;
		int e = errno ? errno : ENOMEM;

		if ((e == ENOMEM || e == EPERM || e == EAGAIN) && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
		    rl.rlim_cur != RLIM_INFINITY)
			return tx_fail(
			    tx, -ENOMEM,
			    "ibv_reg_mr of 2 x %zu KiB: %s: memlock limit %llu KiB is too "
			    "low, expected unlimited: raise RLIMIT_MEMLOCK (ulimit -l, "
			    "slurm PropagateResourceLimits)",
			    tx->buf_len / 1024, strerror(e),
			    (unsigned long long)rl.rlim_cur / 1024);
		return tx_fail(tx, -e, "ibv_reg_mr of %zu KiB: %s", tx->buf_len / 1024,
			       strerror(e));
	}
	return 0;
}

static int create_qp(struct ibp_tx *tx)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr at;
	int rc;

	for (int attempt = 0; attempt < 2; attempt++) {
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = tx->scq.cq;
		qa.recv_cq = tx->rcq.cq;
		qa.qp_type = IBV_QPT_RC;
		qa.sq_sig_all = 0;
		qa.cap.max_send_wr = SQ_DEPTH;
		qa.cap.max_recv_wr = RQ_DEPTH;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		qa.cap.max_inline_data = attempt ? 0 : MAX_INLINE; /* not every device inlines */
		errno = 0;
		tx->qp = ibv_create_qp(tx->pd, &qa);
		if (tx->qp)
			break;
	}
	if (!tx->qp)
		return tx_fail(tx, -(errno ? errno : ENOMEM), "ibv_create_qp (RC, %d/%d wr): %s",
			       SQ_DEPTH, RQ_DEPTH, strerror(errno ? errno : ENOMEM));
	tx->max_inline = qa.cap.max_inline_data;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.pkey_index = 0;
	at.port_num = (uint8_t)tx->port;
	at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	rc = ibv_modify_qp(tx->qp, &at,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return tx_fail(tx, -rc, "ibv_modify_qp to INIT: %s", strerror(rc));
	return 0;
}

static int post_recv(struct ibp_tx *tx)
{
	struct ibv_recv_wr wr, *bad = NULL;
	int rc;

	/* A WRITE WITH IMMEDIATE consumes a receive but places no data in it. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0;
	wr.sg_list = NULL;
	wr.num_sge = 0;
	rc = ibv_post_recv(tx->qp, &wr, &bad);
	if (rc)
		return tx_break(tx, tx_fail(tx, -rc, "ibv_post_recv: %s", strerror(rc)));
	return 0;
}

static int verbs_open(const struct ibp_tx_port *port, const struct ibp_tx_opts *opts,
		      struct ibp_tx **out)
{
	struct ibv_port_attr pa;
	struct ibp_tx *tx;
	uint32_t psn = 0;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (opts && opts->err && opts->errlen)
		opts->err[0] = '\0';
	if (!port || !opts)
		return -EINVAL;
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return -ENOMEM;
	tx->err = opts->err;
	tx->errlen = opts->errlen;
	snprintf(tx->device, sizeof(tx->device), "%s", port->device);
	tx->port = port->port;
	tx->gid_index = -1;
	tx->buf_len = opts->buf_len ? opts->buf_len : IBP_VERBS_DEFAULT_BUF;
	if (!port->device[0] || port->port < 1 || port->port > 255) {
		rc = tx_fail(tx, -EINVAL, "no device or port number out of range 1-255");
		goto fail;
	}
	if (tx->buf_len < IBP_VERBS_MIN_BUF || tx->buf_len > IBP_VERBS_MAX_BUF) {
		rc = tx_fail(tx, -EINVAL, "buffer of %zu bytes, expected %u to %llu", tx->buf_len,
			     IBP_VERBS_MIN_BUF, IBP_VERBS_MAX_BUF);
		goto fail;
	}

	rc = open_device(tx);
	if (rc)
		goto fail;
	memset(&pa, 0, sizeof(pa));
	rc = ibv_query_port(tx->ctx, (uint8_t)tx->port, &pa);
	if (rc) {
		rc = tx_fail(tx, -rc, "ibv_query_port: %s", strerror(rc));
		goto fail;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		rc = tx_fail(tx, -ENETDOWN, "port state %s, expected ACTIVE",
			     ibv_port_state_str(pa.state));
		goto fail;
	}
	{
		struct ibv_device_attr da;

		memset(&da, 0, sizeof(da));
		tx->soft = !ibv_query_device(tx->ctx, &da) && da.vendor_id == SOFT_VENDOR_ID;
	}
	tx->ll = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? IBP_LL_ETH : IBP_LL_IB;
	tx->active_mtu = pa.active_mtu;
	if (tx->ll == IBP_LL_ETH) {
		rc = choose_gid(tx, port, &pa);
		if (rc)
			goto fail;
	} else {
		if (!pa.lid || pa.lid >= 0xc000) {
			rc = tx_fail(
			    tx, -ENETDOWN,
			    "lid %#x, expected a unicast lid: is the subnet manager running?",
			    pa.lid);
			goto fail;
		}
		/* GID 0 (subnet prefix + port GUID), for messages and routed fabrics. */
		if (!ibv_query_gid(tx->ctx, (uint8_t)tx->port, 0, &tx->gid))
			tx->gid_index = 0;
	}

	tx->pd = ibv_alloc_pd(tx->ctx);
	if (!tx->pd) {
		rc = tx_fail(tx, -(errno ? errno : ENOMEM), "ibv_alloc_pd: %s",
			     strerror(errno ? errno : ENOMEM));
		goto fail;
	}
	rc = reg_buffers(tx);
	if (rc)
		goto fail;
	rc = cq_ctl_create(tx, &tx->scq, SQ_DEPTH, "send");
	if (rc)
		goto fail;
	rc = cq_ctl_create(tx, &tx->rcq, RQ_DEPTH, "receive");
	if (rc)
		goto fail;
	rc = create_qp(tx);
	if (rc)
		goto fail;
	for (int i = 0; i < RQ_DEPTH; i++) {
		rc = post_recv(tx);
		if (rc)
			goto fail;
	}
	if (getrandom(&psn, sizeof(psn), GRND_NONBLOCK) != (ssize_t)sizeof(psn))
		psn = (uint32_t)ibp_now_ns() ^ (uint32_t)getpid();

	tx->local.kind = IBP_TX_VERBS;
	tx->local.link_layer = (uint8_t)tx->ll;
	tx->local.lid = tx->ll == IBP_LL_IB ? pa.lid : 0;
	tx->local.qpn = tx->qp->qp_num;
	tx->local.psn = psn & 0xffffff;
	tx->local.mtu = ibp_verbs_mtu_bytes(pa.active_mtu);
	tx->local.rkey = tx->rmr->rkey;
	tx->local.gid_index = tx->gid_index < 0 ? 0 : (uint32_t)tx->gid_index;
	tx->local.addr = (uint64_t)(uintptr_t)tx->rbuf;
	tx->local.buf_len = tx->buf_len;
	memcpy(tx->local.gid, tx->gid.raw, IBP_TX_GID_LEN);
	{
		double gbps = port->rate_gbps > 0
				  ? port->rate_gbps
				  : ibp_verbs_rate_gbps(pa.active_width, pa.active_speed);

		tx->local.rate_mbps = gbps > 0 && gbps < 4e6 ? (uint32_t)(gbps * 1000) : 0;
	}
	*out = tx;
	return 0;
fail:
	verbs_close(tx);
	return rc;
}

static int verbs_endpoint(struct ibp_tx *tx, struct ibp_endpoint *out)
{
	if (!tx || !out)
		return -EINVAL;
	*out = tx->local;
	return 0;
}

/* ---- completions ---- */

/*
 * One completion from C, or -ETIMEDOUT at DEADLINE.  Spins SPIN ns (a round
 * trip on real hardware is a few microseconds), then arms the CQ and sleeps
 * in poll() on the channel until an event or the deadline.
 */
static int cq_wait(struct ibp_tx *tx, struct cq_ctl *c, struct ibv_wc *wc, int64_t deadline,
		   int64_t spin)
{
	int64_t start = ibp_now_ns(), now;
	bool armed = false;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct pollfd pfd;
	int n, rc;

	for (;;) {
		n = ibv_poll_cq(c->cq, 1, wc);
		if (n > 0)
			return 0;
		if (n < 0)
			return tx_break(tx, tx_fail(tx, -EIO, "ibv_poll_cq failed (%d)", n));
		now = ibp_now_ns();
		if (ibp_deadline_expired(deadline, now))
			return tx_break(tx, -ETIMEDOUT);
		if (now - start < spin)
			continue;
		if (!armed) {
			rc = ibv_req_notify_cq(c->cq, 0);
			if (rc)
				return tx_break(
				    tx, tx_fail(tx, -rc, "ibv_req_notify_cq: %s", strerror(rc)));
			armed = true;
			continue; /* a completion may have landed before the arm */
		}
		pfd.fd = c->ch->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		rc = poll(&pfd, 1, ibp_deadline_poll_ms(deadline, now));
		if (rc < 0 && errno != EINTR)
			return tx_break(tx,
					tx_fail(tx, -errno, "poll on the completion channel: %s",
						strerror(errno)));
		if (rc > 0 && !ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx)) {
			c->unacked++;
			if (c->unacked >= 64) {
				ibv_ack_cq_events(c->cq, c->unacked);
				c->unacked = 0;
			}
			armed = false;
		}
	}
}

static const char *op_name(unsigned op)
{
	static const char *const names[OP_COUNT] = {"?",    "hello", "pattern",        "burst",
						    "ping", "pong",  "pattern checked"};

	return op < OP_COUNT ? names[op] : "?";
}

/* One send completion: retires the WRs it covers (wr_id = how many). */
static int scq_reap_one(struct ibp_tx *tx, int64_t deadline, int64_t spin)
{
	struct ibv_wc wc;
	int rc = cq_wait(tx, &tx->scq, &wc, deadline, spin);

	if (rc)
		return rc;
	if (wc.status != IBV_WC_SUCCESS)
		return tx_break(tx, tx_fail(tx, ibp_verbs_wc_errno(wc.status),
					    "rdma write to the peer failed: %s (vendor error %#x)",
					    ibp_verbs_wc_reason(wc.status), wc.vendor_err));
	tx->sq_outstanding -=
	    wc.wr_id <= tx->sq_outstanding ? (unsigned)wc.wr_id : tx->sq_outstanding;
	return 0;
}

static int sq_drain(struct ibp_tx *tx, int64_t deadline, int64_t spin)
{
	while (tx->sq_outstanding) {
		int rc = scq_reap_one(tx, deadline, spin);

		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Posts one RDMA WRITE of LEN bytes from the source buffer to the peer at
 * OFFSET; with IMM it carries OP and the next sequence number.  Signals
 * every SIGNAL_EVERY-th request, the last of an operation (LAST) and any
 * request that fills the queue, so the queue can always be drained.
 */
static int post_write(struct ibp_tx *tx, size_t len, uint64_t offset, int op, bool last,
		      int64_t deadline, int64_t spin)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	bool signal;
	int rc;

	while (tx->sq_outstanding >= SQ_DEPTH - 1) {
		rc = scq_reap_one(tx, deadline, spin);
		if (rc)
			return rc;
	}
	signal =
	    last || tx->sq_unsignaled + 1 >= SIGNAL_EVERY || tx->sq_outstanding + 1 >= SQ_DEPTH - 1;
	memset(&wr, 0, sizeof(wr));
	memset(&sge, 0, sizeof(sge));
	sge.addr = (uint64_t)(uintptr_t)tx->sbuf;
	sge.length = (uint32_t)len;
	sge.lkey = tx->smr->lkey;
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = op ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	if (op)
		wr.imm_data = htonl((uint32_t)op << 24 | (tx->send_seq[op]++ & 0xffffff));
	wr.wr.rdma.remote_addr = tx->peer.addr + offset;
	wr.wr.rdma.rkey = tx->peer.rkey;
	if (len && len <= tx->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	if (signal) {
		wr.send_flags |= IBV_SEND_SIGNALED;
		wr.wr_id = tx->sq_unsignaled + 1;
		tx->sq_unsignaled = 0;
	} else {
		tx->sq_unsignaled++;
	}
	rc = ibv_post_send(tx->qp, &wr, &bad);
	if (rc)
		return tx_break(tx, tx_fail(tx, -rc, "ibv_post_send: %s", strerror(rc)));
	tx->sq_outstanding++;
	return 0;
}

/*
 * Waits for the peer's next WRITE WITH IMMEDIATE of operation OP, reposts
 * the receive it consumed, checks the sequence.  A late duplicate HELLO is
 * skipped; anything else unexpected is a protocol error.
 */
static int recv_imm(struct ibp_tx *tx, int op, int64_t deadline, int64_t spin)
{
	struct ibv_wc wc;
	uint32_t imm, got_op, seq, want;
	int rc;

	for (;;) {
		rc = cq_wait(tx, &tx->rcq, &wc, deadline, spin);
		if (rc)
			return rc;
		if (wc.status != IBV_WC_SUCCESS)
			return tx_break(tx,
					tx_fail(tx, ibp_verbs_wc_errno(wc.status),
						"receive from the peer failed: %s (vendor error "
						"%#x)",
						ibp_verbs_wc_reason(wc.status), wc.vendor_err));
		rc = post_recv(tx);
		if (rc)
			return rc;
		if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM))
			return tx_break(tx,
					tx_fail(tx, -EPROTO,
						"unexpected completion opcode %d from the peer, "
						"expected an rdma write with immediate",
						wc.opcode));
		imm = ntohl(wc.imm_data);
		got_op = imm >> 24;
		seq = imm & 0xffffff;
		if (got_op == OP_HELLO && op != OP_HELLO) {
			tx->hello_seen = true;
			continue;
		}
		want = tx->recv_seq[op] & 0xffffff;
		if (got_op != (uint32_t)op || seq != want)
			return tx_break(tx,
					tx_fail(tx, -EPROTO,
						"the peer sent %s #%u, expected %s #%u: both "
						"ends must run the same test sequence",
						op_name(got_op), seq, op_name((unsigned)op), want));
		tx->recv_seq[op]++;
		return 0;
	}
}

/* ---- operations ---- */

static int tx_usable(struct ibp_tx *tx, bool need_connected)
{
	if (!tx)
		return -EINVAL;
	if (tx->broken)
		return tx->broken;
	if (need_connected && !tx->connected)
		return tx_fail(tx, -ENOTCONN, "not connected");
	return 0;
}

/* Takes what is on one channel so the next arm can fire again. */
static void channel_drain(struct cq_ctl *c)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	while (!ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx))
		c->unacked++;
	if (c->unacked >= 64) {
		ibv_ack_cq_events(c->cq, c->unacked);
		c->unacked = 0;
	}
}

/*
 * HELLO each way (a zero-length WRITE WITH IMMEDIATE): connect returns only
 * when both QPs reach each other.  A hello that arrives before the peer's
 * QP is in RTR is dropped and would wait a whole ack timeout for its resend
 * (1 s on rxe); once the peer's own hello shows that it is at RTS, a
 * zero-length write behind ours opens a PSN gap that the peer NAKs, and the
 * QP resends our hello at once.
 */
static int hello_exchange(struct ibp_tx *tx, int64_t deadline)
{
	struct ibv_wc wc;
	struct pollfd pfd[2];
	bool nudged = false, armed = false;
	int64_t start = ibp_now_ns(), now;
	int n, rc;

	rc = post_write(tx, 0, 0, OP_HELLO, true, deadline, SPIN_NS);
	if (rc)
		return rc;
	for (;;) {
		while ((n = ibv_poll_cq(tx->scq.cq, 1, &wc)) > 0) {
			if (wc.status != IBV_WC_SUCCESS)
				return tx_break(tx, tx_fail(tx, ibp_verbs_wc_errno(wc.status),
							    "hello to the peer failed: %s (vendor "
							    "error %#x)",
							    ibp_verbs_wc_reason(wc.status),
							    wc.vendor_err));
			tx->sq_outstanding -= wc.wr_id <= tx->sq_outstanding ? (unsigned)wc.wr_id
									     : tx->sq_outstanding;
		}
		if (n == 0 && !tx->hello_seen)
			n = ibv_poll_cq(tx->rcq.cq, 1, &wc);
		if (n < 0)
			return tx_break(tx, tx_fail(tx, -EIO, "ibv_poll_cq failed (%d)", n));
		if (n > 0) {
			if (wc.status != IBV_WC_SUCCESS)
				return tx_break(
				    tx, tx_fail(tx, ibp_verbs_wc_errno(wc.status),
						"hello from the peer failed: %s (vendor "
						"error %#x)",
						ibp_verbs_wc_reason(wc.status), wc.vendor_err));
			rc = post_recv(tx);
			if (rc)
				return rc;
			if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
			    ntohl(wc.imm_data) != (uint32_t)OP_HELLO << 24)
				return tx_break(tx, tx_fail(tx, -EPROTO,
							    "the peer's first message is not a "
							    "hello (immediate %#x)",
							    ntohl(wc.imm_data)));
			tx->hello_seen = true;
			tx->recv_seq[OP_HELLO]++;
		}
		if (tx->hello_seen && !tx->sq_outstanding)
			return 0;
		if (tx->hello_seen && !nudged) {
			rc = post_write(tx, 0, 0, 0, true, deadline, SPIN_NS);
			if (rc)
				return rc;
			nudged = true;
			continue;
		}
		now = ibp_now_ns();
		if (ibp_deadline_expired(deadline, now))
			return tx_break(tx,
					tx_fail(tx, -ETIMEDOUT, "%s by the deadline",
						tx->sq_outstanding
						    ? "no acknowledgement of the hello from the "
						      "peer"
						    : "no hello from the peer"));
		if (now - start < SPIN_NS)
			continue;
		if (!armed) {
			rc = ibv_req_notify_cq(tx->scq.cq, 0);
			if (!rc)
				rc = ibv_req_notify_cq(tx->rcq.cq, 0);
			if (rc)
				return tx_break(
				    tx, tx_fail(tx, -rc, "ibv_req_notify_cq: %s", strerror(rc)));
			armed = true;
			continue; /* a completion may have landed before the arm */
		}
		pfd[0].fd = tx->scq.ch->fd;
		pfd[1].fd = tx->rcq.ch->fd;
		pfd[0].events = pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		rc = poll(pfd, 2, ibp_deadline_poll_ms(deadline, now));
		if (rc < 0 && errno != EINTR)
			return tx_break(tx,
					tx_fail(tx, -errno, "poll on the completion channels: %s",
						strerror(errno)));
		if (rc > 0) {
			channel_drain(&tx->scq);
			channel_drain(&tx->rcq);
			armed = false;
		}
	}
}

static int verbs_connect(struct ibp_tx *tx, const struct ibp_endpoint *peer, enum ibp_tx_role role,
			 int64_t deadline)
{
	struct ibv_qp_attr at;
	char why[IBP_TEXT_MAX], g[INET6_ADDRSTRLEN];
	uint32_t mtu;
	int rc;

	rc = tx_usable(tx, false);
	if (rc)
		return rc;
	if (!peer || tx->connected)
		return tx_fail(tx, -EINVAL,
			       tx->connected ? "already connected" : "no peer endpoint");
	rc = ibp_verbs_endpoint_check(&tx->local, peer, why, sizeof(why));
	if (rc)
		return tx_fail(tx, rc, "%s", why);
	tx->peer = *peer;
	tx->role = role;
	mtu = tx->local.mtu < peer->mtu ? tx->local.mtu : peer->mtu;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = (enum ibv_mtu)ibp_verbs_mtu_enum(mtu);
	at.dest_qp_num = peer->qpn;
	at.rq_psn = peer->psn;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = MIN_RNR_TIMER;
	at.ah_attr.port_num = (uint8_t)tx->port;
	at.ah_attr.sl = 0;
	if (tx->ll == IBP_LL_ETH) {
		/* RoCE: always routed by GID (v2: UDP/IP), from our chosen index. */
		at.ah_attr.is_global = 1;
		memcpy(at.ah_attr.grh.dgid.raw, peer->gid, 16);
		at.ah_attr.grh.sgid_index = (uint8_t)tx->gid_index;
		at.ah_attr.grh.hop_limit = 64;
	} else {
		at.ah_attr.dlid = peer->lid;
		/* Another subnet (a different GID prefix): a GRH is needed. */
		if (memcmp(peer->gid, tx->local.gid, 8) != 0 && !gid_is_zero(peer->gid) &&
		    tx->gid_index >= 0) {
			at.ah_attr.is_global = 1;
			memcpy(at.ah_attr.grh.dgid.raw, peer->gid, 16);
			at.ah_attr.grh.sgid_index = (uint8_t)tx->gid_index;
			at.ah_attr.grh.hop_limit = 64;
		}
	}
	rc = ibv_modify_qp(tx->qp, &at,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc) {
		ibp_verbs_gid_format(peer->gid, g, sizeof(g));
		return tx_break(tx, tx_fail(tx, -rc,
					    "ibv_modify_qp to RTR (peer qpn %#x, %s %s, mtu %u, "
					    "local gid index %d): %s",
					    peer->qpn, tx->ll == IBP_LL_ETH ? "gid" : "lid",
					    tx->ll == IBP_LL_ETH ? g : "", mtu, tx->gid_index,
					    strerror(rc)));
	}
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.timeout = tx->soft ? ACK_TIMEOUT_SOFT : ACK_TIMEOUT;
	at.retry_cnt = RETRY_CNT;
	at.rnr_retry = RNR_RETRY;
	at.sq_psn = tx->local.psn;
	at.max_rd_atomic = 1;
	rc = ibv_modify_qp(tx->qp, &at,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		return tx_break(tx, tx_fail(tx, -rc, "ibv_modify_qp to RTS: %s", strerror(rc)));

	rc = hello_exchange(tx, deadline);
	if (rc)
		return rc;
	tx->connected = true;
	return 0;
}

static int verbs_send_pattern(struct ibp_tx *tx, uint64_t seed, size_t len, int64_t deadline)
{
	int rc = tx_usable(tx, true);

	if (rc)
		return rc;
	if (len > tx->buf_len || len > tx->peer.buf_len)
		return tx_fail(tx, -EINVAL, "pattern of %zu bytes, buffers are %zu/%llu bytes", len,
			       tx->buf_len, (unsigned long long)tx->peer.buf_len);
	ibp_pattern_fill(tx->sbuf, len, seed);
	rc = post_write(tx, len, 0, OP_PATTERN, true, deadline, SPIN_NS);
	if (!rc)
		rc = sq_drain(tx, deadline, SPIN_NS);
	if (rc == -ETIMEDOUT)
		return tx_fail(tx, rc,
			       "pattern write of %zu bytes not acknowledged by the deadline", len);
	if (!rc)
		rc = recv_imm(tx, OP_CHECKED, deadline, SPIN_NS);
	if (rc == -ETIMEDOUT)
		return tx_fail(tx, rc,
			       "the peer did not confirm its pattern check by the deadline");
	return rc;
}

static int verbs_recv_pattern(struct ibp_tx *tx, uint64_t seed, size_t len, int64_t deadline,
			      size_t *bad_offset)
{
	size_t at;
	int rc = tx_usable(tx, true);

	if (rc)
		return rc;
	if (len > tx->buf_len)
		return tx_fail(tx, -EINVAL, "pattern of %zu bytes, buffer is %zu bytes", len,
			       tx->buf_len);
	rc = recv_imm(tx, OP_PATTERN, deadline, SPIN_NS);
	if (rc == -ETIMEDOUT)
		return tx_fail(tx, rc, "no pattern from the peer by the deadline");
	if (rc)
		return rc;
	at = ibp_pattern_check(tx->rbuf, len, seed);
	/* Checked, good or bad: the sender may now overwrite the buffer. */
	rc = post_write(tx, 0, 0, OP_CHECKED, true, deadline, SPIN_NS);
	if (at < len) {
		if (bad_offset)
			*bad_offset = at;
		return tx_fail(tx, -EBADMSG, "pattern differs at byte %zu of %zu", at, len);
	}
	return rc;
}

static int verbs_bw_send(struct ibp_tx *tx, uint64_t bytes, int64_t deadline, uint64_t *ns)
{
	size_t chunk = IBP_VERBS_BW_MSG, len;
	uint64_t sent = 0, off = 0;
	int64_t t0;
	int rc = tx_usable(tx, true);

	if (rc)
		return rc;
	if (!bytes)
		return tx_fail(tx, -EINVAL, "burst of 0 bytes");
	if (chunk > tx->buf_len)
		chunk = tx->buf_len;
	if (chunk > tx->peer.buf_len)
		chunk = (size_t)tx->peer.buf_len;
	tx->sq_limit = tx->soft ? BW_DEPTH_SOFT : BW_DEPTH;
	t0 = ibp_now_ns();
	while (sent < bytes) {
		len = bytes - sent < chunk ? (size_t)(bytes - sent) : chunk;
		if (off + len > tx->peer.buf_len)
			off = 0;
		rc = post_write(tx, len, off, sent + len >= bytes ? OP_BW : 0, sent + len >= bytes,
				deadline, SPIN_NS);
		if (rc)
			break;
		sent += len;
		off += len;
	}
	if (!rc)
		rc = sq_drain(tx, deadline, SPIN_NS);
	tx->sq_limit = 0;
	if (rc == -ETIMEDOUT)
		return tx_fail(tx, rc, "burst stalled at %llu of %llu bytes by the deadline",
			       (unsigned long long)sent, (unsigned long long)bytes);
	if (rc)
		return rc;
	if (ns)
		*ns = (uint64_t)(ibp_now_ns() - t0);
	return 0;
}

static int verbs_bw_recv(struct ibp_tx *tx, uint64_t bytes, int64_t deadline)
{
	int rc = tx_usable(tx, true);

	if (rc)
		return rc;
	rc = recv_imm(tx, OP_BW, deadline, SPIN_NS);
	if (rc == -ETIMEDOUT)
		return tx_fail(tx, rc, "burst of %llu bytes not complete by the deadline",
			       (unsigned long long)bytes);
	return rc;
}

/* Retires the send completions already there, without waiting. */
static int sq_reap_ready(struct ibp_tx *tx)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(tx->scq.cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return tx_break(tx, tx_fail(tx, ibp_verbs_wc_errno(wc[i].status),
							    "rdma write to the peer failed: %s "
							    "(vendor error %#x)",
							    ibp_verbs_wc_reason(wc[i].status),
							    wc[i].vendor_err));
			tx->sq_outstanding -= wc[i].wr_id <= tx->sq_outstanding
						  ? (unsigned)wc[i].wr_id
						  : tx->sq_outstanding;
		}
	}
	if (n < 0)
		return tx_break(tx, tx_fail(tx, -EIO, "ibv_poll_cq failed (%d)", n));
	return 0;
}

static int verbs_lat_ping(struct ibp_tx *tx, unsigned iters, int64_t deadline, uint64_t *ns)
{
	uint64_t *rtt;
	int64_t t0;
	unsigned i;
	int rc = tx_usable(tx, true);

	if (rc)
		return rc;
	if (!iters || iters > IBP_VERBS_MAX_LAT_ITERS)
		return tx_fail(tx, -EINVAL, "%u round trips, expected 1 to %u", iters,
			       IBP_VERBS_MAX_LAT_ITERS);
	rtt = calloc(iters, sizeof(*rtt));
	if (!rtt)
		return -ENOMEM;
	for (i = 0; i < iters; i++) {
		t0 = ibp_now_ns();
		rc = post_write(tx, IBP_VERBS_LAT_MSG, 0, OP_PING, true, deadline, SPIN_LAT_NS);
		if (!rc)
			rc = recv_imm(tx, OP_PONG, deadline, SPIN_LAT_NS);
		if (rc)
			break;
		rtt[i] = (uint64_t)(ibp_now_ns() - t0);
		rc = sq_reap_ready(tx);
		if (rc)
			break;
	}
	if (!rc)
		rc = sq_drain(tx, deadline, SPIN_NS);
	if (!rc) {
		uint64_t median = ibp_median_ns(rtt, iters);

		if (ns)
			*ns = median;
	} else if (rc == -ETIMEDOUT) {
		tx_fail(tx, rc, "round trip %u of %u not complete by the deadline", i + 1, iters);
	}
	free(rtt);
	return rc;
}

static int verbs_lat_pong(struct ibp_tx *tx, unsigned iters, int64_t deadline)
{
	unsigned i;
	int rc = tx_usable(tx, true);

	if (rc)
		return rc;
	if (!iters || iters > IBP_VERBS_MAX_LAT_ITERS)
		return tx_fail(tx, -EINVAL, "%u round trips, expected 1 to %u", iters,
			       IBP_VERBS_MAX_LAT_ITERS);
	for (i = 0; i < iters; i++) {
		rc = recv_imm(tx, OP_PING, deadline, SPIN_LAT_NS);
		if (!rc)
			rc = post_write(tx, IBP_VERBS_LAT_MSG, 0, OP_PONG, true, deadline,
					SPIN_LAT_NS);
		if (!rc)
			rc = sq_reap_ready(tx);
		if (rc)
			break;
	}
	if (!rc)
		rc = sq_drain(tx, deadline, SPIN_NS);
	if (rc == -ETIMEDOUT)
		tx_fail(tx, rc, "ping %u of %u not received by the deadline", i + 1, iters);
	return rc;
}

const struct ibp_transport_ops ibp_transport_verbs = {
    .name = "verbs",
    .kind = IBP_TX_VERBS,
    .open = verbs_open,
    .endpoint = verbs_endpoint,
    .connect = verbs_connect,
    .send_pattern = verbs_send_pattern,
    .recv_pattern = verbs_recv_pattern,
    .bw_send = verbs_bw_send,
    .bw_recv = verbs_bw_recv,
    .lat_ping = verbs_lat_ping,
    .lat_pong = verbs_lat_pong,
    .close = verbs_close,
};
