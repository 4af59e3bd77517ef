#!/usr/bin/env bash
# test_devices.sh: device identification (docs/devices.md) on the corpus of
# real captures in tests/fixtures/real/ (see its SOURCES.md) and on nodes
# generated from documented ids (tests/fixtures/mktopo.py).  Every expected
# value is read off the capture itself (the PCI tree, the NUMA sets): the
# comment above each case says why it is right.
#   IBPREP   the binary (default build/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
IBPREP=${IBPREP:-build/ibprep}
CORPUS=tests/fixtures/real
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# place --json with no environment but PATH and the given variables
place() { env -i PATH="$PATH" "$@"; }
j() { # NAME JQ-EXPR FILE: pass when the expression is true
	if jq -e "$2" "$3" >/dev/null 2>&1; then tap_ok "$1"; else
		tap_fail "$1" "jq '$2' is false on $3: $(jq -c '{gpus: [.gpus[] | {pci_bus_id, numa, hca, distance}], env, findings: [.findings[].code]}' "$3" 2>&1 | head -c 1500)"
	fi
}

gen() { python3 tests/fixtures/mktopo.py --preset "$1" "$tmp/$1.xml"; }

# ---- HP ProLiant SL390s G7 "mirage004" (hwloc's 24em64t-2n6c2t-pci) ----------
# PCI tree: ATI ES1000 1002:515e (class 0300) at 01:03.0 behind the ICH's PCI
# bridge: the console VGA.  Tesla M2070 10de:06d2 (class 0302) at 06:00.0 under
# NUMA 0's host bridge [00-0f], at 14:00.0 and 11:00.0 under NUMA 1's [10-1f].
# So 3 GPUs, PCI order 06, 11, 14.  The only RDMA device is a ConnectX-2
# (15b3:6746) mlx4_0 at 05:00.0 on NUMA 0's host bridge, with netdevs eth2
# (6-byte MAC) and ib0 (20-byte IPoIB address) and no port state in the file:
# its IB port serves every GPU: PHB for 06:00.0 (same host bridge), SYS for
# the two on the other socket.
f=$CORPUS/hwloc/hwloc-mirage004-sl390s-es1000-3tesla-cx2.xml
place "$IBPREP" place --json --topology "$f" --ntasks-per-node 3 >"$tmp/m.json" 2>"$tmp/m.err"
j "es1000: 3 GPUs, the ES1000 is not one" '[.gpus[].pci_bus_id] == ["0000:06:00.0","0000:11:00.0","0000:14:00.0"]' "$tmp/m.json"
j "es1000: 3 tasks get one Tesla each" '[.tasks[].gpus | length] == [1,1,1]' "$tmp/m.json"
j "es1000: every GPU paired with the CX-2's IB port" '[.gpus[] | "\(.hca):\(.distance)"] == ["mlx4_0:PHB","mlx4_0:SYS","mlx4_0:SYS"] and ([.gpus[].port] | unique) == [2]' "$tmp/m.json"
j "es1000: fabric InfiniBand, port state said unknown, no 'no healthy port'" '.fabric == "InfiniBand" and ([.findings[] | select(.code == "port_state_unknown")] | length) == 1 and ([.findings[] | select(.code == "no_fabric_port")] | length) == 0' "$tmp/m.json"
j "es1000: NCCL_IB_HCA names the CX-2" '.env.NCCL_IB_HCA == "=mlx4_0:2" and .env.UCX_NET_DEVICES == "mlx4_0:2"' "$tmp/m.json"
out=$(place "$IBPREP" place --topology "$f" --gpus 0 2>&1)
if grep -q "0000:06:00.0" <<<"$out" && ! grep -q "01:03.0" <<<"$out"; then tap_ok "es1000: --gpus 0 is the first Tesla"; else tap_fail "es1000: --gpus 0 is the first Tesla" "$out"; fi

