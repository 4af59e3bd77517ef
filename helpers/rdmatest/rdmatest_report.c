/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_report.c: one run's links as findings (rdmatest_report.h): who
 * is blamed by the rules of rdmatest_blame.c and rdmatest_topo.c, and in
 * which words.  It reads what the caller hands it and writes findings;
 * it calls nothing of the run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmatest_report.h"

/* The caller's input, and the names of the leaves it learned without a topology. */
struct report {
	const struct ibp_rt_report_in *in;
	const struct ibp_rt_ctx *x;
	const struct ibp_rt_known *k;
	char (*addr_names)[IBP_OOB_LEAF_MAX];
	size_t n_addr_names;
};

/* Links that say something about the hardware: rdmatest_blame.c's rule. */
static bool failed(uint8_t status)
{
	return ibp_rt_counts(status) && status != IBP_LINK_PASS;
}

/* The fix for L's failure: a local munge failure is not a memlock problem. */
static const char *fix_of(const struct ibp_rt_link *l)
{
	if (l->r.status == IBP_LINK_LOCAL && l->r.err == -ENOTCONN)
		return "start munged, or set munge_socket= to munged's socket";
	return ibp_rdmatest_status_fix(l->r.status);
}

static const char *leaf_name(const struct report *r, int leaf)
{
	if (leaf < 0)
		return "?";
	if (r->x->cfg->topology)
		return (size_t)leaf < r->x->cfg->topology->n_sw ? r->x->cfg->topology->sw[leaf].name
								: "?";
	return r->addr_names && (size_t)leaf < r->n_addr_names ? r->addr_names[leaf] : "?";
}

static void plan_mismatch(const struct report *r, struct ibp_findings *out)
{
	ibp_findings_addf(
	    out, "rdmatest_plan_mismatch", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
	    "every node of the step pairing links from the same leaf assignment",
	    "give every node the same topology_conf= file (root's, readable)",
	    "%s planned the test %s (digest %016llx), %s %s (digest %016llx): their "
	    "topologies differ or one has none, so some pairs did not meet; failed links "
	    "are named as links, no node or switch is blamed",
	    ibp_rt_node_name(r->x, r->k->mismatch_node),
	    r->k->mismatch_digest ? "from a topology" : "without a topology",
	    (unsigned long long)r->k->mismatch_digest, ibp_rt_node_name(r->x, r->x->me),
	    r->x->plan->topo ? "from its topology" : "without one",
	    (unsigned long long)r->x->plan->digest);
}

static void uplink_findings(const struct report *r, struct ibp_findings *out, const int *leaf,
			    const int *sus, size_t n_sus, const char *expected)
{
	for (size_t k = 0; k < n_sus; k++) {
		const char *name = leaf_name(r, sus[k]);
		char mine[IBP_TEXT_MAX] = "", far[IBP_TEXT_MAX] = "";
		size_t om = 0, of = 0;
		uint32_t seen[64];
		size_t n_seen = 0;
		struct ibp_finding *f;

		for (size_t i = 0; i < r->k->n; i++) {
			const struct ibp_oob_link *l = &r->k->v[i];
			uint32_t ends[2] = {l->from, l->to};

			if (l->status == IBP_LINK_PASS ||
			    !ibp_rdmatest_uplink_explains(l->from, l->to, leaf, r->x->n, &sus[k],
							  1))
				continue;
			for (int e = 0; e < 2; e++) {
				bool in = leaf[ends[e]] == sus[k];
				char *buf = in ? mine : far;
				size_t *off = in ? &om : &of;

				if (!ibp_rt_set_add(seen, &n_seen, 64, ends[e]) ||
				    *off >= IBP_TEXT_MAX - 1)
					continue;
				*off += (size_t)snprintf(buf + *off, IBP_TEXT_MAX - *off, "%s%s",
							 *off ? "," : "",
							 ibp_rt_node_name(r->x, ends[e]));
				if (*off >= IBP_TEXT_MAX)
					*off = IBP_TEXT_MAX - 1;
			}
		}
		if (ibp_findings_addf(
			out, "rdmatest_uplinks_failed", IBP_SEV_FAIL, IBP_CLASS_FABRIC, NULL, 0,
			expected,
			"check the switch's uplink ports and cables (its error "
			"counters, then reseat or replace); the nodes under it are not "
			"at fault",
			"rdma test failed on every link between %s (%s) and other "
			"leaves (%s) while links inside %s passed",
			name, mine, far, name))
			continue;
		f = &out->v[out->n - 1];
		ibp_rt_setf(f->node, sizeof(f->node), "%s uplinks", name);
	}
}

static void inconclusive(const struct report *r, struct ibp_findings *out, const char *expected)
{
	size_t n_bw = 0, n_lat = 0;
	double min_bw = 0, max_lat = 0, floor_gbps = 0;

	for (size_t i = 0; i < r->x->n_links; i++) {
		const struct ibp_rt_link *l = &r->x->links[i];

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
			  r->in->rail0 ? r->in->rail0->device : NULL,
			  r->in->rail0 ? (int)r->in->rail0->port : 0, expected,
			  "rerun when the nodes are less loaded, or check test_min_bw= and "
			  "test_max_lat_us= against what the fabric can do",
			  "inconclusive: every link slow, nobody blamed (bandwidth low on %zu "
			  "links, min %.2f Gb/s, floor %.2f Gb/s; latency high on %zu, max round "
			  "trip %.0f us, limit %u us)",
			  n_bw, min_bw, floor_gbps, n_lat, max_lat, r->x->pol->test_max_lat_us);
}

