#!/usr/bin/env bash
# test_spank_fabric.sh: the results log and `ibprep fabric` in the
# project's Slurm cluster (tests/integration/lib/cluster.sh): nine nodes in
# three leaves of three under one spine (a topology.conf), the socket
# transport, munge through the cluster's private munged.
#   1. a healthy srun -N9 --ib-test: the results log (results_log=, one
#      root-owned file per node) records every tested link, from both ends;
#   2. leaf1's uplinks cut: nftables in n1..n3's own namespaces drops the
#      test's ports (the default test_ports=230-299) to and from the other leaves' addresses only (links
#      inside leaf1 and between leaf2 and leaf3 still pass): the step's
#      findings (topology_conf=) name "leaf1 uplinks" (class fabric), not a
#      node; nothing is drained; the log records every link; after a few
#      steps `ibprep fabric` also names "leaf1 uplinks", not a node.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

NAME="results log and ibprep fabric in a Slurm cluster"
IBPREP=${IBPREP:-build/ibprep}
cluster_prereqs_or_done "$NAME"
[ -x "$IBPREP" ] || { tap_fail "ibprep built" "$IBPREP missing: run make"; tap_done; exit; }
# Slurm knows the same tree (topology/tree): slurmd then sets each task's
# SLURM_TOPOLOGY_ADDR (spine.leafN.nK), the source without topology_conf=.
CL_TOPOLOGY_CONF='# three leaves of three nodes under one spine
SwitchName=spine Switches=leaf[1-3]
SwitchName=leaf1 Nodes=n[1-3]
SwitchName=leaf2 Nodes=n[4-6]
SwitchName=leaf3 Nodes=n[7-9]'
CL_EXTRA_CONF="TopologyPlugin=topology/tree"
cluster_start_or_done 9
cluster_hw_or_done "$NAME"
cluster_suite_out
for i in $(seq 1 9); do
	install -d -m 0755 -o root -g root "$CL_DIR/nodes/n$i/log"
done
# topology_conf= reads the file Slurm reads (written by cluster_start)
chmod 0644 "$CL_DIR/topology.conf"

# plug [KEY=VALUE...]: the test's plugstack line, with the socket transport
plug() {
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
		test_transport=socket test_timeout=8 test_max_lat_us=200000 \
		"test_helper=$(cluster_test_helper)" "munge_socket=$CL_DIR/munge/munge.sock" "$@")"
}
plug "results_log=$CL_DIR/nodes/%n/log/links.jsonl" results_log_max=1M \
	"topology_conf=$CL_DIR/topology.conf"

logs() { ls "$CL_DIR"/nodes/n*/log/links.jsonl 2>/dev/null; }

