/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linkwatch.h: what happened to the node's links while a step ran.
 *
 * ibp_linkwatch_read() keeps, for every port of every RDMA device, its state,
 * its physical state and six counters of sys/class/infiniband/DEV/ports/N/
 * counters, with a CLOCK_MONOTONIC and a CLOCK_REALTIME timestamp.  The
 * plugin reads once at step start (init_post_opt, root) and once at step end
 * (slurm_spank_exit, root); `ibprep check --since SNAPSHOT` reads a saved
 * `ibprep snapshot` tree as "before" and the live (or --sysfs-root) tree as
 * "after".  ibp_linkwatch_compare() turns the two reads into findings:
 *
 *   link_went_down   fail, node  the port was ACTIVE and is not now, or
 *                                       link_downed grew: "link went down 2
 *                                       times during job 1234.0"
 *   link_retrained          fail, node  link_error_recovery grew
 *   port_vanished           fail, node  a port (or its device) is gone
 *   counter_grew            warn, node  symbol_error, port_rcv_errors or
 *                                       port_xmit_discards grew, with the
 *                                       rate per hour
 *   xmit_wait               ok,   node  port_xmit_wait grew: the fraction of
 *                                       the elapsed time the port had data to
 *                                       send and could not (congestion)
 *   counter_reset           ok,   node  a counter went down between the reads
 *                                       (perfquery -R, a driver reload): its
 *                                       growth is counted from the reset, "at
 *                                       least"
 *   counter_blind           ok,   node  a counter was saturated before: its
 *                                       growth cannot be seen
 *
 * Counters of counters/ are the IB PortCounters (IBTA vol. 1, 16.1.3.5):
 * they saturate at their spec width (8 bits link_downed and
 * link_error_recovery, 16 symbol_error, port_rcv_errors and
 * port_xmit_discards, 32 port_xmit_wait) and never wrap.  A value above the
 * spec width is a driver showing a wider counter: it is taken as 64 bits.
 * port_xmit_wait counts ticks, a device-defined multiple of the symbol time
 * (PortSamplesControl.Tick: 0x00 = one symbol time, 4 ns at SDR), which sysfs
 * does not show: the caller gives it (xmit_wait_tick_ns=).
 *
 * Plain data with fixed sizes (no allocation, no globals): a read can be
 * kept in a struct across SPANK callbacks.  Any context; reads files only.
 */
#ifndef IBPREP_LINKWATCH_H
#define IBPREP_LINKWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/finding.h"
#include "ibprep/hca.h"
#include "ibprep/sysfs.h"

#define IBP_LW_MAX_PORTS 64

enum ibp_lw_counter {
	IBP_LW_LINK_DOWNED = 0,
	IBP_LW_LINK_ERROR_RECOVERY,
	IBP_LW_SYMBOL_ERROR,
	IBP_LW_PORT_RCV_ERRORS,
	IBP_LW_PORT_XMIT_DISCARDS,
	IBP_LW_PORT_XMIT_WAIT,
	IBP_LW_N_COUNTERS,
};
_Static_assert(IBP_LW_N_COUNTERS == IBP_N_LINK_COUNTERS, "linkwatch.h counters are hca.h's");

struct ibp_lw_value {
	bool known;     /* the file was there and parsed */
	uint64_t value; /* as read */
	unsigned bits;  /* width: the spec's, or 64 when the value is wider */
};

struct ibp_lw_port {
	char device[IBP_DEV_MAX];
	unsigned port;
	enum ibp_port_state state;
	enum ibp_phys_state phys_state;
	struct ibp_lw_value c[IBP_LW_N_COUNTERS];
};

struct ibp_linkwatch {
	int64_t mono_ns; /* CLOCK_MONOTONIC at the read, 0 unknown */
	int64_t real_ns; /* CLOCK_REALTIME at the read (or the snapshot's time), 0 unknown */
	size_t n_ports;
	bool truncated; /* more than IBP_LW_MAX_PORTS ports: the rest is not watched */
	struct ibp_lw_port ports[IBP_LW_MAX_PORTS];
};

/* The sysfs file name of counter C ("link_downed"). */
const char *ibp_lw_counter_name(enum ibp_lw_counter c);

/* The IB spec width of counter C (8, 16, 32). */
unsigned ibp_lw_counter_bits(enum ibp_lw_counter c);

/*
 * Reads every port under FS's sys/class/infiniband (devices named by
 * IGNORE, a NULL-terminated list, are left out; IGNORE may be NULL) and
 * stamps LW with both clocks.  A missing file leaves its value unknown; a
 * device without ports has none.  0 (also when there is no RDMA device), or
 * -errno when the class directory exists but cannot be listed (-ENOMEM).
 */
int ibp_linkwatch_read(struct ibp_linkwatch *lw, const struct ibp_sysfs *fs,
		       const char *const *ignore);

/*
 * LW from an inventory just read (hca.h) instead of reading the ports again:
 * every port of INV's devices but those IGNORE names, its state, physical
 * state and the link counters the inventory holds (read by
 * IBP_INVENTORY_LINK_COUNTERS or a full load: counters before the state, as
 * ibp_linkwatch_read()), stamped with both clocks now.  -ENOENT when INV did
 * not come from sys/class/infiniband (from_pci: the later reads, which look
 * there, would not find its ports); 0 otherwise.
 */
int ibp_linkwatch_from_inventory(struct ibp_linkwatch *lw, const struct ibp_inventory *inv,
				 const char *const *ignore);

/* One port by name: the device ("mlx5_3") and the port number (1..255). */
struct ibp_lw_port_id {
	char device[IBP_DEV_MAX];
	unsigned port;
};

