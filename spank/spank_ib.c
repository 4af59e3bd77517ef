/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank_ib.c: every slurm_spank_* symbol of spank_ib.so, dispatching on
 * spank_context() (pyxis's layout): srun/sbatch/salloc to ib_local.c,
 * slurmstepd and the job prolog/epilog to ib_remote.c.
 *
 * Which callback runs as whom on Slurm 22.05 (seen in the test cluster, and
 * asserted by tests/integration/test_spank_plugin.sh): init, init_post_opt,
 * task_init_privileged and exit run as root in slurmstepd; user_init and
 * task_init run as the job's user.  Messages printed from init_post_opt do
 * not reach srun; those from user_init and task_init do.  So the node's work
 * (checks, placement, draining) runs once in init_post_opt, its message is
 * printed once in user_init, and its verdict is returned from every
 * task_init (a failing user_init does not fail the step on 22.05).
 */
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank_ib.h"

SPANK_PLUGIN(spank_ib, 1);

static struct spank_ib_state state;

struct spank_ib_state *spank_ib_state(void)
{
	return &state;
}

static int register_options(spank_t sp)
{
	for (struct spank_option *o = spank_ib_option_table; o->name; o++) {
		spank_err_t rc = spank_option_register(sp, o);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("spank-ib: cannot register --%s: %s", o->name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

/*
 * The plugstack.conf arguments, parsed once per process (init, or the job
 * prolog where Slurm calls no init).  srun, sbatch and salloc run as the user
 * and need nothing from config=: it is not read there (a 0600 root file).
 *
 * There a bad argument stops the command, named: the line is the same on
 * every node.  In slurmstepd and slurmd a refused config= (or argument)
 * does not fail the plugin's init: a failing init says only "Plugin
 * initialization failed" or "Unspecified error" to the user (and srun exits
 * 0 on 22.05), and in slurmd's job prolog it drains the node with the
 * reason "Prolog error".  Instead the options are still registered, nothing
 * is acted on, and every step on the node fails from task_init with the
 * refusal as its message (ib_remote.c); nothing is drained.
 */
static int load_conf(spank_context_t ctx, int ac, char **av)
{
	char err[sizeof(state.refused) - 128];

	if (state.conf_ok || state.refused[0])
		return 0;
	ibp_conf_init(&state.conf);
	state.conf.no_config_files = ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR;
	if (spank_ib_short_hostname(state.host, sizeof(state.host)))
		strcpy(state.host, "localhost");
	if (!ibp_conf_parse_args(&state.conf, ac, av, state.host, err, sizeof(err))) {
		state.conf_ok = true;
		return 0;
	}
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) {
		slurm_error("spank-ib: %s: plugstack.conf: %s", state.host, err);
		return -1;
	}
	snprintf(state.refused, sizeof(state.refused), "%s", err);
	slurm_error("spank-ib: %s: %s; spank-ib's configuration is refused: every step on "
		    "this node fails until it is fixed, nothing is drained",
		    state.host, err);
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	spank_ib_opts_init(spank_ib_user_opts());
	state.conf_ok = false;
	state.refused[0] = '\0';
	state.active = false;
	if (load_conf(ctx, ac, av))
		return -1;
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR) {
		if (register_options(sp))
			return -1;
	}
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
		return spank_ib_local_init(sp, &state);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return spank_ib_local_post_opt(sp, &state);
	case S_CTX_REMOTE:
		return spank_ib_remote_post_opt(sp, &state);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	return spank_context() == S_CTX_REMOTE ? spank_ib_remote_user_init(sp, &state) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	return spank_context() == S_CTX_REMOTE ? spank_ib_remote_task_init(sp, &state) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	return spank_context() == S_CTX_REMOTE ? spank_ib_remote_exit(sp, &state) : 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	if (load_conf(S_CTX_JOB_SCRIPT, ac, av))
		return -1;
	return spank_ib_job_prolog(sp, &state);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_JOB_SCRIPT || !state.conf_ok)
		return 0;
	return spank_ib_job_epilog(sp, &state);
}
