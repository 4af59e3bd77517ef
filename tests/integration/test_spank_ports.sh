#!/usr/bin/env bash
# test_spank_ports.sh: one job's owner cannot take the node's test ports from
# other jobs, in the project's Slurm cluster (3 nodes), with two real local
# users created for the test (A the greedy one, B the other job's owner),
# socket transport, test_ports= the default 230-299 (70 ports).
#
#   (a) A runs 70 overlapping single-node --ib-test steps on n1 in one
#       allocation and tries to stop every test child of theirs it can
#       catch (a process of A polling /proc, SIGSTOP on a child of A's uid;
#       the children run as the test's user, so it catches none): B's
#       `srun -N3 --ib-test true` passes on every node, and A's steps hold
#       none of n1's test ports (a single-node step tests no link).
#   (b) A runs 70 overlapping 2-node --ib-test steps on n1,n2 (and tries to
#       stop their children as in (a)), which would hold all 70 ports of
#       both nodes (main's plugin before the share: B's step then fails,
#       "cannot listen"):
#       A's job holds at most its share on a node, the steps over it fail
#       saying why (rdmatest_ports_per_job), and B's 3-node step passes
#       meanwhile.  The share is set to 4 here (default 16): this machine
#       starts steps too slowly for 70 of them to hold 16 ports at once.
#
# The users are removed and every process the test started is ended by its
# PID at the end.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh
. tests/integration/lib/local_users.sh

NAME="a job's share of the test ports"
local_users_cluster_or_done "$NAME" 3 ss
cluster_suite_out 1777

ALLOCS=()
cancel_allocs() {
	local p
	for p in "${ALLOCS[@]}"; do cl_scancel "$p" >/dev/null 2>&1; done
	ALLOCS=()
}
local_users_trap cancel_allocs
UA=ibpa$$
UB=ibpb$$
local_user_add_or_done "$NAME" "$UA" A
local_user_add_or_done "$NAME" "$UB" B
mkdir -p "$CL_DIR/st"
chmod 1777 "$CL_DIR/st"

