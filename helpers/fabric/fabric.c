/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fabric.c: per-part failure probabilities from many steps' link results
 * (see fabric.h and docs/fabric.md).
 *
 * One pass over the records, in memory bounded by the parts (and a few
 * days and jobs per part) and by the paths that failed, never by the
 * records or the links: a record is its writer's half of a link, credited
 * as it is read to every part the link crossed (half a pass, or half a
 * failure with its outcome, day and job); a failure is also kept on its
 * path (the chain of parts shared by every link between the same two
 * node rails), by the end that reported it.  Nothing joins the two ends'
 * records of one link: they are in two nodes' logs, read one after the
 * other.  The solve then weighs each failed path (weigh(): failures both
 * ends reported are failed links; one end's alone are half a failed link
 * each, and only as far as a second reporter backs them), and fits the
 * parts on failed paths only: the passes through a part enter the
 * objective as one number, so the fit costs in proportion to the
 * failures, not the traffic.
 *
 * The objective, in y = log(success probability) of every part, is
 *   sum_parts (passes + prior) * y  +  sum_failed_paths f * log(1 - exp(sum y))
 * which is concave (log(1 - e^u) is concave for u < 0): coordinate ascent
 * reaches its maximum, and the linear prior term is an L1 penalty on y,
 * so few parts end up blamed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/fabric.h"
#include "ibprep/oob.h"
#include "ibprep/text.h"

#define EMPTY     UINT32_MAX
#define Y_MIN     (-13.815510557964274) /* log(1e-6): a part that never passes */
#define MAX_SWEEP 200
#define DAYS_MAX  4096 /* distinct days kept per part: eleven years */
#define JOBS_MAX  1024 /* distinct jobs with a failure kept per part */
/* a side: node, cable, rail, leaf, and the uplinks of every switch up to the root */
#define SIDE_MAX (4 + IBP_TOPOLOGY_MAX_DEPTH)

/* ---- a 128-bit-key open-addressing map to uint32 ---- */

struct map {
	uint64_t *k1, *k2;
	uint32_t *v;
	size_t cap, n;
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));

	h ^= h >> 31;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 29;
	return h;
}

static void map_free(struct map *m)
{
	free(m->k1);
	free(m->k2);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static uint32_t map_get(const struct map *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return EMPTY;
	for (size_t i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->v[i] == EMPTY)
			return EMPTY;
		if (m->k1[i] == a && m->k2[i] == b)
			return m->v[i];
	}
}

static int map_put(struct map *m, uint64_t a, uint64_t b, uint32_t v);

static int map_grow(struct map *m)
{
	struct map n = {0};
	size_t cap = m->cap ? m->cap * 2 : 1024;

	n.k1 = calloc(cap, sizeof(*n.k1));
	n.k2 = calloc(cap, sizeof(*n.k2));
	n.v = malloc(cap * sizeof(*n.v));
	if (!n.k1 || !n.k2 || !n.v) {
		map_free(&n);
		return -ENOMEM;
	}
	memset(n.v, 0xff, cap * sizeof(*n.v));
	n.cap = cap;
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i] != EMPTY)
			map_put(&n, m->k1[i], m->k2[i], m->v[i]);
	map_free(m);
	*m = n;
	return 0;
}

static int map_put(struct map *m, uint64_t a, uint64_t b, uint32_t v)
{
	if ((m->n + 1) * 10 > m->cap * 7) {
		int rc = map_grow(m);

		if (rc)
			return rc;
	}
	for (size_t i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->v[i] == EMPTY) {
			m->k1[i] = a;
			m->k2[i] = b;
			m->v[i] = v;
			m->n++;
			return 0;
		}
		if (m->k1[i] == a && m->k2[i] == b) {
			m->v[i] = v;
			return 0;
		}
	}
}

