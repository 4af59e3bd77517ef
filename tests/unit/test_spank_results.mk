# test_spank_results: the plugin's results-log path (ib_results.c), with the fake spank_* calls.
TEST_EXTRA_test_spank_results := tests/unit/fake_spank.c
