#!/usr/bin/env bash
# bench_check.sh: median wall time of `ibprep check --json` against the floor
# of merely reading the same files.
#   trees: the real 8-port H100 capture (or a generated dgx-h100 tree when the
#          capture is absent) and a generated 32-HCA NDR tree
#   floor: one `cat` process reading every file the check reads (the list
#          comes from strace of the check when strace is installed, else from
#          find over the RDMA class tree), and, as the issue words it, a shell
#          loop running `cat` once per file
# Targets: check within 2x of the one-process floor, under 5 ms on the 8-port tree.
#   B (build dir, default build), IBPREP, BENCH_RUNS (default 41), IBP_REAL_FIXTURES
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
IBPREP=${IBPREP:-$B/ibprep}
RUNS=${BENCH_RUNS:-41}
REAL=${IBP_REAL_FIXTURES:-../shared/fixtures/real}

if [ ! -x "$IBPREP" ]; then
	echo "bench_check: $IBPREP missing: run make first" >&2
	exit 1
fi
if ! command -v python3 >/dev/null; then
	echo "bench_check: python3 missing: cannot generate the trees (contrib/install-deps.sh)" >&2
	exit 1
fi
TIMEFORMAT='%3U %3S'
T=$(mktemp -d /tmp/bench_check.XXXXXX)
trap 'rm -rf "$T"' EXIT

if [ -d "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" ]; then
	mkdir -p "$T/t8/sys/class"
	cp -r "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" "$T/t8/sys/class/infiniband"
	name8="real H100 (8 NDR IB + RoCE bond)"
else
	echo "bench_check: $REAL/sysfs/gpud-h100-ndr-sys-class-infiniband absent: using a generated dgx-h100 tree"
	python3 tests/fixtures/mksysfs.py --preset dgx-h100 --gdr "$T/t8" >/dev/null
	name8="generated dgx-h100 (8 NDR IB)"
fi
python3 tests/fixtures/mksysfs.py --preset ndr --hcas 32 "$T/t32" >/dev/null

# The regular files the check reads, relative to the tree.
file_list() {
	local root=$1 out=$2
	if command -v strace >/dev/null; then
		strace -f -qq -e trace=openat,openat2 -o "$T/strace" \
			"$IBPREP" check --json --sysfs-root "$root" >/dev/null 2>&1
		grep -v -- '= -1' "$T/strace" | sed -n 's/^.*openat2\?([^"]*"\([^"]*\)".*$/\1/p' |
			grep -E '^(sys|proc)/' | sort -u | while read -r f; do
				[ -f "$root/$f" ] && printf '%s\n' "$f"
			done >"$out"
		echo "strace"
	else
		(cd "$root" && find -L sys/class/infiniband -type f) | sort >"$out"
		echo "find (strace not installed)"
	fi
}

# median_ms: reads times in microseconds, prints the median in ms
median_ms() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1000}'; }

us() { local a=${1/./} b=${2/./}; echo $((10#$b - 10#$a)); }

bench_tree() {
	local label=$1 root=$2 src files=() f t0 t1
	src=$(file_list "$root" "$T/files")
	while read -r f; do files+=("$root/$f"); done <"$T/files"
	: >"$T/check.us"; : >"$T/cat.us"; : >"$T/loop.us"; : >"$T/check.cpu"; : >"$T/cat.cpu"
	"$IBPREP" check --json --sysfs-root "$root" >/dev/null # warm the page cache
	for ((i = 0; i < RUNS; i++)); do
		t0=$EPOCHREALTIME
		{ time "$IBPREP" check --json --sysfs-root "$root" >/dev/null; } 2>>"$T/check.cpu"
		t1=$EPOCHREALTIME; us "$t0" "$t1" >>"$T/check.us"
		t0=$EPOCHREALTIME
		{ time cat "${files[@]}" >/dev/null; } 2>>"$T/cat.cpu"
		t1=$EPOCHREALTIME; us "$t0" "$t1" >>"$T/cat.us"
		if ((i < 3)); then # the per-file loop forks a cat per file: 3 runs
			t0=$EPOCHREALTIME
			for f in "${files[@]}"; do cat "$f"; done >/dev/null
			t1=$EPOCHREALTIME; us "$t0" "$t1" >>"$T/loop.us"
		fi
	done
	local c k l cc kc
	c=$(median_ms <"$T/check.us"); k=$(median_ms <"$T/cat.us"); l=$(median_ms <"$T/loop.us")
	# user+sys CPU from bash's time (1 ms resolution): less sensitive to other load
	cc=$(awk '{printf "%d\n", ($1 + $2) * 1000000}' "$T/check.cpu" | median_ms)
	kc=$(awk '{printf "%d\n", ($1 + $2) * 1000000}' "$T/cat.cpu" | median_ms)
	local ratio lratio
	ratio=$(awk -v a="$c" -v b="$k" 'BEGIN {printf "%.2f", a/b}')
	lratio=$(awk -v a="$c" -v b="$l" 'BEGIN {printf "%.3f", a/b}')
	printf '%s: %d files (list from %s), %d runs\n' "$label" "${#files[@]}" "$src" "$RUNS"
	printf '  ibprep check --json     %8.2f ms (median)\n' "$c"
	printf '  cat of the files (1 process) %5.2f ms  ratio check/cat  %s (target <= 2)\n' "$k" "$ratio"
	printf '  shell loop, cat per file %7.2f ms  ratio check/loop %s\n' "$l" "$lratio"
	printf '  CPU (user+sys, median): check %.0f ms, cat %.0f ms\n' "$cc" "$kc"
	LAST_CHECK=$c
	LAST_RATIO=$ratio
}

echo "== bench_check: $(nproc) CPUs, load average $(cut -d" " -f1-3 /proc/loadavg) (wall times suffer from other load), $IBPREP"
bench_tree "$name8" "$T/t8"
c8=$LAST_CHECK r8=$LAST_RATIO
bench_tree "generated 32-HCA NDR" "$T/t32"
r32=$LAST_RATIO
ok=1
awk -v c="$c8" 'BEGIN {exit !(c < 5)}' || ok=0
awk -v r="$r8" 'BEGIN {exit !(r <= 2)}' || ok=0
awk -v r="$r32" 'BEGIN {exit !(r <= 2)}' || ok=0
if [ "$ok" = 1 ]; then
	echo "bench_check: targets met (8-port ${c8} ms < 5 ms; ratios $r8, $r32 <= 2)"
else
	echo "bench_check: TARGET MISSED (8-port ${c8} ms, target < 5 ms; ratios $r8, $r32, target <= 2)"
fi
