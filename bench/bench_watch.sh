#!/usr/bin/env bash
# bench_watch.sh: the watch while the step runs (docs/watch.md, "Figures"),
# in the project's cluster of 4 DGX-H100-like simulated nodes (8 HCAs each):
#   1. latency: srun -N3 --ib-check with watch_action=end drain=yes; once the
#      tasks run and every watcher took its first read, n2's mlx5_3 port 1
#      goes DOWN; the time from that change to (a) srun's line (stamped as
#      srun's stderr delivers it) and (b) the last of the 3 tasks' SIGTERM
#      (stamped by their traps).  BENCH_WATCH_TRIALS trials (default 20):
#      median and maximum; target <= 2 s at watch_interval=1.
#   2. the step: srun -N3 --ib-check true with the watch on and off, paired
#      and alternated (BENCH_WATCH_PAIRS, default 15): what starting and
#      stopping the watcher adds to a step.
#   3. CPU: one step of BENCH_WATCH_CPU_S seconds (default 60; 600 for the
#      10-minute figure) on one node: the watcher's CPU time
#      (/proc/PID/schedstat, ns) over that time in % of one core, and its
#      resident memory.  Target < 0.1 %.
#   4. requeue: sbatch -N3 --requeue, n2's link down mid-step; the time from
#      the change to the second run's tasks running on the healthy nodes,
#      (a) spank-ib (watch_action=end requeue=yes), (b) Slurm's own requeue
#      (`scontrol requeue` and a drain of n2 the moment of the change: the
#      best a person or a script can do with Slurm alone), (c) the job
#      cancelled and resubmitted by hand without n2 at that moment (to which
#      a person adds the time until someone reads the log).
#      BENCH_WATCH_REQUEUE=0 skips it (part (b) takes about 2.5 minutes).
#   SPANK_IB_SO (default build/spank_ib.so)
set -u
cd "$(dirname "$0")/.."
. tests/integration/lib/cluster.sh
TRIALS=${BENCH_WATCH_TRIALS:-20}
PAIRS=${BENCH_WATCH_PAIRS:-15}
CPU_S=${BENCH_WATCH_CPU_S:-60}
REQUEUE=${BENCH_WATCH_REQUEUE:-1}

if [ "$(id -u)" -ne 0 ]; then
	echo "bench_watch: needs root (the cluster runs in namespaces): skipped" >&2
	exit 0
fi
for f in "$SPANK_IB_SO" "$CL_SRC/build/spank-ib-watch"; do
	[ -f "$f" ] || { echo "bench_watch: $f missing: run make first" >&2; exit 1; }
done
export CL_JOBCOMP=1
cluster_start 4 2>/tmp/bench_watch.err.$$ || {
	cat /tmp/bench_watch.err.$$ >&2
	rm -f /tmp/bench_watch.err.$$
	exit 1
}
rm -f /tmp/bench_watch.err.$$
if [ "$CL_HW" != 1 ]; then
	echo "bench_watch: no simulated hardware (tests/fixtures/mksysfs.py, mktopo.py): skipped" >&2
	exit 0
fi
# Private copies: a rebuild during the run must not change what is measured.
cp "$SPANK_IB_SO" "$CL_DIR/spank_ib.so"
cp "$CL_SRC/build/spank-ib-watch" "$CL_DIR/spank-ib-watch"
SPANK_IB_SO=$CL_DIR/spank_ib.so
OUT=$CL_DIR/out
mkdir -p "$OUT"
chmod 0777 "$OUT"
plug() {
	cluster_plugstack "required $SPANK_IB_SO sysfs_root=$CL_DIR/nodes/%n/root topology=$CL_DIR/nodes/%n/topo.xml bind=no watch_helper=$CL_DIR/spank-ib-watch cache_dir=$CL_DIR/nodes/%n/cache min_memlock=0 $*"
}
now() { date +%s.%N; }
# stamp FILE: each line of stdin, prefixed with the time it arrived
stamp() { python3 -u -c 'import sys, time
for l in sys.stdin:
    sys.stdout.write("%.6f %s" % (time.time(), l)); sys.stdout.flush()' >"$1"; }
# stats: "median max" of the numbers on stdin
stats() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "- -"; exit }
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f %.2f\n", m, v[NR] }'; }
down() { # NODE DEV
	local p=$CL_DIR/nodes/$1/root/sys/class/infiniband/$2/ports/1
	echo "1: DOWN" >"$p/state"
	echo "2: Polling" >"$p/phys_state"
	echo $(($(cat "$p/counters/link_downed") + 1)) >"$p/counters/link_downed"
}
wait_ready() { # NTASKS GLOB JOBPAT NODE...
	local n=$1 glob=$2 job=$3 i
	shift 3
	for i in $(seq 1 300); do
		# shellcheck disable=SC2086
		[ "$(ls $glob 2>/dev/null | wc -l)" -ge "$n" ] && cluster_watchers_ready "$job" "$@" && return 0
		sleep 0.1
	done
	return 1
}
TASK='trap "date +%s.%N >$0/sig.\$SLURM_PROCID; exit 143" TERM; touch $0/started.$SLURM_PROCID; sleep "$1" & wait'
echo "# bench_watch: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"

