#!/usr/bin/env bash
# test_spank_rails.sh: every rail of a step, in the project's Slurm cluster
# with per-rail networks (tests/integration/lib/cluster.sh, CL_RAILS=1):
# three simulated DGX-H100 nodes of 8 rails, each HCA's IPoIB netdev on a
# network of its own rail (a bridge per rail in the harness's own namespace,
# nothing routed between rails), the socket transport bound to each rail's
# netdev.  The default --ib-test:
#   * records links on all 8 rails and says the rails do not reach each
#     other (NCCL_CROSS_NIC=0, a note);
#   * with n2's mlx5_4 netdev down, fails the step naming n2 and mlx5_4,
#     and no other node or device;
#   * with the cables of n2's mlx5_3 and mlx5_4 swapped (each netdev keeps
#     its address, on the other rail's network), names the two rails of n2
#     as crossed, and nothing else;
#   * with their addresses swapped (each netdev on its own rail's wire, with
#     the other rail's address: the links still pass on these switched
#     networks), names the two rails of n2 as crossed by their addresses, a
#     node's warning in each node's slurmd log: the step runs.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "every rail in a Slurm cluster"
CL_RAILS=1 cluster_start_or_done 3
cluster_hw_or_done "every rail in a Slurm cluster"
cluster_suite_out

LOG=$CL_DIR/results.log
cluster_plugstack "$(cluster_spank_line min_memlock=0 test_transport=socket test_timeout=4 \
	test_max_lat_us=200000 "test_helper=$(cluster_test_helper)" \
	"munge_socket=$CL_DIR/munge/munge.sock" "results_log=$LOG")"

# The spank-ib lines that say something about the test (not slurmstepd's own).
said() { grep "spank-ib: " "$OUT/$1" | grep -v "failing the step\|task_init\|Failed to invoke"; }

run healthy cl_srun -N3 --ib-test --ib-report true
rails=$(grep -o '"ar":[0-9]*' "$LOG" 2>/dev/null | sort -u | wc -l)
recs=$(grep -c '"ok":true' "$LOG" 2>/dev/null)
if [ $RC -eq 0 ] && [ "$rails" -eq 8 ] && [ "$recs" -ge 8 ] && has healthy "cross-node test: pass with 3 nodes"; then
	tap_ok "srun -N3 --ib-test: links recorded on all 8 rails ($recs passing records)"
else
	tap_fail "srun -N3 --ib-test records every rail" "rc=$RC rails=$rails records=$recs; $(show healthy)"
fi
# rail 0 measures a rate; the datagram rails beyond it none: null, never a slow figure
rate0=$(grep '"ok":true' "$LOG" 2>/dev/null | grep '"ar":0,' | grep -c '"gbps":[0-9]')
norate=$(grep '"ok":true' "$LOG" 2>/dev/null | grep -v '"ar":0,' | grep -c '"gbps":null')
others=$(grep '"ok":true' "$LOG" 2>/dev/null | grep -vc '"ar":0,')
if [ "$rate0" -ge 1 ] && [ "$norate" -ge 7 ] && [ "$norate" -eq "$others" ]; then
	tap_ok "results log: rail 0's records carry a rate, the other rails' \"gbps\":null ($norate)"
else
	tap_fail "results log rates" "rail 0 with a rate: $rate0, others: $others, null: $norate; $(grep -m3 '"ar":1,' "$LOG")"
fi
if has healthy "the rails do not reach each other" && has healthy "NCCL_CROSS_NIC=0" &&
	! has healthy "crossed"; then
	tap_ok "isolated rails: the note says NCCL_CROSS_NIC=0"
else
	tap_fail "the NCCL_CROSS_NIC note" "$(show healthy)"
fi

# One rail's netdev down on n2: n2 and mlx5_4, nobody and nothing else.
cluster_rail_link n2 mlx5_4 down
run down cl_srun -N3 --ib-test true
cluster_rail_link n2 mlx5_4 up
# n1 and n3 say it as their own finding about n2 (the plugin: a node's word is about itself)
others=$(said down | grep -v "spank-ib: n[13]: about n2 mlx5_4 port 1: \|spank-ib: n2: mlx5_4 port 1: ")
if [ $RC -ne 0 ] && has down "n2: mlx5_4 port 1: rdma test" && [ -z "$others" ]; then
	tap_ok "n2's mlx5_4 netdev down: the step fails naming n2 and mlx5_4 only ($(said down | wc -l) lines)"
else
	tap_fail "netdev down names n2 mlx5_4 and nothing else" "rc=$RC; other lines: $others; $(show down)"
fi

# n2's mlx5_3 and mlx5_4 on each other's rail networks.
cluster_rail_swap n2 mlx5_3 mlx5_4
run swap cl_srun -N3 --ib-test true
cluster_rail_restore
n_said=$(said swap | grep -cF -e "spank-ib: n2: mlx5_3 port 1: rails 1 (mlx5_3) and 2 (mlx5_4) look crossed" \
	-e ": about n2 mlx5_3 port 1: rails 1 (mlx5_3) and 2 (mlx5_4) look crossed")
others=$(said swap | grep -v "look crossed")
if [ $RC -ne 0 ] && [ "$n_said" -eq 3 ] && has swap "swap the cables of mlx5_3 and mlx5_4" && [ -z "$others" ]; then
	tap_ok "n2's mlx5_3 and mlx5_4 crossed: every node names the two rails of n2, nothing else"
else
	tap_fail "crossed rails named" "rc=$RC, said by $n_said of 3; other lines: $others; $(show swap)"
fi

# n2's mlx5_3 and mlx5_4 with each other's addresses: a node's warning, the
# admin's to fix, in each node's slurmd log (spank_ib(8), WHO SEES WHAT).
cluster_rail_swap_addrs n2 mlx5_3 mlx5_4
declare -A mk
for n in n1 n2 n3; do mk[$n]=$(wc -l <"$CL_LOG/slurmd.$n.log"); done
run addrs cl_srun -N3 --ib-test true
cluster_rail_restore
n_said=0
for n in n1 n2 n3; do
	tail -n +"$((mk[$n] + 1))" "$CL_LOG/slurmd.$n.log" >"$OUT/addrs.log.$n"
	# n2 of its own rails, n1 and n3 about n2's (their findings are their own)
	grep -qF -e "warning: n2: mlx5_3 port 1: rails 1 (mlx5_3) and 2 (mlx5_4) look crossed by their addresses" \
		-e "warning: $n: about n2 mlx5_3 port 1: rails 1 (mlx5_3) and 2 (mlx5_4) look crossed by their addresses" "$OUT/addrs.log.$n" &&
		grep -q "swap the addresses (or the cables) of mlx5_3 and mlx5_4" "$OUT/addrs.log.$n" &&
		n_said=$((n_said + 1))
done
others=$(said addrs | grep -v "spank-ib: n1: cross-node test: pass with 3 nodes")
if [ $RC -eq 0 ] && [ "$n_said" -eq 3 ] && [ -z "$others" ]; then
	tap_ok "n2's mlx5_3 and mlx5_4 addresses swapped: every node's slurmd log names the two rails of n2 (a warning, the links pass), the user sees the test's pass line only"
else
	tap_fail "rails crossed by their addresses named" "rc=$RC, said by $n_said of 3; in srun's output: $others; $(grep -h spank-ib "$OUT"/addrs.log.n* | head -10)"
fi

run again cl_srun -N3 --ib-test true
if [ $RC -eq 0 ]; then tap_ok "rails restored: the test passes again"; else tap_fail "passes again" "$(show again)"; fi
tap_done
