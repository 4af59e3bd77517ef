# verbs_guest.sh: what test_verbs.sh runs inside each of its two VMs (vm0,
# vm1).  Every step writes $IBP_SHARE/STEP.out (output), STEP.rc (exit
# status) and STEP.ms (wall time); the host turns them into TAP lines after
# the VMs powered off.  The two VMs move through the steps in lockstep
# (guest_barrier); every command has a timeout, so a stuck step costs its
# bound, never the whole run.
#
# Environment from the host (VM_PASS_ENV): IBPREP (the command under test),
# IBP_UNIT_VERBS (the sanitized unit test binary of the transport, may be
# empty).
. "$IBP_GUEST_LIB"

step() {
	local name=$1 t0 t1 rc
	shift
	t0=$(date +%s%N)
	"$@" >"$IBP_SHARE/$name.out" 2>&1
	rc=$?
	t1=$(date +%s%N)
	echo "$rc" >"$IBP_SHARE/$name.rc"
	echo $(((t1 - t0) / 1000000)) >"$IBP_SHARE/$name.ms"
	return $rc
}

me=$IBP_VM_INDEX
peer=$((1 - me))
hosts="vm0,vm1"
addrs="10.77.1.1,10.77.1.2"

# ibprep rdmatest between the two VMs with the verbs transport; extra
# KEY=VALUE policy pairs and flags after the fixed ones.  Emulated speed is
# not RDMA speed (an rxe port says 2.5 Gb/s, the emulator moves 0.02-0.2):
# no bandwidth floor, a latency bound for the emulator, a 1 MiB burst.
rdmatest() {
	timeout -k 2 60 "$IBPREP" rdmatest --transport verbs --hosts "$hosts" --index "$me" \
		--addrs "$addrs" --device rxe0 --port 1 --insecure --buf 262144 --burst 1048576 \
		test_min_bw=0 test_max_lat_us=500000 "$@"
}

step rxe_up guest_rxe_up || exit 1
cp /sys/class/infiniband/rxe0/ports/1/gids/1 "$IBP_SHARE/gid1" 2>/dev/null

# 1. The inventory of a real kernel tree.  The VM's root has the kernel's
#    default 8 MiB locked-memory limit: a real finding; then the limit a
#    well-set node has, for the rest of the run.
step check_memlock timeout 60 "$IBPREP" check
ulimit -l unlimited
step check timeout 60 "$IBPREP" check --json expect_hcas=1 link_layer=eth
step check_expect2 timeout 60 "$IBPREP" check expect_hcas=2

# 2. The transport's own tests on the real device (loopback through rxe0);
#    vm1 waits meanwhile (its CPU is the other half of the machine).
if [ "$me" = 0 ] && [ -n "${IBP_UNIT_VERBS:-}" ] && [ -x "$IBP_UNIT_VERBS" ]; then
	CMOCKA_MESSAGE_OUTPUT=TAP IBP_TEST_VERBS_DEVICE=rxe0 \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1 \
		step unit timeout 120 "$IBP_UNIT_VERBS"
fi
guest_barrier unit 180 || exit 1

# 3. rdmatest passes; then, without CAP_IPC_LOCK and with a 64 KiB
#    locked-memory limit, the registration fails with a memlock finding.
step rdmatest_pass rdmatest --json test_timeout=30
guest_barrier pass 60 || exit 1
step rdmatest_memlock bash -c 'ulimit -l 64 && exec setpriv --bounding-set=-ipc_lock \
	"$IBPREP" rdmatest --transport verbs --hosts vm0,vm1 --index "$IBP_VM_INDEX" \
	--addrs 10.77.1.1,10.77.1.2 --device rxe0 --insecure test_timeout=8'
guest_barrier memlock 60 || exit 1

# 3b. Two rails: rxe1 over eth1, a back-to-back link of its own (another
#    network, nothing between the two); ibprep rdmatest without --device
#    tests every ACTIVE port, both rails at once.
if step rail1_up guest_rail_up 1; then
	step rdmatest_rails timeout -k 2 60 "$IBPREP" rdmatest --transport verbs --hosts "$hosts" \
		--index "$me" --addrs "$addrs" --insecure --buf 262144 --burst 1048576 --json \
		test_min_bw=0 test_max_lat_us=500000 test_timeout=30
fi
guest_barrier rails 90 || exit 1

# 4. A wrong GID index on vm1 (0: the link-local IPv6 GID, while vm0 uses the
#    IPv4-mapped one), then an index that does not exist.
if [ "$me" = 1 ]; then
	step rdmatest_gid0 rdmatest --gid-index 0 test_timeout=8
else
	step rdmatest_gid0 rdmatest test_timeout=8
fi
guest_barrier gid0 60 || exit 1
if [ "$me" = 1 ]; then
	step rdmatest_gid200 rdmatest --gid-index 200 test_timeout=8
else
	step rdmatest_gid200 rdmatest test_timeout=8
fi
guest_barrier gid200 60 || exit 1

# 5. perftest on the same pair, for comparison (bench/bench_verbs.sh has the
#    ratios), with the settings our transport uses on rxe (-t 4 -u 18: with
#    128 x 64 KiB in flight and a 67 ms ack timeout rxe under emulation can
#    fail writes); vm0 serves, vm1 connects once vm0 listens.
if [ "$me" = 0 ]; then
	step perftest timeout -k 2 60 ib_write_bw -d rxe0 -x 1 -s 65536 -n 200 -t 4 -u 18 -F --report_gbits
else
	# the server needs a moment to listen: retry the client while refused
	for try in 1 2 3 4 5 6; do
		sleep 1
		step perftest timeout -k 2 60 ib_write_bw -d rxe0 -x 1 -s 65536 -n 200 -t 4 -u 18 -F \
			--report_gbits 10.77.1.1 && break
		grep -q "Couldn't connect" "$IBP_SHARE/perftest.out" || break
	done
fi
guest_barrier perftest 90 || exit 1

# 6. RDMA cut, OOB alive: vm1 drops RoCE v2 (UDP 4791) both ways.
if [ "$me" = 1 ]; then
	step nft nft -f - <<'EOF'
table inet ibp_cut {
	chain in { type filter hook input priority 0; udp dport 4791 drop; }
	chain out { type filter hook output priority 0; udp dport 4791 drop; }
}
EOF
fi
guest_barrier nft 30 || exit 1
step rdmatest_roce_cut rdmatest test_timeout=8
guest_barrier roce_cut 60 || exit 1
[ "$me" = 1 ] && nft delete table inet ibp_cut

# 7. The whole link cut: vm1's eth0 down.
guest_barrier link_down 30 || exit 1
[ "$me" = 1 ] && ip link set eth0 down
step rdmatest_link_down rdmatest test_timeout=8
exit 0
