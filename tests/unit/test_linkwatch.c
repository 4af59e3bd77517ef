/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the step's link events (helpers/node/linkwatch.c): the delta
 * arithmetic (saturation, wrap, widening, reset between reads), the
 * findings of two hand-made reads, and two reads of a generated tree.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/fixture.h"
#include "support/findings.h"
#include "ibprep/linkwatch.h"

static const struct {
	const char *what;
	uint64_t before, after;
	unsigned bits;
	bool wraps;
	uint64_t delta;
	bool at_least, reset, wrapped, blind;
} deltas[] = {
    {"steady", 5, 5, 8, false, 0, false, false, false, false},
    {"grew", 5, 7, 8, false, 2, false, false, false, false},
    {"saturated 8-bit after: at least", 250, 255, 8, false, 5, true, false, false, false},
    {"saturated 16-bit after", 0, 65535, 16, false, 65535, true, false, false, false},
    {"saturated 32-bit after", 10, UINT32_MAX, 32, false, UINT32_MAX - 10, true, false, false,
     false},
    {"saturated before and after: blind", 255, 255, 8, false, 0, true, false, false, true},
    {"reset between reads: counted from 0", 200, 3, 8, false, 3, true, true, false, false},
    {"reset to 0", 7, 0, 16, false, 0, true, true, false, false},
    {"saturated then reset", 65535, 12, 16, false, 12, true, true, false, false},
    {"32-bit wrapping counter wraps once", UINT32_MAX - 1, 3, 32, true, 5, false, false, true,
     false},
    {"32-bit wrapping counter at its maximum is not saturated", 0, UINT32_MAX, 32, true, UINT32_MAX,
     false, false, false, false},
    {"64-bit wrapping counter going down is a reset", 1000, 10, 64, true, 10, true, true, false,
     false},
    {"64-bit saturating counter at the maximum", 0, UINT64_MAX, 64, false, UINT64_MAX, true, false,
     false, false},
    {"a value wider than the spec width widens to 64 bits", 100, 70000, 16, false, 69900, false,
     false, false, false},
    {"wider value then down: a reset", 70000, 100, 16, false, 100, true, true, false, false},
    {"bits 0 means 64", 1, 2, 0, false, 1, false, false, false, false},
};

static void test_lw_counter_delta_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++) {
		struct ibp_lw_delta d;

		ibp_lw_counter_delta(deltas[i].before, deltas[i].after, deltas[i].bits,
				     deltas[i].wraps, &d);
		if (d.delta != deltas[i].delta || d.at_least != deltas[i].at_least ||
		    d.reset != deltas[i].reset || d.wrapped != deltas[i].wrapped ||
		    d.blind != deltas[i].blind)
			fail_msg("%s: delta %llu at_least %d reset %d wrapped %d blind %d",
				 deltas[i].what, (unsigned long long)d.delta, d.at_least, d.reset,
				 d.wrapped, d.blind);
	}
}

static void port_set(struct ibp_linkwatch *lw, const char *dev, unsigned port,
		     enum ibp_port_state st, const uint64_t *v)
{
	struct ibp_lw_port *p = &lw->ports[lw->n_ports++];

	memset(p, 0, sizeof(*p));
	snprintf(p->device, sizeof(p->device), "%s", dev);
	p->port = port;
	p->state = st;
	p->phys_state = st == IBP_PORT_ACTIVE ? IBP_PHYS_LINKUP : IBP_PHYS_POLLING;
	for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
		p->c[c].known = true;
		p->c[c].value = v[c];
		p->c[c].bits = ibp_lw_counter_bits((enum ibp_lw_counter)c);
	}
}

/* link_downed, link_error_recovery, symbol_error, port_rcv_errors, port_xmit_discards, xmit_wait */
static const uint64_t zero[IBP_LW_N_COUNTERS] = {0, 0, 0, 0, 0, 0};

static void test_lw_compare_quiet_step_has_no_findings(void **state)
{
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_findings f = {0};
	struct ibp_linkwatch_opts o = {.during = "during job 1234.0", .elapsed_s = 3600};
	(void)state;

	assert_non_null(b);
	port_set(b, "mlx5_0", 1, IBP_PORT_ACTIVE, zero);
	port_set(a, "mlx5_0", 1, IBP_PORT_ACTIVE, zero);
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	assert_int_equal(f.n, 0);
	ibp_findings_release(&f);
	free(b);
}

