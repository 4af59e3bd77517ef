#!/usr/bin/env bash
# test_spank_rdmatest.sh: srun -N4 --ib-test in the project's Slurm cluster
# (tests/integration/lib/cluster.sh), socket transport, munge-authenticated
# through the cluster's private munged: healthy, then with one node cut off
# by an nftables rule in that node's own network namespace that drops only
# the test's TCP ports (test_ports=, default 230-299), so Slurm itself still
# reaches it; with n2 on another spank-ib build (its protocol version the
# one before this); and 16 overlapping steps of one job at the default
# latency and bandwidth limits (contention is not a slow link), the job's
# share of the test ports raised to 16.  The test runs in the build's ibprep (test_helper=),
# dropped to the job's user.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "srun --ib-test in a Slurm cluster"
cluster_start_or_done 4
cluster_hw_or_done "srun --ib-test in a Slurm cluster"
cluster_suite_out

HELPER=$(cluster_test_helper)
# The round-trip floor is not under test here: a loaded machine's loopback
# takes more than the default 1 ms (as test_spank_fabric.sh and
# test_spank_consistency.sh set it).
plug() {
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
		test_transport=socket test_timeout=4 test_max_lat_us=200000 "test_helper=$HELPER" \
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

# Contention is not a slow link (issue 28): 16 overlapping 3-node steps of
# one allocation, at the default latency and bandwidth limits, on nodes that
# share this machine's cores.  A miss is measured again and judged on the
# best figures; a node too busy to judge says rdmatest_busy and blames
# nobody.  Every step passes, within the job's default share of a node's
# test ports (test_ports_per_job=16; test_spank_ports.sh goes past it).
plug_default() {
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
		test_transport=socket test_timeout=4 "test_helper=$HELPER" \
		"munge_socket=$CL_DIR/munge/munge.sock")"
}
plug_default
jid=$(cl_salloc --no-shell -N3 -w n1,n2,n3 2>&1 | grep -Eo '[0-9]+' | head -1)
pids=()
for k in $(seq 1 16); do
	cl_srun --jobid="$jid" --overlap -N3 --ib-test true >"$OUT/busy$k" 2>&1 &
	pids+=($!)
done
failed=""
for k in $(seq 1 16); do
	wait "${pids[$((k - 1))]}" || failed+=" $k"
done
cl_scancel "$jid" 2>/dev/null
if [ -n "$jid" ] && [ -z "$failed" ]; then
	tap_ok "16 overlapping srun -N3 --ib-test steps at the default latency and bandwidth limits all pass"
else
	tap_fail "16 overlapping srun -N3 --ib-test steps all pass" \
		"job '$jid', failed:$failed; $(show "busy${failed%% *}" 2>/dev/null; show "busy${failed##* }" 2>/dev/null)"
fi
plug

# n2 runs another spank-ib build, as during a rolling upgrade: its test
# helper (n2's own config=, test_helper=) is this build's ibprep linked with
# a one-line ibp_oob_wire_version() that says the protocol version before
# this one (the link-time seam of include/ibprep/oob.h; nothing a job can
# set).  The step runs; n2's three peers warn that n2 answers with the old
# version, n2 warns that they answer with this one; nobody is blamed or
# drained.  Only the header's version differs from a real old build's
# frames: a frame of another version is refused at its 12 bytes, which
# every version keeps, before its layout is read (test_rdmatest_plan.c
# sends the acceptor a real protocol-17 HELLO, 17's fixed 688 bytes).
other_build() {
	local cur old vdir=$CL_DIR/otherbuild
	cur=$(awk '$1 == "#define" && $2 == "IBP_OOB_VERSION" { print $3 }' include/ibprep/oob.h)
	old=$((cur - 1))
	if [ -n "$CL_DAEMON_PREFIX" ]; then
		tap_skip "another build on n2" "the nodes run the chroot's /usr/bin/ibprep; the variant helper is linked on the host"
		return
	fi
	mkdir -p "$vdir" && chmod 0755 "$vdir"
	printf 'unsigned ibp_oob_wire_version(void);
unsigned ibp_oob_wire_version(void) { return %u; }
' "$old" >"$vdir/v.c"
	if ! ${CC:-cc} -O2 -o "$vdir/ibprep" "$vdir/v.c" build/obj/helpers/ibprep*.o build/libibprep.a \
		$(pkg-config --libs hwloc libibverbs numa libsodium 2>/dev/null) -lmunge -lm -lpthread 2>"$OUT/otherbuild.cc"; then
		tap_fail "another build on n2: link the variant helper" "$(head -5 "$OUT/otherbuild.cc")"
		return
	fi
	chmod 0755 "$vdir/ibprep"
	for i in 1 2 3 4; do
		if [ $i = 2 ]; then echo "test_helper=$vdir/ibprep"; else echo "# this build's helper"; fi >"$CL_DIR/nodes/n$i/spank_ib.conf"
		chmod 0644 "$CL_DIR/nodes/n$i/spank_ib.conf"
	done
	plug drain=yes "config=$CL_DIR/nodes/%n/spank_ib.conf" # a drain would be the admin's
	run otherbuild cl_srun -N4 --ib-test --ib-report true
	plug
	local said=0 miss="" states
	for n in n1 n3 n4; do
		# a node's finding about another says so in its text: "n1: about n2: ..."
		has otherbuild "spank-ib: warning: $n: about n2: answers with cross-node test protocol $old, $n speaks $cur" && said=$((said + 1)) || miss+=" $n"
		has otherbuild "spank-ib: warning: n2: about $n: answers with cross-node test protocol $cur, n2 speaks $old" || miss+=" n2-about-$n"
	done
	if [ $RC -eq 0 ] && [ $said -eq 3 ] && [ -z "$miss" ] && has otherbuild "cross-node test: warn with 4 nodes"; then
		tap_ok "another build on n2: the step runs, n1, n3, n4 name n2 with protocol $old against $cur and n2 names each of them"
	else
		tap_fail "another build on n2: named by $said of 3, missing:$miss" "rc=$RC; $(show otherbuild)"
	fi
	states=$(for n in n1 n2 n3 n4; do cluster_node_state "$n"; done | tr '\n' ' ')
	if ! grep -q "failing the step\|rdma test\|failed authentication\|draining" "$OUT/otherbuild" &&
		[[ "$states" != *DRAIN* ]]; then
		tap_ok "another build on n2 (drain=yes): nobody blamed, no failure, no node drained ($states)"
	else
		tap_fail "another build on n2: blamed, failed or drained" "states: $states; $(show otherbuild)"
	fi
}
other_build

# n3 drops the test's ports only, in its own namespace: Slurm still reaches it.
if ! why=$(cluster_cut n3); then
	tap_skip "one node cut off" "$why"
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
cluster_uncut n3
run again cl_srun -N4 --ib-test true
if [ $RC -eq 0 ]; then tap_ok "with the rule removed the test passes again"; else tap_fail "test passes again" "$(show again)"; fi
tap_done
