#!/usr/bin/env bash
# tap-summary.sh DIR: counts every TAP result line in DIR/*.tap and prints the
# aggregate line "N passed, N failed, N skipped"; exits 1 when anything failed.
# A line with "# SKIP" is a skip whether cmocka wrote "ok" or "not ok" before it.
set -u
dir=${1:-build/results}
pass=0 fail=0 skip=0
shopt -s nullglob
for f in "$dir"/*.tap; do
	while IFS= read -r line; do
		case "$line" in
		"ok "*"# SKIP"*|"not ok "*"# SKIP"*|"ok "*"# skip"*) skip=$((skip + 1)) ;;
		"ok "*|"ok") pass=$((pass + 1)) ;;
		"not ok"*) fail=$((fail + 1)); failed_lines+=("$(basename "$f" .tap): $line") ;;
		esac
	done < "$f"
done
if [ "$fail" -gt 0 ]; then
	echo "failures:"
	printf '  %s\n' "${failed_lines[@]}"
fi
if [ $((pass + fail)) -eq 0 ]; then
	echo "no test ran"
	echo "0 passed, 1 failed, $skip skipped"
	exit 1
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
