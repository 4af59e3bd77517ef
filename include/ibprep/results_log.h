/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * results_log.h: one JSON line per tested link per step, appended by every
 * node to a root-owned file that sites ship like any other log, and read
 * back by `ibprep fabric`.
 *
 *   {"v":1,"t":1764600000,"job":812,"step":0,"by":"n01","round":1,
 *    "a":"n01","ar":0,"ad":"mlx5_0","ap":1,"b":"n02","br":0,"bd":"mlx5_0",
 *    "bp":1,"ok":false,"why":"timed out","rtt_us":null,"gbps":null}
 *
 * (one line in the file).  A is the sending end, B the receiving end, AR
 * and BR their rails; WHY is the outcome's name in the one vocabulary of
 * oob.h (ibp_link_status_name(), read back with ibp_link_status_parse()),
 * OK says whether it is "pass"; RTT_US and GBPS are null when not
 * measured.  A port event (EVENT below) has A = B = BY and its finding
 * code as WHY, OK false; a link's two ends are two nodes.  Both ends of a link write it, each for its own end (BY is A
 * or B), so a dead node's links are still recorded by its peers.
 *
 * Writer (ibp_results_log_append): only into a place nobody but OWNER (root
 * in the plugin; else the caller's own uid) can change, checked by
 * rootpath.h: the path is absolute, every directory on it is owned by root
 * (or OWNER when it is not root) and writable by neither group nor others
 * (an ancestor may be world-writable only with the sticky bit, like /tmp;
 * a root-owned link on the way is followed as rootpath.h says), the log's
 * own directory is not a symbolic link and never world-writable, and the
 * file, when it exists, is a regular file owned the same way, with one
 * link, writable by nobody else.  Refusals use rootpath.h's wording (the
 * object, its owner and mode, the fix).  It is opened with
 * O_APPEND | O_NOFOLLOW | O_CLOEXEC, locked with flock() (bounded: at most
 * IBP_RESULTS_LOG_LOCK_MS, then -EWOULDBLOCK, never an unbounded wait), and
 * each record is one write().  When the file would grow past MAX_BYTES it
 * is renamed to PATH.1 (one generation; the previous .1 is replaced) and a
 * new file started.  A writer that opened the file just before another one
 * rotated it notices (the locked file is no longer PATH) and starts over.
 *
 * Reader (ibp_results_log_read_*): never trusts the text.  It accepts what
 * the writer writes: WHY one of the vocabulary's names (never "untested",
 * which the writer refuses) and OK true exactly for "pass", between two
 * nodes; or a port event: A = B, WHY a finding code (a-z, 0-9, _), OK false.  A line that is
 * not a record is skipped and counted: a last line without its newline (a
 * crash mid-write) as cut; when a cut record was followed by a good one on
 * the same line, the good one is kept.  Unknown keys are ignored (later
 * versions may add some), records of another major version skipped.
 *
 * The core never prints; any context; no globals.
 */
#ifndef IBPREP_RESULTS_LOG_H
#define IBPREP_RESULTS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ibprep/finding.h"
#include "ibprep/oob.h"

#define IBP_RESULTS_LOG_VERSION    1
#define IBP_RESULTS_LOG_MAX_RECORD 1024 /* bytes of one line, newline included */
#define IBP_RESULTS_LOG_LOCK_MS    1000

struct ibp_link_record {
	int64_t time; /* seconds since the epoch, when the step's test ended */
	uint32_t job, step;
	unsigned round;
	char by[IBP_NODE_MAX]; /* the node that wrote it */
	char a[IBP_NODE_MAX], b[IBP_NODE_MAX];
	int a_rail, b_rail; /* -1 unknown */
	char a_dev[IBP_DEV_MAX], b_dev[IBP_DEV_MAX];
	unsigned a_port, b_port;     /* 0 unknown */
	enum ibp_link_status status; /* "ok" is status == IBP_LINK_PASS; never UNTESTED */
	double rtt_us, gbps;         /* < 0: not measured */
	/*
	 * A port event, not a link (the plugin's watcher, docs/watch.md): its
	 * finding code ("link_went_down"), written as WHY with OK false, A and B
	 * both the writer; STATUS is UNTESTED.  "" for a tested link.
	 */
	char event[IBP_CODE_MAX];
};

/*
 * One record as a JSON line (with its newline) in BUF.  Returns the length,
 * or -E2BIG when it does not fit (LEN >= IBP_RESULTS_LOG_MAX_RECORD always
 * fits: every field is bounded), -EINVAL for a record without both nodes
 * or whose status has no name in the log (untested, out of range); for a
 * port event, when A and B differ or EVENT is not a finding code (or is
 * one of the vocabulary's names).
 */
int ibp_results_log_format(const struct ibp_link_record *r, char *buf, size_t len);

/*
 * Appends N records to PATH as described above.  MAX_BYTES 0 = no rotation.
 * 0, or -errno with ERR naming the path and the reason ("/var/log/x: the
 * directory /var/log/x is writable by others").
 */
int ibp_results_log_append(const char *path, uint64_t max_bytes, uid_t owner,
			   const struct ibp_link_record *r, size_t n, char *err, size_t errlen);

/* Parses one line (without its newline) into R.  0 or -EINVAL. */
int ibp_results_log_parse_line(const char *line, size_t len, struct ibp_link_record *r);

struct ibp_results_log_stats {
	size_t lines;     /* lines seen */
	size_t records;   /* records handed to the callback */
	size_t cut;       /* records cut short (a crash mid-write) */
	size_t malformed; /* other lines that are not records */
	size_t other_version;
};

/* Called for every record read; a non-zero return stops the read and is returned. */
typedef int (*ibp_results_log_fn)(void *arg, const struct ibp_link_record *r);

/* Reads TEXT (LEN bytes); STATS accumulate (zero them first). */
int ibp_results_log_read_buf(const char *text, size_t len, ibp_results_log_fn fn, void *arg,
			     struct ibp_results_log_stats *stats);

/* Reads the file PATH in bounded chunks; -errno of open/read with ERR. */
int ibp_results_log_read_file(const char *path, ibp_results_log_fn fn, void *arg,
			      struct ibp_results_log_stats *stats, char *err, size_t errlen);

/*
 * Reads the files PATHS[0..N) as ibp_results_log_read_file() reads each,
 * and calls FN for every record in the files' order, always from the
 * calling thread (FN needs no lock): the result is the same whatever
 * THREADS is.  Up to THREADS threads (0 or 1: none) read and parse the
 * next files meanwhile, each at most a few thousand records ahead, so
 * memory is bounded by THREADS, never by the files.  The first error
 * stops it: -errno with ERR naming the file, or FN's non-zero return.
 */
int ibp_results_log_read_files(const char *const *paths, size_t n, unsigned threads,
			       ibp_results_log_fn fn, void *arg,
			       struct ibp_results_log_stats *stats, char *err, size_t errlen);

#endif
