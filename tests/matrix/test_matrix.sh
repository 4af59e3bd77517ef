#!/usr/bin/env bash
# test_matrix.sh: the plugin on other Slurm releases (make check-matrix).
#
# For each Debian suite in IBP_MATRIX_SUITES (default: host = this machine's
# Debian 12 with Slurm 22.05, trixie = 24.11, sid = 26.05):
#   1. build the suite's chroot, or reuse it (tests/matrix/lib/chroot.sh);
#      the suites are built in parallel; a sid that cannot be built today is
#      a skip with the reason, any other suite a failure;
#   2. inside the chroot: build the project from a copy of the work tree
#      with `make deb` (unchanged Makefile, that release's compiler and
#      spank.h), install the .deb with dpkg, check what it installed (on the
#      host: the package is unpacked and checked, never installed);
#   3. read the release from `slurmd -V` and take every release-dependent
#      expectation from tests/matrix/expectations.sh for that version;
#   4. start the cluster of tests/integration/lib/cluster.sh with that
#      release's munge, slurmctld, slurmd and clients (run from the chroot),
#      prove the expectations with a probe plugin that fails on purpose
#      (tests/matrix/probe), then run the plugin's integration suites
#      (tests/integration/test_*.sh) against the installed package (not on
#      the host: `make check-integration` runs them there).
# One TAP line per release x case.  Needs root, debootstrap and the Debian
# mirror of the host's apt sources; nothing else leaves the machine.
#
# Environment: IBP_MATRIX_SUITES, IBP_MATRIX_CACHE (chroot.sh),
# IBP_MATRIX_OPTIONAL (suites whose chroot failure is a skip; default sid),
# IBP_MATRIX_SUITE_FILTER (only integration suites whose name matches),
# IBP_MATRIX_HOST_ONLY (integration suites left to the host's release,
# space-separated; default none).
set -u
cd "$(dirname "$0")/../.." || exit 1
SRC=$PWD
. tests/lib/tap.sh
. tests/matrix/lib/chroot.sh
. tests/matrix/expectations.sh

SUITES=${IBP_MATRIX_SUITES:-host trixie sid}
OPTIONAL=${IBP_MATRIX_OPTIONAL:-sid}

if [ "$(id -u)" -ne 0 ]; then
	tap_skip "slurm release matrix" "needs root (debootstrap, chroot, namespaces)"
	tap_done
	exit
fi
for cmd in debootstrap chroot nsenter unshare ip flock dpkg-deb; do
	if ! command -v "$cmd" > /dev/null; then
		tap_skip "slurm release matrix" "$cmd is not installed (contrib/install-deps.sh)"
		tap_done
		exit
	fi
done

LEG_BASE=
LEG_CLUSTER=0
leg_cleanup()
{
	if [ "$LEG_CLUSTER" = 1 ]; then
		cluster_stop
		LEG_CLUSTER=0
	fi
	matrix_chroot_leave
	[ -n "$LEG_BASE" ] && matrix_rm_tree "$LEG_BASE"
	LEG_BASE=
	matrix_chroot_unlock
}
# cluster_start installs its own traps: put ours back after it.
leg_traps()
{
	trap leg_cleanup EXIT
	trap 'leg_cleanup; exit 130' INT TERM
}
leg_traps

# chk NAME EXPECTED SEEN [DIAG]: one case comparing two values.
chk()
{
	if [ "$2" = "$3" ]; then
		tap_ok "$1"
	else
		tap_fail "$1" "expected: $2, seen: $3${4:+
$4}"
	fi
}

# in_chroot CMD...: the leg's chroot (or the host), clean environment.
in_chroot()
{
	if [ "$LEG_SUITE" = host ]; then
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
	else
		matrix_chroot_run "$LEG_SUITE" "$@"
	fi
}

# man_missing PAGE WORD...: the WORDs the roff source of PAGE never mentions
# (with \- read as -, font escapes dropped).
man_missing()
{
	local page=$1 text w
	shift
	text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIPR]//g' -e 's/"//g' "$page")
	for w in "$@"; do
		grep -qF -- "$w" <<< "$text" || printf '%s ' "$w"
	done
}

