#!/usr/bin/env bash
# run-fuzz.sh BIN SECONDS: runs one libFuzzer target for a bounded time from
# its seed corpus (fuzz/corpus/<name>, if any) and reports one TAP line.
set -u
bin=$1 secs=$2
name=$(basename "$bin")
results=${RESULTS:-build/results}
mkdir -p "$results" "build/fuzz/corpus/$name"
seeds=()
[ -d "fuzz/corpus/$name" ] && seeds+=("fuzz/corpus/$name")
log="$results/fuzz-$name.log"
if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	"build/fuzz/corpus/$name" "${seeds[@]}" > "$log" 2>&1; then
	runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$')
	echo "ok 1 - fuzz $name ($secs s, ${runs:-?} runs)" | tee "$results/fuzz-$name.tap"
else
	tail -40 "$log"
	echo "not ok 1 - fuzz $name: crash or leak, see $log" | tee "$results/fuzz-$name.tap"
fi
