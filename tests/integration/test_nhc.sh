#!/usr/bin/env bash
# test_nhc.sh: contrib/nhc/spank_ib.nhc under the real LBNL NHC 1.4.3 driver
# (../shared/vendor/nhc-1.4.3.tar.gz, unpacked and run from its tree).  Each
# case runs `nhc` in a private mount namespace whose /sys is a simulated tree
# (tests/fixtures/mksysfs.py), with node marking pointed at recorder scripts
# (NHC_RM=slurm, OFFLINE_NODE/ONLINE_NODE), and asserts nhc's exit status and
# the reason it would drain the node with.  Node mode: a stand-in slurmd (a
# root process whose executable is called slurmd, under prlimit) with its pid
# file named by a test slurm.conf.
#   IBPREP         the binary (default build/ibprep)
#   IBP_NHC_TARBALL  default ../shared/vendor/nhc-1.4.3.tar.gz
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh

IBPREP=$(realpath -m "${IBPREP:-build/ibprep}")
TARBALL=${IBP_NHC_TARBALL:-../shared/vendor/nhc-1.4.3.tar.gz}

skip_all() {
	tap_skip "nhc check_ib_ibprep" "$1"
	tap_done
	exit
}
[ -f "$TARBALL" ] || skip_all "no NHC tarball at $TARBALL (see ../shared/vendor/README.md)"
[ "$(id -u)" = 0 ] || skip_all "needs root (a private mount namespace over /sys)"
command -v unshare >/dev/null || skip_all "unshare (util-linux) missing"
command -v python3 >/dev/null || skip_all "python3 missing: cannot generate trees"
command -v prlimit >/dev/null || skip_all "prlimit (util-linux) missing"
[ -x "$IBPREP" ] || skip_all "$IBPREP is not built (make)"

