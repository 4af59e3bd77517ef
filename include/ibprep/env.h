/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * env.h: the environment that makes NCCL, UCX, Open MPI and PyTorch use a
 * placement, and the lint of what the user set.
 *
 * ibp_env_build() never reads the process environment itself: the caller
 * hands it a getter (the command: its environ; the plugin: spank_getenv), so
 * it is the same code in both.  A variable the user already set is never
 * replaced unless opts->force: it is listed with action IBP_ENV_USER_KEPT and
 * its value is linted instead (prefix collisions and misplaced '^'/'=' in
 * NCCL_IB_HCA, unhealthy or absent HCAs named, portless UCX_NET_DEVICES,
 * CUDA_DEVICE_ORDER other than PCI_BUS_ID): each problem is a finding of
 * class job with the fix.  Applying the list (setenv, spank_setenv) is the
 * caller's.
 *
 * The list owns its strings; ibp_env_release() frees them and is safe on a
 * zeroed list.  No globals; any context.
 */
#ifndef IBPREP_ENV_H
#define IBPREP_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "ibprep/finding.h"
#include "ibprep/place.h"
#include "ibprep/policy.h"
#include "ibprep/topo.h"

enum ibp_env_action {
	IBP_ENV_SET = 0,       /* not set by the user: set it */
	IBP_ENV_USER_KEPT = 1, /* the user's value stays (value = ours, user = theirs) */
	IBP_ENV_FORCED = 2,    /* the user's value is replaced (force) */
};

struct ibp_env_var {
	char name[48];
	char *value; /* what spank-ib would set */
	char *user;  /* the user's value, NULL when unset */
	enum ibp_env_action action;
};

struct ibp_env {
	struct ibp_env_var *v;
	size_t n, cap;
};

/*
 * Reads variable NAME into BUF.  Returns its length, -ENOENT when unset,
 * -ENOSPC when it does not fit (then it counts as set, value unknown).
 */
typedef int (*ibp_env_get_fn)(void *ctx, const char *name, char *buf, size_t len);

/* A getter over a NULL-terminated "NAME=value" array: CTX is the char **. */
int ibp_env_envp_get(void *ctx, const char *name, char *buf, size_t len);

struct ibp_env_opts {
	bool force;                /* replace the user's values */
	const char *socket_ifname; /* the bootstrap interface found by the caller, NULL none */
};

void ibp_env_init(struct ibp_env *env);
void ibp_env_release(struct ibp_env *env);

/*
 * Builds the variables for VIEW (a task or a worker of PL).  GET may be NULL
 * (nothing set by the user).  0 or -ENOMEM / -EINVAL; findings to F.
 */
int ibp_env_build(struct ibp_env *env, const struct ibp_topo *topo, const struct ibp_placement *pl,
		  const struct ibp_place_view *view, const struct ibp_policy *pol,
		  const struct ibp_env_opts *opts, ibp_env_get_fn get, void *ctx,
		  struct ibp_findings *f);

const struct ibp_env_var *ibp_env_find(const struct ibp_env *env, const char *name);

/* Lints of user values, exposed for the tests and fuzz targets.  0 or -ENOMEM. */
int ibp_env_lint_nccl_ib_hca(const char *value, const struct ibp_topo *topo,
			     struct ibp_findings *f);
int ibp_env_lint_ucx_net_devices(const char *value, const struct ibp_topo *topo,
				 struct ibp_findings *f);

/*
 * The step as Slurm describes it to a task, read through GET (the plugin:
 * spank_getenv in task_init; the command: its environ).  Absent variables
 * leave their fields unset; malformed or impossible values are errors.
 */
struct ibp_step_env {
	unsigned ntasks;                   /* tasks on this node, 0 when Slurm did not say */
	int local_rank;                    /* SLURM_LOCALID, -1 when unset */
	bool have_gpus;                    /* a GPU list was found: gpus/n_gpus (may be 0 GPUs) */
	unsigned gpus[IBP_PLACE_MAX_GPUS]; /* topo->gpus indices, as listed */
	size_t n_gpus;
	char gpus_from[32];   /* "SLURM_STEP_GPUS", "SLURM_JOB_GPUS" or "" */
	char ntasks_from[32]; /* "SLURM_STEP_TASKS_PER_NODE" ... or "" */
};

