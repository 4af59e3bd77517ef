# test_spank_userfile: the plugin's one as-user --ib-report writer, with the fake spank_* calls;
# ftruncate hangs on demand (a writer on a hung mount); fork raises a signal in every
# child (fork_probe.h: no handler of slurmstepd's in the writer).
TEST_EXTRA_test_spank_userfile := tests/unit/fake_spank.c tests/unit/fork_probe.c
TEST_LDFLAGS_test_spank_userfile := -Wl,--wrap=ftruncate -Wl,--wrap=fork
