#!/usr/bin/env bash
# test_spank_output.sh: who sees what (spank_ib(8), WHO SEES WHAT), in the
# project's Slurm cluster (tests/integration/lib/cluster.sh) with the real
# H100 capture (../shared/fixtures/real/sysfs, or $IBP_REAL_FIXTURES) as
# every node's /sys/class/infiniband and no topology= (the default setup):
# its counters are over the warn limits and saturated, and this machine's
# live topology has no HCA, so every node has warnings and no failure.
#   - a healthy step prints at most one line to the user, never "error:";
#     the node's warnings are in slurmd's log (node_warnings=user: in srun's
#     output too, still without "error:")
#   - with n2 broken (mlx5_4 port 1 down) the failing line names n2, the
#     device, the port and the fix
#   - --ib-check=warn and --ib-report show the user what they asked for
#   - n3's slurm.conf NodeHostname is not its host name: drain=yes on a
#     fault there says "not draining: no NodeName" in slurmd's log and
#     leaves the node up, the step still failing
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

REAL=${IBP_REAL_FIXTURES:-../shared/fixtures/real}
CAPTURE=$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband

cluster_prereqs_or_done "who sees what"
if [ ! -d "$CAPTURE" ]; then
	tap_skip "who sees what" "$CAPTURE absent (set IBP_REAL_FIXTURES)"
	tap_done
	exit
fi
CL_NODE_HOSTNAMES="n3=n3-mgmt"
cluster_start_or_done 3
cluster_suite_out

# real_root NODE: the capture as NODE's sysfs root (a copy: a fault edits it)
real_root() {
	local r=$CL_DIR/nodes/$1/root
	rm -rf "$r"
	mkdir -p "$r/sys/class"
	cp -r "$CAPTURE" "$r/sys/class/infiniband"
	chmod -R u+w "$r"
}
# port_down NODE DEV PORT: that port of NODE's copy without a cable
port_down() {
	local p=$CL_DIR/nodes/$1/root/sys/class/infiniband/$2/ports/$3
	echo "1: DOWN" >"$p/state"
	echo "2: Polling" >"$p/phys_state"
}
for n in $CL_NODES; do real_root "$n"; done

HELPER=$(cluster_test_helper)
plug() {
	cluster_plugstack "required $SPANK_IB_SO sysfs_root=$CL_DIR/nodes/%n/root bind=no \
cache_dir=$CL_DIR/nodes/%n/cache min_memlock=0 test_transport=socket test_timeout=4 \
test_helper=$HELPER munge_socket=$CL_DIR/munge/munge.sock $*"
}
# mark NODE: where NODE's slurmd log is now; since NODE MARK: what came after
mark() { wc -l <"$CL_LOG/slurmd.$1.log"; }
since() { tail -n +"$(($2 + 1))" "$CL_LOG/slurmd.$1.log"; }
# lines NAME: the step's lines in srun's output (not srun's own word that the job waited)
lines() { grep -cvE '^$|^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$' "$OUT/$1"; }

plug
m1=$(mark n1) m2=$(mark n2) m3=$(mark n3)
run healthy cl_srun -N3 --ib-check --ib-test true
if [ $RC -eq 0 ] && [ "$(lines healthy)" -le 1 ] && ! has healthy "error:" &&
	has healthy "spank-ib: n1: cross-node test: pass with 3 nodes"; then
	tap_ok "healthy srun -N3 --ib-check --ib-test: one line, from n1, no 'error:'"
else
	tap_fail "healthy srun -N3 --ib-check --ib-test: at most one line, no 'error:'" "rc=$RC; $(show healthy)"
