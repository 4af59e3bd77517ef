#!/usr/bin/env bash
# test_rpm.sh: the RPM's layout, on Debian (a layout check: rpmbuild --nodeps
# against Debian's libraries; the real package is built on RHEL with mock or
# koji, docs/packaging.md).  contrib/rpm/build.sh builds the binary and
# source RPMs from a tarball of this tree; then: the file list in RHEL's
# places, the two %config(noreplace) files, Requires pinned to the Slurm
# release of slurm_version.h, the BuildRequires, the version from the
# Makefile, the snippet shipped commented out, and no rpmlint errors.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/tap.sh
for c in rpmbuild rpm rpmlint rpm2cpio cpio; do
	if ! command -v "$c" >/dev/null; then
		tap_skip "rpm layout" "$c is not installed (contrib/install-deps.sh installs rpm and rpmlint)"
		tap_done
		exit
	fi
done
if [ ! -f /usr/include/slurm/slurm_version.h ]; then
	tap_skip "rpm layout" "no Slurm headers (libslurm-dev): the plugin is not built"
	tap_done
	exit
fi
T=$(mktemp -d /tmp/test_rpm.XXXXXX)
trap 'rm -rf "$T"' EXIT

version=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)
if ! out=$(bash contrib/rpm/build.sh "$T/b" 2>&1); then
	tap_fail "make rpm builds the binary and source RPMs" "$out"
	tap_done
	exit
fi
bin=$(grep -E '/RPMS/.*\.rpm$' <<<"$out" | head -1)
src=$(grep -E '/SRPMS/.*\.src\.rpm$' <<<"$out" | head -1)
if [ -f "$bin" ] && [ -f "$src" ]; then
	tap_ok "make rpm builds $(basename "$bin") and $(basename "$src")"
else
	tap_fail "make rpm builds the binary and source RPMs" "$out"
	tap_done
	exit
fi

libdir=$(rpm --eval '%{_libdir}')
cat >"$T/want.files" <<EOF2
/etc/nhc
/etc/nhc/scripts
/etc/nhc/scripts/spank_ib.nhc
/etc/slurm/plugstack.conf.d
/etc/slurm/plugstack.conf.d/spank_ib.conf
/usr/bin/ibprep
/usr/lib/systemd/system/spank-ib-textfile.service
/usr/lib/systemd/system/spank-ib-textfile.timer
/usr/lib/sysusers.d/spank-ib.conf
$libdir/slurm/spank_ib.so
$(rpm --eval '%{_libexecdir}')/spank-ib-watch
/usr/sbin/spank-ib-healthcheck
/usr/share/doc/spank-ib-$version
/usr/share/doc/spank-ib-$version/README.md
/usr/share/licenses/spank-ib-$version
/usr/share/licenses/spank-ib-$version/LICENSE
/usr/share/man/man1/ibprep.1.gz
/usr/share/man/man5/spank_ib.conf.5.gz
/usr/share/man/man8/spank-ib-healthcheck.8.gz
/usr/share/man/man8/spank_ib.8.gz
EOF2
rpm -qlp "$bin" 2>/dev/null | sort >"$T/got.files"
if diff -u <(sort "$T/want.files") "$T/got.files" >"$T/diff"; then
	tap_ok "file list: plugin in %{_libdir}/slurm, ibprep in %{_bindir}, man pages, snippet, NHC check, units, sysusers.d"
else
	tap_fail "file list" "$(grep '^[-+]/' "$T/diff")"
fi

printf '%s\n' /etc/nhc/scripts/spank_ib.nhc /etc/slurm/plugstack.conf.d/spank_ib.conf >"$T/want.conf"
rpm -qp --configfiles "$bin" 2>/dev/null | sort >"$T/got.conf"
noreplace=$(rpm -qp --qf '[%{FILEFLAGS:fflags}|%{FILENAMES}\n]' "$bin" 2>/dev/null | awk -F'|' '$1 ~ /c/ && $1 ~ /n/ {print $2}' | sort)
if cmp -s "$T/want.conf" "$T/got.conf" && [ "$noreplace" = "$(cat "$T/want.conf")" ]; then
	tap_ok "the snippet and the NHC check are %config(noreplace)"
else
	tap_fail "the snippet and the NHC check are %config(noreplace)" "config: $(cat "$T/got.conf"); noreplace: $noreplace"
fi

