#!/usr/bin/env bash
# bench_spank_parts.sh: where init_post_opt's time goes, call by call, in
# this build against another (BASE=DIR, a checkout; default: this one
# twice), in one run.
#
# Copies of both committed trees (git archive HEAD, nothing changed in
# either checkout) get a timer around each call of init_post_opt and exit
# and of the watcher's start (bench/lib/spank_parts.py), then, in one
# allocation of the 2-node test cluster, BENCH_ROUNDS rounds of four
# steps, {base, this} x {default, xml} (bench_spank.sh's setups), in a new
# random order every round, each
#   srun -N2 --ntasks-per-node=8 -O --ib-check --ib-affinity true
# Prints the median time per node of every timed call, and each step's
# median wall time.  Per call, timers and their logging included: compare
# columns, do not add rows.
#   BASE (default: this checkout), BENCH_ROUNDS (default 25)
set -u
cd "$(dirname "$0")/.." || exit 1
ROUNDS=${BENCH_ROUNDS:-25}
BASE=${BASE:-$PWD}
. bench/lib/spank_cluster.sh
bench_need_root bench_spank_parts
WORK=$(mktemp -d /tmp/bench_spank_parts.XXXXXX)
chmod 0755 "$WORK"
LOG=$WORK/parts.log
# timed BUILD_DIR CHECKOUT: the checkout's HEAD with timers, built
timed() {
	mkdir -p "$1"
	git -C "$2" archive HEAD | tar -x -C "$1" &&
		python3 bench/lib/spank_parts.py "$1" "$LOG" &&
		make -s -C "$1" -j2 build/spank_ib.so build/spank-ib-watch build/ibprep >"$1.log" 2>&1 || {
		tail -5 "$1.log" >&2 2>/dev/null
		echo "bench_spank_parts: the timed build of $2 failed" >&2
		return 1
	}
}
if ! timed "$WORK/a" "$BASE" || ! timed "$WORK/b" "$PWD"; then
	rm -rf "$WORK"
	exit 1
fi
export SPANK_IB_SO=$WORK/a/build/spank_ib.so
. tests/integration/lib/cluster.sh
bench_cleanup() { rm -rf "$WORK"; }
bench_spank_cluster bench_spank_parts
declare -A L
keys="min_memlock=0 cache_dir=$CL_DIR/nodes/%n/cache"
for x in a b; do
	mkdir -p "$CL_DIR/$x"
	for f in spank_ib.so spank-ib-watch ibprep; do cp "$WORK/$x/build/$f" "$CL_DIR/$x/$f"; done
	sub="s|$SPANK_IB_SO|$CL_DIR/$x/spank_ib.so|; s|watch_helper=[^ ]*|watch_helper=$CL_DIR/$x/spank-ib-watch|"
	L[$x.default]="$(cluster_spank_line $keys "test_helper=$CL_DIR/$x/ibprep" | sed "s| topology=[^ ]*||; $sub")"
	L[$x.xml]="$(cluster_spank_line $keys "test_helper=$CL_DIR/$x/ibprep" | sed "$sub")"
done
cfgs="a.default b.default a.xml b.xml"
step() { cl_srun --jobid="$JOB" --overlap -N2 --ntasks-per-node=8 -O --ib-check --ib-affinity true >/dev/null 2>&1; }
for c in $cfgs; do # warm: the verdict, the lookup, the topology's cache
	cluster_plugstack "${L[$c]}"
	step
done
: >"$LOG"
chmod 0666 "$LOG"
echo "bench_spank_parts: $ROUNDS rounds, base $(git -C "$BASE" rev-parse --short HEAD) (a) against $(git rev-parse --short HEAD) (b), load $(cut -d' ' -f1 /proc/loadavg)"
for i in $(seq 1 "$ROUNDS"); do
	for c in $(printf '%s\n' $cfgs | shuf --random-source=<(yes "$i")); do
		cluster_plugstack "${L[$c]}"
		echo "CFG $c" >>"$LOG"
		t0=$(date +%s%N)
		step || echo "bench_spank_parts: step failed ($c)" >&2
		echo "STEP $(($(date +%s%N) - t0))" >>"$LOG"
	done
done
echo "bench_spank_parts: load at the end $(cut -d' ' -f1 /proc/loadavg)"
python3 - "$LOG" $cfgs <<'PY'
import collections, statistics, sys
d, cfg, order = collections.defaultdict(list), None, []
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == 'CFG':
        cfg = f[1]
        continue
    if f[0] not in order:
        order.append(f[0])
    d[(cfg, f[0])].append(int(f[1]) / 1e6)
cfgs = sys.argv[2:]
print('%-22s ' % 'median ms (calls)' + ' '.join('%13s' % c for c in cfgs))
for w in order:
    row = []
    for c in cfgs:
        v = d.get((c, w), [])
        row.append('%8.3f (%3d)' % (statistics.median(v), len(v)) if v else '%13s' % '-')
    print('%-22s ' % w + ' '.join(row))
PY
cl_scancel "$JOB" 2>/dev/null
exit 0
