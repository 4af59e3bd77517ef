/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * topology_conf.c: Slurm's topology.conf and topology.yaml (tree form), see
 * topology_conf.h.  Both parsers produce the same list of switch entries
 * (name, Nodes= and Switches= host lists, link speed, line); one builder
 * then checks and links them, so both formats give the same errors for the
 * same mistakes.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep/hostlist.h"
#include "ibprep/text.h"
#include "ibprep/topology_conf.h"

#define MAX_LINE (64u << 10) /* a logical line, continuations joined */

struct entry {
	char name[IBP_NODE_MAX];
	char *nodes;    /* owned host list, NULL none */
	char *children; /* owned host list, NULL none */
	unsigned speed;
	unsigned line;
};

struct entries {
	struct entry *v;
	size_t n, cap;
};

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		ibp_vformat_cut(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void entries_release(struct entries *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->v[i].nodes);
		free(e->v[i].children);
	}
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

static struct entry *entries_add(struct entries *e)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 16;
		struct entry *nv;

		if (e->n >= IBP_TOPOLOGY_MAX_SWITCHES)
			return NULL;
		nv = reallocarray(e->v, cap, sizeof(*nv));
		if (!nv)
			return NULL;
		e->v = nv;
		e->cap = cap;
	}
	memset(&e->v[e->n], 0, sizeof(e->v[e->n]));
	return &e->v[e->n++];
}

void ibp_topology_init(struct ibp_topology *t)
{
	memset(t, 0, sizeof(*t));
}

void ibp_topology_release(struct ibp_topology *t)
{
	free(t->sw);
	free(t->nodes);
	free(t->node_leaf);
	free(t->order);
	free(t->sw_order);
	ibp_topology_init(t);
}

static bool name_ok(const char *s)
{
	if (!*s || strlen(s) >= IBP_NODE_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
			return false;
	return true;
}

static int parse_speed(const char *v, unsigned *out)
{
	unsigned long x = 0;

	if (!*v || strlen(v) > 9)
		return -EINVAL;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		x = x * 10 + (unsigned long)(*p - '0');
	}
	*out = (unsigned)x;
	return 0;
}

/* ---- the builder shared by both formats ---- */

static int cmp_switch_idx(const void *a, const void *b, void *arg)
{
	const struct ibp_topology *t = arg;

	return strcmp(t->sw[*(const size_t *)a].name, t->sw[*(const size_t *)b].name);
}

static int cmp_node_idx(const void *a, const void *b, void *arg)
{
	const struct ibp_topology *t = arg;

	return strcmp(t->nodes[*(const size_t *)a], t->nodes[*(const size_t *)b]);
}

