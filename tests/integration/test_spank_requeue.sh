#!/usr/bin/env bash
# test_spank_requeue.sh: a batch job whose step fails on a node fault comes
# back on healthy nodes by itself (spank/ib_requeue.c), in a real Slurm
# cluster of 4 simulated nodes with the job completion log on
# (CL_JOBCOMP=1, read by `sacct --completion`):
#   * sbatch -N3 --requeue, n2 broken at the start: requeued once, n2
#     drained, the second run lands on the 3 healthy nodes and completes,
#     sacct shows both runs;
#   * the same with n2's link going down mid-step (the watch, watch_action=end);
#   * the same with tasks that ignore SIGTERM (the run ends at KillWait) and
#     requeue_begin=1: the requeue completes after the begin time set at the
#     requeue, and the second run still starts less than 120 s after the
#     fault, which Slurm's own delay (121 s after the end) never allows (the
#     begin time settled at the step's end);
#   * a job fault (the user's locked-memory limit) is never requeued;
#   * requeue_max=1 with a second broken node: the second run fails and the
#     job ends, saying the bound was reached;
#   * the restart count is slurmctld's: SLURM_RESTART_COUNT=0 set by the job
#     for its steps changes nothing;
#   * the cross-node test (--ib-test) blames n3, cut off from the others:
#     n3 tells the job and requeues it without itself (decided in user_init,
#     where from 24.11 the API deadlocks: made by the watcher run once as
#     root while the job's srun waits), its neighbours do nothing, n3 is not
#     drained (a blame across nodes is a suspicion), and the second run on
#     n1 n2 n4 completes.
# Nothing asserts a time (bench/bench_watch.sh measures); waits are bounded.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "requeue on healthy nodes"
export CL_JOBCOMP=1
cluster_start_or_done 4
cluster_hw_or_done "requeue"
cluster_suite_out 0777
BASE_KEYS="cache_dir=$CL_DIR/nodes/%n/cache min_memlock=4096"
plug() { cluster_plugstack "$(cluster_spank_line $BASE_KEYS "$@")"; }
drained() { [[ "$(cluster_node_state "$1")" == *DRAIN* ]]; }
jobfield() { cl_scontrol show job "$1" -o 2>/dev/null | grep -o "$2=[^ ]*" | cut -d= -f2; }

# The batch script: each run says where it runs; the step's tasks say where
# they run, and the first run's tasks wait $FIRST s (a mid-step fault has
# time), ignoring SIGTERM with SLOW=1 (its end waits KillWait's SIGKILL).
cat >"$OUT/job.sh" <<EOF
#!/bin/sh
export RUN=\${SLURM_RESTART_COUNT:-0}
echo "run \$RUN \$SLURM_JOB_NODELIST" >>$OUT/runs.\$SLURM_JOB_ID
# a hostile job: its steps see a restart count of 0, whatever slurmctld counts
[ -z "\${RESET:-}" ] || export SLURM_RESTART_COUNT=0
srun \${IBFLAGS:---ib-check} sh -c 'echo "task \$RUN \$(hostname)" >>$OUT/tasks.\$SLURM_JOB_ID
[ -z "\${SLOW:-}" ] || [ "\$RUN" -gt 0 ] || trap "" TERM
touch $OUT/started.\$SLURM_JOB_ID.\$RUN.\$SLURM_PROCID; [ "\$RUN" -gt 0 ] || sleep \${FIRST:-0}'
EOF
chmod 0755 "$OUT/job.sh"

# submit NAME [SBATCH ARGS...]: JOB set, output in $OUT/NAME.out (both runs: append)
submit() {
	local name=$1
	shift
	JOB=$(cl_sbatch --parsable -N3 --requeue --open-mode=append -o "$OUT/$name.out" "$@" "$OUT/job.sh" 2>&1)
	[[ "$JOB" =~ ^[0-9]+$ ]] || { tap_fail "$name: sbatch" "$JOB"; JOB=; }
}
# wait_end JOB: until the job has ended for good (not pending again), at most
# 300 s: a requeue that completes after the begin time spank-ib set (the run's
# nodes slow to end it, on a loaded machine) waits Slurm's own 121 s before
# the second run (ib_requeue.c); how soon a job comes back is the bench's.
# A job slurmctld no longer knows (MinJobAge=2) has ended: its state is the
# completion log's last line (never a transient scontrol failure's guess).
wait_end() {
	local i st
	for i in $(seq 1 3000); do
		st=$(jobfield "$1" JobState)
		if [ -z "$st" ] && cl_scontrol show job "$1" 2>&1 | grep -q "Invalid job id"; then
			st=$(cl_sacct --completion -n -P -j "$1" -o state 2>/dev/null | tail -1)
		fi
		case "$st" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) echo "$st"; return 0 ;; esac
		sleep 0.1
	done
	echo "${st:-gone}"
	return 1
}
# runs_on JOB RESTART: the sorted hosts of that run's tasks
runs_on() { awk -v r="$2" '$1 == "task" && $2 == r { print $3 }' "$OUT/tasks.$1" 2>/dev/null | sort | tr '\n' ' '; }
# sacct's runs of JOB from the job completion log: "STATE NODES" lines
runs_in_sacct() { cl_sacct --completion -n -P -j "$1" -o state,nodelist 2>&1 | sort; }
# requeues_of JOB: how many times slurmctld requeued JOB, from the completion
# log (a requeue logs the run it ends as PENDING on 22.05, 24.11 and 26.05;
# REQUEUED counts too), which outlives the job's record: MinJobAge=2 lets
# slurmctld forget the job 2 s after its end, and `scontrol show job` then
# says nothing (Restarts read empty once on 26.05 under load).
requeues_of() { runs_in_sacct "$1" | grep -cE '^(PENDING|REQUEUED)\|'; }

