/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_topo_cache: the live topology once per boot and hardware, and a
 * topology= file once per version of the file (helpers/place/topo_cache.c):
 * the key follows the boot id and the PCI device list, or the file's
 * identity; the cache (mapped form, XML) is used only when sound and root's
 * own, and a planted link, another owner's mode, garbage or another key
 * cost one discovery or parse, never a wrong topology; the mapped form
 * places every real capture as its XML does.
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

#include <dirent.h>

#include <cmocka.h>

#include "ibprep/json.h"
#include "ibprep/place.h"
#include "ibprep/report.h"
#include "ibprep/topo_cache.h"
#include "support/fixture.h"

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
	char map[256];
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
	snprintf(c.map, sizeof(c.map), "topology.h1.%s.map", c.key);
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
	assert_int_equal(fstatat(c->fd, c->map, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(load(c, c->key, n), 1);
	/* the mapped form alone serves: the XML is only its fallback */
	assert_int_equal(unlinkat(c->fd, c->name, 0), 0);
	assert_int_equal(load(c, c->key, n), 1);
	/* and the XML alone too (the mapped form's address taken) */
	assert_int_equal(load(c, "fedcba9876543210", n), 0);
	assert_int_equal(unlinkat(c->fd, "topology.h1.fedcba9876543210.map", 0), 0);
	assert_int_equal(load(c, "fedcba9876543210", n), 1);
}

static void test_topo_cache_unsound_file_costs_one_discovery(void **state)
{
	struct cache_dir *c = *state;
	struct stat st;
	int fd;

	if (geteuid() != 0)
		skip();
	assert_int_equal(load(c, c->key, 0), 0);
	/* a mapped form that is not one (cut short, another hwloc): removed, the XML used */
	fd = openat(c->fd, c->map, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "garbage-garbage-garbage-garbage!", 32), 32);
	close(fd);
	assert_int_equal(load(c, c->key, 0), 1);
	assert_int_not_equal(faccessat(c->fd, c->map, F_OK, 0), 0);
	/* garbage XML (a write cut short, another hwloc): discovered again, rewritten */
	fd = openat(c->fd, c->name, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "<topology", 9), 9);
	close(fd);
	assert_int_equal(load(c, c->key, 0), 0);
	assert_int_equal(load(c, c->key, 0), 1);
	/* group- or other-writable: not trusted (either file) */
	for (int k = 0; k < 2; k++) {
		const char *f = k ? c->name : c->map;

		assert_int_equal(unlinkat(c->fd, k ? c->map : c->name, 0), 0);
		assert_int_equal(fchmodat(c->fd, f, 0644, 0), 0);
		assert_int_equal(load(c, c->key, 0), 0);
		assert_int_equal(fstatat(c->fd, f, &st, 0), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
		/* another owner's: not trusted */
		assert_int_equal(unlinkat(c->fd, k ? c->map : c->name, 0), 0);
		assert_int_equal(fchownat(c->fd, f, 65534, 0, 0), 0);
		assert_int_equal(load(c, c->key, 0), 0);
		assert_int_equal(fstatat(c->fd, f, &st, 0), 0);
		assert_int_equal(st.st_uid, 0);
	}
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
	assert_int_not_equal(faccessat(c->fd, c->map, F_OK, 0), 0);
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

/* ---- topology= files ---- */

static void copy_file(const char *from, const char *to)
{
	char cmd[PATH_MAX * 2 + 32];

	snprintf(cmd, sizeof(cmd), "cat '%s' > '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

/* 1 (mapped), 0 (parsed), or -errno. */
static int load_file(struct cache_dir *c, const char *path, struct ibp_topo *t)
{
	char why[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	assert_true(fd >= 0);
	rc = ibp_topo_load_file_cached(t, fd, c->fd, "h1", true, why, sizeof(why));
	close(fd);
	if (rc >= 0 && why[0])
		fail_msg("store: %s", why);
	return rc;
}

static size_t gpus_of(struct cache_dir *c, const char *path, int want_rc)
{
	struct ibp_topo t;
	size_t n;

	assert_int_equal(load_file(c, path, &t), want_rc);
	n = t.n_gpus;
	assert_true(t.from_file);
	assert_int_equal(t.mapped, want_rc == 1);
	ibp_topo_release(&t);
	return n;
}

static int count_kind(struct cache_dir *c, const char *prefix)
{
	DIR *d = opendir(c->path);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static void test_topo_cache_file_changed_is_reloaded(void **state)
{
	struct cache_dir *c = *state;
	char xml[PATH_MAX], moved[PATH_MAX + 8];
	const char *a = "tests/fixtures/real/hwloc/hwloc-mirage004-sl390s-es1000-3tesla-cx2.xml";
	const char *b = "tests/fixtures/real/hwloc/hwloc-bonobo001-pe1950-connectx-machine-pci.xml";

	if (geteuid() != 0)
		skip(); /* only root stores */
	snprintf(xml, sizeof(xml), "%s.topo.xml", c->path);
	copy_file(a, xml);
	assert_int_equal(gpus_of(c, xml, 0), 3); /* parsed, then kept */
	assert_int_equal(count_kind(c, "topofile.h1."), 1);
	assert_int_equal(gpus_of(c, xml, 1), 3); /* mapped */
	/* edited in place (same inode): parsed again, the old form replaced */
	copy_file(b, xml);
	assert_int_equal(gpus_of(c, xml, 0), 0);
	assert_int_equal(gpus_of(c, xml, 1), 0);
	assert_int_equal(count_kind(c, "topofile.h1."), 1);
	/* replaced by a rename (another inode), even with the same bytes as before */
	snprintf(moved, sizeof(moved), "%s.new", xml);
	copy_file(b, moved);
	assert_int_equal(rename(moved, xml), 0);
	assert_int_equal(gpus_of(c, xml, 0), 0);
	assert_int_equal(gpus_of(c, xml, 1), 0);
	/* chmod'ed (ctime): keyed again */
	assert_int_equal(chmod(xml, 0640), 0);
	assert_int_equal(gpus_of(c, xml, 0), 0);
	assert_int_equal(gpus_of(c, xml, 1), 0);
	/* not an XML hwloc reads: an error, nothing kept for it */
	copy_file("/etc/hostname", xml);
	{
		struct ibp_topo t;

		assert_int_equal(load_file(c, xml, &t), -EINVAL);
		ibp_topo_release(&t);
	}
	unlink(xml);
}

static void test_topo_cache_file_untrusted_form_refused(void **state)
{
	struct cache_dir *c = *state;
	char xml[PATH_MAX], name[300], key[IBP_TOPO_CACHE_KEY_LEN];
	const char *a = "tests/fixtures/real/hwloc/hwloc-mirage004-sl390s-es1000-3tesla-cx2.xml";
	struct stat st;
	int fd;

	if (geteuid() != 0)
		skip();
	snprintf(xml, sizeof(xml), "%s.topo.xml", c->path);
	copy_file(a, xml);
	fd = open(xml, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ibp_topo_file_key(fd, key, sizeof(key)), 0);
	close(fd);
	snprintf(name, sizeof(name), "topofile.h1.%s.map", key);
	assert_int_equal(gpus_of(c, xml, 0), 3);
	assert_int_equal(fstatat(c->fd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* writable by others: parsed, and replaced by root's own */
	assert_int_equal(fchmodat(c->fd, name, 0606, 0), 0);
	assert_int_equal(gpus_of(c, xml, 0), 3);
	assert_int_equal(fstatat(c->fd, name, &st, 0), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* group-readable: the same (a form nobody else may have touched) */
	assert_int_equal(fchmodat(c->fd, name, 0640, 0), 0);
	assert_int_equal(gpus_of(c, xml, 0), 3);
	/* another owner's */
	assert_int_equal(fchownat(c->fd, name, 65534, 0, 0), 0);
	assert_int_equal(gpus_of(c, xml, 0), 3);
	assert_int_equal(fstatat(c->fd, name, &st, 0), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(gpus_of(c, xml, 1), 3);
	/* garbage of the right owner and mode: removed, parsed again */
	fd = openat(c->fd, name, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "garbage-garbage-garbage-garbage!", 32), 32);
	close(fd);
	assert_int_equal(gpus_of(c, xml, 0), 3);
	assert_int_equal(gpus_of(c, xml, 1), 3);
	/* no cache directory: parsed, nothing kept */
	fd = open(xml, O_RDONLY | O_CLOEXEC);
	{
		struct ibp_topo t;
		char why[64];

		assert_int_equal(
		    ibp_topo_load_file_cached(&t, fd, -1, "h1", true, why, sizeof(why)), 0);
		assert_int_equal(t.n_gpus, 3);
		ibp_topo_release(&t);
	}
	close(fd);
	unlink(xml);
}

/* The placement of every task, all GPUs, as --ib-report=json writes it, and each GPU's port. */
static char *placement_text(const struct ibp_topo *t, unsigned ntasks)
{
	struct ibp_step step = {.ntasks = ntasks, .all_gpus = true, .local_rank = -1};
	struct ibp_placement pl;
	struct ibp_findings f;
	struct ibp_json j;
	struct ibp_place_view v;
	char *out;

	ibp_findings_init(&f);
	ibp_placement_init(&pl);
	assert_int_equal(ibp_place_compute(&pl, t, &step, &f), 0);
	ibp_json_init_buf(&j, 0);
	ibp_json_object_begin(&j);
	ibp_json_key(&j, "tasks");
	ibp_json_array_begin(&j);
	for (size_t r = 0; r < pl.n_tasks; r++)
		if (!ibp_place_view_task(&pl, r, &v))
			ibp_report_task_json(&j, t, &v);
	ibp_json_array_end(&j);
	ibp_json_key(&j, "gpus");
	ibp_json_array_begin(&j);
	for (size_t g = 0; g < pl.n_gpus; g++)
		ibp_json_stringf(&j, "%s %d:%u %d %s", t->gpus[g].d.pci, pl.gpus[g].nic.hca,
				 pl.gpus[g].nic.port, (int)pl.gpus[g].nic.dist, pl.gpus[g].why);
	ibp_json_array_end(&j);
	ibp_json_kv_uint(&j, "ports", pl.n_ports);
	ibp_json_kv_uint(&j, "fabric", pl.n_fabric);
	ibp_json_kv_uint(&j, "hcas", t->n_hcas);
	ibp_json_object_end(&j);
	assert_int_equal(ibp_json_finish(&j), 0);
	out = strdup(ibp_json_buf(&j, NULL));
	assert_non_null(out);
	ibp_json_release(&j);
	ibp_placement_release(&pl);
	ibp_findings_release(&f);
	return out;
}

static int place_same(struct cache_dir *c, const char *path)
{
	struct ibp_topo full, mapped;
	int rc;

	if (ibp_topo_load_xml(&full, path))
		return 0; /* an XML this hwloc cannot read (the 3.0 format): not a case */
	assert_int_equal(load_file(c, path, &mapped), 0);
	ibp_topo_release(&mapped);
	rc = load_file(c, path, &mapped);
	if (rc != 1)
		fail_msg("%s: mapped form not used (%d)", path, rc);
	assert_int_equal(mapped.n_gpus, full.n_gpus);
	assert_int_equal(mapped.n_hcas, full.n_hcas);
	assert_string_equal(mapped.hostname, full.hostname);
	for (unsigned ntasks = 1; ntasks <= 8; ntasks *= 2) {
		char *a = placement_text(&full, ntasks), *b = placement_text(&mapped, ntasks);

		if (strcmp(a, b))
			fail_msg("%s, %u tasks:\n xml    %s\n mapped %s", path, ntasks, a, b);
		free(a);
		free(b);
	}
	ibp_topo_release(&full);
	ibp_topo_release(&mapped);
	return 1;
}

static int place_dir(struct cache_dir *c, const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l < 5 || strcmp(e->d_name + l - 4, ".xml"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n += place_same(c, path);
	}
	closedir(d);
	return n;
}

static void test_topo_cache_mapped_places_as_xml_real_captures(void **state)
{
	struct cache_dir *c = *state;
	const char *real = ibp_fixture_real_dir();
	char dir[PATH_MAX];
	int n;

	if (geteuid() != 0)
		skip();
	assert_true(place_dir(c, "tests/fixtures/real/hwloc") > 0);
	snprintf(dir, sizeof(dir), "%s/hwloc-xml", real ? real : "");
	n = real ? place_dir(c, dir) : -1;
	if (n < 0) {
		print_message("# real fixtures absent (../shared/fixtures/real or "
			      "$IBP_REAL_FIXTURES): skipped\n");
		skip();
	}
	assert_true(n > 10);
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
	    cmocka_unit_test_setup_teardown(test_topo_cache_file_changed_is_reloaded, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_topo_cache_file_untrusted_form_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_topo_cache_mapped_places_as_xml_real_captures,
					    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
