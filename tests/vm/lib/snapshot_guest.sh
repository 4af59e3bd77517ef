# snapshot_guest.sh: what test_snapshot_live.sh runs inside its one VM.
# Creates rxe0 over a dummy netdev (no link to anything), then, on the
# kernel's real /sys: `ibprep snapshot`, `ibprep check --json` of the live
# system and of the snapshot.  Results go to $IBP_SHARE (STEP.out, STEP.rc);
# the host compares them.  Every command is bounded by a timeout.
#
# Environment from the host (VM_PASS_ENV): IBPREP.
. "$IBP_GUEST_LIB"
out=$IBP_SHARE

modprobe rdma_rxe || { guest_log "modprobe rdma_rxe failed"; exit 1; }
ip link set lo up
ip link add dummy0 type dummy || exit 1
ip link set dummy0 up || exit 1
ip addr add 10.78.0.1/24 dev dummy0 || exit 1
rdma link add rxe0 type rxe netdev dummy0 || { guest_log "rdma link add rxe0 failed"; exit 1; }
for i in $(seq 1 100); do
	case $(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null) in
	0000:0000:0000:0000:0000:ffff:*) break ;;
	esac
	sleep 0.1
done
cat /sys/class/infiniband/rxe0/ports/1/state >"$out/state.out" 2>&1

# The snapshot lives in the guest's tmpfs (symlinks), a tar of it in the share.
timeout -k 2 120 "$IBPREP" snapshot /tmp/snap >"$out/snap.out" 2>&1
echo $? >"$out/snap.rc"
tar -C /tmp -cf "$out/snap.tar" snap 2>/dev/null
timeout -k 2 60 "$IBPREP" check --json --memlock unlimited >"$out/live.out" 2>"$out/live.err"
echo $? >"$out/live.rc"
timeout -k 2 60 "$IBPREP" check --json --memlock unlimited --sysfs-root /tmp/snap \
	>"$out/replay.out" 2>"$out/replay.err"
echo $? >"$out/replay.rc"
# A second snapshot of the snapshot is the same tree.
timeout -k 2 60 "$IBPREP" snapshot --sysfs-root /tmp/snap /tmp/snap2 >/dev/null 2>&1
diff -r --no-dereference -x SNAPSHOT-README /tmp/snap /tmp/snap2 >"$out/resnap.out" 2>&1
echo $? >"$out/resnap.rc"
exit 0
