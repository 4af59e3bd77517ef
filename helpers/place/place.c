/* SPDX-License-Identifier: GPL-2.0-or-later */
/* place.c: GPU -> HCA port -> CPUs -> memory node per task; see include/ibprep/place.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/cpulist.h"
#include "ibprep/place.h"
#include "ibprep/text.h"

void ibp_placement_init(struct ibp_placement *pl)
{
	memset(pl, 0, sizeof(*pl));
}

void ibp_placement_release(struct ibp_placement *pl)
{
	for (size_t i = 0; pl->gpus && i < pl->n_gpus; i++) {
		hwloc_bitmap_free(pl->gpus[i].cpus);
		hwloc_bitmap_free(pl->gpus[i].mems);
	}
	for (size_t i = 0; pl->tasks && i < pl->n_tasks; i++) {
		hwloc_bitmap_free(pl->tasks[i].cpus);
		hwloc_bitmap_free(pl->tasks[i].mems);
	}
	free(pl->gpus);
	free(pl->tasks);
	free(pl->ports);
	ibp_placement_init(pl);
}

int ibp_place_nic_name(const struct ibp_topo *topo, const struct ibp_place_nic *nic, char *buf,
		       size_t len)
{
	int n;

	if (!len)
		return -ENOSPC;
	if (nic->hca < 0 || (size_t)nic->hca >= topo->n_hcas) {
		buf[0] = '\0';
		return 0;
	}
	n = snprintf(buf, len, "%s:%u", topo->hcas[nic->hca].name, nic->port);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	return n;
}

/* A reason into a fixed field, cut with "..." when it is longer. */
__attribute__((format(printf, 3, 4))) static void whyf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ibp_vformat_cut(buf, len, fmt, ap);
	va_end(ap);
}

/* The port's link layer, else what its transport implies, else unknown. */
static enum ibp_link_layer port_ll(const struct ibp_topo_hca *h, const struct ibp_topo_port *p)
{
	if (p->link_layer != IBP_LL_UNKNOWN)
		return p->link_layer;
	switch (h->transport) {
	case IBP_TR_IB:
	case IBP_TR_OPA:
		return IBP_LL_IB;
	case IBP_TR_ROCE:
	case IBP_TR_IWARP:
	case IBP_TR_CXI:
	case IBP_TR_USNIC:
	case IBP_TR_SOFT_ROCE:
	case IBP_TR_SOFT_IWARP:
		return IBP_LL_ETH;
	case IBP_TR_ROCE_IWARP:
	case IBP_TR_EFA:
	case IBP_TR_UNKNOWN:
		break;
	}
	return IBP_LL_UNKNOWN;
}

/* The fabric when nothing is healthy: the ports' common link layer, if they have one. */
static enum ibp_link_layer common_ll(const struct ibp_topo *topo)
{
	enum ibp_link_layer ll = IBP_LL_UNKNOWN;
	bool first = true;

	for (size_t i = 0; i < topo->n_hcas; i++)
		for (unsigned p = 0; p < topo->hcas[i].n_ports; p++) {
			enum ibp_link_layer x = port_ll(&topo->hcas[i], &topo->hcas[i].ports[p]);

			if (!first && x != ll)
				return IBP_LL_UNKNOWN;
			ll = x;
			first = false;
		}
	return ll;
}

const char *ibp_fabric_kind_name(enum ibp_fabric_kind k)
{
	static const char *const names[] = {"none", "InfiniBand", "RoCE",
					    "EFA",  "Slingshot",  "other"};

	return (unsigned)k < 6 ? names[k] : "other";
}

/* The kind in a sentence ("the nearest EFA port", "not IB-verbs RDMA ports"). */
static const char *kind_noun(enum ibp_fabric_kind k)
{
	return k == IBP_FABRIC_OTHER  ? "non-IB-verbs RDMA"
	       : k == IBP_FABRIC_NONE ? "RDMA"
				      : ibp_fabric_kind_name(k);
}

/* What a port is used through: verbs by link layer, or its libfabric provider. */
static enum ibp_fabric_kind port_kind(const struct ibp_topo_hca *h, const struct ibp_topo_port *p)
{
	if (h->kind == IBP_NIC_SLINGSHOT)
		return IBP_FABRIC_SLINGSHOT;
	if (h->transport == IBP_TR_EFA)
		return IBP_FABRIC_EFA;
	if (h->kind != IBP_NIC_RDMA)
		return IBP_FABRIC_OTHER;
	switch (port_ll(h, p)) {
	case IBP_LL_IB:
		return IBP_FABRIC_IB;
	case IBP_LL_ETH:
		return IBP_FABRIC_ROCE;
	case IBP_LL_UNKNOWN:
		break;
	}
	return IBP_FABRIC_OTHER;
}

#define N_KINDS 6

/* What the fabric choice knows about the node, built once. */
struct fabric_view {
	const struct ibp_topo *topo;
	struct ibp_place_port *ports; /* pl->ports */
	size_t n;
	bool *cand;     /* healthy, and not left out as narrow */
	bool *narrow;   /* a link of at most a quarter of the GPUs' */
	double gpu_gbs; /* the GPUs' widest link, 0 unknown */
	/* per kind: the GPUs' distances to their nearest candidate port of that kind */
	unsigned hist[N_KINDS][IBP_DIST_UNKNOWN + 1];
	unsigned score[N_KINDS];
	bool present[N_KINDS];
};

static const struct ibp_topo_port *view_port(const struct fabric_view *v, size_t i)
{
	const struct ibp_topo_hca *h = &v->topo->hcas[v->ports[i].hca];

	for (unsigned p = 0; p < h->n_ports; p++)
		if (h->ports[p].num == v->ports[i].port)
			return &h->ports[p];
	return &h->ports[0];
}

/* "8 PIX", "4 NODE + 4 SYS": how far the GPUs are from a kind of port. */
static void hist_text(const unsigned *hist, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int d = IBP_DIST_PIX; d <= IBP_DIST_UNKNOWN; d++)
		if (hist[d] && ibp_appendf(buf, len, &o, "%s%u %s", o ? " + " : "", hist[d],
					   ibp_dist_name((enum ibp_dist)d)))
			return; /* cut */
}

/*
 * Which kind of port serves the GPUs: for each kind with candidate ports,
 * every GPU's distance to its nearest one, summed (the unknown distance
 * counts as worse than SYS); the smallest sum wins, InfiniBand first at
 * equal sums and when there is no GPU.  NCCL picks per GPU the NIC with the
 * widest path, then the nearest (ncclTopoGetLocal): a node whose GPUs each
 * have a NIC of one kind on their switch uses that kind.
 */
static enum ibp_fabric_kind choose_kind(struct fabric_view *v)
{
	const struct ibp_topo *topo = v->topo;
	enum ibp_fabric_kind best = IBP_FABRIC_NONE;

	for (size_t i = 0; i < v->n; i++)
		if (v->cand[i])
			v->present[v->ports[i].kind] = true;
	for (size_t g = 0; g < topo->n_gpus; g++) {
		enum ibp_dist near[N_KINDS];

		for (int k = 0; k < N_KINDS; k++)
			near[k] = IBP_DIST_UNKNOWN;
		for (size_t i = 0; i < v->n; i++) {
			enum ibp_dist d;

			if (!v->cand[i])
				continue;
			d = ibp_topo_distance(topo, &topo->gpus[g].d,
					      &topo->hcas[v->ports[i].hca].d);
			if (d < near[v->ports[i].kind])
				near[v->ports[i].kind] = d;
		}
		for (int k = 1; k < N_KINDS; k++)
			if (v->present[k]) {
				v->hist[k][near[k]]++;
				v->score[k] += (unsigned)near[k];
			}
	}
	for (int k = 1; k < N_KINDS; k++)
		if (v->present[k] && (best == IBP_FABRIC_NONE || v->score[k] < v->score[best]))
			best = (enum ibp_fabric_kind)k;
	return best;
}

