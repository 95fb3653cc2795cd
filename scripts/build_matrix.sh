#!/usr/bin/env bash
# Builds monotile in every standard CMake build type with each compiler a Debian 12 user has
# (g++ 12 and clang++ 14), warnings as errors, and prints one line per configuration. Not part of
# CI (eight full builds); run it before changing flags, compilers or anything near a warning.
# usage: scripts/build_matrix.sh [--jobs N] [--compilers "g++ clang++"] [--types "Debug Release ..."]
#        [--target T] [--keep]
# Builds go to build-matrix/<compiler>-<type>/ (removed afterwards unless --keep); logs stay in
# build-matrix/<compiler>-<type>.log. Exit status 1 when any configuration failed.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc) compilers="g++ clang++" types="Debug Release RelWithDebInfo MinSizeRel" target=all keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift 2 ;;
    --compilers) compilers=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
mkdir -p build-matrix
status=0
for compiler in $compilers; do
  command -v "$compiler" > /dev/null || { echo "$compiler: not installed"; status=1; continue; }
  version=$("$compiler" --version | head -1)
  for type in $types; do
    dir=build-matrix/$compiler-$type log=build-matrix/$compiler-$type.log start=$(date +%s)
    rm -rf "$dir"
    if cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCMAKE_CXX_COMPILER="$compiler" \
         -DMONOTILE_WERROR=ON "${launcher[@]}" > "$log" 2>&1 &&
       cmake --build "$dir" --target "$target" -j"$jobs" -- -k 0 >> "$log" 2>&1; then
      echo "ok    $compiler $type ($version): $(( $(date +%s) - start )) s"
    else
      echo "FAIL  $compiler $type ($version): see $log"
      grep -m3 -E "FAILED:|error:" "$log" | sed 's/^/      /'
      status=1
    fi
    [ $keep -eq 1 ] || rm -rf "$dir"
  done
done
exit $status
