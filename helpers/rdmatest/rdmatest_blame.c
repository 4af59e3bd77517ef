/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_blame.c: who is suspected, and the findings that say so
 * (rdmatest.h).  ibp_rdmatest_suspect() is a pure function of the links a
 * node knows (its own and its peers' summaries); ibp_rt_report() turns one
 * run's links into findings: a node blamed, a link named with both ends, a
 * link that failed authentication (nobody blamed), a run where every link
 * was slow (inconclusive, nobody blamed), the connections dropped.
 *
 * Seam: a richer blame (more rounds, topology, history) changes
 * ibp_rdmatest_suspect() and the suspect loop in ibp_rt_report(); links
 * with status IBP_LINK_AUTH must stay out of it (see counts()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmatest_int.h"

bool ibp_rt_failed(uint8_t status)
{
	return status != IBP_LINK_PASS && status != IBP_LINK_UNTESTED;
}

/*
 * Whether a link's outcome says anything about the hardware at its ends.
 * A link that never authenticated (or whose frames failed authentication)
 * tells nothing about the ports: someone or something between the two ends
 * (a squatter, a relay, a munged with another key) stopped the test, and
 * blaming either end would let any user who can do that get a healthy node
 * named.  Nor does a link whose peer answered in another protocol version
 * (another spank-ib build: nothing was tested).  Such links are neither a
 * pass nor a failure for the blame.
 */
bool ibp_rt_counts(uint8_t status)
{
	return status != IBP_LINK_UNTESTED && status != IBP_LINK_AUTH && status != IBP_LINK_VERSION;
}

static bool counts(uint8_t status)
{
	return ibp_rt_counts(status);
}

static bool failed(uint8_t status)
{
	return counts(status) && status != IBP_LINK_PASS;
}

/* A passing link of C that does not involve X. */
static bool passes_elsewhere(const struct ibp_oob_link *k, size_t n, uint32_t c, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (k[i].status == IBP_LINK_PASS && (k[i].from == c || k[i].to == c) &&
		    k[i].from != x && k[i].to != x)
			return true;
	return false;
}

/* C has known links not involving X, and all of them failed. */
static bool fails_elsewhere(const struct ibp_oob_link *k, size_t n, uint32_t c, uint32_t x)
{
	size_t seen = 0;

	for (size_t i = 0; i < n; i++) {
		if ((k[i].from != c && k[i].to != c) || k[i].from == x || k[i].to == x ||
		    !counts(k[i].status))
			continue;
		if (!failed(k[i].status))
			return false;
		seen++;
	}
	return seen > 0;
}

/*
 * Counterparts of NODE over its known links in one direction (OUT: NODE
 * sends), when all of them failed; 0 when any passed or none is known.
 */
static size_t failed_counterparts(const struct ibp_oob_link *k, size_t n, uint32_t node, int dir,
				  uint32_t *cp, size_t max)
{
	size_t ncp = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t other;
		bool dup = false;

		if (!counts(k[i].status))
			continue;
		if (dir == 0 && k[i].from == node)
			other = k[i].to;
		else if (dir == 1 && k[i].to == node)
			other = k[i].from;
		else if (dir == 2 && (k[i].from == node || k[i].to == node))
			other = k[i].from == node ? k[i].to : k[i].from;
		else
			continue;
		if (!failed(k[i].status))
			return 0;
		for (size_t j = 0; j < ncp; j++)
			dup |= cp[j] == other;
		if (!dup && ncp < max)
			cp[ncp++] = other;
	}
	return ncp;
}

bool ibp_rdmatest_suspect(const struct ibp_oob_link *known, size_t n, uint32_t node, bool self)
{
	uint32_t cp[IBP_RDMATEST_MAX_LINKS * 5];
	size_t ncp;

	for (int dir = 0; dir < 2; dir++) {
		bool confirmed = true;

		ncp = failed_counterparts(known, n, node, dir, cp, sizeof(cp) / sizeof(cp[0]));
		if (ncp < 2)
			continue;
		for (size_t j = 0; j < ncp && confirmed; j++)
			confirmed = passes_elsewhere(known, n, cp[j], node);
		if (confirmed)
			return true;
	}
	if (!self)
		return false;
	/* Every link of mine failed, both ways, with two or more peers. */
	ncp = failed_counterparts(known, n, node, 2, cp, sizeof(cp) / sizeof(cp[0]));
	if (ncp < 2)
		return false;
	/* ... unless a peer is seen failing everywhere else too: then it may be them. */
	for (size_t j = 0; j < ncp; j++)
		if (fails_elsewhere(known, n, cp[j], node))
			return false;
	return true;
}

const char *ibp_rdmatest_status_fix(enum ibp_link_status s)
{
	switch (s) {
	case IBP_LINK_UNREACHABLE:
	case IBP_LINK_TIMEOUT:
	case IBP_LINK_GONE:
		return "check that the node is up and reachable and that the test ports "
		       "(test_ports=) are open between the nodes";
	case IBP_LINK_AUTH:
		return "check munged on both nodes (same key as the cluster, running, clock in "
		       "sync) and what else listens on the test ports (ss -tlnp); no node is "
		       "blamed";
	case IBP_LINK_PROTOCOL:
		return "check that every node runs the same spank-ib version";
	case IBP_LINK_VERSION:
		return "install the same spank-ib on every node (rolling upgrade?); no node is "
		       "blamed";
	case IBP_LINK_TRANSPORT:
		return "check the port's state, GID/LID and the subnet manager (ibprep check)";
	case IBP_LINK_CORRUPT:
		return "check the HCA, cable and switch port of this link (ibprep check, error "
		       "counters); replace the faulty part";
	case IBP_LINK_BW_LOW:
		return "check link rate, width and error counters (ibprep check); reseat or "
		       "replace the cable";
	case IBP_LINK_LAT_HIGH:
		return "check for a degraded link or congestion (ibprep check, error counters)";
	case IBP_LINK_LOCAL:
		return "raise the memlock limit (ulimit -l unlimited) or free resources on the "
		       "node";
	default:
		return "";
	}
}

/* The fix for L's failure: a local munge failure is not a memlock problem. */
static const char *fix_of(const struct ibp_rt_link *l)
{
	if (l->r.status == IBP_LINK_LOCAL && l->r.err == -ENOTCONN)
		return "start munged, or set munge_socket= to munged's socket";
	return ibp_rdmatest_status_fix(l->r.status);
}

/*
 * Every link this node knows was measured, and every one missed its
 * bandwidth or latency floor: a machine or fabric loaded everywhere, or
 * floors set too high.  Blaming the node with the worst figure would name
 * an innocent; say so instead.
 */
bool ibp_rdmatest_all_slow(const struct ibp_oob_link *known, size_t n)
{
	size_t slow = 0;

	for (size_t i = 0; i < n; i++) {
		if (!counts(known[i].status))
			continue;
		if (known[i].status != IBP_LINK_BW_LOW && known[i].status != IBP_LINK_LAT_HIGH)
			return false;
		slow++;
	}
	return slow > 0;
}

static void inconclusive(struct ibp_rt_run *run, struct ibp_findings *out, const char *expected)
{
	size_t n_bw = 0, n_lat = 0;
	double min_bw = 0, max_lat = 0, floor_gbps = 0;

	for (size_t i = 0; i < run->n_links; i++) {
		const struct ibp_rt_link *l = &run->links[i];

		if (l->r.status == IBP_LINK_BW_LOW) {
			n_bw++;
			if (min_bw == 0 || l->r.gbps < min_bw)
				min_bw = l->r.gbps;
			if (l->r.expect_gbps > floor_gbps)
				floor_gbps = l->r.expect_gbps;
		} else if (l->r.status == IBP_LINK_LAT_HIGH) {
			n_lat++;
			if (l->r.lat_us > max_lat)
				max_lat = l->r.lat_us;
		}
	}
	ibp_findings_addf(out, "rdmatest_inconclusive", IBP_SEV_WARN, IBP_CLASS_NODE,
			  run->n_rails ? run->rails[0].device : NULL,
			  run->n_rails ? (int)run->rails[0].port : 0, expected,
			  "rerun when the nodes are less loaded, or check test_min_bw= and "
			  "test_max_lat_us= against what the fabric can do",
			  "inconclusive: every link slow, nobody blamed (bandwidth low on %zu "
			  "links, min %.2f Gb/s, floor %.2f Gb/s; latency high on %zu, max round "
			  "trip %.0f us, limit %u us)",
			  n_bw, min_bw, floor_gbps, n_lat, max_lat, run->pol.test_max_lat_us);
}

/* A link whose peer never authenticated, or whose frames failed: named, nobody blamed. */
static void auth_failed(struct ibp_rt_run *run, struct ibp_findings *out,
			const struct ibp_rt_link *l)
{
	ibp_findings_addf(out, "rdmatest_auth_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, l->r.device,
			  (int)l->r.port, "every frame authenticated under the link's key",
			  ibp_rdmatest_status_fix(l->r.status),
			  "rdma test link %s -> %s (round %u, rail %u) failed authentication: %s",
			  ibp_rt_node_name(run, l->r.from), ibp_rt_node_name(run, l->r.to),
			  l->r.round, l->r.rail, l->r.detail);
}

/*
 * Links whose peer answered in another protocol version: one warning per
 * such peer, naming it, both versions and the links left untested.  Not a
 * node fault (class job, like rdmatest_plan_mismatch: the nodes disagree,
 * the hardware is not in question), nobody blamed.  The version is what
 * the peer's address claimed, unauthenticated: "answers with".
 */
static void version_mismatch(struct ibp_rt_run *run, struct ibp_findings *out)
{
	for (size_t i = 0; i < run->n_links; i++) {
		const struct ibp_rt_link *l = &run->links[i];
		char links[IBP_TEXT_MAX] = "";
		size_t n = 0, off = 0;
		bool first = true;

		if (l->r.status != IBP_LINK_VERSION)
			continue;
		for (size_t k = 0; k < i && first; k++)
			first = !(run->links[k].r.status == IBP_LINK_VERSION &&
				  run->links[k].peer == l->peer);
		if (!first)
			continue; /* said with its peer's first link */
		for (size_t k = i; k < run->n_links; k++) {
			const struct ibp_rt_link *x = &run->links[k];

			if (x->r.status != IBP_LINK_VERSION || x->peer != l->peer)
				continue;
			n++;
			if (off < sizeof(links))
				off += (size_t)snprintf(links + off, sizeof(links) - off,
							"%s%s -> %s", off ? ", " : "",
							ibp_rt_node_name(run, x->r.from),
							ibp_rt_node_name(run, x->r.to));
		}
		if (ibp_findings_addf(
			out, "rdmatest_version_mismatch", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
			"one cross-node test protocol on every node of the step",
			ibp_rdmatest_status_fix(IBP_LINK_VERSION),
			"answers with cross-node test protocol %u, %s speaks %u: the step's nodes "
			"run different spank-ib builds; %zu link%s not tested (%s)",
			l->peer_version, ibp_rt_node_name(run, run->me), ibp_oob_wire_version(), n,
			n == 1 ? "" : "s", links))
			continue;
		ibp_rt_setf(out->v[out->n - 1].node, sizeof(out->v[out->n - 1].node), "%s",
			    ibp_rt_node_name(run, l->peer));
	}
}

/* Connections the acceptor dropped: reported, never a failure. */
static void dropped(struct ibp_rt_run *run, struct ibp_findings *out,
		    const struct ibp_rdmatest_result *res)
{
	char what[IBP_TEXT_MAX] = "";
	size_t off = 0;

	if (run->dropped_away)
		off += (size_t)snprintf(what, sizeof(what),
					"%u from addresses outside the step's peers of this node",
					run->dropped_away);
	if (run->dropped_peer && off < sizeof(what))
		snprintf(what + off, sizeof(what) - off,
			 "%s%u unauthenticated or over the per-address limit from peers' "
			 "addresses",
			 off ? ", " : "", run->dropped_peer);
	ibp_findings_addf(out, "rdmatest_dropped_connections", IBP_SEV_WARN, IBP_CLASS_NODE, NULL,
			  0, "only the step's nodes connect to the test port",
			  "find what connects to the test ports (ss -tnp), or pick another range "
			  "with test_ports=",
			  "dropped %u connection%s on test port %u: %s (last: %s)", run->dropped,
			  run->dropped == 1 ? "" : "s", res->oob_port, what, run->drop_reason);
}

static size_t worst_link_of(struct ibp_rt_run *run, uint32_t node)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < run->n_links; i++) {
		const struct ibp_rt_link *l = &run->links[i];

		if (!failed(l->r.status) || (l->r.from != node && l->r.to != node))
			continue;
		if (best == SIZE_MAX || l->r.status > run->links[best].r.status)
			best = i;
	}
	return best;
}

