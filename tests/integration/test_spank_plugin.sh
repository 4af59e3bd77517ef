#!/usr/bin/env bash
# test_spank_plugin.sh: spank_ib.so in a real Slurm cluster (tests/integration/lib/cluster.sh):
# Debian's slurmctld, slurmd and munge, four DGX-H100-like simulated nodes:
#   n1, n2  healthy
#   n3      mlx5_3 port 1 trained at 1X (degraded width)
#   n4      mlx5_5 port 1 down (no cable); later: mlx5_4 port 1 without a subnet manager
# One cluster serves every case (plugstack.conf is re-read for each step).
# Environment: SPANK_IB_SO (the plugin, default build/spank_ib.so), and the
# harness's SLURM_SBIN / SLURM_BIN / CL_*_PREFIX for other Slurm releases.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "spank plugin in a Slurm cluster"

# The locked-memory limit of this shell reaches the tasks (SLURM_RLIMIT_MEMLOCK);
# some sandboxes cap it and refuse to raise it, so the base policy accepts 4 MiB.
BASE_KEYS="min_memlock=4096"
cluster_test_user spankibt

CL_EXTRA_CONF="PrologFlags=Alloc"
CL_SPANK_AT_START=1
cluster_start_or_done 4 n3:mlx5_3/1:width=1X n4:mlx5_5/1:down
cluster_hw_or_done "spank plugin cases"
cluster_suite_out 0777

plug() { cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" $BASE_KEYS "$@")"; }

drained() { [[ "$(cluster_node_state "$1")" == *DRAIN* ]]; }

# ---- options ----
run help cl_srun --help
ok=1
for o in ib-check ib-affinity ib-env ib-report ib-test; do has help "--$o" || ok=0; done
if [ $ok = 1 ]; then tap_ok "srun --help lists the five --ib-* options"; else tap_fail "srun --help lists the --ib-* options" "$(show help)"; fi
run sbhelp cl_sbatch --help
if has sbhelp "--ib-check" && has sbhelp "--ib-affinity"; then tap_ok "sbatch --help lists them too (allocator context)"; else tap_fail "sbatch --help lists --ib-*" "$(show sbhelp)"; fi

plug
run badopt cl_srun -N1 -w n1 --ib-check=sometimes true
if [ $RC -ne 0 ] && has badopt "--ib-check: bad value 'sometimes'"; then tap_ok "a bad option value stops srun with a message naming it"; else tap_fail "bad option value" "$(show badopt)"; fi
run badenv env SPANK_IB_AFFINITY=sideways bash -c '. tests/integration/lib/cluster.sh; CL_CONF='"$CL_CONF"' cl_srun -N1 -w n1 true'
if [ $RC -ne 0 ] && has badenv "SPANK_IB_AFFINITY=sideways"; then tap_ok "a bad SPANK_IB_* default stops srun naming the variable"; else tap_fail "bad env default" "$(show badenv)"; fi

cluster_plugstack "$(cluster_spank_line colour=blue)"
run badkey cl_srun -N1 -w n1 true
if [ $RC -ne 0 ] && has badkey "unknown key 'colour'"; then tap_ok "an unknown plugstack key refuses to load, naming the key"; else tap_fail "unknown plugstack key" "$(show badkey)"; fi
plug

# ---- healthy step: each task prints its environment ----
run healthy cl_srun -N2 -w n1,n2 --ntasks-per-node=8 -O --ib-check --ib-affinity \
	sh -c 'echo "ROW $SLURMD_NODENAME $SLURM_LOCALID $IBPREP_HCAS $IBPREP_CPUS $IBPREP_MEMS $CUDA_DEVICE_ORDER $CUDA_VISIBLE_DEVICES $NCCL_IB_HCA"'
if [ $RC -eq 0 ] && [ "$(grep -c '^ROW ' "$OUT/healthy")" -eq 16 ]; then
	tap_ok "healthy srun -N2 --ntasks-per-node=8 --ib-check --ib-affinity: exit 0, 16 tasks"
