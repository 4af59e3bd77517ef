#!/usr/bin/env bash
# test_spank_linkwatch.sh: link events during a step (spank/ib_linkwatch.c)
# in a real Slurm cluster (tests/integration/lib/cluster.sh), two healthy
# DGX-H100-like simulated nodes whose sysfs trees the test changes while a
# step runs:
#   * a `sleep 3` step during which n2's mlx5_3 port 1 goes down (link_downed
#     +2, state DOWN): the step end names n2, mlx5_3 and port 1 in slurmd's
#     log and the user's --ib-report file, and drains n2 (drain=yes) only;
#   * a step during which only port_xmit_wait grows: an informational line
#     with the fraction of the step's time, no drain;
#   * no --ib-* flag: nothing is read or logged at the step end;
#   * the report's step-end section is written as the job's user: a path the
#     user cannot write is not created by root.
# Environment: as test_spank_plugin.sh (SPANK_IB_SO, SLURM_SBIN, ...).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "link events during a step"
# The step-end comparison alone: the watch while the step runs, which would
# act first on the same change, is test_spank_watch.sh's.
BASE_KEYS="min_memlock=4096 watch_interval=0"
cluster_test_user spankiblw
cluster_start_or_done 2
cluster_hw_or_done "link events"
cluster_suite_out 0777
plug() { cluster_plugstack "$(cluster_spank_line $BASE_KEYS "$@")"; }
show() { sed 's/^/    /' "$1" 2>/dev/null | tail -30; }
drained() { [[ "$(cluster_node_state "$1")" == *DRAIN* ]]; }
port() { echo "$CL_DIR/nodes/$1/root/sys/class/infiniband/$2/ports/$3"; }
# The step-end lines of node N's slurmd log written after line FROM.
endlines() { tail -n +"$2" "$CL_LOG/slurmd.$1.log" | grep 'step end after' || true; }
loglen() { wc -l <"$CL_LOG/slurmd.$1.log"; }
# Waits up to 10 s for a step-end line in node N's log after line FROM.
wait_end() {
	local t
	for t in $(seq 1 100); do
		[ -n "$(endlines "$1" "$2")" ] && return 0
		sleep 0.1
	done
	return 1
}

# ---- a link goes down during the step ----
plug drain=yes
P=$(port n2 mlx5_3 1)
l1=$(($(loglen n1) + 1)) l2=$(($(loglen n2) + 1))
cl_srun -N2 -w n1,n2 --ib-check --ib-report=text:"$OUT/rep.%n" sh -c 'sleep 3' >"$OUT/down" 2>&1 &
spid=$!
# Wait until both nodes ran the step's start (the report file is written in user_init).
for t in $(seq 1 100); do
	[ -s "$OUT/rep.n1" ] && [ -s "$OUT/rep.n2" ] && break
	sleep 0.1
done
echo 2 >"$P/counters/link_downed"
echo "1: DOWN" >"$P/state"
echo "2: Polling" >"$P/phys_state"
wait $spid
rc=$?
wait_end n2 "$l2"
wait_end n1 "$l1"
sleep 0.5
e2=$(endlines n2 "$l2")
e1=$(endlines n1 "$l1")
jobstep=$(echo "$e2" | grep -o 'job [0-9]*\.[0-9]*' | head -1)
if [[ "$e2" == *"spank-ib: n2: job "*"step end after"*"fail mlx5_3 port 1: link went down 2 times during job "*", DOWN now"* ]] &&
	[ "$(echo "$e2" | wc -l)" -eq 1 ]; then
	tap_ok "link down during the step: one line in n2's slurmd log naming n2, mlx5_3, port 1 ($jobstep)"
else
	tap_fail "link down named in slurmd's log" "rc=$rc e2=$e2; $(show "$OUT/down")"
fi
if [[ "$e1" == *"spank-ib: n1: job "*"step end after"*"links steady"* ]]; then
	tap_ok "the healthy node logs its links steady"
else
	tap_fail "n1 steady" "e1=$e1"
fi
r2=$(cluster_node_reason n2)
if drained n2 && ! drained n1 &&
	[[ "$r2" == "spank-ib: mlx5_3 port 1: link went down 2 times during job "*", DOWN now" ]]; then
	tap_ok "drain=yes drains n2 only, reason '$r2'"
else
	tap_fail "drain=yes drains n2" "n1=$(cluster_node_state n1) n2=$(cluster_node_state n2) reason=$r2"
fi
if grep -q "step end after .*: 8 ports watched, fail, node drained" "$OUT/rep.n2" &&
	grep -q "^spank-ib: fail n2: mlx5_3 port 1: link went down 2 times during job" "$OUT/rep.n2" &&
	grep -q "step end after .*, pass$" "$OUT/rep.n1"; then
	tap_ok "--ib-report file: a step-end section on each node, n2's naming the link"
else
	tap_fail "report step-end section" "$(show "$OUT/rep.n2"; show "$OUT/rep.n1")"
fi
cluster_resume_all >/dev/null
cluster_hw n2

