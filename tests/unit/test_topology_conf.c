/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the Slurm topology readers (helpers/core/topology_conf.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ibprep/topology_conf.h"

static int conf(struct ibp_topology *t, const char *text, char *err, size_t errlen)
{
	return ibp_topology_parse_conf(t, text, strlen(text), "topology.conf", err, errlen);
}

static const char *leaf_name(const struct ibp_topology *t, const char *node)
{
	int l = ibp_topology_leaf_of(t, node);

	return l < 0 ? "-" : t->sw[l].name;
}

static void test_topology_conf_two_levels_hostlists_resolve(void **state)
{
	struct ibp_topology t;
	char err[256] = "";
	const char *text = "# a two-level fat tree\n"
			   "SwitchName=spine1 Switches=leaf[01-03] # comment after\n"
			   "switchname=leaf01 nodes=n[1-3] LinkSpeed=400\n"
			   "SwitchName=leaf02 Nodes=n[4-5],gpu[008-010]\n"
			   "SwitchName=leaf03 \\\n"
			   "   Nodes=x1\n"
			   "\n";

	(void)state;
	assert_int_equal(conf(&t, text, err, sizeof(err)), 0);
	assert_int_equal(t.n_sw, 4);
	assert_int_equal(t.n_nodes, 9);
	assert_string_equal(leaf_name(&t, "n2"), "leaf01");
	assert_string_equal(leaf_name(&t, "gpu009"), "leaf02");
	assert_string_equal(leaf_name(&t, "x1"), "leaf03");
	assert_string_equal(leaf_name(&t, "nope"), "-");
	assert_int_equal(t.sw[ibp_topology_switch(&t, "leaf01")].link_speed, 400);
	assert_int_equal(t.sw[ibp_topology_switch(&t, "leaf01")].depth, 1);
	assert_int_equal(t.sw[ibp_topology_switch(&t, "spine1")].n_children, 3);
	assert_int_equal(
	    ibp_topology_common(&t, ibp_topology_leaf_of(&t, "n1"), ibp_topology_leaf_of(&t, "n4")),
	    ibp_topology_switch(&t, "spine1"));
	assert_int_equal(
	    ibp_topology_common(&t, ibp_topology_leaf_of(&t, "n1"), ibp_topology_leaf_of(&t, "n2")),
	    ibp_topology_switch(&t, "leaf01"));
	assert_string_equal(t.source, "topology.conf");
	ibp_topology_release(&t);
	assert_null(t.sw);
}

static void test_topology_conf_nested_and_unattached(void **state)
{
	struct ibp_topology t;
	char err[256] = "";
	/* Children before parents; three levels; a switch with no parent
	 * (a separate fabric) and nodes that appear nowhere. */
	const char *text = "SwitchName=l1 Nodes=a[1-2]\n"
			   "SwitchName=l2 Nodes=a[3-4]\n"
			   "SwitchName=agg1 Switches=l[1-2]\n"
			   "SwitchName=core Switches=agg1,agg2\n"
			   "SwitchName=agg2 Switches=l3\n"
			   "SwitchName=l3 Nodes=a5\n"
			   "SwitchName=island Nodes=b1\n";

	(void)state;
	assert_int_equal(conf(&t, text, err, sizeof(err)), 0);
	assert_int_equal(t.sw[ibp_topology_switch(&t, "l3")].depth, 2);
	assert_int_equal(
	    ibp_topology_common(&t, ibp_topology_leaf_of(&t, "a1"), ibp_topology_leaf_of(&t, "a5")),
	    ibp_topology_switch(&t, "core"));
	assert_int_equal(
	    ibp_topology_common(&t, ibp_topology_leaf_of(&t, "a1"), ibp_topology_leaf_of(&t, "a4")),
	    ibp_topology_switch(&t, "agg1"));
	assert_int_equal(
	    ibp_topology_common(&t, ibp_topology_leaf_of(&t, "a1"), ibp_topology_leaf_of(&t, "b1")),
	    -1);
	assert_int_equal(ibp_topology_leaf_of(&t, "c9"), -1);
	ibp_topology_release(&t);
}

static const struct {
	const char *text;
	int rc;
	const char *msg; /* the message must contain this */
} bad[] = {
    {"SwitchName=s1 Nodes=n[1-2]\nSwitchName=s1 Nodes=n3\n", -EINVAL,
     "topology.conf:2: switch 's1' is defined twice (first on line 1)"},
    {"SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n2\n", -EINVAL,
     "topology.conf:2: node 'n2' is under two switches: 's1' (line 1) and 's2'"},
    {"SwitchName=s1 Switches=s2\n", -EINVAL,
     "topology.conf:1: switch 's1' lists switch 's2', which is not defined"},
    {"\n\nSwitchName=s1 Nodes=n[3-1]\n", -EINVAL, "topology.conf:3: switch 's1': bad Nodes="},
    {"SwitchName=s1 Nodes=n1 Colour=red\n", -EINVAL, "topology.conf:1: unknown key 'Colour'"},
    {"Nodes=n1\n", -EINVAL, "topology.conf:1: a line must start with SwitchName="},
    {"SwitchName=s1 Nodes\n", -EINVAL, "topology.conf:1: expected KEY=VALUE"},
    {"SwitchName=s1 Nodes=\n", -EINVAL, "topology.conf:1: Nodes= has no value"},
    {"SwitchName=s1 LinkSpeed=fast\n", -EINVAL, "topology.conf:1: bad LinkSpeed 'fast'"},
    {"SwitchName=a Switches=b\nSwitchName=b Switches=a\n", -EINVAL, "cycle"},
    {"SwitchName=a Switches=a\n", -EINVAL, "lists itself"},
    {"SwitchName=a Switches=c\nSwitchName=b Switches=c\nSwitchName=c\n", -EINVAL,
     "topology.conf:2: switch 'c' has two parents: 'a' (line 1) and 'b'"},
    {"SwitchName=s/1 Nodes=n1\n", -EINVAL, "bad switch name"},
    {"BlockName=b1 Nodes=n[1-4]\n", -EINVAL, "topology/block"},
    {"# only comments\n\n", -EINVAL, "no switches"},
    {"SwitchName=s1 SwitchName=s2\n", -EINVAL, "SwitchName= given twice"},
};

static void test_topology_conf_malformed_lines_named(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ibp_topology t;
		char err[256] = "";

		print_message("# %s", bad[i].text);
		assert_int_equal(conf(&t, bad[i].text, err, sizeof(err)), bad[i].rc);
		print_message("#   -> %s\n", err);
		assert_non_null(strstr(err, bad[i].msg));
		assert_null(t.sw);
		assert_int_equal(t.n_nodes, 0);
	}
}

