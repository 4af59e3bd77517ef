#!/usr/bin/env bash
# demo.sh: the main job, from a fresh Debian 12 checkout: install the build
# dependencies, build, and show `ibprep check` on a healthy and a broken
# simulated node (contrib/demo-check.sh).
set -eu
cd "$(dirname "$0")/.."
bash contrib/install-deps.sh build
command -v python3 >/dev/null || { echo "demo: python3 is needed to generate the simulated nodes" >&2; exit 1; }
make -j2
bash contrib/demo-check.sh
