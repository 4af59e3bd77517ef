/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_rootpath: a path only root can change, and each refusal named.
 * Needs root (files are given to other owners with chown): skipped otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ibprep/rootpath.h"

#define OTHER_UID 65534 /* nobody */

struct tree {
	char dir[64];   /* mkdtemp: root's, 0700, in /tmp (root's, sticky) */
	char sub[128];  /* DIR/sub, 0755 */
	char file[192]; /* DIR/sub/f.conf, 0644 */
};

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	int fd;

	if (!t)
		return -1;
	strcpy(t->dir, "/tmp/test_rootpath.XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->sub, sizeof(t->sub), "%s/sub", t->dir);
	snprintf(t->file, sizeof(t->file), "%s/f.conf", t->sub);
	if (mkdir(t->sub, 0755))
		return -1;
	fd = open(t->file, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, "x=1\n", 4) != 4)
		return -1;
	close(fd);
	if (chmod(t->file, 0644))
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

static void skip_unless_root(void)
{
	if (geteuid() != 0) {
		print_message("skip: not root (files of other owners need chown)\n");
		skip();
	}
}

static void expect_refused(const char *path, unsigned flags, int rc, const char *needle)
{
	char why[1024] = "";
	int fd = ibp_rootpath_open(path, O_RDONLY, flags, why, sizeof(why));

	if (fd >= 0)
		close(fd);
	if (fd != rc)
		fail_msg("%s: %d (%s), expected %d", path, fd, why, rc);
	if (!strstr(why, needle))
		fail_msg("%s: message '%s' lacks '%s'", path, why, needle);
}

static void test_rootpath_root_file_opens(void **state)
{
	struct tree *t = *state;
	char why[512] = "";
	int fd;

	skip_unless_root();
	fd = ibp_rootpath_open(t->file, O_RDONLY, 0, why, sizeof(why));
	if (fd < 0)
		fail_msg("%s", why);
	close(fd);
	fd = ibp_rootpath_open("/", O_RDONLY, IBP_ROOTPATH_DIR, why, sizeof(why));
	if (fd < 0)
		fail_msg("/: %s", why);
	close(fd);
	fd = ibp_rootpath_open(t->dir, O_RDONLY, IBP_ROOTPATH_DIR | IBP_ROOTPATH_PRIVATE, why,
			       sizeof(why));
	if (fd < 0)
		fail_msg("%s: %s", t->dir, why);
	close(fd);
}

static void test_rootpath_other_owner_refused_with_owner_and_mode(void **state)
{
	struct tree *t = *state;

	skip_unless_root();
	assert_int_equal(chown(t->file, OTHER_UID, 0), 0);
	expect_refused(t->file, 0, -EPERM, "uid 65534");
	expect_refused(t->file, 0, -EPERM, "mode 0644");
}

static void test_rootpath_group_writable_refused(void **state)
{
	struct tree *t = *state;

	skip_unless_root();
	assert_int_equal(chmod(t->file, 0664), 0);
	expect_refused(t->file, 0, -EPERM, "mode 0664");
	assert_int_equal(chmod(t->file, 0646), 0);
	expect_refused(t->file, 0, -EPERM, "not writable by group or others");
}

static void test_rootpath_user_directory_on_the_way_refused(void **state)
{
	struct tree *t = *state;

	skip_unless_root();
	/* a root-owned 0644 file in a directory another user owns */
	assert_int_equal(chown(t->sub, OTHER_UID, 0), 0);
	expect_refused(t->file, 0, -EPERM, "the directory");
	expect_refused(t->file, 0, -EPERM, "uid 65534");
	assert_int_equal(chown(t->sub, 0, 0), 0);
	assert_int_equal(chmod(t->sub, 0775), 0);
	expect_refused(t->file, 0, -EPERM, "mode 0775");
	/* sticky is allowed on the way (as /tmp), but the entry must be root's */
	assert_int_equal(chmod(t->sub, 01777), 0);
	expect_refused(t->file, IBP_ROOTPATH_DIR, -EINVAL, "not a directory");
	assert_int_equal(chown(t->file, OTHER_UID, 0), 0);
	expect_refused(t->file, 0, -EPERM, "uid 65534");
}