# The man pages against the code: every option of `ibprep COMMAND --help`
# in ibprep(1), every policy key (helpers/node/policy.c) and every admin key
# (spank/ib_args.c) in spank_ib.conf(5), the one list of keys
# (tests/integration/test_docs.sh checks that list both ways).
leg_man_sync()
{
	local t=$1 ibprep=$2 c opts missing=""
	for c in check place env exec rdmatest snapshot watch; do
		opts=$("$ibprep" "$c" --help 2>&1 | grep -oE -- '--[a-z][a-z-]+' | sort -u)
		# shellcheck disable=SC2086
		missing+=$(man_missing "$SRC/man/ibprep.1" $opts)
	done
	# shellcheck disable=SC2046
	if [ -z "$missing" ]; then
		tap_ok "$t: ibprep(1) documents every option of ibprep --help"
	else
		tap_fail "$t: ibprep(1) documents every option of ibprep --help" "missing: $missing"
	fi
	# shellcheck disable=SC2046
	missing=$(man_missing "$SRC/man/spank_ib.conf.5" $(grep -oE '^ *\{"[a-z_]+", K_' "$SRC/helpers/node/policy.c" |
		sed -E 's/.*"([a-z_]+)".*/\1=/'))
	# shellcheck disable=SC2046
	missing+=$(man_missing "$SRC/man/spank_ib.conf.5" $(grep -oE 'strcmp\(key, "[a-z_]+"\)' "$SRC/spank/ib_args.c" |
		sed -E 's/.*"([a-z_]+)".*/\1=/'))
	if [ -z "$missing" ]; then
		tap_ok "$t: spank_ib.conf(5) documents every policy key and every plugstack key"
	else
		tap_fail "$t: spank_ib.conf(5) documents every policy key and every plugstack key" \
			"missing: $missing"
	fi
}

# What the package holds: from dpkg's database after installing it in a
# chroot, from the .deb itself on the host (where it is never installed).
pkg_files()
{
	if [ "$LEG_SUITE" = host ]; then
		(cd "$LEG_BASE/pkgroot" && find . ! -type d | sed 's/^\.//')
	else
		in_chroot dpkg -L spank-ib
	fi
}
pkg_field()
{
	if [ "$LEG_SUITE" = host ]; then
		dpkg-deb -f "$LEG_DEB" "$1"
	else
		in_chroot dpkg-query -W -f "\${$1}" spank-ib
	fi
}
pkg_conffiles()
{
	if [ "$LEG_SUITE" = host ]; then
		cat "$LEG_BASE/pkgctl/conffiles" 2> /dev/null
	else
		in_chroot dpkg-query -W -f '${Conffiles}' spank-ib | awk '{ print $1 }'
	fi
}

leg_build()
{
	local t=$1 log=$LEG_BASE/build.log
	mkdir -p "$LEG_BASE/src"
	# The work tree's files (tracked, and untracked but not ignored), what
	# `make` on the host builds too; in CI's clean clone, the commit.
	if git rev-parse --git-dir > /dev/null 2>&1; then
		git ls-files -z -co --exclude-standard | grep -zv '^build' |
			tar --null -T - -cf - 2> /dev/null | tar -C "$LEG_BASE/src" -xf -
	else
		tar --exclude='./build*' -cf - . | tar -C "$LEG_BASE/src" -xf -
	fi
	local start=$SECONDS where="inside the chroot"
	[ "$LEG_SUITE" = host ] && where="on the host"
	# No git inside the chroot: the package version comes from here.
	local version
	version=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)
	git rev-parse --git-dir > /dev/null 2>&1 &&
		version=$version+git$(git log -1 --format=%cd --date=format:%Y%m%d).$(git rev-parse --short=7 HEAD)
	if ! in_chroot IBP_DEB_VERSION="$version" sh -c "cd '$LEG_BASE/src' && make -j2 deb" \
		> "$log" 2>&1; then
		tap_fail "$t: make deb $where" "$(tail -n 20 "$log")"
		return 1
	fi
	tap_ok "$t: make deb $where ($((SECONDS - start)) s)"
	local warnings
	warnings=$(grep -E '(^|: )warning:' "$log" | sort -u)
	if [ -z "$warnings" ]; then
		tap_ok "$t: no compiler warnings with $(in_chroot gcc -dumpfullversion 2> /dev/null | sed 's/^/gcc /')"
	else
		tap_fail "$t: no compiler warnings" "$warnings"
	fi
	LEG_DEB=$(tail -n 1 "$log")
	case "$LEG_DEB" in
	*.deb) ;;
	*)
		tap_fail "$t: make deb names the package it built" "last line: $LEG_DEB"
		return 1
		;;
	esac
	LEG_DEB=$LEG_BASE/src/$LEG_DEB
}