# down_mid_step JOB: once the first run's 3 tasks have started and the
# watchers of n1-n3 are ready (bounded: 30 s), n2's mlx5_3 port 1 goes down;
# DOWN_AT its time (s)
down_mid_step() {
	local i p=$CL_DIR/nodes/n2/root/sys/class/infiniband/mlx5_3/ports/1
	for i in $(seq 1 300); do
		[ "$(ls "$OUT"/started."$1".0.* 2>/dev/null | wc -l)" -eq 3 ] &&
			cluster_watchers_ready "$1" n1 n2 n3 && break
		sleep 0.1
	done
	DOWN_AT=$(date +%s)
	echo "1: DOWN" >"$p/state"
	echo 1 >"$p/counters/link_downed"
}

# ---- a node broken at the start ----
plug drain=yes requeue=yes
cluster_hw n2 "mlx5_3/1:down"
submit start
if [ -n "$JOB" ]; then
	state=$(wait_end "$JOB")
	restarts=$(requeues_of "$JOB")
	first=$(runs_on "$JOB" 0)
	second=$(runs_on "$JOB" 1)
	if [ "$state" = COMPLETED ] && [ "$restarts" = 1 ] && drained n2 &&
		[[ "$(cluster_node_reason n2)" == "spank-ib: mlx5_3 port 1: "* ]] &&
		[ "$second" = "n1 n3 n4 " ] && [[ "$first" != *n2* ]] &&
		[ "$(grep -c "spank-ib: n2: requeueing job $JOB without n2 (run 2 of at most 2); it may start again at [0-9][0-9]:[0-9][0-9]:[0-9][0-9]$" "$OUT/start.out")" = 1 ]; then
		tap_ok "broken at the start: requeued once (Restarts=1), n2 drained, the second run on n1 n3 n4 completes; the job was told once"
	else
		tap_fail "broken at the start" "state=$state restarts=$restarts n2=$(cluster_node_state n2) first='$first' second='$second'
$(cat "$OUT/runs.$JOB" "$OUT/start.out" 2>&1)"
	fi
	# the first run's line: its state when it was requeued (PENDING on 22.05)
	sacct=$(runs_in_sacct "$JOB")
	if [ "$(wc -l <<<"$sacct")" -eq 2 ] && [[ "$sacct" == *"COMPLETED|n[1,3-4]"* ]] &&
		grep -Eq '^(PENDING|REQUEUED)\|n\[1-3\]$' <<<"$sacct"; then
		tap_ok "sacct shows both runs: $(tr '\n' ' ' <<<"$sacct")"
	else
		tap_fail "sacct shows both runs" "$sacct"
	fi
fi
cluster_resume_all >/dev/null
cluster_hw n2

# ---- a link down mid-step ----
plug drain=yes requeue=yes watch_action=end
submit mid --export=ALL,FIRST=120
if [ -n "$JOB" ]; then
	down_mid_step "$JOB"
	state=$(wait_end "$JOB")
	restarts=$(requeues_of "$JOB")
	second=$(runs_on "$JOB" 1)
	if [ "$state" = COMPLETED ] && [ "$restarts" = 1 ] && drained n2 && [ "$second" = "n1 n3 n4 " ] &&
		grep -q "spank-ib: n2: mlx5_3 port 1: link went down at .*; ending the step (SIGTERM); draining n2; requeueing job $JOB without n2 (run 2 of at most 2)$" "$OUT/mid.out"; then
		tap_ok "down mid-step: the step ended, the job requeued once, n2 drained, the second run on n1 n3 n4 completes"
	else
		tap_fail "down mid-step" "state=$state restarts=$restarts n2=$(cluster_node_state n2) second='$second' $(cl_scontrol show job "$JOB" 2>&1 | grep -oE '(EligibleTime|StartTime|SubmitTime)=[^ ]*' | tr '\n' ' ')