# The records are written from slurm_spank_exit, which slurmstepd runs after
# the tasks' exit has reached srun: srun may return before the last node has
# written.  Wait (bounded) for WANT records before counting.
wait_records() {
	local want=$1 t=0
	while [ "$(cat $(logs) 2>/dev/null | wc -l)" -lt "$want" ] && [ $t -lt 150 ]; do
		sleep 0.2
		t=$((t + 1))
	done
}
# leafN of node nK: the topology above (n1-n3 leaf1, n4-n6 leaf2, n7-n9 leaf3)
leaf_of() { echo $(((${1#n} - 1) / 3 + 1)); }
# names_leaf1_uplinks NAME: the step's findings in $OUT/NAME blame leaf1's
# uplinks, and no node or single link
names_leaf1_uplinks() {
	grep -qE "spank-ib: n[0-9]+: about leaf1 uplinks: rdma test failed on every link between leaf1" "$OUT/$1" &&
		! grep -v "uplinks:" "$OUT/$1" | grep -qE "rdma test [a-z_]+ on (every|its) link"
}
# check_none_drained NAME: a test NAME that no node is drained
check_none_drained() {
	local drained= i
	for i in $(seq 1 9); do
		[[ "$(cluster_node_state "n$i")" == *DRAIN* ]] && drained="$drained n$i"
	done
	if [ -z "$drained" ]; then tap_ok "$1"; else tap_fail "$1" "drained:$drained"; fi
}

run healthy cl_srun -N9 --ib-test --ib-report true
if [ $RC -eq 0 ]; then
	tap_ok "srun -N9 --ib-test passes"
else
	tap_fail "srun -N9 --ib-test healthy" "rc=$RC; $(show healthy)"
fi
# Two rounds over 9 nodes: 18 links on rail 0, each written by both ends.
echo "# records present when srun returned: $(cat $(logs) 2>/dev/null | wc -l) of 36"
wait_records 36
records=$(cat $(logs) 2>/dev/null | wc -l)
distinct=$(cat $(logs) 2>/dev/null | grep -o '"a":"[^"]*","ar":[0-9]*,"ad":"[^"]*","ap":[0-9]*,"b":"[^"]*"' |
	sed 's/"ad":"[^"]*","ap":[0-9]*,//' | sort -u | wc -l)
nlogs=$(logs | wc -l)
if [ "$nlogs" -eq 9 ] && [ "$distinct" -eq 18 ] && [ "$records" -eq 36 ]; then
	tap_ok "the results log records every link from both ends: 18 links, 36 records from 9 nodes"
else
	tap_fail "results log complete" "$nlogs logs, $records records (expected 36), $distinct distinct links; $(head -3 $(logs | head -1) 2>&1)"
fi
# The plan follows the topology: round 1 inside the leaves, round 2 across.
intra1=0 cross2=0 other=0
while read -r round a b; do
	if [ "$(leaf_of "$a")" = "$(leaf_of "$b")" ]; then
		[ "$round" = 1 ] && intra1=$((intra1 + 1)) || other=$((other + 1))
	else
		[ "$round" = 2 ] && cross2=$((cross2 + 1)) || other=$((other + 1))
	fi
done < <(cat $(logs) 2>/dev/null | sed -n 's/.*"round":\([0-9]*\),"a":"\([^"]*\)".*"b":"\([^"]*\)".*/\1 \2 \3/p')
if [ $intra1 -eq 18 ] && [ $cross2 -eq 18 ] && [ $other -eq 0 ]; then
	tap_ok "the plan follows topology_conf=: round 1 inside each leaf, round 2 across leaves"
else
	tap_fail "topology-aware plan" "$intra1 intra-leaf round-1 records, $cross2 cross-leaf round-2, $other other; $(head -2 $(logs | head -1))"
fi
bad=0
for f in $(logs); do
	[ "$(stat -c '%U %a' "$f")" = "root 640" ] || bad=1
done
if [ $bad -eq 0 ] && grep -q '"ok":true,"why":"pass","rtt_us":[0-9.]*,"gbps":' $(logs | head -1); then
	tap_ok "each log is root's, mode 0640, with round trip and bandwidth measured"
else
	tap_fail "log ownership and content" "$(ls -l $(logs) | head -3)"
fi
"$IBPREP" fabric --topology "$CL_DIR/topology.conf" $(logs) >"$OUT/fabric-healthy" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "no part has failures" "$OUT/fabric-healthy"; then
	tap_ok "ibprep fabric on the healthy logs: no suspect (exit 0)"
else
	tap_fail "ibprep fabric healthy" "rc=$rc; $(show fabric-healthy)"
fi

if ! command -v nft >/dev/null; then
	tap_skip "leaf1's uplinks cut" "nft not installed (contrib/install-deps.sh)"
	tap_done
	exit
fi
others="$CL_NET.14, $CL_NET.15, $CL_NET.16, $CL_NET.17, $CL_NET.18, $CL_NET.19"
for i in 1 2 3; do
	if ! ip netns exec "$CL_TAG-n$i" nft -f - <<NFT 2>"$OUT/nft"; then
table inet ibp_leafcut {
	chain input { type filter hook input priority 0; ip saddr { $others } tcp dport 230-299 drop; ip saddr { $others } tcp sport 230-299 drop; }
	chain output { type filter hook output priority 0; ip daddr { $others } tcp dport 230-299 drop; ip daddr { $others } tcp sport 230-299 drop; }
}
NFT
		tap_skip "leaf1's uplinks cut" "nftables does not work here: $(head -2 "$OUT/nft")"
		tap_done
		exit
	fi
done
failed=0
for s in 1 2 3; do
	run "cut$s" cl_srun -N9 --ib-test true
	[ $RC -ne 0 ] && failed=$((failed + 1))
done
if [ $failed -eq 3 ] && grep -q "failing the step: the cross-node test failed" "$OUT/cut1"; then
	tap_ok "leaf1 cut off from the other leaves: three steps fail"
else
	tap_fail "steps fail with leaf1 cut" "$failed of 3 failed; $(show cut1)"
fi
if names_leaf1_uplinks cut1; then
	tap_ok "the step's findings name leaf1's uplinks, and no node"
else
	tap_fail "step findings name leaf1 uplinks, no node" "$(grep spank-ib "$OUT/cut1" | head -20 | sed 's/^/    /')"
fi
check_none_drained "nothing is drained"
echo "# records present when the last srun returned: $(cat $(logs) 2>/dev/null | wc -l) of 144"
wait_records 144
records=$(cat $(logs) | wc -l)
failed_recs=$(cat $(logs) | grep -c '"ok":false')
links=$(cat $(logs) | grep -o '"job":[0-9]*,"step":[0-9]*,.*"a":"[^"]*","ar":[0-9]*,"ad":"[^"]*","ap":[0-9]*,"b":"[^"]*"' |
	sed 's/"by":"[^"]*",//; s/"ad":"[^"]*","ap":[0-9]*,//' | sort -u | wc -l)
if [ "$links" -eq 72 ] && [ "$records" -eq 144 ] && [ "$failed_recs" -gt 0 ]; then # 4 steps x 18 links x 2 ends
	tap_ok "the results log records every link of the failing steps too, from both ends ($links links, $records records, $failed_recs failed)"
else
	tap_fail "records of the failing steps" "$links links (expected 72), $records records, $failed_recs failed"
fi
"$IBPREP" fabric --topology "$CL_DIR/topology.conf" --json $(logs) >"$OUT/fabric.json" 2>&1
rc=$?
# The plugin's outcome names (oob.h's vocabulary) read back as written: every record is read.
echo "# outcomes in the logs:$(cat $(logs) | grep -o '"why":"[^"]*"' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
if grep -q "\"records\": $records," "$OUT/fabric.json" && grep -q '"malformed": 0,' "$OUT/fabric.json" &&
	grep -q "\"links_failed\": [1-9]" "$OUT/fabric.json"; then
	tap_ok "ibprep fabric reads every record the plugin wrote ($records, none malformed)"
else
	tap_fail "ibprep fabric reads the plugin's records" "$(grep -A12 '"input"' "$OUT/fabric.json" | sed 's/^/    /')"
fi
first=$(grep -m1 '"part":' "$OUT/fabric.json")
if [ $rc -eq 1 ] && [[ "$first" == *'"leaf1 uplinks"'* ]] &&
	! grep -A2 '"part"' "$OUT/fabric.json" | grep -q '"kind": "node",' ; then
	tap_ok "ibprep fabric names leaf1's uplinks first, and no node"
else
	tap_fail "ibprep fabric names leaf1 uplinks" "rc=$rc; $(head -60 "$OUT/fabric.json" | sed 's/^/    /')"
fi
# topology_conf= is an admin path: a file others may write is ignored, and said.
chmod 0666 "$CL_DIR/topology.conf"
mk=$(cat "$CL_LOG"/slurmd.n*.log | wc -l)
run writable cl_srun -N9 --ib-test true
chmod 0644 "$CL_DIR/topology.conf"
# the admin's to fix: said in slurmd's log
if [ "$(cat "$CL_LOG"/slurmd.n*.log | wc -l)" -gt "$mk" ] &&
	cat "$CL_LOG"/slurmd.n*.log | grep -q "spank-ib: warning: .*topology_conf=.*not root's or writable by others: ignored" &&
	! grep -q "leaf1 uplinks" "$OUT/writable"; then
	tap_ok "a world-writable topology_conf= is ignored, with a message in slurmd's log"
else
	tap_fail "writable topology_conf ignored" "$(grep spank-ib "$OUT/writable" | head -5)"
fi
"$IBPREP" fabric --topology "$CL_DIR/topology.conf" $(logs) >"$OUT/fabric.txt" 2>&1
sed 's/^/# /' "$OUT/fabric.txt" | head -12

# Without topology_conf=: each node's leaf from SLURM_TOPOLOGY_ADDR (slurmd
# sets it with topology/tree), exchanged in the test's frames; the plan is
# the plain one, the blame still names leaf1's uplinks, and no node.
addr=$(cl_srun -N1 -w n2 printenv SLURM_TOPOLOGY_ADDR 2>/dev/null)
if [ "$addr" != "spine.leaf1.n2" ]; then
	tap_skip "leaf1's uplinks named from SLURM_TOPOLOGY_ADDR" "this Slurm sets SLURM_TOPOLOGY_ADDR=$addr with topology/tree"
	tap_done
	exit
fi
# Leaves learned this way travel over the test's control connections: a
# node learns the leaf of a node it (or a peer) exchanged frames with.  So
# this case cuts leaf1's data path only (the socket transport's data
# connections, ephemeral ports at both ends), as an RDMA fabric fault does
# while the control network still passes; the total cut above leaves each
# side knowing nothing of the other's leaves (docs/topology.md).
for i in 1 2 3; do
	range=$(ip netns exec "$CL_TAG-n$i" cat /proc/sys/net/ipv4/ip_local_port_range | tr -s '\t ' '-')
	if ! ip netns exec "$CL_TAG-n$i" nft -f - <<NFT 2>"$OUT/nft"; then
delete table inet ibp_leafcut
table inet ibp_leafcut {
	chain input { type filter hook input priority 0; ip saddr { $others } tcp sport $range tcp dport $range drop; }
	chain output { type filter hook output priority 0; ip daddr { $others } tcp sport $range tcp dport $range drop; }
}
NFT
		tap_fail "leaf1's data path cut" "$(head -3 "$OUT/nft")"
	fi
done
plug
run addr cl_srun -N9 --ib-test true
if [ $RC -ne 0 ] && names_leaf1_uplinks addr; then
	tap_ok "without topology_conf=, SLURM_TOPOLOGY_ADDR ($addr) names leaf1's uplinks, and no node"
else
	tap_fail "leaf1 uplinks from SLURM_TOPOLOGY_ADDR" "rc=$RC; $(grep spank-ib "$OUT/addr" | head -20 | sed 's/^/    /')"
fi
check_none_drained "nothing is drained (SLURM_TOPOLOGY_ADDR)"
tap_done