/* Narrow links, and whether they are left out: a full-width NIC near a GPU exists. */
static void mark_narrow(struct fabric_view *v)
{
	const struct ibp_topo *topo = v->topo;
	bool local_full = false;

	for (size_t g = 0; g < topo->n_gpus; g++)
		if (topo->gpus[g].d.link_gbs > v->gpu_gbs)
			v->gpu_gbs = topo->gpus[g].d.link_gbs;
	for (size_t i = 0; i < v->n; i++) {
		const struct ibp_topo_dev *hd = &topo->hcas[v->ports[i].hca].d;

		/* x4 beside x16 of one generation, x8 a generation lower: a quarter or less */
		v->narrow[i] =
		    v->gpu_gbs > 0 && hd->link_gbs > 0 && hd->link_gbs * 4 <= v->gpu_gbs * 1.001;
		for (size_t g = 0;
		     !local_full && !v->narrow[i] && view_port(v, i)->healthy && g < topo->n_gpus;
		     g++)
			local_full = ibp_topo_distance(topo, &topo->gpus[g].d, hd) <= IBP_DIST_NODE;
	}
	for (size_t i = 0; i < v->n; i++)
		v->cand[i] = view_port(v, i)->healthy && !(v->narrow[i] && local_full);
}

/* Why port I is or is not in the fabric of kind CHOSEN (auto choice). */
static void port_why(struct fabric_view *v, size_t i, enum ibp_fabric_kind chosen)
{
	struct ibp_place_port *pp = &v->ports[i];
	const struct ibp_topo_port *tp = view_port(v, i);
	const char *kn = kind_noun(pp->kind), *cn = kind_noun(chosen);
	char a[64], b[64], l1[96], l2[96];

	hist_text(v->hist[chosen], a, sizeof(a));
	hist_text(v->hist[pp->kind], b, sizeof(b));
	if (!tp->healthy) {
		whyf(pp->why, sizeof(pp->why), "unhealthy: %s", tp->why);
	} else if (!v->cand[i]) {
		struct ibp_topo_dev gd = {.link_gbs = v->gpu_gbs};

		ibp_topo_link_text(&v->topo->hcas[pp->hca].d, l1, sizeof(l1));
		ibp_topo_link_text(&gd, l2, sizeof(l2));
		whyf(pp->why, sizeof(pp->why),
		     "narrow PCIe link: %s where the GPUs have %s: not a data NIC beside "
		     "full-width NICs near the GPUs",
		     l1, l2);
	} else if (pp->fabric && !v->topo->n_gpus) {
		whyf(pp->why, sizeof(pp->why),
		     "the node's fabric: %s, first present of InfiniBand, RoCE, EFA, Slingshot "
		     "(no GPU to decide by distance)",
		     cn);
	} else if (pp->fabric) {
		whyf(pp->why, sizeof(pp->why), "the GPUs' fabric: %s, nearest to them (%s)", cn, a);
	} else if (!v->topo->n_gpus) {
		whyf(pp->why, sizeof(pp->why),
		     "not the node's fabric: %s comes first (no GPU to decide by distance)", cn);
	} else if (v->score[pp->kind] == v->score[chosen]) {
		whyf(pp->why, sizeof(pp->why),
		     "not the GPUs' fabric: %s is preferred at equal distance (%s)", cn, a);
	} else {
		whyf(pp->why, sizeof(pp->why),
		     "not the GPUs' fabric: their nearest %s ports are %s, their nearest %s "
		     "%s",
		     cn, a, kn, b);
	}
}

/* One note for every fabric port whose state the topology does not give. */
static int unknown_state_note(const struct ibp_placement *pl, const struct ibp_topo *topo,
			      struct ibp_findings *f)
{
	char list[IBP_TEXT_MAX] = "", tail[64] = "";
	size_t n = 0, assumed = 0, o = 0;
	bool cut = false;
	const struct ibp_topo_hca *one = NULL;
	unsigned one_port = 0;

	for (size_t k = 0; k < pl->n_fabric; k++) {
		const struct ibp_topo_hca *h = &topo->hcas[pl->fabric[k].hca];

		for (unsigned p = 0; p < h->n_ports; p++) {
			const struct ibp_topo_port *tp = &h->ports[p];
			int w;

			if (tp->num != pl->fabric[k].port || tp->state != IBP_PORT_STATE_UNKNOWN ||
			    h->kind == IBP_NIC_SLINGSHOT)
				continue;
			one = h;
			one_port = tp->num;
			assumed += tp->assumed;
			/* the finding's field is short: a few names, the count says the rest */
			if (o < 48)
				w = snprintf(list + o, sizeof(list) - o, "%s%s:%u", n ? ", " : "",
					     h->name, tp->num);
			else
				w = snprintf(list + o, sizeof(list) - o, "%s", cut ? "" : ", ...");
			cut = o >= 48;
			if (w > 0 && (size_t)w < sizeof(list) - o)
				o += (size_t)w;
			n++;
		}
	}
	if (!n)
		return 0;
	if (n == 1)
		return ibp_findings_addf(
		    f, "port_state_unknown", IBP_SEV_OK, IBP_CLASS_NODE, one->name, (int)one_port,
		    NULL, "pass --sysfs-root (or run on the node) for the port's real state",
		    "port state unknown in the topology: placed as usable%s",
		    assumed ? " (the file lists no port: port 1 assumed)" : "");
	if (assumed)
		snprintf(tail, sizeof(tail), "; %zu device%s list no port: port 1 assumed", assumed,
			 assumed == 1 ? "" : "s");
	return ibp_findings_addf(f, "port_state_unknown", IBP_SEV_OK, IBP_CLASS_NODE, NULL, 0, NULL,
				 "pass --sysfs-root (or run on the node) for the ports' real state",
				 "port state unknown in the topology for %zu ports (%s), placed as "
				 "usable%s",
				 n, list, tail);
}

/* The kind every port of link layer LL shares, else the first by preference. */
static enum ibp_fabric_kind kind_of_ll(const struct ibp_placement *pl, const struct ibp_topo *topo,
				       enum ibp_link_layer ll)
{
	enum ibp_fabric_kind k = IBP_FABRIC_NONE;

	for (size_t i = 0; i < pl->n_ports; i++) {
		const struct ibp_topo_hca *h = &topo->hcas[pl->ports[i].hca];

		for (unsigned p = 0; p < h->n_ports; p++)
			if (h->ports[p].num == pl->ports[i].port &&
			    port_ll(h, &h->ports[p]) == ll &&
			    (k == IBP_FABRIC_NONE || pl->ports[i].kind < k))
				k = pl->ports[i].kind;
	}
	return k;
}

/*
 * Fabric ports: healthy, of the policy's link layer, or (link layer any) of
 * the kind that serves the GPUs (choose_kind), narrow links left out beside
 * full-width ones (mark_narrow).  Unhealthy ports of the fabric are reported
 * once; every port says why it is in or out (pl->ports).
 */
