/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_accept.h: the listeners and the acceptor of the cross-node test
 * (private to helpers/rdmatest/), the only code that reads bytes from
 * connections nobody has vouched for.  It runs on the caller's thread of
 * ibp_rdmatest_run(): LISTEN and PEERS_INIT before the run's threads
 * start, ACCEPT while the link workers wait in their slots, until no slot
 * waits any more or the last round ends; it hands a slot (an in-link's, or
 * a child's of the step-wide sum) a connection only once the peer's munge
 * credential checked, the per-link keys exist and the reply went out.
 * Calls nothing of the run but rdmatest_conn.c.
 */
#ifndef IBPREP_RDMATEST_ACCEPT_H
#define IBPREP_RDMATEST_ACCEPT_H

#include "rdmatest_conn.h"

/* Addresses the acceptor gives a slot: the peers this node receives from. */
struct ibp_rt_peer {
	uint32_t node;
	struct sockaddr_storage addr; /* port 0 */
	unsigned quota;               /* pending connections allowed from it */
	unsigned checks;              /* credentials from it that munged checked */
};

/* the peers this node receives links from, and the step-wide sum's two children */
#define IBP_RT_MAX_IN_PEERS (IBP_RT_MAX_PEERS + 2)

struct ibp_rt_acceptor {
	/* the owner's: X; the sum's (rdmatest_ring.h: ibp_rt_ring_kids), before PEERS_INIT and ACCEPT */
	struct ibp_rt_ctx *x;
	/*
	 * The sum's children that connect to this node: slots like an
	 * in-link's (NULL: none), under X's mutex; WAKE(WAKE_ARG) once one is
	 * filled.  RING_PART: this node takes part in the sum (else a HELLO
	 * for it is answered that it takes none).
	 */
	struct ibp_rt_link *ring_kids[IBP_RDMATEST_TREE_KIDS];
	bool ring_part;
	void (*wake)(void *arg);
	void *wake_arg;

	int listen_fds[IBP_RDMATEST_MAX_LISTEN]; /* -1: not listening on that candidate */
	bool own_listen;                         /* bound here: closed here */
	struct ibp_rt_peer in_peers[IBP_RT_MAX_IN_PEERS];
	size_t n_in_peers;
	uint64_t nonces[128];
	size_t n_nonces;
	/* the digests of the credentials munged checked (a ring); how many it checked */
	uint8_t creds[128][16];
	size_t n_creds;
	unsigned cred_checks;
	/* every connection dropped; from addresses that are not a peer's; from a peer's */
	unsigned dropped, dropped_away, dropped_peer;
	char drop_reason[IBP_TEXT_MAX]; /* the last one */
};

/* A cleared, listening nowhere, for X. */
void ibp_rt_acceptor_init(struct ibp_rt_acceptor *a, struct ibp_rt_ctx *x);
/*
 * The caller's listeners (the config's LISTEN_FDS) or one bound here on
 * the first free candidate; X's candidates set.  The port listened on
 * first, or -errno.
 */
int ibp_rt_listen(struct ibp_rt_acceptor *a);
/* The in-peers and their quotas, from X's in-links and the sum's children.  0 or -E2BIG. */
int ibp_rt_peers_init(struct ibp_rt_acceptor *a);
void ibp_rt_accept(struct ibp_rt_acceptor *a);
void ibp_rt_close_listeners(struct ibp_rt_acceptor *a);

#endif
