/* SPDX-License-Identifier: GPL-2.0-or-later */
/* linkwatch.c: two reads of the node's ports and what changed between them (linkwatch.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ibprep/linkwatch.h"
#include "ibprep/text.h"

/* The names are the inventory's (hca.h, ibp_link_counter_name: the same order). */
static const struct {
	unsigned bits;
} counters[IBP_LW_N_COUNTERS] = {
    [IBP_LW_LINK_DOWNED] = {8},         [IBP_LW_LINK_ERROR_RECOVERY] = {8},
    [IBP_LW_SYMBOL_ERROR] = {16},       [IBP_LW_PORT_RCV_ERRORS] = {16},
    [IBP_LW_PORT_XMIT_DISCARDS] = {16}, [IBP_LW_PORT_XMIT_WAIT] = {32},
};

const char *ibp_lw_counter_name(enum ibp_lw_counter c)
{
	return (unsigned)c < IBP_LW_N_COUNTERS ? ibp_link_counter_name((unsigned)c) : "?";
}

unsigned ibp_lw_counter_bits(enum ibp_lw_counter c)
{
	return (unsigned)c < IBP_LW_N_COUNTERS ? counters[c].bits : 64;
}

static uint64_t max_of(unsigned bits)
{
	return bits == 0 || bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool ignored(const char *const *ignore, const char *dev)
{
	for (size_t i = 0; ignore && ignore[i]; i++)
		if (!strcmp(ignore[i], dev))
			return true;
	return false;
}

/*
 * Reads DEV's port NUM into P through a reader opened on the port's
 * directory (ibp_sysfs_open_dir: each file resolves only its name, not the
 * path through the class link).  -errno when the directory cannot be
 * opened (gone: -ENOENT, or not a directory), P untouched.
 */
static int read_port(struct ibp_lw_port *p, const struct ibp_sysfs *root, const char *dev,
		     unsigned num, unsigned flags)
{
	char buf[64], dir[IBP_DEV_MAX + 64];
	struct ibp_sysfs port, *fs = &port;
	int rc;

	snprintf(dir, sizeof(dir), "sys/class/infiniband/%s/ports/%u", dev, num);
	rc = ibp_sysfs_open_dir(&port, root, dir);
	if (rc)
		return rc;
	memset(p, 0, sizeof(*p));
	snprintf(p->device, sizeof(p->device), "%s", dev);
	p->port = num;
	p->state = IBP_PORT_STATE_UNKNOWN;
	p->phys_state = IBP_PHYS_UNKNOWN;
	/*
	 * Counters first, the state last: a link that goes down between the two
	 * reads shows DOWN with the old link_downed (a link down), never ACTIVE
	 * with a new one (what a down and back between two reads looks like).
	 */
	for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
		struct ibp_lw_value *v = &p->c[c];

		if (ibp_sysfs_read_u64(fs, &v->value, "counters/%s",
				       ibp_lw_counter_name((enum ibp_lw_counter)c))) {
			v->value = 0;
			continue;
		}
		v->known = true;
		v->bits = v->value > max_of(counters[c].bits) ? 64 : counters[c].bits;
	}
	if (ibp_sysfs_read(fs, "state", buf, sizeof(buf)) < 0 ||
	    ibp_parse_port_state(buf, &p->state))
		p->state = IBP_PORT_STATE_UNKNOWN;
	if (!(flags & IBP_LW_NO_PHYS_STATE) &&
	    (ibp_sysfs_read(fs, "phys_state", buf, sizeof(buf)) < 0 ||
	     ibp_parse_phys_state(buf, &p->phys_state)))
		p->phys_state = IBP_PHYS_UNKNOWN;
	ibp_sysfs_close(&port);
	return 0;
}