# ---- Dell PowerEdge 1950 "bonobo001" (hwloc's 8em64t-2p2ca2co-nonodesets) ------
# One NUMA node; the host bridge hangs off the Machine, which with one NUMA
# node still means NUMA 0.  ConnectX (15b3:634a) mlx4_0: Port1LID 0x3, Port2LID
# 0x0 and no state: port 1 has an SM-assigned LID, port 2 none (never came up).
f=$CORPUS/hwloc/hwloc-bonobo001-pe1950-connectx-machine-pci.xml
place "$IBPREP" place --json --topology "$f" >"$tmp/b.json" 2>/dev/null
j "pe1950: one NUMA node: locality known, no numa_unknown warning" '(.hcas[0].numa == 0) and ([.findings[] | select(.code == "numa_unknown")] | length) == 0' "$tmp/b.json"
j "pe1950: port 1 (LID 0x3) used, port 2 (LID 0) not" '.fabric_ports == ["mlx4_0:1"] and (.hcas[0].ports | map(.healthy)) == [true,false]' "$tmp/b.json"

# ---- IBM x3950 M2 "bertha" (hwloc's 96em64t-4n4d3ca2co-pci) --------------------
# The only display function is an ES1000 (1002:515e, card0): no GPU at all.
f=$CORPUS/hwloc/hwloc-bertha-x3950m2-es1000.xml
place "$IBPREP" place --json --topology "$f" >"$tmp/x.json" 2>/dev/null
j "x3950: ES1000 console only: 0 GPUs" '(.gpus | length) == 0' "$tmp/x.json"

# ---- Cisco UCS with VIC usNIC VFs (hwloc's 16intel64-manyVFs) ------------------
# usnic_0..2 are OpenFabrics devices of Cisco VIC functions (1137:00cf): used
# through libfabric's usnic provider, never through NCCL's or UCX's IB verbs.
f=$CORPUS/hwloc/hwloc-ucs-cisco-vic-usnic.xml
place "$IBPREP" place --json --topology "$f" >"$tmp/u.json" 2>/dev/null
j "usnic: identified, not an IB HCA" '[.hcas[] | .kind + "/" + .transport] | unique == ["libfabric/usNIC"]' "$tmp/u.json"
j "usnic: not named in NCCL_IB_HCA / UCX_NET_DEVICES" '(.env | has("NCCL_IB_HCA") or has("UCX_NET_DEVICES")) | not' "$tmp/u.json"

# ---- MI300A CPX (generated: 1002:74a0, 6 RSMI devices per APU function) --------
# 4 functions x 6 partitions = 24 GPUs, index 6a+k = partition k of APU a;
# APU a's CX-7 mlx5_a sits on its switch, its cores are 24a..24a+23 (+96).
gen mi300a-cpx
place SLURM_STEP_GPUS=4 SLURM_NTASKS_PER_NODE=1 "$IBPREP" place --json --topology "$tmp/mi300a-cpx.xml" >"$tmp/a.json" 2>"$tmp/a.err"
rc=$?
if [ $rc -eq 0 ]; then tap_ok "mi300a: SLURM_STEP_GPUS=4 accepted"; else tap_fail "mi300a: SLURM_STEP_GPUS=4 accepted" "$(cat "$tmp/a.err")"; fi
j "mi300a: 24 GPUs on 4 functions" '(.gpus | length) == 24 and ([.gpus[].pci_bus_id] | unique | length) == 4 and ([.gpus[].partitions] | unique) == [6]' "$tmp/a.json"
j "mi300a: GPU 4 is partition 4 of APU 0, on mlx5_0 and APU 0's cores" '.gpus[4].pci_bus_id == "0000:13:00.0" and .gpus[4].partition == 4 and .gpus[4].osdev == "rsmi4" and .tasks[0].gpu_indices == [4] and .tasks[0].hcas == ["mlx5_0:1"] and .tasks[0].cpus == "0-23,96-119"' "$tmp/a.json"
# 24 tasks, one partition each: APU a's 6 partitions split its 24 cores, 4 each
place SLURM_STEP_GPUS=0-23 "$IBPREP" place --json --topology "$tmp/mi300a-cpx.xml" --ntasks-per-node 24 >"$tmp/a24.json" 2>/dev/null
j "mi300a: 24 tasks, task 4 = partition 4 with 4 of APU 0's cores" '[.tasks[].gpu_indices[0]] == [range(0;24)] and .tasks[4].cpus == "16-19,112-115" and .tasks[23].hcas == ["mlx5_3:1"]' "$tmp/a24.json"
out=$(place "$IBPREP" place --topology "$tmp/mi300a-cpx.xml" --gpus 4 2>&1)
if grep -q "0000:13:00.0/4 mlx5_0:1" <<<"$out"; then tap_ok "mi300a: the table names the partition"; else tap_fail "mi300a: the table names the partition" "$out"; fi
j "mi300a: every partition on its own APU's HCA" '[.gpus[] | .hca] == ([range(0;24)] | map("mlx5_\(. / 6 | floor)"))' "$tmp/a.json"

