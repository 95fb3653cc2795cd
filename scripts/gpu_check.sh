#!/usr/bin/env bash
# The GPU check, run on the GPU machine (see docs/gpu_check.md): unpacks the Debian packages that
# travel in .device-deps/, takes a build carried from the CI-type machine (default) or makes one
# here (--build), runs `ctest -L gpu` and the GPU benchmarks, and writes logs and summary.txt into
# OUTDIR. Exit status: 0 all passed, 1 a test or benchmark failed, 2 usage or set-up error, 3 GPU
# tests skipped although a GPU is visible. Last, where python3 imports torch, the bench/ tables that
# read the benchmarks' output (the KDA half against vLLM's stock half and the unfused path: bench/tables/kda_half.py; K2
# against triton_kernels' MXFP4 MoE and the unfused path: bench/tables/moe.py).
# usage: scripts/gpu_check.sh OUTDIR [--build] [--build-dir DIR] [--deps DIR] [--jobs N] [--only REGEX] [--tests REGEX]
# --only REGEX: build only the targets whose names match (plus the compile worker and the command
# line) and run only the matching benchmarks; --tests REGEX: run only the GPU tests whose names
# match (ctest -R); together they spend less device time.
set -euo pipefail

# Benchmarks to run after the tests: "<path in the build dir> [args...]" (@OUTDIR@ becomes OUTDIR).
# Add a line per benchmark; one that was not built is reported as such, not as a failure.
BENCHMARKS=(
  "tests/gpu/gpu_copy_bench"
  "kernels/k3/k1_bench --stages --json @OUTDIR@/k1.json"
  "kernels/k3/k1_bench --stages --warm --iterations 20 --pipeline 3,2"
  "kernels/k3/k2_bench --json @OUTDIR@/k2.json"
  "kernels/k3/k2_bench --clock --iterations 10 --prefetch-steps 0,4 --l2-fetch 256 --routed-chunks 16 --stages 4,2 --front-parts 1 --expert-stages 4 --routed-stages 8 --shared-early"
  "kernels/k3/mxfp4_bench"
  "runtime/decode/exchange_bench"
  "tools/layer_tp_bench --experts 128"
  "tools/monotile decode --device gpu --check"
  "tools/monotile decode --model k3 --tp 8 --rank 0 --graph --steps 3 --q 4 --device gpu"
  "tools/monotile decode --fork --graph --steps 3 --device gpu"
)
# The bench/ tables run after them (python3 -m bench.run), with k1_bench's and k2_bench's JSON: ours
# beside vLLM's stock and the unfused KDA half, and K2 beside triton_kernels' MXFP4 MoE and the unfused K2.
# fla travels as wheels in .whl/; triton_kernels and the stock KDA files in .peers/ (docs/bench.md).
PY_TABLES=copy,kda_half,moe
# What --build builds: the GPU tests, the benchmarks and what they need (see tests/gpu/CMakeLists.txt).
BUILD_TARGET=gpu_check
TEST_TIMEOUT_S=${MONOTILE_GPU_TEST_TIMEOUT:-300}
BENCH_TIMEOUT_S=${MONOTILE_GPU_BENCH_TIMEOUT:-300}

die() { echo "gpu_check: $*" >&2; exit 2; }
usage() { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }

only="" tests="" outdir="" build=0 build_dir="" deps_dir=".device-deps" jobs=$(nproc 2>/dev/null || echo 4)
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=1 ;;
    --build-dir) [ $# -ge 2 ] || usage; build_dir=$2; shift ;;
    --deps) [ $# -ge 2 ] || usage; deps_dir=$2; shift ;;
    --jobs) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
    --only) [ $# -ge 2 ] || usage; only=$2; shift ;;
    --tests) [ $# -ge 2 ] || usage; tests=$2; shift ;;
    -h|--help) usage ;;
    -*) echo "gpu_check: unknown option $1" >&2; usage ;;
    *) [ -z "$outdir" ] || usage; outdir=$1 ;;
  esac
  shift
