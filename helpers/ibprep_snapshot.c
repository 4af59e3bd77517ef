/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ibprep snapshot: copies the sysfs files spank-ib reads into a directory,
 * as hwloc-gather-topology does for hwloc, so a user can attach the node's
 * view to a bug report and a test can replay it with --sysfs-root.
 *
 * What is copied (paths relative to the root, kept in place):
 *   sys/class/infiniband/<dev>     the links (or directories in a capture)
 *                                  and the whole device directory behind each
 *   PCI functions                  a fixed list of plain files (ids, class,
 *                                  NUMA, local CPUs, PCIe link) of every RDMA
 *                                  device, every GPU (class 0x03), and every
 *                                  bridge above them; net/<if>/ of each
 *   sys/bus/pci/devices/<addr>     the links to those functions
 *   sys/class/net/<if>             every interface: link + state files
 *   sys/module/<m>                 presence of the RDMA and GPU modules
 *   sys/kernel/mm/memory_peers     MOFED's peer-memory interface, if present
 *   sys/devices/system/{node,cpu}  online lists and each node's cpulist
 *   proc/sys/kernel/hostname       the node's name
 *
 * Reads go through the core's reader on the root, so nothing outside it is
 * ever read; links are never followed while walking, and each copied link
 * is rewritten as the relative path to where it resolves inside the root
 * (a link that resolves nowhere is left out).  Files are bounded (64 KiB
 * each, 100000 entries, 64 MiB in all); what could not be read is listed
 * in OUTDIR/SNAPSHOT-README.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ibprep_cmd.h"
#include "ibprep/sysfs.h"

#define SNAP_FILE_MAX    (64 * 1024)
#define SNAP_ENTRIES_MAX 100000
#define SNAP_BYTES_MAX   (64ULL * 1024 * 1024)
#define SNAP_DEPTH_MAX   12
#define SNAP_NOTES_MAX   200

/* Plain files of a PCI function that the inventory and the checks read. */
static const char *const pci_files[] = {
    "vendor",         "device",         "class",      "subsystem_vendor",   "subsystem_device",
    "numa_node",      "local_cpulist",  "local_cpus", "current_link_speed", "current_link_width",
    "max_link_speed", "max_link_width",
};
static const char *const net_files[] = {"operstate", "mtu",     "dev_port", "dev_id",
					"type",      "carrier", "ifindex"};
static const char *const modules[] = {
    "nvidia_peermem", "nv_peer_mem", "nvidia",   "nvidia_uvm", "amdgpu",
    "ib_core",        "ib_uverbs",   "ib_ipoib", "mlx5_core",  "mlx5_ib",
    "mlx4_core",      "mlx4_ib",     "irdma",    "bnxt_re",    "efa",
    "hfi1",           "rdma_rxe",    "rdma_ucm", "bonding",
};

struct snap {
	struct ibp_sysfs fs;
	int out_fd;
	const char *outdir;
	size_t files, links, skipped, entries;
	unsigned long long bytes;
	bool limit_hit;
	char **notes;
	size_t n_notes, notes_dropped;
	char **pci_done; /* canonical PCI dirs already copied */
	size_t n_pci_done;
	char buf[SNAP_FILE_MAX + 2]; /* one file's content */
};

__attribute__((format(printf, 2, 3))) static void note(struct snap *s, const char *fmt, ...)
{
	s->skipped++;
	if (s->n_notes >= SNAP_NOTES_MAX) {
		s->notes_dropped++;
		return;
	}
	char *line = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	char **v = realloc(s->notes, (s->n_notes + 1) * sizeof(*v));
	if (!v) {
		free(line);
		return;
	}
	s->notes = v;
	s->notes[s->n_notes++] = line;
}

static bool over_limits(struct snap *s)
{
	if (s->entries >= SNAP_ENTRIES_MAX || s->bytes >= SNAP_BYTES_MAX) {
		if (!s->limit_hit)
			note(s,
			     "limit reached (%d entries or %llu bytes): the snapshot is incomplete",
			     SNAP_ENTRIES_MAX, SNAP_BYTES_MAX);
		s->limit_hit = true;
		return true;
	}
	return false;
}