# ---- AWS p4d-like (generated: 8 A100, 4 EFA 1d0f:efa1 two GPUs per switch) ----
gen efa-p4d
place "$IBPREP" place --json --topology "$tmp/efa-p4d.xml" >"$tmp/e.json" 2>/dev/null
j "efa: 8 GPUs, GPUs 2k,2k+1 on EFA k (same switch)" '[.gpus[] | "\(.hca)/\(.distance)"] == ["rdmap21s0/PIX","rdmap21s0/PIX","rdmap37s0/PIX","rdmap37s0/PIX","rdmap149s0/PIX","rdmap149s0/PIX","rdmap165s0/PIX","rdmap165s0/PIX"]' "$tmp/e.json"
j "efa: not IB, not Ethernet, not in NCCL_IB_HCA/UCX_NET_DEVICES" '.fabric == "unknown" and ([.hcas[].transport] | unique) == ["EFA"] and ((.env | has("NCCL_IB_HCA") or has("UCX_NET_DEVICES")) | not)' "$tmp/e.json"

# ---- AWS p4d as its guest sees it (generated: efa-p4d-vm, issue 29 shape 1) -----
# aws-ofi-nccl's p4d topology file and the guest's lspci: on each of the buses
# 10, 20 (NUMA 0) and 90, a0 (NUMA 1) one EFA 1d0f:efa0 at NN:1b.0 and two A100
# at NN:1c.0 and NN:1d.0, nothing between them and the bus's host bridge.  So
# GPUs NN:1c/1d share the host bridge with EFA NN:1b (PHB) and are SYS to the
# other socket's EFA: GPU 2k and 2k+1 go to EFA k.  EFA is SRD through
# libfabric: never in NCCL's or UCX's IB variables, and the advice says
# libfabric (aws-ofi-nccl), not "TCP sockets".
gen efa-p4d-vm
place "$IBPREP" place --json --topology "$tmp/efa-p4d-vm.xml" --ntasks-per-node 8 >"$tmp/e4.json" 2>/dev/null
e4_pairs='["rdmap16s27/PHB","rdmap16s27/PHB","rdmap32s27/PHB","rdmap32s27/PHB","rdmap144s27/PHB","rdmap144s27/PHB","rdmap160s27/PHB","rdmap160s27/PHB"]'
j "p4d guest: GPUs 2k,2k+1 on EFA k of their host bridge (PHB)" "[.gpus[] | \"\(.hca)/\(.distance)\"] == $e4_pairs" "$tmp/e4.json"
j "p4d guest: fabric EFA, advice libfabric, not TCP" '.fabric_kind == "EFA" and (.fabric_advice | test("aws-ofi-nccl")) and (.fabric_advice | test("TCP") | not) and ([.findings[] | select(.code == "no_fabric_port" or .code == "port_state_unknown")] | length) == 0 and ((.env | has("NCCL_IB_HCA") or has("UCX_NET_DEVICES")) | not)' "$tmp/e4.json"
# The same export without the OpenFabrics port infos (an hwloc that does not
# query EFA): a verbs device has port 1 at least, its state unknown: the same
# pairs, one note for the four ports, no "no healthy RDMA port".
python3 tests/fixtures/mktopo.py --preset efa-p4d-vm --no-port-infos "$tmp/e4n.xml"
place "$IBPREP" place --json --topology "$tmp/e4n.xml" --ntasks-per-node 8 >"$tmp/e4n.json" 2>/dev/null
j "p4d guest, no port infos: every EFA still placed, same pairs" "[.gpus[] | \"\(.hca)/\(.distance)\"] == $e4_pairs and .env.IBPREP_HCAS == \"rdmap16s27\"" "$tmp/e4n.json"
j "p4d guest, no port infos: port 1 assumed, said once" '([.hcas[].ports | length] | unique) == [1] and ([.findings[] | select(.code == "port_state_unknown")] | length) == 1 and ([.findings[] | select(.code == "no_fabric_port")] | length) == 0 and (.fabric_advice | test("TCP") | not)' "$tmp/e4n.json"

