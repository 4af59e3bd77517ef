/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rootpath.h: opening a file or directory only root can change.
 *
 * The plugin runs as root and takes paths from the admin (config=,
 * topology=, sysfs_root=, cache_dir=).  Such a path steers root only when
 * nobody else can change what it names: the object itself and every
 * directory on the way must be owned by root (or by the caller itself: a
 * process cannot be misled by its own files) and not writable by group or
 * others.  A world-writable directory with the sticky bit (/tmp) is allowed
 * on the way when it is root's and the entry in it is root's too: nobody
 * else can rename or replace that entry.  Every component is opened with
 * openat(O_NOFOLLOW) from the checked directory before it, so nothing can be
 * swapped between the check and the use.  A symbolic link on the way is
 * followed when it is root's (it sits in a checked directory) and its target
 * is walked from "/" the same way; ".." is the parent of the real directory
 * reached so far.  At most 40 links.
 *
 * Safe in any context; no allocation; never prints.  WHY (may be NULL)
 * receives one line naming the path, the object that is wrong, its owner
 * and mode, and the fix.
 */
#ifndef IBPREP_ROOTPATH_H
#define IBPREP_ROOTPATH_H

#include <stddef.h>

#define IBP_ROOTPATH_DIR      1u /* PATH is a directory (else a regular file) */
#define IBP_ROOTPATH_PRIVATE  2u /* and it grants nothing to group or others (0700, 0600) */
#define IBP_ROOTPATH_NOFOLLOW 4u /* the last component itself may not be a link (-ELOOP) */
#define IBP_ROOTPATH_ROOT     8u /* root only: not the caller's own uid either (a job user's) */

/*
 * Opens PATH (absolute) with OFLAGS for its last component (O_NOFOLLOW,
 * O_CLOEXEC and O_NONBLOCK are added; O_DIRECTORY with IBP_ROOTPATH_DIR).
 * Returns the fd, or -EPERM (an owner or a mode that others could use),
 * -ELOOP (too many links; a link with IBP_ROOTPATH_NOFOLLOW), -EINVAL (not
 * absolute, or the wrong type: a FIFO or a device for a file), -ENOENT ...
 * with WHY set.
 */
int ibp_rootpath_open(const char *path, int oflags, unsigned flags, char *why, size_t len);

/*
 * Opens the directory PATH is in, checked the same way (for creating PATH
 * with the *at() calls); its last component goes to BASE.  The fd or -errno.
 */
int ibp_rootpath_open_parent(const char *path, char *base, size_t baselen, char *why, size_t len);

/*
 * The check of the object itself for a file opened otherwise (created with
 * openat() in a checked directory): its owner and mode as FLAGS
 * (IBP_ROOTPATH_PRIVATE, IBP_ROOTPATH_ROOT) ask, the same wording.  0 or
 * -EPERM with WHY set; its type is the caller's to check.
 */
int ibp_rootpath_check_fd(int fd, const char *path, unsigned flags, char *why, size_t len);

#endif
