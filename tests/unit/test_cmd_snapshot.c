/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_cmd_snapshot.c: `ibprep snapshot` copies a tree that replays with the
 * same inventory, field by field, and never copies what lies outside the
 * root, blocks on a FIFO, or writes over an existing directory.
 */
#include <errno.h>
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

#include "../../helpers/ibprep_cmd.h"
#include "ibprep/hca.h"
#include "support/fixture.h"

static int run_snapshot(const char *root, const char *out)
{
	char *argv[] = {(char *)"snapshot", (char *)"--sysfs-root", (char *)root, (char *)out,
			NULL};
	fflush(stdout);
	return ibprep_cmd_snapshot(4, argv);
}

static void load(const char *root, struct ibp_inventory *inv, struct ibp_findings *f)
{
	struct ibp_sysfs fs;
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	ibp_findings_init(f);
	assert_int_equal(ibp_inventory_load(inv, &fs, f), 0);
	ibp_sysfs_close(&fs);
}

#define SAME_STR(a, b, what)                                                                       \
	do {                                                                                       \
		if (strcmp((a), (b)) != 0)                                                         \
			fail_msg("%s: '%s' vs '%s'", what, a, b);                                  \
	} while (0)
#define SAME_NUM(a, b, what)                                                                       \
	do {                                                                                       \
		if ((a) != (b))                                                                    \
			fail_msg("%s: %lld vs %lld", what, (long long)(a), (long long)(b));        \
	} while (0)

static void compare_port(const char *dev, const struct ibp_port *a, const struct ibp_port *b)
{
	char w[160];
	snprintf(w, sizeof(w), "%s port %u", dev, a->num);
	SAME_NUM(a->num, b->num, w);
	SAME_NUM(a->state, b->state, w);
	SAME_NUM(a->phys_state, b->phys_state, w);
	SAME_NUM(a->rate.known, b->rate.known, w);
	SAME_NUM(a->rate.gbps * 10, b->rate.gbps * 10, w);
	SAME_NUM(a->rate.width, b->rate.width, w);
	SAME_STR(a->rate.speed, b->rate.speed, w);
	SAME_NUM(a->link_layer, b->link_layer, w);
	SAME_NUM(a->lid, b->lid, w);
	SAME_NUM(a->sm_lid, b->sm_lid, w);
	SAME_NUM(a->lid_mask_count, b->lid_mask_count, w);
	SAME_STR(a->netdev, b->netdev, w);
	SAME_NUM(a->n_gids, b->n_gids, w);
	for (size_t i = 0; i < a->n_gids; i++) {
		SAME_NUM(a->gids[i].index, b->gids[i].index, w);
		SAME_STR(a->gids[i].addr, b->gids[i].addr, w);
		SAME_NUM(a->gids[i].type, b->gids[i].type, w);
		SAME_STR(a->gids[i].ndev, b->gids[i].ndev, w);
		SAME_NUM(a->gids[i].ipv4_mapped, b->gids[i].ipv4_mapped, w);
	}
	SAME_NUM(a->n_counters, b->n_counters, w);
	for (size_t i = 0; i < a->n_counters; i++) {
		const struct ibp_counter *x = &a->counters[i], *y = &b->counters[i];
		SAME_STR(x->name, y->name, w);
		SAME_NUM(x->hw, y->hw, x->name);
		SAME_NUM(x->value, y->value, x->name);
		SAME_NUM(x->bits, y->bits, x->name);
		SAME_NUM(x->saturated, y->saturated, x->name);
		SAME_NUM(x->read_errno, y->read_errno, x->name);
	}
}

/* Every field of two inventories; N_HCAS > 0 demands that much content. */
static void compare_inventories(const struct ibp_inventory *a, const struct ibp_inventory *b)
{
	SAME_NUM(a->n_hcas, b->n_hcas, "device count");
	for (size_t i = 0; i < a->n_hcas; i++) {
		const struct ibp_hca *x = &a->hcas[i], *y = &b->hcas[i];
		const char *w = x->name;
		SAME_STR(x->name, y->name, "name");
		SAME_STR(x->node_guid, y->node_guid, w);
		SAME_STR(x->fw_ver, y->fw_ver, w);
		SAME_STR(x->hca_type, y->hca_type, w);
		SAME_STR(x->board_id, y->board_id, w);
		SAME_STR(x->node_desc, y->node_desc, w);
		SAME_STR(x->pci, y->pci, w);
		SAME_NUM(x->numa, y->numa, w);
		SAME_STR(x->local_cpus, y->local_cpus, w);
		SAME_NUM(x->pcie.cur_gts * 10, y->pcie.cur_gts * 10, w);
		SAME_NUM(x->pcie.max_gts * 10, y->pcie.max_gts * 10, w);
		SAME_NUM(x->pcie.cur_width, y->pcie.cur_width, w);
		SAME_NUM(x->pcie.max_width, y->pcie.max_width, w);
		SAME_STR(x->upstream_pci, y->upstream_pci, w);
		SAME_NUM(x->pcie_upstream.cur_gts * 10, y->pcie_upstream.cur_gts * 10, w);
		SAME_NUM(x->pcie_upstream.cur_width, y->pcie_upstream.cur_width, w);
		SAME_NUM(x->pcie_upstream.max_width, y->pcie_upstream.max_width, w);
		SAME_NUM(x->n_netdevs, y->n_netdevs, w);
		for (size_t k = 0; k < x->n_netdevs; k++) {
			SAME_STR(x->netdevs[k].name, y->netdevs[k].name, w);
			SAME_STR(x->netdevs[k].operstate, y->netdevs[k].operstate, w);
			SAME_NUM(x->netdevs[k].mtu, y->netdevs[k].mtu, w);
			SAME_NUM(x->netdevs[k].dev_port, y->netdevs[k].dev_port, w);
		}
		SAME_NUM(x->n_ports, y->n_ports, w);
		for (size_t k = 0; k < x->n_ports; k++)
			compare_port(w, &x->ports[k], &y->ports[k]);
	}
}

