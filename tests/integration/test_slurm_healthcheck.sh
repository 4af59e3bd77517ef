#!/usr/bin/env bash
# test_slurm_healthcheck.sh: `ibprep check --slurm` as slurmd's real
# HealthCheckProgram (contrib/slurm/spank-ib-healthcheck, every 2 s) in the
# netns cluster (tests/integration/lib/cluster.sh), two DGX-H100-like nodes:
#   - healthy nodes stay idle and Slurm is only asked (scontrol show node),
#     never updated;
#   - n1 drained by the plugin (reason "spank-ib: ...", a fault only a step
#     sees) and healthy: never resumed; drained by the previous version's
#     check ("spank-ib: n1: ..."): resumed;
#   - n1's tree broken (mlx5_4 down, cluster_hw): drained with a
#     "spank-ib check: mlx5_4 port 1: ..." reason, then left alone (no
#     further updates while nothing changes); repaired: resumed;
#   - n2 drained by an admin ("maintenance"), then broken and repaired:
#     its drain and reason are never touched;
#   - --slurm without scontrol or without slurm.conf: exit 2, message, no drain.
# scontrol calls are counted through a logging shim in the program's PATH.
# Trees are regenerated under a lock the health check also takes, so no run
# reads a half-written tree.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

IBPREP=$(realpath -m "${IBPREP:-build/ibprep}")
IBPREP_ASAN=$(realpath -m "${IBPREP_ASAN:-build/asan/ibprep}")
cluster_prereqs_or_done "slurm HealthCheckProgram"
command -v flock >/dev/null || { tap_skip "slurm HealthCheckProgram" "flock (util-linux) missing"; tap_done; exit; }
[ -x "$IBPREP" ] || { tap_fail "ibprep built" "$IBPREP missing: run make"; tap_done; exit; }

# Under CL_BASEDIR: in the release matrix the daemons run in a chroot that
# sees only that directory (and the release's own packaged ibprep).
T=$(mktemp -d "${CL_BASEDIR:-/tmp}/test_slurm_hc.XXXXXX")
hc_bindir=$(dirname "$IBPREP")
[ -n "${CL_DAEMON_PREFIX:-}" ] && hc_bindir=/usr/bin
chmod 0755 "$T"
mkdir -p "$T/shim" "$T/nodes"
# The shipped wrapper (its ibprep, and its settings directory, pointed into
# $T) and its settings file, as /etc/default/spank-ib-healthcheck is on a node.
mkdir -p "$T/sbin"
sed "s|@BINDIR@|$hc_bindir|g; s|@SBINDIR@|$T/sbin|g; s|@DEFAULTSDIR@|$T|g" \
	contrib/slurm/spank-ib-healthcheck.in >"$T/sbin/spank-ib-healthcheck"
chmod 0755 "$T/sbin/spank-ib-healthcheck"
cat >"$T/spank-ib-healthcheck" <<EOF2
exec >>"$T/hc.\$SLURMD_NODENAME.log" 2>&1
echo "--- \$(date +%T.%N)"
# wait while the test rewrites a tree (the lock stays held by ibprep until it ends)
exec 9>>"$T/lock"
flock -w 30 9 || exit 0
export SLURM_CONF="$T/slurm.conf"
export PATH="$T/shim:/usr/bin:/bin"
IBPREP_ARGS="--sysfs-root $T/nodes/\$SLURMD_NODENAME"
EOF2
printf '#!/bin/sh\necho "$*" >> %s/scontrol.log\nexec %s/scontrol "$@"\n' "$T" "$SLURM_BIN" >"$T/shim/scontrol"
chmod 0755 "$T/shim/scontrol"
: >"$T/scontrol.log"

CL_EXTRA_CONF="HealthCheckProgram=$T/sbin/spank-ib-healthcheck
HealthCheckInterval=2
HealthCheckNodeState=ANY"
cl_suite_cleanup() { rm -rf "$T"; }
cluster_start_or_done 2
cluster_hw_or_done "slurm HealthCheckProgram"
# until these links exist every run exits 2 without asking Slurm anything
ln -s "$CL_CONF" "$T/slurm.conf"
for n in $CL_NODES; do ln -s "$CL_DIR/nodes/$n/root" "$T/nodes/$n"; done

