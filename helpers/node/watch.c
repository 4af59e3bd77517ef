/* SPDX-License-Identifier: GPL-2.0-or-later */
/* watch.c: the ports read every poll, and what changed as timed events (watch.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ibprep/watch.h"

static const char *const kind_names[IBP_WATCH_N_KINDS] = {
    [IBP_WATCH_DOWN] = "down",           [IBP_WATCH_FLAP] = "flap",
    [IBP_WATCH_LASTING] = "lasting",     [IBP_WATCH_UP] = "up",
    [IBP_WATCH_RETRAINED] = "retrained", [IBP_WATCH_VANISHED] = "vanished",
    [IBP_WATCH_ERRORS] = "errors",
};

const char *ibp_watch_kind_name(enum ibp_watch_kind k)
{
	return (unsigned)k < IBP_WATCH_N_KINDS ? kind_names[k] : "?";
}

void ibp_watch_time_text(int64_t real_ns, char *buf, size_t len)
{
	time_t t = (time_t)(real_ns / 1000000000);
	struct tm tm;
	char day[32];

	if (!len)
		return;
	if (real_ns <= 0 || !localtime_r(&t, &tm) ||
	    !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "unknown time");
		return;
	}
	snprintf(buf, len, "%s.%03d", day, (int)((real_ns / 1000000) % 1000));
}

int ibp_watch_init(struct ibp_watch *w, double flap_s, const struct ibp_lw_port_id *ids, size_t n,
		   const char *const *ignore)
{
	memset(w, 0, sizeof(*w));
	if (n > IBP_LW_MAX_PORTS)
		return -E2BIG;
	if (!(flap_s >= 0 && flap_s <= 3600))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		size_t len = strnlen(ids[i].device, sizeof(ids[i].device));

		if (!len || len == sizeof(ids[i].device) || strchr(ids[i].device, '/') ||
		    ids[i].port < 1 || ids[i].port > 255)
			return -EINVAL;
		w->ids[i] = ids[i];
	}
	w->n_ids = n;
	w->flap_s = flap_s;
	w->ignore = ignore;
	return 0;
}

/* The port's track, made on first sight; NULL when the table is full. */
static struct ibp_watch_track *track_of(struct ibp_watch *w, const char *dev, unsigned port)
{
	struct ibp_watch_track *t;

	for (size_t i = 0; i < w->n_track; i++)
		if (w->track[i].id.port == port && !strcmp(w->track[i].id.device, dev))
			return &w->track[i];
	if (w->n_track == IBP_LW_MAX_PORTS)
		return NULL;
	t = &w->track[w->n_track++];
	memset(t, 0, sizeof(*t));
	snprintf(t->id.device, sizeof(t->id.device), "%s", dev);
	t->id.port = port;
	return t;
}

struct out {
	struct ibp_watch_event *ev;
	size_t max, n;
	int64_t real_ns;
};

