#!/usr/bin/env bash
# bench_spank_hooks.sh: where a flagged step's time goes, hook by hook.
#
# The plugin keeps no timing of its own per hook, so this builds a copy of
# the committed tree (git archive HEAD, in a temporary directory; nothing
# is changed here) whose spank_ib.c wraps every slurm_spank_* symbol in
# clock_gettime and appends one line per call to a file, then runs, in one
# allocation of the 2-node test cluster (as bench_spank.sh, default setup:
# no topology=, cache_dir per node, the build's ibprep as test_helper=),
# BENCH_STEPS steps of
#   srun -N2 --ntasks-per-node=8 -O --ib-check --ib-affinity true
# and as many without flags.  Prints, per context and hook: calls per step
# and the median time of one call (ms); and the step's median wall time.
#   BENCH_STEPS (default 25)
#   BENCH_XML=1: the xml setup (topology=, an XML per node) instead
set -u
cd "$(dirname "$0")/.." || exit 1
STEPS=${BENCH_STEPS:-25}
. bench/lib/spank_cluster.sh

bench_need_root bench_spank_hooks
if ! git rev-parse --verify -q HEAD >/dev/null; then
	echo "bench_spank_hooks: not a git checkout: skipped" >&2
	exit 0
fi
if [ ! -x build/ibprep ]; then
	echo "bench_spank_hooks: build/ibprep missing: run make first" >&2
	exit 1
fi
SRC=$(mktemp -d /tmp/bench_spank_hooks.XXXXXX)
chmod 0755 "$SRC"
trap 'rm -rf "$SRC"' EXIT
git archive HEAD | tar -x -C "$SRC"
LOG=$SRC/hooks.log
cat >"$SRC/timed.py" <<'EOF'
import sys
path, log = sys.argv[1], sys.argv[2]
s = open(path).read()
s = s.replace('#include <string.h>\n', '#include <string.h>\n#include <fcntl.h>\n#include <time.h>\n#include <unistd.h>\n', 1)
timer = '''
static long long hook_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void hook_log(const char *hook, long long t0)
{
	char b[256];
	int fd = open("%s", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666), n;

	if (fd < 0)
		return;
	n = snprintf(b, sizeof(b), "%%d %%s %%lld %%lld\\n", (int)spank_context(), hook, t0, hook_now() - t0);
	if (write(fd, b, (size_t)n) < 0)
		n = 0;
	close(fd);
}
''' % log
anchor = 'struct spank_ib_state *spank_ib_state(void)'
assert anchor in s
s = s.replace(anchor, timer + anchor, 1)
for hook in ['init', 'init_post_opt', 'user_init', 'task_init', 'exit']:
    name = 'slurm_spank_' + hook
    head = 'int %s(spank_t sp, int ac, char **av)\n{' % name
    assert head in s, name
    s = s.replace(head, 'static int timed_%s(spank_t sp, int ac, char **av);\n'
                  'int %s(spank_t sp, int ac, char **av)\n{\n\tlong long t0 = hook_now();\n'
                  '\tint r = timed_%s(sp, ac, av);\n\n\thook_log("%s", t0);\n\treturn r;\n}\n\n'
                  'static int timed_%s(spank_t sp, int ac, char **av)\n{' % (name, name, name, hook, name), 1)
open(path, 'w').write(s)
EOF
if ! python3 "$SRC/timed.py" "$SRC/spank/spank_ib.c" "$LOG"; then
	echo "bench_spank_hooks: spank_ib.c does not have the expected hooks" >&2
	exit 1
fi
if ! make -s -C "$SRC" -j2 build/spank_ib.so >"$SRC/build.log" 2>&1; then
	tail -5 "$SRC/build.log" >&2
	echo "bench_spank_hooks: the timed plugin did not build" >&2
	exit 1
fi
export SPANK_IB_SO=$SRC/build/spank_ib.so # cluster.sh's plugin
. tests/integration/lib/cluster.sh
bench_cleanup() { rm -rf "$SRC"; }
bench_spank_cluster bench_spank_hooks
SETUP=default
[ "${BENCH_XML:-0}" = 1 ] && SETUP=xml
cluster_plugstack "$(cluster_spank_line min_memlock=0 "cache_dir=$CL_DIR/nodes/%n/cache" \
	"test_helper=$PWD/build/ibprep" | if [ "$SETUP" = xml ]; then cat; else sed "s| topology=[^ ]*||"; fi)"

# run LABEL FLAGS...: BENCH_STEPS steps; the hooks' lines go to LOG.LABEL
run() {
	local label=$1 t0 t1
	shift
	cl_srun --jobid="$JOB" --overlap -N2 --ntasks-per-node=8 -O "$@" true >/dev/null 2>&1 # warm
	: >"$LOG"
	chmod 0666 "$LOG"
	for _ in $(seq 1 "$STEPS"); do
		t0=$(date +%s%N)
		cl_srun --jobid="$JOB" --overlap -N2 --ntasks-per-node=8 -O "$@" true >/dev/null 2>&1 ||
			echo "bench_spank_hooks: step failed: $*" >&2
		t1=$(date +%s%N)
		echo "STEP $(((t1 - t0) / 1000))" >>"$LOG"
	done
	cp "$LOG" "$LOG.$label"
}
echo "bench_spank_hooks: $STEPS steps each, srun -N2 --ntasks-per-node=8, $SETUP setup, load $(cut -d' ' -f1 /proc/loadavg)"
run flags --ib-check --ib-affinity
run none
python3 - "$LOG.flags" "$LOG.none" <<'EOF'
import collections, statistics, sys
ctxs = {'1': 'srun', '2': 'slurmstepd', '3': 'salloc', '4': 'slurmd', '5': 'job script'}
order = ['init', 'init_post_opt', 'user_init', 'task_init', 'exit']
for path, label in zip(sys.argv[1:], ['--ib-check --ib-affinity', 'no flag']):
    steps, d = [], collections.defaultdict(list)
    for line in open(path):
        f = line.split()
        if f[0] == 'STEP':
            steps.append(int(f[1]) / 1000)
        elif len(f) == 4:
            d[(ctxs.get(f[0], f[0]), f[1])].append(int(f[3]) / 1e6)
    print('%s: step median %.1f ms' % (label, statistics.median(steps)))
    for (ctx, hook), v in sorted(d.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]) if kv[0][1] in order else 9)):
        print('  %-11s %-14s %5.1f calls/step  median %7.3f ms  p90 %7.3f ms' % (
            ctx, hook, len(v) / len(steps), statistics.median(v),
            sorted(v)[int(len(v) * 0.9)]))
EOF
cl_scancel "$JOB" 2>/dev/null
exit 0
