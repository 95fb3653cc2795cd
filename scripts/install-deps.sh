#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever the build and the tests need and this machine lacks;
# then, for the `python3` first on PATH (the one CMake builds the Python module with), nanobind and
# numpy from PyPI where missing. The CUDA toolkit (NVRTC) comes with the machine; without it the
# NVIDIA compiler is reported missing at run time and its tests skip, nothing else changes.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libabsl-dev libxxhash-dev libgtest-dev libgmock-dev nlohmann-json3-dev
          libamdhip64-dev libamd-comgr-dev rocm-device-libs clang-format-14 libopenmpi-dev openmpi-bin
          python3-dev python3-pip python3-venv)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$package")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python module (python/): nanobind to build it, numpy for its tests. Debian 12's own python3
# refuses a plain pip install (PEP 668), so there they go to the user's site-packages; a venv or a
# pyenv interpreter takes them directly. Without them CMake skips the module and says why.
python_missing=()
python3 -c "import nanobind" 2>/dev/null || python_missing+=(nanobind)
python3 -c "import numpy" 2>/dev/null || python_missing+=(numpy)
if [ ${#python_missing[@]} -gt 0 ]; then
  echo "installing for $(command -v python3): ${python_missing[*]}"
  python3 -m pip install --quiet "${python_missing[@]}" 2>/dev/null ||
    python3 -m pip install --quiet --user --break-system-packages "${python_missing[@]}"
fi
