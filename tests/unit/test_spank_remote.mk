# test_spank_remote: the plugin's slurmstepd side on generated nodes, with the fake spank_* calls.
TEST_EXTRA_test_spank_remote := tests/unit/fake_spank.c
