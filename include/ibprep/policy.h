/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy.h: what "healthy", "well placed" and "a passing cross-node test"
 * mean on this site, as key=value pairs.
 *
 * The same keys come from `ibprep ... KEY=VALUE`, from plugstack.conf
 * arguments and from a config file.  ibp_policy_init() sets the defaults,
 * under which a healthy node passes with no policy at all; ibp_policy_set()
 * takes one pair and rejects an unknown key or a bad value with a message
 * that names it (the command exits 2 on it, the plugin refuses to load).
 *
 * The plugin's own keys (sysfs_root=, topology=, drain= ...) are not here:
 * the SPANK glue handles those and hands every other pair to this module.
 * Plain data, no allocation: copy it freely.
 */
#ifndef IBPREP_POLICY_H
#define IBPREP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/hca.h"

#define IBP_POLICY_MAX_NAMES     32
#define IBP_POLICY_MAX_COUNTERS  32
#define IBP_POLICY_WINDOW_MAX_MS 10000      /* counter_window= is capped: no long waits */
#define IBP_COUNTER_OFF          UINT64_MAX /* a counter limit that never triggers */
/* test_ports= by default: privileged, and why this range (rdmatest_ports.h) */
#define IBP_TEST_PORTS_DEFAULT_LO 230
#define IBP_TEST_PORTS_DEFAULT_HI 299

enum ibp_policy_link_layer {
	IBP_POLICY_LL_ANY = 0,
	IBP_POLICY_LL_IB,
	IBP_POLICY_LL_ETH,
};

/*
 * A counter threshold, with ibqueryerrors' meaning: a value that EXCEEDS the
 * limit triggers (warn > WARN, fail > FAIL); IBP_COUNTER_OFF never does, so
 * "counter_warn=symbol_error=0" warns on any symbol error.  The defaults are
 * the thresholds infiniband-diags ships in /etc/infiniband-diags/
 * error_thresholds (SymbolErrorCounter=10 ...), for warn; fail is off.
 */
struct ibp_counter_limit {
	char name[48]; /* the sysfs file name: "symbol_error" */
	uint64_t warn, fail;
};

/*
 * What the cross-node test compares across the step's nodes (fingerprint.h),
 * and how a difference is judged: consistency=KEY:fail|warn|off,...
 */
enum ibp_consistency_key {
	IBP_CK_HCA_SET = 0, /* hca_set: the rails (HCA:port) the step uses */
	IBP_CK_LINK_LAYER,  /* link_layer: InfiniBand or Ethernet per rail */
	IBP_CK_GID,         /* gid: the RoCE GID index and type NCCL will use */
	IBP_CK_NCCL_ENV,    /* nccl_env: NCCL_IB_HCA, NCCL_IB_GID_INDEX, ... UCX_NET_DEVICES */
	IBP_CK_MODEL,       /* model: board_id per rail */
	IBP_CK_FIRMWARE,    /* firmware: fw_ver per rail */
	IBP_CK_MTU,         /* mtu: the rail's netdev MTU */
	IBP_CK_RATE,        /* rate: rate, width and generation per rail */
	IBP_CK_KERNEL,      /* kernel: the kernel release */
	IBP_CK_RDMA_CORE,   /* rdma_core: the libibverbs (rdma-core) version */
	IBP_CK_DRIVER,      /* driver: the HCA driver and its version */
	IBP_CK_GDR,         /* gdr: the GPUDirect RDMA module */
	IBP_CK_N,
};
#define IBP_CONSISTENCY_OFF (-1) /* a consistency level: not compared */

struct ibp_policy {
	/* health (issue: foundation) */
	enum ibp_policy_link_layer link_layer; /* link_layer=ib|eth|any (any) */
	double min_rate;                       /* min_rate= Gb/s per port, 0 off (0) */
	unsigned min_width;                    /* min_width= lanes, 0 = from the node's peers (0) */
	char min_speed[12];                    /* min_speed=NDR: per-lane generation floor ("") */
	int expect_hcas;                       /* expect_hcas=N, -1 unset: then at least one (-1) */
	int expect_ports;                      /* expect_ports=N active ports, -1 unset (-1) */
	char hcas[IBP_POLICY_MAX_NAMES][64];   /* hcas=mlx5_0,mlx5_1: must be present */
	size_t n_hcas;
	char ignore_hcas[IBP_POLICY_MAX_NAMES][64]; /* ignore_hcas=mlx5_bond_0 */
	size_t n_ignore_hcas;
	unsigned counter_window_ms; /* counter_window= ms between two reads, 0 off (0) */
	struct ibp_counter_limit
	    counter_limits[IBP_POLICY_MAX_COUNTERS]; /* counter_warn= / counter_fail= */
	size_t n_counter_limits;
	bool check_pcie;         /* check_pcie=yes|no (yes) */
	bool check_netdev;       /* check_netdev=yes|no (yes) */
	int64_t min_mtu;         /* min_mtu= bytes on the HCA netdev, 0 off (0) */
	uint64_t min_memlock_kb; /* min_memlock= KiB, "unlimited" = UINT64_MAX (unlimited) */
	bool check_gdr;          /* check_gdr=yes|no: GPUDirect prerequisites (yes) */
	bool check_counters;     /* check_counters=yes|no (yes) */

