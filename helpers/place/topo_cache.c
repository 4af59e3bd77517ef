/* SPDX-License-Identifier: GPL-2.0-or-later */
/* topo_cache.c: the live topology once per boot and hardware (topo_cache.h). */
#include <dirent.h>
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

#define CACHE_FORMAT "spank-ib topology cache 1"

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

int ibp_topo_cache_key(const struct ibp_sysfs *fs, char *key, size_t len)
{
	char boot[64], ver[32];
	char **pci = NULL;
	uint64_t h = 14695981039346656037ull;
	int rc, n;

	if (len < IBP_TOPO_CACHE_KEY_LEN)
		return -ENOSPC;
	rc = ibp_sysfs_read(fs, "proc/sys/kernel/random/boot_id", boot, sizeof(boot));
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	h = fnv_str(h, CACHE_FORMAT);
	snprintf(ver, sizeof(ver), "hwloc %x", hwloc_get_api_version());
	h = fnv_str(h, ver);
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

/* The cached XML of NAME in DFD, when it is root's own and sound: 0 with *BUF, or -errno. */
static int read_cached(int dfd, const char *name, char **buf, size_t *len)
{
	struct stat st;
	ssize_t r;
	size_t got = 0;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) ||
	    st.st_nlink != 1 || st.st_size <= 0 || st.st_size > IBP_TOPO_CACHE_MAX) {
		close(fd);
		return -EPERM;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		close(fd);
		return -ENOMEM;
	}
	while (
	    got < (size_t)st.st_size &&
	    ((r = read(fd, *buf + got, (size_t)st.st_size - got)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	close(fd);
	if (got != (size_t)st.st_size) {
		free(*buf);
		*buf = NULL;
		return -EIO;
	}
	(*buf)[got] = '\0';
	*len = got + 1;
	return 0;
}

/* HOST's cache files of other keys (a reboot, new hardware): gone. */
static void drop_others(int dfd, const char *host, const char *keep)
{
	char prefix[160];
	struct dirent *e;
	DIR *d;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	snprintf(prefix, sizeof(prefix), "topology.%s.", host);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (!strncmp(e->d_name, prefix, strlen(prefix)) && strcmp(e->d_name, keep) != 0 &&
		    n == strlen(prefix) + IBP_TOPO_CACHE_KEY_LEN - 1 + 4 &&
		    !strcmp(e->d_name + n - 4, ".xml"))
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

/* TOPO's export as NAME in DFD: root's private file, replaced in one step. */
static int store(const struct ibp_topo *topo, int dfd, const char *host, const char *name)
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
	if (!rc)
		drop_others(dfd, host, name);
	return rc;
}

int ibp_topo_load_cached(struct ibp_topo *topo, int dfd, const char *host, const char *key,
			 bool store_it, char *why, size_t whylen)
{
	char name[200], *buf = NULL;
	size_t len = 0;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (dfd < 0 || !host || !plain_name(host) || !key ||
	    strlen(key) != IBP_TOPO_CACHE_KEY_LEN - 1 ||
	    strspn(key, "0123456789abcdef") != IBP_TOPO_CACHE_KEY_LEN - 1) {
		ibp_errf(-EINVAL, why, whylen, "no cache for host '%s'", host ? host : "");
		return ibp_topo_load_live_machine(topo);
	}
	snprintf(name, sizeof(name), "topology.%s.%s.xml", host, key);
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
		int s = store(topo, dfd, host, name);

		if (s)
			ibp_errf(s, why, whylen, "cannot store %s: %s", name, strerror(-s));
	}
	return 0;
}
