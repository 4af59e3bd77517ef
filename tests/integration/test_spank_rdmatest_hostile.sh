#!/usr/bin/env bash
# test_spank_rdmatest_hostile.sh: what a hostile local user (the job's owner
# among them), a dead munged and a hung munged do to `srun --ib-test` in the
# project's Slurm cluster (tests/integration/lib/cluster.sh), socket
# transport, the test in the build's ibprep (test_helper=) as the test's
# system user (the default test_user=, _spank-ib, which cluster.sh creates).
#
#   (a) a second local user squats every port of the test range it can bind
#       on n2 (inside n2's network namespace), answering with forged ERROR
#       frames: it can bind none of the privileged default range, the step
#       passes and nobody is blamed.  Control: with an unprivileged
#       test_ports= the same user does take n2's ports (and the plugin warns).
#   (b) a relay on the path: n1's test traffic to n2 is redirected by an
#       nftables rule in n1's namespace through a process of that user that
#       forwards the bytes and flips one byte after the HELLO: the link fails
#       closed, the finding says the frames failed authentication, no node is
#       blamed as bad hardware.
#   (c) that user holds every unprivileged port outside the ephemeral range
#       on n2: no effect.  (Holding the ephemeral range too would stop every
#       outgoing connection of every user on the node, Slurm's included: no
#       port choice can prevent that.)
#   (d) the plugin's munged stopped (a second munged of the cluster's key,
#       stopped by its recorded PID and restarted after: Slurm's own RPCs need
#       the harness's munged): the step fails at once naming munge, not memlock.
#   (f) munge_socket= names a socket that accepts and never answers (a
#       fixture process, killed by PID after): the child is killed at the
#       deadline and the finding says so; no child is left behind.
#   (i) test_user= naming a user that does not exist, or the job's own
#       owner: the step fails saying why and how to fix it.
#   (k) munge credentials through the cluster's munged
#       (tests/tools/auth-probe.c): the test's user's pass; one the job's
#       owner mints is refused for its uid; the owner cannot decode the test's.
#   (j) the owner stops their own step through Slurm (scancel --signal=STOP)
#       while its test waits: the child is gone by the plugin's deadline and
#       every port is root's to bind again.
#   (g) the issue's acceptance: a process of the job's owner polls /proc
#       through 20 steps of that owner, trying pidfd_getfd and ptrace on
#       every process it sees and kill(pid, 0) on the test children
#       (tests/tools/steal-fds.c): it may signal, take or trace none of them
#       (nor slurmstepd), every child it saw was not dumpable and not the
#       owner's, and root can bind every port of 230-299 after.  On main's
#       58c050c (the child ran as the job's owner) it took 60 children's
#       descriptors and kept listeners root could not bind again.
#   (h) slurmstepd killed (SIGKILL) while its child waits: the child goes
#       with it (PR_SET_PDEATHSIG), long before the test's deadline.
#   (l) silence is not evidence: with net.ipv4.ip_unprivileged_port_start
#       lowered in n2's namespace, a second user listens (never accepting) on
#       half of the test range there: 5 consecutive steps pass and no finding
#       names n2 (n2's own warning about the sysctl is expected).
#   and a non-root user's step passes.
#
# The user is created with useradd and removed after (trap), every process
# the test starts is recorded and ended by its PID.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh
. tests/integration/lib/local_users.sh

NAME="srun --ib-test against a hostile local user"
local_users_cluster_or_done "$NAME" 3 nsenter
local_users_trap
# Where Slurm's daemons look users up: the host, or a matrix leg's chroot
# (the hostile processes below run on the host by that numeric uid).
HOSTILE=ibph$$
local_user_add_or_done "$NAME" "$HOSTILE" HUID
# A second local user, not the owner of any step here ((g)).
OTHER=ibpo$$
OUID=
local_user_add "$OTHER" OUID

cluster_suite_out
HELPER=$(cluster_test_helper)
PY=$PWD/tests/integration/lib/hostile.py
# The squatter forges frames of the protocol version this build speaks.
IBP_OOB_VERSION=$(awk '$1 == "#define" && $2 == "IBP_OOB_VERSION" { print $3 }' include/ibprep/oob.h)
export IBP_OOB_VERSION
# The round-trip floor is not under test here: a loaded machine's loopback
# takes more than the default 1 ms (two healthy cases failed "latency high"
# at 1.1 and 3.9 ms with the load average at 21).
plug() {
	cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
		test_transport=socket test_timeout=8 test_max_lat_us=200000 "test_helper=$HELPER" "$@")"
}
run() {
	local name=$1
	shift
	local t0
	t0=$(date +%s%N)
	"$@" >"$OUT/$name" 2>&1
	RC=$?
	MS=$((($(date +%s%N) - t0) / 1000000))
}

