#!/usr/bin/env bash
# test_snapshot_live.sh: `ibprep snapshot` on a real kernel's /sys (TAP).
#
# Boots ONE Soft-RoCE VM (tests/vm/lib/vm.sh) with rxe0 over a dummy netdev
# and runs tests/vm/lib/snapshot_guest.sh: the snapshot of the live /sys must
# replay with the same `ibprep check --json` document as the live system
# (rxe0: no PCI device, the real GID table, EINVAL on empty GID attributes,
# hw_counters), and a snapshot of the snapshot must be the same tree.
# Skips, with the reason, only where a VM cannot boot.
#
# Environment: IBP_BUILD (build directory relative to the repository,
# "build"), IBPREP ($IBP_BUILD/ibprep), IBP_VM_TIMEOUT (seconds, 300).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/lib/tap.sh"
. "$here/lib/vm.sh"
: "${IBP_BUILD:=build}"
case $IBP_BUILD in /*) bdir=$IBP_BUILD ;; *) bdir=$repo/$IBP_BUILD ;; esac
: "${IBPREP:=$bdir/ibprep}"
: "${IBP_VM_TIMEOUT:=300}"
case $IBPREP in /*) ;; *) IBPREP=$(pwd)/$IBPREP ;; esac
export IBPREP

why=$(vm_unusable)
if [ -n "$why" ]; then
	tap_skip "soft-roce vm" "$why"
	tap_done
	exit
fi
if [ ! -x "$IBPREP" ]; then
	tap_fail "ibprep built" "$IBPREP missing: run make first"
	tap_done
	exit
fi
case $IBPREP in "$repo"/*) ;; *) VM_EXTRA_PATHS="$VM_EXTRA_PATHS $(dirname "$IBPREP")" ;; esac
VM_PASS_ENV="IBPREP"

vm_setup || {
	tap_fail "vm cache" "cannot build the kernel/initramfs cache"
	tap_done
	exit
}
VM_COUNT=1
t0=$(date +%s)
vm_start vm0 "$here/lib/snapshot_guest.sh" && vm_wait vm0 "$IBP_VM_TIMEOUT"
rc=$?
echo "# the vm ran in $(($(date +%s) - t0)) s (exit $rc)"
S=$VM_DIR/vm0/share
if [ "$rc" -ne 0 ]; then
	tap_fail "guest script completed" "exit $rc; output:
$(tail -n 30 "$(vm_out vm0)")
console:
$(tail -n 15 "$(vm_console vm0)")"
	tap_done
	exit
fi
tap_ok "guest script completed"

if grep -q "4: ACTIVE" "$S/state.out"; then
	tap_ok "rxe0 port 1 ACTIVE over dummy0"
else
	tap_fail "rxe0 port 1 ACTIVE over dummy0" "$(cat "$S/state.out")"
fi
if [ "$(cat "$S/snap.rc" 2>/dev/null)" = 0 ] && grep -q "wrote" "$S/snap.out"; then
	tap_ok "ibprep snapshot of the live /sys exits 0 ($(head -1 "$S/snap.out" | sed 's/.*wrote //'))"
else
	tap_fail "ibprep snapshot of the live /sys exits 0" "$(cat "$S/snap.out" 2>&1)"
fi
if grep -q '"rxe0"' "$S/live.out" && grep -q 'ffff:0a4e:0001' "$S/live.out"; then
	tap_ok "live check --json sees rxe0 and its IPv4-mapped GID"
else
	tap_fail "live check --json sees rxe0 and its IPv4-mapped GID" \
		"$(head -c 3000 "$S/live.out"; cat "$S/live.err")"
fi
lrc=$(cat "$S/live.rc" 2>/dev/null) prc=$(cat "$S/replay.rc" 2>/dev/null)
if [ "$lrc" = "$prc" ] && cmp -s "$S/live.out" "$S/replay.out"; then
	tap_ok "the snapshot replays with the same check --json document (exit $lrc)"
else
	tap_fail "the snapshot replays with the same check --json document (exit $lrc vs $prc)" \
		"$(diff "$S/live.out" "$S/replay.out" | head -30; cat "$S/replay.err")"
fi
if [ "$(cat "$S/resnap.rc" 2>/dev/null)" = 0 ]; then
	tap_ok "a snapshot of the snapshot is the same tree"
else
	tap_fail "a snapshot of the snapshot is the same tree" "$(head -20 "$S/resnap.out")"
fi
if [ -s "$S/snap.tar" ] && tar -tf "$S/snap.tar" | grep -q 'snap/sys/class/infiniband/rxe0'; then
	tap_ok "the snapshot holds sys/class/infiniband/rxe0"
else
	tap_fail "the snapshot holds sys/class/infiniband/rxe0" "$(tar -tf "$S/snap.tar" 2>&1 | head)"
fi
tap_done
