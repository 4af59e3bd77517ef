#!/usr/bin/env bash
# test_spank_nodelist.sh: a job's owner launches an --ib-test step with a node
# list that is not Slurm's, in the project's Slurm cluster (4 nodes; n4 is
# never in the step), socket transport, results_log= on every node.  The
# owner's tool is their own srun with an LD_PRELOAD (tests/integration/lib/
# srun_shim.c), no privilege:
#
#   (a) env: srun's SLURM_STEP_NODELIST alone says n[1,4] for a step on
#       n1,n2.  n2 finds n4 at its own place and does not run the test; n1
#       runs it against n4 and slurmctld's node list keeps its links out of
#       the log.
#   (b) layout: the step layout slurmctld sent srun for a step on n1,n2,n3
#       is rewritten to n[1-2],n4: srun sends the launch to n1, n2 and n4
#       (n4's slurmd refuses: the credential says n[1-3]) with a consistent
#       node list, node count and index, so n1 and n2 run, against n4, and
#       blame it.  Only slurmctld knows better: nothing is recorded, and the
#       user is told why.
#
# In every case: no record in any node's log names a node outside the step,
# and every line a node's slurmstepd prints names that node (a finding about
# another node says "about nX" in its text).  Control: the same step without
# the shim is recorded on both nodes.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
. tests/integration/lib/cluster.sh

NAME="--ib-test with a node list that is not Slurm's"
cluster_prereqs_or_done "$NAME"
if [ -n "$CL_CLIENT_PREFIX" ]; then
	tap_skip "$NAME" "the srun shim is built for this host's Slurm 22.05 libslurmfull, not a release chroot's"
	tap_done
	exit
fi
if ! command -v cc >/dev/null; then
	tap_skip "$NAME" "no C compiler for the srun shim"
	tap_done
	exit
fi
cluster_start_or_done 4
cluster_hw_or_done "$NAME"
cluster_suite_out
SHIM=$CL_DIR/srun_shim.so
if ! cc -shared -fPIC -O1 -o "$SHIM" tests/integration/lib/srun_shim.c -ldl 2>"$OUT/cc"; then
	tap_fail "the srun shim builds" "$(cat "$OUT/cc")"
	tap_done
	exit
fi

cluster_plugstack "$(cluster_spank_line "cache_dir=$CL_DIR/nodes/%n/cache" min_memlock=0 \
	test_transport=socket test_timeout=4 "test_helper=$(cluster_test_helper)" \
	"munge_socket=$CL_DIR/munge/munge.sock" "results_log=$CL_DIR/nodes/%n/results.jsonl")"

# step NAME NODES ENV...: srun -w NODES --ib-test through the shim with ENV.
JOB=0 # each step is a job of its own, numbered from 1 in this fresh cluster
step() {
	local name=$1 nodes=$2
	shift 2
	JOB=$((JOB + 1))
	env "$@" LD_PRELOAD="$SHIM" SLURM_CONF="$CL_CONF" timeout 60 "$SLURM_BIN/srun" -w "$nodes" \
		--ib-test true >"$OUT/$name" 2>&1
	RC=$?
	sleep 1 # the records are written at the step's end, after srun may have returned
}
# Every node's log emptied; then: the nodes named in its records ("a" and "b").
clear_logs() { for n in $CL_NODES; do : >"$CL_DIR/nodes/$n/results.jsonl"; done; }
named() {
	cat "$CL_DIR"/nodes/n*/results.jsonl 2>/dev/null |
		python3 -c 'import json,sys
names=set()
for line in sys.stdin:
    r=json.loads(line); names.add(r["a"]); names.add(r["b"]); names.add(r["by"])
print(" ".join(sorted(names)))'
}
records() { cat "$CL_DIR/nodes/$1/results.jsonl" 2>/dev/null | wc -l; }
# Lines of node X's slurmstepd that are not X's own (another node as the
# finding's node), in srun's output and in X's slurmd log (srun may abort
# the step, and stop reading it, before a node has said everything).
foreign_lines() {
	local n
	grep -E '^slurmstepd-n[0-9]+: error: spank-ib: ' "$OUT/$1" |
		grep -vE '^slurmstepd-(n[0-9]+): error: spank-ib: (warning: )?\1: '
	for n in $CL_NODES; do
		grep -E "\[$2\.0\] .*spank-ib: " "$CL_LOG/slurmd.$n.log" 2>/dev/null |
			grep -vE "spank-ib: (warning: )?$n: " | sed "s/^/$n's log: /"
	done
}
# said NAME TEXT: TEXT in srun's output of step NAME or in a node's slurmd log
said() {
	has "$1" "$2" || grep -qF -- "$2" "$CL_LOG"/slurmd.n*.log 2>/dev/null
}