$(cat "$OUT/runs.$JOB" "$OUT/mid.out" 2>&1; grep "job $JOB" "$CL_LOG/slurmd.n2.log")"
	fi
	# The watcher signals the step, then requeues: when the batch script ends
	# (its srun got SIGTERM) before the requeue reaches slurmctld, the first
	# run is logged FAILED at its end and then PENDING at the requeue (seen
	# at load 13 on 2 cores); otherwise PENDING alone.
	sacct=$(runs_in_sacct "$JOB")
	if [ "$(grep -c . <<<"$sacct")" -eq "$(grep -cE '^(COMPLETED\|n\[1,3-4\]|(PENDING|REQUEUED|FAILED)\|n\[1-3\])$' <<<"$sacct")" ] &&
		[ "$(grep -cxF 'COMPLETED|n[1,3-4]' <<<"$sacct")" -eq 1 ] &&
		[ "$(grep -cE '^(PENDING|REQUEUED)\|n\[1-3\]$' <<<"$sacct")" -eq 1 ] &&
		[ "$(grep -cxF 'FAILED|n[1-3]' <<<"$sacct")" -le 1 ]; then
		tap_ok "sacct shows both runs (mid-step): $(tr '\n' ' ' <<<"$sacct")"
	else
		tap_fail "sacct shows both runs (mid-step)" "$sacct"
	fi
fi
cluster_resume_all >/dev/null
cluster_hw n2

# ---- a slow end: the requeue completes after the begin time it set ----
# requeue_begin=1 and tasks that ignore SIGTERM: the run ends at KillWait's
# SIGKILL, after the begin time set at the requeue; without the begin time
# settled at the step's end Slurm adds its own 121 s (ib_requeue.c): the
# second run 174 s after the fault without it, 55-57 s with it (most of it
# waiting for the scheduler's pass after the begin time), at load 4-200.
# Less than 120 s is what only the settled begin time allows.
plug drain=yes requeue=yes watch_action=end requeue_begin=1
submit slow --export=ALL,FIRST=120,SLOW=1
if [ -n "$JOB" ]; then
	down_mid_step "$JOB"
	t0=$DOWN_AT
	for i in $(seq 1 2000); do
		ls "$OUT"/started."$JOB".1.* >/dev/null 2>&1 && break
		sleep 0.1
	done
	t1=$(stat -c %Y "$OUT"/started."$JOB".1.* 2>/dev/null | sort -n | head -1)
	state=$(wait_end "$JOB")
	restarts=$(jobfield "$JOB" Restarts)
	settled=$(grep -c "spank-ib: n2: job $JOB\.[0-9]*: the requeued job may start again at [0-9:]*, 10 s after its run ended here" "$CL_LOG/slurmd.n2.log")
	if [ -n "$t1" ] && [ $((t1 - t0)) -lt 120 ] && [ "$state" = COMPLETED ] && [ "$restarts" = 1 ] &&
		[ "$(runs_on "$JOB" 1)" = "n1 n3 n4 " ] && [ "$settled" = 1 ]; then
		tap_ok "a slow end (SIGTERM ignored, requeue_begin=1): the second run started $((t1 - t0)) s after the link went down (Slurm's own delay: 121 s after the end), the begin time settled once at n2's step end"
	else
		tap_fail "a slow end" "state=$state restarts=$restarts second run at +$((${t1:-0} - t0)) s settled=$settled $(cl_scontrol show job "$JOB" 2>&1 | grep -oE '(EligibleTime|StartTime|SubmitTime)=[^ ]*' | tr '\n' ' ')
$(cat "$OUT/runs.$JOB" "$OUT/slow.out" 2>&1; grep "job $JOB" "$CL_LOG/slurmd.n2.log" "$CL_LOG/slurmctld.log")"
	fi
fi
cluster_resume_all >/dev/null
cluster_hw n2

# ---- a job fault never requeues ----
plug drain=yes requeue=yes
JOB=$(bash -c 'ulimit -l 1024 && . tests/integration/lib/cluster.sh && CL_CONF='"$CL_CONF"' cl_sbatch --parsable -N3 --requeue -o '"$OUT/memlock.out"' '"$OUT/job.sh" 2>&1)
if [[ "$JOB" =~ ^[0-9]+$ ]]; then
	state=$(wait_end "$JOB")
	restarts=$(requeues_of "$JOB")
	if [ "$restarts" = 0 ] && [ "$state" = FAILED ] && ! drained n1 && ! drained n2 && ! drained n3 &&
		grep -q "locked-memory limit 1024 KiB" "$OUT/memlock.out" && ! grep -q "requeue" "$OUT/memlock.out"; then
		tap_ok "a job fault (memlock 1024 KiB): the step fails, never requeued (Restarts=0), nothing drained"
	else
		tap_fail "job fault never requeues" "state=$state restarts=$restarts $(cat "$OUT/memlock.out")"
	fi
