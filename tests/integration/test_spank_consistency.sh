#!/usr/bin/env bash
# test_spank_consistency.sh: srun --ib-test compares what the step's nodes
# bring (helpers/node/fingerprint.c, carried sealed in the cross-node test's
# summary exchange; from 6 nodes on, a sum around the ring) in the project's
# Slurm cluster (tests/integration/lib/cluster.sh), eight DGX-H100-like
# simulated nodes, socket transport, munge:
#   * healthy (4 nodes): no consistency line
#   * n3's mlx5_3 runs other firmware: named, a warning, the step runs
#   * n4 lost a rail (mlx5_11 gone from its tree): named, the step fails
#   * two groups of 2 with different firmware: no majority, both groups named once
#   * consistency=firmware:fail turns the firmware difference into a failure
#   * 8 nodes, n3..n5 with other firmware: named once for the step, together,
#     against the other 5 (the step-wide comparison, not the neighbours')
#   * RoCE nodes (mksysfs/mktopo preset roce), n2's GID table puts the RoCE v2
#     IPv4 GID NCCL would use at another index: named, the step fails
#   * n2's own config (config=.../%n/spank_ib.conf, nccl_hca=task) gives its
#     tasks another NCCL_IB_HCA than the other nodes': named, the step fails
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "consistency across the step"
cluster_start_or_done 8
cluster_hw_or_done "consistency across the step"
cluster_suite_out
HELPER=$(cluster_test_helper)
# Round trips over loopback sockets on a busy 2-core machine reach a few ms
# at 8 nodes: this suite is about the fingerprints, so the limit is loose.
plug() {
	cluster_plugstack "$(cluster_spank_line min_memlock=0 test_transport=socket test_timeout=8 \
		test_max_lat_us=50000 "test_helper=$HELPER" "munge_socket=$CL_DIR/munge/munge.sock" "$@")"
}
fw() { echo "$2" >"$CL_DIR/nodes/$1/root/sys/class/infiniband/mlx5_3/fw_ver"; }
plug

run healthy cl_srun -N4 -w 'n[1-4]' --ib-test true
if [ $RC -eq 0 ] && ! grep -q "consistency\|the other 3 nodes\|no majority" "$OUT/healthy"; then
	tap_ok "4 matching nodes: the step passes, no consistency line"
else
	tap_fail "healthy step" "rc=$RC; $(show healthy)"
fi

want=$(cat "$CL_DIR/nodes/n1/root/sys/class/infiniband/mlx5_3/fw_ver")
fw n3 28.41.1000
run fw cl_srun -N4 -w 'n[1-4]' --ib-test true
n=$(grep -c "firmware 28.41.1000, the other 3 nodes $want" "$OUT/fw")
if [ $RC -eq 0 ] && [ "$n" -eq 1 ] &&
	grep -q "spank-ib: warning: n3: mlx5_3 port 1: firmware 28.41.1000, the other 3 nodes $want" "$OUT/fw"; then
	tap_ok "n3's mlx5_3 firmware differs: one warning naming n3, mlx5_3 and both versions; the step runs"
else
	tap_fail "firmware difference named" "rc=$RC n=$n; $(show fw)"
fi
plug consistency=firmware:fail
run fwfail cl_srun -N4 -w 'n[1-4]' --ib-test true
if [ $RC -ne 0 ] && grep -q "spank-ib: n3: mlx5_3 port 1: firmware 28.41.1000, the other 3 nodes" "$OUT/fwfail"; then
	tap_ok "consistency=firmware:fail: the same difference fails the step (srun exits $RC)"
else
	tap_fail "consistency=firmware:fail" "rc=$RC; $(show fwfail)"
fi
plug

fw n4 28.41.1000
run tie cl_srun -N4 -w 'n[1-4]' --ib-test true
n=$(grep -c "no majority for firmware across 4 nodes" "$OUT/tie")
if [ "$n" -eq 1 ] && grep -q "no majority for firmware across 4 nodes: n1,n2 $want; n3,n4 28.41.1000" "$OUT/tie"; then
	tap_ok "two groups of 2: no majority, both groups named, once for the step"
else
	tap_fail "tie names both groups once" "n=$n; $(show tie)"
fi
fw n3 "$want"
fw n4 "$want"

# n4 lost its last rail: the device is gone from its tree
rm -f "$CL_DIR/nodes/n4/root/sys/class/infiniband/mlx5_11"
run rail cl_srun -N4 -w 'n[1-4]' --ib-test true
if [ $RC -ne 0 ] && grep -q "spank-ib: n4: HCA set 7 rails: mlx5_\[0,3-6,9-10\]:1, the other 3 nodes 8 rails: mlx5_\[0,3-6,9-11\]:1" "$OUT/rail"; then
	tap_ok "n4 lost a rail: the HCA sets differ, n4 named, the step fails (srun exits $RC)"
else
	tap_fail "missing rail" "rc=$RC; $(show rail)"
fi
cluster_hw n4 || tap_fail "n4's tree regenerated" "$(tail -3 "$CL_LOG/mksysfs.n4.out")"

# 8 nodes, a run of 3 consecutive odd ones: every window of 5 neighbours that
# holds them has them as its majority; the sum around the ring does not
for n in n3 n4 n5; do fw $n 28.41.1000; done
run eight cl_srun -N8 --ib-test true
n=$(grep -c "firmware 28.41.1000, the other 5 nodes $want" "$OUT/eight")
if [ $RC -eq 0 ] && [ "$n" -eq 1 ] &&
	grep -q "spank-ib: warning: n3: about n3,n4,n5 mlx5_3 port 1: firmware 28.41.1000, the other 5 nodes $want" "$OUT/eight" &&
	! grep -q "ring neighbours only\|no majority" "$OUT/eight"; then
	tap_ok "8 nodes, n3..n5 differ: named together once for the step, against the other 5"