/* The next event slot, filled with what every event has; NULL when full. */
static struct ibp_watch_event *event(struct out *o, enum ibp_watch_kind kind, const char *dev,
				     unsigned port, const struct ibp_finding *like)
{
	struct ibp_watch_event *e;

	if (o->n == o->max)
		return NULL;
	e = &o->ev[o->n++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->real_ns = o->real_ns;
	e->down_s = -1;
	if (like)
		e->f = *like;
	e->f.node[0] = '\0';
	snprintf(e->f.device, sizeof(e->f.device), "%s", dev);
	e->f.port = (int)port;
	e->f.fclass = IBP_CLASS_NODE;
	e->f.severity = IBP_SEV_FAIL;
	return e;
}

static void set_code(struct ibp_watch_event *e, const char *code)
{
	snprintf(e->f.code, sizeof(e->f.code), "%s", code);
}

static const char down_fix[] =
    "check the cable, the transceiver and the switch port; the switch's log has the times";

/* What comes of one finding of the comparison. */
static void from_finding(struct ibp_watch *w, const struct ibp_linkwatch *cur,
			 const struct ibp_finding *x, struct out *o)
{
	const struct ibp_lw_port *now = ibp_linkwatch_find(cur, x->device, (unsigned)x->port);
	struct ibp_watch_track *t = track_of(w, x->device, (unsigned)x->port);
	struct ibp_watch_event *e;
	char when[40];

	ibp_watch_time_text(o->real_ns, when, sizeof(when));
	if (!strcmp(x->code, "port_vanished")) {
		if (t && t->lasting && t->down)
			return;
		e = event(o, IBP_WATCH_VANISHED, x->device, (unsigned)x->port, x);
		if (!e)
			return;
		e->ends = true;
		if (t && !t->down) {
			t->down = true;
			t->down_mono_ns = cur->mono_ns;
			t->down_real_ns = cur->real_ns;
		}
		if (t)
			t->lasting = true;
		return;
	}
	if (!strcmp(x->code, "link_went_down")) {
		if (now && ibp_port_state_active(now->state)) {
			/* down and back between two reads: shorter than one interval */
			e = event(o, IBP_WATCH_FLAP, x->device, (unsigned)x->port, x);
			if (!e)
				return;
			set_code(e, "link_flapped");
			snprintf(e->f.observed, sizeof(e->f.observed),
				 "link went down and came back between two reads at %s "
				 "(link_downed grew), ACTIVE now",
				 when);
			return;
		}
		if (!t || t->down)
			return; /* already down: said when it went */
		t->down = true;
		t->lasting = w->flap_s <= 0;
		t->down_mono_ns = cur->mono_ns;
		t->down_real_ns = cur->real_ns;
		e = event(o, IBP_WATCH_DOWN, x->device, (unsigned)x->port, x);
		if (!e)
			return;
		e->ends = t->lasting;
		if (now)
			snprintf(e->f.observed, sizeof(e->f.observed),
				 "link went down at %s (%s, phys %s)", when,
				 ibp_port_state_name(now->state),
				 ibp_phys_state_name(now->phys_state));
		else
			snprintf(e->f.observed, sizeof(e->f.observed), "link went down at %s",
				 when);
		return;
	}
	if (!strcmp(x->code, "link_retrained")) {
		(void)event(o, IBP_WATCH_RETRAINED, x->device, (unsigned)x->port, x);
		return;
	}
	if (!strcmp(x->code, "counter_grew")) {
		e = event(o, IBP_WATCH_ERRORS, x->device, (unsigned)x->port, x);
		if (e)
			e->f.severity = x->severity;
	}
	/* xmit_wait, counter_reset, counter_blind: the step end's business */
}

/* Ports seen down that are ACTIVE again, and those down past flap_s. */
static void timers(struct ibp_watch *w, const struct ibp_linkwatch *cur, struct out *o)
{
	char when[40], since[40];

	ibp_watch_time_text(o->real_ns, when, sizeof(when));
	for (size_t i = 0; i < w->n_track; i++) {
		struct ibp_watch_track *t = &w->track[i];
		const struct ibp_lw_port *now;
		struct ibp_watch_event *e;
		double down_s;

		if (!t->down)
			continue;
		now = ibp_linkwatch_find(cur, t->id.device, t->id.port);
		down_s = (double)(cur->mono_ns - t->down_mono_ns) / 1e9;
		ibp_watch_time_text(t->down_real_ns, since, sizeof(since));
		if (now && ibp_port_state_active(now->state)) {
			bool flap = !t->lasting;

			t->down = t->lasting = false;
			e = event(o, flap ? IBP_WATCH_FLAP : IBP_WATCH_UP, t->id.device, t->id.port,
				  NULL);
			if (!e)
				continue;
			e->down_s = down_s;
			set_code(e, flap ? "link_flapped" : "link_back");
			if (!flap)
				e->f.severity = IBP_SEV_OK;
			snprintf(e->f.fix, sizeof(e->f.fix), "%s", down_fix);
			snprintf(e->f.observed, sizeof(e->f.observed),
				 flap ? "link went down at %s and was ACTIVE again %.1f s later"
				      : "link down since %s is ACTIVE again after %.1f s",
				 since, down_s);
			continue;
		}
		if (t->lasting || down_s < w->flap_s)
			continue;
		t->lasting = true;
		e = event(o, IBP_WATCH_LASTING, t->id.device, t->id.port, NULL);
		if (!e)
			continue;
		e->ends = true;
		e->down_s = down_s;
		set_code(e, "link_still_down");
		snprintf(e->f.fix, sizeof(e->f.fix), "%s", down_fix);
		snprintf(e->f.observed, sizeof(e->f.observed),
			 "link down since %s, still %s after %.1f s (more than watch_flap=%g s)",
			 since, now ? ibp_port_state_name(now->state) : "gone", down_s, w->flap_s);
	}
}

int ibp_watch_update(struct ibp_watch *w, const struct ibp_linkwatch *cur,
		     struct ibp_watch_event *ev, size_t max, size_t *n)
{
	struct out o = {.ev = ev, .max = max, .n = 0, .real_ns = cur->real_ns};
	struct ibp_linkwatch_opts lo;
	struct ibp_findings f;
	char during[48], when[40];
	int rc = 0;

	*n = 0;
	w->polls++;
	if (!w->have_prev) {
		w->prev = *cur;
		w->have_prev = true;
		return 0;
	}
	ibp_watch_time_text(cur->real_ns, when, sizeof(when));
	snprintf(during, sizeof(during), "at %s", when);
	memset(&lo, 0, sizeof(lo));
	lo.during = during;
	lo.quiet_counters = true;
	lo.no_rate = true;
	ibp_findings_init(&f);
	rc = ibp_linkwatch_compare(&w->prev, cur, &lo, &f);
	if (!rc)
		for (size_t i = 0; i < f.n; i++)
			from_finding(w, cur, &f.v[i], &o);
	ibp_findings_release(&f);
	timers(w, cur, &o);
	/* A port that vanished stays out of the comparison until it is back. */
	w->prev = *cur;
	*n = o.n;
	return rc;
}

int ibp_watch_poll(struct ibp_watch *w, const struct ibp_sysfs *fs, struct ibp_watch_event *ev,
		   size_t max, size_t *n)
{
	struct ibp_linkwatch cur;
	int rc;

	*n = 0;
	rc = w->n_ids ? ibp_linkwatch_read_ports(&cur, fs, w->ids, w->n_ids)
		      : ibp_linkwatch_read(&cur, fs, w->ignore);
	if (rc)
		return rc;
	return ibp_watch_update(w, &cur, ev, max, n);
}