/* ---- growable arrays ---- */

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *n;

	if (need <= *cap && *p) /* an array is allocated once asked for, even empty */
		return 0;
	while (c < need)
		c *= 2;
	n = reallocarray(*p, c, size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

/* A sorted set of at most MAX numbers (past it, the set stops growing: "at least MAX"). */
struct u32set {
	uint32_t *v;
	uint32_t n, cap;
};

static int set_add(struct u32set *s, uint32_t x, uint32_t max)
{
	uint32_t lo = 0, hi = s->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if ((lo < s->n && s->v[lo] == x) || s->n >= max)
		return 0;
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		uint32_t *v = reallocarray(s->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof(*s->v));
	s->v[lo] = x;
	s->n++;
	return 0;
}

/*
 * Distinct days: a 64-day window from a month before the first day seen
 * as bits (a month's logs, in any order, fit it), the rest in a set.
 */
struct dayset {
	uint32_t base;
	uint64_t bits;
	struct u32set more;
};

static int dayset_add(struct dayset *d, uint32_t day)
{
	if (!d->bits && !d->more.n)
		d->base = day > 31 ? day - 31 : 0;
	if (day - d->base < 64) { /* a day before BASE wraps to a large number: the set */
		d->bits |= 1ull << (day - d->base);
		return 0;
	}
	return set_add(&d->more, day, DAYS_MAX);
}

static unsigned dayset_count(const struct dayset *d)
{
	return (unsigned)__builtin_popcountll(d->bits) + d->more.n;
}

/* ---- the model ---- */

struct part {
	uint8_t kind;
	int16_t rail;
	int32_t idx;   /* node or switch index */
	uint32_t aidx; /* index among the active parts, EMPTY when not active */
	uint32_t day;  /* the day last added to DAYS (most records repeat it) */
	double s;      /* links through it that passed: half a link per record */
	double fr;     /* ... that failed, as recorded (half a link per record) */
	double f;      /* ... that failed, as weighed (weigh()) */
	double y;      /* log success probability */
	int64_t first; /* first and last failure */
	int64_t last;
	struct dayset days, fail_days;
	struct u32set fail_jobs;
	uint32_t kinds[IBP_LINK_STATUS_COUNT]; /* failure records by outcome */
	char device[IBP_DEV_MAX];
	unsigned port;
	bool mixed; /* a rail: its records named more than one device or port */
	/* weigh(): the reporter with the most unconfirmed failures on it, and the next one's */
	uint32_t top_by;
	double top, second;
};

struct node {
	char name[IBP_NODE_MAX];
	int leaf;        /* switch index, -1 unknown */
	uint32_t part;   /* its node part */
	uint32_t *cable; /* its cable part per rail, EMPTY when not seen */
	uint32_t n_cable;
};

/* Parts of one switch per rail: its leaf part (a leaf) and its uplinks. */
struct swparts {
	uint32_t *leaf, *up;
	uint32_t n_leaf, n_up;
};

/*
 * A path that failed: the parts of its links, lo's side only, then the
 * shared ones (a leaf both ends hang off), then hi's only; LO < HI.
 */
struct fpath {
	uint32_t lo, hi;
	uint32_t off;
	uint8_t n_lo, n_shared, n_hi;
	double f_lo, f_hi; /* failure records by each end */
	double f;          /* failed links, as weighed */
	double g_lo, g_hi; /* how much of each end's unconfirmed failures counts */
};

struct ibp_fabric {
	const struct ibp_topology *topo;
	struct ibp_fabric_opts o;

	struct node *nodes;
	size_t n_nodes, cap_nodes;
	struct map node_map;
	uint32_t last_by; /* the last record's writer: one log is one writer's */

	struct swparts *sw; /* per topology switch */
	uint32_t *rails;    /* the rail parts, per rail */
	uint32_t n_rails;

	struct part *parts;
	size_t n_parts, cap_parts;

	struct fpath *fpaths;
	size_t n_fpaths, cap_fpaths;
	uint32_t *pcomp;
	size_t n_pcomp, cap_pcomp;
	struct map fpath_map;

	uint32_t *active; /* parts on a path with weighed failures */
	size_t n_active, cap_active;
	uint32_t *failed; /* fpaths with weighed failures */
	size_t n_failed, cap_failed;

	int max_rail;
	struct ibp_fabric_stats st;

	/* results of the last solve */
	struct ibp_fabric_part *out;
	size_t n_out, cap_out;
	uint32_t *out_part; /* part of out[i] */
};

void ibp_fabric_opts_init(struct ibp_fabric_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->min_links = 8;
	o->min_fail = 2;
	o->min_peers = 2;
	o->min_prob = 0.01;
	o->min_surprise = 2;
	o->prior = 2;
	o->noise_floor = 0.001;
}

int ibp_fabric_new(struct ibp_fabric **out, const struct ibp_topology *topo,
		   const struct ibp_fabric_opts *opts)
{
	struct ibp_fabric *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->topo = topo;
	if (opts)
		f->o = *opts;
	else
		ibp_fabric_opts_init(&f->o);
	f->last_by = EMPTY;
	if (topo && topo->n_sw) {
		f->sw = calloc(topo->n_sw, sizeof(*f->sw));
		if (!f->sw) {
			free(f);
			return -ENOMEM;
		}
	}
	*out = f;
	return 0;
}

void ibp_fabric_free(struct ibp_fabric *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_nodes; i++)
		free(f->nodes[i].cable);
	free(f->nodes);
	map_free(&f->node_map);
	for (size_t i = 0; f->sw && i < f->topo->n_sw; i++) {
		free(f->sw[i].leaf);
		free(f->sw[i].up);
	}
	free(f->sw);
	free(f->rails);
	for (size_t i = 0; i < f->n_parts; i++) {
		free(f->parts[i].days.more.v);
		free(f->parts[i].fail_days.more.v);
		free(f->parts[i].fail_jobs.v);
	}
	free(f->parts);
	free(f->fpaths);
	free(f->pcomp);
	map_free(&f->fpath_map);
	free(f->active);
	free(f->failed);
	free(f->out);
	free(f->out_part);
	free(f);
}

