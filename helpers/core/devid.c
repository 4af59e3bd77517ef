/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * devid.c: the device identification table; see include/ibprep/devid.h and
 * docs/devices.md.
 *
 * Ids are those the kernel drivers bind to (drivers/infiniband/hw/<drv>,
 * drivers/net/ethernet/<vendor>, drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c)
 * and the PCI ID repository (pci-ids.ucw.cz).  Order matters: the first
 * matching rule wins, so the narrow rules (one device) come before the
 * vendor-wide ones.  Every rule's reason is its `why`.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "ibprep/devid.h"

#define ANY_DEV   0x0000, 0xffff
#define CLS_ANY   0x0000, 0x0000 /* mask, value */
#define CLS_DISP  0xff00, 0x0300 /* 03xx: VGA, XGA, 3D, other display */
#define CLS_VGA   0xffff, 0x0300
#define CLS_ACCEL 0xff00, 0x1200 /* processing accelerator */
#define CLS_NET   0xff00, 0x0200 /* 02xx: Ethernet, InfiniBand (0207), other */
#define CLS_IB    0xffff, 0x0c06 /* serial bus: InfiniBand (older HCAs) */

struct pci_rule {
	unsigned vendor, dev_lo, dev_hi, cls_mask, cls_val;
	struct ibp_devid id;
};

#define GPU(fam, fl, why)                                                                          \
	{                                                                                          \
		IBP_DEVID_GPU, IBP_TR_UNKNOWN, (fl), (fam), (why)                                  \
	}
#define VGA(fam, why)                                                                              \
	{                                                                                          \
		IBP_DEVID_VGA, IBP_TR_UNKNOWN, 0, (fam), (why)                                     \
	}
#define NIC(tr, fl, fam, why)                                                                      \
	{                                                                                          \
		IBP_DEVID_RDMA, (tr), (fl), (fam), (why)                                           \
	}
#define OTHER(fam, why)                                                                            \
	{                                                                                          \
		IBP_DEVID_OTHER, IBP_TR_UNKNOWN, 0, (fam), (why)                                   \
	}