static int pick_fabric(struct ibp_placement *pl, const struct ibp_topo *topo,
		       enum ibp_link_layer want, struct ibp_findings *f)
{
	struct fabric_view v = {.topo = topo};
	enum ibp_fabric_kind chosen = IBP_FABRIC_NONE;
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < topo->n_hcas; i++)
		n += topo->hcas[i].n_ports;
	pl->ports = calloc(n ? n : 1, sizeof(*pl->ports));
	v.cand = calloc(n ? n : 1, sizeof(*v.cand));
	v.narrow = calloc(n ? n : 1, sizeof(*v.narrow));
	if (!pl->ports || !v.cand || !v.narrow) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < topo->n_hcas; i++)
		for (unsigned p = 0; p < topo->hcas[i].n_ports; p++) {
			struct ibp_place_port *pp = &pl->ports[pl->n_ports++];

			pp->hca = (int)i;
			pp->port = topo->hcas[i].ports[p].num;
			pp->kind = port_kind(&topo->hcas[i], &topo->hcas[i].ports[p]);
		}
	v.ports = pl->ports;
	v.n = pl->n_ports;
	if (want == IBP_LL_UNKNOWN) {
		mark_narrow(&v);
		chosen = choose_kind(&v);
		/* nothing usable: what the ports have in common names what is missing */
		want = chosen == IBP_FABRIC_NONE ? common_ll(topo) : IBP_LL_UNKNOWN;
	} else {
		for (size_t i = 0; i < v.n; i++)
			v.cand[i] = view_port(&v, i)->healthy;
	}
	for (size_t i = 0; i < v.n; i++) {
		struct ibp_place_port *pp = &pl->ports[i];
		const struct ibp_topo_hca *h = &topo->hcas[pp->hca];
		const struct ibp_topo_port *tp = view_port(&v, i);
		bool mine = chosen != IBP_FABRIC_NONE ? pp->kind == chosen : port_ll(h, tp) == want;

		if (mine && !tp->healthy) {
			rc = ibp_findings_addf(
			    f, "hca_port_skipped", IBP_SEV_WARN, IBP_CLASS_NODE, h->name,
			    (int)tp->num, "a healthy port",
			    "repair the port; tasks use the next nearest healthy port",
			    "%s, not used for placement", tp->why);
			if (rc)
				goto out;
		}
		if (mine && v.cand[i]) {
			if (pl->n_fabric >= IBP_PLACE_MAX_NICS) {
				rc = -E2BIG;
				goto out;
			}
			pp->fabric = true;
			pl->fabric[pl->n_fabric].hca = pp->hca;
			pl->fabric[pl->n_fabric].port = tp->num;
			pl->fabric[pl->n_fabric].dist = IBP_DIST_SYS;
			pl->n_fabric++;
		}
		if (chosen != IBP_FABRIC_NONE)
			port_why(&v, i, chosen);
		else if (!tp->healthy)
			whyf(pp->why, sizeof(pp->why), "unhealthy: %s", tp->why);
		else if (pp->fabric)
			whyf(pp->why, sizeof(pp->why), "the policy's link layer: %s",
			     ibp_link_layer_name(want));
		else
			whyf(pp->why, sizeof(pp->why), "link layer %s: the policy asks for %s",
			     ibp_link_layer_name(port_ll(h, tp)), ibp_link_layer_name(want));
	}
	if (chosen != IBP_FABRIC_NONE) {
		static const enum ibp_link_layer ll_of[N_KINDS] = {IBP_LL_UNKNOWN, IBP_LL_IB,
								   IBP_LL_ETH,     IBP_LL_UNKNOWN,
								   IBP_LL_ETH,     IBP_LL_UNKNOWN};

		pl->fabric_kind = chosen;
		pl->fabric_ll = ll_of[chosen];
		if (chosen == IBP_FABRIC_OTHER) { /* iWARP, usNIC ...: what their ports share */
			for (size_t k = 0; k < pl->n_fabric; k++) {
				const struct ibp_topo_hca *h = &topo->hcas[pl->fabric[k].hca];
				enum ibp_link_layer ll = port_ll(h, &h->ports[0]);

				for (unsigned p = 0; p < h->n_ports; p++)
					if (h->ports[p].num == pl->fabric[k].port)
						ll = port_ll(h, &h->ports[p]);
				pl->fabric_ll = k && ll != pl->fabric_ll ? IBP_LL_UNKNOWN : ll;
				if (k && pl->fabric_ll == IBP_LL_UNKNOWN)
					break;
			}
		}
	} else {
		pl->fabric_ll = want;
		pl->fabric_kind = kind_of_ll(pl, topo, want);
	}
	rc = unknown_state_note(pl, topo, f);
out:
	free(v.cand);
	free(v.narrow);
	return rc;
}

/* The nearest fabric port for one GPU; LOAD counts GPUs per fabric port. */
static void pick_gpu_nic(struct ibp_placement *pl, const struct ibp_topo *topo, size_t g,
			 unsigned *load)
{
	const struct ibp_topo_dev *gd = &topo->gpus[g].d;
	int best = -1;
	enum ibp_dist bd = IBP_DIST_SYS;
	bool bpkg = false;
	size_t ties = 0;

	for (size_t k = 0; k < pl->n_fabric; k++) {
		const struct ibp_topo_dev *hd = &topo->hcas[pl->fabric[k].hca].d;
		enum ibp_dist d = ibp_topo_distance(topo, gd, hd);
		bool pkg = ibp_topo_same_package(gd, hd);

		if (best >= 0) {
			if (d > bd || (d == bd && !pkg && bpkg))
				continue;
			if (d == bd && pkg == bpkg) {
				ties++;
				if (load[k] >= load[best])
					continue; /* ties keep name order */
			} else {
				ties = 0;
			}
		}
		best = (int)k;
		bd = d;
		bpkg = pkg;
	}
	pl->gpus[g].nic.hca = -1;
	if (best < 0) {
		whyf(pl->gpus[g].why, sizeof(pl->gpus[g].why), "no healthy fabric port");
		return;
	}
	load[best]++;
	pl->gpus[g].nic = pl->fabric[best];
	pl->gpus[g].nic.dist = bd;
	if (ties)
		whyf(pl->gpus[g].why, sizeof(pl->gpus[g].why),
		     "%s: %zu %s ports at that distance%s, this one with the fewest GPUs",
		     ibp_dist_name(bd), ties + 1, kind_noun(pl->fabric_kind),
		     bpkg && bd >= IBP_DIST_NODE ? " in its package" : "");
	else
		whyf(pl->gpus[g].why, sizeof(pl->gpus[g].why), "%s: the nearest %s port%s",
		     ibp_dist_name(bd), kind_noun(pl->fabric_kind),
		     bpkg && bd >= IBP_DIST_NODE ? " in its package" : "");
}

/* The nearest class any fabric port reaches from GPU G (SYS when none). */
static enum ibp_dist best_dist(const struct ibp_placement *pl, const struct ibp_topo *topo,
			       size_t g)
{
	enum ibp_dist best = IBP_DIST_SYS;

	for (size_t k = 0; k < pl->n_fabric; k++) {
		enum ibp_dist d =
		    ibp_topo_distance(topo, &topo->gpus[g].d, &topo->hcas[pl->fabric[k].hca].d);
		if (d < best)
			best = d;
	}
	return best;
}

