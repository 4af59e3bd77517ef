/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sysfs.h: the one reader of the system's files.
 *
 * Every read of /sys (and /proc where needed) goes through a struct ibp_sysfs
 * opened on a root directory: "/" in production, a fixture tree in tests
 * (DIR plays "/": the reader looks at DIR/sys/class/infiniband ...).  Paths
 * are relative to the root ("sys/class/infiniband/mlx5_0/fw_ver").  Symbolic
 * links resolve inside the root and never escape it (openat2 RESOLVE_IN_ROOT:
 * ".." and absolute links are clamped at the root), so a fixture's
 * "device -> ../../../0000:17:00.0" behaves as on a live node.
 *
 * Safe in any context (plain syscalls, no allocation except where noted, no
 * globals).  Errors are -errno: -ENOENT a file that is not there ("unknown",
 * not a failure), -EFBIG a value longer than the caller's buffer (never
 * silently truncated), -EINVAL/-ERANGE a malformed value.
 */
#ifndef IBPREP_SYSFS_H
#define IBPREP_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ibp_sysfs {
	int root_fd; /* O_PATH|O_DIRECTORY|O_CLOEXEC on the root; -1 when closed */
	/*
	 * Set by ibp_sysfs_open() to false.  True forces the resolver used when
	 * openat2(2) is missing (ENOSYS) or filtered (EPERM): the tests set it
	 * to run every case through both paths.
	 */
	bool no_openat2;
};

/* Opens the reader on ROOT ("/" in production).  0 or -errno. */
int ibp_sysfs_open(struct ibp_sysfs *fs, const char *root);
/*
 * Opens SUB on the directory PATH inside FS's root (resolved as every read
 * is): SUB's reads are confined to that directory as FS's are to its root
 * (".." and absolute links stop there), and each resolves only its path
 * below it: what a caller reading many files of one device saves (the walk
 * through sys/class/infiniband/DEV's link, every file).  0 or -errno
 * (-ENOTDIR when PATH is not a directory).  Close SUB with ibp_sysfs_close.
 */
int ibp_sysfs_open_dir(struct ibp_sysfs *sub, const struct ibp_sysfs *fs, const char *path);
/* Safe on a reader that was never opened or already closed. */
void ibp_sysfs_close(struct ibp_sysfs *fs);

/*
 * Reads PATH into BUF (NUL-terminated, one trailing newline stripped).
 * Returns the length (>= 0) or -errno; -EFBIG when the file does not fit.
 * Only regular files are read: a directory is -EISDIR, anything else (a
 * FIFO, a socket, a device node) -ENXIO, without blocking.  Errors of the
 * read itself pass through: sysfs says -EINVAL for an empty GID attribute
 * and some drivers -EIO for a counter they cannot fetch.  On error BUF is "".
 */
int ibp_sysfs_read(const struct ibp_sysfs *fs, const char *path, char *buf, size_t len);

/* printf-style path; same result as ibp_sysfs_read. */
int ibp_sysfs_readf(const struct ibp_sysfs *fs, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Parses a sysfs number strictly: decimal (a leading zero is still decimal:
 * a real VL15_dropped reads "021"), or hexadecimal only with "0x"; nothing but
 * the number (and one newline) allowed.  0, -EINVAL or -ERANGE.
 */
int ibp_parse_u64(const char *s, uint64_t *out);
int ibp_parse_s64(const char *s, int64_t *out);

/* ibp_sysfs_read + ibp_parse_u64 / ibp_parse_s64 on a printf-style path. */
int ibp_sysfs_read_u64(const struct ibp_sysfs *fs, uint64_t *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ibp_sysfs_read_s64(const struct ibp_sysfs *fs, int64_t *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Last component of the target of the link PATH ("device" ->
 * "../../../0000:17:00.0" gives "0000:17:00.0").  Length or -errno.
 */
int ibp_sysfs_link_name(const struct ibp_sysfs *fs, const char *path, char *buf, size_t len);

/*
 * Resolves PATH inside the root and writes the canonical root-relative path
 * ("sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0") to BUF: used to walk
 * up the PCI tree from a device.  Length or -errno (-ELOOP on link loops,
 * -ENOENT when it leads nowhere).  The root itself is "" (length 0).
 */
int ibp_sysfs_realpath(const struct ibp_sysfs *fs, const char *path, char *buf, size_t len);

/*
 * stat(2) of PATH inside the root (links followed, inside the root): the
 * owner and mode of a pid file or of proc/<pid>.  0 or -errno.
 */
struct stat;
int ibp_sysfs_stat(const struct ibp_sysfs *fs, const char *path, struct stat *st);

/*
 * Lists the entries of directory PATH (without "." and ".."), sorted with
 * natural order (mlx5_2 before mlx5_10).  On success *names is a
 * NULL-terminated array owned by the caller: free with ibp_sysfs_names_free.
 * Returns the count or -errno.
 */
int ibp_sysfs_list(const struct ibp_sysfs *fs, const char *path, char ***names);
void ibp_sysfs_names_free(char **names);

/* Natural-order comparison of two names (strcmp with digit runs as numbers). */
int ibp_natural_cmp(const char *a, const char *b);

#endif
