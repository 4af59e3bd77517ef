#!/usr/bin/env bash
# build.sh [BUILDDIR]: the Debian package of spank-ib for the Debian and
# Slurm release it runs on; `make deb` calls it.  Built the Debian way:
# debian/ (debhelper) and `dpkg-buildpackage -b`, on a copy of the tree
# whose debian/changelog gets one snapshot entry on top, so that every build
# of a commit has its own version and the work tree is left as it was.
# A packager may as well run `dpkg-buildpackage -b` in the tree itself: the
# same package, versioned by debian/changelog alone.
#
# Environment: IBP_DEB_VERSION overrides the version (default the Makefile's
# VERSION, which `make deb` passes as IBP_VERSION and debian/changelog's top
# entry names, plus +git<date>.<hash> in a git checkout (a snapshot after
# that entry), plus +slurm<major>.<minor>, the release the plugin is built
# for); DEBFULLNAME and DEBEMAIL the Maintainer and the snapshot entry's
# signature; IBP_DEB_JOBS the parallel jobs (2).  Prints the package's path.
set -eu
cd "$(dirname "$0")/../.."
B=${1:-build}
out="$B/deb"
work=$(mktemp -d "${TMPDIR:-/tmp}/spank-ib-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
for c in dpkg-buildpackage dh; do
	command -v "$c" > /dev/null ||
		{ echo "deb: $c is not installed (contrib/install-deps.sh: dpkg-dev, debhelper)" >&2; exit 1; }
done

# The plugin is loaded only by the Slurm release whose spank.h it was
# compiled against: the version says which (debian/rules pins Depends).
hdr=/usr/include/slurm/slurm_version.h
num=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' "$hdr" 2> /dev/null)
if ! [[ "$num" =~ ^0x[0-9a-fA-F]+$ ]]; then
	echo "deb: cannot read SLURM_VERSION_NUMBER from $hdr (is libslurm-dev installed?)" >&2
	exit 1
fi
rel=$(printf '%d.%02d' $(((num >> 16) & 0xff)) $(((num >> 8) & 0xff)))
version=${IBP_DEB_VERSION:-}
if [ -z "$version" ]; then
	version=${IBP_VERSION:-$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)}
	[ -n "$version" ] || { echo "deb: no VERSION in the Makefile" >&2; exit 1; }
	if git rev-parse --git-dir > /dev/null 2>&1; then
		version="$version+git$(git log -1 --format=%cd --date=format:%Y%m%d).$(git rev-parse --short=7 HEAD)"
	fi
fi
case "$version" in *+slurm*) ;; *) version="$version+slurm$rel" ;; esac
# A version dpkg would refuse, or one before debian/changelog's own entry.
top=$(dpkg-parsechangelog -l debian/changelog -S Version)
if ! dpkg --compare-versions "$version" ge "$top" 2> /dev/null; then
	echo "deb: version '$version' is not a valid one at or after debian/changelog's $top" >&2
	exit 1
fi

# The tree's files (tracked, and untracked but not ignored: what `make` sees),
# never the build directory.
src="$work/spank-ib"
mkdir -p "$src"
if git rev-parse --git-dir > /dev/null 2>&1; then
	git ls-files -z -co --exclude-standard | grep -zv '^build' |
		tar --null -T - -cf - 2> /dev/null | tar -C "$src" -xf -
else
	tar --exclude='./build*' -cf - . | tar -C "$src" -xf -
fi
[ -x "$src/debian/rules" ] || { echo "deb: no debian/rules in the tree" >&2; exit 1; }
who=$(sed -n 's/^Maintainer:[[:space:]]*//p' debian/control)
if [ -n "${DEBEMAIL:-}" ]; then
	who="${DEBFULLNAME:-spank-ib maintainers} <$DEBEMAIL>"
	sed -i "s|^Maintainer:.*|Maintainer: $who|" "$src/debian/control"
fi
{
	printf 'spank-ib (%s) unstable; urgency=medium\n\n' "$version"
	printf '  * Snapshot built by make deb for Slurm %s.\n\n' "$rel"
	printf ' -- %s  %s\n\n' "$who" "$(date -R)"
	cat debian/changelog
} > "$src/debian/changelog"

# A make calling us must not pass its B= and flags to the make inside.
if ! (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	DEB_BUILD_OPTIONS="parallel=${IBP_DEB_JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -b -us -uc) > "$work/build.log" 2>&1; then
	echo "deb: dpkg-buildpackage failed; the end of its log:" >&2
	tail -40 "$work/build.log" >&2
	exit 1
fi
grep -E '(^|: )warning:' "$work/build.log" >&2 || true
mkdir -p "$out"
rm -f "$out"/*.deb
arch=$(dpkg --print-architecture)
deb="spank-ib_${version}_${arch}.deb"
cp "$work/$deb" "$out/$deb"
echo "$out/$deb"
