#!/usr/bin/env bash
# test_check_cmd.sh: `ibprep check` end to end on generated trees (and the real
# H100 capture when present): exit status 0/1/2, table lines, JSON validity and
# schema; every case runs with build/ibprep and with the ASan+UBSan build.
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

T=$(mktemp -d /tmp/test_check_cmd.XXXXXX)
trap 'rm -rf "$T"' EXIT

if ! command -v python3 >/dev/null; then
	tap_skip "ibprep check" "python3 missing: cannot generate trees (contrib/install-deps.sh)"
	tap_done
	exit
fi
gen() { python3 tests/fixtures/mksysfs.py "$@" >/dev/null; }
gen --preset dgx-h100 --gdr --node gpu001 "$T/ok"
gen --preset dgx-h100 --gdr --node gpu017 --fault mlx5_3/1:width=1X --fault mlx5_4:down \
	--fault mlx5_5:nosm "$T/bad"
gen --preset empty "$T/empty"
gen --preset roce --node roce1 "$T/roce"
gen --preset dgx-h100 --gdr --fault 'mlx5_0/1:malformed=rate=fast' \
	--fault 'mlx5_6/1:malformed=state=9: BOGUS' --fault 'mlx5_9:unreadable=fw_ver' "$T/hostile"
printf 'min_speed=XDR   # stricter than the hardware\n' >"$T/strict.conf"
printf 'min_speed=XDR\nbogus_key=1\n' >"$T/badkey.conf"

JSONCHK="python3 -m json.tool"
command -v jq >/dev/null && JSONCHK="jq -e ."

# run NAME WANT_RC [GREP_PATTERN] -- ARGS: exit status and (optionally) a line of the output
run() {
	local name=$1 want=$2 pat=$3; shift 4
	local out rc
	out=$("$BIN" check "$@" 2>&1); rc=$?
	if [ "$rc" -ne "$want" ]; then
		tap_fail "$TAG: $name: exit $rc, want $want" "$out"
	elif [ -n "$pat" ] && ! grep -qE -- "$pat" <<<"$out"; then
		tap_fail "$TAG: $name: output lacks /$pat/" "$out"
	elif grep -q 'Sanitizer' <<<"$out"; then
		tap_fail "$TAG: $name: sanitizer report" "$out"
	else
		tap_ok "$TAG: $name"
	fi
}

json_case() {
	local name=$1 want=$2 py=$3; shift 3
	local out rc
	out=$("$BIN" check --json "$@" 2>"$T/err"); rc=$?
	if [ "$rc" -ne "$want" ]; then
		tap_fail "$TAG: json $name: exit $rc, want $want" "$(cat "$T/err")"
	elif ! $JSONCHK <<<"$out" >/dev/null 2>&1; then
		tap_fail "$TAG: json $name: not valid JSON" "$out"
	elif ! python3 -c "$py" <<<"$out" 2>"$T/pyerr"; then
		tap_fail "$TAG: json $name: content" "$(cat "$T/pyerr")"
	else
		tap_ok "$TAG: json $name"
	fi
}

SCHEMA='import json,sys
d=json.load(sys.stdin)
assert d["schema"]==1, d["schema"]
for k in ("node","verdict","hcas","findings"): assert k in d, k
for h in d["hcas"]:
    for k in ("name","pci","numa","fw_ver","hca_type","ports","pcie","netdevs"): assert k in h, k
    for p in h["ports"]:
        for k in ("port","state","phys_state","rate_gbps","width","speed","link_layer","lid","sm_lid","gids","counters"): assert k in p, k
for f in d["findings"]:
    assert set(f)=={"code","severity","class","node","device","port","observed","expected","fix"}, f
    assert f["severity"] in ("ok","warn","fail") and f["class"] in ("node","job")
'