static uint64_t fnv(const char *s, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int part_new(struct ibp_fabric *f, enum ibp_part_kind kind, int idx, int rail, uint32_t *out)
{
	struct part *p;
	int rc = GROW(f->parts, f->cap_parts, f->n_parts + 1);

	if (rc)
		return rc;
	p = &f->parts[f->n_parts];
	memset(p, 0, sizeof(*p));
	p->kind = (uint8_t)kind;
	p->idx = idx;
	p->rail = (int16_t)rail;
	p->aidx = EMPTY;
	p->day = EMPTY;
	p->top_by = EMPTY;
	*out = (uint32_t)f->n_parts++;
	f->st.parts = f->n_parts;
	return 0;
}

static int node_intern(struct ibp_fabric *f, const char *name, uint32_t *out)
{
	uint64_t a = fnv(name, 0), b = fnv(name, 0x5bd1e995);
	uint32_t v = map_get(&f->node_map, a, b);
	struct node *n;
	int rc;

	if (v != EMPTY) {
		*out = v;
		return 0;
	}
	if (f->n_nodes >= IBP_FABRIC_MAX_NODES)
		return -E2BIG;
	rc = GROW(f->nodes, f->cap_nodes, f->n_nodes + 1);
	if (rc)
		return rc;
	n = &f->nodes[f->n_nodes];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->leaf = f->topo ? ibp_topology_leaf_of(f->topo, name) : -1;
	rc = part_new(f, IBP_PART_NODE, (int)f->n_nodes, -1, &n->part);
	if (!rc)
		rc = map_put(&f->node_map, a, b, (uint32_t)f->n_nodes);
	if (rc)
		return rc;
	*out = (uint32_t)f->n_nodes++;
	return 0;
}

/* The part in slot RAIL of *IDS (N slots, grown with EMPTY), made when first needed. */
static int rail_part(struct ibp_fabric *f, uint32_t **ids, uint32_t *n, enum ibp_part_kind kind,
		     int idx, int rail, uint32_t *out)
{
	if ((uint32_t)rail >= *n) {
		uint32_t cap = (uint32_t)rail + 1;
		uint32_t *v = reallocarray(*ids, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (uint32_t i = *n; i < cap; i++)
			v[i] = EMPTY;
		*ids = v;
		*n = cap;
	}
	if ((*ids)[rail] == EMPTY) {
		int rc = part_new(f, kind, idx, rail, &(*ids)[rail]);

		if (rc)
			return rc;
	}
	*out = (*ids)[rail];
	return 0;
}

/*
 * One end's parts: its node, its cable, its rail, its leaf, the uplinks up
 * to COMMON (when CROSS).
 */
static int side(struct ibp_fabric *f, uint32_t node, int rail, int common, bool cross,
		uint32_t *out, size_t *n)
{
	struct node *nd = &f->nodes[node];
	int leaf = nd->leaf, rc;

	*n = 0;
	out[(*n)++] = nd->part;
	rc = rail_part(f, &nd->cable, &nd->n_cable, IBP_PART_CABLE, (int)node, rail, &out[*n]);
	if (rc)
		return rc;
	(*n)++;
	rc = rail_part(f, &f->rails, &f->n_rails, IBP_PART_RAIL, rail, rail, &out[*n]);
	if (rc)
		return rc;
	(*n)++;
	if (leaf < 0)
		return 0;
	rc = rail_part(f, &f->sw[leaf].leaf, &f->sw[leaf].n_leaf, IBP_PART_LEAF, leaf, rail,
		       &out[*n]);
	if (rc)
		return rc;
	(*n)++;
	for (int s = leaf; cross && s >= 0 && s != common && *n < SIDE_MAX;
	     s = f->topo->sw[s].parent) {
		rc =
		    rail_part(f, &f->sw[s].up, &f->sw[s].n_up, IBP_PART_UPLINKS, s, rail, &out[*n]);
		if (rc)
			return rc;
		(*n)++;
	}
	return 0;
}

static bool in(const uint32_t *v, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* The parts of a link between A (rail AR) and B (rail BR), each end's own list. */
static int link_parts(struct ibp_fabric *f, uint32_t a, int ar, uint32_t b, int br, uint32_t *pa,
		      size_t *na, uint32_t *pb, size_t *nb)
{
	int la = f->nodes[a].leaf, lb = f->nodes[b].leaf, common = -1;
	bool cross;
	int rc;

	if (la >= 0 && lb >= 0)
		common = ibp_topology_common(f->topo, la, lb);
	cross = la >= 0 && lb >= 0 && (la != lb || ar != br);
	rc = side(f, a, ar, common, cross, pa, na);
	if (!rc)
		rc = side(f, b, br, common, cross, pb, nb);
	return rc;
}

/* The failed path between LO and HI (LO < HI) with these sides, made when first needed. */
static int fpath_get(struct ibp_fabric *f, uint32_t lo, int lr, uint32_t hi, int hr,
		     const uint32_t *plo, size_t nlo, const uint32_t *phi, size_t nhi,
		     uint32_t *out)
{
	uint64_t k1 = ((uint64_t)lo << 32) | hi, k2 = ((uint64_t)(uint32_t)lr << 32) | (uint32_t)hr;
	uint32_t v = map_get(&f->fpath_map, k1, k2);
	struct fpath *p;
	uint8_t n_lo = 0, n_shared = 0, n_hi = 0;
	size_t start = f->n_pcomp;
	int rc;

	if (v != EMPTY) {
		*out = v;
		return 0;
	}
	rc = GROW(f->pcomp, f->cap_pcomp, f->n_pcomp + nlo + nhi);
	if (!rc)
		rc = GROW(f->fpaths, f->cap_fpaths, f->n_fpaths + 1);
	if (rc)
		return rc;
	for (size_t i = 0; i < nlo; i++)
		if (!in(phi, nhi, plo[i]))
			f->pcomp[f->n_pcomp++] = plo[i], n_lo++;
	for (size_t i = 0; i < nlo; i++)
		if (in(phi, nhi, plo[i]))
			f->pcomp[f->n_pcomp++] = plo[i], n_shared++;
	for (size_t i = 0; i < nhi; i++)
		if (!in(plo, nlo, phi[i]))
			f->pcomp[f->n_pcomp++] = phi[i], n_hi++;
	p = &f->fpaths[f->n_fpaths];
	memset(p, 0, sizeof(*p));
	p->lo = lo;
	p->hi = hi;
	p->off = (uint32_t)start;
	p->n_lo = n_lo;
	p->n_shared = n_shared;
	p->n_hi = n_hi;
	rc = map_put(&f->fpath_map, k1, k2, (uint32_t)f->n_fpaths);
	if (rc)
		return rc;
	*out = (uint32_t)f->n_fpaths++;
	return 0;
}

static uint32_t path_len(const struct fpath *p)
{
	return (uint32_t)p->n_lo + p->n_shared + p->n_hi;
}

/*
 * Outcomes that are about the test's own setup, not the fabric (a bad
 * credential, another build, this end's resources): left out of the
 * evidence.  Every other failure (unreachable, timed out, data path down,
 * data corrupted, bandwidth low, latency high, peer went away) is a link
 * the fabric failed.
 */
static bool not_fabric(enum ibp_link_status st)
{
	return st == IBP_LINK_AUTH || st == IBP_LINK_PROTOCOL || st == IBP_LINK_LOCAL ||
	       st == IBP_LINK_UNTESTED || st == IBP_LINK_VERSION;
}

static void set_device(struct ibp_fabric *f, uint32_t node, int rail, const char *dev,
		       unsigned port)
{
	struct node *n = &f->nodes[node];
	struct part *c;

	if (!dev[0] || (uint32_t)rail >= n->n_cable || n->cable[rail] == EMPTY)
		return;
	c = &f->parts[n->cable[rail]];
	if (c->device[0])
		return;
	snprintf(c->device, sizeof(c->device), "%s", dev);
	c->port = port;
	/*
	 * The rail's device: every node's port on it, when they all have the
	 * same name (compared once per node and rail, as each cable's is set)
	 */
	if ((uint32_t)rail >= f->n_rails || f->rails[rail] == EMPTY)
		return;
	c = &f->parts[f->rails[rail]];
	if (!c->device[0] && !c->mixed) {
		snprintf(c->device, sizeof(c->device), "%s", dev);
		c->port = port;
	} else if (!c->mixed && (strcmp(c->device, dev) != 0 || c->port != port)) {
		c->mixed = true;
	}
}

/* Half a link through part P: a pass, or a failure with its outcome, day and job. */
static int credit(struct part *p, const struct ibp_link_record *r, uint32_t day, bool fail)
{
	int rc = 0;

	if (p->day != day) {
		rc = dayset_add(&p->days, day);
		p->day = day;
	}
	if (!fail) {
		p->s += 0.5;
		return rc;
	}
	p->fr += 0.5;
	p->kinds[r->status]++;
	if (!p->first || r->time < p->first)
		p->first = r->time;
	if (r->time > p->last)
		p->last = r->time;
	if (!rc)
		rc = dayset_add(&p->fail_days, day);
	if (!rc)
		rc = set_add(&p->fail_jobs, r->job, JOBS_MAX);
	return rc;
}

int ibp_fabric_add(void *fabric, const struct ibp_link_record *r)
{
	struct ibp_fabric *f = fabric;
	uint32_t a, b, by, pa[SIDE_MAX], pb[SIDE_MAX], pi;
	size_t na, nb;
	int ar = r->a_rail < 0 ? 0 : r->a_rail, br = r->b_rail < 0 ? 0 : r->b_rail;
	bool fail = r->status != IBP_LINK_PASS;
	uint32_t day = r->time > 0 ? (uint32_t)(r->time / 86400) : 0;
	int rc;

	f->st.records++;
	if (r->event[0]) { /* a port event (the watcher's): no link, nothing to weigh */
		f->st.port_events++;
		return 0;
	}
	if (f->o.since && r->time < f->o.since) {
		f->st.too_old++;
		return 0;
	}
	if (fail && not_fabric(r->status)) {
		f->st.not_fabric++;
		return 0;
	}
	/* A node speaks for its own end of a link only (docs/fabric.md: how a record is weighed). */
	if (strcmp(r->by, r->a) != 0 && strcmp(r->by, r->b) != 0) {
		f->st.not_own++;
		return 0;
	}
	if (ar >= IBP_FABRIC_MAX_RAILS || br >= IBP_FABRIC_MAX_RAILS)
		return -E2BIG;
	/* one log is one writer's: its name is the last record's */
	if (f->last_by != EMPTY && !strcmp(f->nodes[f->last_by].name, r->by))
		by = f->last_by;
	else if ((rc = node_intern(f, r->by, &by)))
		return rc;
	f->last_by = by;
	if (!strcmp(r->by, r->a))
		a = by;
	else if ((rc = node_intern(f, r->a, &a)))
		return rc;
	if (!strcmp(r->by, r->b))
		b = by;
	else if ((rc = node_intern(f, r->b, &b)))
		return rc;
	if (a == b)
		return 0;
	rc = link_parts(f, a, ar, b, br, pa, &na, pb, &nb);
	if (rc)
		return rc;
	f->st.links += 0.5;
	if (f->nodes[a].leaf < 0 || f->nodes[b].leaf < 0)
		f->st.unplaced++;
	if (ar > f->max_rail)
		f->max_rail = ar;
	if (br > f->max_rail)
		f->max_rail = br;
	set_device(f, a, ar, r->a_dev, r->a_port);
	set_device(f, b, br, r->b_dev, r->b_port);
	for (size_t i = 0; i < na && !rc; i++)
		rc = credit(&f->parts[pa[i]], r, day, fail);
	for (size_t i = 0; i < nb && !rc; i++)
		if (!in(pa, na, pb[i]))
			rc = credit(&f->parts[pb[i]], r, day, fail);
	if (rc || !fail)
		return rc;
	f->st.failures++;
	if (a < b)
		rc = fpath_get(f, a, ar, b, br, pa, na, pb, nb, &pi);
	else
		rc = fpath_get(f, b, br, a, ar, pb, nb, pa, na, &pi);
	if (rc)
		return rc;
	if (by == f->fpaths[pi].lo)
		f->fpaths[pi].f_lo += 1;
	else
		f->fpaths[pi].f_hi += 1;
	return 0;
}

/* ---- weighing the failures ---- */

struct vote {
	uint32_t part, by;
	double u;
};

static int cmp_vote(const void *x, const void *y)
{
	const struct vote *a = x, *b = y;

	if (a->part != b->part)
		return a->part < b->part ? -1 : 1;
	return a->by < b->by ? -1 : a->by > b->by;
}

/* How much of BY's unconfirmed failures on part P counts: its peers' word bounds it. */
static double share(const struct part *p, uint32_t by)
{
	return by == p->top_by && p->top > p->second ? p->second / p->top : 1;
}

/*
 * Each failed path's failed links (docs/fabric.md, "How a record is
 * weighed"): the failures both ends reported (the smaller of the two
 * ends' counts) are failed links; the rest, one end's word only, are half
 * a failed link each, and on the far end's parts a reporter's word counts
 * at most as much as the next reporter's: the one with the most
 * unconfirmed failures on a part is cut down to the second (to nothing
 * when it is alone).  A path's unconfirmed failures count as far as every
 * far part lets them.  Then each part's failures, and the active parts.
 */
static int weigh(struct ibp_fabric *f)
{
	struct vote *v = NULL;
	size_t nv = 0, cv = 0;
	int rc = 0;

	f->st.failed = f->st.confirmed = f->st.unconfirmed = f->st.discounted = 0;
	for (size_t i = 0; i < f->n_parts; i++) {
		struct part *p = &f->parts[i];

		p->f = 0;
		p->top = p->second = 0;
		p->top_by = EMPTY;
		p->aidx = EMPTY;
	}
	for (size_t i = 0; i < f->n_fpaths && !rc; i++) {
		const struct fpath *p = &f->fpaths[i];
		double c = fmin(p->f_lo, p->f_hi);
		const uint32_t *pc = f->pcomp + p->off;

		rc = GROW(v, cv, nv + path_len(p));
		for (uint32_t k = 0; !rc && p->f_lo > c && k < p->n_hi; k++)
			v[nv++] = (struct vote){pc[p->n_lo + p->n_shared + k], p->lo, p->f_lo - c};
		for (uint32_t k = 0; !rc && p->f_hi > c && k < p->n_lo; k++)
			v[nv++] = (struct vote){pc[k], p->hi, p->f_hi - c};
	}
	if (rc)
		goto out;
	if (nv)
		qsort(v, nv, sizeof(*v), cmp_vote);
	for (size_t i = 0; i < nv;) {
		struct part *p = &f->parts[v[i].part];
		size_t j = i;
		double u = 0;

		while (j < nv && v[j].part == v[i].part && v[j].by == v[i].by)
			u += v[j++].u;
		if (u > p->top) {
			p->second = p->top;
			p->top = u;
			p->top_by = v[i].by;
		} else if (u > p->second) {
			p->second = u;
		}
		i = j;
	}
	f->n_active = f->n_failed = 0;
	for (size_t i = 0; i < f->n_fpaths && !rc; i++) {
		struct fpath *p = &f->fpaths[i];
		double c = fmin(p->f_lo, p->f_hi);
		const uint32_t *pc = f->pcomp + p->off;
		uint32_t len = path_len(p);

		p->g_lo = p->g_hi = 1;
		for (uint32_t k = 0; k < p->n_hi; k++)
			p->g_lo =
			    fmin(p->g_lo, share(&f->parts[pc[p->n_lo + p->n_shared + k]], p->lo));
		for (uint32_t k = 0; k < p->n_lo; k++)
			p->g_hi = fmin(p->g_hi, share(&f->parts[pc[k]], p->hi));
		p->f = c + 0.5 * ((p->f_lo - c) * p->g_lo + (p->f_hi - c) * p->g_hi);
		f->st.confirmed += c;
		f->st.unconfirmed += 0.5 * (p->f_lo + p->f_hi - 2 * c);
		f->st.discounted +=
		    0.5 * ((p->f_lo - c) * (1 - p->g_lo) + (p->f_hi - c) * (1 - p->g_hi));
		f->st.failed += p->f;
		if (p->f <= 0)
			continue;
		rc = GROW(f->failed, f->cap_failed, f->n_failed + 1);
		if (!rc)
			f->failed[f->n_failed++] = (uint32_t)i;
		for (uint32_t k = 0; k < len && !rc; k++) {
			struct part *c2 = &f->parts[pc[k]];

			c2->f += p->f;
			if (c2->aidx != EMPTY)
				continue;
			rc = GROW(f->active, f->cap_active, f->n_active + 1);
			if (!rc) {
				c2->aidx = (uint32_t)f->n_active;
				f->active[f->n_active++] = pc[k];
			}
		}
	}
out:
	free(v);
	return rc;
}

/* ---- the fit ---- */

/* d/dy of the objective for one part; Q[i] = product of the others on failed path i. */
static double slope(double y, double passes, const uint32_t *fp, size_t n, const double *q,
		    const struct fpath *paths, const uint32_t *failed)
{
	double g = passes, e = exp(y);

	for (size_t i = 0; i < n; i++) {
		double fq = q[i] * e;

		if (fq >= 1)
			return -INFINITY;
		g -= paths[failed[fp[i]]].f * fq / (1 - fq);
	}
	return g;
}

static int fit(struct ibp_fabric *f)
{
	size_t na = f->n_active, nf = f->n_failed;
	uint32_t *start = calloc(na + 1, sizeof(*start));
	uint32_t *fill = NULL;
	uint32_t *fp = NULL; /* per active part: its failed paths (indices into f->failed) */
	double *sumy = NULL; /* per failed path: sum of y */
	double *q = NULL;    /* scratch */
	size_t total = 0, maxdeg = 0;
	int rc = 0;

	sumy = calloc(nf ? nf : 1, sizeof(*sumy));
	fill = calloc(na ? na : 1, sizeof(*fill));
	if (!start || !sumy || !fill) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		const struct fpath *p = &f->fpaths[f->failed[i]];

		for (uint32_t k = 0; k < path_len(p); k++)
			start[f->parts[f->pcomp[p->off + k]].aidx + 1]++;
	}
	for (size_t i = 0; i < na; i++) {
		if (start[i + 1] > maxdeg)
			maxdeg = start[i + 1];
		start[i + 1] += start[i];
	}
	total = start[na];
	fp = malloc((total ? total : 1) * sizeof(*fp));
	q = malloc((maxdeg ? maxdeg : 1) * sizeof(*q));
	if (!fp || !q) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		const struct fpath *p = &f->fpaths[f->failed[i]];

		for (uint32_t k = 0; k < path_len(p); k++) {
			uint32_t a = f->parts[f->pcomp[p->off + k]].aidx;

			fp[start[a] + fill[a]++] = (uint32_t)i;
		}
	}
	for (unsigned sweep = 0; sweep < MAX_SWEEP; sweep++) {
		double maxd = 0;

		for (size_t i = 0; i < nf; i++) {
			const struct fpath *p = &f->fpaths[f->failed[i]];
			double s = 0;

			for (uint32_t k = 0; k < path_len(p); k++)
				s += f->parts[f->pcomp[p->off + k]].y;
			sumy[i] = s;
		}
		/*
		 * Nodes first, then cables, leaves, uplinks: ties go to the bigger
		 * part.  Rails are not fitted (their y stays 0, nothing is put on
		 * them): judge_rail() weighs each on its own links.
		 */
		for (int kind = IBP_PART_NODE; kind <= IBP_PART_UPLINKS; kind++) {

			for (size_t a = 0; a < na; a++) {
				struct part *c = &f->parts[f->active[a]];
				size_t n = start[a + 1] - start[a];
				const uint32_t *mine = fp + start[a];
				double passes = c->s + f->o.prior, lo = Y_MIN, hi = 0, y;

				if (c->kind != kind)
					continue;
				for (size_t k = 0; k < n; k++)
					q[k] = exp(sumy[mine[k]] - c->y);
				if (slope(0, passes, mine, n, q, f->fpaths, f->failed) >= 0) {
					y = 0;
				} else if (slope(Y_MIN, passes, mine, n, q, f->fpaths, f->failed) <=
					   0) {
					y = Y_MIN;
				} else {
					for (int it = 0; it < 50 && hi - lo > 1e-7; it++) {
						double mid = (lo + hi) / 2;

						if (slope(mid, passes, mine, n, q, f->fpaths,
							  f->failed) > 0)
							lo = mid;
						else
							hi = mid;
					}
					y = (lo + hi) / 2;
				}
				if (fabs(y - c->y) > maxd)
					maxd = fabs(y - c->y);
				for (size_t k = 0; k < n; k++)
					sumy[mine[k]] += y - c->y;
				c->y = y;
			}
		}
		f->st.sweeps = sweep + 1;
		if (maxd < 1e-4)
			break;
	}
out:
	free(start);
	free(fill);
	free(fp);
	free(sumy);
	free(q);
	return rc;
}

/* log10 of P(X >= k) for X ~ Poisson(mu), by the series of the regularized gamma. */
static double poisson_tail_log10(double k, double mu)
{
	double term = 1, sum = 1;

	if (k <= 0)
		return 0;
	if (mu <= 0)
		return -300;
	if (mu >= k)
		return 0;
	for (int n = 1; n < 10000; n++) {
		term *= mu / (k + n);
		sum += term;
		if (term < sum * 1e-15)
			break;
	}
	return (k * log(mu) - mu - lgamma(k + 1) + log(sum)) / log(10);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_out(const void *a, const void *b)
{
	const struct ibp_fabric_part *x = a, *y = b;
	int vx = x->verdict == IBP_PART_SUSPECT ? 0 : x->verdict == IBP_PART_NOT_ENOUGH ? 1 : 2;
	int vy = y->verdict == IBP_PART_SUSPECT ? 0 : y->verdict == IBP_PART_NOT_ENOUGH ? 1 : 2;

	if (vx != vy)
		return vx - vy;
	if (x->surprise != y->surprise)
		return x->surprise > y->surprise ? -1 : 1;
	if (x->attributed != y->attributed)
		return x->attributed > y->attributed ? -1 : 1;
	if (x->links_fail != y->links_fail)
		return x->links_fail > y->links_fail ? -1 : 1;
	if (x->links_fail_recorded != y->links_fail_recorded)
		return x->links_fail_recorded > y->links_fail_recorded ? -1 : 1;
	return strcmp(x->name, y->name);
}

const char *ibp_part_kind_name(enum ibp_part_kind k)
{
	static const char *const n[] = {"node", "cable", "leaf", "uplinks", "rail"};

	return (unsigned)k < 5 ? n[k] : "?";
}

const char *ibp_part_verdict_name(enum ibp_part_verdict v)
{
	static const char *const n[] = {"healthy", "suspect", "not enough evidence"};

	return (unsigned)v < 3 ? n[v] : "?";
}

static void part_name(const struct ibp_fabric *f, const struct part *c, struct ibp_fabric_part *p)
{
	bool rails = f->max_rail > 0;

	p->kind = (enum ibp_part_kind)c->kind;
	p->rail = c->kind == IBP_PART_NODE ? -1 : c->rail;
	switch (c->kind) {
	case IBP_PART_NODE:
		snprintf(p->node, sizeof(p->node), "%s", f->nodes[c->idx].name);
		snprintf(p->name, sizeof(p->name), "%s", p->node);
		break;
	case IBP_PART_CABLE:
		snprintf(p->node, sizeof(p->node), "%s", f->nodes[c->idx].name);
		snprintf(p->name, sizeof(p->name), "%s rail %d", p->node, c->rail);
		snprintf(p->device, sizeof(p->device), "%s", c->device);
		p->port = c->port;
		break;
	case IBP_PART_RAIL:
		snprintf(p->name, sizeof(p->name), "rail %d", c->rail);
		if (!c->mixed) {
			snprintf(p->device, sizeof(p->device), "%s", c->device);
			p->port = c->port;
		}
		break;
	case IBP_PART_LEAF:
		snprintf(p->sw, sizeof(p->sw), "%s", f->topo->sw[c->idx].name);
		if (rails)
			snprintf(p->name, sizeof(p->name), "%s rail %d", p->sw, c->rail);
		else
			snprintf(p->name, sizeof(p->name), "%s", p->sw);
		break;
	default:
		snprintf(p->sw, sizeof(p->sw), "%s", f->topo->sw[c->idx].name);
		if (rails)
			snprintf(p->name, sizeof(p->name), "%s uplinks rail %d", p->sw, c->rail);
		else
			snprintf(p->name, sizeof(p->name), "%s uplinks", p->sw);
		break;
	}
}

/*
 * Distinct far ends of each active part's weighed failures (for a node or
 * a cable the other end, for a switch both ends) into PEERS, and distinct
 * reporters whose word they rest on into BYS, indexed by the part's aidx.
 */
static int count_ends(struct ibp_fabric *f, unsigned *peers, unsigned *bys)
{
	uint64_t *pe = NULL, *re = NULL;
	size_t np = 0, cp = 0, nr = 0, cr = 0;
	int rc = 0;

	for (size_t i = 0; i < f->n_failed && !rc; i++) {
		const struct fpath *p = &f->fpaths[f->failed[i]];
		double c = fmin(p->f_lo, p->f_hi);
		bool lo_says = p->f_lo > 0 && (c > 0 || p->g_lo > 0);
		bool hi_says = p->f_hi > 0 && (c > 0 || p->g_hi > 0);

		for (uint32_t k = 0; k < path_len(p) && !rc; k++) {
			const struct part *c2 = &f->parts[f->pcomp[p->off + k]];
			uint64_t key = (uint64_t)c2->aidx << 32;

			rc = GROW(pe, cp, np + 2);
			if (!rc)
				rc = GROW(re, cr, nr + 2);
			if (rc)
				break;
			if (c2->kind == IBP_PART_NODE || c2->kind == IBP_PART_CABLE) {
				pe[np++] = key | ((uint32_t)c2->idx == p->lo ? p->hi : p->lo);
			} else {
				pe[np++] = key | p->lo;
				pe[np++] = key | p->hi;
			}
			if (lo_says)
				re[nr++] = key | p->lo;
			if (hi_says)
				re[nr++] = key | p->hi;
		}
	}
	if (!rc) {
		if (np)
			qsort(pe, np, sizeof(*pe), cmp_u64);
		if (nr)
			qsort(re, nr, sizeof(*re), cmp_u64);
		for (size_t i = 0; i < np; i++)
			if (!i || pe[i] != pe[i - 1])
				peers[pe[i] >> 32]++;
		for (size_t i = 0; i < nr; i++)
			if (!i || re[i] != re[i - 1])
				bys[re[i] >> 32]++;
	}
	free(pe);
	free(re);
	return rc;
}

/*
 * Per rail part (by aidx): the node that is an end of most of its weighed
 * failed links (EMPTY none) into TOP, and how many into TOPF; the same for
 * the leaf with a node at an end (TOPL, TOPLF).
 */
#define LEAF_BIT (1u << 31) /* node indices are below IBP_FABRIC_MAX_NODES */
static int rail_top_ends(struct ibp_fabric *f, uint32_t *top, double *topf, uint32_t *topl,
			 double *toplf)
{
	struct nf {
		uint64_t key; /* aidx << 32 | node, or | LEAF_BIT | leaf */
		double f;
	} *v = NULL;
	size_t nv = 0, cv = 0;
	int rc = 0;

	for (size_t a = 0; a < f->n_active; a++) {
		top[a] = topl[a] = EMPTY;
		topf[a] = toplf[a] = 0;
	}
	for (size_t i = 0; i < f->n_failed && !rc; i++) {
		const struct fpath *p = &f->fpaths[f->failed[i]];
		int llo = f->nodes[p->lo].leaf, lhi = f->nodes[p->hi].leaf;

		for (uint32_t k = 0; k < path_len(p) && !rc; k++) {
			const struct part *c = &f->parts[f->pcomp[p->off + k]];
			uint64_t key = (uint64_t)c->aidx << 32;

			if (c->kind != IBP_PART_RAIL)
				continue;
			rc = GROW(v, cv, nv + 4);
			if (rc)
				break;
			v[nv++] = (struct nf){key | p->lo, p->f};
			v[nv++] = (struct nf){key | p->hi, p->f};
			if (llo >= 0)
				v[nv++] = (struct nf){key | LEAF_BIT | (uint32_t)llo, p->f};
			if (lhi >= 0 && lhi != llo)
				v[nv++] = (struct nf){key | LEAF_BIT | (uint32_t)lhi, p->f};
		}
	}
	if (!rc && nv)
		qsort(v, nv, sizeof(*v), cmp_u64); /* by KEY, the first member */
	for (size_t i = 0; !rc && i < nv;) {
		uint32_t a = (uint32_t)(v[i].key >> 32), id = (uint32_t)v[i].key;
		size_t j = i;
		double sum = 0;

		while (j < nv && v[j].key == v[i].key)
			sum += v[j++].f;
		if (id & LEAF_BIT && sum > toplf[a]) {
			toplf[a] = sum;
			topl[a] = id & ~LEAF_BIT;
		} else if (!(id & LEAF_BIT) && sum > topf[a]) {
			topf[a] = sum;
			top[a] = id;
		}
		i = j;
	}
	free(v);
	return rc;
}

/*
 * A rail is judged by its own links against the other rails' (the fit
 * shares a rail's failures with its many ports by chance, not by fault):
 * its failed share of its links against the others' (or the background,
 * when higher), from many nodes and more than one leaf.
 */
static void judge_rail(const struct ibp_fabric *f, struct ibp_fabric_part *p, const char *leaf,
		       double leaf_fail, double min_surprise)
{
	double links = p->links_pass + p->links_fail, others = p->others_pass + p->others_fail;
	double rate = links > 0 ? p->links_fail / links : 0;
	double base = others > 0 ? p->others_fail / others : 0;

	if (base < f->st.background)
		base = f->st.background;
	p->p_fail = rate > base ? (rate - base) / (1 - base) : 0;
	p->surprise = -poisson_tail_log10(floor(p->links_fail + 0.5), links * base);
	if (p->surprise < 0)
		p->surprise = 0;
	if (p->links_fail < 0.5 || p->p_fail < f->o.min_prob) {
		p->verdict = IBP_PART_HEALTHY; /* the fabric's background, on every rail alike */
	} else if (links < f->o.min_links) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "only %.1f links crossed it (at least %u needed)", links,
			       f->o.min_links);
	} else if (p->links_fail < f->o.min_fail) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "%.1f failed links (at least %.0f needed)", p->links_fail,
			       f->o.min_fail);
	} else if (p->node_fail > 0.5 * p->links_fail) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "%s is an end of %.1f of its %.1f failed links: that node's port on "
			       "rail %d, not the rail's switch",
			       p->node, p->node_fail, p->links_fail, p->rail);
	} else if (leaf && leaf_fail > 0.5 * p->links_fail) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "%.1f of its %.1f failed links have an end under %s: that leaf's "
			       "rail-%d switch or uplinks, not the whole rail",
			       leaf_fail, p->links_fail, leaf, p->rail);
	} else if (p->surprise < min_surprise) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "fails %.1f%% of its links, the other rails %.1f%%: within chance",
			       100 * rate, 100 * base);
	} else {
		p->verdict = IBP_PART_SUSPECT;
	}
}

