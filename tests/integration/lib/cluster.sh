# cluster.sh: a real multi-node Slurm cluster on one machine, for tests; source it.
#
# munge, slurmctld and one slurmd per node, for real: one private munged (its
# socket is a file every namespace can use), a bridge with a private /24 that
# exists only on this machine, slurmctld in its own network+UTS+mount
# namespace, each slurmd in its own network+UTS+mount namespace (started with
# nsenter --net + unshare, not `ip netns exec`: see notes/test-cluster.md).
# The root namespace is the login node.  All state lives under one mktemp
# directory; every process is recorded by PID and stopped by PID; namespaces,
# links and files carry one unique prefix and are removed by cluster_stop,
# which an EXIT trap always runs.  No traffic leaves the machine.
#
#   cluster_start N [NODE:FAULT[,FAULT...] ...]
#       starts N nodes n1..nN; each node gets a simulated DGX-H100-like sysfs
#       tree (tests/fixtures/mksysfs.py) and topology XML (mktopo.py) under
#       $CL_DIR/nodes/nX/ when the generators exist ($CL_HW=1, else 0); a
#       spec "n3:mlx5_3/1:width" passes "--fault mlx5_3/1:width" to mksysfs
#   cluster_stop                    idempotent; also runs from the EXIT trap
#   cluster_hw NODE [FAULT...]      regenerate one node's simulated hardware
#                                   (CL_HW_PRESET=roce ...: another mksysfs/mktopo
#                                   preset, default dgx-h100)
#   cluster_plugstack [LINE...]     write plugstack.conf (re-read by every step)
#   cluster_spank_line [KEY=VALUE...]  "required PLUGIN sysfs_root=... topology=... bind=no
#                                   watch_helper=... KEYS"
#   cl_srun / cl_sbatch / cl_salloc / cl_scontrol / cl_sinfo / cl_squeue / cl_sacct ARGS
#       the Slurm client commands with SLURM_CONF exported, bounded by CL_CMD_TIMEOUT
#   cluster_wait_idle [SECONDS]     wait until every node is idle (bounded)
#   cluster_resume_all              put every node back to idle
#   cluster_node_state NODE         "idle", "drained", ...
#   cluster_node_reason NODE
#   cluster_wait_job JOBID [SECONDS] wait (bounded) until a job has ended
#   cluster_rail_addr NODE DEV      (CL_RAILS=1) the address of DEV's netdev on NODE
#   cluster_rail_link NODE DEV up|down  DEV's netdev on NODE up or down
#   cluster_rail_swap NODE DEV1 DEV2    the two ports' cables swapped on NODE: each
#                                   netdev keeps its address, on the other rail's network
#   cluster_rail_swap_addrs NODE DEV1 DEV2  the two ports' addresses swapped on
#                                   NODE (each netdev on its own rail's network)
#   cluster_rail_restore            every rail back as cluster_start made it
#   cluster_watchers, cluster_watcher_of JOB NODE, cluster_watchers_ready JOB NODE...
#                                   the step watchers (spank-ib-watch) running
#
# Parameters (environment; set before cluster_start):
#   SLURM_SBIN     directory of slurmctld/slurmd (/usr/sbin)
#   SLURM_BIN      directory of srun/sbatch/scontrol... (/usr/bin)
#   CL_DAEMON_PREFIX  command words put before each daemon (munged, slurmctld,
#                  slurmd), e.g. "chroot /srv/sid env -i PATH=/usr/sbin:/usr/bin"
#                  to run another release's daemons from a chroot (the chroot
#                  must see $CL_DIR at the same path: bind-mount it there)
#   CL_CLIENT_PREFIX  the same for the client commands (srun ...)
#   CL_BASEDIR     parent of the state directory (/tmp)
#   SPANK_IB_SO    the plugin (build/spank_ib.so of the project)
#   CL_CPUS        CPUs declared per node (16; SlurmdParameters=config_overrides)
#   CL_EXTRA_CONF  extra lines appended to slurm.conf
#   CL_NODE_HOSTNAMES  "n3=n3-mgmt ...": slurm.conf's NodeHostname for those
#                  nodes (the node's own host name stays nX: a node whose
#                  host name slurm.conf does not know)
#   CL_GRES_CONF   lines of gres.conf (written beside slurm.conf before the
#                  daemons start; "" = no gres.conf)
#   CL_TOPOLOGY_CONF  lines of topology.conf, the same way; set
#                  CL_EXTRA_CONF=TopologyPlugin=topology/tree to use it
#   CL_NO_CGROUP=1 leave out the 22.05 keys that newer releases dropped
#                  (task/none, switch/none) and set CgroupPlugin=disabled
#   CL_KEEP=1      keep the state directory after stop (for debugging)
#   CL_CMD_TIMEOUT seconds any one client command may take (120): never a hang
#   CL_JOBCOMP=1   jobcomp/filetxt in $CL_DIR/jobcomp.log: `sacct --completion`
#                  lists every run of a job (no accounting database here)
#   CL_SPANK_AT_START=1  put the plugin in plugstack.conf before slurmd starts:
#                  slurmd only runs SPANK job prologs (prolog_check=) when its
#                  stack had one at start; later steps re-read the file anyway
#   CL_RAILS=1     per-rail networks, as a rail-optimized node has them: every
#                  simulated HCA's port netdev (its sysfs device/net/NAME, e.g.
#                  the IPoIB ibp24s0 of mlx5_0) exists in its node's namespace,
#                  rail k (the node's HCAs in name order) one bridge of its own
#                  in the harness's namespace $CL_TAG-fab, node nI at
#                  $CL_RAIL_NET.k.(10+I)/24; the nodes' sysctls as multi-rail
#                  hosts set them (arp_ignore=1, arp_announce=2: an address
#                  answers only on its own netdev; rp_filter=2).  Nothing is
#                  routed between rails.  Needs the simulated hardware.
#
# After cluster_start: CL_DIR (state), CL_CONF (slurm.conf), CL_NODES
# ("n1 n2 ..."), CL_NET ("10.X.Y"), CL_PLUGSTACK, CL_LOG (log directory);
# with CL_RAILS=1, CL_RAIL_DEVS ("mlx5_0 mlx5_3 ...": rail k is the k-th).
#
# The cross-node test runs as the system user the package creates
# (_spank-ib, the plugin's default test_user=): cluster_start creates it
# where Slurm's daemons look users up (the host, or a matrix leg's chroot,
# where the installed package has already made it) when it is missing, as
# a system user that stays, like a package's; CL_TEST_USER names it.

