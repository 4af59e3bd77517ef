# test_prom: fsync fails on demand (the textfile must stay whole).
TEST_LDFLAGS_test_prom := -Wl,--wrap=fsync