static const struct pci_rule pci_rules[] = {
    /* ---- displays that are never compute GPUs -------------------------------- */
    {0x1a03, ANY_DEV, CLS_DISP,
     VGA("ASPEED BMC VGA", "the AST2x00 BMC's display: server management, no compute")},
    {0x102b, ANY_DEV, CLS_DISP,
     VGA("Matrox server VGA", "G200e/eW/eH/eR on BMCs (iDRAC, iLO, IMM): server management")},
    {0x1002, 0x515e, 0x515e, CLS_DISP,
     VGA("ATI ES1000", "Radeon 7000-class ES1000 soldered on HP/IBM/Dell servers for the console")},
    {0x1002, 0x5159, 0x5159, CLS_DISP,
     VGA("ATI RV100 (ES1000 family)",
	 "RV100 QY, the ES1000's desktop twin, on older server boards")},
    {0x1002, 0x5969, 0x5969, CLS_DISP,
     VGA("ATI ES1000 (5969)", "second id of the ES1000 on server boards")},
    {0x19e5, 0x1711, 0x1711, CLS_DISP,
     VGA("Huawei Hi1710 iBMC VGA", "the iBMC chip's display function")},
    {0x1013, ANY_DEV, CLS_DISP,
     VGA("Cirrus Logic VGA", "emulated console VGA of a virtual machine")},
    {0x1234, 0x1111, 0x1111, CLS_DISP, VGA("QEMU standard VGA", "emulated console VGA")},
    {0x1b36, 0x0100, 0x0100, CLS_DISP, VGA("QXL display", "paravirtual console display")},
    {0x1af4, 0x1050, 0x1050, CLS_DISP, VGA("virtio-gpu", "paravirtual console display")},
    {0x15ad, 0x0405, 0x0405, CLS_DISP, VGA("VMware SVGA", "paravirtual console display")},

    /* ---- NVIDIA GPUs ----------------------------------------------------------- */
    {0x10de, 0x2342, 0x2342, CLS_DISP,
     GPU("NVIDIA GH200 Grace Hopper", IBP_DEVID_SUPERCHIP,
	 "Hopper on a Grace module: its HBM is a CPU-less NUMA node of the same package")},
    {0x10de, 0x2348, 0x2348, CLS_DISP,
     GPU("NVIDIA GH200 Grace Hopper (HBM3e)", IBP_DEVID_SUPERCHIP,
	 "Hopper on a Grace module: its HBM is a CPU-less NUMA node of the same package")},
    {0x10de, 0x2941, 0x2941, CLS_DISP,
     GPU("NVIDIA GB200 Grace Blackwell", IBP_DEVID_SUPERCHIP,
	 "Blackwell on a Grace module: its HBM is a CPU-less NUMA node")},
    {0x10de, ANY_DEV, CLS_DISP,
     GPU("NVIDIA GPU", 0,
	 "PCIe and SXM NVIDIA GPUs are class 0300 (VGA) or 0302 (3D, the Teslas); MIG "
	 "instances inside are not separate functions")},

    /* ---- AMD GPUs -------------------------------------------------------------- */
    {0x1002, 0x74a0, 0x74bf, CLS_ANY,
     GPU("AMD Instinct MI300", IBP_DEVID_PARTITIONS,
	 "MI300A/X/MI325X: SPX/DPX/QPX/CPX compute partitions show as several GPUs of one "
	 "function in ROCm SMI")},
    {0x1002, 0x75a0, 0x75bf, CLS_ANY,
     GPU("AMD Instinct MI350", IBP_DEVID_PARTITIONS,
	 "MI350X/MI355X: compute partitions as on MI300")},
    {0x1002, 0x7408, 0x740f, CLS_ANY,
     GPU("AMD Instinct MI200", IBP_DEVID_GCD,
	 "MI250X/MI250 cards have two GCDs, each its own PCI function and GPU; MI210 one")},
    {0x1002, 0x738c, 0x738e, CLS_ANY,
     GPU("AMD Instinct MI100", 0, "CDNA1 accelerator, class 0380")},
    {0x1002, 0x66a0, 0x66a7, CLS_ANY, GPU("AMD Instinct MI50/MI60", 0, "Vega 20 accelerator")},
    {0x1002, ANY_DEV, 0xffff, 0x0380,
     GPU("AMD accelerator", 0, "AMD compute parts are class 0380 (display, other)")},
    {0x1002, ANY_DEV, CLS_ACCEL, GPU("AMD accelerator", 0, "class 1200: processing accelerator")},
    {0x1002, ANY_DEV, CLS_DISP,
     GPU("AMD Radeon / Radeon Pro", 0,
	 "a discrete Radeon (not the server-VGA ids above) runs ROCm or OpenCL work")},

    /* ---- Intel GPUs ------------------------------------------------------------ */
    {0x8086, 0x0bd0, 0x0bdf, CLS_ANY,
     GPU("Intel Data Center GPU Max", 0, "Ponte Vecchio (Max 1100/1550), class 0380")},
    {0x8086, 0x56c0, 0x56c2, CLS_ANY, GPU("Intel Data Center GPU Flex", 0, "Arctic Sound-M")},
    {0x8086, ANY_DEV, CLS_DISP,
     VGA("Intel integrated graphics", "the CPU's display engine, not a data-center GPU")},

    /* ---- RDMA NICs ------------------------------------------------------------- */
    {0x15b3, 0xa2d2, 0xa2d2, CLS_ANY,
     NIC(IBP_TR_IB, IBP_DEVID_DPU, "BlueField DPU",
	 "the host-side ConnectX functions of a BlueField; the Arm side is another host")},
    {0x15b3, 0xa2d6, 0xa2d6, CLS_ANY,
     NIC(IBP_TR_IB, IBP_DEVID_DPU, "BlueField-2 DPU", "host-side ConnectX-6 Dx functions")},
    {0x15b3, 0xa2dc, 0xa2dc, CLS_ANY,
     NIC(IBP_TR_IB, IBP_DEVID_DPU, "BlueField-3 DPU/SuperNIC", "host-side ConnectX-7 functions")},
    {0x15b3, 0xc2d1, 0xc2d5, CLS_ANY,
     OTHER("BlueField management function", "rshim/console/management: no RDMA port")},
    {0x15b3, 0x1021, 0x1021, CLS_ANY,
     NIC(IBP_TR_IB, IBP_DEVID_PORT_FN, "ConnectX-7",
	 "a dual-port ConnectX-7 is two PCI functions, one RDMA device and port each")},
    {0x15b3, 0x1023, 0x1023, CLS_ANY,
     NIC(IBP_TR_IB, IBP_DEVID_PORT_FN | IBP_DEVID_PLANES, "ConnectX-8",
	 "multi-plane: each plane is its own function and RDMA device, placed like a port")},
    {0x15b3, 0x6340, 0x6764, CLS_ANY,
     NIC(IBP_TR_IB, 0, "ConnectX/ConnectX-2 (mlx4)",
	 "MT25408..MT26488: VPI, each port IB or Ethernet; old topologies omit port state")},
    {0x15b3, ANY_DEV, CLS_ANY,
     NIC(IBP_TR_IB, 0, "ConnectX",
	 "Mellanox/NVIDIA HCAs are VPI: the port's link layer says IB or RoCE")},
    {0x8086, 0x24f0, 0x24f1, CLS_ANY,
     NIC(IBP_TR_OPA, 0, "Omni-Path HFI (hfi1)",
	 "OPA 100 series: IB verbs over the OPA wire; PSM2 is its native interface")},
    {0x1077, 0x7220, 0x7322, CLS_ANY,
     NIC(IBP_TR_IB, 0, "QLogic TrueScale (qib)", "QDR InfiniBand HCAs of the ib_qib driver")},
    {0x8086, 0x37d0, 0x37d3, CLS_ANY,
     NIC(IBP_TR_IWARP, 0, "Intel X722 (i40iw/irdma)", "X722 RDMA is iWARP only")},
    {0x8086, 0x1591, 0x159b, CLS_ANY,
     NIC(IBP_TR_ROCE_IWARP, 0, "Intel E810 (irdma)",
	 "E810 runs RoCE v2 or iWARP, per module option")},
    {0x8086, 0x188a, 0x188e, CLS_ANY, NIC(IBP_TR_ROCE_IWARP, 0, "Intel E823 (irdma)", "as E810")},
    {0x14e4, 0x16c0, 0x16ff, CLS_NET,
     NIC(IBP_TR_ROCE, 0, "Broadcom NetXtreme-E (bnxt_re)", "RoCE v1/v2 only")},
    {0x14e4, 0x1750, 0x1761, CLS_NET,
     NIC(IBP_TR_ROCE, 0, "Broadcom NetXtreme-E P5/P7 (bnxt_re)", "RoCE v2 only")},
    {0x14e4, 0xd800, 0xd8ff, CLS_NET,
     NIC(IBP_TR_ROCE, 0, "Broadcom NetXtreme-C (bnxt_re)", "RoCE only")},
    {0x1077, 0x1634, 0x1666, CLS_NET,
     NIC(IBP_TR_ROCE_IWARP, 0, "QLogic FastLinQ 45000 (qedr)", "RoCE or iWARP per port config")},
    {0x1077, 0x8070, 0x8090, CLS_NET,
     NIC(IBP_TR_ROCE_IWARP, 0, "QLogic FastLinQ 41000 (qedr)", "RoCE or iWARP per port config")},
    {0x1425, ANY_DEV, CLS_ANY,
     NIC(IBP_TR_IWARP, 0, "Chelsio Terminator (iw_cxgb4)", "Chelsio RDMA is iWARP")},
    {0x1d0f, 0xefa0, 0xefa3, CLS_ANY,
     NIC(IBP_TR_EFA, 0, "AWS EFA",
	 "SRD transport through libfabric's efa provider (aws-ofi-nccl), not IB/RoCE verbs")},
    {0x17db, 0x0501, 0x0501, CLS_ANY,
     NIC(IBP_TR_CXI, 0, "HPE Slingshot 11 (Cassini)", "libfabric cxi provider, no verbs ports")},
    {0x1137, 0x00cf, 0x00cf, CLS_ANY,
     NIC(IBP_TR_USNIC, 0, "Cisco usNIC", "VIC userspace NIC: libfabric usnic provider")},
    {0x19e5, 0xa222, 0xa22f, CLS_ANY,
     NIC(IBP_TR_ROCE, 0, "HiSilicon HNS (hns_roce)", "Kunpeng on-chip RoCE v2")},
    {0x15ad, 0x0820, 0x0820, CLS_ANY,
     NIC(IBP_TR_ROCE, 0, "VMware PVRDMA", "paravirtual RoCE of a VMware guest")},
    {0x1dd8, ANY_DEV, CLS_NET,
     NIC(IBP_TR_ROCE_IWARP, 0, "Pensando/AMD (ionic)", "AMD Pollara/Pensando RoCE NICs")},
    {0x1ded, ANY_DEV, CLS_ANY,
     NIC(IBP_TR_ROCE_IWARP, 0, "Alibaba ERDMA", "iWARP-based, RoCE v2 on newer devices")},

    /* catch-all */
    {0x0000, 0x0000, 0x0000, CLS_ANY, OTHER("", "no rule")},
};

