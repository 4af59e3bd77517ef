/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fabric.c: per-part failure probabilities from many steps' link results
 * (see fabric.h and docs/fabric.md).
 *
 * Links are kept incrementally: a record becomes (or joins) one link
 * observation, each observation counts on its path (the chain of parts it
 * crossed, shared by every link between the same two node rails), and
 * each part keeps its passed and failed totals.  The fit only touches
 * parts on a path that failed: for a part, the passes through it enter
 * the objective as one number, so the work per solve grows with the
 * failures, not with the traffic.
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

	if (need <= *cap)
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

/* ---- the model ---- */

struct comp {
	uint8_t kind;
	int16_t rail;
	int32_t idx;   /* node or switch index */
	double y;      /* log success probability */
	uint64_t s, f; /* links through it that passed / failed */
	uint32_t aidx; /* index among the active parts, EMPTY when not active */
	char device[IBP_DEV_MAX];
	unsigned port;
};

struct path {
	uint32_t off, len; /* into f->pcomp */
	uint32_t s, f;
	uint32_t a, b; /* node indices of the two ends */
	bool failed_listed;
};

struct obs {
	int64_t t;
	uint32_t job, step;
	uint32_t path;
	uint32_t a, b;
	bool fail;
};

struct ibp_fabric {
	const struct ibp_topology *topo;
	struct ibp_fabric_opts o;

	char (*names)[IBP_NODE_MAX];
	int *leaf; /* per node: switch index or -1 */
	size_t n_nodes, cap_nodes;
	struct map node_map;

	struct comp *comps;
	size_t n_comps, cap_comps;
	struct map comp_map;

	struct path *paths;
	size_t n_paths, cap_paths;
	uint32_t *pcomp;
	size_t n_pcomp, cap_pcomp;
	struct map path_map;

	struct obs *obs;
	size_t n_obs, cap_obs;
	struct map obs_map;

	uint32_t *failed; /* paths with f > 0 */
	size_t n_failed, cap_failed;
	uint32_t *active; /* comps on a failed path */
	size_t n_active, cap_active;

	int max_rail;
	struct ibp_fabric_stats st;

	/* results of the last solve */
	struct ibp_fabric_part *parts;
	size_t n_parts, cap_parts;
	uint32_t *part_comp; /* comp of parts[i] */
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
	*out = f;
	return 0;
}

void ibp_fabric_free(struct ibp_fabric *f)
{
	if (!f)
		return;
	free(f->names);
	free(f->leaf);
	map_free(&f->node_map);
	free(f->comps);
	map_free(&f->comp_map);
	free(f->paths);
	free(f->pcomp);
	map_free(&f->path_map);
	free(f->obs);
	map_free(&f->obs_map);
	free(f->failed);
	free(f->active);
	free(f->parts);
	free(f->part_comp);
	free(f);
}

