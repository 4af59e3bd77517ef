/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib_report.c: user_init (the job's user, once per node): the node's
 * message, the cross-node test (ib_test.c), and --ib-report (text or JSON,
 * to stderr or the user's file).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hwloc.h>
#include <slurm/spank.h>

#include "ibprep/json.h"
#include "ibprep/place.h"
#include "ibprep/report.h"
#include "ibprep/topo.h"
#include "ibprep/text.h"

#include "spank_ib.h"

void spank_ib_view_row(const struct spank_ib_node *n, size_t r, const struct ibp_place_view *t,
		       char *buf, size_t len)
{
	char gpus[128] = "", nic[80] = "-", cpus[256] = "", mems[64] = "";
	size_t o = 0;

	for (size_t g = 0; g < t->n_gpus; g++)
		if (ibp_appendf(gpus, sizeof(gpus), &o, "%s%u", g ? "," : "", t->gpus[g]))
			break; /* cut: the row shows what fits */
	if (!t->n_gpus)
		strcpy(gpus, "-");
	if (t->n_nics && ibp_place_nic_name(&n->topo, &t->nics[0], nic, sizeof(nic)) <= 0)
		strcpy(nic, "-");
	if (t->cpus)
		hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), t->cpus);
	if (t->mems)
		hwloc_bitmap_list_snprintf(mems, sizeof(mems), t->mems);
	snprintf(buf, len, "%4zu  %-6s %-10s %-24s %s", r, gpus, nic, cpus[0] ? cpus : "-",
		 mems[0] ? mems : "-");
}

static void task_row(const struct spank_ib_node *n, size_t r, char *buf, size_t len)
{
	struct ibp_place_view v;

	buf[0] = '\0';
	if (!ibp_place_view_task(&n->pl, r, &v))
		spank_ib_view_row(n, r, &v, buf, len);
}

static void report_text(FILE *fp, const struct spank_ib_state *st, const struct spank_ib_node *n)
{
	char row[512], how[1024];

	fprintf(fp,
		"spank-ib: %s: job %u step %u: %zu HCAs, %zu GPUs, %zu findings, %s (%.1f ms%s)\n",
		st->host, n->job_id, n->step_id, n->have_in ? n->in.inv.n_hcas : 0,
		n->have_topo ? n->topo.n_gpus : 0, n->findings.n, n->verdict ? "fail" : "pass",
		n->work_ms, n->cached ? ", cached verdict" : "");
	ibp_text_escape(n->ifname_how, how, sizeof(how)); /* node names from the job's env */
	if (n->ifname_how[0])
		fprintf(fp, "spank-ib: %s: NCCL_SOCKET_IFNAME %s: %s\n", st->host,
			n->ifname[0] ? n->ifname : "-", how);
	if (n->have_step_gpus)
		fprintf(fp, "spank-ib: %s: step GPUs from %s (%zu)\n", st->host, n->gpus_from,
			n->n_step_gpus);
	if (n->test_said[0])
		fprintf(fp, "spank-ib: %s: cross-node test: %s\n", st->host, n->test_said);
	/* every finding, the node's warnings too (elsewhere only in slurmd's log) */
	for (size_t i = 0; i < n->findings.n; i++) {
		char line[1024];

		if (spank_ib_finding_is_note(&n->findings.v[i])) {
			ibp_finding_format(&n->findings.v[i], st->host, line, sizeof(line));
			fprintf(fp, "spank-ib: note: %s\n", line);
			continue;
		}
		if (n->findings.v[i].severity < IBP_SEV_WARN)
			continue;
		ibp_report_finding_line(&n->findings.v[i], st->host, line, sizeof(line));
		fprintf(fp, "spank-ib: %s\n", line);
	}
	if (!n->have_pl)
		return;
	fprintf(fp, "spank-ib: %s: task  gpu    hca        cpus                     mem\n",
		st->host);
	for (size_t r = 0; r < n->pl.n_tasks; r++) {
		task_row(n, r, row, sizeof(row));
		fprintf(fp, "spank-ib: %s: %s\n", st->host, row);
	}
}

