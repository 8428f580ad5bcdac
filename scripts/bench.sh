#!/usr/bin/env bash
# Builds a release tree in build-bench/ and runs the benchmarks.
#   scripts/bench.sh [bench_replay options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DLSCHED_SANITIZE=OFF -DLSCHED_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"$(nproc)" >/dev/null
./build-bench/bench/bench_replay "$@" "$(pwd)/../shared/data"
./build-bench/bench/bench_mig