/* A link whose peer never authenticated, or whose frames failed: named, nobody blamed. */
static void auth_failed(const struct report *r, struct ibp_findings *out,
			const struct ibp_rt_link *l)
{
	ibp_findings_addf(out, "rdmatest_auth_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, l->r.device,
			  (int)l->r.port, "every frame authenticated under the link's key",
			  ibp_rdmatest_status_fix(l->r.status),
			  "rdma test link %s -> %s (round %u, rail %u) failed authentication: %s",
			  ibp_rt_node_name(r->x, l->r.from), ibp_rt_node_name(r->x, l->r.to),
			  l->r.round, l->r.rail, l->r.detail);
}

/*
 * Links whose peer answered in another protocol version: one warning per
 * such peer, naming it, both versions and the links left untested.  Not a
 * node fault (class job, like rdmatest_plan_mismatch: the nodes disagree,
 * the hardware is not in question), nobody blamed.  The version is what
 * the peer's address claimed, unauthenticated: "answers with".
 */
static void version_mismatch(const struct report *r, struct ibp_findings *out)
{
	for (size_t i = 0; i < r->x->n_links; i++) {
		const struct ibp_rt_link *l = &r->x->links[i];
		char links[IBP_TEXT_MAX] = "";
		size_t n = 0, off = 0;
		bool first = true;

		if (l->r.status != IBP_LINK_VERSION)
			continue;
		for (size_t k = 0; k < i && first; k++)
			first = !(r->x->links[k].r.status == IBP_LINK_VERSION &&
				  r->x->links[k].peer == l->peer);
		if (!first)
			continue; /* said with its peer's first link */
		for (size_t k = i; k < r->x->n_links; k++) {
			const struct ibp_rt_link *x = &r->x->links[k];

			if (x->r.status != IBP_LINK_VERSION || x->peer != l->peer)
				continue;
			n++;
			if (off < sizeof(links))
				off += (size_t)snprintf(links + off, sizeof(links) - off,
							"%s%s -> %s", off ? ", " : "",
							ibp_rt_node_name(r->x, x->r.from),
							ibp_rt_node_name(r->x, x->r.to));
		}
		if (ibp_findings_addf(
			out, "rdmatest_version_mismatch", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
			"one cross-node test protocol on every node of the step",
			ibp_rdmatest_status_fix(IBP_LINK_VERSION),
			"answers with cross-node test protocol %u, %s speaks %u: the step's nodes "
			"run different spank-ib builds; %zu link%s not tested (%s)",
			l->peer_version, ibp_rt_node_name(r->x, r->x->me), ibp_oob_wire_version(),
			n, n == 1 ? "" : "s", links))
			continue;
		ibp_rt_setf(out->v[out->n - 1].node, sizeof(out->v[out->n - 1].node), "%s",
			    ibp_rt_node_name(r->x, l->peer));
	}
}

/*
 * Links whose best figures missed a limit on a node too busy to judge
 * them (rdmatest_link.c): they passed; this says so, with the figures.
 */
static void busy(const struct report *r, struct ibp_findings *out)
{
	size_t n = 0;
	double late = 0, lat = 0, gbps = 0;
	const struct ibp_rt_link *first = NULL;

	for (size_t i = 0; i < r->x->n_links; i++) {
		const struct ibp_rt_link *l = &r->x->links[i];

		if (l->r.busy_us <= 0)
			continue;
		n++;
		first = first ? first : l;
		late = l->r.busy_us > late ? l->r.busy_us : late;
		lat = l->r.lat_us > lat ? l->r.lat_us : lat;
		gbps = gbps == 0 || l->r.gbps < gbps ? l->r.gbps : gbps;
	}
	if (!n)
		return;
	ibp_findings_addf(out, "rdmatest_busy", IBP_SEV_WARN, IBP_CLASS_NODE, first->r.device,
			  (int)first->r.port, "round trips within test_max_lat_us= on an idle node",
			  "nothing, if the node was busy on purpose; else find what loads it "
			  "(top) and rerun",
			  "%zu link%s not judged: this node was too busy (its own wake-ups %.0f us "
			  "late, limit %u us) while the best of %u measurements read %.2f Gb/s and "
			  "%.0f us",
			  n, n == 1 ? "" : "s", late, r->x->pol->test_max_lat_us, first->r.measures,
			  gbps, lat);
}

/* Connections the acceptor dropped: reported, never a failure. */
static void dropped(const struct report *r, struct ibp_findings *out)
{
	char what[IBP_TEXT_MAX] = "";
	size_t off = 0;

	if (r->in->dropped_away)
		off += (size_t)snprintf(what, sizeof(what),
					"%u from addresses outside the step's peers of this node",
					r->in->dropped_away);
	if (r->in->dropped_peer && off < sizeof(what))
		snprintf(what + off, sizeof(what) - off,
			 "%s%u unauthenticated or over the per-address limit from peers' "
			 "addresses",
			 off ? ", " : "", r->in->dropped_peer);
	ibp_findings_addf(out, "rdmatest_dropped_connections", IBP_SEV_WARN, IBP_CLASS_NODE, NULL,
			  0, "only the step's nodes connect to the test port",
			  "find what connects to the test ports (ss -tnp), or pick another range "
			  "with test_ports=",
			  "dropped %u connection%s on test port %u: %s (last: %s)", r->in->dropped,
			  r->in->dropped == 1 ? "" : "s", r->in->oob_port, what,
			  r->in->drop_reason);
}

static size_t worst_link_of(const struct report *r, uint32_t node)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < r->x->n_links; i++) {
		const struct ibp_rt_link *l = &r->x->links[i];

		if (!failed(l->r.status) || (l->r.from != node && l->r.to != node))
			continue;
		if (best == SIZE_MAX || l->r.status > r->x->links[best].r.status)
			best = i;
	}
	return best;
}

