# test_spank_glue: the plugin's glue, linked with the fake spank_* calls.
TEST_EXTRA_test_spank_glue := tests/unit/fake_spank.c
