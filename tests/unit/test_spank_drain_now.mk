# test_spank_drain_now: the job prolog's drain through the watcher run once
# (spank_ib_drain_now, ib_watch.c); this binary is its own watcher, and exports
# slurm_kill_job_step for the plugin's dladdr (-rdynamic), with the fake spank_* calls.
TEST_EXTRA_test_spank_drain_now := tests/unit/fake_spank.c
TEST_LDFLAGS_test_spank_drain_now := -rdynamic