/* Which of this node's links all failed: " it sends", " it receives" or "". */
static const char *own_direction(const struct report *r)
{
	bool out_ok = false, in_ok = false;

	for (size_t i = 0; i < r->x->n_links; i++) {
		if (r->x->links[i].r.status != IBP_LINK_PASS)
			continue;
		if (r->x->links[i].out)
			out_ok = true;
		else
			in_ok = true;
	}
	return out_ok == in_ok ? "" : out_ok ? " it receives" : " it sends";
}

static bool passes_same_way(const struct report *r, const struct ibp_rt_link *l)
{
	for (size_t i = 0; i < r->x->n_links; i++) {
		const struct ibp_rt_link *x = &r->x->links[i];

		if (x != l && x->out == l->out && x->peer != l->peer &&
		    x->r.status == IBP_LINK_PASS)
			return true;
	}
	return false;
}

static void expected_text(const struct report *r, char *buf, size_t len)
{
	double floor_gbps = 0;

	for (size_t i = 0; i < r->x->n_links; i++)
		if (r->x->links[i].r.expect_gbps > floor_gbps)
			floor_gbps = r->x->links[i].r.expect_gbps;
	if (floor_gbps > 0)
		ibp_rt_setf(buf, len,
			    "intact data at >= %.1f Gb/s and round trips <= %u us with every peer",
			    floor_gbps, r->x->pol->test_max_lat_us);
	else
		ibp_rt_setf(buf, len, "intact data and round trips <= %u us with every peer",
			    r->x->pol->test_max_lat_us);
}

/* A suspect node: the topology-aware rule when leaves are known (rdmatest_topo.c). */
static bool suspect(const struct report *r, const int *leaf, const int *sus_leaves,
		    size_t n_sus_leaves, uint32_t node, bool self)
{
	if (leaf)
		return ibp_rdmatest_suspect_topo(r->k->v, r->k->n, node, self, leaf, r->x->n,
						 sus_leaves, n_sus_leaves);
	return ibp_rdmatest_suspect(r->k->v, r->k->n, node, self);
}

static size_t distinct_peers(const struct report *r)
{
	uint32_t seen[2 * 2];
	size_t n = 0;

	for (size_t i = 0; i < r->x->n_links; i++) {
		size_t k;

		for (k = 0; k < n && seen[k] != r->x->links[i].peer; k++)
			;
		if (k == n && n < sizeof(seen) / sizeof(seen[0]))
			seen[n++] = r->x->links[i].peer;
	}
	return n;
}

/* ---- rails: crossed ports and NCCL_CROSS_NIC -------------------------- */

/* This node's out-link of ROUND on RAIL, NULL when it has none. */
static const struct ibp_rt_link *out_link(const struct report *r, unsigned round, size_t rail)
{
	if (rail >= r->x->n_rails || round < 1 || round > ibp_rt_n_rounds(r->x))
		return NULL;
	return ibp_rt_link_at(r->x, rail, round, true);
}

/* Whether a landing probe of ROUND from this node's rail A reached the peer's rail B. */
static bool reached(const struct report *r, unsigned round, size_t a, size_t b)
{
	for (size_t i = 0; i < r->in->n_probes; i++) {
		const struct ibp_rdmatest_probe *q = &r->in->probes[i];

		if (q->round == round && q->from_rail == a && q->to_rail == b && q->reached)
			return true;
	}
	return false;
}

/* One of this node's own links on RAIL, with a node other than PEER, passed. */
static bool rail_passes_without(const struct report *r, size_t rail, uint32_t peer)
{
	for (size_t i = 0; i < r->x->n_links; i++) {
		const struct ibp_rt_link *l = &r->x->links[i];

		if (l->r.rail == rail && l->peer != peer && l->r.status == IBP_LINK_PASS)
			return true;
	}
	return false;
}

/* A port on another rail's network, by node and rail: its findings say it all. */
struct crossed {
	uint32_t node;
	uint16_t rail;
};

static bool is_crossed(const struct crossed *c, size_t n, uint32_t node, uint16_t rail)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].node == node && c[i].rail == rail)
			return true;
	return false;
}

static void cross_add(struct crossed *c, size_t *n, size_t max, uint32_t node, uint16_t rail)
{
	if (*n < max && !is_crossed(c, *n, node, rail))
		c[(*n)++] = (struct crossed){.node = node, .rail = rail};
}

/* The device of the peer's RAIL as its endpoint named it, else "rail N". */
static void peer_dev(const struct report *r, unsigned round, size_t rail, char *buf, size_t len)
{
	const struct ibp_rt_link *l = out_link(r, round, rail);

	if (l && l->r.peer_device[0])
		ibp_rt_setf(buf, len, "%s", l->r.peer_device);
	else
		ibp_rt_setf(buf, len, "its rail %zu port", rail);
}

/* A numeric address as 16 bytes, IPv4 mapped (::ffff:a.b.c.d) as the endpoints carry it. */
static bool ip16(const char *addr, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, addr, out + 12) == 1) {
		out[10] = out[11] = 0xff;
		return true;
	}
	return inet_pton(AF_INET6, addr, out) == 1;
}

/* IP (16 bytes) as text, an IPv4-mapped one as IPv4. */
static void ip_text(const uint8_t ip[16], char *buf, size_t len)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (!memcmp(ip, v4mapped, 12))
		inet_ntop(AF_INET, ip + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, ip, buf, (socklen_t)len);
}

/* The rail of this node whose network (address and prefix) holds IP, -1 none. */
static int rail_of_ip(const struct report *r, const uint8_t ip[16])
{
	for (size_t k = 0; r->in->rails && k < r->x->n_rails; k++) {
		const struct ibp_tx_port *p = &r->in->rails[k];
		uint8_t mine[16];
		unsigned bits;
		bool v4;

		if (!p->prefix || !ip16(p->addr, mine))
			continue;
		v4 = mine[10] == 0xff && mine[11] == 0xff && !mine[0];
		bits = p->prefix + (v4 ? 96u : 0u);
		if (bits > 128)
			continue;
		if (memcmp(mine, ip, bits / 8) != 0)
			continue;
		if (bits % 8 && (mine[bits / 8] ^ ip[bits / 8]) >> (8 - bits % 8))
			continue;
		return (int)k;
	}
	return -1;
}

