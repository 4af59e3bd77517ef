#!/usr/bin/env bash
# test_spank_consistency.sh: srun -N4 --ib-test compares what the step's
# nodes bring (helpers/fingerprint.c, carried sealed in the cross-node test's
# summary exchange) in the project's Slurm cluster (tests/integration/lib/
# cluster.sh), four DGX-H100-like simulated nodes, socket transport, munge:
#   * healthy: no consistency line
#   * n3's mlx5_3 runs other firmware: named, a warning, the step runs
#   * n4 lost a rail (mlx5_11 gone from its tree): named, the step fails
#   * two groups of 2 with different firmware: no majority, both groups named once
#   * consistency=firmware:fail turns the firmware difference into a failure
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "consistency across the step"
cluster_start_or_done 4
cluster_hw_or_done "consistency across the step"
cluster_suite_out
HELPER=$(cluster_test_helper)
plug() {
	cluster_plugstack "$(cluster_spank_line min_memlock=0 test_transport=socket test_timeout=4 \
		"test_helper=$HELPER" "munge_socket=$CL_DIR/munge/munge.sock" "$@")"
}
fw() { echo "$2" >"$CL_DIR/nodes/$1/root/sys/class/infiniband/mlx5_3/fw_ver"; }
plug

run healthy cl_srun -N4 --ib-test true
if [ $RC -eq 0 ] && ! grep -q "consistency\|the other 3 nodes\|no majority" "$OUT/healthy"; then
	tap_ok "4 matching nodes: the step passes, no consistency line"
else
	tap_fail "healthy step" "rc=$RC; $(show healthy)"
fi

want=$(cat "$CL_DIR/nodes/n1/root/sys/class/infiniband/mlx5_3/fw_ver")
fw n3 28.41.1000
run fw cl_srun -N4 --ib-test true
n=$(grep -c "firmware 28.41.1000, the other 3 nodes $want" "$OUT/fw")
if [ $RC -eq 0 ] && [ "$n" -eq 1 ] &&
	grep -q "spank-ib: warning: n3: mlx5_3 port 1: firmware 28.41.1000, the other 3 nodes $want" "$OUT/fw"; then
	tap_ok "n3's mlx5_3 firmware differs: one warning naming n3, mlx5_3 and both versions; the step runs"
else
	tap_fail "firmware difference named" "rc=$RC n=$n; $(show fw)"
fi
plug consistency=firmware:fail
run fwfail cl_srun -N4 --ib-test true
if [ $RC -ne 0 ] && grep -q "spank-ib: n3: mlx5_3 port 1: firmware 28.41.1000, the other 3 nodes" "$OUT/fwfail"; then
	tap_ok "consistency=firmware:fail: the same difference fails the step (srun exits $RC)"
else
	tap_fail "consistency=firmware:fail" "rc=$RC; $(show fwfail)"
fi
plug

fw n4 28.41.1000
run tie cl_srun -N4 --ib-test true
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
run rail cl_srun -N4 --ib-test true
if [ $RC -ne 0 ] && grep -q "spank-ib: n4: HCA set 7 rails: mlx5_\[0,3-6,9-10\]:1, the other 3 nodes 8 rails: mlx5_\[0,3-6,9-11\]:1" "$OUT/rail"; then
	tap_ok "n4 lost a rail: the HCA sets differ, n4 named, the step fails (srun exits $RC)"
else
	tap_fail "missing rail" "rc=$RC; $(show rail)"
fi
tap_done