/* Links: root's are followed and their target checked; a user's is refused. */
static void test_rootpath_links_followed_only_when_trusted(void **state)
{
	struct tree *t = *state;
	char link[256], via[300], dots[300], udir[256], ufile[300];
	char why[1024] = "";
	int fd;

	skip_unless_root();
	snprintf(link, sizeof(link), "%s/link", t->dir);
	assert_int_equal(symlink("sub", link), 0); /* relative */
	snprintf(via, sizeof(via), "%s/f.conf", link);
	fd = ibp_rootpath_open(via, O_RDONLY, 0, why, sizeof(why));
	if (fd < 0)
		fail_msg("%s: %s", via, why);
	close(fd);
	/* NOFOLLOW: the last component itself may not be one */
	expect_refused(link, IBP_ROOTPATH_DIR | IBP_ROOTPATH_NOFOLLOW, -ELOOP, "symbolic link");
	/* a user's link (chown -h) is not followed */
	assert_int_equal(lchown(link, OTHER_UID, 0), 0);
	expect_refused(via, 0, -EPERM, "symbolic link");
	assert_int_equal(unlink(link), 0);
	/* a root link into a user's directory: the target is walked and refused */
	snprintf(udir, sizeof(udir), "%s/u", t->dir);
	assert_int_equal(mkdir(udir, 0755), 0);
	snprintf(ufile, sizeof(ufile), "%s/f.conf", udir);
	fd = open(ufile, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chown(udir, OTHER_UID, 0), 0);
	assert_int_equal(symlink(ufile, link), 0);
	expect_refused(link, 0, -EPERM, "uid 65534");
	/* ".." is the parent of the real directory */
	snprintf(dots, sizeof(dots), "%s/../sub/f.conf", t->sub);
	fd = ibp_rootpath_open(dots, O_RDONLY, 0, why, sizeof(why));
	if (fd < 0)
		fail_msg("%s: %s", dots, why);
	close(fd);
	expect_refused("etc/passwd", 0, -EINVAL, "absolute");
	/* a loop ends */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("link", link), 0);
	expect_refused(link, 0, -ELOOP, "symbolic links");
}

