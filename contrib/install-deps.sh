#!/usr/bin/env bash
# install-deps.sh [build|test|all]: installs the Debian packages spank-ib
# needs, idempotently (nothing is fetched when everything is present).
#   build  compile the library, ibprep and spank_ib.so
#   test   + unit tests, lint, fuzzing, the Slurm cluster, the Soft-RoCE VMs
#   all    the same as test (default)
set -eu
what=${1:-all}
build_pkgs=(build-essential pkg-config libhwloc-dev hwloc libnuma-dev numactl
	libibverbs-dev libibumad-dev librdmacm-dev rdma-core ibverbs-providers
	libmunge-dev munge libslurm-dev libsodium-dev
	debhelper dpkg-dev) # make deb: dpkg-buildpackage with debian/
test_pkgs=(libcmocka-dev clang cppcheck clang-tidy clang-format valgrind
	slurm-wlm slurmctld slurmd slurm-client iproute2 nftables util-linux
	ibverbs-utils infiniband-diags perftest rdmacm-utils
	qemu-system-x86 linux-image-amd64 busybox-static kmod cpio xz-utils binutils
	debootstrap python3 jq strace prometheus-node-exporter curl
	rpm rpm2cpio rpmlint cpio groff-base lintian
	libssl-dev) # OpenSSL: the independent reference test_seal checks seal.c against
pkgs=("${build_pkgs[@]}")
[ "$what" = build ] || pkgs+=("${test_pkgs[@]}")

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