static void test_lw_compare_link_down_is_a_node_fault(void **state)
{
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_findings f = {0};
	struct ibp_linkwatch_opts o = {.during = "during job 1234.0", .elapsed_s = 3600};
	const uint64_t twice[IBP_LW_N_COUNTERS] = {2, 0, 0, 0, 0, 0};
	const struct ibp_finding *x;
	(void)state;

	assert_non_null(b);
	port_set(b, "mlx5_0", 1, IBP_PORT_ACTIVE, zero);
	port_set(b, "mlx5_3", 1, IBP_PORT_ACTIVE, zero);
	port_set(b, "mlx5_4", 1, IBP_PORT_ACTIVE, zero);
	port_set(a, "mlx5_0", 1, IBP_PORT_ACTIVE, zero);
	port_set(a, "mlx5_3", 1, IBP_PORT_ACTIVE, twice);
	port_set(a, "mlx5_4", 1, IBP_PORT_DOWN, zero); /* down, counter not moved */
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	assert_int_equal(f.n, 2);
	x = ibp_test_find_code(&f, "link_went_down", "mlx5_3");
	assert_non_null(x);
	assert_int_equal(x->severity, IBP_SEV_FAIL);
	assert_int_equal(x->fclass, IBP_CLASS_NODE);
	assert_int_equal(x->port, 1);
	assert_string_equal(x->observed, "link went down 2 times during job 1234.0");
	assert_string_equal(x->expected, "");
	x = ibp_test_find_code(&f, "link_went_down", "mlx5_4");
	assert_non_null(x);
	assert_string_equal(x->observed, "link went down during job 1234.0, DOWN now");
	ibp_findings_release(&f);

	/* both: counted and down now */
	port_set(a, "mlx5_9", 1, IBP_PORT_DOWN, (const uint64_t[]){1, 3, 0, 0, 0, 0});
	port_set(b, "mlx5_9", 1, IBP_PORT_ACTIVE, zero);
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	x = ibp_test_find_code(&f, "link_went_down", "mlx5_9");
	assert_non_null(x);
	assert_string_equal(x->observed, "link went down 1 time during job 1234.0, DOWN now");
	x = ibp_test_find_code(&f, "link_retrained", "mlx5_9");
	assert_non_null(x);
	assert_int_equal(x->severity, IBP_SEV_FAIL);
	assert_string_equal(x->observed,
			    "link retrained 3 times during job 1234.0 (link_error_recovery)");
	ibp_findings_release(&f);
	free(b);
}

static void test_lw_compare_errors_warn_with_rate(void **state)
{
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_findings f = {0};
	struct ibp_linkwatch_opts o = {.during = "during job 7.1", .elapsed_s = 1800};
	const uint64_t before[IBP_LW_N_COUNTERS] = {0, 0, 10, 0, 65000, 0};
	const uint64_t after[IBP_LW_N_COUNTERS] = {0, 0, 70, 0, 65535, 0};
	const struct ibp_finding *x;
	(void)state;

	assert_non_null(b);
	port_set(b, "mlx5_1", 1, IBP_PORT_ACTIVE, before);
	port_set(a, "mlx5_1", 1, IBP_PORT_ACTIVE, after);
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	assert_int_equal(f.n, 2);
	assert_int_equal(ibp_findings_worst(&f), IBP_SEV_WARN);
	x = &f.v[0];
	assert_string_equal(x->code, "counter_grew");
	assert_string_equal(x->observed, "symbol_error grew by 60 during job 7.1, 120/h");
	x = &f.v[1];
	assert_string_equal(x->observed, "port_xmit_discards grew by at least 535 during job 7.1, "
					 "at least 1070/h");
	ibp_findings_release(&f);
	free(b);
}