/* mkdir -p REL inside OUTDIR. */
static int out_mkdirs(struct snap *s, const char *rel)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (buf[0] && mkdirat(s->out_fd, buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

static int out_parent(struct snap *s, const char *rel)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	return out_mkdirs(s, buf);
}

/* Copies the regular file REL (canonical, inside the root). */
static void copy_file(struct snap *s, const char *rel)
{
	char *buf = s->buf;
	if (over_limits(s))
		return;
	int n = ibp_sysfs_read(&s->fs, rel, buf, sizeof(s->buf) - 1);
	if (n < 0) {
		/* EINVAL/ENODATA: sysfs has no value (an empty GID slot); not a problem. */
		if (n != -EINVAL && n != -ENODATA && n != -ENOENT)
			note(s, "%s: %s", rel, n == -EFBIG ? "larger than 64 KiB" : strerror(-n));
		return;
	}
	if (out_parent(s, rel) < 0) {
		note(s, "%s: cannot create its directory in %s", rel, s->outdir);
		return;
	}
	int fd = openat(s->out_fd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (errno != EEXIST)
			note(s, "%s: cannot write: %s", rel, strerror(errno));
		return;
	}
	buf[n] = '\n'; /* the reader stripped it; sysfs attributes end with one */
	size_t len = (size_t)n + 1, off = 0;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w < 0) {
			note(s, "%s: write failed: %s", rel, strerror(errno));
			break;
		}
		off += (size_t)w;
	}
	close(fd);
	s->files++;
	s->entries++;
	s->bytes += len;
}

/* Length of the first component of P ("" -> 0). */
static size_t comp_len(const char *p)
{
	const char *e = strchr(p, '/');
	return e ? (size_t)(e - p) : strlen(p);
}

/*
 * Relative link text from directory FROM to TARGET (both canonical,
 * root-relative), kernel style: up to the common ancestor of FROM and
 * TARGET's parent, then down ("../../../0000:18:00.0", never a bare "..").
 */
static int relative_link(const char *from, const char *target, char *out, size_t len)
{
	const char *leaf = strrchr(target, '/');
	size_t tdir_len = leaf ? (size_t)(leaf - target) : 0;
	leaf = leaf ? leaf + 1 : target;

	/* Skip the components FROM and TARGET's parent have in common. */
	const char *f = from, *t = target;
	const char *tend = target + tdir_len;
	while (*f && t < tend) {
		size_t fl = comp_len(f), tl = comp_len(t);
		if (t + tl > tend)
			tl = (size_t)(tend - t);
		if (fl != tl || strncmp(f, t, fl) != 0)
			break;
		f += fl + (f[fl] == '/');
		t += tl + (t < tend && t[tl] == '/');
	}
	size_t o = 0;
	for (const char *p = f; *p; p += comp_len(p) + (p[comp_len(p)] == '/')) {
		if (o + 4 > len)
			return -ENAMETOOLONG;
		out[o++] = '.';
		out[o++] = '.';
		out[o++] = '/';
	}
	size_t rest = t < tend ? (size_t)(tend - t) : 0;
	int n = snprintf(out + o, len - o, "%.*s%s%s", (int)rest, t, rest ? "/" : "", leaf);
	return (n < 0 || (size_t)n >= len - o) ? -ENAMETOOLONG : 0;
}

/* Copies the link REL as a relative link to where it resolves inside the root. */
static void copy_link(struct snap *s, const char *rel)
{
	char target[PATH_MAX], dir[PATH_MAX], text[PATH_MAX];
	if (over_limits(s))
		return;
	if (ibp_sysfs_realpath(&s->fs, rel, target, sizeof(target)) < 0)
		return; /* leads nowhere inside the root: left out */
	/* The link's own directory, resolved (REL's last component is the link). */
	snprintf(dir, sizeof(dir), "%s", rel);
	char *slash = strrchr(dir, '/');
	char canon_dir[PATH_MAX] = "";
	if (slash) {
		*slash = '\0';
		if (ibp_sysfs_realpath(&s->fs, dir, canon_dir, sizeof(canon_dir)) < 0)
			return;
	}
	const char *leaf = slash ? slash + 1 : rel;
	char out_rel[PATH_MAX];
	if (snprintf(out_rel, sizeof(out_rel), "%s%s%s", canon_dir, canon_dir[0] ? "/" : "",
		     leaf) >= (int)sizeof(out_rel))
		return;
	if (relative_link(canon_dir, target, text, sizeof(text)) < 0)
		return;
	if (out_parent(s, out_rel) < 0)
		return;
	if (symlinkat(text, s->out_fd, out_rel) < 0) {
		if (errno != EEXIST)
			note(s, "%s: cannot create link: %s", out_rel, strerror(errno));
		return;
	}
	s->links++;
	s->entries++;
}

