# test_atomic_write: fsync fails on demand (the old file must stay whole).
TEST_LDFLAGS_test_atomic_write := -Wl,--wrap=fsync
