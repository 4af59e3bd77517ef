/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fingerprint.h: what a node brings to the step, compared across the step.
 *
 * Each node's fingerprint is a list of (field, rail, value): its rail set
 * (the HCA:port list the step uses); per rail the model (board_id),
 * firmware (fw_ver), netdev MTU, rate (with width and generation), link
 * layer and the RoCE GID index and type NCCL will use; node-wide the kernel
 * release, the rdma-core (libibverbs) version, the HCA driver and its
 * version, the GPUDirect RDMA module; and the values of NCCL_IB_HCA,
 * NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE, NCCL_NET and
 * UCX_NET_DEVICES the tasks will see.  Values are cut for display
 * (IBP_FP_VALUE_MAX) but compared through a 64-bit hash of the whole value.
 *
 * ibp_fp_compare() groups the nodes by value for every (field, rail) and
 * names the nodes that differ from the majority:
 *
 *   n7: mlx5_3 port 1: firmware 28.39.1002, the other 31 nodes 28.41.1000
 *
 * A tie between the largest groups (two groups of 2, or every node
 * different) has no majority: one finding names every group.  The findings
 * are class job (the step's nodes do not match: never drains), code
 * "consistency_<key>", severity from the policy's consistency= (policy.h:
 * hca_set, link_layer, gid, nccl_env fail; the rest warn by default).
 * Per-rail fields compare the nodes that have that rail; a missing rail is
 * the hca_set difference.
 *
 * The wire form (ibp_fp_encode/_decode) is compact (only the entries in
 * use, strings as a length byte and their bytes) with a checking decoder:
 * it travels in the cross-node test's FINGERPRINT frame, which is sealed
 * (authenticated) per link.  Plain data, no allocation, no globals.
 */
#ifndef IBPREP_FINGERPRINT_H
#define IBPREP_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/finding.h"
#include "ibprep/hca.h"
#include "ibprep/policy.h"
#include "ibprep/sysfs.h"

#define IBP_FP_MAX_ENTRIES 112
#define IBP_FP_RAIL_MAX    24 /* "mlx5_bond_0:1" */
#define IBP_FP_VALUE_MAX   40 /* shown; longer values end in "..." */
/*
 * Wire form: n u8, then per entry field u8 | rail | hash u64 | value,
 * a string being its length (u8, below its field's size) and its bytes.
 */
#define IBP_FP_ENTRY_WIRE_MAX (1 + IBP_FP_RAIL_MAX + 8 + IBP_FP_VALUE_MAX)
#define IBP_FP_WIRE_MIN       1 /* no entry */
#define IBP_FP_WIRE_MAX       (1 + IBP_FP_MAX_ENTRIES * IBP_FP_ENTRY_WIRE_MAX)

enum ibp_fp_field {
	IBP_FP_HCA_SET = 0, /* node-wide: "mlx5_0:1,mlx5_3:1 (2 rails)" */
	IBP_FP_LINK_LAYER,  /* per rail */
	IBP_FP_GID,         /* per rail: "3 RoCE v2", "IB" */
	IBP_FP_MODEL,       /* per rail: board_id */
	IBP_FP_FIRMWARE,    /* per rail: fw_ver */
	IBP_FP_MTU,         /* per rail: netdev MTU */
	IBP_FP_RATE,        /* per rail: "400 Gb/sec (4X NDR)" */
	IBP_FP_KERNEL,      /* node-wide from here */
	IBP_FP_RDMA_CORE,
	IBP_FP_DRIVER,
	IBP_FP_GDR,
	IBP_FP_NCCL_IB_HCA,
	IBP_FP_NCCL_IB_GID_INDEX,
	IBP_FP_NCCL_SOCKET_IFNAME,
	IBP_FP_NCCL_IB_DISABLE,
	IBP_FP_NCCL_NET,
	IBP_FP_UCX_NET_DEVICES,
	IBP_FP_N_FIELDS,
};

