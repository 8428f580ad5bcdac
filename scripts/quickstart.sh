#!/usr/bin/env bash
# The README's main command: install, build (release), and compare every
# policy on the built-in default workload (synthetic A100/H100 jobs).
# Outputs: out/demo/comparison.csv and out/demo/<mode>-<policy>/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLSCHED_SANITIZE=OFF >/dev/null
cmake --build build -j"$(nproc)" --target schedsim
./build/schedsim demo --out out/demo "$@"