clear_logs
step plain n1,n2
if [ $RC -eq 0 ] && [ "$(records n1)" -gt 0 ] && [ "$(records n2)" -gt 0 ] && [ "$(named)" = "n1 n2" ]; then
	tap_ok "control: srun -N2 --ib-test through the shim, nothing asked of it: recorded on n1 and n2, about them only"
else
	tap_fail "control step" "rc=$RC; named: $(named); $(show plain)"
fi

# ---- (a) SLURM_STEP_NODELIST alone ----
clear_logs
step env n1,n2 IBP_SHIM_ENV_NODELIST='n[1,4]'
if ! has env "n[1,4]"; then
	tap_skip "(a) SLURM_STEP_NODELIST changed alone" "the shim did not change the list on this Slurm: $(head -3 "$OUT/env")"
elif [ $RC -ne 0 ] &&
	said env "spank-ib: n2: cross-node test not run: SLURM_STEP_NODELIST has n4 at this node's place 1 (S_JOB_NODEID), this node is n2" &&
	said env "spank-ib: warning: n1: the test's links are not recorded: it ran over n[1,4], slurmctld's node list of the step is n[1-2]" &&
	[ -z "$(named)" ] && [ -z "$(foreign_lines env $JOB)" ]; then
	tap_ok "(a) SLURM_STEP_NODELIST=n[1,4] alone: n2 does not run the test (n4 at its place), n1's links are kept out of the log (slurmctld says n[1-2]); nothing recorded, every line its node's own"
else
	tap_fail "(a) SLURM_STEP_NODELIST changed alone" "rc=$RC; named: $(named); foreign: $(foreign_lines env $JOB); $(show env)"
fi
grep -m2 "cross-node test not run\|not recorded" "$OUT/env" | sed 's/^/# /'

# ---- (b) the whole layout, consistently ----
clear_logs
step layout n1,n2,n3 IBP_SHIM_LAYOUT='n[1-3]=n[1-2],n4'
if ! has layout "srun_shim: step layout n[1-3] -> n[1-2],n4"; then
	tap_skip "(b) a consistent layout" "the shim did not reach the step layout on this Slurm: $(head -3 "$OUT/layout")"
elif [ $RC -ne 0 ] &&
	# slurmctld's word: its list, or no step at all once srun's abort (n4 has
	# no credential for it) reached it before the node's query (under load)
	{ said layout "spank-ib: warning: n1: the test's links are not recorded: it ran over n[1-2],n4, slurmctld's node list of the step is n[1-3]" ||
		said layout "spank-ib: warning: n1: the test's links are not recorded: slurmctld did not confirm the step's nodes"; } &&
	said layout "spank-ib: warning: n2: the test's links are not recorded" &&
	said layout "spank-ib: n1: about n4" &&
	[ -z "$(named)" ] && [ -z "$(foreign_lines layout $JOB)" ]; then
	tap_ok "(b) the step layout rewritten to n[1-2],n4 (count and index consistent): n1 and n2 test n4 and blame it as their own word (\"about n4\"), nothing recorded (slurmctld's list is n[1-3], or the aborted step is gone from it)"
else
	tap_fail "(b) a consistent layout" "rc=$RC; named: $(named); foreign: $(foreign_lines layout $JOB); $(show layout); $(grep -h "spank-ib" "$CL_LOG"/slurmd.n*.log | tail -8)"
fi
grep -h -m2 "about n4\|not recorded" "$OUT/layout" "$CL_LOG"/slurmd.n1.log | head -2 | sed 's/^/# /'

tap_done
