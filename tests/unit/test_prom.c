/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the Prometheus exposition writer and the atomic textfile (helpers/node/prom.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/prom.h"
#include "support/fixture.h"

/* fsync fails on demand: the textfile must then be left as it was. */
int __wrap_fsync(int fd);
int __real_fsync(int fd);
static int fail_fsync;

int __wrap_fsync(int fd)
{
	if (fail_fsync) {
		errno = EIO;
		return -1;
	}
	return __real_fsync(fd);
}

static const struct {
	const char *in, *want;
} escapes[] = {
    {"mlx5_0", "mlx5_0"},          {"a\\b", "a\\\\b"}, {"say \"hi\"", "say \\\"hi\\\""},
    {"two\nlines", "two\\nlines"}, {"", ""},           {"\\\"\n", "\\\\\\\"\\n"},
};

static void test_prom_escape_backslash_quote_newline(void **state)
{
	char out[64];
	(void)state;
	for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
		int n = ibp_prom_escape(escapes[i].in, out, sizeof(out));
		assert_string_equal(out, escapes[i].want);
		assert_int_equal(n, (int)strlen(escapes[i].want));
	}
	/* never cut: a value that does not fit is refused */
	assert_int_equal(ibp_prom_escape("abcd\"", out, 6), -ENOSPC);
	assert_string_equal(out, "");
	assert_int_equal(ibp_prom_escape("abcd", out, 5), 4);
}

static const struct {
	const char *name;
	bool metric, label;
} names[] = {
    {"ibprep_finding", true, true},
    {"ibprep:rule_total", true, false},
    {"_x", true, true},
    {"__reserved", true, false},
    {"9lives", false, false},
    {"has-dash", false, false},
    {"has space", false, false},
    {"", false, false},
    {"device", true, true},
    {"ünicode", false, false},
};

static void test_prom_names_valid_per_format(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(ibp_prom_name_valid(names[i].name), names[i].metric);
		assert_int_equal(ibp_prom_label_name_valid(names[i].name), names[i].label);
	}
	assert_false(ibp_prom_name_valid(NULL));
}

static char *write_some(int (*fn)(struct ibp_prom *), int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct ibp_prom *w = malloc(sizeof(*w));
	assert_non_null(w);
	ibp_prom_init(w, f);
	fn(w);
	*rc = ibp_prom_finish(w);
	free(w);
	fclose(f);
	return buf;
}

static int good(struct ibp_prom *w)
{
	ibp_prom_family(w, "ibprep_x_bytes", "gauge", "a help with \\ and\nnewline");
	ibp_prom_sample(w, "ibprep_x_bytes", (const char *const[]){"device", "a\"b", NULL}, 3);
	ibp_prom_sample(w, "ibprep_x_bytes", NULL, INFINITY);
	ibp_prom_sample(w, "ibprep_x_bytes", NULL, NAN);
	ibp_prom_sample(w, "ibprep_x_bytes", NULL, 0.25);
	ibp_prom_sample(w, "ibprep_x_bytes", NULL, 9007199254740991.0);
	return 0;
}

static int twice(struct ibp_prom *w)
{
	ibp_prom_family(w, "ibprep_a", "gauge", "a");
	ibp_prom_family(w, "ibprep_b", "gauge", "b");
	return ibp_prom_family(w, "ibprep_a", "gauge", "a again");
}

static int outside(struct ibp_prom *w)
{
	ibp_prom_family(w, "ibprep_a", "gauge", "a");
	return ibp_prom_sample(w, "ibprep_b", NULL, 1);
}

static int bad_label(struct ibp_prom *w)
{
	ibp_prom_family(w, "ibprep_a", "gauge", "a");
	return ibp_prom_sample(w, "ibprep_a", (const char *const[]){"bad-name", "v", NULL}, 1);
}

static int bad_type(struct ibp_prom *w)
{
	return ibp_prom_family(w, "ibprep_a", "histogramm", "a");
}

static void test_prom_writer_format_and_refusals(void **state)
{
	int rc;
	(void)state;
	char *out = write_some(good, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "# HELP ibprep_x_bytes a help with \\\\ and\\nnewline\n"
				 "# TYPE ibprep_x_bytes gauge\n"
				 "ibprep_x_bytes{device=\"a\\\"b\"} 3\n"
				 "ibprep_x_bytes +Inf\n"
				 "ibprep_x_bytes NaN\n"
				 "ibprep_x_bytes 0.25\n"
				 "ibprep_x_bytes 9007199254740991\n");
	free(out);
	int (*bad[])(struct ibp_prom *) = {twice, outside, bad_label, bad_type};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = write_some(bad[i], &rc);
		assert_int_equal(rc, -EINVAL);
		free(out);
	}
}

