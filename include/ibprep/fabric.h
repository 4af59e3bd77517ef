/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fabric.h: which part of the fabric is bad, from many steps' link results.
 *
 * Every tested link (results_log.h) crossed a chain of parts: node A, A's
 * cable on its rail, A's leaf switch, and for links between leaves the
 * uplinks of every switch below the lowest common one, then the same on
 * B's side; and the rail of each end (rail k's switch, or its switches:
 * every link of the rail crosses it, a link between two rails both), which
 * is not fitted but judged on its own links (below).  A part fails a link that crosses it with an unknown
 * probability; a link passes only when every part it crosses lets it.
 * ibp_fabric_solve() fits those per-part probabilities to all links seen
 * (maximum a posteriori, NetBouncer-style, with a prior that prefers few
 * bad parts), attributes each failed link to the parts the fit blames, and
 * ranks the parts by how surprising their failures are against the
 * fabric's own background failure rate.  docs/fabric.md has the method,
 * why it was chosen over voting (007) and counting (the naive rule), and
 * the accuracy measured on a simulated 512-node fat tree.
 *
 * A part is a suspect only with enough evidence: at least MIN_LINKS links
 * through it, MIN_FAIL failures attributed to it, from at least MIN_PEERS
 * different far ends (one peer cannot tell which end is bad), a fitted
 * failure probability of at least MIN_PROB, and a surprise (-log10 of the
 * Poisson tail of its failures under the background rate) of at least
 * MIN_SURPRISE + log10(number of parts): with thousands of parts judged at
 * once, a one-in-a-thousand coincidence happens to several of them.  A part with failures that misses one of these is "not
 * enough evidence", never a guess.  A rail is judged on its own links
 * against the other rails' (fitted, it would share its failures with its
 * many ports by chance): P_FAIL is its failed share beyond theirs (or the
 * background), SURPRISE the Poisson tail of its failures at their rate;
 * below MIN_PROB it is the background (healthy), and it is not enough
 * evidence when more than half of its failed links have one node at an end
 * (that node's port), or one leaf's nodes (that leaf's switch or uplinks).
 * A cable, leaf or uplinks of a suspect rail is judged against the rail's
 * rate instead of the background.
 *
 * How a record is weighed (docs/fabric.md says it for the admin): a record
 * is its writer's end of a link, half of the link; a writer that is
 * neither end (BY not A or B) speaks for nobody and is left out.  Failures
 * both ends reported are failed links; one end's alone are half a failed
 * link each, and on the far end's parts they count at most as much as the
 * next reporter's word there (one reporter alone: nothing), so that one
 * node's unconfirmed failures cannot outweigh its peers'.  Outcomes about
 * the test itself (failed authentication, protocol error, local failure,
 * other protocol version) are counted and left out.
 *
 * Memory: the parts (with at most 4096 days and 1024 failed jobs each) and
 * the paths that failed; never the records or the links, so a month of a
 * fleet's logs streams through.
 *
 * Plain data and heap memory owned by the struct; no globals; never prints.
 */
#ifndef IBPREP_FABRIC_H
#define IBPREP_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/finding.h"
#include "ibprep/results_log.h"
#include "ibprep/topology_conf.h"

#define IBP_FABRIC_MAX_NODES (1u << 24)
#define IBP_FABRIC_MAX_RAILS 256
#define IBP_FABRIC_NAME_MAX  (IBP_NODE_MAX + 24)

enum ibp_part_kind {
	IBP_PART_NODE = 0,    /* the host: HCA, PCIe, driver, everything behind all its rails */
	IBP_PART_CABLE = 1,   /* a node's link to its leaf on one rail (cable, transceiver, port) */
	IBP_PART_LEAF = 2,    /* a leaf switch on one rail */
	IBP_PART_UPLINKS = 3, /* a switch's links to the level above, on one rail */
	IBP_PART_RAIL = 4,    /* one rail of the fleet: its switch(es), on every link of the rail */
};

enum ibp_part_verdict {
	IBP_PART_HEALTHY = 0,
	IBP_PART_SUSPECT = 1,
	IBP_PART_NOT_ENOUGH = 2, /* failures, but not enough evidence to blame it */
};

struct ibp_fabric_opts {
	int64_t since;       /* records older than this (epoch seconds) are left out; 0 none */
	unsigned min_links;  /* 8 */
	double min_fail;     /* 2 */
	unsigned min_peers;  /* 2 */
	double min_prob;     /* 0.01 */
	double min_surprise; /* 2, plus log10(parts): one in 100 for the whole fabric */
	double prior;        /* 2: pseudo-passes per part, the preference for few bad parts */
	double noise_floor;  /* 0.001: the lowest background failure rate per link assumed */
};

void ibp_fabric_opts_init(struct ibp_fabric_opts *o);

struct ibp_fabric_part {
	enum ibp_part_kind kind;
	enum ibp_part_verdict verdict;
	char name
	    [IBP_FABRIC_NAME_MAX]; /* "gpu017", "gpu017 rail 3", "leaf07 uplinks rail 3", "rail 3" */
	char node[IBP_NODE_MAX];   /* node and cable parts; a rail's most failing node */
	char sw[IBP_NODE_MAX];     /* leaf and uplink parts */
	int rail;                  /* -1 for a node */
	char device[IBP_DEV_MAX];  /* a cable's (a rail's) HCA, when the records named it */
	unsigned port;             /* ... a rail's only when every record named the same */
	double p_fail;             /* fitted probability that it fails a link crossing it */
	double attributed;         /* failed links the fit puts on it */
	double surprise;           /* -log10 P(this many failures | background) */
	double links_pass;         /* links through it that passed (a record is half a link) */
	double links_fail;         /* ... that failed, as weighed (whoever is blamed) */
	double links_fail_recorded; /* ... that failed, as recorded (before the weighing) */
	unsigned peers_fail;        /* distinct nodes at the far end of its failed links */
	unsigned reporters;         /* distinct nodes whose records its failures rest on */
	/* a rail's: its failed links with NODE at an end, and the fleet's other rails */
	double node_fail;                /* failed links (weighed) that NODE is an end of */
	double others_pass, others_fail; /* links of the other rails (a crossed link on both) */
	/* filled by ibp_fabric_evidence(): */
	unsigned jobs_fail;       /* distinct jobs with a failure through it (at most 1024) */
	unsigned days, days_fail; /* distinct days with a link through it, with a failure */
	int64_t first, last;      /* its first and last failure (epoch seconds) */
	unsigned kinds[IBP_LINK_STATUS_COUNT]; /* failure records by outcome (oob.h) */
	char reason[IBP_TEXT_MAX];             /* why not a suspect, for NOT_ENOUGH */
};

struct ibp_fabric; /* opaque */

struct ibp_fabric_stats {
	size_t records;        /* handed to ibp_fabric_add */
	size_t too_old;        /* before opts.since */
	size_t not_fabric;     /* outcomes that say nothing about the fabric */
	size_t not_own;        /* written by a node that is neither end of its link */
	size_t port_events;    /* a port event, not a link (results_log.h EVENT) */
	size_t failures;       /* failure records kept */
	size_t unplaced;       /* records with an end the topology does not know */
	double links;          /* links seen: half a link per record kept */
	double failed;         /* failed links, as weighed */
	double confirmed;      /* failed links both ends reported */
	double unconfirmed;    /* failed links on one end's word (half a link per record) */
	double discounted;     /* ... of which left out: no second reporter behind them */
	size_t parts;          /* parts seen */
	size_t little_traffic; /* parts with fewer than min_links links: no verdict */
	double background;     /* the background failure rate per link used */
	double min_surprise;   /* the threshold applied (opts.min_surprise + log10(parts)) */
	unsigned sweeps;       /* of the last fit */
};

/*
 * A new, empty fabric; TOPO (may be NULL: nodes and cables only) must
 * outlive it.  0, -ENOMEM.
 */
int ibp_fabric_new(struct ibp_fabric **out, const struct ibp_topology *topo,
		   const struct ibp_fabric_opts *opts);
void ibp_fabric_free(struct ibp_fabric *f);

/*
 * Adds one record (an ibp_results_log_fn: pass the fabric as ARG).  0,
 * -ENOMEM, -E2BIG past IBP_FABRIC_MAX_NODES or _RAILS.
 */
int ibp_fabric_add(void *fabric, const struct ibp_link_record *r);

/*
 * Weighs, fits, attributes and ranks.  PARTS (owned by the fabric, valid
 * until the next add, solve or free) gets every part with a failure,
 * suspects first, then not-enough-evidence, each by surprise (parts whose
 * recorded failures were all left out by the weighing last).  May be
 * called again after more records (the fit starts from the last one).
 * 0 or -ENOMEM.
 */
int ibp_fabric_solve(struct ibp_fabric *f, const struct ibp_fabric_part **parts, size_t *n);

/* Jobs, days, first and last failure and their outcomes of the first N ranked parts. */
int ibp_fabric_evidence(struct ibp_fabric *f, size_t n);

void ibp_fabric_get_stats(const struct ibp_fabric *f, struct ibp_fabric_stats *st);

const char *ibp_part_kind_name(enum ibp_part_kind k);       /* "node", "cable", ... */
const char *ibp_part_verdict_name(enum ibp_part_verdict v); /* "suspect", ... */

/*
 * The naive rule the benchmark compares with: nodes ranked by how many
 * failed links they were an end of.  Fills up to MAX node names (most
 * failures first, ties by name) and returns how many.
 */
size_t ibp_fabric_naive_rank(const struct ibp_fabric *f, char (*names)[IBP_NODE_MAX], size_t max);

#endif
