/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rdmatest_blame.c: who is suspected (rdmatest.h): ibp_rdmatest_suspect()
 * is a pure function of the links a node knows (its own and its peers'
 * summaries, struct ibp_rt_known); rdmatest_topo.c refines it when the
 * leaves are known, and rdmatest_report.c says it in findings.
 *
 * Seam: a richer blame (more rounds, topology, history) changes
 * ibp_rdmatest_suspect() and the suspect loop in ibp_rt_report(); links
 * with status IBP_LINK_AUTH must stay out of it (see counts()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmatest_blame.h"

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

void ibp_rt_known_add(struct ibp_rt_known *k, const struct ibp_oob_link *x)
{
	for (size_t i = 0; i < k->n; i++) {
		const struct ibp_oob_link *y = &k->v[i];

		if (y->from == x->from && y->to == x->to && y->round == x->round &&
		    y->rail == x->rail)
			return; /* own observations come first and win */
	}
	if (k->n < sizeof(k->v) / sizeof(k->v[0]))
		k->v[k->n++] = *x;
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