/* mlx5_0 healthy NDR 4X; mlx5_1 down with a hostile name; two counter findings with the same labels. */
static void make(struct ibp_health_input *in, struct ibp_findings *f)
{
	ibp_health_input_init(in);
	snprintf(in->node, sizeof(in->node), "gpu017");
	in->inv.n_hcas = 2;
	in->inv.hcas = calloc(2, sizeof(struct ibp_hca));
	assert_non_null(in->inv.hcas);
	for (size_t i = 0; i < 2; i++) {
		struct ibp_hca *h = &in->inv.hcas[i];
		snprintf(h->name, sizeof(h->name), i ? "mlx5_\"1\\\n" : "mlx5_0");
		snprintf(h->pci, sizeof(h->pci), "0000:1%zu:00.0", i);
		h->pcie = (struct ibp_pcie_link){32.0, 32.0, i ? 8 : 16, 16};
		h->ports = calloc(1, sizeof(struct ibp_port));
		assert_non_null(h->ports);
		h->n_ports = 1;
		struct ibp_port *p = &h->ports[0];
		p->num = 1;
		p->state = i ? IBP_PORT_DOWN : IBP_PORT_ACTIVE;
		p->rate = (struct ibp_rate){true, 400, 4, "NDR"};
	}
	in->gpus_nvidia = 8;
	in->gpus_amd = 0;
	in->gdr_known = true;
	in->gdr_loaded = true;
	snprintf(in->gdr_module, sizeof(in->gdr_module), "nvidia_peermem");
	in->memlock_source = IBP_MEMLOCK_SLURMD;
	in->memlock_kb = 64;
	ibp_findings_init(f);
	const char *dev1 = in->inv.hcas[1].name;
	assert_int_equal(ibp_findings_addf(f, "port_not_active", IBP_SEV_FAIL, IBP_CLASS_NODE, dev1,
					   1, "ACTIVE", NULL, "port state DOWN"),
			 0);
	assert_int_equal(ibp_findings_addf(f, "pcie_downtrained", IBP_SEV_FAIL, IBP_CLASS_NODE,
					   dev1, 0, "x16", NULL, "x8"),
			 0);
	for (int k = 0; k < 2; k++)
		assert_int_equal(ibp_findings_addf(f, "counter_high", IBP_SEV_WARN, IBP_CLASS_NODE,
						   "mlx5_0", 1, NULL, NULL, "counter %d", k),
				 0);
	assert_int_equal(ibp_findings_addf(f, "memlock_low", IBP_SEV_FAIL, IBP_CLASS_NODE, NULL, 0,
					   "unlimited", NULL, "64 KiB"),
			 0);
}

static char *check_text(const struct ibp_prom_check *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(ibp_prom_write_check(f, c), 0);
	fclose(f);
	return buf;
}

/* Every sample line is NAME[{labels}] VALUE, and no series appears twice. */
static void assert_well_formed(const char *text)
{
	char *copy = strdup(text), *save = NULL;
	char *series[512];
	size_t n = 0;
	assert_non_null(copy);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#') {
			assert_true(!strncmp(l, "# HELP ibprep_", 14) ||
				    !strncmp(l, "# TYPE ibprep_", 14));
			continue;
		}
		assert_true(!strncmp(l, "ibprep_", 7));
		char *sp = strrchr(l, ' ');
		assert_non_null(sp);
		*sp = '\0';
		for (size_t i = 0; i < n; i++)
			assert_string_not_equal(series[i], l);
		assert_true(n < 512);
		series[n++] = l;
	}
	free(copy);
}