/* Copies the directory DIR (canonical) recursively, links as links. */
static void copy_tree(struct snap *s, const char *dir, int depth)
{
	char **names = NULL;
	if (depth > SNAP_DEPTH_MAX) {
		note(s, "%s: deeper than %d levels, not copied", dir, SNAP_DEPTH_MAX);
		return;
	}
	int n = ibp_sysfs_list(&s->fs, dir, &names);
	if (n < 0) {
		note(s, "%s: cannot list: %s", dir, strerror(-n));
		return;
	}
	out_mkdirs(s, dir);
	for (int i = 0; i < n && !over_limits(s); i++) {
		char path[PATH_MAX];
		struct stat st;
		if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int)sizeof(path))
			continue;
		/* DIR is canonical (no links in it): fstatat sees this entry itself. */
		if (fstatat(s->fs.root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode))
			copy_link(s, path);
		else if (S_ISDIR(st.st_mode))
			copy_tree(s, path, depth + 1);
		else if (S_ISREG(st.st_mode))
			copy_file(s, path);
		else
			note(s, "%s: not a regular file, not copied", path);
	}
	ibp_sysfs_names_free(names);
}

static bool is_pci_addr(const char *s)
{
	size_t n = strlen(s);
	if (n < 12 || n > 15)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		size_t k = n - i; /* position from the end: ":BB:DD.F" is the last 8 */
		bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
		if (k == 8 || k == 5) {
			if (c != ':')
				return false;
		} else if (k == 2) {
			if (c != '.')
				return false;
		} else if (!hex) {
			return false;
		}
	}
	return true;
}

static bool pci_seen(struct snap *s, const char *canon)
{
	for (size_t i = 0; i < s->n_pci_done; i++)
		if (!strcmp(s->pci_done[i], canon))
			return true;
	char **v = realloc(s->pci_done, (s->n_pci_done + 1) * sizeof(*v));
	char *c = strdup(canon);
	if (!v || !c) {
		free(c);
		if (v)
			s->pci_done = v;
		return true; /* out of memory: skip rather than loop */
	}
	s->pci_done = v;
	s->pci_done[s->n_pci_done++] = c;
	return false;
}

static void copy_plain(struct snap *s, const char *dir, const char *const *files, size_t n)
{
	char path[PATH_MAX];
	struct stat st;
	for (size_t i = 0; i < n; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, files[i]) >= (int)sizeof(path))
			continue;
		if (fstatat(s->fs.root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			copy_file(s, path);
	}
}

