# test_spank_results: the plugin's results-log path (ib_results.c), with the fake spank_* calls.
TEST_EXTRA_test_spank_results := tests/unit/fake_spank.c
# slurmctld's layout of the step (ib_nodes.c's dlsym) is this binary's own fake.
TEST_LDFLAGS_test_spank_results := -rdynamic
