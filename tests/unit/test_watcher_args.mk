# test_watcher_args: spank-ib-watch's argument parser (spank/watcher/watch_args.c),
# which needs nothing of the plugin's.
TEST_EXTRA_test_watcher_args := spank/watcher/watch_args.c
