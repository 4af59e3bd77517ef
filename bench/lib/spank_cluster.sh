# bench/lib/spank_cluster.sh: the test cluster the plugin's benches measure
# steps in (bench_spank.sh, bench_spank_hooks.sh).  Source it from the
# project's root after tests/integration/lib/cluster.sh.

# bench_need_root NAME: exits (0, with a note) unless root: the cluster runs
# in namespaces.
bench_need_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	echo "$1: needs root (the cluster runs in namespaces): skipped" >&2
	exit 0
}

# bench_spank_cluster NAME: the 2-node test cluster with a private copy of
# SPANK_IB_SO (a rebuild during the run must not change what is measured;
# SPANK_IB_SO then names the copy) and one allocation of 8 tasks per node,
# its id in JOB: steps run inside it with srun --jobid (new jobs would add
# the scheduler's outliers).  At exit the cluster stops, then bench_cleanup
# runs when the bench defines it (also when the cluster did not start).  Exits the bench: 1 when
# the cluster or the allocation fails, 0 with a note without simulated
# hardware.
bench_spank_cluster() {
	local err rc
	err=$(mktemp)
	cluster_start 2 2>"$err"
	rc=$?
	# after cluster_start, which sets its own
	trap 'cluster_stop; if declare -F bench_cleanup >/dev/null; then bench_cleanup; fi' EXIT
	if [ "$rc" -ne 0 ]; then
		cat "$err" >&2
		rm -f "$err"
		exit 1
	fi
	rm -f "$err"
	cp "$SPANK_IB_SO" "$CL_DIR/spank_ib.so"
	SPANK_IB_SO=$CL_DIR/spank_ib.so
	if [ "$CL_HW" != 1 ]; then
		echo "$1: no simulated hardware (tests/fixtures/mksysfs.py, mktopo.py): skipped" >&2
		exit 0
	fi
	JOB=$(cl_salloc --no-shell -N2 --ntasks-per-node=8 2>&1 | grep -Eo 'allocation [0-9]+' | grep -Eo '[0-9]+' | head -1)
	if [ -z "$JOB" ]; then
		echo "$1: salloc failed" >&2
		exit 1
	fi
}