/* The rails of ROUND's peer by their addresses: -1 unknown, else whether K and J sit swapped. */
static int addr_swapped(const struct report *r, unsigned round, size_t k, size_t j)
{
	const struct ibp_rt_link *lk = out_link(r, round, k), *lj = out_link(r, round, j);
	int a, b;

	if (!lk || !lj || !lk->peer_ip_set || !lj->peer_ip_set)
		return -1;
	a = rail_of_ip(r, lk->peer_ip);
	b = rail_of_ip(r, lj->peer_ip);
	if (a < 0 || b < 0)
		return -1;
	return a == (int)j && b == (int)k;
}

/*
 * Crossed by their addresses (the socket transport's rails, each with its
 * netdev's prefix): the peer's rail-K port has an address of this node's
 * rail-J network and its rail-J port one of rail K's.  On a switched rail
 * network each netdev still answers on its own wire and the links may pass;
 * a routed rail fabric, or NCCL's RoCE GIDs, would not.  The peer is named
 * when another peer's ports sit on the expected networks, this node when
 * two peers or more look swapped alike; two nodes cannot tell.  A failure
 * when the two rails' links failed, else a warning.
 */
static void addr_crossed(const struct report *r, struct ibp_findings *out, struct crossed *c,
			 size_t *nc, size_t max)
{
	size_t nr = r->x->n_rails;

	for (size_t k = 0; r->in->rails && k < nr; k++) {
		for (size_t j = k + 1; j < nr; j++) {
			uint32_t swapped[2];
			size_t n_sw = 0;
			bool straight = false;

			for (unsigned round = 1; round <= ibp_rt_n_rounds(r->x); round++) {
				int v = addr_swapped(r, round, k, j);

				if (v == 1 && n_sw < 2)
					swapped[n_sw++] = r->x->plan->send_to[round - 1];
				else if (v == 0 &&
					 rail_of_ip(r, out_link(r, round, k)->peer_ip) == (int)k)
					straight = true;
			}
			if (!n_sw)
				continue;
			for (size_t s = 0; s < n_sw; s++) {
				uint32_t who =
				    straight ? swapped[s] : (n_sw >= 2 ? r->x->me : swapped[s]);
				unsigned round = 0;
				const struct ibp_rt_link *lk, *lj;
				char dk[IBP_DEV_MAX + 16], dj[IBP_DEV_MAX + 16], fix[IBP_TEXT_MAX];
				char ak[INET6_ADDRSTRLEN] = "?", aj[INET6_ADDRSTRLEN] = "?";
				bool failed_both;

				if (is_crossed(c, *nc, who, (uint16_t)k) || (s && who == r->x->me))
					continue;
				for (unsigned q = 1; q <= ibp_rt_n_rounds(r->x); q++)
					if (r->x->plan->send_to[q - 1] == swapped[s])
						round = q;
				lk = out_link(r, round, k);
				lj = out_link(r, round, j);
				failed_both = failed(lk->r.status) && failed(lj->r.status);
				if (who == r->x->me) {
					ibp_rt_setf(dk, sizeof(dk), "%s", r->in->rails[k].device);
					ibp_rt_setf(dj, sizeof(dj), "%s", r->in->rails[j].device);
					ibp_rt_setf(ak, sizeof(ak), "%s", r->in->rails[k].addr);
					ibp_rt_setf(aj, sizeof(aj), "%s", r->in->rails[j].addr);
				} else {
					peer_dev(r, round, k, dk, sizeof(dk));
					peer_dev(r, round, j, dj, sizeof(dj));
					ip_text(lk->peer_ip, ak, sizeof(ak));
					ip_text(lj->peer_ip, aj, sizeof(aj));
				}
				ibp_rt_setf(fix, sizeof(fix),
					    "swap the addresses (or the cables) of %s and %s: each "
					    "has the other rail's",
					    dk, dj);
				if (ibp_findings_addf(
					out, "rdmatest_rails_crossed",
					failed_both ? IBP_SEV_FAIL : IBP_SEV_WARN, IBP_CLASS_NODE,
					dk,
					who == r->x->me ? (int)r->in->rails[k].port
							: (int)lk->r.peer_port,
					"each rail's port on its own rail's network", fix,
					"rails %zu (%s) and %zu (%s) look crossed by their "
					"addresses: "
					"%s %s (rail %zu's network), %s %s (rail %zu's)%s%s",
					k, dk, j, dj, dk, ak, j, dj, aj, k,
					failed_both
					    ? ""
					    : "; links pass here, not on a routed rail fabric",
					who == r->x->me || straight
					    ? ""
					    : "; this node's or its peer's"))
					continue;
				ibp_rt_setf(out->v[out->n - 1].node,
					    sizeof(out->v[out->n - 1].node), "%s",
					    ibp_rt_node_name(r->x, who));
				cross_add(c, nc, max, who, (uint16_t)k);
				cross_add(c, nc, max, who, (uint16_t)j);
			}
		}
	}
}

/*
 * Crossed rails, from this node's landing probes (rdmatest_probe.h): on
 * the out-link of a round, rails K and J both failed while this node's
 * rail K reached the peer's rail-J port and its rail J the peer's rail-K
 * port.  The ports of one of the two nodes are each on the other's rail
 * network (a cable swap, a port on the wrong rail switch).  Which node:
 * the peer, when this node's rails K and J pass with another node; this
 * node, when the same pair crossed with two peers or more and its rails
 * pass with none; with two nodes it cannot be told.
 */
