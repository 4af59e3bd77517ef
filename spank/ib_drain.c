/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_drain.c: drain this node through the Slurm API, with the finding as
 * the reason.
 *
 * Runs in slurmstepd's init_post_opt (root on every release: user_init and
 * task_init already run as the job's user) or in the job prolog (root).
 * The node's Slurm NodeName comes from slurmstepd's own slurm.conf for this
 * host's name (slurm_conf_get_nodename(gethostname())), never from the job's
 * environment, which the user controls (SLURMD_NODENAME is not even set yet
 * in init_post_opt).  The API functions are looked up in the process that
 * loaded the plugin (slurmstepd and slurmd export them from libslurmfull):
 * the plugin links no Slurm library of its own.  slurm_update_node() is one
 * RPC bounded by the cluster's MessageTimeout.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "ibprep/nodestate.h"
#include "ibprep/text.h"

#include "spank_ib.h"

typedef char *(*nodename_fn)(const char *host);
typedef void (*init_msg_fn)(update_node_msg_t *msg);
typedef int (*update_fn)(update_node_msg_t *msg);
typedef void (*xfree_fn)(void *p);
typedef int (*errno_fn)(void);
typedef char *(*strerror_fn)(int err);

int spank_ib_node_name(const char *host, char *buf, size_t len)
{
	nodename_fn get = (nodename_fn)dlsym(RTLD_DEFAULT, "slurm_conf_get_nodename");
	xfree_fn xfree = (xfree_fn)dlsym(RTLD_DEFAULT, "slurm_xfree_ptr");
	char *name;
	int rc = 0;

	if (!get)
		return -ENOSYS;
	name = get(host);
	if (!name || !*name)
		rc = -ENOENT;
	else if (strlen(name) >= len)
		rc = -ENAMETOOLONG;
	else
		strcpy(buf, name);
	/* Slurm's allocator: its own free, or a small leak in a process that exits soon. */
	if (name && xfree)
		xfree(name);
	return rc;
}

int spank_ib_drain(const char *node, const char *reason, char *err, size_t errlen)
{
	init_msg_fn init = (init_msg_fn)dlsym(RTLD_DEFAULT, "slurm_init_update_node_msg");
	update_fn update = (update_fn)dlsym(RTLD_DEFAULT, "slurm_update_node");
	errno_fn get_errno = (errno_fn)dlsym(RTLD_DEFAULT, "slurm_get_errno");
	strerror_fn serr = (strerror_fn)dlsym(RTLD_DEFAULT, "slurm_strerror");
	update_node_msg_t msg;
	char names[256], why[256];

	if (!init || !update) {
		snprintf(err, errlen, "the Slurm API is not available in this process");
		return -ENOSYS;
	}
	if (geteuid() != 0) {
		snprintf(err, errlen, "not root (euid %d)", (int)geteuid());
		return -EPERM;
	}
	snprintf(names, sizeof(names), "%s", node);
	snprintf(why, sizeof(why), "%s", reason);
	init(&msg);
	msg.node_names = names;
	msg.node_state = NODE_STATE_DRAIN;
	msg.reason = why;
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25, 5, 0)
	/* in 24.11's update_node_msg_t, gone from 26.05's (25.x not checked) */
	msg.reason_uid = 0;
#endif
	if (update(&msg)) {
		int e = get_errno ? get_errno() : errno;
		snprintf(err, errlen, "%s", serr ? serr(e) : strerror(e));
		return -EIO;
	}
	return 0;
}

bool spank_ib_drain_node(const char *host, const struct ibp_findings *f, char *node, size_t nodelen,
			 char *what, size_t whatlen)
{
	char reason[IBP_DRAIN_REASON_MAX], err[256];
	int rc;

	what[0] = '\0';
	if (!ibp_drain_reason(f, IBP_DRAIN_PREFIX, reason, sizeof(reason)))
		return false;
	rc = spank_ib_node_name(host, node, nodelen);
	if (rc) {
		ibp_format_cut(what, whatlen,
			       "not draining: no NodeName for host %s in slurm.conf (%s)", host,
			       strerror(-rc));
		return false;
	}
	if (spank_ib_drain(node, reason, err, sizeof(err))) {
		ibp_format_cut(what, whatlen, "draining %s failed: %s", node, err);
		return false;
	}
	ibp_format_cut(what, whatlen, "draining %s", node);
	slurm_info("spank-ib: drained %s: %s", node, reason);
	return true;
}
