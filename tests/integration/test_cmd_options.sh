#!/usr/bin/env bash
# test_cmd_options.sh: every ibprep subcommand takes its options through the
# one table of helpers/ibprep_args.c: "--opt=VALUE" and "--opt VALUE" give
# byte-identical output and exit status, the value is really used (a bad
# value changes the result), options and KEY=VALUE may be interleaved, and
# an option without its value or an unknown one exits 2 naming it.
#   IBPREP   the binary (default build/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
IBPREP=${IBPREP:-build/ibprep}
T=$(mktemp -d /tmp/test_cmd_options.XXXXXX)
trap 'rm -rf "$T"' EXIT

if ! command -v python3 >/dev/null; then
	tap_skip "ibprep options" "python3 missing: cannot generate trees (contrib/install-deps.sh)"
	tap_done
	exit
fi
python3 tests/fixtures/mksysfs.py --preset dgx-h100 --gdr --node gpu001 "$T/ok" >/dev/null
python3 tests/fixtures/mksysfs.py --preset dgx-h100 --gdr --node gpu002 \
	--fault mlx5_3:down "$T/bad" >/dev/null
python3 tests/fixtures/mksysfs.py --preset empty "$T/empty" >/dev/null
python3 tests/fixtures/mktopo.py --preset dgx-h100 "$T/h100.xml" >/dev/null