static size_t crossed_rails(const struct report *r, struct ibp_findings *out, struct crossed *c,
			    size_t max)
{
	size_t nc = 0, nr = r->x->n_rails;
	uint32_t self_peers[IBP_RDMATEST_MAX_RAILS][IBP_RDMATEST_MAX_RAILS][2];
	size_t self_n[IBP_RDMATEST_MAX_RAILS][IBP_RDMATEST_MAX_RAILS];

	if (nr < 2)
		return 0;
	memset(self_n, 0, sizeof(self_n));
	for (unsigned round = 1; round <= ibp_rt_n_rounds(r->x); round++) {
		uint32_t peer = r->x->plan->send_to[round - 1];

		for (size_t k = 0; k < nr; k++) {
			for (size_t j = k + 1; j < nr; j++) {
				const struct ibp_rt_link *lk = out_link(r, round, k),
							 *lj = out_link(r, round, j);
				char dk[IBP_DEV_MAX + 16], dj[IBP_DEV_MAX + 16], fix[IBP_TEXT_MAX];
				bool mine_ok;

				if (!lk || !lj || !failed(lk->r.status) || !failed(lj->r.status) ||
				    !reached(r, round, k, j) || !reached(r, round, j, k))
					continue;
				mine_ok = rail_passes_without(r, k, peer) &&
					  rail_passes_without(r, j, peer);
				if (!mine_ok) {
					size_t *n = &self_n[k][j];

					if (*n < 2 && (!*n || self_peers[k][j][0] != peer))
						self_peers[k][j][(*n)++] = peer;
					if (r->x->n > 2)
						continue; /* judged below, over every peer */
				}
				peer_dev(r, round, k, dk, sizeof(dk));
				peer_dev(r, round, j, dj, sizeof(dj));
				if (mine_ok)
					ibp_rt_setf(fix, sizeof(fix),
						    "swap the cables of %s and %s (each is on the "
						    "other rail's switch), or their addresses",
						    dk, dj);
				else
					ibp_rt_setf(
					    fix, sizeof(fix),
					    "swap the cables of %s and %s on the node whose "
					    "ports are crossed (a step with a third node tells "
					    "which)",
					    dk, dj);
				if (ibp_findings_addf(
					out, "rdmatest_rails_crossed", IBP_SEV_FAIL, IBP_CLASS_NODE,
					dk, (int)lk->r.peer_port,
					"each rail's port on its own rail's network", fix,
					"rails %zu (%s) and %zu (%s) look crossed: %s's rail %zu "
					"reaches their %s, its rail %zu their %s, and the rails' "
					"own "
					"links failed%s",
					k, dk, j, dj, ibp_rt_node_name(r->x, r->x->me), k, dj, j,
					dk,
					mine_ok ? "; this node's rails pass with other nodes"
						: ": the ports of this node or of its peer (two "
						  "nodes cannot tell which)"))
					continue;
				ibp_rt_setf(out->v[out->n - 1].node,
					    sizeof(out->v[out->n - 1].node), "%s",
					    ibp_rt_node_name(r->x, peer));
				cross_add(c, &nc, max, peer, (uint16_t)k);
				cross_add(c, &nc, max, peer, (uint16_t)j);
				if (!mine_ok) { /* two nodes: this one is as likely */
					cross_add(c, &nc, max, r->x->me, (uint16_t)k);
					cross_add(c, &nc, max, r->x->me, (uint16_t)j);
				}
			}
		}
	}
	/* This node's own ports: the same pair crossed with two peers, its rails passing nowhere. */
	for (size_t k = 0; k < nr && r->x->n > 2; k++) {
		for (size_t j = k + 1; j < nr; j++) {
			const struct ibp_tx_port *pk = r->in->rails ? &r->in->rails[k] : NULL,
						 *pj = r->in->rails ? &r->in->rails[j] : NULL;
			char fix[IBP_TEXT_MAX];

			if (self_n[k][j] < 2 || rail_passes_without(r, k, UINT32_MAX) ||
			    rail_passes_without(r, j, UINT32_MAX))
				continue;
			ibp_rt_setf(fix, sizeof(fix),
				    "swap the cables of %s and %s (each is on the other rail's "
				    "switch), or their addresses",
				    pk ? pk->device : "the two ports", pj ? pj->device : "");
			if (ibp_findings_addf(
				out, "rdmatest_rails_crossed", IBP_SEV_FAIL, IBP_CLASS_NODE,
				pk ? pk->device : NULL, pk ? (int)pk->port : 0,
				"each rail's port on its own rail's network", fix,
				"rails %zu (%s) and %zu (%s) look crossed: rail %zu reaches the "
				"rail-%zu ports of %s and %s, rail %zu their rail-%zu ports, and "
				"neither rail passes with any peer",
				k, pk ? pk->device : "?", j, pj ? pj->device : "?", k, j,
				ibp_rt_node_name(r->x, self_peers[k][j][0]),
				ibp_rt_node_name(r->x, self_peers[k][j][1]), j, k))
				continue;
			ibp_rt_setf(out->v[out->n - 1].node, sizeof(out->v[out->n - 1].node), "%s",
				    ibp_rt_node_name(r->x, r->x->me));
			cross_add(c, &nc, max, r->x->me, (uint16_t)k);
			cross_add(c, &nc, max, r->x->me, (uint16_t)j);
		}
	}
	return nc;
}

/*
 * NCCL_CROSS_NIC, from the round's across probe (rail a to the peer's rail
 * a + 1) on rails whose own links passed: NCCL assumes rails may be
 * joined and tries to keep rings on one rail (the default, 2); where rails
 * cannot reach each other NCCL_CROSS_NIC=0 keeps it from crossing; where
 * every NIC reaches every other, 1 lets it pick freely (NCCL's env.html,
 * NVIDIA/nccl issue 1591).  A note, never a failure.
 */