static void test_topology_conf_nul_and_long_line_refused(void **state)
{
	struct ibp_topology t;
	char err[256] = "";
	static const char nul[] = "SwitchName=s1 Nodes=n\0 1\n";
	size_t big = (64u << 10) + 100;
	char *longline = malloc(big + 1);

	(void)state;
	assert_int_equal(ibp_topology_parse_conf(&t, nul, sizeof(nul) - 1, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "NUL"));
	assert_non_null(longline);
	memset(longline, 'x', big);
	memcpy(longline, "SwitchName=", 11);
	longline[big] = '\0';
	assert_int_equal(conf(&t, longline, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "longer"));
	free(longline);
}

static const char yaml[] = "---\n"
			   "# two topologies; the tree one is the default\n"
			   "- topology: blocks\n"
			   "  cluster_default: false\n"
			   "  block:\n"
			   "    block_sizes:\n"
			   "      - 4\n"
			   "    blocks:\n"
			   "      - block: b1\n"
			   "        nodes: n[1-4]\n"
			   "- topology: fabric\n"
			   "  cluster_default: true\n"
			   "  tree:\n"
			   "    switches:\n"
			   "      - switch: spine\n"
			   "        children: leaf[1-2]   # both leaves\n"
			   "      - switch: leaf1\n"
			   "        nodes: \"n[1-2]\"\n"
			   "        link_speed: 400\n"
			   "      - switch: leaf2\n"
			   "        nodes:\n"
			   "          - n3\n"
			   "          - n4\n"
			   "- topology: other\n"
			   "  tree:\n"
			   "    switches:\n"
			   "    - switch: s9\n"
			   "      nodes: [m1, m2]\n"
			   "- topology: flat\n"
			   "  flat: true\n";

