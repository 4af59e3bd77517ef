#!/usr/bin/env bash
# test_spank_rootonly.sh: what the plugin (root in slurmstepd) takes from others, in a real
# Slurm cluster (tests/integration/lib/cluster.sh), three simulated nodes:
#   n1, n2  healthy
#   n3      mlx5_3 port 1 trained at 1X (degraded width)
# Cases: a config= file only root can change (else refused, naming owner and mode in the
# user's srun output, the step failed, no node drained, the job prolog included; a root
# 0600 file works for a user's srun); job faults never cached (a batch job whose first step
# has a lowered memlock limit); test_helper= of another user (refused, the same wording) and
# root's (runs); --ib-report=json:FIFO; a cache_dir a user can write (the verdicts' and the
# default setup's topology cache: planted links and XML never read); two
# nodes sharing one cache_dir.  A second user is created with useradd and removed in a trap.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "spank plugin: root-only inputs"

cluster_test_user spankro

# slurmd runs SPANK job prologs only when its stack had a plugin at start: the
# refused config= must not fail the prolog either (Slurm drains with "Prolog error").
CL_EXTRA_CONF="PrologFlags=Alloc"
CL_SPANK_AT_START=1
cluster_start_or_done 3 n3:mlx5_3/1:width=1X
cluster_hw_or_done "root-only inputs"
cluster_suite_out 0777

BASE_KEYS="min_memlock=4096"
plug() { cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" $BASE_KEYS "$@")"; }
logs() { cat "$CL_LOG"/slurmd.*.log 2>/dev/null; }

if ! $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1 && $CL_CLIENT_PREFIX useradd -M -s /bin/sh "$TEST_USER" 2>/dev/null; then
	USER_CREATED=1
fi
HAVE_USER=0
if $CL_CLIENT_PREFIX id "$TEST_USER" >/dev/null 2>&1; then
	HAVE_USER=1
	TEST_UID=$($CL_CLIENT_PREFIX id -u "$TEST_USER")
	asuser() { (cd /tmp && $CL_CLIENT_PREFIX setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups env SLURM_CONF="$CL_CONF" timeout 60 "$@"); }
fi

# ---- config=: only root may be able to change it ----
CONF_DIR=$CL_DIR/etc
mkdir -p "$CONF_DIR"
chmod 0755 "$CONF_DIR"
conf=$CONF_DIR/spank_ib.conf
printf 'min_memlock=4096\ncache_ttl=0\n' >"$conf"
chmod 0644 "$conf"
if [ "$HAVE_USER" = 1 ]; then
	chown "$TEST_UID" "$conf"
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" "config=$conf")"
	run cf_owner cl_srun -N1 -w n1 --ib-check echo RAN
	rc_owner=$RC
	# a batch job too: its job prolog and its batch step read the same file
	job=$(cl_sbatch --parsable -N1 -w n2 -o "$OUT/cf_batch.out" --wrap 'srun echo RAN; echo step_rc=$?')
	cluster_wait_job "$job" 60 >/dev/null
	sleep 0.3
	st1=$(cluster_node_state n1) st2=$(cluster_node_state n2)
	r1=$(cluster_node_reason n1) r2=$(cluster_node_reason n2)
	if [ $rc_owner -ne 0 ] && ! has cf_owner RAN &&
		has cf_owner "spank-ib: n1: config: $conf is owned by $TEST_USER (uid $TEST_UID) with mode 0644" &&
		has cf_owner "configuration is refused: failing the step" &&
		logs | grep -qF "$conf is owned by $TEST_USER (uid $TEST_UID) with mode 0644"; then
		tap_ok "config= owned by another user: srun exits $rc_owner, its output names spank-ib, the file, owner and mode"
	else
		tap_fail "config= owned by another user" "rc=$rc_owner; $(show cf_owner); $(logs | grep -F spank-ib | tail -5)"
	fi
	if [[ "$st1$st2" != *DRAIN* ]] && [[ "$r1$r2" != *"Prolog error"* ]] &&
		grep -q "step_rc=[1-9]" "$OUT/cf_batch.out" 2>/dev/null &&
		grep -qF "spank-ib: n2: config: $conf is owned by" "$OUT/cf_batch.out"; then
		tap_ok "config= owned by another user: no node drained (n1 $st1, n2 $st2), the job prolog passes, the batch job's step fails naming the file"
	else
		tap_fail "config= refused drains nothing" "n1=$st1 ($r1) n2=$st2 ($r2); $(cat "$OUT/cf_batch.out" 2>&1 | head -10)"
	fi
	cluster_resume_all >/dev/null
	chown root:root "$conf"
else
	tap_skip "config= owned by another user" "cannot create a user (useradd)"