/* An unhealthy fabric-layer port strictly nearer than the one chosen. */
static const struct ibp_topo_hca *nearer_unhealthy(const struct ibp_topo *topo,
						   const struct ibp_placement *pl, size_t g,
						   enum ibp_dist chosen, unsigned *port)
{
	for (size_t i = 0; i < topo->n_hcas; i++) {
		const struct ibp_topo_hca *h = &topo->hcas[i];

		for (unsigned p = 0; p < h->n_ports; p++)
			if (!h->ports[p].healthy &&
			    (pl->fabric_kind != IBP_FABRIC_NONE
				 ? port_kind(h, &h->ports[p]) == pl->fabric_kind
				 : port_ll(h, &h->ports[p]) == pl->fabric_ll) &&
			    ibp_topo_distance(topo, &topo->gpus[g].d, &h->d) < chosen) {
				*port = h->ports[p].num;
				return h;
			}
	}
	return NULL;
}

/* PUs of the whole cores inside SET, core by core, in logical order. */
static int cores_in(const struct ibp_topo *topo, hwloc_const_bitmap_t set, hwloc_bitmap_t **out,
		    size_t *n)
{
	int depth = hwloc_get_type_depth(topo->t, HWLOC_OBJ_CORE);
	hwloc_obj_type_t type = HWLOC_OBJ_CORE;
	hwloc_obj_t o = NULL;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (depth < 0)
		type = HWLOC_OBJ_PU;
	while ((o = hwloc_get_next_obj_by_type(topo->t, type, o))) {
		hwloc_bitmap_t b;

		if (!o->cpuset || !hwloc_bitmap_intersects(o->cpuset, set))
			continue;
		if (*n == cap) {
			hwloc_bitmap_t *nv = realloc(*out, (cap ? cap * 2 : 64) * sizeof(*nv));

			if (!nv)
				goto oom;
			*out = nv;
			cap = cap ? cap * 2 : 64;
		}
		b = hwloc_bitmap_alloc();
		if (!b)
			goto oom;
		hwloc_bitmap_and(b, o->cpuset, set);
		(*out)[(*n)++] = b;
	}
	return 0;
oom:
	for (size_t i = 0; i < *n; i++)
		hwloc_bitmap_free((*out)[i]);
	free(*out);
	*out = NULL;
	*n = 0;
	return -ENOMEM;
}

/*
 * Splits AVAIL among M consumers: whole cores when there are enough, else
 * hardware threads, else shared threads (reported).  OUT[j] |= share j.
 */
static int split_cpus(const struct ibp_topo *topo, hwloc_const_bitmap_t avail, size_t m,
		      hwloc_bitmap_t *out, bool *shared)
{
	hwloc_bitmap_t *units;
	size_t n, next = 0;
	int rc;

	if (!m)
		return 0;
	rc = cores_in(topo, avail, &units, &n);
	if (rc)
		return rc;
	if (n < m) {
		/* fewer cores than consumers: split hardware threads instead */
		int pu;

		for (size_t i = 0; i < n; i++)
			hwloc_bitmap_free(units[i]);
		free(units);
		n = 0;
		units = calloc((size_t)hwloc_bitmap_weight(avail) + 1, sizeof(*units));
		if (!units)
			return -ENOMEM;
		hwloc_bitmap_foreach_begin(pu, avail)
		{
			units[n] = hwloc_bitmap_alloc();
			if (units[n])
				hwloc_bitmap_only(units[n], (unsigned)pu);
			n++;
		}
		hwloc_bitmap_foreach_end();
		for (size_t i = 0; i < n; i++)
			if (!units[i])
				rc = -ENOMEM;
	}
	if (!rc && n == 0)
		rc = -ENOENT;
	if (!rc && n < m) {
		*shared = true;
		for (size_t j = 0; j < m; j++)
			hwloc_bitmap_or(out[j], out[j], units[j % n]);
	} else if (!rc) {
		size_t base = n / m, extra = n % m;

		for (size_t j = 0; j < m; j++)
			for (size_t c = 0; c < base + (j < extra); c++)
				hwloc_bitmap_or(out[j], out[j], units[next++]);
	}
	for (size_t i = 0; i < n; i++)
		hwloc_bitmap_free(units[i]);
	free(units);
	return rc;
}

/*
 * Gives each of K consumers its CPUs: those sharing an equal locality split
 * it (minus what earlier groups took), within POOL.  WHAT names them in
 * findings ("task", "worker").
 */
static int assign_cpus(const struct ibp_topo *topo, hwloc_const_bitmap_t pool, hwloc_bitmap_t *loc,
		       size_t k, hwloc_bitmap_t *out, const char *what, struct ibp_findings *f)
{
	hwloc_bitmap_t used = hwloc_bitmap_alloc(), avail = hwloc_bitmap_alloc();
	size_t *members = calloc(k ? k : 1, sizeof(*members));
	bool *done = calloc(k ? k : 1, sizeof(*done));
	hwloc_bitmap_t *outs = calloc(k ? k : 1, sizeof(*outs));
	int rc = 0;

	if (!used || !avail || !members || !done || !outs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < k; i++)
		if (!hwloc_bitmap_intersects(loc[i], pool)) {
			char lbuf[256];
			bool shared = false;

			/* the ideal is impossible for one of them: an even split of what is
			 * allowed, in order, keeps the others from overlapping it */
			ibp_cpulist_format(loc[i], lbuf, sizeof(lbuf));
			rc = ibp_findings_addf(
			    f, "cpus_not_local", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
			    "CPUs local to its GPU or HCA",
			    "allocate CPUs on the GPU's socket (srun --gpu-bind/--cpus-per-gpu) or "
			    "fewer tasks",
			    "%s %zu: its local CPUs %s are outside the allowed set: CPUs split "
			    "evenly "
			    "instead",
			    what, i, lbuf[0] ? lbuf : "(none)");
			if (!rc)
				rc = split_cpus(topo, pool, k, out, &shared);
			if (!rc && shared)
				rc = ibp_findings_addf(
				    f, "cpus_shared", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
				    "at least one hardware thread each",
				    "ask for fewer tasks per node or more CPUs per task",
				    "%zu %ss share %d hardware threads", k, what,
				    hwloc_bitmap_weight(pool));
			goto out;
		}
	for (size_t i = 0; i < k && !rc; i++) {
		size_t m = 0;
		bool shared = false;
		char lbuf[256];

		if (done[i])
			continue;
		for (size_t j = i; j < k; j++)
			if (!done[j] && hwloc_bitmap_isequal(loc[i], loc[j])) {
				members[m] = j;
				outs[m++] = out[j];
				done[j] = true;
			}
		hwloc_bitmap_and(avail, loc[i], pool);
		hwloc_bitmap_andnot(avail, avail, used);
		if (hwloc_bitmap_iszero(avail)) {
			ibp_cpulist_format(loc[i], lbuf, sizeof(lbuf));
			hwloc_bitmap_andnot(avail, pool, used);
			if (hwloc_bitmap_iszero(avail))
				hwloc_bitmap_copy(avail, pool);
			rc = ibp_findings_addf(
			    f, "cpus_not_local", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
			    "CPUs local to its GPU or HCA",
			    "allocate CPUs on the GPU's socket (srun --gpu-bind/--cpus-per-gpu) or "
			    "fewer tasks",
			    "%s %zu: its local CPUs %s are not available, using other allowed CPUs",
			    what, members[0], lbuf[0] ? lbuf : "(none)");
			if (rc)
				break;
		}
		rc = split_cpus(topo, avail, m, outs, &shared);
		if (rc == -ENOENT)
			rc = 0;
		if (rc)
			break;
		if (shared) {
			rc = ibp_findings_addf(f, "cpus_shared", IBP_SEV_WARN, IBP_CLASS_JOB, NULL,
					       0, "at least one hardware thread each",
					       "ask for fewer tasks per node or more CPUs per task",
					       "%zu %ss share %d hardware threads", m, what,
					       hwloc_bitmap_weight(avail));
			if (rc)
				break;
		}
		for (size_t j = 0; j < m; j++)
			hwloc_bitmap_or(used, used, outs[j]);
	}
out:
	hwloc_bitmap_free(used);
	hwloc_bitmap_free(avail);
	free(members);
	free(done);
	free(outs);
	return rc;
}

