/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hca.h: the node's RDMA devices and ports, as read from sysfs.
 *
 * ibp_inventory_load() walks ROOT/sys/class/infiniband through a struct
 * ibp_sysfs and fills a struct ibp_inventory.  Device names are whatever the
 * kernel gave (mlx5_0, mlx5_bond_0, ibp26s0, irdma0, hfi1_0, rxe0): no prefix
 * is assumed.  A missing file leaves its field "unknown" (the *_known flags,
 * -1, or ""): it is not a failure.  A file that exists but cannot be read, or
 * whose content is malformed, is a finding (code "sysfs_unreadable" or
 * "sysfs_malformed") naming the path, appended to the caller's list.
 *
 * Where devices are found: every entry of sys/class/infiniband; when that
 * directory does not exist at all (a tree gathered from the PCI side),
 * sys/bus/pci/devices/<addr>/infiniband/<dev> instead.  The PCI function is
 * where the device's "device" link leads, or the directory holding
 * infiniband/<dev>; a capture of the class directory alone has no PCI facts
 * (pci "", numa -1).  GID slots that are all zeros, or a prefix with a zero
 * interface ID (mlx4's unused IB slots), are skipped.  Counter read errors
 * a driver returns on purpose (EIO, EINVAL, EOPNOTSUPP, ENODATA) are kept in
 * the counter's read_errno and are not findings; any other failure to read,
 * and a counter that does not parse, are.
 *
 * The inventory owns all its memory; ibp_inventory_release() frees it and is
 * safe on a zeroed or half-loaded inventory.  No globals; callable from any
 * context (it only reads files).
 */
#ifndef IBPREP_HCA_H
#define IBPREP_HCA_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>

#include "ibprep/finding.h"
#include "ibprep/sysfs.h"

/* Port state, as the number before ": " in ports/N/state (IB spec values). */
enum ibp_port_state {
	IBP_PORT_STATE_UNKNOWN = -1,
	IBP_PORT_NOP = 0,
	IBP_PORT_DOWN = 1,
	IBP_PORT_INIT = 2,
	IBP_PORT_ARMED = 3,
	IBP_PORT_ACTIVE = 4,
	IBP_PORT_ACTIVE_DEFER = 5,
};

/* Physical state, as in ports/N/phys_state. */
enum ibp_phys_state {
	IBP_PHYS_UNKNOWN = -1,
	IBP_PHYS_NOP = 0,
	IBP_PHYS_SLEEP = 1,
	IBP_PHYS_POLLING = 2,
	IBP_PHYS_DISABLED = 3,
	IBP_PHYS_TRAINING = 4, /* PortConfigurationTraining */
	IBP_PHYS_LINKUP = 5,
	IBP_PHYS_LINK_ERROR_RECOVERY = 6,
	IBP_PHYS_PHY_TEST = 7,
};

enum ibp_link_layer {
	IBP_LL_UNKNOWN = 0,
	IBP_LL_IB = 1,  /* "InfiniBand" */
	IBP_LL_ETH = 2, /* "Ethernet": RoCE (or iWARP) */
};

enum ibp_gid_type {
	IBP_GID_TYPE_UNKNOWN = 0,
	IBP_GID_TYPE_IB_ROCE_V1 = 1, /* "IB/RoCE v1" */
	IBP_GID_TYPE_ROCE_V2 = 2,    /* "RoCE v2" */
};

/* A parsed "400 Gb/sec (4X NDR)". */
struct ibp_rate {
	bool known;
	double gbps;    /* 400.0; 0 when unknown */
	unsigned width; /* lanes: 1, 2, 4, 8, 12; 0 when unknown */
	char speed[12]; /* per-lane generation: SDR DDR QDR FDR10 FDR EDR HDR NDR XDR, "" unknown */
};

/* "32.0 GT/s PCIe" or "32 GT/s" plus "16"; gts 0 / width 0 when unknown. */
struct ibp_pcie_link {
	double cur_gts, max_gts;
	unsigned cur_width, max_width;
};

struct ibp_counter {
	char name[48]; /* file name: "symbol_error" */
	bool hw;       /* from hw_counters/ rather than counters/ */
	uint64_t value;
	unsigned bits;  /* saturation width known from the IB spec (4, 8, 16, 32), 0 none */
	bool saturated; /* value == 2^bits - 1: "at least" */
	int read_errno; /* 0, or the -errno of a file that failed to read (-ENODATA: "N/A (no PMA)") */
};

struct ibp_gid {
	unsigned index;
	char addr[40]; /* "fe80:0000:0000:0000:...": as the kernel prints it */
	enum ibp_gid_type type;
	char ndev[IF_NAMESIZE]; /* gid_attrs/ndevs/N ("" when empty: reads EINVAL) */
	bool ipv4_mapped;       /* ::ffff:a.b.c.d (RoCE v2 over IPv4) */
};

struct ibp_port {
	unsigned num; /* 1-based port number */
	enum ibp_port_state state;
	enum ibp_phys_state phys_state;
	struct ibp_rate rate;
	enum ibp_link_layer link_layer;
	int64_t lid, sm_lid, lid_mask_count; /* -1 unknown */
	struct ibp_gid *gids;                /* only non-zero GIDs */
	size_t n_gids;
	struct ibp_counter *counters;
	size_t n_counters;
	char netdev[IF_NAMESIZE]; /* the port's netdev (IPoIB ibN or the RoCE netdev), "" none */
	bool counters_na;         /* counters read "N/A (no PMA)": the device has no PMA */
};

/* A network interface of the device (device/net/<name>). */
struct ibp_netdev {
	char name[IF_NAMESIZE];
	char operstate[16]; /* "up", "down", "unknown", "" when missing */
	int64_t mtu;        /* -1 unknown */
	int dev_port;       /* dev_port (0-based) to map it to a port, -1 unknown */
};

struct ibp_hca {
	char name[64];
	char node_guid[24], fw_ver[64], hca_type[128], board_id[128], node_desc[128];
	bool desc_cut;           /* a descriptive string above was longer than its field and cut */
	int node_type;           /* node_type's number: 1 CA, 4 RNIC (iWARP), -1 unknown */
	unsigned vendor, device; /* the PCI function's ids, 0 unknown */
	char driver[32];         /* the PCI function's driver ("mlx5_core"), "" unknown */
	char pci[16];            /* "0000:17:00.0", "" when the device link is missing */
	int numa;                /* -1 unknown */
	char local_cpus[1024];   /* local_cpulist, "" unknown (1024: interleaved lists are long) */
	struct ibp_pcie_link pcie;          /* the HCA's own link */
	struct ibp_pcie_link pcie_upstream; /* the port of the bridge above it */
	char upstream_pci[16];              /* that bridge port, "" none */
	struct ibp_netdev *netdevs;
	size_t n_netdevs;
	struct ibp_port *ports;
	size_t n_ports;
};

struct ibp_inventory {
	struct ibp_hca *hcas;
	size_t n_hcas;
	bool from_pci; /* no sys/class/infiniband: the devices were found from the PCI side */
};

void ibp_inventory_init(struct ibp_inventory *inv);
void ibp_inventory_release(struct ibp_inventory *inv);

/*
 * Loads every RDMA device.  0 even when there is none (n_hcas == 0: the
 * health checks decide what that means), -errno only when the reader itself
 * fails (-ENOMEM, or the root is unusable).  Read problems go to FINDINGS.
 */
int ibp_inventory_load(struct ibp_inventory *inv, const struct ibp_sysfs *fs,
		       struct ibp_findings *findings);

/* What ibp_inventory_load_opts() leaves out. */
enum ibp_inventory_flags {
	/*
	 * counters/ and hw_counters/ (n_counters 0, counters_na false): what
	 * only the health checks read, over half the files of a port.  For a
	 * caller that places tasks on a verdict it already has (the plugin's
	 * cached verdict), never for ibp_health_check().
	 */
	IBP_INVENTORY_NO_COUNTERS = 1u << 0,
	/*
	 * Only what a placement on a verdict the caller already has reads
	 * (implies IBP_INVENTORY_NO_COUNTERS): per port state, phys_state,
	 * rate, link_layer and lid, and the GID table only where the link
	 * layer is not InfiniBand (RoCE's GID index and netdev; an IB port's
	 * netdev is its IPoIB interface, by dev_port); per device node_type,
	 * the PCI function (address, driver, current link speed and width) and
	 * its netdevs' dev_port.  Left unknown ("", -1, 0): node_guid,
	 * fw_ver, hca_type, board_id, node_desc, sm_lid, lid_mask_count, an
	 * IB port's GIDs, numa, local_cpus, vendor, device, the maximum link,
	 * the bridge above, the netdevs' operstate and mtu.  Never for
	 * ibp_health_check().
	 */
	IBP_INVENTORY_PLACEMENT = 1u << 1,
	/* With IBP_INVENTORY_PLACEMENT: also fw_ver, board_id and the netdevs'
	 * mtu (what the cross-node test's consistency fingerprint compares). */
	IBP_INVENTORY_FINGERPRINT = 1u << 2,
	/*
	 * With IBP_INVENTORY_NO_COUNTERS or IBP_INVENTORY_PLACEMENT: still the
	 * link counters a step's link watch compares (ibp_link_counter_name,
	 * below), read by name
	 * before the port's state, as ibp_linkwatch_read() does, so that
	 * ibp_linkwatch_from_inventory() can take the step's first read from
	 * this one.  Every port reads its counters before its state.
	 */
	IBP_INVENTORY_LINK_COUNTERS = 1u << 3,
};

/*
 * The counters of counters/ a step's link watch compares (linkwatch.h: enum
 * ibp_lw_counter is this order), which IBP_INVENTORY_LINK_COUNTERS reads:
 * link_downed, link_error_recovery, symbol_error, port_rcv_errors,
 * port_xmit_discards, port_xmit_wait.  I from 0 to IBP_N_LINK_COUNTERS - 1.
 */
#define IBP_N_LINK_COUNTERS 6
const char *ibp_link_counter_name(unsigned i);

/* ibp_inventory_load() without what FLAGS (enum ibp_inventory_flags) leave out. */
int ibp_inventory_load_opts(struct ibp_inventory *inv, const struct ibp_sysfs *fs, unsigned flags,
			    struct ibp_findings *findings);

/* Parsers, exposed for the tests and the fuzz targets.  0 or -EINVAL/-ERANGE. */
int ibp_parse_port_state(const char *s, enum ibp_port_state *out); /* "4: ACTIVE" */
int ibp_parse_phys_state(const char *s, enum ibp_phys_state *out); /* "5: LinkUp" */
int ibp_parse_rate(const char *s, struct ibp_rate *out);           /* "400 Gb/sec (4X NDR)" */
int ibp_parse_link_layer(const char *s, enum ibp_link_layer *out);
int ibp_parse_gid_type(const char *s, enum ibp_gid_type *out);
int ibp_parse_link_speed(const char *s, double *gts); /* "32.0 GT/s PCIe" */

const char *ibp_port_state_name(enum ibp_port_state s); /* "ACTIVE", "unknown" */
const char *ibp_phys_state_name(enum ibp_phys_state s); /* "LinkUp", "Polling" */
const char *ibp_link_layer_name(enum ibp_link_layer l); /* "InfiniBand", "Ethernet" */

/* Lookups; NULL when absent. */
const struct ibp_hca *ibp_inventory_find(const struct ibp_inventory *inv, const char *name);
const struct ibp_counter *ibp_port_counter(const struct ibp_port *p, const char *name);

/* PCIe generation name from a per-lane speed: 2.5 -> "Gen1" ... 64 -> "Gen6". */
const char *ibp_pcie_gen_name(double gts);

#endif