else
	tap_fail "3 consecutive odd nodes of 8" "rc=$RC n=$n; $(show eight)"
fi
for n in n3 n4 n5; do fw $n "$want"; done

# RoCE: every node of the step gets the roce preset (two RoCE ConnectX-7);
# NCCL uses the first RoCE v2 GID with an IPv4 address (index 3 there)
roce_ok=1
for i in 1 2 3 4; do
	CL_HW_PRESET=roce cluster_hw n$i || roce_ok=0
done
if [ $roce_ok = 1 ]; then
	run roce cl_srun -N4 -w 'n[1-4]' --ib-test true
	if [ $RC -eq 0 ] && ! grep -q "consistency\|no majority\|the other 3 nodes" "$OUT/roce"; then
		tap_ok "4 matching RoCE nodes: the step passes, no consistency line"
	else
		tap_fail "healthy RoCE step" "rc=$RC; $(show roce)"
	fi
	# n2: index 3 becomes RoCE v1, the same IPv4 GID appears as RoCE v2 at index 5
	g=$CL_DIR/nodes/n2/root/sys/class/infiniband/mlx5_0/ports/1
	cp "$g/gids/3" "$g/gids/5"
	cp "$g/gid_attrs/ndevs/3" "$g/gid_attrs/ndevs/5"
	echo "RoCE v2" >"$g/gid_attrs/types/5"
	echo "IB/RoCE v1" >"$g/gid_attrs/types/3"
	run gid cl_srun -N4 -w 'n[1-4]' --ib-test true
	if [ $RC -ne 0 ] &&
		grep -q "spank-ib: n2: mlx5_0 port 1: GID index 5 RoCE v2, the other 3 nodes index 3 RoCE v2" "$OUT/gid"; then
		tap_ok "n2 would use RoCE GID index 5, the others 3: n2 named, the step fails (srun exits $RC)"
	else
		tap_fail "GID index difference" "rc=$RC; $(show gid)"
	fi
	CL_HW_PRESET=roce cluster_hw n2 || tap_fail "n2's tree regenerated" ""

	# n2's own configuration gives its tasks NCCL_IB_HCA of their own rail
	# (nccl_hca=task); the others list the node's rails (nccl_hca=node)
	for i in 1 2 3 4; do
		d=$CL_DIR/nodes/n$i
		echo "nccl_hca=$([ $i = 2 ] && echo task || echo node)" >"$d/spank_ib.conf"
		chmod 0644 "$d/spank_ib.conf"
	done
	plug "config=$CL_DIR/nodes/%n/spank_ib.conf"
	run hca cl_srun -N4 -w 'n[1-4]' --ntasks-per-node=2 --ib-test --ib-env=on true
	if [ $RC -ne 0 ] && [ "$(grep -c "NCCL_IB_HCA" "$OUT/hca")" -eq 1 ] &&
		grep -q "spank-ib: n2: NCCL_IB_HCA .*, the other 3 nodes " "$OUT/hca"; then
		tap_ok "n2's tasks would see another NCCL_IB_HCA: n2 named once, the step fails (srun exits $RC)"
	else
		tap_fail "NCCL_IB_HCA differs on one node" "rc=$RC; $(show hca)"
	fi

	# A job's later steps place on the verdict of its first (cache_ttl=) and
	# read only what the placement and the fingerprint need (hca.h,
	# IBP_INVENTORY_PLACEMENT): the RoCE GID index and the firmware still there
	plug gid_index=yes
	jid=$(cl_salloc --no-shell -N3 --ntasks-per-node=2 -w n1,n2,n3 2>&1 | grep -Eo '[0-9]+' | head -1)
	gidx() { cl_srun --jobid="$jid" --overlap -N3 --ntasks-per-node=2 "$@" printenv NCCL_IB_GID_INDEX; }
	run gid1 gidx --ib-test --ib-env=on
	rc1=$RC
	run gid2 gidx --ib-test --ib-env=on
	rc2=$RC
	if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(grep -cx 3 "$OUT/gid1")" -eq 6 ] &&
		[ "$(grep -cx 3 "$OUT/gid2")" -eq 6 ]; then
		tap_ok "a later step of the job (cached verdict): every task still gets NCCL_IB_GID_INDEX=3"
	else
		tap_fail "GID index on a cached verdict" "rc=$rc1/$rc2; $(show gid1) $(show gid2)"
	fi
	echo 28.41.1000 >"$CL_DIR/nodes/n2/root/sys/class/infiniband/mlx5_0/fw_ver"
	run gid3 gidx --ib-test --ib-env=on
	if [ $RC -eq 0 ] && grep -q "n2: mlx5_0 port 1: firmware 28.41.1000, the other 2 nodes" "$OUT/gid3"; then
		tap_ok "a later step of the job: n2's other firmware is still named"
	else
		tap_fail "firmware on a cached verdict" "rc=$RC; $(show gid3)"
	fi
	[ -n "$jid" ] && cl_scancel "$jid" 2>/dev/null
	plug
else
	tap_fail "RoCE trees generated" "$(tail -3 "$CL_LOG"/mksysfs.n*.out)"
fi
tap_done