static int add_node(struct ibp_topology *t, const char *name, int leaf)
{
	if (t->n_nodes == t->cap_nodes) {
		size_t cap = t->cap_nodes ? t->cap_nodes * 2 : 64;
		char(*nn)[IBP_NODE_MAX];
		int *nl;

		if (t->n_nodes >= IBP_TOPOLOGY_MAX_NODES)
			return -E2BIG;
		nn = reallocarray(t->nodes, cap, sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		nl = reallocarray(t->node_leaf, cap, sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		t->node_leaf = nl;
		t->cap_nodes = cap;
	}
	snprintf(t->nodes[t->n_nodes], IBP_NODE_MAX, "%s", name);
	t->node_leaf[t->n_nodes++] = leaf;
	return 0;
}

static int build(struct ibp_topology *t, struct entries *e, const char *src, char *err,
		 size_t errlen)
{
	size_t *sidx = NULL;
	int rc = 0;

	if (e->n == 0)
		return fail(err, errlen, "%s: no switches defined", src);
	t->sw = calloc(e->n, sizeof(*t->sw));
	sidx = calloc(e->n, sizeof(*sidx));
	if (!t->sw || !sidx) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < e->n; i++) {
		struct ibp_switch *s = &t->sw[i];

		snprintf(s->name, sizeof(s->name), "%s", e->v[i].name);
		s->parent = -1;
		s->link_speed = e->v[i].speed;
		s->line = e->v[i].line;
		sidx[i] = i;
	}
	t->n_sw = t->cap_sw = e->n;
	qsort_r(sidx, t->n_sw, sizeof(*sidx), cmp_switch_idx, t);
	for (size_t i = 1; i < t->n_sw; i++)
		if (!strcmp(t->sw[sidx[i]].name, t->sw[sidx[i - 1]].name)) {
			size_t a = sidx[i] < sidx[i - 1] ? sidx[i] : sidx[i - 1];
			size_t b = sidx[i] < sidx[i - 1] ? sidx[i - 1] : sidx[i];

			rc = fail(err, errlen,
				  "%s:%u: switch '%s' is defined twice (first on line %u)", src,
				  t->sw[b].line, t->sw[b].name, t->sw[a].line);
			goto out;
		}
	t->sw_order = sidx;
	sidx = NULL;
	for (size_t i = 0; i < e->n; i++) {
		struct ibp_hostlist hl = {0};
		char herr[192];

		if (!e->v[i].children)
			continue;
		rc = ibp_hostlist_expand(e->v[i].children, IBP_TOPOLOGY_MAX_SWITCHES, &hl, herr,
					 sizeof(herr));
		if (rc) {
			rc = fail(err, errlen, "%s:%u: switch '%s': bad Switches=: %s", src,
				  e->v[i].line, e->v[i].name, herr);
			goto out;
		}
		for (size_t k = 0; k < hl.n; k++) {
			int c = ibp_topology_switch(t, hl.names[k]);

			if (c < 0) {
				rc = fail(
				    err, errlen,
				    "%s:%u: switch '%s' lists switch '%s', which is not defined",
				    src, e->v[i].line, e->v[i].name, hl.names[k]);
			} else if ((size_t)c == i) {
				rc = fail(err, errlen, "%s:%u: switch '%s' lists itself", src,
					  e->v[i].line, e->v[i].name);
			} else if (t->sw[c].parent >= 0) {
				rc = fail(
				    err, errlen,
				    "%s:%u: switch '%s' has two parents: '%s' (line %u) and '%s'",
				    src, e->v[i].line, hl.names[k], t->sw[t->sw[c].parent].name,
				    t->sw[t->sw[c].parent].line, e->v[i].name);
			} else {
				t->sw[c].parent = (int)i;
				t->sw[i].n_children++;
			}
			if (rc)
				break;
		}
		ibp_hostlist_release(&hl);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < t->n_sw; i++) {
		unsigned depth = 0;

		for (int p = t->sw[i].parent; p >= 0; p = t->sw[p].parent)
			if (++depth > IBP_TOPOLOGY_MAX_DEPTH) {
				rc = fail(
				    err, errlen,
				    "%s:%u: switch '%s' is in a cycle or more than %d levels deep",
				    src, t->sw[i].line, t->sw[i].name, IBP_TOPOLOGY_MAX_DEPTH);
				goto out;
			}
		t->sw[i].depth = depth;
	}
	for (size_t i = 0; i < e->n; i++) {
		struct ibp_hostlist hl = {0};
		char herr[192];

		if (!e->v[i].nodes)
			continue;
		rc = ibp_hostlist_expand(e->v[i].nodes, IBP_TOPOLOGY_MAX_NODES, &hl, herr,
					 sizeof(herr));
		if (rc) {
			rc = fail(err, errlen, "%s:%u: switch '%s': bad Nodes=: %s", src,
				  e->v[i].line, e->v[i].name, herr);
			goto out;
		}
		for (size_t k = 0; !rc && k < hl.n; k++)
			rc = add_node(t, hl.names[k], (int)i);
		t->sw[i].n_nodes += hl.n;
		ibp_hostlist_release(&hl);
		if (rc == -E2BIG)
			fail(err, errlen, "%s:%u: more than %d nodes", src, e->v[i].line,
			     IBP_TOPOLOGY_MAX_NODES);
		if (rc)
			goto out;
	}
	t->order = calloc(t->n_nodes ? t->n_nodes : 1, sizeof(*t->order));
	if (!t->order) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t->n_nodes; i++)
		t->order[i] = i;
	qsort_r(t->order, t->n_nodes, sizeof(*t->order), cmp_node_idx, t);
	for (size_t i = 1; i < t->n_nodes; i++) {
		size_t a = t->order[i - 1], b = t->order[i];

		if (!strcmp(t->nodes[a], t->nodes[b])) {
			const struct ibp_switch *sa = &t->sw[t->node_leaf[a]];
			const struct ibp_switch *sb = &t->sw[t->node_leaf[b]];

			if (sa == sb)
				rc =
				    fail(err, errlen, "%s:%u: node '%s' is listed twice under '%s'",
					 src, sa->line, t->nodes[a], sa->name);
			else
				rc = fail(err, errlen,
					  "%s:%u: node '%s' is under two switches: '%s' (line %u) "
					  "and '%s'",
					  src, sb->line > sa->line ? sb->line : sa->line,
					  t->nodes[a], sa->line < sb->line ? sa->name : sb->name,
					  sa->line < sb->line ? sa->line : sb->line,
					  sa->line < sb->line ? sb->name : sa->name);
			goto out;
		}
	}
out:
	free(sidx);
	if (rc)
		ibp_topology_release(t);
	return rc;
}