leg_install()
{
	local t=$1 out files plugdir ma dep ibprep=ibprep
	if [ "$LEG_SUITE" = host ]; then
		if ! out=$(dpkg-deb -x "$LEG_DEB" "$LEG_BASE/pkgroot" 2>&1 &&
			dpkg-deb -e "$LEG_DEB" "$LEG_BASE/pkgctl" 2>&1); then
			tap_fail "$t: dpkg-deb unpacks $(basename "$LEG_DEB")" "$out"
			return 1
		fi
		tap_ok "$t: dpkg-deb unpacks $(basename "$LEG_DEB") (not installed on the host)"
		ibprep=$LEG_BASE/pkgroot/usr/bin/ibprep
	elif ! out=$(in_chroot dpkg -i "$LEG_DEB" 2>&1); then
		tap_fail "$t: dpkg -i $(basename "$LEG_DEB")" "$out"
		return 1
	else
		tap_ok "$t: dpkg -i $(basename "$LEG_DEB")"
	fi
	ma=$(in_chroot gcc -print-multiarch)
	plugdir=/usr/lib/$ma/slurm-wlm
	files=$(pkg_files)
	local want=(/usr/bin/ibprep)
	[ -n "$(ls "$SRC"/man/ibprep.1 2> /dev/null)" ] && want+=(/usr/share/man/man1/ibprep.1.gz)
	[ -n "$(ls "$SRC"/man/spank_ib.8 2> /dev/null)" ] && want+=(/usr/share/man/man8/spank_ib.8.gz)
	[ -f "$SRC/man/spank_ib.conf.5" ] && want+=(/usr/share/man/man5/spank_ib.conf.5.gz)
	[ -f "$SRC/contrib/spank_ib.conf" ] && want+=(/etc/slurm/plugstack.conf.d/spank_ib.conf)
	[ -f "$SRC/contrib/nhc/spank_ib.nhc" ] && want+=(/etc/nhc/scripts/spank_ib.nhc)
	LEG_PLUGIN=
	if grep -q 'slurm_spank_' "$SRC"/spank/*.c 2> /dev/null; then
		want+=("$plugdir/spank_ib.so")
		[ -d "$SRC/spank/watcher" ] && want+=(/usr/libexec/spank-ib-watch)
		LEG_PLUGIN=$plugdir/spank_ib.so
	fi
	local missing=() f
	for f in "${want[@]}"; do grep -qxF "$f" <<< "$files" || missing+=("$f"); done
	if [ ${#missing[@]} -eq 0 ]; then
		tap_ok "$t: package installs ${want[*]}"
	else
		tap_fail "$t: package installs what it should" "missing: ${missing[*]}"
	fi
	if [ -f "$SRC/contrib/spank_ib.conf" ]; then
		chk "$t: plugstack.conf.d snippet is a conffile" /etc/slurm/plugstack.conf.d/spank_ib.conf \
			"$(grep -xF /etc/slurm/plugstack.conf.d/spank_ib.conf <<< "$(pkg_conffiles)")"
	fi
	if [ -f "$SRC/contrib/nhc/spank_ib.nhc" ]; then
		chk "$t: the NHC check is a conffile" /etc/nhc/scripts/spank_ib.nhc \
			"$(grep -xF /etc/nhc/scripts/spank_ib.nhc <<< "$(pkg_conffiles)")"
	fi
	local conf=/etc/slurm/plugstack.conf.d/spank_ib.conf active
	if [ -f "$SRC/contrib/spank_ib.conf" ]; then
		if [ "$LEG_SUITE" = host ]; then
			active=$(grep -E '^[[:space:]]*(required|optional)[[:space:]]' "$LEG_BASE/pkgroot$conf")
		else
			active=$(grep -E '^[[:space:]]*(required|optional)[[:space:]]' "$(matrix_chroot_dir "$LEG_SUITE")$conf")
		fi
		chk "$t: the packaged snippet enables nothing until the admin uncomments it" "" "$active"
	fi
	dep=$(pkg_field Depends)
	if [ -n "$LEG_PLUGIN" ]; then
		local rel=${LEG_VERSION%.*}
		case "$dep" in
		*"slurm-wlm-basic-plugins (>= $rel)"*) tap_ok "$t: package depends on Slurm $rel" ;;
		*) tap_fail "$t: package depends on Slurm $rel" "Depends: $dep" ;;
		esac
	fi
	case "$dep" in
	*libc6*) tap_ok "$t: Depends from dpkg-shlibdeps ($dep)" ;;
	*) tap_fail "$t: Depends from dpkg-shlibdeps" "Depends: $dep" ;;
	esac
	if [ "$LEG_SUITE" = host ] && command -v man > /dev/null; then
		local m warn=""
		for m in "$LEG_BASE"/pkgroot/usr/share/man/man*/*.gz; do
			[ -f "$m" ] || continue
			warn+=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 > /dev/null)
		done
		if [ -z "$warn" ]; then
			tap_ok "$t: packaged man pages render without warnings"
		else
			tap_fail "$t: packaged man pages render without warnings" "$warn"
		fi
	fi
	[ "$LEG_SUITE" = host ] && leg_man_sync "$t" "$ibprep"
	if out=$(in_chroot "$ibprep" --help 2>&1) && grep -q check <<< "$out"; then
		tap_ok "$t: packaged ibprep runs"
	else
		tap_fail "$t: packaged ibprep runs" "$out"
	fi
	# The plugin was built for where the package puts things: its default
	# test helper is the packaged ibprep, its test user the one postinst makes.
	if [ -n "$LEG_PLUGIN" ]; then
		local so=$LEG_BASE/pkgroot$LEG_PLUGIN
		[ "$LEG_SUITE" = host ] || so=$(matrix_chroot_dir "$LEG_SUITE")$LEG_PLUGIN
		if grep -aqx -e /usr/bin/ibprep <(tr -c '[:print:]' '\n' < "$so") &&
			grep -aqx -e _spank-ib <(tr -c '[:print:]' '\n' < "$so"); then
			tap_ok "$t: the packaged plugin's test helper is /usr/bin/ibprep, its test user _spank-ib"
		else
			tap_fail "$t: the packaged plugin's test helper is /usr/bin/ibprep, its test user _spank-ib" \
				"$(tr -c '[:print:]' '\n' < "$so" | grep -a -e 'bin/ibprep' -e spank-ib | head -3)"
		fi
	fi
	if [ "$LEG_SUITE" = host ]; then
		# Debian's own checks of the package (lintian runs on the host's release)
		if command -v lintian > /dev/null; then
			out=$(lintian --pedantic -I "$LEG_DEB" 2> /dev/null)
			if ! grep -qE '^[EW]: ' <<< "$out"; then
				tap_ok "$t: lintian --pedantic: no error or warning ($(grep -cE '^[IPX]: ' <<< "$out") info or pedantic)"
			else
				tap_fail "$t: lintian: no error or warning" "$(grep -E '^[EW]: ' <<< "$out")"
			fi
		else
			tap_skip "$t: lintian" "lintian is not installed (contrib/install-deps.sh)"
		fi
	else
		out=$(in_chroot getent passwd _spank-ib)
		case "$out" in
		_spank-ib:*:/nonexistent:/usr/sbin/nologin) tap_ok "$t: dpkg -i created the test's system user ($out)" ;;
		*) tap_fail "$t: dpkg -i created the test's system user _spank-ib" "getent passwd: '$out'" ;;
		esac
	fi
}

