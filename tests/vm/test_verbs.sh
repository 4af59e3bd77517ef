#!/usr/bin/env bash
# test_verbs.sh: real RDMA verbs between two Soft-RoCE VMs (TAP).
#
# Boots two VMs ONCE (tests/vm/lib/vm.sh), joined back to back, each with an
# rxe0 over its eth0, and runs tests/vm/lib/verbs_guest.sh in both:
#   * ibprep check --json on the guest's real /sys/class/infiniband (h1's
#     reader on a real kernel tree): rxe0 port 1 ACTIVE, LinkUp, Ethernet,
#     the IPv4-mapped RoCE v2 GID of the VM's address; a policy it does not
#     meet (expect_hcas=2) fails;
#   * the verbs transport's unit tests on the real device (loopback);
#   * ibprep rdmatest --transport verbs between the VMs: passes, on rxe0 and
#     on two rails (rxe1 over eth1, a second back-to-back link); fails when
#     one side uses a wrong GID index (link-local, then empty); fails when
#     RoCE v2 traffic is dropped while the OOB network still works (nft); and
#     when the link is down;
#   * perftest's ib_write_bw on the same pair (bench/bench_verbs.sh has the
#     ratios).
# Skips, with the reason, only where a VM cannot boot (no qemu, no kernel).
#
# Environment: IBP_BUILD (build directory relative to the repository,
# "build"), IBPREP (the command, $IBP_BUILD/ibprep), IBP_VM_TIMEOUT (hard
# bound on the VM run in seconds, 420).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/lib/tap.sh"
. "$here/lib/vm.sh"
: "${IBP_BUILD:=build}"
case $IBP_BUILD in /*) bdir=$IBP_BUILD ;; *) bdir=$repo/$IBP_BUILD ;; esac
: "${IBPREP:=$bdir/ibprep}"
: "${IBP_VM_TIMEOUT:=420}"
IBP_UNIT_VERBS=$bdir/tests/test_transport_verbs
[ -x "$IBP_UNIT_VERBS" ] || IBP_UNIT_VERBS=
export IBPREP IBP_UNIT_VERBS

why=$(vm_unusable)
if [ -n "$why" ]; then
	tap_skip "soft-roce vms" "$why"
	tap_done
	exit
fi
if [ ! -x "$IBPREP" ]; then
	tap_fail "ibprep built" "$IBPREP missing: run make first"
	tap_done
	exit
fi
# The guests see the repository at its own path; a build outside it too.
for p in "$IBPREP" ${IBP_UNIT_VERBS:+"$IBP_UNIT_VERBS"}; do
	case $p in
	"$repo"/*) ;;
	*) VM_EXTRA_PATHS="$VM_EXTRA_PATHS $(dirname "$p")" ;;
	esac
done
VM_PASS_ENV="IBPREP IBP_UNIT_VERBS"

vm_setup || {
	tap_fail "vm cache" "cannot build the kernel/initramfs cache"
	tap_done
	exit
}
t0=$(date +%s)
VM_RAILS=2 # rxe1 over eth1 for the two-rail step: a back-to-back link of its own
vm_run_pair "$here/lib/verbs_guest.sh" "$here/lib/verbs_guest.sh" "$IBP_VM_TIMEOUT"
echo "# two vms ran in $(($(date +%s) - t0)) s (exit $VM_RC0, $VM_RC1)"
for i in 0 1; do
	rc_var=VM_RC$i
	if [ "${!rc_var}" -ne 0 ]; then
		tap_fail "vm$i: guest script completed" "exit ${!rc_var}; output:
$(tail -n 30 "$(vm_out vm$i)")
console:
$(tail -n 15 "$(vm_console vm$i)")"
	else
		tap_ok "vm$i: guest script completed"
	fi
done

S0=$VM_DIR/vm0/share
S1=$VM_DIR/vm1/share
rc_of() { cat "$1.rc" 2>/dev/null || echo missing; }
out_of() { cat "$1.out" 2>/dev/null; }
ms_of() { cat "$1.ms" 2>/dev/null || echo 0; }

# ---- rxe and the inventory ----
for i in 0 1; do
	S=$VM_DIR/vm$i/share
	if [ "$(rc_of "$S/rxe_up")" != 0 ]; then
		tap_fail "vm$i: rxe0 over eth0 ACTIVE with an IPv4-mapped gid" "$(out_of "$S/rxe_up")"
		continue
	fi
	tap_ok "vm$i: rxe0 over eth0 ACTIVE with an IPv4-mapped gid"
	# ::ffff:10.77.1.(i+1), as the kernel prints it
	want_gid=$(printf '0000:0000:0000:0000:0000:ffff:0a4d:01%02x' $((i + 1)))
	if [ "$(rc_of "$S/check")" = 0 ] && jq -e --arg g "$want_gid" '
		(.hcas | length) == 1 and .hcas[0].name == "rxe0" and
		(.hcas[0].ports[0] | .port == 1 and .state == "ACTIVE" and
			.phys_state == "LinkUp" and .link_layer == "Ethernet" and
			any(.gids[]; .type == "RoCE v2" and .ipv4_mapped and .gid == $g and .ndev == "eth0")) and
		any(.findings[]; .code == "roce_gid_index" and (.observed | test("index 1 ")))
		' "$S/check.out" >/dev/null 2>&1; then
		tap_ok "vm$i: ibprep check --json on the real /sys: rxe0 port 1 ACTIVE LinkUp Ethernet, RoCE v2 gid ::ffff:10.77.1.$((i + 1)) on eth0, exit 0"
	else
		tap_fail "vm$i: ibprep check --json on the real /sys: rxe0 port 1 ACTIVE LinkUp Ethernet, RoCE v2 gid ::ffff:10.77.1.$((i + 1)) on eth0, exit 0" \
			"exit $(rc_of "$S/check"); $(head -c 3000 "$S/check.out" 2>/dev/null)"
	fi
	if [ "$(rc_of "$S/check_memlock")" = 1 ] && grep -q 'memlock\|locked-memory limit 8192 KiB' "$S/check_memlock.out"; then
		tap_ok "vm$i: ibprep check fails on the kernel's default 8 MiB memlock limit (exit 1)"
	else
		tap_fail "vm$i: ibprep check fails on the kernel's default 8 MiB memlock limit (exit 1)" \
			"exit $(rc_of "$S/check_memlock"); $(out_of "$S/check_memlock")"
	fi
	if [ "$(rc_of "$S/check_expect2")" = 1 ] && grep -q 'expected 2' "$S/check_expect2.out"; then
		tap_ok "vm$i: ibprep check expect_hcas=2 fails (exit 1) naming the count"
	else
		tap_fail "vm$i: ibprep check expect_hcas=2 fails (exit 1) naming the count" \
			"exit $(rc_of "$S/check_expect2"); $(out_of "$S/check_expect2")"
	fi
done

# ---- the transport's unit tests on rxe0 ----
if [ -z "$IBP_UNIT_VERBS" ]; then
	tap_fail "transport_verbs unit tests on rxe0" \
		"$bdir/tests/test_transport_verbs not built (make check-vm builds it)"
elif [ ! -e "$S0/unit.out" ]; then
	tap_fail "transport_verbs unit tests on rxe0" "the guest did not run them"
else
	n=0
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"* | "not ok "*"# SKIP"*)
			tap_fail "rxe0: ${line#*# SKIP }" "skipped in the vm, where rxe0 exists: $(grep -m1 '^# skip' "$S0/unit.out")"
			n=$((n + 1)) ;;
		"ok "*)
			tap_ok "rxe0: ${line#ok * - }"
			n=$((n + 1)) ;;
		"not ok "*)
			tap_fail "rxe0: ${line#not ok * - }" "$(grep -B6 -A3 -F "$line" "$S0/unit.out")"
			n=$((n + 1)) ;;
		esac
	done < <(grep -E '^(not )?ok [0-9]' "$S0/unit.out")
	grep '^# ' "$S0/unit.out" | grep -v '^# skip' | head -n 5
	if [ "$n" -eq 0 ] || [ "$(rc_of "$S0/unit")" != 0 ]; then
		tap_fail "transport_verbs unit tests on rxe0 exit 0" "exit $(rc_of "$S0/unit"), $n results:
$(tail -n 40 "$S0/unit.out")"
	fi
fi

# ---- rdmatest ----
both_rc() { echo "$(rc_of "$S0/$1") $(rc_of "$S1/$1")"; }
show() { echo "vm0 (exit $(rc_of "$S0/$1"), $(ms_of "$S0/$1") ms):"; out_of "$S0/$1"; echo "vm1 (exit $(rc_of "$S1/$1"), $(ms_of "$S1/$1") ms):"; out_of "$S1/$1"; }

json_of() { sed -n '/^{/,$p' "$1.out" 2>/dev/null; }
pass_ok() {
	json_of "$1" | jq -e '.pass == true and .transport == "verbs" and (.links | length) >= 2 and
		all(.links[]; .status == "pass" and .device == "rxe0" and .gbps > 0 and .lat_us > 0)' \
		>/dev/null 2>&1
}
if [ "$(both_rc rdmatest_pass)" = "0 0" ] && pass_ok "$S0/rdmatest_pass" && pass_ok "$S1/rdmatest_pass"; then
	tap_ok "rdmatest --transport verbs vm0 <-> vm1 passes, every link with a burst and a round trip ($(ms_of "$S0/rdmatest_pass") ms, $(ms_of "$S1/rdmatest_pass") ms)"
	json_of "$S0/rdmatest_pass" | jq -r '.links[] | "# vm0: link \(.from) -> \(.to): \(.status), \(.gbps) Gb/s, round trip \(.lat_us) us (emulated)"' 2>/dev/null
else
	tap_fail "rdmatest --transport verbs vm0 <-> vm1 passes" "$(show rdmatest_pass)"
fi

# Two rails: rxe0 and rxe1, each over its own back-to-back link, both pass.
rails_ok() {
	json_of "$1" | jq -e '.pass == true and .transport == "verbs" and
		([.links[] | select(.rail == 0 and .device == "rxe0" and .status == "pass")] | length) >= 2 and
		([.links[] | select(.rail == 1 and .device == "rxe1" and .status == "pass" and .gbps > 0)] | length) >= 2' \
		>/dev/null 2>&1
}
if [ "$(both_rc rail1_up)" != "0 0" ]; then
	tap_fail "vm0, vm1: rxe1 over eth1 (a second link) ACTIVE" "$(show rail1_up)"
elif [ "$(both_rc rdmatest_rails)" = "0 0" ] && rails_ok "$S0/rdmatest_rails" && rails_ok "$S1/rdmatest_rails"; then
	tap_ok "rdmatest --transport verbs on two rails (rxe0, rxe1 on links of their own) passes on both ($(ms_of "$S0/rdmatest_rails") ms, $(ms_of "$S1/rdmatest_rails") ms)"
	json_of "$S0/rdmatest_rails" | jq -r '.links[] | "# vm0: rail \(.rail) \(.device) \(.from) -> \(.to): \(.status), \(.gbps) Gb/s (emulated)"' 2>/dev/null
else
	tap_fail "rdmatest --transport verbs on two rails passes" "$(show rdmatest_rails)"
fi

# A failure must be a verdict (exit 1) within the bound, not a crash (2+) or
# the outer timeout (124), and name what the brief says it names.
fail_case() {
	local name=$1 step=$2 pat0=$3 pat1=$4 ok=1
	[ "$(both_rc "$step")" = "1 1" ] || ok=0
	[ "$(ms_of "$S0/$step")" -lt 20000 ] && [ "$(ms_of "$S1/$step")" -lt 20000 ] || ok=0
	[ -z "$pat0" ] || grep -qiE "$pat0" "$S0/$step.out" || ok=0
	[ -z "$pat1" ] || grep -qiE "$pat1" "$S1/$step.out" || ok=0
	if [ $ok = 1 ]; then
		tap_ok "$name"
		grep -h -iE "$pat0|$pat1" "$S0/$step.out" "$S1/$step.out" 2>/dev/null | head -n 2 | sed 's/^/# /'
	else
		tap_fail "$name" "expected exit 1 on both within 20 s, vm0 output matching /$pat0/, vm1 /$pat1/
$(show "$step")"
	fi
}
fail_case "rdmatest fails with a 64 KiB memlock limit and no CAP_IPC_LOCK: memlock named" \
	rdmatest_memlock 'memlock|vm1' 'memlock'
fail_case "rdmatest fails when vm1 forces gid index 0 (link-local, vm0 on IPv4): named" \
	rdmatest_gid0 'vm1' 'gid index 0|index 0'
fail_case "rdmatest fails when vm1 forces gid index 200 (empty): named" \
	rdmatest_gid200 'vm1' 'gid index 200 is empty'
fail_case "rdmatest fails when RoCE v2 (udp 4791) is dropped on vm1, oob alive: the link is named" \
	rdmatest_roce_cut 'vm1' 'vm0'
fail_case "rdmatest fails when vm1's link is down: named, bounded" \
	rdmatest_link_down 'vm1' ''

# ---- perftest beside it ----
bw=$(awk '/^ *65536 +[0-9]+/ { print $4 }' "$S1/perftest.out" 2>/dev/null | tail -n 1)
if [ "$(both_rc perftest)" = "0 0" ] && [ -n "$bw" ]; then
	tap_ok "perftest ib_write_bw rxe0 vm1 -> vm0 runs (${bw} Gb/s average, emulated)"
else
	tap_fail "perftest ib_write_bw rxe0 vm1 -> vm0 runs" "$(show perftest)"
fi

tap_done