# ---- AWS p5 without port infos (generated: efa-p5, shape 1) -----------------------
# aws-ofi-nccl's p5 topology file: 8 PCIe switches (45, 56 ... bc), each with
# 4 EFA on its downstream ports (4f-52, 60-63 ...) and one H100 (bus 53, 64
# ...): each GPU's 4 EFA are PIX, every other EFA NODE or SYS.  32 ports with
# no port data, all placed; GPU k takes the first EFA of its switch.
python3 tests/fixtures/mktopo.py --preset efa-p5 --no-port-infos "$tmp/p5.xml"
place "$IBPREP" place --json --topology "$tmp/p5.xml" --ntasks-per-node 8 >"$tmp/p5.json" 2>/dev/null
j "p5, no port infos: 32 EFA in the fabric, each H100 on its switch's first EFA (PIX)" '(.fabric_ports | length) == 32 and [.gpus[] | "\(.hca)/\(.distance)"] == ["rdmap79s0/PIX","rdmap96s0/PIX","rdmap113s0/PIX","rdmap130s0/PIX","rdmap147s0/PIX","rdmap164s0/PIX","rdmap181s0/PIX","rdmap198s0/PIX"] and ([.findings[] | select(.code == "port_state_unknown")] | length) == 1' "$tmp/p5.json"

# ---- HGX B200 with its baseboard ConnectX-7 (generated: p6-b200, shape 2) ---------
# Four PCIe switches, each with two B200 (x16 Gen5: 63.0 GB/s) and two EFA on
# sibling downstream ports (PIX); one ConnectX-7 per socket on its own root port
# at x2 Gen4 (3.9 GB/s, a sixteenth of a GPU's link), IB, ACTIVE.  NCCL would
# not send a GPU's traffic through 3.9 GB/s when a full-width NIC shares its
# switch: the EFA are the fabric, GPU 2k and 2k+1 take the two EFA of their
# switch one each, and the ConnectX-7 are left out, saying why.
gen p6-b200
b2_pairs='["rdmap21s0/PIX","rdmap22s0/PIX","rdmap53s0/PIX","rdmap54s0/PIX","rdmap149s0/PIX","rdmap150s0/PIX","rdmap181s0/PIX","rdmap182s0/PIX"]'
place "$IBPREP" place --json --topology "$tmp/p6-b200.xml" --ntasks-per-node 8 >"$tmp/b2.json" 2>/dev/null
j "b200: every GPU with its own EFA of its switch" "[.gpus[] | \"\(.hca)/\(.distance)\"] == $b2_pairs and .fabric_kind == \"EFA\"" "$tmp/b2.json"
j "b200: each ConnectX-7 left out as a narrow link (x2 Gen4 beside x16 Gen5)" '[.hcas[] | select(.name | startswith("mlx5")) | .ports[] | select((.fabric | not) and (.reason | test("^narrow PCIe link: 3.9 GB/s .*x2 Gen4.* where the GPUs have 63.0 GB/s \\(x16 Gen5\\)")))] | length == 2' "$tmp/b2.json"
bad=""
for r in 0 1 2 3 4 5 6 7; do
	out=$(place "$IBPREP" env --topology "$tmp/p6-b200.xml" --ntasks-per-node 8 --local-rank "$r" 2>&1) || bad="$bad rank $r: exit $?"
	grep -q "mlx5" <<<"$out" && bad="$bad rank $r: $(grep mlx5 <<<"$out" | head -2)"
	grep -q "^export IBPREP_HCAS=rdmap" <<<"$out" || bad="$bad rank $r: no EFA in IBPREP_HCAS"