int ibp_linkwatch_read(struct ibp_linkwatch *lw, const struct ibp_sysfs *fs,
		       const char *const *ignore)
{
	char **devs = NULL;
	int n;

	lw->n_ports = 0;
	lw->truncated = false;
	lw->mono_ns = clock_ns(CLOCK_MONOTONIC);
	lw->real_ns = clock_ns(CLOCK_REALTIME);
	n = ibp_sysfs_list(fs, "sys/class/infiniband", &devs);
	if (n == -ENOENT || n == -ENOTDIR)
		return 0;
	if (n < 0)
		return n;
	for (int d = 0; d < n; d++) {
		char dir[IBP_DEV_MAX + 64], **ports = NULL;
		int np;

		if (ignored(ignore, devs[d]) || strlen(devs[d]) >= IBP_DEV_MAX)
			continue;
		snprintf(dir, sizeof(dir), "sys/class/infiniband/%s/ports", devs[d]);
		np = ibp_sysfs_list(fs, dir, &ports);
		if (np == -ENOMEM) {
			ibp_sysfs_names_free(devs);
			return np;
		}
		for (int i = 0; i < np; i++) {
			uint64_t num;

			if (ibp_parse_u64(ports[i], &num) || num < 1 || num > 255)
				continue;
			if (lw->n_ports == IBP_LW_MAX_PORTS) {
				lw->truncated = true;
				break;
			}
			struct ibp_lw_port *p = &lw->ports[lw->n_ports++];

			if (read_port(p, fs, devs[d], (unsigned)num, 0)) {
				/* listed but not readable as a directory: every value unknown */
				memset(p, 0, sizeof(*p));
				snprintf(p->device, sizeof(p->device), "%s", devs[d]);
				p->port = (unsigned)num;
				p->state = IBP_PORT_STATE_UNKNOWN;
				p->phys_state = IBP_PHYS_UNKNOWN;
			}
		}
		ibp_sysfs_names_free(ports);
	}
	ibp_sysfs_names_free(devs);
	return 0;
}

/* A device name as the kernel makes them: no '/', no "." or "..", not empty. */
static bool plain_name(const char *s)
{
	size_t n = strnlen(s, IBP_DEV_MAX);

	return n > 0 && n < IBP_DEV_MAX && !strchr(s, '/') && strcmp(s, ".") != 0 &&
	       strcmp(s, "..") != 0;
}

int ibp_lw_port_ids_parse(const char *s, struct ibp_lw_port_id *ids, size_t max, size_t *n)
{
	const char *p = s;

	*n = 0;
	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *colon = NULL;
		unsigned port = 0;

		for (const char *c = p; c < end; c++)
			if (*c == ':')
				colon = c;
		if (!colon || colon == p || (size_t)(colon - p) >= sizeof(ids[0].device) ||
		    colon + 1 == end || colon[1] == '0')
			return -EINVAL;
		for (const char *c = colon + 1; c < end; c++) {
			if (*c < '0' || *c > '9' || port > 25)
				return -EINVAL;
			port = port * 10 + (unsigned)(*c - '0');
		}
		if (port < 1 || port > 255)
			return -EINVAL;
		if (*n == max)
			return -E2BIG;
		memset(&ids[*n], 0, sizeof(ids[*n]));
		memcpy(ids[*n].device, p, (size_t)(colon - p));
		ids[*n].port = port;
		if (!plain_name(ids[*n].device))
			return -EINVAL;
		(*n)++;
		if (!comma)
			break;
		p = comma + 1;
		if (!*p)
			return -EINVAL; /* a trailing comma */
	}
	return 0;
}

int ibp_linkwatch_from_inventory(struct ibp_linkwatch *lw, const struct ibp_inventory *inv,
				 const char *const *ignore)
{
	lw->n_ports = 0;
	lw->truncated = false;
	lw->mono_ns = clock_ns(CLOCK_MONOTONIC);
	lw->real_ns = clock_ns(CLOCK_REALTIME);
	if (inv->from_pci)
		return -ENOENT;
	for (size_t d = 0; d < inv->n_hcas; d++) {
		const struct ibp_hca *h = &inv->hcas[d];

		if (ignored(ignore, h->name) || strlen(h->name) >= IBP_DEV_MAX)
			continue;
		for (size_t i = 0; i < h->n_ports; i++) {
			const struct ibp_port *ip = &h->ports[i];
			struct ibp_lw_port *p;

			if (lw->n_ports == IBP_LW_MAX_PORTS) {
				lw->truncated = true;
				return 0;
			}
			p = &lw->ports[lw->n_ports++];
			memset(p, 0, sizeof(*p));
			snprintf(p->device, sizeof(p->device), "%s", h->name);
			p->port = ip->num;
			p->state = ip->state;
			p->phys_state = ip->phys_state;
			for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
				const struct ibp_counter *ic = ibp_port_counter(
				    ip, ibp_lw_counter_name((enum ibp_lw_counter)c));
				struct ibp_lw_value *v = &p->c[c];

				/* counters/ only: hw_counters/ may reuse a name */
				if (!ic || ic->hw || ic->read_errno)
					continue;
				v->known = true;
				v->value = ic->value;
				v->bits =
				    v->value > max_of(counters[c].bits) ? 64 : counters[c].bits;
			}
		}
	}
	return 0;
}

