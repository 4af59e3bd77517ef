/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linkwatch-bench ROOT [RUNS]: what the plugin's step end costs on one node:
 * the second read of every port under ROOT (ibp_linkwatch_read) and the
 * comparison with the first (ibp_linkwatch_compare), RUNS times (default
 * 200); prints "ports N read_ms MEDIAN compare_ms MEDIAN total_ms MEDIAN".
 * A bench tool, not part of the library: it prints and exits.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ibprep/linkwatch.h"

#include "bench-util.h"

int main(int argc, char **argv)
{
	int runs = argc > 2 ? atoi(argv[2]) : 200;
	struct ibp_linkwatch *lw = calloc(2, sizeof(*lw));
	double *rd, *cp, *tot;
	struct ibp_sysfs fs;

	if (argc < 2 || runs < 1 || !lw || ibp_sysfs_open(&fs, argv[1]) ||
	    ibp_linkwatch_read(&lw[0], &fs, NULL)) {
		fprintf(stderr, "usage: linkwatch-bench ROOT [RUNS] (ROOT a sysfs tree)\n");
		return 2;
	}
	rd = calloc((size_t)runs, sizeof(double));
	cp = calloc((size_t)runs, sizeof(double));
	tot = calloc((size_t)runs, sizeof(double));
	if (!rd || !cp || !tot)
		return 2;
	for (int i = 0; i < runs; i++) {
		struct ibp_findings f = {0};
		struct ibp_linkwatch_opts o = {.during = "during job 1.0"};
		double t0 = bench_now_ms(), t1, t2;

		ibp_linkwatch_read(&lw[1], &fs, NULL);
		t1 = bench_now_ms();
		ibp_linkwatch_compare(&lw[0], &lw[1], &o, &f);
		t2 = bench_now_ms();
		ibp_findings_release(&f);
		rd[i] = t1 - t0;
		cp[i] = t2 - t1;
		tot[i] = t2 - t0;
	}
	printf("ports %zu read_ms %.3f compare_ms %.3f total_ms %.3f\n", lw[0].n_ports,
	       bench_median(rd, runs), bench_median(cp, runs), bench_median(tot, runs));
	ibp_sysfs_close(&fs);
	free(rd);
	free(cp);
	free(tot);
	free(lw);
	return 0;
}
