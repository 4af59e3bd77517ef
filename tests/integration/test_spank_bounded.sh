#!/usr/bin/env bash
# test_spank_bounded.sh: the waits of spank_ib.so that depend on something
# outside the node's control are bounded, in the project's Slurm cluster
# (tests/integration/lib/cluster.sh):
#
#   (a) --ib-report to a file on a hung file system: an ext4 image mounted
#       (loop) in n1's mount namespace only, then frozen (fsfreeze: every
#       write there blocks, as on a hung NFS or FUSE mount).  The step goes
#       does not wait for it (the task runs, the message says the report was
#       not written); the writer is stuck in the kernel, where no signal
#       reaches it, so Slurm ends the step once the file system is back.
#   (b) NCCL_SOCKET_IFNAME's peer lookup with a resolver that never answers:
#       in n1's mount namespace a hosts file without n2 and a resolv.conf
#       naming a silent name server on the bridge's own address (a fixture
#       that reads the queries and never answers).  The lookup runs in the
#       helper, killed at its deadline: slurmstepd holds no socket to the
#       name server while the step runs, the step goes on through the launch
#       node's route, and the report says why.
#
# Every mount is made in n1's mount namespace only and undone at the end;
# the fixtures are ended by their recorded PIDs.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

NAME="spank-ib's bounded waits"
cluster_prereqs_or_done "$NAME"
if [ -n "$CL_DAEMON_PREFIX" ]; then
	tap_skip "$NAME" "its srun runs on the host (the release's plugin needs the chroot's libc) and its mounts (the frozen file system, hosts and resolv.conf) are made at the host's paths in n1's mount namespace, which a release chroot's slurmstepd does not see (make check-integration runs it on the host release)"
	tap_done
	exit
fi
for b in nsenter mkfs.ext4 fsfreeze /usr/bin/python3; do
	if ! command -v "$b" >/dev/null; then
		tap_skip "$NAME" "$b not installed (contrib/install-deps.sh)"
		tap_done
		exit
	fi
done
cluster_start_or_done 2
cluster_hw_or_done "$NAME"
cluster_suite_out

