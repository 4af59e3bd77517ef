#!/usr/bin/env bash
# test_exec.sh: `ibprep exec` for real on this machine: the child reports its
# own CPU affinity (/proc/self/status Cpus_allowed_list), its memory policy
# (numactl --show) and its environment, and the suite checks them against
# the placement.  Uses the live topology (this machine) and, for the GPU
# path, a generated DGX-H100-like XML intersected with this process's CPUs.
#   IBPREP   the binary (default build/ibprep)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
IBPREP=${IBPREP:-build/ibprep}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# what the child prints: one "key=value" line each
cat >"$tmp/child.sh" <<'CHILD'
#!/bin/sh
echo "cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
numactl --show | sed -n 's/^policy: /policy=/p; s/^preferred node: /preferred=/p'
env | grep -E '^(IBPREP_|NCCL_|UCX_|CUDA_DEVICE_ORDER=|OMPI_MCA_)' | sort
CHILD
chmod +x "$tmp/child.sh"

ncpu=$(nproc)
ours=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
# with several CPUs the last task of a 2-task step gets the second half
run() { env -i PATH="$PATH" "$@" "$IBPREP" exec "${EXEC_ARGS[@]}" -- "$tmp/child.sh" 2>"$tmp/err"; }
want() { # NAME KEY=VALUE... (against $out)
	local name=$1; shift
	local miss=""
	for kv in "$@"; do grep -qxF -- "$kv" <<<"$out" || miss+=" $kv"; done
	if [ -z "$miss" ]; then tap_ok "$name"; else tap_fail "$name" "missing:$miss
child printed:
$out
stderr: $(cat "$tmp/err")"; fi
}

if ! command -v numactl >/dev/null; then
	tap_skip "exec" "numactl is not installed (contrib/install-deps.sh installs it)"
	tap_done
	exit
fi

# 1. one task owns the machine: every CPU this process may use, preferred node
EXEC_ARGS=(--ntasks-per-node 1)
out=$(run)
want "one task: all allowed CPUs, memory preferred on its node" "cpus=$ours" \
	"policy=preferred" "preferred=0" "IBPREP_CPUS=$ours" "IBPREP_MEMS=0" "IBPREP_LOCAL_RANK=0"

if [ "$ncpu" -ge 2 ]; then
	# 2. two tasks split the cores without overlap
	EXEC_ARGS=(--ntasks-per-node 2 --local-rank 0)
	out=$(run)
	c0=$(sed -n 's/^cpus=//p' <<<"$out")
	EXEC_ARGS=(--ntasks-per-node 2 --local-rank 1)
	out=$(run)
	c1=$(sed -n 's/^cpus=//p' <<<"$out")
	want "task 1 of 2: bound to its own CPUs" "IBPREP_CPUS=$c1" "IBPREP_LOCAL_RANK=1" "policy=preferred"
	if [ -n "$c0" ] && [ -n "$c1" ] && [ "$c0" != "$c1" ] && [ "$c0" != "$ours" ]; then
		tap_ok "tasks 0 and 1 of 2 get different CPUs ($c0 / $c1)"
	else
		tap_fail "tasks 0 and 1 of 2 get different CPUs" "task 0: '$c0', task 1: '$c1', allowed '$ours'"
	fi
	# 3. Slurm's variables are read, and flags win over them
	EXEC_ARGS=()
	out=$(run SLURM_STEP_TASKS_PER_NODE=2 SLURM_NODEID=0 SLURM_LOCALID=1)
	want "SLURM_LOCALID=1 of SLURM_STEP_TASKS_PER_NODE=2" "cpus=$c1" "IBPREP_LOCAL_RANK=1"
	EXEC_ARGS=(--local-rank 0)
	out=$(run SLURM_STEP_TASKS_PER_NODE=2 SLURM_NODEID=0 SLURM_LOCALID=1)
	want "--local-rank wins over SLURM_LOCALID" "cpus=$c0" "IBPREP_LOCAL_RANK=0"
else
	tap_skip "two tasks split the CPUs" "this machine has $ncpu CPU"
fi

# 4. the user's variables stay unless --force
EXEC_ARGS=(--ntasks-per-node 1)
out=$(run IBPREP_CPUS=mine)
want "a variable the user set is kept" "IBPREP_CPUS=mine"
EXEC_ARGS=(--ntasks-per-node 1 --force)
out=$(run IBPREP_CPUS=mine)
want "--force replaces it" "IBPREP_CPUS=$ours"

