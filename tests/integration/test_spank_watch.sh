#!/usr/bin/env bash
# test_spank_watch.sh: the watch for the life of a step (spank/ib_watch.c,
# spank/watcher/) in a real Slurm cluster of 3 DGX-H100-like simulated nodes
# whose sysfs trees the test changes while steps run:
#   * srun -N3 --ib-check with watch_action=end (the user asking for report
#     cannot lower it): n2's mlx5_3 port 1 goes DOWN mid-step: one line on
#     srun's stderr naming n2, mlx5_3, port 1 and the time, every task gets
#     SIGTERM, srun exits non-zero, n2 drained with that reason, slurmd's log,
#     results_log=, the job's AdminComment, the --ib-report step-end section;
#   * the same with watch_action=report: the same line and drain, the step
#     runs to its end;
#   * a link that flaps (down and back between two reads) with the ending
#     policy: told and drained, the step goes on; the user raising
#     report to end with --ib-watch ends it on a link down;
#   * a watcher that cannot start (a missing watch_helper=): the step
#     passes, srun prints nothing, slurmd's log says why (the admin's);
#   * a step without health checks starts no watcher; the watcher is gone
#     after every step, and when slurmstepd is killed with SIGKILL;
#   * the watcher runs as uid 0 without capabilities: the job's user (a
#     second user the test creates) can neither signal nor read it.
# Nothing asserts a time (bench/bench_watch.sh measures); each wait is
# bounded.  Environment: as test_spank_plugin.sh (SPANK_IB_SO, SLURM_SBIN...).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "the watch while the step runs"
cluster_test_user spankibwt
cluster_start_or_done 3
cluster_hw_or_done "the watch"
cluster_suite_out 0777
BASE_KEYS="cache_dir=$CL_DIR/nodes/%n/cache min_memlock=4096 results_log=$CL_DIR/results/%n.log"
mkdir -p "$CL_DIR/results"
chmod 0755 "$CL_DIR/results"
plug() { cluster_plugstack "$(cluster_spank_line $BASE_KEYS "$@")"; }
drained() { [[ "$(cluster_node_state "$1")" == *DRAIN* ]]; }
port() { echo "$CL_DIR/nodes/$1/root/sys/class/infiniband/$2/ports/$3"; }
down() { # NODE DEV: the port goes down the way a cable pull shows in sysfs
	local p
	p=$(port "$1" "$2" 1)
	echo "1: DOWN" >"$p/state"
	echo "2: Polling" >"$p/phys_state"
	echo $(($(cat "$p/counters/link_downed") + 1)) >"$p/counters/link_downed"
}

