/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_ports.c: a job's share of the node's test ports.
 *
 * Every multi-node --ib-test step holds one of the node's test ports
 * (test_ports=, 70 by default) from init_post_opt until its test child is
 * done, up to test_timeout + 1 s.  One job may hold at most
 * test_ports_per_job of them at once on a node, so that its own steps (a
 * stopped child, many overlapping srun --overlap) cannot take the range
 * from other jobs; a single-node step holds none.
 *
 * A slot is a lock file CACHE_DIR/testport.<job>.<k>, k < the cap, held with
 * flock(LOCK_EX) for as long as the step holds its port.  The lock dies
 * with its holder: a step that crashes, or is killed, frees its slot
 * without anyone cleaning up.  The holder unlinks the file before it lets
 * go; a taker checks after locking that the name still is the file it
 * locked (otherwise it locked a file being removed, and tries again).
 * CACHE_DIR is root's, 0700, opened through rootpath (ib_cache.c): no user
 * can create, remove or lock a slot file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank_ib.h"

/* Tries to take slot K: 0 (held: FD set), -EWOULDBLOCK (another step holds it), -errno. */
static int take_one(int dfd, const char *name, int *fd)
{
	for (int tries = 0; tries < 8; tries++) {
		struct stat a, b;
		int f =
		    openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);

		if (f < 0)
			return -errno;
		if (flock(f, LOCK_EX | LOCK_NB)) {
			int e = errno;

			close(f);
			return e == EWOULDBLOCK ? -EWOULDBLOCK : -e;
		}
		if (!fstat(f, &a) && !fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev && S_ISREG(a.st_mode)) {
			*fd = f;
			return 0;
		}
		close(f); /* its holder removed it as it let go: the name is free again */
	}
	return -EAGAIN;
}

int spank_ib_port_slot_take(struct spank_ib_port_slot *s, int dfd, uint32_t job, unsigned cap)
{
	int rc = -EBUSY;

	s->dfd = -1;
	s->fd = -1;
	s->name[0] = '\0';
	if (dfd < 0)
		return -EBADF;
	for (unsigned k = 0; k < cap; k++) {
		char name[sizeof(s->name)];
		int fd = -1, r;

		snprintf(name, sizeof(name), "testport.%u.%u", job, k);
		r = take_one(dfd, name, &fd);
		if (!r) {
			s->dfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
			if (s->dfd < 0) {
				r = -errno;
				close(fd);
				return r;
			}
			s->fd = fd;
			memcpy(s->name, name, sizeof(s->name));
			return 0;
		}
		if (r != -EWOULDBLOCK)
			rc = r;
	}
	return rc;
}

void spank_ib_port_slot_release(struct spank_ib_port_slot *s)
{
	if (!s || s->fd < 0)
		return;
	/* Removed while still locked: a taker that opened it before checks the name again. */
	(void)unlinkat(s->dfd, s->name, 0);
	close(s->fd);
	close(s->dfd);
	s->fd = s->dfd = -1;
	s->name[0] = '\0';
}
