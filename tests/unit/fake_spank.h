/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake_spank.h: a link-time fake of the spank_* and slurm_* calls the plugin
 * makes (NERSC shifter's mockwrapper.c idea), for tests/unit/test_spank_*.c.
 * The test sets the context, the job's environment and the items; the fake
 * records registered options, messages and environment changes.
 */
#ifndef FAKE_SPANK_H
#define FAKE_SPANK_H

#include <stdint.h>

#include <slurm/spank.h>

#define FAKE_MAX_ENV  64
#define FAKE_MAX_OPTS 32
#define FAKE_MAX_MSGS 64

struct fake_spank {
	spank_context_t ctx;
	char *env[FAKE_MAX_ENV + 1]; /* NULL-terminated */ /* "NAME=VALUE", malloc'd */
	int n_env;
	struct spank_option opts[FAKE_MAX_OPTS];
	int n_opts;
	int register_fail; /* spank_option_register returns ESPANK_BAD_ARG when set */
	char msgs[FAKE_MAX_MSGS][1024];
	const char *levels[FAKE_MAX_MSGS]; /* "error", "info", "spank_log" ...: the call's */
	int n_msgs;
	uint32_t job_id, step_id, nnodes, nodeid, local_tasks, total_tasks;
	int task_id;
	uint32_t task_global_id;
	uid_t uid;
	gid_t gid;
};

extern struct fake_spank fake;

void fake_spank_reset(void);
void fake_spank_setenv(const char *name, const char *value);
const char *fake_spank_getenv(const char *name);
/* The number of recorded messages containing NEEDLE. */
int fake_spank_msgs_with(const char *needle);
/*
 * The same, of the messages logged with slurm_LEVEL ("error", "info",
 * "spank_log": the user sees error and spank_log, info goes to the logs).
 */
int fake_spank_msgs_at(const char *level, const char *needle);

#endif
