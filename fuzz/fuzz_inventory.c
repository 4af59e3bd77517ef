/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_inventory.c: hostile sysfs content through the whole inventory.
 *
 * A one-device tree is built once in a temporary directory, laid out as the
 * kernel does (class link -> device directory, device -> PCI function).
 * Each input picks one of its files (first byte) and replaces its content
 * with the rest of the input; the inventory is then loaded, every finding
 * formatted, and the invariants the checks rely on are asserted: strings
 * NUL-terminated and printable in findings, enums in range, counts sane.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep/hca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEV  "sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0"
#define IB   DEV "/infiniband/mlx5_0"
#define PORT IB "/ports/1"

static const char *const files[] = {
    PORT "/state",
    PORT "/phys_state",
    PORT "/rate",
    PORT "/link_layer",
    PORT "/lid",
    PORT "/sm_lid",
    PORT "/lid_mask_count",
    PORT "/gids/0",
    PORT "/gids/1",
    PORT "/gid_attrs/types/1",
    PORT "/gid_attrs/ndevs/1",
    PORT "/counters/link_downed",
    PORT "/counters/VL15_dropped",
    PORT "/hw_counters/out_of_buffer",
    IB "/fw_ver",
    IB "/node_desc",
    IB "/node_guid",
    DEV "/numa_node",
    DEV "/local_cpulist",
    DEV "/current_link_speed",
    DEV "/current_link_width",
    DEV "/max_link_speed",
    "sys/devices/pci0000:16/0000:16:01.0/current_link_speed",
    DEV "/net/ibp23s0/operstate",
    DEV "/net/ibp23s0/mtu",
    DEV "/net/ibp23s0/dev_port",
};
#define N_FILES (sizeof(files) / sizeof(files[0]))

static char root[PATH_MAX];

static int put(const char *rel, const void *text, size_t len)
{
	char path[PATH_MAX * 2];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t w = len ? write(fd, text, len) : 0;
	close(fd);
	return w == (ssize_t)len ? 0 : -EIO;
}

static int link_to(const char *rel, const char *target)
{
	char path[PATH_MAX * 2];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return symlink(target, path) < 0 && errno != EEXIST ? -errno : 0;
}

static const char *const healthy[N_FILES] = {
    "4: ACTIVE\n",
    "5: LinkUp\n",
    "400 Gb/sec (4X NDR)\n",
    "InfiniBand\n",
    "0x1a\n",
    "0x1\n",
    "0\n",
    "fe80:0000:0000:0000:b83f:d203:0000:1000\n",
    "0000:0000:0000:0000:0000:ffff:0a00:000b\n",
    "RoCE v2\n",
    "ibp23s0\n",
    "0\n",
    "021\n",
    "0\n",
    "28.39.1002\n",
    "node mlx5_0\n",
    "b83f:d203:0000:1000\n",
    "0\n",
    "0-31\n",
    "32.0 GT/s PCIe\n",
    "16\n",
    "32.0 GT/s PCIe\n",
    "32.0 GT/s PCIe\n",
    "up\n",
    "4092\n",
    "0\n",
};

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* libFuzzer ends with exit(): the tree goes with it. */
static void remove_tree(void)
{
	if (root[0])
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int build_tree(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/fuzz_inventory.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(root))
		return -errno;
	atexit(remove_tree);
	for (size_t i = 0; i < N_FILES; i++)
		if (put(files[i], healthy[i], strlen(healthy[i])) < 0)
			return -EIO;
	put("sys/class/infiniband/.keep", "", 0); /* creates the class directory */
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/sys/class/infiniband/.keep", root);
	unlink(p);
	if (link_to("sys/class/infiniband/mlx5_0",
		    "../../devices/pci0000:16/0000:16:01.0/0000:17:00.0/infiniband/mlx5_0") < 0 ||
	    link_to(IB "/device", "../../../0000:17:00.0") < 0)
		return -EIO;
	return 0;
}

static void check_string(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		if (build_tree() < 0)
			abort();
		ready = 1;
	}
	if (size < 1 || size > 8192)
		return 0;
	size_t which = data[0] % N_FILES;
	if (put(files[which], data + 1, size - 1) < 0)
		abort();

	struct ibp_sysfs fs;
	struct ibp_inventory inv;
	struct ibp_findings f;
	if (ibp_sysfs_open(&fs, root) < 0)
		abort();
	ibp_findings_init(&f);
	if (ibp_inventory_load(&inv, &fs, &f) != 0 || inv.n_hcas != 1)
		abort();
	const struct ibp_hca *h = &inv.hcas[0];
	check_string(h->fw_ver, sizeof(h->fw_ver));
	check_string(h->node_desc, sizeof(h->node_desc));
	check_string(h->local_cpus, sizeof(h->local_cpus));
	if (h->n_ports != 1)
		abort();
	const struct ibp_port *p = &h->ports[0];
	if (p->state < IBP_PORT_STATE_UNKNOWN || p->state > IBP_PORT_ACTIVE_DEFER ||
	    p->phys_state < IBP_PHYS_UNKNOWN || p->phys_state > IBP_PHYS_PHY_TEST)
		abort();
	if (p->lid < -1 || p->lid > 0xffff || p->sm_lid < -1 || p->sm_lid > 0xffff)
		abort();
	for (size_t i = 0; i < p->n_gids; i++) {
		check_string(p->gids[i].addr, sizeof(p->gids[i].addr));
		check_string(p->gids[i].ndev, sizeof(p->gids[i].ndev));
	}
	for (size_t i = 0; i < f.n; i++) {
		char line[1024];
		ibp_finding_format(&f.v[i], "node", line, sizeof(line));
		for (const char *c = f.v[i].observed; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
				abort(); /* raw bytes from a file never reach a terminal */
	}
	ibp_inventory_release(&inv);
	ibp_findings_release(&f);
	ibp_sysfs_close(&fs);

	/* Restore the healthy value so each input tests one bad file. */
	put(files[which], healthy[which], strlen(healthy[which]));
	return 0;
}