else
	tap_fail "healthy step" "rc=$RC; $(show healthy)"
fi
# The DGX H100 map (GPU i with its own HCA: NVIDIA's DGX H100 user guide), 14
# whole cores (both threads) per task, 4 tasks per socket.
hcas=(mlx5_0 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_9 mlx5_10 mlx5_11)
bad=""
for node in n1 n2; do
	for r in 0 1 2 3 4 5 6 7; do
		pkg=$((r / 4))
		base=$((pkg * 56 + (r % 4) * 14))
		want="ROW $node $r ${hcas[$r]}:1 $base-$((base + 13)),$((base + 112))-$((base + 125)) $pkg PCI_BUS_ID $r"
		grep -q "^$want =mlx5_0:1,mlx5_3:1" "$OUT/healthy" || bad+="$want; "
	done
done
if [ -z "$bad" ]; then tap_ok "every task got its GPU (CUDA_VISIBLE_DEVICES), rail HCA, 14 cores and NUMA node"; else tap_fail "placement matches the DGX H100 map" "missing: $bad
$(show healthy)"; fi
if [ $RC -eq 0 ] && [ -s "$OUT/healthy" ] && ! has healthy "spank-ib:"; then tap_ok "a healthy step prints nothing"; else tap_fail "a healthy step prints nothing" "$(show healthy)"; fi

run cvd env CUDA_VISIBLE_DEVICES=5 bash -c '. tests/integration/lib/cluster.sh; CL_CONF='"$CL_CONF"' cl_srun -N1 -w n1 --ntasks-per-node=2 -O --ib-affinity sh -c "echo CVD \$SLURM_LOCALID \$CUDA_VISIBLE_DEVICES"'
if [ "$(grep -c '^CVD [01] 5$' "$OUT/cvd")" -eq 2 ]; then tap_ok "a CUDA_VISIBLE_DEVICES already set (Slurm's GRES, the user) is kept"; else tap_fail "CUDA_VISIBLE_DEVICES respected" "$(show cvd)"; fi
run verbose cl_srun -N1 -w n1 --ntasks-per-node=2 -O --ib-affinity=verbose true
if [ $RC -eq 0 ] && has verbose "spank-ib: n1:    1  4,5,6,7 mlx5_6:1" ; then tap_ok "--ib-affinity=verbose prints each task's row"; else tap_fail "--ib-affinity=verbose" "$(show verbose)"; fi

# ---- node faults fail the step, named ----
run down cl_srun -N1 -w n4 --ib-check true
if [ $RC -ne 0 ] && has down "spank-ib: n4: mlx5_5 port 1: port state DOWN"; then tap_ok "down port: srun exits $RC, message names n4, mlx5_5, port 1"; else tap_fail "down port fails the step" "rc=$RC; $(show down)"; fi
run width cl_srun -N1 -w n3 --ib-check true
if [ $RC -ne 0 ] && has width "spank-ib: n3: mlx5_3 port 1: link width 1X, expected 4X"; then tap_ok "degraded width: srun exits $RC, message names n3, mlx5_3, port 1"; else tap_fail "degraded width fails the step" "rc=$RC; $(show width)"; fi
run once cl_srun -N1 -w n3 --ntasks-per-node=8 -O --ib-check true
n=$(grep -c "spank-ib: n3: mlx5_3 port 1" "$OUT/once")
if [ $RC -ne 0 ] && [ "$n" -eq 1 ]; then tap_ok "8 tasks on a bad node: the message is printed once"; else tap_fail "message once per node" "count $n; $(show once)"; fi
run warn cl_srun -N1 -w n3 --ib-check=warn true
if [ $RC -eq 0 ] && has warn "mlx5_3 port 1: link width 1X"; then tap_ok "--ib-check=warn reports and runs the step"; else tap_fail "--ib-check=warn" "rc=$RC; $(show warn)"; fi
run noflag cl_srun -N1 -w n3 true
if [ $RC -eq 0 ] && ! has noflag "spank-ib"; then tap_ok "without a flag the plugin does nothing, even on a bad node"; else tap_fail "no flag, no work" "$(show noflag)"; fi

