#!/usr/bin/env bash
# test_spank_requeue_hostile.sh: the job's owner against the plugin's
# one-shot watcher run (`spank-ib-watch --requeue-now=yes`, from user_init
# on the node the cross-node test suspects: spank_ib_requeue_now in
# spank/ib_watch.c), in the project's Slurm cluster of 3 nodes with n3 cut
# off from the test (cluster_cut: the test blames n3, which requeues the
# job without itself).  The rules: whatever runs with the job's uid is the
# owner's to ptrace, signal and replace; the one-shot must not be.
#
# A user created here (removed after) submits 3 such jobs, up to 6 until
# root has seen 2 one-shots (requeue_max=1; each job cancelled once requeued) with a hostile environment for its
# steps: LD_PRELOAD, SLURM_CONF, PATH with a fake spank-ib-watch first,
# SPANK_IB_* and SLURM_* values of its own.  While they run:
#   * a process of that user polls /proc (tests/tools/steal-fds.c with the
#     one-shot's pattern) and tries kill(pid, 0), pidfd_getfd on every
#     descriptor and PTRACE_SEIZE on every one-shot it sees (and on
#     slurmstepd, whose fork the one-shot is before its exec): it may do
#     none of them;
#   * root reads every one-shot it sees (tests/integration/lib/oneshot-observe.py):
#     real, effective and saved uid 0, no effective capability, the
#     binary is the configured watcher (root-owned, not the user's to
#     write, nor its directory), its environment is exactly PATH and
#     LC_ALL (none of the job's), its arguments are the plugin's (the job
#     and node ids, the library and slurm.conf of slurmd's, never the
#     job's SLURM_CONF).
# The jobs must have been requeued (the one-shot did its work).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh
. tests/integration/lib/local_users.sh

NAME="the requeue one-shot against the job's owner"
local_users_cluster_or_done "$NAME" 3
uncut() { cluster_uncut n3; }
local_users_trap uncut
HOSTILE=ibpq$$
local_user_add_or_done "$NAME" "$HOSTILE" HUID
cluster_suite_out 0777
if ! why=$(cluster_cut n3); then
	tap_skip "$NAME" "$why"
	tap_done
	exit
fi
WATCHER=$(cluster_watch_helper)
plug() {
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
		drain=yes requeue=yes requeue_max=1 test_transport=socket test_timeout=4 \
		test_max_lat_us=200000 "test_helper=$(cluster_test_helper)" \
		"munge_socket=$CL_DIR/munge/munge.sock" "$@")"
}
plug
jobfield() { cl_scontrol show job "$1" -o 2>/dev/null | grep -o "$2=[^ ]*" | cut -d= -f2; }

# The user's fake watcher and preload, in a directory of theirs.
EVIL=$OUT/evil
mkdir -p "$EVIL"
printf '#!/bin/sh\ntouch %s/ran\n' "$EVIL" >"$EVIL/spank-ib-watch"
chmod 0755 "$EVIL/spank-ib-watch"
printf 'ClusterName=evil\n' >"$EVIL/slurm.conf"
chown -R "$HUID:$HUID" "$EVIL"
cat >"$OUT/job.sh" <<EOF
#!/bin/sh
export PATH=$EVIL:\$PATH LD_PRELOAD=$EVIL/none.so SPANK_IB_REQUEUE=1 SLURM_RESTART_COUNT=0 \
	LC_ALL=hostile
# srun itself needs the cluster's slurm.conf: the user's goes to the step
srun --export=ALL,SLURM_CONF=$EVIL/slurm.conf --ib-test true
EOF
chmod 0755 "$OUT/job.sh"

STEAL=$CL_DIR/steal-fds
if ! ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -o "$STEAL" tests/tools/steal-fds.c 2>"$OUT/steal_cc"; then
	tap_fail "tests/tools/steal-fds.c builds" "$(cat "$OUT/steal_cc")"
	tap_done
	exit
fi
chmod 0755 "$STEAL"
mkdir -p "$CL_DIR/hostile"
chmod 1777 "$CL_DIR/hostile"
GSTATUS=$CL_DIR/hostile/steal.status GSTOP=$CL_DIR/hostile/steal.stop SEEN=$CL_DIR/oneshots
rm -f "$GSTATUS" "$GSTOP"
# The owner's poller: its "children" are the one-shots (uid 0, the pattern).
# The pattern goes through the environment: no command line of ours holds it.
STEAL_CHILD=--requeue-now=yes setpriv --reuid="$HUID" --regid="$HUID" --clear-groups \
	"$STEAL" "$GSTATUS" "$GSTOP" 230 299 0 >"$CL_LOG/steal.out" 2>&1 </dev/null &
FIXTURE_PIDS+=($!)
OBSERVE=--requeue-now=yes /usr/bin/python3 tests/integration/lib/oneshot-observe.py "$SEEN" "$GSTOP" \
	>"$CL_LOG/observe.out" 2>&1 </dev/null &
FIXTURE_PIDS+=($!)

# At least 3 jobs; more (up to 6) until root has seen 2 one-shots: each
# lives a fraction of a second, and a sweep of /proc may miss one.
requeued=0 jobs= i=0
while [ "$i" -lt 3 ] || { [ "$i" -lt 6 ] && [ "$(grep -c . "$SEEN" 2>/dev/null)" -lt 2 ]; }; do
	i=$((i + 1))
	JOB=$($CL_CLIENT_PREFIX setpriv --reuid="$HUID" --regid="$HUID" --clear-groups \
		env SLURM_CONF="$CL_CONF" timeout 30 "$SLURM_BIN/sbatch" --parsable -N3 --requeue \
		-o "$OUT/job$i.out" "$OUT/job.sh" 2>&1)
	if ! [[ "$JOB" =~ ^[0-9]+$ ]]; then
		tap_fail "sbatch as $HOSTILE" "$JOB"
		break
	fi
	jobs+=" $JOB"
	for t in $(seq 1 600); do
		[ "$(jobfield "$JOB" Restarts)" = 1 ] && break
		case "$(jobfield "$JOB" JobState)" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) break ;; esac
		sleep 0.1
	done
	[ "$(jobfield "$JOB" Restarts)" = 1 ] && requeued=$((requeued + 1))
	cl_cmd scancel "$JOB" >/dev/null 2>&1
	cluster_resume_all >/dev/null
