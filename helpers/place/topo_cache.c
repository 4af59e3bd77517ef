/* SPDX-License-Identifier: GPL-2.0-or-later */
/* topo_cache.c: the live topology once per boot and hardware (topo_cache.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hwloc.h>

#include "ibprep/atomic_write.h"
#include "ibprep/text.h"
#include "ibprep/topo_cache.h"

#define CACHE_FORMAT "spank-ib topology cache 2"
#define XML_MAX      ((size_t)1 << 28) /* bytes of a topology= file read to be cached */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv(h, s, strlen(s) + 1); /* the NUL separates the fields */
}

/*
 * The libhwloc build this process runs, as the file it was loaded from
 * (device, inode, size, mtime): the mapped form holds that build's layout,
 * so a package upgrade (a new file) must change every key.  0 or -errno
 * (unknown: the mapped form is not used).
 */
static int lib_identity(char *buf, size_t len)
{
	Dl_info dl;
	struct stat st;

	if (!dladdr((void *)hwloc_topology_init, &dl) || !dl.dli_fname || !dl.dli_fname[0])
		return -ENOENT;
	if (stat(dl.dli_fname, &st))
		return -errno;
	snprintf(buf, len, "%s %llx %llx %lld %lld.%09ld", dl.dli_fname,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	return 0;
}

static uint64_t key_start(bool *mapped_ok)
{
	char ver[32], lib[PATH_MAX + 128];
	uint64_t h = 14695981039346656037ull;

	h = fnv_str(h, CACHE_FORMAT);
	snprintf(ver, sizeof(ver), "hwloc %x", hwloc_get_api_version());
	h = fnv_str(h, ver);
	*mapped_ok = !lib_identity(lib, sizeof(lib));
	return fnv_str(h, *mapped_ok ? lib : "unknown libhwloc");
}

int ibp_topo_cache_key(const struct ibp_sysfs *fs, char *key, size_t len)
{
	char boot[64];
	char **pci = NULL;
	uint64_t h;
	bool mapped_ok;
	int rc, n;

	if (len < IBP_TOPO_CACHE_KEY_LEN)
		return -ENOSPC;
	rc = ibp_sysfs_read(fs, "proc/sys/kernel/random/boot_id", boot, sizeof(boot));
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	h = key_start(&mapped_ok);
	h = fnv_str(h, boot);
	n = ibp_sysfs_list(fs, "sys/bus/pci/devices", &pci);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		h = fnv_str(h, pci[i]);
	ibp_sysfs_names_free(pci);
	snprintf(key, len, "%016llx", (unsigned long long)h);
	return 0;
}

static bool plain_name(const char *s)
{
	size_t n = strlen(s);

	return n && n < 128 && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static bool plain_key(const char *key)
{
	return key && strlen(key) == IBP_TOPO_CACHE_KEY_LEN - 1 &&
	       strspn(key, "0123456789abcdef") == IBP_TOPO_CACHE_KEY_LEN - 1;
}

/*
 * NAME in DFD opened, when it is root's own regular file that grants
 * nothing to group or others, has one link and 1 to MAX bytes: the fd
 * with *SIZE, or -errno (-EPERM for a file not to be trusted).
 */
static int open_cached(int dfd, const char *name, size_t max, size_t *size)
{
	struct stat st;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) ||
	    st.st_nlink != 1 || st.st_size <= 0 || (size_t)st.st_size > max) {
		close(fd);
		return -EPERM;
	}
	*size = (size_t)st.st_size;
	return fd;
}