CL_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
: "${SLURM_SBIN:=/usr/sbin}"
: "${SLURM_BIN:=/usr/bin}"
: "${CL_DAEMON_PREFIX:=}"
: "${CL_CLIENT_PREFIX:=}"
: "${CL_BASEDIR:=/tmp}"
: "${SPANK_IB_SO:=$CL_SRC/build/spank_ib.so}"
: "${CL_CPUS:=16}"
: "${CL_EXTRA_CONF:=}"
: "${CL_NO_CGROUP:=0}"
: "${CL_KEEP:=0}"
: "${CL_CMD_TIMEOUT:=120}"
: "${CL_SPANK_AT_START:=0}"
: "${CL_RAILS:=0}"
: "${CL_RAIL_NET:=172.30}"
: "${CL_JOBCOMP:=0}"
CL_DIR=
CL_PIDS=()
CL_NETNS=()
CL_LINKS=()
CL_NODES=
CL_HW=0
CL_RAIL_DEVS=

cl_log() { echo "# cluster: $*" >&2; }

CL_TEST_USER=_spank-ib
# The test's system user, as the packages make it (contrib/sysusers.d/spank-ib.conf).
cl_test_user() {
	$CL_CLIENT_PREFIX id -u "$CL_TEST_USER" >/dev/null 2>&1 && return 0
	# another suite may be creating it at the same moment: the check after decides
	$CL_CLIENT_PREFIX useradd --system --user-group --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --comment "spank-ib cross-node test" "$CL_TEST_USER" 2>/dev/null
	$CL_CLIENT_PREFIX id -u "$CL_TEST_USER" >/dev/null 2>&1 && return 0
	cl_log "cannot create the test's system user $CL_TEST_USER (useradd)"
	return 1
}

# The ibprep the plugin runs the cross-node test in (test_helper=): the
# build's, or in a release chroot (CL_DAEMON_PREFIX set: the matrix) that
# release's packaged one, since slurmstepd there sees nothing of the build.
cluster_test_helper()
{
	if [ -n "$CL_DAEMON_PREFIX" ]; then
		echo /usr/bin/ibprep
	else
		echo "$CL_SRC/build/ibprep"
	fi
}

# The step's watcher the plugin runs (watch_helper=): the build's, or in a
# release's chroot that release's packaged one, as cluster_test_helper.
cluster_watch_helper()
{
	if [ -n "$CL_DAEMON_PREFIX" ]; then
		echo /usr/libexec/spank-ib-watch
	else
		echo "$CL_SRC/build/spank-ib-watch"
	fi
}

