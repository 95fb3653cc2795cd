#!/usr/bin/env bash
# The package end to end: install the build tree into a scratch prefix, check its layout, build the
# consumer project against it with find_package, run it (a kernel on the interpreter, a k3-tiny
# executor step from a checkpoint folder the installed tool writes, a compile), then move the prefix
# and run it again (the library finds its compile worker relative to itself, never by a path fixed
# at build time).
# usage: consumer_test.sh BUILD_DIR CONSUMER_SOURCE
# The work happens in a fresh folder outside the build tree (a library inside a build tree could
# find the tree's worker), removed when the test passes.
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/monotile-package-XXXXXX")
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"

fail() { echo "FAIL: $*"; exit 1; }
libdir=$(cd "$work/prefix" && dirname "$(find . -name 'libmonotile.so' | head -1)")
[ -n "$libdir" ] && [ "$libdir" != . ] || fail "no libmonotile.so under the prefix"
for path in bin/monotile libexec/monotile/monotile-jit-worker "$libdir/cmake/monotile/monotileConfig.cmake" \
            include/monotile/dsl/dsl.h include/monotile/jit/jit.h include/monotile/runtime/kernel.h \
            include/monotile/runtime/decode/decode.h include/monotile/runtime/decode/specialized_decode.h; do
  [ -e "$work/prefix/$path" ] || fail "the install lacks $path"
done
for internal in include/monotile/dsl/lower/emit_kernel.h include/monotile/cache/entry_format.h \
                include/monotile/jit/worker_process.h include/monotile/runtime/decode/runner.h \
                include/monotile/kernels/k3/k1.h; do
  [ ! -e "$work/prefix/$internal" ] || fail "the install exposes the internal header $internal"
done
echo "installed: $(cd "$work/prefix" && find . -type f | wc -l) files, library in $libdir"

cmake -S "$source" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "the consumer did not configure"; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "the consumer did not build"; }

unset MONOTILE_JIT_WORKER
export MONOTILE_CACHE_DIR="$work/cache"
# The executor's checkpoint folder, written by the installed tool.
"$work/prefix/bin/monotile" model tiny --out "$work/k3-tiny" > "$work/tiny.log" 2>&1 ||
  { cat "$work/tiny.log"; fail "monotile model tiny did not write the checkpoint"; }
status=0
"$work/build/consumer" "$work/k3-tiny" || status=$?
[ $status -eq 0 ] || { echo "(logs in $work)"; exit $status; }

mv "$work/prefix" "$work/moved"
rm -rf "$work/cache"
export LD_LIBRARY_PATH="$work/moved/$libdir"
"$work/build/consumer" "$work/k3-tiny" || fail "the consumer failed once the prefix moved (logs in $work)"
# (ldd's output read whole: with pipefail, grep -q closing the pipe early would fail ldd by SIGPIPE)
loaded=$(ldd "$work/build/consumer")
grep -qF "$work/moved/$libdir/libmonotile.so" <<<"$loaded" || fail "the moved library was not the one loaded: $loaded"
echo "ok: the moved prefix compiles too"
rm -rf "$work"