static void test_topology_yaml_tree_default_chosen(void **state)
{
	struct ibp_topology t;
	char err[256] = "";

	(void)state;
	assert_int_equal(ibp_topology_parse_yaml(&t, yaml, strlen(yaml), "topology.yaml", NULL, err,
						 sizeof(err)),
			 0);
	assert_string_equal(t.name, "fabric");
	assert_int_equal(t.n_sw, 3);
	assert_int_equal(t.n_nodes, 4);
	assert_string_equal(leaf_name(&t, "n1"), "leaf1");
	assert_string_equal(leaf_name(&t, "n4"), "leaf2");
	assert_int_equal(t.sw[ibp_topology_switch(&t, "leaf1")].link_speed, 400);
	assert_int_equal(t.sw[ibp_topology_switch(&t, "leaf2")].parent,
			 ibp_topology_switch(&t, "spine"));
	ibp_topology_release(&t);

	/* By name; a flow sequence; indentation of items at the key's level. */
	assert_int_equal(ibp_topology_parse_yaml(&t, yaml, strlen(yaml), "topology.yaml", "other",
						 err, sizeof(err)),
			 0);
	assert_string_equal(leaf_name(&t, "m2"), "s9");
	ibp_topology_release(&t);

	assert_int_equal(ibp_topology_parse_yaml(&t, yaml, strlen(yaml), "topology.yaml", "flat",
						 err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "not a tree"));
}

static const struct {
	const char *text;
	int rc;
	const char *msg;
} bad_yaml[] = {
    {"- topology: a\n  block:\n    blocks: []\n", -ENOENT, "no tree topology"},
    {"tree:\n", -EINVAL, "topology.yaml:1: expected '- topology: NAME' first"},
    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        colour: red\n", -EINVAL,
     "topology.yaml:5: unknown key 'colour' in switch 's1'"},
    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        nodes: &x n1\n", -EINVAL,
     "topology.yaml:5: '&'"},
    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        nodes: n[2-1]\n", -EINVAL,
     "topology.yaml:4: switch 's1': bad Nodes="},
    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        children: s2\n", -EINVAL,
     "topology.yaml:4: switch 's1' lists switch 's2', which is not defined"},
    {"- topology: a\n  tree:\n    switches:\n\t- switch: s1\n", -EINVAL, "tab"},
    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n        nodes: \"n1\n", -EINVAL,
     "unterminated"},
    {"- topology: a\n  tree:\n    switches:\n      - switch: s1\n      - switch: s1\n", -EINVAL,
     "topology.yaml:5: switch 's1' is defined twice (first on line 4)"},
    {"- topology: a\n  tree:\n    nodes: n1\n", -EINVAL, "outside a '- switch:' item"},
};

static void test_topology_yaml_malformed_named(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_yaml) / sizeof(bad_yaml[0]); i++) {
		struct ibp_topology t;
		char err[256] = "";

		print_message("# %s", bad_yaml[i].text);
		assert_int_equal(ibp_topology_parse_yaml(&t, bad_yaml[i].text,
							 strlen(bad_yaml[i].text), NULL, NULL, err,
							 sizeof(err)),
				 bad_yaml[i].rc);
		print_message("#   -> %s\n", err);
		assert_non_null(strstr(err, bad_yaml[i].msg));
		assert_null(t.sw);
	}
}

static void test_topology_addr_pattern(void **state)
{
	char sw[4][IBP_NODE_MAX], node[IBP_NODE_MAX], err[256];
	size_t n = 9;

	(void)state;
	assert_int_equal(ibp_topology_parse_addr("s1.leaf3.n7", "switch.switch.node", sw, 4, &n,
						 node, sizeof(node), err, sizeof(err)),
			 0);
	assert_int_equal(n, 2);
	assert_string_equal(sw[0], "s1");
	assert_string_equal(sw[1], "leaf3");
	assert_string_equal(node, "n7");
	assert_int_equal(
	    ibp_topology_parse_addr("n7", "node", sw, 4, &n, node, sizeof(node), err, sizeof(err)),
	    0);
	assert_int_equal(n, 0);
	assert_int_equal(ibp_topology_parse_addr("s1.n7", "switch.switch.node", sw, 4, &n, node,
						 sizeof(node), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "different number"));
	assert_int_equal(ibp_topology_parse_addr("s1.n7", "node.switch", sw, 4, &n, node,
						 sizeof(node), err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ibp_topology_parse_addr("s1..n7", "switch.switch.node", sw, 4, &n, node,
						 sizeof(node), err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ibp_topology_parse_addr("a.b.c.d.n", "switch.switch.switch.switch.node",
						 sw, 2, &n, node, sizeof(node), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "levels"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_topology_conf_two_levels_hostlists_resolve),
	    cmocka_unit_test(test_topology_conf_nested_and_unattached),
	    cmocka_unit_test(test_topology_conf_malformed_lines_named),
	    cmocka_unit_test(test_topology_conf_nul_and_long_line_refused),
	    cmocka_unit_test(test_topology_yaml_tree_default_chosen),
	    cmocka_unit_test(test_topology_yaml_malformed_named),
	    cmocka_unit_test(test_topology_addr_pattern),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
