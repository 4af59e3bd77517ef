#!/usr/bin/env bash
# test_place_golden.sh: `ibprep place --json` on every real hwloc XML capture
# (../shared/fixtures/real/hwloc-xml, or $IBP_REAL_FIXTURES) and every
# generated topology (tests/fixtures/mktopo.py), compared with the golden
# files in tests/golden/.  The real captures' expected pairings are checked
# by test_topo/test_place against PAIRINGS.md; this suite pins the whole
# output (GPUs, HCA ports, CPUs, memory nodes, environment, findings).
#   UPDATE_GOLDEN=1   rewrite the golden files instead of comparing
#   IBPREP            the binary (default build/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
IBPREP=${IBPREP:-build/ibprep}
REAL=${IBP_REAL_FIXTURES:-../shared/fixtures/real}
GOLDEN=tests/golden
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the environment is part of the input: run with none but PATH
run_place() { env -i PATH="$PATH" "$IBPREP" place --json "$@"; }

check() { # NAME ARGS...
	local name=$1; shift
	local out="$tmp/$name.json" rc=0
	run_place "$@" >"$out" 2>"$tmp/$name.err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		tap_fail "$name: ibprep place exited $rc" "$(cat "$tmp/$name.err")"
		return
	fi
	if ! jq -e '.schema == "ibprep.place/1" and (.gpus|type) == "array" and (.tasks|type) == "array"
	            and (.env|type) == "object" and (.findings|type) == "array"' "$out" >/dev/null; then
		tap_fail "$name: output is not the place schema" "$(head -c 400 "$out")"
		return
	fi
	if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
		cp "$out" "$GOLDEN/$name.json"
		tap_ok "$name: golden written"
	elif [ ! -f "$GOLDEN/$name.json" ]; then
		tap_fail "$name: no golden file $GOLDEN/$name.json (UPDATE_GOLDEN=1 writes it)"
	elif diff -u "$GOLDEN/$name.json" "$out" >"$tmp/$name.diff"; then
		tap_ok "$name: matches $GOLDEN/$name.json"
	else
		tap_fail "$name: differs from $GOLDEN/$name.json" "$(head -60 "$tmp/$name.diff")"
	fi
}