# Waits (at most 20 s) until every task of the step has started and each
# node's watcher took its first read (it then waits in poll(2), syscall 7).
wait_started() { # NTASKS JOB NODE...
	local n=$1 job=$2 i
	shift 2
	for i in $(seq 1 200); do
		[ "$(ls "$OUT"/started.* 2>/dev/null | wc -l)" -ge "$n" ] &&
			cluster_watchers_ready "$job" "$@" && return 0
		sleep 0.1
	done
	return 1
}
wait_gone() { # PID...: at most 10 s
	local i p alive
	for i in $(seq 1 100); do
		alive=0
		for p in "$@"; do [ -d "/proc/$p" ] && alive=1; done
		[ "$alive" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
job_of() { # the job id in a --ib-report file of $OUT
	sed -n 's/.*job \([0-9]*\) step [0-9]*: step end.*/\1/p' "$1" | head -1
}
# The task: says it started, waits $1 s, and records the signal it gets.
# It waits in short sleeps in the foreground, never `sleep & wait`: Slurm
# signals the step's processes one by one, and a shell whose background
# sleep died first ended with it before its own SIGTERM came, its trap
# never run (n3 of 3, once in a few runs here and in CI).
TASK='trap "echo TERM >$0/sig.\$SLURM_PROCID; exit 143" TERM; touch $0/started.$SLURM_PROCID; i=0; while [ $i -lt $(($1 * 5)) ]; do sleep 0.2; i=$((i + 1)); done'
newjob() { rm -f "$OUT"/started.* "$OUT"/sig.* "$OUT"/rep.*; }

# ---- the ending policy: a link down mid-step ends the step in seconds ----
plug drain=yes watch_action=end
newjob
cl_srun -N3 -w n1,n2,n3 --ib-check --ib-watch=report --ib-report=text:"$OUT/rep.%n" \
	sh -c "$TASK" "$OUT" 30 >"$OUT/end.out" 2>"$OUT/end.err" &
spid=$!
if wait_started 3 '[0-9]*' n1 n2 n3; then
	t0=$(date +%s.%N)
	down n2 mlx5_3
	wait $spid
	rc=$?
	# now: the job record goes MinJobAge (2 s) after the job's end
	cl_scontrol show job -o 2>/dev/null | grep "spank-ib" >"$OUT/end.job"
else
	kill $spid 2>/dev/null
	wait $spid
	rc=started-timeout
fi
line=$(grep 'spank-ib: n2: mlx5_3 port 1: link went down' "$OUT/end.err")
when=$(sed -n 's/.*link went down at \([0-9T:.-]*\) .*/\1/p' <<<"$line")
delay=$(python3 -c 'import sys, datetime as d
t = d.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
print("%.2f" % (t - float(sys.argv[2])))' "$when" "$t0" 2>/dev/null)
if [ "$(grep -c 'spank-ib' "$OUT/end.err")" -eq 1 ] &&
	[[ "$line" =~ ^srun:\ spank-ib:\ n2:\ mlx5_3\ port\ 1:\ link\ went\ down\ at\ 20[0-9-]+T[0-9:]+\.[0-9]{3}\ \(DOWN,\ phys\ Polling\):\ check\ the\ cable.*\;\ ending\ the\ step\ \(SIGTERM\)\;\ draining\ n2$ ]]; then
	tap_ok "end: one line on srun's stderr naming n2, mlx5_3, port 1 and the time (seen ${delay:-?} s after the change; bench/bench_watch.sh measures)"
else
	tap_fail "end: srun's line" "rc=$rc; $(cat "$OUT/end.err")"
fi
if [ "$(cat "$OUT"/sig.* 2>/dev/null | grep -c TERM)" -eq 3 ] && [ "$rc" != 0 ]; then
	tap_ok "end: every task of the step (3 nodes) got SIGTERM, srun exits $rc"
else
	# what each node's slurmstepd did with the step's signal (the stepd's log lines)
	tap_fail "end: the tasks' signal" "rc=$rc sig files: $(ls "$OUT"/sig.* 2>&1)
srun on the tasks: $(grep -E 'task [0-9]+:' "$OUT/end.err")
$(for n in n1 n2 n3; do echo "$n's stepd:"; grep -E "StepId=$(job_of "$OUT/rep.$n")\.0|\[$(job_of "$OUT/rep.$n")\.0\]|signal|kill" "$CL_LOG/slurmd.$n.log" | tail -12; done)
$(cat "$OUT/end.err")"
fi
reason=$(cluster_node_reason n2)
if drained n2 && ! drained n1 && ! drained n3 &&
	[[ "$reason" == "spank-ib: mlx5_3 port 1: link went down at $when (DOWN, phys Polling)" ]]; then
	tap_ok "end: n2 drained with the event as the reason ('$reason')"
else
	tap_fail "end: drain" "n2=$(cluster_node_state n2) n1=$(cluster_node_state n1) reason=$reason"
fi
job=$(job_of "$OUT/rep.n2")
for i in $(seq 1 50); do grep -q "job $job.0 watch:" "$CL_LOG/slurmd.n2.log" && break; sleep 0.1; done
if grep -q "spank-ib: n2: job $job.0 watch: mlx5_3 port 1: link went down at $when (DOWN, phys Polling); drained n2; told the job; ending step $job.0 (SIGTERM)" "$CL_LOG/slurmd.n2.log" &&
	grep -q "^spank-ib: n2: watch: $when mlx5_3 port 1: link went down at $when" "$OUT/rep.n2" &&
	grep -q "\"by\":\"n2\".*\"ad\":\"mlx5_3\",\"ap\":1.*\"ok\":false,\"why\":\"link_went_down\"" "$CL_DIR/results/n2.log" &&
	grep -q "JobId=$job .*AdminComment=spank-ib $when n2 mlx5_3/1 link_went_down" "$OUT/end.job"; then
	tap_ok "end: recorded with its time: slurmd's log, the --ib-report step end, results_log=, AdminComment"
else
	tap_fail "end: records" "log: $(grep "job $job.0 watch" "$CL_LOG/slurmd.n2.log"); rep: $(grep watch "$OUT/rep.n2"); results: $(cat "$CL_DIR/results/n2.log" 2>&1); $(cat "$OUT/end.job")"
fi
sleep 0.5
left=$(cluster_watchers)
if [ -z "$left" ]; then
	tap_ok "end: no watcher left on any node after the step"
else
	tap_fail "end: watchers left" "$left: $(for p in $left; do { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>&1; echo; done)"
fi
cluster_resume_all >/dev/null
cluster_hw n2

# ---- the reporting policy: the same line and drain, the step runs to its end ----
plug drain=yes
newjob
cl_srun -N3 -w n1,n2,n3 --ib-check sh -c "$TASK" "$OUT" 4 >"$OUT/rep.out" 2>"$OUT/rep.err" &
spid=$!
wait_started 3 '[0-9]*' n1 n2 n3
down n2 mlx5_3
wait $spid
rc=$?
line=$(grep 'spank-ib: n2: mlx5_3 port 1: link went down' "$OUT/rep.err")
if [ "$rc" -eq 0 ] && [ ! -e "$OUT/sig.0" ] && [ "$(grep -c 'spank-ib' "$OUT/rep.err")" -eq 1 ] &&
	[[ "$line" =~ ^srun:\ spank-ib:\ n2:\ mlx5_3\ port\ 1:\ link\ went\ down\ at\ 20[0-9-]+T[0-9:.]+\ \(DOWN,\ phys\ Polling\):\ .*\;\ the\ step\ goes\ on\;\ draining\ n2$ ]] &&
	drained n2 && [[ "$(cluster_node_reason n2)" == "spank-ib: mlx5_3 port 1: link went down at "* ]]; then
	tap_ok "report: the same line (\"the step goes on\") and drain, the step runs to its end (exit 0, no signal)"
else
	tap_fail "report policy" "rc=$rc n2=$(cluster_node_state n2) $(cat "$OUT/rep.err")"
fi
cluster_resume_all >/dev/null
cluster_hw n2

# ---- a flap under the ending policy; the user raising report to end ----
plug drain=yes watch_action=end
newjob
cl_srun -N1 -w n1 --ib-check sh -c "$TASK" "$OUT" 4 >"$OUT/flap.out" 2>"$OUT/flap.err" &
spid=$!
wait_started 1 '[0-9]*' n1
p=$(port n1 mlx5_5 1)
echo 1 >"$p/counters/link_downed" # down and back between two reads: still ACTIVE
wait $spid
rc=$?
if [ "$rc" -eq 0 ] && [ ! -e "$OUT/sig.0" ] &&
	grep -q "^srun: spank-ib: n1: mlx5_5 port 1: link went down and came back between two reads at .*; the step goes on; draining n1$" "$OUT/flap.err" &&
	drained n1; then
	tap_ok "a flap under watch_action=end: told and drained, the step goes on"
else
	tap_fail "flap" "rc=$rc $(cat "$OUT/flap.err")"
fi
cluster_resume_all >/dev/null
cluster_hw n1
plug
newjob
cl_srun -N1 -w n3 --ib-check --ib-watch sh -c "$TASK" "$OUT" 30 >"$OUT/raise.out" 2>"$OUT/raise.err" &
spid=$!
wait_started 1 '[0-9]*' n3
down n3 mlx5_0
wait $spid
rc=$?
if [ "$rc" -ne 0 ] && [ "$(cat "$OUT/sig.0" 2>/dev/null)" = TERM ] &&
	grep -q "^srun: spank-ib: n3: mlx5_0 port 1: link went down at .*; ending the step (SIGTERM)$" "$OUT/raise.err" &&
	! drained n3; then
	tap_ok "watch_action=report raised by the user's --ib-watch: the step ends (drain=no: n3 not drained)"
else
	tap_fail "user raises" "rc=$rc n3=$(cluster_node_state n3) $(cat "$OUT/raise.err")"
fi
cluster_hw n3

# ---- the watcher cannot start: the admin's trouble, in slurmd's log only ----
plug watch_helper="$CL_DIR/no-such-watcher"
newjob
from=$(($(wc -l <"$CL_LOG/slurmd.n1.log") + 1))
cl_srun -N1 -w n1 --ib-check true >"$OUT/nowatch.out" 2>"$OUT/nowatch.err"
rc=$?
for i in $(seq 1 50); do tail -n +"$from" "$CL_LOG/slurmd.n1.log" | grep -q "no link watch" && break; sleep 0.1; done
said=$(tail -n +"$from" "$CL_LOG/slurmd.n1.log" | grep "no link watch")
if [ "$rc" -eq 0 ] && ! grep -q 'spank-ib\|error:' "$OUT/nowatch.err" &&
	[[ "$said" == *"spank-ib: n1: job "*".0: no link watch: watcher $CL_DIR/no-such-watcher"* ]] &&
	[[ "$said" != *"error: spank-ib"* ]]; then
	tap_ok "a watcher that cannot start: the step passes, nothing on srun's stderr, slurmd's log says why (not as an error)"
else
	tap_fail "a watcher that cannot start" "rc=$rc; srun: $(cat "$OUT/nowatch.err"); slurmd.n1: ${said:-nothing}"
fi

# ---- no health checks, no watcher; SIGKILL of slurmstepd takes the watcher along ----
plug
newjob
cl_srun -N1 -w n1 --ib-affinity sh -c "$TASK" "$OUT" 3 >"$OUT/nocheck.out" 2>&1 &
spid=$!
for i in $(seq 1 100); do [ -e "$OUT/started.0" ] && break; sleep 0.1; done
sleep 1.5 # past the first read's time (watch_interval=1): a watcher would be exec'd by now
seen=$(cluster_watchers)
wait $spid
newjob
cl_srun -N1 -w n1 --ib-check sh -c "$TASK" "$OUT" 3 >"$OUT/check.out" 2>&1 &
spid=$!
wait_started 1 '[0-9]*' n1
seen2=$(cluster_watchers)
wait $spid
if [ -z "$seen" ] && [ "$(wc -w <<<"$seen2")" -eq 1 ]; then
	tap_ok "a step without health checks starts no watcher (--ib-affinity alone); with --ib-check one per node"
else
	tap_fail "no watcher without checks" "without: '$seen' with: '$seen2'"
fi
# A step that ends before the first read (1 s in) never execs the watcher: its child leaves.
newjob
from=$(($(wc -l <"$CL_LOG/slurmd.n1.log") + 1))
cl_srun -N1 -w n1 --ib-check true >"$OUT/short.out" 2>&1
rc=$?
for i in $(seq 1 50); do tail -n +"$from" "$CL_LOG/slurmd.n1.log" | grep -q "step end after" && break; sleep 0.1; done
said=$(tail -n +"$from" "$CL_LOG/slurmd.n1.log" | grep "step end after")
if [ "$rc" -eq 0 ] && [[ "$said" == *"(watched nothing: the step ended before the first read, due 1 s in)"* ]] &&
	[ -z "$(cluster_watchers)" ]; then
	tap_ok "a step shorter than watch_interval= never execs its watcher (slurmd's log: watched nothing)"
else
	tap_fail "a short step's watcher" "rc=$rc; slurmd.n1: ${said:-nothing}; watchers: $(cluster_watchers)"
fi
newjob
cl_srun -N1 -w n2 --ib-check sh -c "$TASK" "$OUT" 60 >"$OUT/kill.out" 2>&1 &
spid=$!
wait_started 1 '[0-9]*' n2
w=$(cluster_watchers)
stepd=$(awk '/^PPid:/ { print $2 }' "/proc/$w/status" 2>/dev/null)
caps=$(awk '/^CapEff:/ { print $2 }' "/proc/$w/status" 2>/dev/null)
nnp=$(awk '/^NoNewPrivs:/ { print $2 }' "/proc/$w/status" 2>/dev/null)
wuid=$(awk '/^Uid:/ { print $2 $3 $4 }' "/proc/$w/status" 2>/dev/null)
comm=$(cat "/proc/$stepd/comm" 2>/dev/null)
if [ -n "$w" ] && [ "$comm" = slurmstepd ] && [ "$caps" = 0000000000000000 ] && [ "$nnp" = 1 ] && [ "$wuid" = 000 ]; then
	tap_ok "the watcher is slurmstepd's child, uid 0 without any capability, no_new_privs"
else
	tap_fail "watcher's privileges" "w=$w parent=$stepd ($comm) CapEff=$caps NoNewPrivs=$nnp uid=$wuid"
fi
# The watcher starts from the plugin's read of the step's ports (--baseline), each port once.
wargs=$({ tr '\0' '\n' <"/proc/$w/cmdline"; } 2>/dev/null)
wports=$(sed -n 's/^--ports=//p' <<<"$wargs")
wbase=$(sed -n 's/^--baseline=//p' <<<"$wargs")
based=1
for p in ${wports//,/ }; do
	[ "$(tr ' ' '\n' <<<"$wbase" | grep -cx "$p")" = 1 ] || based=0
done
if [ -n "$wports" ] && [ "$based" = 1 ]; then
	tap_ok "the watcher is given the plugin's read of the step's ports ($wports) as its first 'before'"
else
	tap_fail "the watcher's baseline" "ports '$wports' baseline '$wbase'"
fi
kjob=$({ tr '\0' '\n' <"/proc/$w/cmdline"; } 2>/dev/null | sed -n 's/^--job=//p')
[ -n "$stepd" ] && [ "$comm" = slurmstepd ] && kill -KILL "$stepd"
if [ -n "$w" ] && wait_gone "$w"; then
	tap_ok "slurmstepd killed with SIGKILL: its watcher is gone too"
else
	tap_fail "watcher outlives a killed slurmstepd" "watcher $w: $(tr '\0' ' ' <"/proc/$w/cmdline" 2>&1)"
fi
[ -n "$kjob" ] && cl_scancel "$kjob" 2>/dev/null
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
cluster_resume_all >/dev/null

# ---- the job's user cannot touch the watcher ----
if ! $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1 && $CL_CLIENT_PREFIX useradd -M -s /bin/sh "$TEST_USER" 2>/dev/null; then
	USER_CREATED=1
fi
if $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1; then
	uid=$($CL_CLIENT_PREFIX id -u "$TEST_USER")
	newjob
	(cd /tmp && $CL_CLIENT_PREFIX setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups \
		env SLURM_CONF="$CL_CONF" timeout 60 "$SLURM_BIN/srun" -N1 -w n3 --ib-check \
		sh -c "$TASK" "$OUT" 5) >"$OUT/user.out" 2>&1 &
	spid=$!
	wait_started 1 '[0-9]*' n3
	w=$(cluster_watchers)
	sig=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups sh -c "kill -TERM $w" 2>&1)
	rd=$(setpriv --reuid="$uid" --regid="$uid" --clear-groups cat "/proc/$w/environ" 2>&1)
	alive=no
	[ -n "$w" ] && [ -d "/proc/$w" ] && alive=yes
	wait "$spid"
	rc=$?
	if [ -n "$w" ] && [ "$alive" = yes ] && [[ "$sig" == *"ermitted"* ]] && [[ "$rd" == *"ermi"*"denied"* ]] && [ "$rc" -eq 0 ]; then
		tap_ok "the job's user can neither signal the watcher nor read it; the step passes"
	else
		tap_fail "the job's user and the watcher" "w=$w alive=$alive kill: $sig; read: $rd; rc=$rc $(cat "$OUT/user.out")"
	fi
	cleanup_user
else
	tap_skip "the job's user and the watcher" "cannot create a user (useradd)"
fi
tap_done
