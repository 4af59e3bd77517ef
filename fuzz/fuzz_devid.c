/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_devid.c: arbitrary bytes into the device identification layer: the
 * node_type parser and the table lookups (driver, name, ids from the
 * input).  Checks the invariants callers rely on, not just "no crash".
 * Whole topology files are not fuzzed here: hwloc 2.9's XML importer
 * itself leaks objects on some malformed files (LeakSanitizer, inside
 * hwloc_alloc_setup_object), which would hide our own findings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/devid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 6 || size > 65536)
		return 0;
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 5, size - 5);
	s[size - 5] = '\0';
	unsigned vendor = (unsigned)data[1] << 8 | data[2],
		 device = (unsigned)data[3] << 8 | data[4];

	switch (data[0] % 2) {
	case 0: {
		int v = -7;
		if (ibp_parse_node_type(s, &v) == 0 && (v < 0 || v > 999))
			abort();
		break;
	}
	default: {
		/* the text is "driver\0name": split at the first byte below 0x20 */
		char *name = s;
		while (*name && (unsigned char)*name >= 0x20)
			name++;
		if (*name)
			*name++ = '\0';
		const struct ibp_devid *id =
		    ibp_devid_rdma(s, name, vendor, device, (int)(data[0] % 9) - 1);
		if (!id || id->cls != IBP_DEVID_RDMA || !id->family || !id->why)
			abort();
		const struct ibp_devid *p = ibp_devid_pci(vendor, device, vendor ^ device);
		if (!p || !p->family || !p->why)
			abort();
		(void)ibp_transport_name(id->transport);
		break;
	}
	}
	free(s);
	return 0;
}
