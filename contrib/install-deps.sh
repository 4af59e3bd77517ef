#!/usr/bin/env bash
# install-deps.sh [build|demo|test|all]: installs the Debian packages spank-ib
# needs, idempotently (nothing is fetched when everything is present).
#   build  compile the library, ibprep and spank_ib.so, and package them
#          (make deb: debhelper)
#   demo   + what contrib/demo.sh runs: Slurm and munge in namespaces
#          (tests/integration/lib/cluster.sh), the generated nodes (python3),
#          the test traffic cut (nftables), the JSON shown (jq)
#   test   + unit tests, lint, fuzzing, the Soft-RoCE VMs, the release
#          chroots, packaging checks
#   all    the same as test (default)
set -eu
what=${1:-all}
build_pkgs=(build-essential pkg-config libhwloc-dev hwloc libnuma-dev numactl
	libibverbs-dev libibumad-dev librdmacm-dev rdma-core ibverbs-providers
	libmunge-dev munge libslurm-dev libsodium-dev)
deb_pkgs=(debhelper dpkg-dev) # make deb: dpkg-buildpackage with debian/
demo_pkgs=(slurm-wlm slurmctld slurmd slurm-client iproute2 nftables util-linux
	python3 jq)
test_pkgs=(libcmocka-dev clang cppcheck clang-tidy clang-format valgrind
	ibverbs-utils infiniband-diags perftest rdmacm-utils
	qemu-system-x86 linux-image-amd64 busybox-static kmod cpio xz-utils binutils
	debootstrap strace prometheus-node-exporter curl
	rpm rpm2cpio rpmlint groff-base lintian
	libssl-dev) # OpenSSL: the independent reference test_seal checks seal.c against
case $what in
build) pkgs=("${build_pkgs[@]}" "${deb_pkgs[@]}") ;;
demo) pkgs=("${build_pkgs[@]}" "${demo_pkgs[@]}") ;;
test | all) pkgs=("${build_pkgs[@]}" "${deb_pkgs[@]}" "${demo_pkgs[@]}" "${test_pkgs[@]}") ;;
*)
	echo "usage: install-deps.sh [build|demo|test|all]" >&2
	exit 2
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root (or: sudo $0 $what)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# --no-install-recommends: qemu's recommends pull in a desktop stack.
apt-get install -y -q --no-install-recommends "${missing[@]}"