fi
chmod 0664 "$conf"
cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" "config=$conf")"
run cf_group cl_srun -N1 -w n1 --ib-check echo RAN
if [ $RC -ne 0 ] && ! has cf_group RAN && has cf_group "spank-ib: n1: config: $conf is owned by root (uid 0) with mode 0664" &&
	logs | grep -qF "$conf is owned by root (uid 0) with mode 0664"; then
	tap_ok "config= writable by its group: refused, srun's output names the file, owner and mode 0664"
else
	tap_fail "config= group-writable" "rc=$RC; $(show cf_group); $(logs | grep -F spank-ib | tail -5)"
fi
chmod 0600 "$conf"
if [ "$HAVE_USER" = 1 ]; then
	run cf_0600 asuser "$SLURM_BIN/srun" -N1 -w n1 --ib-check true
	if [ $RC -eq 0 ] && ! has cf_0600 "spank-ib"; then
		tap_ok "config= root's 0600, plugin required: a user's srun works (config is read by root only)"
	else
		tap_fail "config= 0600 for a user's srun" "rc=$RC; $(show cf_0600)"
	fi
else
	tap_skip "config= 0600 for a user's srun" "cannot create a user (useradd)"
fi

# ---- test_helper=: root's only, the same rule and wording as config= ----
if [ "$HAVE_USER" = 1 ]; then
	HDIR=$CL_DIR/helper
	mkdir -p "$HDIR"
	chmod 0755 "$HDIR"
	$CL_CLIENT_PREFIX cp "$(cluster_test_helper)" "$HDIR/ibprep" # the installed one: in a matrix leg, the chroot's
	chmod 0755 "$HDIR/ibprep"
	chown "$TEST_UID" "$HDIR/ibprep"
	plug test_transport=socket test_timeout=4 "test_helper=$HDIR/ibprep" \
		"munge_socket=$CL_DIR/munge/munge.sock"
	run th_owner cl_srun -N2 -w n1,n2 --ib-test echo RAN
	if [ $RC -ne 0 ] && has th_owner "test helper $HDIR/ibprep is owned by $TEST_USER (uid $TEST_UID) with mode 0755"; then
		tap_ok "test_helper= owned by another user: the test refused, the message names the file, owner and mode"
	else
		tap_fail "test_helper= owned by another user" "rc=$RC; $(show th_owner)"
	fi
	chown root:root "$HDIR/ibprep"
	run th_root cl_srun -N2 -w n1,n2 --ib-test echo RAN
	if [ $RC -eq 0 ] && has th_root RAN && ! has th_root "test helper"; then
		tap_ok "test_helper= root's, in root's directories: the test runs"
	else
		tap_fail "test_helper= root's" "rc=$RC; $(show th_root)"
	fi
else
	tap_skip "test_helper= owned by another user" "cannot create a user (useradd)"
fi

# ---- job faults are the step's: never cached ----
plug cache_ttl=60
cat >"$OUT/memlock.sh" <<'EOF'
#!/bin/bash
(ulimit -S -l 1024; srun --ib-check true) && echo "STEP0 ok" || echo "STEP0 failed"
srun --ib-check true && echo "STEP1 ok" || echo "STEP1 failed"
EOF
run ml_sub cl_sbatch --parsable -N1 -w n1 -o "$OUT/memlock.out" "$OUT/memlock.sh"
jid=$(grep -Eo '^[0-9]+' "$OUT/ml_sub" | head -1)
[ -n "$jid" ] && cluster_wait_job "$jid" 90
if has memlock.out "STEP0 failed" && has memlock.out "locked-memory limit 1024 KiB"; then
	if has memlock.out "STEP1 ok" && ! grep -q "verdict of an earlier step" "$OUT/memlock.out"; then
		tap_ok "batch job: step 0 with memlock 1024 KiB fails (job fault), step 1 with the normal limit passes"
	else
		tap_fail "memlock: step 1 passes" "$(show memlock.out)"
	fi
else
	tap_fail "memlock: step 0 fails on the user's limit" "$(show ml_sub; show memlock.out)"
fi

# ---- --ib-report=json:FIFO ----
plug
mkfifo "$OUT/fifo"
chmod 0666 "$OUT/fifo"
start=$SECONDS
CL_CMD_TIMEOUT=60 run rep_fifo cl_srun -N1 -w n1 --ib-report="json:$OUT/fifo" true
el=$((SECONDS - start))
if [ $RC -eq 0 ] && has rep_fifo "--ib-report file $OUT/fifo" && has rep_fifo "FIFO"; then
	tap_ok "--ib-report=json:FIFO: the step completes (${el}s, bound 60 s) with a message naming the file"
else
	tap_fail "--ib-report=json:FIFO" "rc=$RC after ${el}s; $(show rep_fifo)"
