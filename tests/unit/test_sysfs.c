/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_sysfs.c: the reader confined to a root, and the number parsers.
 * Every file case runs twice: through openat2(2) and through the fallback
 * resolver used when openat2 is missing (no_openat2).
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/sysfs.h"
#include "support/fixture.h"

struct tree {
	char *dir; /* the temp dir: DIR/root is the root, DIR/outside is not */
	char *root;
};

static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->dir = ibp_fixture_tmpdir();
	assert_non_null(t->dir);
	t->root = malloc(strlen(t->dir) + 8);
	assert_non_null(t->root);
	sprintf(t->root, "%s/root", t->dir);

	char big[5000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';

	assert_int_equal(ibp_fixture_write(t->dir, "outside", "secret\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "sys/x", "inside\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "empty", ""), 0);
	assert_int_equal(ibp_fixture_write(t->root, "nonl", "abc"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "nl", "abc\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "two", "abc\n\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "exact", "0123456789\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "huge", big), 0);
	assert_int_equal(ibp_fixture_mkdir(t->root, "adir/sub"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "num/dec", "021\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "num/hex", "0x1a\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "num/neg", "-1\n"), 0);
	assert_int_equal(ibp_fixture_write(t->root, "num/junk", "12abc\n"), 0);
	char fifo[4096];
	snprintf(fifo, sizeof(fifo), "%s/fifo", t->root);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	/* Links: inside, absolute (resolves inside the root), climbing out. */
	assert_int_equal(ibp_fixture_symlink(t->root, "abs", "/sys/x"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "a/b/up", "../../../../../../sys/x"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "esc", "../outside"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "escabs", "/../../outside"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "loop1", "loop2"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "loop2", "loop1"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "self", "self"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "dangling", "nowhere/file"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "dirlink", "sys"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "chain", "dirlink/../abs"), 0);
	assert_int_equal(ibp_fixture_symlink(t->root, "magic", "/proc/self/fd/0"), 0);
	/* The kernel's shape: class link -> device dir, device -> ../../../PCI. */
	assert_int_equal(ibp_fixture_write(t->root,
					   "sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0/"
					   "infiniband/mlx5_0/fw_ver",
					   "28.39.1002\n"),
			 0);
	assert_int_equal(
	    ibp_fixture_symlink(t->root, "sys/class/infiniband/mlx5_0",
				"../../devices/pci0000:16/0000:16:01.0/0000:17:00.0/infiniband/"
				"mlx5_0"),
	    0);
	assert_int_equal(ibp_fixture_symlink(t->root,
					     "sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0/"
					     "infiniband/mlx5_0/device",
					     "../../../0000:17:00.0"),
			 0);
	*state = t;
	return 0;
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;
	ibp_fixture_rmrf(t->dir);
	free(t->dir);
	free(t->root);
	free(t);
	return 0;
}

static void open_fs(struct ibp_sysfs *fs, const struct tree *t, bool fallback)
{
	assert_int_equal(ibp_sysfs_open(fs, t->root), 0);
	fs->no_openat2 = fallback;
}

static const struct read_case {
	const char *path;
	size_t buflen;
	int ret;          /* length or -errno */
	const char *text; /* expected content when ret >= 0 */
} read_cases[] = {
    {"nl", 64, 3, "abc"},
    {"nonl", 64, 3, "abc"},
    {"two", 64, 4, "abc\n"},
    {"empty", 64, 0, ""},
    {"exact", 11, 10, "0123456789"}, /* 10 chars + newline fill 11 bytes: the newline goes */
    {"exact", 10, -EFBIG, ""},
    {"huge", 4096, -EFBIG, ""},
    {"huge", 8192, 4999, NULL},
    {"adir", 64, -EISDIR, ""},
    {"fifo", 64, -ENXIO, ""},
    {"missing", 64, -ENOENT, ""},
    {"adir/missing", 64, -ENOENT, ""},
    {"nl/below", 64, -ENOTDIR, ""},
    {"abs", 64, 6, "inside"},
    {"/sys/x", 64, 6, "inside"},
    {"a/b/up", 64, 6, "inside"},
    {"../../../sys/x", 64, 6, "inside"},
    {"esc", 64, -ENOENT, ""},
    {"escabs", 64, -ENOENT, ""},
    {"../outside", 64, -ENOENT, ""},
    {"loop1", 64, -ELOOP, ""},
    {"self", 64, -ELOOP, ""},
    {"dangling", 64, -ENOENT, ""},
    {"chain", 64, 6, "inside"},
    {"dirlink/x", 64, 6, "inside"},
    {"sys/class/infiniband/mlx5_0/fw_ver", 64, 10, "28.39.1002"},
    {"sys/class/infiniband/mlx5_0/device/infiniband/mlx5_0/fw_ver", 64, 10, "28.39.1002"},
    {"sys/class/infiniband/mlx5_0/../../class/infiniband/mlx5_0/fw_ver", 64, -ENOENT,
     ""}, /* ".." of the real dir, not lexical */
};

static void run_read_cases(const struct tree *t, bool fallback)
{
	struct ibp_sysfs fs;
	char buf[8192];
	open_fs(&fs, t, fallback);
	for (size_t i = 0; i < sizeof(read_cases) / sizeof(read_cases[0]); i++) {
		const struct read_case *c = &read_cases[i];
		memset(buf, '#', sizeof(buf));
		int r = ibp_sysfs_read(&fs, c->path, buf, c->buflen);
		if (r != c->ret)
			fail_msg("%s read '%s' (buf %zu): got %d, expected %d",
				 fallback ? "fallback" : "openat2", c->path, c->buflen, r, c->ret);
		if (c->text)
			assert_string_equal(buf, c->text);
		else if (r >= 0)
			assert_int_equal(strlen(buf), (size_t)r);
	}
	ibp_sysfs_close(&fs);
}

static void test_sysfs_read_table_openat2_matches(void **state)
{
	run_read_cases(*state, false);
}

static void test_sysfs_read_table_fallback_matches(void **state)
{
	run_read_cases(*state, true);
}

/*
 * A reader opened on a directory inside the root (through the class link,
 * as the inventory opens a device): reads below it as the root's reader
 * does, and nothing above it: "..", an absolute link and a link climbing
 * out stop at the directory.  Both resolvers; not a directory: -ENOTDIR.
 */
static void test_sysfs_open_dir_confined(void **state)
{
	const struct tree *t = *state;
	static const struct read_case cases[] = {
	    {"fw_ver", 64, 10, "28.39.1002"},
	    {"device/infiniband/mlx5_0/fw_ver", 64, -ENOENT, ""}, /* device climbs out */
	    {"../../fw_ver", 64, 10, "28.39.1002"},               /* ".." stops at the directory */
	    {"/fw_ver", 64, 10, "28.39.1002"},
	    {"../../../../../sys/x", 64, -ENOENT, ""},
	    {"missing", 64, -ENOENT, ""},
	};
	char buf[64];

	for (int fallback = 0; fallback < 2; fallback++) {
		struct ibp_sysfs fs, sub;

		open_fs(&fs, t, fallback);
		assert_int_equal(ibp_sysfs_open_dir(&sub, &fs, "sys/class/infiniband/mlx5_0"), 0);
		assert_int_equal(sub.no_openat2, (bool)fallback);
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			int r = ibp_sysfs_read(&sub, cases[i].path, buf, cases[i].buflen);

			if (r != cases[i].ret)
				fail_msg("%s sub read '%s': got %d, expected %d",
					 fallback ? "fallback" : "openat2", cases[i].path, r,
					 cases[i].ret);
			assert_string_equal(buf, cases[i].text);
		}
		ibp_sysfs_close(&sub);
		assert_int_equal(sub.root_fd, -1);
		assert_int_equal(ibp_sysfs_open_dir(&sub, &fs, "nl"), -ENOTDIR);
		assert_int_equal(sub.root_fd, -1);
		assert_int_equal(ibp_sysfs_open_dir(&sub, &fs, "esc"), -ENOENT);
		ibp_sysfs_close(&fs);
	}
}

static void test_sysfs_read_fifo_does_not_block(void **state)
{
	struct ibp_sysfs fs;
	char buf[16];
	for (int fb = 0; fb < 2; fb++) {
		open_fs(&fs, *state, fb);
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		assert_int_equal(ibp_sysfs_read(&fs, "fifo", buf, sizeof(buf)), -ENXIO);
		clock_gettime(CLOCK_MONOTONIC, &b);
		assert_true(b.tv_sec - a.tv_sec < 2);
		ibp_sysfs_close(&fs);
	}
}

static void test_sysfs_read_magic_link_stays_inside(void **state)
{
	struct ibp_sysfs fs;
	char buf[64];
	for (int fb = 0; fb < 2; fb++) {
		open_fs(&fs, *state, fb);
		/* /proc/self/fd/0 inside the root does not exist: never the real one. */
		int r = ibp_sysfs_read(&fs, "magic", buf, sizeof(buf));
		assert_true(r == -ENOENT || r == -ELOOP || r == -EXDEV);
		ibp_sysfs_close(&fs);
	}
}

static void test_sysfs_closed_reader_ebadf(void **state)
{
	struct ibp_sysfs fs;
	char buf[8];
	char **names;
	open_fs(&fs, *state, false);
	ibp_sysfs_close(&fs);
	ibp_sysfs_close(&fs); /* twice is fine */
	assert_int_equal(ibp_sysfs_read(&fs, "nl", buf, sizeof(buf)), -EBADF);
	assert_int_equal(ibp_sysfs_list(&fs, "adir", &names), -EBADF);
	assert_null(names);
	assert_int_equal(ibp_sysfs_realpath(&fs, "nl", buf, sizeof(buf)), -EBADF);
	assert_int_equal(ibp_sysfs_open(&fs, "/nonexistent/ibprep"), -ENOENT);
	assert_int_equal(fs.root_fd, -1);
	assert_int_equal(ibp_sysfs_open(&fs, ""), -EINVAL);
}

static void test_sysfs_readf_formats_path(void **state)
{
	struct ibp_sysfs fs;
	char buf[64];
	open_fs(&fs, *state, false);
	assert_int_equal(ibp_sysfs_readf(&fs, buf, sizeof(buf), "sys/class/%s/%s/fw_ver",
					 "infiniband", "mlx5_0"),
			 10);
	assert_string_equal(buf, "28.39.1002");
	char longname[5000];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(ibp_sysfs_readf(&fs, buf, sizeof(buf), "%s", longname), -ENAMETOOLONG);
	ibp_sysfs_close(&fs);
}

static void test_sysfs_read_numbers_strict(void **state)
{
	struct ibp_sysfs fs;
	uint64_t u = 0;
	int64_t s = 0;
	open_fs(&fs, *state, false);
	assert_int_equal(ibp_sysfs_read_u64(&fs, &u, "num/%s", "dec"), 0);
	assert_int_equal(u, 21);
	assert_int_equal(ibp_sysfs_read_u64(&fs, &u, "num/hex"), 0);
	assert_int_equal(u, 26);
	assert_int_equal(ibp_sysfs_read_s64(&fs, &s, "num/neg"), 0);
	assert_int_equal(s, -1);
	assert_int_equal(ibp_sysfs_read_u64(&fs, &u, "num/neg"), -EINVAL);
	assert_int_equal(ibp_sysfs_read_u64(&fs, &u, "num/junk"), -EINVAL);
	assert_int_equal(ibp_sysfs_read_u64(&fs, &u, "num/none"), -ENOENT);
	assert_int_equal(ibp_sysfs_read_u64(&fs, &u, "huge"), -EFBIG);
	ibp_sysfs_close(&fs);
}

static const struct realpath_case {
	const char *path;
	int ret;
	const char *canon;
} realpath_cases[] = {
    {"sys/class/infiniband/mlx5_0/device", 42, "sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0"},
    {"sys/class/infiniband/mlx5_0", 0,
     "sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0/"
     "infiniband/mlx5_0"},
    {"sys/class/infiniband/mlx5_0/device/..", 0, "sys/devices/pci0000:16/0000:16:01.0"},
    {"abs", 5, "sys/x"},
    {"a/b/up", 5, "sys/x"},
    {"/../..", 0, ""},
    {".", 0, ""},
    {"esc", -ENOENT, ""},
    {"escabs", -ENOENT, ""},
    {"loop1", -ELOOP, ""},
    {"missing", -ENOENT, ""},
};

/* The kernel's resolution (openat2, read back through /proc) and the walk agree. */
static void test_sysfs_realpath_canonical_inside_root(void **state)
{
	struct ibp_sysfs fs;
	char buf[512];
	for (int fallback = 0; fallback < 2; fallback++) {
		open_fs(&fs, *state, fallback);
		for (size_t i = 0; i < sizeof(realpath_cases) / sizeof(realpath_cases[0]); i++) {
			const struct realpath_case *c = &realpath_cases[i];
			int r = ibp_sysfs_realpath(&fs, c->path, buf, sizeof(buf));
			if (c->ret < 0) {
				if (r != c->ret)
					fail_msg("realpath '%s' (walk %d): got %d, expected %d",
						 c->path, fallback, r, c->ret);
				continue;
			}
			if (r < 0)
				fail_msg("realpath '%s' (walk %d): got %d", c->path, fallback, r);
			assert_string_equal(buf, c->canon);
			assert_int_equal(r, strlen(c->canon));
		}
		assert_int_equal(ibp_sysfs_realpath(&fs, "sys/class/infiniband/mlx5_0", buf, 10),
				 -ENAMETOOLONG);
		ibp_sysfs_close(&fs);
	}
}

static void test_sysfs_link_name_last_component(void **state)
{
	struct ibp_sysfs fs;
	char buf[64];
	open_fs(&fs, *state, false);
	assert_int_equal(
	    ibp_sysfs_link_name(&fs, "sys/class/infiniband/mlx5_0/device", buf, sizeof(buf)), 12);
	assert_string_equal(buf, "0000:17:00.0");
	assert_int_equal(ibp_sysfs_link_name(&fs, "abs", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "x");
	assert_int_equal(ibp_sysfs_link_name(&fs, "nl", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(ibp_sysfs_link_name(&fs, "missing", buf, sizeof(buf)), -ENOENT);
	ibp_sysfs_close(&fs);
}

static void test_sysfs_list_natural_order(void **state)
{
	struct tree *t = *state;
	const char *names[] = {"mlx5_10", "mlx5_2", "mlx5_bond_0", "mlx5_1", "mlx5_0", "mlx4_0"};
	const char *sorted[] = {"mlx4_0", "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_10", "mlx5_bond_0"};
	char rel[64];
	for (size_t i = 0; i < 6; i++) {
		snprintf(rel, sizeof(rel), "list/%s", names[i]);
		assert_int_equal(ibp_fixture_write(t->root, rel, "1\n"), 0);
	}
	struct ibp_sysfs fs;
	char **v = NULL;
	for (int fb = 0; fb < 2; fb++) {
		open_fs(&fs, t, fb);
		assert_int_equal(ibp_sysfs_list(&fs, "list", &v), 6);
		for (size_t i = 0; i < 6; i++)
			assert_string_equal(v[i], sorted[i]);
		assert_null(v[6]);
		ibp_sysfs_names_free(v);
		assert_int_equal(ibp_sysfs_list(&fs, "adir/sub", &v), 0);
		assert_non_null(v);
		assert_null(v[0]);
		ibp_sysfs_names_free(v);
		assert_int_equal(ibp_sysfs_list(&fs, "nl", &v), -ENOTDIR);
		assert_null(v);
		assert_int_equal(ibp_sysfs_list(&fs, "missing", &v), -ENOENT);
		assert_int_equal(ibp_sysfs_list(&fs, "loop1", &v), -ELOOP);
		ibp_sysfs_close(&fs);
	}
	ibp_sysfs_names_free(NULL);
}

static const struct cmp_case {
	const char *a, *b;
	int sign;
} cmp_cases[] = {
    {"mlx5_2", "mlx5_10", -1},
    {"mlx5_10", "mlx5_2", 1},
    {"mlx5_1", "mlx5_1", 0},
    {"mlx5_1", "mlx5_01", -1},
    {"mlx5_9", "mlx5_bond_0", -1},
    {"a", "ab", -1},
    {"", "", 0},
    {"0", "", 1},
    {"x99999999999999999999", "x100000000000000000000", -1},
    {"gid2", "gid10", -1},
    {"ib0", "ib0.8001", -1},
};

static void test_natural_cmp_table_orders(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cmp_cases) / sizeof(cmp_cases[0]); i++) {
		int r = ibp_natural_cmp(cmp_cases[i].a, cmp_cases[i].b);
		int sign = (r > 0) - (r < 0);
		if (sign != cmp_cases[i].sign)
			fail_msg("natural_cmp('%s', '%s') = %d, expected sign %d", cmp_cases[i].a,
				 cmp_cases[i].b, r, cmp_cases[i].sign);
	}
}

static const struct u64_case {
	const char *s;
	int ret;
	uint64_t v;
} u64_cases[] = {
    {"0", 0, 0},
    {"21", 0, 21},
    {"021", 0, 21}, /* a real VL15_dropped: decimal, not octal */
    {"00", 0, 0},
    {"255\n", 0, 255},
    {"0x1a", 0, 26},
    {"0x1A", 0, 26},
    {"0xffff", 0, 65535},
    {"0x0", 0, 0},
    {"18446744073709551615", 0, UINT64_MAX},
    {"0xffffffffffffffff", 0, UINT64_MAX},
    {"18446744073709551616", -ERANGE, 0},
    {"99999999999999999999999", -ERANGE, 0},
    {"0x10000000000000000", -ERANGE, 0},
    {"", -EINVAL, 0},
    {"\n", -EINVAL, 0},
    {"0x", -EINVAL, 0},
    {"0x\n", -EINVAL, 0},
    {"x1", -EINVAL, 0},
    {"-1", -EINVAL, 0},
    {"+1", -EINVAL, 0},
    {" 1", -EINVAL, 0},
    {"1 ", -EINVAL, 0},
    {"12abc", -EINVAL, 0},
    {"1a", -EINVAL, 0},
    {"1\n\n", -EINVAL, 0},
    {"1\nx", -EINVAL, 0},
    {"0x1g", -EINVAL, 0},
    {"99999999999999999999999x", -EINVAL, 0},
    {"1.5", -EINVAL, 0},
    {"0b1", -EINVAL, 0},
};

static void test_parse_u64_table_strict(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(u64_cases) / sizeof(u64_cases[0]); i++) {
		uint64_t v = 12345;
		int r = ibp_parse_u64(u64_cases[i].s, &v);
		if (r != u64_cases[i].ret)
			fail_msg("parse_u64('%s') = %d, expected %d", u64_cases[i].s, r,
				 u64_cases[i].ret);
		if (r == 0 && v != u64_cases[i].v)
			fail_msg("parse_u64('%s') value %llu, expected %llu", u64_cases[i].s,
				 (unsigned long long)v, (unsigned long long)u64_cases[i].v);
		if (r != 0)
			assert_int_equal(v, 12345); /* untouched on error */
	}
	uint64_t v;
	assert_int_equal(ibp_parse_u64(NULL, &v), -EINVAL);
}

static const struct s64_case {
	const char *s;
	int ret;
	int64_t v;
} s64_cases[] = {
    {"-1", 0, -1},
    {"-1\n", 0, -1},
    {"0", 0, 0},
    {"-0", 0, 0},
    {"7", 0, 7},
    {"0x10", 0, 16},
    {"9223372036854775807", 0, INT64_MAX},
    {"-9223372036854775808", 0, INT64_MIN},
    {"9223372036854775808", -ERANGE, 0},
    {"-9223372036854775809", -ERANGE, 0},
    {"--1", -EINVAL, 0},
    {"-", -EINVAL, 0},
    {"+5", -EINVAL, 0},
    {"- 1", -EINVAL, 0},
    {"1-", -EINVAL, 0},
};

static void test_parse_s64_table_strict(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(s64_cases) / sizeof(s64_cases[0]); i++) {
		int64_t v = 12345;
		int r = ibp_parse_s64(s64_cases[i].s, &v);
		if (r != s64_cases[i].ret)
			fail_msg("parse_s64('%s') = %d, expected %d", s64_cases[i].s, r,
				 s64_cases[i].ret);
		if (r == 0 && v != s64_cases[i].v)
			fail_msg("parse_s64('%s') value %lld, expected %lld", s64_cases[i].s,
				 (long long)v, (long long)s64_cases[i].v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sysfs_read_table_openat2_matches),
	    cmocka_unit_test(test_sysfs_read_table_fallback_matches),
	    cmocka_unit_test(test_sysfs_read_fifo_does_not_block),
	    cmocka_unit_test(test_sysfs_open_dir_confined),
	    cmocka_unit_test(test_sysfs_read_magic_link_stays_inside),
	    cmocka_unit_test(test_sysfs_closed_reader_ebadf),
	    cmocka_unit_test(test_sysfs_readf_formats_path),
	    cmocka_unit_test(test_sysfs_read_numbers_strict),
	    cmocka_unit_test(test_sysfs_realpath_canonical_inside_root),
	    cmocka_unit_test(test_sysfs_link_name_last_component),
	    cmocka_unit_test(test_sysfs_list_natural_order),
	    cmocka_unit_test(test_natural_cmp_table_orders),
	    cmocka_unit_test(test_parse_u64_table_strict),
	    cmocka_unit_test(test_parse_s64_table_strict),
	};
	return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