# Purging leaves nothing behind (and the cached chroot clean for the next run).
leg_purge()
{
	local t=$1 out left="" f
	local files
	files=$(pkg_files)
	if ! out=$(in_chroot dpkg --purge spank-ib 2>&1); then
		tap_fail "$t: dpkg --purge spank-ib" "$out"
		return
	fi
	for f in $files; do
		[ -e "$(matrix_chroot_dir "$LEG_SUITE")$f" ] && [ ! -d "$(matrix_chroot_dir "$LEG_SUITE")$f" ] &&
			left+="$f "
	done
	chk "$t: dpkg --purge spank-ib leaves no file behind" "" "$left"
}

# The probe plugin: each SPANK failure-semantics expectation, seen for real.
leg_probe()
{
	local t=$1 v=$LEG_VERSION probe=$LEG_BASE/spank_probe.so out rc
	if ! out=$(in_chroot gcc -Wall -shared -fPIC -o "$probe" \
		"$LEG_BASE/src/tests/matrix/probe/spank_probe.c" 2>&1); then
		tap_fail "$t: probe plugin builds against this spank.h" "$out"
		return 1
	fi
	cluster_plugstack "required $probe fail=user_init node=n2"
	out=$(cl_srun -N2 -w n1,n2 true 2>&1)
	rc=$?
	chk "$t: user_init fails on n2: srun -N2 true exits $(ibp_expect user_init_fail_srun_rc "$v")" \
		"$(ibp_expect user_init_fail_srun_rc "$v")" "$rc" "$out"
	local named=no
	grep -q 'slurmstepd-n2' <<< "$out" && named=yes
	grep -m1 'spank_probe' <<< "$out" | sed 's/^/# what the user sees: /'
	chk "$t: slurmstepd's message prefix names the node: $(ibp_expect stepd_prefix_names_node "$v")" \
		"$(ibp_expect stepd_prefix_names_node "$v")" "$named" "$out"
	cluster_plugstack "required $probe fail=task_init node=n2"
	out=$(cl_srun -N2 -w n1,n2 true 2>&1)
	rc=$?
	chk "$t: task_init fails on n2: srun -N2 true exits $(ibp_expect task_init_fail_srun_rc "$v")" \
		"$(ibp_expect task_init_fail_srun_rc "$v")" "$rc" "$out"
	cluster_plugstack "required $probe fail=init node=n2"
	out=$(cl_srun -N2 -w n1,n2 true 2>&1)
	rc=$?
	local says
	says=$(ibp_expect init_fail_srun_says "$v")
	chk "$t: init fails in slurmstepd on n2: srun says \"$says\"" \
		yes "$(grep -qF "$says" <<< "$out" && echo yes || echo no)" "$out"
	chk "$t: init fails in slurmstepd on n2: srun exits $(ibp_expect init_fail_srun_exit "$v")" \
		"$(ibp_expect init_fail_srun_exit "$v")" "$([ "$rc" -ne 0 ] && echo non-zero || echo 0)" "$out"
	cluster_plugstack "optional $probe fail=task_init node=n2"
	out=$(cl_srun -N2 -w n1,n2 true 2>&1)
	chk "$t: an optional plugin's task_init fails on n2: srun exits $(ibp_expect optional_fail_srun_rc "$v")" \
		"$(ibp_expect optional_fail_srun_rc "$v")" "$?" "$out"
	leg_probe_batch "$t" "$probe"
	cluster_plugstack "required $LEG_BASE/no-such-plugin.so"
	out=$(cl_srun -N1 true 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		tap_ok "$t: a required plugin that is missing fails the step (exit $rc)"
	else
		tap_fail "$t: a required plugin that is missing fails the step" "$out"
	fi
	cluster_plugstack
	out=$(cl_srun -N2 true 2>&1)
	chk "$t: srun -N2 true with an empty plugstack" 0 "$?" "$out"
}

# A batch job whose batch host fails user_init: COMPLETED or requeued, and
# the node drained, on every release.
leg_probe_batch()
{
	local t=$1 probe=$2 v=$LEG_VERSION job state restarts i seen node
	cluster_plugstack "required $probe fail=user_init node=n1"
	job=$(cl_sbatch --parsable -N1 -w n1 -o /dev/null --wrap true 2>&1)
	if ! [[ "$job" =~ ^[0-9]+$ ]]; then
		tap_fail "$t: user_init fails on a batch host" "sbatch: $job"
		return
	fi
	for i in $(seq 1 100); do
		state=$(cl_scontrol show job "$job" -o 2> /dev/null | grep -o 'JobState=[^ ]*' | cut -d= -f2)
		restarts=$(cl_scontrol show job "$job" -o 2> /dev/null | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
		node=$(cluster_node_state n1)
		case "$state" in
		COMPLETED | FAILED) [[ "$node" == *DRAIN* ]] && break ;;
		PENDING) [ "${restarts:-0}" -ge 1 ] && [[ "$node" == *DRAIN* ]] && break ;;
		esac
		sleep 0.1
	done
	seen=$state
	[ "$state" = PENDING ] && [ "${restarts:-0}" -ge 1 ] && seen=REQUEUED
	[[ "$node" == *DRAIN* ]] || seen="$seen, n1 not drained ($node)"
	chk "$t: user_init fails on the batch host: job $(ibp_expect user_init_fail_batch_state "$v"), node drained" \
		"$(ibp_expect user_init_fail_batch_state "$v")" "$seen" "reason: $(cluster_node_reason n1)"
	cl_scancel "$job" 2> /dev/null
	cluster_plugstack
	cluster_resume_all > /dev/null 2>&1
}