/* Which of this node's links all failed: " it sends", " it receives" or "". */
static const char *own_direction(const struct ibp_rt_run *run)
{
	bool out_ok = false, in_ok = false;

	for (size_t i = 0; i < run->n_links; i++) {
		if (run->links[i].r.status != IBP_LINK_PASS)
			continue;
		if (run->links[i].out)
			out_ok = true;
		else
			in_ok = true;
	}
	return out_ok == in_ok ? "" : out_ok ? " it receives" : " it sends";
}

static bool passes_same_way(const struct ibp_rt_run *run, const struct ibp_rt_link *l)
{
	for (size_t i = 0; i < run->n_links; i++) {
		const struct ibp_rt_link *x = &run->links[i];

		if (x != l && x->out == l->out && x->peer != l->peer &&
		    x->r.status == IBP_LINK_PASS)
			return true;
	}
	return false;
}

static void expected_text(const struct ibp_rt_run *run, char *buf, size_t len)
{
	double floor_gbps = 0;

	for (size_t i = 0; i < run->n_links; i++)
		if (run->links[i].r.expect_gbps > floor_gbps)
			floor_gbps = run->links[i].r.expect_gbps;
	if (floor_gbps > 0)
		ibp_rt_setf(buf, len,
			    "intact data at >= %.1f Gb/s and round trips <= %u us with every peer",
			    floor_gbps, run->pol.test_max_lat_us);
	else
		ibp_rt_setf(buf, len, "intact data and round trips <= %u us with every peer",
			    run->pol.test_max_lat_us);
}

