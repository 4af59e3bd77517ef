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
#  * the Slurm release table appears once;
#  * the ibprep commands of ibprep(1)'s EXAMPLES and README.md run.
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

# ibprep(1)'s FINDING CODES holds finding codes only: a KEY= line there is a
# key's entry that lost its .TP and renders inside the previous code's text
bad=$(awk '/^\.SH FINDING CODES/{on=1; next} /^\.SH/{on=0}
	on && /^\.B[IR]? +[a-z_0-9]+=/ {print NR ": " $0}
	on && tp && !/^\.BR? +[a-z][a-z0-9_]*( |$)/ {print NR ": tag " $0}
	{tp = on && $0 == ".TP"}' man/ibprep.1)
if [ -z "$bad" ]; then tap_ok "ibprep(1) FINDING CODES: every entry a finding code, no KEY= inside"; else
	tap_fail "ibprep(1) FINDING CODES: every entry a finding code, no KEY= inside" "$bad"; fi
# every KEY= entry (a .TP tag) of the man pages renders at the start of its own line
if command -v groff >/dev/null; then
	miss=""
	for m in man/*.[158]; do
		groff -man -Tascii -P-cbou -rLL=200n "$m" 2>/dev/null >"$T/render"
		for k in $(awk 'tp && /^\.B[IR]? +[a-z_0-9]+=/ {sub(/^\.B[IR]? +/, ""); sub(/=.*/, ""); print}
			{tp = $0 == ".TP"}' "$m" | sort -u); do
			grep -qE "^ {3,}$k=" "$T/render" || miss+=" $m:$k"
		done
	done
	if [ -z "$miss" ]; then tap_ok "every KEY= entry of the man pages renders as an entry of its own"; else
		tap_fail "every KEY= entry of the man pages renders as an entry of its own" "inside other text:$miss"; fi
fi

if make -s --no-print-directory install DESTDIR="$T/root" PREFIX=/usr MANDIR=/usr/share/man \
	SLURM_PLUGINDIR=/usr/lib/slurm SLURM_CONFDIR=/etc/slurm >"$T/install.log" 2>&1; then
	miss=""
	for f in man1/ibprep.1 man5/spank_ib.conf.5 man8/spank_ib.8 man8/spank-ib-healthcheck.8; do
		[ -f "$T/root/usr/share/man/$f" ] || miss+=" $f"
	done
	if [ -z "$miss" ]; then tap_ok "make install installs the four man pages"; else
		tap_fail "make install installs the four man pages" "missing:$miss"; fi
else
	tap_fail "make install installs the four man pages" "$(tail -5 "$T/install.log")"
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
# The ibprep commands ibprep(1)'s EXAMPLES and README.md show are run as
# written, against a generated DGX H100 tree and topology (a documented
# command that fails, or an option that no longer exists, fails here): the
# live paths become the fixtures (--sysfs-root, --topology, --config), the output
# directories temporary ones, the training script `true`.
IBPREP=$(realpath -m "${IBPREP:-build/ibprep}")
if [ ! -x "$IBPREP" ] || ! command -v python3 >/dev/null; then
	tap_skip "the documented ibprep commands run" "needs $IBPREP (make) and python3"
else
	python3 tests/fixtures/mksysfs.py --preset dgx-h100 --gdr --node gpu001 "$T/ok" >/dev/null
	python3 tests/fixtures/mktopo.py --preset dgx-h100 "$T/h100.xml" >/dev/null
	mkdir -p "$T/prom" && : >"$T/links.jsonl"
	# the config= file README shows: spaces around '=' as spank_ib.conf(5) allows
	printf 'drain = yes\nmin_rate = 400\n' >"$T/site.conf"
	python3 - >"$T/examples" <<'PY'
import re
out = []
on = nf = False
for l in open("man/ibprep.1").read().split("\n"):
    if l.startswith(".SH "):
        on = l == ".SH EXAMPLES"
    elif on and l in (".nf", ".fi"):
        nf = l == ".nf"
    elif on and nf and "ibprep " in l:
        out.append(("ibprep(1)", l.replace("\\-", "-")))
for l in open("README.md"):
    m = re.match(r"^ {4,}(ibprep .*)$", l.rstrip("\n"))
    if m:
        out.append(("README.md", re.sub(r"\s+#.*$", "", m.group(1)).strip()))
    for m in re.finditer(r"`(ibprep [^`]*)`", l):
        out.append(("README.md", m.group(1)))
seen = set()
for src, cmd in out:
    if (src, cmd) not in seen:
        seen.add((src, cmd))
        print(src + "\t" + cmd)
PY
	i=0 ran=0
	while IFS=$'\t' read -r src cmd; do
		i=$((i + 1))
		c=$cmd
		[[ $c == 'eval "$('*')"' ]] && { c=${c#'eval "$('}; c=${c%')"'}; }
		case "$c" in
		"ibprep check --slurm")
			tap_skip "$src: $cmd" "needs scontrol and a Slurm node: test_slurm_healthcheck.sh runs it"
			continue ;;
		"ibprep check --since")
			tap_skip "$src: $cmd" "a mention (its SNAPSHOT is in the text): test_check_since.sh runs it"
			continue ;;
		esac
		c=${c//\/tmp\/node-snapshot/$T/ex$i}
		c=${c//\/var\/lib\/prometheus\/node-exporter/$T/prom}
		c=${c//node.xml/$T/h100.xml}
		c=${c//\/etc\/ibprep\/site.conf/$T/site.conf}
		c=${c//python train.py/true}
		c=$(sed -E "s#(^| )DIR( |\$)#\\1$T/ex$i\\2#" <<<"$c")
		read -r _ sub rest <<<"$c"
		case "$sub" in
		check | snapshot) c="$IBPREP $sub --sysfs-root $T/ok $rest" ;;
		place | env | exec)
			[[ $rest == *--topology* ]] || rest="--topology $T/h100.xml $rest"
			c="$IBPREP $sub --sysfs-root $T/ok $rest" ;;
		fabric) c="$IBPREP $sub $rest"; [[ $rest == *[![:space:]-]* ]] || c+=" $T/links.jsonl" ;;
		watch) # runs until interrupted: 1 s of it here, on the healthy tree
			[[ $rest == *--duration* ]] || rest="--duration 1 $rest"
			c="$IBPREP $sub --sysfs-root $T/ok $rest" ;;
		*) c="$IBPREP $sub $rest" ;;
		esac
		out=$(cd "$T" && LOCAL_RANK=3 eval "$c" 2>&1 </dev/null); rc=$?
		ran=$((ran + 1))
		if [ "$rc" -eq 0 ]; then
			tap_ok "$src: '$cmd' runs (exit 0)"
		else
			tap_fail "$src: '$cmd' runs" "exit $rc: $c: $(head -5 <<<"$out")"
		fi
	done <"$T/examples"
	[ "$ran" -ge 10 ] || tap_fail "the documented ibprep commands were found" "only $ran in $(cat "$T/examples")"
fi
tap_done