fi
# a reader waiting on it changes nothing: still not a regular file (the reader
# ends at the plugin's close, or after 30 s); the step starts once the reader
# waits in its open (a fixed sleep was too short under load)
# The step before must have ended on n1 first: its step-end section opens the
# same FIFO (O_RDWR, at slurm_spank_exit, which may come after srun returned)
# and would take this reader away.
cluster_wait_idle 20 >/dev/null
timeout 30 cat "$OUT/fifo" >/dev/null 2>&1 &
FIFO_READER=$!
for t in $(seq 1 100); do
	for p in $(pgrep -P "$FIFO_READER" 2>/dev/null); do
		[ "$(cat "/proc/$p/wchan" 2>/dev/null)" = wait_for_partner ] && break 2
	done
	sleep 0.05
done
CL_CMD_TIMEOUT=60 run rep_fifo2 cl_srun -N1 -w n1 --ib-report="json:$OUT/fifo" true
kill "$FIFO_READER" 2>/dev/null
wait "$FIFO_READER" 2>/dev/null
if [ $RC -eq 0 ] && has rep_fifo2 "not a regular file"; then
	tap_ok "--ib-report=json:FIFO with a reader: refused after the open (fstat), the step goes on"
else
	tap_fail "--ib-report FIFO with a reader" "rc=$RC; $(show rep_fifo2)"
fi

# ---- a cache_dir a user can write: not used, nothing outside touched ----
if [ "$HAVE_USER" = 1 ]; then
	UC=$CL_DIR/ucache
	mkdir -p "$UC"
	chown "$TEST_UID" "$UC"
	chmod 0700 "$UC"
	victim=$CL_DIR/victim
	echo "root's file" >"$victim"
	chmod 0600 "$victim"
	# the user's race attempt: every record name of the next job ids points at root's file
	for i in $(seq 1 40); do ln -sf "$victim" "$UC/job.$i.n1"; done
	chown -h "$TEST_UID" "$UC"/job.*
	cluster_plugstack "$(cluster_spank_line "cache_dir=$UC" "$BASE_KEYS" cache_ttl=60)"
	l1=$(wc -l <"$CL_LOG/slurmd.n1.log")
	run uc1 cl_srun -N1 -w n1 --ib-check true
	run uc2 cl_srun -N1 -w n1 --ib-check true
	n_after=$(ls -A "$UC" | wc -l)
	said=$(tail -n +"$l1" "$CL_LOG/slurmd.n1.log" | grep -c "spank-ib: warning: n1: not caching verdicts: cache_dir $UC is owned by $TEST_USER")
	# the admin's to fix: in slurmd's log, once per step; the user's steps run silently
	if [ "$(cat "$victim")" = "root's file" ] && [ "$n_after" -eq 40 ] &&
		! find "$UC" -user root | grep -q . && [ "$said" -eq 2 ] && ! has uc1 spank-ib && ! has uc2 spank-ib; then
		tap_ok "a cache_dir the user owns: not used (one warning per step in slurmd's log), its symlinks never followed, nothing written"
	else
		tap_fail "user-writable cache_dir" "victim=$(cat "$victim"); entries=$n_after; said $said times; $(show uc1)"
	fi
	# The default setup (no topology=): the topology cache's own name, learnt
	# from a root's cache_dir, planted by the user in theirs as a link to
	# root's file and as an XML of their own (a poisoned topology).
	RC_DIR=$CL_DIR/nodes/n1/cache
	cluster_plugstack "$(cluster_spank_line "cache_dir=$RC_DIR" "$BASE_KEYS" | sed "s| topology=[^ ]*||")"
	run tc0 cl_srun -N1 -w n1 --ib-check --ib-affinity true
	tname=$(cd "$RC_DIR" 2>/dev/null && ls topology.n1.*.xml 2>/dev/null | head -1)
	mname=${tname%.xml}.map
	tmode=$(stat -c '%U %a' "$RC_DIR/$tname" "$RC_DIR/$mname" 2>/dev/null | tr '\n' ' ')
	if [ -n "$tname" ]; then
		rm -f "$UC"/job.*
		ln -sf "$victim" "$UC/$tname"
		ln -sf "$victim" "$UC/$mname"
		printf '<?xml version="1.0"?>\n<topology><object type="Machine"/></topology>\n' >"$UC/poison.xml"
		ln -sf "$victim" "$UC/.$tname.1"
		chown -h "$TEST_UID" "$UC/$tname" "$UC/$mname" "$UC/poison.xml" "$UC/.$tname.1"
		cluster_plugstack "$(cluster_spank_line "cache_dir=$UC" "$BASE_KEYS" | sed "s| topology=[^ ]*||")"
		l1=$(wc -l <"$CL_LOG/slurmd.n1.log")
		run tc1 cl_srun -N1 -w n1 --ib-check --ib-affinity true
		said=$(tail -n +"$l1" "$CL_LOG/slurmd.n1.log" | grep -c "spank-ib: warning: n1: not caching the topology: cache_dir $UC is owned by $TEST_USER")
		if [ "$tmode" = "root 600 root 600 " ] && [ "$RC" -eq 0 ] && [ "$(cat "$victim")" = "root's file" ] &&
			[ -L "$UC/$tname" ] && [ -L "$UC/$mname" ] && ! find "$UC" -user root | grep -q . && [ "$said" -ge 1 ] && ! has tc1 spank-ib; then
			tap_ok "the topology cache (no topology=): root's $tname and its mapped form mode 0600 in root's cache_dir; in a cache_dir the user owns, their planted links and XML are never read or followed, nothing is written, slurmd's log says why"
		else
			tap_fail "topology cache in a user's cache_dir" "mode='$tmode' rc=$RC victim=$(cat "$victim"); said $said; $(ls -la "$UC"); $(show tc1)"
		fi
	else
		tap_fail "topology cache written in root's cache_dir" "$(ls -la "$RC_DIR" 2>&1); $(show tc0)"
	fi
	# topology=: its mapped form kept in root's cache_dir, keyed by the file;
	# in the user's cache_dir, a planted form under the name root would use is
	# never mapped, nothing is written, slurmd's log says why
	cluster_plugstack "$(cluster_spank_line "cache_dir=$RC_DIR" "$BASE_KEYS")"
	run tf0 cl_srun -N1 -w n1 --ib-check --ib-affinity true
	fname=$(cd "$RC_DIR" 2>/dev/null && ls topofile.n1.*.map 2>/dev/null | head -1)
	fmode=$(stat -c '%U %a' "$RC_DIR/$fname" 2>/dev/null)
	if [ -n "$fname" ]; then
		cp "$RC_DIR/$fname" "$UC/$fname"
		chown "$TEST_UID" "$UC/$fname"
		chmod 0600 "$UC/$fname"
		cluster_plugstack "$(cluster_spank_line "cache_dir=$UC" "$BASE_KEYS")"
		l1=$(wc -l <"$CL_LOG/slurmd.n1.log")
		run tf1 cl_srun -N1 -w n1 --ib-check --ib-affinity true
		said=$(tail -n +"$l1" "$CL_LOG/slurmd.n1.log" | grep -c "spank-ib: warning: n1: not caching topology $CL_DIR/nodes/n1/topo.xml: cache_dir $UC is owned by $TEST_USER")
		if [ "$fmode" = "root 600" ] && [ "$RC" -eq 0 ] && ! find "$UC" -user root | grep -q . &&
			[ "$said" -ge 1 ] && ! has tf1 spank-ib; then
			tap_ok "topology=: its mapped form root's $fname mode 0600 in root's cache_dir; in a cache_dir the user owns, a planted form is never mapped, nothing is written, slurmd's log says why"
		else
			tap_fail "topology= cache in a user's cache_dir" "mode='$fmode' rc=$RC said $said; $(ls -la "$UC"); $(show tf1)"
		fi
	else
		tap_fail "topology= mapped form written in root's cache_dir" "$(ls -la "$RC_DIR" 2>&1); $(show tf0)"
	fi
	cleanup_user
