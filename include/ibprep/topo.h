/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * topo.h: the node's GPUs, RDMA NICs, CPUs and NUMA nodes, from hwloc.
 *
 * Two sources:
 *  - live: PCI discovery only.  The CUDA, NVML, OpenCL, RSMI, Level Zero and
 *    GL components are disabled (slow, and known to hang in slurmstepd); no
 *    environment variable is touched (settings go through hwloc's API).
 *  - an XML file (hwloc 1.x or 2.x format, `lstopo --of xml`), describing
 *    another machine: its CPU sets come from the file, never intersected with
 *    this machine's, and no live /sys is read.
 *
 * What a device is comes from devid.h's table.  GPUs are the functions it
 * calls compute GPUs (never a BMC's VGA), in PCI bus order (gpus[i].index ==
 * i); a function with compute partitions (AMD MI300 in CPX mode: several
 * RSMI/OpenCL osdevs) gives one GPU per partition, each with its parent's
 * locality.  NVIDIA MIG instances are not GPUs here: Slurm indexes them
 * only with MIG gres (docs/devices.md).  RDMA NICs are the OpenFabrics OS
 * devices (mlx5_0 ...) with their ports, and HPE Slingshot NICs (17db:0501,
 * named by their netdev); EFA, iWARP and unknown devices are placed like an
 * HCA but never named in NCCL_IB_HCA / UCX_NET_DEVICES (kind).  A device
 * whose PCI hangs above several NUMA nodes (host bridges under the Machine)
 * has numa -1 and locality_unknown; its cpuset is the whole machine.
 *
 * Port health comes from the XML's Port<N>State infos until
 * ibp_topo_apply_inventory() replaces it with the sysfs inventory and the
 * health findings.  A port whose state the file does not give is unknown
 * and usable; an OpenFabrics device the file gives no port for at all (no
 * Port<N> infos, no network interface: every EFA of such an export) has
 * port 1, state unknown: a verbs device has one port at least.
 *
 * The struct owns everything (hwloc topology, bitmaps, arrays);
 * ibp_topo_release() frees it and is safe on a zeroed or half-loaded one.
 * No globals; any context may call it (the plugin: once per node in
 * user_init, then read-only from every task_init).
 */
#ifndef IBPREP_TOPO_H
#define IBPREP_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>

#include <hwloc.h>

#include "ibprep/devid.h"
#include "ibprep/finding.h"
#include "ibprep/hca.h"

/* nvidia-smi topo -m classes, nearest first (the enum order is the ranking). */
enum ibp_dist {
	IBP_DIST_PIX = 0,     /* at most one PCIe bridge (one switch level) */
	IBP_DIST_PXB = 1,     /* several bridges, no host bridge */
	IBP_DIST_PHB = 2,     /* through one PCIe host bridge */
	IBP_DIST_NODE = 3,    /* between host bridges within one NUMA node */
	IBP_DIST_SYS = 4,     /* across NUMA nodes (the SMP interconnect) */
	IBP_DIST_UNKNOWN = 5, /* a device's NUMA locality is unknown (PCI under the Machine) */
};

/* Which NICs the environment may name: devid.h's transport decides. */
enum ibp_nic_kind {
	IBP_NIC_RDMA = 0,      /* IB/RoCE/OPA verbs device: NCCL_IB_HCA, UCX_NET_DEVICES */
	IBP_NIC_SLINGSHOT = 1, /* HPE Slingshot (libfabric cxi), no verbs ports */
	IBP_NIC_LIBFABRIC = 2, /* verbs device NCCL/UCX do not use: EFA, iWARP, usNIC, unknown */
};

#define IBP_TOPO_MAX_PORTS 4
#define IBP_TOPO_MAX_PARTS 8  /* compute partitions of one function (MI300X CPX: 8) */
#define IBP_PCI_MAX        16 /* "0000:44:00.0" */

struct ibp_topo_port {
	unsigned num;                   /* 1-based */
	enum ibp_port_state state;      /* IBP_PORT_STATE_UNKNOWN when not known */
	enum ibp_link_layer link_layer; /* IBP_LL_UNKNOWN when not known */
	int64_t lid;                    /* -1 unknown */
	int gid_index;                  /* RoCE v2 IPv4-mapped GID index, -1 none */
	bool healthy;                   /* usable for placement */
	char why[IBP_TEXT_MAX];         /* when !healthy: what was seen */
	char netdev[IF_NAMESIZE];       /* "" unknown */
	bool assumed;                   /* the file lists no port for the device: port 1 */
};

/* What GPUs and NICs share: where they sit. */
struct ibp_topo_dev {
	char pci[IBP_PCI_MAX];
	unsigned vendor, device, class_id; /* class_id: 0x0302 */
	int numa;              /* first NUMA node (OS index) of the locality, -1 none or unknown */
	bool locality_unknown; /* PCI attached above several NUMA nodes (the Machine) */
	const struct ibp_devid *id; /* devid.h's verdict on the PCI function */
	int package;                /* package OS index, -1 when the locality spans several */
	hwloc_bitmap_t cpuset;      /* locality (PUs, OS numbering), owned */
	hwloc_bitmap_t nodeset;     /* locality NUMA nodes, owned */
	hwloc_obj_t obj;            /* the PCI object (inside topo->t) */
	/*
	 * The function's own PCIe link: GB/s per direction as hwloc gives it
	 * (0 unknown: a virtual function, an old export); lanes and GT/s when
	 * sysfs said (ibp_topo_apply_inventory, HCAs only), else 0.
	 */
	double link_gbs;
	unsigned link_width;
	double link_gts;
};

struct ibp_topo_gpu {
	struct ibp_topo_dev d;
	unsigned index;   /* PCI bus order among the node's GPUs (partitions in osdev order) */
	char osdev[32];   /* "cuda0", "rsmi4", "card1" or "" */
	unsigned part;    /* compute partition of its PCI function, 0-based */
	unsigned n_parts; /* partitions of that function (1: the whole device) */
};

struct ibp_topo_hca {
	struct ibp_topo_dev d;
	char name[64]; /* "mlx5_0", or the netdev for Slingshot */
	enum ibp_nic_kind kind;
	enum ibp_transport transport; /* devid.h */
	const char *family;           /* devid.h's family name */
	struct ibp_topo_port ports[IBP_TOPO_MAX_PORTS];
	unsigned n_ports;
};

struct ibp_topo {
	hwloc_topology_t t;
	bool from_file;
	bool
	    mapped; /* adopted from a mapped form (ibp_topo_load_mapped): not parsed, not discovered */
	char hostname[IBP_NODE_MAX]; /* from the file's or the live host's infos, "" unknown */
	struct ibp_topo_gpu *gpus;
	size_t n_gpus;
	struct ibp_topo_hca *hcas; /* by name, natural order */
	size_t n_hcas;
	double load_ms;            /* wall time of the hwloc load */
	size_t n_locality_unknown; /* GPUs and NICs whose NUMA locality the file does not give */
	size_t n_vga;              /* display functions that are not GPUs (BMC VGA ...) */
};

void ibp_topo_init(struct ibp_topo *topo);
void ibp_topo_release(struct ibp_topo *topo);

/*
 * Loads from an XML file / buffer.  0, -ENOENT (no file), -EINVAL (not a
 * topology hwloc can read: the 3.0 format on hwloc 2.9 lands here), -ENOMEM.
 */
int ibp_topo_load_xml(struct ibp_topo *topo, const char *path);
int ibp_topo_load_xml_buffer(struct ibp_topo *topo, const char *buf, size_t len);
/* Loads this machine, PCI discovery only.  0 or -errno. */
int ibp_topo_load_live(struct ibp_topo *topo);
/*
 * The same, with the CPUs and memory the caller's cgroup or cpuset may not
 * use (the whole machine, as an admin's `lstopo --of xml` shows it): what a
 * topology shared by every step (topo_cache.h) must hold.
 */
int ibp_topo_load_live_machine(struct ibp_topo *topo);

/*
 * The mapped form (hwloc's shmem export, hwloc/shmem.h): the loaded
 * topology as hwloc holds it in memory, at a fixed address, so that a later
 * process maps it instead of parsing an XML (topo_cache.h keeps it).  It
 * holds pointers: it is read only by the same libhwloc build that wrote it,
 * and only from a file nobody but root can have written.
 *
 * ibp_topo_export_mapped: *BUF (malloc'ed, the caller's) of *LEN bytes.
 * 0, -EBUSY (the fixed address is taken in this process), -ENOTSUP (a
 * 32-bit build), -errno.
 * ibp_topo_load_mapped: maps LEN bytes of FD (read-only, shared; the
 * topology is read-only, ibp_topo_release() unmaps it) and reads the GPUs
 * and NICs as the other loaders do; from_file is set.  0, -EBUSY (the
 * address is taken here), -EINVAL (not a mapped form of this length and
 * address), -errno.
 */
int ibp_topo_export_mapped(const struct ibp_topo *topo, char **buf, size_t *len);
int ibp_topo_load_mapped(struct ibp_topo *topo, int fd, size_t len);

/* Distance class between two devices of the same topology. */
enum ibp_dist ibp_topo_distance(const struct ibp_topo *topo, const struct ibp_topo_dev *a,
				const struct ibp_topo_dev *b);
/* "rdma", "slingshot", "libfabric" */
const char *ibp_nic_kind_name(enum ibp_nic_kind k);
/* Both localities inside one package. */
bool ibp_topo_same_package(const struct ibp_topo_dev *a, const struct ibp_topo_dev *b);
/* "PIX" ... "SYS", "unknown"; ibp_dist_parse: 0 or -EINVAL. */
const char *ibp_dist_name(enum ibp_dist d);
int ibp_dist_parse(const char *s, enum ibp_dist *out);

/*
 * The worst severity of the health findings about DEV port PORT (the health
 * module's ibp_health_port_severity() fits: it understands aggregated
 * device lists).
 */
typedef enum ibp_severity (*ibp_port_severity_fn)(const struct ibp_findings *f, const char *dev,
						  unsigned port);

/*
 * Replaces port states and health with the sysfs inventory and the health
 * findings: a port is unhealthy when it is not ACTIVE in the inventory, when
 * the inventory lacks the device, or when HEALTH (may be NULL) holds a
 * finding of severity fail for it (SEV judges; NULL: exact device name and
 * port, port 0 meaning the whole device).  Matches devices by name.
 * 0 or -EINVAL.
 */
int ibp_topo_apply_inventory(struct ibp_topo *topo, const struct ibp_inventory *inv,
			     const struct ibp_findings *health, ibp_port_severity_fn sev);

/*
 * Sets H's transport, family and kind from devid.h's table: its PCI ids and
 * name, and what sysfs adds (DRIVER of its PCI function, NULL unknown;
 * NODE_TYPE, -1 unknown).  Called by the loaders and by
 * ibp_topo_apply_inventory().
 */
void ibp_topo_hca_identify(struct ibp_topo_hca *h, const char *driver, int node_type);

/*
 * D's PCIe link for a reader: "x2 Gen4 (3.9 GB/s)" when sysfs gave lanes and
 * speed, else the GB/s and the lane/generation pairs that give it ("3.9 GB/s
 * (x1 Gen5, x2 Gen4 or x4 Gen3)": hwloc keeps only the product), or
 * "unknown".  Length or -ENOSPC.
 */
int ibp_topo_link_text(const struct ibp_topo_dev *d, char *buf, size_t len);

/* Lookups; NULL when absent.  A GPU by "0000:44:00.0" (or "44:00.0"). */
const struct ibp_topo_gpu *ibp_topo_find_gpu(const struct ibp_topo *topo, const char *pci);
const struct ibp_topo_hca *ibp_topo_find_hca(const struct ibp_topo *topo, const char *name);

/* The whole machine's PUs, and the NUMA nodes covering a cpuset. */
hwloc_const_bitmap_t ibp_topo_cpuset(const struct ibp_topo *topo);
/*
 * A GPU's memory shown as a NUMA node (Grace Hopper/Blackwell, POWER9 with
 * NVLink GPUs: hwloc's subtype "GPUMemory", or a "PCIBusID" info): never a
 * task's host memory node.
 */
bool ibp_topo_gpu_memory_node(hwloc_obj_t o);
/* OUT <- the host-memory NUMA nodes local to CPUS (GPU memory nodes left out). */
void ibp_topo_host_nodes(const struct ibp_topo *topo, hwloc_const_bitmap_t cpus,
			 hwloc_bitmap_t out);

/* Parses "0000:44:00.0" / "44:00.0" (domain 0).  0 or -EINVAL. */
int ibp_pci_parse(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn);

#endif
