/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_linkwatch.c: what happened to the node's links while the step ran.
 *
 *   init_post_opt (root)  spank_ib_lw_start: the first read of every port
 *                         (state and six counters, linkwatch.h), taken
 *                         from the inventory the step has just read when
 *                         it holds them, kept in the process's state
 *   exit (root)           spank_ib_lw_end: the second read, the findings,
 *                         one line in slurmd's log, the drain (drain=yes,
 *                         health checks on), and a step-end section in the
 *                         user's --ib-report file, written by a child that
 *                         has become the job's user for good
 *
 * Only when the plugin is active for a normal step with health checks on
 * (--ib-check, or enforce=check): otherwise start is never called and end
 * does nothing.  The cost at the end is one sysfs read per file the
 * comparison uses (seven per port of the first read, no directory listing),
 * no hwloc, no inventory; the fork only when a report file was
 * asked for.  Paths come from plugstack.conf (sysfs_root=); the report path
 * is the user's own and root never opens it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "ibprep/finding.h"
#include "ibprep/json.h"
#include "ibprep/linkwatch.h"
#include "ibprep/report.h"
#include "ibprep/sysfs.h"

#include "spank_ib.h"

#define LW_MAX_GROUPS 64

struct spank_ib_lw {
	char root[PATH_MAX];
	uint32_t job, step;
	uid_t uid;
	gid_t gid;
	gid_t groups[LW_MAX_GROUPS];
	int n_groups; /* -1: unknown, keep only the primary group */
	struct ibp_linkwatch before, after;
};

static void ignore_list(const struct ibp_policy *p, const char **out, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < p->n_ignore_hcas && k + 1 < max; i++)
		out[k++] = p->ignore_hcas[i];
	out[k] = NULL;
}

void spank_ib_lw_start(spank_t sp, struct spank_ib_state *st, const char *root,
		       const struct ibp_inventory *inv, uint32_t job, uint32_t step)
{
	const char *ignore[IBP_POLICY_MAX_NAMES + 1];
	struct ibp_sysfs fs = {.root_fd = -1};
	struct spank_ib_lw *lw;
	gid_t *groups = NULL;
	int n_groups = 0;

	spank_ib_lw_free(st);
	lw = calloc(1, sizeof(*lw));
	if (!lw)
		return; /* not watched: nothing else depends on it */
	snprintf(lw->root, sizeof(lw->root), "%s", root);
	lw->job = job;
	lw->step = step;
	lw->uid = (uid_t)-1;
	lw->gid = (gid_t)-1;
	lw->n_groups = -1;
	spank_get_item(sp, S_JOB_UID, &lw->uid);
	spank_get_item(sp, S_JOB_GID, &lw->gid);
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &n_groups) == ESPANK_SUCCESS &&
	    n_groups >= 0 && n_groups <= LW_MAX_GROUPS && (groups || !n_groups)) {
		if (n_groups)
			memcpy(lw->groups, groups, (size_t)n_groups * sizeof(gid_t));
		lw->n_groups = n_groups;
	}
	ignore_list(&st->conf.policy, ignore, sizeof(ignore) / sizeof(ignore[0]));
	if (inv && !ibp_linkwatch_from_inventory(&lw->before, inv, ignore)) {
		st->lw = lw;
		return;
	}
	if (ibp_sysfs_open(&fs, root) || ibp_linkwatch_read(&lw->before, &fs, ignore)) {
		ibp_sysfs_close(&fs);
		free(lw);
		return;
	}
	ibp_sysfs_close(&fs);
	st->lw = lw;
}

size_t spank_ib_lw_ports(const struct spank_ib_state *st, struct ibp_lw_port_id *ids, size_t max)
{
	const struct spank_ib_lw *lw = st->lw;
	size_t n = 0;

	for (size_t i = 0; lw && i < lw->before.n_ports && n < max; i++, n++) {
		snprintf(ids[n].device, sizeof(ids[n].device), "%s", lw->before.ports[i].device);
		ids[n].port = lw->before.ports[i].port;
	}
	return n;
}

const struct ibp_linkwatch *spank_ib_lw_before(const struct spank_ib_state *st)
{
	return st->lw ? &st->lw->before : NULL;
}

