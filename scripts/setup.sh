#!/usr/bin/env bash
# Installs whatever Debian packages nxsim needs that are missing, then
# configures and builds into build/ (or $NXSIM_BUILD_DIR). Extra arguments are
# passed to CMake's configure step (e.g. -DNXSIM_SANITIZE=ON).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NXSIM_BUILD_DIR:-$root/build}
packages=(build-essential cmake pkg-config libsystemc-dev verilator libcmocka-dev
          libopenblas-dev libcjson-dev
          python3-numpy librsvg2-bin)  # the Python package and its tests; timeline PNGs

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S "$root" -B "$build" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
