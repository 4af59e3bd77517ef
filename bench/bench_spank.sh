#!/usr/bin/env bash
# bench_spank.sh: what --ib-check --ib-affinity costs a Slurm step.
#
# Steps inside one allocation (salloc --no-shell, then srun --jobid: new jobs
# would add the scheduler's outliers), in the project's cluster of two
# DGX-H100-like simulated nodes, interleaved in one run (a new random order
# every round, so the machine's load and the previous step's end fall on
# each alike):
#   default  srun -N2 --ntasks-per-node=8 -O --ib-check --ib-affinity true
#            with the default configuration: no topology=, so this
#            machine's own topology, discovered once per boot and kept in
#            cache_dir (topo_cache.h); cache_ttl=60
#   xml      the same with topology= (an XML per node); cache_ttl=60
#   live     no topology= and a cache_dir the plugin refuses (world-
#            writable): a PCI discovery on every step, as before the cache
#   nowatch  the default with watch_interval=0: no watcher for the step
#            (the watch's own cost is default against nowatch)
#   none     srun -N2 --ntasks-per-node=8 -O true   (plugin loaded, no flag)
# Every configuration has the build's ibprep as test_helper=, as an
# installed plugin has its own: NCCL_SOCKET_IFNAME's peer lookup runs in it
# (kept for the job's later steps in cache_dir; every step for live).
# Prints each median and its ratio to none, and the same judged on the
# rounds' pairs: the median of each round's ratio to that round's none, with
# its 95% bootstrap interval (bench/lib/paired_ratio.awk), which says how
# far the run knows the ratio.  Targets: default <= 1.05, xml <= 1.03
# (issue 28).  Then the plugin's own work per node, the plugin
# loaded without a flag against no plugin, and --ib-test.
#   SPANK_IB_SO (default build/spank_ib.so), BENCH_PAIRS (default 25 rounds)
# BASE=DIR adds two configurations, "base" and "basexml": the default and
# xml setups with the plugin, watcher and ibprep of another build (a
# checkout built there: `git worktree add DIR COMMIT && make -C DIR`),
# shuffled with the others, so that a change's cost or gain is read from
# one run (this build's default and xml against base's) on the same machine
# at the same load; and that build's plugin work per node.
set -u
cd "$(dirname "$0")/.."
. tests/integration/lib/cluster.sh
. bench/lib/spank_cluster.sh
PAIRS=${BENCH_PAIRS:-25}

bench_need_root bench_spank
if [ ! -f "$SPANK_IB_SO" ]; then
	echo "bench_spank: $SPANK_IB_SO missing: run make first" >&2
	exit 1
fi
if [ -n "${BASE:-}" ]; then
	for f in spank_ib.so spank-ib-watch ibprep; do
		[ -f "$BASE/build/$f" ] || {
			echo "bench_spank: BASE=$BASE has no build/$f (make -C $BASE)" >&2
			exit 1
		}
	done
fi
bench_spank_cluster bench_spank
if [ -n "${BASE:-}" ]; then
	mkdir -p "$CL_DIR/base"
	for f in spank_ib.so spank-ib-watch ibprep; do cp "$BASE/build/$f" "$CL_DIR/base/$f"; done
fi

# One step's wall time in ms.
step_ms() {
	local t0 t1
	t0=$(date +%s%N)
	cl_srun --jobid="$JOB" --overlap -N2 --ntasks-per-node=8 -O "$@" true >"$CL_DIR/step.out" 2>&1 ||
		echo "bench_spank: step failed: $*: $(tail -2 "$CL_DIR/step.out")" >&2
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/1000}'; }

