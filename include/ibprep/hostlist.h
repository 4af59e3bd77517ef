/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostlist.h: Slurm host list expansion ("n[1-4,7],gpu[001-003]").
 *
 * The list comes from the step's environment (which the user can alter) or
 * from the command line, so it is untrusted input: every malformed case is a
 * clear message, never a crash, and the size is capped before anything is
 * allocated for it.
 *
 * Grammar: items separated by top-level commas; an item is text with zero or
 * more bracket groups, each a comma list of numbers or ranges A-B (A <= B);
 * several groups multiply out ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2).  A
 * range whose first bound has leading zeros keeps that width ("[08-10]":
 * 08 09 10).  Host names: letters, digits, '-', '_', '.', at most
 * IBP_NODE_MAX-1 bytes.  Duplicates are refused: a node cannot be its own
 * peer.  Order is kept: the index of a host is its position.
 */
#ifndef IBPREP_HOSTLIST_H
#define IBPREP_HOSTLIST_H

#include <stddef.h>

#include "ibprep/finding.h"

#define IBP_HOSTLIST_MAX 65536 /* hard cap, whatever the caller asks */

struct ibp_hostlist {
	char (*names)[IBP_NODE_MAX]; /* owned; names[i] is node index i */
	size_t n;
};

/*
 * Expands SPEC into OUT (which must be zeroed or released).  MAX_HOSTS caps
 * the result (0 = IBP_HOSTLIST_MAX).  0, or -EINVAL (syntax, bad name,
 * duplicate), -E2BIG (more than the cap), -ENOMEM; ERR then says what and
 * where ("bad range '5-3' in 'n[5-3]': the first bound is larger").
 */
int ibp_hostlist_expand(const char *spec, size_t max_hosts, struct ibp_hostlist *out, char *err,
			size_t errlen);

void ibp_hostlist_release(struct ibp_hostlist *hl);

/* Index of NAME, or -1. */
long ibp_hostlist_find(const struct ibp_hostlist *hl, const char *name);

#endif