# 5. the GPU path: a DGX-H100-like topology file, bound within this process's CPUs
if python3 tests/fixtures/mktopo.py --preset dgx-h100 "$tmp/h100.xml"; then
	EXEC_ARGS=(--topology "$tmp/h100.xml" --ntasks-per-node 8 --local-rank 0)
	out=$(run)
	want "dgx-h100 task 0: GPU 0, its HCA, NCCL and UCX variables" "IBPREP_GPUS=0000:1b:00.0" \
		"IBPREP_HCAS=mlx5_0:1" "UCX_NET_DEVICES=mlx5_0:1" "CUDA_DEVICE_ORDER=PCI_BUS_ID" \
		"NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"
	# its cores (0-13,112-125) meet this machine's only in CPU 0 (and 1)
	cpus=$(sed -n 's/^cpus=//p' <<<"$out")
	case "$cpus" in 0|0-1) tap_ok "dgx-h100 task 0 bound inside this machine's CPUs ($cpus)" ;;
	*) tap_fail "dgx-h100 task 0 bound inside this machine's CPUs" "cpus=$cpus" ;; esac
	# torchrun style: one task, --local-rank picks the GPU worker row
	EXEC_ARGS=(--topology "$tmp/h100.xml" --ntasks-per-node 1 --local-rank 5)
	out=$(run)
	want "one task, worker 5: GPU 5 and its HCA" "IBPREP_GPUS=0000:c3:00.0" "UCX_NET_DEVICES=mlx5_9:1" \
		"IBPREP_LOCAL_RANK=5"
	if grep -q cpus_outside_task_mask "$tmp/err" || grep -q "may only use CPUs" "$tmp/err"; then
		tap_ok "worker 5's cores are not this machine's: said so on stderr"
	else
		tap_fail "worker 5's cores are not this machine's: said so on stderr" "$(cat "$tmp/err")"
	fi
else
	tap_fail "mktopo.py dgx-h100"
fi

# 6. the bootstrap interface: the one whose route reaches the peer (loopback here)
out=$(env -i PATH="$PATH" "$IBPREP" env --ntasks-per-node 1 --peer 127.0.0.1 2>"$tmp/err")
want "env --peer 127.0.0.1: NCCL_SOCKET_IFNAME is the interface that reaches it" "export NCCL_SOCKET_IFNAME==lo"
out=$(env -i PATH="$PATH" SLURM_LAUNCH_NODE_IPADDR=127.0.0.1 "$IBPREP" env --ntasks-per-node 1 socket_ifname=ib0 2>"$tmp/err")
want "the policy's socket_ifname wins over the derived one" "export NCCL_SOCKET_IFNAME==ib0"

# 7. exit statuses
EXEC_ARGS=(--ntasks-per-node 1)
env -i PATH="$PATH" "$IBPREP" exec -- sh -c 'exit 7' 2>/dev/null
rc=$?
[ "$rc" -eq 7 ] && tap_ok "the child's exit status is ours (7)" || tap_fail "the child's exit status is ours" "got $rc"
env -i PATH="$PATH" "$IBPREP" exec -- /nonexistent/prog 2>"$tmp/err"
rc=$?
[ "$rc" -eq 127 ] && grep -q "cannot run /nonexistent/prog" "$tmp/err" && tap_ok "a missing program: 127 and a message" ||
	tap_fail "a missing program: 127 and a message" "rc=$rc $(cat "$tmp/err")"
env -i PATH="$PATH" "$IBPREP" exec --ntasks-per-node 2 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "no command" "$tmp/err" && tap_ok "no command: exit 2" || tap_fail "no command: exit 2" "rc=$rc"
env -i PATH="$PATH" "$IBPREP" exec --ntasks-per-node 2 --local-rank 5 -- true 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "local rank 5" "$tmp/err" && tap_ok "a rank beyond the step: exit 1 naming it" ||
	tap_fail "a rank beyond the step: exit 1 naming it" "rc=$rc $(cat "$tmp/err")"
env -i PATH="$PATH" SLURM_STEP_GPUS=3 "$IBPREP" exec -- true 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "SLURM_STEP_GPUS names GPU 3" "$tmp/err" && tap_ok "SLURM_STEP_GPUS beyond the node's GPUs: exit 1" ||
	tap_fail "SLURM_STEP_GPUS beyond the node's GPUs: exit 1" "rc=$rc $(cat "$tmp/err")"
tap_done
