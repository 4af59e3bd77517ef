/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_env_enroot.c: pyxis steps are recognised as pyxis recognises them,
 * and MELLANOX_VISIBLE_DEVICES gets the step's healthy HCAs as indices of
 * enroot's mellanox hook (conf/hooks/99-mellanox.sh): mlx4_core functions,
 * then mlx5_core, in PCI address byte order, one per uverbs device with a
 * uevent, on a hand-built /sys/bus/pci/drivers tree.
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

#include "ibprep/env.h"
#include "ibprep/sysfs.h"
#include "support/fixture.h"

/* mlx5 functions 0000:4f, 0000:9a, 0000:10 (natural order would put 10 last),
 * an mlx4 function, and entries the hook's glob does not match. */
static char *make_tree(void)
{
	static const struct {
		const char *drv, *pci, *uverbs, *name;
	} devs[] = {
	    {"mlx5_core", "0000:4f:00.0", "uverbs1", "mlx5_1"},
	    {"mlx5_core", "0000:9a:00.0", "uverbs2", "mlx5_2"},
	    {"mlx5_core", "0000:10:00.0", "uverbs0", "mlx5_0"},
	    {"mlx4_core", "0000:af:00.0", "uverbs3", "mlx4_0"},
	};
	char *root = ibp_fixture_tmpdir(), rel[256];

	assert_non_null(root);
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		snprintf(rel, sizeof(rel), "sys/bus/pci/drivers/%s/%s/infiniband_verbs/%s/uevent",
			 devs[i].drv, devs[i].pci, devs[i].uverbs);
		assert_int_equal(ibp_fixture_write(root, rel, "MAJOR=231\nDEVNAME=infiniband/x\n"),
				 0);
		snprintf(rel, sizeof(rel), "sys/bus/pci/drivers/%s/%s/infiniband/%s/uevent",
			 devs[i].drv, devs[i].pci, devs[i].name);
		assert_int_equal(ibp_fixture_write(root, rel, "NAME=x\n"), 0);
	}
	/* not devices: the driver's control files and module link */
	assert_int_equal(ibp_fixture_write(root, "sys/bus/pci/drivers/mlx5_core/bind", ""), 0);
	assert_int_equal(ibp_fixture_mkdir(root, "sys/bus/pci/drivers/mlx5_core/module"), 0);
	/* an Ethernet-only function: no verbs device */
	assert_int_equal(
	    ibp_fixture_mkdir(root, "sys/bus/pci/drivers/mlx5_core/0000:11:00.0/net/eth0"), 0);
	/* a verbs directory without its uevent: the glob does not see it */
	assert_int_equal(ibp_fixture_mkdir(root, "sys/bus/pci/drivers/mlx5_core/0000:12:00.0/"
						 "infiniband_verbs/uverbs7"),
			 0);
	/* another vendor's RDMA device: the hook has no index for it */
	assert_int_equal(ibp_fixture_write(root,
					   "sys/bus/pci/drivers/bnxt_en/0000:c1:00.0/"
					   "infiniband_verbs/uverbs8/uevent",
					   "MAJOR=231\n"),
			 0);
	return root;
}

struct fake {
	struct ibp_topo topo;
	struct ibp_topo_hca hcas[6];
	struct ibp_placement *pl;
};

/* A topology with these HCAs and a placement whose fabric is WANT (names). */
static void fake_init(struct fake *f, const char *const *want, size_t n_want)
{
	static const char *const names[] = {"mlx5_0", "mlx5_1",   "mlx5_2",
					    "mlx4_0", "bnxt_re0", "hsn0"};

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < 6; i++) {
		snprintf(f->hcas[i].name, sizeof(f->hcas[i].name), "%s", names[i]);
		f->hcas[i].kind = i == 5 ? IBP_NIC_SLINGSHOT : IBP_NIC_RDMA;
	}
	f->topo.hcas = f->hcas;
	f->topo.n_hcas = 6;
	f->pl = calloc(1, sizeof(*f->pl));
	assert_non_null(f->pl);
	for (size_t k = 0; k < n_want; k++)
		for (size_t i = 0; i < 6; i++)
			if (!strcmp(names[i], want[k])) {
				f->pl->fabric[f->pl->n_fabric].hca = (int)i;
				f->pl->fabric[f->pl->n_fabric].port = 1;
				f->pl->n_fabric++;
			}
}

static int visible(const char *root, const char *const *want, size_t n, char *out, size_t len,
		   char *skipped, size_t slen)
{
	struct ibp_sysfs fs;
	struct fake f;
	int rc;

	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	fake_init(&f, want, n);
	rc = ibp_env_mellanox_visible(&fs, &f.topo, f.pl, out, len, skipped, slen);
	free(f.pl);
	ibp_sysfs_close(&fs);
	return rc;
}