struct ibp_fp_entry {
	uint8_t field;                /* enum ibp_fp_field */
	char rail[IBP_FP_RAIL_MAX];   /* "mlx5_3:1", "" node-wide */
	uint64_t hash;                /* of the whole value */
	char value[IBP_FP_VALUE_MAX]; /* printable ASCII, cut with "..." */
};

struct ibp_fp {
	size_t n;
	bool truncated; /* more entries than IBP_FP_MAX_ENTRIES: the rest is not compared */
	struct ibp_fp_entry e[IBP_FP_MAX_ENTRIES];
};

/* "firmware", "NCCL_IB_HCA" ...; the consistency= key that judges a field. */
const char *ibp_fp_field_label(enum ibp_fp_field f);
enum ibp_consistency_key ibp_fp_field_key(enum ibp_fp_field f);
/* The one-line fix of a difference in F. */
const char *ibp_fp_field_fix(enum ibp_fp_field f);

void ibp_fp_init(struct ibp_fp *fp);

/*
 * Sets FIELD (of RAIL, NULL or "" node-wide) to VALUE (NULL: "(unset)").
 * Non-printable bytes are shown as '?'.  0, -ENOSPC (full: fp->truncated),
 * -EINVAL (bad field, rail too long).  Setting a (field, rail) again
 * replaces it.
 */
int ibp_fp_set(struct ibp_fp *fp, enum ibp_fp_field field, const char *rail, const char *value);

/* One rail of the step, as the caller chose it (placement or the test's ports). */
struct ibp_fp_rail {
	char device[IBP_DEV_MAX];
	unsigned port;
	int gid_index; /* -1: none (IB) */
};

/* The task environment's value of NAME (NULL: unset). */
typedef const char *(*ibp_fp_getenv_fn)(void *ctx, const char *name);

struct ibp_fp_source {
	const struct ibp_inventory *inv; /* the node's devices */
	const struct ibp_fp_rail *rails;
	size_t n_rails;
	const struct ibp_sysfs *fs; /* kernel release, driver, GPUDirect module; NULL: unknown */
	const char *rdma_core;      /* NULL: this process's libibverbs */
	ibp_fp_getenv_fn getenv;    /* NULL: the variables are not compared */
	void *getenv_ctx;
};

/* Fills FP from SRC.  0, -ENOSPC (truncated, the rest still usable). */
int ibp_fp_collect(struct ibp_fp *fp, const struct ibp_fp_source *src);

/* rdma-core's version from the file name of the loaded libibverbs ("44.0"), "" unknown. */
void ibp_fp_rdma_core_version(char *buf, size_t len);

/*
 * What the decoder checks, on a fingerprint in memory: the count, every
 * field, string (terminated within its field, printable) and that no
 * (field, rail) repeats.  0 or -EINVAL.
 */
int ibp_fp_check(const struct ibp_fp *fp);
/*
 * Compact wire form (above) into BUF (IBP_FP_WIRE_MAX always suffices):
 * bytes written, or -EINVAL (ibp_fp_check) / -ENOSPC.
 */
int ibp_fp_encode(const struct ibp_fp *fp, uint8_t *buf, size_t len);
/*
 * Decodes exactly LEN bytes: every count, field, string length and byte,
 * no repeated (field, rail), nothing left over.  0 or -EINVAL (FP then
 * empty).
 */
int ibp_fp_decode(const uint8_t *buf, size_t len, struct ibp_fp *fp);

/*
 * Compares FPS[0..N) (NAMES[i] is the node of FPS[i]; a NULL FPS[i] is a
 * node whose fingerprint did not arrive: left out) and appends findings to
 * OUT.  SELF >= 0: only the findings this node should print (a group that
 * differs from the majority when SELF is its first node; a tie when SELF is
 * the first of the compared nodes), so that each difference is said once
 * among the compared nodes; SELF < 0: all.  0 or -ENOMEM.
 */
int ibp_fp_compare(const struct ibp_fp *const *fps, const char *const *names, size_t n,
		   const struct ibp_policy *p, long self, struct ibp_findings *out);