void spank_ib_lw_free(struct spank_ib_state *st)
{
	free(st->lw);
	st->lw = NULL;
}

/*
 * The one line for slurmd's log: every finding, worst first, cut to the
 * buffer with "..." (the report file has them all).
 */
static void log_line(const struct spank_ib_state *st, const struct spank_ib_lw *lw,
		     const struct ibp_findings *f, double elapsed_s, const char *drained, char *buf,
		     size_t len)
{
	size_t o;
	int w;

	w = snprintf(buf, len, "spank-ib: %s: job %u.%u step end after %.1f s, %zu port%s%s",
		     st->host, lw->job, lw->step, elapsed_s, lw->before.n_ports,
		     lw->before.n_ports == 1 ? "" : "s", f->n ? ":" : ": links steady");
	o = w < 0 ? 0 : (size_t)w;
	for (int sev = IBP_SEV_FAIL; sev >= IBP_SEV_OK; sev--) {
		for (size_t i = 0; i < f->n && o < len; i++) {
			const struct ibp_finding *x = &f->v[i];

			if ((int)x->severity != sev)
				continue;
			w = snprintf(buf + o, len - o, " %s %s port %d: %s;",
				     sev == IBP_SEV_FAIL   ? "fail"
				     : sev == IBP_SEV_WARN ? "warning"
							   : "info",
				     x->device, x->port, x->observed);
			o += w < 0 ? 0 : (size_t)w;
		}
	}
	if (o < len && drained[0])
		o += (size_t)snprintf(buf + o, len - o, " %s", drained);
	if (o < len && st->watch_summary[0])
		snprintf(buf + o, len - o, " (watched %s)", st->watch_summary);
	if (o >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

/* The step-end section of the --ib-report file, text or one JSON line. */
static char *report_section(const struct spank_ib_state *st, const struct spank_ib_lw *lw,
			    const struct ibp_findings *f, double elapsed_s, bool drained,
			    size_t *len)
{
	char *buf = NULL, line[1024];
	size_t n = 0;
	FILE *fp;

	if (st->eff.report == SPANK_IB_REPORT_JSON) {
		struct ibp_json j;
		const char *s;

		/* {"step_end":{...}} written, then sent as ,"step_end":{...}}\n */
		ibp_json_init_buf(&j, 0);
		ibp_json_object_begin(&j);
		ibp_json_key(&j, "step_end");
		ibp_json_object_begin(&j);
		ibp_json_kv_uint(&j, "job", lw->job);
		ibp_json_kv_uint(&j, "step", lw->step);
		ibp_json_kv_double(&j, "elapsed_s", elapsed_s);
		ibp_json_kv_uint(&j, "ports", lw->before.n_ports);
		ibp_json_kv_string(&j, "verdict", ibp_findings_verdict(f));
		ibp_json_kv_bool(&j, "drained", drained);
		ibp_report_findings_json(&j, f, st->host);
		ibp_json_key(&j, "watch");
		ibp_json_array_begin(&j);
		for (size_t i = 0; i < st->watch_n; i++) {
			const struct spank_ib_watch_line *w = &st->watch_lines[i];

			ibp_json_object_begin(&j);
			ibp_json_kv_string(&j, "time", w->when);
			ibp_json_kv_string(&j, "event", w->kind);
			ibp_json_kv_string(&j, "code", w->code);
			ibp_json_kv_string(&j, "severity", w->severity);
			ibp_json_kv_string(&j, "device", w->device);
			ibp_json_kv_int(&j, "port", w->port);
			ibp_json_kv_string(&j, "observed", w->observed);
			ibp_json_kv_string(&j, "done", w->done);
			ibp_json_object_end(&j);
		}
		ibp_json_array_end(&j);
		ibp_json_object_end(&j);
		ibp_json_object_end(&j);
		if (ibp_json_finish(&j)) {
			ibp_json_release(&j);
			return NULL;
		}
		s = ibp_json_buf(&j, &n);
		buf = n > 2 ? malloc(n + 1) : NULL;
		if (buf) {
			buf[0] = ',';
			memcpy(buf + 1, s + 1, n); /* drops the leading '{', keeps the NUL */
		}
		ibp_json_release(&j);
		*len = n;
		return buf;
	}
	fp = open_memstream(&buf, &n);
	if (!fp)
		return NULL;
	fprintf(fp,
		"spank-ib: %s: job %u step %u: step end after %.1f s: %zu ports watched, %s%s\n",
		st->host, lw->job, lw->step, elapsed_s, lw->before.n_ports, ibp_findings_verdict(f),
		drained ? ", node drained" : "");
	for (size_t i = 0; i < f->n; i++) {
		ibp_report_finding_line(&f->v[i], st->host, line, sizeof(line));
		fprintf(fp, "spank-ib: %s\n", line);
	}
	for (size_t i = 0; i < st->watch_n; i++) {
		const struct spank_ib_watch_line *w = &st->watch_lines[i];

		fprintf(fp, "spank-ib: %s: watch: %s %s port %d: %s%s%s\n", st->host, w->when,
			w->device, w->port, w->observed, w->done[0] ? "; " : "", w->done);
	}
	if (fclose(fp)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

void spank_ib_lw_end(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_lw *lw = st->lw;
	struct ibp_sysfs fs = {.root_fd = -1};
	struct ibp_findings f;
	struct ibp_linkwatch_opts o;
	struct ibp_lw_port_id ids[IBP_LW_MAX_PORTS];
	char during[64], line[2048], drained[320] = "";
	bool did_drain = false;
	double elapsed_s;
	int rc;

	(void)sp;
	if (!lw)
		return;
	ibp_findings_init(&f);
	rc = ibp_sysfs_open(&fs, lw->root);
	/* the ports of the first read, without listing: a port gone is port_vanished */
	if (!rc)
		rc = ibp_linkwatch_read_ports_opts(&lw->after, &fs, ids,
						   spank_ib_lw_ports(st, ids, IBP_LW_MAX_PORTS),
						   IBP_LW_NO_PHYS_STATE);
	ibp_sysfs_close(&fs);
	if (rc) {
		slurm_error("spank-ib: %s: job %u.%u step end: cannot read %s: %s", st->host,
			    lw->job, lw->step, lw->root, strerror(-rc));
		goto out;
	}
	snprintf(during, sizeof(during), "during job %u.%u", lw->job, lw->step);
	memset(&o, 0, sizeof(o));
	o.during = during;
	o.tick_ns = st->conf.policy.xmit_wait_tick_ns;
	elapsed_s = ibp_linkwatch_elapsed(&lw->before, &lw->after);
	if (ibp_linkwatch_compare(&lw->before, &lw->after, &o, &f)) {
		slurm_error("spank-ib: %s: job %u.%u step end: out of memory", st->host, lw->job,
			    lw->step);
		goto out;
	}
	/* "spank-ib: mlx5_3 port 1: link went down 2 times during job 1234.0 (+1 more)" */
	if (st->conf.drain && !st->watch_drained) { /* the watcher's reason has the time */
		char node[IBP_NODE_MAX];

		did_drain =
		    spank_ib_drain_node(st->host, &f, node, sizeof(node), drained, sizeof(drained));
	}
	log_line(st, lw, &f, elapsed_s, drained, line, sizeof(line));
	if (ibp_findings_worst(&f) == IBP_SEV_FAIL)
		slurm_error("%s", line);
	else
		slurm_info("%s", line);
	if (st->eff.report != SPANK_IB_REPORT_OFF && st->eff.report_file[0]) {
		char path[PATH_MAX], job[16], err[PATH_MAX + 128];
		size_t len = 0;
		char *sec;

		snprintf(job, sizeof(job), "%u", lw->job);
		if (ibp_conf_expand(st->eff.report_file, st->host, job, path, sizeof(path)))
			goto out; /* user_init already said why */
		sec = report_section(st, lw, &f, elapsed_s, did_drain, &len);
		if (sec && spank_ib_write_as_user(path, lw->uid, lw->gid, lw->groups, lw->n_groups,
						  st->eff.report == SPANK_IB_REPORT_JSON
						      ? SPANK_IB_WRITE_JSON_MEMBER
						      : SPANK_IB_WRITE_APPEND,
						  sec, len, err, sizeof(err)))
			slurm_error("spank-ib: %s: --ib-report step end: %s", st->host, err);
		free(sec);
	}
out:
	ibp_findings_release(&f);
	spank_ib_lw_free(st);
}