static void test_rootpath_fifo_and_private_mode_refused(void **state)
{
	struct tree *t = *state;
	char fifo[256];

	skip_unless_root();
	snprintf(fifo, sizeof(fifo), "%s/fifo", t->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* opened non-blocking: a FIFO without a writer does not hang the caller */
	expect_refused(fifo, 0, -EINVAL, "not a regular file");
	/* PRIVATE: a 0755 directory is not a cache directory */
	expect_refused(t->sub, IBP_ROOTPATH_DIR | IBP_ROOTPATH_PRIVATE, -EPERM, "mode 0755");
	expect_refused(t->sub, IBP_ROOTPATH_DIR | IBP_ROOTPATH_PRIVATE, -EPERM, "go-rwx");
}

static void test_rootpath_parent_opened_for_create(void **state)
{
	struct tree *t = *state;
	char base[256], why[512] = "";
	int fd;

	skip_unless_root();
	fd = ibp_rootpath_open_parent(t->file, base, sizeof(base), why, sizeof(why));
	if (fd < 0)
		fail_msg("%s", why);
	assert_string_equal(base, "f.conf");
	close(fd);
	assert_int_equal(chmod(t->sub, 0777), 0);
	fd = ibp_rootpath_open_parent(t->file, base, sizeof(base), why, sizeof(why));
	assert_int_equal(fd, -EPERM);
}

/* ROOT: the caller's own files are trusted only without it (a job user's euid). */
static void test_rootpath_root_flag_refuses_the_callers_own(void **state)
{
	struct tree *t = *state;
	char why[512] = "";
	int fd;

	skip_unless_root();
	assert_int_equal(chmod(t->dir, 0755), 0);
	assert_int_equal(chown(t->file, OTHER_UID, 0), 0);
	assert_int_equal(seteuid(OTHER_UID), 0);
	fd = ibp_rootpath_open(t->file, O_RDONLY, 0, why, sizeof(why));
	int fd_root = ibp_rootpath_open(t->file, O_RDONLY, IBP_ROOTPATH_ROOT, why, sizeof(why));
	assert_int_equal(seteuid(0), 0);
	if (fd < 0)
		fail_msg("the caller's own file refused: %s", why);
	close(fd);
	if (fd_root >= 0)
		close(fd_root);
	assert_int_equal(fd_root, -EPERM);
	assert_non_null(strstr(why, "(uid 65534) with mode 0644"));
}

/* The object check for a file opened otherwise: the same rule and wording. */
static void test_rootpath_check_fd_same_wording(void **state)
{
	struct tree *t = *state;
	char why[512] = "";
	int fd;

	skip_unless_root();
	fd = open(t->file, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ibp_rootpath_check_fd(fd, t->file, 0, why, sizeof(why)), 0);
	assert_int_equal(fchmod(fd, 0666), 0);
	assert_int_equal(ibp_rootpath_check_fd(fd, t->file, 0, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "is owned by root (uid 0) with mode 0666"));
	assert_int_equal(fchmod(fd, 0640), 0);
	assert_int_equal(ibp_rootpath_check_fd(fd, t->file, IBP_ROOTPATH_PRIVATE, why, sizeof(why)),
			 -EPERM);
	assert_non_null(strstr(why, "go-rwx"));
	assert_int_equal(fchown(fd, OTHER_UID, 0), 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	assert_int_equal(ibp_rootpath_check_fd(fd, t->file, IBP_ROOTPATH_ROOT, why, sizeof(why)),
			 -EPERM);
	assert_non_null(strstr(why, "(uid 65534) with mode 0644"));
	close(fd);
}

/*
 * A relative link whose target starts with "../" (the test cluster's
 * nodes/N/topo.xml -> ../../f.conf): taken from the link's real directory,
 * the file it leads to opened, and the directories on the new way checked.
 */
static void test_rootpath_link_up_relative(void **state)
{
	struct tree *t = *state;
	char n[160], deep[192], link[256], gw[160], gwf[192], link2[256], why[512] = "";
	struct stat a, b;
	int fd;

	skip_unless_root();
	snprintf(n, sizeof(n), "%s/n", t->sub);
	snprintf(deep, sizeof(deep), "%s/n1", n);
	snprintf(link, sizeof(link), "%s/topo.xml", deep);
	assert_int_equal(mkdir(n, 0755), 0);
	assert_int_equal(mkdir(deep, 0755), 0);
	assert_int_equal(symlink("../.././f.conf", link), 0);
	fd = ibp_rootpath_open(link, O_RDONLY, 0, why, sizeof(why));
	if (fd < 0)
		fail_msg("%s: %s", link, why);
	assert_int_equal(fstat(fd, &a), 0);
	close(fd);
	assert_int_equal(stat(t->file, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	/* up past the sub directory into one everybody may write: refused there */
	snprintf(gw, sizeof(gw), "%s/gw", t->dir);
	snprintf(gwf, sizeof(gwf), "%s/f.conf", gw);
	snprintf(link2, sizeof(link2), "%s/up.xml", deep);
	assert_int_equal(mkdir(gw, 0755), 0);
	fd = open(gwf, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(gw, 0777), 0);
	assert_int_equal(symlink("../../../gw/f.conf", link2), 0);
	expect_refused(link2, 0, -EPERM, "the directory");
	expect_refused(link2, 0, -EPERM, "/gw on its path");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rootpath_root_file_opens, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_other_owner_refused_with_owner_and_mode,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_group_writable_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_user_directory_on_the_way_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_links_followed_only_when_trusted, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_fifo_and_private_mode_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_parent_opened_for_create, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_root_flag_refuses_the_callers_own, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_check_fd_same_wording, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rootpath_link_up_relative, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