/*
 * As ibp_fp_compare, when every node compares a window of its own (its
 * ring neighbours, when the step-wide sum did not come): the windows
 * differ, so "the first node says it" can leave a difference unsaid by
 * everyone (n4's window a tie first held by n2, n2's window n4 odd, said
 * by n4).  Here SELF (>= 0) says every difference its own value is part
 * of: a group it is in that is not the window's majority, a tie (SELF < 0:
 * all, as there).  A difference may then be said by each of its nodes,
 * each for its window.
 */
int ibp_fp_compare_window(const struct ibp_fp *const *fps, const char *const *names, size_t n,
			  const struct ibp_policy *p, long self, struct ibp_findings *out);

/*
 * The step-wide comparison: a reduction along the test's ring.
 *
 * Node 0 starts a sum of its own fingerprint and sends it to node 1; node
 * i adds its own and sends it on to i+1; node N-1 then holds the whole
 * step, and the complete sum goes once more around the ring (N-1 -> 0 ->
 * ... -> N-2) so that every node judges the same step-wide majority.  Each
 * node sends at most two sums, on the ring link it already has.
 *
 * The sum is bounded: at most IBP_FPS_MAX_KEYS distinct (field, rail)
 * pairs and IBP_FPS_MAX_VALUES distinct (pair, value) groups for the whole
 * step, each group with its exact node count and its IBP_FPS_EXAMPLES
 * lowest node indices ("n7,n8,n9,n10 and 5 more").  Past the value bound a
 * node's value is counted in its pair's "other" group (exact count, first
 * indices, value not kept: said so in the finding); past the pair bound the
 * entries are counted in keys_dropped and not compared (said so).  Nodes
 * are added in index order, each once: a sum covers exactly nodes
 * [first, first + n_merged), and two sums of ranges that follow each other
 * merge into one (ibp_fp_sum_merge), so that the step's sum can be built
 * from both ends of the ring at once.
 */
#define IBP_FPS_MAX_KEYS   128
#define IBP_FPS_MAX_VALUES 192
#define IBP_FPS_EXAMPLES   4
#define IBP_FPS_MAX_NODES  65536
/*
 * Wire form: nnodes u32 | first u32 | n_merged u32 | n_keys u8 | n_values u8 |
 * keys_dropped u32, then the pairs in use (field u8 | rail | other u32 |
 * n_other_ex u8 | other_ex u32 x n_other_ex), then the groups in use
 * (key u8 | hash u64 | value | count u32 | n_ex u8 | ex u32 x n_ex); a
 * string is its length (u8, below its field's size) and its bytes.
 */
#define IBP_FPS_KEY_WIRE_MAX   (1 + IBP_FP_RAIL_MAX + 4 + 1 + 4 * IBP_FPS_EXAMPLES)
#define IBP_FPS_VALUE_WIRE_MAX (1 + 8 + IBP_FP_VALUE_MAX + 4 + 1 + 4 * IBP_FPS_EXAMPLES)
#define IBP_FPS_WIRE_MIN       (4 + 4 + 4 + 1 + 1 + 4)
#define IBP_FPS_WIRE_MAX                                                                           \
	(IBP_FPS_WIRE_MIN + IBP_FPS_MAX_KEYS * IBP_FPS_KEY_WIRE_MAX +                              \
	 IBP_FPS_MAX_VALUES * IBP_FPS_VALUE_WIRE_MAX)

struct ibp_fps_key {
	uint8_t field;              /* enum ibp_fp_field */
	char rail[IBP_FP_RAIL_MAX]; /* "" node-wide */
	uint32_t other;             /* nodes whose value found no room in the table */
	uint8_t n_other_ex;
	uint32_t other_ex[IBP_FPS_EXAMPLES]; /* their lowest indices, ascending */
};

struct ibp_fps_value {
	uint8_t key; /* index in keys[] */
	uint64_t hash;
	char value[IBP_FP_VALUE_MAX];
	uint32_t count; /* nodes with this value, exact */
	uint8_t n_ex;
	uint32_t ex[IBP_FPS_EXAMPLES]; /* the lowest of them, ascending */
};

