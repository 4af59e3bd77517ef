/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the device identification table (helpers/core/devid.c): each
 * family the table names, from the ids the kernel drivers bind to, and the
 * rules that decide what NCCL and UCX may be told.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/devid.h"

static void test_devid_pci_table(void **state)
{
	static const struct {
		unsigned vendor, device, cls;
		enum ibp_devid_class want;
		unsigned flags; /* flags that must be set */
	} cases[] = {
	    /* NVIDIA: PCIe (0300) and the 3D-controller Teslas/SXM (0302) */
	    {0x10de, 0x2330, 0x0302, IBP_DEVID_GPU, 0},   /* H100 SXM */
	    {0x10de, 0x06d2, 0x0302, IBP_DEVID_GPU, 0},   /* Tesla M2070 */
	    {0x10de, 0x1db4, 0x0302, IBP_DEVID_GPU, 0},   /* V100 PCIe */
	    {0x10de, 0x2204, 0x0300, IBP_DEVID_GPU, 0},   /* a GeForce: VGA class, still a GPU */
	    {0x10de, 0x1af1, 0x0680, IBP_DEVID_OTHER, 0}, /* NVSwitch: a bridge */
	    {0x10de, 0x2342, 0x0302, IBP_DEVID_GPU, IBP_DEVID_SUPERCHIP}, /* GH200 */
	    /* AMD Instinct */
	    {0x1002, 0x7408, 0x0380, IBP_DEVID_GPU, IBP_DEVID_GCD},        /* MI250X GCD */
	    {0x1002, 0x74a1, 0x1200, IBP_DEVID_GPU, IBP_DEVID_PARTITIONS}, /* MI300X */
	    {0x1002, 0x74a0, 0x1200, IBP_DEVID_GPU, IBP_DEVID_PARTITIONS}, /* MI300A */
	    {0x1002, 0x738c, 0x0380, IBP_DEVID_GPU, 0},                    /* MI100 */
	    /* server VGA: never a GPU */
	    {0x1002, 0x515e, 0x0300, IBP_DEVID_VGA, 0}, /* ATI ES1000 */
	    {0x1002, 0x5159, 0x0300, IBP_DEVID_VGA, 0}, /* RV100 */
	    {0x1a03, 0x2000, 0x0300, IBP_DEVID_VGA, 0}, /* ASPEED AST2500 */
	    {0x102b, 0x0532, 0x0300, IBP_DEVID_VGA, 0}, /* Matrox G200eW */
	    {0x102b, 0x0534, 0x0300, IBP_DEVID_VGA, 0}, /* Matrox G200eR */
	    {0x8086, 0x0bd5, 0x0380, IBP_DEVID_GPU, 0}, /* Intel Max 1550 */
	    {0x8086, 0x3e92, 0x0300, IBP_DEVID_VGA, 0}, /* Intel UHD 630 */
	    /* NICs */
	    {0x15b3, 0x1021, 0x0207, IBP_DEVID_RDMA, IBP_DEVID_PORT_FN}, /* ConnectX-7 */
	    {0x15b3, 0x1023, 0x0207, IBP_DEVID_RDMA, IBP_DEVID_PLANES},  /* ConnectX-8 */
	    {0x15b3, 0xa2dc, 0x0200, IBP_DEVID_RDMA, IBP_DEVID_DPU},     /* BlueField-3 */
	    {0x15b3, 0xc2d5, 0x0200, IBP_DEVID_OTHER, 0},                /* BlueField management */
	    {0x1d0f, 0xefa1, 0x0200, IBP_DEVID_RDMA, 0},                 /* EFA */
	    {0x1d0f, 0xec20, 0x0200, IBP_DEVID_OTHER, 0},                /* ENA: Ethernet only */
	    {0x14e4, 0x1639, 0x0200, IBP_DEVID_OTHER, 0},                /* BCM5709: no RDMA */
	    {0x17db, 0x0501, 0x0200, IBP_DEVID_RDMA, 0},                 /* Slingshot */
	    {0x8086, 0x24f0, 0x0208, IBP_DEVID_RDMA, 0},                 /* Omni-Path HFI */
	    {0x8086, 0x1521, 0x0200, IBP_DEVID_OTHER, 0},                /* I350: no RDMA */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ibp_devid *id =
		    ibp_devid_pci(cases[i].vendor, cases[i].device, cases[i].cls);

		if (id->cls != cases[i].want || (id->flags & cases[i].flags) != cases[i].flags)
			fail_msg("%04x:%04x class %04x: %s (%s), want %s flags %#x",
				 cases[i].vendor, cases[i].device, cases[i].cls,
				 ibp_devid_class_name(id->cls), id->family,
				 ibp_devid_class_name(cases[i].want), cases[i].flags);
		assert_non_null(id->why);
	}
}

