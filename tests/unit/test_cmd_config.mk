# test_cmd_config: ibprep check --config and the plugin's config= on the same
# files: the command's objects (test_cmd*) and the plugin's, with the fake spank_*.
TEST_EXTRA_test_cmd_config := $(SAN_SPANK_OBJS) tests/unit/fake_spank.c
