#!/usr/bin/env bash
# test_watch_cmd.sh: `ibprep watch` (helpers/ibprep_watch.c over
# helpers/node/watch.c) on a generated tree that the test changes the way a
# link fault changes sysfs, while the command runs: the lines as they come,
# --json, --exit-on-fault, --ports, the exit status by what was seen, and the
# usage errors.  Every case runs with build/ibprep and the ASan+UBSan build.
# Nothing here asserts a time: each wait is for a line, bounded.
#   IBPREP / IBPREP_ASAN   the binaries (default build/ibprep, build/asan/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh

IBPREP=${IBPREP:-build/ibprep}
IBPREP_ASAN=${IBPREP_ASAN:-build/asan/ibprep}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
T=$(mktemp -d /tmp/test_watch_cmd.XXXXXX)
WPID=
cleanup() {
	[ -n "$WPID" ] && kill "$WPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

if ! command -v python3 >/dev/null; then
	tap_skip "ibprep watch" "python3 missing: cannot generate trees (contrib/install-deps.sh)"
	tap_done
	exit
fi
bins=("$IBPREP")
if [ -x "$IBPREP_ASAN" ]; then bins+=("$IBPREP_ASAN"); else tap_skip "ASan build" "$IBPREP_ASAN not built (make $IBPREP_ASAN)"; fi

# wait_for FILE TEXT: until FILE holds TEXT (at most 20 s); 1 when it never does.
wait_for() {
	local i
	for i in $(seq 1 200); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# start NAME ARGS...: the command in the background, stdout to $T/NAME.out,
# stderr to $T/NAME.err; returns once its first read is done.
start() {
	local name=$1
	shift
	"$bin" watch --sysfs-root "$T/live" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	WPID=$!
	wait_for "$T/$name.err" "watching"
}
# finish: SIGTERM and the exit status in RC.
finish() {
	kill -TERM "$WPID" 2>/dev/null
	wait "$WPID"
	RC=$?
	WPID=
}
P() { echo "$T/live/sys/class/infiniband/$1/ports/1"; }

for bin in "${bins[@]}"; do
	tag=$(basename "$(dirname "$bin")")/$(basename "$bin")
	rm -rf "$T/live"
	python3 tests/fixtures/mksysfs.py --preset ndr --hcas 4 --node gpu7 "$T/live" >/dev/null

	# ---- text: down, then back ----
	start text --interval 0.1 --node gpu7
	# the state first, then the counter: a reader in between sees a down, not a flap
	echo "1: DOWN" >"$(P mlx5_1)/state"
	echo "2: Polling" >"$(P mlx5_1)/phys_state"
	echo 1 >"$(P mlx5_1)/counters/link_downed"
	wait_for "$T/text.out" "link went down at"
	echo "4: ACTIVE" >"$(P mlx5_1)/state"
	echo "5: LinkUp" >"$(P mlx5_1)/phys_state"
	wait_for "$T/text.out" "ACTIVE again"
	finish
	down=$(grep "link went down" "$T/text.out")
	if [ "$RC" -eq 1 ] && [ "$(wc -l <"$T/text.out")" -eq 2 ] &&
		[[ "$down" =~ ^20[0-9-]+T[0-9:.]+\ fail\ gpu7:\ mlx5_1\ port\ 1:\ link\ went\ down\ at\ 20[0-9-]+T[0-9:]+\.[0-9]{3}\ \(DOWN,\ phys\ Polling\):\ check\ the\ cable ]] &&
		grep -q "info gpu7: mlx5_1 port 1: link down since .* is ACTIVE again after " "$T/text.out" &&
		grep -q "watching 4 ports every 0.1 s" "$T/text.err" &&
		grep -q "a link fault was seen" "$T/text.err"; then
		tap_ok "$tag: a link down and back: one line each as they happen (time, node, device, port), exit 1"
	else
		tap_fail "$tag: text down and back" "rc=$RC; $(cat "$T/text.out" "$T/text.err")"
	fi

	# ---- --json --exit-on-fault: stops by itself on a link down for good ----
	rm -rf "$T/live"
	python3 tests/fixtures/mksysfs.py --preset ndr --hcas 4 --node gpu7 "$T/live" >/dev/null
	start json --interval 0.1 --json --exit-on-fault
	echo 7 >"$(P mlx5_2)/counters/symbol_error"
	wait_for "$T/json.out" "symbol_error"
	echo 1 >"$(P mlx5_0)/counters/link_downed" # a flap: ACTIVE throughout
	wait_for "$T/json.out" "link_flapped"
	rm -rf "$(readlink -f "$T/live/sys/class/infiniband/mlx5_3")"
	for i in $(seq 1 100); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.1; done
	wait "$WPID"
	RC=$?
	WPID=
	if [ "$RC" -eq 1 ] && python3 -c '
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ev, last = lines[:-1], lines[-1]
kinds = [(e["event"], e["code"], e["device"], e["severity"], e["ends"]) for e in ev]
assert kinds == [("errors", "counter_grew", "mlx5_2", "warn", False),
                 ("flap", "link_flapped", "mlx5_0", "fail", False),
                 ("vanished", "port_vanished", "mlx5_3", "fail", True)], kinds
for e in ev:
    assert re.match(r"^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$", e["time"]), e
    assert e["port"] == 1 and e["node"] == "gpu7" and e["t"] > 1.7e9, e
assert last["verdict"] == "fail" and last["interrupted"] is False, last
assert last["events"]["vanished"] == 1 and last["ports"] == 3 and last["polls"] >= 4, last
' "$T/json.out" 2>"$T/json.py"; then
		tap_ok "$tag: --json --exit-on-fault: errors (warn), a flap, then a vanished port ends it by itself, exit 1"
	else
		tap_fail "$tag: json exit-on-fault" "rc=$RC; $(cat "$T/json.py" "$T/json.out" "$T/json.err")"
	fi

	# ---- --ports, watch_flap=: only the named port; a down within the window is a flap ----
	rm -rf "$T/live"
	python3 tests/fixtures/mksysfs.py --preset ndr --hcas 4 --node gpu7 "$T/live" >/dev/null
	start ports --interval 0.1 --ports mlx5_2:1,mlx5_3:1 watch_flap=60
	echo "1: DOWN" >"$(P mlx5_1)/state" # not watched
	echo "1: DOWN" >"$(P mlx5_2)/state"
	wait_for "$T/ports.out" "link went down"
	echo "4: ACTIVE" >"$(P mlx5_2)/state"
	wait_for "$T/ports.out" "ACTIVE again"
	finish
	if [ "$RC" -eq 1 ] && ! grep -q mlx5_1 "$T/ports.out" &&
		grep -q "fail gpu7: mlx5_2 port 1: link went down at .* and was ACTIVE again [0-9.]* s later" "$T/ports.out" &&
		grep -q "watching 2 ports" "$T/ports.err"; then
		tap_ok "$tag: --ports watches only those; a link back within watch_flap= is a flap"
	else
		tap_fail "$tag: --ports and watch_flap" "rc=$RC; $(cat "$T/ports.out" "$T/ports.err")"
	fi

	# ---- counters only: exit 0; nothing at all: exit 0 at --duration ----
	start errs --interval 0.1
	echo 40 >"$(P mlx5_0)/counters/port_rcv_errors"
	wait_for "$T/errs.out" "port_rcv_errors grew by 40"
	finish
	if [ "$RC" -eq 0 ] && grep -q "no link fault" "$T/errs.err"; then
		tap_ok "$tag: growing error counters alone: a warning line, exit 0"
	else
		tap_fail "$tag: counters only" "rc=$RC; $(cat "$T/errs.out" "$T/errs.err")"
	fi
	out=$("$bin" watch --sysfs-root "$T/live" --interval 0.1 --duration 0.3 2>&1 >"$T/quiet.out")
	rc=$?
	if [ $rc -eq 0 ] && [ ! -s "$T/quiet.out" ] && [[ "$out" == *" reads, 0 events, no link fault"* ]]; then
		tap_ok "$tag: --duration with nothing happening: no line, exit 0"
	else
		tap_fail "$tag: quiet duration" "rc=$rc $out"
	fi

	# ---- could not run: exit 2 with the reason ----
	bad=""
	for args in "--interval 0" "--interval 1s" "--ports mlx5_0" "--ports ../x:1" "watch_interval=0" \
		"watch_flap=-1" "--duration x" "--sysfs-root $T/nonexistent" "--sysfs-root $T/live/sys"; do
		# shellcheck disable=SC2086
		out=$("$bin" watch --sysfs-root "$T/live" $args 2>&1 </dev/null)
		rc=$?
		[ $rc -eq 2 ] && [[ "$out" == "ibprep watch: "* ]] || bad+="[$args: rc=$rc $out] "
	done
	if [ -z "$bad" ]; then
		tap_ok "$tag: bad --interval, --ports, --duration, keys or root (one level off too): exit 2 with the reason"
	else
		tap_fail "$tag: usage errors" "$bad"
	fi
done
tap_done