done
[ -n "$outdir" ] || usage
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
[ -n "$build_dir" ] || { [ "$build" -eq 1 ] && build_dir=build-gpu || build_dir=build; }
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
summary=$outdir/summary.txt
log() { echo "$*" | tee -a "$summary"; }
: > "$summary"
log "monotile GPU check, $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
log "repo: $repo ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"

# 1. The Debian packages' libraries (and, for --build, headers and CMake/pkg-config files), in a
# fixed folder of the build so that CMake's cached paths stay valid from one run to the next.
if [ "$build" -eq 0 ] && [ ! -f "$build_dir/CMakeCache.txt" ]; then
  die "no build in $build_dir: carry one (docs/gpu_check.md) or pass --build to build here"
fi
mkdir -p "$build_dir"
deps_root=$(cd "$build_dir" && pwd)/device-deps
rm -rf "$deps_root"
mkdir -p "$deps_root"
shopt -s nullglob
debs=("$deps_dir"/*.deb)
shopt -u nullglob
if [ ${#debs[@]} -eq 0 ]; then
  die "no .deb files in $deps_dir: fetch them on the CI-type machine with ../shared/tools/device-deps (see docs/gpu_check.md) and carry $deps_dir"
fi
for deb in "${debs[@]}"; do
  dpkg -x "$deb" "$deps_root" || die "dpkg -x $deb failed"
done
deps_lib=$deps_root/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$deps_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log "unpacked ${#debs[@]} packages from $deps_dir into $deps_root"
# Python wheels carried in $deps_dir/python (nanobind, which the Python module's build needs:
# docs/gpu_check.md), unpacked beside the packages and put on PYTHONPATH.
shopt -s nullglob
wheels=("$deps_dir"/python/*.whl)
shopt -u nullglob
if [ ${#wheels[@]} -gt 0 ]; then
  for wheel in "${wheels[@]}"; do
    python3 -m zipfile -e "$wheel" "$deps_root/python" || die "unpacking $wheel failed"
  done
  export PYTHONPATH=$deps_root/python${PYTHONPATH:+:$PYTHONPATH}
  log "unpacked ${#wheels[@]} Python wheels from $deps_dir/python into $deps_root/python"
fi

# 2. The build: carried (relocated to this checkout) or made here.
if [ "$build" -eq 1 ]; then
  command -v cmake >/dev/null || die "cmake not found in PATH"
  command -v ninja >/dev/null || die "ninja not found in PATH"
  # xxHash has only a pkg-config file, whose prefix says /usr: point it at the unpacked tree.
  shopt -s nullglob
  for pc in "$deps_lib"/pkgconfig/*.pc; do
    sed -i "s|^prefix=/usr\$|prefix=$deps_root/usr|" "$pc"
  done
  shopt -u nullglob
  export PKG_CONFIG_PATH=$deps_lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  if command -v pkg-config >/dev/null; then
    pkg_config=$(command -v pkg-config)
  elif [ -x "$deps_root/usr/bin/pkgconf" ]; then
    pkg_config=$deps_root/usr/bin/pkgconf
  else
    die "no pkg-config here and none unpacked: fetch with EXTRA_PKGS=\"pkgconf-bin libpkgconf3\" (docs/gpu_check.md)"
  fi
  # -O2 as the project's default build, without its debug info (GCC's -O3 warns falsely).
  log "configuring $build_dir (Release, -O2) against the unpacked packages"
  cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_PREFIX_PATH="$deps_root/usr;$deps_lib/cmake" \
    -DCMAKE_CXX_FLAGS="-I$deps_root/usr/include" \
    -DCMAKE_EXE_LINKER_FLAGS="-L$deps_lib -Wl,-rpath-link,$deps_lib" \
    -DPKG_CONFIG_EXECUTABLE="$pkg_config" > "$outdir/configure.log" 2>&1 ||
    { tail -30 "$outdir/configure.log" >&2; die "cmake configure failed: see $outdir/configure.log"; }
  log "building target $BUILD_TARGET with $jobs jobs"
  targets=("$BUILD_TARGET")
  if [ -n "$only" ]; then
    # The test binaries and benchmarks whose names match, plus the compile worker.
    mapfile -t targets < <(ninja -C "$build_dir" -t targets all 2>/dev/null | sed -n 's/^\([A-Za-z0-9_]*\): phony$/\1/p' |
      grep -E "$only" | sort -u)
    targets+=(monotile_jit_worker monotile)
  fi
  cmake --build "$build_dir" --target "${targets[@]}" -j"$jobs" > "$outdir/build.log" 2>&1 ||
    { tail -40 "$outdir/build.log" >&2; die "build failed: see $outdir/build.log"; }
else
  # CTest files hold the absolute paths of the machine that configured: rewrite them for this one.
  old_build=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build_dir/CMakeCache.txt")
  old_source=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build_dir/CMakeCache.txt")
  new_build=$(cd "$build_dir" && pwd)
  if [ "$old_build" != "$new_build" ]; then
    log "relocating CTest files: $old_build -> $new_build, $old_source -> $repo"
    # Through placeholders, so that a new path containing an old one is not rewritten twice.
    find "$build_dir" -path "$deps_root" -prune -o \
      \( -name 'CTestTestfile.cmake' -o -name '*_tests.cmake' -o -name '*_include.cmake' \) \
      -exec sed -i -e "s|$old_build|@MONOTILE_BUILD@|g" -e "s|$old_source|@MONOTILE_SOURCE@|g" \
                   -e "s|@MONOTILE_BUILD@|$new_build|g" -e "s|@MONOTILE_SOURCE@|$repo|g" {} +
  fi
fi
build_dir=$(cd "$build_dir" && pwd)
# The JIT's compile worker: the path baked in at build time may be another machine's.
worker=$build_dir/jit/monotile-jit-worker
[ -x "$worker" ] && export MONOTILE_JIT_WORKER=$worker
log "build: $build_dir"

# 3. What is here.
{
  echo "--- nvidia-smi -L"
  if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>&1 || true; else echo "(no nvidia-smi)"; fi
  echo "--- monotile devices"
  if [ -x "$build_dir/tools/monotile" ]; then
    "$build_dir/tools/monotile" devices 2>&1 || echo "(monotile devices failed: exit $?)"
  else
    echo "(tools/monotile not built)"
  fi
} > "$outdir/devices.log" 2>&1
cat "$outdir/devices.log" >> "$summary"
gpu_visible=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then gpu_visible=1; fi

# 4. The GPU tests.
status=0
ctest_status=0
ctest --test-dir "$build_dir" -L gpu ${tests:+-R "$tests"} --output-on-failure --timeout "$TEST_TIMEOUT_S" \
  > "$outdir/ctest_gpu.log" 2>&1 || ctest_status=$?
passed_line=$(grep -E 'tests passed' "$outdir/ctest_gpu.log" | tail -1 || true)
skipped=$(grep -c '\*\*\*Skipped' "$outdir/ctest_gpu.log" || true)
log "--- ctest -L gpu: ${passed_line:-no result line (see ctest_gpu.log)}; skipped: $skipped; exit $ctest_status"
# On standard output as well as in the summary: a caller that gets back only what the command printed
# still sees which tests failed.
grep -E '\*\*\*(Failed|Skipped|Timeout|Exception)|Not Run' "$outdir/ctest_gpu.log" | sed 's/^/  /' | tee -a "$summary" || true
# A test binary that was not built shows up as <target>_NOT_BUILT, without labels: say so.
not_built=$(ctest --test-dir "$build_dir" -N 2>/dev/null | grep -o '[A-Za-z0-9_]*_NOT_BUILT' | sort -u || true)
if [ -n "$not_built" ]; then
  log "test binaries not built (their tests did not run; a GPU test among them belongs in the gpu_check target):"
  sed 's/^/  /' <<<"$not_built" >> "$summary"
fi
if grep -q 'No tests were found' "$outdir/ctest_gpu.log"; then
  log "no GPU tests found in $build_dir: was it built with the GPU test targets?"
  status=1
fi
[ "$ctest_status" -eq 0 ] || status=1
if [ "$skipped" -gt 0 ] && [ "$gpu_visible" -eq 1 ] && [ "$status" -eq 0 ]; then
  log "GPU tests skipped although nvidia-smi lists a GPU: see the skip reasons in ctest_gpu.log"
  status=3
fi

# 5. The benchmarks.
log "--- benchmarks"
for entry in "${BENCHMARKS[@]}"; do
  read -r -a words <<<"$entry"
  binary=$build_dir/${words[0]}
  name=$(basename "${words[0]}")
  if [ -n "$only" ] && ! grep -qE "$only" <<<"$name"; then
    continue
  fi
  if [ ! -x "$binary" ]; then
    log "  $name: not built, skipped"
    continue
  fi
  bench_status=0
  bench_args=("${words[@]:1}")
  bench_args=("${bench_args[@]//@OUTDIR@/$outdir}")
  # A binary listed twice (other arguments) logs to bench_<name>_2.log, and so on.
  log_name=$name n=2
  while [ -e "$outdir/bench_$log_name.log" ]; do log_name=${name}_$n n=$((n + 1)); done
  timeout "$BENCH_TIMEOUT_S" "$binary" "${bench_args[@]}" > "$outdir/bench_$log_name.log" 2>&1 || bench_status=$?
  log "  $name ${bench_args[*]}: exit $bench_status (bench_$log_name.log)"
  sed 's/^/    /' "$outdir/bench_$log_name.log" | tail -20 >> "$summary"
  [ "$bench_status" -eq 0 ] || { [ "$status" -ne 0 ] || status=1; }
done

# 6. The bench/ tables that read the benchmarks' output (with --only: when it matches k1_bench,
# kda_half, k2_bench or moe).
if [ -z "$only" ] || grep -qE "$only" <<<"k1_bench" || grep -qE "$only" <<<"kda_half" ||
   grep -qE "$only" <<<"k2_bench" || grep -qE "$only" <<<"moe"; then
  if ! command -v python3 >/dev/null || ! python3 -c 'import torch' >/dev/null 2>&1; then
    log "  bench.run ($PY_TABLES): skipped, python3 cannot import torch here"
  else
    py_log=$outdir/bench_kda_half.log
    : > "$py_log"
    site=""
    shopt -s nullglob
    wheels=("$repo"/.whl/*.whl)
    shopt -u nullglob
    if [ ${#wheels[@]} -gt 0 ]; then
      site=$(mktemp -d)
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
        "${wheels[@]}" >> "$py_log" 2>&1 || log "  bench.run: installing ${#wheels[@]} wheels from .whl failed (see $py_log)"
    else
      log "  bench.run: no .whl/*.whl (fla's wheels, docs/bench.md): the unfused KDA half needs fla"
    fi
    py_args=(--tables "$PY_TABLES" --out "$outdir/bench")
    if [ -f "$outdir/k1.json" ]; then py_args+=(--k1-json "$outdir/k1.json"); fi
    if [ -f "$outdir/k2.json" ]; then py_args+=(--k2-json "$outdir/k2.json"); fi
    # triton_kernels (the MXFP4 MoE peer) and vLLM's stock KDA files are in .peers/ (docs/bench.md).
    peers=""
    if [ -d "$repo/.peers" ]; then
      peers=$repo/.peers
    else
      log "  bench.run: no .peers/ (python3 -m bench.peers.vllm_wheel, docs/bench.md): the triton_kernels and stock columns cannot run"
    fi
    path=$site${peers:+${site:+:}$peers}
    py_status=0
    PYTHONPATH=$path${PYTHONPATH:+${path:+:}$PYTHONPATH} PYTHONUNBUFFERED=1 timeout "$BENCH_TIMEOUT_S" \
      python3 -m bench.run "${py_args[@]}" >> "$py_log" 2>&1 || py_status=$?
    log "  bench.run ${py_args[*]}: exit $py_status (bench_kda_half.log)"
    sed -n '/^== KDA half/,$p' "$py_log" | head -14 | sed 's/^/    /' >> "$summary"
    sed -n '/^== K2 MoE/,$p' "$py_log" | head -8 | sed 's/^/    /' >> "$summary"
    [ "$py_status" -eq 0 ] || { [ "$status" -ne 0 ] || status=1; }
  fi
fi

log "--- result: $(case $status in 0) echo passed ;; 3) echo 'GPU tests skipped on a GPU machine' ;; *) echo failed ;; esac)"
exit "$status"