static void judge(const struct ibp_fabric *f, struct ibp_fabric_part *p, double min_surprise)
{
	double links = p->links_pass + p->links_fail;

	if (p->attributed < 0.5 || p->p_fail < 1e-4) {
		p->verdict = IBP_PART_HEALTHY;
	} else if (links < f->o.min_links) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "only %.1f links crossed it (at least %u needed)", links,
			       f->o.min_links);
	} else if (p->attributed < f->o.min_fail) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "%.1f failed links put on it (at least %.0f needed)", p->attributed,
			       f->o.min_fail);
	} else if (p->peers_fail < f->o.min_peers) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(
		    p->reason, sizeof(p->reason),
		    "its failures reach %u node(s) only: the other end may be the bad one",
		    p->peers_fail);
	} else if (p->p_fail < f->o.min_prob) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason), "fails %.2f%% of links (below %.2f%%)",
			       100 * p->p_fail, 100 * f->o.min_prob);
	} else if (p->surprise < min_surprise) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "%.1f failures are within the fabric's background (%.2g per link)",
			       p->attributed, f->st.background);
	} else {
		p->verdict = IBP_PART_SUSPECT;
	}
}

/* What solve() found, for part_fill(); indexed by the parts' aidx, RAIL_RATE by rail. */
struct solved {
	const double *attr, *topf, *toplf;
	const unsigned *peers, *bys;
	const uint32_t *top, *topl;
	double rail_s, rail_f; /* links through every rail part */
	double min_surprise;
	double *rail_rate; /* a suspect rail's failed share of its links, else 0 */
};

