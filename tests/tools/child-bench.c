/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * child-bench.c: what the plugin's test child costs (bench/bench_rdmatest.sh).
 *
 *   child-bench HELPER UID RUNS [MUNGE_SOCKET]
 *
 * Runs the cross-node test of a one-node step RUNS times in process
 * (ibp_rdmatest_run) and RUNS times through spank_ib_child_run (fork,
 * become UID, the test's user, exec HELPER rdmatest --child, plan and
 * result over pipes), and prints the medians and their difference: the
 * child's own cost per node and step.  The job's uid is JOB_UID (the child
 * refuses to run as the job's owner).  Needs root (the drop).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibprep/deadline.h"
#include "ibprep/rdmatest.h"
#include "ibprep/rdmatest_pipe.h"
#include "ibprep/rdmatest_ports.h"

#include "../../spank/spank_ib.h"

#include "bench-util.h"

#define JOB_UID 4242u

int main(int argc, char **argv)
{
	static struct ibp_pipe_plan plan;
	static struct ibp_rdmatest_result res;
	struct spank_ib_child_spec spec = {0};
	struct ibp_rdmatest_config cfg = {0};
	double *in, *ch;
	int runs, fds[IBP_RDMATEST_MAX_LISTEN], bound = -1;
	uint16_t ports[IBP_RDMATEST_MAX_LISTEN];
	char err[512];
	int n;

	if (argc < 4 || geteuid() != 0) {
		fprintf(stderr, "usage (as root): child-bench HELPER UID RUNS [MUNGE_SOCKET]\n");
		return 2;
	}
	runs = atoi(argv[3]);
	if (runs < 1 || runs > 10000)
		return 2;
	in = calloc((size_t)runs, sizeof(*in));
	ch = calloc((size_t)runs, sizeof(*ch));
	if (!in || !ch)
		return 2;
	ibp_pipe_plan_init(&plan);
	snprintf(plan.nodelist, sizeof(plan.nodelist), "localhost");
	plan.uid = JOB_UID;
	plan.job = 4242;
	snprintf(plan.policy.test_transport, sizeof(plan.policy.test_transport), "socket");
	if (argc > 4)
		snprintf(plan.munge_socket, sizeof(plan.munge_socket), "%s", argv[4]);
	/* The listener as the plugin binds it, handed to every child. */
	n = ibp_rdmatest_listen(plan.job, 0, plan.policy.test_port_lo, plan.policy.test_port_hi,
				NULL, fds, ports, IBP_RDMATEST_MAX_LISTEN);
	if (n < 0) {
		fprintf(stderr, "child-bench: cannot listen: %d\n", n);
		return 1;
	}
	plan.n_listen = (size_t)n;
	for (int i = 0; i < n; i++) {
		plan.listen_ports[i] = ports[i];
		plan.listen_bound[i] = fds[i] >= 0;
		if (fds[i] >= 0)
			bound = fds[i];
	}
	spec.helper = argv[1];
	spec.uid = spec.gid = (uint32_t)atoi(argv[2]);
	spec.listen_fds = &bound;
	spec.n_listen_fds = 1;
	spec.budget_s = 10;
	cfg.nodelist = plan.nodelist;
	cfg.uid = (uint32_t)getuid();
	cfg.job = plan.job;
	cfg.policy = &plan.policy;
	cfg.munge_socket = plan.munge_socket[0] ? plan.munge_socket : NULL;
	cfg.listen_fds = fds;
	cfg.listen_ports = ports;
	cfg.n_listen_fds = (size_t)n;
	for (int r = 0; r < runs; r++) {
		struct ibp_findings f;
		int64_t t0;
		int rc;

		ibp_findings_init(&f);
		t0 = ibp_now_ns();
		rc = ibp_rdmatest_run(&cfg, &f, &res);
		in[r] = (double)(ibp_now_ns() - t0) / 1e6;
		if (rc || !res.pass) {
			fprintf(stderr, "child-bench: in-process run failed (%d)\n", rc);
			return 1;
		}
		ibp_findings_release(&f);
		ibp_findings_init(&f);
		t0 = ibp_now_ns();
		rc = spank_ib_child_run(&spec, &plan, &res, &f, err, sizeof(err));
		ch[r] = (double)(ibp_now_ns() - t0) / 1e6;
		if (rc || !res.pass) {
			fprintf(stderr, "child-bench: child run failed: %s\n", err);
			return 1;
		}
		ibp_findings_release(&f);
	}
	printf("in_process_ms %.3f\nchild_ms %.3f\nchild_cost_ms %.3f\n", bench_median(in, runs),
	       bench_median(ch, runs), bench_median(ch, runs) - bench_median(in, runs));
	return 0;
}