done
[ -z "$bad" ] && tap_ok "b200: no ConnectX-7 in any task's exported variables" || tap_fail "b200: no ConnectX-7 in any task's exported variables" "$bad"
python3 tests/fixtures/mktopo.py --preset p6-b200 --no-port-infos "$tmp/b2n.xml"
place "$IBPREP" place --json --topology "$tmp/b2n.xml" --ntasks-per-node 8 >"$tmp/b2n.json" 2>/dev/null
j "b200 without port infos: the same pairs, the ConnectX-7 still left out" "[.gpus[] | \"\(.hca)/\(.distance)\"] == $b2_pairs and ([.hcas[] | select(.name | startswith(\"mlx5\")) | .ports[].fabric] | unique) == [false]" "$tmp/b2n.json"

# ---- advice per fabric kind and GPU vendor (shape 3) -------------------------------
# NVIDIA GPUs and SLURM_STEP_GPUS without CUDA_DEVICE_ORDER: CUDA may number
# them otherwise, a warning.  On the all-AMD MI300A node there is no such
# variable to set (env sets none): no warning.
gen dgx-h100
place SLURM_STEP_GPUS=0 "$IBPREP" place --json --topology "$tmp/dgx-h100.xml" >"$tmp/nv.json" 2>/dev/null
j "nvidia + SLURM_STEP_GPUS: cuda_device_order warned; IB advice" '([.findings[] | select(.code == "cuda_device_order")] | length) == 1 and .fabric_kind == "InfiniBand" and (.fabric_advice | test("IB verbs"))' "$tmp/nv.json"
j "all-AMD + SLURM_STEP_GPUS: no cuda_device_order warning, no CUDA_DEVICE_ORDER" '([.findings[] | select(.code == "cuda_device_order")] | length) == 0 and (.env | has("CUDA_DEVICE_ORDER") | not)' "$tmp/a.json"
# No RDMA device at all (bertha): TCP is the truth there.
j "no RDMA device: kind none, advice says TCP" '.fabric_kind == "none" and (.fabric_advice | test("TCP sockets"))' "$tmp/x.json"
# LLNL Tioga (real, ../shared): 4 MI250X, 8 GCDs, 4 Slingshot NICs 17db:0501:
# fabric Slingshot, used through libfabric cxi with RCCL's plugin; AMD only.
TIOGA=${IBP_REAL_FIXTURES:-../shared/fixtures/real}/hwloc-xml/llnl-tioga-hpe-ex235a-mi250x.hwloc2.xml
if [ -f "$TIOGA" ]; then
	place SLURM_STEP_GPUS=0-7 "$IBPREP" place --json --topology "$TIOGA" --ntasks-per-node 8 >"$tmp/t.json" 2>/dev/null
	j "tioga: Slingshot through libfabric cxi, RCCL's plugin, no IB variables, no CUDA warning" '.fabric_kind == "Slingshot" and (.fabric_advice | test("cxi") and test("RCCL") and test("aws-ofi-rccl")) and (.fabric_advice | test("TCP") | not) and ((.env | has("NCCL_IB_HCA") or has("UCX_NET_DEVICES") or has("CUDA_DEVICE_ORDER")) | not) and ([.findings[] | select(.code == "cuda_device_order")] | length) == 0' "$tmp/t.json"
else
	tap_skip "tioga: Slingshot advice" "$TIOGA is absent (set IBP_REAL_FIXTURES)"
fi

