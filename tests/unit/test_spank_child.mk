# test_spank_child: the plugin's test child (fork, drop, exec itself as the helper), with the fake spank_* calls.
TEST_EXTRA_test_spank_child := tests/unit/fake_spank.c
