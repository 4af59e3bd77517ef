#!/usr/bin/env bash
# test.sh: the README's test command.  Installs what the tests need, builds
# with -Werror, runs lint and every test (unit, fuzz, Slurm cluster, Soft-RoCE
# VMs, the Slurm release matrix), and ends with one aggregate line
# "N passed, N failed, N skipped"; exits non-zero when anything failed.
set -u
cd "$(dirname "$0")/.."
bash contrib/install-deps.sh all || exit 1
export WERROR=1
rm -rf build/results
mkdir -p build/results
. tests/lib/tap.sh
# Build and static checks are results too: a warning or lint finding fails.
{
	tap_check "build with -Werror" make -j2 all
	tap_check "format-check" make -s format-check
	tap_check "lint (cppcheck, clang-tidy)" make -s lint
	tap_done
} > >(tee build/results/build.tap) 2>&1
wait
make -s check-unit
make -s check-fuzz FUZZ_SECONDS=${FUZZ_SECONDS:-5}
make -s check-integration
make -s check-vm
make -s check-matrix
tests/lib/tap-summary.sh build/results