updates() { grep -c "^update nodename=$1 " "$T/scontrol.log"; }
shows() { grep -c "^show node -o $1\$" "$T/scontrol.log"; }
# wait_runs NODE N: until N more health checks asked Slurm about NODE (bounded)
wait_runs() {
	local want=$(($(shows "$1") + $2)) t
	for t in $(seq 1 300); do
		[ "$(shows "$1")" -ge "$want" ] && return 0
		sleep 0.1
	done
	return 1
}
# wait_for NODE PATTERN SECS: until "State REASON" matches
wait_for() {
	local t
	for t in $(seq 1 $(($3 * 5))); do
		[[ "$(cluster_node_state "$1") $(cluster_node_reason "$1")" == $2 ]] && return 0
		sleep 0.2
	done
	return 1
}
# hw NODE [FAULT...]: cluster_hw under the lock
hw() {
	(
		flock -w 60 8 || exit 1
		cluster_hw "$@"
	) 8>>"$T/lock"
}
# left_alone NODE [PATTERN]: 3 more health checks ran, none updated NODE, and
# its "State REASON" matches PATTERN (default: anything)
left_alone() {
	local before
	before=$(updates "$1")
	wait_runs "$1" 3
	[ "$(updates "$1")" = "$before" ] && wait_for "$1" "${2:-*}" 1
}
summary() { echo "n1: $(cluster_node_state n1) '$(cluster_node_reason n1)'; n2: $(cluster_node_state n2) '$(cluster_node_reason n2)'"; tail -5 "$T/scontrol.log"; tail -8 "$T"/hc.n*.log; }

# healthy: asked, never updated
if wait_runs n1 3 && wait_runs n2 3; then
	if [ "$(updates n1)" = 0 ] && [ "$(updates n2)" = 0 ] && [[ "$(cluster_node_state n1)" == IDLE ]]; then
		tap_ok "healthy nodes: $(shows n1) health checks asked Slurm (show node) and changed nothing"
	else
		tap_fail "healthy nodes: no update" "$(summary)"
	fi
else
	tap_fail "slurmd runs the HealthCheckProgram every 2 s" "$(summary; tail -5 "$CL_LOG"/slurmd.n1.log)"
fi

# n1 drained by the plugin (drain=yes after a link flap during a step), its
# node check passing: the plugin's drain is not the health check's to resume
plugin_reason="spank-ib: mlx5_3 port 1: link went down 2 times during job 7.0, DOWN now"
cl_scontrol update nodename=n1 state=drain reason="$plugin_reason" >/dev/null
if left_alone n1 "*DRAIN* $plugin_reason"; then
	tap_ok "n1 drained by the plugin and healthy: 3 checks, not resumed, reason kept"
else
	tap_fail "n1 drained by the plugin: not resumed by the health check" "$(summary)"
fi
# drained by the previous version's check ("spank-ib: NODE: ..."): its own, resumed
cl_scontrol update nodename=n1 state=drain \
	reason="spank-ib: n1: mlx5_4 port 1: port state DOWN, expected ACTIVE: check the cable" >/dev/null
if wait_for n1 "IDLE *" 30 && [[ "$(cluster_node_state n1)" != *DRAIN* ]]; then
	tap_ok "n1 drained by the previous version's check and healthy: resumed"
else
	tap_fail "n1 drained by the previous check: resumed" "$(summary)"
fi

# n1 broken: drained with the check's reason
hw n1 mlx5_4:down
if wait_for n1 "*DRAIN* spank-ib check: mlx5_4 port 1: port state DOWN*" 30; then
	tap_ok "n1 mlx5_4 down: drained by the health check, reason '$(cluster_node_reason n1 | cut -c1-60)...'"
else
	tap_fail "n1 mlx5_4 down: drained with the check's reason" "$(summary)"
fi
if left_alone n1; then
	tap_ok "n1 still faulty, already drained by the check: 3 more checks, no further update"
else
	tap_fail "n1 unchanged: no further update" "$(summary)"
fi

# n2 drained by an admin, then broken: never touched
cl_scontrol update nodename=n2 state=drain reason="maintenance" >/dev/null
hw n2 mlx5_3/1:width=1X
if left_alone n2 "*DRAIN* maintenance"; then
	tap_ok "n2 drained by an admin and faulty: the admin's drain and reason left alone"
else
	tap_fail "n2 admin drain left alone (faulty)" "$(summary)"
fi

# repairs: n1 resumed, n2 still the admin's
hw n1
hw n2
# Resumed = no DRAIN flag.  22.05 clears the reason on resume; 24.11 and
# 26.05 keep the last one beside IDLE, which is Slurm's, not ours to clear.
if wait_for n1 "IDLE *" 30 && [[ "$(cluster_node_state n1)" != *DRAIN* ]]; then
	tap_ok "n1 repaired: resumed by the health check (state $(cluster_node_state n1), reason '$(cluster_node_reason n1)')"
else
	tap_fail "n1 repaired: resumed" "$(summary)"
fi
if left_alone n2 "*DRAIN* maintenance"; then
	tap_ok "n2 healthy again: the admin's drain is not resumed"
else
	tap_fail "n2 admin drain not resumed" "$(summary)"
