/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the Slurm host list expander, fed any string a user
 * could put in the step's environment.  It must never crash or exceed its
 * cap; every name it returns must be a valid, unique host name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/hostlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_hostlist hl = {0};
	char *spec, err[256];

	if (size > 4096)
		return 0;
	spec = malloc(size + 1);
	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	if (ibp_hostlist_expand(spec, 4096, &hl, err, sizeof(err)) == 0) {
		if (hl.n == 0 || hl.n > 4096)
			abort();
		for (size_t i = 0; i < hl.n; i++) {
			size_t len = strnlen(hl.names[i], IBP_NODE_MAX);

			if (len == 0 || len >= IBP_NODE_MAX)
				abort();
			for (size_t k = 0; k < len; k++)
				if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "0123456789-_.",
					    hl.names[i][k]))
					abort();
		}
		if (ibp_hostlist_find(&hl, hl.names[hl.n - 1]) != (long)(hl.n - 1))
			abort();
	} else if (hl.names || hl.n) {
		abort();
	} else if (!err[0] || strlen(err) >= sizeof(err)) {
		abort();
	}
	ibp_hostlist_release(&hl);
	free(spec);
	return 0;
}
