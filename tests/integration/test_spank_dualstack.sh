#!/usr/bin/env bash
# test_spank_dualstack.sh: --ib-test where the nodes' names resolve to IPv6,
# in the project's Slurm cluster (3 nodes), socket transport.  Each node's
# namespace gets an IPv6 address of 2001:db8::/32 (the documentation prefix,
# on the test's own bridge only, nodad), and the hosts file each node's
# mount namespace sees lists it:
#
#   (a) dual-stack, IPv6 first: both addresses for every node name, the
#       IPv6 one first (glibc orders a global IPv6 address before IPv4): the
#       test's child connects to its peers' IPv6 addresses, the plugin's
#       listener takes both families, every link passes.
#   (b) IPv6 only: the node names resolve to their IPv6 addresses alone.
#
# Slurm itself is not touched: NodeAddr= are the IPv4 addresses.  The
# addresses go with the namespaces when the cluster stops; the hosts files
# are the cluster's own.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

NAME="--ib-test on nodes whose names resolve to IPv6"
cluster_prereqs_or_done "$NAME"
if [ -n "$CL_DAEMON_PREFIX" ]; then
	tap_skip "$NAME" "the names are rewritten in the host's hosts files; a release chroot's slurmstepd resolves through its own (make check-integration runs it on the host release)"
	tap_done
	exit
fi
cluster_start_or_done 3
cluster_hw_or_done "$NAME"
cluster_suite_out
cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
	test_transport=socket test_timeout=8 test_max_lat_us=200000 \
	"test_helper=$(cluster_test_helper)" "munge_socket=$CL_DIR/munge/munge.sock")"

# every node passes, and says so
all_pass() {
	local n
	[ "$RC" -eq 0 ] || return 1
	for n in $CL_NODES; do
		has "$1" "spank-ib: $n: cross-node test: pass with 3 nodes" || return 1
	done
}

run v4 cl_srun -N3 --ib-test --ib-report true
if all_pass v4; then tap_ok "IPv4 names: srun -N3 --ib-test passes"; else tap_fail "IPv4 names" "rc=$RC; $(show v4)"; fi

# 2001:db8:R::1N on every node's eth0 (R from the cluster's /24: unique per run)
R=$(printf '%x' "$(echo "$CL_NET" | awk -F. '{print $2 * 256 + $3}')")
v6() { echo "2001:db8:$R::1${1#n}"; }
ok=1
for n in $CL_NODES; do
	ip -n "$CL_TAG-$n" -6 addr add "$(v6 "$n")/64" dev eth0 nodad 2>>"$OUT/ip6" || ok=0
done
if [ "$ok" != 1 ]; then
	tap_skip "$NAME" "no IPv6 in the test's namespaces: $(head -2 "$OUT/ip6")"
	tap_done
	exit
fi
# hosts N MODE: node N's hosts file (bind-mounted over its /etc/hosts:
# rewritten in place), MODE first (IPv6 before IPv4) or only (IPv6 alone)
hosts() {
	local f=$CL_DIR/hosts/$1 m
	{
		echo "127.0.0.1 localhost"
		echo "$CL_NET.1 $(hostname) login"
		echo "$CL_NET.2 ctl"
		for m in $CL_NODES; do echo "$(v6 "$m") $m"; done
		if [ "$2" = first ]; then
			for m in $CL_NODES; do echo "$CL_NET.$((10 + ${m#n})) $m"; done
		fi
	} >"$f.new"
	cat "$f.new" >"$f"
	rm -f "$f.new"
}
slurmd_of() {
	local p
	for p in $(ip netns pids "$CL_TAG-$1" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmd ] && echo "$p" && return
	done
}

for mode in first only; do
	for n in $CL_NODES; do hosts "$n" "$mode"; done
	first=$(nsenter -t "$(slurmd_of n1)" -m -n getent ahostsv6 n2 2>/dev/null | awk 'NR == 1 {print $1}')
	resolved=$(nsenter -t "$(slurmd_of n1)" -m -n getent ahosts n2 2>/dev/null | awk 'NR == 1 {print $1}')
	run "v6$mode" cl_srun -N3 --ib-test --ib-report true
	case $mode in
	first) what="(a) dual-stack, names resolve to IPv6 first ($resolved)" ;;
	only) what="(b) names resolve to IPv6 only ($resolved)" ;;
	esac
	if [ "$resolved" = "$(v6 n2)" ] && [ "$first" = "$(v6 n2)" ] && all_pass "v6$mode"; then
		tap_ok "$what: srun -N3 --ib-test passes on every node"
	else
		tap_fail "$what" "n2 resolves in n1 to '$resolved'; rc=$RC; $(show "v6$mode")"
	fi
done

tap_done
