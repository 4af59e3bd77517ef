/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest.h: the cross-node RDMA sanity test: plan, rounds, blame.
 *
 * Every node of the step runs ibp_rdmatest_run() at about the same time
 * (the plugin from its once-per-node phase, before the tasks fork, as the
 * job's user; `ibprep rdmatest` by hand).  There is no central server: each
 * node talks to O(1) peers, so time to verdict does not grow with N.
 *
 *   round 1  ring: node i sends to i+1 and receives from i-1
 *   round 2  (N >= 3) second shift: i sends to i+2, receives from i-2
 *   summary  each node sends its link outcomes to the peers it tested with
 *
 * A link passes when the connection authenticates, the transport comes up,
 * the pattern arrives intact, the burst bandwidth is at least test_min_bw
 * times the slower port's rate (when both rates are known), and the round
 * trip is at most test_max_lat_us.  Rails: port k of one node pairs with
 * port k of the other; every port given is tested (full, the default),
 * all rails at once, or rail 0 only (quick).
 *
 * Blame (ibp_rdmatest_suspect, rdmatest_blame.c): a node is at fault when
 * every link it has in one direction failed, with at least two distinct
 * peers, while each of those peers has a passing link elsewhere; a node
 * whose links all failed in both directions blames itself.  A failed link
 * with no suspect end is reported as the link, both ends named.  With N = 2
 * the ends cannot be told apart: the link is named.  Three outcomes blame
 * nobody: a link that failed authentication (IBP_LINK_AUTH,
 * rdmatest_auth_failed: a squatter, a relay or a munged with another key
 * look the same from here, and none says anything about the hardware), a
 * link whose peer answers in another protocol version (IBP_LINK_VERSION,
 * rdmatest_version_mismatch, a warning naming the peer and both versions:
 * another spank-ib build, nothing tested; pass is false), and a run in
 * which every known link was measured and every one missed its bandwidth
 * or latency floor (rdmatest_inconclusive, a warning: "every link slow", a
 * loaded machine or floors set too high).
 *
 * Authentication (auth.h, seal.h): each HELLO carries a munge credential,
 * encoded by and restricted to the test's uid (test_uid), binding job, step,
 * uid, both node indices, round, rail, nonces and a fresh 32-byte secret;
 * both ends derive per-link, per-direction keys (HKDF-SHA256 over both
 * secrets, both nonces and the link's identity), and every later frame
 * (endpoint, control, verdict, summary) carries a sequence number and a
 * Poly1305 tag (128 bits) checked before any of it is used.  The listener
 * also checks that a HELLO comes from the address of the node it claims to
 * be.  An answer that does not authenticate (an error frame, garbage, another
 * credential) never ends a link: the sender notes it and tries the next
 * candidate port; the link fails (IBP_LINK_AUTH) only when no candidate
 * authenticates.  A frame that fails its MAC mid-link fails the link closed
 * ("frames failed authentication").  Whatever does not authenticate gets the
 * one word "refused" back; the detail stays in RES (drop_reason).  --insecure
 * (ibprep only): no credentials, no secrets, nothing authenticated.
 *
 * Connections (rdmatest_accept.c): listeners use TCP_DEFER_ACCEPT; a
 * connection from an address that is not one of the peers this node
 * receives from is closed unread; a complete HELLO present at accept() is
 * handled at once and needs no slot; incomplete ones get a pending slot
 * within a per-peer-address quota (its links + 2), the address's oldest
 * replaced only after IBP_RT_GRACE_MS (50 ms), each with a handshake
 * deadline of min(1 s, test_timeout / 4).  Drops are counted apart
 * (outside / from a peer's address) and reported as a warning, never a
 * failure.
 *
 * Bounds: test_timeout= covers everything; round 1 ends by 40% of it,
 * round 2 by 80%, the summary by 100%.  Every wait is a poll() or timed
 * condition wait on CLOCK_MONOTONIC.  Two waits are outside that bound in
 * this library: getaddrinfo() when neither ADDRS nor RESOLVE is given (the
 * plugin resolves names once, in root context, with its own deadline, and
 * passes ADDRS), and munged's answer (libmunge's own timeouts; the plugin
 * runs the test in a child it kills past test_timeout).
 *
 * Ports: IBP_RDMATEST_PORT_CANDIDATES ports derived from job and step
 * inside test_ports= (ibp_oob_ports).  Either the caller binds them
 * (LISTEN_FDS: the plugin, as root, below ip_unprivileged_port_start, so no
 * user can take them) or the run binds the first free one (ibprep run by a
 * user: any user may squat those; the test then passes through another
 * candidate or fails as an authentication failure, blaming nobody).
 * Senders try them in order and keep only an answer that authenticates as
 * their peer for this link.
 *
 * Contract with the caller (plugin and ibprep): local setup failures are
 * known before any link is tried and end the run at once, never after
 * test_timeout: munged unreachable or refusing (rdmatest_munge_unavailable,
 * fix "start munged" / "set munge_socket= to munged's socket"), no
 * listener (rdmatest_no_listener), no device (rdmatest_no_port), no
 * address (rdmatest_no_address).  They are node-class findings and
 * RES->setup_err is set.  docs/security.md has the security model.
 *
 * Threads: ibp_rdmatest_run() starts two threads per rail and joins them
 * before it returns; it has no globals and may run concurrently in one
 * process (the scale test does).  It never prints and never exits.
 */
#ifndef IBPREP_RDMATEST_H
#define IBPREP_RDMATEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ibprep/finding.h"
#include "ibprep/hostlist.h"
#include "ibprep/oob.h"
#include "ibprep/policy.h"
#include "ibprep/topology_conf.h"
#include "ibprep/transport.h"

#define IBP_RDMATEST_MAX_RAILS       16
#define IBP_RDMATEST_MAX_LINKS       (4 * IBP_RDMATEST_MAX_RAILS)
#define IBP_RDMATEST_PORT_CANDIDATES 4
#define IBP_RDMATEST_MAX_LISTEN      8
#define IBP_RDMATEST_LAT_ITERS       16
#define IBP_RDMATEST_LAT_ITERS_RAIL  1 /* on rails beyond rail 0 */
/*
 * The pattern and the burst of a rail beyond rail 0 that no bandwidth
 * floor judges (the socket transport): at most this many bytes, more than
 * any netdev's MTU (IPoIB connected mode: 65520), so its full-size segments
 * cross the rail with the pattern (rdmatest_link.c).
 */
#define IBP_RDMATEST_RAIL_PATTERN (64u << 10)
/*
 * A link's burst and round trips, measured once and again when the
 * figures miss a limit: at most this many times, and only while the time
 * left to the round's deadline holds two more measurements of the last
 * one's length.  The best figures are judged (rdmatest_link.c).
 */
#define IBP_RDMATEST_MEASURES 4
/*
 * A node is too busy to judge a link's latency when its own short sleeps
 * wake later than half of test_max_lat_us and later than this: an idle
 * node's timer slack is about 50 us, so a tiny limit never reads every
 * node as busy.
 */
#define IBP_RDMATEST_BUSY_FLOOR_US 200

/* The median lateness of a few 200 us sleeps of the calling thread, in us. */
double ibp_rdmatest_wakeup_late_us(void);

/*
 * How many of the ports given are tested.  Every rail is the default: all
 * rails at once, under the same deadlines (docs/rdmatest.md, "Rails").
 */
enum ibp_rdmatest_mode {
	IBP_RDMATEST_FULL = 0,  /* every port given, each a rail */
	IBP_RDMATEST_QUICK = 1, /* rail 0 only: cheaper on a loaded machine (bench_rdmatest.sh) */
};

/* Writes the numeric address of node INDEX (named NAME) to ADDR; 0 or -errno. */
typedef int (*ibp_rdmatest_resolve_fn)(void *arg, size_t index, const char *name, char *addr,
				       size_t len);

struct ibp_rdmatest_config {
	/* The step's nodes: NODES if set, else NODELIST (a Slurm host list). */
	const struct ibp_hostlist *nodes;
	const char *nodelist;
	size_t index;            /* this node */
	uint32_t job, step, uid; /* uid: the job's owner, bound into every credential and key */
	/*
	 * The uid every node's test runs as: credentials are encoded by it,
	 * decodable by it alone (MUNGE_OPT_UID_RESTRICTION), and a peer's are
	 * accepted only when munge says this uid encoded them.  The plugin's
	 * child: the test's system user (test_user=), the same uid on every
	 * node, which the job's owner cannot act as.  0 = UID (ibprep rdmatest
	 * by hand: the user's own).
	 */
	uint32_t test_uid;

	/*
	 * Local ports in rail order, from the inventory and health checks (the
	 * test does not read sysfs).  For the socket transport PORTS may be
	 * NULL: one rail on this node's address.
	 */
	const struct ibp_tx_port *ports;
	size_t n_ports;

	const struct ibp_policy *policy; /* test_* keys; NULL = defaults */
	enum ibp_rdmatest_mode mode;
	const struct ibp_transport_ops *transport; /* NULL = policy test_transport */
	/*
	 * How late this node wakes from a short sleep, in us, asked when a
	 * link's best figures still miss a limit (the node too busy to judge
	 * it?); NULL = timed sleeps (ibp_rdmatest_wakeup_late_us).  A seam for
	 * tests, as TRANSPORT is.
	 */
	double (*wakeup_late_us)(void);

	const char *munge_socket; /* NULL = munge's default */
	bool insecure;            /* no credentials (ibprep --insecure only) */

	/*
	 * Node addresses: ADDRS[i] (numeric) when set, else RESOLVE, else
	 * getaddrinfo() on the name.  Only this node and its peers are resolved.
	 */
	const char *const *addrs;
	ibp_rdmatest_resolve_fn resolve;
	void *resolve_arg;

	/*
	 * Pre-bound listeners (the plugin binds them as root in init_post_opt,
	 * below ip_unprivileged_port_start, and hands them to its unprivileged
	 * child): LISTEN_FDS[i] is a listening TCP socket on LISTEN_PORTS[i],
	 * one per candidate port, in candidate order (ibp_oob_ports for this
	 * job and step).  A port the caller could not bind has fd -1: this
	 * node does not listen there, its senders still try it on the peers.
	 * The run only polls and accept()s them (and sets TCP_DEFER_ACCEPT):
	 * it never binds or closes them (the caller owns them).  Senders try LISTEN_PORTS in
	 * order on every peer.  LISTEN_FDS NULL: the run computes the
	 * candidates from test_ports= and binds the first free one itself.
	 * At most IBP_RDMATEST_MAX_LISTEN; every fd -1 = rdmatest_no_listener.
	 */
	const int *listen_fds;
	const uint16_t *listen_ports;
	size_t n_listen_fds;

	size_t buf_len;       /* pattern size, 0 = 1 MiB */
	uint64_t burst_bytes; /* bandwidth burst, 0 = 8 x buf_len */
	int64_t start_ns;     /* CLOCK_MONOTONIC start, 0 = now */

	/*
	 * This node's fingerprint (fingerprint.h), or NULL: no consistency
	 * check.  It goes sealed to every peer on the rail-0 links, just before
	 * the summary; the node then waits for its peers' summaries even when
	 * its own links passed.  Up to 5 nodes the peers (ring neighbours
	 * i+-1, i+-2) are the whole step: their fingerprints are compared.
	 * From 6 nodes on, a bounded sum of every fingerprint goes along the
	 * round-1 ring links after the summaries (node 0 to N-1, then the
	 * complete sum once more around: at most two frames per node, 2N-1
	 * hops), and every node judges the same step-wide majority.  When the
	 * chain breaks (a ring link that never connected or closed, a peer
	 * without fingerprint, a refused sum) or the deadline comes first, the
	 * node falls back to its neighbours' fingerprints and says so in each
	 * finding ("ring neighbours only: ...", and consistency_partial, ok).
	 * Each difference is said by one node (consistency= of POLICY),
	 * class job, to OUT.
	 */
	const struct ibp_fp *fingerprint;

	/*
	 * Slurm's switch hierarchy (topology_conf.h), or NULL: the blame then
	 * knows leaves (rdmatest_topo.c).  Must outlive the run.
	 */
	const struct ibp_topology *topology;

	/*
	 * Without TOPOLOGY: this node's own leaf switch, the last switch of
	 * its SLURM_TOPOLOGY_ADDR (the plugin reads it from the job's
	 * environment, which slurmd sets), or NULL.  A node knows only its own
	 * leaf this way, so the plan stays the plain one; the leaf travels in
	 * the ENDPOINT frames and the summaries (each node's table of itself
	 * and its peers), and the blame knows the leaves of the nodes it hears
	 * of.  Each node says its own leaf: a job's user can make their own
	 * step's nodes claim any leaf, which changes only that step's blame
	 * (class fabric and node findings of the test never drain).
	 */
	const char *own_leaf;
};

struct ibp_rdmatest_link {
	uint32_t from, to; /* node indices */
	uint8_t round;
	uint16_t rail;
	enum ibp_link_status status;
	int err; /* -errno of the failure, 0 */
	char device[IBP_DEV_MAX], peer_device[IBP_DEV_MAX];
	unsigned port, peer_port;
	double gbps;        /* burst bandwidth, 0 when not measured */
	double lat_us;      /* median round trip, 0 when not measured */
	double expect_gbps; /* the floor applied, 0 when no rate is known */
	unsigned measures;  /* burst-and-round-trip measurements made (sender), 0 none */
	/*
	 * The best figures still missed a limit, but this node was too busy to
	 * judge the link: its own short sleeps woke this many us late (the
	 * median of a few).  The link passes; the report warns (rdmatest_busy).
	 */
	double busy_us;
	char detail[IBP_TEXT_MAX]; /* "pattern differs at byte 12 of 65536" */
};

/*
 * A cross-rail probe (docs/rdmatest.md, "Rails"): whether this node's rail
 * FROM_RAIL reached the port of rail TO_RAIL of node TO, through its own
 * netdev (the socket transport only).
 */
#define IBP_RDMATEST_MAX_PROBES 64
/*
 * Landing: made for a rail whose data path to the peer failed or came up
 * late (where does it land?); across: one per round, whether the rails
 * reach each other at all (NCCL_CROSS_NIC).
 */
enum ibp_rdmatest_probe_kind { IBP_RDMATEST_PROBE_LANDING = 0, IBP_RDMATEST_PROBE_ACROSS = 1 };
struct ibp_rdmatest_probe {
	uint32_t from, to; /* node indices: FROM is this node */
	uint16_t from_rail, to_rail;
	uint8_t round;
	uint8_t kind; /* enum ibp_rdmatest_probe_kind */
	bool reached;
	int err; /* -errno of one that did not reach (-ETIMEDOUT: no answer by the end), 0 */
};

struct ibp_rdmatest_result {
	bool pass;
	bool inconclusive; /* every link slow: a warning, nobody blamed (pass is false) */
	size_t nnodes, index;
	uint16_t oob_port; /* the port this node listened on, 0 none */
	size_t n_links;
	struct ibp_rdmatest_link links[IBP_RDMATEST_MAX_LINKS];
	size_t n_summaries;    /* peers' summaries received */
	size_t n_fingerprints; /* peers' fingerprints received and compared */
	bool step_wide;        /* the fingerprints were compared across the whole step */
	size_t n_suspects;     /* nodes blamed */
	uint32_t suspects[8];
	/*
	 * A local setup failure found before any link was tried (munged
	 * unreachable or refusing, no listener, no device to test): -errno,
	 * else 0.  Its finding (rdmatest_munge_unavailable, rdmatest_no_listener,
	 * rdmatest_no_port, rdmatest_no_address; class node, with its own fix
	 * text) is already in OUT and the run returned at once.
	 */
	int setup_err;
	unsigned dropped;         /* connections dropped (strangers, bad credentials ...) */
	unsigned dropped_outside; /* of which from addresses that are not a peer of this node */
	unsigned dropped_peer; /* of which from a peer's address: unauthenticated or over quota */
	/*
	 * Credentials this node's acceptor had munged check: at most one per
	 * distinct credential, and at most 64 per peer address (a flood of
	 * complete HELLOs costs no more).
	 */
	unsigned cred_checks;
	char drop_reason[IBP_TEXT_MAX]; /* the last one */
	double elapsed_s;
	double
	    links_s; /* from the start to the end of this node's link tests: the rest is the exchange's */
	/*
	 * HELLOs this node made to connect (one munge credential each): one
	 * per connection it opened, plus one per try a peer answered without
	 * opening the link; tries the peer refused (not listening yet) reuse
	 * the HELLO they never sent.
	 */
	unsigned hellos;
	/* This node's cross-rail probes (none with one rail or the verbs transport). */
	size_t n_probes;
	struct ibp_rdmatest_probe probes[IBP_RDMATEST_MAX_PROBES];
};

/* "landing", "across" (--json's probes' kind); "?" for another value. */
const char *ibp_rdmatest_probe_kind_name(uint8_t kind);

/*
 * Runs the test for this node.  Findings (node faults with the blamed
 * node's name, link faults naming both ends, job faults for a bad node
 * list) go to OUT; RES (may be NULL) gets the figures.  Returns 0 when the
 * test ran, whatever it found; -EINVAL for a config that cannot run (with a
 * job finding: bad node list, index out of range, unknown transport),
 * -ENOMEM.
 */
int ibp_rdmatest_run(const struct ibp_rdmatest_config *cfg, struct ibp_findings *out,
		     struct ibp_rdmatest_result *res);

/* The peers of node INDEX of NNODES. */
struct ibp_rdmatest_plan {
	unsigned n_rounds;   /* 0 (N = 1), 1 (N = 2), 2 */
	uint32_t send_to[2]; /* per round */
	uint32_t recv_from[2];
	bool topo;         /* the topology-aware plan (else the plain one) */
	uint64_t digest;   /* of the leaf partition the plan used; 0 for the plain plan */
	uint32_t n_leaves; /* leaves among the step's nodes (topo only) */
};

/* The plain plan: ring and second shift in node order.  0 or -EINVAL. */
int ibp_rdmatest_plan(size_t nnodes, size_t index, struct ibp_rdmatest_plan *plan);

/*
 * The topology-aware plan (rdmatest_plan.c has the construction): LEAF[i]
 * is node i's leaf switch (any id, -1 unknown).  Round 1 pairs nodes
 * inside their leaf, round 2 across leaves; every round is a permutation
 * without a fixed point (each node sends once and receives once), so a
 * node has at most 2 peers per round, as in the plain plan.  It needs at
 * least 4 nodes, every node's leaf known and at least 2 leaves; otherwise
 * it is the plain plan (PLAN->topo false, digest 0).  DIGEST depends only
 * on NNODES and the partition of the nodes into leaves (not on the ids or
 * switch names): nodes whose topologies give the same partition compute
 * the same plan.  0, -EINVAL, -ENOMEM.
 */
int ibp_rdmatest_plan_topo(size_t nnodes, size_t index, const int *leaf,
			   struct ibp_rdmatest_plan *plan);

/*
 * The plan's ring through every node (the fingerprint sum travels on it):
 * ORDER[0..NNODES) the nodes from node 0 on, each sending to the next in
 * round *ROUND: the plain plan's round 1 (node order), the topology-aware
 * plan's round 2 (leaves interleaved).  LEAF as for ibp_rdmatest_plan_topo
 * (NULL: the plain plan).  0, -EINVAL, -ENOMEM.
 */
int ibp_rdmatest_ring_order(size_t nnodes, const int *leaf, uint32_t *order, unsigned *round);

/*
 * The tree the step-wide sum is gathered along (rdmatest_ring.c), over the
 * places 0..NNODES-1 of the ring above.  The places are cut into clusters
 * of 3, [3c, 3c + 3) (the last one may be shorter): each cluster's middle
 * place (the first of a shorter one) is its HEAD, and the others are
 * leaves, children of their head, which is their neighbour on the ring
 * (the plan's ring round joins them).  The heads form a balanced binary
 * tree over the clusters, every subtree a range of them; the root is
 * cluster C / 2 of C.  A head holds the places [LO, HI) of its subtree;
 * its children KID[] are in place order: KID[0] the head of the clusters
 * before its own in that range, KID[1] and KID[2] the places p - 1 and
 * p + 1 of its cluster, KID[3] the head of the clusters after it.  A leaf
 * holds [p, p + 1) and has none.  NONE in a field: no such neighbour.  0,
 * -EINVAL (PLACE >= NNODES).
 */
#define IBP_RDMATEST_TREE_NONE  UINT32_MAX
#define IBP_RDMATEST_TREE_WIDTH 3
#define IBP_RDMATEST_TREE_KIDS  4
/* KID[]'s indices, in place order */
enum {
	IBP_TREE_KID_BEFORE = 0, /* the head of the clusters before */
	IBP_TREE_KID_LEFT = 1,   /* place p - 1, a leaf */
	IBP_TREE_KID_RIGHT = 2,  /* place p + 1, a leaf */
	IBP_TREE_KID_AFTER = 3,  /* the head of the clusters after */
};
struct ibp_rdmatest_tree {
	uint32_t lo, hi;
	uint32_t parent;                      /* a place */
	uint32_t kid[IBP_RDMATEST_TREE_KIDS]; /* places */
};
int ibp_rdmatest_sum_tree(uint32_t nnodes, uint32_t place, struct ibp_rdmatest_tree *t);

/*
 * Blame over the links a node knows (its own and its peers' summaries):
 * true when NODE is at fault by the rule above.  SELF: NODE is the caller,
 * who may blame itself without confirmation from peers.
 */
bool ibp_rdmatest_suspect(const struct ibp_oob_link *known, size_t n, uint32_t node, bool self);

/*
 * Topology-aware blame (rdmatest_topo.c), with LEAF[i] the leaf switch of
 * node i of the step (-1 unknown) for NNODES nodes.
 *
 * A leaf's uplinks are suspect when, over the known links, every link
 * between the leaf and other leaves failed, at least two of the leaf's
 * nodes had such a failure (so the leaf needs at least
 * IBP_RDMATEST_MIN_LEAF_NODES nodes in the step), their far ends are at
 * least two nodes in at least two other leaves (with two leaves only, a cut
 * between them is either leaf's uplinks), and the leaf's own links passed
 * (at least one known, none failed).  Below that the leaf cannot be told
 * from one of its nodes or from the other leaf: the links are named.  Returns the number of suspect
 * leaves (switch indices in OUT, at most MAX).
 *
 * A node is then suspect by ibp_rdmatest_suspect() over the known links
 * minus those a suspect leaf's uplinks explain, and only when its failed
 * links reach its own leaf or at least two leaves: failures towards one
 * other leaf only could as well be either leaf's uplinks, so the links
 * are named instead.
 */
#define IBP_RDMATEST_MIN_LEAF_NODES 2
size_t ibp_rdmatest_uplink_suspects(const struct ibp_oob_link *known, size_t n, const int *leaf,
				    size_t nnodes, int *out, size_t max);
bool ibp_rdmatest_suspect_topo(const struct ibp_oob_link *known, size_t n, uint32_t node, bool self,
			       const int *leaf, size_t nnodes, const int *sus_leaves, size_t n_sus);
/* Whether a link crosses the boundary of one of the suspect leaves. */
bool ibp_rdmatest_uplink_explains(uint32_t from, uint32_t to, const int *leaf, size_t nnodes,
				  const int *sus_leaves, size_t n_sus);

/*
 * True when every link in KNOWN that was measured missed its bandwidth or
 * latency floor (none passed, none failed otherwise): the verdict is then
 * "inconclusive: every link slow", a warning that blames nobody.
 */
bool ibp_rdmatest_all_slow(const struct ibp_oob_link *known, size_t n);

/* The fix text for a link that ended in S ("" for a pass or untested). */
const char *ibp_rdmatest_status_fix(enum ibp_link_status s);

#endif
