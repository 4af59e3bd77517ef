# bench_guest.sh: what bench/bench_verbs.sh runs inside its two VMs.
#
# ROUNDS times, alternating so that the machine's load hits both alike:
#   ours   ibprep rdmatest --transport verbs (both directions at once, as the
#          test runs: the pattern, an 8 MiB burst, 16 round trips, verdict)
#   uni    ib_write_bw vm1 -> vm0, the same 8 MiB (128 x 64 KiB), tuned as
#          our transport is on rxe (-t 4: 256 KiB in flight, -u 18: 1 s ack
#          timeout)
#   bi     the same, -b: 8 MiB each way at once
#   def    ib_write_bw one way with its defaults (128 in flight, timeout 14)
#   ours1, uni1  the same two with a 1 MiB burst (256 KiB pattern): the fixed
#          costs (processes, connection setup, exchange), which dominate the
#          time to verdict on real hardware where 8 MiB takes 0.2 ms
# Each run leaves $IBP_SHARE/<kind>.<round>.{out,ms,rc}.  Every command has
# a timeout; the VMs meet at a barrier before each run.
. "$IBP_GUEST_LIB"
guest_rxe_up || exit 1
ulimit -l unlimited
me=$IBP_VM_INDEX
rounds=${IBP_BENCH_ROUNDS:-3}
bytes=8388608
iters=$((bytes / 65536))

run() {
	local name=$1 t0 t1 rc
	shift
	t0=$(date +%s%N)
	"$@" >"$IBP_SHARE/$name.out" 2>&1
	rc=$?
	t1=$(date +%s%N)
	echo "$rc" >"$IBP_SHARE/$name.rc"
	echo $(((t1 - t0) / 1000000)) >"$IBP_SHARE/$name.ms"
}

# perftest: vm0 serves, vm1 connects (retried while the server is not up yet).
perftest() {
	local name=$1 try
	shift
	if [ "$me" = 0 ]; then
		run "$name" timeout -k 2 90 ib_write_bw -d rxe0 -x 1 -s 65536 -n "$iters" -F \
			--report_gbits "$@"
	else
		for try in 1 2 3 4 5 6 7 8; do
			sleep 0.5
			run "$name" timeout -k 2 90 ib_write_bw -d rxe0 -x 1 -s 65536 -n "$iters" -F \
				--report_gbits "$@" 10.77.1.1 && break
			grep -q "Couldn't connect\|Unable to init the socket" "$IBP_SHARE/$name.out" || break
		done
	fi
}

for r in $(seq 1 "$rounds"); do
	guest_barrier "ours$r" 120 || exit 1
	run "ours.$r" timeout -k 2 90 "$IBPREP" rdmatest --transport verbs --hosts vm0,vm1 \
		--index "$me" --addrs 10.77.1.1,10.77.1.2 --device rxe0 --insecure --json \
		--buf 1048576 --burst "$bytes" test_min_bw=0 test_max_lat_us=1000000 test_timeout=60
	guest_barrier "uni$r" 120 || exit 1
	perftest "uni.$r" -t 4 -u 18
	guest_barrier "bi$r" 120 || exit 1
	perftest "bi.$r" -b -t 4 -u 18
	guest_barrier "def$r" 120 || exit 1
	perftest "def.$r"
	guest_barrier "ours1$r" 120 || exit 1
	run "ours1.$r" timeout -k 2 90 "$IBPREP" rdmatest --transport verbs --hosts vm0,vm1 \
		--index "$me" --addrs 10.77.1.1,10.77.1.2 --device rxe0 --insecure --json \
		--buf 262144 --burst 1048576 test_min_bw=0 test_max_lat_us=1000000 test_timeout=60
	guest_barrier "uni1$r" 120 || exit 1
	iters=16 perftest "uni1.$r" -t 4 -u 18
done
exit 0
