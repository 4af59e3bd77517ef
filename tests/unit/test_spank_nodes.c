/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_nodes.c: the step's nodes by Slurm's word (ib_nodes.c) and
 * what the results log keeps of a test (ib_results.c), against a fake
 * slurm_job_step_layout_get exported by this binary (the plugin looks the
 * Slurm API up in the process that loaded it, as in slurmstepd): the job's
 * SLURM_STEP_NODELIST against S_JOB_NNODES and this node at S_JOB_NODEID;
 * records only of this node's own links, only from a result of this node,
 * only when slurmctld's node list is the one the test ran over.
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
#include <slurm/slurm.h>

#include "../../spank/spank_ib.h"
#include "ibprep/rdmatest.h"
#include "ibprep/results_log.h"

/* ---- the fake Slurm API: slurmctld's layout of the step ---- */

static const char *ctld_list; /* NULL: slurmctld says no (fake_errno) */
static int fake_errno, layout_gets;
static slurm_step_id_t asked;

slurm_step_layout_t *slurm_job_step_layout_get(slurm_step_id_t *step_id);
void slurm_job_step_layout_free(slurm_step_layout_t *layout);
int slurm_get_errno(void);
char *slurm_strerror(int err);

slurm_step_layout_t *slurm_job_step_layout_get(slurm_step_id_t *step_id)
{
	slurm_step_layout_t *l;

	layout_gets++;
	asked = *step_id;
	if (!ctld_list)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (l)
		l->node_list = strdup(ctld_list);
	return l;
}

void slurm_job_step_layout_free(slurm_step_layout_t *layout)
{
	if (!layout)
		return;
	free(layout->node_list);
	free(layout);
}

int slurm_get_errno(void)
{
	return fake_errno;
}

char *slurm_strerror(int err)
{
	static char gone[] = "Job/step already completing or completed", other[] = "other";

	return err == 2021 ? gone : other;
}

/* ---- the tests ---- */

static const struct {
	const char *list;
	uint32_t nnodes, nodeid;
	const char *self;
	int rc;
	const char *why; /* in the message */
} checks[] = {
    {"n[1-3]", 3, 1, "n2", 0, NULL},
    {"n1", 1, 0, "n1", 0, NULL},
    /* a list changed alone: the count, or another node at this node's place */
    {"n[1-2],n5", 2, 0, "n1", -EINVAL, "names 3 nodes, Slurm launched this step on 2"},
    {"n1,n5", 2, 1, "n2", -EINVAL, "has n5 at this node's place 1 (S_JOB_NODEID), this node is n2"},
    {"n[1-2]", 2, 2, "n2", -EINVAL, "has nothing at this node's place 2"},
    {"n[1-", 2, 0, "n1", -EINVAL, "does not parse"},
    {"", 1, 0, "n1", -EINVAL, ""},
};

static void test_nodelist_against_the_launch_table(void **state)
{
	char why[512];

	(void)state;
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		int rc;

		why[0] = '\0';
		rc = spank_ib_nodelist_check(checks[i].list, checks[i].nnodes, checks[i].nodeid,
					     checks[i].self, why, sizeof(why));
		if (rc != checks[i].rc)
			fail_msg("case %zu (%s): rc %d, want %d (%s)", i, checks[i].list, rc,
				 checks[i].rc, why);
		if (checks[i].why && !strstr(why, checks[i].why))
			fail_msg("case %zu: '%s' lacks '%s'", i, why, checks[i].why);
	}
}

static void test_same_nodes_in_order(void **state)
{
	(void)state;
	assert_true(spank_ib_same_nodes("n[1-3]", "n1,n2,n3"));
	assert_true(spank_ib_same_nodes("gpu[001-002]", "gpu001,gpu002"));
	assert_false(spank_ib_same_nodes("n[1-3]", "n1,n3,n2"));
	assert_false(spank_ib_same_nodes("n[1-3]", "n[1-2]"));
	assert_false(spank_ib_same_nodes("n[1,4]", "n[1-2]"));
	assert_false(spank_ib_same_nodes("n[1-", "n[1-"));
}