/* RDMA devices by the driver their PCI function is bound to, or the device
 * name the kernel gives when nobody renames it (the driver's template). */
struct rdma_rule {
	const char *driver;      /* PCI driver, NULL: none */
	const char *name_prefix; /* kernel name template, NULL: none */
	struct ibp_devid id;
};

static const struct rdma_rule rdma_rules[] = {
    {"mlx5_core", "mlx5_", NIC(IBP_TR_IB, 0, "ConnectX (mlx5)", "VPI: link layer decides IB/RoCE")},
    {"mlx4_core", "mlx4_", NIC(IBP_TR_IB, 0, "ConnectX-3 (mlx4)", "VPI: link layer decides")},
    {"hfi1", "hfi1_", NIC(IBP_TR_OPA, 0, "Omni-Path HFI (hfi1)", "OPA: IB verbs, native PSM2")},
    {"ib_qib", "qib", NIC(IBP_TR_IB, 0, "QLogic TrueScale (qib)", "QDR InfiniBand")},
    {"ib_mthca", "mthca", NIC(IBP_TR_IB, 0, "InfiniHost (mthca)", "SDR/DDR InfiniBand")},
    {"bnxt_en", "bnxt_re", NIC(IBP_TR_ROCE, 0, "Broadcom NetXtreme (bnxt_re)", "RoCE only")},
    {"irdma", "irdma", NIC(IBP_TR_ROCE_IWARP, 0, "Intel E810 (irdma)", "RoCE v2 or iWARP")},
    {"ice", NULL, NIC(IBP_TR_ROCE_IWARP, 0, "Intel E810 (irdma)", "RoCE v2 or iWARP")},
    {"i40e", "i40iw", NIC(IBP_TR_IWARP, 0, "Intel X722 (i40iw)", "iWARP only")},
    {"qede", "qedr", NIC(IBP_TR_ROCE_IWARP, 0, "QLogic FastLinQ (qedr)", "RoCE or iWARP")},
    {"erdma", "erdma_", NIC(IBP_TR_ROCE_IWARP, 0, "Alibaba ERDMA", "iWARP or RoCE v2")},
    {"cxgb4", "cxgb4_", NIC(IBP_TR_IWARP, 0, "Chelsio (iw_cxgb4)", "iWARP")},
    {"efa", "efa_", NIC(IBP_TR_EFA, 0, "AWS EFA", "libfabric efa only")},
    {"hns3", "hns_", NIC(IBP_TR_ROCE, 0, "HiSilicon HNS (hns_roce)", "RoCE v2")},
    {"vmw_pvrdma", "vmw_pvrdma", NIC(IBP_TR_ROCE, 0, "VMware PVRDMA", "paravirtual RoCE")},
    {"enic", "usnic_", NIC(IBP_TR_USNIC, 0, "Cisco usNIC", "libfabric usnic only")},
    {NULL, "rxe", NIC(IBP_TR_SOFT_ROCE, 0, "Soft-RoCE (rxe)", "RoCE v2 in software")},
    {NULL, "siw", NIC(IBP_TR_SOFT_IWARP, 0, "Soft-iWARP (siw)", "iWARP in software")},
};

