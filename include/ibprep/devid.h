/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * devid.h: what a PCI function or an RDMA device is.
 *
 * One table (helpers/core/devid.c) says, from the PCI vendor, device and class
 * ids and from the kernel's own attributes (the driver the device is bound
 * to, node_type, link_layer, the kernel's device-name template), whether a
 * device is a compute GPU, a display that is never a GPU (a BMC's VGA), an
 * RDMA NIC and by which transport, or none of these.  Every rule carries the
 * reason it exists; docs/devices.md is the reader's version of the table.
 *
 * The transport decides the environment: only InfiniBand, RoCE (hardware or
 * rxe) and Omni-Path verbs devices may be named in NCCL_IB_HCA and
 * UCX_NET_DEVICES; EFA, HPE Slingshot (cxi), Cisco usNIC and iWARP devices
 * are used through libfabric or rdma_cm: tasks are placed by them, they are
 * never named in NCCL's or UCX's IB variables.
 *
 * Pure functions over static data: any context, no allocation.
 */
#ifndef IBPREP_DEVID_H
#define IBPREP_DEVID_H

#include <stdbool.h>

enum ibp_devid_class {
	IBP_DEVID_OTHER = 0, /* none of the below: not looked at */
	IBP_DEVID_GPU = 1,   /* compute GPU or accelerator: one or more Slurm GPUs */
	IBP_DEVID_VGA = 2,   /* a display controller that is not a compute GPU */
	IBP_DEVID_RDMA = 3,  /* an RDMA NIC function (transport below) */
};

enum ibp_transport {
	IBP_TR_UNKNOWN = 0,    /* an RDMA device the table does not know */
	IBP_TR_IB = 1,         /* InfiniBand; on VPI cards the port's link layer may say RoCE */
	IBP_TR_ROCE = 2,       /* RoCE (Ethernet) hardware */
	IBP_TR_ROCE_IWARP = 3, /* RoCE or iWARP, decided by node_type (irdma, qedr, erdma) */
	IBP_TR_OPA = 4,        /* Intel Omni-Path (hfi1): IB verbs over the OPA wire */
	IBP_TR_IWARP = 5,      /* iWARP: rdma_cm only (iw_cxgb4, i40iw, irdma/qedr/erdma as RNIC) */
	IBP_TR_EFA = 6,        /* AWS Elastic Fabric Adapter: libfabric efa */
	IBP_TR_CXI = 7,        /* HPE Slingshot 11 (Cassini): libfabric cxi */
	IBP_TR_USNIC = 8,      /* Cisco usNIC: libfabric usnic */
	IBP_TR_SOFT_ROCE = 9,  /* rxe: RoCE v2 in software over any netdev */
	IBP_TR_SOFT_IWARP = 10, /* siw: iWARP in software */
};

#define IBP_DEVID_PARTITIONS 0x1u  /* one function may hold several GPUs (compute partitions) */
#define IBP_DEVID_SUPERCHIP  0x2u  /* CPU+GPU module: the GPU's memory is a CPU-less NUMA node */
#define IBP_DEVID_DPU        0x4u  /* a DPU's host-side network function */
#define IBP_DEVID_GCD        0x8u  /* one die of a multi-die card, its own PCI function */
#define IBP_DEVID_PORT_FN    0x10u /* multi-port card whose every port is its own PCI function */
#define IBP_DEVID_PLANES     0x20u /* multi-plane NIC (one function per plane) */

struct ibp_devid {
	enum ibp_devid_class cls;
	enum ibp_transport transport; /* RDMA only */
	unsigned flags;               /* IBP_DEVID_* */
	const char *family;           /* "NVIDIA GPU", "AMD Instinct MI300", "ConnectX-7" */
	const char *why;              /* the rule's reason, one line */
};

/* The first PCI rule that matches (never NULL: the catch-all says OTHER). */
const struct ibp_devid *ibp_devid_pci(unsigned vendor, unsigned device, unsigned class_id);

/*
 * An RDMA device: DRIVER (the PCI function's driver, "" unknown), NAME (the
 * RDMA device name), VENDOR/DEVICE (0 unknown), NODE_TYPE (the number of
 * sys/class/infiniband/<dev>/node_type, -1 unknown).  Never NULL.  The
 * transport is the driver's, refined by node_type (RNIC = iWARP) and by the
 * kernel's names (rdma-core names iWARP devices iwp*, RoCE rocep*).
 */
const struct ibp_devid *ibp_devid_rdma(const char *driver, const char *name, unsigned vendor,
				       unsigned device, int node_type);

/* Whether a device of this transport may be named in NCCL_IB_HCA / UCX_NET_DEVICES. */
bool ibp_transport_nccl(enum ibp_transport t);
/* Whether NCCL/UCX could use it but the table cannot tell (RoCE-or-iWARP unresolved). */
bool ibp_transport_ambiguous(enum ibp_transport t);
/* "InfiniBand", "RoCE", "Omni-Path", "iWARP", "EFA", "Slingshot", "usNIC", "unknown" ... */
const char *ibp_transport_name(enum ibp_transport t);
/* "gpu", "vga", "rdma", "other" */
const char *ibp_devid_class_name(enum ibp_devid_class c);

/* node_type: "1: CA", "4: RNIC", "7: unspecified".  0 or -EINVAL. */
int ibp_parse_node_type(const char *s, int *out);

#endif
