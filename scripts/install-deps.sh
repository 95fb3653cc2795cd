#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever the build and the tests need and this machine lacks.
# The CUDA toolkit (NVRTC) comes with the machine; without it the NVIDIA compiler is reported missing
# at run time and its tests skip, nothing else changes.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libabsl-dev libxxhash-dev libgtest-dev libgmock-dev nlohmann-json3-dev
          libamdhip64-dev libamd-comgr-dev rocm-device-libs clang-format-14 libopenmpi-dev openmpi-bin)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