T=$(mktemp -d /tmp/test_nhc.XXXXXX)
SLURMD_PID=
cleanup() {
	[ -n "$SLURMD_PID" ] && kill "$SLURMD_PID" 2>/dev/null && wait "$SLURMD_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

tar -xzf "$TARBALL" -C "$T" || skip_all "cannot unpack $TARBALL"
NHC=$T/nhc-1.4.3/nhc
ETC=$T/etc
mkdir -p "$ETC/scripts" "$T/run"
cp "$T"/nhc-1.4.3/scripts/*.nhc "$ETC/scripts/"
cp contrib/nhc/spank_ib.nhc "$ETC/scripts/"
for m in online offline; do
	printf '#!/bin/sh\nprintf "%%s\\n" "$*" >> %s/marked-%s\n' "$T" "$m" >"$T/mark-$m"
	chmod 755 "$T/mark-$m"
done
# node mode reads slurmd's limit through SlurmdPidFile: a test slurm.conf
printf 'ClusterName=nhctest\nSlurmdPidFile=%s/run/slurmd.pid\n' "$T" >"$T/slurm.conf"

gen() { python3 tests/fixtures/mksysfs.py "$@" >/dev/null; }
gen --preset dgx-h100 --gdr "$T/ok"
gen --preset dgx-h100 --gdr --fault mlx5_3/1:width=1X "$T/width"
gen --preset dgx-h100 --gdr --fault mlx5_4:down "$T/down"
gen --preset dgx-h100 --gdr --fault mlx5_5:nosm "$T/nosm"
gen --preset dgx-h100 --gdr --fault mlx5_11:missing "$T/missing"
gen --preset dgx-h100 --gdr --fault '*:speed=HDR' "$T/hdr"
gen --preset dgx-h100 --gdr --fault mlx5_9:pcie=16:8 "$T/pcie"

# nhc_run TREE CONFLINE [VAR=VALUE ...]: nhc over TREE's /sys; output in $T/out, status in RC
nhc_run() {
	local tree=$1 line=$2
	shift 2
	rm -f "$T/marked-online" "$T/marked-offline"
	printf '%s\n' "$line" >"$ETC/nhc.conf"
	SLURM_CONF=$T/slurm.conf unshare --mount --propagation private -- bash -c \
		'mount --bind "$1" /sys || exit 99; shift; exec "$@"' _ "$tree/sys" \
		"$NHC" -D "$ETC" -c "$ETC/nhc.conf" -l - -t 60 NHC_RM=slurm MARK_OFFLINE=1 \
		OFFLINE_NODE="$T/mark-offline" ONLINE_NODE="$T/mark-online" IBPREP="$IBPREP" \
		"$@" >"$T/out" 2>&1 </dev/null
	RC=$?
}

# passes NAME TREE CONFLINE [VAR=VALUE ...]
passes() {
	local name=$1
	shift
	nhc_run "$@"
	if [ "$RC" -eq 0 ] && [ -s "$T/marked-online" ] && [ ! -e "$T/marked-offline" ]; then
		tap_ok "nhc: $name: passes, node marked online"
	else
		tap_fail "nhc: $name: exit $RC, want 0 and an online mark" "$(cat "$T/out"; cat "$T/marked-"* 2>/dev/null)"
	fi
}

# fails NAME WANT TREE CONFLINE [VAR=VALUE ...]: nhc fails and marks the node
# offline with a note that has WANT
fails() {
	local name=$1 want=$2
	shift 2
	nhc_run "$@"
	if [ "$RC" -ne 0 ] && [ -s "$T/marked-offline" ] &&
		grep -qF -- "check_ib_ibprep:  " "$T/marked-offline" &&
		grep -qF -- "$want" "$T/marked-offline" && grep -qF -- "$want" "$T/out"; then
		tap_ok "nhc: $name: fails, offline note has '$want'"
	else
		tap_fail "nhc: $name: exit $RC, want non-zero and an offline note with '$want'" \
			"$(cat "$T/out"; echo "-- marks:"; cat "$T/marked-"* 2>/dev/null)"
	fi
}

LINE='* || check_ib_ibprep min_speed=NDR expect_hcas=8'
passes "healthy DGX H100 tree" "$T/ok" "$LINE"
fails "width 1X" "mlx5_3 port 1: link width 1X, expected 4X" "$T/width" "$LINE"
fails "port down" "mlx5_4 port 1: port state DOWN (physical state Polling), expected ACTIVE" \
	"$T/down" "$LINE"
fails "no subnet manager" "mlx5_5 port 1:" "$T/nosm" "$LINE"
fails "HCA missing" "7 RDMA devices, expected 8 (expect_hcas)" "$T/missing" "$LINE"
fails "speed below min_speed" "mlx5_0 port 1: link speed HDR (rate 200 Gb/sec), expected NDR (min_speed)" \
	"$T/hdr" "$LINE"
if grep -qF "(+7 more)" "$T/marked-offline" 2>/dev/null; then
	tap_ok "nhc: the note counts the other failures (+7 more)"
else
	tap_fail "nhc: the note counts the other failures" "$(cat "$T/marked-offline" 2>/dev/null)"
fi
fails "PCIe downtrained" "mlx5_9: PCIe link 16 GT/s x8 (Gen4), expected 32 GT/s x16 (Gen5)" \
	"$T/pcie" "$LINE"
# the line check_hw_ib had: replaced without a policy
passes "no arguments" "$T/ok" '* || check_ib_ibprep'

# bad input
fails "ibprep missing" "ibprep not found or not executable at $T/nope/ibprep" "$T/ok" "$LINE" \
	IBPREP="$T/nope/ibprep"
fails "unknown policy key" "spank-ib: $IBPREP check could not run (exit 2): ibprep check: unknown key ’bogus_key’" \
	"$T/ok" '* || check_ib_ibprep bogus_key=1'
# a mistyped option: the reason is ibprep's error, not the last line of the usage text
fails "mistyped option" "spank-ib: $IBPREP check could not run (exit 2): ibprep check: unknown option ’--sysf-root=/x’" \
	"$T/ok" '* || check_ib_ibprep --sysf-root=/x'
if ! grep -q "exit status:" "$T/marked-offline" 2>/dev/null; then
	tap_ok "nhc: a mistyped option's note is not the usage text"
else
	tap_fail "nhc: a mistyped option's note is not the usage text" "$(cat "$T/marked-offline")"
fi
# IBPREP set in nhc.conf, as sites do
nhc_run "$T/width" "* || export IBPREP=$IBPREP
* || check_ib_ibprep" IBPREP=/nonexistent
if [ "$RC" -ne 0 ] && grep -qF "link width 1X" "$T/marked-offline" 2>/dev/null; then
	tap_ok "nhc: IBPREP exported in nhc.conf is used"
else
	tap_fail "nhc: IBPREP exported in nhc.conf is used" "$(cat "$T/out")"
fi

# Node mode: the limit slurmd passes to jobs, not root's.  A stand-in slurmd
# (sleep under the name slurmd) with a 64 KiB limit, its pid file root's 0644.
cp "$(command -v sleep)" "$T/slurmd"
start_slurmd() {
	[ -n "$SLURMD_PID" ] && kill "$SLURMD_PID" 2>/dev/null && wait "$SLURMD_PID" 2>/dev/null
	prlimit --memlock="$1" "$T/slurmd" 600 &
	SLURMD_PID=$!
	echo "$SLURMD_PID" >"$T/run/slurmd.pid"
	chmod 0644 "$T/run/slurmd.pid"
}
# Raising a hard limit may be refused even to root (sandboxes): the "good"
# limit is this shell's own hard limit, and the policy asks for exactly that.
HARD=$(ulimit -H -l)
if [ "$HARD" = unlimited ]; then GOOD=unlimited:unlimited; MIN=unlimited; else GOOD=$((HARD * 1024)):$((HARD * 1024)); MIN=$HARD; fi
LINE_ML="* || check_ib_ibprep min_speed=NDR expect_hcas=8 min_memlock=$MIN"
start_slurmd 65536:65536
fails "node mode: slurmd's memlock 64 KiB" \
	"locked-memory limit 64 KiB (slurmd’s, which jobs inherit), expected at least" "$T/ok" "$LINE_ML"
start_slurmd "$GOOD"
nhc_run "$T/ok" "$LINE_ML" DEBUG=1
if [ "$RC" -eq 0 ] && [ -s "$T/marked-online" ] && ! grep -q "not judged" "$T/out"; then
	tap_ok "nhc: node mode: slurmd's memlock $MIN KiB read and accepted"
else
	tap_fail "nhc: node mode: slurmd's memlock $MIN KiB read and accepted" "$(cat "$T/out")"
fi
# root's own limit is not what is judged: nhc itself runs with 64 KiB here
SLURM_CONF=$T/slurm.conf prlimit --memlock=65536:65536 unshare --mount --propagation private -- \
	bash -c 'mount --bind "$1" /sys || exit 99; shift; exec "$@"' _ "$T/ok/sys" \
	"$NHC" -D "$ETC" -c "$ETC/nhc.conf" -l - -t 60 NHC_RM=slurm MARK_OFFLINE=1 \
	OFFLINE_NODE="$T/mark-offline" ONLINE_NODE="$T/mark-online" IBPREP="$IBPREP" DEBUG=1 \
	>"$T/out" 2>&1 </dev/null
RC=$?
if [ "$RC" -eq 0 ] && ! grep -q "not judged" "$T/out"; then
	tap_ok "nhc: node mode judges slurmd's limit, not the 64 KiB of nhc's own process"
else
	tap_fail "nhc: node mode judges slurmd's limit, not nhc's own" "$(cat "$T/out")"
fi
# a pid file a user could write is not trusted: the limit is not judged, a warning says why
chmod 0666 "$T/run/slurmd.pid"
start_slurmd 65536:65536
chmod 0666 "$T/run/slurmd.pid"
nhc_run "$T/ok" "$LINE" DEBUG=1
if [ "$RC" -eq 0 ] && grep -qF "is not trusted" "$T/out"; then
	tap_ok "nhc: a world-writable slurmd pid file is not trusted (warning, not judged)"
else
	tap_fail "nhc: a world-writable slurmd pid file is not trusted" "$(cat "$T/out")"
fi
tap_done
