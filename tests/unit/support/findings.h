/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * findings.h: looking findings up in the unit tests.
 */
#ifndef IBPREP_TEST_FINDINGS_H
#define IBPREP_TEST_FINDINGS_H

#include "ibprep/finding.h"

/*
 * The first finding in F with CODE and, unless DEVICE is NULL, that device
 * (a node-wide finding's device is ""); NULL when there is none.
 */
const struct ibp_finding *ibp_test_find_code(const struct ibp_findings *f, const char *code,
					     const char *device);

#endif
