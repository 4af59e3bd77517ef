#!/usr/bin/env bash
# bench_rdmatest.sh: time to verdict of the cross-node test for 2, 16, 64 and
# 256 simulated nodes (one process each on its own 127.100.x.y address,
# socket transport, munge credentials from a private munged when run as root,
# else --insecure).  Target: flat, since every node talks to O(1) peers.
#   verdict  the slowest node's own time from start to verdict (median of RUNS)
#   wall     all nodes released at once (a start barrier) to the last exit
#   cpu      CPU time per node (user + sys): the work each node does
#   auth     with munge: the same run --insecure, and what authentication
#            costs per node: the nodes' extra CPU (credentials, HKDF, a MAC
#            per frame) plus munged's own CPU, per node
# and what the plugin's unprivileged test child adds per node and step
# (tests/tools/child-bench.c; target < 5 ms).  Then RAILS (8) rails against
# one, side by side (rdmatest-sim --rails: each rail on addresses of its
# own), runs alternating: every rail at once, the default test, against
# quick mode's one (target: ratio <= 1.2).  Then the same with a
# topology of TOPO_LEAVES (4) leaves: the topology-aware plan.
# On a machine with fewer cores than simulated nodes, the nodes share the
# cores: verdict time then grows with N / cores while the work per node
# (cpu) stays flat; that column is the one the O(1) claim is about.
#
# BASE=DIR instead: this build against another, side by side (for a change
# that must not cost time: a refactor, a wire format).  DIR is a checkout of
# the other commit built there (`git worktree add DIR COMMIT && make -C DIR`);
# each build's own rdmatest-sim (its tree's tool, headers and library) runs
# in pairs in alternating order, so the machine's load moves both runs of a
# pair alike: --insecure (munged's share is the same for both and only adds
# noise), --prebind (as the plugin) and --fingerprint (FINGERPRINT frames at
# 2 nodes, the sum's FPSUM frames from 6 on; FP=0 leaves them out).  It
# prints the ratio of each pair's times to verdict (this build / BASE): its
# median, the median's 95% interval and the quartiles; target within
# 0.95-1.05.  SIZES defaults to "2 256", RUNS to 61 pairs (RUNS2, five
# times as many, at 2 nodes, where a verdict takes a few ms).  BASE_RAILS=R
# runs both with R rails (--rails R), for a change to the rails' cost.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
if [ -n "${BASE:-}" ]; then
	RUNS=${RUNS:-61}
	SIZES=${SIZES:-"2 256"}
	[ -f "$BASE/build/libibprep.a" ] || {
		echo "bench_rdmatest: BASE=$BASE is not a built tree (git worktree add DIR COMMIT && make -C DIR)" >&2
		exit 1
	}
else
	RUNS=${RUNS:-3}
	SIZES=${SIZES:-"2 16 64 256"}
fi
tmp=$(mktemp -d /tmp/ibp-bench-rdmatest.XXXXXX)
chmod 0755 "$tmp"
munged_pid=
cleanup() {
	[ -n "$munged_pid" ] && kill "$munged_pid" 2>/dev/null && wait "$munged_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

sim=$tmp/rdmatest-sim
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Iinclude -o "$sim" tests/tools/rdmatest-sim.c \
	"$B/libibprep.a" $(pkg-config --libs hwloc libibverbs numa libsodium 2>/dev/null) -lmunge -lm -lpthread ||
	{ echo "bench_rdmatest: cannot build the simulator (run make first)" >&2; exit 1; }

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }

# BASE=DIR: the two builds side by side, and nothing else
if [ -n "${BASE:-}" ]; then
	RUNS2=${RUNS2:-$((5 * RUNS))}
	fp=--fingerprint
	[ "${FP:-1}" = 0 ] && fp=
	${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -I"$BASE/include" -o "$tmp/base-sim" \
		"$BASE/tests/tools/rdmatest-sim.c" "$BASE/build/libibprep.a" \
		$(pkg-config --libs hwloc libibverbs numa libsodium 2>/dev/null) -lmunge -lm -lpthread ||
		{ echo "bench_rdmatest: cannot build BASE's simulator (make in $BASE first)" >&2; exit 1; }
	quartiles() { sort -n | awk '{v[NR]=$1} END {printf "%.3f-%.3f", v[int((NR + 3) / 4)], v[int((3 * NR + 1) / 4)]}'; }
	# the median's 95% confidence interval from the order statistics (as bench_consistency.sh)
	median_ci() { sort -n | awk '{v[NR]=$1} END {d = 0.98 * sqrt(NR); lo = int(NR / 2 - d); hi = int(NR / 2 + 1 + d + 0.999); if (lo < 1) lo = 1; if (hi > NR) hi = NR; printf "%.3f-%.3f", v[lo], v[hi]}'; }
	# verdict SIM N JOB: the slowest node's time to verdict (s) and how many passed
	verdict() {
		local out=$tmp/o$2-$3
		mkdir -p "$out"
		"$1" --nodes "$2" --timeout 5 --job "$3" --step "$2" --insecure --prebind $fp \
			${BASE_RAILS:+--rails "$BASE_RAILS"} --outdir "$out" >"$out.txt" 2>&1
		echo "$(awk '/^node /{if ($5 > m) m = $5} END {print m + 0}' "$out.txt") $(grep -c '^node .* pass ' "$out.txt")"
		rm -rf "$out" "$out.txt"
	}
	echo "cross-node test, time to verdict: this build ($(git rev-parse --short HEAD 2>/dev/null))" \
		"against $BASE ($(git -C "$BASE" rev-parse --short HEAD 2>/dev/null)), $(nproc) cores," \
		"load $(cut -d' ' -f1 /proc/loadavg), $RUNS pairs ($RUNS2 at 2 nodes), socket, insecure," \
		"listeners bound before the start, ${fp:-no fingerprint}${BASE_RAILS:+, $BASE_RAILS rails}"
	printf '%6s  %10s  %10s  %6s  %12s  %12s  %s\n' nodes base_s new_s ratio ratio_ci95 ratio_q1-q3 passed
	for n in $SIZES; do
		: >"$tmp/a" && : >"$tmp/b"
		pairs=$RUNS
		[ "$n" -le 2 ] && pairs=$RUNS2
		for r in $(seq 1 "$pairs"); do
			if [ $((r % 2)) = 1 ]; then
				verdict "$tmp/base-sim" "$n" $((6000 + 2 * r)) >>"$tmp/a"
				verdict "$sim" "$n" $((6001 + 2 * r)) >>"$tmp/b"
			else
				verdict "$sim" "$n" $((6001 + 2 * r)) >>"$tmp/b"
				verdict "$tmp/base-sim" "$n" $((6000 + 2 * r)) >>"$tmp/a"
			fi
		done
		paste -d' ' "$tmp/a" "$tmp/b" | awk '{if ($1 > 0) print $3 / $1}' >"$tmp/r"
		printf '%6s  %10s  %10s  %6s  %12s  %12s  %s/%s %s/%s\n' "$n" \
			"$(awk '{print $1}' "$tmp/a" | median)" "$(awk '{print $1}' "$tmp/b" | median)" \
			"$(median <"$tmp/r" | awk '{printf "%.3f", $1}')" "$(median_ci <"$tmp/r")" \
			"$(quartiles <"$tmp/r")" "$(awk '{print $2}' "$tmp/a" | median)" "$n" \
			"$(awk '{print $2}' "$tmp/b" | median)" "$n"
	done
	echo "target: ratio (this build / BASE, the median of the pairs' ratios) within 0.95-1.05;"
	echo "base_s, new_s: median times to verdict; passed: BASE, this build (median nodes passing of N)"
	exit 0
fi

auth=(--insecure) mode="insecure (not root or no munged)"
if [ "$(id -u)" -eq 0 ] && command -v munged >/dev/null && id munge >/dev/null 2>&1; then
	d=$tmp/munge
	mkdir -p "$d"
	mungekey --create --keyfile="$d/munge.key" >/dev/null 2>&1
	chown -R munge:munge "$d"
	setpriv --reuid=munge --regid=munge --init-groups munged --foreground --force \
		--num-threads=4 --socket="$d/munge.sock" --key-file="$d/munge.key" \
		--pid-file="$d/munged.pid" --log-file="$d/munged.log" --seed-file="$d/munged.seed" \
		>/dev/null 2>&1 </dev/null &
	munged_pid=$!
	for _ in $(seq 1 100); do [ -S "$d/munge.sock" ] && break; sleep 0.05; done
	[ -S "$d/munge.sock" ] && auth=(--munge-socket "$d/munge.sock") mode="munge"
fi

# CPU time of munged so far, in ms (utime + stime from /proc)
munged_ms() {
	[ -n "$munged_pid" ] && [ -r "/proc/$munged_pid/stat" ] || { echo 0; return; }
	awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); print ($12 + $13) * 1000 / hz}' \
		"/proc/$munged_pid/stat"
}
# sim N JOB ARGS...: one run; prints "verdict wall cpu passed munged_ms_per_node"
sim() {
	local n=$1 job=$2 out=$tmp/n$1-$2 m0 m1; shift 2
	mkdir -p "$out"
	m0=$(munged_ms)
	"$sim" --nodes "$n" --timeout 5 --job "$job" --step "$n" "$@" --outdir "$out" >"$out.txt" 2>&1
	m1=$(munged_ms)
	echo "$(awk '/^node /{if ($5 > m) m = $5} END {print m + 0}' "$out.txt")" \
		"$(awk '/^wall /{print $2}' "$out.txt")" \
		"$(awk '/^cpu_per_node_ms /{print $2}' "$out.txt")" \
		"$(grep -c '^node .* pass ' "$out.txt")" \
		"$(awk -v a="$m0" -v b="$m1" -v n="$n" 'BEGIN {printf "%.3f", (b - a) / n}')"
}
col() { awk -v k="$1" '{print $k}' "$2" | median; }
echo "rdmatest time to verdict, socket transport, $mode, $RUNS runs each ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
if [ "$mode" = munge ]; then
	printf '%6s  %10s  %8s  %12s  %12s  %12s  %12s  %s\n' nodes verdict_s wall_s cpu_node_ms \
		munged_node_ms insecure_cpu_ms auth_node_ms passed
