/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fork_probe.h: does a handler of slurmstepd's run in a child the plugin
 * forks before the child has set itself up?  Linked with -Wl,--wrap=fork
 * (a test's .mk file): while armed, every forked child raises SIG at once,
 * as if it arrived between fork and the child's set-up, and the handler
 * installed here (standing for slurmstepd's) counts every run in a process
 * that is not the test's.  SIG should be one whose default is to ignore
 * (SIGWINCH): a child that blocked it and set it to SIG_DFL drops it.
 */
#ifndef FORK_PROBE_H
#define FORK_PROBE_H

/* Installs the handler for SIG; 0 or -errno. */
int fork_probe_arm(int sig);

/*
 * Restores SIG's old handler.  *FORKS: the children forked while armed;
 * the handler's runs in them, or -errno.
 */
int fork_probe_disarm(int *forks);

#endif
