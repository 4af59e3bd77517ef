# tap.sh: TAP output for shell test suites; source it.
#   tap_ok NAME                 a pass
#   tap_fail NAME [WHY]         a failure (WHY as a diagnostic line)
#   tap_skip NAME WHY           a visible skip with its reason
#   tap_check NAME CMD [ARGS]   pass if CMD exits 0
#   tap_done                    exit 1 if any failure was reported
TAP_N=0
TAP_FAILED=0
tap_ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1"; }
tap_fail() {
	TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | sed 's/^/# /'
	return 0
}
tap_skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
tap_check() {
	local name=$1; shift
	local out
	if out=$("$@" 2>&1); then tap_ok "$name"; else tap_fail "$name" "$out"; fi
}
tap_done() { echo "1..$TAP_N"; [ "$TAP_FAILED" -eq 0 ]; }