fi
ok=1
for n in n1 n2 n3; do
	since $n "$(eval echo "\$m${n#n}")" >"$OUT/log.$n"
	grep -q "spank-ib: warning: $n: mlx5_1 port 1: link_downed at least 255" "$OUT/log.$n" || ok=0
	grep -q "spank-ib: warning: $n: no RDMA device in the topology" "$OUT/log.$n" || ok=0
	grep "spank-ib: warning:" "$OUT/log.$n" | grep -q "error:" && ok=0
done
if [ $ok = 1 ]; then
	tap_ok "the node's warnings (saturated counters, no HCA in the topology) are in each node's slurmd log, without 'error:'"
else
	tap_fail "node warnings in slurmd's log" "$(cat "$OUT"/log.n* | grep spank-ib | head -20)"
fi

run check cl_srun -N3 --ib-check true
if [ $RC -eq 0 ] && [ "$(lines check)" -eq 0 ]; then
	tap_ok "healthy srun -N3 --ib-check: nothing at all"
else
	tap_fail "healthy --ib-check is silent" "rc=$RC; $(show check)"
fi
run aff cl_srun -N3 --ib-check --ib-affinity true
if [ $RC -eq 0 ] && [ "$(lines aff)" -eq 0 ]; then
	tap_ok "healthy srun -N3 --ib-check --ib-affinity (the default setup, no topology=): nothing on the user's stderr"
else
	tap_fail "healthy --ib-check --ib-affinity is silent" "rc=$RC; $(show aff)"
fi
plug enforce=check,test
run enforced cl_srun -N3 true
if [ $RC -eq 0 ] && [ "$(lines enforced)" -eq 0 ]; then
	tap_ok "enforce=check,test and no user flag: a healthy step prints nothing (not even the test's line)"
else
	tap_fail "enforced test is silent" "rc=$RC; $(show enforced)"
fi

plug node_warnings=user
run nwu cl_srun -N1 -w n1 --ib-check true
if [ $RC -eq 0 ] && has nwu "spank-ib: warning: n1: mlx5_1 port 1: link_downed at least 255" &&
	! has nwu "error:"; then
	tap_ok "node_warnings=user: the node's warnings in srun's output, without 'error:'"
else
	tap_fail "node_warnings=user" "rc=$RC; $(show nwu)"
fi

plug
run rep cl_srun -N1 -w n1 --ib-report true
if [ $RC -eq 0 ] && has rep "spank-ib: n1: job" && has rep "spank-ib: warn n1: mlx5_1 port 1: link_downed at least 255" &&
	! has rep "error:"; then
	tap_ok "--ib-report: the report lists the node's warnings"
else
	tap_fail "--ib-report lists the findings" "rc=$RC; $(show rep)"
fi

# ---- n2 broken ----
port_down n2 mlx5_4 1
run broken cl_srun -N3 --ib-check --ib-test true
line=$(grep -F "error: spank-ib: n2: mlx5_4 port 1: port state DOWN" "$OUT/broken" | head -1)
if [ $RC -ne 0 ] && [ -n "$line" ] && [[ "$line" == *"expected ACTIVE"*": "* ]] &&
	! grep "spank-ib" "$OUT/broken" | grep -v "n2: " | grep -q "error:"; then
	tap_ok "n2 broken: srun exits $RC, the failing line names n2, mlx5_4, port 1 and the fix"
else
	tap_fail "n2 broken: the failing line" "rc=$RC; $(show broken)"
fi
[ -n "${IBP_SHOW_OUTPUT:-}" ] && sed 's/^/# /' "$OUT/healthy" "$OUT/broken"
run warnmode cl_srun -N1 -w n2 --ib-check=warn true
if [ $RC -eq 0 ] && has warnmode "spank-ib: warning: n2: mlx5_4 port 1: port state DOWN" &&
	! has warnmode "error:"; then
	tap_ok "--ib-check=warn on n2: the fault as a warning, the step runs, no 'error:'"
else
	tap_fail "--ib-check=warn" "rc=$RC; $(show warnmode)"
fi
real_root n2

# ---- no NodeName: drain=yes cannot name the node ----
plug drain=yes
port_down n3 mlx5_4 1
m3=$(mark n3)
run nonode cl_srun -N1 -w n3 --ib-check true
sleep 0.3
st3=$(cluster_node_state n3)
if [ $RC -ne 0 ] && has nonode "spank-ib: n3: mlx5_4 port 1: port state DOWN" && ! has nonode "draining" &&
	[[ "$st3" != *DRAIN* ]] &&
	since n3 "$m3" | grep -q "spank-ib: n3: not draining: no NodeName for host n3 in slurm.conf"; then
	tap_ok "drain=yes on a node slurm.conf does not name by its host name: the step fails, n3 stays $st3, slurmd's log says 'not draining: no NodeName'"
else
	tap_fail "no NodeName for the host" "rc=$RC state=$st3; $(show nonode); $(since n3 "$m3" | grep spank-ib)"
fi
cluster_resume_all >/dev/null
real_root n3

tap_done