# The packaged plugin loads in this release's srun, by the relative name the
# packaged snippet uses (looked up in PluginDir) where it is installed.
leg_plugin_loads()
{
	local t=$1 line out
	if [ -z "$LEG_PLUGIN" ]; then
		tap_skip "$t: packaged plugin loads" "spank_ib.so is not built: no slurm_spank_* in spank/*.c yet"
		return 0
	fi
	if [ "$LEG_SUITE" = host ]; then
		line="required $LEG_BASE/pkgroot$LEG_PLUGIN"
	else
		line="required spank_ib.so"
	fi
	cluster_plugstack "$line"
	line=${line/$LEG_BASE\/pkgroot/(unpacked .deb)}
	out=$(cl_srun --help 2>&1)
	if grep -q -- '--ib-check' <<< "$out"; then
		tap_ok "$t: packaged plugin loads ($line): srun --help lists --ib-check"
		local missing
		# shellcheck disable=SC2046
		missing=$(man_missing "$SRC/man/spank_ib.8" $(grep -oE -- '--ib-[a-z]+' <<< "$out" | sort -u))
		chk "$t: spank_ib(8) documents every --ib-* option srun --help lists" "" "$missing"
	else
		tap_fail "$t: packaged plugin loads ($line): srun --help lists --ib-check" \
			"$(tail -n 15 <<< "$out")"
	fi
	out=$(cl_srun -N2 true 2>&1)
	chk "$t: srun -N2 true with the plugin loaded and no --ib flag" 0 "$?" "$out"
	cluster_plugstack
}

