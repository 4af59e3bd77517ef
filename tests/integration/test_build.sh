#!/usr/bin/env bash
# test_build.sh: the build's conventions.  One version (the Makefile's
# VERSION) in `ibprep --version` and debian/changelog; `make help` names
# every target of the Makefile; CPPFLAGS and LDFLAGS reach every compile and
# link as distributions pass them; spank/spank_ib.lds names only symbols
# spank_ib.so defines and the .so exports nothing else.
#   IBPREP   the binary (default build/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
IBPREP=${IBPREP:-build/ibprep}
SO=${IBP_PLUGIN:-build/spank_ib.so}
T=$(mktemp -d /tmp/test_build.XXXXXX)
trap 'rm -rf "$T"' EXIT

version=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)
if [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
	tap_ok "Makefile VERSION is x.y.z ($version)"
else
	tap_fail "Makefile VERSION is x.y.z" "got '$version'"
fi
out=$("$IBPREP" --version 2>&1)
if [ "$out" = "ibprep $version" ]; then
	tap_ok "ibprep --version says the Makefile's VERSION"
else
	tap_fail "ibprep --version says the Makefile's VERSION" "got '$out', want 'ibprep $version'"
fi
# debian/changelog's top entry is the version `make deb` builds snapshots after
if command -v dpkg-parsechangelog >/dev/null; then
	top=$(dpkg-parsechangelog -l debian/changelog -S Version 2>&1)
	if [ "$top" = "$version" ]; then
		tap_ok "debian/changelog's top entry is the Makefile's VERSION ($top)"
	else
		tap_fail "debian/changelog's top entry is the Makefile's VERSION" "changelog says '$top', Makefile '$version'"
	fi
else
	tap_skip "debian/changelog's version" "dpkg-parsechangelog is not installed (dpkg-dev)"
fi
out=$(make -s --no-print-directory help 2>&1)
targets=$(sed -n '/^\.PHONY:/,/[^\\]$/p' Makefile | tr -d '\\' | sed 's/^\.PHONY://' | tr -s ' \t' '\n' | sed '/^$/d')
miss=""
for t in $targets; do grep -qE "^  ([a-z-]+, )?$t( |,|$)" <<<"$out" || miss+=" $t"; done
if [ -n "$targets" ] && [ -z "$miss" ]; then
	tap_ok "make help names every .PHONY target ($(wc -w <<<"$targets"))"
else
	tap_fail "make help names every .PHONY target" "missing:$miss"
fi

# CPPFLAGS and LDFLAGS as dpkg-buildflags / redhat-rpm-config pass them: on every
# compile and link line of a dry run of a fresh build directory
dry=$(make -n -B --no-print-directory B="$T/b" CPPFLAGS='-DIBP_TEST_CPPFLAGS -D_FORTIFY_SOURCE=3' \
	LDFLAGS='-Wl,-z,ibp-test-ldflags' all 2>&1)
compiles=$(grep -E '^(cc|gcc|clang)\b.* -c ' <<<"$dry")
links=$(grep -E '^(cc|gcc|clang)\b.* -o [^ ]*(ibprep|spank_ib\.so)( |$)' <<<"$dry")
bad=$(grep -v -- '-DIBP_TEST_CPPFLAGS' <<<"$compiles")
if [ -n "$compiles" ] && [ -z "$bad" ]; then
	tap_ok "CPPFLAGS on every compile ($(wc -l <<<"$compiles") lines)"
else
	tap_fail "CPPFLAGS on every compile" "${bad:-no compile lines in make -n}"
fi
bad=$(grep -- '-D_FORTIFY_SOURCE=2' <<<"$compiles")
if [ -z "$bad" ]; then
	tap_ok "the distribution's _FORTIFY_SOURCE level is not redefined"
else
	tap_fail "the distribution's _FORTIFY_SOURCE level is not redefined" "$(head -2 <<<"$bad")"
fi
bad=$(grep -v -- '-Wl,-z,ibp-test-ldflags' <<<"$links")
if [ "$(wc -l <<<"$links")" -ge 1 ] && [ -n "$links" ] && [ -z "$bad" ]; then
	tap_ok "LDFLAGS on every link ($(wc -l <<<"$links") lines)"
else
	tap_fail "LDFLAGS on every link" "${bad:-no link lines in make -n}"
fi

# the version script against the plugin's dynamic symbol table
if [ ! -f "$SO" ]; then
	tap_skip "spank_ib.lds matches spank_ib.so" "$SO not built (no slurm/spank.h?)"
else
	globals=$(sed -n '/global:/,/local:/p' spank/spank_ib.lds | sed -n 's/^[[:space:]]*\([A-Za-z0-9_*]*\);.*/\1/p')
	exported=$(nm -D --defined-only "$SO" | awk '{print $3}' | sort -u)
	miss=""
	for g in $globals; do
		re="^${g//\*/.*}\$"
		grep -qE "$re" <<<"$exported" || miss+=" $g"
	done
	if [ -n "$globals" ] && [ -z "$miss" ]; then
		tap_ok "every name in spank_ib.lds is defined in spank_ib.so"
	else
		tap_fail "every name in spank_ib.lds is defined in spank_ib.so" "not in the .so:$miss"
	fi
	extra=""
	for s in $exported; do
		ok=0
		for g in $globals; do [[ "$s" == $g ]] && ok=1; done
		[ "$ok" -eq 1 ] || extra+=" $s"
	done
	if [ -z "$extra" ]; then
		tap_ok "spank_ib.so exports only what spank_ib.lds names ($(wc -w <<<"$exported") symbols)"
	else
		tap_fail "spank_ib.so exports only what spank_ib.lds names" "also exported:$extra"
	fi
fi
tap_done