else
	printf '%6s  %10s  %8s  %12s  %s\n' nodes verdict_s wall_s cpu_node_ms passed
fi
first=
for n in $SIZES; do
	: >"$tmp/a" && : >"$tmp/i"
	for r in $(seq 1 "$RUNS"); do
		sim "$n" $((1000 + r)) "${auth[@]}" >>"$tmp/a"
		[ "$mode" = munge ] && sim "$n" $((2000 + r)) --insecure >>"$tmp/i"
	done
	v=$(col 1 "$tmp/a") w=$(col 2 "$tmp/a") c=$(col 3 "$tmp/a") p=$(col 4 "$tmp/a") m=$(col 5 "$tmp/a")
	if [ "$mode" = munge ]; then
		ci=$(col 3 "$tmp/i")
		printf '%6s  %10s  %8s  %12s  %12s  %12s  %12s  %s/%s\n' "$n" "$v" "$w" "$c" "$m" "$ci" \
			"$(awk -v a="$c" -v b="$ci" -v m="$m" 'BEGIN {printf "%.2f", a - b + m}')" "$p" "$n"
	else
		printf '%6s  %10s  %8s  %12s  %s/%s\n' "$n" "$v" "$w" "$c" "$p" "$n"
	fi
	[ -z "$first" ] && first=$v firstc=$c
	last=$v lastc=$c
done

# The same runs with a topology (TOPO_LEAVES leaves of contiguous nodes, one
# spine): the topology-aware plan (round 1 inside leaves, round 2 across).
# It keeps two rounds of one send and one receive per node: the same time
# to verdict is the claim this table checks.
TOPO_LEAVES=${TOPO_LEAVES:-4}
if [ "$TOPO_LEAVES" -ge 2 ]; then
	echo "with a topology of $TOPO_LEAVES leaves (topology-aware plan), $mode, $RUNS runs each:"
	printf '%6s  %10s  %8s  %12s  %s\n' nodes verdict_s wall_s cpu_node_ms passed
	for n in $SIZES; do
		[ "$n" -ge 4 ] || continue
		: >"$tmp/t"
		for r in $(seq 1 "$RUNS"); do
			sim "$n" $((3000 + r)) "${auth[@]}" --leaves "$TOPO_LEAVES" >>"$tmp/t"
		done
		printf '%6s  %10s  %8s  %12s  %s/%s\n' "$n" "$(col 1 "$tmp/t")" "$(col 2 "$tmp/t")" \
			"$(col 3 "$tmp/t")" "$(col 4 "$tmp/t")" "$n"
	done
