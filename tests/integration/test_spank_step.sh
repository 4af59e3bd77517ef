#!/usr/bin/env bash
# test_spank_step.sh: spank_ib.so follows the step Slurm gives it, in a real
# 2-node Slurm cluster (tests/integration/lib/cluster.sh) with GPU gres:
#   * the step's GPUs (SLURM_STEP_GPUS) restrict the placement, and a task
#     bound to a GPU by Slurm (--gpus-per-task, --gpu-bind) gets that GPU's
#     HCA and CPUs, keeping Slurm's CUDA_VISIBLE_DEVICES;
#   * NCCL_SOCKET_IFNAME is the interface that reaches the step's other node,
#     the launch node's route for a single-node step, and a user's value stays.
# The simulated GPUs: gres.conf File= character device nodes made with mknod
# (major 195, NVIDIA's) under the cluster's directory; nothing opens them.
# Slurm 22.05 with task/none rejects regular files there ("is not a valid
# character or block device") and then sets no GPU variables.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

cluster_prereqs_or_done "spank plugin and the step's GPUs" "namespaces, bridge, daemons, mknod"

GPUDIR=$(mktemp -d "${CL_BASEDIR:-/tmp}/ibpgpu.XXXXXX")
chmod 0755 "$GPUDIR"
mk_ok=1
for i in 0 1 2 3 4 5 6 7; do mknod "$GPUDIR/nvidia$i" c 195 "$i" 2>/dev/null || mk_ok=0; done
if [ $mk_ok != 1 ]; then
	rm -rf "$GPUDIR"
	tap_skip "spank plugin and the step's GPUs" "mknod of character devices refused here"
	tap_done
	exit
fi
CL_EXTRA_CONF="GresTypes=gpu
NodeName=DEFAULT Gres=gpu:8"
CL_GRES_CONF="Name=gpu File=$GPUDIR/nvidia[0-7]"
cl_suite_cleanup() { rm -rf "$GPUDIR"; }
CL_START_NAME="cluster with GPU gres starts" cluster_start_or_done 2
SLEEPER=""
stop_all() {
	[ -n "$SLEEPER" ] && cl_scontrol cancel "$SLEEPER" >/dev/null 2>&1
	cluster_stop
	rm -rf "$GPUDIR"
}
trap stop_all EXIT
cluster_hw_or_done "spank plugin and the step's GPUs"
cluster_suite_out
# test_helper=: the peer names are looked up in the helper (ib_step.c), never in slurmstepd
cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=4096 "test_helper=$(cluster_test_helper)")"


if [ "$(cl_sinfo -h -N -n n1 -o '%G')" = "gpu:8" ]; then
	tap_ok "slurmd takes the mknod'ed GPUs as gres (gpu:8 per node)"
else
	tap_fail "gres gpu:8" "$(cl_sinfo -N -o '%N %T %G %E' 2>&1)"
fi

# ---- the step's GPUs ----
# A job holding GPUs 0 and 1 of n1, so the next step gets 2 and 3.
SLEEPER=$(cl_sbatch --parsable -w n1 -n1 --gres=gpu:2 -o /dev/null --wrap "sleep 120" 2>/dev/null)
for t in $(seq 1 100); do
	[ "$(cl_squeue -h -j "$SLEEPER" -o '%T' 2>/dev/null)" = RUNNING ] && break
	sleep 0.1
done
ROW='echo "ROW $SLURM_LOCALID $SLURM_STEP_GPUS $CUDA_VISIBLE_DEVICES $IBPREP_HCAS $IBPREP_CPUS"'
run step cl_srun -N1 -w n1 -n2 -O --gres=gpu:2 --ib-affinity --ib-report sh -c "$ROW"
# The DGX H100 map: GPU 2 with mlx5_4, GPU 3 with mlx5_5; the 28 cores of
# their socket's half split between the two.
if [ $RC -eq 0 ] && has step "ROW 0 2,3 2,3 mlx5_4:1 0-27,112-139" &&
	has step "ROW 1 2,3 2,3 mlx5_5:1 28-55,140-167"; then
	tap_ok "SLURM_STEP_GPUS=2,3: tasks get GPUs 2 and 3's HCAs (mlx5_4, mlx5_5) and CPUs, not the node's first GPUs"
else
	tap_fail "the step's GPUs restrict the placement" "rc=$RC; $(show step)"
fi
if has step "spank-ib: n1: step GPUs from SLURM_STEP_GPUS (2)"; then
	tap_ok "the report says where the step's GPUs came from"
else
	tap_fail "report names SLURM_STEP_GPUS" "$(show step)"
fi

# Slurm binds each task to one GPU; with map_gpu the binding is swapped
# against the plugin's PCI-order deal: the task's row must follow its GPU.
# No -O here: from 24.11 srun -O --gpus-per-task is refused ("Requested node
# configuration is not available"), 22.05 accepts it; two tasks fit anyway.
run bind cl_srun -N1 -w n1 -n2 --gpus-per-task=1 --gpu-bind=map_gpu:3,2 \
	--ib-affinity sh -c "$ROW"