fi
if left_alone n1; then
	tap_ok "n1 healthy and resumed: 3 more checks, no update"
else
	tap_fail "n1 healthy: no update" "$(summary)"
fi

# the ASan+UBSan build through the same decisions: healthy n1 (nothing to
# change) and the admin's n2 (left alone), no sanitizer report; the host's
# build talks to the host's scontrol, so only on the host's release
if [ -n "${CL_CLIENT_PREFIX:-}" ]; then
	tap_skip "ASan+UBSan build: --slurm" "the host's ASan build and scontrol are not this release's (the host leg runs it)"
elif [ -x "$IBPREP_ASAN" ]; then
	out=""
	for n in n1 n2; do
		out+=$(env -i PATH="$T/shim:/usr/bin:/bin" SLURM_CONF="$CL_CONF" SLURMD_NODENAME=$n \
			ASAN_OPTIONS=detect_leaks=1 "$IBPREP_ASAN" check --slurm \
			--sysfs-root "$CL_DIR/nodes/$n/root" 2>&1)$'\n'
	done
	if grep -q "slurm: n1: state IDLE: nothing to change" <<<"$out" &&
		grep -q "slurm: n2: state IDLE+DRAIN, reason: maintenance: nothing to change" <<<"$out" &&
		! grep -q Sanitizer <<<"$out"; then
		tap_ok "ASan+UBSan build: --slurm on n1 and n2, nothing to change, no sanitizer report"
	else
		tap_fail "ASan+UBSan build: --slurm" "$out"
	fi
else
	tap_skip "ASan+UBSan build: --slurm" "$IBPREP_ASAN not built (make asan)"
fi

# --slurm without Slurm's commands or configuration: exit 2, never a drain
# (broken and repaired under the lock: no health check sees it; these runs do)
(
	flock -w 60 8 || exit 1
	cluster_hw n1 mlx5_4:down
	updates n1 >"$T/bad.before"
	env -i PATH=/nonexistent SLURM_CONF="$CL_CONF" SLURMD_NODENAME=n1 \
		"$IBPREP" check --slurm --sysfs-root "$CL_DIR/nodes/n1/root" >"$T/bad.1" 2>&1
	echo "rc=$?" >>"$T/bad.1"
	env -i PATH="$T/shim:/usr/bin:/bin" SLURM_CONF="$T/nonexistent.conf" SLURMD_NODENAME=n1 \
		"$IBPREP" check --slurm --sysfs-root "$CL_DIR/nodes/n1/root" >"$T/bad.2" 2>&1
	echo "rc=$?" >>"$T/bad.2"
	if [ ! -e /etc/slurm/slurm.conf ] && [ ! -e /run/slurm/conf/slurm.conf ]; then
		env -i PATH="$T/shim:/usr/bin:/bin" SLURMD_NODENAME=n1 \
			"$IBPREP" check --slurm --sysfs-root "$CL_DIR/nodes/n1/root" >"$T/bad.3" 2>&1
		echo "rc=$?" >>"$T/bad.3"
	fi
	# n1 must still be what the last health check left: idle, no update since
	cluster_node_state n1 >"$T/bad.state"
	updates n1 >"$T/bad.after"
	cluster_hw n1
) 8>>"$T/lock"
if grep -q "no scontrol in PATH" "$T/bad.1" && grep -q "rc=2" "$T/bad.1" &&
	grep -q "nothing was changed" "$T/bad.1"; then
	tap_ok "--slurm without scontrol: exit 2, message"
else
	tap_fail "--slurm without scontrol" "$(cat "$T/bad.1")"
fi
if grep -q "no slurm.conf (tried SLURM_CONF = $T/nonexistent.conf)" "$T/bad.2" && grep -q "rc=2" "$T/bad.2"; then
	tap_ok "--slurm with SLURM_CONF naming no file: exit 2, message"
else
	tap_fail "--slurm with a missing SLURM_CONF" "$(cat "$T/bad.2")"
fi
if [ -e "$T/bad.3" ]; then
	if grep -q "no slurm.conf" "$T/bad.3" && grep -q "rc=2" "$T/bad.3"; then
		tap_ok "--slurm without SLURM_CONF and without /etc/slurm/slurm.conf: exit 2, message"
	else
		tap_fail "--slurm without any slurm.conf" "$(cat "$T/bad.3")"
	fi
else
	tap_skip "--slurm without any slurm.conf" "this machine has /etc/slurm/slurm.conf"
fi
if [ "$(cat "$T/bad.state")" = IDLE ] && cmp -s "$T/bad.before" "$T/bad.after"; then
	tap_ok "--slurm that could not run never drained the (faulty) node"
else
	tap_fail "--slurm that could not run never drained" "state $(cat "$T/bad.state"); $(summary)"
fi
tap_done
