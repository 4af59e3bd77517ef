/* SPDX-License-Identifier: GPL-2.0-or-later */
/* atomic_write.c: a file replaced in one step (atomic_write.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep/atomic_write.h"

/* Our own temporary file for NAME in DFD: its fd (TMP holds its name), or -errno. */
static int create_tmp(int dfd, const char *name, mode_t mode, char *tmp, size_t len)
{
	for (int tries = 0; tries < 100; tries++) {
		int n = snprintf(tmp, len, ".%s.%ld.%d", name, (long)getpid(), tries);
		int fd;

		if (n < 0 || (size_t)n >= len)
			return -ENAMETOOLONG;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST; /* a hundred leftovers of this pid (crashes): refuse, never reuse one */
}

int ibp_atomic_write_at(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
	char tmp[NAME_MAX + 1];
	int fd, rc = 0;

	if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
	    (!data && len) || (mode & ~(mode_t)0777))
		return -EINVAL;
	if (dfd < 0)
		return -EBADF;
	fd = create_tmp(dfd, name, mode, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	/* the mode the readers check, whatever the umask */
	if (fchmod(fd, mode) < 0)
		rc = -errno;
	for (size_t off = 0; !rc && off < len;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc) {
		unlinkat(dfd, tmp, 0);
		return rc;
	}
	fsync(dfd); /* the rename itself; a failure here leaves a complete file */
	return 0;
}