plug() {
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
		test_transport=socket test_timeout=30 "test_helper=$(cluster_test_helper)" \
		"munge_socket=$CL_DIR/munge/munge.sock" "$@")"
}
# as UID CMD...: CMD as that user, with the cluster's slurm.conf
as() {
	local uid=$1
	shift
	$CL_CLIENT_PREFIX setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		env SLURM_CONF="$CL_CONF" "$@"
}
# A's allocation on NODES (N nodes): its job id in ALLOC.
alloc() {
	ALLOC=$(as "$A" timeout 60 "$SLURM_BIN/salloc" --no-shell -N"$1" -w "$2" -n"$1" 2>&1 |
		grep -Eo 'allocation [0-9]+' | grep -Eo '[0-9]+' | head -1)
	[ -n "$ALLOC" ] && ALLOCS+=("$ALLOC")
}
# The test ports (230-299) listening in node X's namespace.
held() {
	ip netns exec "$CL_TAG-$1" ss -Htln 2>/dev/null |
		awk '{n = split($4, a, ":"); p = a[n] + 0} p >= 230 && p <= 299 {c++} END {print c + 0}'
}
stopper_start() {
	STATUS=$CL_DIR/st/stopper
	rm -f "$STATUS"
	# on the host, by A's uid (a release chroot has no python3): it sees every process
	setpriv --reuid="$A" --regid="$A" --clear-groups \
		/usr/bin/python3 "$PWD/tests/integration/lib/hostile.py" stopper "$STATUS" "$A" \
		>"$CL_LOG/stopper.out" 2>&1 </dev/null &
	STOPPER=$!
	FIXTURE_PIDS+=("$STOPPER")
	for t in $(seq 1 100); do [ -s "$STATUS" ] && return 0; sleep 0.05; done
	return 1
}
stop() {
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# B's step: passes on every node, nobody blamed
b_step() {
	run "$1" as "$B" timeout 90 "$SLURM_BIN/srun" -N3 --ib-test --ib-report true
	[ "$RC" -eq 0 ] || cl_sinfo -N -o "%N %T %E" >>"$OUT/$1" 2>&1
	[ "$RC" -eq 0 ] && has "$1" "n1: cross-node test: pass with 3 nodes" &&
		has "$1" "n2: cross-node test: pass with 3 nodes" && has "$1" "n3: cross-node test: pass with 3 nodes"
}

# ---- (a) 70 single-node steps, A trying to stop their children ----
plug
alloc 1 n1
if [ -z "$ALLOC" ] || ! stopper_start; then
	tap_fail "(a) A's allocation and stopper" "alloc '$ALLOC'; $(tail -3 "$CL_LOG/stopper.out" 2>/dev/null)"
else
	steps=()
	for i in $(seq 1 70); do
		as "$A" timeout 120 "$SLURM_BIN/srun" --jobid="$ALLOC" --overlap -n1 --ib-test true \
			>"$OUT/a.$i" 2>&1 &
		steps+=($!)
		FIXTURE_PIDS+=($!)
	done
	# while A's steps start (bounded): n1's test ports, sampled
	h1=0
	for t in $(seq 1 50); do
		h=$(held n1)
		[ "$h" -gt "$h1" ] && h1=$h
		sleep 0.1
	done
	stopped=$(awk '{print $3}' "$STATUS")
	if b_step b_a; then b_ok=1; else b_ok=0; fi
	h1b=$(held n1)
	stop "$STOPPER"
	for p in "${steps[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${steps[@]}"; do wait "$p" 2>/dev/null; done
	if [ "$b_ok" = 1 ] && [ "$h1" -eq 0 ] && [ "$h1b" -eq 0 ]; then
		tap_ok "(a) 70 single-node steps of $UA on n1 ($stopped of its processes stopped): no test port held; $UB's srun -N3 --ib-test passes on every node"
	else
		tap_fail "(a) 70 single-node steps" "stopped ${stopped:-?}, n1's test ports held $h1 then $h1b; B's step: rc=$RC; $(show b_a)"
	fi
	cl_scancel "$ALLOC" >/dev/null 2>&1
	cluster_wait_idle 60 >/dev/null 2>&1
fi

# ---- (b) 70 overlapping two-node steps: the job's share ----
plug test_ports_per_job=4
alloc 2 n1,n2
if [ -z "$ALLOC" ] || ! stopper_start; then
	tap_fail "(b) A's allocation and stopper" "alloc '$ALLOC'; $(tail -3 "$CL_LOG/stopper.out" 2>/dev/null)"
else
	steps=()
	for i in $(seq 1 70); do
		as "$A" timeout 120 "$SLURM_BIN/srun" --jobid="$ALLOC" --overlap -N2 -n2 --ib-test true \
			>"$OUT/b.$i" 2>&1 &
		steps+=($!)
		FIXTURE_PIDS+=($!)
	done
	# until 50 steps over the share have failed, or every step is over: how
	# many go over depends on how fast the 70 start against how fast the
	# holders' tests end (A cannot stop them), not on the cap
	over=0 maxh=0
	for t in $(seq 1 600); do
		over=$(grep -l "already holds 4 of this node's test ports" "$OUT"/b.* 2>/dev/null | wc -l)
		for x in n1 n2; do h=$(held "$x"); [ "$h" -gt "$maxh" ] && maxh=$h; done
		[ "$over" -ge 50 ] && break
		alive=0
		for p in "${steps[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
		[ "$alive" -eq 0 ] && break
		sleep 0.1
	done
	stopped=$(awk '{print $3}' "$STATUS")
	if b_step b_b; then b_ok=1; else b_ok=0; fi
	for x in n1 n2; do h=$(held "$x"); [ "$h" -gt "$maxh" ] && maxh=$h; done
	stop "$STOPPER"
	for p in "${steps[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${steps[@]}"; do wait "$p" 2>/dev/null; done
	if [ "$b_ok" = 1 ] && [ "$over" -ge 1 ] && [ "$maxh" -le 4 ] && [ "$maxh" -ge 1 ]; then
		tap_ok "(b) 70 overlapping 2-node steps of one job ($stopped of their children stopped) hold at most $maxh test ports on a node (test_ports_per_job=4), $over over the share fail saying why; $UB's 3-node step passes"
	else
		tap_fail "(b) the job's share" "over the share: $over, most ports held on a node: $maxh; B: rc=$RC; $(show b_b); $(cat "$OUT"/b.* | grep spank-ib | sort | uniq -c | sort -rn | head -5)"
	fi
	grep -h -m1 "already holds" "$OUT"/b.* | head -1 | sed 's/^/# /'
	cl_scancel "$ALLOC" >/dev/null 2>&1
fi

tap_done
