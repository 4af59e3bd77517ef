/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch.h: the node's ports watched while something runs: a step (the
 * plugin's watcher, spank/watcher/) or `ibprep watch`.
 *
 * Every poll reads the watched ports as linkwatch.h does (state, physical
 * state and six counters), compares the read with the previous one through
 * ibp_linkwatch_compare(), and turns what changed into events stamped with
 * the time they were seen.  Each port's state is kept from poll to poll, so
 * a link that went down and came back is told apart from one that stays
 * down:
 *
 *   DOWN       link_went_down   the port was ACTIVE and is not
 *   FLAP       link_flapped     down for a moment: link_downed grew while the
 *                               port was ACTIVE at both reads (down and back
 *                               between two polls), or a port seen down is
 *                               ACTIVE again within FLAP_S seconds
 *   LASTING    link_still_down  a port seen down is still down FLAP_S
 *                               seconds later (with FLAP_S 0 the DOWN event
 *                               is the lasting one itself: no LASTING)
 *   UP         link_back        a port down longer than that is ACTIVE again
 *   RETRAINED  link_retrained   link_error_recovery grew
 *   VANISHED   port_vanished    the port or its device is gone
 *   ERRORS     counter_grew     symbol_error, port_rcv_errors or
 *                               port_xmit_discards grew
 *
 * Every event carries a finding (finding.h: code as above, severity fail
 * and class node for a link fault, warn for ERRORS, ok for UP; device and
 * port set, node left "") and ENDS: the link is down for good, so a step
 * that uses it hangs (DOWN with FLAP_S 0, LASTING, VANISHED).  What is done
 * about an event is the caller's: the plugin's watcher acts on it by its
 * watch_action= policy, `ibprep watch` prints it.
 *
 * Plain data of fixed size, no globals; a poll allocates only inside the
 * comparison and frees it before returning.  Any context.
 */
#ifndef IBPREP_WATCH_H
#define IBPREP_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/finding.h"
#include "ibprep/linkwatch.h"
#include "ibprep/sysfs.h"

/* At most this many events come out of one poll (two per port). */
#define IBP_WATCH_MAX_EVENTS (2 * IBP_LW_MAX_PORTS)

enum ibp_watch_kind {
	IBP_WATCH_DOWN = 0,
	IBP_WATCH_FLAP,
	IBP_WATCH_LASTING,
	IBP_WATCH_UP,
	IBP_WATCH_RETRAINED,
	IBP_WATCH_VANISHED,
	IBP_WATCH_ERRORS,
	IBP_WATCH_N_KINDS,
};

struct ibp_watch_event {
	enum ibp_watch_kind kind;
	int64_t real_ns; /* CLOCK_REALTIME of the poll that saw it */
	double down_s;   /* FLAP, LASTING, UP: how long the link was (has been) down; -1 unknown */
	bool ends;       /* the link is down for good: what a step is ended on */
	struct ibp_finding f;
};

/* One watched port's state between polls. */
struct ibp_watch_track {
	struct ibp_lw_port_id id;
	bool down;    /* seen not ACTIVE (or gone) after it was ACTIVE */
	bool lasting; /* its lasting event (DOWN with flap_s 0, LASTING, VANISHED) went out */
	int64_t down_mono_ns, down_real_ns;
};

struct ibp_watch {
	double flap_s;                               /* watch_flap= */
	struct ibp_lw_port_id ids[IBP_LW_MAX_PORTS]; /* the ports watched; none: every port */
	size_t n_ids;
	const char *const *ignore; /* every port but these devices (caller's, NULL-terminated) */
	struct ibp_linkwatch prev; /* the last read */
	bool have_prev;
	struct ibp_watch_track track[IBP_LW_MAX_PORTS];
	size_t n_track;
	uint64_t polls;
};

/*
 * Watches the N ports of IDS (N 0: every port of the node, but the devices
 * of IGNORE, a NULL-terminated list the caller keeps, or NULL), with FLAP_S
 * the seconds a port seen down may take to come back as a flap (0 to 3600).
 * 0, -E2BIG (more than IBP_LW_MAX_PORTS), -EINVAL (a bad name or flap_s).
 */
int ibp_watch_init(struct ibp_watch *w, double flap_s, const struct ibp_lw_port_id *ids, size_t n,
		   const char *const *ignore);

/*
 * Reads the watched ports under FS and appends what changed since the
 * previous poll to EV (room for MAX; *N set to how many).  The first poll
 * only reads: it is the baseline.  Events past MAX are dropped (*N == MAX
 * says so: give IBP_WATCH_MAX_EVENTS).  0 or -errno of the read.
 */
int ibp_watch_poll(struct ibp_watch *w, const struct ibp_sysfs *fs, struct ibp_watch_event *ev,
		   size_t max, size_t *n);

/* The same with a read the caller made (CUR's clocks are the poll's time). */
int ibp_watch_update(struct ibp_watch *w, const struct ibp_linkwatch *cur,
		     struct ibp_watch_event *ev, size_t max, size_t *n);

/* "down", "flap", "lasting", "up", "retrained", "vanished", "errors". */
const char *ibp_watch_kind_name(enum ibp_watch_kind k);

/* REAL_NS as local time with milliseconds, "2026-11-30T12:00:03.412" (slurmd's log's format). */
void ibp_watch_time_text(int64_t real_ns, char *buf, size_t len);

#endif