struct ibp_fp_sum {
	uint32_t nnodes; /* of the step */
	uint32_t first;  /* nodes [first, first + n_merged) are in */
	uint32_t n_merged;
	uint16_t n_keys, n_values;
	uint32_t keys_dropped; /* entries past IBP_FPS_MAX_KEYS: not compared */
	struct ibp_fps_key keys[IBP_FPS_MAX_KEYS];
	struct ibp_fps_value values[IBP_FPS_MAX_VALUES];
};

/*
 * An empty sum for a step of NNODES (1..IBP_FPS_MAX_NODES).  Only the counts
 * are cleared: the tables past n_keys and n_values are never read, and
 * every function here clears a pair or a group as it comes into use.  Two
 * sums are the same when their counts and the entries in use are.
 */
void ibp_fp_sum_init(struct ibp_fp_sum *s, uint32_t nnodes);

/* DST becomes SRC: the counts and the entries in use (not 22 KB). */
void ibp_fp_sum_copy(struct ibp_fp_sum *dst, const struct ibp_fp_sum *src);

/*
 * Drops the pairs every node that has them agrees on (one group, nobody in
 * "other") with their group: the judgment of a complete sum says exactly
 * what it said before, and a step that agrees sends its complete sum back
 * down the tree as a bare header.  Only for a sum nothing more is merged
 * into (a dropped pair could differ in the nodes still to come).
 */
void ibp_fp_sum_prune(struct ibp_fp_sum *s);

/*
 * Adds node NODE's fingerprint FP.  An empty sum takes any node below
 * s->nnodes (it becomes s->first); then NODE must be the next one
 * (first + n_merged): 0, or -EINVAL (out of order, a duplicate, past the
 * step, a bad entry) with S unchanged.  Bounds are not errors (above).
 */
int ibp_fp_sum_add(struct ibp_fp_sum *s, uint32_t node, const struct ibp_fp *fp);

/*
 * Merges SRC, the nodes right after DST's (src->first == dst->first +
 * dst->n_merged, or DST empty), into DST: as if SRC's nodes had been
 * added one by one, exactly so while no bound is reached (past one the
 * same nodes are counted as "other" or dropped, possibly others than one
 * by one would).  0, or -EINVAL (not adjacent, another step, SRC empty or
 * either sum not what the decoder accepts) with DST unchanged.
 */
int ibp_fp_sum_merge(struct ibp_fp_sum *dst, const struct ibp_fp_sum *src);

/* What the decoder checks (below), on a sum in memory: 0 or -EINVAL. */
int ibp_fp_sum_check(const struct ibp_fp_sum *s);
/*
 * Compact wire form (above) into BUF (IBP_FPS_WIRE_MAX always suffices):
 * bytes written, -EINVAL (ibp_fp_sum_check), -ENOSPC.
 */
int ibp_fp_sum_encode(const struct ibp_fp_sum *s, uint8_t *buf, size_t len);
/*
 * Strangers' bytes, exactly LEN of them: checks every count against its
 * bound and against n_merged, every index, string length and byte,
 * example order, that no pair or (pair, value) repeats, that a node is in
 * at most one group per pair, that no pair counts more nodes than were
 * merged, and that nothing is left over.  0 or -EINVAL (S then empty).
 */
int ibp_fp_sum_decode(const uint8_t *buf, size_t len, struct ibp_fp_sum *s);

/*
 * Judges a complete sum (first == 0, n_merged == nnodes; -EINVAL otherwise) with
 * NAMES[0..nnodes) the step's node names, as ibp_fp_compare() does, with
 * step-wide counts:
 *
 *   n7,n8,n9: mlx5_3 port 1: firmware 28.39.1002, the other 29 nodes 28.41.1000
 *
 * SELF >= 0: only the findings this node says, so that each difference is
 * said once per step: an odd group's by its lowest node, a tie's by the
 * lowest node that has the pair.  SELF < 0: all.  0 or -ENOMEM.
 */
int ibp_fp_sum_judge(const struct ibp_fp_sum *s, const char *const *names,
		     const struct ibp_policy *p, long self, struct ibp_findings *out);

#endif
