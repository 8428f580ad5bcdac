#!/usr/bin/env bash
# The README's main command: install, build (release), and compare every
# policy on the built-in default workload (synthetic A100/H100 jobs) with
# GPUs shared by milli and whole-GPU, in parallel. Outputs:
# out/demo/compare.csv, out/demo/<cluster>_<policy>/ and out/demo/plots/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLSCHED_SANITIZE=OFF >/dev/null
cmake --build build -j"$(nproc)" --target schedsim
./build/schedsim compare --trace builtin:default --cluster builtin:default \
  --cluster sim/examples/a100-h100-exclusive.json --out out/demo "$@"