static void hook_order(void **state)
{
	char *root = make_tree(), out[128], skipped[128];
	const char *all[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx4_0"};
	const char *some[] = {"mlx5_2", "mlx5_0"}; /* placement order is not index order */
	const char *one[] = {"mlx5_1", "mlx5_1"};  /* two ports of one HCA: one index */

	(void)state;
	/* mlx4_core first (0), then mlx5_core by PCI bytes: 10 (1), 4f (2), 9a (3) */
	assert_int_equal(visible(root, all, 4, out, sizeof(out), skipped, sizeof(skipped)), 4);
	assert_string_equal(out, "0,1,2,3");
	assert_string_equal(skipped, "");
	assert_int_equal(visible(root, some, 2, out, sizeof(out), skipped, sizeof(skipped)), 2);
	assert_string_equal(out, "1,3");
	assert_int_equal(visible(root, one, 2, out, sizeof(out), NULL, 0), 1);
	assert_string_equal(out, "2");
	ibp_fixture_destroy(root);
}

static void unknown_devices_are_named(void **state)
{
	char *root = make_tree(), out[128], skipped[128];
	const char *want[] = {"bnxt_re0", "mlx5_2", "hsn0"};

	(void)state;
	assert_int_equal(visible(root, want, 3, out, sizeof(out), skipped, sizeof(skipped)), 1);
	assert_string_equal(out, "3");
	assert_string_equal(skipped, "bnxt_re0"); /* the Slingshot NIC is not an RDMA HCA */
	ibp_fixture_destroy(root);
}

static void no_drivers_no_value(void **state)
{
	char *root = ibp_fixture_tmpdir(), out[16] = "x", skipped[64];
	const char *want[] = {"mlx5_0"};

	(void)state;
	assert_non_null(root);
	assert_int_equal(ibp_fixture_mkdir(root, "sys/bus/pci"), 0);
	assert_int_equal(visible(root, want, 1, out, sizeof(out), skipped, sizeof(skipped)), 0);
	assert_string_equal(out, "");
	assert_string_equal(skipped, "mlx5_0");
	ibp_fixture_destroy(root);
}

static void too_small(void **state)
{
	char *root = make_tree(), out[4];
	const char *all[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx4_0"};

	(void)state;
	assert_int_equal(visible(root, all, 4, out, sizeof(out), NULL, 0), -ENOSPC);
	assert_string_equal(out, "");
	ibp_fixture_destroy(root);
}

static void pyxis_detection(void **state)
{
	const char *none[] = {"PATH=/bin", "SLURM_JOB_ID=7", NULL};
	const char *img[] = {"PYXIS_CONTAINER_IMAGE=nvcr.io#nvidia/pytorch:24.01-py3", NULL};
	const char *name[] = {"PYXIS_CONTAINER_NAME=mine", NULL};
	const char *sbatch[] = {"SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image=ubuntu",
				NULL};
	const char *inherited[] = {"_SLURM_SPANK_OPTION_pyxis_container_name=c1", NULL};
	const char *bare[] = {"SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image=(null)",
			      "PYXIS_CONTAINER_IMAGE=", NULL};
	const char *other[] = {"SLURM_SPANK__SLURM_SPANK_OPTION_spank_ib_ib_check=(null)",
			       "ENROOT_DATA_PATH=/tmp", NULL};
	char why[96];

	(void)state;
	assert_false(ibp_env_pyxis_step(ibp_env_envp_get, (void *)none, why, sizeof(why)));
	assert_string_equal(why, "");
	assert_true(ibp_env_pyxis_step(ibp_env_envp_get, (void *)img, why, sizeof(why)));
	assert_string_equal(why, "PYXIS_CONTAINER_IMAGE");
	assert_true(ibp_env_pyxis_step(ibp_env_envp_get, (void *)name, why, sizeof(why)));
	assert_true(ibp_env_pyxis_step(ibp_env_envp_get, (void *)sbatch, why, sizeof(why)));
	assert_string_equal(why, "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image");
	assert_true(ibp_env_pyxis_step(ibp_env_envp_get, (void *)inherited, NULL, 0));
	/* empty values and a bare option are not an image */
	assert_false(ibp_env_pyxis_step(ibp_env_envp_get, (void *)bare, why, sizeof(why)));
	/* enroot's own settings and other plugins' options say nothing about this step */
	assert_false(ibp_env_pyxis_step(ibp_env_envp_get, (void *)other, why, sizeof(why)));
	assert_false(ibp_env_pyxis_step(NULL, NULL, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(hook_order),          cmocka_unit_test(unknown_devices_are_named),
	    cmocka_unit_test(no_drivers_no_value), cmocka_unit_test(too_small),
	    cmocka_unit_test(pyxis_detection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
