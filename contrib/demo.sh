#!/usr/bin/env bash
# demo.sh: the main job, from a fresh Debian 12 checkout, as root.
#
# Installs the dependencies, builds, shows `ibprep check` on a healthy and a
# broken node (contrib/demo-check.sh), then brings up a real Slurm cluster on
# this machine (munge, slurmctld, four slurmd in network namespaces:
# tests/integration/lib/cluster.sh) of four DGX-H100-like simulated nodes,
# n3 with a link trained at 1X, and runs
#
#   srun -N4 --ib-check --ib-affinity --ib-report ...
#
# which fails in its first second naming n3, mlx5_3, port 1 and the fix, and
# drains n3; then the same step on the three healthy nodes, with the
# per-task placement table and each task's environment; then the cross-node
# test (srun --ib-test) on the healthy nodes, and once with n4's test traffic
# cut (n4 named, not drained).  Everything is torn
# down at the end (or on Ctrl-C).  No traffic leaves the machine.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root (it installs packages and starts Slurm in namespaces)" >&2
	exit 1
fi
bash contrib/install-deps.sh demo # what this script runs, not the test suite's tools
make -j2

echo
echo "=============== 1. ibprep check on one node ==============="
bash contrib/demo-check.sh

echo
echo "=============== 2. spank_ib.so in a 4-node Slurm cluster ==============="
# From here on failures are the demo's subject: no errexit.
set +e
. tests/integration/lib/cluster.sh
SPANK_IB_SO=$PWD/build/spank_ib.so
echo "starting munge, slurmctld and 4 slurmd (n1..n4, DGX-H100-like; n3: mlx5_3 port 1 at 1X) ..."
if ! cluster_start 4 n3:mlx5_3/1:width=1X; then
	echo "demo: the cluster did not start (see above)" >&2
	exit 1
fi
if [ "$CL_HW" != 1 ]; then
	echo "demo: the simulated hardware could not be generated (see above)" >&2
	exit 1
fi

# The tasks inherit this shell's locked-memory limit (SLURM_RLIMIT_MEMLOCK).
keys="drain=yes cache_dir=$CL_DIR/nodes/%n/cache"
if ! ulimit -l unlimited 2>/dev/null; then
	lim=$(ulimit -l)
	echo "note: this machine caps locked memory at $lim KiB and will not raise it;"
	echo "      the demo's policy accepts that (min_memlock=$lim), a real site keeps 'unlimited'"
	keys+=" min_memlock=$lim"
fi
cluster_plugstack "$(cluster_spank_line $keys)"
echo
echo "plugstack.conf (what an admin writes; sysfs_root and topology point at the simulated nodes):"
sed 's/^/    /' "$CL_PLUGSTACK"

# Slurm repeats two generic lines for every task of a failed node; the
# plugin's own message is once per node.
quiet() { grep -vE 'task_init\(\) failed with rc=-1|Failed to invoke spank plugin stack' || true; }

# The previous job's nodes finish in the background: start each step on idle nodes.
settle() {
	local i
	for i in $(seq 1 50); do
		[ -z "$(cl_squeue -h 2>/dev/null)" ] && return 0
		sleep 0.2
	done
}

say() {
	settle
	echo
	echo "\$ $*"
}

say srun -N4 --ntasks-per-node=8 --ib-check --ib-affinity --ib-report python train.py
cl_srun -N4 --ntasks-per-node=8 -O --ib-check --ib-affinity --ib-report true 2>&1 | quiet
echo "(srun exit status: ${PIPESTATUS[0]})"

sleep 0.5
say sinfo -N -o "'%N %T %E'"
cl_sinfo -N -o '%N %T %E'

say srun -N3 --ntasks-per-node=8 --ib-check --ib-affinity --ib-report ./print-my-env.sh
# shellcheck disable=SC2016
cl_srun -N3 --ntasks-per-node=8 -O --ib-check --ib-affinity --ib-report \
	sh -c 'printf "%s task %s: gpu %s  hca %s  cpus %s  mem %s\n" "$SLURMD_NODENAME" "$SLURM_LOCALID" \
		"$IBPREP_GPUS" "$IBPREP_HCAS" "$IBPREP_CPUS" "$IBPREP_MEMS"' 2>&1 | sort -V

say srun -N1 -w n1 -n1 --ib-affinity env "|" grep -E "'^(NCCL|UCX|OMPI|CUDA_DEVICE|IBPREP)'"
cl_srun -N1 -w n1 -n1 --ib-affinity env | grep -E '^(NCCL|UCX|OMPI|CUDA_DEVICE|IBPREP)' | sort

echo
echo "n3 stays drained until an admin has fixed its cable and resumes it:"
echo "    scontrol update nodename=n3 state=resume"
echo "spank-ib's drains are the ones whose reason starts with 'spank-ib:' (the plugin's)"
echo "or 'spank-ib check:' (ibprep check --slurm's):"
echo "    sinfo -R -h -o '%N %E' | grep -E ' spank-ib( check)?:'"

echo
echo "=============== 3. the cross-node test (--ib-test) on the healthy nodes ==============="
# The test's child is the build's ibprep (an installed plugin uses the ibprep
# fixed at build time); munged's socket comes from slurm.conf's AuthInfo.
cluster_plugstack "$(cluster_spank_line $keys test_transport=socket test_timeout=4 \
	"test_helper=$PWD/build/ibprep")"
say srun -N3 -w n1,n2,n4 --ib-test --ib-report true
t0=$(date +%s%N)
cl_srun -N3 -w n1,n2,n4 --ib-test --ib-report true 2>&1 | grep 'cross-node test' | sort -V
echo "(srun exit status: ${PIPESTATUS[0]}; the whole step $((($(date +%s%N) - t0) / 1000000)) ms)"

echo
echo "cutting n4's test traffic (nftables in n4's namespace drops the test's ports 230-299;"
echo "Slurm itself still reaches n4) ..."
if command -v nft >/dev/null && ip netns exec "$CL_TAG-n4" nft -f - <<'EOF'; then
table inet demo_cut {
	chain input { type filter hook input priority 0; tcp dport 230-299 drop; }
	chain output { type filter hook output priority 0; tcp dport 230-299 drop; }
}
EOF
	say srun -N3 -w n1,n2,n4 --ib-test true
	cl_srun -N3 -w n1,n2,n4 --ib-test true 2>&1 | quiet | grep -E 'spank-ib|srun: error' | sort -V
	echo "(srun exit status: ${PIPESTATUS[0]})"
	ip netns exec "$CL_TAG-n4" nft delete table inet demo_cut
	sleep 0.5
	say sinfo -N -o "'%N %T %E'"
	cl_sinfo -N -o '%N %T %E'
	echo "n4 is named but not drained: the cross-node test's blame is a suspicion, never a drain."
else
	echo "(nftables not available here: skipped)"
fi

echo
echo "tearing the cluster down ..."
cluster_stop
echo "done"