static void compare_findings(const struct ibp_findings *a, const struct ibp_findings *b)
{
	SAME_NUM(a->n, b->n, "finding count");
	for (size_t i = 0; i < a->n; i++) {
		SAME_STR(a->v[i].code, b->v[i].code, "finding");
		SAME_STR(a->v[i].observed, b->v[i].observed, "finding");
	}
}

/* Snapshots ROOT, loads both trees, compares; returns the snapshot's root. */
static char *snapshot_and_compare(const char *root, size_t want_hcas)
{
	char *dir = ibp_fixture_tmpdir();
	assert_non_null(dir);
	char out[4096];
	snprintf(out, sizeof(out), "%s/snap", dir);
	free(dir);
	assert_int_equal(run_snapshot(root, out), 0);

	struct ibp_inventory a, b;
	struct ibp_findings fa, fb;
	load(root, &a, &fa);
	load(out, &b, &fb);
	SAME_NUM(a.n_hcas, want_hcas, "devices in the original");
	compare_inventories(&a, &b);
	compare_findings(&fa, &fb);
	ibp_inventory_release(&a);
	ibp_inventory_release(&b);
	ibp_findings_release(&fa);
	ibp_findings_release(&fb);

	char readme[4200];
	struct stat st;
	snprintf(readme, sizeof(readme), "%s/SNAPSHOT-README", out);
	assert_int_equal(stat(readme, &st), 0);
	return strdup(out);
}

static void drop_snapshot(char *out)
{
	/* ".../ibprep-test.XXXXXX/snap": remove the temp dir. */
	char *slash = strrchr(out, '/');
	*slash = '\0';
	ibp_fixture_rmrf(out);
	free(out);
}

static const struct gen_case {
	const char *args[12];
	size_t hcas;
} gen_cases[] = {
    {{"--preset", "dgx-h100", "--gdr", "--node", "gpu017", "--fault", "mlx5_3:down", "--fault",
      "mlx5_4:counter=link_downed=255", "--fault", "mlx5_5:pcie=16:8", NULL},
     8},
    {{"--preset", "roce", "--fault", "mlx5_bond_0:nov2", NULL}, 3},
    {{"--preset", "ndr", "--hcas", "4", "--rm", "sys/class/infiniband", NULL}, 4},
    {{"--preset", "ndr", "--hcas", "2", "--fault", "mlx5_0/1:malformed=state=4: DOWN", "--fault",
      "mlx5_1/1:unreadable=counters/VL15_dropped", NULL},
     2},
    {{"--preset", "empty", NULL}, 0},
};

static char *make_from(const char *const *a)
{
	return ibp_fixture_make(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
				NULL);
}

static void test_snapshot_generated_trees_replay_identically(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(gen_cases) / sizeof(gen_cases[0]); i++) {
		char *root = make_from(gen_cases[i].args);
		assert_non_null(root);
		print_message("# snapshot of %s %s\n", gen_cases[i].args[0], gen_cases[i].args[1]);
		char *out = snapshot_and_compare(root, gen_cases[i].hcas);
		/* The GPUDirect module and the host name travel too. */
		if (i == 0) {
			char p[4200];
			struct stat st;
			snprintf(p, sizeof(p), "%s/sys/module/nvidia_peermem", out);
			assert_int_equal(stat(p, &st), 0);
			snprintf(p, sizeof(p), "%s/proc/sys/kernel/hostname", out);
			assert_int_equal(stat(p, &st), 0);
			snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/0000:1b:00.0/class", out);
			assert_int_equal(stat(p, &st), 0); /* GPU 0 */
		}
		drop_snapshot(out);
		ibp_fixture_destroy(root);
	}
}

