# test_spank_drain: the plugin's drain through the Slurm API, against fake
# Slurm calls that this binary exports for the plugin's dlsym (-rdynamic).
TEST_EXTRA_test_spank_drain := tests/unit/fake_spank.c
TEST_LDFLAGS_test_spank_drain := -rdynamic