else
	tap_fail "job fault: sbatch" "$JOB"
fi

# ---- the bound: a second broken node ----
plug drain=yes requeue=yes requeue_max=1
cluster_hw n2 "mlx5_3/1:down"
cluster_hw n4 "mlx5_0/1:down"
# the job resets SLURM_RESTART_COUNT to 0 for its steps: the bound holds
submit bound --export=ALL,RESET=1
if [ -n "$JOB" ]; then
	state=$(wait_end "$JOB")
	restarts=$(requeues_of "$JOB")
	if [ "$restarts" = 1 ] && [ "$state" = FAILED ] && drained n2 && drained n4 &&
		[ "$(grep -c "spank-ib: n2: requeueing job $JOB without n2 (run 2 of at most 2); it may start again at " "$OUT/bound.out")" = 1 ] &&
		grep -q "spank-ib: n4: not requeued: the requeue bound was reached (job $JOB ran 2 times, requeue_max=1)" "$OUT/bound.out"; then
		tap_ok "requeue_max=1, a second broken node: the job ends after 2 runs saying the bound was reached"
	else
		tap_fail "the bound" "state=$state restarts=$restarts n2=$(cluster_node_state n2) n4=$(cluster_node_state n4)
sacct --completion: $(runs_in_sacct "$JOB" | tr '\n' ' ')
scontrol: $(cl_scontrol show job "$JOB" -o 2>&1 | grep -oE '(JobState|Restarts|Requeue|Reason|NodeList)=[^ ]*' | tr '\n' ' ')
$(cat "$OUT/runs.$JOB" "$OUT/bound.out" 2>&1)"
	fi
fi
cluster_resume_all >/dev/null
cluster_hw n2
cluster_hw n4

# ---- the cross-node test blames a node ----
# n3 drops the test's ports only, in its own namespace: Slurm still reaches it
if ! why=$(cluster_cut n3); then
	tap_skip "the cross-node test blames n3" "$why"
	tap_done
	exit
fi
plug drain=yes requeue=yes test_transport=socket test_timeout=4 test_max_lat_us=200000 \
	"test_helper=$(cluster_test_helper)" "munge_socket=$CL_DIR/munge/munge.sock"
submit blame --export=ALL,IBFLAGS=--ib-test
if [ -n "$JOB" ]; then
	state=$(wait_end "$JOB")
	restarts=$(requeues_of "$JOB")
	second=$(runs_on "$JOB" 1)
	# slurmd's log: n3 requeued; n1, n2 and n4 did nothing
	n3line=$(grep "spank-ib: n3: job $JOB\.[0-9]*: after the cross-node test: requeued job $JOB (run 2 of at most 2), without n3; it may start again at " "$CL_LOG/slurmd.n3.log")
	n3log=$(grep -c . <<<"$n3line")
	peers=$(cat "$CL_LOG/slurmd.n1.log" "$CL_LOG/slurmd.n2.log" "$CL_LOG/slurmd.n4.log" | grep -c "job $JOB\.[0-9]*: after the cross-node test")
	# made by the watcher run once from user_init, not left to the step's end
	fallback=$(grep -c "job $JOB\.[0-9]*: the requeue is left to the step's end\|job $JOB\.[0-9]*: the requeue after the cross-node test did not say" "$CL_LOG/slurmd.n3.log")
	# Told once, by n3, while the batch script still waited for its srun
	# (from exit, after the tasks, the script may be gone: seen on 24.11).
	told=$(grep -c "spank-ib: n3: requeueing job $JOB without n3 (run 2 of at most 2); it may start again at " "$OUT/blame.out")
	if [ "$state" = COMPLETED ] && [ "$restarts" = 1 ] && ! drained n3 && [ "$second" = "n1 n2 n4 " ] &&
		[ "$told" = 1 ] && [ "$fallback" = 0 ] &&
		! grep -q "requeueing job $JOB without n[124]" "$OUT/blame.out" && [ "$n3log" = 1 ] && [ "$peers" = 0 ]; then
		tap_ok "the cross-node test blames n3 (cut off): n3 tells the job and requeues it without itself once (from user_init, the watcher run once), its neighbours do nothing, not drained, the second run on n1 n2 n4 completes"
	else
		tap_fail "the cross-node test blames n3" "state=$state restarts=$restarts n3=$(cluster_node_state n3) second='$second' n3log=$n3log peers=$peers told=$told fallback=$fallback
$(cat "$OUT/runs.$JOB" "$OUT/blame.out" 2>&1; grep "job $JOB" "$CL_LOG/slurmd.n3.log")"
	fi
fi
cluster_uncut n3
cluster_resume_all >/dev/null
tap_done