/* P: part C's name, evidence and verdict. */
static void part_fill(const struct ibp_fabric *f, const struct part *c, struct ibp_fabric_part *p,
		      const struct solved *cx)
{
	bool active = c->aidx != EMPTY;

	memset(p, 0, sizeof(*p));
	part_name(f, c, p);
	p->links_pass = c->s;
	p->links_fail = c->f;
	p->links_fail_recorded = c->fr;
	if (c->kind == IBP_PART_RAIL) {
		p->others_pass = cx->rail_s - c->s;
		p->others_fail = cx->rail_f - c->f;
		if (active && cx->top[c->aidx] != EMPTY) {
			snprintf(p->node, sizeof(p->node), "%s", f->nodes[cx->top[c->aidx]].name);
			p->node_fail = cx->topf[c->aidx];
		}
	}
	if (!active) {
		p->verdict = IBP_PART_NOT_ENOUGH;
		ibp_format_cut(p->reason, sizeof(p->reason),
			       "%.1f failed links, each on one end's word with no second "
			       "reporter behind it",
			       c->fr);
		return;
	}
	p->p_fail = 1 - exp(c->y);
	p->attributed = cx->attr[c->aidx];
	p->peers_fail = cx->peers[c->aidx];
	p->reporters = cx->bys[c->aidx];
	if (c->kind == IBP_PART_RAIL) {
		uint32_t l = cx->topl[c->aidx];

		judge_rail(f, p, l != EMPTY ? f->topo->sw[l].name : NULL, cx->toplf[c->aidx],
			   cx->min_surprise);
		return;
	}
	p->surprise =
	    -poisson_tail_log10(floor(p->attributed + 0.5), (c->s + c->f) * f->st.background);
	if (p->surprise < 0)
		p->surprise = 0;
	judge(f, p, cx->min_surprise);
	/*
	 * On a suspect rail every port fails some of its links: a cable, leaf
	 * or uplinks of that rail is a suspect of its own only when its links
	 * fail more than the rail's do (the fit's split between the rail and
	 * its many parts follows chance, not the fault).
	 */
	if (p->verdict == IBP_PART_SUSPECT && c->kind != IBP_PART_NODE &&
	    c->kind != IBP_PART_RAIL && (uint32_t)c->rail < f->n_rails &&
	    cx->rail_rate[c->rail] > 0) {
		double rate = cx->rail_rate[c->rail];
		double s = -poisson_tail_log10(floor(c->f + 0.5),
					       (c->s + c->f) * (f->st.background + rate));

		if (s < cx->min_surprise) {
			p->surprise = s < 0 ? 0 : s; /* given its rail's failures: ranked below */
			p->verdict = IBP_PART_NOT_ENOUGH;
			ibp_format_cut(
			    p->reason, sizeof(p->reason),
			    "its links fail as its rail's do (%.1f of %.1f; rail %d: %.0f%%)", c->f,
			    c->s + c->f, c->rail, 100 * rate);
		}
	}
}