static int nodeset_of(const struct ibp_topo *topo, hwloc_const_bitmap_t cpus, hwloc_bitmap_t *out)
{
	*out = hwloc_bitmap_alloc();
	if (!*out)
		return -ENOMEM;
	ibp_topo_host_nodes(topo, cpus, *out);
	return 0;
}

/* Task r's share of N items among T tasks: [*first, *first + *count). */
static void block(size_t n, size_t t, size_t r, size_t *first, size_t *count)
{
	if (t <= n) {
		size_t base = n / t, extra = n % t;

		*first = r * base + (r < extra ? r : extra);
		*count = base + (r < extra);
	} else {
		*first = r * n / t;
		*count = n ? 1 : 0;
	}
}

static void add_task_nic(struct ibp_place_task *t, const struct ibp_place_nic *n)
{
	size_t i;

	if (n->hca < 0)
		return;
	for (i = 0; i < t->n_nics; i++)
		if (t->nics[i].hca == n->hca && t->nics[i].port == n->port) {
			if (n->dist < t->nics[i].dist)
				t->nics[i].dist = n->dist;
			return;
		}
	if (t->n_nics < IBP_PLACE_MAX_NICS)
		t->nics[t->n_nics++] = *n;
}

static int nic_cmp(const void *a, const void *b)
{
	const struct ibp_place_nic *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	if (x->hca != y->hca)
		return x->hca < y->hca ? -1 : 1;
	return x->port < y->port ? -1 : (x->port > y->port);
}

/* CPU-only task: the fabric port nearest its CPUs, spread by LOAD. */
static void cpu_task_nic(struct ibp_placement *pl, const struct ibp_topo *topo,
			 struct ibp_place_task *t, hwloc_const_bitmap_t loc, unsigned *load)
{
	int best = -1;
	enum ibp_dist bd = IBP_DIST_SYS;

	for (size_t k = 0; k < pl->n_fabric; k++) {
		const struct ibp_topo_dev *hd = &topo->hcas[pl->fabric[k].hca].d;
		enum ibp_dist d =
		    hwloc_bitmap_intersects(hd->cpuset, loc) ? IBP_DIST_NODE : IBP_DIST_SYS;

		if (best >= 0 && (d > bd || (d == bd && load[k] >= load[best])))
			continue;
		best = (int)k;
		bd = d;
	}
	if (best < 0)
		return;
	load[best]++;
	t->nics[0] = pl->fabric[best];
	t->nics[0].dist = bd;
	t->n_nics = 1;
}

/*
 * A CPU-only task whose port is on another socket: its MPI/UCX traffic crosses
 * the socket link, as a GPU's does for gpu_no_local_hca; said per task.
 */
static int cpu_task_far(const struct ibp_topo *topo, const struct ibp_place_task *t,
			struct ibp_findings *f)
{
	const struct ibp_topo_hca *h;
	hwloc_obj_t pkg = NULL;
	char cpus[256], name[96];

	if (t->n_gpus || !t->n_nics || t->nics[0].hca < 0)
		return 0;
	h = &topo->hcas[t->nics[0].hca];
	if (h->d.locality_unknown || h->d.package < 0)
		return 0; /* where it is is not known: numa_unknown said so */
	while ((pkg = hwloc_get_next_obj_by_type(topo->t, HWLOC_OBJ_PACKAGE, pkg)))
		if ((int)pkg->os_index == h->d.package)
			break;
	if (!pkg || !pkg->cpuset || hwloc_bitmap_intersects(pkg->cpuset, t->cpus))
		return 0;
	ibp_cpulist_format(t->cpus, cpus, sizeof(cpus));
	ibp_place_nic_name(topo, &t->nics[0], name, sizeof(name));
	return ibp_findings_addf(
	    f, "task_no_local_hca", IBP_SEV_WARN, IBP_CLASS_JOB, h->name, (int)t->nics[0].port,
	    "a fabric port on the task's socket",
	    "expect lower bandwidth for this task, its traffic crosses the socket link; to "
	    "avoid it, run the node's tasks on the NIC's socket (srun --ntasks-per-socket)",
	    "task %u (CPUs %s): its nearest fabric port %s is on another socket (package %d)",
	    t->local_rank, cpus, h->kind == IBP_NIC_RDMA ? name : h->name, h->d.package);
}

static int check_step(const struct ibp_topo *topo, const struct ibp_step *step, unsigned *sel,
		      size_t *n_sel)
{
	*n_sel = 0;
	if (!step->ntasks || step->ntasks > IBP_PLACE_MAX_TASKS)
		return -EINVAL;
	if (topo->n_gpus > IBP_PLACE_MAX_GPUS)
		return -E2BIG;
	if (step->all_gpus || !step->gpus) {
		for (size_t i = 0; step->all_gpus && i < topo->n_gpus; i++)
			sel[(*n_sel)++] = (unsigned)i;
		return 0;
	}
	if (step->n_gpus > topo->n_gpus)
		return -EINVAL;
	for (size_t i = 0; i < step->n_gpus; i++) {
		if (step->gpus[i] >= topo->n_gpus)
			return -EINVAL;
		for (size_t j = 0; j < *n_sel; j++)
			if (sel[j] == step->gpus[i])
				return -EINVAL;
		sel[(*n_sel)++] = step->gpus[i];
	}
	/* PCI order, whatever order the caller listed them in */
	for (size_t i = 1; i < *n_sel; i++)
		for (size_t j = i; j > 0 && sel[j - 1] > sel[j]; j--) {
			unsigned x = sel[j];

			sel[j] = sel[j - 1];
			sel[j - 1] = x;
		}
	return 0;
}

const char *ibp_place_fabric_fix(enum ibp_fabric_kind k)
{
	switch (k) {
	case IBP_FABRIC_EFA:
		return "check the EFA devices ('ibprep check', fi_info -p efa); without them "
		       "NCCL's aws-ofi-nccl plugin and MPI fall back to TCP";
	case IBP_FABRIC_SLINGSHOT:
		return "check the Slingshot NICs (cxi_stat, fi_info -p cxi); without them "
		       "libfabric's cxi provider has no device and MPI/NCCL fall back to TCP";
	case IBP_FABRIC_NONE:
	case IBP_FABRIC_IB:
	case IBP_FABRIC_ROCE:
	case IBP_FABRIC_OTHER:
		break;
	}
	return "check the HCAs with 'ibprep check'; NCCL and UCX fall back to TCP sockets";
}

