/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_pipe.h: what the plugin (root, in slurmstepd) and its test
 * child (`ibprep rdmatest --child`, the job's user, no way back to root)
 * say to each other over two pipes.
 *
 *   parent -> child   PLAN    the step (job, step, uid, node list, index),
 *                             the test_* policy, the listening sockets the
 *                             parent bound (their ports; the fds are 3..),
 *                             the rails, munged's socket
 *   child -> parent   RESULT  the test's figures (ibp_rdmatest_result) and
 *                             its findings
 *
 * One frame each way, then the writer closes its end:
 *
 *   header   magic "IBPC" u32 | version u16 | type u16 | payload length u32
 *   payload  big-endian integers; doubles as their IEEE-754 bits (u64);
 *            strings as u16 length + bytes, printable ASCII only, shorter
 *            than the field they fill; counts before their arrays
 *
 * The child is the job's user: it can write any bytes it likes, so the
 * parent's decoder trusts nothing.  Wrong magic, type or length, a count
 * above its array, an index outside the node count, an enum out of range,
 * a non-finite or negative figure, a non-printable byte, a code that is not
 * snake_case, trailing bytes: -EBADMSG (-EPROTONOSUPPORT for another
 * version).  The encoders never produce what the decoders refuse: text the
 * child's findings carry (which may quote a stranger's bytes) is cleaned
 * to printable ASCII before it is encoded.
 *
 * No globals, no I/O; allocation only to append findings.
 */
#ifndef IBPREP_RDMATEST_PIPE_H
#define IBPREP_RDMATEST_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/fingerprint.h"
#include "ibprep/finding.h"
#include "ibprep/policy.h"
#include "ibprep/rdmatest.h"
#include "ibprep/transport.h"

#define IBP_PIPE_MAGIC 0x49425043u /* "IBPC" */
/* 3: SLURM_TOPOLOGY_ADDR; 4: link status VERSION; 5: compact fingerprint; 6: a rail's netdev */
#define IBP_PIPE_VERSION       6
#define IBP_PIPE_HDR_LEN       12
#define IBP_PIPE_FRAME_MAX     (256 * 1024)
#define IBP_PIPE_MAX_FINDINGS  256
#define IBP_PIPE_MAX_LISTEN    IBP_RDMATEST_MAX_LISTEN
#define IBP_PIPE_NODELIST_MAX  8192
#define IBP_PIPE_PATH_MAX      4096
#define IBP_PIPE_TOPO_ADDR_MAX 1024
#define IBP_PIPE_LISTEN_FD0    3 /* the child's first listening socket */

enum ibp_pipe_type {
	IBP_PIPE_PLAN = 1,
	IBP_PIPE_RESULT = 2,
};

struct ibp_pipe_plan {
	uint32_t job, step, uid;
	uint32_t index; /* this node in NODELIST */
	enum ibp_rdmatest_mode mode;
	char nodelist[IBP_PIPE_NODELIST_MAX]; /* the step's nodes, a Slurm host list */
	char munge_socket[IBP_PIPE_PATH_MAX]; /* "" = libmunge's default */
	/* topology_conf=: the child reads it only when root's and writable by nobody else */
	char topology_conf[IBP_PIPE_PATH_MAX];
	/*
	 * Without topology_conf=: the step's SLURM_TOPOLOGY_ADDR and _PATTERN
	 * as slurmd set them in the job's environment ("" none); the child
	 * takes this node's leaf from them (rdmatest.h, own_leaf).
	 */
	char topology_addr[IBP_PIPE_TOPO_ADDR_MAX];
	char topology_pattern[IBP_PIPE_TOPO_ADDR_MAX];
	/* test_timeout_s, test_min_bw, test_max_lat_us, test_ports, test_pairing, test_transport */
	struct ibp_policy policy;
	/*
	 * The candidate ports in order (listen_ports of ibp_rdmatest_config);
	 * LISTEN_BOUND[i]: this node listens there, on the child's next fd
	 * from IBP_PIPE_LISTEN_FD0 (the bound ones in candidate order).
	 */
	size_t n_listen;
	uint16_t listen_ports[IBP_PIPE_MAX_LISTEN];
	bool listen_bound[IBP_PIPE_MAX_LISTEN];
	size_t n_ports; /* rails, 0 = the socket transport's one rail */
	struct ibp_tx_port ports[IBP_RDMATEST_MAX_RAILS];
	/* consistency= of the policy travels too; the node's fingerprint when set */
	bool has_fp;
	struct ibp_fp fp;
};

/* Zeroes P and gives it the default policy. */
void ibp_pipe_plan_init(struct ibp_pipe_plan *p);

/* Frame length, -EBADMSG (a field the decoder would refuse), -ENOSPC. */
int ibp_pipe_plan_encode(const struct ibp_pipe_plan *p, uint8_t *buf, size_t len);
/* 0 with P filled, or -EBADMSG / -EPROTONOSUPPORT. */
int ibp_pipe_plan_decode(const uint8_t *buf, size_t len, struct ibp_pipe_plan *p);

/*
 * The child's answer.  Findings beyond IBP_PIPE_MAX_FINDINGS are dropped
 * (the last one kept says how many).  Frame length or -ENOSPC.
 */
int ibp_pipe_result_encode(const struct ibp_rdmatest_result *r, const struct ibp_findings *f,
			   uint8_t *buf, size_t len);

/*
 * Decodes a result frame into R and appends its findings to F (nothing is
 * appended on error).  0, -EBADMSG, -EPROTONOSUPPORT, -ENOMEM.
 */
int ibp_pipe_result_decode(const uint8_t *buf, size_t len, struct ibp_rdmatest_result *r,
			   struct ibp_findings *f);

#endif