static void test_lw_compare_xmit_wait_fraction(void **state)
{
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_findings f = {0};
	/* 250e6 ticks of 4 ns = 1 s waited in 10 s */
	struct ibp_linkwatch_opts o = {.during = "during job 9.0", .elapsed_s = 10, .tick_ns = 4};
	const uint64_t after[IBP_LW_N_COUNTERS] = {0, 0, 0, 0, 0, 250000000};
	(void)state;

	assert_non_null(b);
	port_set(b, "mlx5_2", 1, IBP_PORT_ACTIVE, zero);
	port_set(a, "mlx5_2", 1, IBP_PORT_ACTIVE, after);
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "xmit_wait");
	assert_int_equal(f.v[0].severity, IBP_SEV_OK);
	assert_string_equal(f.v[0].observed, "waited to send 10.0% of 10.0 s during job 9.0 "
					     "(port_xmit_wait grew by 250000000 ticks of 4 ns)");
	ibp_findings_release(&f);

	/* more ticks than time: capped at 100% */
	o.tick_ns = 400;
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	assert_non_null(strstr(f.v[0].observed, "waited to send 100.0% of 10.0 s"));
	ibp_findings_release(&f);
	free(b);
}

static void test_lw_compare_reset_and_blind_are_notes(void **state)
{
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_findings f = {0};
	struct ibp_linkwatch_opts o = {.during = "during job 5.0", .elapsed_s = 60};
	const uint64_t before[IBP_LW_N_COUNTERS] = {4, 0, 65535, 0, 0, 0};
	const uint64_t after[IBP_LW_N_COUNTERS] = {1, 0, 65535, 0, 0, 0};
	const struct ibp_finding *x;
	(void)state;

	assert_non_null(b);
	port_set(b, "mlx5_0", 1, IBP_PORT_ACTIVE, before);
	port_set(a, "mlx5_0", 1, IBP_PORT_ACTIVE, after);
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	/* link_downed 4 -> 1: reset, then it went down at least once */
	x = ibp_test_find_code(&f, "link_went_down", NULL);
	assert_non_null(x);
	assert_string_equal(x->observed, "link went down at least 1 time during job 5.0");
	x = ibp_test_find_code(&f, "counter_reset", NULL);
	assert_non_null(x);
	assert_int_equal(x->severity, IBP_SEV_OK);
	assert_non_null(strstr(x->observed, "(link_downed)"));
	x = ibp_test_find_code(&f, "counter_blind", NULL);
	assert_non_null(x);
	assert_non_null(strstr(x->observed, "symbol_error saturated before"));
	ibp_findings_release(&f);
	o.quiet_counters = true;
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	assert_int_equal(f.n, 1);
	ibp_findings_release(&f);
	free(b);
}

static void test_lw_compare_vanished_port_and_unknown_counters(void **state)
{
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_findings f = {0};
	const uint64_t after[IBP_LW_N_COUNTERS] = {9, 9, 9, 9, 9, 9};
	(void)state;

	assert_non_null(b);
	port_set(b, "mlx5_0", 1, IBP_PORT_ACTIVE, zero);
	port_set(b, "mlx5_1", 1, IBP_PORT_ACTIVE, zero);
	port_set(a, "mlx5_1", 1, IBP_PORT_ACTIVE, after);
	for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++)
		a->ports[0].c[c].known = false; /* unreadable now: nothing to compare */
	assert_int_equal(ibp_linkwatch_compare(b, a, NULL, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "port_vanished");
	assert_string_equal(f.v[0].device, "mlx5_0");
	assert_string_equal(f.v[0].observed,
			    "port gone between the two reads (the device was removed or reset)");
	ibp_findings_release(&f);
	free(b);
}

static void test_lw_elapsed_prefers_monotonic(void **state)
{
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	(void)state;

	assert_non_null(b);
	b->mono_ns = 1000000000;
	a->mono_ns = 4000000000;
	b->real_ns = 10;
	a->real_ns = 20;
	assert_true(ibp_linkwatch_elapsed(b, a) == 3.0);
	b->mono_ns = 0; /* from a snapshot: realtime only */
	b->real_ns = 1000000000;
	a->real_ns = 61000000000;
	assert_true(ibp_linkwatch_elapsed(b, a) == 60.0);
	a->real_ns = 0;
	assert_true(ibp_linkwatch_elapsed(b, a) < 0);
	free(b);
}

