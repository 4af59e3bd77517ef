#!/usr/bin/env bash
# bench_rdmatest.sh: time to verdict of the cross-node test for 2, 16, 64 and
# 256 simulated nodes (one process each on its own 127.100.x.y address,
# socket transport, munge credentials from a private munged when run as root,
# else --insecure).  Target: flat, since every node talks to O(1) peers.
#   verdict  the slowest node's own time from start to verdict (median of RUNS)
#   wall     all nodes released at once (a start barrier) to the last exit
#   cpu      CPU time per node (user + sys): the work each node does
# On a machine with fewer cores than simulated nodes, the nodes share the
# cores: verdict time then grows with N / cores while the work per node
# (cpu) stays flat; that column is the one the O(1) claim is about.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-3}
SIZES=${SIZES:-"2 16 64 256"}
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
	"$B/libibprep.a" $(pkg-config --libs hwloc libibverbs numa libcrypto 2>/dev/null) -lmunge -lm -lpthread ||
	{ echo "bench_rdmatest: cannot build the simulator (run make first)" >&2; exit 1; }

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

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
echo "rdmatest time to verdict, socket transport, $mode, $RUNS runs each ($(nproc) cores)"
printf '%6s  %12s  %10s  %14s  %s\n' nodes verdict_s wall_s cpu_per_node_ms passed
first=
for n in $SIZES; do
	verdicts=() walls=() cpus=() passed=
	for r in $(seq 1 "$RUNS"); do
		out=$tmp/n$n-$r
		mkdir -p "$out"
		"$sim" --nodes "$n" --timeout 5 --job $((1000 + r)) --step "$n" "${auth[@]}" \
			--outdir "$out" >"$out.txt" 2>&1
		verdicts+=("$(awk '/^node /{if ($5 > m) m = $5} END {print m + 0}' "$out.txt")")
		walls+=("$(awk '/^wall /{print $2}' "$out.txt")")
		cpus+=("$(awk '/^cpu_per_node_ms /{print $2}' "$out.txt")")
		passed=$(grep -c '^node .* pass ' "$out.txt")
	done
	v=$(printf '%s\n' "${verdicts[@]}" | median)
	w=$(printf '%s\n' "${walls[@]}" | median)
	c=$(printf '%s\n' "${cpus[@]}" | median)
	printf '%6s  %12s  %10s  %14s  %s/%s\n' "$n" "$v" "$w" "$c" "$passed" "$n"
	[ -z "$first" ] && first=$v firstc=$c
	last=$v lastc=$c
done
awk -v a="$first" -v b="$last" -v c="$firstc" -v d="$lastc" -v cores="$(nproc)" 'BEGIN {
	if (c > 0) printf "ratio cpu per node, largest/smallest N: %.2f (target: flat, O(1) peers per node)\n", d / c
	if (a > 0) printf "ratio verdict time, largest/smallest N: %.2f (%d simulated nodes share %d cores)\n", b / a, '"${SIZES##* }"', cores
}'