FIXTURE_PIDS=()
NS_MOUNTS=() # "PID DIR", newest last: unmounted in reverse order
FROZEN=
cleanup() {
	local p i
	if [ -n "$FROZEN" ]; then nsenter -t "${FROZEN%% *}" -m fsfreeze -u "${FROZEN#* }" 2>/dev/null; fi
	FROZEN=
	for p in "${FIXTURE_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${FIXTURE_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	FIXTURE_PIDS=()
	for ((i = ${#NS_MOUNTS[@]} - 1; i >= 0; i--)); do
		nsenter -t "${NS_MOUNTS[$i]%% *}" -m umount "${NS_MOUNTS[$i]#* }" 2>/dev/null
	done
	NS_MOUNTS=()
	cluster_stop
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
	"test_helper=$(cluster_test_helper)")"

# A process of the node's namespaces by its command name (slurmd, slurmstepd).
ns_pids() {
	local p
	for p in $(ip netns pids "$CL_TAG-$1" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p"
	done
}
N1=$(ns_pids n1 slurmd | head -1)
if [ -z "$N1" ]; then
	tap_fail "n1's slurmd found" "no slurmd in $CL_TAG-n1"
	tap_done
	exit
fi

# ---- (a) the report on a frozen file system ----
IMG=$CL_DIR/hung.img
FS=$CL_DIR/hung
mkdir -p "$FS"
if truncate -s 16M "$IMG" && mkfs.ext4 -q -F "$IMG" >"$OUT/mkfs" 2>&1 &&
	nsenter -t "$N1" -m mount -o loop "$IMG" "$FS" 2>>"$OUT/mkfs"; then
	NS_MOUNTS+=("$N1 $FS")
	run thawed cl_srun -N1 -w n1 --ib-check --ib-report=text:"$FS/report.%n" true
	thawed_ok=0
	nsenter -t "$N1" -m grep -q "spank-ib: n1: job" "$FS/report.n1" 2>/dev/null && thawed_ok=1
	nsenter -t "$N1" -m rm -f "$FS/report.n1"
	if nsenter -t "$N1" -m fsfreeze -f "$FS" 2>>"$OUT/mkfs"; then
		FROZEN="$N1 $FS"
		timeout 120 env SLURM_CONF="$CL_CONF" "$SLURM_BIN/srun" -N1 -w n1 --ib-check \
			--ib-report=text:"$FS/report.%n" sh -c 'echo "ran on $SLURMD_NODENAME"' \
			>"$OUT/frozen" 2>&1 &
		SRUN=$!
		ran=0
		for t in $(seq 1 300); do
			has frozen "ran on n1" && { ran=1; break; }
			sleep 0.1
		done
		# The writer is stuck in the kernel (a frozen ext4 cannot be killed out
		# of): Slurm ends the step once it exits, when the file system is back.
		nsenter -t "$N1" -m fsfreeze -u "$FS"
		FROZEN=
		wait "$SRUN"
		RC=$?
		if [ "$thawed_ok" = 1 ] && [ "$ran" = 1 ] && [ "$RC" -eq 0 ] &&
			has frozen "spank-ib: n1: warning: --ib-report file $FS/report.n1: not written within 2000 ms"; then
			tap_ok "(a) --ib-report on a frozen file system: the message says it was not written, the task ran while the file system hung; the step ended once it was back"
		else
			tap_fail "(a) report on a frozen file system" "thawed write ok=$thawed_ok; task ran while frozen=$ran; rc=$RC; $(show frozen)"
		fi
	else
		tap_skip "(a) report on a frozen file system" "fsfreeze refused: $(tail -1 "$OUT/mkfs")"
	fi
else
	tap_skip "(a) report on a frozen file system" "no loop-mounted ext4 here: $(tail -2 "$OUT/mkfs")"
fi

# ---- (b) a name server that never answers ----
STATUS=$CL_DIR/dns.status
/usr/bin/python3 tests/integration/lib/hostile.py dns "$STATUS" "$CL_NET.1" >"$CL_LOG/dns.out" 2>&1 </dev/null &
FIXTURE_PIDS+=("$!")
for t in $(seq 1 100); do [ -s "$STATUS" ] && break; sleep 0.05; done
grep -v " n2$" "$CL_DIR/hosts/n1" >"$CL_DIR/hosts.n1-no-n2"
printf 'nameserver %s\noptions timeout:30 attempts:1\n' "$CL_NET.1" >"$CL_DIR/resolv.silent"
if [ -s "$STATUS" ] &&
	nsenter -t "$N1" -m mount --bind "$CL_DIR/hosts.n1-no-n2" /etc/hosts 2>"$OUT/dnsmount" &&
	NS_MOUNTS+=("$N1 /etc/hosts") &&
	nsenter -t "$N1" -m mount --bind "$CL_DIR/resolv.silent" /etc/resolv.conf 2>>"$OUT/dnsmount" &&
	NS_MOUNTS+=("$N1 /etc/resolv.conf"); then
	# The step sleeps past the lookup's deadline; meanwhile n1's slurmstepd is inspected.
	timeout 60 env SLURM_CONF="$CL_CONF" "$SLURM_BIN/srun" -N2 -w n1,n2 --ntasks-per-node=1 \
		--ib-affinity --ib-report sh -c 'sleep 4; echo "SOCK $SLURMD_NODENAME $NCCL_SOCKET_IFNAME"' \
		>"$OUT/silent" 2>&1 &
	SRUN=$!
	held="" stepd="" seen=""
	for t in $(seq 1 80); do
		for p in $(ns_pids n1 slurmstepd); do
			tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '\.0\]' || continue
			stepd=$p
			# a socket of slurmstepd to the name server's port 53 (0035): a lookup in it
			for ino in $(ls -l "/proc/$p/fd" 2>/dev/null | grep -o 'socket:\[[0-9]*\]' | tr -dc '0-9\n'); do
				awk -v i="$ino" '$10 == i && $3 ~ /:0035$/' "/proc/$p/net/udp" "/proc/$p/net/udp6" 2>/dev/null |
					grep -q . && held+=" $ino"
			done
		done
		grep -q "queries [1-9]" "$STATUS" 2>/dev/null && seen=1
		[ -n "$seen" ] && [ -n "$stepd" ] && [ "$t" -gt 30 ] && break
		sleep 0.1
	done
	wait "$SRUN"
	RC=$?
	queries=$(cat "$STATUS")
	if [ "$RC" -eq 0 ] && [ -n "$stepd" ] && [ -n "$seen" ] && [ -z "$held" ] &&
		has silent "SOCK n1 =eth0" &&
		has silent "spank-ib: n1: NCCL_SOCKET_IFNAME eth0: route to the launch node $CL_NET.1 (peer n2 does not resolve (timed out))"; then
		tap_ok "(b) a name server that never answers: the lookup ran in the helper and gave up, slurmstepd held no socket to it, the step went on by the launch node's route ($queries)"
	else
		tap_fail "(b) silent name server" "rc=$RC, slurmstepd ${stepd:-not seen}, its sockets to port 53:${held:-none}, server $queries; $(show silent)"
	fi
else
	tap_fail "(b) silent name server set up" "$(cat "$CL_LOG/dns.out" "$OUT/dnsmount" 2>/dev/null | tail -3)"
fi

tap_done