static int gpu_findings(struct ibp_placement *pl, const struct ibp_topo *topo, const unsigned *sel,
			size_t n_sel, struct ibp_findings *f)
{
	int rc = 0;

	if (topo->n_locality_unknown) {
		rc = ibp_findings_addf(
		    f, "numa_unknown", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0,
		    "PCI devices under their NUMA node",
		    "enable NUMA/ACPI locality (SRAT/_PXM) in the BIOS, or export the topology "
		    "with a newer hwloc; GPU-HCA pairs across host bridges are a guess",
		    "%zu GPU/NIC function%s hang%s off the machine, not a NUMA node: their NUMA "
		    "node is unknown",
		    topo->n_locality_unknown, topo->n_locality_unknown == 1 ? "" : "s",
		    topo->n_locality_unknown == 1 ? "s" : "");
		if (rc)
			return rc;
	}
	if (!pl->n_fabric && !topo->n_hcas)
		return ibp_findings_addf(
		    f, "no_fabric_port", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0,
		    "at least one RDMA device",
		    "NCCL and UCX fall back to TCP sockets; check the HCA driver "
		    "with 'ibprep check'",
		    "no RDMA device in the topology");
	if (!pl->n_fabric)
		return ibp_findings_addf(f, "no_fabric_port", IBP_SEV_WARN, IBP_CLASS_NODE, NULL, 0,
					 "at least one healthy RDMA port",
					 ibp_place_fabric_fix(pl->fabric_kind),
					 "no healthy %s port on the node",
					 pl->fabric_kind == IBP_FABRIC_EFA         ? "EFA"
					 : pl->fabric_kind == IBP_FABRIC_SLINGSHOT ? "Slingshot"
					 : pl->fabric_ll == IBP_LL_ETH ? "Ethernet (RoCE)"
					 : pl->fabric_ll == IBP_LL_IB  ? "InfiniBand"
								       : "RDMA");
	for (size_t i = 0; i < n_sel && !rc; i++) {
		const struct ibp_place_gpu *pg = &pl->gpus[sel[i]];
		const struct ibp_topo_hca *bad;
		char name[96];
		unsigned port = 0;

		ibp_place_nic_name(topo, &pg->nic, name, sizeof(name));
		bad = nearer_unhealthy(topo, pl, sel[i], pg->nic.dist, &port);
		if (bad)
			whyf(pl->gpus[sel[i]].why, sizeof(pl->gpus[sel[i]].why),
			     "%s: the nearest healthy port; %s:%u is nearer but unhealthy",
			     ibp_dist_name(pg->nic.dist), bad->name, port);
		if (bad)
			rc = ibp_findings_addf(
			    f, "gpu_hca_fallback", IBP_SEV_WARN, IBP_CLASS_JOB, bad->name,
			    (int)port, "a healthy HCA port near the GPU",
			    "repair the port, or accept the slower path",
			    "gpu %s: nearest port unhealthy, using %s (%s)",
			    topo->gpus[sel[i]].d.pci, name, ibp_dist_name(pg->nic.dist));
		else if (pg->nic.dist == IBP_DIST_SYS)
			rc = ibp_findings_addf(
			    f, "gpu_no_local_hca", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
			    "an HCA in the GPU's NUMA node",
			    "expect lower bandwidth for this GPU; GPUDirect RDMA crosses the CPU "
			    "interconnect",
			    "gpu %s (numa %d): nearest healthy port %s is across NUMA nodes (SYS)",
			    topo->gpus[sel[i]].d.pci, topo->gpus[sel[i]].d.numa, name);
	}
	return rc;
}

static int task_localities(struct ibp_placement *pl, const struct ibp_topo *topo,
			   const unsigned *sel, size_t n_sel, hwloc_const_bitmap_t pool,
			   hwloc_bitmap_t *loc)
{
	hwloc_obj_t nodes[IBP_PLACE_MAX_TASKS];
	size_t n_nodes = 0, t = pl->n_tasks;
	hwloc_obj_t o = NULL;

	while (!n_sel && n_nodes < IBP_PLACE_MAX_TASKS &&
	       (o = hwloc_get_next_obj_by_type(topo->t, HWLOC_OBJ_NUMANODE, o)))
		if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, pool) &&
		    !ibp_topo_gpu_memory_node(o))
			nodes[n_nodes++] = o;
	for (size_t r = 0; r < t; r++) {
		struct ibp_place_task *tk = &pl->tasks[r];
		size_t first, count;

		tk->local_rank = (unsigned)r;
		loc[r] = hwloc_bitmap_alloc();
		if (!loc[r])
			return -ENOMEM;
		if (n_sel) {
			block(n_sel, t, r, &first, &count);
			for (size_t i = first; i < first + count; i++) {
				struct ibp_place_gpu *pg = &pl->gpus[sel[i]];

				tk->gpus[tk->n_gpus++] = sel[i];
				hwloc_bitmap_or(loc[r], loc[r], topo->gpus[sel[i]].d.cpuset);
				add_task_nic(tk, &pg->nic);
				if (pg->task < 0)
					pg->task = (int)r;
			}
			if (tk->n_nics > 1)
				qsort(tk->nics, tk->n_nics, sizeof(tk->nics[0]), nic_cmp);
		} else if (n_nodes) {
			block(n_nodes, t, r, &first, &count);
			for (size_t i = first; i < first + count; i++)
				hwloc_bitmap_or(loc[r], loc[r], nodes[i]->cpuset);
		} else {
			hwloc_bitmap_copy(loc[r], pool);
		}
	}
	return 0;
}

/*
 * CPUs of GPU-bearing tasks: the step's GPUs split their local CPUs among
 * themselves (GPU shares, also the torchrun worker rows); a task gets the
 * shares of its GPUs, and tasks sharing one GPU split its share.
 */
static int gpu_task_cpus(struct ibp_placement *pl, const struct ibp_topo *topo, const unsigned *sel,
			 size_t n_sel, hwloc_const_bitmap_t pool, struct ibp_findings *f)
{
	hwloc_bitmap_t loc[IBP_PLACE_MAX_GPUS], out[IBP_PLACE_MAX_GPUS];
	int rc;

	for (size_t i = 0; i < n_sel; i++) {
		struct ibp_place_gpu *pg = &pl->gpus[sel[i]];

		pg->cpus = hwloc_bitmap_alloc();
		if (!pg->cpus)
			return -ENOMEM;
		loc[i] = topo->gpus[sel[i]].d.cpuset;
		out[i] = pg->cpus;
	}
	rc = assign_cpus(topo, pool, loc, n_sel, out, "gpu", f);
	if (rc)
		return rc;
	for (size_t i = 0; i < n_sel; i++) {
		struct ibp_place_gpu *pg = &pl->gpus[sel[i]];
		hwloc_bitmap_t tout[IBP_PLACE_MAX_TASKS];
		size_t m = 0;
		bool shared = false;

		rc = nodeset_of(topo, pg->cpus, &pg->mems);
		if (rc)
			return rc;
		for (size_t r = 0; r < pl->n_tasks; r++)
			for (size_t g = 0; g < pl->tasks[r].n_gpus; g++)
				if (pl->tasks[r].gpus[g] == sel[i])
					tout[m++] = pl->tasks[r].cpus;
		if (m <= 1) {
			if (m)
				hwloc_bitmap_or(tout[0], tout[0], pg->cpus);
			continue;
		}
		rc = split_cpus(topo, pg->cpus, m, tout, &shared);
		if (rc == -ENOENT)
			rc = 0;
		if (!rc && shared)
			rc = ibp_findings_addf(f, "cpus_shared", IBP_SEV_WARN, IBP_CLASS_JOB, NULL,
					       0, "at least one hardware thread each",
					       "ask for fewer tasks per node or more CPUs per task",
					       "%zu tasks share the %d hardware threads of gpu %s",
					       m, hwloc_bitmap_weight(pg->cpus),
					       topo->gpus[sel[i]].d.pci);
		if (rc)
			return rc;
	}
	return 0;
}

