/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rootpath.c: open a path only root can change (rootpath.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibprep/rootpath.h"
#include "ibprep/text.h"

/* IBP_ROOTPATH_ROOT: root only, not even the caller (a job user's euid). */
static bool trusted_uid(uid_t u, unsigned flags)
{
	return u == 0 || (!(flags & IBP_ROOTPATH_ROOT) && u == geteuid());
}

static void owner_name(uid_t u, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (!getpwuid_r(u, &pw, tmp, sizeof(tmp), &res) && res)
		snprintf(buf, len, "%s (uid %u)", res->pw_name, (unsigned)u);
	else
		snprintf(buf, len, "uid %u", (unsigned)u);
}

/*
 * One object on the way (or, LAST, the one PATH names): SHOWN is its path.
 * Owned by root (or the caller) is required everywhere, so an entry in a
 * sticky world-writable directory is one nobody else can rename.
 */
static int check(const struct stat *st, const char *shown, const char *path, bool last,
		 unsigned flags, char *why, size_t len)
{
	char who[160];
	unsigned mode = (unsigned)(st->st_mode & 07777);
	bool dir = S_ISDIR(st->st_mode);
	unsigned bad = last && (flags & IBP_ROOTPATH_PRIVATE) ? 077u : 022u;

	if (!trusted_uid(st->st_uid, flags) || (mode & bad)) {
		/* /tmp: root's, sticky; a root-owned entry in it cannot be replaced */
		if (dir && !last && trusted_uid(st->st_uid, flags) && (mode & S_ISVTX))
			return 0;
		/* the name for the message only: an NSS lookup per object walked costs */
		owner_name(st->st_uid, who, sizeof(who));
		if (last)
			return ibp_errf(
			    -EPERM, why, len,
			    "%s is owned by %s with mode %04o: it must be root's and %s "
			    "(fix: chown root %s; chmod %s %s)",
			    path, who, mode,
			    bad == 077u ? "grant nothing to group or others"
					: "not writable by group or others",
			    path, bad == 077u ? "go-rwx" : "go-w", path);
		return ibp_errf(-EPERM, why, len,
				"%s: the directory %s on its path is owned by %s with mode %04o: "
				"whoever can write it can replace what follows (fix: a directory "
				"root's and not writable by group or others)",
				path, shown, who, mode);
	}
	return 0;
}

/* OUT = A + "/" + B (B may be empty), or -ENAMETOOLONG. */
static int join(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s%s%s", a, *b && strcmp(a, "/") != 0 ? "/" : "", b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The directory part of a real (link-free) absolute path, in place. */
static void parent_of(char *real)
{
	char *slash = strrchr(real, '/');

	if (slash == real)
		real[1] = '\0';
	else if (slash)
		*slash = '\0';
}

/*
 * A symbolic link NAME in the real directory DIR (fd DFD): its owner must be
 * trusted (a link is what a sticky directory's other users could plant), and
 * NEXT becomes the path it stands for, followed by REST.  -EAGAIN: go on at NEXT.
 */
static int follow(int dfd, const char *dir, const char *name, const struct stat *lst,
		  const char *rest, const char *path, unsigned flags, char *next, size_t nextlen,
		  char *why, size_t len)
{
	char target[PATH_MAX], head[PATH_MAX];
	ssize_t n;

	if (!trusted_uid(lst->st_uid, flags))
		return ibp_errf(-EPERM, why, len, "%s: the symbolic link %s/%s is owned by uid %u",
				path, strcmp(dir, "/") != 0 ? dir : "", name,
				(unsigned)lst->st_uid);
	n = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n <= 0)
		return ibp_errf(n < 0 ? -errno : -EINVAL, why, len, "%s: cannot read the link %s",
				path, name);
	target[n] = '\0';
	if (target[0] == '/') {
		snprintf(head, sizeof(head), "%s", target);
	} else {
		/*
		 * A leading "../" is DIR's parent: DIR is real (no link on it),
		 * so taking it here is what the walk would do at that "..",
		 * one walk from "/" fewer per "../" ("../../topo.xml").
		 */
		char up[PATH_MAX];
		const char *t = target;

		snprintf(up, sizeof(up), "%s", dir);
		for (;;) {
			if (!strncmp(t, "./", 2)) {
				t += 2;
			} else if (!strncmp(t, "../", 3)) {
				t += 3;
				parent_of(up);
			} else {
				break;
			}
			while (*t == '/')
				t++;
		}
		if (join(head, sizeof(head), up, t))
			return ibp_errf(-ENAMETOOLONG, why, len, "%s: path too long", path);
	}
	if (join(next, nextlen, head, rest))
		return ibp_errf(-ENAMETOOLONG, why, len, "%s: path too long", path);
	return -EAGAIN;
}

/* FD, a directory on the way reached as DIR, checked; closed when refused. */
static int checked_dir(int fd, const char *dir, const char *path, unsigned flags, char *why,
		       size_t len)
{
	struct stat st;

	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (check(&st, dir, path, false, flags & IBP_ROOTPATH_ROOT, why, len)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The component NAME of directory DIR (fd FD, closed here) could not be reached: E. */
static int dir_error(int fd, int e, const char *path, const char *dir, const char *name, char *why,
		     size_t len)
{
	close(fd);
	return ibp_errf(-e, why, len, "%s: directory %s/%s: %s", path,
			strcmp(dir, "/") != 0 ? dir : "", name, strerror(e));
}

/*
 * Walks the directories of CUR (absolute) from "/", each checked; returns the
 * fd of the last one, its real path in DIR, the last name in BASE.  A link or
 * ".." on the way: -EAGAIN with the path to go on at in NEXT (DIR is real,
 * so ".." is its parent).  PATH is the caller's, for messages.
 */
static int walk(const char *path, const char *cur, unsigned flags, char *dir, char *base,
		size_t baselen, char *next, char *why, size_t len)
{
	char buf[PATH_MAX];
	char *p, *slash;
	int fd;

	if (!cur || cur[0] != '/')
		return ibp_errf(-EINVAL, why, len, "%s: not an absolute path",
				path ? path : "(null)");
	if (strlen(cur) >= sizeof(buf))
		return ibp_errf(-ENAMETOOLONG, why, len, "%s: path too long", path);
	strcpy(buf, cur);
	while (strlen(buf) > 1 && buf[strlen(buf) - 1] == '/')
		buf[strlen(buf) - 1] = '\0';
	if (!strcmp(buf, "/"))
		strcpy(buf, "/."); /* "/" itself: its own directory, checked as the object */
	slash = strrchr(buf, '/');
	if (strlen(slash + 1) >= baselen)
		return ibp_errf(-ENAMETOOLONG, why, len, "%s: name too long", path);
	strcpy(base, slash + 1);
	*slash = '\0';
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	strcpy(dir, "/");
	fd = checked_dir(fd, dir, path, flags, why, len);
	if (fd < 0)
		return fd;
	for (p = slash == buf ? slash : buf + 1; *p;) {
		char *nx = strchr(p, '/');
		char rest[PATH_MAX];
		struct stat lst;
		int nfd, rc;

		if (nx)
			*nx = '\0';
		/* what follows this component: the other directories, then BASE */
		snprintf(rest, sizeof(rest), "%s%s%s", nx ? nx + 1 : "", nx ? "/" : "", base);
		if (!*p || !strcmp(p, ".")) {
			if (!nx)
				break;
			p = nx + 1;
			continue;
		}
		if (!strcmp(p, "..")) {
			parent_of(dir);
			rc = join(next, PATH_MAX, dir, rest);
			close(fd);
			return rc ? ibp_errf(rc, why, len, "%s: path too long", path) : -EAGAIN;
		}
		if (fstatat(fd, p, &lst, AT_SYMLINK_NOFOLLOW))
			return dir_error(fd, errno, path, dir, p, why, len);
		if (S_ISLNK(lst.st_mode)) {
			rc = follow(fd, dir, p, &lst, rest, path, flags, next, PATH_MAX, why, len);
			close(fd);
			return rc;
		}
		nfd = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0)
			return dir_error(fd, errno, path, dir, p, why, len);
		close(fd);
		fd = nfd;
		if (strlen(dir) + strlen(p) + 2 > PATH_MAX) {
			close(fd);
			return ibp_errf(-ENAMETOOLONG, why, len, "%s: path too long", path);
		}
		if (strcmp(dir, "/") != 0)
			strcat(dir, "/");
		strcat(dir, p);
		fd = checked_dir(fd, dir, path, flags, why, len);
		if (fd < 0)
			return fd;
		if (!nx)
			break;
		p = nx + 1;
	}
	return fd;
}

#define MAX_HOPS 40 /* links and ".." followed, as the kernel's MAXSYMLINKS */

/* The directory PATH's last name is in, after every link and "..": fd, its real path, BASE. */
static int resolve_parent(const char *path, unsigned flags, char *dir, char *base, size_t baselen,
			  char *cur, char *why, size_t len)
{
	char next[PATH_MAX];

	if (!path || strlen(path) >= PATH_MAX)
		return ibp_errf(-ENAMETOOLONG, why, len, "path too long");
	strcpy(cur, path);
	for (int hop = 0; hop <= MAX_HOPS; hop++) {
		int fd = walk(path, cur, flags, dir, base, baselen, next, why, len);

		if (fd != -EAGAIN)
			return fd;
		strcpy(cur, next);
	}
	return ibp_errf(-ELOOP, why, len, "%s: more than %d symbolic links", path, MAX_HOPS);
}

int ibp_rootpath_open_parent(const char *path, char *base, size_t baselen, char *why, size_t len)
{
	char dir[PATH_MAX], cur[PATH_MAX];

	return resolve_parent(path, 0, dir, base, baselen, cur, why, len);
}

int ibp_rootpath_open(const char *path, int oflags, unsigned flags, char *why, size_t len)
{
	char base[NAME_MAX + 1], dir[PATH_MAX], cur[PATH_MAX], next[PATH_MAX];
	struct stat st;
	bool is_dir = flags & IBP_ROOTPATH_DIR;
	int dfd, fd, rc;

	if (is_dir)
		oflags |= O_DIRECTORY;
	for (int hop = 0;; hop++) {
		if (hop > MAX_HOPS)
			return ibp_errf(-ELOOP, why, len, "%s: more than %d symbolic links", path,
					MAX_HOPS);
		dfd = resolve_parent(hop ? next : path, flags, dir, base, sizeof(base), cur, why,
				     len);
		if (dfd < 0)
			return dfd;
		if (!strcmp(base, "..")) {
			parent_of(dir);
			snprintf(next, sizeof(next), "%s", dir);
			close(dfd);
			continue;
		}
		if (!fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode)) {
			if (flags & IBP_ROOTPATH_NOFOLLOW) {
				close(dfd);
				return ibp_errf(-ELOOP, why, len,
						"%s is a symbolic link: give the real path", path);
			}
			rc = follow(dfd, dir, base, &st, "", path, flags, next, sizeof(next), why,
				    len);
			close(dfd);
			if (rc != -EAGAIN)
				return rc;
			continue;
		}
		break;
	}
	fd = openat(dfd, base, oflags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	rc = -errno;
	close(dfd);
	if (fd < 0) {
		if (rc == -ENOTDIR && is_dir)
			return ibp_errf(-EINVAL, why, len, "%s: not a directory", path);
		return ibp_errf(rc, why, len, "%s: %s", path, strerror(-rc));
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		close(fd);
		return ibp_errf(-EINVAL, why, len, "%s: not a %s", path,
				is_dir ? "directory" : "regular file");
	}
	rc = check(&st, path, path, true, flags, why, len);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int ibp_rootpath_check_fd(int fd, const char *path, unsigned flags, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st)) {
		int e = errno;

		return ibp_errf(-e, why, len, "%s: %s", path, strerror(e));
	}
	return check(&st, path, path, true, flags, why, len);
}