# ---- drain ----
run nodrain cl_srun -N4 --ib-check true
st3=$(cluster_node_state n3)
if [ $RC -ne 0 ] && ! drained n3 && has nodrain "n3: mlx5_3 port 1" && ! has nodrain "draining"; then tap_ok "drain=no (default): the bad node stays up"; else tap_fail "drain=no does not drain" "rc=$RC state=$st3; $(show nodrain)"; fi
plug drain=yes
run drain cl_srun -N4 --ib-check true
sleep 0.3
r3=$(cluster_node_reason n3) r4=$(cluster_node_reason n4)
states="$(cluster_node_state n1) $(cluster_node_state n2) $(cluster_node_state n3) $(cluster_node_state n4)"
if [ $RC -ne 0 ] && ! drained n1 && ! drained n2 && drained n3 && drained n4 &&
	[[ "$r3" == "spank-ib: mlx5_3 port 1: link width 1X, expected 4X"* ]] &&
	[[ "$r4" == "spank-ib: mlx5_5 port 1: port state DOWN"* ]]; then
	tap_ok "drain=yes drains exactly n3 and n4, the finding as the reason"
else
	tap_fail "drain=yes drains the bad nodes only" "states=$states r3=$r3 r4=$r4; $(show drain)"
fi
if has drain "; draining n3"; then tap_ok "the message says the node is being drained"; else tap_fail "message says draining" "$(show drain)"; fi
cluster_resume_all >/dev/null

# A job fault never drains: the NCCL_IB_HCA prefix trap, and a low memlock.
run trap env NCCL_IB_HCA=mlx5_1 bash -c '. tests/integration/lib/cluster.sh; CL_CONF='"$CL_CONF"' cl_srun -N1 -w n1 --ib-check --ib-affinity sh -c "echo NCCL=\$NCCL_IB_HCA"'
if has trap "NCCL_IB_HCA entry 'mlx5_1' is a prefix: it also matches mlx5_10, mlx5_11" &&
	has trap "NCCL=mlx5_1" && ! drained n1; then
	tap_ok "NCCL_IB_HCA=mlx5_1: the prefix trap is reported, the user's value kept, n1 not drained"
else
	tap_fail "prefix trap reported, never drains" "state=$(cluster_node_state n1); $(show trap)"
fi
run force env NCCL_IB_HCA=mlx5_1 bash -c '. tests/integration/lib/cluster.sh; CL_CONF='"$CL_CONF"' cl_srun -N1 -w n1 --ib-affinity --ib-env=force sh -c "echo NCCL=\$NCCL_IB_HCA"'
if has force "NCCL==mlx5_0:1,mlx5_3:1"; then tap_ok "--ib-env=force replaces the user's value"; else tap_fail "--ib-env=force" "$(show force)"; fi

run memlock bash -c 'ulimit -l 1024 && . tests/integration/lib/cluster.sh && CL_CONF='"$CL_CONF"' cl_srun -N1 -w n1 --ib-check true'
if [ $RC -ne 0 ] && has memlock "locked-memory limit 1024 KiB (the user's, propagated by Slurm)" &&
	! drained n1; then
	tap_ok "memlock judged from SLURM_RLIMIT_MEMLOCK (ulimit -l 1024): a job fault, step fails, no drain"
else
	tap_fail "memlock from SLURM_RLIMIT_MEMLOCK" "rc=$RC state=$(cluster_node_state n1); $(show memlock)"
fi
cluster_resume_all >/dev/null

