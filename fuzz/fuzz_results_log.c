/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the results log reader, fed any bytes a crash, a full
 * disk or a hostile edit could leave in a log.  It must never crash; every
 * record it hands out must name two different valid nodes (one for a port
 * event) and format back
 * into a line that parses to the same link and outcome (one vocabulary).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/results_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(void *arg, const struct ibp_link_record *r)
{
	struct ibp_link_record back;
	char line[IBP_RESULTS_LOG_MAX_RECORD];
	int n;

	(void)arg;
	if (!r->a[0] || !r->b[0] || !strcmp(r->a, r->b) != !!r->event[0])
		abort();
	n = ibp_results_log_format(r, line, sizeof(line));
	if (n <= 0 || line[n - 1] != '\n')
		abort();
	if (ibp_results_log_parse_line(line, (size_t)n - 1, &back))
		abort();
	if (strcmp(back.a, r->a) || strcmp(back.b, r->b) || back.job != r->job ||
	    back.status != r->status || strcmp(back.event, r->event))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_results_log_stats st = {0};

	if (ibp_results_log_read_buf((const char *)data, size, check, NULL, &st))
		abort();
	/* A line may hold a cut record and a good one after it: both counted. */
	if (st.records + st.malformed + st.other_version > st.lines || st.cut > st.lines)
		abort();
	return 0;
}
