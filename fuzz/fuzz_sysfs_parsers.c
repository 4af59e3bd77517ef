/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_sysfs_parsers.c: arbitrary bytes into every parser of sysfs text
 * (numbers, port state, physical state, rate, link layer, GID type, PCIe
 * link speed).  The first byte picks the parser so the fuzzer can steer;
 * the rest is the text, NUL-terminated as the reader hands it over.
 * Checks the invariants the callers rely on, not just "no crash".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/hca.h"
#include "ibprep/sysfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';

	switch (data[0] % 9) {
	case 0: {
		uint64_t v = 7;
		if (ibp_parse_u64(s, &v) != 0 && v != 7)
			abort(); /* untouched on error */
		break;
	}
	case 1: {
		int64_t v;
		(void)ibp_parse_s64(s, &v);
		break;
	}
	case 2: {
		enum ibp_port_state st = IBP_PORT_STATE_UNKNOWN;
		if (ibp_parse_port_state(s, &st) == 0 &&
		    (st < IBP_PORT_NOP || st > IBP_PORT_ACTIVE_DEFER))
			abort();
		(void)ibp_port_state_name(st);
		break;
	}
	case 3: {
		enum ibp_phys_state st = IBP_PHYS_UNKNOWN;
		if (ibp_parse_phys_state(s, &st) == 0 &&
		    (st < IBP_PHYS_NOP || st > IBP_PHYS_PHY_TEST))
			abort();
		(void)ibp_phys_state_name(st);
		break;
	}
	case 4: {
		struct ibp_rate r;
		memset(&r, 0, sizeof(r));
		if (ibp_parse_rate(s, &r) == 0) {
			if (!r.known || r.width == 0 || r.width > 12 || r.gbps <= 0 ||
			    memchr(r.speed, '\0', sizeof(r.speed)) == NULL || !r.speed[0])
				abort();
		} else if (r.known) {
			abort();
		}
		break;
	}
	case 5: {
		enum ibp_link_layer ll;
		if (ibp_parse_link_layer(s, &ll) == 0)
			(void)ibp_link_layer_name(ll);
		break;
	}
	case 6: {
		enum ibp_gid_type t;
		(void)ibp_parse_gid_type(s, &t);
		break;
	}
	case 7: {
		double g = -1;
		if (ibp_parse_link_speed(s, &g) == 0) {
			if (g < 0 || g > 1024)
				abort();
			(void)ibp_pcie_gen_name(g);
		}
		break;
	}
	case 8: {
		/* Natural order must be antisymmetric: split the input in two. */
		size_t half = (size - 1) / 2;
		char *a = strndup(s, half);
		const char *b = s + half;
		if (a) {
			int x = ibp_natural_cmp(a, b), y = ibp_natural_cmp(b, a);
			if ((x > 0) != (y < 0) || (x == 0) != (y == 0))
				abort();
			free(a);
		}
		break;
	}
	}
	free(s);
	return 0;
}
