/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_slurmapi.c: the few Slurm API calls spank-ib makes, looked up by name
 * in the process (dlsym RTLD_DEFAULT), never linked: slurmstepd and slurmd
 * export them from libslurmfull, and the step's watcher (spank/watcher/)
 * dlopens that same library before it calls any of these.
 *
 * Each call is one RPC bounded by the cluster's MessageTimeout.  What the
 * controller answers is Slurm's own: nothing here reads the job's
 * environment.  The API is release-specific and the plugin is compiled per
 * release (docs/slurm-releases.md): from 23.11 slurm_kill_job_step takes
 * flags; from 25.11 it takes a slurm_step_id_t and job_desc_msg_t carries
 * the job's id in step_id; from 26.05 slurm_load_job, slurm_notify_job and
 * slurm_requeue take a slurm_step_id_t too.  The function types come from
 * the release's own slurm.h (__typeof__), so a wrong call does not compile.
 *
 * No spank_* call and no Slurm log call here: the watcher links this file.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "spank_ib.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
#define IBP_SLURM_STEP_ID_API 1 /* kill_job_step(slurm_step_id_t *), job_desc.step_id */
#endif
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
#define IBP_SLURM_STEP_ID_JOB_API 1 /* load_job, notify_job, requeue(slurm_step_id_t) */
#endif

typedef char *(*nodename_fn)(const char *host);
typedef void (*init_msg_fn)(update_node_msg_t *msg);
typedef int (*update_fn)(update_node_msg_t *msg);
typedef void (*xfree_fn)(void *p);
typedef int (*errno_fn)(void);
typedef char *(*strerror_fn)(int err);
typedef __typeof__(slurm_load_job) load_job_fn;
typedef __typeof__(slurm_free_job_info_msg) free_job_fn;
typedef __typeof__(slurm_notify_job) notify_fn;
typedef __typeof__(slurm_kill_job_step) kill_step_fn;
typedef __typeof__(slurm_requeue) requeue_fn;
typedef __typeof__(slurm_update_job) update_job_fn;
typedef __typeof__(slurm_init_job_desc_msg) init_desc_fn;

static void *sym(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* The last RPC's error in ERR: Slurm's words when it has them. */
static int rpc_error(const char *what, char *err, size_t errlen)
{
	errno_fn get_errno = (errno_fn)sym("slurm_get_errno");
	strerror_fn serr = (strerror_fn)sym("slurm_strerror");
	int e = get_errno ? get_errno() : errno;

	snprintf(err, errlen, "%s: %s", what, serr ? serr(e) : strerror(e));
	return -EIO;
}

static int no_api(char *err, size_t errlen)
{
	snprintf(err, errlen, "the Slurm API is not available in this process");
	return -ENOSYS;
}

int spank_ib_node_name(const char *host, char *buf, size_t len)
{
	nodename_fn get = (nodename_fn)sym("slurm_conf_get_nodename");
	xfree_fn xfree = (xfree_fn)sym("slurm_xfree_ptr");
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
	init_msg_fn init = (init_msg_fn)sym("slurm_init_update_node_msg");
	update_fn update = (update_fn)sym("slurm_update_node");
	update_node_msg_t msg;
	char names[256], why[256];

	if (!init || !update)
		return no_api(err, errlen);
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
		errno_fn get_errno = (errno_fn)sym("slurm_get_errno");
		strerror_fn serr = (strerror_fn)sym("slurm_strerror");
		int e = get_errno ? get_errno() : errno;

		snprintf(err, errlen, "%s", serr ? serr(e) : strerror(e));
		return -EIO;
	}
	return 0;
}

#ifdef IBP_SLURM_STEP_ID_JOB_API
static slurm_step_id_t job_step_id(uint32_t job)
{
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;

	id.job_id = job;
	return id;
}
#endif

int spank_ib_job_load(uint32_t job, struct spank_ib_job *out, char *err, size_t errlen)
{
	load_job_fn *load = (load_job_fn *)sym("slurm_load_job");
	free_job_fn *release = (free_job_fn *)sym("slurm_free_job_info_msg");
	job_info_msg_t *msg = NULL;
	const slurm_job_info_t *j;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!load || !release)
		return no_api(err, errlen);
#ifdef IBP_SLURM_STEP_ID_JOB_API
	rc = load(&msg, job_step_id(job), SHOW_ALL);
#else
	rc = load(&msg, job, SHOW_ALL);
