#!/usr/bin/env bash
# The Python package as a user installs it: `pip install .` (scikit-build-core and nanobind from
# PyPI, a Release build of the library) into a fresh venv, then `import monotile`, `python -m
# monotile --help`, a k3-tiny executor from numpy arrays on the CPU interpreter, and the shipped
# tool compiling one kernel through its shipped compile worker when NVRTC is there. It builds the
# library once more, so it is not part of CI: run it once per session (docs/testing.md).
# MONOTILE_VENV=DIR keeps the venv there (default: a temporary folder, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ -n "${MONOTILE_VENV:-}" ]; then
  venv=$MONOTILE_VENV
else
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  venv=$scratch/venv
fi
python3 -m venv "$venv"
# With ccache, the wheel is built as the README's build is (RelWithDebInfo, warnings as errors) in
# build-wheel/, a folder as deep as build/, so that the compile commands match the normal build's
# (the same compiler name too: ccache tells c++ from g++) and the shared cache serves the library:
# only the extension is compiled again.
args=()
if command -v ccache >/dev/null; then
  args+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache -C cmake.build-type=RelWithDebInfo
         -C cmake.define.MONOTILE_WERROR=ON -C "cmake.define.CMAKE_CXX_COMPILER=$(command -v c++)"
         -C build-dir=build-wheel)
fi
start=$(date +%s)
"$venv/bin/python" -m pip install --quiet "${args[@]}" ".[test]"
echo "pip install .: $(( $(date +%s) - start )) s"
# Away from the source tree, so that only the installed package can be imported.
cd /
"$venv/bin/python" -c "import monotile, monotile.vllm; print('import monotile:', monotile.__version__, monotile.__file__)"
"$venv/bin/python" -m monotile --help | head -n 1
"$venv/bin/python" - <<'PY'
import monotile

config = monotile.load_config("k3-tiny")
weights = monotile.testing.seeded_rank_weights(config, 1, 0, 5, 0, config.num_hidden_layers)
backbone = monotile.Backbone(config, 1, 0, 0, config.num_hidden_layers, weights, experts_layout="checkpoint")
decode = monotile.SpecializedDecode(backbone, monotile.DecodeConfig(q=2, max_rows=4), monotile.single_process_group())
print("executor:", decode.stats)
PY
# One kernel through the JIT with the shipped tool, its shipped worker and a fresh cache: compiled
# where NVRTC is installed; elsewhere the tool must say that NVRTC is missing, nothing else.
cache=$(mktemp -d)
if compiled=$(MONOTILE_CACHE_DIR=$cache "$venv/bin/python" -m monotile compile rmsnorm_rows4_h7168 --target sm_90a 2>&1); then
  echo "$compiled" | tail -n 1
elif echo "$compiled" | grep -qi "nvrtc" && ! echo "$compiled" | grep -q "worker"; then
  echo "python -m monotile compile: no NVRTC here ($(echo "$compiled" | tail -n 1))"
else
  echo "$compiled" >&2
  echo "python install check: the installed tool could not compile a kernel" >&2
  exit 1
fi
rm -rf "$cache"
echo "python install check: ok"