int ibp_fabric_solve(struct ibp_fabric *f, const struct ibp_fabric_part **parts, size_t *n)
{
	size_t na;
	double *attr = NULL, *topf = NULL, *toplf = NULL, *rail_rate = NULL, iso = 0, min_surprise;
	double rail_s = 0, rail_f = 0;
	unsigned *peers = NULL, *bys = NULL;
	uint32_t *top = NULL, *topl = NULL;
	struct solved cx;
	size_t cap;
	int rc;

	*parts = NULL;
	*n = 0;
	rc = weigh(f);
	if (!rc)
		rc = fit(f);
	if (rc)
		return rc;
	na = f->n_active;
	attr = calloc(na ? na : 1, sizeof(*attr));
	peers = calloc(na ? na : 1, sizeof(*peers));
	bys = calloc(na ? na : 1, sizeof(*bys));
	top = calloc(na ? na : 1, sizeof(*top));
	topf = calloc(na ? na : 1, sizeof(*topf));
	topl = calloc(na ? na : 1, sizeof(*topl));
	toplf = calloc(na ? na : 1, sizeof(*toplf));
	rail_rate = calloc(f->n_rails ? f->n_rails : 1, sizeof(*rail_rate));
	if (!attr || !peers || !bys || !top || !topf || !topl || !toplf || !rail_rate) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < f->n_failed; i++) {
		const struct fpath *p = &f->fpaths[f->failed[i]];
		double total = 0;

		for (uint32_t k = 0; k < path_len(p); k++)
			total -= f->parts[f->pcomp[p->off + k]].y;
		for (uint32_t k = 0; k < path_len(p); k++) {
			const struct part *c = &f->parts[f->pcomp[p->off + k]];

			attr[c->aidx] += p->f * (total > 0 ? -c->y / total : 1.0 / path_len(p));
		}
	}
	rc = count_ends(f, peers, bys);
	if (!rc)
		rc = rail_top_ends(f, top, topf, topl, toplf);
	if (rc)
		goto out;
	for (size_t a = 0; a < na; a++)
		if (attr[a] < 1.5)
			iso += attr[a];
	for (uint32_t r = 0; r < f->n_rails; r++) {
		if (f->rails[r] == EMPTY)
			continue;
		rail_s += f->parts[f->rails[r]].s;
		rail_f += f->parts[f->rails[r]].f;
	}
	f->st.background = f->st.links > 0 ? iso / f->st.links : 0;
	if (f->st.background < f->o.noise_floor)
		f->st.background = f->o.noise_floor;
	/* Many parts are judged at once: one in 10^min_surprise may be unlucky, not all of them. */
	min_surprise = f->o.min_surprise + log10(f->n_parts > 1 ? (double)f->n_parts : 1);
	f->st.min_surprise = min_surprise;
	cap = f->cap_out;
	rc = GROW(f->out, cap, f->n_parts ? f->n_parts : 1);
	if (!rc) {
		uint32_t *op = reallocarray(f->out_part, cap, sizeof(*op));

		if (!op)
			rc = -ENOMEM;
		else
			f->out_part = op;
		f->cap_out = cap;
	}
	if (rc)
		goto out;
	cx = (struct solved){.attr = attr,
			     .topf = topf,
			     .toplf = toplf,
			     .peers = peers,
			     .bys = bys,
			     .top = top,
			     .topl = topl,
			     .rail_s = rail_s,
			     .rail_f = rail_f,
			     .min_surprise = min_surprise,
			     .rail_rate = rail_rate};
	f->n_out = 0;
	/* the rails first: a part on a suspect rail is judged against the rail's own rate */
	for (uint32_t r = 0; r < f->n_rails; r++) {
		struct ibp_fabric_part tmp;

		if (f->rails[r] == EMPTY)
			continue;
		part_fill(f, &f->parts[f->rails[r]], &tmp, &cx);
		if (tmp.verdict == IBP_PART_SUSPECT)
			cx.rail_rate[r] = tmp.links_fail / (tmp.links_fail + tmp.links_pass);
	}
	for (size_t i = 0; i < f->n_parts; i++) {
		const struct part *c = &f->parts[i];
		struct ibp_fabric_part *p = &f->out[f->n_out];

		/* active parts, and those whose recorded failures were all left out */
		if (c->aidx == EMPTY && c->fr <= 0)
			continue;
		part_fill(f, c, p, &cx);
		if (p->verdict == IBP_PART_HEALTHY)
			continue;
		f->out_part[f->n_out++] = (uint32_t)i;
	}
	/* Sort the parts and their part indices together. */
	for (size_t i = 0; i < f->n_out; i++)
		f->out[i].first = (int64_t)f->out_part[i];
	if (f->n_out)
		qsort(f->out, f->n_out, sizeof(*f->out), cmp_out);
	for (size_t i = 0; i < f->n_out; i++) {
		f->out_part[i] = (uint32_t)f->out[i].first;
		f->out[i].first = 0;
	}
	f->st.little_traffic = 0;
	for (size_t i = 0; i < f->n_parts; i++)
		if (f->parts[i].s + f->parts[i].f < f->o.min_links)
			f->st.little_traffic++;
	*parts = f->out;
	*n = f->n_out;