# ---- 1. latency ----
plug drain=yes watch_action=end
lines=()
sigs=()
for t in $(seq 1 "$TRIALS"); do
	rm -f "$OUT"/started.* "$OUT"/sig.*
	cl_srun -N3 -w n1,n2,n3 --ib-check sh -c "$TASK" "$OUT" 60 2> >(stamp "$OUT/err.$t") >/dev/null &
	spid=$!
	if ! wait_ready 3 "$OUT/started.*" '[0-9]*' n1 n2 n3; then
		echo "bench_watch: trial $t: the step did not start" >&2
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		continue
	fi
	t0=$(now)
	down n2 mlx5_3
	wait "$spid"
	sleep 0.2 # the stamper's last line
	l=$(awk '/spank-ib: n2: mlx5_3 port 1: link went down/ { print $1; exit }' "$OUT/err.$t")
	s=$(cat "$OUT"/sig.* 2>/dev/null | sort -g | tail -1)
	n=$(cat "$OUT"/sig.* 2>/dev/null | wc -l)
	if [ -n "$l" ] && [ "$n" -eq 3 ]; then
		lines+=("$(awk -v a="$l" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')")
		sigs+=("$(awk -v a="$s" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')")
		echo "# trial $t: srun's line $(tail -c 7 <<<"${lines[-1]}") s, last task's signal ${sigs[-1]} s"
	else
		echo "bench_watch: trial $t: line '$l', $n of 3 tasks signalled" >&2
	fi
	cl_scontrol update nodename=n2 state=resume >/dev/null 2>&1
	cluster_hw n2
done
read -r lm lx <<<"$(printf '%s\n' "${lines[@]}" | stats)"
read -r sm sx <<<"$(printf '%s\n' "${sigs[@]}" | stats)"
echo "latency, port change to srun's line: median $lm s, max $lx s; to the last task's SIGTERM: median $sm s, max $sx s (${#lines[@]} trials, watch_interval=1; target <= 2 s)"

