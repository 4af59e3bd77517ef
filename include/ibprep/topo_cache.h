/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * topo_cache.h: this machine's live topology, discovered once per boot and
 * hardware and reused from a root-only cache.
 *
 * Live hwloc discovery (PCI only) is most of what a step pays for placement
 * without topology=; the PCI topology changes only with the hardware.  The
 * cache is one hwloc XML export per host in a directory the caller opened
 * and checked (the plugin's cache_dir=: root's, 0700, on a root-only path),
 * named "topology.<host>.<key>.xml"; KEY is a hash of what would make it
 * wrong: the boot id (a reboot, and so any cold hardware change), the PCI
 * device list (a hot-plugged or vanished function), the hwloc release and
 * this file's format.  Every file operation is an *at() call on the
 * directory's fd with O_NOFOLLOW; a file is used only when it is a regular
 * file of root's that grants nothing to group or others; anything else is a
 * miss, never an error, and costs one live discovery.
 *
 * The discovery is of the whole machine (ibp_topo_load_live_machine): the
 * step that happens to discover it may run in a cgroup of a few CPUs, the
 * steps that reuse it in others.
 *
 * No globals; never prints.  Storing needs root (the plugin's init_post_opt).
 */
#ifndef IBPREP_TOPO_CACHE_H
#define IBPREP_TOPO_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "ibprep/sysfs.h"
#include "ibprep/topo.h"

#define IBP_TOPO_CACHE_KEY_LEN 17          /* 16 hex digits and the NUL */
#define IBP_TOPO_CACHE_MAX     (16u << 20) /* bytes of one cached XML */

/*
 * KEY (IBP_TOPO_CACHE_KEY_LEN bytes) for the machine FS reads (opened on
 * "/": proc/sys/kernel/random/boot_id and sys/bus/pci/devices).  0 or
 * -errno (no boot id: no caching).
 */
int ibp_topo_cache_key(const struct ibp_sysfs *fs, char *key, size_t len);

/*
 * Loads this machine's topology into TOPO: from DFD's files for HOST and KEY
 * when one is there and sound (the mapped form first; returns 1), else by
 * live discovery of the whole machine (returns 0), then, with STORE, both
 * written to DFD (root's, 0600, each replaced in one step:
 * ibp_atomic_write_at; HOST's files of other keys removed).  A store that fails leaves the
 * discovery in TOPO and says why in WHY (may be NULL; "" when stored).
 * -errno when live discovery fails (TOPO released).  HOST must be a plain
 * name ([A-Za-z0-9._-], not starting with '.'): otherwise nothing is read
 * or written (-EINVAL in WHY) and the discovery is live.
 */
int ibp_topo_load_cached(struct ibp_topo *topo, int dfd, const char *host, const char *key,
			 bool store, char *why, size_t whylen);

/*
 * An admin's topology= file, cached the same way: its mapped form
 * (topo.h), so that a step maps what a parse of the XML would give.  KEY
 * is a hash of the open file FD's identity (device, inode, size, mtime and
 * ctime to the nanosecond, owner and mode: an edited, replaced, chmod'ed or
 * chown'ed file has another key), the libhwloc build and this file's
 * format.  0 or -errno (-ENOENT: the libhwloc build is unknown, no key).
 */
int ibp_topo_file_key(int fd, char *key, size_t len);

/*
 * Loads the XML open on FD (the caller checked who may write it:
 * ibp_rootpath_open) into TOPO: from DFD's "topofile.<HOST>.<KEY>.map" when
 * it is there and sound (returns 1), else by reading FD and parsing it
 * (returns 0), then, with STORE and root, its mapped form written to DFD
 * (HOST's files of other keys removed; a store that fails is said in WHY,
 * "" otherwise).  DFD < 0 or an odd HOST: no cache, the XML parsed.
 * -errno when FD is not a regular file hwloc can load (TOPO released).
 */
int ibp_topo_load_file_cached(struct ibp_topo *topo, int fd, int dfd, const char *host, bool store,
			      char *why, size_t whylen);

#endif
