/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the check's text table and JSON document (helpers/place/report.c). */
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

#include "ibprep/report.h"

/* Two HCAs: mlx5_0 healthy, mlx5_1 down; a node_desc with hostile bytes. */
static void make(struct ibp_health_input *in)
{
	ibp_health_input_init(in);
	snprintf(in->node, sizeof(in->node), "gpu017");
	in->inv.n_hcas = 2;
	in->inv.hcas = calloc(2, sizeof(struct ibp_hca));
	assert_non_null(in->inv.hcas);
	for (size_t i = 0; i < 2; i++) {
		struct ibp_hca *h = &in->inv.hcas[i];
		snprintf(h->name, sizeof(h->name), "mlx5_%zu", i);
		snprintf(h->pci, sizeof(h->pci), "0000:1%zu:00.0", i);
		snprintf(h->hca_type, sizeof(h->hca_type), "MT4129");
		h->numa = (int)i;
		h->ports = calloc(1, sizeof(struct ibp_port));
		h->n_ports = 1;
		struct ibp_port *p = &h->ports[0];
		p->num = 1;
		p->state = i ? IBP_PORT_DOWN : IBP_PORT_ACTIVE;
		p->phys_state = i ? IBP_PHYS_DISABLED : IBP_PHYS_LINKUP;
		p->rate = (struct ibp_rate){true, 400, 4, "NDR"};
		p->link_layer = IBP_LL_IB;
		p->lid = 5;
		p->sm_lid = 1;
		p->lid_mask_count = -1;
		p->counters = calloc(2, sizeof(struct ibp_counter));
		p->n_counters = 2;
		snprintf(p->counters[0].name, 48, "link_downed");
		p->counters[0].value = 255;
		p->counters[0].bits = 8;
		p->counters[0].saturated = true;
		snprintf(p->counters[1].name, 48, "VL15_dropped");
		p->counters[1].read_errno = -EINVAL;
	}
	snprintf(in->inv.hcas[0].node_desc, sizeof(in->inv.hcas[0].node_desc),
		 "evil \"desc\"\n\x01\xff");
	in->memlock_source = IBP_MEMLOCK_SELF;
	in->memlock_kb = 64;
}

static char *capture_text(const struct ibp_health_input *in, const struct ibp_policy *p,
			  const struct ibp_findings *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	assert_non_null(fp);
	assert_int_equal(ibp_report_text(fp, in, p, f), 0);
	fclose(fp);
	return buf;
}

static void test_report_text_table_findings_verdict(void **state)
{
	struct ibp_health_input in;
	struct ibp_policy p;
	struct ibp_findings f = {0};
	(void)state;
	make(&in);
	ibp_policy_init(&p);
	assert_int_equal(ibp_health_check(&in, &p, &f), 0);
	char *t = capture_text(&in, &p, &f);
	/* header, two port rows with their verdicts */
	assert_non_null(strstr(t, "DEVICE  PORT  STATE   PHYS"));
	assert_non_null(strstr(t, "mlx5_0     1  ACTIVE  LinkUp     400 Gb/sec (4X NDR)  "
				  "InfiniBand  0000:10:00.0     0  warn\n"));
	assert_non_null(strstr(t, "mlx5_1     1  DOWN    Disabled   400 Gb/sec (4X NDR)  "
				  "InfiniBand  0000:11:00.0     1  fail\n"));
	/* failures before warnings, DESIGN.md wording */
	char *down = strstr(t, "fail gpu017: mlx5_1 port 1: port state DOWN (physical state "
			       "Disabled), expected ACTIVE: ");
	char *mem = strstr(t, "fail gpu017: locked-memory limit 64 KiB, expected unlimited: ");
	char *ctr =
	    strstr(t, "warn gpu017: mlx5_[0-1] port 1: link_downed at least 255 (8-bit "
		      "counter saturated) on 2 ports, expected at most 10 (counter_warn): ");
	assert_non_null(down);
	assert_non_null(mem);
	assert_non_null(ctr);
	assert_true(down < ctr && mem < ctr);
	assert_non_null(strstr(t, "\nverdict: fail (2 failures, 1 warning)\n"));
	free(t);
	ibp_findings_release(&f);

	/* ignored device: its row says so and it is not judged */
	assert_int_equal(ibp_policy_set(&p, "ignore_hcas", "mlx5_1", NULL, 0), 0);
	in.memlock_kb = UINT64_MAX;
	assert_int_equal(ibp_health_check(&in, &p, &f), 0);
	t = capture_text(&in, &p, &f);
	assert_non_null(strstr(t, "0000:11:00.0     1  ignored\n"));
	assert_non_null(strstr(t, "verdict: warn (1 warning)\n"));
	free(t);
	ibp_findings_release(&f);
	ibp_health_input_release(&in);
}