# cluster_watchers: PIDs of the step watchers (spank-ib-watch) of this
# cluster's nodes (their --root is one of its nodes' trees; another
# cluster's are not ours).  One grep over every cmdline; its own holds "[w]".
cluster_watchers() {
	local f
	for f in $(grep -lsaE 'spank-ib-[w]atch' /proc/[0-9]*/cmdline); do
		grep -qsaF -- "--root=$CL_DIR/nodes/" "$f" && f=${f#/proc/} && echo "${f%/cmdline}"
	done
}
# cluster_watcher_of JOB NODE: the watcher of job JOB (a grep pattern) on NODE.
cluster_watcher_of() {
	local p
	for p in $(cluster_watchers); do
		{ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q -- "--job=$1 .*--host=$2 " && echo "$p"
	done
}
# cluster_watchers_ready JOB NODE...: 0 when every NODE's watcher of JOB
# took its first read (it then waits in poll(2), x86-64 syscall 7).
cluster_watchers_ready() {
	local job=$1 node p
	shift
	for node in "$@"; do
		p=$(cluster_watcher_of "$job" "$node")
		[ -n "$p" ] && [ "$(cut -d' ' -f1 "/proc/$p/syscall" 2>/dev/null)" = 7 ] || return 1
	done
}

# cluster_expect KEY: what the cluster's Slurm release does for KEY
# (tests/matrix/expectations.sh; the release from IBP_SLURM_VERSION, which the
# matrix sets, else from slurmd -V).
cluster_expect()
{
	. "$CL_SRC/tests/matrix/expectations.sh"
	[ -n "${IBP_SLURM_VERSION:-}" ] || IBP_SLURM_VERSION=$(ibp_slurm_version $CL_DAEMON_PREFIX) || {
		echo "cluster_expect: cannot read the Slurm release (slurmd -V)" >&2
		return 1
	}
	ibp_expect "$1" "$IBP_SLURM_VERSION"
}

# The client commands: SLURM_CONF always exported (notes: without it a client
# looks the controller up in DNS).
cl_cmd() {
	local cmd=$1
	shift
	SLURM_CONF=$CL_CONF timeout "$CL_CMD_TIMEOUT" $CL_CLIENT_PREFIX "$SLURM_BIN/$cmd" "$@"
}
cl_srun() { cl_cmd srun "$@"; }
cl_sbatch() { cl_cmd sbatch "$@"; }
cl_salloc() { cl_cmd salloc "$@"; }
cl_scontrol() { cl_cmd scontrol "$@"; }
cl_sinfo() { cl_cmd sinfo "$@"; }
cl_squeue() { cl_cmd squeue "$@"; }
cl_sacct() { cl_cmd sacct "$@"; }
cl_scancel() { cl_cmd scancel "$@"; }

# A free private /24: 10.2XX.YYY, not on any interface of this machine.
cl_pick_net() {
	local used i a b
	used=$(ip -4 -o addr show 2>/dev/null | awk '{print $4}')
	for i in $(seq 1 50); do
		a=$((200 + RANDOM % 50))
		b=$((RANDOM % 250 + 1))
		if ! grep -q "^10\.$a\.$b\." <<<"$used"; then
			echo "10.$a.$b"
			return 0
		fi
	done
	return 1
}

# Start a daemon in the background, record its PID.
#   cl_spawn LOGNAME NETNS|"" UTSNAME HOSTSFILE CMD...
cl_spawn() {
	local name=$1 ns=$2 uts=$3 hosts=$4
	shift 4
	local inner="hostname $uts && mount --bind $hosts /etc/hosts && exec \"\$@\""
	if [ -n "$ns" ]; then
		nsenter --net="/run/netns/$ns" unshare --uts --mount \
			sh -c "$inner" sh $CL_DAEMON_PREFIX "$@" >"$CL_LOG/$name.out" 2>&1 </dev/null &
	else
		$CL_DAEMON_PREFIX "$@" >"$CL_LOG/$name.out" 2>&1 </dev/null &
	fi
	CL_PIDS+=($!)
}

cl_write_hosts() {
	local f=$1 i
	{
		echo "127.0.0.1 localhost"
		echo "$CL_NET.1 $(hostname) login"
		echo "$CL_NET.2 ctl"
		for i in $(seq 1 "$CL_N"); do echo "$CL_NET.$((10 + i)) n$i"; done
	} >"$f"
}

cluster_hw() {
	local node=$1 f preset=${CL_HW_PRESET:-dgx-h100} topo=topo.xml
	shift
	local d=$CL_DIR/nodes/$node args=()
	for f in "$@"; do args+=(--fault "$f"); done
	[ "$preset" = dgx-h100 ] || topo=topo-$preset.xml
	rm -rf "$d/root"
	mkdir -p "$d/root"
	python3 "$CL_SRC/tests/fixtures/mksysfs.py" --preset "$preset" --gdr --node "$node" \
		"${args[@]}" "$d/root" >"$CL_LOG/mksysfs.$node.out" 2>&1 || {
		cl_log "mksysfs.py failed for $node: $(tail -3 "$CL_LOG/mksysfs.$node.out")"
		return 1
	}
	if [ ! -s "$CL_DIR/$topo" ]; then
		python3 "$CL_SRC/tests/fixtures/mktopo.py" --preset "$preset" "$CL_DIR/$topo" \
			>"$CL_LOG/mktopo.$preset.out" 2>&1 || {
			cl_log "mktopo.py failed: $(tail -3 "$CL_LOG/mktopo.$preset.out")"
			rm -f "$CL_DIR/$topo"
			return 1
		}
	fi
	ln -sfn "../../$topo" "$d/topo.xml"
}

cl_gen_hw() {
	local spec node faults f i
	CL_HW=0
	if [ ! -f "$CL_SRC/tests/fixtures/mksysfs.py" ] || [ ! -f "$CL_SRC/tests/fixtures/mktopo.py" ]; then
		cl_log "no simulated hardware: tests/fixtures/mksysfs.py or mktopo.py missing"
		return 0
	fi
	for i in $(seq 1 "$CL_N"); do
		node=n$i
		faults=()
		for spec in "$@"; do
			[ "${spec%%:*}" = "$node" ] || continue
			IFS=, read -r -a f <<<"${spec#*:}"
			faults+=("${f[@]}")
		done
		cluster_hw "$node" "${faults[@]}" || return 0
	done
	CL_HW=1
}

# slurm.conf's NodeHostname of NODE: its name, or CL_NODE_HOSTNAMES' ("n3=n3-mgmt ...").
cl_node_hostname() {
	local w
	for w in ${CL_NODE_HOSTNAMES:-}; do
		[ "${w%%=*}" = "$1" ] && { echo "${w#*=}"; return; }
	done
	echo "$1"
}

cl_write_conf() {
	local i
	{
		cat <<EOF
ClusterName=ibpc
SlurmctldHost=ctl($CL_NET.2)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$CL_DIR/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$CL_DIR/ctld
SlurmdSpoolDir=$CL_DIR/spool/%n
SlurmctldPidFile=$CL_DIR/run/slurmctld.pid
SlurmdPidFile=$CL_DIR/run/slurmd.%n.pid
SlurmctldLogFile=$CL_LOG/slurmctld.log
SlurmdLogFile=$CL_LOG/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$CL_DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=2
MessageTimeout=5
AccountingStorageType=accounting_storage/none
EOF
		# No database here: with CL_JOBCOMP=1 each run of a job (a requeued
		# one's too) is a line of the job completion log, which
		# `sacct --completion` reads.
		if [ "$CL_JOBCOMP" = 1 ]; then
			echo "JobCompType=jobcomp/filetxt"
			echo "JobCompLoc=$CL_DIR/jobcomp.log"
		else
			echo "JobCompType=jobcomp/none"
		fi
		if [ "$CL_NO_CGROUP" = 1 ]; then
			# a cgroup.conf key, read from beside slurm.conf
			echo "CgroupPlugin=disabled" >"$(dirname "$CL_CONF")/cgroup.conf"
		else
			echo "TaskPlugin=task/none"
			echo "SwitchType=switch/none"
		fi
		[ -n "$CL_EXTRA_CONF" ] && printf '%s\n' "$CL_EXTRA_CONF"
		for i in $(seq 1 "$CL_N"); do
			echo "NodeName=n$i NodeAddr=$CL_NET.$((10 + i)) NodeHostname=$(cl_node_hostname "n$i") CPUs=$CL_CPUS State=UNKNOWN"
		done
		echo "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
	} >"$CL_CONF"
}

cl_start_munge() {
	local m=$CL_DIR/munge
	mkdir -p "$m"
	mungekey --create --keyfile="$m/munge.key" >/dev/null 2>&1 || return 1
	chown -R munge:munge "$m"
	chmod 0700 "$m/munge.key" 2>/dev/null
	chmod 0755 "$m"
	$CL_DAEMON_PREFIX setpriv --reuid=munge --regid=munge --init-groups \
		munged --foreground --force --socket="$m/munge.sock" --key-file="$m/munge.key" \
		--pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" \
		--origin=127.0.0.1 >"$CL_LOG/munged.out" 2>&1 </dev/null &
	CL_PIDS+=($!)
	local t
	for t in $(seq 1 100); do
		[ -S "$m/munge.sock" ] && return 0
		sleep 0.05
	done
	cl_log "munged did not start: $(tail -3 "$CL_LOG/munged.out" "$m/munged.log" 2>/dev/null)"
	return 1
}

cl_start_net() {
	ip link add "$CL_TAG" type bridge || return 1
	CL_LINKS+=("$CL_TAG")
	ip addr add "$CL_NET.1/24" dev "$CL_TAG" || return 1
	ip link set "$CL_TAG" up || return 1
	local names=(ctl) addrs=("$CL_NET.2") i
	for i in $(seq 1 "$CL_N"); do
		names+=("n$i")
		addrs+=("$CL_NET.$((10 + i))")
	done
	for i in "${!names[@]}"; do
		local ns=$CL_TAG-${names[$i]} v=${CL_TAG}v$i
		ip netns add "$ns" || return 1
		CL_NETNS+=("$ns")
		ip link add "$v" type veth peer name "${v}p" || return 1
		CL_LINKS+=("$v")
		ip link set "${v}p" netns "$ns" || return 1
		ip link set "$v" master "$CL_TAG" up || return 1
		ip -n "$ns" link set "${v}p" name eth0 || return 1
		ip -n "$ns" addr add "${addrs[$i]}/24" dev eth0 || return 1
		ip -n "$ns" link set eth0 up || return 1
		ip -n "$ns" link set lo up || return 1
	done
}

# The HCAs of NODE's simulated tree in name order, "DEV NETDEV" per line
# (the port's netdev, sysfs device/net/NAME; HCAs without one are left out).
cl_rail_netdevs() {
	local root=$CL_DIR/nodes/$1/root d nd
	for d in $(ls -v "$root/sys/class/infiniband" 2>/dev/null); do
		nd=$(ls "$root/sys/class/infiniband/$d/device/net" 2>/dev/null | head -1)
		[ -n "$nd" ] && echo "$d $nd"
	done
}

cl_rail_index() {
	local i=0 d
	for d in $CL_RAIL_DEVS; do
		[ "$d" = "$1" ] && { echo $i; return 0; }
		i=$((i + 1))
	done
	return 1
}

cluster_rail_addr() {
	local k
	k=$(cl_rail_index "$2") || return 1
	echo "$CL_RAIL_NET.$k.$((10 + ${1#n}))"
}

# The per-rail networks: one bridge per rail in $CL_TAG-fab, a veth per node
# and rail whose node end carries the port's netdev name.
cl_start_rails() {
	local fab=$CL_TAG-fab i k dev nd ns
	CL_RAIL_DEVS=$(cl_rail_netdevs n1 | awk '{print $1}' | tr '\n' ' ')
	CL_RAIL_DEVS=${CL_RAIL_DEVS% }
	[ -n "$CL_RAIL_DEVS" ] || { cl_log "CL_RAILS=1: no HCA with a netdev in n1's tree"; return 1; }
	ip netns add "$fab" || return 1
	CL_NETNS+=("$fab")
	ip -n "$fab" link set lo up
	k=0
	for dev in $CL_RAIL_DEVS; do
		ip -n "$fab" link add "r$k" type bridge || return 1
		ip -n "$fab" link set "r$k" up || return 1
		k=$((k + 1))
	done
	for i in $(seq 1 "$CL_N"); do
		ns=$CL_TAG-n$i
		# /proc/sys/net is the writer's namespace's (no procps needed)
		ip netns exec "$ns" sh -c 'c=/proc/sys/net/ipv4/conf; echo 1 >$c/all/arp_ignore &&
			echo 2 >$c/all/arp_announce && echo 2 >$c/all/rp_filter &&
			echo 2 >$c/default/rp_filter' || return 1
		while read -r dev nd; do
			k=$(cl_rail_index "$dev") || continue
			ip -n "$fab" link add "r${k}n$i" type veth peer name "$nd" netns "$ns" || return 1
			ip -n "$fab" link set "r${k}n$i" master "r$k" up || return 1
			ip netns exec "$ns" sh -c "echo 2 >/proc/sys/net/ipv4/conf/$nd/rp_filter"
			ip -n "$ns" addr add "$(cluster_rail_addr "n$i" "$dev")/24" dev "$nd" || return 1
			ip -n "$ns" link set "$nd" up || return 1
		done < <(cl_rail_netdevs "n$i")
	done
}

cl_rail_netdev() { cl_rail_netdevs "$1" | awk -v d="$2" '$1 == d {print $2}'; }

# After the rails changed, no node keeps an address it failed to resolve
# before (a FAILED neighbour entry answers "no route to host" at once).
cl_rail_neigh_flush() {
	local i
	for i in $(seq 1 "$CL_N"); do ip -n "$CL_TAG-n$i" neigh flush all 2>/dev/null; done
	return 0
}

cluster_rail_link() {
	local nd
	nd=$(cl_rail_netdev "$1" "$2")
	[ -n "$nd" ] || { cl_log "cluster_rail_link: $1 has no netdev for $2"; return 1; }
	ip -n "$CL_TAG-$1" link set "$nd" "$3" && cl_rail_neigh_flush
}

# NODE's ports DEV1 and DEV2 on each other's rail network: their cables swapped.
cluster_rail_swap() {
	local k1 k2 i=${1#n}
	k1=$(cl_rail_index "$2") && k2=$(cl_rail_index "$3") || {
		cl_log "cluster_rail_swap: $2 or $3 is not a rail ($CL_RAIL_DEVS)"
		return 1
	}
	ip -n "$CL_TAG-fab" link set "r${k1}n$i" master "r$k2" &&
		ip -n "$CL_TAG-fab" link set "r${k2}n$i" master "r$k1" && cl_rail_neigh_flush
}

# NODE's ports DEV1 and DEV2 with each other's addresses (a configuration swapped).
cluster_rail_swap_addrs() {
	local ns=$CL_TAG-$1 n1 n2 a1 a2
	n1=$(cl_rail_netdev "$1" "$2") && n2=$(cl_rail_netdev "$1" "$3") &&
		a1=$(cluster_rail_addr "$1" "$2") && a2=$(cluster_rail_addr "$1" "$3") || return 1
	ip -n "$ns" addr flush dev "$n1" scope global && ip -n "$ns" addr flush dev "$n2" scope global &&
		ip -n "$ns" addr add "$a2/24" dev "$n1" && ip -n "$ns" addr add "$a1/24" dev "$n2" &&
		cl_rail_neigh_flush
}

cluster_rail_restore() {
	local i k nd dev
	for i in $(seq 1 "$CL_N"); do
		while read -r dev nd; do
			k=$(cl_rail_index "$dev") || continue
			ip -n "$CL_TAG-fab" link set "r${k}n$i" master "r$k"
			ip -n "$CL_TAG-n$i" addr flush dev "$nd" scope global
			ip -n "$CL_TAG-n$i" addr add "$(cluster_rail_addr "n$i" "$dev")/24" dev "$nd"
			ip -n "$CL_TAG-n$i" link set "$nd" up
		done < <(cl_rail_netdevs "n$i")
	done
	cl_rail_neigh_flush
}

cluster_wait_idle() {
	local secs=${1:-20} t n
	for t in $(seq 1 $((secs * 10))); do
		n=$(cl_sinfo -h -N -o '%T' 2>/dev/null | grep -cvE '^idle$')
		if [ "$(cl_sinfo -h -N -o '%N' 2>/dev/null | wc -l)" -eq "$CL_N" ] && [ "$n" -eq 0 ]; then
			return 0
		fi
		sleep 0.1
	done
	cl_log "nodes not idle after ${secs}s: $(cl_sinfo -h -N -o '%N %T %E' 2>&1 | tr '\n' ';')"
	return 1
}

# cluster_prereqs NAME [WHAT]: what every plugin suite needs before it can
# start a cluster: root (WHAT names why; default the namespaces, bridge and
# daemons), Slurm's daemons and srun, munged, and the built plugin.  Reports
# a skip under NAME (a missing plugin: a failure) and returns 1 when one is
# missing; the caller then ends with tap_done.  Needs tests/lib/tap.sh.
cluster_prereqs() {
	local name=$1 what=${2:-namespaces, bridge, daemons} b
	if [ "$(id -u)" -ne 0 ]; then
		tap_skip "$name" "needs root ($what)"
		return 1
	fi
	for b in "$SLURM_SBIN/slurmctld" "$SLURM_SBIN/slurmd" "$SLURM_BIN/srun" munged; do
		if ! command -v "$b" >/dev/null; then
			tap_skip "$name" "$b not installed (contrib/install-deps.sh)"
			return 1
		fi
	done
	if [ ! -f "$SPANK_IB_SO" ]; then
		tap_fail "plugin built" "$SPANK_IB_SO missing: run make first"
		return 1
	fi
}

# The preamble every cluster suite shares.
# cluster_prereqs_or_done NAME [WHAT]: cluster_prereqs, and the suite ends
# (tap_done, exit) when something is missing.
cluster_prereqs_or_done() {
	cluster_prereqs "$@" && return 0
	tap_done
	exit
}

# cluster_start_or_done N [SPEC...]: cluster_start N SPEC..., and the suite
# ends when the cluster does not start: a failure named CL_START_NAME
# (default "cluster starts") with the daemons' messages.  Started, the
# cluster is stopped at the suite's exit (an EXIT trap the suite may replace
# with its own).  A suite with more to clean up defines cl_suite_cleanup: it
# runs after the cluster stopped, and when it did not start.
cluster_start_or_done() {
	local errf
	errf=$(mktemp)
	if ! cluster_start "$@" 2>"$errf"; then
		tap_fail "${CL_START_NAME:-cluster starts}" "$(cat "$errf")"
		rm -f "$errf"
		cluster_suite_cleanup
		tap_done
		exit
	fi
	rm -f "$errf"
	trap 'cluster_stop; cluster_suite_cleanup' EXIT
}
cluster_suite_cleanup() {
	if declare -F cl_suite_cleanup >/dev/null; then cl_suite_cleanup; fi
	return 0
}

# cluster_hw_or_done NAME: the suite ends with a skip under NAME when the
# nodes have no simulated hardware.
cluster_hw_or_done() {
	[ "$CL_HW" = 1 ] && return 0
	tap_skip "$1" "no simulated hardware (tests/fixtures/mksysfs.py, mktopo.py)"
	tap_done
	exit
}

# cluster_suite_out [MODE]: OUT=$CL_DIR/out (chmod MODE when given: a
# directory the test's users write into) and the helpers of the plugin
# suites, which a suite may redefine: run NAME CMD... (stdout and stderr to
# $OUT/NAME, exit status in RC), has NAME TEXT, show NAME (indented, 40 lines).
cluster_suite_out() {
	OUT=$CL_DIR/out
	mkdir -p "$OUT"
	[ -z "${1:-}" ] || chmod "$1" "$OUT"
	run() {
		local name=$1
		shift
		"$@" >"$OUT/$name" 2>&1
		RC=$?
	}
	has() { grep -qF -- "$2" "$OUT/$1"; }
	show() { sed 's/^/    /' "$OUT/$1" | head -40; }
}

# cluster_test_user PREFIX: TEST_USER=PREFIX<pid>, a second user the suite
# creates (then USER_CREATED=1) with useradd under $CL_CLIENT_PREFIX;
# cleanup_user removes it, and runs at the suite's exit too.
cluster_test_user() {
	TEST_USER=$1$$
	USER_CREATED=0
	cleanup_user() {
		[ "$USER_CREATED" = 1 ] && $CL_CLIENT_PREFIX userdel "$TEST_USER" 2>/dev/null
		USER_CREATED=0
	}
	cl_suite_cleanup() { cleanup_user; }
}

cluster_start() {
	CL_N=$1
	shift
	if [ "$(id -u)" -ne 0 ]; then
		cl_log "needs root (namespaces, bridge)"
		return 1
	fi
	CL_DIR=$(mktemp -d "$CL_BASEDIR/ibpc.XXXXXX") || return 1
	chmod 0755 "$CL_DIR"
	CL_TAG=ibpc$(printf '%06x' $((RANDOM * 32768 + RANDOM)) | tail -c 6)
	CL_LOG=$CL_DIR/log
	CL_CONF=$CL_DIR/slurm.conf
	CL_PLUGSTACK=$CL_DIR/plugstack.conf
	mkdir -p "$CL_LOG" "$CL_DIR/ctld" "$CL_DIR/run" "$CL_DIR/hosts" "$CL_DIR/nodes"
	trap cluster_stop EXIT
	trap 'cluster_stop; exit 130' INT TERM
	CL_NET=$(cl_pick_net) || { cl_log "no free private /24"; return 1; }
	CL_NODES=$(for i in $(seq 1 "$CL_N"); do printf 'n%s ' "$i"; done)
	CL_NODES=${CL_NODES% }
	cl_gen_hw "$@"
	: >"$CL_PLUGSTACK"
	# slurmd decides at start whether the plugin stack has a job prolog.
	[ "$CL_SPANK_AT_START" = 1 ] && cluster_plugstack "$(cluster_spank_line)"
	cl_write_conf
	[ -n "${CL_GRES_CONF:-}" ] && printf '%s\n' "$CL_GRES_CONF" >"$(dirname "$CL_CONF")/gres.conf"
	[ -n "${CL_TOPOLOGY_CONF:-}" ] &&
		printf '%s\n' "$CL_TOPOLOGY_CONF" >"$(dirname "$CL_CONF")/topology.conf"
	local i
	for i in ctl $CL_NODES; do
		mkdir -p "$CL_DIR/spool/$i"
		cl_write_hosts "$CL_DIR/hosts/$i"
	done
	cl_test_user || return 1
	cl_start_net || { cl_log "network setup failed"; return 1; }
	if [ "$CL_RAILS" = 1 ]; then
		[ "$CL_HW" = 1 ] || { cl_log "CL_RAILS=1 needs the simulated hardware"; return 1; }
		cl_start_rails || { cl_log "per-rail networks: setup failed"; return 1; }
	fi
	cl_start_munge || return 1
	cl_spawn slurmctld "$CL_TAG-ctl" ctl "$CL_DIR/hosts/ctl" \
		"$SLURM_SBIN/slurmctld" -D -i -f "$CL_CONF"
	for i in $CL_NODES; do
		cl_spawn "slurmd.$i" "$CL_TAG-$i" "$i" "$CL_DIR/hosts/$i" \
			env SLURM_CONF="$CL_CONF" "$SLURM_SBIN/slurmd" -D -N "$i" -f "$CL_CONF"
	done
	cluster_wait_idle 30 || { cl_log "$(tail -5 "$CL_LOG"/*.out "$CL_LOG"/*.log 2>/dev/null)"; return 1; }
}

cl_stop_pids() {
	local p t alive
	[ $# -eq 0 ] && return 0
	kill -TERM "$@" 2>/dev/null
	for t in $(seq 1 50); do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && return 0
		sleep 0.1
	done
	kill -KILL "$@" 2>/dev/null
}

cluster_stop() {
	[ -n "$CL_DIR" ] || return 0
	local ns pids=() p i errexit=0
	# Cleanup must run to its end even in a caller's `set -e`.
	case $- in *e*) errexit=1 ;; esac
	set +e
	# Daemons first, newest first (slurmds, slurmctld, munged last).
	for ((i = ${#CL_PIDS[@]} - 1; i >= 0; i--)); do pids+=("${CL_PIDS[$i]}"); done
	cl_stop_pids "${pids[@]}"
	# Anything left in the harness's own namespaces: slurmstepd, tasks.
	pids=()
	for ns in "${CL_NETNS[@]}"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do pids+=("$p"); done
	done
	cl_stop_pids "${pids[@]}"
	for ns in "${CL_NETNS[@]}"; do ip netns del "$ns" 2>/dev/null; done
	for p in "${CL_LINKS[@]}"; do ip link del "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ "$CL_KEEP" = 1 ]; then
		cl_log "state kept in $CL_DIR"
	else
		rm -rf "$CL_DIR"
	fi
	CL_DIR=
	CL_PIDS=()
	CL_NETNS=()
	CL_LINKS=()
	CL_RAIL_DEVS=
	[ "$errexit" = 1 ] && set -e
	return 0
}

# cluster_cut NODE: NODE cut off from the cross-node test: an nftables table
# in NODE's own network namespace drops the test's TCP ports (test_ports=,
# default 230-299) in and out, so Slurm itself still reaches NODE.  0, or 1
# with why on stdout (nft missing, or not working here: the caller skips).
# cluster_uncut NODE removes the table (none is fine; a stopped cluster's
# namespaces take theirs with them).
cluster_cut() {
	local err
	if ! command -v nft >/dev/null; then
		echo "nft not installed (contrib/install-deps.sh)"
		return 1
	fi
	if ! err=$(ip netns exec "$CL_TAG-$1" nft -f - 2>&1 <<'NFT'
table inet ibp_cut {
	chain input { type filter hook input priority 0; tcp dport 230-299 drop; }
	chain output { type filter hook output priority 0; tcp dport 230-299 drop; }
}
NFT
	); then
		echo "nftables does not work here: $(head -2 <<<"$err")"
		return 1
	fi
}
cluster_uncut() { ip netns exec "$CL_TAG-$1" nft delete table inet ibp_cut 2>/dev/null; }

# plugstack.conf: each argument is one line.
cluster_plugstack() {
	printf '%s\n' "$@" >"$CL_PLUGSTACK"
}

# The plugin line for the simulated nodes: per-node sysfs root and topology
# through %n (the node's host name), binding off (the topology is not this
# machine's), then the caller's keys.
cluster_spank_line() {
	echo "required $SPANK_IB_SO sysfs_root=$CL_DIR/nodes/%n/root topology=$CL_DIR/nodes/%n/topo.xml bind=no watch_helper=$(cluster_watch_helper) $*"
}

cluster_node_state() { cl_scontrol show node "$1" -o 2>/dev/null | grep -o 'State=[^ ]*' | cut -d= -f2; }
cluster_node_reason() { cl_sinfo -h -n "$1" -N -o '%E' 2>/dev/null | head -1; }

cluster_resume_all() {
	local n
	for n in $CL_NODES; do
		case "$(cluster_node_state "$n")" in
		*DRAIN* | *DOWN*) cl_scontrol update nodename="$n" state=resume >/dev/null 2>&1 ;;
		esac
	done
	cluster_wait_idle 20
}

cluster_wait_job() {
	local job=$1 secs=${2:-30} t st
	for t in $(seq 1 $((secs * 10))); do
		st=$(cl_scontrol show job "$job" -o 2>/dev/null | grep -o 'JobState=[^ ]*' | cut -d= -f2)
		case "$st" in
		"" | COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | BOOT_FAIL | OUT_OF_MEMORY | PREEMPTED | DEADLINE)
			echo "$st"
			return 0
			;;
		esac
		sleep 0.1
	done
	echo "$st"
	return 1
}