int ibp_linkwatch_read_ports(struct ibp_linkwatch *lw, const struct ibp_sysfs *fs,
			     const struct ibp_lw_port_id *ids, size_t n)
{
	return ibp_linkwatch_read_ports_opts(lw, fs, ids, n, 0);
}

int ibp_linkwatch_read_ports_opts(struct ibp_linkwatch *lw, const struct ibp_sysfs *fs,
				  const struct ibp_lw_port_id *ids, size_t n, unsigned flags)
{
	lw->n_ports = 0;
	lw->truncated = false;
	if (n > IBP_LW_MAX_PORTS)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		if (!plain_name(ids[i].device) || ids[i].port < 1 || ids[i].port > 255)
			return -EINVAL;
	lw->mono_ns = clock_ns(CLOCK_MONOTONIC);
	lw->real_ns = clock_ns(CLOCK_REALTIME);
	for (size_t i = 0; i < n; i++) {
		/* a directory that cannot be opened is gone: the comparison says so */
		if (!read_port(&lw->ports[lw->n_ports], fs, ids[i].device, ids[i].port, flags))
			lw->n_ports++;
	}
	return 0;
}

void ibp_lw_counter_delta(uint64_t before, uint64_t after, unsigned bits, bool wraps,
			  struct ibp_lw_delta *d)
{
	uint64_t max;

	memset(d, 0, sizeof(*d));
	if (bits == 0 || bits > 64)
		bits = 64;
	max = max_of(bits);
	if (before > max || after > max) { /* a driver showing a wider counter */
		bits = 64;
		max = UINT64_MAX;
	}
	if (after >= before) {
		d->delta = after - before;
		if (!wraps && after == max) {
			d->at_least = true;
			d->blind = before == max;
		}
		return;
	}
	if (wraps && bits < 64) {
		d->wrapped = true;
		d->delta = max - before + after + 1;
		return;
	}
	d->reset = true;
	d->at_least = true;
	d->delta = after;
}

double ibp_linkwatch_elapsed(const struct ibp_linkwatch *before, const struct ibp_linkwatch *after)
{
	if (before->mono_ns > 0 && after->mono_ns >= before->mono_ns)
		return (double)(after->mono_ns - before->mono_ns) / 1e9;
	if (before->real_ns > 0 && after->real_ns >= before->real_ns)
		return (double)(after->real_ns - before->real_ns) / 1e9;
	return -1;
}

/* ---- one read as text, for the watcher to start from ---- */