# A hostile process in node $1's network namespace, as the second user;
# waits (bounded) for its status line.  Sets HPID, HSTATUS.
hostile_start() {
	local node=$1 name=$2 t
	shift 2
	HSTATUS=$CL_DIR/hostile/$name.status
	rm -f "$HSTATUS"
	nsenter --net="/run/netns/$CL_TAG-$node" \
		setpriv --reuid="$HUID" --regid="$HUID" --clear-groups \
		/usr/bin/python3 "$PY" "$1" "$HSTATUS" "${@:2}" >"$CL_LOG/$name.out" 2>&1 </dev/null &
	HPID=$!
	FIXTURE_PIDS+=("$HPID")
	for t in $(seq 1 600); do
		[ -s "$HSTATUS" ] && return 0
		kill -0 "$HPID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
hostile_stop() {
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# The status files are written by the hostile user: a directory of their own.
mkdir -p "$CL_DIR/hostile"
chmod 1777 "$CL_DIR/hostile"

# The ports of 230-299 root cannot bind (and listen on) in node $1's namespace.
root_cannot_bind() {
	nsenter --net="/run/netns/$CL_TAG-$1" /usr/bin/python3 -c '
import socket, sys
bad = []
for p in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", p))
        s.listen(1)
    except OSError:
        bad.append(str(p))
    s.close()
print(" ".join(bad))' 230 299
}

# The munged that accepts and never answers ((f), (j), (h)): socket
# $CL_DIR/NAME.sock, a fixture ended by its PID (SPID).
stall_start() {
	local st=$CL_DIR/$1.status t
	/usr/bin/python3 "$PY" stall "$st" "$CL_DIR/$1.sock" >"$CL_LOG/$1.out" 2>&1 </dev/null &
	SPID=$!
	FIXTURE_PIDS+=("$SPID")
	for t in $(seq 1 100); do
		[ -s "$st" ] && return 0
		sleep 0.05
	done
	return 1
}
# The PID of the test child in node $1's namespace (waits up to 5 s for one).
test_child_on() {
	local t p
	for t in $(seq 1 100); do
		for p in $(ip netns pids "$CL_TAG-$1" 2>/dev/null); do
			tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "rdmatest --child" && { echo "$p"; return 0; }
		done
		sleep 0.05
	done
}
# 0 once process $1 is gone or a zombie (which holds no descriptor; whoever
# inherited it reaps it when it will), within $2 tries 50 ms apart.
gone_within() {
	local t st
	for t in $(seq 1 "$2"); do
		st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)
		[ -z "$st" ] || [ "$st" = Z ] && return 0
		sleep 0.05
	done
	return 1
}

# Every node's report says the test passed and nobody is blamed.
all_pass() {
	local f=$OUT/$1 n
	[ "$RC" -eq 0 ] || return 1
	for n in $CL_NODES; do
		grep -q "spank-ib: $n: cross-node test: pass with 3 nodes" "$f" || return 1
	done
	! grep -qE "failing the step|suspect|rdmatest_node|cannot listen" "$f"
}

# ---- sanity, and a non-root user's step ----
plug "munge_socket=$CL_DIR/munge/munge.sock"
run healthy cl_srun -N3 --ib-test --ib-report true
if all_pass healthy; then tap_ok "healthy: srun -N3 --ib-test passes on every node ($MS ms)"; else tap_fail "healthy" "rc=$RC; $(show healthy)"; fi
run as_user $CL_CLIENT_PREFIX setpriv --reuid="$HUID" --regid="$HUID" --clear-groups env SLURM_CONF="$CL_CONF" \
	timeout 60 "$SLURM_BIN/srun" -N3 --ib-test --ib-report true
if all_pass as_user; then tap_ok "a non-root user's step passes (its test child's identity: (g))"; else tap_fail "non-root user's step" "rc=$RC; $(show as_user)"; fi

# No munge_socket=: the plugin takes munged's socket from slurm.conf's
# AuthInfo=socket= (the harness's munged is not at munge's default path).
plug
run authinfo cl_srun -N3 --ib-test --ib-report true
if all_pass authinfo && grep -q "^AuthInfo=socket=$CL_DIR/munge/munge.sock" "$CL_CONF"; then
	tap_ok "no munge_socket=: munged's socket comes from slurm.conf's AuthInfo=socket=, the test passes"
else
	tap_fail "munge socket from AuthInfo" "rc=$RC; $(grep -i authinfo "$CL_CONF"); $(show authinfo)"
fi
plug "munge_socket=$CL_DIR/munge/munge.sock"

# ---- (a) squatting the test range ----
if hostile_start n2 squat squat 230 299; then
	status=$(cat "$HSTATUS")
	run squat cl_srun -N3 --ib-test --ib-report true
	if [ "$status" = "ready bound 0 of 70" ] && all_pass squat; then
		tap_ok "(a) a user squatting 230-299 on n2 binds none of them; the step passes, nobody blamed"
	else
		tap_fail "(a) squatting the privileged range" "squatter: $status; rc=$RC; $(show squat)"
	fi
else
	tap_fail "(a) squatter starts" "$(tail -3 "$CL_LOG/squat.out")"
fi
hostile_stop "$HPID"
# Control: the same user on an unprivileged range does take n2's ports.
if hostile_start n2 squat_u squat 61000 61069; then
	status=$(cat "$HSTATUS")
	plug "munge_socket=$CL_DIR/munge/munge.sock" test_ports=61000-61069
	run squat_u cl_srun -N3 --ib-test true
	if [ "$status" = "ready bound 70 of 70" ] && [ $RC -ne 0 ] &&
		grep -q "n2: .*cannot listen on any of the test's candidate ports" "$OUT/squat_u" &&
		cat "$CL_LOG"/slurmd.n*.log | grep -q "spank-ib: warning: n[0-9]: test_ports=61000-61069: ports 61000-61069 are unprivileged"; then
		tap_ok "(a) control: with unprivileged test_ports= the same user takes n2's ports (and the plugin warned the admin, in slurmd's log)"
	else
		tap_fail "(a) control on unprivileged ports" "squatter: $status; rc=$RC; $(show squat_u)"
	fi
else
	tap_fail "(a) control squatter starts" "$(tail -3 "$CL_LOG/squat_u.out")"
fi
hostile_stop "$HPID"
plug "munge_socket=$CL_DIR/munge/munge.sock"

# ---- (b) a relay on the path that flips one byte after the HELLO ----
if ! command -v nft >/dev/null; then
	tap_skip "(b) a relay on the path" "nft not installed (contrib/install-deps.sh)"
elif hostile_start n1 relay relay 61234; then
	n2addr=$CL_NET.12
	if ip netns exec "$CL_TAG-n1" nft -f - <<EOF 2>"$OUT/nft"; then
table ip ibp_relay {
	chain out { type nat hook output priority -100; meta skuid != $HUID ip daddr $n2addr tcp dport 230-299 redirect to :61234; }
}
EOF
		run relay cl_srun -N3 --ib-test true
		relayed=$(cat "$HSTATUS")
		ip netns exec "$CL_TAG-n1" nft delete table ip ibp_relay 2>/dev/null
		if [ $RC -ne 0 ] && [ "$relayed" != ready ] &&
			grep -q "n1 -> n2 (round 1, rail 0) failed authentication" "$OUT/relay" &&
			! grep -qE "rdma test [a-z ]+ on (every|its) link" "$OUT/relay"; then
			tap_ok "(b) a relay flipping one byte after the HELLO ($relayed): the link fails closed, frames failed authentication, nobody blamed"
		else
			tap_fail "(b) relay on the path" "relay: $relayed; rc=$RC; $(show relay)"
		fi
		grep -m1 "failed authentication" "$OUT/relay" | sed 's/^/# /'
	else
		tap_skip "(b) a relay on the path" "nftables does not work here: $(head -2 "$OUT/nft")"
	fi
else
	tap_fail "(b) relay starts" "$(tail -3 "$CL_LOG/relay.out")"
fi
hostile_stop "$HPID"
run after_relay cl_srun -N3 --ib-test true
if [ $RC -eq 0 ]; then tap_ok "(b) relay gone: the test passes again"; else tap_fail "(b) relay gone" "$(show after_relay)"; fi

# ---- (c) holding every unprivileged port outside the ephemeral range ----
# One holder per 15000 ports: a process may not have more descriptors than
# RLIMIT_NOFILE (20000 in some containers, and root may not raise it there).
read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range
chunks=()
add_chunks() {
	local lo=$1 hi=$2 e
	while [ "$lo" -le "$hi" ]; do
		e=$((lo + 14999))
		[ "$e" -gt "$hi" ] && e=$hi
		chunks+=("$lo $e")
		lo=$((e + 1))
	done
}
[ "$elo" -gt 1024 ] && add_chunks 1024 $((elo - 1))
[ "$ehi" -lt 65535 ] && add_chunks $((ehi + 1)) 65535
held=0 total=0 hpids=() ok=1
for i in "${!chunks[@]}"; do
	# shellcheck disable=SC2086
	if hostile_start n2 "hold$i" hold ${chunks[$i]}; then
		read -r _ _ b _ m <"$HSTATUS"
		held=$((held + b))
		total=$((total + m))
		hpids+=("$HPID")
	else
		ok=0
		tap_fail "(c) holder $i starts" "$(tail -3 "$CL_LOG/hold$i.out")"
	fi
done
if [ "$ok" = 1 ]; then
	run hold cl_srun -N3 --ib-test --ib-report true
	if all_pass hold && [ "$held" -gt $((total - 100)) ]; then
		tap_ok "(c) a user holding every unprivileged port outside $elo-$ehi on n2 ($held of $total): no effect"
	else
		tap_fail "(c) holding the unprivileged ports" "held $held of $total; rc=$RC; $(show hold)"
	fi
fi
for p in "${hpids[@]}"; do hostile_stop "$p"; done

# ---- (d) the plugin's munged stopped ----
M2=$CL_DIR/munge2
mkdir -p "$M2"
$CL_CLIENT_PREFIX chown munge:munge "$M2" # the munge user of the release under test
munged2_start() {
	local t
	$CL_DAEMON_PREFIX setpriv --reuid=munge --regid=munge --init-groups \
		munged --foreground --force --socket="$M2/munge.sock" --key-file="$CL_DIR/munge/munge.key" \
		--pid-file="$M2/munged.pid" --log-file="$M2/munged.log" --seed-file="$M2/munged.seed" \
		--origin=127.0.0.1 >>"$CL_LOG/munged2.out" 2>&1 </dev/null &
	M2PID=$!
	FIXTURE_PIDS+=("$M2PID")
	for t in $(seq 1 100); do
		[ -S "$M2/munge.sock" ] && return 0
		sleep 0.05
	done
	return 1
}
if munged2_start; then
	plug "munge_socket=$M2/munge.sock"
	run m_ok cl_srun -N3 --ib-test --ib-report true
	m_ok_rc=$RC
	kill -TERM "$M2PID"
	for t in $(seq 1 50); do kill -0 "$M2PID" 2>/dev/null || break; sleep 0.1; done
	wait "$M2PID" 2>/dev/null
	# A long test_timeout: failing at once must not depend on an idle machine.
	plug "munge_socket=$M2/munge.sock" test_timeout=20
	run m_dead cl_srun -N3 --ib-test true
	if [ $m_ok_rc -eq 0 ] && [ $RC -ne 0 ] && grep -qi "munge" "$OUT/m_dead" &&
		! grep -qi "memlock" "$OUT/m_dead" && [ "$MS" -lt 10000 ]; then
		tap_ok "(d) munged stopped: the step fails in $MS ms (test_timeout 20 s) naming munge, not memlock"
	else
		tap_fail "(d) munged stopped" "healthy rc=$m_ok_rc; rc=$RC, $MS ms; $(show m_dead)"
	fi
	grep -i "munge" "$OUT/m_dead" | grep -v "munged's socket" | head -2 | sed 's/^/# /'
	plug "munge_socket=$M2/munge.sock"
	if munged2_start; then
		run m_back cl_srun -N3 --ib-test true
		if [ $RC -eq 0 ]; then tap_ok "(d) munged restarted: the test passes again"; else tap_fail "(d) munged restarted" "$(show m_back)"; fi
		hostile_stop "$M2PID"
	else
		tap_fail "(d) munged restarts" "$(tail -3 "$CL_LOG/munged2.out")"
	fi
else
	tap_fail "(d) a second munged starts" "$(tail -3 "$CL_LOG/munged2.out")"
fi

# ---- (f) munged that accepts and never answers: the child is killed at the deadline ----
if stall_start stall; then
	plug "munge_socket=$CL_DIR/stall.sock" test_timeout=2
	run stall cl_srun -N2 --ib-test true
	left=
	for ns in "$CL_TAG-n1" "$CL_TAG-n2"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "rdmatest --child" && left+=" $p"
		done
	done
	if [ $RC -ne 0 ] && grep -q "did not finish in 3.0 s" "$OUT/stall" && grep -q "killed" "$OUT/stall" &&
		[ -z "$left" ]; then
		tap_ok "(f) a munged that never answers: the child is killed at test_timeout + 1 s, the step fails saying so ($MS ms), no child left"
	else
		tap_fail "(f) stalled munged" "rc=$RC, $MS ms, children left:${left:-none}; $(show stall)"
	fi
	hostile_stop "$SPID"
else
	tap_fail "(f) the stalling socket starts" "$(tail -3 "$CL_LOG/stall.out")"
fi

# ---- (i) the test's identity missing or wrong: a refusal that names the fix ----
# A test_user= that does not exist (named here, never created), and one
# that is the job's own owner: the step fails before any child runs, saying
# why; never a silent fallback to the job's uid.
NOUSER=ibpnouser$$
plug "munge_socket=$CL_DIR/munge/munge.sock" "test_user=$NOUSER"
run nouser cl_srun -N2 --ib-test true
if [ $RC -ne 0 ] && has nouser "test user '$NOUSER' does not exist on this node" &&
	has nouser "install the spank-ib package (it creates the system user _spank-ib)" &&
	! grep -q "cross-node test: pass" "$OUT/nouser"; then
	tap_ok "(i) test_user= naming a missing user: the step fails naming the user and the fix"
else
	tap_fail "(i) missing test user" "rc=$RC; $(show nouser)"
fi
plug "munge_socket=$CL_DIR/munge/munge.sock" "test_user=$HOSTILE"
run ownuser $CL_CLIENT_PREFIX setpriv --reuid="$HUID" --regid="$HUID" --clear-groups env SLURM_CONF="$CL_CONF" \
	timeout 60 "$SLURM_BIN/srun" -N2 --ib-test true
if [ $RC -ne 0 ] && has ownuser "test user '$HOSTILE' (uid $HUID) is the job's own user" &&
	has ownuser "set test_user= in plugstack.conf to a system user"; then
	tap_ok "(i) test_user= naming the job's own owner: refused for that job, saying why"
else
	tap_fail "(i) test user = the job's owner" "rc=$RC; $(show ownuser)"
fi

# ---- (k) munge credentials: the test's own, not the job's owner's ----
# As the test's user and as the job's owner, through the cluster's munged
# (tests/tools/auth-probe.c, auth.c itself): a credential the test's user
# encodes passes; one the owner encodes, with the right claims and the test's
# uid as its only reader, is refused for its encoder; and the owner cannot
# decode the test's (the secret in it stays the test's).
TUID=$($CL_CLIENT_PREFIX id -u "$CL_TEST_USER" 2>/dev/null)
TGID=$($CL_CLIENT_PREFIX id -g "$CL_TEST_USER" 2>/dev/null)
AP=$CL_DIR/auth-probe
if [ -z "$TUID" ]; then
	tap_fail "(k) the test's user exists" "no $CL_TEST_USER where the daemons look users up"
elif [ ! -f build/libibprep.a ]; then
	tap_skip "(k) munge credentials of the test's user and of the owner" "build/libibprep.a not built (make)"
elif ! ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Iinclude -o "$AP" tests/tools/auth-probe.c build/libibprep.a \
	$(pkg-config --libs libsodium 2>/dev/null || echo -lsodium) -lmunge 2>"$OUT/ap_cc"; then
	tap_fail "(k) tests/tools/auth-probe.c builds" "$(cat "$OUT/ap_cc")"
else
	chmod 0755 "$AP"
	MSOCK=$CL_DIR/munge/munge.sock
	as_test() { setpriv --reuid="$TUID" --regid="$TGID" --clear-groups "$@"; }
	as_owner() { setpriv --reuid="$HUID" --regid="$HUID" --clear-groups "$@"; }
	v1=$(as_test "$AP" "$MSOCK" sign "$TUID" 77 | as_test "$AP" "$MSOCK" verify "$TUID" 77)
	v2=$(as_owner "$AP" "$MSOCK" sign "$TUID" 77 | as_test "$AP" "$MSOCK" verify "$TUID" 77)
	v3=$(as_test "$AP" "$MSOCK" sign "$TUID" 77 | as_owner "$AP" "$MSOCK" verify "$TUID" 77)
	if [ "$v1" = accepted ] &&
		[ "$v2" = "refused: credential is from uid $HUID, expected $TUID (the uid the test runs as here: the same on every node)" ] &&
		[[ "$v3" == "refused: munge credential refused: "* ]]; then
		tap_ok "(k) munge: the test's credential passes; one the job's owner mints is refused for its uid; the owner cannot decode the test's"
	else
		tap_fail "(k) munge credentials" "test's own: $v1; the owner's: $v2; the owner decoding the test's: $v3"
	fi
	echo "# (k) the owner decoding the test's credential: $v3"
fi

# ---- (j) what the job's owner can ask of Slurm: stopping their own step ----
# The owner's step waits in its test (a munged that never answers,
# test_timeout=4); the owner sends SIGSTOP to the step through Slurm
# (scancel --signal, which root relays): their own step fails, the test
# child is gone by test_timeout + 1 s and every port is root's to bind again.
stall_start stall3
plug "munge_socket=$CL_DIR/stall3.sock" test_timeout=4
$CL_CLIENT_PREFIX setpriv --reuid="$HUID" --regid="$HUID" --clear-groups env SLURM_CONF="$CL_CONF" \
	timeout 60 "$SLURM_BIN/srun" -N2 --ib-test true >"$OUT/j_stop" 2>&1 </dev/null &
JSRUN=$!
FIXTURE_PIDS+=("$JSRUN")
t0=$(date +%s%N)
child=$(test_child_on n1)
job=$(cl_squeue -h -u "$HOSTILE" -o %A 2>/dev/null | head -1)
if [ -z "$child" ] || [ -z "$job" ]; then
	tap_fail "(j) the owner's step and its test child" "child '$child', job '$job'; $(show j_stop)"
else
	$CL_CLIENT_PREFIX setpriv --reuid="$HUID" --regid="$HUID" --clear-groups env SLURM_CONF="$CL_CONF" \
		timeout 30 "$SLURM_BIN/scancel" --signal=STOP "$job" >"$OUT/j_scancel" 2>&1
	sleep 0.3
	cstate=$(awk '{print $3}' "/proc/$child/stat" 2>/dev/null)
	# the plugin's own bound: test_timeout + 1 s, then SIGKILL and a reap of at most 2 s
	gone=0
	gone_within "$child" 300 && gone=1
	ms=$((($(date +%s%N) - t0) / 1000000))
	unbound=
	for n in n1 n2; do
		b=$(root_cannot_bind "$n")
		[ -n "$b" ] && unbound+=" $n: $b;"
	done
	if [ "$gone" = 1 ] && [ -z "$unbound" ]; then
		tap_ok "(j) the owner stops their own step through Slurm (child state after: ${cstate:-gone}): the test child is gone $ms ms after srun started (its bound: test_timeout 4 s + 1 s), every port root's again"
	else
		tap_fail "(j) the owner stopping their step" "child $child state after scancel '${cstate}', gone=$gone $ms ms after srun started; ports root could not bind:${unbound:- none}; $(cat "$OUT/j_scancel")"
	fi
fi
kill -KILL "$JSRUN" 2>/dev/null
wait "$JSRUN" 2>/dev/null
[ -n "$job" ] && cl_scancel "$job" 2>/dev/null
hostile_stop "$SPID"
cluster_wait_idle 30 >/dev/null 2>&1

# ---- (g) the job's owner against their own steps' test children ----
# A process of the job's owner polls /proc during 20 consecutive steps of
# that owner and tries pidfd_getfd on every descriptor and ptrace on every
# process it can see (tests/tools/steal-fds.c), keeping any socket on a test
# port it gets, as a thief would; then root must be able to bind every port
# of test_ports= on every node while the poller still holds its loot.
STEAL=$CL_DIR/steal-fds
if ! ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -o "$STEAL" tests/tools/steal-fds.c 2>"$OUT/steal_cc"; then
	tap_fail "(g) tests/tools/steal-fds.c builds" "$(cat "$OUT/steal_cc")"
else
	chmod 0755 "$STEAL"
	plug "munge_socket=$CL_DIR/munge/munge.sock"
	GSTATUS=$CL_DIR/hostile/steal.status GSTOP=$CL_DIR/hostile/steal.stop
	rm -f "$GSTATUS" "$GSTOP"
	TUID=$($CL_CLIENT_PREFIX id -u "$CL_TEST_USER" 2>/dev/null || echo -1)
	setpriv --reuid="$HUID" --regid="$HUID" --clear-groups "$STEAL" "$GSTATUS" "$GSTOP" 230 299 "$TUID" \
		>"$CL_LOG/steal.out" 2>&1 </dev/null &
	GPID=$!
	FIXTURE_PIDS+=("$GPID")
	# the same tries by a user who owns none of the steps
	OSTATUS=$CL_DIR/hostile/steal2.status
	rm -f "$OSTATUS"
	OPID=
	if [ -n "$OUID" ]; then
		setpriv --reuid="$OUID" --regid="$OUID" --clear-groups "$STEAL" "$OSTATUS" "$GSTOP" 230 299 "$TUID" \
			>"$CL_LOG/steal2.out" 2>&1 </dev/null &
		OPID=$!
		FIXTURE_PIDS+=("$OPID")
	fi
	passed=0 failed_out=
	for i in $(seq 1 20); do
		run "steal$i" $CL_CLIENT_PREFIX setpriv --reuid="$HUID" --regid="$HUID" --clear-groups \
			env SLURM_CONF="$CL_CONF" timeout 60 "$SLURM_BIN/srun" -N3 --ib-test true
		if [ $RC -eq 0 ]; then passed=$((passed + 1)); else failed_out=steal$i; fi
	done
	touch "$GSTOP"
	for t in $(seq 1 100); do [ -s "$GSTATUS" ] && break; kill -0 "$GPID" 2>/dev/null || break; sleep 0.1; done
	for t in $(seq 1 100); do [ -z "$OPID" ] || [ -s "$OSTATUS" ] && break; sleep 0.1; done
	loot=$(cat "$GSTATUS" 2>/dev/null)
	oloot=$(cat "$OSTATUS" 2>/dev/null)
	echo "# (g) poller: ${loot:-no status} (steps passed: $passed of 20)"
	echo "# (g) another user's poller: ${oloot:-no status}"
	declare -A og=()
	# shellcheck disable=SC2086
	set -- ${oloot#done }
	while [ $# -ge 2 ]; do og[$1]=$2; shift 2; done
	# shellcheck disable=SC2086
	set -- ${loot#done }
	declare -A got=()
	while [ $# -ge 2 ]; do got[$1]=$2; shift 2; done
	unbound=
	for n in $CL_NODES; do
		b=$(root_cannot_bind "$n")
		[ -n "$b" ] && unbound+=" $n: $b;"
	done
	if [ "${loot%% *}" = done ] && [ "${got[children]:-0}" -gt 0 ] && [ "${got[child_as_owner]}" = 0 ] &&
		[ "${got[child_signalable]}" = 0 ] && [ "${got[child_fds]}" = 0 ] &&
		[ "${got[child_nondumpable]}" = "${got[children]}" ] &&
		[ "${got[child_ptraced]}" = 0 ] && [ "${got[stepd_fds]}" = 0 ] && [ "${got[stepd_ptraced]}" = 0 ] &&
		[ "${got[stepd_signalable]}" = 0 ] && [ "${got[listeners]}" = 0 ] &&
		[ "${got[port_sockets]}" = 0 ] && [ -z "$unbound" ] &&
		[ "$passed" = 20 ] && [ "${oloot%% *}" = done ] && [ "${og[children]:-0}" -gt 0 ] &&
		[ "${og[child_signalable]}" = 0 ] && [ "${og[child_fds]}" = 0 ] && [ "${og[child_ptraced]}" = 0 ] &&
		[ "${og[stepd_fds]}" = 0 ] && [ "${og[stepd_ptraced]}" = 0 ] &&
		[ "${og[stepd_signalable]}" = 0 ] && [ "${og[listeners]}" = 0 ] &&
		[ "${og[port_sockets]}" = 0 ]; then
		tap_ok "(g) the job's owner polling /proc through 20 steps (${got[children]} test children seen, none as the owner, every one not dumpable) may signal none, takes no descriptor and ptraces nothing of them or of slurmstepd, nor may another user; root binds every port of 230-299 after"
	else
		tap_fail "(g) the job's owner against their own steps' test children" \
			"poller: ${loot:-no status}; another user's: ${oloot:-no status}; ports root could not bind:${unbound:- none}; steps passed $passed of 20${failed_out:+; $(show "$failed_out")}"
	fi
	hostile_stop "$GPID"
	[ -n "$OPID" ] && hostile_stop "$OPID"
fi


# ---- (h) slurmstepd killed while its test child runs ----
# n1's child waits on a munged that never answers (test_timeout=6); that
# step's slurmstepd on n1 is killed (SIGKILL, by PID): the child goes with
# it (PR_SET_PDEATHSIG), long before the test's deadline, and root can bind
# every test port on n1 again.
stall_start stall2
plug "munge_socket=$CL_DIR/stall2.sock" test_timeout=6
cl_srun -N2 --ib-test true >"$OUT/h_killed" 2>&1 </dev/null &
HSRUN=$!
FIXTURE_PIDS+=("$HSRUN")
child=$(test_child_on n1)
stepd=$(awk '/^PPid:/ {print $2}' "/proc/$child/status" 2>/dev/null)
cuid=$(awk '/^Uid:/ {print $2}' "/proc/$child/status" 2>/dev/null)
if [ -z "$child" ] || [ -z "$stepd" ] || ! tr '\0' ' ' <"/proc/$stepd/cmdline" 2>/dev/null | grep -q slurmstepd; then
	tap_fail "(h) a test child and its slurmstepd found on n1" "child '${child}', parent '${stepd}'; $(show h_killed)"
else
	t0=$(date +%s%N)
	kill -KILL "$stepd"
	gone=0
	gone_within "$child" 40 && gone=1
	ms=$((($(date +%s%N) - t0) / 1000000))
	b=$(root_cannot_bind n1)
	if [ "$gone" = 1 ] && [ -z "$b" ] && [ "$cuid" = "$($CL_CLIENT_PREFIX id -u "$CL_TEST_USER")" ]; then
		tap_ok "(h) slurmstepd killed: its test child (uid $cuid, the test's user) is gone $ms ms later, before the test's deadline; root binds every port on n1"
	else
		tap_fail "(h) slurmstepd killed" "child $child (uid $cuid) gone=$gone after $ms ms; ports root could not bind: ${b:-none}"
	fi
fi
kill -KILL "$HSRUN" 2>/dev/null
wait "$HSRUN" 2>/dev/null
hostile_stop "$SPID"

# ---- (l) a silent holder of half of n2's test range ----
# (h)'s step on n2 holds its port until its own deadline: the holder starts
# once the earlier steps are over and root can bind every port there (bounded).
cl_scancel -u root >/dev/null 2>&1
cluster_wait_idle 30 >/dev/null 2>&1
for t in $(seq 1 40); do [ -z "$(root_cannot_bind n2)" ] && break; sleep 0.25; done
plug "munge_socket=$CL_DIR/munge/munge.sock"
UPS=$(nsenter --net="/run/netns/$CL_TAG-n2" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)
if nsenter --net="/run/netns/$CL_TAG-n2" sh -c 'echo 200 >/proc/sys/net/ipv4/ip_unprivileged_port_start' 2>"$OUT/sysctl"; then
	# the even ports: candidates walk the range with a stride coprime to its
	# 70 ports (odd), so every step keeps a free one, and the first candidate
	# is a silent one in about half the steps
	# shellcheck disable=SC2046
	if hostile_start n2 silent hold $(for p in $(seq 230 2 298); do echo "$p $p"; done); then
		status=$(cat "$HSTATUS")
		bad=
		for i in 1 2 3 4 5; do
			run "silent$i" cl_srun -N3 --ib-test --ib-report true
			# a finding that names n2: any line about it but the reports' and n2's sysctl warning
			n2_lines=$(grep -E "spank-ib: (warning: )?n[13]: .*n2|spank-ib: (warning: )?n2: " "$OUT/silent$i" |
				grep -vE "NCCL_SOCKET_IFNAME|n2: (cross-node test: pass with 3 nodes|job |task |   [0-9])|test_ports=230-299: ports 230-299 are unprivileged")
			if [ $RC -ne 0 ] || [ -n "$n2_lines" ] ||
				! grep -q "spank-ib: n1: cross-node test: pass with 3 nodes" "$OUT/silent$i"; then
				bad+=" $i"
			fi
		done
		if [ "$status" = "ready bound 35 of 35" ] && [ -z "$bad" ]; then
			tap_ok "(l) a user listening silently on every even port of n2's test range: 5 consecutive steps pass, no finding names n2"
		else
			first=$(echo $bad | awk '{print $1}')
			tap_fail "(l) silent holder on n2" "holder: $status; failed runs:$bad; $(show "silent$first" 2>/dev/null)"
		fi
	else
		tap_fail "(l) silent holder starts" "$(tail -3 "$CL_LOG/silent.out")"
	fi
	hostile_stop "$HPID"
	nsenter --net="/run/netns/$CL_TAG-n2" sh -c "echo $UPS >/proc/sys/net/ipv4/ip_unprivileged_port_start"
else
	tap_skip "(l) silent holder on n2" "cannot lower ip_unprivileged_port_start in n2's namespace: $(cat "$OUT/sysctl")"
fi

tap_done
