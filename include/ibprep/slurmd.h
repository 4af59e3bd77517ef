/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurmd.h: the locked-memory limit jobs inherit on a node, read from slurmd.
 *
 * A node check run by NHC or as Slurm's HealthCheckProgram runs as root with
 * root's limits; the jobs' tasks inherit slurmd's (slurmd -> slurmstepd ->
 * tasks; PropagateResourceLimitsExcept=MEMLOCK keeps the user's shell out of
 * it).  So a node check judges slurmd's soft RLIMIT_MEMLOCK, read from
 * proc/<pid>/limits.
 *
 * slurmd is found through its pid file (slurm.conf's SlurmdPidFile, Slurm's
 * default /var/run/slurmd.pid), never through anything a user controls: the
 * pid file must be a regular file owned by root and not writable by group
 * or others, the process it names must be root's, and its executable must
 * be called slurmd.  A process a user named slurmd, or a pid file a user
 * could write, is refused with the reason.  (Scanning /proc for a process
 * called slurmd was not chosen: on a host running several slurmd, as test
 * clusters and multiple-slurmd setups do, it cannot tell which is this
 * node's, and the pid file, with %n, can.)
 *
 * Every read goes through a struct ibp_sysfs, so proc/ is read inside its
 * root: "/" on a node, a fixture tree in tests.  No globals; any context.
 */
#ifndef IBPREP_SLURMD_H
#define IBPREP_SLURMD_H

#include <stddef.h>
#include <stdint.h>

#include "ibprep/sysfs.h"

/* Slurm's own default when slurm.conf has no SlurmdPidFile. */
#define IBP_SLURMD_PID_FILE_DEFAULT "/var/run/slurmd.pid"

/*
 * The value of KEY in the text of a slurm.conf (keys case-insensitive, "#"
 * starts a comment, the last setting wins; Include lines are not followed).
 * Length, -ENOENT when absent, -ENAMETOOLONG when it does not fit in OUT.
 */
int ibp_slurm_conf_get(const char *text, const char *key, char *out, size_t len);

/*
 * Expands Slurm's %n (NODE) and %h (HOST) in a SlurmdPidFile value; "%%" is
 * "%".  Length, -EINVAL (another "%x", or a value that is not an absolute
 * path, or NODE/HOST containing '/'), -ENAMETOOLONG.
 */
int ibp_slurm_expand_path(const char *pattern, const char *node, const char *host, char *out,
			  size_t len);

/*
 * The soft "Max locked memory" limit from the text of proc/<pid>/limits, in
 * KiB (UINT64_MAX for unlimited).  0, -ENOENT (no such line), -EINVAL
 * (malformed).
 */
int ibp_proc_parse_memlock(const char *limits, uint64_t *kb);

struct ibp_slurmd {
	long pid;
	uint64_t memlock_kb; /* soft limit, UINT64_MAX unlimited */
};

/*
 * Finds slurmd through PID_FILE (an absolute path, read inside FS's root),
 * checks it as described above and reads its limit.  0, or -errno with WHY
 * saying what was wrong ("/run/slurmd.pid: no such file (is slurmd
 * running?)"): -ENOENT (no pid file, no such process), -EPERM (not
 * trusted: owner, mode, not root's, not slurmd), -EACCES (cannot read
 * proc/<pid>/exe: not root), -EINVAL (malformed pid file or limits).
 */
int ibp_slurmd_find(const struct ibp_sysfs *fs, const char *pid_file, struct ibp_slurmd *out,
		    char *why, size_t whylen);

#endif
