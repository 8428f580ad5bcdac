#!/usr/bin/env bash
# Builds a release tree in build-bench/ and runs the benchmarks.
#   scripts/bench.sh [bench_replay options]
#   BENCH_SCALE=1 scripts/bench.sh   also runs bench_scale (long: see bench/README.md)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DLSCHED_SANITIZE=OFF -DLSCHED_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null
./build-bench/bench/bench_replay "$@" "$(pwd)/../shared/data"
./build-bench/bench/bench_mig
./build-bench/bench/bench_memlat
# At scale (issue #19): 10,000 and 100,000 GPUs, loads 0.9 and 1.2, every
# policy and queue discipline, the shapes and long-queue cases (bench/README.md).
if [ "${BENCH_SCALE:-0}" = 1 ]; then
  ./build-bench/bench/bench_scale
fi
