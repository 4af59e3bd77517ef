/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_link.h: the links' tests (private to helpers/rdmatest/): per
 * direction one thread (the sender opens its rounds' connections with
 * ibp_rt_connect, the receiver waits for the connection the acceptor hands
 * it in rail 0's slot) and a crew of one thread per further rail.  One
 * sealed connection per round and direction carries every rail: the
 * endpoints (after what rides before them: a leaf's sum, a small step's
 * fingerprint), then the transport's connection, pattern, burst and round
 * trips on every rail at once, phase by phase, each phase ending with both
 * sides' word on each rail, and the sender's verdicts.  The connection
 * stays open for the summary exchange.
 */
#ifndef IBPREP_RDMATEST_LINK_H
#define IBPREP_RDMATEST_LINK_H

#include "rdmatest_conn.h"
#include "rdmatest_fp.h"
#include "rdmatest_probe.h"
#include "rdmatest_ring.h"
#include "rdmatest_topo.h"

struct ibp_rt_links {
	/* the owner's, set before START */
	struct ibp_rt_ctx *x;
	const struct ibp_transport_ops *ops;
	const struct ibp_tx_port *rails; /* X->n_rails */
	size_t buf_len;
	uint64_t burst;
	/* this node's leaf for its ENDPOINTs (IBP_OOB_LEAF_MAX bytes, zero-padded); NULL: none */
	const char *own_leaf;
	struct ibp_rt_fps *fps;
	struct ibp_rt_ring *ring;
	/* the peers' leaves from their ENDPOINTs (without a topology), under X's mutex */
	struct ibp_rt_leaves *leaves;
	/* told of each out-link's endpoint and data path; NULL: no probes */
	struct ibp_rt_probes *probes;
	/* in-links keep their receiver's tx open for the peers' probes (l->tx) */
	bool keep_rx;

	struct ibp_rt_worker {
		struct ibp_rt_links *t;
		size_t rail;
		pthread_t th;
		bool out, started;
	} w[2 * IBP_RDMATEST_MAX_RAILS];
	size_t n_w;
};

/* The workers started (a thread that does not start fails its links); JOIN waits for them. */
void ibp_rt_links_start(struct ibp_rt_links *t);
void ibp_rt_links_join(struct ibp_rt_links *t);

/*
 * After the workers: out-links that found nobody to a peer whose own hello
 * came in another protocol version are that same mismatch (below).
 */
void ibp_rt_links_versions(const struct ibp_rt_ctx *x);

#endif
