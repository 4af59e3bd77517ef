# test_spank_ports: a job's share of the node's test ports (lock files), with the fake spank_* calls.
TEST_EXTRA_test_spank_ports := tests/unit/fake_spank.c