# ---- a task far from its only NIC (shape 4) ----------------------------------------
# cpu-only: 2 sockets x 8 cores, the one HCA under socket 0's host bridge.  Four
# tasks, one per half-socket: tasks 2 and 3 (CPUs 8-15,24-31, socket 1) reach
# it across the socket link, each with its own warning; tasks 0 and 1 none.
gen cpu-only
place "$IBPREP" place --json --topology "$tmp/cpu-only.xml" --ntasks-per-node 4 >"$tmp/co.json" 2>/dev/null
j "one NIC on socket 0: a warning for each of tasks 2 and 3, none for 0 and 1" '[.findings[] | select(.code == "task_no_local_hca") | .observed | capture("^task (?<t>[0-9]+)").t] == ["2","3"]' "$tmp/co.json"
# DEEP-EST CM node dp-cn01 (real, ../shared): its CX-5 at 5e:00.0 hangs under
# NUMA node 0, whose package 0 holds PUs 0-11,24-35; two tasks, one a socket:
# task 1 (CPUs 12-23,36-47) is across the socket link from its only NIC.
CN01=${IBP_REAL_FIXTURES:-../shared/fixtures/real}/hwloc-xml/deep-est-cm-dp-cn01.hwloc1.xml
if [ -f "$CN01" ]; then
	place "$IBPREP" place --json --topology "$CN01" --ntasks-per-node 2 >"$tmp/cn.json" 2>/dev/null
	j "dp-cn01: task 1 across the socket from the only CX-5, task 0 not" '[.findings[] | select(.code == "task_no_local_hca") | "\(.device):\(.observed | capture("^task (?<t>[0-9]+)").t)"] == ["mlx5_0:1"]' "$tmp/cn.json"
else
	tap_skip "dp-cn01: far task" "$CN01 is absent (set IBP_REAL_FIXTURES)"
fi

# ---- host bridges under the Machine, 2 NUMA nodes (generated) -------------------
# GPU 01:00.0 and mlx5_0 share host bridge [00-3f] (PHB, known); GPU 81:00.0 is
# under another host bridge: whether that is NODE or SYS the file does not say.
gen machine-pci
place "$IBPREP" place --json --topology "$tmp/machine-pci.xml" >"$tmp/p.json" 2>/dev/null
j "machine-pci: NUMA null, not 0" '[.gpus[].numa] == [null,null] and .hcas[0].numa == null' "$tmp/p.json"
j "machine-pci: one warning, unknown distance where it is unknown" '([.findings[] | select(.code == "numa_unknown")] | length) == 1 and [.gpus[].distance] == ["PHB","unknown"] and ([.findings[] | select(.code == "gpu_no_local_hca")] | length) == 0' "$tmp/p.json"

# ---- dual-port ConnectX-7, each port its own function (generated) -------------
gen cx7-2port
place "$IBPREP" place --json --topology "$tmp/cx7-2port.xml" --ntasks-per-node 2 >"$tmp/c.json" 2>/dev/null
j "cx7 2 functions: one port per GPU" '[.gpus[] | "\(.hca):\(.port)/\(.distance)"] == ["mlx5_0:1/PIX","mlx5_1:1/PIX"]' "$tmp/c.json"

# ---- 4x GH200 (generated: 10de:2342, HBM as "GPUMemory" NUMA nodes 4..7) --------
# Each module: Grace CPUs 72a..72a+71 with LPDDR node a, its Hopper and CX-7
# under the module's own host bridges (PHB).  A task's memory is node a only:
# binding host memory to the HBM node would be wrong.
gen gh200
place "$IBPREP" place --json --topology "$tmp/gh200.xml" --ntasks-per-node 4 >"$tmp/g.json" 2>/dev/null
j "gh200: 4 GPUs, each on its module's HCA" '[.gpus[] | "\(.hca)/\(.distance)/\(.numa)"] == ["mlx5_0/PHB/0","mlx5_1/PHB/1","mlx5_2/PHB/2","mlx5_3/PHB/3"] and ([.gpus[].family] | unique) == ["NVIDIA GH200 Grace Hopper"]' "$tmp/g.json"
j "gh200: task memory is the Grace node, never the GPU's HBM node" '[.tasks[] | "\(.cpus) \(.mems)"] == ["0-71 0","72-143 1","144-215 2","216-287 3"]' "$tmp/g.json"

