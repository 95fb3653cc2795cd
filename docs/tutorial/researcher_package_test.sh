#!/usr/bin/env bash
# The researcher's loop of docs/tutorial/researcher/README.md, done as a new user does it: install the
# build tree into a scratch prefix, copy the tutorial's folder out of the tree, build its float64
# check against the package with find_package and run it, then `monotile compile` the kernel file
# for sm_90a, gfx90a and gfx942 twice (the second run all cache hits). gfx942 may be refused by an
# older hiprtc, with the JIT's message; sm_90a and gfx90a must compile.
# usage: researcher_package_test.sh BUILD_DIR RESEARCHER_SOURCE
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/monotile-researcher-XXXXXX")
fail() { echo "FAIL: $*"; echo "(work folder kept: $work)"; exit 1; }
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cp -r "$source" "$work/my_kernels"
cd "$work/my_kernels"

cmake -S . -B build -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "the tutorial's project did not configure"; }
cmake --build build > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "the tutorial's project did not build"; }
./build/gated_rms_norm_check || fail "the interpreter does not match float64"

unset MONOTILE_JIT_WORKER MONOTILE_PACKAGE_DIR
export MONOTILE_CACHE_DIR="$work/cache"
status=0
cold=$("$work/prefix/bin/monotile" compile gated_rms_norm.cpp --target sm_90a,gfx90a,gfx942 --report 2>&1) || status=$?
echo "$cold"
grep -q "against the package in $work/prefix$" <<<"$cold" || fail "the kernel file was not built against the installed package"
if grep -q "sm_90a .*FAILED" <<<"$cold" && grep -q "libnvrtc" <<<"$cold"; then echo "no NVRTC here"; exit 77; fi
for target in sm_90a gfx90a; do
  for kernel in gated_rms_norm_h128 gated_rms_norm_h7168; do
    grep -Eq "^$kernel +$target .* miss$" <<<"$cold" || fail "$kernel did not compile for $target"
  done
done
if [ $status -ne 0 ]; then
  grep -q "cannot compile for gfx942" <<<"$cold" || fail "monotile compile failed (status $status) and not on gfx942 alone"
fi
warm=$("$work/prefix/bin/monotile" compile gated_rms_norm.cpp --target sm_90a,gfx90a 2>&1) || fail "the second run failed: $warm"
echo "$warm"
grep -q "4 builds: 4 cache hits, 0 compiled, 0 failed" <<<"$warm" || fail "the second run was not all cache hits"
cd / && rm -rf "$work"