static void cross_nic_note(const struct report *r, struct ibp_findings *out)
{
	const struct ibp_rdmatest_probe *yes = NULL, *no = NULL;

	for (size_t i = 0; i < r->in->n_probes; i++) {
		const struct ibp_rdmatest_probe *q = &r->in->probes[i];
		const struct ibp_rt_link *la = out_link(r, q->round, q->from_rail),
					 *lb = out_link(r, q->round, q->to_rail);

		if (q->kind != IBP_RDMATEST_PROBE_ACROSS || !la || !lb ||
		    la->r.status != IBP_LINK_PASS || lb->r.status != IBP_LINK_PASS)
			continue;
		if (q->reached && !yes)
			yes = q;
		else if (!q->reached && !no)
			no = q;
	}
	if (yes)
		ibp_findings_addf(
		    out, "rdmatest_rails_joined", IBP_SEV_OK, IBP_CLASS_JOB, NULL, 0, NULL,
		    "leave NCCL_CROSS_NIC unset (2: rings stay on one rail when they "
		    "can) or set 1 when all NICs share one switch",
		    "the rails reach each other (rail %u of %s reached rail %u of %s): "
		    "NCCL may connect across NICs",
		    yes->from_rail, ibp_rt_node_name(r->x, yes->from), yes->to_rail,
		    ibp_rt_node_name(r->x, yes->to));
	else if (no)
		ibp_findings_addf(
		    out, "rdmatest_rails_isolated", IBP_SEV_OK, IBP_CLASS_JOB, NULL, 0, NULL,
		    "set NCCL_CROSS_NIC=0 so that NCCL keeps each ring and tree on one "
		    "rail (its default 2 may still cross rails)",
		    "the rails do not reach each other (rail %u of %s did not reach "
		    "rail %u of %s, both rails' own links passing): a rail-optimized "
		    "fabric whose rails are not joined",
		    no->from_rail, ibp_rt_node_name(r->x, no->from), no->to_rail,
		    ibp_rt_node_name(r->x, no->to));
}

/* A node at fault on one rail only: that port, its cable or its rail switch's port. */
struct rail_suspect {
	uint32_t node;
	uint16_t rail;
};

/* The known links of rail RAIL into OUT (MAX entries); their number. */
static size_t rail_links(const struct report *r, uint16_t rail, struct ibp_oob_link *out,
			 size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < r->k->n && n < max; i++)
		if (r->k->v[i].rail == rail)
			out[n++] = r->k->v[i];
	return n;
}

static bool rail_suspected(const struct rail_suspect *rs, size_t n, uint32_t node, uint16_t rail)
{
	for (size_t i = 0; i < n; i++)
		if (rs[i].node == node && rs[i].rail == rail)
			return true;
	return false;
}

/*
 * The suspects of each rail, by the node rule over that rail's links
 * alone: a port whose every link failed while its node's other rails and
 * its peers' passed (a cable, the port of a rail switch, the rail's
 * netdev).  Nodes suspected across all their rails (SUS) are not repeated.
 * With one rail this is the node rule itself: nothing to add.
 */
static size_t rail_suspects(const struct report *r, const int *leaf, const int *sus_leaves,
			    size_t n_sus_leaves, const uint32_t *sus, size_t nsus,
			    const struct crossed *cr, size_t n_cr, struct rail_suspect *out,
			    size_t max)
{
	static const size_t cap = sizeof(r->k->v) / sizeof(r->k->v[0]);
	struct ibp_oob_link *v;
	size_t n = 0;

	if (r->x->n_rails < 2)
		return 0;
	v = malloc(cap * sizeof(*v));
	if (!v)
		return 0; /* the links are named instead */
	for (uint16_t k = 0; k < r->x->n_rails && n < max; k++) {
		size_t nv = rail_links(r, k, v, cap);
		uint32_t cand[1 + IBP_RT_MAX_PEERS];
		size_t nc = 0;

		cand[nc++] = r->x->me;
		for (size_t i = 0; i < r->x->n_links && nc < sizeof(cand) / sizeof(cand[0]); i++) {
			const struct ibp_rt_link *l = &r->x->links[i];
			bool dup = false;

			if (l->r.rail != k || !failed(l->r.status))
				continue;
			for (size_t c = 0; c < nc; c++)
				dup |= cand[c] == l->peer;
			if (!dup)
				cand[nc++] = l->peer;
		}
		for (size_t c = 0; c < nc && n < max; c++) {
			bool dup = false, hit;

			for (size_t s2 = 0; s2 < nsus; s2++)
				dup |= sus[s2] == cand[c];
			if (dup || is_crossed(cr, n_cr, cand[c], k))
				continue;
			hit = leaf ? ibp_rdmatest_suspect_topo(v, nv, cand[c], cand[c] == r->x->me,
							       leaf, r->x->n, sus_leaves,
							       n_sus_leaves)
				   : ibp_rdmatest_suspect(v, nv, cand[c], cand[c] == r->x->me);
			if (hit)
				out[n++] = (struct rail_suspect){.node = cand[c], .rail = k};
		}
	}
	free(v);
	return n;
}