static const struct ibp_devid unknown_rdma =
    NIC(IBP_TR_UNKNOWN, 0, "RDMA device", "no rule: placed by, not named in NCCL/UCX");
static const struct ibp_devid iwarp_rnic =
    NIC(IBP_TR_IWARP, 0, "iWARP RNIC", "node_type RNIC: connections through rdma_cm");
static const struct ibp_devid roce_ca =
    NIC(IBP_TR_ROCE, 0, "RoCE NIC", "node_type CA on an Ethernet NIC: RoCE");

const struct ibp_devid *ibp_devid_pci(unsigned vendor, unsigned device, unsigned class_id)
{
	size_t n = sizeof(pci_rules) / sizeof(pci_rules[0]);

	for (size_t i = 0; i + 1 < n; i++) {
		const struct pci_rule *r = &pci_rules[i];

		if (r->vendor == vendor && device >= r->dev_lo && device <= r->dev_hi &&
		    (class_id & r->cls_mask) == r->cls_val)
			return &r->id;
	}
	return &pci_rules[n - 1].id;
}

static bool prefix(const char *s, const char *p)
{
	return s && p && !strncmp(s, p, strlen(p));
}

const struct ibp_devid *ibp_devid_rdma(const char *driver, const char *name, unsigned vendor,
				       unsigned device, int node_type)
{
	const struct ibp_devid *id = NULL;

	for (size_t i = 0;
	     !id && driver && *driver && i < sizeof(rdma_rules) / sizeof(rdma_rules[0]); i++)
		if (rdma_rules[i].driver && !strcmp(driver, rdma_rules[i].driver))
			id = &rdma_rules[i].id;
	if (!id && vendor) {
		const struct ibp_devid *p = ibp_devid_pci(vendor, device, 0x0200);

		if (p->cls == IBP_DEVID_RDMA)
			id = p;
		else if ((p = ibp_devid_pci(vendor, device, 0x0c06))->cls == IBP_DEVID_RDMA)
			id = p;
	}
	for (size_t i = 0; !id && i < sizeof(rdma_rules) / sizeof(rdma_rules[0]); i++)
		if (prefix(name, rdma_rules[i].name_prefix))
			id = &rdma_rules[i].id;
	if (!id)
		id = &unknown_rdma;
	/* node_type is the kernel's own word: RNIC means iWARP whatever the driver */
	if (node_type == 4 && id->transport != IBP_TR_SOFT_IWARP)
		return &iwarp_rnic;
	if (id->transport == IBP_TR_ROCE_IWARP) {
		if (node_type == 1)
			return &roce_ca;
		/* rdma-core's udev names: iwp* for iWARP, rocep* for RoCE */
		if (prefix(name, "iwp"))
			return &iwarp_rnic;
		if (prefix(name, "rocep"))
			return &roce_ca;
	}
	return id;
}