# same NAME :: ARGS_A :: ARGS_B: both runs give the same exit status and output
# (after replacing the OUTDIR operands' names, which differ on purpose, and
# the topology's load time)
same() {
	local name=$1; shift 2
	local a=() b=()
	while [ "$1" != "::" ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	local ra rb
	"$IBPREP" "${a[@]}" >"$T/a.out" 2>&1; ra=$?
	"$IBPREP" "${b[@]}" >"$T/b.out" 2>&1; rb=$?
	sed -i -e "s|$T/snap[ab]|SNAP|g" -e 's/loaded in [0-9.]* ms/loaded in N ms/' \
		"$T/a.out" "$T/b.out"
	if [ "$ra" -ne "$rb" ]; then
		tap_fail "$name: exit $ra vs $rb" "$(cat "$T/a.out" "$T/b.out")"
	elif ! cmp -s "$T/a.out" "$T/b.out"; then
		tap_fail "$name: outputs differ" "$(diff "$T/a.out" "$T/b.out" | head -20)"
	elif [ "$ra" -eq 2 ]; then
		tap_fail "$name: both could not run (exit 2)" "$(head -5 "$T/a.out")"
	else
		tap_ok "$name (exit $ra both ways)"
	fi
}
# expect NAME RC PATTERN -- ARGS: exit status and a line of stdout+stderr
expect() {
	local name=$1 want=$2 pat=$3; shift 4
	local out rc
	out=$("$IBPREP" "$@" 2>&1); rc=$?
	if [ "$rc" -ne "$want" ]; then
		tap_fail "$name: exit $rc, want $want" "$out"
	elif ! grep -qE -- "$pat" <<<"$out"; then
		tap_fail "$name: output lacks /$pat/" "$out"
	else
		tap_ok "$name"
	fi
}

# check: the healthy and the faulty tree, every value option both ways
same "check --sysfs-root=DIR" :: check --sysfs-root="$T/ok" :: check --sysfs-root "$T/ok"
same "check --sysfs-root=DIR (faulty tree)" :: check --sysfs-root="$T/bad" :: check --sysfs-root "$T/bad"
same "check --node= --memlock= --json" :: check --json --sysfs-root="$T/ok" --node=n7 \
	--memlock=64 :: check --json --sysfs-root "$T/ok" --node n7 --memlock 64
printf 'min_speed=NDR\n' >"$T/p.conf"
same "check --config=FILE" :: check --sysfs-root="$T/ok" --config="$T/p.conf" \
	:: check --sysfs-root "$T/ok" --config "$T/p.conf"
same "check -rDIR (short option)" :: check -r"$T/ok" :: check -r "$T/ok"
same "check KEY=VALUE before and after options" :: check min_speed=NDR --sysfs-root="$T/ok" \
	:: check --sysfs-root "$T/ok" min_speed=NDR
expect "check --sysfs-root=DIR is used (faulty tree fails)" 1 'mlx5_3' -- check --sysfs-root="$T/bad"
expect "check --node=NAME is used" 0 '"n7"' -- check --json --sysfs-root="$T/ok" --node=n7

# place / env / exec: the options that used to reject "--opt=VALUE"
for cmd in place env; do
	same "$cmd --topology= --sysfs-root=" :: $cmd --topology="$T/h100.xml" --sysfs-root="$T/bad" \
		:: $cmd --topology "$T/h100.xml" --sysfs-root "$T/bad"
	same "$cmd --ntasks-per-node= --local-rank= --gpus=" :: $cmd --topology="$T/h100.xml" \
		--ntasks-per-node=8 --local-rank=3 --gpus=0-7 \
		:: $cmd --topology "$T/h100.xml" --ntasks-per-node 8 --local-rank 3 --gpus 0-7
	same "$cmd --peer=ADDR" :: $cmd --topology="$T/h100.xml" --peer=127.0.0.1 \
		:: $cmd --topology "$T/h100.xml" --peer 127.0.0.1
done
expect "place --sysfs-root=DIR is used (mlx5_3 down is skipped)" 0 'mlx5_3.*(down|DOWN|unhealthy)' \
	-- place --topology="$T/h100.xml" --sysfs-root="$T/bad"
expect "place --ntasks-per-node=0 is refused" 2 'bad --ntasks-per-node' \
	-- place --topology="$T/h100.xml" --ntasks-per-node=0
same "exec --topology= --sysfs-root= -- CMD" :: exec --topology="$T/h100.xml" \
	--sysfs-root="$T/ok" --local-rank=1 -- sh -c 'env | grep -E "^(NCCL_IB_HCA|IBPREP_LOCAL_RANK)=" | sort' \
	:: exec --topology "$T/h100.xml" --sysfs-root "$T/ok" --local-rank 1 \
	-- sh -c 'env | grep -E "^(NCCL_IB_HCA|IBPREP_LOCAL_RANK)=" | sort'
expect "exec: options after -- belong to the command" 0 '^--json$' \
	-- exec --topology="$T/h100.xml" -- echo --json
expect "exec without -- exits 2" 2 'no command' -- exec --topology="$T/h100.xml"
expect "exec with a word before -- exits 2" 2 "unexpected argument 'echo'" \
	-- exec --topology="$T/h100.xml" echo hi

# snapshot: OUTDIR contents identical both ways
same "snapshot --sysfs-root=DIR" :: snapshot --sysfs-root="$T/ok" "$T/snapa" \
	:: snapshot --sysfs-root "$T/ok" "$T/snapb"
if ! diff -r --no-dereference -x SNAPSHOT-README "$T/snapa" "$T/snapb" >"$T/snapdiff" 2>&1; then
	tap_fail "snapshot: the two copies differ" "$(head "$T/snapdiff")"
else
	tap_ok "snapshot: the two copies are the same"
fi

# rdmatest: values parsed both ways (the checks that run before any network use)
expect "rdmatest --hosts= --index= (out of range)" 2 'index out of range' \
	-- rdmatest --hosts=c[1-2] --index=5 --transport=socket
expect "rdmatest --node= not in --hosts=" 2 'not in --hosts' \
	-- rdmatest --hosts=c[1-2] --node=c9 --transport=socket
expect "rdmatest --mode=fast refused with its name" 2 "bad value 'fast' for --mode" \
	-- rdmatest --hosts=c[1-2] --index=0 --mode=fast
expect "rdmatest --addrs= counted" 2 'fewer' \
	-- rdmatest --hosts=c[1-2] --index=0 --addrs=127.0.0.1 --transport=socket
expect "rdmatest --sysfs-root=DIR is used (no ACTIVE port in an empty tree)" 2 'no ACTIVE RDMA port' \
	-- rdmatest --hosts=c[1-2] --index=0 --transport=verbs --sysfs-root="$T/empty"

# errors name the option, for every subcommand
for cmd in check place env exec snapshot rdmatest; do
	expect "$cmd --sysfs-root without a value exits 2" 2 "option '--sysfs-root' needs a value" \
		-- $cmd --sysfs-root
	expect "$cmd --frobnicate exits 2" 2 "unknown option '--frobnicate'" -- $cmd --frobnicate
	expect "$cmd --help exits 0" 0 "^usage: ibprep $cmd" -- $cmd --help
done
expect "a flag given a value exits 2" 2 "option '--json' takes no value" -- check --json=yes
# place / env / exec: bad input is exit 2 with a message naming it, never a
# silent default; GPUs the node does not have are exit 1 (cannot be placed)
for cmd in place env; do
	expect "$cmd --gpus malformed exits 2" 2 "--gpus='0,,x' is not a GPU list" \
		-- $cmd --topology "$T/h100.xml" --gpus 0,,x
	expect "$cmd --gpus beyond the node exits 1" 1 "--gpus names GPU 9, but the node has 8 GPUs" \
		-- $cmd --topology "$T/h100.xml" --gpus 9
	expect "$cmd --peer notanaddress exits 2" 2 "bad --peer 'notanaddress': expected a numeric" \
		-- $cmd --topology "$T/h100.xml" --peer notanaddress
done
out=$(LOCAL_RANK=abc "$IBPREP" env --topology "$T/h100.xml" --ntasks-per-node 1 2>&1); rc=$?
if [ "$rc" -eq 2 ] && grep -qF "LOCAL_RANK='abc': expected a worker index" <<<"$out"; then
	tap_ok "env with LOCAL_RANK=abc exits 2 naming it"
else
	tap_fail "env with LOCAL_RANK=abc exits 2 naming it" "rc=$rc $out"
fi
out=$(LOCAL_RANK=5 "$IBPREP" env --topology "$T/h100.xml" --ntasks-per-node 1 2>&1); rc=$?
if [ "$rc" -eq 0 ] && grep -q "^export IBPREP_LOCAL_RANK=5$" <<<"$out"; then
	tap_ok "env with LOCAL_RANK=5 (one task per node) picks worker 5"
else
	tap_fail "env with LOCAL_RANK=5 picks worker 5" "rc=$rc $out"
fi
out=$(SLURM_STEP_GPUS=x "$IBPREP" place --topology "$T/h100.xml" 2>&1); rc=$?
if [ "$rc" -eq 2 ] && grep -qF "SLURM_STEP_GPUS='x' is not a GPU list" <<<"$out"; then
	tap_ok "place with SLURM_STEP_GPUS=x exits 2 naming it"
else
	tap_fail "place with SLURM_STEP_GPUS=x exits 2 naming it" "rc=$rc $out"
fi

# every option of every subcommand's --help is in ibprep(1)'s OPTIONS, its
# short letter in the same entry's tag (the help and the page are two texts:
# this keeps them one list)
awk '/^\.SH OPTIONS/{on=1; next} /^\.SH/{on=0} on && tp {print} {tp = on && $0 == ".TP"}' \
	man/ibprep.1 >"$T/man.tags"
miss=""
for cmd in check place env exec rdmatest snapshot fabric watch; do
	"$IBPREP" $cmd --help | sed -nE 's/^  +(-([A-Za-z]), )?--([a-z][a-z-]*).*/\2 \3/p' >"$T/help.$cmd"
	[ -s "$T/help.$cmd" ] || miss+=" ($cmd: no option read from --help)"
	while read -r letter long; do
		[ -z "$long" ] && { long=$letter; letter=; }
		esc="\\-\\-${long//-/\\-}"
		if ! grep -qF -- "$esc" "$T/man.tags"; then
			miss+=" $cmd --$long"
		elif [ -n "$letter" ] && ! grep -F -- "$esc" "$T/man.tags" | grep -qE -- "\\\\-$letter([^a-z-]|$)"; then
			miss+=" $cmd -$letter (--$long)"
		fi
	done <"$T/help.$cmd"
done
if [ -z "$miss" ]; then
	tap_ok "every option of every subcommand's --help, short letters too, is an entry of ibprep(1) OPTIONS"
else
	tap_fail "every option of every subcommand's --help is an entry of ibprep(1) OPTIONS" "missing:$miss"
fi
tap_done
