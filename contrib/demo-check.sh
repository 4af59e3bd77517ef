#!/usr/bin/env bash
# demo-check.sh: `ibprep check` on a generated healthy DGX-H100-like node and
# on a broken one (mlx5_3 trained at 1X, mlx5_4 without a cable, no subnet
# manager on mlx5_5's fabric), then the JSON of the broken one, then the real
# H100 capture when ../shared/fixtures/real is present.  Needs make first.
#   B (build dir, default build), IBP_REAL_FIXTURES
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
IBPREP=$B/ibprep
REAL=${IBP_REAL_FIXTURES:-../shared/fixtures/real}
if [ ! -x "$IBPREP" ]; then
	echo "demo-check: $IBPREP missing: run make first" >&2
	exit 2
fi
T=$(mktemp -d /tmp/demo-check.XXXXXX)
trap 'rm -rf "$T"' EXIT

gen() { python3 tests/fixtures/mksysfs.py "$@" >/dev/null || exit 2; }
gen --preset dgx-h100 --gdr --node gpu001 "$T/gpu001"
gen --preset dgx-h100 --gdr --node gpu017 --fault mlx5_3/1:width=1X --fault mlx5_4:down \
	--fault mlx5_5:nosm "$T/gpu017"

show() { # TITLE ARGS...: the command, its output, its exit status
	local title=$1; shift
	printf '\n=== %s\n$ ibprep check %s\n\n' "$title" "$*"
	"$IBPREP" check "$@"
	printf '\n(exit status %d: 0 healthy, 1 unhealthy, 2 could not run)\n' "$?"
}

show "a healthy DGX-H100-like node (generated tree)" --sysfs-root "$T/gpu001"
show "the same node with three faults" --sysfs-root "$T/gpu017"

printf '\n=== the broken node as JSON (schema 1; ports trimmed to their link fields here,\n'
printf '    the full document also has GIDs, counters, PCIe links and netdevs)\n'
printf '$ ibprep check --json --sysfs-root ... | jq ...\n\n'
"$IBPREP" check --json --sysfs-root "$T/gpu017" >"$T/gpu017.json"
if command -v jq >/dev/null; then
	jq '{schema, node, verdict,
	     hcas: [.hcas[] | {name, pci, numa, ports: [.ports[] |
	            {port, state, phys_state, rate_gbps, width, speed, link_layer, verdict}]}],
	     findings}' "$T/gpu017.json"
else
	python3 -m json.tool "$T/gpu017.json"
fi

if [ -d "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" ]; then
	mkdir -p "$T/h100/sys/class"
	cp -r "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" "$T/h100/sys/class/infiniband"
	show "a real H100 node's /sys/class/infiniband (gpud capture: 8 NDR IB ports and a 2X RoCE bond; saturated counters reported once)" \
		--sysfs-root "$T/h100" --node h100-real
else
	printf '\n(the real H100 capture is not here: %s; set IBP_REAL_FIXTURES to show it)\n' "$REAL"
fi
exit 0
