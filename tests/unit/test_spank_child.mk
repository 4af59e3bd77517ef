# test_spank_child: the plugin's test child (fork, drop, exec itself as the helper), with the fake spank_* calls;
# fork wrapped to raise a signal in every child (fork_probe.h: no handler of slurmstepd's before the set-up).
TEST_EXTRA_test_spank_child := tests/unit/fake_spank.c tests/unit/fork_probe.c
TEST_LDFLAGS_test_spank_child := -Wl,--wrap=fork
