#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and builds monotile, then runs the main job (`run`) or the
# whole test suite (`test`). The README's two commands are this script's two modes.
set -euo pipefail
mode=${1:-}
case "$mode" in run|test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${MONOTILE_BUILD_DIR:-build}
# Warnings are errors here, as in CI; a plain cmake build leaves MONOTILE_WERROR off.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMONOTILE_WERROR=ON
cmake --build "$build" -j"$(nproc)"
if [ "$mode" = run ]; then
  # The main job: the Kimi-K3 specialized decode over k3-tiny (on a GPU when there is one, else the
  # CPU interpreter), every served layer checked against the float64 reference.
  exec "$build"/tools/monotile decode --check
fi
exec ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
