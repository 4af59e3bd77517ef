/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * health.h: the node's health checks, data in, findings out.
 *
 * ibp_health_check() judges a struct ibp_health_input (the inventory, an
 * optional second read of it after counter_window, the memlock limit the
 * user's program will run with, GPU presence and the GPUDirect module state)
 * against a policy and appends findings; it reads nothing itself, so tests
 * and the plugin can feed it any data.  ibp_health_gather() fills the input
 * from a sysfs reader, the way the command and the plugin both do.
 *
 * Finding codes (stable; ibprep(1) FINDING CODES lists them with their meaning):
 *   no_rdma_device hca_count_low hca_missing active_ports_low
 *   port_not_active phys_state_not_linkup link_layer_mismatch rate_below_min
 *   width_degraded speed_degraded lid_zero no_subnet_manager
 *   roce_no_v2_gid roce_v2_link_local_only roce_gid_index (ok: information)
 *   counter_high counter_fatal counter_growing pcie_downtrained
 *   pcie_slot_limited netdev_down netdev_mtu_low memlock_low gdr_missing
 *
 * Counter findings are aggregated: one finding per (code, counter) naming
 * every port it applies to, its device field in Slurm's hostlist notation
 * ("mlx5_[0-1,4-9],mlx5_bond_0"): ibp_health_device_matches() tells whether
 * a device is in such a list.
 *
 * No globals, no printing; any context.  ibp_health_gather() sleeps (at most
 * IBP_POLICY_WINDOW_MAX_MS, nanosleep) only when counter_window is set.
 */
#ifndef IBPREP_HEALTH_H
#define IBPREP_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "ibprep/finding.h"
#include "ibprep/hca.h"
#include "ibprep/policy.h"
#include "ibprep/sysfs.h"

/* Whose locked-memory limit is judged: it decides the fault class and the fix. */
enum ibp_memlock_source {
	IBP_MEMLOCK_UNKNOWN = 0, /* not judged */
	IBP_MEMLOCK_SELF,        /* the calling process's own (ibprep check): node */
	IBP_MEMLOCK_SLURMD,      /* slurmd's, which the job inherits: node */
	IBP_MEMLOCK_USER,        /* the user's, propagated by Slurm (SLURM_RLIMIT_MEMLOCK): job */
};

struct ibp_health_input {
	char node[IBP_NODE_MAX]; /* copied into every finding; "" leaves it to the reporter */
	struct ibp_inventory inv;
	struct ibp_inventory inv_after; /* second read, valid when have_after */
	bool have_after;
	unsigned window_ms; /* time between the two reads */
	enum ibp_memlock_source memlock_source;
	uint64_t memlock_kb; /* UINT64_MAX = unlimited */
	int gpus_nvidia;     /* PCI display devices of vendor 0x10de, -1 unknown */
	int gpus_amd;        /* vendor 0x1002, -1 unknown */
	bool gdr_known;      /* the NVIDIA driver is loaded, so the peer module matters */
	bool gdr_loaded;     /* nvidia_peermem, nv_peer_mem or memory_peers present */
	char gdr_module[32]; /* which of them, "" none */
};

/* Zeroes IN with everything unknown; no allocation. */
void ibp_health_input_init(struct ibp_health_input *in);
/* Frees the inventories; safe on a zeroed or half-gathered input. */
void ibp_health_input_release(struct ibp_health_input *in);

/*
 * Reads the inventory, the GPUs (sys/bus/pci/devices) and the GPUDirect
 * module state (sys/module/nvidia, nvidia_peermem, nv_peer_mem,
 * sys/kernel/mm/memory_peers) through FS; with counter_window set, sleeps
 * that long (capped) and reads the inventory again.  Leaves node and the
 * memlock fields to the caller.  Read problems go to FINDINGS.  0 or -errno
 * (-ENOMEM, or the reader failing as a whole).
 */
int ibp_health_gather(struct ibp_health_input *in, const struct ibp_sysfs *fs,
		      const struct ibp_policy *p, struct ibp_findings *findings);

/* Runs every check; appends to OUT.  0 or -ENOMEM. */
int ibp_health_check(const struct ibp_health_input *in, const struct ibp_policy *p,
		     struct ibp_findings *out);

/*
 * Only the checks whose findings are the job's (IBP_CLASS_JOB: the user's
 * own memlock limit), for a step whose node findings came from a cache:
 * they are never cached.  0 or -ENOMEM.
 */
int ibp_health_check_job(const struct ibp_health_input *in, const struct ibp_policy *p,
			 struct ibp_findings *out);

/* True when DEV is named by LIST ("mlx5_0", "mlx5_[0-1,4-9],mlx5_bond_0"). */
bool ibp_health_device_matches(const char *list, const char *dev);

/*
 * The worst severity of the findings about DEV port PORT (findings naming
 * the device with port 0 count for every port), IBP_SEV_OK when none.
 */
enum ibp_severity ibp_health_port_severity(const struct ibp_findings *f, const char *dev,
					   unsigned port);

/* True when the policy's ignore_hcas names DEV. */
bool ibp_health_ignored(const struct ibp_policy *p, const char *dev);

#endif