done
touch "$GSTOP"
for t in $(seq 1 100); do [ -s "$GSTATUS" ] && break; sleep 0.1; done
loot=$(cat "$GSTATUS" 2>/dev/null)
echo "# poller: ${loot:-no status}"
# shellcheck disable=SC2086
set -- ${loot#done }
declare -A got=()
while [ $# -ge 2 ]; do got[$1]=$2; shift 2; done

if [ "$requeued" = "$i" ]; then
	tap_ok "$i jobs of $HOSTILE requeued by n3's one-shot with the hostile environment:$jobs"
else
	tap_fail "the jobs requeued" "$requeued of $i requeued:$jobs
$(cat "$OUT"/job*.out 2>&1 | tail -20; grep -h "after the cross-node test\|requeue" "$CL_LOG/slurmd.n3.log" | tail -10)"
fi

if [ "${loot%% *}" = done ] && [ "${got[children]:-0}" -gt 0 ] && [ "${got[child_as_owner]}" = 0 ] &&
	[ "${got[child_signalable]}" = 0 ] && [ "${got[child_fds]}" = 0 ] && [ "${got[child_ptraced]}" = 0 ] &&
	[ "${got[stepd_fds]}" = 0 ] && [ "${got[stepd_ptraced]}" = 0 ] && [ "${got[stepd_signalable]}" = 0 ]; then
	tap_ok "the owner's poller saw ${got[children]} one-shot(s), none as the owner: it may signal none, takes no descriptor and ptraces none of them, nor slurmstepd"
elif [ "${loot%% *}" = done ] && [ "${got[children]:-0}" = 0 ]; then
	tap_fail "the owner's poller" "it saw no one-shot (too short-lived for its sweeps?): ${loot}"
else
	tap_fail "the owner's poller" "${loot:-no status}"
fi

# root's view of every one-shot seen; files as the daemons see them (a
# release's chroot in the matrix: CL_CLIENT_PREFIX)
WEXE=$($CL_CLIENT_PREFIX stat -L -c %d:%i "$WATCHER" 2>&1)
n=0 bad=
while IFS=$'\t' read -r pid uids caps exe argv envs; do
	n=$((n + 1))
	[ "$uids" = "0 0 0 0" ] || bad+=" $pid: uids '$uids';"
	[ "$caps" = 0000000000000000 ] || bad+=" $pid: CapEff $caps;"
	[ "$exe" = "$WEXE" ] || bad+=" $pid: exe $exe, not $WATCHER ($WEXE);"
	[ "$envs" = $'PATH=/usr/sbin:/usr/bin:/sbin:/bin\x1fLC_ALL=C' ] || bad+=" $pid: environment '${envs//$'\x1f'/ }';"
	IFS=$'\x1f' read -r -a av <<<"$argv"
	[ "${av[0]}" = "$WATCHER" ] || bad+=" $pid: argv[0] ${av[0]};"
	for a in "${av[@]:1}"; do
		case "$a" in
		--requeue-now=yes | --host=n3 | --node=n3 | --requeue-max=1 | --requeue-begin=-1 | \
			--slurm-conf="$CL_CONF" | --step=[0-9]* | --parent=[0-9]*) ;;
		--job=*) [[ " $jobs " == *" ${a#--job=} "* ]] || bad+=" $pid: $a;" ;;
		--slurm-library=/*) [ "$($CL_CLIENT_PREFIX stat -c %u "${a#--slurm-library=}" 2>/dev/null)" = 0 ] || bad+=" $pid: $a;" ;;
		*) bad+=" $pid: argument '$a';" ;;
		esac
	done
done <"$SEEN"
if [ "$n" -gt 0 ] && [ -z "$bad" ]; then
	tap_ok "root saw $n one-shot sight(s): uid 0 real, effective and saved, no capability, the configured watcher, PATH and LC_ALL only, the plugin's arguments (slurmd's slurm.conf, not the job's)"
elif [ "$n" = 0 ]; then
	tap_fail "root's view of the one-shots" "none seen (too short-lived for the sweeps?)"
else
	tap_fail "root's view of the one-shots" "$bad"
fi

# the binary is not the owner's to replace: neither it nor a directory above it
w=$($CL_CLIENT_PREFIX readlink -f "$WATCHER") writable=
while [ -n "$w" ] && [ "$w" != / ]; do
	$CL_CLIENT_PREFIX test -e "$w" || writable+=" $w (missing)"
	$CL_CLIENT_PREFIX setpriv --reuid="$HUID" --regid="$HUID" --clear-groups test -w "$w" && writable+=" $w"
	w=$(dirname "$w")
done
if [ -z "$writable" ] && [ ! -e "$EVIL/ran" ]; then
	tap_ok "the watcher ($WATCHER) and every directory above it are not $HOSTILE's to write; the user's spank-ib-watch first on the job's PATH never ran"
else
	tap_fail "the watcher is not the owner's to replace" "writable:${writable:- none}; the fake ran: $([ -e "$EVIL/ran" ] && echo yes || echo no)"
fi
tap_done
