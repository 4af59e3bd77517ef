/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "findings.h"

const struct ibp_finding *ibp_test_find_code(const struct ibp_findings *f, const char *code,
					     const char *device)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].code, code) && (!device || !strcmp(f->v[i].device, device)))
			return &f->v[i];
	return NULL;
}