want2="mlx5_4:1 0-27,112-139" want3="mlx5_5:1 28-55,140-167"
bad=""
for r in 0 1; do
	line=$(grep "^ROW $r " "$OUT/bind")
	set -- $line
	cvd=${4:-}
	case $cvd in
	2) [[ "$line" == *" 2 $want2" ]] || bad+="task $r: $line; " ;;
	3) [[ "$line" == *" 3 $want3" ]] || bad+="task $r: $line; " ;;
	*) bad+="task $r: no single GPU from Slurm: $line; " ;;
	esac
done
if [ $RC -eq 0 ] && [ -z "$bad" ]; then
	tap_ok "--gpus-per-task --gpu-bind: each task's HCA and CPUs follow the GPU Slurm bound it to, CUDA_VISIBLE_DEVICES kept ($(grep '^ROW 0' "$OUT/bind" | cut -d' ' -f4) for task 0)"
else
	tap_fail "tasks follow Slurm's GPU binding" "rc=$RC $bad; $(show bind)"
fi
if grep -q '^ROW 0 [0-9]* 3 ' "$OUT/bind"; then
	tap_ok "the binding really differed from the PCI-order deal (task 0 on GPU 3)"
else
	tap_skip "task 0 on GPU 3" "Slurm did not swap the binding with map_gpu:3,2: $(grep '^ROW' "$OUT/bind" | tr '\n' ';')"
fi
cl_scontrol cancel "$SLEEPER" >/dev/null 2>&1
SLEEPER=""

# ---- NCCL_SOCKET_IFNAME ----
# The interface of each node that holds its address on the cluster's bridge
# network (the harness names it eth0 inside each node's namespace).
ifname_of() {
	local ns=$CL_TAG-$1 addr=$2
	ip -n "$ns" -o -4 addr show 2>/dev/null | awk -v a="$addr" '{split($4, p, "/"); if (p[1] == a) print $2}'
}
if1=$(ifname_of n1 "$CL_NET.11")
if2=$(ifname_of n2 "$CL_NET.12")
cluster_wait_idle 20 >/dev/null 2>&1
run sock cl_srun -N2 -w n1,n2 --ntasks-per-node=1 --ib-affinity --ib-report \
	sh -c 'echo "SOCK $SLURMD_NODENAME $NCCL_SOCKET_IFNAME"'
if [ $RC -eq 0 ] && [ -n "$if1" ] && has sock "SOCK n1 =$if1" && has sock "SOCK n2 =$if2"; then
	tap_ok "2-node step: NCCL_SOCKET_IFNAME is each node's bridge interface (=$if1)"
else
	tap_fail "NCCL_SOCKET_IFNAME on a 2-node step" "rc=$RC if1=$if1 if2=$if2; $(show sock)"
fi
if has sock "spank-ib: n1: NCCL_SOCKET_IFNAME $if1: route to n2 ($CL_NET.12)" &&
	has sock "spank-ib: n2: NCCL_SOCKET_IFNAME $if2: route to n1 ($CL_NET.11)"; then
	tap_ok "the interface is the one that reaches the step's other node, and the report says so"
else
	tap_fail "route to the peer node" "$(show sock)"
fi
run sock1 cl_srun -N1 -w n1 --ib-affinity --ib-report sh -c 'echo "SOCK $SLURMD_NODENAME $NCCL_SOCKET_IFNAME"'
if [ $RC -eq 0 ] && has sock1 "SOCK n1 =$if1" &&
	has sock1 "NCCL_SOCKET_IFNAME $if1: route to the launch node $CL_NET.1 (single-node step)"; then
	tap_ok "single-node step: the launch node's route, and the report says it fell back"
else
	tap_fail "single-node fallback" "rc=$RC; $(show sock1)"
fi
run sockuser env NCCL_SOCKET_IFNAME=myif0 bash -c '. tests/integration/lib/cluster.sh; CL_CONF='"$CL_CONF"' cl_srun -N2 -w n1,n2 --ntasks-per-node=1 --ib-affinity sh -c "echo SOCK \$SLURMD_NODENAME \$NCCL_SOCKET_IFNAME"'
if [ $RC -eq 0 ] && has sockuser "SOCK n1 myif0" && has sockuser "SOCK n2 myif0"; then
	tap_ok "a user's NCCL_SOCKET_IFNAME is kept"
else
	tap_fail "user's NCCL_SOCKET_IFNAME kept" "rc=$RC; $(show sockuser)"
fi
cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=4096 socket_ifname=ib7)"
run sockpol cl_srun -N2 -w n1,n2 --ntasks-per-node=1 --ib-affinity sh -c 'echo "SOCK $SLURMD_NODENAME $NCCL_SOCKET_IFNAME"'
if [ $RC -eq 0 ] && has sockpol "SOCK n1 =ib7" && has sockpol "SOCK n2 =ib7"; then
	tap_ok "the policy's socket_ifname= wins over the derived interface"
else
	tap_fail "socket_ifname= policy" "rc=$RC; $(show sockpol)"
fi
tap_done
