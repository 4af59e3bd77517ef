/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_remote.c: the slurmstepd side (remote context) and the job prolog.
 *
 *   init_post_opt (root, once per node)  options in effect, node's work
 *   user_init     (job's user, once)     the node's message, the report
 *   task_init     (job's user, per task) the task's row and environment;
 *                                        returns the node's verdict
 *   exit          (root)                 release
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank_ib.h"

struct spank_ib_node {
	int verdict;                /* 0 pass, -1 fail the step */
	bool printed;               /* the node's message went out (user_init) */
	char msg[SPANK_IB_MSG_MAX]; /* lines to print once per node */
	size_t msg_len;
};

struct job_env {
	spank_t sp;
	char buf[4096];
};

/* The job's environment (srun's, as forwarded): data from the user. */
static const char *job_getenv(void *ctx, const char *name)
{
	struct job_env *je = ctx;

	if (spank_getenv(je->sp, name, je->buf, sizeof(je->buf)) != ESPANK_SUCCESS)
		return NULL;
	return je->buf;
}

__attribute__((format(printf, 2, 3))) static void node_say(struct spank_ib_node *n, const char *fmt,
							   ...)
{
	va_list ap;
	int w;

	if (n->msg_len >= sizeof(n->msg) - 1)
		return;
	va_start(ap, fmt);
	w = vsnprintf(n->msg + n->msg_len, sizeof(n->msg) - n->msg_len, fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	if ((size_t)w >= sizeof(n->msg) - n->msg_len) {
		/* Cut: say so rather than end mid-line. */
		static const char cut[] = "...\n";
		n->msg_len = sizeof(n->msg) - sizeof(cut);
		memcpy(n->msg + n->msg_len, cut, sizeof(cut));
		n->msg_len += sizeof(cut) - 1;
		return;
	}
	n->msg_len += (size_t)w;
}

int spank_ib_remote_post_opt(spank_t sp, struct spank_ib_state *st)
{
	struct job_env je = {.sp = sp};
	char err[1024];
	struct spank_ib_node *n;

	if (!st->conf_ok)
		return -1;
	n = calloc(1, sizeof(*n));
	if (!n) {
		slurm_error("spank-ib: %s: out of memory", st->host);
		return -1;
	}
	st->node = n;
	if (spank_ib_effective(spank_ib_user_opts(), &st->conf, job_getenv, &je, &st->eff,
			       &st->active, err, sizeof(err))) {
		/* A job fault: fail the user's own step, never drain. */
		node_say(n, "spank-ib: %s: %s\n", st->host, err);
		n->verdict = -1;
		st->active = true;
		return 0;
	}
	return 0;
}

int spank_ib_remote_user_init(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_node *n = st->node;

	(void)sp;
	if (!n || !st->active || n->printed)
		return 0;
	n->printed = true;
	if (n->msg_len) {
		/* One write: the lines of one node stay together in srun's output. */
		char *save = NULL, *copy = strdup(n->msg);
		if (!copy)
			return 0;
		for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			slurm_spank_log("%s", l);
		free(copy);
	}
	return 0;
}

int spank_ib_remote_task_init(spank_t sp, struct spank_ib_state *st)
{
	(void)sp;
	if (!st->node || !st->active)
		return 0;
	return st->node->verdict;
}

int spank_ib_remote_exit(spank_t sp, struct spank_ib_state *st)
{
	(void)sp;
	free(st->node);
	st->node = NULL;
	return 0;
}

int spank_ib_job_prolog(spank_t sp, struct spank_ib_state *st)
{
	(void)sp;
	(void)st;
	return 0;
}

int spank_ib_job_epilog(spank_t sp, struct spank_ib_state *st)
{
	(void)sp;
	(void)st;
	return 0;
}
