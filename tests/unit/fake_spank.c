/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fake_spank.c: see fake_spank.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_spank.h"

struct fake_spank fake;

void fake_spank_reset(void)
{
	for (int i = 0; i < fake.n_env; i++)
		free(fake.env[i]);
	memset(&fake, 0, sizeof(fake));
	fake.ctx = S_CTX_REMOTE;
	fake.job_id = 42;
	fake.nnodes = 1;
	fake.local_tasks = 1;
	fake.total_tasks = 1;
}

static int env_find(const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < fake.n_env; i++)
		if (!strncmp(fake.env[i], name, n) && fake.env[i][n] == '=')
			return i;
	return -1;
}

void fake_spank_setenv(const char *name, const char *value)
{
	int i = env_find(name);
	char *kv;

	if (asprintf(&kv, "%s=%s", name, value) < 0)
		abort();
	if (i >= 0) {
		free(fake.env[i]);
		fake.env[i] = kv;
		return;
	}
	if (fake.n_env >= FAKE_MAX_ENV)
		abort();
	fake.env[fake.n_env++] = kv;
}

const char *fake_spank_getenv(const char *name)
{
	int i = env_find(name);

	return i < 0 ? NULL : strchr(fake.env[i], '=') + 1;
}

int fake_spank_msgs_with(const char *needle)
{
	int n = 0;

	for (int i = 0; i < fake.n_msgs; i++)
		if (strstr(fake.msgs[i], needle))
			n++;
	return n;
}

int fake_spank_msgs_at(const char *level, const char *needle)
{
	int n = 0;

	for (int i = 0; i < fake.n_msgs; i++)
		if (!strcmp(fake.levels[i], level) && strstr(fake.msgs[i], needle))
			n++;
	return n;
}

static void record(const char *level, const char *fmt, va_list ap)
{
	if (fake.n_msgs >= FAKE_MAX_MSGS)
		return;
	fake.levels[fake.n_msgs] = level;
	vsnprintf(fake.msgs[fake.n_msgs++], sizeof(fake.msgs[0]), fmt, ap);
}

#define FAKE_LOG(level)                                                                            \
	void slurm_##level(const char *fmt, ...)                                                   \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		record(#level, fmt, ap);                                                           \
		va_end(ap);                                                                        \
	}
FAKE_LOG(error)
FAKE_LOG(info)
FAKE_LOG(verbose)
FAKE_LOG(debug)
FAKE_LOG(debug2)
FAKE_LOG(debug3)
FAKE_LOG(spank_log)

spank_context_t spank_context(void)
{
	return fake.ctx;
}

int spank_remote(spank_t sp)
{
	(void)sp;
	return fake.ctx == S_CTX_REMOTE;
}

const char *spank_strerror(spank_err_t err)
{
	return err == ESPANK_SUCCESS ? "success" : "fake spank error";
}

int spank_symbol_supported(const char *symbol)
{
	(void)symbol;
	return 1;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	if (fake.register_fail || fake.n_opts >= FAKE_MAX_OPTS)
		return ESPANK_BAD_ARG;
	fake.opts[fake.n_opts++] = *opt;
	return ESPANK_SUCCESS;
}

spank_err_t spank_option_getopt(spank_t sp, struct spank_option *opt, char **optarg)
{
	(void)sp;
	(void)opt;
	(void)optarg;
	return ESPANK_ERROR;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	const char *v;

	(void)sp;
	if (fake.ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	if (!var || !buf || len <= 0)
		return ESPANK_BAD_ARG;
	v = fake_spank_getenv(var);
	if (!v)
		return ESPANK_ENV_NOEXIST;
	if (strlen(v) >= (size_t)len)
		return ESPANK_NOSPACE;
	strcpy(buf, v);
	return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
	(void)sp;
	if (fake.ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	if (!var || !val)
		return ESPANK_BAD_ARG;
	if (!overwrite && fake_spank_getenv(var))
		return ESPANK_ENV_EXISTS;
	fake_spank_setenv(var, val);
	return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
	int i;

	(void)sp;
	if (fake.ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	i = env_find(var);
	if (i >= 0) {
		free(fake.env[i]);
		fake.env[i] = fake.env[--fake.n_env];
	}
	return ESPANK_SUCCESS;
}

spank_err_t spank_job_control_setenv(spank_t sp, const char *name, const char *value, int overwrite)
{
	(void)sp;
	(void)name;
	(void)value;
	(void)overwrite;
	return ESPANK_NOT_LOCAL;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	va_list ap;
	spank_err_t rc = ESPANK_SUCCESS;

	(void)sp;
	va_start(ap, item);
	switch (item) {
	case S_JOB_UID:
		*va_arg(ap, uid_t *) = fake.uid;
		break;
	case S_JOB_GID:
		*va_arg(ap, gid_t *) = fake.gid;
		break;
	case S_JOB_ID:
		*va_arg(ap, uint32_t *) = fake.job_id;
		break;
	case S_JOB_STEPID:
		*va_arg(ap, uint32_t *) = fake.step_id;
		break;
	case S_JOB_NNODES:
		*va_arg(ap, uint32_t *) = fake.nnodes;
		break;
	case S_JOB_NODEID:
		*va_arg(ap, uint32_t *) = fake.nodeid;
		break;
	case S_JOB_LOCAL_TASK_COUNT:
		*va_arg(ap, uint32_t *) = fake.local_tasks;
		break;
	case S_JOB_TOTAL_TASK_COUNT:
		*va_arg(ap, uint32_t *) = fake.total_tasks;
		break;
	case S_TASK_ID:
		*va_arg(ap, int *) = fake.task_id;
		break;
	case S_TASK_GLOBAL_ID:
		*va_arg(ap, uint32_t *) = fake.task_global_id;
		break;
	case S_JOB_ENV:
		*va_arg(ap, char ***) = fake.env;
		break;
	default:
		rc = ESPANK_BAD_ARG;
	}
	va_end(ap);
	return rc;
}