# The plugin's own integration suites, against the installed package.
leg_integration()
{
	local t=$1 suite name line rc log
	if [ "$LEG_SUITE" = host ]; then
		tap_skip "$t: plugin integration suites" "make check-integration runs them on the host release"
		return 0
	fi
	if [ -z "$LEG_PLUGIN" ]; then
		tap_skip "$t: plugin integration suites" "spank_ib.so is not built: no slurm_spank_* in spank/*.c yet"
		return 0
	fi
	# The installed plugin at one path that is the same file on the host
	# (where the suites check it exists) and in the chroot (where slurmstepd
	# loads it): bind-mounted on both sides.
	local so=$LEG_BASE/spank_ib.so side
	for side in "$so" "$(matrix_chroot_dir "$LEG_SUITE")$so"; do
		: > "$side"
		if ! mount --bind "$(matrix_chroot_dir "$LEG_SUITE")$LEG_PLUGIN" "$side"; then
			tap_fail "$t: bind-mount the installed plugin for the suites"
			return 1
		fi
		MATRIX_MOUNTS+=("$side")
	done
	local found=0
	for suite in tests/integration/test_*.sh; do
		[ -f "$suite" ] || continue
		# Only the suites that drive the Slurm cluster: the others test
		# ibprep or the library on the host, whatever the Slurm release.
		grep -q 'lib/cluster.sh' "$suite" || continue
		name=$(basename "$suite" .sh)
		[[ "$name" =~ ${IBP_MATRIX_SUITE_FILTER:-.} ]] || continue
		found=1
		# The suites' second user is created where the release's daemons
		# look it up (the chroot: CL_CLIENT_PREFIX), their daemons start
		# with CL_DAEMON_PREFIX; a suite that cannot may be left to the
		# host's release (check-integration runs it there).
		if [[ " ${IBP_MATRIX_HOST_ONLY:-} " == *" $name "* ]]; then
			tap_skip "$t: $name" "IBP_MATRIX_HOST_ONLY: check-integration runs it on the host release"
			continue
		fi
		log=$LEG_BASE/$name.tap
		SPANK_IB_SO=$so IBP_SLURM_VERSION=$LEG_VERSION \
			bash "$suite" > "$log" 2>&1
		rc=$?
		local n=0 bad=0
		while IFS= read -r line; do
			case "$line" in
			"ok "*"# SKIP"* | "ok "*"# skip"*)
				n=$((n + 1))
				tap_skip "$t: $name: $(sed -E 's/^ok [0-9]+ - //; s/ # (SKIP|skip).*//' <<< "$line")" \
					"$(sed -E 's/.*# (SKIP|skip) ?//' <<< "$line")"
				;;
			"ok "*)
				n=$((n + 1))
				tap_ok "$t: $name: $(sed -E 's/^ok [0-9]+ - //' <<< "$line")"
				;;
			"not ok"*)
				n=$((n + 1)) bad=1
				tap_fail "$t: $name: $(sed -E 's/^not ok [0-9]+ - //' <<< "$line")" \
					"$(awk -v l="$line" 'f && /^#/ { print; next } { f = ($0 == l) }' "$log" | head -n 15)"
				;;
			esac
		done < "$log"
		if [ "$n" -eq 0 ]; then
			tap_fail "$t: $name reported no test" "$(tail -n 20 "$log")"
		elif [ "$rc" -ne 0 ] && [ "$bad" = 0 ]; then
			tap_fail "$t: $name exited $rc without reporting a failure" "$(tail -n 20 "$log")"
		fi
	done
	[ "$found" = 1 ] || tap_skip "$t: plugin integration suites" "no tests/integration/test_*.sh uses the cluster yet"
}

