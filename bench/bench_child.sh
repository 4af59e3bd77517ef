#!/usr/bin/env bash
# bench_child.sh: what the plugin's test child costs per node and step
# (tests/tools/child-bench.c: fork, become the test's user, exec ibprep
# rdmatest --child, plan and result over pipes, against the same one-node
# test in process), with munge credentials from a private munged.
#   BASE=DIR  also another tree's build (e.g. a worktree of main), the two
#             run alternately, ROUNDS times each, in one run: side by side
#   ROUNDS    rounds per build (default 5), CHILD_RUNS runs per round (50)
# Prints each round's child_cost_ms, the medians and their ratio.  Needs root.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
ROUNDS=${ROUNDS:-5}
CHILD_RUNS=${CHILD_RUNS:-50}
[ "$(id -u)" -eq 0 ] || { echo "bench_child: needs root (the child's drop)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ibp-bench-child.XXXXXX)
chmod 0755 "$tmp"
munged_pid=
cleanup() {
	[ -n "$munged_pid" ] && kill "$munged_pid" 2>/dev/null && wait "$munged_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

libs=$(pkg-config --libs hwloc libibverbs numa libsodium 2>/dev/null)
build_bench() { # TREE OUT
	(cd "$1" && ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Iinclude -o "$2" tests/tools/child-bench.c \
		"$B/obj/spank/ib_child.o" "$B/libibprep.a" $libs -lmunge -lm -lpthread)
}
trees=("$PWD")
[ -n "${BASE:-}" ] && trees+=("$(cd "$BASE" && pwd)")
for i in "${!trees[@]}"; do
	build_bench "${trees[$i]}" "$tmp/cb$i" ||
		{ echo "bench_child: cannot build child-bench in ${trees[$i]} (make all there first)" >&2; exit 1; }
done

sock=
if command -v munged >/dev/null && id munge >/dev/null 2>&1; then
	d=$tmp/munge
	mkdir -p "$d"
	mungekey --create --keyfile="$d/munge.key" >/dev/null 2>&1
	chown -R munge:munge "$d"
	setpriv --reuid=munge --regid=munge --init-groups munged --foreground --force \
		--socket="$d/munge.sock" --key-file="$d/munge.key" --pid-file="$d/munged.pid" \
		--log-file="$d/munged.log" --seed-file="$d/munged.seed" >/dev/null 2>&1 </dev/null &
	munged_pid=$!
	for _ in $(seq 1 100); do [ -S "$d/munge.sock" ] && break; sleep 0.05; done
	[ -S "$d/munge.sock" ] && sock=$d/munge.sock
fi

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
echo "test child cost per node and step (child_ms - in_process_ms), median of $CHILD_RUNS runs per round," \
	"$ROUNDS rounds, $([ -n "$sock" ] && echo "with munge" || echo "no munged") ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
for r in $(seq 1 "$ROUNDS"); do
	for i in "${!trees[@]}"; do
		out=$("$tmp/cb$i" "${trees[$i]}/$B/ibprep" 65534 "$CHILD_RUNS" $sock) ||
			{ echo "bench_child: ${trees[$i]}: $out" >&2; exit 1; }
		c=$(awk '/^child_cost_ms/ {print $2}' <<<"$out")
		echo "$c" >>"$tmp/cost$i"
		printf '  round %d  %-40s child_cost_ms %s\n' "$r" "${trees[$i]}" "$c"
	done
done
m0=$(median <"$tmp/cost0")
echo "median child_cost_ms: $m0 ($PWD)"
if [ -n "${BASE:-}" ]; then
	m1=$(median <"$tmp/cost1")
	echo "median child_cost_ms: $m1 (${trees[1]})"
	awk -v a="$m0" -v b="$m1" 'BEGIN { if (b > 0) printf "ratio this tree / BASE: %.2f (target: at most 1.10)\n", a / b }'
fi
