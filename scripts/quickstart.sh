#!/usr/bin/env bash
# The README's main command: install, build (release), and compare the four
# ways to run the built-in default workload (5,000 synthetic A100/H100 jobs)
# on the same 16 x 8 A100-80GB + 8 x 8 H100-80GB nodes: GPUs shared by milli
# (builtin:default), whole GPUs (builtin:exclusive), static MIG
# (builtin:mig-static) and dynamic MIG (builtin:mig-dynamic), each with the
# policies that apply to it, in parallel. Prints the table and the answer;
# outputs: out/demo/report.html, out/demo/compare.csv,
# out/demo/<cluster>_<policy>/ and out/demo/plots/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLSCHED_SANITIZE=OFF >/dev/null
cmake --build build -j"$(nproc)" --target schedsim
./build/schedsim compare --trace builtin:default --cluster builtin:default \
  --cluster builtin:exclusive --cluster builtin:mig-static \
  --cluster builtin:mig-dynamic --out out/demo "$@"
