/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * transport_verbs.h: the pure parts of the verbs transport (transport.h's
 * ibp_transport_verbs, helpers/rdmatest/transport_verbs.c), exposed so they can be
 * unit-tested without RDMA hardware.
 *
 * How the transport works, in one place:
 *   * one RC QP per tx, one registered source and one registered target
 *     buffer of opts->buf_len each; INIT at open (receive WRs posted then),
 *     RTR/RTS at connect with the peer's QPN, PSN, LID (IB) or GID (RoCE v2),
 *     path MTU = min of both ports' active MTU;
 *   * connect() ends with a HELLO each way (an RDMA WRITE with immediate),
 *     so it returns 0 only when both QPs can reach each other: the later
 *     operations never race a peer that is not in RTR yet;
 *   * every data message is an RDMA WRITE, the last one of each operation
 *     WITH IMMEDIATE (operation and sequence number), which is how the
 *     receiver learns that the data has landed; the receiver checks the
 *     pattern in its own memory;
 *   * every completion wait spins briefly, then sleeps on the CQ's completion
 *     channel with poll() until the deadline: no unbounded wait, no long
 *     busy loop;
 *   * after a failed or timed-out operation the tx refuses further work
 *     (its queues may still hold the failed requests): close it.
 *
 * GID choice on RoCE (gid_index -1): the port's GID table is read in one
 * call (ibv_query_gid_table, no file per entry); only RoCE v2 entries
 * count; best is the IPv4-mapped GID of the node's own address (tx port
 * ADDR), then any IPv4-mapped GID, then a global IPv6 GID, then link-local;
 * ties go to the lowest index.  A forced gid_index must exist and be
 * RoCE v2.
 */
#ifndef IBPREP_TRANSPORT_VERBS_H
#define IBPREP_TRANSPORT_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include "ibprep/hca.h"
#include "ibprep/transport.h"

/* Bounds of the transport (the open() contract). */
#define IBP_VERBS_DEFAULT_BUF   (1u << 20)
#define IBP_VERBS_MIN_BUF       64u
#define IBP_VERBS_MAX_BUF       (1ull << 30)
#define IBP_VERBS_BW_MSG        65536u /* burst message size (perftest's default) */
#define IBP_VERBS_LAT_MSG       8u
#define IBP_VERBS_MAX_LAT_ITERS 100000u

struct ibp_verbs_gid {
	unsigned index;
	uint8_t raw[16];
	enum ibp_gid_type type;
};

/*
 * The best entry of G (N entries) for RoCE v2, as a position in G;
 * LOCAL_ADDR (numeric IPv4/IPv6, may be NULL or "") is preferred when an
 * entry carries it.  -ENOENT when no RoCE v2 GID exists.
 */
int ibp_verbs_gid_pick(const struct ibp_verbs_gid *g, size_t n, const char *local_addr);

/* 1 for ::ffff:a.b.c.d, 0 otherwise. */
int ibp_verbs_gid_is_ipv4(const uint8_t raw[16]);

/* "::ffff:10.77.1.1" / "fe80::5054:ff:fe77:101" into BUF (>= 46 bytes). */
void ibp_verbs_gid_format(const uint8_t raw[16], char *buf, size_t len);

/* MTU enum of libibverbs (1..5) <-> bytes (256..4096); 0 when invalid. */
uint32_t ibp_verbs_mtu_bytes(int mtu_enum);
int ibp_verbs_mtu_enum(uint32_t bytes);

/*
 * Checks a peer's endpoint against the local one before any QP transition:
 * 0, or -EPROTO with a one-line reason in WHY (wrong kind, link layer
 * mismatch, QPN/PSN out of 24 bits, MTU not a power of two in 256..4096,
 * zero or foreign-family GID on RoCE, unusable LID on IB, buffer too small).
 */
int ibp_verbs_endpoint_check(const struct ibp_endpoint *local, const struct ibp_endpoint *peer,
			     char *why, size_t len);

/*
 * A failed work completion's status (enum ibv_wc_status) as -errno and a
 * short reason: retry exceeded -> -EHOSTUNREACH ("the peer did not
 * acknowledge"), remote access -> -EPROTO, flush -> -ECANCELED ...
 */
int ibp_verbs_wc_errno(int status);
const char *ibp_verbs_wc_reason(int status);

/* Port rate in Gb/s from ibv_port_attr's active_width/active_speed codes; 0 unknown. */
double ibp_verbs_rate_gbps(unsigned active_width, unsigned active_speed);

#endif