else
	tap_skip "user-writable cache_dir" "cannot create a user (useradd)"
fi

# ---- two nodes sharing one cache_dir ----
SC=$CL_DIR/shared-cache
cluster_plugstack "$(cluster_spank_line "cache_dir=$SC" "$BASE_KEYS" cache_ttl=60)"
jid=$(cl_salloc --no-shell -N2 -w n1,n3 2>&1 | grep -Eo '[0-9]+' | head -1)
run sh1 cl_srun --jobid="$jid" --overlap -N2 --ib-check=warn true
run sh2 cl_srun --jobid="$jid" --overlap -N2 --ib-check true
rc2=$RC
# n3's record copied over n1's: the record names n3, so n1 must not believe it
cp -p "$SC/job.$jid.n3" "$SC/job.$jid.n1" 2>/dev/null
run sh3 cl_srun --jobid="$jid" --overlap -N1 -w n1 --ib-check true
rc3=$RC
cl_scancel "$jid" 2>/dev/null
if [ -f "$SC/job.$jid.n3" ] && [ $rc2 -ne 0 ] && grep -q "n3: failing the step.*verdict of an earlier step" "$OUT/sh2" &&
	! grep -q "n1: .*width" "$OUT/sh2" && [ $rc3 -eq 0 ] && ! has sh3 "spank-ib"; then
	tap_ok "two nodes sharing one cache_dir: each reads only its own verdict (n3's record under n1's name ignored)"
else
	tap_fail "shared cache_dir" "rc2=$rc2 rc3=$rc3; $(ls -la "$SC" 2>&1); $(show sh2; show sh3)"
fi

tap_done
