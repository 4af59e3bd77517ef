/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_watch.c: the watch of watch.h: scripted reads of one port beside a
 * steady one (down that stays, flaps between two reads and within
 * watch_flap=, a link down past it, retrains, errors, a port that vanishes
 * and comes back), what each event says, and polls of a generated tree.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/watch.h"
#include "support/fixture.h"

#define NS 1000000000LL

/* One read of the scripted port mlx5_3/1: its state and counters at T seconds. */
struct step {
	double t;
	char state; /* 'A' ACTIVE, 'D' DOWN, 'G' gone */
	unsigned downed, recov, symerr;
	const char *expect; /* the events, "kind" or "kind!" (ends), comma-separated */
};

struct script {
	const char *what;
	double flap_s;
	struct step steps[8];
};

static const struct script scripts[] = {
    {"steady", 0, {{0, 'A', 0, 0, 0, ""}, {1, 'A', 0, 0, 0, ""}, {2, 'A', 0, 0, 0, ""}}},
    {"down that stays, then back",
     0,
     {{0, 'A', 0, 0, 0, ""},
      {1, 'D', 1, 0, 0, "down!"},
      {2, 'D', 1, 0, 0, ""},
      {3, 'D', 2, 0, 0, ""},
      {9, 'A', 2, 0, 0, "up"}}},
    {"down and back between two reads", 0, {{0, 'A', 0, 0, 0, ""}, {1, 'A', 1, 0, 0, "flap"}}},
    {"down, back within watch_flap=5",
     5,
     {{0, 'A', 0, 0, 0, ""}, {1, 'D', 1, 0, 0, "down"}, {3, 'A', 1, 0, 0, "flap"}}},
    {"down past watch_flap=5",
     5,
     {{0, 'A', 0, 0, 0, ""},
      {1, 'D', 1, 0, 0, "down"},
      {4, 'D', 1, 0, 0, ""},
      {6.5, 'D', 1, 0, 0, "lasting!"},
      {7.5, 'D', 1, 0, 0, ""},
      {8, 'A', 1, 0, 0, "up"}}},
    {"state DOWN without link_downed", 0, {{0, 'A', 0, 0, 0, ""}, {1, 'D', 0, 0, 0, "down!"}}},
    {"retrained", 0, {{0, 'A', 0, 0, 0, ""}, {1, 'A', 0, 1, 0, "retrained"}}},
    {"errors grew", 0, {{0, 'A', 0, 0, 0, ""}, {1, 'A', 0, 0, 5, "errors"}}},
    {"vanished and back",
     5,
     {{0, 'A', 0, 0, 0, ""},
      {1, 'G', 0, 0, 0, "vanished!"},
      {2, 'G', 0, 0, 0, ""},
      {3, 'A', 0, 0, 0, "up"}}},
    {"down, then gone while down",
     0,
     {{0, 'A', 0, 0, 0, ""}, {1, 'D', 1, 0, 0, "down!"}, {2, 'G', 1, 0, 0, ""}}},
};

static void port_set(struct ibp_linkwatch *lw, const char *dev, unsigned port, char state,
		     unsigned downed, unsigned recov, unsigned symerr)
{
	struct ibp_lw_port *p;

	if (state == 'G')
		return;
	p = &lw->ports[lw->n_ports++];
	memset(p, 0, sizeof(*p));
	snprintf(p->device, sizeof(p->device), "%s", dev);
	p->port = port;
	p->state = state == 'A' ? IBP_PORT_ACTIVE : IBP_PORT_DOWN;
	p->phys_state = state == 'A' ? IBP_PHYS_LINKUP : IBP_PHYS_POLLING;
	for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
		p->c[c].known = true;
		p->c[c].bits = ibp_lw_counter_bits((enum ibp_lw_counter)c);
	}
	p->c[IBP_LW_LINK_DOWNED].value = downed;
	p->c[IBP_LW_LINK_ERROR_RECOVERY].value = recov;
	p->c[IBP_LW_SYMBOL_ERROR].value = symerr;
}

static void kinds(const struct ibp_watch_event *ev, size_t n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s%s", i ? "," : "",
				      ibp_watch_kind_name(ev[i].kind), ev[i].ends ? "!" : "");
}