/*
 * Reads only the N ports of IDS (at most IBP_LW_MAX_PORTS; more are -E2BIG),
 * in that order, and stamps LW with both clocks: what a watch that polls a
 * step's ports every second reads, without listing directories.  A port
 * whose directory is gone is left out of LW (ibp_linkwatch_compare then
 * says port_vanished); a device name that is not a plain name is -EINVAL.
 * 0 or -errno.
 */
int ibp_linkwatch_read_ports(struct ibp_linkwatch *lw, const struct ibp_sysfs *fs,
			     const struct ibp_lw_port_id *ids, size_t n);

/* What ibp_linkwatch_read_ports_opts() leaves out. */
enum ibp_lw_read_flags {
	/* phys_state (left unknown): ibp_linkwatch_compare() does not use it */
	IBP_LW_NO_PHYS_STATE = 1u << 0,
};

/* ibp_linkwatch_read_ports() without what FLAGS (enum ibp_lw_read_flags) leave out. */
int ibp_linkwatch_read_ports_opts(struct ibp_linkwatch *lw, const struct ibp_sysfs *fs,
				  const struct ibp_lw_port_id *ids, size_t n, unsigned flags);

/*
 * "mlx5_0:1,mlx5_3:1" (DEVICE:PORT, comma-separated) into IDS (room for
 * MAX): the one grammar of a port list (ibprep watch --ports, the plugin's
 * watcher).  *N set.  0, -EINVAL (empty, a bad name or port), -E2BIG.
 */
int ibp_lw_port_ids_parse(const char *s, struct ibp_lw_port_id *ids, size_t max, size_t *n);

/*
 * The ports of LW named by IDS (N of them; a port LW does not hold is left
 * out) as one line, so that another process (the step's watcher) starts
 * from the same read instead of reading again:
 *   "MONO REAL" then per port "DEV:PORT STATE PHYS C0 ... C5"
 * space-separated, decimal, "-" for an unknown value (state, phys state, a
 * counter); the counters in enum ibp_lw_counter's order.  0, or
 * -ENAMETOOLONG when LEN is too short.  IBP_LW_TEXT_MAX holds any LW.
 */
#define IBP_LW_TEXT_MAX (48 + IBP_LW_MAX_PORTS * (IBP_DEV_MAX + 5 + 2 * 3 + IBP_LW_N_COUNTERS * 21))
int ibp_linkwatch_to_text(const struct ibp_linkwatch *lw, const struct ibp_lw_port_id *ids,
			  size_t n, char *buf, size_t len);

/*
 * The inverse of ibp_linkwatch_to_text: LW from S, every token checked
 * (a plain device name, port 1-255, no port twice, states within their
 * enums, counters as u64, at most IBP_LW_MAX_PORTS ports).  0 or -EINVAL (LW then empty).
 */
int ibp_linkwatch_from_text(const char *s, struct ibp_linkwatch *lw);

/* The port DEV/PORT of LW, or NULL. */
const struct ibp_lw_port *ibp_linkwatch_find(const struct ibp_linkwatch *lw, const char *dev,
					     unsigned port);

/* ACTIVE or ACTIVE_DEFER: the states in which a link carries traffic. */
bool ibp_port_state_active(enum ibp_port_state s);

/* The growth of one counter between two reads. */
struct ibp_lw_delta {
	uint64_t delta;
	bool at_least; /* saturated after, or reset between: the growth is at least DELTA */
	bool reset;    /* the value went down and cannot have wrapped: counted from 0 */
	bool wrapped;  /* a wrapping counter went down: one wrap counted */
	bool blind;    /* saturated before (and after): growth cannot be seen */
};

/*
 * BEFORE and AFTER of a counter BITS wide (0 = 64).  WRAPS: the counter
 * wraps modulo 2^BITS (driver counters); otherwise it saturates at
 * 2^BITS - 1 (IB PortCounters).  A value above 2^BITS - 1 widens BITS to 64.
 *
 *   saturating  after >= before: after - before, "at least" when after is
 *               the maximum; after < before: a reset, AFTER at least
 *   wrapping    after >= before: after - before; after < before: one wrap
 *               when BITS < 64, a reset when BITS is 64 (a 64-bit counter
 *               does not wrap within a step)
 */
void ibp_lw_counter_delta(uint64_t before, uint64_t after, unsigned bits, bool wraps,
			  struct ibp_lw_delta *d);

struct ibp_linkwatch_opts {
	const char *during;  /* "during job 1234.0" / "since the snapshot of 2026-..." */
	double tick_ns;      /* port_xmit_wait tick, ns (0 = 4, one SDR symbol time) */
	double elapsed_s;    /* 0 = from the two reads' clocks */
	bool quiet_counters; /* no counter_reset / counter_blind notes */
	bool no_rate; /* no rate per hour after a growth (a watch's reads are seconds apart) */
};

/*
 * Compares BEFORE and AFTER (same node) and appends findings (node class,
 * device and port set; node left "" for the reporter) to OUT.  Elapsed time
 * from OPTS, else the monotonic clocks when both are known, else the
 * realtime clocks.  0 or -ENOMEM.
 */
int ibp_linkwatch_compare(const struct ibp_linkwatch *before, const struct ibp_linkwatch *after,
			  const struct ibp_linkwatch_opts *opts, struct ibp_findings *out);

/* The seconds between the two reads as ibp_linkwatch_compare takes them, -1 unknown. */
double ibp_linkwatch_elapsed(const struct ibp_linkwatch *before, const struct ibp_linkwatch *after);

#endif