out:
	free(attr);
	free(peers);
	free(bys);
	free(top);
	free(topf);
	free(topl);
	free(toplf);
	free(rail_rate);
	return rc;
}

int ibp_fabric_evidence(struct ibp_fabric *f, size_t n)
{
	if (n > f->n_out)
		n = f->n_out;
	for (size_t i = 0; i < n; i++) {
		const struct part *c = &f->parts[f->out_part[i]];
		struct ibp_fabric_part *p = &f->out[i];

		p->jobs_fail = c->fail_jobs.n;
		p->days = dayset_count(&c->days);
		p->days_fail = dayset_count(&c->fail_days);
		p->first = c->first;
		p->last = c->last;
		memcpy(p->kinds, c->kinds, sizeof(p->kinds));
	}
	return 0;
}

void ibp_fabric_get_stats(const struct ibp_fabric *f, struct ibp_fabric_stats *st)
{
	*st = f->st;
}

struct naive {
	double fails;
	uint32_t node;
};

static int cmp_naive(const void *a, const void *b, void *arg)
{
	const struct naive *x = a, *y = b;
	const struct ibp_fabric *f = arg;

	if (x->fails != y->fails)
		return x->fails > y->fails ? -1 : 1;
	return strcmp(f->nodes[x->node].name, f->nodes[y->node].name);
}

size_t ibp_fabric_naive_rank(const struct ibp_fabric *f, char (*names)[IBP_NODE_MAX], size_t max)
{
	struct naive *v = calloc(f->n_nodes ? f->n_nodes : 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return 0;
	for (size_t i = 0; i < f->n_nodes; i++) {
		v[i].node = (uint32_t)i;
		v[i].fails = f->parts[f->nodes[i].part].fr;
	}
	if (f->n_nodes)
		qsort_r(v, f->n_nodes, sizeof(*v), cmp_naive, (void *)f);
	for (size_t i = 0; i < f->n_nodes && n < max && v[i].fails > 0; i++)
		snprintf(names[n++], IBP_NODE_MAX, "%s", f->nodes[v[i].node].name);
	free(v);
	return n;
}