/*
 * GPUs from SLURM_STEP_GPUS, else SLURM_JOB_GPUS (gres indices, read as PCI
 * bus order: what AutoDetect gives; docs/placement.md "Which GPUs"); tasks on this node
 * from SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID, else SLURM_NTASKS_PER_NODE,
 * else SLURM_TASKS_PER_NODE; the rank from SLURM_LOCALID.  0, -EINVAL
 * (malformed value) or -ERANGE (a GPU the topology does not have), with ERR
 * naming the variable, what was seen and what was expected.
 */
int ibp_env_read_step(struct ibp_step_env *out, const struct ibp_topo *topo, ibp_env_get_fn get,
		      void *ctx, char *err, size_t errlen);

/*
 * A GPU list against TOPO: "all" (sets *ALL), indices in PCI bus order
 * ("0,2", "4-7") or bus IDs ("0000:44:00.0,03:00.0").  Returns the count
 * written to OUT, -EINVAL (malformed, duplicate), -ERANGE (not on the node),
 * -E2BIG; ERR says which, prefixed with FROM (the flag or variable name).
 */
int ibp_env_parse_gpus(const char *list, const char *from, const struct ibp_topo *topo,
		       unsigned *out, size_t max, bool *all, char *err, size_t errlen);

/* Slurm's "8(x2),4" tasks-per-node list at node index NODEID: count or -EINVAL. */
int ibp_env_tasks_at(const char *list, unsigned nodeid);

/* NCCL_NET_GDR_LEVEL for a GPU-HCA distance: NCCL has no NODE (NODE -> PHB). */
const char *ibp_env_gdr_level(enum ibp_dist d);

/*
 * S quoted for a POSIX shell (left bare when only safe characters, else in
 * single quotes with ' as '\'').  Length or -ENOSPC.
 */
int ibp_shell_quote(const char *s, char *buf, size_t len);

/*
 * The local interface whose route reaches PEER (an IPv4/IPv6 literal): a
 * connected UDP socket, no packet sent.  0, -EINVAL (not a literal),
 * -ENETUNREACH, -ENOENT (no interface holds the source address).
 */
int ibp_env_route_ifname(const char *peer, char *ifname, size_t len);

/*
 * Containers started by pyxis/enroot (helpers/place/env_enroot.c).
 *
 * enroot's mellanox hook (enroot conf/hooks/99-mellanox.sh) passes the
 * RDMA devices listed in MELLANOX_VISIBLE_DEVICES into the container, as
 * indices of its own enumeration: the glob
 * /sys/bus/pci/drivers/mlx?_core/<function>/infiniband_verbs/<uverbs>/uevent,
 * that is the PCI functions bound to mlx4_core first, then mlx5_core, each
 * in PCI address order (byte order, as bash sorts the glob; not natural
 * order), one index per uverbs device.  Devices of other drivers have no
 * index and cannot be passed by that hook.
 */

/*
 * The step runs in a pyxis container: the job's environment (through GET)
 * has pyxis's image or container name, as pyxis itself reads it
 * (PYXIS_CONTAINER_IMAGE / PYXIS_CONTAINER_NAME, pyxis args.c), or as
 * Slurm forwards sbatch/salloc's --container-image / --container-name to
 * the steps (SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image, and
 * the _SLURM_SPANK_OPTION_pyxis_* form srun inherits inside the job).
 * Writes the variable that told to WHY (may be NULL).
 */
bool ibp_env_pyxis_step(ibp_env_get_fn get, void *ctx, char *why, size_t whylen);

/*
 * MELLANOX_VISIBLE_DEVICES for the HCAs of PL's healthy fabric ports: their
 * indices in the hook's enumeration of the tree FS (ascending, comma
 * separated) into OUT.  Returns how many HCAs got an index (0: none the
 * hook knows; nothing to set), or -ENOSPC, -ENOMEM.  HCAs without an index
 * are named in SKIPPED ("mlx5_3,bnxt_re0", may be NULL).
 */
struct ibp_sysfs;
int ibp_env_mellanox_visible(const struct ibp_sysfs *fs, const struct ibp_topo *topo,
			     const struct ibp_placement *pl, char *out, size_t len, char *skipped,
			     size_t skippedlen);

#endif