static void test_lw_read_generated_tree_then_bump(void **state)
{
	char *root = ibp_fixture_make("--preset", "ndr", "--hcas", "2", NULL);
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_findings f = {0};
	struct ibp_linkwatch_opts o = {.during = "during job 1.0", .elapsed_s = 10};
	struct ibp_sysfs fs;
	const char *const ignore[] = {"mlx5_1", NULL};
	(void)state;

	assert_non_null(root);
	assert_non_null(b);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	assert_int_equal(ibp_linkwatch_read(b, &fs, NULL), 0);
	assert_int_equal(b->n_ports, 2);
	assert_string_equal(b->ports[0].device, "mlx5_0");
	assert_int_equal(b->ports[0].port, 1);
	assert_int_equal(b->ports[0].state, IBP_PORT_ACTIVE);
	assert_true(b->ports[0].c[IBP_LW_LINK_DOWNED].known);
	assert_int_equal(b->ports[0].c[IBP_LW_PORT_XMIT_WAIT].bits, 32);
	assert_true(b->mono_ns > 0 && b->real_ns > 0);

	assert_int_equal(
	    ibp_fixture_write(root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed",
			      "2\n"),
	    0);
	assert_int_equal(
	    ibp_fixture_write(root, "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n"), 0);
	assert_int_equal(ibp_linkwatch_read(a, &fs, NULL), 0);
	assert_int_equal(ibp_linkwatch_compare(b, a, &o, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].device, "mlx5_0");
	assert_true(strstr(f.v[0].observed, "link went down") != NULL);
	ibp_findings_release(&f);

	assert_int_equal(ibp_linkwatch_read(a, &fs, ignore), 0);
	assert_int_equal(a->n_ports, 1);
	ibp_sysfs_close(&fs);
	free(b);
	ibp_fixture_destroy(root);
}

/* Removes ROOT/REL (a file of a generated tree). */
static int unlink_under(const char *root, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return unlink(path);
}

/* Every field ibp_linkwatch_compare and the watcher read: the same in A and B (clocks aside). */
static void assert_same_ports(const struct ibp_linkwatch *a, const struct ibp_linkwatch *b,
			      bool phys)
{
	assert_int_equal(a->n_ports, b->n_ports);
	assert_int_equal(a->truncated, b->truncated);
	for (size_t i = 0; i < a->n_ports; i++) {
		const struct ibp_lw_port *pa = &a->ports[i], *pb = &b->ports[i];

		assert_string_equal(pa->device, pb->device);
		assert_int_equal(pa->port, pb->port);
		assert_int_equal(pa->state, pb->state);
		if (phys)
			assert_int_equal(pa->phys_state, pb->phys_state);
		for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
			assert_int_equal(pa->c[c].known, pb->c[c].known);
			assert_int_equal(pa->c[c].value, pb->c[c].value);
			assert_int_equal(pa->c[c].bits, pb->c[c].bits);
		}
	}
}

/*
 * The plugin's first link read taken from the inventory it has just read
 * (the placement's, with IBP_INVENTORY_LINK_COUNTERS, or a full load) is
 * the read ibp_linkwatch_read makes: the same ports, states and counters
 * (a saturated one, a wider one, a missing one), ignore= applied; a tree
 * found from the PCI side is -ENOENT (the later reads would not find it).
 * The step end's read of those ports without phys_state is the same read.
 */
