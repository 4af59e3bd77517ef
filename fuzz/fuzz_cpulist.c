/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_cpulist: Linux list strings and index lists (cpuset.cpus,
 * SLURM_STEP_GPUS, CUDA_VISIBLE_DEVICES ...) from arbitrary bytes: no crash,
 * bounded sets, and parse(format(parse(x))) == parse(x).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/cpulist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	hwloc_bitmap_t a = hwloc_bitmap_alloc(), b = hwloc_bitmap_alloc();
	unsigned idx[64];
	static char buf[1 << 20];

	if (!s || !a || !b)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	if (ibp_cpulist_parse(s, a) == 0) {
		if (hwloc_bitmap_last(a) > IBP_CPULIST_MAX)
			abort();
		if (ibp_cpulist_format(a, buf, sizeof(buf)) < 0)
			abort();
		if (ibp_cpulist_parse(buf, b) != 0 || !hwloc_bitmap_isequal(a, b))
			abort();
	} else if (!hwloc_bitmap_iszero(a)) {
		abort(); /* a failed parse leaves the set empty */
	}
	int n = ibp_indexlist_parse(s, idx, 64);
	if (n > 64)
		abort();
	for (int i = 0; i < n; i++)
		if (idx[i] > IBP_CPULIST_MAX)
			abort();
	free(s);
	hwloc_bitmap_free(a);
	hwloc_bitmap_free(b);
	return 0;
}