# ---- only port_xmit_wait grows: information ----
plug drain=yes
l2=$(($(loglen n2) + 1))
P=$(port n2 mlx5_0 1)
cl_srun -N1 -w n2 --ib-check --ib-report=json:"$OUT/wait.json" sh -c 'sleep 2' >"$OUT/wait" 2>&1 &
spid=$!
for t in $(seq 1 100); do
	[ -s "$OUT/wait.json" ] && break
	sleep 0.1
done
# 100e6 ticks of 4 ns = 0.4 s of a step of about 2 s: about 20%
echo 100000000 >"$P/counters/port_xmit_wait"
wait $spid
rc=$?
wait_end n2 "$l2"
sleep 0.3
e2=$(endlines n2 "$l2")
pct=$(echo "$e2" | grep -o 'waited to send [0-9.]*%' | grep -o '[0-9.]*%')
if [ $rc -eq 0 ] && [[ "$e2" == *"info mlx5_0 port 1: waited to send "*"% of "*" s during job "*"(port_xmit_wait grew by 100000000 ticks of 4 ns)"* ]] &&
	[[ "$e2" != *"fail "* ]] && ! drained n2; then
	tap_ok "port_xmit_wait alone: an informational line with the fraction ($pct), the step passes, no drain"
else
	tap_fail "xmit_wait information" "rc=$rc e2=$e2 state=$(cluster_node_state n2); $(show "$OUT/wait")"
fi
if python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["node"] == "n2" and doc["verdict"] == "pass", doc
end = doc["step_end"]
f = end["findings"]
assert any(x["code"] == "xmit_wait" and x["severity"] == "ok" and x["device"] == "mlx5_0" for x in f), f
assert end["verdict"] == "pass" and end["drained"] is False and end["ports"] == 8
' "$OUT/wait.json" 2>"$OUT/wait.err"; then
	tap_ok "--ib-report=json: still one JSON document, the step end as its \"step_end\" member"
else
	tap_fail "json step_end member" "$(cat "$OUT/wait.err"; show "$OUT/wait.json")"
fi
cluster_hw n2

# ---- not active: nothing at all ----
l2=$(($(loglen n2) + 1))
cl_srun -N1 -w n2 true >"$OUT/none" 2>&1
sleep 0.5
if [ -z "$(endlines n2 "$l2")" ] && ! tail -n +"$l2" "$CL_LOG/slurmd.n2.log" | grep -q spank-ib; then
	tap_ok "no --ib-* flag: no step-end read, no line"
else
	tap_fail "inactive plugin is silent" "$(tail -n +"$l2" "$CL_LOG/slurmd.n2.log" | grep spank-ib)"
fi
plug link_watch=no
l2=$(($(loglen n2) + 1))
cl_srun -N1 -w n2 --ib-check true >"$OUT/nowatch" 2>&1
sleep 0.5
if [ -z "$(endlines n2 "$l2")" ]; then tap_ok "link_watch=no: no step-end line"; else tap_fail "link_watch=no" "$(endlines n2 "$l2")"; fi

# ---- the report is written as the job's user ----
plug
if ! $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1 && $CL_CLIENT_PREFIX useradd -M -s /bin/sh "$TEST_USER" 2>/dev/null; then
	USER_CREATED=1
fi
if $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1; then
	asuser() { (cd /tmp && $CL_CLIENT_PREFIX setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups env SLURM_CONF="$CL_CONF" timeout 60 "$@"); }
	# The user exists where the clients run (a release's chroot in the
	# matrix): chown by its uid there, not by a name the host may not know.
	uid=$($CL_CLIENT_PREFIX id -u "$TEST_USER")
	mkdir -p "$OUT/mine" "$OUT/rootonly"
	chown "$uid" "$OUT/mine"
	chmod 0755 "$OUT/rootonly"
	l1=$(($(loglen n1) + 1))
	asuser "$SLURM_BIN/srun" -N1 -w n1 --ib-report=text:"$OUT/mine/r" true >"$OUT/u1" 2>&1
	wait_end n1 "$l1"
	sleep 0.3
	if [ "$(stat -c %u "$OUT/mine/r" 2>/dev/null)" = "$uid" ] && grep -q "step end after" "$OUT/mine/r"; then
		tap_ok "a non-root user's report gets the step-end section, the file is the user's"
	else
		tap_fail "user's report step end" "owner=$(stat -c %u "$OUT/mine/r" 2>&1); $(show "$OUT/mine/r"; show "$OUT/u1")"
	fi
	l1=$(($(loglen n1) + 1))
	asuser "$SLURM_BIN/srun" -N1 -w n1 --ib-report=text:"$OUT/rootonly/r" true >"$OUT/u2" 2>&1
	wait_end n1 "$l1"
	sleep 0.3
	if [ ! -e "$OUT/rootonly/r" ] &&
		tail -n +"$l1" "$CL_LOG/slurmd.n1.log" | grep -q -- "--ib-report step end: $OUT/rootonly/r: cannot open it as the job's user"; then
		tap_ok "a path the user cannot write: root does not create it at the step end, slurmd's log says why"
	else
		tap_fail "root never writes the user's path" "$(ls -l "$OUT/rootonly"; tail -n +"$l1" "$CL_LOG/slurmd.n1.log" | grep spank-ib)"
	fi
	cleanup_user
else
	tap_skip "report written as the user" "cannot create a user (useradd)"
fi
tap_done
