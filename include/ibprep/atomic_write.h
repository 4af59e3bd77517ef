/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * atomic_write.h: replacing a file in a directory as one step.
 *
 * The project's files that others read while they are rewritten (the
 * node-exporter textfile, the plugin's verdict and peer-lookup cache, the
 * cached topology) are written here, in one way: a temporary file in the
 * same directory, created O_EXCL | O_NOFOLLOW (nothing planted under its
 * name is opened or followed) with the caller's mode (set with fchmod: the
 * umask does not change it), written whole, fsync'ed, renamed over NAME
 * with renameat(), and the directory fsync'ed.  Readers see the old file or
 * the new one, never a part, even after a crash.
 *
 * Every operation is relative to the directory fd: the caller opens it once
 * (ibp_rootpath_open for a directory root's writes must not be steered
 * through).  The temporary name is dot-named (".NAME.<pid>.<n>": a reader
 * that lists "*.prom" or "topology.<host>.*" never sees it).  The file
 * belongs to the caller's effective uid.  No allocation; never prints;
 * safe in any context that may write files.
 */
#ifndef IBPREP_ATOMIC_WRITE_H
#define IBPREP_ATOMIC_WRITE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Writes LEN bytes of DATA as NAME (a plain file name: no '/', not "" or a
 * dot name "."/"..") in the directory DFD, with MODE (0600 for root's
 * private files, 0644 for a textfile).  0, or -errno with NAME untouched
 * and no temporary file left: -EINVAL (a bad name or argument), -EBADF,
 * -ENAMETOOLONG, -EEXIST (no free temporary name), -EACCES / -EROFS /
 * -ENOSPC / -EIO ...
 */
int ibp_atomic_write_at(int dfd, const char *name, const void *data, size_t len, mode_t mode);

#endif