int ibp_linkwatch_to_text(const struct ibp_linkwatch *lw, const struct ibp_lw_port_id *ids,
			  size_t n, char *buf, size_t len)
{
	size_t o = 0;
	int rc;

	if (!len)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	rc = ibp_appendf(buf, len, &o, "%" PRId64 " %" PRId64, lw->mono_ns > 0 ? lw->mono_ns : 0,
			 lw->real_ns > 0 ? lw->real_ns : 0);
	for (size_t i = 0; !rc && i < n; i++) {
		const struct ibp_lw_port *p = ibp_linkwatch_find(lw, ids[i].device, ids[i].port);

		if (!p)
			continue;
		rc = ibp_appendf(buf, len, &o, " %s:%u", p->device, p->port);
		if (!rc)
			rc = p->state == IBP_PORT_STATE_UNKNOWN
				 ? ibp_appendf(buf, len, &o, " -")
				 : ibp_appendf(buf, len, &o, " %d", (int)p->state);
		if (!rc)
			rc = p->phys_state == IBP_PHYS_UNKNOWN
				 ? ibp_appendf(buf, len, &o, " -")
				 : ibp_appendf(buf, len, &o, " %d", (int)p->phys_state);
		for (unsigned c = 0; !rc && c < IBP_LW_N_COUNTERS; c++)
			rc = p->c[c].known ? ibp_appendf(buf, len, &o, " %" PRIu64, p->c[c].value)
					   : ibp_appendf(buf, len, &o, " -");
	}
	if (rc) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

/* One token: "-" (false) or a decimal u64 no greater than MAX (true); -EINVAL. */
static int token_u64(const char *t, uint64_t max, bool *known, uint64_t *v)
{
	*known = false;
	*v = 0;
	if (!strcmp(t, "-"))
		return 0;
	if (ibp_parse_u64(t, v) || *v > max)
		return -EINVAL;
	*known = true;
	return 0;
}

static int from_tokens(char *s, struct ibp_linkwatch *lw)
{
	char *save = NULL, *t;
	uint64_t v;
	bool known;

	t = strtok_r(s, " ", &save);
	if (!t || token_u64(t, INT64_MAX, &known, &v) || !known)
		return -EINVAL;
	lw->mono_ns = (int64_t)v;
	t = strtok_r(NULL, " ", &save);
	if (!t || token_u64(t, INT64_MAX, &known, &v) || !known)
		return -EINVAL;
	lw->real_ns = (int64_t)v;
	while ((t = strtok_r(NULL, " ", &save))) {
		struct ibp_lw_port_id id;
		struct ibp_lw_port *p;
		size_t one;

		if (lw->n_ports == IBP_LW_MAX_PORTS || ibp_lw_port_ids_parse(t, &id, 1, &one) ||
		    ibp_linkwatch_find(lw, id.device, id.port))
			return -EINVAL; /* too many, a bad name or port, a port twice */
		p = &lw->ports[lw->n_ports++];
		memset(p, 0, sizeof(*p));
		memcpy(p->device, id.device, sizeof(p->device));
		p->port = id.port;
		t = strtok_r(NULL, " ", &save);
		if (!t || token_u64(t, IBP_PORT_ACTIVE_DEFER, &known, &v))
			return -EINVAL;
		p->state = known ? (enum ibp_port_state)v : IBP_PORT_STATE_UNKNOWN;
		t = strtok_r(NULL, " ", &save);
		if (!t || token_u64(t, IBP_PHYS_PHY_TEST, &known, &v))
			return -EINVAL;
		p->phys_state = known ? (enum ibp_phys_state)v : IBP_PHYS_UNKNOWN;
		for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
			struct ibp_lw_value *x = &p->c[c];

			t = strtok_r(NULL, " ", &save);
			if (!t || token_u64(t, UINT64_MAX, &x->known, &x->value))
				return -EINVAL;
			if (x->known)
				x->bits =
				    x->value > max_of(counters[c].bits) ? 64 : counters[c].bits;
		}
	}
	return 0;
}

int ibp_linkwatch_from_text(const char *s, struct ibp_linkwatch *lw)
{
	char copy[IBP_LW_TEXT_MAX];
	size_t len = s ? strnlen(s, sizeof(copy)) : sizeof(copy);
	int rc;

	memset(lw, 0, sizeof(*lw));
	if (!len || len == sizeof(copy))
		return -EINVAL;
	memcpy(copy, s, len + 1);
	rc = from_tokens(copy, lw);
	if (rc)
		memset(lw, 0, sizeof(*lw));
	return rc;
}

const struct ibp_lw_port *ibp_linkwatch_find(const struct ibp_linkwatch *lw, const char *dev,
					     unsigned port)
{
	for (size_t i = 0; i < lw->n_ports; i++)
		if (lw->ports[i].port == port && !strcmp(lw->ports[i].device, dev))
			return &lw->ports[i];
	return NULL;
}