for BIN in "$IBPREP" "$IBPREP_ASAN"; do
	TAG=$(basename "$(dirname "$BIN")")/$(basename "$BIN")
	if [ ! -x "$BIN" ]; then
		tap_fail "$TAG built" "$BIN missing: run make (and make asan)"
		continue
	fi
	run "healthy tree passes" 0 '^verdict: pass$' -- --sysfs-root "$T/ok"
	run "healthy: one row per port" 0 '^mlx5_11 +1 +ACTIVE +LinkUp +400 Gb/sec \(4X NDR\) +InfiniBand +0000:dc:00.0 +1 +ok$' -- --sysfs-root "$T/ok"
	run "node name from the root" 0 '' -- --sysfs-root "$T/ok"
	run "broken tree fails" 1 '^verdict: fail \(3 failures\)$' -- --sysfs-root "$T/bad"
	run "width finding line" 1 '^fail gpu017: mlx5_3 port 1: link width 1X, expected 4X \(rate 100 Gb/sec, expected 400 Gb/sec\): reseat or replace the cable$' -- --sysfs-root "$T/bad"
	run "down port line" 1 '^fail gpu017: mlx5_4 port 1: port state DOWN \(physical state Polling\)' -- --sysfs-root "$T/bad"
	run "no SM line" 1 '^fail gpu017: mlx5_5 port 1: SM LID 0 \(no subnet manager\)' -- --sysfs-root "$T/bad"
	run "--node overrides" 1 '^fail n9: mlx5_3' -- --sysfs-root "$T/bad" --node n9
	run "no device fails" 1 'no RDMA device' -- --sysfs-root "$T/empty"
	run "no device with expect_hcas=0" 0 '^verdict: pass$' -- --sysfs-root "$T/empty" expect_hcas=0
	run "roce node reports the GID index" 0 '^info roce1: mlx5_0 port 1: RoCE v2 GID index [0-9]+' -- --sysfs-root "$T/roce"
	run "policy pair applied" 1 'speed_degraded|link speed NDR' -- --sysfs-root "$T/ok" min_speed=XDR
	run "config file applied" 1 'link speed NDR' -- --sysfs-root "$T/ok" --config "$T/strict.conf"
	run "counter window said" 0 '^counters read twice, 200 ms apart$' -- --sysfs-root "$T/ok" counter_window=200
	run "memlock judged" 1 'locked-memory limit 64 KiB, expected unlimited' -- --sysfs-root "$T/ok" --memlock 64
	run "memlock unlimited" 0 '' -- --sysfs-root "$T/ok" --memlock unlimited
	run "hostile tree: no crash, findings name the files" 0 "rate reads 'fast'" -- --sysfs-root "$T/hostile"
	run "unknown key exits 2" 2 "unknown key 'bogus'" -- --sysfs-root "$T/ok" bogus=1
	run "bad value exits 2" 2 "bad value 'fast' for key 'min_rate'" -- --sysfs-root "$T/ok" min_rate=fast
	run "not a pair exits 2" 2 "expected KEY=VALUE" -- --sysfs-root "$T/ok" min_rate
	run "bad config key exits 2" 2 "badkey.conf:2: unknown key 'bogus_key'" -- --sysfs-root "$T/ok" --config "$T/badkey.conf"
	run "missing config exits 2" 2 "cannot open" -- --config "$T/nope.conf"
	run "unreadable root exits 2" 2 'cannot open sysfs root' -- --sysfs-root "$T/does-not-exist"
	# a root one level off is said as such (exit 2), not a node without RDMA devices
	run "root one level too deep (DIR/sys) exits 2 naming DIR" 2 \
		"--sysfs-root $T/ok/sys is a sys directory itself.*\(--sysfs-root $T/ok\)" -- --sysfs-root "$T/ok/sys"
	run "root at class/infiniband exits 2 naming DIR" 2 \
		"--sysfs-root $T/ok/sys/class/infiniband holds RDMA devices itself.*\(--sysfs-root $T/ok\)" \
		-- --sysfs-root "$T/ok/sys/class/infiniband"
	mkdir -p "$T/nosys"
	run "root without sys/ exits 2" 2 "--sysfs-root $T/nosys has no sys/ directory" -- --sysfs-root "$T/nosys"
	run "unknown option exits 2" 2 'unknown option' -- --frobnicate
	run "option without value exits 2" 2 'needs a value' -- --sysfs-root
	run "bad --memlock exits 2" 2 "bad value 'lots' for --memlock" -- --memlock lots
	run "--help exits 0" 0 '^usage: ibprep check' -- --help
	json_case "healthy" 0 "$SCHEMA
assert d['verdict']=='pass' and d['node']=='gpu001' and len(d['hcas'])==8, (d['verdict'], d['node'])
assert d['gdr']['loaded'] and d['gpus']['nvidia']==8" --sysfs-root "$T/ok"
	json_case "broken" 1 "$SCHEMA
