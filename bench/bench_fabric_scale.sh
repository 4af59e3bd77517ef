#!/usr/bin/env bash
# bench_fabric_scale.sh: `ibprep fabric` on a month of a fleet's results logs
# (issue 28 item 4): 1,024 nodes (64 leaves of 16) with the cross-node test
# on every step, the logs written by tests/tools/fabric-sim.c --log as the
# plugin leaves them (one file per node, every record through the library's
# writer, each node writing its own end of its links), with a bad cable, an
# intermittent (5%) cable and lossy uplinks somewhere in the fleet:
#   quick mode (rail 0):  2.5 million records, about 490 MB, target 1 s;
#   full mode (8 rails): 20 million records, about 3.9 GB, target 8 s
#   (SCALE_FULL=0 leaves it out; QUICK_RECORDS, FULL_RECORDS change the counts).
# For each: the wall time (median of RUNS, default 3) with the default
# threads and with --threads 1, user and system CPU, peak memory (RSS),
# whether the three faults are named, the load average; CALLGRIND=1 adds
# the instructions of one run of the quick month under valgrind (a figure
# the machine's load does not change; minutes), CALLGRIND=all of both.
# Needs about 4.5 GB under TMPDIR, removed at the end.
set -u
cd "$(dirname "$0")/.."
B=${IBP_BUILD:-${B:-build}}
RUNS=${RUNS:-3}
IBPREP=$B/ibprep
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibp-bench-fabric-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[ -x "$IBPREP" ] || { echo "bench_fabric_scale: $IBPREP missing: run make first" >&2; exit 1; }
sim=$tmp/fabric-sim
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Iinclude -o "$sim" tests/tools/fabric-sim.c \
	"$B/libibprep.a" $(pkg-config --libs hwloc libibverbs numa libsodium 2>/dev/null) -lmunge -lm -lpthread ||
	{ echo "bench_fabric_scale: cannot build the simulator (run make first)" >&2; exit 1; }
echo "bench_fabric_scale: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -m)"

# median of the first column of the lines on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# scale NAME RAILS RECORDS TARGET_S
scale() {
	local name=$1 rails=$2 records=$3 target=$4 dir=$tmp/$1 t1 tn cpu rss faults named=0 want=0 f
	mkdir "$dir"
	"$sim" --log "$dir" --nodes 1024 --leaf-size 16 --rails "$rails" --records "$records" \
		--fault cable --fault intermittent --fault uplinks >"$tmp/$name.gen" || exit 1
	sed 's/^/  /' "$tmp/$name.gen"
	echo "  size: $(du -sh "$dir" | cut -f1); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	for threads in default 1; do
		local opt=
		[ "$threads" = 1 ] && opt="--threads 1"
		: >"$tmp/$name.times"
		for _ in $(seq 1 "$RUNS"); do
			/usr/bin/time -f "%e %U %S %M" -o "$tmp/$name.t" "$IBPREP" fabric $opt --json \
				--topology "$dir/topology.conf" "$dir"/n*.jsonl >"$tmp/$name.json" 2>"$tmp/$name.err"
			[ $? -le 1 ] || { cat "$tmp/$name.err"; exit 1; }
			tail -1 "$tmp/$name.t" >>"$tmp/$name.times" # after "Command exited with non-zero status 1"
		done
		tn=$(median <"$tmp/$name.times")
		cpu=$(awk '{ u += $2; s += $3 } END { printf "%.2f s user, %.2f s system", u / NR, s / NR }' "$tmp/$name.times")
		rss=$(awk '{ if ($4 > m) m = $4 } END { printf "%.1f", m / 1024 }' "$tmp/$name.times")
		echo "  ibprep fabric ${opt:---threads default}: median ${tn} s wall of $RUNS ($(tr '\n' ' ' <"$tmp/$name.times" | awk '{ for (i = 1; i <= NF; i += 4) printf "%s ", $i }')s), mean $cpu, peak RSS $rss MB; target $target s: ratio $(awk -v a="$tn" -v b="$target" 'BEGIN { printf "%.2f", a / b }')"
	done
	echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
	# the faults the simulator put in (quick mode: a node's rail-0 cable is the node)
	while read -r f; do
		want=$((want + 1))
		f=${f% rail 0}
		if grep -A3 '"part": "'"$f"'' "$tmp/$name.json" | grep -q '"verdict": "suspect"' ||
			grep -A3 '"part": "'"${f% rail *}"'"' "$tmp/$name.json" | grep -q '"verdict": "suspect"'; then
			named=$((named + 1))
		else
			echo "  not named as a suspect: $f"
		fi
	done < <(sed -n 's/^fabric-sim: fault: \(.*\) (.*)$/\1/p' "$tmp/$name.gen")
	echo "  faults named as suspects: $named of $want; $(grep -c '"verdict": "suspect"' "$tmp/$name.json") suspect(s) in all; input: $(sed -n '/"input"/,/}/p' "$tmp/$name.json" | grep -E '"(records|malformed|failures|links_failed)"' | tr -d ' \n')"
	if { [ "${CALLGRIND:-0}" = all ] || { [ "${CALLGRIND:-0}" = 1 ] && [ "$name" = quick ]; }; } &&
		command -v valgrind >/dev/null; then
		echo "  instructions (callgrind, one run, default threads): $(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$IBPREP" fabric --topology "$dir/topology.conf" "$dir"/n*.jsonl 2>&1 >/dev/null |
			sed -n 's/.*Collected : //p')"
	fi
	rm -rf "$dir"
}

echo "quick mode (rail 0), a month:"
scale quick 1 "${QUICK_RECORDS:-2500000}" 1
if [ "${SCALE_FULL:-1}" = 1 ]; then
	echo "full mode (8 rails), a month:"
	scale full 8 "${FULL_RECORDS:-20000000}" 8
fi