# real captures: one task per GPU (CPU-only nodes: one task per socket)
declare -A real_tasks=(
	[deep-est-cm-dp-cn01.hwloc1]=2 [deep-est-dam-dp-dam01.hwloc1]=1 [deep-est-esb-dp-esb01.hwloc1]=1
	[fzj-jureca-dc-cpu-jrc0732.hwloc1]=2 [fzj-jusuf-gpu-jsfc005.hwloc1]=1
	[fzj-juwels-booster-jwb0001.hwloc1]=4 [fzj-juwels-booster-jwb0004.hwloc2]=4
	[fzj-juwels-cluster-cpu-jwc00n001.hwloc1]=2 [fzj-juwels-cluster-gpu-jwc09n003.hwloc1]=4
	[llnl-coral-ea-power8-minsky.hwloc1]=4 [llnl-epyc7551-2s-1hca.hwloc1]=2
	[llnl-pascal-relion-x1904gt.hwloc2]=2 [llnl-tioga-hpe-ex235a-mi250x.hwloc2]=8
	[meluxina-gpu-mel2001.hwloc1]=4
)
if [ -d "$REAL/hwloc-xml" ]; then
	for f in "$REAL"/hwloc-xml/*.xml; do
		base=$(basename "$f" .xml)
		case "$base" in
		*.hwloc3)
			tap_skip "real/$base" "hwloc 2.9 cannot read the 3.0 format"
			continue ;;
		esac
		n=${real_tasks[$base]:-}
		if [ -z "$n" ]; then
			tap_fail "real/$base: new capture without a step shape in this script"
			continue
		fi
		check "real-$base" --topology "$f" --ntasks-per-node "$n"
	done
	# the torchrun shape on a real node: one task, all GPUs, per-GPU worker rows
	check "real-fzj-juwels-booster-jwb0001.hwloc1.1task" \
		--topology "$REAL/hwloc-xml/fzj-juwels-booster-jwb0001.hwloc1.xml" --ntasks-per-node 1
else
	tap_skip "real captures" "$REAL/hwloc-xml is absent (set IBP_REAL_FIXTURES)"
fi

# the project's own corpus of public captures (tests/fixtures/real/SOURCES.md;
# the expected values are argued in tests/integration/test_devices.sh)
declare -A corpus_tasks=([hwloc-mirage004-sl390s-es1000-3tesla-cx2]=3
	[hwloc-bonobo001-pe1950-connectx-machine-pci]=2 [hwloc-bertha-x3950m2-es1000]=4
	[hwloc-ucs-cisco-vic-usnic]=2)
for f in tests/fixtures/real/hwloc/*.xml; do
	base=$(basename "$f" .xml)
	n=${corpus_tasks[$base]:-}
	if [ -z "$n" ]; then
		tap_fail "corpus/$base: new capture without a step shape in this script"
		continue
	fi
	check "corpus-$base" --topology "$f" --ntasks-per-node "$n"
done

# generated topologies
gen() { python3 tests/fixtures/mktopo.py "$@"; }
declare -A gen_tasks=([dgx-h100]=8 [dgx-a100]=8 [gpu-nohca]=4 [multiport]=2 [vpi]=1 [snc]=4
	[cpu-only]=4 [roce]=2 [mi300a-cpx]=24 [efa-p4d]=8 [machine-pci]=2 [cx7-2port]=2
	[gh200]=4 [bf3-pvc]=2 [irdma]=2 [efa-p4d-vm]=8 [efa-p5]=8 [p6-b200]=8)
for p in $(gen --list); do
	if ! gen --preset "$p" "$tmp/$p.xml" 2>"$tmp/$p.gen.err"; then
		tap_fail "gen/$p: mktopo.py failed" "$(cat "$tmp/$p.gen.err")"
		continue
	fi
	check "gen-$p" --topology "$tmp/$p.xml" --ntasks-per-node "${gen_tasks[$p]:-1}"
done
check "gen-dgx-h100.1task" --topology "$tmp/dgx-h100.xml" --ntasks-per-node 1
check "gen-dgx-h100.16tasks" --topology "$tmp/dgx-h100.xml" --ntasks-per-node 16
check "gen-dgx-h100.gpus4-7" --topology "$tmp/dgx-h100.xml" --ntasks-per-node 2 --gpus 4,5,6,7
check "gen-dgx-h100.policy" --topology "$tmp/dgx-h100.xml" --ntasks-per-node 8 \
	nccl_hca=task gdr_level=yes ompi_pml=ucx
if gen --preset dgx-h100 --port-down mlx5_3 "$tmp/dgx-h100-down.xml"; then
	check "gen-dgx-h100.mlx5_3-down" --topology "$tmp/dgx-h100-down.xml" --ntasks-per-node 8
fi
check "gen-roce.gid" --topology "$tmp/roce.xml" --ntasks-per-node 2 gid_index=yes
# exports without the OpenFabrics port infos: every EFA still placed, on port 1
for p in p6-b200 efa-p5; do
	if gen --preset "$p" --no-port-infos "$tmp/$p-noports.xml"; then
		check "gen-$p.no-port-infos" --topology "$tmp/$p-noports.xml" --ntasks-per-node 8
	else
		tap_fail "mktopo.py --preset $p --no-port-infos"
	fi
done
# health from a sysfs tree of the same node (tests/fixtures/mksysfs.py): a
# degraded link fails its check and its GPU moves to the next port
if python3 tests/fixtures/mksysfs.py --preset dgx-h100 --fault mlx5_4:width=1X "$tmp/sys" >/dev/null; then
	check "gen-dgx-h100.sysfs-mlx5_4-width1x" --topology "$tmp/dgx-h100.xml" --sysfs-root "$tmp/sys" \
		--ntasks-per-node 8
else
	tap_fail "mksysfs.py --preset dgx-h100 --fault mlx5_4:width=1X"
fi
# The generated DGX nodes against the published GPU -> HCA maps (derived/ of
# the real fixtures): GPU i's chosen HCA must be the map's.
map_check() { # NAME CSV GOLDEN HCA_COLUMN
	local name=$1 csv=$2 golden=$3 col=$4 want got
	if [ ! -f "$csv" ]; then
		tap_skip "$name" "$csv is absent"
		return
	fi
	want=$(grep -v '^#' "$csv" | awk -F, -v c="$col" 'NR > 1 { printf "%s %s\n", $1, $c }')
	got=$(jq -r '.gpus[] | "\(.index) \(.hca)"' "$golden")
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		tap_ok "$name"
	else
		tap_fail "$name" "map:
$want
placement:
$got"
	fi
}
map_check "dgx-h100: GPU i -> HCA as in DGX H100 User Guide Table 6" \
	"$REAL/derived/dgx-h100-gpu-nic-map.csv" "$GOLDEN/gen-dgx-h100.json" 2
map_check "dgx-a100: GPU i -> preferred HCA of its switch group" \
	"$REAL/derived/dgx-a100-gpu-nic-map.csv" "$GOLDEN/gen-dgx-a100.json" 5
tap_done
