# test_spank_userfile: the plugin's one as-user --ib-report writer, with the fake spank_* calls.
TEST_EXTRA_test_spank_userfile := tests/unit/fake_spank.c
