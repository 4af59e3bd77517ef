/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_drain.c: spank_ib_drain_node (ib_drain.c), the plugin's
 * drain=yes, against fake Slurm API calls exported by this binary: the
 * plugin looks them up in the process that loaded it (slurmstepd), as it
 * does there.  Nothing to drain, no NodeName for the host in slurm.conf
 * (the path no cluster test reaches: every test node has one), a NodeName
 * too long, the RPC's error, and the drain itself with its reason.
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
#include <slurm/slurm.h>

#include "../../spank/spank_ib.h"
#include "ibprep/finding.h"

/* ---- the fake Slurm API (what slurm.conf and slurmctld would answer) ---- */

static const char *fake_nodename; /* slurm_conf_get_nodename's answer, NULL: none */
static int fake_update_rc, fake_errno, updates, frees;
static char got_names[256], got_reason[256];
static uint32_t got_state;

char *slurm_conf_get_nodename(const char *host);
void slurm_xfree_ptr(void *p);
void slurm_init_update_node_msg(update_node_msg_t *msg);
int slurm_update_node(update_node_msg_t *msg);
int slurm_get_errno(void);
char *slurm_strerror(int err);

char *slurm_conf_get_nodename(const char *host)
{
	(void)host;
	return fake_nodename ? strdup(fake_nodename) : NULL;
}

void slurm_xfree_ptr(void *p)
{
	frees++;
	free(p);
}

void slurm_init_update_node_msg(update_node_msg_t *msg)
{
	memset(msg, 0, sizeof(*msg));
	msg->node_state = NO_VAL;
}

int slurm_update_node(update_node_msg_t *msg)
{
	updates++;
	snprintf(got_names, sizeof(got_names), "%s", msg->node_names ? msg->node_names : "");
	snprintf(got_reason, sizeof(got_reason), "%s", msg->reason ? msg->reason : "");
	got_state = msg->node_state;
	return fake_update_rc;
}

int slurm_get_errno(void)
{
	return fake_errno;
}

char *slurm_strerror(int err)
{
	static char invalid[] = "Invalid node name specified", other[] = "unexpected error";

	return err == 2017 ? invalid : other;
}

/* ---- the tests ---- */

static void reset(const char *nodename, int update_rc, int err)
{
	fake_nodename = nodename;
	fake_update_rc = update_rc;
	fake_errno = err;
	updates = frees = 0;
	got_names[0] = got_reason[0] = '\0';
	got_state = 0;
}

/* A node fault on mlx5_3 port 1 (drains) or only a warning (does not). */
static void findings(struct ibp_findings *f, bool fault)
{
	ibp_findings_init(f);
	ibp_findings_addf(f, "port_down", fault ? IBP_SEV_FAIL : IBP_SEV_WARN, IBP_CLASS_NODE,
			  "mlx5_3", 1, "port ACTIVE", "reseat the cable", "state DOWN");
}

struct drain_case {
	const char *what;
	bool fault;
	const char *nodename; /* slurm.conf's NodeName for this host */
	int update_rc, err;
	bool drained;
	const char *said; /* WHAT, "%u" the euid when not root */
	int n_updates;
};

static void test_drain_node_cases(void **state)
{
	static char too_long[300];
	const struct drain_case cases[] = {
	    {"nothing drains", false, "n7", 0, 0, false, "", 0},
	    {"no NodeName for the host", true, NULL, 0, 0, false,
	     "not draining: no NodeName for host gpu07 in slurm.conf (No such file or directory)",
	     0},
	    {"a NodeName past the buffer", true, too_long, 0, 0, false,
	     "not draining: no NodeName for host gpu07 in slurm.conf (File name too long)", 0},
	    {"the RPC fails", true, "n7", -1, 2017, false,
	     "draining n7 failed: Invalid node name specified", 1},
	    {"drained", true, "n7", 0, 0, true, "draining n7", 1},
	};
	(void)state;

	memset(too_long, 'n', sizeof(too_long) - 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct drain_case *c = &cases[i];
		struct ibp_findings f;
		char node[64] = "", what[256], want[256];
		bool drained;

		reset(c->nodename, c->update_rc, c->err);
		findings(&f, c->fault);
		drained = spank_ib_drain_node("gpu07", &f, node, sizeof(node), what, sizeof(what));
		snprintf(want, sizeof(want), "%s", c->said);
		if (c->n_updates && geteuid() != 0) /* the API is root's: said before any RPC */
			snprintf(want, sizeof(want), "draining n7 failed: not root (euid %u)",
				 (unsigned)geteuid());
		if (strcmp(what, want))
			fail_msg("%s: said '%s', expected '%s'", c->what, what, want);
		assert_int_equal(drained, c->drained && geteuid() == 0);
		assert_int_equal(updates, geteuid() == 0 ? c->n_updates : 0);
		/* whatever Slurm's allocator returned is given back to it */
		assert_int_equal(frees, c->fault && c->nodename ? 1 : 0);
		if (updates) {
			assert_string_equal(got_names, "n7");
			assert_int_equal(got_state, NODE_STATE_DRAIN);
			assert_non_null(strstr(got_reason, "spank-ib: "));
			assert_non_null(strstr(got_reason, "mlx5_3"));
		}
		ibp_findings_release(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drain_node_cases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