bool ibp_port_state_active(enum ibp_port_state s)
{
	return s == IBP_PORT_ACTIVE || s == IBP_PORT_ACTIVE_DEFER;
}

/* "2", "at least 255" */
static void count_text(const struct ibp_lw_delta *d, char *buf, size_t len)
{
	snprintf(buf, len, "%s%" PRIu64, d->at_least ? "at least " : "", d->delta);
}

/* ", 1440/h" when the elapsed time is known */
static void rate_text(const struct ibp_lw_delta *d, double elapsed_s, char *buf, size_t len)
{
	double per_h;

	buf[0] = '\0';
	if (elapsed_s <= 0)
		return;
	per_h = (double)d->delta * 3600.0 / elapsed_s;
	snprintf(buf, len, ", %s%.*f/h", d->at_least ? "at least " : "", per_h < 10 ? 1 : 0, per_h);
}

/* Appends NAME to a ", "-separated list in BUF. */
static void list_add(char *buf, size_t len, const char *name)
{
	size_t o = strlen(buf);

	if (o < len)
		snprintf(buf + o, len - o, "%s%s", o ? ", " : "", name);
}

static int compare_port(const struct ibp_lw_port *b, const struct ibp_lw_port *a,
			const struct ibp_linkwatch_opts *o, double elapsed_s,
			struct ibp_findings *out)
{
	struct ibp_lw_delta d[IBP_LW_N_COUNTERS];
	bool have[IBP_LW_N_COUNTERS];
	char n1[48], n2[48], rate[48], resets[160] = "", blind[160] = "";
	const char *during = o->during && o->during[0] ? o->during : "between the two reads";
	const char *dev = b->device;
	int port = (int)b->port, rc = 0;

