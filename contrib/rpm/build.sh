#!/usr/bin/env bash
# build.sh [BUILDDIR]: builds the RPM of spank-ib from contrib/rpm/spank-ib.spec
# (`make rpm` calls it).  A tarball of this tree (without build/ and .git)
# is the Source0; rpmbuild works under BUILDDIR/rpm, and the binary and
# source RPMs land in BUILDDIR/rpm/RPMS/<arch>/ and BUILDDIR/rpm/SRPMS/.
#
# On RHEL (rpm -q slurm-devel works) this is a real build.  Anywhere else
# (Debian) it is a layout check: rpmbuild --nodeps against the host's
# libraries and Slurm headers, without debuginfo packages.  Sites build the
# real package with mock or koji on their RHEL release (docs/packaging.md).
#
# Environment: IBP_VERSION (default: the Makefile's VERSION), RPM_PACKAGER
# (the Packager tag).
set -eu
cd "$(dirname "$0")/../.."
B=${1:-build}
top=$(mkdir -p "$B/rpm" && cd "$B/rpm" && pwd)
version=${IBP_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
[ -n "$version" ] || { echo "rpm: no VERSION in the Makefile" >&2; exit 1; }
command -v rpmbuild >/dev/null || { echo "rpm: rpmbuild is not installed (rpm package)" >&2; exit 1; }

rm -rf "$top"/{BUILD,BUILDROOT,RPMS,SRPMS,SOURCES,SPECS}
mkdir -p "$top"/{BUILD,RPMS,SRPMS,SOURCES,SPECS}
tar -czf "$top/SOURCES/spank-ib-$version.tar.gz" --exclude=./build --exclude="./$B" \
	--exclude=./.git --exclude='*.o' --transform "s,^\.,spank-ib-$version," .
cp contrib/rpm/spank-ib.spec "$top/SPECS/"

args=(-ba --define "_topdir $top" --define "ibp_version $version"
	--define "packager ${RPM_PACKAGER:-spank-ib maintainers <maintainers@users.noreply.a-seed-a2c9115a.example>}")
if ! rpm -q slurm-devel >/dev/null 2>&1; then
	# not an RPM system: check the layout, skip what needs RHEL's toolchain
	# (Debian's /bin/sh is dash, and brp-compress needs bash)
	post="bash /usr/lib/rpm/brp-compress; /usr/lib/rpm/brp-strip /usr/bin/strip"
	args+=(--nodeps --define "debug_package %{nil}" --define "_build_id_links none"
		--define "__os_install_post $post")
fi
# a make calling us must not pass its B= and flags to the make inside rpmbuild
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES rpmbuild "${args[@]}" "$top/SPECS/spank-ib.spec" >"$top/rpmbuild.log" 2>&1 || {
	echo "rpm: rpmbuild failed; the end of $top/rpmbuild.log:" >&2
	tail -30 "$top/rpmbuild.log" >&2
	exit 1
}
find "$top/RPMS" "$top/SRPMS" -name '*.rpm' | sort