leg()
{
	LEG_SUITE=$1
	local status=$2 reason=$3 root t v hdr
	if [ "$status" != ok ]; then
		if [[ " $OPTIONAL " == *" $LEG_SUITE "* ]]; then
			tap_skip "$LEG_SUITE: chroot" "cannot be built today: $reason"
		else
			tap_fail "$LEG_SUITE: chroot" "$reason"
		fi
		return
	fi
	# One session per chroot at a time (another matrix run may be going).
	if [ "$LEG_SUITE" != host ] && ! matrix_chroot_lock "$LEG_SUITE"; then
		tap_fail "$LEG_SUITE: chroot lock" "$IBP_MATRIX_CACHE/$LEG_SUITE.lock still held after ${IBP_MATRIX_LOCK_WAIT:-900} s"
		return
	fi
	LEG_BASE=$(mktemp -d "/tmp/spank-ib-matrix.$LEG_SUITE.XXXXXX")
	chmod 0755 "$LEG_BASE"
	if [ "$LEG_SUITE" = host ]; then
		root=
	else
		root=$(matrix_chroot_dir "$LEG_SUITE")
		if ! matrix_chroot_enter "$LEG_SUITE" "$LEG_BASE"; then
			tap_fail "$LEG_SUITE: bind mounts into the chroot"
			leg_cleanup
			return
		fi
		# The login node's own name, for srun and sbatch inside the chroot.
		{
			cat "$root/etc/hosts"
			printf '127.0.1.1\t%s\n' "$(hostname)"
		} > "$LEG_BASE/.chroot-$LEG_SUITE/hosts"
		mount --bind "$LEG_BASE/.chroot-$LEG_SUITE/hosts" "$root/etc/hosts" &&
			MATRIX_MOUNTS+=("$root/etc/hosts")
	fi

	if ! LEG_VERSION=$(ibp_slurm_version in_chroot); then
		tap_fail "$LEG_SUITE: slurmd -V" "$(in_chroot slurmd -V 2>&1)"
		leg_cleanup
		return
	fi
	v=$LEG_VERSION
	t="slurm $v ($LEG_SUITE)"
	hdr=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' \
		"$root/usr/include/slurm/slurm_version.h" 2> /dev/null)
	[[ "$hdr" =~ ^0x[0-9a-fA-F]+$ ]] &&
		hdr=$(printf '%d.%02d.%d' $(((hdr >> 16) & 0xff)) $(((hdr >> 8) & 0xff)) $((hdr & 0xff)))
	chk "$t: spank.h of libslurm-dev is the same release as slurmd -V" "$v" "$hdr"

	# Slurm's own behaviour is proven even when the project does not build.
	local have_pkg=0
	LEG_PLUGIN=
	leg_build "$t" && leg_install "$t" && have_pkg=1
	# The cluster: this release's daemons and clients from the chroot.
	if [ -n "$root" ]; then
		local mntns
		mntns=$(readlink /proc/self/ns/mnt)
		export CL_DAEMON_PREFIX="$SRC/tests/matrix/lib/in-chroot.sh --daemon=$mntns $root"
		export CL_CLIENT_PREFIX="$SRC/tests/matrix/lib/in-chroot.sh $root"
	else
		export CL_DAEMON_PREFIX='' CL_CLIENT_PREFIX=
	fi
	export CL_BASEDIR=$LEG_BASE
	if [ "$(ibp_expect has_none_plugins "$v")" = no ]; then
		export CL_NO_CGROUP=1
	else
		export CL_NO_CGROUP=0
	fi
	. tests/integration/lib/cluster.sh
	LEG_CLUSTER=1
	local start=$SECONDS
	if cluster_start 2 2> "$LEG_BASE/cluster.err"; then
		leg_traps
		tap_ok "$t: cluster of 2 nodes with this release's munge, slurmctld, slurmd ($((SECONDS - start)) s)"
		leg_probe "$t"
		[ "$have_pkg" = 1 ] && leg_plugin_loads "$t"
	else
		leg_traps
		tap_fail "$t: cluster starts" "$(tail -n 20 "$LEG_BASE/cluster.err")"
	fi
	cluster_stop
	LEG_CLUSTER=0
	if [ "$have_pkg" = 1 ]; then
		leg_integration "$t"
		[ "$LEG_SUITE" != host ] && leg_purge "$t"
	else
		tap_skip "$t: packaged plugin and integration suites" "no package: make deb failed above"
	fi
	unset CL_DAEMON_PREFIX CL_CLIENT_PREFIX CL_BASEDIR CL_NO_CGROUP
	leg_cleanup
}

# The chroots are built (or found) in the background while the host leg runs.
start=$SECONDS
chroots=$(tr ' ' '\n' <<< "$SUITES" | grep -vx host | tr '\n' ' ')
built_file=$(mktemp /tmp/spank-ib-matrix.built.XXXXXX)
# shellcheck disable=SC2086
matrix_chroot_build_all $chroots > "$built_file" &
build_pid=$!
[[ " $SUITES " == *" host "* ]] && leg host ok ""
wait "$build_pid"
built=$(cat "$built_file")
rm -f "$built_file"
echo "# chroots ready after $((SECONDS - start)) s: $(tr '\n' ';' <<< "$built")"
for s in $chroots; do
	line=$(grep "^$s " <<< "$built")
	status=$(awk '{ print $2 }' <<< "$line")
	leg "$s" "${status:-failed}" "$(cut -d' ' -f3- <<< "$line")"
done
tap_done