# rounds: BENCH_PAIRS rounds of one step of each configuration, shuffled.
rounds() {
	local i k c f line
	local -a cfgs=(default xml live nowatch none)
	declare -A lines
	[ -n "${BASE:-}" ] && cfgs+=(base basexml)
	lines[default]="$(cluster_spank_line $keys | sed "s| topology=[^ ]*||")"
	lines[xml]="$(cluster_spank_line $keys)"
	lines[live]="$(cluster_spank_line $keys | sed "s| topology=[^ ]*||; s|cache_dir=[^ ]*|cache_dir=$CL_DIR/open-cache|")"
	lines[nowatch]="$(cluster_spank_line $keys watch_interval=0 | sed "s| topology=[^ ]*||")"
	lines[none]="${lines[default]}"
	lines[base]="$(cluster_spank_line $keys | sed "s| topology=[^ ]*||; s|$SPANK_IB_SO|$CL_DIR/base/spank_ib.so|; s|watch_helper=[^ ]*|watch_helper=$CL_DIR/base/spank-ib-watch|; s|test_helper=[^ ]*|test_helper=$CL_DIR/base/ibprep|")"
	lines[basexml]="$(cluster_spank_line $keys | sed "s|$SPANK_IB_SO|$CL_DIR/base/spank_ib.so|; s|watch_helper=[^ ]*|watch_helper=$CL_DIR/base/spank-ib-watch|; s|test_helper=[^ ]*|test_helper=$CL_DIR/base/ibprep|")"
	mkdir -p "$CL_DIR/open-cache"
	chmod 0777 "$CL_DIR/open-cache" # refused: not root's alone
	for c in "${cfgs[@]}"; do
		: >"$CL_DIR/t.$c"
		cluster_plugstack "${lines[$c]}" # warm: the first discovery, the first verdict
		if [ "$c" = none ]; then step_ms >/dev/null; else step_ms --ib-check --ib-affinity >/dev/null; fi
	done
	for i in $(seq 1 "$PAIRS"); do
		# A new order every round (shuf, seeded by the round): a rotation
		# keeps each configuration behind the same one, and the end of a
		# step (its watcher's stop, slurmd's cleanup) overlaps the start of
		# the next, so a fixed neighbour is a fixed bias.
		for c in $(printf '%s\n' "${cfgs[@]}" | shuf --random-source=<(yes "$i")); do
			cluster_plugstack "${lines[$c]}"
			if [ "$c" = none ]; then
				step_ms >>"$CL_DIR/t.$c"
			else
				step_ms --ib-check --ib-affinity >>"$CL_DIR/t.$c"
			fi
		done
	done
	none=$(median <"$CL_DIR/t.none")
	for c in "${cfgs[@]}"; do
		f=$(median <"$CL_DIR/t.$c")
		printf '%-10s %7s ms   ratio to none %s   paired: %s\n' "$c" "$f" \
			"$(awk -v a="$f" -v b="$none" 'BEGIN {printf "%.3f", a / b}')" \
			"$(paste "$CL_DIR/t.$c" "$CL_DIR/t.none" | awk -f bench/lib/paired_ratio.awk)"
	done
	if [ -n "${BASE:-}" ]; then
		printf 'default / base %s (this build %s against %s)\n' \
			"$(awk -v a="$(median <"$CL_DIR/t.default")" -v b="$(median <"$CL_DIR/t.base")" 'BEGIN {printf "%.3f", a / b}')" \
			"$(git rev-parse --short HEAD 2>/dev/null)" "$(git -C "$BASE" rev-parse --short HEAD 2>/dev/null)"
		printf 'xml / basexml %s (the same, with topology=)\n' \
			"$(awk -v a="$(median <"$CL_DIR/t.xml")" -v b="$(median <"$CL_DIR/t.basexml")" 'BEGIN {printf "%.3f", a / b}')"
		printf 'paired: default / base %s; xml / basexml %s\n' \
			"$(paste "$CL_DIR/t.default" "$CL_DIR/t.base" | awk -f bench/lib/paired_ratio.awk)" \
			"$(paste "$CL_DIR/t.xml" "$CL_DIR/t.basexml" | awk -f bench/lib/paired_ratio.awk)"
	fi
}

keys="min_memlock=0 cache_dir=$CL_DIR/nodes/%n/cache test_helper=$PWD/build/ibprep"
echo "bench_spank: $PAIRS rounds, srun -N2 --ntasks-per-node=8 (16 tasks), --ib-check --ib-affinity, medians"
rounds