	for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
		have[c] = b->c[c].known && a->c[c].known;
		memset(&d[c], 0, sizeof(d[c]));
		if (!have[c])
			continue;
		ibp_lw_counter_delta(b->c[c].value, a->c[c].value,
				     b->c[c].bits > a->c[c].bits ? b->c[c].bits : a->c[c].bits,
				     false, &d[c]);
		if (d[c].reset)
			list_add(resets, sizeof(resets),
				 ibp_lw_counter_name((enum ibp_lw_counter)c));
		else if (d[c].blind)
			list_add(blind, sizeof(blind), ibp_lw_counter_name((enum ibp_lw_counter)c));
	}

	const struct ibp_lw_delta *down = &d[IBP_LW_LINK_DOWNED];
	bool went_down = ibp_port_state_active(b->state) && a->state != IBP_PORT_STATE_UNKNOWN &&
			 !ibp_port_state_active(a->state);
	if (down->delta || went_down) {
		char now[48] = "";

		if (!ibp_port_state_active(a->state) && a->state != IBP_PORT_STATE_UNKNOWN)
			snprintf(now, sizeof(now), ", %s now", ibp_port_state_name(a->state));
		if (down->delta) {
			count_text(down, n1, sizeof(n1));
			rc = ibp_findings_addf(out, "link_went_down", IBP_SEV_FAIL, IBP_CLASS_NODE,
					       dev, port, NULL,
					       "check the cable, the transceiver and the switch "
					       "port; the switch's log "
					       "has the times",
					       "link went down %s time%s %s%s", n1,
					       down->delta == 1 ? "" : "s", during, now);
		} else {
			rc = ibp_findings_addf(out, "link_went_down", IBP_SEV_FAIL, IBP_CLASS_NODE,
					       dev, port, NULL,
					       "check the cable, the transceiver and the switch "
					       "port; the switch's log "
					       "has the times",
					       "link went down %s%s", during, now);
		}
		if (rc)
			return rc;
	}
	if (d[IBP_LW_LINK_ERROR_RECOVERY].delta) {
		count_text(&d[IBP_LW_LINK_ERROR_RECOVERY], n1, sizeof(n1));
		rc = ibp_findings_addf(out, "link_retrained", IBP_SEV_FAIL, IBP_CLASS_NODE, dev,
				       port, NULL,
				       "check the cable and the transceiver: a link that retrains "
				       "stalls the job",
				       "link retrained %s time%s %s (link_error_recovery)", n1,
				       d[IBP_LW_LINK_ERROR_RECOVERY].delta == 1 ? "" : "s", during);
		if (rc)
			return rc;
	}
	static const enum ibp_lw_counter errs[] = {IBP_LW_SYMBOL_ERROR, IBP_LW_PORT_RCV_ERRORS,
						   IBP_LW_PORT_XMIT_DISCARDS};
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const struct ibp_lw_delta *x = &d[errs[i]];

		if (!x->delta)
			continue;
		count_text(x, n1, sizeof(n1));
		rate_text(x, o->no_rate ? -1 : elapsed_s, rate, sizeof(rate));
		rc = ibp_findings_addf(
		    out, "counter_grew", IBP_SEV_WARN, IBP_CLASS_NODE, dev, port, NULL,
		    errs[i] == IBP_LW_PORT_XMIT_DISCARDS
			? "look for congestion or a peer that stopped "
			  "receiving"
			: "check the cable and the transceiver",
		    "%s grew by %s %s%s", ibp_lw_counter_name(errs[i]), n1, during, rate);
		if (rc)
			return rc;
	}
	const struct ibp_lw_delta *w = &d[IBP_LW_PORT_XMIT_WAIT];
	if (w->delta) {
		double tick = o->tick_ns > 0 ? o->tick_ns : 4.0;
		double frac = elapsed_s > 0 ? (double)w->delta * tick / (elapsed_s * 1e9) : -1;

		count_text(w, n1, sizeof(n1));
		if (frac > 1)
			frac = 1;
		if (frac >= 0)
			snprintf(n2, sizeof(n2), "%s%.1f%% of %.1f s",
				 w->at_least ? "at least " : "", frac * 100, elapsed_s);
		else
			snprintf(n2, sizeof(n2), "an unknown share");
		rc = ibp_findings_addf(
		    out, "xmit_wait", IBP_SEV_OK, IBP_CLASS_NODE, dev, port, NULL,
		    "congestion, not a fault: see the fabric's congestion counters",
		    "waited to send %s %s (port_xmit_wait grew by %s ticks of %g ns)", n2, during,
		    n1, tick);
		if (rc)
			return rc;
	}
	if (!o->quiet_counters && resets[0]) {
		rc = ibp_findings_addf(out, "counter_reset", IBP_SEV_OK, IBP_CLASS_NODE, dev, port,
				       NULL, NULL,
				       "counters reset %s (%s): growth counted from the reset, at "
				       "least",
				       during, resets);
		if (rc)
			return rc;
	}
	if (!o->quiet_counters && blind[0])
		rc = ibp_findings_addf(out, "counter_blind", IBP_SEV_OK, IBP_CLASS_NODE, dev, port,
				       NULL, "clear the port's counters (perfquery -R)",
				       "%s saturated before %s: growth cannot be seen", blind,
				       during);
	return rc;
}

int ibp_linkwatch_compare(const struct ibp_linkwatch *before, const struct ibp_linkwatch *after,
			  const struct ibp_linkwatch_opts *opts, struct ibp_findings *out)
{
	static const struct ibp_linkwatch_opts none = {0};
	const struct ibp_linkwatch_opts *o = opts ? opts : &none;
	double elapsed_s = o->elapsed_s > 0 ? o->elapsed_s : ibp_linkwatch_elapsed(before, after);
	int rc;

	for (size_t i = 0; i < before->n_ports; i++) {
		const struct ibp_lw_port *b = &before->ports[i];
		const struct ibp_lw_port *a = ibp_linkwatch_find(after, b->device, b->port);

		if (!a) {
			if (after->truncated)
				continue;
			rc = ibp_findings_addf(
			    out, "port_vanished", IBP_SEV_FAIL, IBP_CLASS_NODE, b->device,
			    (int)b->port, NULL,
			    "look for a PCIe or driver error in the kernel log (dmesg)",
			    "port gone %s (the device was removed or reset)",
			    o->during && o->during[0] ? o->during : "between the two reads");
		} else {
			rc = compare_port(b, a, o, elapsed_s, out);
		}
		if (rc)
			return rc;
	}
	return 0;
}
