/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fixture.h: fake sysfs roots for the unit tests.
 *
 * Trees come from tests/fixtures/mksysfs.py (run from the project root, as
 * the Makefile does; IBP_MKSYSFS overrides the script's path) or are built
 * file by file with ibp_fixture_write() and friends.  Every helper returns
 * 0 / a pointer on success and -errno / NULL on failure, and prints nothing:
 * the test asserts.  Real captures are found with ibp_fixture_real_dir().
 */
#ifndef IBPREP_TEST_FIXTURE_H
#define IBPREP_TEST_FIXTURE_H

/* A new empty directory under $TMPDIR (or /tmp); malloc'd path or NULL. */
char *ibp_fixture_tmpdir(void);

/*
 * Runs mksysfs.py with the NULL-terminated ARGS into a new temporary
 * directory and returns the root it wrote (malloc'd, ".../root"), or NULL.
 * Example: ibp_fixture_make("--preset", "roce", "--fault", "mlx5_0:down", NULL).
 */
char *ibp_fixture_make(const char *arg, ...) __attribute__((sentinel));

/* Removes the temporary directory of a root from ibp_fixture_make() or
 * ibp_fixture_tmpdir() and frees ROOT.  NULL is a no-op. */
void ibp_fixture_destroy(char *root);

/* Writes TEXT to ROOT/REL (creating directories), replacing what is there. */
int ibp_fixture_write(const char *root, const char *rel, const char *text);
/* Creates ROOT/REL as a symlink to TARGET (parents created). */
int ibp_fixture_symlink(const char *root, const char *rel, const char *target);
/* Creates ROOT/REL as a directory (parents created). */
int ibp_fixture_mkdir(const char *root, const char *rel);
/* Removes ROOT/REL, a file, a link or a whole directory tree. */
int ibp_fixture_remove(const char *root, const char *rel);
/* How many entries DIR holds ("." and ".." not counted), or -errno. */
int ibp_fixture_count_entries(const char *dir);
/* rm -rf PATH (makes directories writable first: captures are read-only). */
int ibp_fixture_rmrf(const char *path);
/* Copies the tree SRC to DST (DST must not exist); links are copied as links. */
int ibp_fixture_copy(const char *src, const char *dst);

/*
 * The real captures: $IBP_REAL_FIXTURES, else ../shared/fixtures/real
 * relative to the project root.  NULL when it is not a directory (the test
 * then skips, saying so).  Static storage: do not free.
 */
const char *ibp_fixture_real_dir(void);

/* Runs ARGV (argv[0] looked up in PATH) with a 60 s limit; exit status or -errno. */
int ibp_fixture_run(char *const argv[]);

#endif
