/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_probe.h: cross-rail probes (private to helpers/rdmatest/).
 * Does this node's rail k reach a peer's rail j port?  The links test
 * rail k against rail k; a probe goes from rail k's port (its address,
 * bound to its netdev: transport.h's probe) to the receiver of the peer's
 * rail j, whose endpoint this node's rail-j link to the same peer
 * brought: a datagram that the receiver's own UDP socket answers (a rail
 * beyond rail 0; protocol 22), or a TCP connection to its listener (rail
 * 0's stream).  Two kinds:
 *
 *   landing  for a rail k whose data path to the peer failed, or is
 *            still not up half-way to its connection's deadline (a
 *            quarter of what was left of the round when it started,
 *            IBP_RT_LANDING_MS at the least): from rail k to every other
 *            rail of that peer, and from every other rail to the peer's
 *            rail k.  Rail k reaching rail j instead of rail k is a port
 *            on the wrong rail's network (a crossed cable).  The report
 *            reads them for rails whose links failed only; a path merely
 *            slow (every node's CPUs busy) gets none, and the other half
 *            leaves a failing path's probes the time to be answered.
 *   across   once per round, rail a to rail a + 1 (a = this node's index
 *            plus the round, over the rails; with three rails or more and
 *            a transport with probe_along, over the datagram rails 1 ..
 *            n - 1): whether the rails reach each other at all, for
 *            NCCL_CROSS_NIC (rdmatest_report.c).  With probe_along the
 *            out-link sends it itself from rail a's own socket and records
 *            it (ibp_rt_probe_across, ibp_rt_probe_record).
 *
 * A thread of its own polls the rest, stopped once the summaries are in,
 * so a probe never adds to the time to verdict; one still pending then did
 * not reach (an unanswered ARP takes seconds).  It starts with the links
 * when it sends the across probes; otherwise only when a path fails or is
 * late (the steps' late callback), or when a node's in-links ended with
 * one failed: a healthy step starts none.  It answers the peers' probes
 * for this node once its in-links are over: their datagram receivers are
 * handed to it (ibp_rt_probes_answer), as rail 0's keep their listeners
 * open, until the run ends (rdmatest_link.c).  Only a transport with a
 * probe op (socket) and more than one rail probes.  Calls conn.h only.
 */
#ifndef IBPREP_RDMATEST_PROBE_H
#define IBPREP_RDMATEST_PROBE_H

#include "rdmatest_conn.h"

#define IBP_RT_MAX_PROBES IBP_RDMATEST_MAX_PROBES

struct ibp_rt_probe {
	struct ibp_rdmatest_probe r; /* the public record, its kind included */
	struct ibp_tx_probe pr;      /* pending: the transport's; its fd -1 once resolved */
	bool pending;
};

/* The receivers one node answers for at most: every rail of two rounds */
#define IBP_RT_MAX_ANSWER (2 * IBP_RDMATEST_MAX_RAILS)

struct ibp_rt_probes {
	/* the owner's, set before SPAWN */
	const struct ibp_rt_ctx *x;
	const struct ibp_transport_ops *ops;
	const struct ibp_tx_port *rails; /* X->n_rails */

	bool enabled; /* probes at all: a probe op, two rails or more, a round (MU inited) */
	bool inband;  /* the across probes are the links' (rdmatest_link.c) */
	pthread_t th;
	bool running;     /* under MU once enabled */
	bool tried_start; /* under MU: the thread starts once at most */
	int wake[2];      /* the link workers' news wake the thread */
	pthread_mutex_t mu;
	/* under MU: the out-links' news, by round (0, 1) and rail */
	bool stop;
	struct ibp_endpoint ep[2][IBP_RDMATEST_MAX_RAILS];
	bool have_ep[2][IBP_RDMATEST_MAX_RAILS];
	int64_t since[2][IBP_RDMATEST_MAX_RAILS]; /* when its data path started */
	uint8_t path[2][IBP_RDMATEST_MAX_RAILS];  /* 0 pending, 1 up, 2 failed */
	bool tried[2][IBP_RDMATEST_MAX_RAILS][IBP_RDMATEST_MAX_RAILS];
	int64_t wake_at; /* the thread wakes by then without news (INT64_MAX: news only) */
	struct ibp_tx *answer[IBP_RT_MAX_ANSWER]; /* handed over: the thread's to idle */
	size_t n_answer;
	/* the thread's; read by the owner after STOP */
	struct ibp_rt_probe v[IBP_RT_MAX_PROBES];
	size_t n;
	unsigned dropped; /* probes not made: no room left */
};

/* A pending path is never late before this (rdmatest_probe.c landing_due). */
#define IBP_RT_LANDING_MS 250

void ibp_rt_probes_init(struct ibp_rt_probes *p, const struct ibp_rt_ctx *x,
			const struct ibp_transport_ops *ops, const struct ibp_tx_port *rails);
/* At the links' start: starts the thread when it sends the across probes (else it starts on need). */
void ibp_rt_probes_spawn(struct ibp_rt_probes *p);
/* An out-link's peer endpoint (ROUND 1 or 2, RAIL): its data path starts now. */
void ibp_rt_probe_endpoint(struct ibp_rt_probes *p, unsigned round, size_t rail,
			   const struct ibp_endpoint *ep);
/* That data path came up (UP) or failed. */
void ibp_rt_probe_path(struct ibp_rt_probes *p, unsigned round, size_t rail, bool up);
/*
 * TXS (N; NULLs skipped), receivers whose links are over (their worker
 * opens no more): the thread polls them (the transport's idle) until it
 * stops, so the peers' probes that come late are answered.  START: the
 * thread started for them if it does not run (an in-link failed: its peer
 * may probe late).  Nothing for those with nothing to answer, or when the
 * thread does not run.
 */
void ibp_rt_probes_answer(struct ibp_rt_probes *p, struct ibp_tx *const *txs, size_t n, bool start);
/*
 * The across probes sent by the links (a transport with probe_along and
 * steps, three rails or more): true and ROUND's pair, this node's rail *A
 * to the peer's *B; false when the thread sends them, or none.
 */
bool ibp_rt_probe_across(const struct ibp_rt_probes *p, unsigned round, size_t *a, size_t *b);
/* A probe the links made themselves: RC 1 reached, 0 no answer, -errno. */
void ibp_rt_probe_record(struct ibp_rt_probes *p, unsigned round, size_t a, size_t b, uint8_t kind,
			 int rc);
/* When ROUND's path on RAIL is late (its landing probes due), INT64_MAX unknown. */
int64_t ibp_rt_probe_late_at(struct ibp_rt_probes *p, unsigned round, size_t rail);
/* A path is late: the thread started (if not yet) to probe where it lands. */
void ibp_rt_probe_late(struct ibp_rt_probes *p);
/* Stops and joins the thread; a probe still pending did not reach.  Safe when never spawned. */
void ibp_rt_probes_stop(struct ibp_rt_probes *p);

#endif
