# guest.sh: helpers for scripts that run inside a test VM (vm.sh); source it
# with `. "$IBP_GUEST_LIB"`.
#
#   guest_rxe_up            modprobe rdma_rxe, bring eth0 up with $IBP_VM_IP,
#                           create rxe0 over it and wait (bounded) until its
#                           port is ACTIVE and its IPv4-mapped GID exists
#   guest_rail_up K         a further rail: ethK up with 10.(77+K).1.(INDEX+1),
#                           rxeK over it, waited for as rxe0 (the host's
#                           VM_RAILS gives the VM the NIC)
#   guest_barrier NAME [S]  waits (bounded, default 60 s) until every VM of the
#                           setup reached barrier NAME; 1 on timeout
#   guest_put NAME VALUE    publishes a value to the other VMs (sync directory)
#   guest_get NAME [S]      waits (bounded) for a peer's value and prints it
#   guest_peer_name         the other VM's name (two-VM setups: vm0 <-> vm1)
#
# Every wait is bounded: a peer that never arrives ends in a timeout and a
# message, never a hang (the host's vm_wait is the outer bound).

guest_log() { echo "# $IBP_VM_NAME: $*"; }

guest_rxe_up() {
	local i gid
	modprobe rdma_rxe || { guest_log "modprobe rdma_rxe failed"; return 1; }
	ip link set lo up
	ip link set eth0 up || { guest_log "no eth0"; return 1; }
	ip addr add "$IBP_VM_IP/24" dev eth0 || return 1
	rdma link add rxe0 type rxe netdev eth0 || { guest_log "rdma link add rxe0 failed"; return 1; }
	for i in $(seq 1 100); do
		if grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; then
			gid=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)
			case $gid in 0000:0000:0000:0000:0000:ffff:*) return 0 ;; esac
		fi
		sleep 0.1
	done
	guest_log "rxe0 port 1 not ACTIVE with an IPv4-mapped GID after 10 s:" \
		"state '$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)'" \
		"gid 1 '$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)'"
	return 1
}

guest_rail_up() {
	local k=$1 i gid
	ip link set "eth$k" up || { guest_log "no eth$k (VM_RAILS on the host?)"; return 1; }
	ip addr add "10.$((77 + k)).1.$((IBP_VM_INDEX + 1))/24" dev "eth$k" || return 1
	rdma link add "rxe$k" type rxe netdev "eth$k" || { guest_log "rdma link add rxe$k failed"; return 1; }
	for i in $(seq 1 100); do
		if grep -q ACTIVE "/sys/class/infiniband/rxe$k/ports/1/state" 2>/dev/null; then
			gid=$(cat "/sys/class/infiniband/rxe$k/ports/1/gids/1" 2>/dev/null)
			case $gid in 0000:0000:0000:0000:0000:ffff:*) return 0 ;; esac
		fi
		sleep 0.1
	done
	guest_log "rxe$k port 1 not ACTIVE with an IPv4-mapped GID after 10 s"
	return 1
}

guest_barrier() {
	local name=$1 secs=${2:-60} end n
	: >"$IBP_SYNC/barrier.$name.$IBP_VM_NAME"
	end=$(($(date +%s) + secs))
	while :; do
		n=$(find "$IBP_SYNC" -maxdepth 1 -name "barrier.$name.*" | wc -l)
		[ "$n" -ge "$IBP_VM_COUNT" ] && return 0
		if [ "$(date +%s)" -ge "$end" ]; then
			guest_log "barrier $name: $n of $IBP_VM_COUNT VMs after ${secs}s"
			return 1
		fi
		sleep 0.2
	done
}

guest_put() {
	printf '%s\n' "$2" >"$IBP_SYNC/val.$1.$IBP_VM_NAME.tmp" &&
		mv "$IBP_SYNC/val.$1.$IBP_VM_NAME.tmp" "$IBP_SYNC/val.$1.$IBP_VM_NAME"
}

guest_peer_name() {
	if [ "$IBP_VM_NAME" = vm0 ]; then echo vm1; else echo vm0; fi
}

guest_get() {
	local name=$1 secs=${2:-60} end f
	f=$IBP_SYNC/val.$name.$(guest_peer_name)
	end=$(($(date +%s) + secs))
	while [ ! -e "$f" ]; do
		if [ "$(date +%s)" -ge "$end" ]; then
			guest_log "no value '$name' from $(guest_peer_name) after ${secs}s"
			return 1
		fi
		sleep 0.2
	done
	cat "$f"
}
