/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_topo_cache: the live topology once per boot and hardware
 * (helpers/place/topo_cache.c): the key follows the boot id and the PCI
 * device list; the cache is used only when sound and root's own, and a
 * planted link, another owner's mode, garbage or another key cost one
 * live discovery, never a wrong topology.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "ibprep/topo_cache.h"

static void put(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX], cmd[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void key_of(const char *root, char *key)
{
	struct ibp_sysfs fs = {.root_fd = -1};

	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	assert_int_equal(ibp_topo_cache_key(&fs, key, IBP_TOPO_CACHE_KEY_LEN), 0);
	ibp_sysfs_close(&fs);
	assert_int_equal(strlen(key), IBP_TOPO_CACHE_KEY_LEN - 1);
}

static void test_topo_cache_key_follows_boot_and_pci(void **state)
{
	char root[] = "/tmp/test_topo_cache.XXXXXX", a[32], b[32], c[32], d[32], cmd[512];
	struct ibp_sysfs fs = {.root_fd = -1};

	(void)state;
	assert_non_null(mkdtemp(root));
	put(root, "proc/sys/kernel/random/boot_id", "6cf3dc13-4a73-4079-a908-e173a1ada2d5\n");
	put(root, "sys/bus/pci/devices/0000:00:00.0/vendor", "0x8086\n");
	put(root, "sys/bus/pci/devices/0000:17:00.0/vendor", "0x15b3\n");
	key_of(root, a);
	key_of(root, b);
	assert_string_equal(a, b);                                        /* stable */
	put(root, "sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n"); /* hot-plugged */
	key_of(root, c);
	assert_string_not_equal(a, c);
	put(root, "proc/sys/kernel/random/boot_id", "0e0b4bd9-5e0e-4d5c-9d0d-1d2a7a0c6a11\n");
	key_of(root, d); /* rebooted */
	assert_string_not_equal(c, d);
	/* no boot id: no key (no caching) */
	snprintf(cmd, sizeof(cmd), "rm -f %s/proc/sys/kernel/random/boot_id", root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(ibp_sysfs_open(&fs, root), 0);
	assert_true(ibp_topo_cache_key(&fs, a, sizeof(a)) < 0);
	ibp_sysfs_close(&fs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

struct cache_dir {
	char path[64];
	int fd;
	char key[IBP_TOPO_CACHE_KEY_LEN];
	char name[256];
};

static int setup(void **state)
{
	static struct cache_dir c;
	struct ibp_sysfs fs = {.root_fd = -1};

	strcpy(c.path, "/tmp/test_topo_cache_dir.XXXXXX");
	if (!mkdtemp(c.path)) /* 0700 */
		return -1;
	c.fd = open(c.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.fd < 0 || ibp_sysfs_open(&fs, "/"))
		return -1;
	if (ibp_topo_cache_key(&fs, c.key, sizeof(c.key)))
		strcpy(c.key, "0123456789abcdef"); /* no boot id here: any key will do */
	ibp_sysfs_close(&fs);
	snprintf(c.name, sizeof(c.name), "topology.h1.%s.xml", c.key);
	*state = &c;
	return 0;
}

static int teardown(void **state)
{
	struct cache_dir *c = *state;
	char cmd[128];

	close(c->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", c->path);
	return system(cmd) ? -1 : 0;
}

static int pus(const struct ibp_topo *t)
{
	return hwloc_get_nbobjs_by_type(t->t, HWLOC_OBJ_PU);
}

/* 1 (cached) or 0 (discovered); the topology always this machine's. */
static int load(struct cache_dir *c, const char *key, int want_pus)
{
	struct ibp_topo t;
	char why[256];
	int rc = ibp_topo_load_cached(&t, c->fd, "h1", key, true, why, sizeof(why));

	assert_true(rc >= 0);
	if (why[0])
		fail_msg("store: %s", why);
	assert_true(pus(&t) > 0);
	if (want_pus)
		assert_int_equal(pus(&t), want_pus);
	assert_int_equal(t.from_file, rc == 1);
	ibp_topo_release(&t);
	return rc;
}

static void test_topo_cache_discovers_once_then_reuses(void **state)
{
	struct cache_dir *c = *state;
	struct ibp_topo live;
	struct stat st;
	int n;

	if (geteuid() != 0)
		skip(); /* only root stores */
	assert_int_equal(ibp_topo_load_live_machine(&live), 0);
	n = pus(&live);
	ibp_topo_release(&live);
	assert_int_equal(load(c, c->key, n), 0);
	assert_int_equal(fstatat(c->fd, c->name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(load(c, c->key, n), 1);
	assert_int_equal(load(c, c->key, n), 1);
}

static void test_topo_cache_unsound_file_costs_one_discovery(void **state)
{
	struct cache_dir *c = *state;
	struct stat st;
	int fd;

	if (geteuid() != 0)
		skip();
	assert_int_equal(load(c, c->key, 0), 0);
	/* garbage (a write cut short, another hwloc): discovered again, rewritten */
	fd = openat(c->fd, c->name, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "<topology", 9), 9);
	close(fd);
	assert_int_equal(load(c, c->key, 0), 0);
	assert_int_equal(load(c, c->key, 0), 1);
	/* group- or other-writable: not trusted */
	assert_int_equal(fchmodat(c->fd, c->name, 0644, 0), 0);
	assert_int_equal(load(c, c->key, 0), 0);
	assert_int_equal(fstatat(c->fd, c->name, &st, 0), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* another owner's: not trusted */
	assert_int_equal(fchownat(c->fd, c->name, 65534, 0, 0), 0);
	assert_int_equal(load(c, c->key, 0), 0);
	assert_int_equal(fstatat(c->fd, c->name, &st, 0), 0);
	assert_int_equal(st.st_uid, 0);
}

static void test_topo_cache_planted_link_not_followed(void **state)
{
	struct cache_dir *c = *state;
	char victim[128], target[PATH_MAX];
	struct stat st;
	FILE *f;

	if (geteuid() != 0)
		skip();
	snprintf(victim, sizeof(victim), "%s.victim", c->path);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("root's file\n", f);
	fclose(f);
	assert_int_equal(symlinkat(victim, c->fd, c->name), 0);
	assert_int_equal(load(c, c->key, 0), 0); /* not read through the link */
	assert_int_equal(fstatat(c->fd, c->name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode)); /* the link replaced, not written through */
	f = fopen(victim, "r");
	assert_non_null(f);
	assert_non_null(fgets(target, sizeof(target), f));
	fclose(f);
	assert_string_equal(target, "root's file\n");
	unlink(victim);
}

static void test_topo_cache_other_key_replaces_the_old(void **state)
{
	struct cache_dir *c = *state;
	char other[256];

	if (geteuid() != 0)
		skip();
	assert_int_equal(load(c, c->key, 0), 0);
	assert_int_equal(load(c, "fedcba9876543210", 0), 0); /* a reboot, a new card */
	snprintf(other, sizeof(other), "topology.h1.fedcba9876543210.xml");
	assert_int_equal(faccessat(c->fd, other, F_OK, 0), 0);
	assert_int_not_equal(faccessat(c->fd, c->name, F_OK, 0), 0); /* gone */
	assert_int_equal(load(c, "fedcba9876543210", 0), 1);
}

static void test_topo_cache_refuses_odd_names(void **state)
{
	struct cache_dir *c = *state;
	static const char *const hosts[] = {"../etc", ".hidden", "", "a/b"};
	struct ibp_topo t;
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		assert_int_equal(
		    ibp_topo_load_cached(&t, c->fd, hosts[i], c->key, true, why, sizeof(why)), 0);
		assert_non_null(strstr(why, "no cache"));
		ibp_topo_release(&t);
	}
	assert_int_equal(
	    ibp_topo_load_cached(&t, c->fd, "h1", "../../etc/x", true, why, sizeof(why)), 0);
	ibp_topo_release(&t);
	assert_int_equal(ibp_topo_load_cached(&t, -1, "h1", c->key, true, why, sizeof(why)), 0);
	ibp_topo_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_topo_cache_key_follows_boot_and_pci),
	    cmocka_unit_test_setup_teardown(test_topo_cache_discovers_once_then_reuses, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_topo_cache_unsound_file_costs_one_discovery, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_topo_cache_planted_link_not_followed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_topo_cache_other_key_replaces_the_old, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_topo_cache_refuses_odd_names, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