# ---- no subnet manager ----
cluster_hw n4 mlx5_4/1:nosm
run nosm cl_srun -N1 -w n4 --ib-check true
if [ $RC -ne 0 ] && has nosm "spank-ib: n4: mlx5_4 port 1: SM LID 0 (no subnet manager)"; then tap_ok "no subnet manager: step fails, names n4, mlx5_4, port 1"; else tap_fail "no SM fails the step" "rc=$RC; $(show nosm)"; fi
cluster_resume_all >/dev/null

# ---- sbatch: options reach the steps ----
plug
job=$(cl_sbatch --parsable -N1 -w n3 --ib-check -o "$OUT/batch3.%j" --wrap 'srun true; echo step_rc=$?')
cluster_wait_job "$job" 30 >/dev/null
f=$OUT/batch3.$job
if grep -q "spank-ib: n3: mlx5_3 port 1" "$f" 2>/dev/null && grep -q "step_rc=[1-9]" "$f"; then
	tap_ok "sbatch --ib-check: the job's srun step fails on the bad node"
else
	tap_fail "sbatch --ib-check reaches the steps" "$(cat "$f" 2>&1 | head -20)"
fi
job=$(cl_sbatch --parsable -N1 -w n1 --ib-affinity -o "$OUT/batch1.%j" --wrap 'srun -n1 printenv IBPREP_HCAS')
cluster_wait_job "$job" 30 >/dev/null
if grep -q "^mlx5_0:1,mlx5_3:1" "$OUT/batch1.$job" 2>/dev/null; then tap_ok "sbatch --ib-affinity: the step's task gets its IBPREP_* environment"; else tap_fail "sbatch --ib-affinity" "$(cat "$OUT/batch1.$job" 2>&1 | head)"; fi

# ---- enforce= without user flags ----
plug enforce=check,affinity
run enf_bad cl_srun -N1 -w n3 true
rc_bad=$RC
run enf_ok cl_srun -N1 -w n1 printenv IBPREP_HCAS
rc_ok=$RC
run enf_off cl_srun -N1 -w n3 --ib-check=off true
if [ $rc_bad -ne 0 ] && [ $rc_ok -eq 0 ] && [ $RC -ne 0 ] && has enf_bad "mlx5_3 port 1" && has enf_ok "mlx5_0:1" && has enf_off "mlx5_3 port 1"; then
	tap_ok "enforce=check,affinity: checks and placement without flags; a user cannot turn them off"
else
	tap_fail "enforce=" "$(show enf_bad; show enf_ok; show enf_off)"
fi