/* CPUS <- CPUS & MASK, or MASK itself (reported) when nothing is left. */
static int narrow_one(hwloc_bitmap_t cpus, hwloc_const_bitmap_t mask, const char *what, size_t idx,
		      struct ibp_findings *f)
{
	char want[256], have[256];

	ibp_cpulist_format(cpus, want, sizeof(want));
	hwloc_bitmap_and(cpus, cpus, mask);
	if (!hwloc_bitmap_iszero(cpus))
		return 0;
	ibp_cpulist_format(mask, have, sizeof(have));
	hwloc_bitmap_copy(cpus, mask);
	return ibp_findings_addf(
	    f, "cpus_outside_task_mask", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
	    "the task's CPU mask to include its local CPUs",
	    "drop --cpu-bind or bind with --cpu-bind=none and let spank-ib bind",
	    "%s %zu may only use CPUs %s, none of its placement %s", what, idx, have, want);
}

/* One task's own CPU mask (its affinity in task_init) narrows it and its worker rows. */
static int narrow_to_mask(struct ibp_placement *pl, const struct ibp_topo *topo, size_t r,
			  hwloc_const_bitmap_t mask, struct ibp_findings *f)
{
	struct ibp_place_task *tk = &pl->tasks[r];
	int rc = narrow_one(tk->cpus, mask, "task", r, f);

	for (size_t i = 0; !rc && tk->n_gpus > 1 && i < tk->n_gpus; i++) {
		struct ibp_place_gpu *pg = &pl->gpus[tk->gpus[i]];

		if (!pg->cpus || pg->task != (int)r)
			continue;
		rc = narrow_one(pg->cpus, mask, "worker", i, f);
		if (!rc && pg->mems)
			ibp_topo_host_nodes(topo, pg->cpus, pg->mems);
	}
	return rc;
}

int ibp_place_compute(struct ibp_placement *pl, const struct ibp_topo *topo,
		      const struct ibp_step *step, struct ibp_findings *f)
{
	unsigned sel[IBP_PLACE_MAX_GPUS], load[IBP_PLACE_MAX_NICS] = {0};
	unsigned cpuload[IBP_PLACE_MAX_NICS] = {0};
	hwloc_bitmap_t pool = NULL, *loc = NULL, *outs = NULL;
	size_t n_sel = 0;
	int rc;

	ibp_placement_init(pl);
	if (!topo || !topo->t || !step)
		return -EINVAL;
	rc = check_step(topo, step, sel, &n_sel);
	if (rc)
		return rc;
	pool = hwloc_bitmap_dup(step->allowed ? step->allowed : ibp_topo_cpuset(topo));
	if (!pool)
		return -ENOMEM;
	hwloc_bitmap_and(pool, pool, ibp_topo_cpuset(topo));
	if (hwloc_bitmap_iszero(pool)) {
		rc = -EINVAL;
		goto out;
	}
	rc = pick_fabric(pl, topo, step->fabric, f);
	if (rc)
		goto out;
	pl->n_gpus = topo->n_gpus;
	pl->gpus = calloc(topo->n_gpus ? topo->n_gpus : 1, sizeof(*pl->gpus));
	pl->tasks = calloc(step->ntasks, sizeof(*pl->tasks));
	loc = calloc(step->ntasks, sizeof(*loc));
	outs = calloc(step->ntasks, sizeof(*outs));
	if (!pl->gpus || !pl->tasks || !loc || !outs) {
		rc = -ENOMEM;
		goto out;
	}
	pl->n_tasks = step->ntasks;
	/* GPUs with a near port choose first, so a fallback never takes a rail's HCA
	 * before its own GPU does */
	for (int d = IBP_DIST_PIX; d <= IBP_DIST_SYS; d++)
		for (size_t g = 0; g < topo->n_gpus; g++)
			if (best_dist(pl, topo, g) == (enum ibp_dist)d) {
				pl->gpus[g].task = -1;
				pick_gpu_nic(pl, topo, g, load);
			}
	for (size_t g = 0; g < topo->n_gpus; g++)
		if (!pl->n_fabric) {
			pl->gpus[g].task = -1;
			pl->gpus[g].nic.hca = -1;
		}
	for (size_t i = 0; i < n_sel; i++)
		pl->gpus[sel[i]].in_step = true;
	rc = gpu_findings(pl, topo, sel, n_sel, f);
	if (!rc && n_sel && step->ntasks > n_sel)
		rc = ibp_findings_addf(
		    f, "more_tasks_than_gpus", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
		    "at most one task per GPU",
		    "use --ntasks-per-node equal to the GPUs per node, or --gpus-per-task",
		    "%u tasks share %zu GPUs", step->ntasks, n_sel);
	else if (!rc && n_sel && n_sel % step->ntasks)
		rc = ibp_findings_addf(
		    f, "gpus_uneven", IBP_SEV_WARN, IBP_CLASS_JOB, NULL, 0,
		    "the same number of GPUs per task",
		    "use a task count that divides the GPUs per node",
		    "%zu GPUs do not divide among %u tasks: the first %zu get one more", n_sel,
		    step->ntasks, n_sel % step->ntasks);
	if (rc)
		goto out;
	rc = task_localities(pl, topo, sel, n_sel, pool, loc);
	if (rc)
		goto out;
	for (size_t r = 0; r < pl->n_tasks; r++) {
		pl->tasks[r].cpus = hwloc_bitmap_alloc();
		if (!pl->tasks[r].cpus) {
			rc = -ENOMEM;
			goto out;
		}
		outs[r] = pl->tasks[r].cpus;
	}
	if (n_sel)
		rc = gpu_task_cpus(pl, topo, sel, n_sel, pool, f);
	else
		rc = assign_cpus(topo, pool, loc, pl->n_tasks, outs, "task", f);
	if (rc)
		goto out;
	if (step->local_rank >= 0 && (size_t)step->local_rank < pl->n_tasks && step->task_allowed) {
		rc = narrow_to_mask(pl, topo, (size_t)step->local_rank, step->task_allowed, f);
		if (rc)
			goto out;
	}
	for (size_t r = 0; r < pl->n_tasks; r++) {
		struct ibp_place_task *tk = &pl->tasks[r];

		rc = nodeset_of(topo, tk->cpus, &tk->mems);
		if (rc)
			goto out;
		if (!tk->n_gpus) {
			cpu_task_nic(pl, topo, tk, tk->cpus, cpuload);
			rc = cpu_task_far(topo, tk, f);
			if (rc)
				goto out;
		}
	}
out:
	for (size_t r = 0; loc && r < step->ntasks; r++)
		hwloc_bitmap_free(loc[r]);
	free(loc);
	free(outs);
	hwloc_bitmap_free(pool);
	if (rc)
		ibp_placement_release(pl);
	return rc;
}

