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
#include <time.h>

#include "ibprep/linkwatch.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

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
		double t0 = now_ms(), t1, t2;

		ibp_linkwatch_read(&lw[1], &fs, NULL);
		t1 = now_ms();
		ibp_linkwatch_compare(&lw[0], &lw[1], &o, &f);
		t2 = now_ms();
		ibp_findings_release(&f);
		rd[i] = t1 - t0;
		cp[i] = t2 - t1;
		tot[i] = t2 - t0;
	}
	qsort(rd, (size_t)runs, sizeof(double), cmp);
	qsort(cp, (size_t)runs, sizeof(double), cmp);
	qsort(tot, (size_t)runs, sizeof(double), cmp);
	printf("ports %zu read_ms %.3f compare_ms %.3f total_ms %.3f\n", lw[0].n_ports,
	       rd[runs / 2], cp[runs / 2], tot[runs / 2]);
	ibp_sysfs_close(&fs);
	free(rd);
	free(cp);
	free(tot);
	free(lw);
	return 0;
}
