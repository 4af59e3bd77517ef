#!/usr/bin/env bash
# test_check_since.sh: `ibprep check --since SNAPSHOT`, the step-end link
# comparison outside Slurm (helpers/node/linkwatch.c): a generated tree is saved
# with `ibprep snapshot`, changed the way a link fault changes sysfs, then
# compared; every case runs with build/ibprep and the ASan+UBSan build.
#   IBPREP / IBPREP_ASAN   the binaries (default build/ibprep, build/asan/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh

IBPREP=${IBPREP:-build/ibprep}
IBPREP_ASAN=${IBPREP_ASAN:-build/asan/ibprep}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
T=$(mktemp -d /tmp/test_check_since.XXXXXX)
trap 'rm -rf "$T"' EXIT

if ! command -v python3 >/dev/null; then
	tap_skip "ibprep check --since" "python3 missing: cannot generate trees (contrib/install-deps.sh)"
	tap_done
	exit
fi
bins=("$IBPREP")
if [ -x "$IBPREP_ASAN" ]; then bins+=("$IBPREP_ASAN"); else tap_skip "ASan build" "$IBPREP_ASAN not built (make $IBPREP_ASAN)"; fi

for bin in "${bins[@]}"; do
	tag=$(basename "$(dirname "$bin")")/$(basename "$bin")
	rm -rf "$T/live" "$T/snap"
	python3 tests/fixtures/mksysfs.py --preset ndr --hcas 3 --node gpu7 "$T/live" >/dev/null
	"$bin" snapshot --sysfs-root "$T/live" "$T/snap" >/dev/null
	P=$T/live/sys/class/infiniband
	out=$("$bin" check --sysfs-root "$T/live" --since "$T/snap" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [[ "$out" == *"verdict: pass"* ]] && [[ "$out" != *"since the snapshot"* ]]; then
		tap_ok "$tag: nothing changed since the snapshot: pass, no link line"
	else
		tap_fail "$tag: unchanged" "rc=$rc $out"
	fi

	echo 2 >"$P/mlx5_1/ports/1/counters/link_downed"
	echo "1: DOWN" >"$P/mlx5_1/ports/1/state"
	echo 30 >"$P/mlx5_2/ports/1/counters/port_rcv_errors"
	out=$("$bin" check --sysfs-root "$T/live" --since "$T/snap" 2>&1)
	rc=$?
	when=$(sed -n 's/.* taken \([^ ]*\)$/\1/p' "$T/snap/SNAPSHOT-README")
	if [ $rc -eq 1 ] && [[ "$out" == *"fail gpu7: mlx5_1 port 1: link went down 2 times since the snapshot of $when, DOWN now"* ]] &&
		[[ "$out" == *"warn gpu7: mlx5_2 port 1: port_rcv_errors grew by 30 since the snapshot of $when, "*"/h"* ]]; then
		tap_ok "$tag: a link that went down fails (exit 1) naming device, port and the snapshot's time; errors warn with a rate"
	else
		tap_fail "$tag: link down since the snapshot" "rc=$rc when=$when $out"
	fi
	if "$bin" check --sysfs-root "$T/live" --since "$T/snap" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
codes = {(x["code"], x["device"], x["port"]) for x in d["findings"]}
assert ("link_went_down", "mlx5_1", 1) in codes and ("counter_grew", "mlx5_2", 1) in codes, codes
'; then tap_ok "$tag: --json carries link_went_down and counter_grew"; else tap_fail "$tag: --json findings"; fi
	out=$("$bin" check --sysfs-root "$T/live" --since "$T/snap" ignore_hcas=mlx5_1 2>&1)
	if [[ "$out" != *"mlx5_1 port 1: link went down"* ]]; then tap_ok "$tag: ignore_hcas= leaves a device out"; else tap_fail "$tag: ignore_hcas" "$out"; fi

	# a counter reset between the snapshot and now, then growth: counted from the reset
	rm -rf "$T/live"
	python3 tests/fixtures/mksysfs.py --preset ndr --hcas 3 --node gpu7 "$T/live" >/dev/null
	echo 5000 >"$P/mlx5_0/ports/1/counters/port_xmit_wait"
	echo 9 >"$T/snap/sys/class/infiniband/mlx5_0/ports/1/counters/link_error_recovery"
	out=$("$bin" check --sysfs-root "$T/live" --since "$T/snap" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [[ "$out" == *"info gpu7: mlx5_0 port 1: waited to send "*"% of "*"(port_xmit_wait grew by 5000 ticks of 4 ns)"* ]] &&
		[[ "$out" == *"info gpu7: mlx5_0 port 1: counters reset since the snapshot"*"(link_error_recovery)"* ]]; then
		tap_ok "$tag: port_xmit_wait growth is information with its share of the time; a counter that went down is a reset, not growth"
	else
		tap_fail "$tag: xmit_wait and reset" "rc=$rc $out"
	fi
	out=$("$bin" check --sysfs-root "$T/live" --since "$T/snap" xmit_wait_tick_ns=0 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && [[ "$out" == *"xmit_wait_tick_ns"* ]]; then tap_ok "$tag: a bad xmit_wait_tick_ns= is refused (exit 2)"; else tap_fail "$tag: bad tick" "rc=$rc $out"; fi

	out=$("$bin" check --sysfs-root "$T/live" --since "$T/nowhere" 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && [[ "$out" == *"--since $T/nowhere: cannot read the snapshot"* ]]; then tap_ok "$tag: a missing snapshot: exit 2 with a message"; else tap_fail "$tag: missing snapshot" "rc=$rc $out"; fi
	mkdir -p "$T/emptydir"
	out=$("$bin" check --sysfs-root "$T/live" --since "$T/emptydir" 2>&1)
	rc=$?
	if [ $rc -eq 2 ] && [[ "$out" == *"no RDMA port in it"* ]]; then tap_ok "$tag: a directory that is no snapshot: exit 2 with a message"; else tap_fail "$tag: not a snapshot" "rc=$rc $out"; fi
done
tap_done