/* The PCI function at canonical DIR: its files, its net/, its bus link; then the bridges above. */
static void copy_pci(struct snap *s, const char *canon, bool with_net)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", canon);
	for (bool first = true;; first = false) {
		const char *leaf = strrchr(dir, '/');
		leaf = leaf ? leaf + 1 : dir;
		if (!is_pci_addr(leaf) || pci_seen(s, dir))
			break;
		out_mkdirs(s, dir);
		copy_plain(s, dir, pci_files, sizeof(pci_files) / sizeof(pci_files[0]));
		char link[PATH_MAX];
		struct stat st;
		if (snprintf(link, sizeof(link), "sys/bus/pci/devices/%s", leaf) <
			(int)sizeof(link) &&
		    fstatat(s->fs.root_fd, link, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			copy_link(s, link);
		if (first && with_net) {
			char ndir[PATH_MAX + 8];
			char **names = NULL;
			snprintf(ndir, sizeof(ndir), "%s/net", dir);
			int n = ibp_sysfs_list(&s->fs, ndir, &names);
			for (int i = 0; i < n; i++) {
				char nd[PATH_MAX];
				if (snprintf(nd, sizeof(nd), "%s/%s", ndir, names[i]) >=
				    (int)sizeof(nd))
					continue;
				out_mkdirs(s, nd);
				copy_plain(s, nd, net_files,
					   sizeof(net_files) / sizeof(net_files[0]));
			}
			ibp_sysfs_names_free(names);
		}
		char *slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
}

/* Each RDMA device: its directory (through the class link) and its PCI function. */
static void copy_rdma(struct snap *s)
{
	char **names = NULL;
	int n = ibp_sysfs_list(&s->fs, "sys/class/infiniband", &names);
	bool from_class = n >= 0;
	if (n == -ENOENT) {
		/* No class directory (a tree gathered from the PCI side): devices
		 * are sys/bus/pci/devices/<addr>/infiniband/<dev>. */
		char **fns = NULL;
		int m = ibp_sysfs_list(&s->fs, "sys/bus/pci/devices", &fns);
		for (int i = 0; i < m; i++) {
			char ib[PATH_MAX], canon[PATH_MAX];
			snprintf(ib, sizeof(ib), "sys/bus/pci/devices/%s/infiniband", fns[i]);
			if (ibp_sysfs_realpath(&s->fs, ib, canon, sizeof(canon)) < 0)
				continue;
			copy_tree(s, canon, 0);
			char *slash = strrchr(canon, '/');
			if (slash) {
				*slash = '\0';
				copy_pci(s, canon, true);
			}
		}
		ibp_sysfs_names_free(fns);
		return;
	}
	if (n < 0) {
		note(s, "sys/class/infiniband: cannot list: %s", strerror(-n));
		return;
	}
	out_mkdirs(s, "sys/class/infiniband");
	for (int i = 0; i < n && from_class; i++) {
		char rel[PATH_MAX], canon[PATH_MAX], dev[PATH_MAX + 8];
		struct stat st;
		snprintf(rel, sizeof(rel), "sys/class/infiniband/%s", names[i]);
		if (fstatat(s->fs.root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (ibp_sysfs_realpath(&s->fs, rel, canon, sizeof(canon)) < 0) {
			note(s, "%s: leads nowhere inside the root", rel);
			continue;
		}
		if (S_ISLNK(st.st_mode))
			copy_link(s, rel);
		copy_tree(s, canon, 0);

		/* The PCI function: the "device" link, or the directory above infiniband/. */
		snprintf(dev, sizeof(dev), "%s/device", canon);
		char pci[PATH_MAX];
		if (ibp_sysfs_realpath(&s->fs, dev, pci, sizeof(pci)) >= 0) {
			copy_pci(s, pci, true);
		} else {
			char *slash = strrchr(canon, '/');
			if (slash && slash - canon >= 11 &&
			    !strncmp(slash - 11, "/infiniband", 11)) {
				*(slash - 11) = '\0';
				copy_pci(s, canon, true);
			}
		}
	}
	ibp_sysfs_names_free(names);
}

/* GPUs and other display controllers (class 0x03....): placement and GPUDirect need them. */
static void copy_gpus(struct snap *s)
{
	char **fns = NULL;
	int n = ibp_sysfs_list(&s->fs, "sys/bus/pci/devices", &fns);
	for (int i = 0; i < n; i++) {
		char cls[32], rel[PATH_MAX], canon[PATH_MAX];
		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", fns[i]);
		if (ibp_sysfs_readf(&s->fs, cls, sizeof(cls), "%s/class", rel) < 0)
			continue;
		if (strncmp(cls, "0x03", 4) != 0)
			continue;
		if (ibp_sysfs_realpath(&s->fs, rel, canon, sizeof(canon)) >= 0)
			copy_pci(s, canon, false);
	}
	ibp_sysfs_names_free(fns);
}

static void copy_netdevs(struct snap *s)
{
	char **names = NULL;
	int n = ibp_sysfs_list(&s->fs, "sys/class/net", &names);
	for (int i = 0; i < n; i++) {
		char rel[PATH_MAX], canon[PATH_MAX];
		struct stat st;
		snprintf(rel, sizeof(rel), "sys/class/net/%s", names[i]);
		if (fstatat(s->fs.root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (ibp_sysfs_realpath(&s->fs, rel, canon, sizeof(canon)) < 0)
			continue;
		if (S_ISLNK(st.st_mode))
			copy_link(s, rel);
		out_mkdirs(s, canon);
		copy_plain(s, canon, net_files, sizeof(net_files) / sizeof(net_files[0]));
	}
	ibp_sysfs_names_free(names);
}

/*
 * The directories the checks list keep their existence even when nothing in
 * them is copied: an empty sys/bus/pci/devices says "no GPU", a missing one
 * "unknown", and the replay must say the same.
 */
static void keep_dirs(struct snap *s)
{
	static const char *const dirs[] = {"sys/bus/pci/devices", "sys/class/net", "sys/module",
					   "sys/devices/system/node", "sys/devices/system/cpu"};
	struct stat st;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (fstatat(s->fs.root_fd, dirs[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode))
			out_mkdirs(s, dirs[i]);
}

static void copy_system(struct snap *s)
{
	char rel[PATH_MAX];
	struct stat st;
	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
		snprintf(rel, sizeof(rel), "sys/module/%s", modules[i]);
		if (fstatat(s->fs.root_fd, rel, &st, 0) < 0 || !S_ISDIR(st.st_mode))
			continue;
		out_mkdirs(s, rel);
		static const char *const mod_files[] = {"initstate", "refcnt", "version"};
		copy_plain(s, rel, mod_files, 3);
	}
	if (fstatat(s->fs.root_fd, "sys/kernel/mm/memory_peers", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		copy_tree(s, "sys/kernel/mm/memory_peers", 0);

	static const char *const online[] = {"online", "possible"};
	copy_plain(s, "sys/devices/system/cpu", online, 2);
	copy_plain(s, "sys/devices/system/node", online, 2);
	char **names = NULL;
	int n = ibp_sysfs_list(&s->fs, "sys/devices/system/node", &names);
	for (int i = 0; i < n; i++) {
		if (strncmp(names[i], "node", 4) != 0 || names[i][4] < '0' || names[i][4] > '9')
			continue;
		static const char *const node_files[] = {"cpulist", "distance"};
		snprintf(rel, sizeof(rel), "sys/devices/system/node/%s", names[i]);
		copy_plain(s, rel, node_files, 2);
	}
	ibp_sysfs_names_free(names);
	static const char *const host[] = {"hostname"};
	copy_plain(s, "proc/sys/kernel", host, 1);
}

static int write_readme(struct snap *s, const char *root)
{
	FILE *f = NULL;
	int fd =
	    openat(s->out_fd, "SNAPSHOT-README", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	char when[64] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (gmtime_r(&now, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f,
		"ibprep snapshot of %s taken %s\n"
		"\n"
		"The sysfs files spank-ib reads, at their paths under this directory.\n"
		"Replay: ibprep check --sysfs-root THIS_DIRECTORY\n"
		"\n"
		"%zu files, %zu links, %llu bytes; %zu entries not copied%s\n",
		root, when, s->files, s->links, s->bytes, s->skipped, s->skipped ? " (below)" : "");
	if (s->n_notes) {
		fprintf(f, "\nnot copied:\n");
		for (size_t i = 0; i < s->n_notes; i++)
			fprintf(f, "  %s\n", s->notes[i]);
		if (s->notes_dropped)
			fprintf(f, "  ... and %zu more\n", s->notes_dropped);
	}
	return fclose(f) == 0 ? 0 : -errno;
}

static void snap_release(struct snap *s)
{
	for (size_t i = 0; i < s->n_notes; i++)
		free(s->notes[i]);
	free(s->notes);
	for (size_t i = 0; i < s->n_pci_done; i++)
		free(s->pci_done[i]);
	free(s->pci_done);
	if (s->out_fd >= 0)
		close(s->out_fd);
	ibp_sysfs_close(&s->fs);
}

enum { OPT_ROOT = 1 };

static const struct ibprep_opt snapshot_opts[] = {
    {"sysfs-root", OPT_ROOT, 'r', "DIR", "copy from DIR/sys/... instead of /sys"},
    {NULL, 0, 0, NULL, NULL},
};

const struct ibprep_cmd_spec ibprep_snapshot_spec = {
    .name = "snapshot",
    .synopsis = "[--sysfs-root DIR] OUTDIR",
    .about = "Copies the node's RDMA sysfs files (devices, ports, counters, GIDs, the PCI\n"
	     "functions and bridges above them, GPUs, netdevs, modules, NUMA) into OUTDIR,\n"
	     "keeping their paths, so that 'ibprep check --sysfs-root OUTDIR' replays the\n"
	     "node.  Attach OUTDIR to bug reports.  OUTDIR must not exist or be empty.\n",
    .opts = snapshot_opts,
    .epilog = "exit status: 0 written (OUTDIR/SNAPSHOT-README lists what was skipped),\n"
	      "2 could not run\n",
};

/* Copies ROOT into OUTDIR and prints the summary; the exit status. */
static int snapshot_run(struct snap *s, const char *root, const char *outdir)
{
	s->out_fd = -1;
	s->outdir = outdir;
	if (strcmp(root, "/") != 0 && ibprep_sysfs_root_check("snapshot", root))
		return 2;
	int r = ibp_sysfs_open(&s->fs, root);
	if (r < 0) {
		fprintf(stderr, "ibprep snapshot: cannot open sysfs root %s: %s\n", root,
			strerror(-r));
		return 2;
	}
	if (mkdir(outdir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "ibprep snapshot: cannot create %s: %s\n", outdir, strerror(errno));
		return 2;
	}
	s->out_fd = open(outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->out_fd < 0) {
		fprintf(stderr, "ibprep snapshot: cannot open %s: %s\n", outdir, strerror(errno));
		return 2;
	}
	char **existing = NULL;
	struct ibp_sysfs outfs = {.root_fd = s->out_fd, .no_openat2 = false};
	int n = ibp_sysfs_list(&outfs, ".", &existing);
	ibp_sysfs_names_free(existing);
	if (n != 0) {
		fprintf(stderr, "ibprep snapshot: %s is not empty: choose a new directory\n",
			outdir);
		return 2;
	}

	copy_rdma(s);
	copy_gpus(s);
	copy_netdevs(s);
	copy_system(s);
	if (!s->files) {
		fprintf(stderr,
			"ibprep snapshot: no file copied from %s: nothing under %s/sys that "
			"spank-ib reads (is it a sysfs tree?); %s holds no snapshot\n",
			root, strcmp(root, "/") != 0 ? root : "", outdir);
		return 2;
	}
	keep_dirs(s);
	r = write_readme(s, root);
	if (r < 0) {
		fprintf(stderr, "ibprep snapshot: cannot write %s/SNAPSHOT-README: %s\n", outdir,
			strerror(-r));
		return 2;
	}
	printf("ibprep snapshot: wrote %zu files and %zu links (%llu bytes) from %s to %s\n",
	       s->files, s->links, s->bytes, root, outdir);
	if (s->skipped)
		printf("ibprep snapshot: %zu entries not copied, listed in %s/SNAPSHOT-README\n",
		       s->skipped, outdir);
	return 0;
}

int ibprep_cmd_snapshot(int argc, char **argv)
{
	struct ibprep_args args;
	const char *root = "/", *outdir = NULL;
	int c, n_operands = 0;

	ibprep_args_init(&args, &ibprep_snapshot_spec, argc, argv);
	while ((c = ibprep_args_next(&args)) != IBPREP_ARGS_END) {
		switch (c) {
		case OPT_ROOT:
			root = args.value;
			break;
		case IBPREP_ARGS_OPERAND:
			outdir = args.value;
			n_operands++;
			break;
		case IBPREP_ARGS_HELP:
			return 0;
		default:
			return 2;
		}
	}
	if (n_operands != 1) {
		fprintf(stderr, "ibprep snapshot: expected one OUTDIR, got %d\n", n_operands);
		ibprep_usage(&ibprep_snapshot_spec, stderr);
		return 2;
	}
	/* The state holds a 64 KiB file buffer: on the heap, not the stack. */
	struct snap *s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "ibprep snapshot: out of memory\n");
		return 2;
	}
	int ret = snapshot_run(s, root, outdir);
	snap_release(s);
	free(s);
	return ret;
}