#endif
	if (rc || !msg)
		return rpc_error("loading the job", err, errlen);
	if (msg->record_count < 1 || !msg->job_array) {
		release(msg);
		snprintf(err, errlen, "job %u: no such job", job);
		return -ENOENT;
	}
	j = &msg->job_array[0];
	out->state = j->job_state;
	out->batch = j->batch_flag != 0;
	out->requeue = j->requeue != 0;
	out->restarts = j->restart_cnt;
	out->begin = j->eligible_time;
	snprintf(out->admin_comment, sizeof(out->admin_comment), "%s",
		 j->admin_comment ? j->admin_comment : "");
	snprintf(out->exc_nodes, sizeof(out->exc_nodes), "%s", j->exc_nodes ? j->exc_nodes : "");
	release(msg);
	return 0;
}

bool spank_ib_job_pending(const struct spank_ib_job *j)
{
	return (j->state & JOB_STATE_BASE) == JOB_PENDING;
}

bool spank_ib_job_completing(const struct spank_ib_job *j)
{
	return (j->state & JOB_COMPLETING) != 0;
}

int spank_ib_job_notify(uint32_t job, const char *text, char *err, size_t errlen)
{
	notify_fn *notify = (notify_fn *)sym("slurm_notify_job");
	char msg[1024];

	if (!notify)
		return no_api(err, errlen);
	snprintf(msg, sizeof(msg), "%s", text);
#ifdef IBP_SLURM_STEP_ID_JOB_API
	if (notify(job_step_id(job), msg))
#else
	if (notify(job, msg))
#endif
		return rpc_error("telling the job", err, errlen);
	return 0;
}

int spank_ib_step_signal(uint32_t job, uint32_t step, int sig, char *err, size_t errlen)
{
	kill_step_fn *kill_step = (kill_step_fn *)sym("slurm_kill_job_step");
	int rc;

	if (!kill_step)
		return no_api(err, errlen);
#if defined(IBP_SLURM_STEP_ID_API)
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;

	id.job_id = job;
	id.step_id = step;
	rc = kill_step(&id, (uint16_t)sig, 0);
#elif SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
	rc = kill_step(job, step, (uint16_t)sig, 0);
#else
	rc = kill_step(job, step, (uint16_t)sig);
#endif
	if (rc)
		return rpc_error("signalling the step", err, errlen);
	return 0;
}

int spank_ib_job_requeue(uint32_t job, int *slurm_errno, char *err, size_t errlen)
{
	requeue_fn *requeue = (requeue_fn *)sym("slurm_requeue");
	errno_fn get_errno = (errno_fn)sym("slurm_get_errno");

	*slurm_errno = 0;
	if (!requeue)
		return no_api(err, errlen);
#ifdef IBP_SLURM_STEP_ID_JOB_API
	if (requeue(job_step_id(job), 0)) {
#else
	if (requeue(job, 0)) {
#endif
		*slurm_errno = get_errno ? get_errno() : errno;
		return rpc_error("requeueing the job", err, errlen);
	}
	return 0;
}

int spank_ib_job_update(uint32_t job, time_t begin, const char *admin_comment,
			const char *exc_nodes, char *err, size_t errlen)
{
	init_desc_fn *init = (init_desc_fn *)sym("slurm_init_job_desc_msg");
	update_job_fn *update = (update_job_fn *)sym("slurm_update_job");
	job_desc_msg_t desc;
	char comment[512], exc[512];

	if (!init || !update)
		return no_api(err, errlen);
	init(&desc);
#ifdef IBP_SLURM_STEP_ID_API
	desc.step_id.job_id = job;
#else
	desc.job_id = job;
#endif
	if (begin)
		desc.begin_time = begin;
	if (admin_comment) {
		snprintf(comment, sizeof(comment), "%s", admin_comment);
		desc.admin_comment = comment;
	}
	if (exc_nodes) {
		snprintf(exc, sizeof(exc), "%s", exc_nodes);
		desc.exc_nodes = exc;
	}
	if (update(&desc))
		return rpc_error("updating the job", err, errlen);
	return 0;
}

unsigned spank_ib_kill_wait(void)
{
	/* this process's own slurm.conf, as Slurm loaded it (slurmstepd, or the watcher's slurm_init) */
	const slurm_conf_t *conf = (const slurm_conf_t *)sym("slurm_conf");

	return conf && conf->kill_wait ? conf->kill_wait : 30;
}

int spank_ib_slurm_library(char *buf, size_t len)
{
	Dl_info info;
	void *f = sym("slurm_kill_job_step");

	if (!f || !dladdr(f, &info) || !info.dli_fname || info.dli_fname[0] != '/')
		return -ENOENT;
	if (strlen(info.dli_fname) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, info.dli_fname);
	return 0;
}
