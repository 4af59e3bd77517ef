#!/usr/bin/env bash
# run-suite.sh NAME CMD [ARGS...]
# Runs one test suite that speaks TAP (cmocka with CMOCKA_MESSAGE_OUTPUT=TAP,
# or a shell suite using tests/lib/tap.sh), shows its output, and keeps it in
# $RESULTS/NAME.tap for tap-summary.sh.  A suite that exits non-zero without
# reporting a failure (a crash, a sanitizer abort, a harness error) gets one
# "not ok" line of its own, so it can never pass by dying early.
set -u
name=$1; shift
results=${RESULTS:-build/results}
mkdir -p "$results"
out="$results/$name.tap"
export CMOCKA_MESSAGE_OUTPUT=TAP
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "# suite $name"
# The braces put tee under this shell (on a bare external command the
# redirection, and so tee, belonged to the command's own process, and
# nothing waited for it: a suite's whole output was once read as "reported
# no test at all" before tee had written it).  Up to 10 s for tee, never
# forever (a process a suite left behind may hold its pipe).
{ "$@"; } > >(tee "$out") 2>&1
rc=$?
tee_pid=$!
for _ in $(seq 1 200); do
	kill -0 "$tee_pid" 2>/dev/null || break
	sleep 0.05
done
if [ "$rc" -ne 0 ] && ! grep -Eq '^not ok' "$out" ; then
	echo "not ok - $name exited with status $rc without reporting a failure" | tee -a "$out"
fi
if ! grep -Eq '^(not )?ok' "$out"; then
	echo "not ok - $name reported no test at all" | tee -a "$out"
fi
exit "$rc"
