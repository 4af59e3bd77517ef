/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * topo_fixture.h: topologies for the topo/place/env unit tests: generated
 * ones (tests/fixtures/mktopo.py) and the real captures.
 */
#ifndef IBPREP_TEST_TOPO_FIXTURE_H
#define IBPREP_TEST_TOPO_FIXTURE_H

#include "ibprep/topo.h"

/*
 * Loads mktopo.py --preset PRESET [EXTRA (e.g. "--port-down=mlx5_0")].
 * 0 or -errno (the test fails: python3 is a test dependency).
 */
int ibp_test_topo_preset(struct ibp_topo *t, const char *preset, const char *extra);

/*
 * Loads ../shared/fixtures/real/hwloc-xml/FILE.  0, 1 when the real
 * fixtures are absent (the caller skips, printing REASON), -errno.
 */
int ibp_test_topo_real(struct ibp_topo *t, const char *file);

/* Index of the GPU with bus ID PCI in T, -1 when absent. */
int ibp_test_gpu(const struct ibp_topo *t, const char *pci);

#endif
