#!/usr/bin/env bash
# test_layers.sh: the checker of the library's one-way arrows
# (tests/lib/check-layers.py, run by make lint) says yes to this tree and no
# to each kind of wrong arrow, on a small tree built here with the project's
# own compile flags: a lower part calling a higher one, a lower part including
# a higher part's header, two files calling each other, the library calling
# the command, and a folder that is not a part.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
CHECK=$PWD/tests/lib/check-layers.py
T=$(mktemp -d /tmp/test_layers.XXXXXX)
trap 'rm -rf "$T"' EXIT

layers=$(sed -n 's/^LAYERS[[:space:]]*:=[[:space:]]*//p' Makefile)
if [ -n "$layers" ] && [ -d build/obj/helpers ]; then
	tap_check "this tree's arrows run one way ($layers)" python3 "$CHECK" build/obj $layers
else
	tap_skip "this tree's arrows run one way" "no LAYERS in the Makefile or no build/obj (make all first)"
fi

# mini TREE: a two-part library (low < high) and a command, compiled with -MMD
mini() {
	local d=$T/$1
	mkdir -p "$d/include/ibprep" "$d/helpers/low" "$d/helpers/high"
	printf 'int low_f(void);\n' >"$d/include/ibprep/low_a.h"
	printf 'int high_f(void);\n' >"$d/include/ibprep/high_b.h"
	printf '#include "ibprep/low_a.h"\nint low_f(void) { return 1; }\n' >"$d/helpers/low/low_a.c"
	printf '#include "ibprep/high_b.h"\n#include "ibprep/low_a.h"\nint high_f(void) { return low_f(); }\n' \
		>"$d/helpers/high/high_b.c"
	printf '#include "ibprep/high_b.h"\nint main(void) { return high_f(); }\n' >"$d/helpers/ibprep.c"
}
build() {
	local d=$T/$1 c
	(cd "$d" && for c in helpers/*/*.c helpers/*.c; do
		mkdir -p "obj/$(dirname "$c")" && cc -Iinclude -MMD -MP -c "$c" -o "obj/${c%.c}.o" || return 1
	done)
}
# verdict NAME WANT(0|1) GREP TREE: the checker's exit and the line it must print
verdict() {
	local out rc
	out=$(cd "$T/$4" && python3 "$CHECK" obj low high 2>&1)
	rc=$?
	if [ "$rc" -eq "$2" ] && grep -q -- "$3" <<<"$out"; then
		tap_ok "$1"
	else
		tap_fail "$1" "exit $rc (want $2), output: $out"
	fi
}

mini good && build good
verdict "a higher part calling and including a lower one passes" 0 "run one way (low < high" good

mini up && printf '#include "ibprep/high_b.h"\nint low_f(void) { return high_f(); }\n' >"$T/up/helpers/low/low_a.c" && build up
verdict "a lower part calling a higher one is named" 1 "helpers/low/low_a.c (low) calls high_f in helpers/high/high_b.c (high)" up
verdict "a lower part including a higher part's header is named" 1 "helpers/low/low_a.c (low) includes include/ibprep/high_b.h (high)" up

mini loop
printf 'int high_g(void);\n' >>"$T/loop/include/ibprep/high_b.h"
printf '#include "ibprep/high_b.h"\nint high_g(void) { return high_f() + 1; }\n' >"$T/loop/helpers/high/high_c.c"
printf '#include "ibprep/high_b.h"\n#include "ibprep/low_a.h"\nint high_f(void) { return low_f(); }\nint high_h(void) { return high_g(); }\n' \
	>"$T/loop/helpers/high/high_b.c"
build loop
verdict "two files of one part calling each other are a loop" 1 "a loop of calls: helpers/high/high_b.c -> helpers/high/high_c.c" loop

mini cmd && printf 'int ibp_cmd(void);\nint ibp_cmd(void) { return 0; }\nint main(void) { return 0; }\n' >"$T/cmd/helpers/ibprep.c" &&
	printf 'int ibp_cmd(void);\nint low_f(void) { return ibp_cmd(); }\n' >"$T/cmd/helpers/low/low_a.c" && build cmd
verdict "the library calling the command is named" 1 "helpers/low/low_a.c (low) calls ibp_cmd in helpers/ibprep.c (cmd)" cmd

mini stray && mkdir -p "$T/stray/helpers/misc" && printf 'int misc(void) { return 0; }\n' >"$T/stray/helpers/misc/m.c" && build stray
verdict "a folder that is not a part is named" 1 "helpers/misc/: a folder that is not a part" stray

tap_done
