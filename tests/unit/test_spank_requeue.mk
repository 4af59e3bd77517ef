# test_spank_requeue: the requeue after a node fault through the Slurm API,
# against fake Slurm calls this binary exports for the plugin's dlsym (-rdynamic).
TEST_EXTRA_test_spank_requeue := tests/unit/fake_spank.c
TEST_LDFLAGS_test_spank_requeue := -rdynamic
