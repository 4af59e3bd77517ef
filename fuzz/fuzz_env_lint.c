/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_env_lint: the lint of user-set NCCL_IB_HCA and UCX_NET_DEVICES values
 * and the shell quoting of values, from arbitrary bytes, against a small
 * in-memory topology whose HCA names are prefixes of one another (mlx5_1,
 * mlx5_10) with one port down.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibprep/env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SET(c) "cpuset=\"" c "\" complete_cpuset=\"" c "\" nodeset=\"0x1\" complete_nodeset=\"0x1\""
#define HCA(bus, name, state)                                                                      \
	"<object type=\"PCIDev\" pci_busid=\"0000:" bus ":00.0\" pci_type=\"0207 [15b3:1021] "     \
	"[15b3:0000] 00\"><object type=\"OSDev\" name=\"" name "\" osdev_type=\"3\">"              \
	"<info name=\"Port1State\" value=\"" state "\"/><info name=\"Port1LID\" value=\"0x10\"/>"  \
	"</object></object>"

static const char xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\" " SET(
	"0x3") " allowed_cpuset=\"0x3\" allowed_nodeset=\"0x1\">"
	       "<object type=\"Package\" os_index=\"0\" " SET(
		   "0x3") ">"
			  "<object type=\"NUMANode\" os_index=\"0\" " SET(
			      "0x3") " local_memory=\"1073741824\"/>"
				     "<object type=\"Core\" os_index=\"0\" " SET(
					 "0x3") ">"
						"<object type=\"PU\" os_index=\"0\" " SET(
						    "0x1") "/>"
							   "<object type=\"PU\" "
							   "os_index=\"1\" " SET(
							       "0x2") "/></object>"
								      "<object type=\"Bridge\" "
								      "bridge_type=\"0-1\" "
								      "depth=\"0\" "
								      "bridge_pci=\"0000:[00-ff]"
								      "\">" HCA("11", "mlx5_1",
										"4") HCA("12",
											 "mlx5_10",
											 "1")
									  HCA("13", "mlx5_2",
									      "4") "</object></"
										   "object></"
										   "object></"
										   "topology>\n";

static struct ibp_topo topo;
static int loaded;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibp_findings f;
	char *s;
	static char q[1 << 16];

	if (!loaded) {
		if (ibp_topo_load_xml_buffer(&topo, xml, sizeof(xml)) || topo.n_hcas != 3)
			abort();
		loaded = 1;
	}
	s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	ibp_findings_init(&f);
	if (ibp_env_lint_nccl_ib_hca(s, &topo, &f) || ibp_env_lint_ucx_net_devices(s, &topo, &f))
		abort();
	for (size_t i = 0; i < f.n; i++)
		if (!f.v[i].fix[0] || f.v[i].fclass != IBP_CLASS_JOB)
			abort();
	ibp_findings_release(&f);
	if (ibp_shell_quote(s, q, sizeof(q)) >= 0 && q[0] == '\'' && q[strlen(q) - 1] != '\'')
		abort();
	free(s);
	return 0;
}