assert d['verdict']=='fail'
codes=sorted(f['code'] for f in d['findings'] if f['severity']=='fail')
assert codes==['no_subnet_manager','port_not_active','width_degraded'], codes
p=[h for h in d['hcas'] if h['name']=='mlx5_3'][0]['ports'][0]
assert p['width']==1 and p['rate_gbps']==100 and p['verdict']=='fail', p" --sysfs-root "$T/bad"
	json_case "roce" 0 "$SCHEMA
p=[h for h in d['hcas'] if h['name']=='mlx5_0'][0]['ports'][0]
assert p['link_layer']=='Ethernet' and any(g['type']=='RoCE v2' for g in p['gids']), p" --sysfs-root "$T/roce"
	json_case "hostile" 0 "$SCHEMA
assert sorted(f['code'] for f in d['findings'])==['sysfs_malformed','sysfs_malformed','sysfs_unreadable'], d['findings']" --sysfs-root "$T/hostile"

	# the real H100 capture, placed at ROOT/sys/class/infiniband (a temporary copy)
	if [ -d "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" ]; then
		if [ ! -d "$T/h100/sys/class/infiniband" ]; then
			mkdir -p "$T/h100/sys/class"
			cp -r "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband" "$T/h100/sys/class/infiniband"
		fi
		run "real H100 does not fail" 0 '^verdict: warn' -- --sysfs-root "$T/h100"
		json_case "real H100 aggregation" 0 "$SCHEMA
f=[x for x in d['findings'] if 'excessive_buffer_overrun_errors' in x['observed']]
assert len(f)==1 and f[0]['device']=='mlx5_[0-1,4-9],mlx5_bond_0', f
f=[x for x in d['findings'] if 'link_downed' in x['observed']]
assert len(f)==1 and f[0]['device']=='mlx5_1' and f[0]['severity']=='warn', f
assert len(d['hcas'])==9" --sysfs-root "$T/h100"
	else
		tap_skip "$TAG: real H100 tree" "$REAL/sysfs/gpud-h100-ndr-sys-class-infiniband absent (set IBP_REAL_FIXTURES)"
	fi
	# GCM's DGX-A100 sysfs snapshots (path -> value JSON) turned into trees
	if [ -f "$REAL/gcm-json/meta-gcm-learn_good.json" ]; then
		for g in good ib_intf_bad_rate stuck_ib_intf ib_intf_operstate_down; do
			[ -d "$T/gcm-$g" ] || python3 tests/fixtures/gcm2sysfs.py \
				"$REAL/gcm-json/meta-gcm-learn_$g.json" "$T/gcm-$g"
		done
		run "GCM good node passes" 0 '^verdict: pass$' -- --sysfs-root "$T/gcm-good" --node node1720
		run "GCM all-EDR node passes without a speed policy" 0 '^verdict: pass$' -- --sysfs-root "$T/gcm-ib_intf_bad_rate"
		run "GCM all-EDR node fails under min_speed=HDR" 1 '^fail node9: mlx5_0 port 1: link speed EDR \(rate 100 Gb/sec\), expected HDR \(min_speed\)' \
			-- --sysfs-root "$T/gcm-ib_intf_bad_rate" --node node9 min_speed=HDR
		run "GCM stuck INIT ports fail" 1 '^fail n: mlx5_8 port 1: port state INIT \(physical state LinkUp\), expected ACTIVE: the link trained but no subnet manager' \
			-- --sysfs-root "$T/gcm-stuck_ib_intf" --node n
		run "GCM ib4 down under an ACTIVE port" 0 '^warn n: mlx5_6 port 1: IPoIB interface ib4 operstate down while the port is ACTIVE' \
			-- --sysfs-root "$T/gcm-ib_intf_operstate_down" --node n
		run "GCM ib4 down fails when it is the bootstrap interface" 1 'ib4 operstate down' \
			-- --sysfs-root "$T/gcm-ib_intf_operstate_down" socket_ifname=ib4
	else
		tap_skip "$TAG: GCM snapshots" "$REAL/gcm-json absent (set IBP_REAL_FIXTURES)"
	fi

	# the real FDR capture: a sys/bus/pci/devices tree of one mlx4 HCA (TACC, via hwloc)
	if [ -d "$REAL/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr/sys" ]; then
		run "real FDR mlx4 node passes" 0 '^mlx4_0 +1 +ACTIVE +LinkUp +56 Gb/sec \(4X FDR\) +InfiniBand +0000:82:00.0 +1 +ok$' \
			-- --sysfs-root "$REAL/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr"
		json_case "real FDR mlx4 values" 0 "$SCHEMA