# ---- Intel Max 1550 + BlueField-3 host functions + ASPEED (generated) ----------
# 8086:0bd5 class 0380 is a GPU; the ASPEED 1a03:2000 at 02:00.0 is not; each
# GPU shares a switch with a BF3 host-side function (15b3:a2dc) in RoCE mode.
gen bf3-pvc
place "$IBPREP" place --json --topology "$tmp/bf3-pvc.xml" --ntasks-per-node 2 >"$tmp/v.json" 2>/dev/null
j "pvc+bf3: 2 Intel GPUs (not the BMC VGA), each with its BF3 function" '[.gpus[] | "\(.pci_bus_id) \(.vendor) \(.hca)/\(.distance)"] == ["0000:13:00.0 intel mlx5_0/PIX","0000:93:00.0 intel mlx5_1/PIX"] and .fabric == "Ethernet" and .env.NCCL_IB_HCA == "=mlx5_0:1,mlx5_1:1"' "$tmp/v.json"

# ---- Intel E810 irdma: RoCE or iWARP, as sysfs says (generated) -----------------
# The topology file cannot tell E810's mode: placed by, not named.  node_type
# "1: CA" (RoCE) in sysfs makes it an RDMA NIC for NCCL; "4: RNIC" (iWARP) not.
gen irdma
place "$IBPREP" place --json --topology "$tmp/irdma.xml" --ntasks-per-node 2 >"$tmp/r.json" 2>/dev/null
j "irdma, file only: placed by, not named" '[.gpus[].hca] == ["irdma0","irdma1"] and ([.hcas[].transport] | unique) == ["RoCE or iWARP"] and ((.env | has("NCCL_IB_HCA")) | not)' "$tmp/r.json"
for mode in "1: CA" "4: RNIC"; do
	root=$tmp/irdma-${mode%%:*}
	for d in irdma0 irdma1; do
		mkdir -p "$root/sys/class/infiniband/$d/ports/1"
		echo "$mode" >"$root/sys/class/infiniband/$d/node_type"
		echo "4: ACTIVE" >"$root/sys/class/infiniband/$d/ports/1/state"
		echo "5: LinkUp" >"$root/sys/class/infiniband/$d/ports/1/phys_state"
		echo "Ethernet" >"$root/sys/class/infiniband/$d/ports/1/link_layer"
		echo "100 Gb/sec (4X EDR)" >"$root/sys/class/infiniband/$d/ports/1/rate"
	done
done
place "$IBPREP" place --json --topology "$tmp/irdma.xml" --sysfs-root "$tmp/irdma-1" --ntasks-per-node 2 >"$tmp/r1.json" 2>/dev/null
j "irdma, sysfs says CA: RoCE, named in NCCL_IB_HCA" '([.hcas[].transport] | unique) == ["RoCE"] and .env.NCCL_IB_HCA == "=irdma0:1,irdma1:1"' "$tmp/r1.json"
place "$IBPREP" place --json --topology "$tmp/irdma.xml" --sysfs-root "$tmp/irdma-4" --ntasks-per-node 2 >"$tmp/r4.json" 2>/dev/null
j "irdma, sysfs says RNIC: iWARP, placed by, not named" '([.hcas[].transport] | unique) == ["iWARP"] and [.gpus[].hca] == ["irdma0","irdma1"] and ((.env | has("NCCL_IB_HCA") or has("UCX_NET_DEVICES")) | not)' "$tmp/r4.json"
"$IBPREP" check --sysfs-root "$tmp/irdma-4" --json >"$tmp/r4c.json" 2>/dev/null
j "irdma iWARP: check passes, no RoCE/IB-address findings" '.verdict == "pass" and (.findings | length) == 0' "$tmp/r4c.json"

