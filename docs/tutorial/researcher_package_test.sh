#!/usr/bin/env bash
# The researcher's loop of docs/tutorial/researcher/README.md, done as a new user does it: install the
# build tree into a scratch prefix, copy the tutorial's folder out of the tree, build its float64
# check against the package with find_package and run it, then `monotile compile` the kernel file
# for sm_90a, gfx90a and gfx942 twice (the second run all cache hits). Every target whose compiler
# is here must compile (gfx942 needs ROCm 6's hiprtc: where an older one is installed it is refused
# with the JIT's reason, once); exit 77 (skip) where no target has a compiler.
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
# Which targets this machine's compilers build (monotile demo's "compilers:" lines); the others must
# be refused with the JIT's reason, once, while the rest compile.
compilers=$(MONOTILE_CACHE_DIR="$work/demo-cache" "$work/prefix/bin/monotile" demo 2>/dev/null |
            sed -n '/^compilers:/,/^$/p')
echo "$compilers"
able=()
for target in sm_90a gfx90a gfx942; do
  grep -Eq "^  $target +unavailable" <<<"$compilers" || able+=("$target")
done
[ ${#able[@]} -gt 0 ] || { echo "no compiler here for sm_90a, gfx90a or gfx942"; exit 77; }
status=0
cold=$("$work/prefix/bin/monotile" compile gated_rms_norm.cpp --target sm_90a,gfx90a,gfx942 --report 2>&1) || status=$?
echo "$cold"
grep -q "against the package in $work/prefix$" <<<"$cold" || fail "the kernel file was not built against the installed package"
for target in sm_90a gfx90a gfx942; do
  for kernel in gated_rms_norm_h128 gated_rms_norm_h7168; do
    if [[ " ${able[*]} " == *" $target "* ]]; then
      grep -Eq "^$kernel +$target .* miss$" <<<"$cold" || fail "$kernel did not compile for $target"
    else
      grep -Eq "^$kernel +$target .* FAILED$" <<<"$cold" || fail "$kernel for $target (no compiler here) did not fail"
    fi
  done
done
[ ${#able[@]} -eq 3 ] || [ $status -eq 1 ] || fail "a target without a compiler here did not make monotile compile exit 1"
[ ${#able[@]} -lt 3 ] || [ $status -eq 0 ] || fail "monotile compile exited $status"
targets=$(IFS=,; echo "${able[*]}")
warm=$("$work/prefix/bin/monotile" compile gated_rms_norm.cpp --target "$targets" 2>&1) || fail "the second run failed: $warm"
echo "$warm"
builds=$((2 * ${#able[@]}))
grep -q "$builds builds: $builds cache hits, 0 compiled, 0 failed" <<<"$warm" || fail "the second run was not all cache hits"
cd / && rm -rf "$work"