/* One finding per rail suspect: the node, the rail's device and port, the peers. */
static void rail_findings(const struct report *r, const struct rail_suspect *rs, size_t n,
			  const char *expected, struct ibp_findings *out)
{
	for (size_t s = 0; s < n; s++) {
		const struct ibp_rt_link *w = NULL;
		bool self = rs[s].node == r->x->me;
		char peers[IBP_TEXT_MAX] = "", fix[IBP_TEXT_MAX], dev[IBP_DEV_MAX] = "";
		size_t off = 0;
		unsigned port = 0;
		struct ibp_finding *f;

		uint32_t seen[IBP_RT_MAX_PEERS];
		size_t n_seen = 0;

		for (size_t i = 0; i < r->x->n_links; i++) {
			const struct ibp_rt_link *l = &r->x->links[i];
			uint32_t other = self ? l->peer : r->x->me;

			if (l->r.rail != rs[s].rail || !failed(l->r.status) ||
			    (!self && l->peer != rs[s].node))
				continue;
			if (!w || l->r.status > w->r.status)
				w = l;
			if (!self && l->r.peer_device[0] && !dev[0]) {
				ibp_rt_setf(dev, sizeof(dev), "%s", l->r.peer_device);
				port = l->r.peer_port;
			}
			if (!ibp_rt_set_add(seen, &n_seen, IBP_RT_MAX_PEERS, other) ||
			    off >= sizeof(peers) - 1)
				continue;
			off += (size_t)snprintf(peers + off, sizeof(peers) - off, "%s%s",
						off ? "," : "", ibp_rt_node_name(r->x, other));
		}
		if (!w)
			continue;
		/*
		 * This node's own port; or the peer's as its endpoint named it, and
		 * when it never sent one (its port failed before), the port of the
		 * same rail here: rail k pairs with rail k, the nodes alike.
		 */
		if ((self || !dev[0]) && r->in->rails) {
			ibp_rt_setf(dev, sizeof(dev), "%s", r->in->rails[rs[s].rail].device);
			port = r->in->rails[rs[s].rail].port;
		}
		ibp_rt_setf(fix, sizeof(fix),
			    "check %s: its cable, its port on rail %u's switch and its netdev "
			    "(ibprep check); the node's other rails passed",
			    dev[0] ? "this port" : "the node's port on that rail",
			    (unsigned)rs[s].rail);
		if (ibp_findings_addf(
			out, "rdmatest_rail_failed", IBP_SEV_FAIL, IBP_CLASS_NODE,
			dev[0] ? dev : NULL, (int)port, expected, fix,
			"rdma test %s on rail %u %s %s, the node's other rails passing "
			"(%s)",
			ibp_link_status_name(w->r.status), (unsigned)rs[s].rail,
			self ? "with every peer" : "seen from", peers, w->r.detail))
			continue;
		f = &out->v[out->n - 1];
		ibp_rt_setf(f->node, sizeof(f->node), "%s", ibp_rt_node_name(r->x, rs[s].node));
	}
}

static void report(const struct report *r, const int *addr_leaf, struct ibp_findings *out,
		   struct ibp_rdmatest_result *res)
{
	uint32_t sus[8];
	size_t nsus = 0;
	/* Nodes that planned differently: no leaves, no node blamed (the pairs may not have met). */
	const int *leaf = r->k->plan_mismatch ? NULL : r->x->leaf ? r->x->leaf : addr_leaf;
	int sus_leaves[8];
	size_t n_sus_leaves = 0;
	char expected[IBP_TEXT_MAX];
	size_t n_fail = 0, n_hw = 0, n_rsus = 0, n_cr = 0;
	struct rail_suspect rsus[2 * IBP_RDMATEST_MAX_RAILS];
	struct crossed cr[4 * IBP_RDMATEST_MAX_RAILS];
	bool slow_only;

