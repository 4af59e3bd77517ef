/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-fingerprint.h: the fingerprint of a simulated DGX-like node, 8 rails
 * and every field set, as the plugin would send it: what rdmatest-sim.c's
 * nodes compare and what fpframe-bench.c measures.  MLX5_3_FIRMWARE is
 * mlx5_3:1's firmware (the others have 28.39.1002).  Static inline: each
 * tool is one file that the bench scripts compile alone.
 */
#ifndef IBPREP_SIM_FINGERPRINT_H
#define IBPREP_SIM_FINGERPRINT_H

#include <stdio.h>

#include "ibprep/fingerprint.h"

static inline void sim_fingerprint(struct ibp_fp *fp, const char *mlx5_3_firmware)
{
	char rail[16];

	ibp_fp_init(fp);
	ibp_fp_set(fp, IBP_FP_HCA_SET, NULL,
		   "8 rails: mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,"
		   "mlx5_10:1,mlx5_11:1");
	for (int r = 0; r < 8; r++) {
		snprintf(rail, sizeof(rail), "mlx5_%d:1", r);
		ibp_fp_set(fp, IBP_FP_MODEL, rail, "MT_0000000838");
		ibp_fp_set(fp, IBP_FP_FIRMWARE, rail, r == 3 ? mlx5_3_firmware : "28.39.1002");
		ibp_fp_set(fp, IBP_FP_MTU, rail, "4096");
		ibp_fp_set(fp, IBP_FP_RATE, rail, "400 Gb/sec (4X NDR)");
		ibp_fp_set(fp, IBP_FP_LINK_LAYER, rail, "InfiniBand");
		ibp_fp_set(fp, IBP_FP_GID, rail, "LID (no GID)");
	}
	ibp_fp_set(fp, IBP_FP_KERNEL, NULL, "6.1.0-18-amd64");
	ibp_fp_set(fp, IBP_FP_RDMA_CORE, NULL, "44.0");
	ibp_fp_set(fp, IBP_FP_DRIVER, NULL, "mlx5_core in-tree");
	ibp_fp_set(fp, IBP_FP_GDR, NULL, "nvidia_peermem");
	ibp_fp_set(fp, IBP_FP_NCCL_IB_HCA, NULL, "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
}

#endif
