/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * place.h: which GPU(s), HCA port(s), CPUs and memory node each local task
 * of a step uses, and why.
 *
 * ibp_place_compute() is pure: it reads a loaded struct ibp_topo (whose port
 * health is already set, see ibp_topo_apply_inventory) and a step shape, and
 * fills a struct ibp_placement plus findings; applying it (affinity, memory
 * policy, environment) is the caller's business (env.h, `ibprep exec`, the
 * plugin's task_init).  Deterministic: the same topology and step give the
 * same answer on every node and every call.
 *
 * Rules (docs/placement.md, docs/devices.md "Which NIC is a GPU's"):
 *  - fabric: the healthy ports of the policy's link layer; with link_layer
 *    any, the kind of port (InfiniBand, RoCE, EFA, Slingshot, other) that
 *    reaches the GPUs nearest (summed over the GPUs), InfiniBand first at
 *    equal distance and without GPUs (a dual-port card's Ethernet port is
 *    then not a fabric port).  A NIC on a link of at most a quarter of the
 *    GPUs' own bandwidth (x1/x2/x4, or x8 a generation lower) is not a
 *    data NIC while a healthy NIC of full width sits within NODE of a GPU
 *    (a board's management ConnectX beside GPU-local EFA); every port left
 *    out says why (ports[]);
 *  - every GPU of the node gets the nearest healthy fabric port: by distance
 *    class (PIX < PXB < PHB < NODE < SYS), then same package, then the port
 *    fewest GPUs already use (rail-optimized nodes: GPU i with its own HCA),
 *    then HCA name order; unhealthy nearer ports are skipped and reported;
 *  - GPUs (in PCI bus order) are dealt to tasks in contiguous blocks: with G
 *    GPUs and T <= G tasks, task r gets G/T GPUs and the first G%T tasks one
 *    more; with T > G, task r shares GPU floor(r*G/T) (a job warning);
 *    CPU-only tasks get NUMA nodes by the same block rule;
 *  - CPUs: the task's locality (its GPUs' local CPUs, or its NUMA nodes)
 *    intersected with the allowed set, split in whole cores (all hardware
 *    threads) among the tasks sharing that locality, G%T rule again (the
 *    first tasks get one core more), never overlapping; the memory nodes are
 *    those of the chosen CPUs.  Every fallback is a job-class warning.
 *
 * The placement owns its bitmaps; ibp_placement_release() frees them and is
 * safe on a zeroed placement.  No globals; any context.
 */
#ifndef IBPREP_PLACE_H
#define IBPREP_PLACE_H

#include <stdbool.h>
#include <stddef.h>

#include <hwloc.h>

#include "ibprep/finding.h"
#include "ibprep/hca.h"
#include "ibprep/topo.h"

#define IBP_PLACE_MAX_GPUS  64 /* GPUs of one node */
#define IBP_PLACE_MAX_NICS  64 /* fabric ports of one node (p5: 32 EFA) */
#define IBP_PLACE_MAX_TASKS 1024

/* What the chosen fabric is used through: decides the environment and the advice. */
enum ibp_fabric_kind {
	IBP_FABRIC_NONE = 0,      /* no NIC port to use */
	IBP_FABRIC_IB = 1,        /* InfiniBand and Omni-Path verbs ports */
	IBP_FABRIC_ROCE = 2,      /* RoCE verbs ports */
	IBP_FABRIC_EFA = 3,       /* AWS EFA: libfabric's efa provider */
	IBP_FABRIC_SLINGSHOT = 4, /* HPE Slingshot: libfabric's cxi provider */
	IBP_FABRIC_OTHER = 5,     /* usNIC, iWARP, RoCE-or-iWARP undecided, unknown devices */
};

/* "none", "InfiniBand", "RoCE", "EFA", "Slingshot", "other" */
const char *ibp_fabric_kind_name(enum ibp_fabric_kind k);

/* One HCA port chosen for something. */
struct ibp_place_nic {
	int hca;       /* index in topo->hcas, -1 none */
	unsigned port; /* 1-based */
	enum ibp_dist dist;
};

/* Per GPU of the node (index = topo->gpus index). */
struct ibp_place_gpu {
	struct ibp_place_nic nic; /* nearest healthy fabric port; nic.hca -1: none */
	char why[IBP_TEXT_MAX];   /* why that port (or none) */
	bool in_step;
	int task;            /* owning task's local rank, -1 not in the step */
	hwloc_bitmap_t cpus; /* worker CPUs (torchrun-style per-GPU rows), in-step only */
	hwloc_bitmap_t mems;
};

struct ibp_place_task {
	unsigned local_rank;
	unsigned gpus[IBP_PLACE_MAX_GPUS]; /* topo->gpus indices, PCI order */
	size_t n_gpus;
	struct ibp_place_nic nics[IBP_PLACE_MAX_NICS]; /* nearest first */
	size_t n_nics;
	hwloc_bitmap_t cpus, mems;
};

