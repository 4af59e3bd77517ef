/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * env_enroot.c: pyxis/enroot containers: is the step one, and the
 * MELLANOX_VISIBLE_DEVICES indices enroot's mellanox hook expects; see env.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ibprep/env.h"
#include "ibprep/sysfs.h"
#include "ibprep/text.h"

bool ibp_env_pyxis_step(ibp_env_get_fn get, void *ctx, char *why, size_t whylen)
{
	static const char *const vars[] = {
	    "PYXIS_CONTAINER_IMAGE",
	    "PYXIS_CONTAINER_NAME",
	    "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image",
	    "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_name",
	    "_SLURM_SPANK_OPTION_pyxis_container_image",
	    "_SLURM_SPANK_OPTION_pyxis_container_name",
	};
	char buf[512];

	if (why && whylen)
		why[0] = '\0';
	if (!get)
		return false;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		int rc = get(ctx, vars[i], buf, sizeof(buf));

		/* set and not empty ("(null)" is how Slurm forwards a bare option) */
		if ((rc > 0 && strcmp(buf, "(null)") != 0) || rc == -ENOSPC) {
			if (why && whylen)
				snprintf(why, whylen, "%s", vars[i]);
			return true;
		}
	}
	return false;
}

/* One device of the hook's enumeration. */
struct hook_dev {
	char driver[16];
	char pci[64];
	char uverbs[64];
	char name[64]; /* its infiniband/ entry, "" none */
};

static int dev_cmp(const void *a, const void *b)
{
	const struct hook_dev *x = a, *y = b;
	int c = strcmp(x->driver, y->driver);

	if (!c)
		c = strcmp(x->pci, y->pci);
	return c ? c : strcmp(x->uverbs, y->uverbs);
}

/* The hook's list: every uverbs device (with a uevent) of mlx4_core and mlx5_core functions. */
static int enumerate(const struct ibp_sysfs *fs, struct hook_dev **out, size_t *n_out)
{
	static const char *const drivers[] = {"mlx4_core", "mlx5_core"};
	struct hook_dev *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	for (size_t d = 0; d < 2 && !rc; d++) {
		char path[256], **fns = NULL;
		int nf;

		snprintf(path, sizeof(path), "sys/bus/pci/drivers/%s", drivers[d]);
		nf = ibp_sysfs_list(fs, path, &fns);
		if (nf < 0)
			continue; /* driver not loaded */
		for (int f = 0; f < nf && !rc; f++) {
			char **uv = NULL, **ib = NULL;
			int nu, ni;

			snprintf(path, sizeof(path), "sys/bus/pci/drivers/%s/%s/infiniband_verbs",
				 drivers[d], fns[f]);
			nu = ibp_sysfs_list(fs, path, &uv);
			if (nu <= 0) {
				ibp_sysfs_names_free(uv);
				continue; /* bind, unbind, module ..., or no verbs device */
			}
			snprintf(path, sizeof(path), "sys/bus/pci/drivers/%s/%s/infiniband",
				 drivers[d], fns[f]);
			ni = ibp_sysfs_list(fs, path, &ib);
			for (int u = 0; u < nu && !rc; u++) {
				struct stat st;

				snprintf(path, sizeof(path),
					 "sys/bus/pci/drivers/%s/%s/infiniband_verbs/%s/uevent",
					 drivers[d], fns[f], uv[u]);
				if (ibp_sysfs_stat(fs, path, &st) < 0)
					continue; /* the glob needs the uevent file */
				if (n == cap) {
					struct hook_dev *nv =
					    realloc(v, (cap ? cap * 2 : 16) * sizeof(*v));
					if (!nv) {
						rc = -ENOMEM;
						break;
					}
					v = nv;
					cap = cap ? cap * 2 : 16;
				}
				memset(&v[n], 0, sizeof(v[n]));
				snprintf(v[n].driver, sizeof(v[n].driver), "%s", drivers[d]);
				snprintf(v[n].pci, sizeof(v[n].pci), "%s", fns[f]);
				snprintf(v[n].uverbs, sizeof(v[n].uverbs), "%s", uv[u]);
				/* the hook pairs the k-th uverbs with the k-th infiniband entry */
				if (ni > 0)
					snprintf(v[n].name, sizeof(v[n].name), "%s",
						 ib[u < ni ? u : ni - 1]);
				n++;
			}
			ibp_sysfs_names_free(uv);
			ibp_sysfs_names_free(ib);
		}
		ibp_sysfs_names_free(fns);
	}
	if (rc) {
		free(v);
		return rc;
	}
	/* ibp_sysfs_list sorts naturally; the hook's glob sorts bytes (9a after 10) */
	if (n)
		qsort(v, n, sizeof(*v), dev_cmp);
	*out = v;
	*n_out = n;
	return 0;
}

static bool append(char *buf, size_t len, const char *item)
{
	size_t l = strlen(buf), o = l;

	if (ibp_appendf(buf, len, &o, "%s%s", l ? "," : "", item)) {
		buf[l] = '\0'; /* the whole item or nothing */
		return false;
	}
	return true;
}

int ibp_env_mellanox_visible(const struct ibp_sysfs *fs, const struct ibp_topo *topo,
			     const struct ibp_placement *pl, char *out, size_t len, char *skipped,
			     size_t skippedlen)
{
	struct hook_dev *devs = NULL;
	size_t n_devs = 0;
	int found = 0, rc;

	if (!len)
		return -ENOSPC;
	out[0] = '\0';
	if (skipped && skippedlen)
		skipped[0] = '\0';
	rc = enumerate(fs, &devs, &n_devs);
	if (rc)
		return rc;
	/* indices ascending: walk the hook's list, keep the devices the step uses */
	for (size_t i = 0; i < n_devs && !rc; i++) {
		bool wanted = false;

		for (size_t k = 0; k < pl->n_fabric && !wanted; k++) {
			int h = pl->fabric[k].hca;
			wanted = h >= 0 && (size_t)h < topo->n_hcas &&
				 topo->hcas[h].kind == IBP_NIC_RDMA && devs[i].name[0] &&
				 !strcmp(topo->hcas[h].name, devs[i].name);
		}
		if (!wanted)
			continue;
		char num[24];
		snprintf(num, sizeof(num), "%zu", i);
		if (!append(out, len, num))
			rc = -ENOSPC;
		else
			found++;
	}
	/* the step's HCAs the hook cannot pass */
	for (size_t k = 0; k < pl->n_fabric && !rc && skipped && skippedlen; k++) {
		int h = pl->fabric[k].hca;
		bool known = false, dup = false;

		if (h < 0 || (size_t)h >= topo->n_hcas || topo->hcas[h].kind != IBP_NIC_RDMA)
			continue;
		for (size_t i = 0; i < n_devs && !known; i++)
			known = !strcmp(topo->hcas[h].name, devs[i].name);
		for (size_t j = 0; j < k && !dup; j++)
			dup = pl->fabric[j].hca == h;
		if (!known && !dup)
			append(skipped, skippedlen, topo->hcas[h].name);
	}
	free(devs);
	if (rc) {
		out[0] = '\0';
		return rc;
	}
	return found;
}
