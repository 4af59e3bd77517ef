#!/usr/bin/env bash
# test_snapshot.sh: `ibprep snapshot` of generated trees and the real captures
# replays with the same `ibprep check --json` document (byte for byte), the
# same exit status and the same table; a second snapshot of a snapshot is the
# same tree.  Runs build/ibprep and the ASan+UBSan build.
#   IBPREP / IBPREP_ASAN   the binaries (default build/ibprep, build/asan/ibprep)
#   IBP_REAL_FIXTURES      the real fixtures (default ../shared/fixtures/real)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh

IBPREP=${IBPREP:-build/ibprep}
IBPREP_ASAN=${IBPREP_ASAN:-build/asan/ibprep}
REAL=${IBP_REAL_FIXTURES:-../shared/fixtures/real}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

T=$(mktemp -d /tmp/test_snapshot.XXXXXX)
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT

if ! command -v python3 >/dev/null; then
	tap_skip "ibprep snapshot" "python3 missing: cannot generate trees (contrib/install-deps.sh)"
	tap_done
	exit
fi
gen() { python3 tests/fixtures/mksysfs.py "$@" >/dev/null; }
gen --preset dgx-h100 --gdr --node gpu017 --fault mlx5_3/1:width=1X --fault mlx5_4:down \
	--fault mlx5_5:pcie=16:8 --fault mlx5_6:counter=link_downed=255 "$T/dgx"
gen --preset roce --node roce1 --fault mlx5_1:nov2 "$T/roce"
gen --preset ndr --hcas 32 --node big "$T/ndr32"
gen --preset ndr --hcas 2 --rm sys/class/infiniband "$T/pcionly"
gen --preset ndr --hcas 2 --fault 'mlx5_0/1:malformed=state=4: DOWN' \
	--fault 'mlx5_1:unreadable=fw_ver' "$T/hostile"
trees=(dgx roce ndr32 pcionly hostile)
if [ -d "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" ]; then
	mkdir -p "$T/h100/sys/class"
	cp -R "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" "$T/h100/sys/class/infiniband"
	trees+=(h100)
fi
if [ -d "$REAL/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr" ]; then
	ln -s "$(cd "$REAL/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr" && pwd)" "$T/fdr"
	trees+=(fdr)
fi

for BIN in "$IBPREP" "$IBPREP_ASAN"; do
	TAG=$(basename "$(dirname "$BIN")")/$(basename "$BIN")
	if [ ! -x "$BIN" ]; then
		tap_skip "$TAG" "$BIN not built (make all asan)"
		continue
	fi
	for t in "${trees[@]}"; do
		snap="$T/snap-$t-${TAG//\//_}"
		out=$("$BIN" snapshot --sysfs-root "$T/$t" "$snap" 2>&1); rc=$?
		if [ "$rc" -ne 0 ] || grep -q Sanitizer <<<"$out"; then
			tap_fail "$TAG: snapshot $t exits 0" "$out"
			continue
		fi
		"$BIN" check --json --sysfs-root "$T/$t" >"$T/a.json" 2>&1; ra=$?
		"$BIN" check --json --sysfs-root "$snap" >"$T/b.json" 2>&1; rb=$?
		if [ "$ra" -ne "$rb" ] || ! cmp -s "$T/a.json" "$T/b.json"; then
			tap_fail "$TAG: $t: check --json replays identically (exit $ra vs $rb)" \
				"$(diff "$T/a.json" "$T/b.json" | head -20)"
		else
			tap_ok "$TAG: $t: check --json replays identically (exit $ra)"
		fi
		"$BIN" check --sysfs-root "$T/$t" >"$T/a.txt" 2>&1
		"$BIN" check --sysfs-root "$snap" >"$T/b.txt" 2>&1
		if cmp -s "$T/a.txt" "$T/b.txt"; then
			tap_ok "$TAG: $t: check table replays identically"
		else
			tap_fail "$TAG: $t: check table replays identically" \
				"$(diff "$T/a.txt" "$T/b.txt" | head -20)"
		fi
		# A snapshot of the snapshot is the same tree (README aside).
		"$BIN" snapshot --sysfs-root "$snap" "$snap.2" >/dev/null 2>&1
		if diff -r --no-dereference -x SNAPSHOT-README "$snap" "$snap.2" >"$T/d" 2>&1; then
			tap_ok "$TAG: $t: snapshot of the snapshot is the same tree"
		else
			tap_fail "$TAG: $t: snapshot of the snapshot is the same tree" "$(head -20 "$T/d")"
		fi
	done
	# Usage errors and a directory that is not empty: exit 2, nothing written.
	out=$("$BIN" snapshot 2>&1); rc=$?
	[ "$rc" -eq 2 ] && tap_ok "$TAG: snapshot without OUTDIR exits 2" ||
		tap_fail "$TAG: snapshot without OUTDIR exits 2 (got $rc)" "$out"
	# a root one level off, or no sysfs tree at all: exit 2, nothing written
	for r in "$T/dgx/sys" "$T/dgx/sys/class/infiniband"; do
		out=$("$BIN" snapshot --sysfs-root "$r" "$T/off-${TAG//\//_}" 2>&1); rc=$?
		if [ "$rc" -eq 2 ] && grep -q -- "--sysfs-root $T/dgx)" <<<"$out" && [ ! -e "$T/off-${TAG//\//_}" ]; then
			tap_ok "$TAG: snapshot --sysfs-root ${r#"$T/"} exits 2 naming the root to give, writes nothing"
		else
			tap_fail "$TAG: snapshot --sysfs-root ${r#"$T/"} exits 2 naming the root to give" "rc=$rc $out"
		fi
	done
	mkdir -p "$T/bare/sys"
	out=$("$BIN" snapshot --sysfs-root "$T/bare" "$T/bare-${TAG//\//_}" 2>&1); rc=$?
	if [ "$rc" -eq 2 ] && grep -q "no file copied" <<<"$out"; then
		tap_ok "$TAG: a snapshot that copies no file exits 2 saying so"
	else
		tap_fail "$TAG: a snapshot that copies no file exits 2 saying so" "rc=$rc $out"
	fi
	out=$("$BIN" snapshot --sysfs-root "$T/dgx" "$T/dgx" 2>&1); rc=$?
	[ "$rc" -eq 2 ] && grep -q 'not empty' <<<"$out" &&
		tap_ok "$TAG: snapshot into a non-empty directory exits 2" ||
		tap_fail "$TAG: snapshot into a non-empty directory exits 2 (got $rc)" "$out"
done
tap_done