struct ibp_step {
	unsigned ntasks; /* tasks of the step on this node, >= 1 */
	/* GPUs the step has on this node (topo->gpus indices); all_gpus wins */
	bool all_gpus;
	const unsigned *gpus;
	size_t n_gpus;
	hwloc_const_bitmap_t allowed; /* CPUs the step may use; NULL: the topology's */
	/* one task's own CPU mask (its affinity in task_init); applies to local_rank */
	int local_rank;                    /* -1: none singled out */
	hwloc_const_bitmap_t task_allowed; /* NULL: none */
	enum ibp_link_layer fabric;        /* IBP_LL_UNKNOWN: decide (IB first) */
};

/* Every port of the topology: in the fabric or not, and why. */
struct ibp_place_port {
	int hca;       /* index in topo->hcas */
	unsigned port; /* 1-based */
	enum ibp_fabric_kind kind;
	bool fabric;
	char why[IBP_TEXT_MAX];
};

struct ibp_placement {
	enum ibp_link_layer fabric_ll;
	enum ibp_fabric_kind
	    fabric_kind; /* of the fabric ports, or of the unhealthy ones; NONE: no NIC */
	struct ibp_place_port *ports; /* one per topology port, HCA then port order */
	size_t n_ports;
	struct ibp_place_nic fabric[IBP_PLACE_MAX_NICS]; /* healthy fabric ports, name order */
	size_t n_fabric;
	struct ibp_place_gpu *gpus; /* topo->n_gpus rows */
	size_t n_gpus;
	struct ibp_place_task *tasks;
	size_t n_tasks;
};

void ibp_placement_init(struct ibp_placement *pl);
void ibp_placement_release(struct ibp_placement *pl);

/*
 * 0, -EINVAL (ntasks 0 or above IBP_PLACE_MAX_TASKS, a GPU index out of
 * range, a duplicate GPU), -E2BIG (more GPUs or ports than the limits),
 * -ENOMEM.  Placement problems (no healthy port, GPUs without a local HCA,
 * uneven division, CPUs outside the allowed set) are findings: class job for
 * the request, class node for unhealthy ports that had to be skipped.
 */
int ibp_place_compute(struct ibp_placement *pl, const struct ibp_topo *topo,
		      const struct ibp_step *step, struct ibp_findings *findings);

/*
 * What one process uses: a task's row, or one GPU's worker row (torchrun-style
 * launchers that start one worker per GPU inside a task owning them all).
 * Points into the placement: valid while it lives.
 */
struct ibp_place_view {
	unsigned local_rank;
	const unsigned *gpus;
	size_t n_gpus;
	const struct ibp_place_nic *nics;
	size_t n_nics;
	hwloc_const_bitmap_t cpus, mems;
};

/* Task R's row.  0 or -EINVAL when R is out of range. */
int ibp_place_view_task(const struct ibp_placement *pl, size_t r, struct ibp_place_view *v);
/*
 * Worker W of task R: its W-th GPU (PCI order) with that GPU's port and
 * worker CPUs.  0, -EINVAL (R out of range), -ENOENT (the task has no GPU W).
 */
int ibp_place_view_worker(const struct ibp_placement *pl, size_t r, size_t w,
			  struct ibp_place_view *v);

/*
 * One sentence for the node: how its fabric is used (IB verbs, or libfabric
 * for EFA and Slingshot, naming NCCL or RCCL after the GPUs' vendor), or what
 * to check when it has none.  Length or -ENOSPC.
 */
int ibp_place_fabric_advice(const struct ibp_placement *pl, const struct ibp_topo *topo, char *buf,
			    size_t len);
/* The fix for a node whose fabric of kind K has no healthy port. */
const char *ibp_place_fabric_fix(enum ibp_fabric_kind k);

/* "mlx5_0:1" for a chosen port; "" for none.  Length or -ENOSPC. */
int ibp_place_nic_name(const struct ibp_topo *topo, const struct ibp_place_nic *nic, char *buf,
		       size_t len);

/*
 * A task's row built from the GPUs it really sees rather than from the
 * deal (Slurm bound it to other GPUs, or the user chose): GPUS are node
 * indices (its CUDA_VISIBLE_DEVICES mapped).  Each GPU brings its nearest
 * healthy port and its share of CPUs and memory from the placement's per-GPU
 * rows (the shares the PCI-order deal hands out, so tasks that see different
 * GPUs never overlap); a GPU outside the placed step brings its local CPUs.
 * Ports nearest first, duplicates once.  SV owns its copies: release it.
 * 0, -EINVAL (a GPU index out of range), -E2BIG (more than
 * IBP_PLACE_MAX_GPUS), -ENOMEM.
 */
struct ibp_place_seen {
	struct ibp_place_view v; /* points into the fields below */
	unsigned gpus[IBP_PLACE_MAX_GPUS];
	struct ibp_place_nic nics[IBP_PLACE_MAX_GPUS];
	hwloc_bitmap_t cpus, mems;
};

int ibp_place_view_seen(struct ibp_place_seen *sv, const struct ibp_topo *t,
			const struct ibp_placement *pl, unsigned task, const unsigned *gpus,
			size_t n_gpus);
/* Safe on a zeroed or half-built SV. */
void ibp_place_seen_release(struct ibp_place_seen *sv);

#endif