# ---- report ----
plug
run rep cl_srun -N2 -w n1,n2 --ntasks-per-node=4 -O --ib-affinity --ib-report="json:$OUT/rep.%n.%j.json" true
ok=1
for node in n1 n2; do
	f=$(ls "$OUT"/rep.$node.*.json 2>/dev/null | head -1)
	[ -n "$f" ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["node"]==sys.argv[2] and r["verdict"]=="pass" and len(r["tasks"])==4 and r["tasks"][2]["hcas"][0]=="mlx5_6:1", r' "$f" "$node" 2>>"$OUT/rep" || ok=0
done
if [ $ok = 1 ]; then tap_ok "--ib-report=json:FILE writes one JSON report per node (%n, %j)"; else tap_fail "--ib-report=json:FILE" "$(show rep)"; fi
run rept cl_srun -N1 -w n3 --ib-report true
if [ $RC -eq 0 ] && has rept "spank-ib: n3: job" && has rept "task  gpu"; then tap_ok "--ib-report alone: text table, findings as warnings, step runs"; else tap_fail "--ib-report text" "$(show rept)"; fi

# ---- cache_ttl: later steps of a job reuse the node's verdict ----
plug cache_ttl=60
jid=$(cl_salloc --no-shell -N1 -w n3 2>&1 | grep -Eo '[0-9]+' | head -1)
run c1 cl_srun --jobid="$jid" --overlap -N1 --ib-check true
cluster_hw n3 # repaired between two steps
run c2 cl_srun --jobid="$jid" --overlap -N1 --ib-check true
plug cache_ttl=0
run c3 cl_srun --jobid="$jid" --overlap -N1 --ib-check true
cl_scancel "$jid" 2>/dev/null
if has c1 "link width 1X" && has c2 "verdict of an earlier step" && ! has c3 "spank-ib" ; then
	tap_ok "cache_ttl: a later step reuses the verdict; cache_ttl=0 checks again"
else
	tap_fail "cache_ttl" "$(show c1; show c2; show c3)"
fi
cluster_hw n3 mlx5_3/1:width=1X
jid2=$(cl_salloc --no-shell -N1 -w n3 2>&1 | grep -Eo '[0-9]+' | head -1)
plug cache_ttl=60
cluster_hw n3
run c4 cl_srun --jobid="$jid2" --overlap -N1 --ib-check true
cl_scancel "$jid2" 2>/dev/null
if [ $RC -eq 0 ] && ! has c4 spank-ib; then tap_ok "a verdict is never reused across jobs"; else tap_fail "no reuse across jobs" "$(show c4)"; fi
cluster_hw n3 mlx5_3/1:width=1X

# ---- a non-root user ----
plug drain=yes
# Through the client prefix: in the release matrix the user must exist in
# the chroot, where srun and the daemons look it up (tests/matrix).
if ! $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1 && $CL_CLIENT_PREFIX useradd -M -s /bin/sh "$TEST_USER" 2>/dev/null; then
	USER_CREATED=1
fi
if $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1; then
	asuser() { (cd /tmp && $CL_CLIENT_PREFIX setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups env SLURM_CONF="$CL_CONF" timeout 60 "$@"); }
	run u_ok asuser "$SLURM_BIN/srun" -N1 -w n1 --ntasks-per-node=2 -O --ib-check --ib-affinity sh -c 'echo "U $(id -u) $IBPREP_HCAS"'
	run u_bad asuser "$SLURM_BIN/srun" -N1 -w n3 --ib-check true
	sleep 0.3
	uid=$($CL_CLIENT_PREFIX id -u "$TEST_USER")
	if [ "$(grep -c "^U $uid mlx5_" "$OUT/u_ok")" -eq 2 ] && [ $RC -ne 0 ] &&
		[[ "$(cluster_node_reason n3)" == "spank-ib: mlx5_3 port 1"* ]]; then
		tap_ok "a non-root user: placement as that user, and a bad node still drains (init_post_opt runs as root)"
	else
		tap_fail "non-root user" "reason=$(cluster_node_reason n3); $(show u_ok; show u_bad)"
	fi
	cleanup_user
else
	tap_skip "a non-root user" "cannot create a user (useradd)"
fi
cluster_resume_all >/dev/null

# ---- optional plugin, unexpected trouble ----
cluster_plugstack "optional $SPANK_IB_SO sysfs_root=$CL_DIR/nowhere topology=$CL_DIR/nowhere.xml bind=no"
l1=$(wc -l <"$CL_LOG/slurmd.n1.log")
run opt_aff cl_srun -N1 -w n1 --ib-affinity true
rc_aff=$RC
run opt_chk cl_srun -N1 -w n1 --ib-check true
# Slurm ignores an optional plugin's return codes: the message is all it can do.
# No placement is the admin's to fix (slurmd's log); a check that cannot run, the user's step's.
if [ $rc_aff -eq 0 ] && [ $RC -eq 0 ] && ! has opt_aff "spank-ib" &&
	tail -n +"$l1" "$CL_LOG/slurmd.n1.log" | grep -q "spank-ib: warning: n1: topology $CL_DIR/nowhere.xml: cannot load" &&
	has opt_chk "sysfs_root $CL_DIR/nowhere: cannot open"; then
	tap_ok "optional plugin, missing sysfs and topology: a clear message (no placement: slurmd's log), the step goes on"
else
	tap_fail "optional plugin trouble" "aff=$rc_aff check=$RC; $(show opt_aff; show opt_chk); $(tail -n +"$l1" "$CL_LOG/slurmd.n1.log" | grep spank-ib)"
fi
cluster_plugstack "required $SPANK_IB_SO sysfs_root=$CL_DIR/nowhere bind=no"
run req_chk cl_srun -N1 -w n1 --ib-check true
if [ $RC -ne 0 ] && has req_chk "sysfs_root $CL_DIR/nowhere: cannot open"; then
	tap_ok "required plugin: a check that cannot run fails the step (exit $RC)"
else
	tap_fail "required plugin, missing sysfs" "rc=$RC; $(show req_chk)"
fi

# ---- real binding on this machine's own live topology ----
ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then
	cluster_plugstack "required $SPANK_IB_SO cache_ttl=0 min_memlock=0 bind=yes cache_dir=$CL_DIR/nodes/%n/cache"
	run live cl_srun -N1 -w n1 --ntasks-per-node=2 -O --ib-affinity sh -c \
		'echo "LIVE $SLURM_LOCALID $IBPREP_CPUS $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
	a=$(awk '$1 == "LIVE" && $2 == 0 {print $3 "=" $4}' "$OUT/live")
	b=$(awk '$1 == "LIVE" && $2 == 1 {print $3 "=" $4}' "$OUT/live")
	if [ $RC -eq 0 ] && [ -n "$a" ] && [ -n "$b" ] && [ "${a%%=*}" = "${a#*=}" ] &&
		[ "${b%%=*}" = "${b#*=}" ] && [ "${a%%=*}" != "${b%%=*}" ]; then
		tap_ok "live topology, bind=yes: each task's CPU mask is its planned CPUs (task 0: ${a%%=*}, task 1: ${b%%=*})"
	else
		tap_fail "real binding on the live topology" "rc=$RC; $(show live)"
	fi
else
	tap_skip "real binding on the live topology" "this machine has $ncpu CPU: two tasks cannot get different CPUs"
fi

# ---- the prolog check (PrologFlags=Alloc) ----
# prolog_wait_drain NODE [TRIES]: wait (bounded) until NODE is drained.
prolog_wait_drain() {
	local i
	for i in $(seq 1 "${2:-50}"); do
		case "$(cluster_node_state "$1")" in *DRAIN*) return 0 ;; esac
		sleep 0.2
	done
	return 1
}
# The plugin drains the node through the watcher run once (--drain-now) on
# every release: the prolog's own process cannot use Slurm's API from 24.11.
rel=$(cl_scontrol --version 2>/dev/null | awk '{print $2}')
plug prolog_check=yes
l4=$(($(wc -l <"$CL_LOG/slurmd.n4.log") + 1))
job=$(cl_sbatch --parsable -N1 -w n4 -o /dev/null --wrap true)
prolog_wait_drain n4
r4=$(cluster_node_reason n4)
cl_scancel "$job" 2>/dev/null
job=$(cl_sbatch --parsable -N1 -w n1 -o "$OUT/prolog1.out" --wrap 'echo ran')
cluster_wait_job "$job" 30 >/dev/null
said=$(tail -n +"$l4" "$CL_LOG/slurmd.n4.log" | grep -o 'spank-ib: n4: drained n4 (NodeName from [^)]*)[^:]*: spank-ib: mlx5_4 port 1: SM LID 0.*' | head -1)
if drained n4 && [[ "$r4" == "spank-ib: mlx5_4 port 1: SM LID 0"* ]] && [ -n "$said" ] && ! drained n1 &&
	grep -q ran "$OUT/prolog1.out" 2>/dev/null; then
	tap_ok "prolog_check=yes (Slurm $rel): the bad node is drained at allocation, the fault as the reason ($r4; slurmd's log: ${said%%: spank-ib: mlx5_4*}); a healthy node runs the job"