static void test_snapshot_real_trees_replay_identically(void **state)
{
	(void)state;
	const char *real = ibp_fixture_real_dir();
	char src[4096];
	struct stat st;
	if (real)
		snprintf(src, sizeof(src), "%s/sysfs/gpud-h100-ndr-sys-class-infiniband", real);
	if (!real || stat(src, &st) < 0) {
		print_message("# real fixtures not found (IBP_REAL_FIXTURES or "
			      "../shared/fixtures/real): skipping\n");
		skip();
	}
	char *dir = ibp_fixture_tmpdir();
	char dst[4200];
	snprintf(dst, sizeof(dst), "%s/sys/class", dir);
	assert_int_equal(ibp_fixture_mkdir(dir, "sys/class"), 0);
	strcat(dst, "/infiniband");
	assert_int_equal(ibp_fixture_copy(src, dst), 0);
	drop_snapshot(snapshot_and_compare(dir, 9));
	ibp_fixture_rmrf(dir);
	free(dir);

	snprintf(src, sizeof(src), "%s/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr", real);
	char *out = snapshot_and_compare(src, 1);
	/* No class directory in the source: none invented in the copy. */
	char p[4200];
	snprintf(p, sizeof(p), "%s/sys/class/infiniband", out);
	assert_int_equal(stat(p, &st), -1);
	drop_snapshot(out);
}

static void test_snapshot_hostile_tree_stays_inside_and_bounded(void **state)
{
	(void)state;
	char *root = ibp_fixture_make("--preset", "ndr", "--hcas", "1", NULL);
	assert_non_null(root);
	/* A class entry leading out of the root, a FIFO, an oversized file. */
	assert_int_equal(
	    ibp_fixture_symlink(root, "sys/class/infiniband/evil", "../../../../../../../../etc"),
	    0);
	assert_int_equal(ibp_fixture_symlink(root, "sys/class/net/evil0", "/etc/passwd"), 0);
	char fifo[4096];
	snprintf(fifo, sizeof(fifo), "%s/sys/class/infiniband/mlx5_0/ports/1/counters/fifo", root);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	char *big = malloc(100000);
	assert_non_null(big);
	memset(big, 'x', 99999);
	big[99999] = '\0';
	assert_int_equal(ibp_fixture_write(root, "sys/class/infiniband/mlx5_0/big", big), 0);
	free(big);

	char *dir = ibp_fixture_tmpdir();
	char out[4200];
	snprintf(out, sizeof(out), "%s/snap", dir);
	assert_int_equal(run_snapshot(root, out), 0);
	char p[4300];
	struct stat st;
	snprintf(p, sizeof(p), "%s/etc", out);
	assert_int_equal(stat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/evil", out);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/sys/class/net/evil0", out);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/mlx5_0/big", out);
	assert_int_equal(stat(p, &st), -1);

	/* Every link in the copy resolves inside it. */
	struct ibp_sysfs fs;
	struct ibp_inventory inv;
	struct ibp_findings f;
	assert_int_equal(ibp_sysfs_open(&fs, out), 0);
	ibp_findings_init(&f);
	assert_int_equal(ibp_inventory_load(&inv, &fs, &f), 0);
	assert_int_equal(inv.n_hcas, 1);
	assert_string_equal(inv.hcas[0].pci, "0000:09:00.0");
	ibp_inventory_release(&inv);
	ibp_findings_release(&f);
	ibp_sysfs_close(&fs);

	/* The README names what was left out. */
	snprintf(p, sizeof(p), "%s/SNAPSHOT-README", out);
	FILE *r = fopen(p, "r");
	assert_non_null(r);
	char text[8192];
	size_t n = fread(text, 1, sizeof(text) - 1, r);
	text[n] = '\0';
	fclose(r);
	assert_non_null(strstr(text, "mlx5_0/big: larger than 64 KiB"));
	assert_non_null(strstr(text, "counters/fifo: not a regular file"));
	assert_non_null(strstr(text, "sys/class/infiniband/evil: leads nowhere"));

	ibp_fixture_rmrf(dir);
	free(dir);
	ibp_fixture_destroy(root);
}

static void test_snapshot_usage_and_existing_dir_exit_2(void **state)
{
	(void)state;
	char *root = ibp_fixture_make("--preset", "empty", NULL);
	assert_non_null(root);
	char *dir = ibp_fixture_tmpdir();
	assert_int_equal(ibp_fixture_write(dir, "keep", "x\n"), 0);
	assert_int_equal(run_snapshot(root, dir), 2); /* not empty */
	assert_int_equal(run_snapshot("/nonexistent/ibprep-root", "/tmp/ibprep-never"), 2);
	struct stat st;
	assert_int_equal(stat("/tmp/ibprep-never", &st), -1);
	char *no_out[] = {(char *)"snapshot", NULL};
	assert_int_equal(ibprep_cmd_snapshot(1, no_out), 2);
	char *bad[] = {(char *)"snapshot", (char *)"--bogus", (char *)"x", NULL};
	assert_int_equal(ibprep_cmd_snapshot(3, bad), 2);
	char *help[] = {(char *)"snapshot", (char *)"--help", NULL};
	assert_int_equal(ibprep_cmd_snapshot(2, help), 0);
	ibp_fixture_rmrf(dir);
	free(dir);
	ibp_fixture_destroy(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshot_generated_trees_replay_identically),
	    cmocka_unit_test(test_snapshot_real_trees_replay_identically),
	    cmocka_unit_test(test_snapshot_hostile_tree_stays_inside_and_bounded),
	    cmocka_unit_test(test_snapshot_usage_and_existing_dir_exit_2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