static void report_json(FILE *fp, const struct spank_ib_state *st, const struct spank_ib_node *n)
{
	struct ibp_json j;

	ibp_json_init_file(&j, fp, 0);
	ibp_json_object_begin(&j);
	ibp_json_kv_string(&j, "node", st->host);
	ibp_json_kv_uint(&j, "job", n->job_id);
	ibp_json_kv_uint(&j, "step", n->step_id);
	ibp_json_kv_string(&j, "verdict", n->verdict ? "fail" : "pass");
	ibp_json_kv_bool(&j, "drained", n->drained);
	ibp_json_kv_bool(&j, "cached", n->cached);
	ibp_json_kv_double(&j, "elapsed_ms", n->work_ms);
	ibp_json_kv_uint(&j, "hcas", n->have_in ? n->in.inv.n_hcas : 0);
	ibp_json_kv_uint(&j, "gpus", n->have_topo ? n->topo.n_gpus : 0);
	ibp_json_key(&j, "step_gpus");
	if (n->have_step_gpus) {
		ibp_json_array_begin(&j);
		for (size_t g = 0; g < n->n_step_gpus; g++)
			ibp_json_uint(&j, n->step_gpus[g]);
		ibp_json_array_end(&j);
	} else {
		ibp_json_string(&j, "all");
	}
	ibp_json_kv_string(&j, "socket_ifname", n->ifname);
	ibp_json_kv_string(&j, "socket_ifname_from", n->ifname_how);
	ibp_report_findings_json(&j, &n->findings, st->host);
	ibp_json_key(&j, "tasks");
	ibp_json_array_begin(&j);
	for (size_t r = 0; n->have_pl && r < n->pl.n_tasks; r++) {
		struct ibp_place_view v;

		/* the rows as `ibprep place --json` writes them: one schema (docs/json.md) */
		if (!ibp_place_view_task(&n->pl, r, &v))
			ibp_report_task_json(&j, &n->topo, &v);
	}
	ibp_json_array_end(&j);
	ibp_json_object_end(&j);
	ibp_json_finish(&j);
	ibp_json_release(&j);
	fputc('\n', fp);
}

/*
 * Runs as the job's user (user_init: Slurm dropped to the job's uid).  The
 * report is built in memory, then written once, bounded: to stderr, or to
 * the user's file through the one as-user writer, in a child with a
 * deadline (a FIFO, a device or a directory refused with a message, a hung
 * mount given up on; the step goes on).
 */
void spank_ib_write_report(const struct spank_ib_state *st, const struct spank_ib_node *n)
{
	char path[PATH_MAX], job[16], err[PATH_MAX * 2 + 128];
	char *text = NULL;
	size_t len = 0, off = 0;
	FILE *mem = open_memstream(&text, &len);

	if (!mem) {
		slurm_error("spank-ib: %s: --ib-report: out of memory", st->host);
		return;
	}
	if (st->eff.report == SPANK_IB_REPORT_JSON)
		report_json(mem, st, n);
	else
		report_text(mem, st, n);
	if (fclose(mem) || !text) {
		free(text);
		return;
	}
	if (st->eff.report_file[0]) {
		snprintf(job, sizeof(job), "%u", n->job_id);
		if (ibp_conf_expand(st->eff.report_file, st->host, job, path, sizeof(path))) {
			char safe[PATH_MAX * 2];

			ibp_text_escape(st->eff.report_file, safe, sizeof(safe));
			slurm_spank_log(
			    "spank-ib: %s: warning: --ib-report file '%s': only %%n, %%j "
			    "and %%%% may follow '%%'",
			    st->host, safe);
		} else if (spank_ib_write_as_user(path, (uid_t)n->uid, getegid(), NULL, -1,
						  SPANK_IB_WRITE_REPLACE, text, len, err,
						  sizeof(err))) {
			slurm_spank_log(
			    "spank-ib: %s: warning: --ib-report file %s; the step goes on",
			    st->host, err);
		}
		free(text);
		return;
	}
	if (len > SPANK_IB_REPORT_MAX)
		len = SPANK_IB_REPORT_MAX; /* bounded: no step pays for a huge report */
	fflush(stderr);
	while (off < len) {
		ssize_t w = write(STDERR_FILENO, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* EAGAIN on a full pipe (stderr): the rest is dropped, not waited for */
		off += (size_t)w;
	}
	free(text);
}

int spank_ib_remote_user_init(spank_t sp, struct spank_ib_state *st)
{
	struct spank_ib_node *n = st->node;

	if (!n || !st->active || n->printed)
		return 0;
	spank_ib_node_print(n);
	if (st->eff.test != SPANK_IB_TEST_OFF)
		spank_ib_run_test(sp, st, n);
	if (st->eff.report != SPANK_IB_REPORT_OFF)
		spank_ib_write_report(st, n);
	return 0;
}