int ibp_topology_switch(const struct ibp_topology *t, const char *name)
{
	size_t lo = 0, hi = t->n_sw;

	if (!t->sw || !t->sw_order)
		return -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->sw[t->sw_order[mid]].name, name);

		if (!c)
			return (int)t->sw_order[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

long ibp_topology_node(const struct ibp_topology *t, const char *name)
{
	size_t lo = 0, hi = t->n_nodes;

	if (!t->order || !t->nodes)
		return -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->nodes[t->order[mid]], name);

		if (!c)
			return (long)t->order[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int ibp_topology_leaf_of(const struct ibp_topology *t, const char *name)
{
	long i = ibp_topology_node(t, name);

	return i < 0 ? -1 : t->node_leaf[i];
}

int ibp_topology_common(const struct ibp_topology *t, int a, int b)
{
	if (a < 0 || b < 0 || (size_t)a >= t->n_sw || (size_t)b >= t->n_sw)
		return -1;
	while (a >= 0 && b >= 0 && a != b) {
		if (t->sw[a].depth >= t->sw[b].depth)
			a = t->sw[a].parent;
		else
			b = t->sw[b].parent;
	}
	return a == b ? a : -1;
}

/* ---- topology.conf ---- */

static char *dup_value(const char *v)
{
	return strdup(v);
}

/* One logical line, NUL-terminated, comments removed; tokens split in place. */
static int conf_line(struct entries *e, char *s, unsigned line, const char *src, char *err,
		     size_t errlen)
{
	struct entry *x = NULL;
	char *save = NULL;
	bool have_nodes = false, have_children = false, have_speed = false;
	unsigned speed = 0;
	char *nodes = NULL, *children = NULL;
	char name[IBP_NODE_MAX] = "";
	int rc = 0;

	for (char *tok = strtok_r(s, " \t\r\f\v", &save); tok;
	     tok = strtok_r(NULL, " \t\r\f\v", &save)) {
		char *eq = strchr(tok, '=');
		const char *val;

		if (!eq || eq == tok)
			return fail(err, errlen, "%s:%u: expected KEY=VALUE, got '%.40s'", src,
				    line, tok);
		*eq = '\0';
		val = eq + 1;
		if (!name[0] && strcasecmp(tok, "SwitchName") != 0) {
			if (!strcasecmp(tok, "BlockName") || !strcasecmp(tok, "BlockSizes"))
				return fail(err, errlen,
					    "%s:%u: %s= is topology/block, which has no switch "
					    "hierarchy; only topology/tree is read",
					    src, line, tok);
			return fail(err, errlen,
				    "%s:%u: a line must start with SwitchName=, not %s=", src, line,
				    tok);
		}
		if (!*val)
			return fail(err, errlen, "%s:%u: %s= has no value", src, line, tok);
		if (!strcasecmp(tok, "SwitchName")) {
			if (name[0])
				return fail(err, errlen, "%s:%u: SwitchName= given twice", src,
					    line);
			if (!name_ok(val))
				return fail(err, errlen, "%s:%u: bad switch name '%.64s'", src,
					    line, val);
			snprintf(name, sizeof(name), "%s", val);
		} else if (!strcasecmp(tok, "Nodes")) {
			if (have_nodes)
				return fail(err, errlen, "%s:%u: Nodes= given twice", src, line);
			have_nodes = true;
			nodes = (char *)val;
		} else if (!strcasecmp(tok, "Switches")) {
			if (have_children)
				return fail(err, errlen, "%s:%u: Switches= given twice", src, line);
			have_children = true;
			children = (char *)val;
		} else if (!strcasecmp(tok, "LinkSpeed")) {
			if (have_speed)
				return fail(err, errlen, "%s:%u: LinkSpeed= given twice", src,
					    line);
			have_speed = true;
			if (parse_speed(val, &speed))
				return fail(err, errlen,
					    "%s:%u: bad LinkSpeed '%.40s': expected a number", src,
					    line, val);
		} else {
			return fail(err, errlen,
				    "%s:%u: unknown key '%.40s' (SwitchName, Nodes, Switches, "
				    "LinkSpeed)",
				    src, line, tok);
		}
	}
	if (!name[0])
		return 0; /* blank or comment */
	x = entries_add(e);
	if (!x) {
		if (e->n < IBP_TOPOLOGY_MAX_SWITCHES)
			return -ENOMEM;
		fail(err, errlen, "%s:%u: more than %d switches", src, line,
		     IBP_TOPOLOGY_MAX_SWITCHES);
		return -E2BIG;
	}
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->speed = speed;
	x->line = line;
	if (nodes && !(x->nodes = dup_value(nodes)))
		rc = -ENOMEM;
	if (!rc && children && !(x->children = dup_value(children)))
		rc = -ENOMEM;
	return rc;
}

int ibp_topology_parse_conf(struct ibp_topology *t, const char *text, size_t len, const char *name,
			    char *err, size_t errlen)
{
	struct entries e = {0};
	char *buf = NULL;
	size_t bl = 0;
	unsigned line = 0, start = 0;
	int rc = 0;

	ibp_topology_init(t);
	if (!name)
		name = "topology.conf";
	if (len > IBP_TOPOLOGY_MAX_FILE) {
		fail(err, errlen, "%s: larger than %u bytes", name, IBP_TOPOLOGY_MAX_FILE);
		return -E2BIG;
	}
	buf = malloc(MAX_LINE + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i <= len && !rc;) {
		size_t end = i;
		bool cont;

		while (end < len && text[end] != '\n')
			end++;
		line++;
		if (!bl)
			start = line;
		/* A comment runs to the end of the physical line. */
		size_t stop = i;
		while (stop < end && text[stop] != '#')
			stop++;
		cont = stop == end && end > i && text[end - 1] == '\\';
		if (cont)
			stop = end - 1;
		if (bl + (stop - i) + 1 > MAX_LINE) {
			fail(err, errlen, "%s:%u: line longer than %u bytes", name, start,
			     MAX_LINE);
			rc = -E2BIG;
			break;
		}
		for (size_t k = i; k < stop; k++) {
			if (text[k] == '\0') {
				rc = fail(err, errlen, "%s:%u: NUL byte", name, line);
				break;
			}
			buf[bl++] = text[k];
		}
		if (rc)
			break;
		if (cont && end < len) {
			buf[bl++] = ' ';
		} else {
			buf[bl] = '\0';
			rc = conf_line(&e, buf, start, name, err, errlen);
			bl = 0;
		}
		if (end >= len)
			break;
		i = end + 1;
	}
	free(buf);
	if (!rc)
		rc = build(t, &e, name, err, errlen);
	entries_release(&e);
	if (rc)
		ibp_topology_release(t);
	else
		snprintf(t->source, sizeof(t->source), "topology.conf");
	return rc;
}

/* ---- topology.yaml (the documented subset) ---- */

struct yline {
	unsigned no;
	size_t indent;
	bool dash;      /* "- " item start */
	char key[48];   /* "" for a bare scalar item */
	char val[4096]; /* unquoted, comment removed; "" for none */
	bool has_val;
};

/* Removes a trailing comment and spaces; unquotes; refuses what we do not read. */
static int yaml_scalar(char *v, unsigned no, const char *src, char *err, size_t errlen)
{
	size_t n;
	char q = 0;

	for (char *p = v; *p; p++) {
		if (q) {
			if (*p == q)
				q = 0;
		} else if (*p == '"' || *p == '\'') {
			q = *p;
		} else if (*p == '#' && (p == v || p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			break;
		}
	}
	n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
		v[--n] = '\0';
	if (!n)
		return 0;
	if (v[0] == '&' || v[0] == '*' || v[0] == '!' || v[0] == '|' || v[0] == '>' || v[0] == '{')
		return fail(err, errlen,
			    "%s:%u: '%c' (anchors, aliases, tags, block scalars, mappings) is "
			    "not read here: write the value plainly",
			    src, no, v[0]);
	if (v[0] == '"' || v[0] == '\'') {
		if (n < 2 || v[n - 1] != v[0])
			return fail(err, errlen, "%s:%u: unterminated quoted value", src, no);
		memmove(v, v + 1, n - 2);
		v[n - 2] = '\0';
		if (strchr(v, '\\') || strchr(v, '"') || strchr(v, '\''))
			return fail(err, errlen, "%s:%u: escapes in quoted values are not read",
				    src, no);
	} else if (v[0] == '[') {
		/* A flow sequence of plain names: "[a, b]" -> "a,b". */
		size_t w = 0;

		if (v[n - 1] != ']')
			return fail(err, errlen, "%s:%u: unterminated flow sequence '%.40s'", src,
				    no, v);
		for (size_t r = 1; r + 1 < n; r++) {
			if (v[r] == ' ' || v[r] == '\t' || v[r] == '"' || v[r] == '\'')
				continue;
			if (v[r] == '[' || v[r] == ']')
				return fail(err, errlen,
					    "%s:%u: a flow sequence item is a plain name; write "
					    "host lists without [ ] inside [ ] or as a plain value",
					    src, no);
			v[w++] = v[r];
		}
		v[w] = '\0';
	}
	return 0;
}

static int yaml_split(const char *s, size_t n, unsigned no, const char *src, struct yline *y,
		      char *err, size_t errlen)
{
	size_t i = 0, k;
	const char *colon;

	memset(y, 0, sizeof(*y));
	y->no = no;
	while (i < n && s[i] == ' ')
		i++;
	if (i < n && s[i] == '\t')
		return fail(err, errlen, "%s:%u: tab in indentation", src, no);
	y->indent = i;
	if (i + 1 < n && s[i] == '-' && (s[i + 1] == ' ')) {
		y->dash = true;
		i += 2;
		while (i < n && s[i] == ' ')
			i++;
	} else if (i + 1 == n && s[i] == '-') {
		y->dash = true;
		i++;
	}
	{
		size_t a = i, b = n;

		while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\r' || s[b - 1] == '\t'))
			b--;
		if (!y->dash && b - a == 3 &&
		    (!strncmp(s + a, "---", 3) || !strncmp(s + a, "...", 3)))
			return 0; /* document markers */
	}
	if (n - i >= sizeof(y->val))
		return fail(err, errlen, "%s:%u: line too long", src, no);
	/* key: a run of [A-Za-z0-9_] followed by ':' and a space or the end */
	for (k = i; k < n && (isalnum((unsigned char)s[k]) || s[k] == '_'); k++)
		;
	colon = (k > i && k < n && s[k] == ':' &&
		 (k + 1 == n || s[k + 1] == ' ' || s[k + 1] == '\t' || s[k + 1] == '\r'))
		    ? s + k
		    : NULL;
	if (colon) {
		if ((size_t)(k - i) >= sizeof(y->key))
			return fail(err, errlen, "%s:%u: key too long", src, no);
		memcpy(y->key, s + i, k - i);
		i = k + 1;
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
	}
	memcpy(y->val, s + i, n - i);
	y->val[n - i] = '\0';
	if (y->val[0] == '#')
		y->val[0] = '\0';
	if (yaml_scalar(y->val, no, src, err, errlen))
		return -EINVAL;
	y->has_val = y->val[0] != '\0';
	if (!colon && !y->dash && y->has_val)
		return fail(err, errlen, "%s:%u: expected 'key: value' or '- item', got '%.40s'",
			    src, no, y->val);
	return 0;
}

/* Appends ITEM to a host list being collected from "- item" lines. */
static int append_item(char **list, const char *item)
{
	size_t a = *list ? strlen(*list) : 0, b = strlen(item);
	char *n;

	if (a + b + 2 > MAX_LINE)
		return -E2BIG;
	n = realloc(*list, a + b + 2);
	if (!n)
		return -ENOMEM;
	if (a)
		n[a++] = ',';
	memcpy(n + a, item, b + 1);
	*list = n;
	return 0;
}

enum ysection { Y_NONE, Y_TREE, Y_OTHER };

struct ytopo {
	char name[IBP_NODE_MAX];
	size_t first, n; /* entries */
	unsigned line;
	bool is_default, is_tree;
};

int ibp_topology_parse_yaml(struct ibp_topology *t, const char *text, size_t len, const char *name,
			    const char *want, char *err, size_t errlen)
{
	struct entries e = {0};
	struct ytopo topo[64];
	size_t n_topo = 0;
	enum ysection sec = Y_NONE;
	struct entry *cur = NULL; /* the switch item being read */
	char **collect = NULL;    /* a key whose value is a block sequence */
	size_t collect_indent = 0;
	struct yline *y = NULL;
	unsigned no = 0;
	int rc = 0;

	ibp_topology_init(t);
	if (!name)
		name = "topology.yaml";
	if (len > IBP_TOPOLOGY_MAX_FILE) {
		fail(err, errlen, "%s: larger than %u bytes", name, IBP_TOPOLOGY_MAX_FILE);
		return -E2BIG;
	}
	y = malloc(sizeof(*y));
	if (!y)
		return -ENOMEM;
	for (size_t i = 0; i < len && !rc;) {
		size_t end = i;

		while (end < len && text[end] != '\n')
			end++;
		no++;
		if (memchr(text + i, '\0', end - i)) {
			rc = fail(err, errlen, "%s:%u: NUL byte", name, no);
			break;
		}
		rc = yaml_split(text + i, end - i, no, name, y, err, errlen);
		i = end + 1;
		if (rc)
			break;
		if (!y->dash && !y->key[0] && !y->has_val)
			continue; /* blank or comment */
		if (collect) {
			if (y->dash && !y->key[0] && y->indent >= collect_indent) {
				if (!y->has_val) {
					rc = fail(err, errlen, "%s:%u: empty item", name, no);
					break;
				}
				rc = append_item(collect, y->val);
				if (rc == -E2BIG)
					fail(err, errlen, "%s:%u: list too long", name, no);
				continue;
			}
			collect = NULL;
		}
		if (y->dash && !strcmp(y->key, "topology")) {
			if (n_topo == sizeof(topo) / sizeof(topo[0])) {
				rc = fail(err, errlen, "%s:%u: more than %zu topologies", name, no,
					  sizeof(topo) / sizeof(topo[0]));
				break;
			}
			if (!name_ok(y->val)) {
				rc = fail(err, errlen, "%s:%u: bad topology name '%.64s'", name, no,
					  y->val);
				break;
			}
			memset(&topo[n_topo], 0, sizeof(topo[n_topo]));
			snprintf(topo[n_topo].name, sizeof(topo[n_topo].name), "%.63s", y->val);
			topo[n_topo].first = e.n;
			topo[n_topo].line = no;
			n_topo++;
			sec = Y_NONE;
			cur = NULL;
			continue;
		}
		if (!n_topo) {
			rc = fail(
			    err, errlen,
			    "%s:%u: expected '- topology: NAME' first (a sequence of topologies)",
			    name, no);
			break;
		}
		if (!y->dash && !strcmp(y->key, "cluster_default")) {
			topo[n_topo - 1].is_default =
			    !strcasecmp(y->val, "true") || !strcasecmp(y->val, "yes");
			if (!topo[n_topo - 1].is_default && strcasecmp(y->val, "false") != 0 &&
			    strcasecmp(y->val, "no") != 0)
				rc = fail(err, errlen,
					  "%s:%u: cluster_default: '%.20s', expected true or false",
					  name, no, y->val);
			continue;
		}
		if (!y->dash && !strcmp(y->key, "tree")) {
			if (y->has_val) {
				rc = fail(err, errlen,
					  "%s:%u: 'tree:' takes a mapping, not a value", name, no);
				break;
			}
			sec = Y_TREE;
			topo[n_topo - 1].is_tree = true;
			cur = NULL;
			continue;
		}
		if (!y->dash && (!strcmp(y->key, "block") || !strcmp(y->key, "flat"))) {
			sec = Y_OTHER;
			cur = NULL;
			continue;
		}
		if (sec != Y_TREE)
			continue; /* block and flat topologies: not read */
		if (!y->dash && !strcmp(y->key, "switches")) {
			if (y->has_val) {
				rc = fail(err, errlen,
					  "%s:%u: 'switches:' takes a sequence of '- switch: NAME'",
					  name, no);
				break;
			}
			cur = NULL;
			continue;
		}
		if (y->dash && !strcmp(y->key, "switch")) {
			if (!y->has_val || !name_ok(y->val)) {
				rc = fail(err, errlen, "%s:%u: bad switch name '%.64s'", name, no,
					  y->val);
				break;
			}
			cur = entries_add(&e);
			if (!cur) {
				rc = -ENOMEM;
				if (e.n >= IBP_TOPOLOGY_MAX_SWITCHES) {
					fail(err, errlen, "%s:%u: more than %d switches", name, no,
					     IBP_TOPOLOGY_MAX_SWITCHES);
					rc = -E2BIG;
				}
				break;
			}
			snprintf(cur->name, sizeof(cur->name), "%.63s", y->val);
			cur->line = no;
			topo[n_topo - 1].n++;
			continue;
		}
		if (!cur) {
			rc = fail(err, errlen, "%s:%u: '%s' outside a '- switch:' item", name, no,
				  y->key[0] ? y->key : y->val);
			break;
		}
		if (y->dash) {
			rc = fail(err, errlen, "%s:%u: expected '- switch: NAME', got '- %s'", name,
				  no, y->key[0] ? y->key : y->val);
			break;
		}
		if (!strcmp(y->key, "children") || !strcmp(y->key, "nodes")) {
			char **dst = !strcmp(y->key, "nodes") ? &cur->nodes : &cur->children;

			if (*dst) {
				rc = fail(err, errlen, "%s:%u: '%s' given twice for switch '%s'",
					  name, no, y->key, cur->name);
				break;
			}
			if (y->has_val) {
				*dst = strdup(y->val);
				if (!*dst)
					rc = -ENOMEM;
			} else {
				collect = dst;
				collect_indent = y->indent;
			}
			continue;
		}
		if (!strcmp(y->key, "link_speed")) {
			if (parse_speed(y->val, &cur->speed))
				rc = fail(err, errlen,
					  "%s:%u: bad link_speed '%.40s': expected a number", name,
					  no, y->val);
			continue;
		}
		rc = fail(err, errlen,
			  "%s:%u: unknown key '%s' in switch '%s' (children, nodes, link_speed)",
			  name, no, y->key, cur->name);
	}
	free(y);
	if (!rc) {
		long pick = -1;

		for (size_t k = 0; k < n_topo; k++) {
			if (want && *want) {
				if (!strcmp(topo[k].name, want)) {
					pick = (long)k;
					break;
				}
				continue;
			}
			if (topo[k].is_tree &&
			    (pick < 0 || (topo[k].is_default && !topo[pick].is_default)))
				pick = (long)k;
		}
		if (pick < 0) {
			fail(err, errlen, "%s: no tree topology%s%s%s", name,
			     want && *want ? " named '" : "", want && *want ? want : "",
			     want && *want ? "'" : "");
			rc = -ENOENT;
		} else if (!topo[pick].is_tree) {
			fail(err, errlen, "%s:%u: topology '%s' is not a tree", name,
			     topo[pick].line, topo[pick].name);
			rc = -ENOENT;
		} else {
			struct entries sub = {.v = e.v + topo[pick].first, .n = topo[pick].n};

			rc = build(t, &sub, name, err, errlen);
			if (!rc) {
				snprintf(t->source, sizeof(t->source), "topology.yaml");
				snprintf(t->name, sizeof(t->name), "%s", topo[pick].name);
			}
		}
	}
	entries_release(&e);
	if (rc)
		ibp_topology_release(t);
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

int ibp_topology_load_fd(struct ibp_topology *t, int fd, const char *name, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	ibp_topology_init(t);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fail(err, errlen, "%s: not a regular file", name);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > IBP_TOPOLOGY_MAX_FILE) {
		fail(err, errlen, "%s: larger than %u bytes", name, IBP_TOPOLOGY_MAX_FILE);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (len < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + len, (size_t)st.st_size - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			free(buf);
			fail(err, errlen, "%s: %s", name, strerror(-rc));
			return rc;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (ends_with(name, ".yaml") || ends_with(name, ".yml"))
		rc = ibp_topology_parse_yaml(t, buf, len, name, NULL, err, errlen);
	else
		rc = ibp_topology_parse_conf(t, buf, len, name, err, errlen);
	free(buf);
	return rc;
}

int ibp_topology_load_file(struct ibp_topology *t, const char *path, char *err, size_t errlen)
{
	int fd, rc;

	ibp_topology_init(t);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		fail(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = ibp_topology_load_fd(t, fd, path, err, errlen);
	close(fd);
	return rc;
}

int ibp_topology_parse_addr(const char *addr, const char *pattern, char (*sw)[IBP_NODE_MAX],
			    size_t max, size_t *n_sw, char *node, size_t nodelen, char *err,
			    size_t errlen)
{
	const char *a = addr, *p = pattern;
	size_t n = 0;

	*n_sw = 0;
	if (!addr || !pattern || !*addr || !*pattern)
		return fail(err, errlen, "SLURM_TOPOLOGY_ADDR or _PATTERN is empty");
	for (;;) {
		size_t al = strcspn(a, "."), pl = strcspn(p, ".");
		char part[IBP_NODE_MAX];
		bool last_a = !a[al], last_p = !p[pl];

		if (last_a != last_p)
			return fail(
			    err, errlen,
			    "SLURM_TOPOLOGY_ADDR '%.64s' and _PATTERN '%.64s' have a different "
			    "number of parts",
			    addr, pattern);
		if (!al || al >= sizeof(part))
			return fail(err, errlen, "SLURM_TOPOLOGY_ADDR '%.64s': empty or long part",
				    addr);
		memcpy(part, a, al);
		part[al] = '\0';
		if (!name_ok(part))
			return fail(err, errlen, "SLURM_TOPOLOGY_ADDR '%.64s': bad name '%s'", addr,
				    part);
		if (last_p) {
			if (pl != 4 || strncmp(p, "node", 4) != 0)
				return fail(
				    err, errlen,
				    "SLURM_TOPOLOGY_ADDR_PATTERN '%.64s': the last part must "
				    "be 'node'",
				    pattern);
			if (strlen(part) >= nodelen)
				return fail(err, errlen, "node name too long");
			snprintf(node, nodelen, "%s", part);
			*n_sw = n;
			return 0;
		}
		if (pl != 6 || strncmp(p, "switch", 6) != 0)
			return fail(err, errlen,
				    "SLURM_TOPOLOGY_ADDR_PATTERN '%.64s': expected 'switch' parts "
				    "before 'node'",
				    pattern);
		if (n == max)
			return fail(err, errlen,
				    "SLURM_TOPOLOGY_ADDR '%.64s': more than %zu levels", addr, max);
		snprintf(sw[n++], IBP_NODE_MAX, "%s", part);
		a += al + 1;
		p += pl + 1;
	}
}
