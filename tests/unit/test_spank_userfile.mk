# test_spank_userfile: the plugin's one as-user --ib-report writer, with the fake spank_* calls;
# ftruncate hangs on demand (a writer on a hung mount).
TEST_EXTRA_test_spank_userfile := tests/unit/fake_spank.c
TEST_LDFLAGS_test_spank_userfile := -Wl,--wrap=ftruncate