static void test_prom_check_metrics_escaped_no_duplicates(void **state)
{
	struct ibp_health_input in;
	struct ibp_findings f;
	struct ibp_policy pol;
	struct ibp_prom_pair pair = {3, "0000:18:00.0", "mlx5_0", 1, "PIX"};
	(void)state;

	make(&in, &f);
	ibp_policy_init(&pol);
	struct ibp_prom_check c = {&in, &pol, &f, &pair, 1, true, 0.0125, "1.2.3"};
	char *t = check_text(&c);
	assert_well_formed(t);
	static const char *const want[] = {
	    "ibprep_build_info{version=\"1.2.3\"} 1\n",
	    "ibprep_check_verdict{verdict=\"fail\"} 1\n",
	    "ibprep_check_verdict{verdict=\"pass\"} 0\n",
	    "ibprep_check_duration_seconds 0.0125\n",
	    "ibprep_finding{code=\"port_not_active\",severity=\"fail\",class=\"node\","
	    "device=\"mlx5_\\\"1\\\\\\n\",port=\"1\"} 1\n",
	    "ibprep_finding{code=\"counter_high\",severity=\"warn\",class=\"node\","
	    "device=\"mlx5_0\",port=\"1\"} 2\n",
	    "ibprep_finding{code=\"memlock_low\",severity=\"fail\",class=\"node\",device=\"\","
	    "port=\"\"} 1\n",
	    "ibprep_port_healthy{device=\"mlx5_0\",port=\"1\"} 1\n",
	    "ibprep_port_healthy{device=\"mlx5_\\\"1\\\\\\n\",port=\"1\"} 0\n",
	    "ibprep_port_link_width_lanes{device=\"mlx5_0\",port=\"1\"} 4\n",
	    "ibprep_port_link_speed_generation{device=\"mlx5_0\",port=\"1\",speed=\"NDR\"} 8\n",
	    "ibprep_hca_pcie_link_width_lanes{device=\"mlx5_0\",pci=\"0000:10:00.0\"} 16\n",
	    "ibprep_hca_pcie_link_speed_transfers_per_second{device=\"mlx5_0\",pci=\"0000:10:00."
	    "0\"} "
	    "32000000000\n",
	    "ibprep_hca_pcie_downtrained{device=\"mlx5_0\",pci=\"0000:10:00.0\"} 0\n",
	    "ibprep_hca_pcie_downtrained{device=\"mlx5_\\\"1\\\\\\n\",pci=\"0000:11:00.0\"} 1\n",
	    "ibprep_gpudirect_module_loaded{module=\"nvidia_peermem\"} 1\n",
	    "ibprep_memlock_limit_bytes{source=\"slurmd\"} 65536\n",
	    "ibprep_gpus{vendor=\"nvidia\"} 8\n",
	    "ibprep_gpu_hca_pair{gpu=\"3\",gpu_pci=\"0000:18:00.0\",device=\"mlx5_0\",port=\"1\","
	    "distance=\"PIX\"} 1\n",
	    "# TYPE ibprep_finding gauge\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(t, want[i]))
			fail_msg("missing: %s\nin:\n%s", want[i], t);
	/* the down port has no link to describe */
	assert_null(strstr(t, "ibprep_port_link_width_lanes{device=\"mlx5_\\\"1"));
	free(t);

	/* unlimited is +Inf; no topology: no pair family; ignored HCAs left out */
	in.memlock_kb = UINT64_MAX;
	char pair_err[256];
	assert_int_equal(
	    ibp_policy_set_pair(&pol, "ignore_hcas=mlx5_0", pair_err, sizeof(pair_err)), 0);
	c.pairs_known = false;
	t = check_text(&c);
	assert_well_formed(t);
	assert_non_null(strstr(t, "ibprep_memlock_limit_bytes{source=\"slurmd\"} +Inf\n"));
	assert_null(strstr(t, "ibprep_gpu_hca_pair"));
	assert_null(strstr(t, "ibprep_port_healthy{device=\"mlx5_0\""));
	free(t);
	ibp_findings_release(&f);
	ibp_health_input_release(&in);
}

static char *slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_prom_write_file_atomic_and_failures(void **state)
{
	char path[512], missing[512];
	struct stat st;
	(void)state;
	char *dir = ibp_fixture_tmpdir();
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/%s", dir, IBP_PROM_TEXTFILE);

	assert_int_equal(ibp_prom_write_file(dir, IBP_PROM_TEXTFILE, "a 1\n", 4), 0);
	assert_string_equal(slurp(path), "a 1\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(ibp_prom_write_file(dir, IBP_PROM_TEXTFILE, "a 2\n", 4), 0);
	assert_string_equal(slurp(path), "a 2\n");
	assert_int_equal(ibp_fixture_count_entries(dir), 1);

	/* a failure half way leaves the old file and no temporary one */
	fail_fsync = 1;
	assert_int_equal(ibp_prom_write_file(dir, IBP_PROM_TEXTFILE, "a 3\n", 4), -EIO);
	fail_fsync = 0;
	assert_string_equal(slurp(path), "a 2\n");
	assert_int_equal(ibp_fixture_count_entries(dir), 1);

	snprintf(missing, sizeof(missing), "%s/nope", dir);
	assert_int_equal(ibp_prom_write_file(missing, IBP_PROM_TEXTFILE, "x", 1), -ENOENT);
	assert_int_equal(ibp_prom_write_file(path, IBP_PROM_TEXTFILE, "x", 1), -ENOTDIR);
	assert_int_equal(ibp_prom_write_file(dir, "../escape.prom", "x", 1), -EINVAL);
	assert_int_equal(ibp_prom_write_file(dir, "", "x", 1), -EINVAL);
	assert_int_equal(ibp_fixture_count_entries(dir), 1);
	ibp_fixture_destroy(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prom_escape_backslash_quote_newline),
	    cmocka_unit_test(test_prom_names_valid_per_format),
	    cmocka_unit_test(test_prom_writer_format_and_refusals),
	    cmocka_unit_test(test_prom_check_metrics_escaped_no_duplicates),
	    cmocka_unit_test(test_prom_write_file_atomic_and_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