static uint64_t fnv(const char *s, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int node_intern(struct ibp_fabric *f, const char *name, uint32_t *out)
{
	uint64_t a = fnv(name, 0), b = fnv(name, 0x5bd1e995);
	uint32_t v = map_get(&f->node_map, a, b);
	int rc;

	if (v != EMPTY) {
		*out = v;
		return 0;
	}
	if (f->n_nodes >= IBP_FABRIC_MAX_NODES)
		return -E2BIG;
	rc = GROW(f->names, f->cap_nodes, f->n_nodes + 1);
	if (!rc) {
		size_t cap = f->cap_nodes;
		int *nl = reallocarray(f->leaf, cap, sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		f->leaf = nl;
	}
	if (rc)
		return rc;
	snprintf(f->names[f->n_nodes], IBP_NODE_MAX, "%s", name);
	f->leaf[f->n_nodes] = f->topo ? ibp_topology_leaf_of(f->topo, name) : -1;
	rc = map_put(&f->node_map, a, b, (uint32_t)f->n_nodes);
	if (rc)
		return rc;
	*out = (uint32_t)f->n_nodes++;
	return 0;
}

static int comp_get(struct ibp_fabric *f, enum ibp_part_kind kind, int idx, int rail, uint32_t *out)
{
	uint64_t key = ((uint64_t)kind << 56) | ((uint64_t)(rail + 1) << 32) | (uint32_t)idx;
	uint32_t v = map_get(&f->comp_map, key, 0);
	struct comp *c;
	int rc;

	if (v != EMPTY) {
		*out = v;
		return 0;
	}
	rc = GROW(f->comps, f->cap_comps, f->n_comps + 1);
	if (rc)
		return rc;
	c = &f->comps[f->n_comps];
	memset(c, 0, sizeof(*c));
	c->kind = (uint8_t)kind;
	c->idx = idx;
	c->rail = (int16_t)rail;
	c->aidx = EMPTY;
	rc = map_put(&f->comp_map, key, 0, (uint32_t)f->n_comps);
	if (rc)
		return rc;
	*out = (uint32_t)f->n_comps++;
	f->st.parts = f->n_comps;
	return 0;
}

static int pcomp_add(struct ibp_fabric *f, uint32_t start, uint32_t c)
{
	int rc;

	for (size_t i = start; i < f->n_pcomp; i++)
		if (f->pcomp[i] == c)
			return 0;
	rc = GROW(f->pcomp, f->cap_pcomp, f->n_pcomp + 1);
	if (rc)
		return rc;
	f->pcomp[f->n_pcomp++] = c;
	return 0;
}

/* One end's parts: the node, its cable, its leaf, the uplinks up to COMMON. */
static int side(struct ibp_fabric *f, uint32_t start, uint32_t node, int rail, int common,
		bool cross)
{
	uint32_t c;
	int leaf = f->leaf[node];
	int rc;

	rc = comp_get(f, IBP_PART_NODE, (int)node, -1, &c);
	if (!rc)
		rc = pcomp_add(f, start, c);
	if (!rc)
		rc = comp_get(f, IBP_PART_CABLE, (int)node, rail, &c);
	if (!rc)
		rc = pcomp_add(f, start, c);
	if (rc || leaf < 0)
		return rc;
	rc = comp_get(f, IBP_PART_LEAF, leaf, rail, &c);
	if (!rc)
		rc = pcomp_add(f, start, c);
	for (int s = leaf; !rc && cross && s >= 0 && s != common; s = f->topo->sw[s].parent) {
		rc = comp_get(f, IBP_PART_UPLINKS, s, rail, &c);
		if (!rc)
			rc = pcomp_add(f, start, c);
	}
	return rc;
}

static int path_get(struct ibp_fabric *f, uint32_t a, int ar, uint32_t b, int br, uint32_t *out)
{
	uint64_t ea = ((uint64_t)a << 8) | (uint64_t)ar, eb = ((uint64_t)b << 8) | (uint64_t)br;
	uint64_t key = ea < eb ? (ea << 32) | eb : (eb << 32) | ea;
	uint32_t v = map_get(&f->path_map, key, 0);
	uint32_t start = (uint32_t)f->n_pcomp;
	struct path *p;
	int la = f->leaf[a], lb = f->leaf[b], common = -1;
	bool cross;
	int rc;

	if (v != EMPTY) {
		*out = v;
		return 0;
	}
	if (la >= 0 && lb >= 0)
		common = ibp_topology_common(f->topo, la, lb);
	cross = la >= 0 && lb >= 0 && (la != lb || ar != br);
	rc = side(f, start, a, ar, common, cross);
	if (!rc)
		rc = side(f, start, b, br, common, cross);
	if (!rc)
		rc = GROW(f->paths, f->cap_paths, f->n_paths + 1);
	if (rc)
		return rc;
	p = &f->paths[f->n_paths];
	memset(p, 0, sizeof(*p));
	p->off = start;
	p->len = (uint32_t)(f->n_pcomp - start);
	p->a = a;
	p->b = b;
	rc = map_put(&f->path_map, key, 0, (uint32_t)f->n_paths);
	if (rc)
		return rc;
	*out = (uint32_t)f->n_paths++;
	return 0;
}

static int mark_failed(struct ibp_fabric *f, uint32_t pi)
{
	struct path *p = &f->paths[pi];
	int rc;

	if (p->failed_listed)
		return 0;
	rc = GROW(f->failed, f->cap_failed, f->n_failed + 1);
	if (rc)
		return rc;
	f->failed[f->n_failed++] = pi;
	p->failed_listed = true;
	for (uint32_t i = 0; i < p->len; i++) {
		struct comp *c = &f->comps[f->pcomp[p->off + i]];

		if (c->aidx != EMPTY)
			continue;
		rc = GROW(f->active, f->cap_active, f->n_active + 1);
		if (rc)
			return rc;
		c->aidx = (uint32_t)f->n_active;
		f->active[f->n_active++] = f->pcomp[p->off + i];
	}
	return 0;
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

static void count(struct ibp_fabric *f, struct path *p, bool fail, int delta)
{
	if (fail)
		p->f = (uint32_t)((int64_t)p->f + delta);
	else
		p->s = (uint32_t)((int64_t)p->s + delta);
	for (uint32_t i = 0; i < p->len; i++) {
		struct comp *c = &f->comps[f->pcomp[p->off + i]];

		if (fail)
			c->f = (uint64_t)((int64_t)c->f + delta);
		else
			c->s = (uint64_t)((int64_t)c->s + delta);
	}
}

static void set_device(struct ibp_fabric *f, uint32_t node, int rail, const char *dev,
		       unsigned port)
{
	uint64_t key = ((uint64_t)IBP_PART_CABLE << 56) | ((uint64_t)(rail + 1) << 32) | node;
	uint32_t v = map_get(&f->comp_map, key, 0);

	if (v == EMPTY || !dev[0] || f->comps[v].device[0])
		return;
	snprintf(f->comps[v].device, sizeof(f->comps[v].device), "%s", dev);
	f->comps[v].port = port;
}

int ibp_fabric_add(void *fabric, const struct ibp_link_record *r)
{
	struct ibp_fabric *f = fabric;
	uint32_t a, b, pi, oi;
	int ar = r->a_rail < 0 ? 0 : r->a_rail, br = r->b_rail < 0 ? 0 : r->b_rail;
	bool fail = r->status != IBP_LINK_PASS;
	uint64_t k1, k2;
	int rc;

	f->st.records++;
	if (f->o.since && r->time < f->o.since) {
		f->st.too_old++;
		return 0;
	}
	if (fail && not_fabric(r->status)) {
		f->st.not_fabric++;
		return 0;
	}
	if (ar >= IBP_FABRIC_MAX_RAILS || br >= IBP_FABRIC_MAX_RAILS)
		return -E2BIG;
	rc = node_intern(f, r->a, &a);
	if (!rc)
		rc = node_intern(f, r->b, &b);
	if (rc)
		return rc;
	if (a == b)
		return 0;
	k1 = ((uint64_t)r->job << 32) | r->step;
	k2 = ((uint64_t)a << 40) | ((uint64_t)b << 16) | ((uint64_t)ar << 8) | (uint64_t)br;
	oi = map_get(&f->obs_map, k1, k2);
	if (oi != EMPTY) {
		struct obs *o = &f->obs[oi];

		f->st.joined++;
		if (fail && !o->fail) {
			count(f, &f->paths[o->path], false, -1);
			count(f, &f->paths[o->path], true, 1);
			o->fail = true;
			f->st.failed++;
			rc = mark_failed(f, o->path);
		}
		return rc;
	}
	rc = path_get(f, a, ar, b, br, &pi);
	if (!rc)
		rc = GROW(f->obs, f->cap_obs, f->n_obs + 1);
	if (!rc)
		rc = map_put(&f->obs_map, k1, k2, (uint32_t)f->n_obs);
	if (rc)
		return rc;
	f->obs[f->n_obs++] = (struct obs){
	    .t = r->time, .job = r->job, .step = r->step, .path = pi, .a = a, .b = b, .fail = fail};
	f->st.links++;
	if (f->leaf[a] < 0 || f->leaf[b] < 0)
		f->st.unplaced++;
	if (ar > f->max_rail)
		f->max_rail = ar;
	if (br > f->max_rail)
		f->max_rail = br;
	set_device(f, a, ar, r->a_dev, r->a_port);
	set_device(f, b, br, r->b_dev, r->b_port);
	count(f, &f->paths[pi], fail, 1);
	if (fail) {
		f->st.failed++;
		return mark_failed(f, pi);
	}
	return 0;
}

/* ---- the fit ---- */

/* d/dy of the objective for one part; Q[i] = product of the others on failed path i. */
static double slope(double y, double passes, const uint32_t *fp, size_t n, const double *q,
		    const struct path *paths, const uint32_t *failed)
{
	double g = passes, e = exp(y);

	for (size_t i = 0; i < n; i++) {
		double fq = q[i] * e;
		double fcount = paths[failed[fp[i]]].f;

		if (fq >= 1)
			return -INFINITY;
		g -= fcount * fq / (1 - fq);
	}
	return g;
}

static int fit(struct ibp_fabric *f)
{
	size_t na = f->n_active, nf = f->n_failed;
	uint32_t *start = calloc(na + 1, sizeof(*start));
	uint32_t *fp = NULL; /* per active part: its failed paths (indices into f->failed) */
	double *sumy = NULL; /* per failed path: sum of y */
	double *q = NULL;    /* scratch */
	size_t total = 0, maxdeg = 0;
	int rc = 0;

	sumy = calloc(nf ? nf : 1, sizeof(*sumy));
	if (!start || !sumy) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		const struct path *p = &f->paths[f->failed[i]];

		for (uint32_t k = 0; k < p->len; k++)
			start[f->comps[f->pcomp[p->off + k]].aidx + 1]++;
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
	{
		uint32_t *fill = calloc(na ? na : 1, sizeof(*fill));

		if (!fill) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nf; i++) {
			const struct path *p = &f->paths[f->failed[i]];

			for (uint32_t k = 0; k < p->len; k++) {
				uint32_t a = f->comps[f->pcomp[p->off + k]].aidx;

				fp[start[a] + fill[a]++] = (uint32_t)i;
			}
		}
		free(fill);
	}
	for (unsigned sweep = 0; sweep < MAX_SWEEP; sweep++) {
		double maxd = 0;

		for (size_t i = 0; i < nf; i++) {
			const struct path *p = &f->paths[f->failed[i]];
			double s = 0;

			for (uint32_t k = 0; k < p->len; k++)
				s += f->comps[f->pcomp[p->off + k]].y;
			sumy[i] = s;
		}
		/* Nodes first, then cables, leaves, uplinks: ties go to the bigger part. */
		for (int kind = IBP_PART_NODE; kind <= IBP_PART_UPLINKS; kind++) {
			for (size_t a = 0; a < na; a++) {
				struct comp *c = &f->comps[f->active[a]];
				size_t n = start[a + 1] - start[a];
				const uint32_t *mine = fp + start[a];
				double passes = (double)c->s + f->o.prior, lo = Y_MIN, hi = 0, y;

				if (c->kind != kind)
					continue;
				for (size_t k = 0; k < n; k++)
					q[k] = exp(sumy[mine[k]] - c->y);
				if (slope(0, passes, mine, n, q, f->paths, f->failed) >= 0) {
					y = 0;
				} else if (slope(Y_MIN, passes, mine, n, q, f->paths, f->failed) <=
					   0) {
					y = Y_MIN;
				} else {
					for (int it = 0; it < 50 && hi - lo > 1e-7; it++) {
						double mid = (lo + hi) / 2;

						if (slope(mid, passes, mine, n, q, f->paths,
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

static int cmp_part(const void *a, const void *b)
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
	return strcmp(x->name, y->name);
}

const char *ibp_part_kind_name(enum ibp_part_kind k)
{
	static const char *const n[] = {"node", "cable", "leaf", "uplinks"};

	return (unsigned)k < 4 ? n[k] : "?";
}

const char *ibp_part_verdict_name(enum ibp_part_verdict v)
{
	static const char *const n[] = {"healthy", "suspect", "not enough evidence"};

	return (unsigned)v < 3 ? n[v] : "?";
}

static void part_name(const struct ibp_fabric *f, const struct comp *c, struct ibp_fabric_part *p)
{
	bool rails = f->max_rail > 0;

	p->kind = (enum ibp_part_kind)c->kind;
	p->rail = c->kind == IBP_PART_NODE ? -1 : c->rail;
	switch (c->kind) {
	case IBP_PART_NODE:
		snprintf(p->node, sizeof(p->node), "%s", f->names[c->idx]);
		snprintf(p->name, sizeof(p->name), "%s", p->node);
		break;
	case IBP_PART_CABLE:
		snprintf(p->node, sizeof(p->node), "%s", f->names[c->idx]);
		snprintf(p->name, sizeof(p->name), "%s rail %d", p->node, c->rail);
		snprintf(p->device, sizeof(p->device), "%s", c->device);
		p->port = c->port;
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

int ibp_fabric_solve(struct ibp_fabric *f, const struct ibp_fabric_part **parts, size_t *n)
{
	size_t na = f->n_active;
	double *attr = NULL, iso = 0, min_surprise;
	uint64_t *pairs = NULL;
	size_t n_pairs = 0, cap_pairs = 0;
	int rc;

	*parts = NULL;
	*n = 0;
	rc = fit(f);
	if (rc)
		return rc;
	attr = calloc(na ? na : 1, sizeof(*attr));
	if (!attr)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_failed; i++) {
		const struct path *p = &f->paths[f->failed[i]];
		double total = 0;

		for (uint32_t k = 0; k < p->len; k++)
			total -= f->comps[f->pcomp[p->off + k]].y;
		for (uint32_t k = 0; k < p->len; k++) {
			const struct comp *c = &f->comps[f->pcomp[p->off + k]];
			double w = total > 0 ? -c->y / total : 1.0 / p->len;

			attr[c->aidx] += p->f * w;
			/* far ends: (part, node) pairs, counted distinct below */
			rc = GROW(pairs, cap_pairs, n_pairs + 2);
			if (rc)
				goto out;
			if (c->kind == IBP_PART_NODE || c->kind == IBP_PART_CABLE) {
				uint32_t far = (uint32_t)c->idx == p->a ? p->b : p->a;

				pairs[n_pairs++] = ((uint64_t)c->aidx << 32) | far;
			} else {
				pairs[n_pairs++] = ((uint64_t)c->aidx << 32) | p->a;
				pairs[n_pairs++] = ((uint64_t)c->aidx << 32) | p->b;
			}
		}
	}
	if (n_pairs)
		qsort(pairs, n_pairs, sizeof(*pairs), cmp_u64);
	for (size_t a = 0; a < na; a++)
		if (attr[a] < 1.5)
			iso += attr[a];
	f->st.background = f->n_obs ? iso / (double)f->n_obs : 0;
	if (f->st.background < f->o.noise_floor)
		f->st.background = f->o.noise_floor;
	rc = GROW(f->parts, f->cap_parts, na ? na : 1);
	if (!rc) {
		uint32_t *pc = reallocarray(f->part_comp, f->cap_parts, sizeof(*pc));

		if (!pc)
			rc = -ENOMEM;
		else
			f->part_comp = pc;
	}
	if (rc)
		goto out;
	f->n_parts = 0;
	for (size_t a = 0; a < na; a++) {
		const struct comp *c = &f->comps[f->active[a]];
		struct ibp_fabric_part *p = &f->parts[f->n_parts];
		uint64_t links = c->s + c->f;
		double k = floor(attr[a] + 0.5);

		memset(p, 0, sizeof(*p));
		part_name(f, c, p);
		p->p_fail = 1 - exp(c->y);
		p->attributed = attr[a];
		p->links_pass = c->s;
		p->links_fail = c->f;
		p->surprise = -poisson_tail_log10(k, (double)links * f->st.background);
		if (p->surprise < 0)
			p->surprise = 0;
		p->first = p->last = 0;
		f->part_comp[f->n_parts] = f->active[a];
		f->n_parts++;
	}
	/* distinct far ends per part */
	for (size_t i = 0; i < n_pairs;) {
		size_t j = i;
		unsigned distinct = 0;

		while (j < n_pairs && (pairs[j] >> 32) == (pairs[i] >> 32)) {
			if (j == i || pairs[j] != pairs[j - 1])
				distinct++;
			j++;
		}
		f->parts[pairs[i] >> 32].peers_fail = distinct;
		i = j;
	}
	/* Many parts are judged at once: one in 10^min_surprise may be unlucky, not all of them. */
	min_surprise = f->o.min_surprise + log10(f->n_comps > 1 ? (double)f->n_comps : 1);
	f->st.min_surprise = min_surprise;
	for (size_t i = 0; i < f->n_parts; i++) {
		struct ibp_fabric_part *p = &f->parts[i];
		uint64_t links = p->links_pass + p->links_fail;

		if (p->attributed < 0.5 || p->p_fail < 1e-4) {
			p->verdict = IBP_PART_HEALTHY;
		} else if (links < f->o.min_links) {
			p->verdict = IBP_PART_NOT_ENOUGH;
			ibp_format_cut(p->reason, sizeof(p->reason),
				       "only %llu links crossed it (at least %u needed)",
				       (unsigned long long)links, f->o.min_links);
		} else if (p->attributed < f->o.min_fail) {
			p->verdict = IBP_PART_NOT_ENOUGH;
			ibp_format_cut(p->reason, sizeof(p->reason),
				       "%.1f failed links put on it (at least %.0f needed)",
				       p->attributed, f->o.min_fail);
		} else if (p->peers_fail < f->o.min_peers) {
			p->verdict = IBP_PART_NOT_ENOUGH;
			ibp_format_cut(p->reason, sizeof(p->reason),
				       "its failures reach %u node(s) only: the other end may be "
				       "the bad one",
				       p->peers_fail);
		} else if (p->p_fail < f->o.min_prob) {
			p->verdict = IBP_PART_NOT_ENOUGH;
			ibp_format_cut(p->reason, sizeof(p->reason),
				       "fails %.2f%% of links (below %.2f%%)", 100 * p->p_fail,
				       100 * f->o.min_prob);
		} else if (p->surprise < min_surprise) {
			p->verdict = IBP_PART_NOT_ENOUGH;
			ibp_format_cut(p->reason, sizeof(p->reason),
				       "%.1f failures are within the fabric's background (%.2g per "
				       "link)",
				       p->attributed, f->st.background);
		} else {
			p->verdict = IBP_PART_SUSPECT;
		}
	}
	/* Keep the order of part_comp with the parts. */
	for (size_t i = 0; i < f->n_parts; i++)
		f->parts[i].first = (int64_t)f->part_comp[i];
	if (f->n_parts)
		qsort(f->parts, f->n_parts, sizeof(*f->parts), cmp_part);
	{
		size_t w = 0;

		for (size_t i = 0; i < f->n_parts; i++) {
			f->part_comp[i] = (uint32_t)f->parts[i].first;
			f->parts[i].first = 0;
			if (f->parts[i].verdict != IBP_PART_HEALTHY)
				w = i + 1;
		}
		f->n_parts = w;
	}
	f->st.little_traffic = 0;
	for (size_t i = 0; i < f->n_comps; i++)
		if (f->comps[i].s + f->comps[i].f < f->o.min_links)
			f->st.little_traffic++;
	*parts = f->parts;
	*n = f->n_parts;
out:
	free(attr);
	free(pairs);
	return rc;
}

int ibp_fabric_evidence(struct ibp_fabric *f, size_t n)
{
	uint32_t *rank = NULL;
	uint64_t *jobs = NULL, *days = NULL, *peers = NULL;
	size_t nj = 0, cj = 0, nd = 0, cd = 0, np = 0, cp = 0;
	int rc = 0;

	if (n > f->n_parts)
		n = f->n_parts;
	if (!n)
		return 0;
	rank = malloc(f->n_comps * sizeof(*rank));
	if (!rank)
		return -ENOMEM;
	memset(rank, 0xff, f->n_comps * sizeof(*rank));
	for (size_t i = 0; i < n; i++) {
		rank[f->part_comp[i]] = (uint32_t)i;
		f->parts[i].first = INT64_MAX;
		f->parts[i].last = 0;
	}
	for (size_t i = 0; i < f->n_obs && !rc; i++) {
		const struct obs *o = &f->obs[i];
		const struct path *p = &f->paths[o->path];

		for (uint32_t k = 0; k < p->len && !rc; k++) {
			uint32_t c = f->pcomp[p->off + k];
			uint32_t r = rank[c];
			struct ibp_fabric_part *part;

			if (r == EMPTY)
				continue;
			part = &f->parts[r];
			if (o->t < part->first)
				part->first = o->t;
			if (o->t > part->last)
				part->last = o->t;
			rc = GROW(jobs, cj, nj + 2);
			if (!rc)
				rc = GROW(days, cd, nd + 1);
			if (!rc)
				rc = GROW(peers, cp, np + 2);
			if (rc)
				break;
			/* a failed link's job is counted again with bit 63 set */
			jobs[nj++] = ((uint64_t)r << 32) | o->job;
			if (o->fail)
				jobs[nj++] = (1ull << 63) | ((uint64_t)r << 32) | o->job;
			days[nd++] = ((uint64_t)r << 32) | (uint32_t)(o->t / 86400);
			if (f->comps[c].kind <= IBP_PART_CABLE) {
				uint32_t far = (uint32_t)f->comps[c].idx == o->a ? o->b : o->a;

				peers[np++] = ((uint64_t)r << 32) | far;
			} else {
				peers[np++] = ((uint64_t)r << 32) | o->a;
				peers[np++] = ((uint64_t)r << 32) | o->b;
			}
		}
	}
	if (!rc) {
		if (nj)
			qsort(jobs, nj, sizeof(*jobs), cmp_u64);
		if (nd)
			qsort(days, nd, sizeof(*days), cmp_u64);
		if (np)
			qsort(peers, np, sizeof(*peers), cmp_u64);
		for (size_t i = 0; i < n; i++)
			f->parts[i].jobs = f->parts[i].jobs_fail = f->parts[i].days =
			    f->parts[i].peers = 0;
		for (size_t i = 0; i < nj; i++) {
			struct ibp_fabric_part *p = &f->parts[(jobs[i] >> 32) & 0x7fffffffu];

			if (i && jobs[i] == jobs[i - 1])
				continue;
			if (jobs[i] >> 63)
				p->jobs_fail++;
			else
				p->jobs++;
		}
		for (size_t i = 0; i < nd; i++)
			if (i == 0 || days[i] != days[i - 1])
				f->parts[days[i] >> 32].days++;
		for (size_t i = 0; i < np; i++)
			if (i == 0 || peers[i] != peers[i - 1])
				f->parts[peers[i] >> 32].peers++;
	}
	free(rank);
	free(jobs);
	free(days);
	free(peers);
	return rc;
}

void ibp_fabric_get_stats(const struct ibp_fabric *f, struct ibp_fabric_stats *st)
{
	*st = f->st;
}

struct naive {
	uint32_t fails;
	uint32_t node;
};

static int cmp_naive(const void *a, const void *b, void *arg)
{
	const struct naive *x = a, *y = b;
	const struct ibp_fabric *f = arg;

	if (x->fails != y->fails)
		return x->fails > y->fails ? -1 : 1;
	return strcmp(f->names[x->node], f->names[y->node]);
}

size_t ibp_fabric_naive_rank(const struct ibp_fabric *f, char (*names)[IBP_NODE_MAX], size_t max)
{
	struct naive *v = calloc(f->n_nodes ? f->n_nodes : 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return 0;
	for (size_t i = 0; i < f->n_nodes; i++)
		v[i].node = (uint32_t)i;
	for (size_t i = 0; i < f->n_obs; i++)
		if (f->obs[i].fail) {
			v[f->obs[i].a].fails++;
			v[f->obs[i].b].fails++;
		}
	if (f->n_nodes)
		qsort_r(v, f->n_nodes, sizeof(*v), cmp_naive, (void *)f);
	for (size_t i = 0; i < f->n_nodes && n < max && v[i].fails; i++)
		snprintf(names[n++], IBP_NODE_MAX, "%s", f->names[v[i].node]);
	free(v);
	return n;
}