else
	tap_fail "prolog check" "slurm $rel: n4=$(cluster_node_state n4) reason=$r4 n1=$(cluster_node_state n1); $(cat "$OUT/prolog1.out" 2>&1); n4's slurmd: $(tail -n +"$l4" "$CL_LOG/slurmd.n4.log" | grep -E 'spank-ib|prolog' | tail -n 8)"
fi
cluster_resume_all >/dev/null

# The drain that cannot be made (here: no watcher where watch_helper= says):
# slurmd's log says why, the prolog still fails and Slurm drains the node
# with its own reason, as docs/plugin.md says an admin then sees.
cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" $BASE_KEYS prolog_check=yes |
	sed "s|watch_helper=[^ ]*|watch_helper=$CL_DIR/no-such-watcher|")"
l4=$(($(wc -l <"$CL_LOG/slurmd.n4.log") + 1))
job=$(cl_sbatch --parsable -N1 -w n4 -o /dev/null --wrap true)
prolog_wait_drain n4
r4=$(cluster_node_reason n4)
cl_scancel "$job" 2>/dev/null
said=$(tail -n +"$l4" "$CL_LOG/slurmd.n4.log" | grep -o "spank-ib: n4: not draining n4 with the fault as the reason (watcher .*no-such-watcher.*Prolog error.*" | head -1)
if drained n4 && [ "$r4" = "Prolog error" ] && [ -n "$said" ]; then
	tap_ok "prolog_check=yes, the drain cannot run: Slurm's \"Prolog error\", slurmd's log says why (${said:0:160})"
