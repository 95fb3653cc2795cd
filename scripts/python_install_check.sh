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
args=()
if command -v ccache >/dev/null; then args+=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
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
backbone = monotile.Backbone(config, 1, 0, 0, config.num_hidden_layers, weights)
decode = monotile.SpecializedDecode(backbone, monotile.DecodeConfig(q=2, max_rows=4), monotile.single_process_group())
print("executor:", decode.stats)
PY
if "$venv/bin/python" -m monotile devices 2>&1 | grep -q "nvrtc\|NVRTC\|nvidia"; then :; fi
"$venv/bin/python" -m monotile compile step_begin --target sm_90a 2>&1 | tail -n 3 || true
echo "python install check: ok"
