/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_task.c: task_init (the job's user, once per task): the task's
 * environment, GPU selection and CPU/memory binding, from the node's
 * placement made in init_post_opt; returns the node's verdict.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#include <slurm/spank.h>

#include "ibprep/bind.h"
#include "ibprep/env.h"
#include "ibprep/finding.h"
#include "ibprep/place.h"
#include "ibprep/topo.h"
#include "ibprep/text.h"

#include "spank_ib.h"

static void apply_env(spank_t sp, struct spank_ib_state *st, struct spank_ib_node *n,
		      const struct ibp_place_view *view)
{
	struct ibp_env env;
	struct ibp_findings scratch;
	struct ibp_env_opts eo = {.force = st->eff.env == SPANK_IB_ENV_FORCE,
				  .socket_ifname = n->ifname[0] ? n->ifname : NULL};

	ibp_env_init(&env);
	ibp_findings_init(&scratch);
	/* Lints were reported once per node; the task's own copy is dropped. */
	if (!ibp_env_build(&env, &n->topo, &n->pl, view, &st->conf.policy, &eo, spank_ib_env_get,
			   sp, &scratch)) {
		for (size_t i = 0; i < env.n; i++) {
			const struct ibp_env_var *v = &env.v[i];

			if (v->action == IBP_ENV_SET)
				spank_setenv(sp, v->name, v->value, 0);
			else if (v->action == IBP_ENV_FORCED)
				spank_setenv(sp, v->name, v->value, 1);
		}
	}
	ibp_findings_release(&scratch);
	ibp_env_release(&env);
}

/*
 * GPU selection: a task that sees more GPUs than its row gets its own, as
 * CUDA indices in PCI bus order (the order CUDA_DEVICE_ORDER=PCI_BUS_ID
 * gives).  A CUDA_VISIBLE_DEVICES already there (Slurm's GRES binding, or
 * the user) is respected: the task keeps the GPUs it was given.
 */
static void apply_gpus(spank_t sp, const struct spank_ib_node *n, const struct ibp_place_view *view)
{
	char buf[512];
	size_t o = 0;

	if (!view->n_gpus || view->n_gpus >= n->topo.n_gpus)
		return;
	if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", buf, sizeof(buf)) != ESPANK_ENV_NOEXIST)
		return;
	for (size_t g = 0; g < view->n_gpus; g++) {
		const struct ibp_topo_gpu *gpu = &n->topo.gpus[view->gpus[g]];

		if (gpu->d.vendor != 0x10de)
			return; /* CUDA's variable names NVIDIA GPUs only */
		if (ibp_appendf(buf, sizeof(buf), &o, "%s%u", g ? "," : "", gpu->index))
			return;
	}
	spank_setenv(sp, "CUDA_VISIBLE_DEVICES", buf, 0);
}

/*
 * The GPU(s) the task really sees: Slurm's per-task CUDA_VISIBLE_DEVICES
 * (--gpus-per-task, --gpu-bind) or the user's, mapped through the step's
 * GPU list when relative.  A task that sees the GPU(s) of its row in the
 * deal (possibly among others: the step's whole list) keeps that row: 0.
 * One that does not is placed by the GPUs it sees: 1, SV holds its row.
 */
static int task_seen_gpus(spank_t sp, struct spank_ib_state *st, const struct spank_ib_node *n,
			  const struct ibp_place_view *deal, int task, struct ibp_place_seen *sv)
{
	unsigned gpus[IBP_PLACE_MAX_GPUS];
	char cvd[1024], err[512], safe[1024];
	int c;

	if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", cvd, sizeof(cvd)) != ESPANK_SUCCESS)
		return 0;
	c = spank_ib_map_cvd(cvd, n->step_gpus, n->have_step_gpus ? n->n_step_gpus : 0, n->cvd_mode,
			     n->topo.n_gpus, gpus, IBP_PLACE_MAX_GPUS, err, sizeof(err));
	if (c < 0) {
		ibp_text_escape(err, safe, sizeof(safe)); /* the user's CUDA_VISIBLE_DEVICES */
		fprintf(stderr,
			"spank-ib: %s: warning: task %d: %s: its IBPREP_*, HCA and CPUs follow the "
			"plugin's PCI-order deal, which may not be the GPU it uses; fix: let "
			"Slurm set CUDA_VISIBLE_DEVICES, or give indices of the step's GPUs\n",
			st->host, task, safe);
		return 0;
	}
	if (c == 0)
		return 0;
	/* It sees the GPU(s) the deal gave it (and maybe more: the step's whole list). */
	if (deal->n_gpus) {
		size_t have = 0;

		for (size_t d = 0; d < deal->n_gpus; d++)
			for (int k = 0; k < c; k++)
				if (gpus[k] == deal->gpus[d]) {
					have++;
					break;
				}
		if (have == deal->n_gpus)
			return 0;
	}
	if (ibp_place_view_seen(sv, &n->topo, &n->pl, (unsigned)task, gpus, (size_t)c)) {
		ibp_place_seen_release(sv);
		return 0;
	}
	return 1;
}

/* CPU and memory binding, within the mask Slurm already gave the task (bind.h: as ibprep exec). */
static void apply_binding(struct spank_ib_state *st, const struct ibp_place_view *view, int task)
{
	int rc = ibp_place_bind(view, NULL);

	if (rc == -EXDEV)
		fprintf(stderr,
			"spank-ib: %s: task %d: planned CPUs are outside the task's CPU mask from "
			"Slurm: not binding\n",
			st->host, task);
	else if (rc && rc != -ENOENT)
		fprintf(stderr, "spank-ib: %s: task %d: binding: %s\n", st->host, task,
			strerror(-rc));
}

int spank_ib_remote_task_init(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_node *n = st->node;
	struct ibp_place_view deal;
	const struct ibp_place_view *view = &deal;
	struct ibp_place_seen sv = {0};
	bool seen;
	int task = -1;

	if (!n || !st->active)
		return 0;
	if (!n->have_pl || n->verdict)
		return n->verdict;
	if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS || task < 0 ||
	    ibp_place_view_task(&n->pl, (size_t)task, &deal))
		return n->verdict;
	/* The GPU the task really uses decides its HCA, CPUs and environment. */
	seen = task_seen_gpus(sp, st, n, &deal, task, &sv) == 1;
	if (seen)
		view = &sv.v;
	if (st->eff.env != SPANK_IB_ENV_OFF) {
		apply_env(sp, st, n, view);
		if (st->eff.affinity != SPANK_IB_AFF_OFF)
			apply_gpus(sp, n, view);
	}
	if (st->eff.affinity != SPANK_IB_AFF_OFF && st->conf.bind)
		apply_binding(st, view, task);
	if (st->eff.affinity == SPANK_IB_AFF_VERBOSE) {
		char row[512];

		spank_ib_view_row(n, (size_t)task, view, row, sizeof(row));
		fprintf(stderr, "spank-ib: %s: %s%s%s\n", st->host, row,
			seen ? " (GPUs from CUDA_VISIBLE_DEVICES)" : "",
			st->conf.bind ? "" : " (not bound: bind=no)");
	}
	if (seen)
		ibp_place_seen_release(&sv);
	return n->verdict;
}
