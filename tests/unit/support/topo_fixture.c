/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture.h"
#include "topo_fixture.h"

int ibp_test_topo_preset(struct ibp_topo *t, const char *preset, const char *extra)
{
	char *dir = ibp_fixture_tmpdir(), path[PATH_MAX];
	const char *script = getenv("IBP_MKTOPO");
	int rc;

	ibp_topo_init(t);
	if (!dir)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%s.xml", dir, preset);
	char *argv[] = {(char *)"python3",
			(char *)(script ? script : "tests/fixtures/mktopo.py"),
			(char *)"--preset",
			(char *)preset,
			path,
			(char *)extra,
			NULL};
	if (extra) {
		argv[4] = (char *)extra;
		argv[5] = path;
	}
	rc = ibp_fixture_run(argv);
	if (rc == 0)
		rc = ibp_topo_load_xml(t, path);
	else
		rc = rc < 0 ? rc : -EIO;
	ibp_fixture_rmrf(dir);
	free(dir);
	return rc;
}

int ibp_test_topo_real(struct ibp_topo *t, const char *file)
{
	const char *real = ibp_fixture_real_dir();
	char path[PATH_MAX];

	ibp_topo_init(t);
	if (!real)
		return 1;
	snprintf(path, sizeof(path), "%s/hwloc-xml/%s", real, file);
	return ibp_topo_load_xml(t, path);
}

int ibp_test_gpu(const struct ibp_topo *t, const char *pci)
{
	const struct ibp_topo_gpu *g = ibp_topo_find_gpu(t, pci);

	return g ? (int)g->index : -1;
}
