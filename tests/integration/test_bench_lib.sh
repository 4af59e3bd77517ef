#!/usr/bin/env bash
# test_bench_lib.sh: the benches' shared arithmetic.  paired_ratio.awk
# judges two configurations on their rounds' pairs: the median of the
# rounds' ratios and a 95% bootstrap interval that holds the true ratio,
# narrows with more rounds, is the same for the same input, and leaves out
# rounds it cannot divide by.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
T=$(mktemp -d /tmp/test_bench_lib.XXXXXX)
trap 'rm -rf "$T"' EXIT
PR=bench/lib/paired_ratio.awk

# Rounds of a step at 1.03x its baseline: both move with the round's load
# (a shared drift of up to +-12%) and each has its own jitter of +-2 ms.
# Park-Miller's generator, exact in doubles: the same rounds under every awk.
gen() { awk -v n="$1" -v x="$2" 'function u() { x = (x * 16807) % 2147483647; return x / 2147483647 }
	BEGIN { for (i = 0; i < n; i++) { d = 1 + (u() - 0.5) * 0.24;
		printf "%.1f %.1f\n", 150 * 1.03 * d + (u() - 0.5) * 4, 150 * d + (u() - 0.5) * 4 } }'; }
gen 300 7 >"$T/r300"
gen 30 7 >"$T/r30"

read -r _ med _ lo hi _ n _ <<<"$(awk -f "$PR" "$T/r300" | tr -d '[],')"
if [ "$n" = 300 ] && awk -v m="$med" -v l="$lo" -v h="$hi" 'BEGIN { exit !(l <= 1.03 && 1.03 <= h && l <= m && m <= h && h - l < 0.01) }'; then
	tap_ok "300 rounds at 1.03x: median $med, 95% [$lo, $hi] holds 1.03 and is narrower than 0.01"
else
	tap_fail "300 rounds at 1.03x: the interval holds 1.03" "$(awk -f "$PR" "$T/r300")"
fi
read -r _ _ _ lo30 hi30 _ <<<"$(awk -f "$PR" "$T/r30" | tr -d '[],')"
if awk -v a="$lo30" -v b="$hi30" -v l="$lo" -v h="$hi" 'BEGIN { exit !(b - a > h - l) }'; then
	tap_ok "30 rounds give a wider interval ([$lo30, $hi30]) than 300"
else
	tap_fail "30 rounds give a wider interval than 300" "30: [$lo30, $hi30], 300: [$lo, $hi]"
fi
if [ "$(awk -f "$PR" "$T/r300")" = "$(awk -f "$PR" "$T/r300")" ]; then
	tap_ok "the same rounds give the same interval (seeded resampling)"
else
	tap_fail "the same rounds give the same interval" "two runs differ"
fi
printf '103 100\n206 200\n50 0\n70\n103 100\n' >"$T/holes"
out=$(awk -f "$PR" "$T/holes")
case "$out" in
"median 1.030  95% [1.030, 1.030]  over 3 rounds") tap_ok "a round with a zero or missing baseline is left out" ;;
*) tap_fail "a round with a zero or missing baseline is left out" "got '$out'" ;;
esac
out=$(awk -f "$PR" /dev/null)
rc=$?
if [ "$rc" -ne 0 ] && [ "$out" = "no rounds" ]; then
	tap_ok "no rounds: says so and fails"
else
	tap_fail "no rounds: says so and fails" "rc $rc, '$out'"
fi
tap_done
