# local_users.sh: the local users a cluster test creates (a job's hostile
# owner, another user), the processes it starts beside the cluster, and the
# cleanup that ends both; source it after cluster.sh.  Users are created
# where Slurm's daemons look them up ($CL_CLIENT_PREFIX: the host, or a
# matrix leg's chroot), with no home and no shell.  cluster.sh's
# cluster_test_user is the one-user form (removed after cluster_stop through
# cl_suite_cleanup); this one also ends the test's own processes before the
# cluster stops, and takes any number of users.
#
#   local_users_cluster_or_done NAME NODES [CMD...]
#       the preamble: cluster_prereqs_or_done NAME, useradd, userdel, setpriv,
#       /usr/bin/python3 and every CMD installed (else a skip), the cluster
#       of NODES nodes started with its simulated hardware
#   local_users_trap [FN]
#       the EXIT, INT and TERM trap: every process in FIXTURE_PIDS killed by
#       its PID and waited for, FN (the test's own cleanup: cancel its
#       allocations, reconnect a node ...), cluster_stop, then every user
#       created here removed: first what still runs as that user (a step's
#       srun under `setpriv ... timeout`, whose PID the test recorded is
#       not its own) killed by PID, since userdel refuses a user with
#       processes and would leave it behind; the user exists only for
#       this test, so every process of its uid is the test's (on the host
#       only: a matrix leg's chroot numbers its users apart from the host's)
#   local_user_add USER VAR
#       creates USER, recorded for the cleanup, its uid in VAR; 1 when
#       useradd fails
#   local_user_add_or_done NAME USER VAR
#       the same, and a skip of NAME (the whole suite) when it fails
#   FIXTURE_PIDS+=("$pid")
#       a process of the test's for the cleanup to end
FIXTURE_PIDS=()
LOCAL_USERS=()
LOCAL_UIDS=()
LOCAL_USERS_CLEANUP=

local_users_cluster_or_done() {
	local name=$1 nodes=$2 b
	shift 2
	cluster_prereqs_or_done "$name"
	for b in useradd userdel setpriv /usr/bin/python3 "$@"; do
		if ! command -v "$b" >/dev/null; then
			tap_skip "$name" "$b not installed (contrib/install-deps.sh)"
			tap_done
			exit
		fi
	done
	cluster_start_or_done "$nodes"
	cluster_hw_or_done "$name"
}

local_users_cleanup() {
	local p u
	for p in "${FIXTURE_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${FIXTURE_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	FIXTURE_PIDS=()
	[ -z "$LOCAL_USERS_CLEANUP" ] || "$LOCAL_USERS_CLEANUP"
	cluster_stop
	# a chroot's uid may be a host user's too: there, nothing is killed
	[ -n "$CL_CLIENT_PREFIX" ] && LOCAL_UIDS=()
	for u in "${LOCAL_UIDS[@]}"; do
		for _ in $(seq 1 50); do
			p=$(ps -o pid=,stat= -u "$u" 2>/dev/null | awk '$2 !~ /^Z/ { print $1 }')
			[ -n "$p" ] || break
			# shellcheck disable=SC2086
			kill -KILL $p 2>/dev/null
			sleep 0.1
		done
	done
	for u in "${LOCAL_USERS[@]}"; do $CL_CLIENT_PREFIX userdel "$u" 2>/dev/null; done
	LOCAL_USERS=() LOCAL_UIDS=()
}

local_users_trap() {
	LOCAL_USERS_CLEANUP=${1:-}
	trap local_users_cleanup EXIT
	trap 'local_users_cleanup; exit 130' INT TERM
}

local_user_add() {
	local uid
	$CL_CLIENT_PREFIX useradd -M -s /usr/sbin/nologin "$1" 2>/dev/null || return 1
	LOCAL_USERS+=("$1")
	uid=$($CL_CLIENT_PREFIX id -u "$1") || return 1
	LOCAL_UIDS+=("$uid")
	printf -v "$2" '%s' "$uid"
}

local_user_add_or_done() {
	if ! local_user_add "$2" "$3"; then
		tap_skip "$1" "cannot create a user (useradd)"
		tap_done
		exit
	fi
}