	expected_text(r, expected, sizeof(expected));
	for (size_t i = 0; i < r->x->n_links; i++) {
		n_fail += ibp_rt_failed(r->x->links[i].r.status);
		n_hw += failed(r->x->links[i].r.status);
	}
	slow_only = n_hw && ibp_rdmatest_all_slow(r->k->v, r->k->n);
	if (slow_only)
		inconclusive(r, out, expected);
	/* A leaf's uplinks first (with a topology), then this node, then each peer of a failed link. */
	if (leaf && n_hw && !slow_only) {
		n_sus_leaves =
		    ibp_rdmatest_uplink_suspects(r->k->v, r->k->n, leaf, r->x->n, sus_leaves, 8);
		uplink_findings(r, out, leaf, sus_leaves, n_sus_leaves, expected);
	}
	if (r->k->plan_mismatch)
		plan_mismatch(r, out);
	if (n_hw && !slow_only && !r->k->plan_mismatch &&
	    suspect(r, leaf, sus_leaves, n_sus_leaves, r->x->me, true))
		sus[nsus++] = r->x->me;
	for (size_t i = 0; i < r->x->n_links && nsus < 8 && !slow_only && !r->k->plan_mismatch;
	     i++) {
		const struct ibp_rt_link *l = &r->x->links[i];
		bool dup = false;

		if (!failed(l->r.status))
			continue;
		for (size_t k = 0; k < nsus; k++)
			dup |= sus[k] == l->peer;
		if (!dup && suspect(r, leaf, sus_leaves, n_sus_leaves, l->peer, false))
			sus[nsus++] = l->peer;
	}
	if (n_hw && !slow_only && !r->k->plan_mismatch)
		n_cr = crossed_rails(r, out, cr, sizeof(cr) / sizeof(cr[0]));
	if (!r->k->plan_mismatch) /* also when every link passed: a warning then */
		addr_crossed(r, out, cr, &n_cr, sizeof(cr) / sizeof(cr[0]));
	if (n_hw && !slow_only && !r->k->plan_mismatch)
		n_rsus = rail_suspects(r, leaf, sus_leaves, n_sus_leaves, sus, nsus, cr, n_cr, rsus,
				       sizeof(rsus) / sizeof(rsus[0]));
	rail_findings(r, rsus, n_rsus, expected, out);
	for (size_t k = 0; k < nsus; k++) {
		size_t w = worst_link_of(r, sus[k]);
		const struct ibp_rt_link *l = &r->x->links[w];
		bool self = sus[k] == r->x->me;
		char peers[IBP_TEXT_MAX] = "";
		size_t nbad = 0, off = 0, n_seen = 0;
		uint32_t seen[IBP_RDMATEST_MAX_LINKS];
		struct ibp_finding *f;

		for (size_t i = 0; i < r->x->n_links; i++) {
			const struct ibp_rt_link *x = &r->x->links[i];
			uint32_t other = self ? x->peer : r->x->me;

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
						     off ? "," : "", ibp_rt_node_name(r->x, other));
			if (off >= sizeof(peers))
				off = sizeof(peers) - 1;
		}
		if (ibp_findings_addf(out, "rdmatest_node_failed", IBP_SEV_FAIL, IBP_CLASS_NODE,
				      self ? l->r.device : l->r.peer_device,
				      (int)(self ? l->r.port : l->r.peer_port), expected, fix_of(l),
				      "rdma test %s on %s link%s %s %s (%s)",
				      ibp_link_status_name(l->r.status), self ? "every" : "its",
				      self ? own_direction(r) : (nbad == 1 ? "" : "s"),
				      self ? "with" : "seen from", peers, l->r.detail))
			continue;
		f = &out->v[out->n - 1];
		ibp_rt_setf(f->node, sizeof(f->node), "%s", ibp_rt_node_name(r->x, sus[k]));
	}
	for (size_t i = 0; i < r->x->n_links; i++) {
		const struct ibp_rt_link *l = &r->x->links[i];
		bool covered = false;

		if (l->r.status == IBP_LINK_AUTH) {
			auth_failed(r, out, l);
			continue;
		}
		if (!failed(l->r.status) || slow_only)
			continue;
		for (size_t k = 0; k < nsus; k++)
			covered |= sus[k] == r->x->me || sus[k] == l->peer;
		covered |= rail_suspected(rsus, n_rsus, r->x->me, l->r.rail) ||
			   rail_suspected(rsus, n_rsus, l->peer, l->r.rail) ||
			   is_crossed(cr, n_cr, r->x->me, l->r.rail) ||
			   is_crossed(cr, n_cr, l->peer, l->r.rail);
		covered |= ibp_rdmatest_uplink_explains(l->r.from, l->r.to, leaf, r->x->n,
							sus_leaves, n_sus_leaves);
		if (covered)
			continue;
		if (ibp_findings_addf(
			out, "rdmatest_link_failed", IBP_SEV_FAIL, IBP_CLASS_NODE, l->r.device,
			(int)l->r.port, expected, fix_of(l),
			"rdma test %s on link %s -> %s (round %u, rail %u): %s",
			ibp_link_status_name(l->r.status), ibp_rt_node_name(r->x, l->r.from),
			ibp_rt_node_name(r->x, l->r.to), l->r.round, l->r.rail, l->r.detail))
			continue;
		/*
		 * When this end passes with other peers in the same direction, the
		 * far end (or the path to it) is the better lead: name it.
		 */
		if (passes_same_way(r, l)) {
			struct ibp_finding *f = &out->v[out->n - 1];

			ibp_rt_setf(f->node, sizeof(f->node), "%s",
				    ibp_rt_node_name(r->x, l->peer));
			ibp_rt_setf(f->device, sizeof(f->device), "%s", l->r.peer_device);
			f->port = (int)l->r.peer_port;
		}
	}
	version_mismatch(r, out);
	cross_nic_note(r, out);
	busy(r, out);
	if (r->in->dropped)
		dropped(r, out);
	if (!n_fail) {
		double min_bw = 0, max_lat = 0;
		size_t n_pass = 0, n_norate = 0;
		char norate[96] = "";

		for (size_t i = 0; i < r->x->n_links; i++) {
			const struct ibp_rt_link *l = &r->x->links[i];

			n_pass += l->r.status == IBP_LINK_PASS;
			/* a link without a rate (a datagram rail's) is no slow one: left out */
			n_norate += l->r.status == IBP_LINK_PASS && l->r.gbps <= 0;
			if (l->r.gbps > 0 && (min_bw == 0 || l->r.gbps < min_bw))
				min_bw = l->r.gbps;
			if (l->r.lat_us > max_lat)
				max_lat = l->r.lat_us;
		}
		if (n_norate)
			ibp_rt_setf(norate, sizeof(norate),
				    " (min of the links with a rate; %zu without: not measured)",
				    n_norate);
		ibp_findings_addf(
		    out, "rdmatest_passed", IBP_SEV_OK, IBP_CLASS_NODE,
		    r->in->rail0 ? r->in->rail0->device : NULL,
		    r->in->rail0 ? (int)r->in->rail0->port : 0, expected, NULL,
		    "%zu links with %zu peers over %zu rail%s passed%s: min %.2f Gb/s, "
		    "max round trip %.0f us%s",
		    n_pass, distinct_peers(r), r->x->n_rails, r->x->n_rails == 1 ? "" : "s",
		    n_pass < r->x->n_links ? " (the rest not tested: rails only one side has)" : "",
		    min_bw, max_lat, norate);
	}
	res->pass = n_fail == 0;
	res->inconclusive = slow_only && n_hw == n_fail;
	res->n_suspects = nsus;
	memcpy(res->suspects, sus, nsus * sizeof(sus[0]));
}

void ibp_rt_report(const struct ibp_rt_report_in *in, struct ibp_findings *out,
		   struct ibp_rdmatest_result *res)
{
	struct report r = {.in = in, .x = in->x, .k = in->known};
	int *addr_leaf = NULL;

	/* SLURM_TOPOLOGY_ADDR's leaves, when there is no topology */
	if (!in->x->leaf && !in->x->cfg->topology) {
		addr_leaf = ibp_rt_leaves_map(in->leaves, in->x->n, &r.addr_names);
		r.n_addr_names = addr_leaf ? in->leaves->n : 0;
	}
	report(&r, addr_leaf, out, res);
	free(addr_leaf);
	free(r.addr_names);
}
