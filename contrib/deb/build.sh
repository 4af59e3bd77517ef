#!/usr/bin/env bash
# build.sh [BUILDDIR]: builds the Debian package of spank-ib (ibprep, the
# spank_ib.so plugin, the plugstack.conf.d snippet, the man pages, the NHC
# check, the textfile timer's systemd units) for the
# Debian and Slurm release it runs on; `make deb` calls it after `make all`.
#
# Why a staged `make install DESTDIR=` plus `dpkg-deb --build`, not a
# debian/ directory and dpkg-buildpackage: the package must build unchanged
# in chroots of three Debian releases and in a plain checkout (no source
# package, no debhelper compat level to keep in step with each release), and
# the Makefile's install target is then the one place that says where files
# go.  What dpkg-buildpackage would add is done here explicitly: Depends from
# dpkg-shlibdeps, the Slurm release the plugin was compiled against, the
# conffile list, compressed man pages, stripped binaries, a copyright file.
#
# Environment: IBP_DEB_VERSION overrides the version (default the Makefile's
# VERSION, which `make deb` passes as IBP_VERSION, plus
# ~git<date>.<hash> in a git checkout, plus +slurm<major>.<minor> when the
# plugin is in the package); DEBFULLNAME/DEBEMAIL the Maintainer field.
set -eu
cd "$(dirname "$0")/../.."
B=${1:-build}
out="$B/deb"
# Staged outside $B: the Makefile includes every *.d under $B as a
# dependency file, and plugstack.conf.d is a directory.
work=$(mktemp -d "${TMPDIR:-/tmp}/spank-ib-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/stage"
multiarch=$(${CC:-gcc} -print-multiarch)
arch=$(dpkg --print-architecture)
plugindir=/usr/lib/$multiarch/slurm-wlm

[ -x "$B/ibprep" ] || { echo "deb: $B/ibprep is not built; run make first" >&2; exit 1; }
mkdir -p "$stage/DEBIAN" "$out"
make --no-print-directory -s B="$B" install DESTDIR="$stage" PREFIX=/usr \
	MANDIR=/usr/share/man SLURM_PLUGINDIR="$plugindir" SLURM_CONFDIR=/etc/slurm

bins=("$stage/usr/bin/ibprep")
plugin="$stage$plugindir/spank_ib.so"
[ -f "$plugin" ] && bins+=("$plugin")
for f in "${bins[@]}"; do
	strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
done
find "$stage/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} + 2>/dev/null || true
doc="$stage/usr/share/doc/spank-ib"
mkdir -p "$doc"
cat > "$doc/copyright" <<-'COPYRIGHT'
	Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
	Upstream-Name: spank-ib

	Files: *
	Copyright: the spank-ib authors
	License: GPL-2+
	 This program is free software; you can redistribute it and/or modify it
	 under the terms of the GNU General Public License as published by the
	 Free Software Foundation; either version 2 of the License, or (at your
	 option) any later version.
	 .
	 On Debian systems, the full text of the GNU General Public License
	 version 2 can be found in the file `/usr/share/common-licenses/GPL-2'.
COPYRIGHT

# Version: the plugin is loaded only by the Slurm release whose spank.h it
# was compiled against (Slurm compares plugin_version), so the package says
# which one, in its version and in Depends.
version=${IBP_DEB_VERSION:-}
if [ -z "$version" ]; then
	version=${IBP_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
	[ -n "$version" ] || { echo "deb: no VERSION in the Makefile" >&2; exit 1; }
	if git rev-parse --git-dir > /dev/null 2>&1; then
		version="$version~git$(git log -1 --format=%cd --date=format:%Y%m%d).$(git rev-parse --short=7 HEAD)"
	fi
fi
depends_extra=""
if [ -f "$plugin" ]; then
	# SLURM_VERSION_NUMBER is 0xMMmmuu; the MAJOR/MINOR macros take it
	# as an argument, so read the number itself.
	hdr=/usr/include/slurm/slurm_version.h
	num=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' "$hdr" 2>/dev/null)
	if ! [[ "$num" =~ ^0x[0-9a-fA-F]+$ ]]; then
		echo "deb: cannot read SLURM_VERSION_NUMBER from $hdr (is libslurm-dev installed?)" >&2
		exit 1
	fi
	major=$(((num >> 16) & 0xff)) minor=$(((num >> 8) & 0xff))
	rel=$(printf '%d.%02d' "$major" "$minor")
	next=$(printf '%d.%02d' "$major" $((minor + 1)))
	case "$version" in *+slurm*) ;; *) version="$version+slurm$rel" ;; esac
	# slurm-wlm-basic-plugins owns the plugin directory; slurmd and
	# slurm-client both depend on exactly one version of it.
	depends_extra="slurm-wlm-basic-plugins (>= $rel), slurm-wlm-basic-plugins (<< $next~)"
fi

# dpkg-shlibdeps reads debian/control from its working directory.
shl="$work/shlibdeps"
mkdir -p "$shl/debian"
printf 'Source: spank-ib\n\nPackage: spank-ib\nArchitecture: any\n' > "$shl/debian/control"
abs=()
for f in "${bins[@]}"; do abs+=("-e$f"); done
if ! shlibs=$(cd "$shl" && dpkg-shlibdeps -O "${abs[@]}" 2> warnings); then
	echo "deb: dpkg-shlibdeps failed:" >&2
	cat "$shl/warnings" >&2
	exit 1
fi
shlibs=$(sed -n 's/^shlibs:Depends=//p' <<< "$shlibs")
[ -n "$shlibs" ] || { echo "deb: dpkg-shlibdeps gave no dependencies" >&2; exit 1; }
depends="$shlibs${depends_extra:+, $depends_extra}"

# The snippet is a conffile, and it ships with every plugin line commented
# out: plugstack.conf is re-read for every step, so a package installed on
# the login nodes before the compute nodes would otherwise enable a plugin
# that slurmstepd there cannot load yet (a `required` one fails every step).
conf=/etc/slurm/plugstack.conf.d/spank_ib.conf
if [ -f "$stage$conf" ]; then
	{
		echo "# Packaged with the plugin line(s) commented out: uncomment them once this"
		echo "# package is installed on every node and login host of the cluster."
		sed -E 's/^([[:space:]]*(required|optional)[[:space:]])/#\1/' "$stage$conf"
	} > "$work/conf"
	cat "$work/conf" > "$stage$conf"
fi
# Every file under /etc is a conffile (the snippet, the NHC check).
(cd "$stage" && find etc -type f 2> /dev/null | sed 's|^|/|' | sort) > "$work/conffiles"
[ -s "$work/conffiles" ] && cp "$work/conffiles" "$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<-CONTROL
	Package: spank-ib
	Version: $version
	Architecture: $arch
	Maintainer: ${DEBFULLNAME:-spank-ib developers} <${DEBEMAIL:-root@localhost}>
	Installed-Size: $size
	Depends: $depends
	Section: admin
	Priority: optional
	Description: InfiniBand/RoCE readiness checks and placement for Slurm GPU jobs
	 spank_ib.so, a Slurm SPANK plugin, adds --ib-* options to srun, sbatch and
	 salloc: before the user's program starts it checks the node's HCAs and
	 links, places each task on its GPU, HCA port, CPUs and memory node, sets
	 the NCCL/UCX/MPI environment, runs a bounded cross-node sanity test, and
	 fails bad nodes with a message naming node, device, port and fix.
	 .
	 ibprep is the same checks and placement as a command, usable without
	 Slurm.  The plugin is enabled by editing
	 /etc/slurm/plugstack.conf.d/spank_ib.conf.
CONTROL
deb="$out/spank-ib_${version}_${arch}.deb"
rm -f "$out"/*.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" > /dev/null
echo "$deb"