/* A suspect node: the topology-aware rule when leaves are known (rdmatest_topo.c). */
static bool suspect(const struct ibp_rt_run *run, const int *leaf, const int *sus_leaves,
		    size_t n_sus_leaves, uint32_t node, bool self)
{
	if (leaf)
		return ibp_rdmatest_suspect_topo(run->known, run->n_known, node, self, leaf, run->n,
						 sus_leaves, n_sus_leaves);
	return ibp_rdmatest_suspect(run->known, run->n_known, node, self);
}

static size_t distinct_peers(const struct ibp_rt_run *run)
{
	uint32_t seen[2 * 2];
	size_t n = 0;

	for (size_t i = 0; i < run->n_links; i++) {
		size_t k;

		for (k = 0; k < n && seen[k] != run->links[i].peer; k++)
			;
		if (k == n && n < sizeof(seen) / sizeof(seen[0]))
			seen[n++] = run->links[i].peer;
	}
	return n;
}

void ibp_rt_report(struct ibp_rt_run *run, struct ibp_findings *out,
		   struct ibp_rdmatest_result *res)
{
	uint32_t sus[8];
	size_t nsus = 0;
	/* Nodes that planned differently: no leaves, no node blamed (the pairs may not have met). */
	int *addr_leaf = run->leaf ? NULL : ibp_rt_addr_leaves(run);
	const int *leaf = run->plan_mismatch ? NULL : run->leaf ? run->leaf : addr_leaf;
	int sus_leaves[8];
	size_t n_sus_leaves = 0;
	char expected[IBP_TEXT_MAX];
	size_t n_fail = 0, n_hw = 0;
	bool slow_only;

