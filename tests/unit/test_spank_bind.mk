# test_spank_bind: the plugin's binding and ibprep exec's, one library function (bind.h):
# the plugin's objects with the fake spank_* calls, the command's objects, and the
# system calls that bind wrapped (recorded, never applied: a 2-NUMA task on any machine).
TEST_EXTRA_test_spank_bind = tests/unit/fake_spank.c $(SAN_CMD_OBJS)
TEST_LDFLAGS_test_spank_bind = -Wl,--wrap=sched_setaffinity -Wl,--wrap=sched_getaffinity \
	-Wl,--wrap=set_mempolicy -Wl,--wrap=execvp
