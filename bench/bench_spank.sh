#!/usr/bin/env bash
# bench_spank.sh: what --ib-check --ib-affinity costs a Slurm step.
#
# Steps inside one allocation (salloc --no-shell, then srun --jobid: new jobs
# would add the scheduler's outliers), in the project's cluster of two
# DGX-H100-like simulated nodes, paired and alternated:
#   A  srun -N2 --ntasks-per-node=8 -O --ib-check --ib-affinity true
#   B  srun -N2 --ntasks-per-node=8 -O true          (plugin loaded, no flag)
# Prints the medians of A and B and the ratio of the medians, for
#   xml         topology from the XML file, verdict cache off (cache_ttl=0):
#               every step reads sysfs, checks, loads the topology and places
#   xml+cache   the same with cache_ttl=60 (later steps reuse the verdict)
#   live        live hwloc discovery of this machine (PCI only) instead of XML
# and B against an empty plugstack.conf (the plugin must cost nothing when no
# flag is given).  Target: ratio <= 1.15 with the defaults (xml+cache: the
# first step of a job pays the checks, its later steps reuse the verdict and
# only read the inventory, load the XML and place); xml shows the full price.
#   SPANK_IB_SO (default build/spank_ib.so), BENCH_PAIRS (default 25)
set -u
cd "$(dirname "$0")/.."
. tests/integration/lib/cluster.sh
PAIRS=${BENCH_PAIRS:-25}

if [ "$(id -u)" -ne 0 ]; then
	echo "bench_spank: needs root (the cluster runs in namespaces): skipped" >&2
	exit 0
fi
if [ ! -f "$SPANK_IB_SO" ]; then
	echo "bench_spank: $SPANK_IB_SO missing: run make first" >&2
	exit 1
fi
cluster_start 2 2>/tmp/bench_spank.err.$$ || {
	cat /tmp/bench_spank.err.$$ >&2
	rm -f /tmp/bench_spank.err.$$
	exit 1
}
rm -f /tmp/bench_spank.err.$$
# A private copy: a rebuild during the run must not change what is measured.
cp "$SPANK_IB_SO" "$CL_DIR/spank_ib.so"
SPANK_IB_SO=$CL_DIR/spank_ib.so
if [ "$CL_HW" != 1 ]; then
	echo "bench_spank: no simulated hardware (tests/fixtures/mksysfs.py, mktopo.py): skipped" >&2
	exit 0
fi
job=$(cl_salloc --no-shell -N2 --ntasks-per-node=8 2>&1 | grep -Eo 'allocation [0-9]+' | grep -Eo '[0-9]+' | head -1)
if [ -z "$job" ]; then
	echo "bench_spank: salloc failed" >&2
	exit 1
fi

# One step's wall time in ms.
step_ms() {
	local t0 t1
	t0=$(date +%s%N)
	cl_srun --jobid="$job" --overlap -N2 --ntasks-per-node=8 -O "$@" true >"$CL_DIR/step.out" 2>&1 ||
		echo "bench_spank: step failed: $*: $(tail -2 "$CL_DIR/step.out")" >&2
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/1000}'; }

# pair LABEL: PAIRS alternated A/B steps (order flipped every pair).
pair() {
	local label=$1 i a b fa fb
	fa=$(mktemp) fb=$(mktemp)
	step_ms >/dev/null # warm
	for i in $(seq 1 "$PAIRS"); do
		if [ $((i % 2)) = 0 ]; then
			step_ms --ib-check --ib-affinity >>"$fa"
			step_ms >>"$fb"
		else
			step_ms >>"$fb"
			step_ms --ib-check --ib-affinity >>"$fa"
		fi
	done
	a=$(median <"$fa") b=$(median <"$fb")
	printf '%-10s flags %7s ms   no flag %7s ms   ratio %s\n' "$label" "$a" "$b" \
		"$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')"
	rm -f "$fa" "$fb"
}

keys="min_memlock=0 cache_dir=$CL_DIR/nodes/%n/cache"
echo "bench_spank: $PAIRS paired steps each, srun -N2 --ntasks-per-node=8 (16 tasks), medians"
cluster_plugstack "$(cluster_spank_line $keys cache_ttl=0)"
pair xml
cluster_plugstack "$(cluster_spank_line $keys cache_ttl=60)"
pair xml+cache
cluster_plugstack "required $SPANK_IB_SO sysfs_root=$CL_DIR/nodes/%n/root bind=no $keys cache_ttl=0"
pair live

# The plugin's own work per node and step (init_post_opt: inventory, checks,
# topology, placement), as its report states it: median over the nodes' steps.
work() {
	local label=$1 i f
	f=$(mktemp)
	for i in $(seq 1 "$PAIRS"); do
		cl_srun --jobid="$job" --overlap -N2 --ntasks-per-node=8 -O --ib-check --ib-affinity \
			--ib-report true 2>&1 | grep -Eo 'pass \([0-9.]+ ms' | grep -Eo '[0-9.]+' |
			awk '{printf "%d\n", $1 * 1000}' >>"$f"
	done
	printf '%-10s plugin work per node %s ms (median of %s)\n' "$label" "$(median <"$f")" \
		"$(wc -l <"$f")"
	rm -f "$f"
}
cluster_plugstack "$(cluster_spank_line $keys cache_ttl=0)"
work xml
cluster_plugstack "$(cluster_spank_line $keys cache_ttl=60)"
work xml+cache

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
	"test_helper=$PWD/build/ibprep" "munge_socket=$CL_DIR/munge/munge.sock")"
fa=$(mktemp) fb=$(mktemp) fv=$(mktemp)
for i in $(seq 1 "$PAIRS"); do
	step_ms --ib-test >>"$fa"
	step_ms >>"$fb"
	cl_srun --jobid="$job" --overlap -N2 --ntasks-per-node=1 -O --ib-test --ib-report true 2>&1 |
		grep -Eo 'cross-node test: pass with 2 nodes in [0-9.]+ s' | grep -Eo '[0-9.]+ s' |
		awk '{printf "%d\n", $1 * 1000000}' >>"$fv"
done
a=$(median <"$fa") b=$(median <"$fb")
printf '%-10s --ib-test %7s ms   none    %7s ms   ratio %s   verdict %s ms (median of %s node reports)\n' \
	"ib-test" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')" \
	"$(median <"$fv")" "$(wc -l <"$fv")"
rm -f "$fa" "$fb" "$fv"
cl_scancel "$job" 2>/dev/null
exit 0