p=d['hcas'][0]['ports'][0]
assert d['verdict']=='pass' and p['lid']==0x3a4 and p['sm_lid']==1 and p['speed']=='FDR', p
assert len(p['counters'])>=16, p['counters']" --sysfs-root "$REAL/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr"
		run "real FDR with min_speed=EDR fails" 1 'link speed FDR \(rate 56 Gb/sec\), expected EDR \(min_speed\)' \
			-- --sysfs-root "$REAL/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr" min_speed=EDR
	else
		tap_skip "$TAG: real FDR tree" "$REAL/sysfs/hwloc-tacc-c412-603-mlx4_0-fdr absent (set IBP_REAL_FIXTURES)"
	fi
done

# --slurm with --json or --prometheus: stdout is one document, what --slurm did
# goes to stderr.  A stand-in scontrol answers for node n1 and logs its calls;
# the slurm.conf names nothing, so no Slurm is asked.
mkdir -p "$T/bin"
printf 'ClusterName=t\n' >"$T/slurm.conf"
printf '#!/bin/sh\necho "$*" >>"%s/scontrol.log"\n[ "$1" = show ] && echo "NodeName=n1 Arch=x86_64 State=IDLE Reason=(null)"\nexit 0\n' \
	"$T" >"$T/bin/scontrol"
chmod 0755 "$T/bin/scontrol"
# slurm_doc NAME FORMAT PYTHON TREE: stdout is one document, the slurm line on stderr
slurm_doc() {
	local out rc
	out=$(PATH="$T/bin:$PATH" SLURM_CONF="$T/slurm.conf" SLURMD_NODENAME=n1 \
		"$IBPREP" check --slurm "$2" --sysfs-root "$4" 2>"$T/slurm.err"); rc=$?
	if ! python3 -c "$3" <<<"$out" 2>"$T/pyerr"; then
		tap_fail "check --slurm $2 ($1): stdout is one document" "rc=$rc $(cat "$T/pyerr") $(tail -3 <<<"$out")"
	elif ! grep -q '^slurm: n1: ' "$T/slurm.err"; then
		tap_fail "check --slurm $2 ($1): what it did is on stderr" "rc=$rc $(cat "$T/slurm.err")"
	else
		tap_ok "check --slurm $2 ($1): stdout is one document, '$(grep '^slurm: ' "$T/slurm.err" | cut -c1-50)' on stderr"
	fi
}
slurm_doc "healthy" --json 'import json,sys; json.load(sys.stdin)' "$T/ok"
slurm_doc "broken: drained" --json 'import json,sys; d=json.load(sys.stdin); assert d["verdict"]=="fail"' "$T/bad"
slurm_doc "healthy" --prometheus 'import sys
for l in sys.stdin.read().splitlines():
    assert l=="" or l.startswith("#") or l.startswith("ibprep_"), l' "$T/ok"
if grep -q "^update nodename=n1 state=drain reason=spank-ib check: " "$T/scontrol.log"; then
	tap_ok "check --slurm drained the broken node with the reason 'spank-ib check: ...'"
else
	tap_fail "check --slurm drained the broken node with the reason 'spank-ib check: ...'" "$(cat "$T/scontrol.log")"
fi
# the help gives the reason the code writes (include/ibprep/nodestate.h)
prefix=$(sed -n 's/^#define IBP_DRAIN_PREFIX_CHECK "\([^"]*\)".*/\1/p' include/ibprep/nodestate.h)
help=$("$IBPREP" check --help | tr -s ' \n' '  ')
if [ -n "$prefix" ] && grep -qF "(reason '${prefix}...')" <<<"$help"; then
	tap_ok "check --help gives the --slurm drain reason the code writes ('$prefix...')"
else
	tap_fail "check --help gives the --slurm drain reason the code writes ('$prefix...')" "$help"
fi
tap_done