num=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' /usr/include/slurm/slurm_version.h)
rel=$(printf '%d.%02d' $(((num >> 16) & 0xff)) $(((num >> 8) & 0xff)))
next=$(printf '%d.%02d' $(((num >> 16) & 0xff)) $((((num >> 8) & 0xff) + 1)))
req=$(rpm -qp --requires "$bin" 2>/dev/null)
if grep -qx "slurm >= $rel" <<<"$req" && grep -qx "slurm < $next~" <<<"$req"; then
	tap_ok "Requires pins Slurm $rel (slurm >= $rel, slurm < $next~)"
else
	tap_fail "Requires pins Slurm $rel" "$(grep -i slurm <<<"$req")"
fi
miss=""
for l in libhwloc libibverbs libnuma libmunge libsodium; do
	grep -q "^$l\.so" <<<"$req" || miss+=" $l"
done
if [ -z "$miss" ]; then tap_ok "Requires the libraries it links (from rpm's dependency generator)"; else
	tap_fail "Requires the libraries it links" "missing:$miss"; fi

breq=$(rpm -qp --requires "$src" 2>/dev/null)
miss=""
for p in slurm-devel rdma-core-devel hwloc-devel numactl-devel munge-devel libsodium-devel; do
	grep -q "^$p\b" <<<"$breq" || miss+=" $p"
done
if [ -z "$miss" ]; then tap_ok "BuildRequires: slurm-devel rdma-core-devel hwloc-devel numactl-devel munge-devel libsodium-devel"; else
	tap_fail "BuildRequires" "missing:$miss"; fi

got=$(rpm -qp --qf '%{VERSION}-%{RELEASE}' "$bin" 2>/dev/null)
if [ "${got%%-*}" = "$version" ]; then tap_ok "version $got from the Makefile's VERSION"; else
	tap_fail "version from the Makefile's VERSION" "rpm says $got, Makefile $version"; fi

mkdir -p "$T/x" && (cd "$T/x" && rpm2cpio "$bin" | cpio -id --quiet 2>/dev/null)
snippet="$T/x/etc/slurm/plugstack.conf.d/spank_ib.conf"
if [ -f "$snippet" ] && ! grep -qE '^[[:space:]]*(required|optional)[[:space:]]' "$snippet"; then
	tap_ok "the snippet ships with every plugin line commented out"
else
	tap_fail "the snippet ships with every plugin line commented out" "$(grep -nE '^[[:space:]]*(required|optional)' "$snippet" 2>&1)"
fi
if out=$("$T/x/usr/bin/ibprep" --version 2>&1) && [ "$out" = "ibprep $version" ]; then
	tap_ok "the packaged ibprep runs (ibprep --version)"
else
	tap_fail "the packaged ibprep runs" "$out"
fi

# The cross-node test's system user: %pre creates it when missing, as the
# sysusers.d file describes it; the plugin was built for %{_bindir}/ibprep.
pre=$(rpm -qp --scripts "$bin" 2>/dev/null)
if grep -q 'getent passwd _spank-ib' <<<"$pre" && grep -q 'useradd -r -M -g _spank-ib' <<<"$pre" &&
	grep -qx 'u _spank-ib - "spank-ib cross-node test" /nonexistent /usr/sbin/nologin' "$T/x/usr/lib/sysusers.d/spank-ib.conf"; then
	tap_ok "%pre creates the system user _spank-ib when missing (and sysusers.d describes it)"
else
	tap_fail "%pre creates the system user _spank-ib" "$pre"
fi
so=$T/x$libdir/slurm/spank_ib.so
if tr -c '[:print:]' '\n' <"$so" | grep -qx /usr/bin/ibprep && tr -c '[:print:]' '\n' <"$so" | grep -qx _spank-ib; then
	tap_ok "the packaged plugin's test helper is /usr/bin/ibprep, its test user _spank-ib"
else
	tap_fail "the packaged plugin's test helper is /usr/bin/ibprep" "$(tr -c '[:print:]' '\n' <"$so" | grep -e bin/ibprep -e spank-ib | head -3)"
fi

lint=$(rpmlint -r contrib/rpm/spank-ib.rpmlintrc "$bin" "$src" contrib/rpm/spank-ib.spec 2>&1)
if grep -qE '[^0-9]0 errors' <<<"$lint" && ! grep -q ': E: ' <<<"$lint"; then
	tap_ok "rpmlint: no errors ($(grep -oE '[0-9]+ warnings' <<<"$lint" | head -1))"
else
	tap_fail "rpmlint: no errors" "$(grep -E ': E: |errors' <<<"$lint")"
fi
tap_done