	expected_text(run, expected, sizeof(expected));
	for (size_t i = 0; i < run->n_links; i++) {
		n_fail += ibp_rt_failed(run->links[i].r.status);
		n_hw += failed(run->links[i].r.status);
	}
	slow_only = n_hw && ibp_rdmatest_all_slow(run->known, run->n_known);
	if (slow_only)
		inconclusive(run, out, expected);
	/* A leaf's uplinks first (with a topology), then this node, then each peer of a failed link. */
	if (leaf && n_hw && !slow_only) {
		n_sus_leaves = ibp_rdmatest_uplink_suspects(run->known, run->n_known, leaf, run->n,
							    sus_leaves, 8);
		ibp_rt_topo_findings(run, out, leaf, sus_leaves, n_sus_leaves, expected);
	}
	if (run->plan_mismatch)
		ibp_rt_plan_mismatch(run, out);
	if (n_hw && !slow_only && !run->plan_mismatch &&
	    suspect(run, leaf, sus_leaves, n_sus_leaves, run->me, true))
		sus[nsus++] = run->me;
	for (size_t i = 0; i < run->n_links && nsus < 8 && !slow_only && !run->plan_mismatch; i++) {
		const struct ibp_rt_link *l = &run->links[i];
		bool dup = false;

		if (!failed(l->r.status))
			continue;
		for (size_t k = 0; k < nsus; k++)
			dup |= sus[k] == l->peer;
		if (!dup && suspect(run, leaf, sus_leaves, n_sus_leaves, l->peer, false))
			sus[nsus++] = l->peer;
	}
	for (size_t k = 0; k < nsus; k++) {
		size_t w = worst_link_of(run, sus[k]);
		const struct ibp_rt_link *l = &run->links[w];
		bool self = sus[k] == run->me;
		char peers[IBP_TEXT_MAX] = "";
		size_t nbad = 0, off = 0, n_seen = 0;
		uint32_t seen[IBP_RDMATEST_MAX_LINKS];
		struct ibp_finding *f;

		for (size_t i = 0; i < run->n_links; i++) {
			const struct ibp_rt_link *x = &run->links[i];
			uint32_t other = self ? x->peer : run->me;

			if (!failed(x->r.status) || (!self && x->peer != sus[k]))
				continue;
			nbad++;
			for (size_t s = 0; s < n_seen && other != UINT32_MAX; s++)
				if (seen[s] == other)
					other = UINT32_MAX;
			if (other == UINT32_MAX)
				continue;
			seen[n_seen++] = other;
			if (off < sizeof(peers) - 1)
				off +=
				    (size_t)snprintf(peers + off, sizeof(peers) - off, "%s%s",
						     off ? "," : "", ibp_rt_node_name(run, other));
			if (off >= sizeof(peers))
				off = sizeof(peers) - 1;
		}
		if (ibp_findings_addf(out, "rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE,
				      self ? l->r.device : l->r.peer_device,
				      (int)(self ? l->r.port : l->r.peer_port), expected, fix_of(l),
				      "rdma test %s on %s link%s %s %s (%s)",
				      ibp_link_status_name(l->r.status), self ? "every" : "its",
				      self ? own_direction(run) : (nbad == 1 ? "" : "s"),
				      self ? "with" : "seen from", peers, l->r.detail))
			continue;
		f = &out->v[out->n - 1];
		ibp_rt_setf(f->node, sizeof(f->node), "%s", ibp_rt_node_name(run, sus[k]));
	}
	for (size_t i = 0; i < run->n_links; i++) {
		const struct ibp_rt_link *l = &run->links[i];
		bool covered = false;

		if (l->r.status == IBP_LINK_AUTH) {
			auth_failed(run, out, l);
			continue;
		}
		if (!failed(l->r.status) || slow_only)
			continue;
		for (size_t k = 0; k < nsus; k++)
			covered |= sus[k] == run->me || sus[k] == l->peer;
		covered |= ibp_rdmatest_uplink_explains(l->r.from, l->r.to, leaf, run->n,
							sus_leaves, n_sus_leaves);
		if (covered)
			continue;
		if (ibp_findings_addf(
			out, "rdmatest_link_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, l->r.device,
			(int)l->r.port, expected, fix_of(l),
			"rdma test %s on link %s -> %s (round %u, rail %u): %s",
			ibp_link_status_name(l->r.status), ibp_rt_node_name(run, l->r.from),
			ibp_rt_node_name(run, l->r.to), l->r.round, l->r.rail, l->r.detail))
			continue;
		/*
		 * When this end passes with other peers in the same direction, the
		 * far end (or the path to it) is the better lead: name it.
		 */
		if (passes_same_way(run, l)) {
			struct ibp_finding *f = &out->v[out->n - 1];

			ibp_rt_setf(f->node, sizeof(f->node), "%s", ibp_rt_node_name(run, l->peer));
			ibp_rt_setf(f->device, sizeof(f->device), "%s", l->r.peer_device);
			f->port = (int)l->r.peer_port;
		}
	}
	version_mismatch(run, out);
	if (run->dropped)
		dropped(run, out, res);
	if (!n_fail) {
		double min_bw = 0, max_lat = 0;
		size_t n_pass = 0;

		for (size_t i = 0; i < run->n_links; i++) {
			const struct ibp_rt_link *l = &run->links[i];

			n_pass += l->r.status == IBP_LINK_PASS;
			if (min_bw == 0 || (l->r.gbps > 0 && l->r.gbps < min_bw))
				min_bw = l->r.gbps;
			if (l->r.lat_us > max_lat)
				max_lat = l->r.lat_us;
		}
		ibp_findings_addf(
		    out, "rdmatest_passed", IBP_SEV_OK, IBP_CLASS_NODE,
		    run->n_rails ? run->rails[0].device : NULL,
		    run->n_rails ? (int)run->rails[0].port : 0, expected, NULL,
		    "%zu links with %zu peers over %zu rail%s passed%s: min %.2f Gb/s, "
		    "max round trip %.0f us",
		    n_pass, distinct_peers(run), run->n_rails, run->n_rails == 1 ? "" : "s",
		    n_pass < run->n_links ? " (the rest not tested: rails only one side has)" : "",
		    min_bw, max_lat);
	}
	res->pass = n_fail == 0;
	res->inconclusive = slow_only && n_hw == n_fail;
	res->n_suspects = nsus;
	memcpy(res->suspects, sus, nsus * sizeof(sus[0]));
	free(addr_leaf);
	free(run->addr_names);
	run->addr_names = NULL;
}