int ibp_place_view_task(const struct ibp_placement *pl, size_t r, struct ibp_place_view *v)
{
	const struct ibp_place_task *t;

	if (r >= pl->n_tasks)
		return -EINVAL;
	t = &pl->tasks[r];
	v->local_rank = t->local_rank;
	v->gpus = t->gpus;
	v->n_gpus = t->n_gpus;
	v->nics = t->nics;
	v->n_nics = t->n_nics;
	v->cpus = t->cpus;
	v->mems = t->mems;
	return 0;
}

int ibp_place_view_worker(const struct ibp_placement *pl, size_t r, size_t w,
			  struct ibp_place_view *v)
{
	const struct ibp_place_task *t;
	const struct ibp_place_gpu *g;

	if (r >= pl->n_tasks)
		return -EINVAL;
	t = &pl->tasks[r];
	if (w >= t->n_gpus)
		return -ENOENT;
	g = &pl->gpus[t->gpus[w]];
	v->local_rank = (unsigned)w;
	v->gpus = &t->gpus[w];
	v->n_gpus = 1;
	v->nics = &g->nic;
	v->n_nics = g->nic.hca >= 0;
	/* one GPU per task (or a GPU shared by tasks): the worker is the task */
	v->cpus = t->n_gpus > 1 && g->cpus ? g->cpus : t->cpus;
	v->mems = t->n_gpus > 1 && g->mems ? g->mems : t->mems;
	return 0;
}

static int uint_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

int ibp_place_view_seen(struct ibp_place_seen *sv, const struct ibp_topo *t,
			const struct ibp_placement *pl, unsigned task, const unsigned *gpus,
			size_t n_gpus)
{
	memset(sv, 0, sizeof(*sv));
	if (n_gpus > IBP_PLACE_MAX_GPUS)
		return -E2BIG;
	for (size_t i = 0; i < n_gpus; i++)
		if (gpus[i] >= t->n_gpus || gpus[i] >= pl->n_gpus)
			return -EINVAL;
	sv->cpus = hwloc_bitmap_alloc();
	sv->mems = hwloc_bitmap_alloc();
	if (!sv->cpus || !sv->mems)
		return -ENOMEM;
	memcpy(sv->gpus, gpus, n_gpus * sizeof(*gpus));
	qsort(sv->gpus, n_gpus, sizeof(*sv->gpus), uint_cmp);
	sv->v.local_rank = task;
	sv->v.gpus = sv->gpus;
	sv->v.n_gpus = n_gpus;
	for (size_t i = 0; i < n_gpus; i++) {
		const struct ibp_place_gpu *pg = &pl->gpus[sv->gpus[i]];
		bool dup = false;

		if (pg->cpus)
			hwloc_bitmap_or(sv->cpus, sv->cpus, pg->cpus);
		else if (t->gpus[sv->gpus[i]].d.cpuset) /* not in the placed step */
			hwloc_bitmap_or(sv->cpus, sv->cpus, t->gpus[sv->gpus[i]].d.cpuset);
		if (pg->mems)
			hwloc_bitmap_or(sv->mems, sv->mems, pg->mems);
		if (pg->nic.hca < 0)
			continue;
		for (size_t k = 0; k < sv->v.n_nics && !dup; k++)
			dup = sv->nics[k].hca == pg->nic.hca && sv->nics[k].port == pg->nic.port;
		if (!dup)
			sv->nics[sv->v.n_nics++] = pg->nic;
	}
	/* nearest first, stable */
	for (size_t i = 1; i < sv->v.n_nics; i++)
		for (size_t k = i; k > 0 && sv->nics[k].dist < sv->nics[k - 1].dist; k--) {
			struct ibp_place_nic tmp = sv->nics[k];

			sv->nics[k] = sv->nics[k - 1];
			sv->nics[k - 1] = tmp;
		}
	if (hwloc_bitmap_iszero(sv->mems) && !hwloc_bitmap_iszero(sv->cpus))
		ibp_topo_host_nodes(t, sv->cpus, sv->mems);
	sv->v.nics = sv->nics;
	sv->v.cpus = sv->cpus;
	sv->v.mems = sv->mems;
	return 0;
}

void ibp_place_seen_release(struct ibp_place_seen *sv)
{
	hwloc_bitmap_free(sv->cpus);
	hwloc_bitmap_free(sv->mems);
	sv->cpus = sv->mems = NULL;
}

/* The collective library of the node's GPUs, for advice. */
static const char *ccl_name(const struct ibp_topo *topo)
{
	bool nv = false, amd = false, other = false;

	for (size_t i = 0; i < topo->n_gpus; i++) {
		nv |= topo->gpus[i].d.vendor == 0x10de;
		amd |= topo->gpus[i].d.vendor == 0x1002;
		other |= topo->gpus[i].d.vendor != 0x10de && topo->gpus[i].d.vendor != 0x1002;
	}
	if (nv && amd)
		return "NCCL/RCCL";
	return nv ? "NCCL" : amd ? "RCCL" : other ? "oneCCL" : "MPI";
}

int ibp_place_fabric_advice(const struct ibp_placement *pl, const struct ibp_topo *topo, char *buf,
			    size_t len)
{
	const char *ccl = ccl_name(topo);
	bool amd = !strcmp(ccl, "RCCL"), efa = pl->fabric_kind == IBP_FABRIC_EFA;
	int n;

	if (!len)
		return -ENOSPC;
	if (!topo->n_hcas)
		n = snprintf(buf, len, "no RDMA device: %s and UCX use TCP sockets", ccl);
	else if (!pl->n_fabric)
		n = snprintf(buf, len, "no healthy %s port: %s", kind_noun(pl->fabric_kind),
			     ibp_place_fabric_fix(pl->fabric_kind));
	else if (pl->fabric_kind == IBP_FABRIC_IB || pl->fabric_kind == IBP_FABRIC_ROCE)
		n = snprintf(buf, len,
			     "%s and UCX use the %s ports through IB verbs: NCCL_IB_HCA and "
			     "UCX_NET_DEVICES name them",
			     strcmp(ccl, "MPI") ? ccl : "NCCL",
			     ibp_fabric_kind_name(pl->fabric_kind));
	else if (pl->fabric_kind == IBP_FABRIC_EFA || pl->fabric_kind == IBP_FABRIC_SLINGSHOT)
		/* both through libfabric: NCCL/RCCL by its OFI net plugin, MPI by its OFI layer */
		n = snprintf(buf, len,
			     "%s is used through libfabric's %s provider (FI_PROVIDER=%s): %s "
			     "through the %s net plugin, MPI through %s, not through IB verbs: "
			     "NCCL_IB_HCA and UCX_NET_DEVICES are left unset",
			     ibp_fabric_kind_name(pl->fabric_kind), efa ? "efa" : "cxi",
			     efa ? "efa" : "cxi", strcmp(ccl, "MPI") ? ccl : "NCCL",
			     amd ? "aws-ofi-rccl" : "aws-ofi-nccl",
			     efa ? "its OFI transport" : "Cray MPICH or its OFI transport");
	else
		n = snprintf(
		    buf, len,
		    "these ports (iWARP, usNIC or undecided) are not for NCCL's or UCX's IB "
		    "transport: NCCL_IB_HCA and UCX_NET_DEVICES are left unset; "
		    "IBPREP_HCAS lists them for launchers that configure libfabric");
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	return n;
}