/* SIZE bytes of FD from its start, NUL-terminated: 0 with *BUF (the caller's), or -errno. */
static int read_whole(int fd, size_t size, char **buf)
{
	size_t got = 0;
	ssize_t r;

	*buf = malloc(size + 1);
	if (!*buf)
		return -ENOMEM;
	while (got < size && ((r = pread(fd, *buf + got, size - got, (off_t)got)) > 0 ||
			      (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	if (got != size) {
		free(*buf);
		*buf = NULL;
		return -EIO;
	}
	(*buf)[got] = '\0';
	return 0;
}

/* The cached XML of NAME in DFD, when it is root's own and sound: 0 with *BUF, or -errno. */
static int read_cached(int dfd, const char *name, char **buf, size_t *len)
{
	size_t size = 0;
	int fd = open_cached(dfd, name, IBP_TOPO_CACHE_MAX, &size), rc;

	if (fd < 0)
		return fd;
	rc = read_whole(fd, size, buf);
	close(fd);
	if (!rc)
		*len = size + 1;
	return rc;
}

/*
 * TOPO from the mapped form NAME in DFD: 0, or -errno with NAME removed
 * when it is not a mapped form this build can use (another address or
 * length, a cut-short write).  -EBUSY (the address taken in this process)
 * leaves it: another process may map it.
 */
static int map_cached(struct ibp_topo *topo, int dfd, const char *name)
{
	size_t size = 0;
	int fd = open_cached(dfd, name, IBP_TOPO_CACHE_MAX, &size), rc;

	if (fd < 0)
		return fd;
	rc = ibp_topo_load_mapped(topo, fd, size);
	close(fd);
	if (rc == -EINVAL)
		unlinkat(dfd, name, 0);
	return rc;
}

/* HOST's files of KIND ("topology", "topofile") and other keys: gone. */
static void drop_others(int dfd, const char *kind, const char *host, const char *key)
{
	char prefix[160];
	struct dirent *e;
	DIR *d;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t pl;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	snprintf(prefix, sizeof(prefix), "%s.%s.", kind, host);
	pl = strlen(prefix);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (!strncmp(e->d_name, prefix, pl) && n == pl + IBP_TOPO_CACHE_KEY_LEN - 1 + 4 &&
		    strncmp(e->d_name + pl, key, IBP_TOPO_CACHE_KEY_LEN - 1) != 0 &&
		    (!strcmp(e->d_name + n - 4, ".xml") || !strcmp(e->d_name + n - 4, ".map")))
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

/* TOPO's mapped form as NAME in DFD: root's private file, replaced in one step. */
static int store_mapped(const struct ibp_topo *topo, int dfd, const char *name)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (geteuid() != 0)
		return -EPERM;
	rc = ibp_topo_export_mapped(topo, &buf, &len);
	if (rc)
		return rc;
	rc = ibp_atomic_write_at(dfd, name, buf, len, 0600);
	free(buf);
	return rc;
}

/* TOPO's XML export as NAME in DFD, the same way. */
static int store_xml(const struct ibp_topo *topo, int dfd, const char *name)
{
	char *xml = NULL;
	int len = 0, rc;

	if (geteuid() != 0)
		return -EPERM;
	if (hwloc_topology_export_xmlbuffer(topo->t, &xml, &len, 0) < 0 || len <= 0)
		return -EIO;
	/* the buffer's length counts its NUL: the file holds the text only */
	rc = ibp_atomic_write_at(dfd, name, xml, (size_t)len - 1, 0600);
	hwloc_free_xmlbuffer(topo->t, xml);
	return rc;
}

int ibp_topo_load_cached(struct ibp_topo *topo, int dfd, const char *host, const char *key,
			 bool store_it, char *why, size_t whylen)
{
	char name[200], map[200], *buf = NULL;
	size_t len = 0;
	bool mapped_ok;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (dfd < 0 || !host || !plain_name(host) || !plain_key(key)) {
		ibp_errf(-EINVAL, why, whylen, "no cache for host '%s'", host ? host : "");
		return ibp_topo_load_live_machine(topo);
	}
	(void)key_start(&mapped_ok);
	snprintf(name, sizeof(name), "topology.%s.%s.xml", host, key);
	snprintf(map, sizeof(map), "topology.%s.%s.map", host, key);
	if (mapped_ok && !map_cached(topo, dfd, map))
		return 1;
	if (!read_cached(dfd, name, &buf, &len)) {
		rc = ibp_topo_load_xml_buffer(topo, buf, len);
		free(buf);
		if (!rc)
			return 1;
		/* not hwloc's any more (a truncated write, another hwloc): discover again */
		unlinkat(dfd, name, 0);
	}
	rc = ibp_topo_load_live_machine(topo);
	if (rc)
		return rc;
	if (store_it) {
		int s = store_xml(topo, dfd, name);

		if (s) {
			ibp_errf(s, why, whylen, "cannot store %s: %s", name, strerror(-s));
			return 0;
		}
		drop_others(dfd, "topology", host, key);
		s = mapped_ok ? store_mapped(topo, dfd, map) : 0;
		if (s)
			ibp_errf(s, why, whylen, "cannot store %s (the XML is kept): %s", map,
				 strerror(-s));
	}
	return 0;
}

int ibp_topo_file_key(int fd, char *key, size_t len)
{
	char id[256];
	struct stat st;
	bool mapped_ok;
	uint64_t h;

	if (len < IBP_TOPO_CACHE_KEY_LEN)
		return -ENOSPC;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	h = key_start(&mapped_ok);
	if (!mapped_ok)
		return -ENOENT;
	/* ctime moves with every write, chmod and chown; mtime and size with the content */
	snprintf(id, sizeof(id), "topology= %llx %llx %lld %lld.%09ld %lld.%09ld %u %o",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		 (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, (unsigned)st.st_uid,
		 (unsigned)st.st_mode);
	h = fnv_str(h, id);
	snprintf(key, len, "%016llx", (unsigned long long)h);
	return 0;
}

int ibp_topo_load_file_cached(struct ibp_topo *topo, int fd, int dfd, const char *host,
			      bool store_it, char *why, size_t whylen)
{
	char key[IBP_TOPO_CACHE_KEY_LEN], map[200], *buf = NULL;
	struct stat st;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	ibp_topo_init(topo);
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (size_t)st.st_size > XML_MAX)
		return -EINVAL;
	key[0] = '\0';
	if (dfd >= 0 && host && plain_name(host) && !ibp_topo_file_key(fd, key, sizeof(key))) {
		snprintf(map, sizeof(map), "topofile.%s.%s.map", host, key);
		if (!map_cached(topo, dfd, map))
			return 1;
	}
	rc = read_whole(fd, (size_t)st.st_size, &buf);
	if (rc)
		return rc;
	rc = ibp_topo_load_xml_buffer(topo, buf, (size_t)st.st_size + 1);
	free(buf);
	if (rc || !key[0] || !store_it)
		return rc;
	rc = store_mapped(topo, dfd, map);
	if (rc)
		ibp_errf(rc, why, whylen, "cannot store %s: %s", map, strerror(-rc));
	else
		drop_others(dfd, "topofile", host, key);
	return 0;
}