# The plugin's own work per node and step (init_post_opt: inventory, checks,
# topology, placement), as its report states it: median over the nodes'
# steps.  The cached configurations (and, with BASE=, the other build's)
# in one shuffled series, as rounds() does: the load moves while a bench
# runs, and a series after another would read it as a difference.
work_step() {
	cl_srun --jobid="$JOB" --overlap -N2 --ntasks-per-node=8 -O --ib-check --ib-affinity \
		--ib-report true 2>&1 | grep -Eo 'pass \([0-9.]+ ms' | grep -Eo '[0-9.]+' |
		awk '{printf "%d\n", $1 * 1000}'
}
work_report() {
	printf '%-15s plugin work per node %s ms (median of %s)\n' "$1" "$(median <"$2")" \
		"$(wc -l <"$2")"
}
f=$(mktemp)
cluster_plugstack "$(cluster_spank_line $keys cache_ttl=0)"
for i in $(seq 1 "$PAIRS"); do work_step >>"$f"; done
work_report xml "$f"
rm -f "$f"
declare -A wl
wcfgs=(xml+cache default)
wl[xml+cache]="$(cluster_spank_line $keys cache_ttl=60)"
wl[default]="$(cluster_spank_line $keys cache_ttl=60 | sed "s| topology=[^ ]*||")"
if [ -n "${BASE:-}" ]; then
	bso="s|$SPANK_IB_SO|$CL_DIR/base/spank_ib.so|; s|watch_helper=[^ ]*|watch_helper=$CL_DIR/base/spank-ib-watch|; s|test_helper=[^ ]*|test_helper=$CL_DIR/base/ibprep|"
	wcfgs+=(base-xml+cache base-default)
	wl[base-xml+cache]="$(cluster_spank_line $keys cache_ttl=60 | sed "$bso")"
	wl[base-default]="$(cluster_spank_line $keys cache_ttl=60 | sed "s| topology=[^ ]*||; $bso")"
fi
for c in "${wcfgs[@]}"; do
	: >"$CL_DIR/w.$c"
	cluster_plugstack "${wl[$c]}"
	work_step >/dev/null # warm: the verdict, the lookup, the topology's cache
done
for i in $(seq 1 "$PAIRS"); do
	for c in $(printf '%s\n' "${wcfgs[@]}" | shuf --random-source=<(yes "w$i")); do
		cluster_plugstack "${wl[$c]}"
		work_step >>"$CL_DIR/w.$c"
	done
done
for c in "${wcfgs[@]}"; do work_report "$c" "$CL_DIR/w.$c"; done

# No flag: the plugin loaded against no plugin at all.
fa=$(mktemp) fb=$(mktemp)
for i in $(seq 1 "$PAIRS"); do
	cluster_plugstack "$(cluster_spank_line $keys)"
	step_ms >>"$fa"
	cluster_plugstack
	step_ms >>"$fb"
done
a=$(median <"$fa") b=$(median <"$fb")
printf '%-10s loaded  %7s ms   absent  %7s ms   ratio %s\n' "no-flag" "$a" "$b" \
	"$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')"
rm -f "$fa" "$fb"

# --ib-test on 2 nodes (socket transport, the build's ibprep as the test
# child, the cluster's munged): the step with the test against the step
# without, and the test's own time to verdict as the plugin reports it.
cluster_plugstack "$(cluster_spank_line $keys cache_ttl=60 test_transport=socket \
	"munge_socket=$CL_DIR/munge/munge.sock")"
fa=$(mktemp) fb=$(mktemp) fv=$(mktemp)
for i in $(seq 1 "$PAIRS"); do
	step_ms --ib-test >>"$fa"
	step_ms >>"$fb"
	cl_srun --jobid="$JOB" --overlap -N2 --ntasks-per-node=1 -O --ib-test --ib-report true 2>&1 |
		grep -Eo 'cross-node test: pass with 2 nodes in [0-9.]+ s' | grep -Eo '[0-9.]+ s' |
		awk '{printf "%d\n", $1 * 1000000}' >>"$fv"
done
a=$(median <"$fa") b=$(median <"$fb")
printf '%-10s --ib-test %7s ms   none    %7s ms   ratio %s   verdict %s ms (median of %s node reports)\n' \
	"ib-test" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')" \
	"$(median <"$fv")" "$(wc -l <"$fv")"
rm -f "$fa" "$fb" "$fv"
cl_scancel "$JOB" 2>/dev/null
exit 0
