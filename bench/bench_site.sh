#!/usr/bin/env bash
# bench_site.sh: what the site outputs add to `ibprep check`: median wall
# time of the table, --prometheus, --prometheus --topology (placement for the
# GPU-HCA pairs) and --textfile, on a generated DGX H100 tree; ratios to the
# table.  No target: the metrics should cost less than run-to-run noise.
#   B (build dir, default build), IBPREP, BENCH_RUNS (default 41)
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
IBPREP=${IBPREP:-$B/ibprep}
RUNS=${BENCH_RUNS:-41}
if [ ! -x "$IBPREP" ] || ! command -v python3 >/dev/null; then
	echo "bench_site: needs $IBPREP (make) and python3" >&2
	exit 1
fi
T=$(mktemp -d /tmp/bench_site.XXXXXX)
trap 'rm -rf "$T"' EXIT
python3 tests/fixtures/mksysfs.py --preset dgx-h100 --gdr "$T/tree" >/dev/null
python3 tests/fixtures/mktopo.py --preset dgx-h100 "$T/topo.xml" >/dev/null
mkdir -p "$T/tf"
python3 - "$IBPREP" "$T" "$RUNS" <<'PY'
import statistics, subprocess, sys, time
b, t, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = [b, "check", "--sysfs-root", t + "/tree"]
cases = [("table", []), ("--prometheus", ["--prometheus"]),
         ("--prometheus --topology", ["--prometheus", "--topology", t + "/topo.xml"]),
         ("--textfile", ["--textfile", t + "/tf"])]
res = {}
for name, extra in cases:
    ts = []
    for _ in range(runs):
        s = time.perf_counter()
        subprocess.run(base + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - s)
    res[name] = statistics.median(ts) * 1000
with open("/proc/loadavg") as f:
    load = f.read().split()[0]
print("bench_site: generated dgx-h100 tree, %d runs each, load average %s" % (runs, load))
for name, _ in cases:
    print("  ibprep check %-26s %6.1f ms  ratio %.2f" % (name, res[name], res[name] / res["table"]))
PY