	/* placement and environment (issue: topology and placement) */
	bool nccl_hca_per_task; /* nccl_hca=node|task (node) */
	bool set_gid_index;     /* gid_index=yes|no (no) */
	bool set_gdr_level;     /* gdr_level=yes|no (no) */
	bool ompi_ucx;          /* ompi_pml=ucx|none (none) */
	char socket_ifname[64]; /* socket_ifname=IFNAME ("" = derive) */

	/* cross-node test (issue: RDMA sanity test) */
	double test_timeout_s;    /* test_timeout= seconds, decimals allowed (5) */
	double test_min_bw;       /* test_min_bw= fraction of the slower port's rate (0.1) */
	unsigned test_max_lat_us; /* test_max_lat_us= (1000) */
	unsigned test_port_lo, test_port_hi; /* test_ports=A-B (IBP_TEST_PORTS_DEFAULT_*) */
	bool test_pairing_any;               /* test_pairing=rail|any (rail) */
	char test_transport[16];             /* test_transport=verbs|socket (verbs) */

	/* link events during the step (linkwatch.h) */
	bool link_watch; /* link_watch=yes|no: read the ports at step start and end (yes) */
	double xmit_wait_tick_ns; /* xmit_wait_tick_ns= the device's port_xmit_wait tick (4) */

	/* the watch while the step runs (watch.h) */
	double watch_interval_s; /* watch_interval= seconds between two polls, 0 off (1) */
	double watch_flap_s; /* watch_flap= seconds a port seen down may take to come back (0) */

	/* consistency across the step (fingerprint.h): IBP_SEV_FAIL, IBP_SEV_WARN or
	 * IBP_CONSISTENCY_OFF per key; fail for hca_set, link_layer, gid, nccl_env,
	 * warn for the rest */
	int consistency[IBP_CK_N];
};

/* Whether any key of consistency= is compared (not all off). */
bool ibp_policy_consistency_wanted(const struct ibp_policy *p);
/* The key's name in consistency= ("hca_set"), NULL out of range. */
const char *ibp_consistency_key_name(enum ibp_consistency_key k);

void ibp_policy_init(struct ibp_policy *p);

/*
 * Applies KEY=VALUE.  0, -ENOENT for an unknown key, -EINVAL for a bad
 * value; on error ERR holds "unknown key 'x'" / "bad value 'y' for key 'x':
 * expected ...".
 */
int ibp_policy_set(struct ibp_policy *p, const char *key, const char *value, char *err,
		   size_t errlen);

/* Splits "key=value" and calls ibp_policy_set; a missing '=' is -EINVAL. */
int ibp_policy_set_pair(struct ibp_policy *p, const char *pair, char *err, size_t errlen);

/* True when KEY is one of this module's keys (the glue uses it to route). */
bool ibp_policy_has_key(const char *key);

/* The limits of counter NAME, or NULL when it is not judged. */
const struct ibp_counter_limit *ibp_policy_counter_limit(const struct ibp_policy *p,
							 const char *name);

/* "yes", "true", "on", "1" / "no", "false", "off", "0", any case.  0 or -EINVAL. */
int ibp_policy_parse_bool(const char *s, bool *out);

#define IBP_POLICY_LINE_MAX 8192 /* bytes of one config line */

/*
 * The tokenizer of spank_ib.conf(5) files (conf.h reads them with it):
 * "key=value" lines, '#' starts a comment (whole line or after whitespace),
 * blank lines and spaces around key and value ignored.  Keys of this
 * module are applied; any other key goes to OTHER (the plugin's own keys)
 * or, when OTHER is NULL, is an error.  OTHER returns 0 or -errno and
 * writes its message to ERR.  On error ERR reads "NAME:LINE: message" and
 * the pairs before the bad line stay applied.  0, -ENOENT, -EINVAL, -E2BIG
 * (a line of IBP_POLICY_LINE_MAX bytes or more).
 */
typedef int (*ibp_policy_other_fn)(void *arg, const char *key, const char *value, char *err,
				   size_t errlen);
int ibp_policy_parse_text(struct ibp_policy *p, const char *text, size_t len, const char *name,
			  ibp_policy_other_fn other, void *arg, char *err, size_t errlen);

/*
 * Rank of a per-lane link speed name (SDR 1, DDR 2, QDR 3, FDR10 4, FDR 5,
 * EDR 6, HDR 7, NDR 8, XDR 9; case-insensitive), 0 when unknown.
 */
int ibp_link_speed_rank(const char *name);

#endif