# ---- 2. what the watcher adds to a step ----
step_ms() {
	local t0 t1
	t0=$(date +%s%N)
	cl_srun -N3 -w n1,n2,n3 --ib-check true >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
on=()
off=()
for i in $(seq 1 "$PAIRS"); do
	if [ $((i % 2)) = 0 ]; then
		plug watch_interval=1
		on+=("$(step_ms)")
		plug watch_interval=0
		off+=("$(step_ms)")
	else
		plug watch_interval=0
		off+=("$(step_ms)")
		plug watch_interval=1
		on+=("$(step_ms)")
	fi
done
read -r onm _ <<<"$(printf '%s\n' "${on[@]}" | stats)"
read -r offm _ <<<"$(printf '%s\n' "${off[@]}" | stats)"
echo "step srun -N3 --ib-check true: median ${onm} ms with the watch, ${offm} ms without ($PAIRS pairs, ratio $(awk -v a="$onm" -v b="$offm" 'BEGIN { printf "%.2f", a / b }'))"

# ---- 3. CPU and memory over a long step ----
plug watch_interval=1
rm -f "$OUT"/started.*
# the step outlives CL_CMD_TIMEOUT (120 s), which would end it early
CL_CMD_TIMEOUT=$((CPU_S + 120)) cl_srun -N1 -w n1 --ib-check sh -c "$TASK" "$OUT" $((CPU_S + 30)) >/dev/null 2>&1 &
spid=$!
if wait_ready 1 "$OUT/started.*" '[0-9]*' n1; then
	w=$(cluster_watcher_of '[0-9]*' n1)
	c0=$(cut -d' ' -f1 "/proc/$w/schedstat")
	w0=$(now)
	sleep "$CPU_S"
	c1=$(cut -d' ' -f1 "/proc/$w/schedstat" 2>/dev/null)
	w1=$(now)
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$w/status" 2>/dev/null)
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$w/status" 2>/dev/null)
	ports=$({ tr '\0' '\n' <"/proc/$w/cmdline"; } 2>/dev/null | sed -n 's/^--ports=//p' | tr ',' '\n' | wc -l)
	if [ -z "$c1" ] || [ -z "$rss" ]; then
		echo "bench_watch: the watcher ($w) ended before the ${CPU_S} s were over: no CPU figure" >&2
	else
	echo "watcher CPU over $(awk -v a="$w1" -v b="$w0" 'BEGIN { printf "%.0f", a - b }') s, $ports ports read every 1 s: $(awk -v c=$((c1 - c0)) -v a="$w1" -v b="$w0" 'BEGIN { printf "%.4f %% of one core (%.1f ms)", c / 1e9 / (a - b) * 100, c / 1e6 }'); RSS ${rss} KiB (peak ${hwm} KiB) (target < 0.1 %)"
	fi
else
	echo "bench_watch: the CPU step did not start" >&2
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
cl_scancel --state=RUNNING -u root >/dev/null 2>&1
cluster_wait_idle 30 >/dev/null 2>&1

# ---- 4. back on healthy nodes ----
if [ "$REQUEUE" = 1 ]; then
	cat >"$OUT/job.sh" <<EOF
#!/bin/sh
export RUN=\${SLURM_RESTART_COUNT:-0}
srun --ib-check sh -c 'date +%s.%N >$OUT/run.\$SLURM_JOB_ID.\$RUN.\$SLURM_PROCID; [ "\$RUN" -gt 0 ] || sleep 300'
EOF
	chmod 0755 "$OUT/job.sh"
	# run MODE: prints the seconds from the change to the second run's last task
	run() {
		local mode=$1 job j2 t0 i f
		job=$(cl_sbatch --parsable -N3 --requeue -o /dev/null "$OUT/job.sh")
		wait_ready 3 "$OUT/run.$job.0.*" "$job" n1 n2 n3 || { echo "-"; return; }
		t0=$(now)
		down n2 mlx5_3
		j2=$job
		case $mode in
		slurm)
			cl_scontrol update nodename=n2 state=drain reason=bench >/dev/null
			cl_scontrol requeue "$job" >/dev/null
			;;
		hand)
			cl_scancel "$job"
			cl_scontrol update nodename=n2 state=drain reason=bench >/dev/null
			j2=$(cl_sbatch --parsable -N3 -x n2 -o /dev/null "$OUT/job.sh")
			;;
		esac
		for i in $(seq 1 3000); do
			f=$(ls "$OUT/run.$j2".* 2>/dev/null | grep -c "\.$([ "$mode" = hand ] && echo 0 || echo 1)\.")
			[ "$f" -ge 3 ] && break
			sleep 0.1
		done
		if [ "$f" -ge 3 ]; then
			cat "$OUT/run.$j2".$([ "$mode" = hand ] && echo 0 || echo 1).* | sort -g | tail -1 |
				awk -v b="$t0" '{ printf "%.1f\n", $1 - b }'
		else
			echo "-"
		fi
		cl_scancel "$job" "$j2" >/dev/null 2>&1
		cluster_resume_all >/dev/null 2>&1
		cluster_hw n2
	}
	plug drain=yes watch_action=end requeue=yes
	a=$(run spank)
	plug drain=no
	c=$(run hand)
	b=$(run slurm)
	echo "port change to the requeued job's tasks running again on healthy nodes: spank-ib ${a} s; Slurm's own requeue at that moment ${b} s; cancelled and resubmitted by hand at that moment ${c} s, plus the time until a person reads the log (target < 60 s)"
fi
echo "# bench_watch: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
cluster_stop
