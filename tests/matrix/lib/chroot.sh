#!/usr/bin/env bash
# chroot.sh: one debootstrap chroot per Debian release, for the Slurm release
# matrix.  Source it (functions below) or run it:
#
#   tests/matrix/lib/chroot.sh build SUITE...   build (or reuse) the chroots,
#                                               several suites in parallel
#   tests/matrix/lib/chroot.sh path SUITE       print the chroot's directory
#
# A chroot is reused when its stamp file is present and names the same
# package list; otherwise it is rebuilt from scratch.  The only network used
# is Debian's mirror from the host's apt configuration.  Inside each chroot:
# the project's build dependencies (so `make` and `make deb` work there
# unchanged), Slurm's daemons and client, munge, a minimal /etc/hosts, a
# files-only nsswitch.conf and a resolv.conf that points at 127.0.0.1.
#
# Sessions (matrix_chroot_enter / matrix_chroot_leave) bind-mount /proc, /sys,
# /dev and the test's state directory at the same paths inside the chroot,
# and unmount them in reverse order.
#
# Environment:
#   IBP_MATRIX_CACHE   where chroots live (default /var/tmp/spank-ib-matrix)
#   IBP_MATRIX_MAX_AGE days before a chroot is rebuilt (default 7)
#   IBP_MATRIX_MIRROR  Debian mirror (default: the host's apt sources)

IBP_MATRIX_CACHE=${IBP_MATRIX_CACHE:-/var/tmp/spank-ib-matrix}

# What the chroot needs.  debootstrap gets the list known to resolve on every
# release (Slurm, munge, a compiler); apt inside the chroot then adds the
# project's build dependencies, because debootstrap's own resolver does not
# follow alternatives (trixie's libltdl-dev, pulled in by libhwloc-dev,
# leaves it stuck).  dpkg-dev, debhelper and build-essential (MATRIX_ADDED;
# dpkg-buildpackage checks for the last itself) build the package (make deb).
MATRIX_BASE=slurm-wlm,slurmctld,slurmd,slurm-client,munge,libslurm-dev,gcc,libc6-dev,iproute2
MATRIX_BUILD="make pkg-config libhwloc-dev libnuma-dev libibverbs-dev libmunge-dev libssl-dev dpkg-dev procps"
MATRIX_PACKAGES="$MATRIX_BASE $MATRIX_BUILD"
# Build dependencies added after a chroot's list was fixed: installed into a
# complete chroot that lacks them (apt, a few seconds) instead of rebuilding
# it, so the stamp above, and every cached chroot, stays valid.
MATRIX_ADDED="libsodium-dev debhelper build-essential"
MATRIX_STAMP=.spank-ib-chroot-complete

