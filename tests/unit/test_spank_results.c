/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spank_results.c: the plugin's own results-log path (spank/ib_results.c):
 * a test result with one link of every outcome the cross-node test can end
 * a link with, kept as user_init keeps it (spank_ib_keep_results) and
 * appended as slurm_spank_exit appends it (spank_ib_write_results), then
 * read back by the library's reader and handed to `ibprep fabric`'s method:
 * every record as the test ended it (one vocabulary, oob.h), nothing
 * malformed, every failure of the fabric counted.  The plugin keeps links
 * only when slurmctld's node list of the step (asked in init_post_opt,
 * ib_nodes.c) is the one the test ran over: here it is set as that would.  The plugin writes only root's log: without root
 * the case is skipped, saying so.
 */
#include <errno.h>
#include <math.h>
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

#include "ibprep/fabric.h"
#include "ibprep/rdmatest.h"
#include "ibprep/results_log.h"
#include "../../spank/spank_ib.h"

struct got {
	struct ibp_link_record r[IBP_LINK_STATUS_COUNT + 1];
	size_t n;
	struct ibp_fabric *fab;
};

static int collect(void *arg, const struct ibp_link_record *r)
{
	struct got *g = arg;

	if (g->n < sizeof(g->r) / sizeof(g->r[0]))
		g->r[g->n++] = *r;
	return ibp_fabric_add(g->fab, r);
}

static void test_spank_results_every_outcome_round_trips(void **state)
{
	static struct spank_ib_state st;
	static struct spank_ib_node node;
	static struct ibp_rdmatest_result res;
	static struct got got;
	struct ibp_results_log_stats ls = {0};
	struct ibp_fabric_stats fs;
	struct ibp_findings tf;
	char dir[] = "/tmp/test_spank_results.XXXXXX", err[256], *text;
	size_t fabric_fails = 0, setup = 0, len;
	FILE *fp;

	(void)state;
	if (geteuid() != 0) {
		print_message("# skipped: the plugin appends only to root's log (needs root)\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	memset(&st, 0, sizeof(st));
	memset(&node, 0, sizeof(node));
	memset(&res, 0, sizeof(res));
	snprintf(st.conf.results_log, sizeof(st.conf.results_log), "%s/%%n.jsonl", dir);
	snprintf(st.host, sizeof(st.host), "n1");
	node.job_id = 812;
	node.step_id = 3;
	node.nodeid = 0; /* n1, of 2: Slurm's word */
	node.nnodes = 2;
	node.ctld_nodes = strdup("n[1-2]"); /* slurmctld's word, as init_post_opt asks it */
	res.nnodes = 2;
	res.index = 0;
	/* one link of each outcome, this node (n1) sending or receiving; "untested" is never kept */
	for (int s = 0; s < IBP_LINK_STATUS_COUNT; s++) {
		struct ibp_rdmatest_link *l = &res.links[res.n_links++];

		l->from = (uint32_t)(s % 2);
		l->to = (uint32_t) !(s % 2);
		l->round = (uint8_t)(1 + s % 2);
		l->rail = (uint16_t)s;
		l->status = (enum ibp_link_status)s;
		snprintf(l->device, sizeof(l->device), "mlx5_%d", s);
		snprintf(l->peer_device, sizeof(l->peer_device), "mlx5_%d", s + 20);
		l->port = 1;
		l->peer_port = 2;
		if (s == IBP_LINK_PASS || s == IBP_LINK_BW_LOW || s == IBP_LINK_LAT_HIGH) {
			l->gbps = 12.5;
			l->lat_us = 4.5;
		}
	}
	ibp_findings_init(&tf);
	spank_ib_keep_results(&st, &node, "n[1-2]", &res, &tf);
	assert_int_equal(tf.n, 0); /* kept: nothing to say */
	ibp_findings_release(&tf);
	assert_int_equal(node.n_test_records, IBP_LINK_STATUS_COUNT - 1);
	spank_ib_write_results(&st, &node);

	snprintf(err, sizeof(err), "%s/n1.jsonl", dir);
	fp = fopen(err, "r");
	assert_non_null(fp);
	text = calloc(1, 1 << 16);
	assert_non_null(text);
	len = fread(text, 1, (1 << 16) - 1, fp);
	fclose(fp);
	for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		print_message("# %.*s\n", (int)strcspn(l, "\n"), l);
	assert_int_equal(ibp_fabric_new(&got.fab, NULL, NULL), 0);
	assert_int_equal(ibp_results_log_read_buf(text, len, collect, &got, &ls), 0);
	assert_int_equal(ls.records, IBP_LINK_STATUS_COUNT - 1);
	assert_int_equal(ls.malformed + ls.cut + ls.other_version, 0);
	for (size_t i = 0; i < got.n; i++) {
		const struct ibp_link_record *r = &got.r[i];
		const struct ibp_rdmatest_link *l = &res.links[r->a_rail];
		char want[96];

		/* the link it came from: its rail says which (one per outcome) */
		assert_true(l->status != IBP_LINK_UNTESTED);
		assert_int_equal(r->status, l->status);
		snprintf(want, sizeof(want), "\"ok\":%s,\"why\":\"%s\"",
			 l->status == IBP_LINK_PASS ? "true" : "false",
			 ibp_link_status_name(l->status));
		assert_non_null(strstr(text, want));
		assert_int_equal(r->job, 812);
		assert_int_equal(r->step, 3);
		assert_int_equal(r->round, l->round);
		assert_string_equal(r->by, "n1");
		assert_string_equal(r->a, l->from == 0 ? "n1" : "n2");
		assert_string_equal(r->b, l->to == 0 ? "n1" : "n2");
		assert_string_equal(l->from == 0 ? r->a_dev : r->b_dev, l->device);
		assert_string_equal(l->from == 0 ? r->b_dev : r->a_dev, l->peer_device);
		if (l->gbps > 0)
			assert_true(fabs(r->gbps - 12.5) < 1e-9 && fabs(r->rtt_us - 4.5) < 1e-9);
		else
			assert_true(r->gbps < 0 && r->rtt_us < 0);
		if (l->status != IBP_LINK_PASS) {
			if (l->status == IBP_LINK_AUTH || l->status == IBP_LINK_PROTOCOL ||
			    l->status == IBP_LINK_LOCAL || l->status == IBP_LINK_VERSION)
				setup++;
			else
				fabric_fails++;
		}
	}
	/* the method: every failure of the fabric counted, the test's own left out */
	ibp_fabric_get_stats(got.fab, &fs);
	assert_int_equal(fabric_fails, 7);
	assert_int_equal(fs.failures, fabric_fails);
	assert_int_equal(fs.not_fabric, setup);
	ibp_fabric_free(got.fab);
	free(text);
	free(node.test_records);
	free(node.ctld_nodes);
	unlink(err);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spank_results_every_outcome_round_trips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