static void test_report_text_no_device_pass(void **state)
{
	struct ibp_health_input in;
	struct ibp_policy p;
	struct ibp_findings f = {0};
	(void)state;
	ibp_health_input_init(&in);
	snprintf(in.node, sizeof(in.node), "cpu1");
	ibp_policy_init(&p);
	assert_int_equal(ibp_policy_set(&p, "expect_hcas", "0", NULL, 0), 0);
	assert_int_equal(ibp_health_check(&in, &p, &f), 0);
	char *t = capture_text(&in, &p, &f);
	assert_string_equal(t, "verdict: pass\n");
	free(t);
	assert_string_equal(ibp_findings_verdict(&f), "pass");
}

static void test_report_json_valid_and_complete(void **state)
{
	struct ibp_health_input in;
	struct ibp_policy p;
	struct ibp_findings f = {0};
	struct ibp_json j;
	(void)state;
	make(&in);
	ibp_policy_init(&p);
	assert_int_equal(ibp_health_check(&in, &p, &f), 0);
	ibp_json_init_buf(&j, 0);
	assert_int_equal(ibp_report_json(&j, &in, &p, &f), 0);
	assert_int_equal(ibp_json_finish(&j), 0);
	const char *s = ibp_json_buf(&j, NULL);
	assert_non_null(strstr(s, "{\"schema\":1,\"node\":\"gpu017\",\"verdict\":\"fail\","));
	assert_non_null(strstr(s, "\"node_desc\":\"evil \\\"desc\\\"\\n\\u0001\\ufffd\""));
	assert_non_null(strstr(s, "\"port\":1,\"state\":\"DOWN\",\"phys_state\":\"Disabled\","
				  "\"rate_gbps\":400,\"width\":4,\"speed\":\"NDR\","
				  "\"link_layer\":\"InfiniBand\",\"lid\":5,\"sm_lid\":1,"
				  "\"lid_mask_count\":null"));
	assert_non_null(strstr(s, "\"counters\":{\"link_downed\":255}"));
	assert_non_null(strstr(s, "\"saturated_counters\":[\"link_downed\"],"
				  "\"unreadable_counters\":[\"VL15_dropped\"]"));
	assert_non_null(strstr(s, "{\"code\":\"port_not_active\",\"severity\":\"fail\","
				  "\"class\":\"node\",\"node\":\"gpu017\",\"device\":\"mlx5_1\","
				  "\"port\":1,\"observed\":"));
	assert_non_null(strstr(s, "{\"code\":\"memlock_low\",\"severity\":\"fail\",\"class\":"
				  "\"node\",\"node\":\"gpu017\",\"device\":null,\"port\":null,"));
	assert_non_null(strstr(s, "\"memlock\":{\"source\":\"self\",\"limit_kb\":64,"));

	/* and a JSON parser agrees it is valid */
	if (system("python3 -c '' 2>/dev/null") == 0) {
		char path[] = "/tmp/test_report_XXXXXX";
		int fd = mkstemp(path);
		assert_true(fd >= 0);
		size_t len;
		const char *b = ibp_json_buf(&j, &len);
		assert_int_equal(write(fd, b, len), (ssize_t)len);
		close(fd);
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s >/dev/null", path);
		int rc = system(cmd);
		unlink(path);
		assert_int_equal(rc, 0);
	} else {
		printf("# python3 missing: JSON validated by the exact substrings only\n");
	}
	ibp_json_release(&j);
	ibp_findings_release(&f);
	ibp_health_input_release(&in);
}

static void test_report_finding_line(void **state)
{
	struct ibp_findings f = {0};
	char line[256];
	(void)state;
	ibp_findings_addf(&f, "roce_gid_index", IBP_SEV_OK, IBP_CLASS_NODE, "mlx5_0", 1, NULL,
			  "NCCL_IB_GID_INDEX=3", "RoCE v2 GID index 3");
	ibp_report_finding_line(&f.v[0], "n1", line, sizeof(line));
	assert_string_equal(line,
			    "info n1: mlx5_0 port 1: RoCE v2 GID index 3: NCCL_IB_GID_INDEX=3");
	ibp_findings_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_report_text_table_findings_verdict),
	    cmocka_unit_test(test_report_text_no_device_pass),
	    cmocka_unit_test(test_report_json_valid_and_complete),
	    cmocka_unit_test(test_report_finding_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
