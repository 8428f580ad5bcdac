#!/usr/bin/env bash
# bench_scale's table (bench/README.md) at a tiny size: its header, one row
# per run with every column, and the long-queue case's skip and fifo giving
# the same mean queue time (identical jobs start in the same order). The
# figures themselves are speed (never checked by tests).
set -u
BIN=${SCHEDSIM_BIN:?}
. "$(dirname "$0")/lib/cli_harness.sh"

B=$(dirname "$BIN")/bench/bench_scale
if [ ! -x "$B" ]; then
  echo "SKIP: $B not built (LSCHED_BUILD_BENCH=OFF)"
  exit 77
fi
expect 2 "usage" -- "$B" --bogus 1
# A list names only what bench_scale has; a count is a whole number: an
# unknown name used to select nothing, and exit 0 with an empty table.
expect 2 "--policy: 'bogus' is not one of first-fit, best-fit" -- "$B" --policy first-fit,bogus
expect 2 "--queue: '' is not one of fifo, skip, backfill, priority" -- "$B" --queue fifo,,skip
expect 2 "--gpus: '1000' is not one of 10000, 100000" -- "$B" --gpus 1000
expect 2 "--load: '1' is not one of 0.9, 1.2" -- "$B" --load 1
expect 2 "--only: 'gird' is not one of grid, shapes, long, big" -- "$B" --only gird
expect 2 "--big-policy: 'ff' is not one of" -- "$B" --big-policy ff
expect 2 "--big-speed: 'spd' is not one of none, catalog" -- "$B" --big-speed none,spd
expect 2 "--jobs-10k: '3x' is not a whole number from 1 to 1000000000" -- "$B" --jobs-10k 3x
expect 2 "--long-jobs: '0' is not a whole number from 1 to" -- "$B" --long-jobs 0
expect 2 "--big: '-1' is not a whole number from 0 to" -- "$B" --big -1
expect 2 "--jobs-100k: '1000000001' is not a whole number" -- "$B" --jobs-100k 1000000001
[ ! -s "$T/out" ] && ok || bad "no table after a refused argument: $(cat "$T/out")"
expect 0 "" -- "$B" --only grid,long,shapes --gpus 10000 --load 1.2 \
  --policy first-fit --queue fifo,skip,backfill --jobs-10k 300 --long-jobs 500 \
  --shapes-jobs 50
head -1 "$T/out" | grep -q '^case  *policy  *queue  *jobs  *events  *cpu_s  *events/s  *instr/ev  *B/job  *eng_B/j  *mean_qt_s  *runs  *slowest/s  *fastest/s$' &&
  ok || bad "header: $(head -1 "$T/out")"
[ "$(wc -l <"$T/out")" -eq 9 ] && ok || bad "8 rows expected: $(cat "$T/out")"
awk 'NR > 1 && NF != 14 { exit 1 }' "$T/out" && ok || bad "14 columns per row"
# Tiny cases are short: each is run RUNS_SHORT (5) times, the median shown,
# between the slowest and the fastest run's figures. (cpu_s is printed to
# the millisecond, events/s from the unrounded median: compared as such.)
awk 'NR > 1 && $12 != 5 { exit 1 }' "$T/out" && ok || bad "5 runs per short case"
awk 'NR > 1 && !($13 > 0 && $13 <= $7 && $7 <= $14) { exit 1 }' "$T/out" && ok ||
  bad "slowest <= median <= fastest: $(cat "$T/out")"
grep -q '^10k@1.2  *first-fit  *backfill  *300  *600 ' "$T/out" && ok ||
  bad "grid row: $(cat "$T/out")"
s=$(awk '$1 == "long-queue" && $3 == "skip" { print $11 }' "$T/out")
f=$(awk '$1 == "long-queue" && $3 == "fifo" { print $11 }' "$T/out")
b=$(awk '$1 == "long-queue" && $3 == "backfill" { print $11 }' "$T/out")
[ -n "$s" ] && [ "$s" = "$f" ] && [ "$s" = "$b" ] && ok ||
  bad "long queue: skip $s, fifo $f, backfill $b"
# The month's case, tiny, without and with the speed model: one row each.
expect 0 "" -- "$B" --only big --big 300 --big-policy first-fit \
  --big-queue backfill --big-speed none,catalog
grep -q '^big-100k@1.2  *first-fit  *backfill  *300 ' "$T/out" &&
  grep -q '^big-speed@1.2  *first-fit  *backfill  *300 ' "$T/out" &&
  [ "$(wc -l <"$T/out")" -eq 3 ] && ok || bad "big rows: $(cat "$T/out")"
cli_summary