else
	tap_fail "prolog check, no watcher" "slurm $rel: n4=$(cluster_node_state n4) reason=$r4; n4's slurmd: $(tail -n +"$l4" "$CL_LOG/slurmd.n4.log" | grep -E 'spank-ib|prolog' | tail -n 8)"
fi
cluster_resume_all >/dev/null

# A drain that never answers (slurmctld unreachable: Slurm's client retries
# for up to MessageTimeout; here a watcher that hangs) is killed at the
# plugin's bound (5 s): the prolog goes on, Slurm's "Prolog error" stays.
hung="60.$RANDOM$RANDOM" # a duration no other sleep on this machine has
printf '#!/bin/sh\nexec sleep %s\n' "$hung" >"$CL_DIR/hung-watcher"
chmod 0755 "$CL_DIR/hung-watcher"
cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" $BASE_KEYS prolog_check=yes |
	sed "s|watch_helper=[^ ]*|watch_helper=$CL_DIR/hung-watcher|")"
l4=$(($(wc -l <"$CL_LOG/slurmd.n4.log") + 1))
t0=$SECONDS
job=$(cl_sbatch --parsable -N1 -w n4 -o /dev/null --wrap true)
prolog_wait_drain n4 100
took=$((SECONDS - t0))
r4=$(cluster_node_reason n4)
cl_scancel "$job" 2>/dev/null
said=$(tail -n +"$l4" "$CL_LOG/slurmd.n4.log" | grep -o "spank-ib: n4: not draining n4 with the fault as the reason (the prolog's drain did not finish in 5.0 s.*" | head -1)
if drained n4 && [ "$r4" = "Prolog error" ] && [ -n "$said" ] && [ "$took" -le 15 ]; then
	tap_ok "prolog_check=yes, a drain that hangs: killed at 5 s, the node drained $took s after sbatch with Slurm's \"Prolog error\" ($said)"
else
	tap_fail "prolog check, hung drain bounded" "slurm $rel: $took s; n4=$(cluster_node_state n4) reason=$r4; n4's slurmd: $(tail -n +"$l4" "$CL_LOG/slurmd.n4.log" | grep -E 'spank-ib|prolog' | tail -n 8)"
fi
if pgrep -fx "sleep $hung" >/dev/null; then
	tap_fail "the hung drain was killed" "$(pgrep -afx "sleep $hung")"
else
	tap_ok "the hung drain was killed (no sleep $hung left)"
fi
cluster_resume_all >/dev/null

tap_done