static void test_watch_scripts_events(void **state)
{
	struct ibp_watch *w = calloc(1, sizeof(*w));
	struct ibp_linkwatch *cur = calloc(1, sizeof(*cur));
	struct ibp_watch_event ev[IBP_WATCH_MAX_EVENTS];
	(void)state;

	assert_non_null(w);
	assert_non_null(cur);
	for (size_t s = 0; s < sizeof(scripts) / sizeof(scripts[0]); s++) {
		const struct script *sc = &scripts[s];

		assert_int_equal(ibp_watch_init(w, sc->flap_s, NULL, 0, NULL), 0);
		for (size_t i = 0; i < 8 && (i == 0 || sc->steps[i].t > 0); i++) {
			const struct step *st = &sc->steps[i];
			char got[256];
			size_t n = 99;

			memset(cur, 0, sizeof(*cur));
			cur->mono_ns = (int64_t)(st->t * NS) + 1000 * NS;
			cur->real_ns = cur->mono_ns + 1764600000 * NS;
			port_set(cur, "mlx5_0", 1, 'A', 0, 0, 0);
			port_set(cur, "mlx5_3", 1, st->state, st->downed, st->recov, st->symerr);
			assert_int_equal(ibp_watch_update(w, cur, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
			kinds(ev, n, got, sizeof(got));
			if (strcmp(got, st->expect) != 0)
				fail_msg("%s, read %zu (t=%.1f): events '%s', expected '%s'",
					 sc->what, i, st->t, got, st->expect);
			for (size_t k = 0; k < n; k++) {
				if (strcmp(ev[k].f.device, "mlx5_3") != 0 || ev[k].f.port != 1)
					fail_msg("%s: an event of %s port %d", sc->what,
						 ev[k].f.device, ev[k].f.port);
				if (ev[k].real_ns != cur->real_ns)
					fail_msg("%s: event time is not the poll's", sc->what);
			}
		}
	}
	free(cur);
	free(w);
}

/* The first event of one two-read script: its finding. */
static struct ibp_watch_event one_event(double flap_s, char s1, unsigned downed, unsigned recov,
					unsigned symerr, double t1)
{
	struct ibp_watch *w = calloc(1, sizeof(*w));
	struct ibp_linkwatch *cur = calloc(1, sizeof(*cur));
	struct ibp_watch_event ev[IBP_WATCH_MAX_EVENTS], out;
	size_t n = 0;

	assert_non_null(w);
	assert_non_null(cur);
	assert_int_equal(ibp_watch_init(w, flap_s, NULL, 0, NULL), 0);
	cur->mono_ns = 5 * NS;
	cur->real_ns = 1764600000 * NS;
	port_set(cur, "mlx5_3", 1, 'A', 0, 0, 0);
	assert_int_equal(ibp_watch_update(w, cur, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_int_equal(n, 0);
	cur->n_ports = 0;
	cur->mono_ns += (int64_t)(t1 * NS);
	cur->real_ns += (int64_t)(t1 * NS) + 412000000;
	port_set(cur, "mlx5_3", 1, s1, downed, recov, symerr);
	assert_int_equal(ibp_watch_update(w, cur, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_true(n >= 1);
	out = ev[0];
	free(cur);
	free(w);
	return out;
}

static void test_watch_event_findings_say_what_and_when(void **state)
{
	struct ibp_watch_event e;
	char when[40];
	(void)state;

	ibp_watch_time_text(1764600001 * NS + 412000000, when, sizeof(when));
	assert_int_equal(strlen(when), 23); /* 2025-12-01T15:40:01.412 in some zone */
	assert_string_equal(when + 19, ".412");

	e = one_event(0, 'D', 1, 0, 0, 1);
	assert_string_equal(e.f.code, "link_went_down");
	assert_int_equal(e.f.severity, IBP_SEV_FAIL);
	assert_int_equal(e.f.fclass, IBP_CLASS_NODE);
	assert_true(ibp_finding_drainable(&e.f));
	assert_true(e.ends);
	assert_non_null(strstr(e.f.observed, "link went down at "));
	assert_non_null(strstr(e.f.observed, when));
	assert_non_null(strstr(e.f.observed, "(DOWN, phys Polling)"));
	assert_non_null(strstr(e.f.fix, "cable"));

	e = one_event(0, 'A', 1, 0, 0, 1);
	assert_string_equal(e.f.code, "link_flapped");
	assert_false(e.ends);
	assert_true(ibp_finding_drainable(&e.f));
	assert_non_null(strstr(e.f.observed, "between two reads"));

	e = one_event(0, 'A', 0, 3, 0, 1);
	assert_string_equal(e.f.code, "link_retrained");
	assert_false(e.ends);
	assert_non_null(strstr(e.f.observed, "link retrained 3 times at "));

	e = one_event(0, 'A', 0, 0, 7, 1);
	assert_string_equal(e.f.code, "counter_grew");
	assert_int_equal(e.f.severity, IBP_SEV_WARN);
	assert_false(ibp_finding_drainable(&e.f));
	assert_non_null(strstr(e.f.observed, "symbol_error grew by 7 at "));

	e = one_event(0, 'G', 0, 0, 0, 1);
	assert_string_equal(e.f.code, "port_vanished");
	assert_true(e.ends);
	assert_true(ibp_finding_drainable(&e.f));
}

static void test_watch_lasting_and_flap_durations(void **state)
{
	struct ibp_watch *w = calloc(1, sizeof(*w));
	struct ibp_linkwatch *cur = calloc(1, sizeof(*cur));
	struct ibp_watch_event ev[IBP_WATCH_MAX_EVENTS];
	static const struct {
		double t;
		char st;
	} reads[] = {{0, 'A'}, {1, 'D'}, {3.5, 'D'}, {4.5, 'A'}, {10, 'D'}, {13, 'D'}};
	size_t n;
	(void)state;

	assert_non_null(w);
	assert_non_null(cur);
	assert_int_equal(ibp_watch_init(w, 3, NULL, 0, NULL), 0);
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		memset(cur, 0, sizeof(*cur));
		cur->mono_ns = (int64_t)(reads[i].t * NS) + NS;
		cur->real_ns = cur->mono_ns + 1764600000 * NS;
		port_set(cur, "mlx5_3", 1, reads[i].st, 0, 0, 0);
		assert_int_equal(ibp_watch_update(w, cur, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
		if (i == 2) { /* 2.5 s down: within 3 s */
			assert_int_equal(n, 0);
		} else if (i == 3) {
			assert_int_equal(n, 1);
			assert_int_equal(ev[0].kind, IBP_WATCH_FLAP);
			assert_true(ev[0].down_s > 3.49 && ev[0].down_s < 3.51);
			assert_non_null(strstr(ev[0].f.observed, "ACTIVE again 3.5 s later"));
		} else if (i == 5) {
			assert_int_equal(n, 1);
			assert_int_equal(ev[0].kind, IBP_WATCH_LASTING);
			assert_string_equal(ev[0].f.code, "link_still_down");
			assert_true(ev[0].ends);
			assert_non_null(strstr(ev[0].f.observed, "still DOWN after 3.0 s"));
			assert_non_null(strstr(ev[0].f.observed, "watch_flap=3 s"));
		}
	}
	free(cur);
	free(w);
}

static void test_watch_init_refuses_bad_input(void **state)
{
	struct ibp_watch *w = calloc(1, sizeof(*w));
	struct ibp_lw_port_id ids[2] = {{"mlx5_0", 1}, {"../x", 1}};
	(void)state;

	assert_non_null(w);
	assert_int_equal(ibp_watch_init(w, 0, ids, 1, NULL), 0);
	assert_int_equal(ibp_watch_init(w, 0, ids, 2, NULL), -EINVAL);
	ids[1] = (struct ibp_lw_port_id){"mlx5_1", 0};
	assert_int_equal(ibp_watch_init(w, 0, ids, 2, NULL), -EINVAL);
	assert_int_equal(ibp_watch_init(w, -1, ids, 1, NULL), -EINVAL);
	assert_int_equal(ibp_watch_init(w, 0, ids, IBP_LW_MAX_PORTS + 1, NULL), -E2BIG);
	free(w);
}

static void test_port_ids_parse_table(void **state)
{
	static const struct {
		const char *in;
		int rc;
		size_t n;
		const char *last_dev;
		unsigned last_port;
	} cases[] = {
	    {"mlx5_0:1", 0, 1, "mlx5_0", 1},
	    {"mlx5_0:1,mlx5_3:2", 0, 2, "mlx5_3", 2},
	    {"bnxt_re0:255", 0, 1, "bnxt_re0", 255},
	    {"mlx5_bond_0:1,mlx5_1:1", 0, 2, "mlx5_1", 1},
	    {"", -EINVAL, 0, NULL, 0},
	    {"mlx5_0", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:", -EINVAL, 0, NULL, 0},
	    {":1", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:0", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:01", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:256", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:1x", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:1,", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:1,,mlx5_1:1", -EINVAL, 0, NULL, 0},
	    {"../x:1", -EINVAL, 0, NULL, 0},
	    {"a/b:1", -EINVAL, 0, NULL, 0},
	    {"..:1", -EINVAL, 0, NULL, 0},
	    {"mlx5_0:1,mlx5_1:1,mlx5_2:1", -E2BIG, 0, NULL, 0}, /* room for 2 */
	};
	struct ibp_lw_port_id ids[2];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 99;
		int rc = ibp_lw_port_ids_parse(cases[i].in, ids, 2, &n);

		if (rc != cases[i].rc)
			fail_msg("'%s': %d, expected %d", cases[i].in, rc, cases[i].rc);
		if (rc)
			continue;
		assert_int_equal(n, cases[i].n);
		assert_string_equal(ids[n - 1].device, cases[i].last_dev);
		assert_int_equal(ids[n - 1].port, cases[i].last_port);
	}
}

static void test_watch_poll_generated_tree(void **state)
{
	char *root = ibp_fixture_make("--preset", "ndr", "--hcas", "4", NULL);
	struct ibp_watch *w = calloc(1, sizeof(*w));
	struct ibp_lw_port_id ids[2] = {{"mlx5_1", 1}, {"mlx5_3", 1}};
	struct ibp_watch_event ev[IBP_WATCH_MAX_EVENTS];
	struct ibp_sysfs fs;
	size_t n = 99;
	(void)state;

	assert_non_null(root);
	assert_non_null(w);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	assert_int_equal(ibp_watch_init(w, 0, ids, 2, NULL), 0);
	assert_int_equal(ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(w->prev.n_ports, 2); /* only the two watched */
	assert_int_equal(ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_int_equal(n, 0);
	/* a port of a device not watched goes down: nothing */
	assert_int_equal(
	    ibp_fixture_write(root, "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n"), 0);
	assert_int_equal(ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(
	    ibp_fixture_write(root, "sys/class/infiniband/mlx5_3/ports/1/state", "1: DOWN\n"), 0);
	assert_int_equal(ibp_fixture_write(root, "sys/class/infiniband/mlx5_3/ports/1/phys_state",
					   "2: Polling\n"),
			 0);
	assert_int_equal(ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].kind, IBP_WATCH_DOWN);
	assert_string_equal(ev[0].f.device, "mlx5_3");
	assert_non_null(strstr(ev[0].f.observed, "(DOWN, phys Polling)"));
	/* the other watched port's device is removed (a reset): vanished */
	assert_int_equal(ibp_fixture_remove(root, "sys/class/infiniband/mlx5_1"), 0);
	assert_int_equal(ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].kind, IBP_WATCH_VANISHED);
	assert_string_equal(ev[0].f.device, "mlx5_1");
	assert_true(ev[0].ends);
	assert_int_equal(ibp_watch_poll(w, &fs, ev, IBP_WATCH_MAX_EVENTS, &n), 0);
	assert_int_equal(n, 0);
	ibp_sysfs_close(&fs);
	free(w);
	ibp_fixture_destroy(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watch_scripts_events),
	    cmocka_unit_test(test_watch_event_findings_say_what_and_when),
	    cmocka_unit_test(test_watch_lasting_and_flap_durations),
	    cmocka_unit_test(test_watch_init_refuses_bad_input),
	    cmocka_unit_test(test_port_ids_parse_table),
	    cmocka_unit_test(test_watch_poll_generated_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
