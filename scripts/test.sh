#!/usr/bin/env bash
# The README's test command (.ci/run calls it): install, build with
# AddressSanitizer + UndefinedBehaviorSanitizer and warnings as errors, and
# run the whole suite under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Tests and the simulator on explicitly: a build/ configured without them (by
# hand, e.g. -DLSCHED_BUILD_SIM=OFF, or by an older script) must not make this
# pass with only part of the suite run. The libsched-only build has its own
# test, tests/cli_lib_only.sh.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug -DLSCHED_SANITIZE=ON -DLSCHED_WERROR=ON \
  -DLSCHED_BUILD_TESTS=ON -DLSCHED_BUILD_SIM=ON >/dev/null
cmake --build build -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build
ctest --output-on-failure --no-tests=error -j"$(nproc)" "$@"
