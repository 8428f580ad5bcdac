#!/usr/bin/env bash
# The benchmarks' arguments (bench/bench_args.h): an unknown name, a list
# where one name goes, a malformed or out-of-range count are refused with a
# message naming the program, the option and the value, exit 2, before any
# work (no table). bench_scale's are in cli_bench_scale.sh.
set -u
BIN=${SCHEDSIM_BIN:?}
. "$(dirname "$0")/lib/cli_harness.sh"

D=$(dirname "$BIN")/bench
if [ ! -x "$D/bench_replay" ]; then
  echo "SKIP: $D/bench_replay not built (LSCHED_BUILD_BENCH=OFF)"
  exit 77
fi
refused() { # NEEDLE COMMAND...: exit 2, NEEDLE on stderr, nothing on stdout
  local needle=$1
  shift
  expect 2 "$needle" -- "$@"
  [ ! -s "$T/out" ] && ok || bad "$*: output after a refused argument: $(head -2 "$T/out")"
}
refused "bench_replay: --policy: 'bogus' is not one of first-fit, best-fit, worst-fit" \
  "$D/bench_replay" --policy bogus
refused "bench_replay: --policy: one name, not the list 'first-fit,best-fit'" \
  "$D/bench_replay" --policy first-fit,best-fit
refused "bench_replay: --jobs: '1e6' is not a whole number from 1 to 1000000000" \
  "$D/bench_replay" --jobs 1e6
refused "bench_replay: --nodes: '-3' is not a whole number from 1 to 1000000" \
  "$D/bench_replay" --nodes -3
refused "bench_replay: --repeat: '0' is not a whole number from 1 to 100" \
  "$D/bench_replay" --repeat 0
refused "bench_replay: --only: 'philly' is not one of synthetic, alibaba" \
  "$D/bench_replay" --only philly
refused "usage: bench_replay" "$D/bench_replay" --bogus
refused "bench_mig: --policy: 'mig' is not one of mig-first-fit, mig-best-fit, mig-aware, first-fit, best-fit" \
  "$D/bench_mig" --policy mig
refused "bench_mig: --gpus: '4' is not a whole number from 8 to" "$D/bench_mig" --gpus 4
refused "bench_mig: --decisions: '99' is not a whole number from 100 to" \
  "$D/bench_mig" --decisions 99
refused "bench_mig: --mode: 'sometimes' is not one of dynamic, static, both" \
  "$D/bench_mig" --mode sometimes
refused "usage: bench_mig" "$D/bench_mig" --gpus
refused "bench_fill: --workers: '0' is not a whole number from 1 to 64" \
  "$D/bench_fill" --workers 0
refused "bench_stream: --jobs: 'x' is not a whole number from 1 to 1000000000" \
  "$D/bench_stream" --jobs 1000,x
refused "bench_stream: --jobs: '' is not a whole number" "$D/bench_stream" --jobs 1000,
cli_summary