static void test_ctld_step_nodes(void **state)
{
	char out[64], err[256];

	(void)state;
	ctld_list = "n[1-2]";
	assert_int_equal(spank_ib_ctld_step_nodes(7, 3, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "n[1-2]");
	assert_int_equal(asked.job_id, 7);
	assert_int_equal(asked.step_id, 3);
	assert_int_equal(asked.step_het_comp, NO_VAL);
	ctld_list = NULL;
	fake_errno = 2021;
	assert_int_equal(spank_ib_ctld_step_nodes(7, 3, out, sizeof(out), err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "slurmctld gave no layout for step 7.3: Job/step already"));
	ctld_list = "a-very-long-node-name[0001-9999],another-long-name[0001-9999],x";
	assert_int_equal(spank_ib_ctld_step_nodes(7, 3, out, 16, err, sizeof(err)), -ENAMETOOLONG);
	assert_string_equal(out, "");
}

/* A result of node NODEID of NNODES with links (from, to) as given. */
static void result(struct ibp_rdmatest_result *res, size_t index, size_t nnodes,
		   const uint32_t (*links)[2], size_t n)
{
	memset(res, 0, sizeof(*res));
	res->index = index;
	res->nnodes = nnodes;
	res->n_links = n;
	for (size_t i = 0; i < n; i++) {
		res->links[i].from = links[i][0];
		res->links[i].to = links[i][1];
		res->links[i].round = 1;
		res->links[i].status = IBP_LINK_PASS;
		res->links[i].lat_us = 10;
		res->links[i].gbps = 5;
	}
}

static size_t kept(struct spank_ib_state *st, struct spank_ib_node *n, const char *list,
		   const struct ibp_rdmatest_result *res, struct ibp_findings *f)
{
	free(n->test_records);
	n->test_records = NULL;
	n->n_test_records = 0;
	ibp_findings_release(f);
	ibp_findings_init(f);
	spank_ib_keep_results(st, n, list, res, f);
	return n->n_test_records;
}

static void test_records_only_this_nodes_links_slurmctld_confirms(void **state)
{
	static struct spank_ib_state st;
	static struct ibp_rdmatest_result res;
	struct spank_ib_node n;
	struct ibp_findings f;
	char ctld_same[] = "n[1-3]", ctld_other[] = "n[1-2],n5";
	/* n2 (place 1 of 3): its own links, one between n1 and n3, one to itself */
	static const uint32_t links[][2] = {{1, 2}, {0, 1}, {0, 2}, {2, 0}, {1, 1}};

	(void)state;
	memset(&n, 0, sizeof(n));
	ibp_findings_init(&f);
	snprintf(st.host, sizeof(st.host), "n2");
	snprintf(st.conf.results_log, sizeof(st.conf.results_log), "/nonexistent/results");
	n.job_id = 7;
	n.step_id = 3;
	n.nodeid = 1;
	n.nnodes = 3;
	result(&res, 1, 3, links, 5);
	/* slurmctld's word, asked in init_post_opt: never from user_init, where this runs */
	n.ctld_nodes = ctld_same;
	layout_gets = 0;
	assert_int_equal(kept(&st, &n, "n[1-3]", &res, &f), 2);
	assert_int_equal(layout_gets, 0);
	assert_int_equal(f.n, 0);
	for (size_t i = 0; i < n.n_test_records; i++) {
		const struct ibp_link_record *r = &n.test_records[i];

		assert_string_equal(r->by, "n2");
		assert_true(!strcmp(r->a, "n2") || !strcmp(r->b, "n2"));
		assert_int_equal(r->job, 7);
	}
	assert_string_equal(n.test_records[0].a, "n2");
	assert_string_equal(n.test_records[0].b, "n3");
	assert_string_equal(n.test_records[1].a, "n1");
	assert_string_equal(n.test_records[1].b, "n2");

	/* slurmctld's list is another: nothing kept, and the user is told why */
	n.ctld_nodes = ctld_other;
	assert_int_equal(kept(&st, &n, "n[1-3]", &res, &f), 0);
	assert_int_equal(f.n, 1);
	assert_string_equal(f.v[0].code, "rdmatest_links_not_recorded");
	assert_int_equal(f.v[0].severity, IBP_SEV_WARN);
	assert_non_null(strstr(f.v[0].observed, "slurmctld's node list of the step is n[1-2],n5"));
	/* slurmctld does not answer: nothing kept */
	n.ctld_nodes = NULL;
	snprintf(n.ctld_err, sizeof(n.ctld_err), "slurmctld gave no layout for step 7.3");
	assert_int_equal(kept(&st, &n, "n[1-3]", &res, &f), 0);
	assert_non_null(strstr(f.v[0].observed, "slurmctld did not confirm the step's nodes: "
						"slurmctld gave no layout for step 7.3"));

	/* a result that is not this node's place: nothing kept */
	n.ctld_nodes = ctld_same;
	result(&res, 0, 3, links, 5);
	assert_int_equal(kept(&st, &n, "n[1-3]", &res, &f), 0);
	assert_non_null(
	    strstr(f.v[0].observed, "result is for place 0 of 3 nodes, this node is 1"));
	result(&res, 1, 4, links, 5);
	assert_int_equal(kept(&st, &n, "n[1-3]", &res, &f), 0);

	/* no results_log=: nothing asked, nothing kept */
	result(&res, 1, 3, links, 5);
	st.conf.results_log[0] = '\0';
	assert_int_equal(kept(&st, &n, "n[1-3]", &res, &f), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(layout_gets, 0);
	n.ctld_nodes = NULL;
	free(n.test_records);
	ibp_findings_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodelist_against_the_launch_table),
	    cmocka_unit_test(test_same_nodes_in_order),
	    cmocka_unit_test(test_ctld_step_nodes),
	    cmocka_unit_test(test_records_only_this_nodes_links_slurmctld_confirms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