bool ibp_transport_nccl(enum ibp_transport t)
{
	return t == IBP_TR_IB || t == IBP_TR_ROCE || t == IBP_TR_OPA || t == IBP_TR_SOFT_ROCE;
}

bool ibp_transport_ambiguous(enum ibp_transport t)
{
	return t == IBP_TR_ROCE_IWARP || t == IBP_TR_UNKNOWN;
}

const char *ibp_transport_name(enum ibp_transport t)
{
	static const char *const names[] = {"unknown",   "InfiniBand", "RoCE",      "RoCE or iWARP",
					    "Omni-Path", "iWARP",      "EFA",       "Slingshot",
					    "usNIC",     "Soft-RoCE",  "Soft-iWARP"};

	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

const char *ibp_devid_class_name(enum ibp_devid_class c)
{
	static const char *const names[] = {"other", "gpu", "vga", "rdma"};

	return (unsigned)c < 4 ? names[c] : "other";
}

int ibp_parse_node_type(const char *s, int *out)
{
	unsigned v = 0;
	const char *p = s;

	if (!s || !out)
		return -EINVAL;
	while (*p >= '0' && *p <= '9' && p - s < 3)
		v = v * 10 + (unsigned)(*p++ - '0');
	if (p == s || p[0] != ':' || p[1] != ' ' || !p[2])
		return -EINVAL;
	for (p += 2; *p; p++)
		if (*p == '\n' && !p[1])
			break;
		else if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			return -EINVAL;
	*out = (int)v;
	return 0;
}
