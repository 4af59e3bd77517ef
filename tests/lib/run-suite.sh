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
"$@" > >(tee "$out") 2>&1
rc=$?
wait
if [ "$rc" -ne 0 ] && ! grep -Eq '^not ok' "$out" ; then
	echo "not ok - $name exited with status $rc without reporting a failure" | tee -a "$out"
fi
if ! grep -Eq '^(not )?ok' "$out"; then
	echo "not ok - $name reported no test at all" | tee -a "$out"
fi
exit "$rc"
