# test_spank_nodes: the step's nodes and the results log's records, against fake Slurm
# calls that this binary exports for the plugin's dlsym (-rdynamic).
TEST_EXTRA_test_spank_nodes := tests/unit/fake_spank.c
TEST_LDFLAGS_test_spank_nodes := -rdynamic
