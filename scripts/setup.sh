#!/usr/bin/env bash
# Installs the Debian 12 packages schedsim needs (skips apt when all are
# present). Uses sudo when not run as root. With --lib-only, only what a
# libsched-only build (cmake -DLSCHED_BUILD_SIM=OFF) needs: a C compiler and
# CMake. With --browser, only chromium, the headless browser that
# tests/cli_report.sh opens report.html in (.ci/run installs it when
# CI=true; elsewhere that test is skipped without it).
set -euo pipefail
PKGS=(build-essential cmake pkg-config libgsl-dev libcsv-dev libcjson-dev check gnuplot-nox zlib1g-dev)
case "${1:-}" in
  --lib-only) PKGS=(build-essential cmake) ;;
  --browser) PKGS=(chromium) ;;
  "") ;;
  *) echo "usage: $0 [--lib-only | --browser]" >&2; exit 2 ;;
esac
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present (${PKGS[*]})"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
