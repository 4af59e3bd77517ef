/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_local.c: the srun, sbatch and salloc side.  Nothing runs here but
 * validation: a bad option value or environment default stops the command
 * before anything is allocated, with a message naming it.  The options
 * themselves travel to slurmstepd through SPANK (and, from sbatch and
 * salloc, through the job's environment to every step).
 */
#include <stdio.h>
#include <stdlib.h>

#include <slurm/spank.h>

#include "ibprep/text.h"

#include "spank_ib.h"

static const char *local_getenv(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

int spank_ib_local_init(spank_t sp, struct spank_ib_state *st)
{
	(void)sp;
	(void)st;
	return 0;
}

int spank_ib_local_post_opt(spank_t sp, struct spank_ib_state *st)
{
	char err[1024];

	(void)sp;
	if (spank_ib_effective(spank_ib_user_opts(), &st->conf, local_getenv, NULL, &st->eff,
			       &st->active, err, sizeof(err))) {
		char safe[2048];

		ibp_text_escape(err, safe, sizeof(safe)); /* holds the user's value */
		slurm_error("spank-ib: %s", safe);
		return -1;
	}
	return 0;
}
