#!/usr/bin/env bash
# test_spank_rdmatest.sh: srun -N4 --ib-test in the project's Slurm cluster
# (tests/integration/lib/cluster.sh), socket transport, munge-authenticated
# through the cluster's private munged: healthy, then with one node cut off
# by an nftables rule in that node's own network namespace that drops only
# the test's TCP ports (test_ports=, default 230-299), so Slurm itself still
# reaches it.  The test runs in the build's ibprep (test_helper=), dropped
# to the job's user.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "srun --ib-test in a Slurm cluster"
cluster_start_or_done 4
cluster_hw_or_done "srun --ib-test in a Slurm cluster"
cluster_suite_out

HELPER=$(cluster_test_helper)
plug() {
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
		test_transport=socket test_timeout=4 "test_helper=$HELPER" \
		"munge_socket=$CL_DIR/munge/munge.sock" "$@")"
}
plug


t0=$(date +%s%N)
run healthy cl_srun -N4 --ib-test --ib-report true
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $RC -eq 0 ] && grep -q "cross-node test: pass with 4 nodes" "$OUT/healthy"; then
	tap_ok "srun -N4 --ib-test: every node passes ($ms ms for the whole step)"
else
	tap_fail "srun -N4 --ib-test healthy" "rc=$RC; $(show healthy)"
fi

if ! command -v nft >/dev/null; then
	tap_skip "one node cut off" "nft not installed (contrib/install-deps.sh)"
	tap_done
	exit
fi
# n3 drops the test's ports only, in its own namespace: Slurm still reaches it.
if ! ip netns exec "$CL_TAG-n3" nft -f - <<'EOF' 2>"$OUT/nft"; then
table inet ibp_cut {
	chain input { type filter hook input priority 0; tcp dport 230-299 drop; }
	chain output { type filter hook output priority 0; tcp dport 230-299 drop; }
}
EOF
	tap_skip "one node cut off" "nftables does not work here: $(head -2 "$OUT/nft")"
	tap_done
	exit
fi
t0=$(date +%s%N)
run cut cl_srun -N4 --ib-test true
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $RC -ne 0 ] && grep -q "spank-ib: .*n3" "$OUT/cut" && grep -q "failing the step: the cross-node test failed" "$OUT/cut"; then
	tap_ok "n3 cut off: srun exits $RC, n3 is named ($ms ms)"
else
	tap_fail "n3 cut off fails the step naming n3" "rc=$RC; $(show cut)"
fi
if [ "$ms" -lt 15000 ]; then tap_ok "the failing test is bounded by test_timeout (4 s): $ms ms"; else tap_fail "bounded" "$ms ms"; fi
if ! [[ "$(cluster_node_state n3)" == *DRAIN* ]]; then tap_ok "a failed cross-node test never drains"; else tap_fail "no drain from --ib-test" "$(cluster_node_state n3)"; fi
run warn cl_srun -N4 --ib-test --ib-check=warn true
if [ $RC -eq 0 ] && grep -q "n3" "$OUT/warn"; then tap_ok "--ib-check=warn: the test's findings are reported, the step runs"; else tap_fail "--ib-test with warn" "rc=$RC; $(show warn)"; fi
# (e) enforce=test: neither --ib-check=warn nor SPANK_IB_CHECK=warn lowers it.
plug enforce=test
run enf_warn cl_srun -N4 --ib-check=warn true
rc1=$RC
run enf_env $CL_CLIENT_PREFIX env SPANK_IB_CHECK=warn SLURM_CONF="$CL_CONF" timeout 60 "$SLURM_BIN/srun" -N4 true
if [ $rc1 -ne 0 ] && [ $RC -ne 0 ] && grep -q "failing the step: the cross-node test failed" "$OUT/enf_warn" &&
	grep -q "failing the step: the cross-node test failed" "$OUT/enf_env"; then
	tap_ok "enforce=test: --ib-check=warn and SPANK_IB_CHECK=warn still fail the step (exit $rc1, $RC)"
else
	tap_fail "enforce=test cannot be lowered" "rc=$rc1/$RC; $(show enf_warn; show enf_env)"
fi
plug
ip netns exec "$CL_TAG-n3" nft delete table inet ibp_cut 2>/dev/null
run again cl_srun -N4 --ib-test true
if [ $RC -eq 0 ]; then tap_ok "with the rule removed the test passes again"; else tap_fail "test passes again" "$(show again)"; fi
tap_done
