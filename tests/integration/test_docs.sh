#!/usr/bin/env bash
# test_docs.sh: the documentation stays one source per fact.
#  * man/spank_ib.conf.5 lists exactly the plugin keys of helpers/node/conf.c's table
#    and exactly the policy keys of helpers/node/policy.c's table (a key added to
#    one and not the other fails here);
#  * the man pages render without groff warnings, and make install installs
#    all three;
#  * README.md stays short, links every docs/*.md and bench/README.md, and
#    names no docs file that does not exist;
#  * docs/consistency.md, rdmatest.md and fabric.md stay under 350 lines, and
#    bench/results/ holds dated series that say what they measured;
#  * the Slurm release table appears once.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
T=$(mktemp -d /tmp/test_docs.XXXXXX)
trap 'rm -rf "$T"' EXIT
CONF5=man/spank_ib.conf.5

# man_keys FIRST_SECTION NEXT_SECTION: the key of every .TP entry between them
man_keys() {
	awk -v from="$1" -v to="$2" '
		$0 == ".SH " from { on = 1; next }
		on && $0 == ".SH " to { on = 0 }
		on && tp { if (match($0, /^\.B[IR]? [a-z_0-9]+=/)) { k = substr($0, RSTART, RLENGTH);
			   sub(/^\.B[IR]? /, "", k); sub(/=$/, "", k); print k } tp = 0; next }
		on && $0 == ".TP" { tp = 1 }' "$CONF5" | sort
}
# same NAME WANT_FILE GOT_FILE
same() {
	if [ ! -s "$2" ]; then
		tap_fail "$1" "no keys found in the source"
	elif [ ! -s "$3" ]; then
		tap_fail "$1" "no keys found in $CONF5"
	elif diff -u "$2" "$3" >"$T/diff"; then
		tap_ok "$1 ($(wc -l <"$2") keys)"
	else
		tap_fail "$1" "$(sed -n '3,$p' "$T/diff" | grep '^[-+]' | sed 's/^-/only in the code: /; s/^+/only in the man page: /')"
	fi
}

sed -n 's/.*{"\([a-z_0-9]*\)", K_[A-Z_0-9]*,.*/\1/p' helpers/node/policy.c | sort >"$T/policy.code"
man_keys "POLICY KEYS" "EXAMPLES" >"$T/policy.man"
same "spank_ib.conf(5) POLICY KEYS = helpers/node/policy.c's key table" "$T/policy.code" "$T/policy.man"

sed -n 's/.*{"\([a-z_0-9]*\)", C_[A-Z_0-9]*}.*/\1/p' helpers/node/conf.c | sort -u >"$T/plugin.code"
man_keys "PLUGIN KEYS" "POLICY KEYS" >"$T/plugin.man"
same "spank_ib.conf(5) PLUGIN KEYS = helpers/node/conf.c's key table" "$T/plugin.code" "$T/plugin.man"

if command -v groff >/dev/null; then
	for m in man/*.[158]; do
		if out=$(groff -man -ww -z "$m" 2>&1) && [ -z "$out" ]; then
			tap_ok "$m renders without groff warnings"
		else
			tap_fail "$m renders without groff warnings" "$out"
		fi
	done
else
	tap_skip "man pages render" "groff is not installed (contrib/install-deps.sh installs it)"
fi

if make -s --no-print-directory install DESTDIR="$T/root" PREFIX=/usr MANDIR=/usr/share/man \
	SLURM_PLUGINDIR=/usr/lib/slurm SLURM_CONFDIR=/etc/slurm >"$T/install.log" 2>&1; then
	miss=""
	for f in man1/ibprep.1 man5/spank_ib.conf.5 man8/spank_ib.8; do
		[ -f "$T/root/usr/share/man/$f" ] || miss+=" $f"
	done
	if [ -z "$miss" ]; then tap_ok "make install installs the three man pages"; else
		tap_fail "make install installs the three man pages" "missing:$miss"; fi
else
	tap_fail "make install installs the three man pages" "$(tail -5 "$T/install.log")"
fi

n=$(wc -l <README.md)
if [ "$n" -le 260 ]; then tap_ok "README.md is short ($n lines)"; else
	tap_fail "README.md is short" "$n lines, at most 260: reference goes to man/, design to docs/"; fi
miss=""
for f in docs/*.md bench/README.md; do
	grep -qF "$f" README.md || miss+=" $f"
done
if [ -z "$miss" ]; then tap_ok "README.md links every docs/*.md and bench/README.md"; else
	tap_fail "README.md links every docs/*.md and bench/README.md" "not linked:$miss"; fi
miss=""
for f in $(grep -oE '(docs/[A-Za-z0-9_-]+\.md|bench/README\.md)' README.md | sort -u); do
	[ -f "$f" ] || miss+=" $f"
done
if [ -z "$miss" ]; then tap_ok "every docs file README.md names exists"; else
	tap_fail "every docs file README.md names exists" "missing:$miss"; fi

# docs describe today: the pages that once were lab notebooks stay short,
# and the series they shed live in bench/results/, one dated file each that
# says what it measured (a commit) and with which command
over=""
for f in docs/consistency.md docs/rdmatest.md docs/fabric.md; do
	n=$(wc -l <"$f")
	[ "$n" -lt 350 ] || over+=" $f ($n lines)"
done
if [ -z "$over" ]; then tap_ok "docs/consistency.md, rdmatest.md and fabric.md are under 350 lines"; else
	tap_fail "docs/consistency.md, rdmatest.md and fabric.md are under 350 lines" \
		"over:$over: docs describe today; dated series and superseded figures go to bench/results/ (bench/README.md)"; fi
bad=""
for f in bench/results/*.md; do
	[ -e "$f" ] || continue
	b=${f##*/}
	if ! [[ "$b" =~ ^20[0-9][0-9]-[01][0-9]-[0-3][0-9]-[a-z0-9-]+\.md$ ]]; then
		bad+=" $b (not YYYY-MM-DD-name.md)"
	elif ! head -15 "$f" | grep -q '^Measured' || ! head -15 "$f" | grep -qE '\b[0-9a-f]{7,40}\b' ||
		! head -15 "$f" | grep -q '`'; then
		bad+=" $b (its top says not what it measured, the commit and the command)"
	fi
done
n=$(ls bench/results/*.md 2>/dev/null | wc -l)
if [ "$n" -gt 0 ] && [ -z "$bad" ]; then tap_ok "bench/results: $n dated series, each naming what it measured, a commit and the command"; else
	tap_fail "bench/results: dated series that say what they measured" "${bad:- no file}"; fi
miss=""
for f in $(grep -ohE 'bench/results/[A-Za-z0-9_.-]+\.md' docs/*.md bench/README.md | sort -u); do
	[ -f "$f" ] || miss+=" $f"
done
if [ -z "$miss" ]; then tap_ok "every bench/results file the docs name exists"; else
	tap_fail "every bench/results file the docs name exists" "missing:$miss"; fi

# the release table: its 22.05 row, in one file only
files=$(grep -lE '^\| 22\.05' README.md docs/*.md man/* bench/README.md 2>/dev/null)
if [ "$(wc -w <<<"$files")" -eq 1 ]; then tap_ok "the Slurm release table appears once ($files)"; else
	tap_fail "the Slurm release table appears once" "in: ${files:-nowhere}"; fi
tap_done