static void test_lw_from_inventory_is_the_read(void **state)
{
	static const unsigned flags[] = {0, IBP_INVENTORY_PLACEMENT | IBP_INVENTORY_LINK_COUNTERS,
					 IBP_INVENTORY_NO_COUNTERS | IBP_INVENTORY_LINK_COUNTERS};
	char *root = ibp_fixture_make("--preset", "ndr", "--hcas", "3", NULL);
	struct ibp_linkwatch *read = calloc(3, sizeof(*read)), *inv_lw = read + 1, *end = read + 2;
	const char *const ignore[] = {"mlx5_1", NULL};
	struct ibp_lw_port_id ids[IBP_LW_MAX_PORTS];
	struct ibp_sysfs fs;
	(void)state;

	assert_non_null(root);
	assert_non_null(read);
	assert_int_equal(
	    ibp_fixture_write(root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed",
			      "255\n"),
	    0);
	assert_int_equal(
	    ibp_fixture_write(root, "sys/class/infiniband/mlx5_2/ports/1/counters/symbol_error",
			      "70000\n"),
	    0);
	assert_int_equal(
	    unlink_under(root, "sys/class/infiniband/mlx5_2/ports/1/counters/port_xmit_wait"), 0);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	for (int ig = 0; ig < 2; ig++) {
		assert_int_equal(ibp_linkwatch_read(read, &fs, ig ? ignore : NULL), 0);
		assert_int_equal(read->n_ports, ig ? 2 : 3);
		for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
			struct ibp_inventory inv;
			struct ibp_findings f;

			ibp_findings_init(&f);
			assert_int_equal(ibp_inventory_load_opts(&inv, &fs, flags[k], &f), 0);
			assert_int_equal(f.n, 0);
			assert_int_equal(
			    ibp_linkwatch_from_inventory(inv_lw, &inv, ig ? ignore : NULL), 0);
			assert_true(inv_lw->mono_ns > 0 && inv_lw->real_ns > 0);
			assert_same_ports(read, inv_lw, true);
			ibp_inventory_release(&inv);
			ibp_findings_release(&f);
		}
	}
	assert_true(read->ports[0].c[IBP_LW_LINK_DOWNED].known);
	assert_int_equal(read->ports[0].c[IBP_LW_LINK_DOWNED].value, 255);
	assert_int_equal(read->ports[1].c[IBP_LW_SYMBOL_ERROR].bits, 64);
	assert_false(read->ports[1].c[IBP_LW_PORT_XMIT_WAIT].known);

	/* the step end reads the first read's ports, phys_state aside */
	assert_int_equal(ibp_linkwatch_read_ports_opts(end, &fs, ids, 0, IBP_LW_NO_PHYS_STATE), 0);
	assert_int_equal(end->n_ports, 0);
	for (size_t i = 0; i < read->n_ports; i++) {
		snprintf(ids[i].device, sizeof(ids[i].device), "%s", read->ports[i].device);
		ids[i].port = read->ports[i].port;
	}
	assert_int_equal(
	    ibp_linkwatch_read_ports_opts(end, &fs, ids, read->n_ports, IBP_LW_NO_PHYS_STATE), 0);
	assert_same_ports(read, end, false);
	assert_int_equal(end->ports[0].phys_state, IBP_PHYS_UNKNOWN);
	assert_int_not_equal(read->ports[0].phys_state, IBP_PHYS_UNKNOWN);
	ibp_sysfs_close(&fs);
	ibp_fixture_destroy(root);

	/* found from the PCI side (no sys/class/infiniband): not from the inventory */
	{
		struct ibp_inventory inv;

		ibp_inventory_init(&inv);
		inv.from_pci = true;
		assert_int_equal(ibp_linkwatch_from_inventory(inv_lw, &inv, NULL), -ENOENT);
		assert_int_equal(inv_lw->n_ports, 0);
	}
	free(read);
}