fi

# Every rail against one (issue 30): the same step with 1 and RAILS rails,
# alternating run by run; the default test covers every rail.
RAILS=${RAILS:-8}
if [ "$RAILS" -ge 2 ]; then
	echo "every rail: 1 rail against $RAILS (all at once, one connection per peer and round), $mode, --prebind, $RUNS runs each, alternating:"
	printf '%6s  %10s  %10s  %7s  %12s  %12s  %s\n' nodes verdict_1_s "verdict_${RAILS}_s" ratio \
		cpu_1_ms "cpu_${RAILS}_ms" passed
	for n in $SIZES; do
		: >"$tmp/r1" && : >"$tmp/r8"
		for r in $(seq 1 "$RUNS"); do
			sim "$n" $((4000 + r)) "${auth[@]}" --prebind --rails 1 >>"$tmp/r1"
			sim "$n" $((5000 + r)) "${auth[@]}" --prebind --rails "$RAILS" >>"$tmp/r8"
		done
		v1=$(col 1 "$tmp/r1") v8=$(col 1 "$tmp/r8")
		printf '%6s  %10s  %10s  %7s  %12s  %12s  %s/%s %s/%s\n' "$n" "$v1" "$v8" \
			"$(awk -v a="$v1" -v b="$v8" 'BEGIN {if (a > 0) printf "%.2f", b / a; else print "-"}')" \
			"$(col 3 "$tmp/r1")" "$(col 3 "$tmp/r8")" "$(col 4 "$tmp/r1")" "$n" "$(col 4 "$tmp/r8")" "$n"
		# the same judged on the pairs: each run of RAILS rails against the 1-rail run before it
		printf '%6s  paired: %s\n' "" \
			"$(paste <(awk '{print $1}' "$tmp/r8") <(awk '{print $1}' "$tmp/r1") | awk -f bench/lib/paired_ratio.awk)"
	done
	echo "target: ratio <= 1.2 (verdict_${RAILS}_s / verdict_1_s; paired: the median of each pair's ratio, its 95% bootstrap interval)"
fi

# The plugin's test child: fork, drop to a user, exec ibprep rdmatest --child,
# plan and result over pipes (spank/ib_child.c), against the same one-node
# test in process: the difference is what the child adds per node and step.
if [ "$(id -u)" -eq 0 ] && [ -f "$B/obj/spank/ib_child.o" ]; then
	cb=$tmp/child-bench
	if ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Iinclude -o "$cb" tests/tools/child-bench.c \
		"$B/obj/spank/ib_child.o" "$B/libibprep.a" $(pkg-config --libs hwloc libibverbs numa libsodium 2>/dev/null) \
		-lmunge -lm -lpthread; then
		sock=
		[ "$mode" = munge ] && sock=$d/munge.sock
		echo "test child (fork + drop + exec $B/ibprep + pipes), one-node step, median of ${CHILD_RUNS:-50}:"
		"$cb" "$PWD/$B/ibprep" 65534 "${CHILD_RUNS:-50}" $sock | sed 's/^/    /'
	fi
else
	echo "test child: skipped (needs root and $B/obj/spank/ib_child.o)"
fi
awk -v a="$first" -v b="$last" -v c="$firstc" -v d="$lastc" -v cores="$(nproc)" 'BEGIN {
	if (c > 0) printf "ratio cpu per node, largest/smallest N: %.2f (target: flat, O(1) peers per node)\n", d / c
	if (a > 0) printf "ratio verdict time, largest/smallest N: %.2f (%d simulated nodes share %d cores)\n", b / a, '"${SIZES##* }"', cores
}'
echo "targets: authentication < 5 ms per node (auth_node_ms), 2-node verdict < 50 ms (verdict_s of the first row)"