# ---- torchrun on a CPU-only node --------------------------------------------------
gen cpu-only
if out=$(place LOCAL_RANK=0 "$IBPREP" env --topology "$tmp/cpu-only.xml" 2>&1) && grep -q "IBPREP_LOCAL_RANK=0" <<<"$out"; then
	tap_ok "cpu-only: LOCAL_RANK=0 ibprep env succeeds"
else
	tap_fail "cpu-only: LOCAL_RANK=0 ibprep env succeeds" "$out"
fi
if out=$(place LOCAL_RANK=1 "$IBPREP" exec --topology "$tmp/cpu-only.xml" -- sh -c 'echo ran-the-program' 2>&1) && grep -q "ran-the-program" <<<"$out"; then
	tap_ok "cpu-only: LOCAL_RANK=1 ibprep exec runs the program"
else
	tap_fail "cpu-only: LOCAL_RANK=1 ibprep exec runs the program" "$out"
fi

# ---- sysfs conventions --------------------------------------------------------------
# i40iw0 (node_exporter's capture): an X722 iWARP port, every counter reads
# "N/A (no PMA)", link_layer "InfiniBand" (an old kernel's word for iWARP),
# no LID files: pass with one note, nothing malformed.
root=$CORPUS/sysfs/node-exporter-i40iw-no-pma
"$IBPREP" check --sysfs-root "$root" --json >"$tmp/i.json" 2>/dev/null
rc=$?
j "no PMA: pass, exactly one note, nothing malformed" '.verdict == "pass" and [.findings[].code] == ["counters_unavailable"]' "$tmp/i.json"
[ $rc -eq 0 ] && tap_ok "no PMA: exit 0" || tap_fail "no PMA: exit 0" "exit $rc"
# hfi1_0 (procfs' capture): a 72-character board_id is a description, not an error
root=$CORPUS/sysfs/procfs-hfi1-opa
"$IBPREP" check --sysfs-root "$root" --json >"$tmp/h.json" 2>/dev/null
j "OPA board_id: kept whole, pass, no finding" '.verdict == "pass" and (.findings | length) == 0 and ([.. | objects | select(has("board_id")) | .board_id] | first | length) == 72' "$tmp/h.json"

# kernel spellings in one generated tree: siw0 (soft iWARP: no fw_ver, empty
# board_id, node_type RNIC), rxe0 (phys_state a bare "<unknown>" as older
# kernels print, no link_layer file), hfi1_0 (OPA Offline: phys_state
# "9: <unknown>", state DOWN).  The only true problem is hfi1_0 being down.
R=$tmp/conv/sys/class/infiniband
mkdir -p "$R/siw0/ports/1" "$R/rxe0/ports/1" "$R/hfi1_0/ports/1"
echo "4: RNIC" >"$R/siw0/node_type"; : >"$R/siw0/board_id"
echo "4: ACTIVE" >"$R/siw0/ports/1/state"; echo "5: LinkUp" >"$R/siw0/ports/1/phys_state"
echo "Ethernet" >"$R/siw0/ports/1/link_layer"
echo "1: CA" >"$R/rxe0/node_type"; echo "4: ACTIVE" >"$R/rxe0/ports/1/state"
echo "<unknown>" >"$R/rxe0/ports/1/phys_state"
echo "1: CA" >"$R/hfi1_0/node_type"; echo "1.27.0" >"$R/hfi1_0/fw_ver"
echo "1: DOWN" >"$R/hfi1_0/ports/1/state"; echo "9: <unknown>" >"$R/hfi1_0/ports/1/phys_state"
echo "InfiniBand" >"$R/hfi1_0/ports/1/link_layer"
"$IBPREP" check --sysfs-root "$tmp/conv" --json >"$tmp/k.json" 2>/dev/null
j "kernel spellings: only the down OPA port is a finding" '[.findings[] | "\(.code):\(.device)"] == ["port_not_active:hfi1_0"]' "$tmp/k.json"

tap_done