/* The plugin's read handed to the watcher as text: read back as read, bad text refused. */
static void test_lw_text_round_trip(void **state)
{
	char *root = ibp_fixture_make("--preset", "ndr", "--hcas", "3", NULL);
	struct ibp_linkwatch *b = calloc(2, sizeof(*b)), *a = b + 1;
	struct ibp_lw_port_id ids[3] = {{"mlx5_2", 1}, {"mlx5_0", 1}, {"mlx5_9", 1}};
	struct ibp_sysfs fs;
	char text[IBP_LW_TEXT_MAX], small[64];
	static const char *const bad[] = {
	    "",
	    "1",
	    "x 2",
	    "1 2 mlx5_0:1 4 5 0 0 0 0 0",                      /* a counter short */
	    "1 2 mlx5_0:1 4 5 0 0 0 0 0 0 0",                  /* one too many: a port "0" */
	    "1 2 mlx5_0:0 4 5 0 0 0 0 0 0",                    /* port 0 */
	    "1 2 mlx5_0:256 4 5 0 0 0 0 0 0",                  /* port past 255 */
	    "1 2 ../x:1 4 5 0 0 0 0 0 0",                      /* not a plain name */
	    "1 2 mlx5_0:1 6 5 0 0 0 0 0 0",                    /* no such state */
	    "1 2 mlx5_0:1 4 8 0 0 0 0 0 0",                    /* no such phys state */
	    "1 2 mlx5_0:1 4 5 0 0 -1 0 0 0",                   /* a negative counter */
	    "1 2 mlx5_0:1 4 5 0 0 18446744073709551616 0 0 0", /* past u64 */
	    "9223372036854775808 2",                           /* a clock past int64 */
	};
	(void)state;

	assert_non_null(root);
	assert_non_null(b);
	assert_int_equal(ibp_fixture_write(root,
					   "sys/class/infiniband/mlx5_2/ports/1/counters/"
					   "symbol_error",
					   "70000\n"),
			 0); /* wider than its 16 bits */
	assert_int_equal(
	    ibp_fixture_write(root, "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n"), 0);
	assert_int_equal(unlink_under(root, "sys/class/infiniband/mlx5_0/ports/1/counters/"
					    "port_xmit_wait"),
			 0); /* unknown */
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	assert_int_equal(ibp_linkwatch_read(b, &fs, NULL), 0);
	assert_int_equal(ibp_linkwatch_to_text(b, ids, 3, text, sizeof(text)), 0);
	assert_int_equal(ibp_linkwatch_from_text(text, a), 0);
	/* mlx5_9 is not in the read: left out; the order is IDS' */
	assert_int_equal(a->n_ports, 2);
	assert_int_equal(a->mono_ns, b->mono_ns);
	assert_int_equal(a->real_ns, b->real_ns);
	for (size_t i = 0; i < 2; i++) {
		const struct ibp_lw_port *x = &a->ports[i];
		const struct ibp_lw_port *y = ibp_linkwatch_find(b, ids[i].device, ids[i].port);

		assert_non_null(y);
		assert_string_equal(x->device, ids[i].device);
		assert_int_equal(x->port, y->port);
		assert_int_equal(x->state, y->state);
		assert_int_equal(x->phys_state, y->phys_state);
		for (unsigned c = 0; c < IBP_LW_N_COUNTERS; c++) {
			assert_int_equal(x->c[c].known, y->c[c].known);
			assert_int_equal(x->c[c].value, y->c[c].value);
			if (y->c[c].known)
				assert_int_equal(x->c[c].bits, y->c[c].bits);
		}
	}
	assert_int_equal(a->ports[0].c[IBP_LW_SYMBOL_ERROR].bits, 64);
	assert_int_equal(a->ports[1].state, IBP_PORT_DOWN);
	assert_false(a->ports[1].c[IBP_LW_PORT_XMIT_WAIT].known);
	assert_int_equal(ibp_linkwatch_to_text(b, ids, 3, small, sizeof(small)), -ENAMETOOLONG);
	assert_string_equal(small, "");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a->n_ports = 7;
		assert_int_equal(ibp_linkwatch_from_text(bad[i], a), -EINVAL);
		assert_int_equal(a->n_ports, 0);
	}
	assert_int_equal(ibp_linkwatch_from_text(NULL, a), -EINVAL);
	ibp_sysfs_close(&fs);
	free(b);
	ibp_fixture_destroy(root);
}

static void test_lw_read_no_rdma_is_empty(void **state)
{
	char *root = ibp_fixture_tmpdir();
	struct ibp_linkwatch *lw = calloc(1, sizeof(*lw));
	struct ibp_sysfs fs;
	(void)state;

	assert_non_null(root);
	assert_non_null(lw);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	assert_int_equal(ibp_linkwatch_read(lw, &fs, NULL), 0);
	assert_int_equal(lw->n_ports, 0);
	ibp_sysfs_close(&fs);
	free(lw);
	ibp_fixture_destroy(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lw_counter_delta_table),
	    cmocka_unit_test(test_lw_from_inventory_is_the_read),
	    cmocka_unit_test(test_lw_compare_quiet_step_has_no_findings),
	    cmocka_unit_test(test_lw_compare_link_down_is_a_node_fault),
	    cmocka_unit_test(test_lw_compare_errors_warn_with_rate),
	    cmocka_unit_test(test_lw_compare_xmit_wait_fraction),
	    cmocka_unit_test(test_lw_compare_reset_and_blind_are_notes),
	    cmocka_unit_test(test_lw_compare_vanished_port_and_unknown_counters),
	    cmocka_unit_test(test_lw_elapsed_prefers_monotonic),
	    cmocka_unit_test(test_lw_read_generated_tree_then_bump),
	    cmocka_unit_test(test_lw_read_no_rdma_is_empty),
	    cmocka_unit_test(test_lw_text_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