static void test_devid_rdma_transport_table(void **state)
{
	static const struct {
		const char *driver, *name;
		unsigned vendor, device;
		int node_type;
		enum ibp_transport want;
		bool nccl;
	} cases[] = {
	    {"mlx5_core", "mlx5_0", 0x15b3, 0x1021, 1, IBP_TR_IB, true},
	    {"", "mlx5_bond_0", 0, 0, -1, IBP_TR_IB, true}, /* by the kernel's name */
	    {"mlx4_core", "mlx4_0", 0x15b3, 0x1003, 1, IBP_TR_IB, true},
	    {"hfi1", "hfi1_0", 0x8086, 0x24f0, 1, IBP_TR_OPA, true},
	    {"", "hfi1_0", 0, 0, -1, IBP_TR_OPA, true}, /* procfs capture: no device link */
	    {"bnxt_en", "bnxt_re0", 0x14e4, 0x1750, 1, IBP_TR_ROCE, true},
	    {"irdma", "irdma0", 0x8086, 0x1593, 1, IBP_TR_ROCE, true},   /* E810 in RoCE mode */
	    {"irdma", "irdma0", 0x8086, 0x1593, 4, IBP_TR_IWARP, false}, /* E810 in iWARP mode */
	    {"", "iwp24s0f0", 0x8086, 0x1593, -1, IBP_TR_IWARP, false},  /* rdma-core's iw name */
	    {"", "rocep24s0f0", 0x8086, 0x1593, -1, IBP_TR_ROCE, true},
	    {"", "irdma0", 0, 0, -1, IBP_TR_ROCE_IWARP, false}, /* cannot tell: not named */
	    {"", "i40iw0", 0, 0, -1, IBP_TR_IWARP, false},
	    {"cxgb4", "cxgb4_0", 0x1425, 0x6408, 4, IBP_TR_IWARP, false},
	    {"qede", "qedr0", 0x1077, 0x8070, 1, IBP_TR_ROCE, true},
	    {"erdma", "erdma_0", 0x1ded, 0x107f, 4, IBP_TR_IWARP, false},
	    {"efa", "rdmap197s0", 0x1d0f, 0xefa1, -1, IBP_TR_EFA, false},
	    {"", "rdmap16s27", 0x1d0f, 0xefa0, -1, IBP_TR_EFA, false},
	    {"", "rxe0", 0, 0, 1, IBP_TR_SOFT_ROCE, true},
	    {"", "siw0", 0, 0, 4, IBP_TR_SOFT_IWARP, false},
	    {"", "usnic_0", 0x1137, 0x00cf, -1, IBP_TR_USNIC, false},
	    {"", "weird0", 0, 0, -1, IBP_TR_UNKNOWN, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ibp_devid *id =
		    ibp_devid_rdma(cases[i].driver, cases[i].name, cases[i].vendor, cases[i].device,
				   cases[i].node_type);

		if (id->transport != cases[i].want ||
		    ibp_transport_nccl(id->transport) != cases[i].nccl)
			fail_msg("%s (%s): %s, want %s (nccl %d)", cases[i].name, cases[i].driver,
				 ibp_transport_name(id->transport),
				 ibp_transport_name(cases[i].want), cases[i].nccl);
		assert_int_equal(id->cls, IBP_DEVID_RDMA);
	}
	assert_false(ibp_transport_nccl(IBP_TR_CXI));
	assert_true(ibp_transport_ambiguous(IBP_TR_ROCE_IWARP));
}

static void test_devid_node_type_parse(void **state)
{
	int v = -1;

	(void)state;
	assert_int_equal(ibp_parse_node_type("1: CA", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(ibp_parse_node_type("4: RNIC\n", &v), 0);
	assert_int_equal(v, 4);
	assert_int_equal(ibp_parse_node_type("7: unspecified", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(ibp_parse_node_type("CA", &v), -EINVAL);
	assert_int_equal(ibp_parse_node_type("1:CA", &v), -EINVAL);
	assert_int_equal(ibp_parse_node_type("1: ", &v), -EINVAL);
	assert_int_equal(ibp_parse_node_type("1234: CA", &v), -EINVAL);
	assert_int_equal(ibp_parse_node_type("1: C\x01", &v), -EINVAL);
	assert_int_equal(ibp_parse_node_type(NULL, &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_devid_pci_table),
	    cmocka_unit_test(test_devid_rdma_transport_table),
	    cmocka_unit_test(test_devid_node_type_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