# The first http(s) mirror of Debian's main archive in the host's apt
# sources (deb822 or one-line format); no other network is ever used.
matrix_mirror()
{
	if [ -n "${IBP_MATRIX_MIRROR:-}" ]; then
		echo "$IBP_MATRIX_MIRROR"
		return 0
	fi
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
		[ -n "$uri" ] && { echo "$uri"; return 0; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' "$f")
		[ -n "$uri" ] && { echo "$uri"; return 0; }
	done
	return 1
}

matrix_chroot_dir() { echo "$IBP_MATRIX_CACHE/$1"; }

# matrix_chroot_ready SUITE: 0 when the chroot is complete for this package list.
matrix_chroot_ready()
{
	local dir
	dir=$(matrix_chroot_dir "$1")
	[ -f "$dir/$MATRIX_STAMP" ] && [ "$(cat "$dir/$MATRIX_STAMP")" = "$MATRIX_PACKAGES" ]
}

# Files that keep every name lookup on this machine.
matrix_chroot_write_netfiles()
{
	local root=$1
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
	cat > "$root/etc/nsswitch.conf" <<-'EOF'
		# spank-ib matrix chroot: files only, nothing can reach a resolver
		passwd:         files
		group:          files
		shadow:         files
		hosts:          files
		networks:       files
		protocols:      files
		services:       files
		ethers:         files
		rpc:            files
	EOF
	rm -f "$root/etc/resolv.conf"
	echo 'nameserver 127.0.0.1' > "$root/etc/resolv.conf"
}

# matrix_chroot_lock SUITE: hold SUITE's lock (an flock on
# $IBP_MATRIX_CACHE/SUITE.lock) until the calling shell exits or calls
# matrix_chroot_unlock; waits at most IBP_MATRIX_LOCK_WAIT seconds (900).
# One build or one test session per chroot at a time, across processes.
MATRIX_LOCK_FD=
matrix_chroot_lock()
{
	mkdir -p "$IBP_MATRIX_CACHE"
	exec {MATRIX_LOCK_FD}> "$IBP_MATRIX_CACHE/$1.lock" || return 1
	if ! flock -w "${IBP_MATRIX_LOCK_WAIT:-900}" "$MATRIX_LOCK_FD"; then
		exec {MATRIX_LOCK_FD}>&-
		MATRIX_LOCK_FD=
		return 1
	fi
}
matrix_chroot_unlock()
{
	[ -n "$MATRIX_LOCK_FD" ] || return 0
	exec {MATRIX_LOCK_FD}>&-
	MATRIX_LOCK_FD=
}

# matrix_chroot_build SUITE: build the chroot unless it is complete.  On
# failure the reason (the last lines of debootstrap's log) is in
# $IBP_MATRIX_CACHE/SUITE.reason and the function returns 1.
matrix_chroot_build()
{
	if ! matrix_chroot_lock "$1"; then
		echo "another process holds $IBP_MATRIX_CACHE/$1.lock" > "$IBP_MATRIX_CACHE/$1.reason"
		return 1
	fi
	matrix_chroot_build_locked "$1"
	local rc=$?
	matrix_chroot_unlock
	return $rc
}

matrix_chroot_build_locked()
{
	local suite=$1 dir tmp log mirror
	dir=$(matrix_chroot_dir "$suite")
	log="$IBP_MATRIX_CACHE/$suite.log"
	mkdir -p "$IBP_MATRIX_CACHE"
	rm -f "$IBP_MATRIX_CACHE/$suite.reason"
	# A chroot is refreshed after IBP_MATRIX_MAX_AGE days (sid moves daily);
	# the old one stays in use until a new one is complete.
	if matrix_chroot_ready "$suite" &&
		[ -z "$(find "$dir/$MATRIX_STAMP" -mtime +"${IBP_MATRIX_MAX_AGE:-7}" 2> /dev/null)" ]; then
		matrix_chroot_added "$suite" "$dir" "$log" && return 0
		# could not add them: rebuild from nothing below
	fi
	if ! mirror=$(matrix_mirror); then
		echo "no Debian mirror in the host's apt sources" > "$IBP_MATRIX_CACHE/$suite.reason"
		return 1
	fi
	if matrix_chroot_mounted "$dir"; then
		echo "$dir has mounts on it (a session still running?); not rebuilding" \
			> "$IBP_MATRIX_CACHE/$suite.reason"
		return 1
	fi
	tmp="$dir.tmp"
	matrix_chroot_umount_all "$tmp"
	matrix_rm_tree "$tmp" || return 1
	mkdir -p "$tmp"
	# minbase plus the list; the maintainer scripts' attempts to start the
	# daemons are refused by policy-rc.d-less invoke-rc.d without an init.
	if ! debootstrap --variant=minbase --include="$MATRIX_BASE" \
		"$suite" "$tmp" "$mirror" > "$log" 2>&1 ||
		! matrix_chroot_apt "$tmp" >> "$log" 2>&1; then
		[ -f "$tmp/debootstrap/debootstrap.log" ] &&
			tail -n 30 "$tmp/debootstrap/debootstrap.log" >> "$log"
		{
			echo "building the $suite chroot from $mirror failed (log: $log):"
			grep -E '^(E|W):' "$log" | sort -u | tail -n 3
		} > "$IBP_MATRIX_CACHE/$suite.reason"
		matrix_chroot_umount_all "$tmp"
		matrix_rm_tree "$tmp"
		if matrix_chroot_ready "$suite"; then
			echo "refreshing the $suite chroot failed; the one of $(date -r "$dir/$MATRIX_STAMP" +%F) stays in use" >&2
			rm -f "$IBP_MATRIX_CACHE/$suite.reason"
			return 0
		fi
		return 1
	fi
	matrix_chroot_umount_all "$tmp"
	matrix_chroot_write_netfiles "$tmp"
	# apt caches are not needed afterwards: ~100 MB per chroot
	rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*_Packages
	matrix_rm_tree "$dir" || return 1
	mv "$tmp" "$dir"
	echo "$MATRIX_PACKAGES" > "$dir/$MATRIX_STAMP"
}

# matrix_chroot_added SUITE DIR LOG: MATRIX_ADDED's packages present in the
# complete chroot DIR (installed when missing).  1 when apt failed.
matrix_chroot_added()
{
	local suite=$1 dir=$2 log=$3 p missing=()
	for p in $MATRIX_ADDED; do
		chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "adding ${missing[*]} to the $suite chroot" >&2
	# apt reaches the mirror with the host's resolver for this one call;
	# the chroot's files-only name service is written back right after.
	rm -f "$dir/etc/resolv.conf"
	cp /etc/resolv.conf /etc/nsswitch.conf "$dir/etc/" 2> /dev/null
	MATRIX_APT_PACKAGES="${missing[*]}" matrix_chroot_apt "$dir" >> "$log" 2>&1 || {
		matrix_chroot_write_netfiles "$dir"
		echo "adding ${missing[*]} to the $suite chroot failed (log: $log)" >&2
		return 1
	}
	matrix_chroot_write_netfiles "$dir"
	rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*_Packages
}

# The build dependencies, with apt inside the new chroot (name lookups still
# use the host's resolv.conf, copied by debootstrap, to reach the mirror).
# No daemon may start: policy-rc.d says so to the maintainer scripts.
matrix_chroot_apt()
{
	local root=$1 rc=0
	printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	mount --bind /proc "$root/proc" || return 1
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		sh -c "apt-get -q -o Acquire::Check-Valid-Until=false update &&
			apt-get -q -y --no-install-recommends install ${MATRIX_APT_PACKAGES:-$MATRIX_BUILD $MATRIX_ADDED} &&
			apt-get clean" || rc=1
	umount "$root/proc"
	return $rc
}

# Mount points at or below DIR, deepest first.
matrix_chroot_mounts_below()
{
	local dir
	dir=$(realpath -m "$1")
	awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}
matrix_chroot_mounted() { [ -n "$(matrix_chroot_mounts_below "$1")" ]; }

# matrix_rm_tree DIR: rm -rf DIR, but never while anything is mounted below
# it: a /dev or /sys still bound there would be emptied on the host.
matrix_rm_tree()
{
	[ -e "$1" ] || return 0
	if matrix_chroot_mounted "$1"; then
		echo "not removing $1: still mounted below it: $(matrix_chroot_mounts_below "$1" | tr '\n' ' ')" >&2
		return 1
	fi
	rm -rf --one-file-system "$1"
}

# debootstrap can leave /proc or /sys mounted in a chroot it gave up on.
matrix_chroot_umount_all()
{
	local m
	for m in $(matrix_chroot_mounts_below "$1"); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
}

# matrix_chroot_enter SUITE STATEDIR: bind-mount /proc, /sys, /dev, STATEDIR
# and the name-service files into the chroot; records each mount in
# MATRIX_MOUNTS so matrix_chroot_leave can undo them in reverse order.  Call
# matrix_chroot_leave from an EXIT trap.
MATRIX_MOUNTS=()
matrix_chroot_enter()
{
	local suite=$1 state=$2 root src dst
	root=$(matrix_chroot_dir "$suite")
	mkdir -p "$root$state"
	mkdir -p "$state/.chroot-$suite"
	printf 'nameserver 127.0.0.1\n' > "$state/.chroot-$suite/resolv.conf"
	printf '%s:\tfiles\n' passwd group shadow hosts networks protocols services ethers rpc \
		> "$state/.chroot-$suite/nsswitch.conf"
	for src in /proc /sys /dev "$state"; do
		dst="$root$src"
		mkdir -p "$dst"
		mount --bind "$src" "$dst" || return 1
		MATRIX_MOUNTS+=("$dst")
	done
	# The chroot's own files could have been changed by a package install;
	# these read-only binds hold for the whole session whatever happens.
	for src in resolv.conf nsswitch.conf; do
		dst="$root/etc/$src"
		[ -f "$dst" ] || : > "$dst"
		mount --bind "$state/.chroot-$suite/$src" "$dst" || return 1
		mount -o remount,bind,ro "$dst" 2>/dev/null || true
		MATRIX_MOUNTS+=("$dst")
	done
}

matrix_chroot_leave()
{
	local i
	for ((i = ${#MATRIX_MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MATRIX_MOUNTS[i]}" 2>/dev/null || umount -l "${MATRIX_MOUNTS[i]}"
	done
	MATRIX_MOUNTS=()
}

# matrix_chroot_run SUITE CMD...: run CMD inside the chroot with a clean
# environment (SLURM_CONF and PATH only, plus whatever the caller puts in
# front with env NAME=VALUE).
matrix_chroot_run()
{
	local suite=$1
	shift
	chroot "$(matrix_chroot_dir "$suite")" /usr/bin/env -i \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

# matrix_chroot_build_all SUITE...: build in parallel; prints one line per
# suite, "SUITE ok DIR" or "SUITE failed REASON", and returns 0.
matrix_chroot_build_all()
{
	local suite pids=() i=0
	for suite in "$@"; do
		matrix_chroot_build "$suite" &
		pids+=($!)
	done
	for suite in "$@"; do
		if wait "${pids[i]}"; then
			echo "$suite ok $(matrix_chroot_dir "$suite")"
		else
			echo "$suite failed $(tr '\n' ' ' < "$IBP_MATRIX_CACHE/$suite.reason")"
		fi
		i=$((i + 1))
	done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	case "${1:-}" in
	build)
		shift
		matrix_chroot_build_all "$@"
		;;
	path)
		matrix_chroot_dir "$2"
		;;
	*)
		echo "usage: $0 build SUITE... | path SUITE" >&2
		exit 2
		;;
	esac
fi
