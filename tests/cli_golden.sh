#!/usr/bin/env bash
# Golden outputs: the replay, MIG, defrag, fill, compare and sweep outputs
# that the one-house restructuring (and every change after it that claims
# "behaviour unchanged") must reproduce byte for byte. The SHA-256 of every
# output file is kept in tests/golden/outputs.sha256; this script reruns the
# same cases and compares.
#
#   tests/cli_golden.sh SCHEDSIM DATA_DIR            compare with the goldens
#   tests/cli_golden.sh SCHEDSIM DATA_DIR --update   rewrite the goldens
# Under ctest SCHEDSIM and DATA_DIR come from $SCHEDSIM_BIN and
# $SCHEDSIM_SHARED_DATA.
#
# Every replay and compare runs with --speed none (the speed model, on by
# default since issue #13, changes durations; with it off the outputs are
# the one-house ones, plus the added work keys).
#
# Cases (all inputs reached through symlinks in a scratch directory, so the
# paths written into summary.json are the same on every machine):
#   alibaba/Q/P    the Alibaba default trace on its 1,213-node cluster, every
#                  policy P x every queue discipline Q
#   queued/Q/P     the built-in default workload on the built-in default
#                  cluster (queues form), every policy x every discipline
#   mig/...        a MIG scenario (3,000 generated jobs on 20 A100, static
#                  and dynamic MIG) with the three MIG policies
#   defrag/...     multigpu20 with synthetic times on 1,000 shared GPUs:
#                  defrag with migrations (fifo, backfill) and preemption
#   fill/...       fill mode, fgd and best-fit, seeds 42-43
#   compare/...    a compare over two clusters and two queues; besides
#                  compare.csv, its original 30 columns alone
#                  (compare.original-columns.csv, hashed as compare.csv was
#                  before the metric table appended columns)
# Plots (PNG/SVG, gnuplot-version dependent) are not compared.
set -euo pipefail
SIM=$(realpath "${1:-$SCHEDSIM_BIN}")
DATA=$(realpath -m "${2:-$SCHEDSIM_SHARED_DATA}")
MODE=${3:-check}
SRC=$(cd "$(dirname "$0")/.." && pwd)
GOLD=$SRC/tests/golden/outputs.sha256
A=$DATA/alibaba-gpu-v2023
if [ ! -r "$A/openb_pod_list_default.csv" ]; then
  if [ "${CI:-}" = true ]; then
    echo "cli_golden: $A not found (CI=true: shared data is required)" >&2
    exit 1
  fi
  echo "cli_golden: SKIPPED: $A not found (the goldens need ../shared/data)"
  exit 77
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/golden.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
ln -s "$A" data
ln -s "$SRC/sim/examples" examples

POLICIES=$("$SIM" policies | awk '{print $1}')
QUEUES="fifo skip backfill priority"
JOBS=$(nproc 2>/dev/null || echo 2)

# Every command line goes to a list first, then runs JOBS at a time; each
# writes its own directory, so the order of execution does not matter.
: >cmds
add() { printf '%s\n' "$*" >>cmds; }

for q in $QUEUES; do
  for p in $POLICIES; do
    add run --quiet --speed none --cluster data/openb_node_list_gpu_node.csv \
      --trace data/openb_pod_list_default.csv --policy "$p" --queue "$q" \
      --out "out/alibaba/$q/$p"
    add run --quiet --speed none --cluster builtin:default --trace builtin:default \
      --policy "$p" --queue "$q" --out "out/queued/$q/$p"
  done
done
add run --quiet --speed none --cluster builtin:default --trace builtin:default \
  --policy best-fit --queue backfill --estimate-factor 2 --out out/queued/backfill-x2

"$SIM" generate --mix examples/mig/inference-dev-mix.json --seed 1 \
  --out mig-trace.csv >/dev/null
for mode in static dynamic dynamic-k8s; do
  for p in mig-first-fit mig-best-fit mig-aware; do
    add run --quiet --speed none --cluster "examples/mig/a100-20-mig-$mode.json" \
      --trace mig-trace.csv --policy "$p" --queue skip --out "out/mig/$mode/$p"
  done
done

SYN="--speed none --cluster examples/a100-1000-shared.json --trace data/openb_pod_list_multigpu20.csv --synthetic-load 0.9 --durations-from data/openb_pod_list_default.csv --seed 1"
add run --quiet $SYN --policy defrag --queue fifo --migration-cost 30 --out out/defrag/fifo-30
add run --quiet $SYN --policy defrag --queue backfill --migration-cost 0 --out out/defrag/backfill-0
add run --quiet $SYN --policy defrag --queue fifo --preempt --checkpoint-interval 600 \
  --out out/defrag/preempt-600
add run --quiet $SYN --policy defrag --queue fifo --migration-cost 10 \
  --migration-cost-per-gib 2 --max-moves 4 --max-moves-per-job 2 \
  --policy-param base=first-fit --out out/defrag/first-fit-base

for p in fgd best-fit; do
  add fill --cluster data/openb_node_list_gpu_node.csv \
    --trace data/openb_pod_list_default.csv --policy "$p" --seeds 42-43 \
    --out "out/fill/$p"
done

# Each line: run it, keeping stdout (the printed summary is an output too;
# the one line that gives the wall time is left out).
i=0
while IFS= read -r line; do
  i=$((i + 1))
  printf '%s\0' "$i" "$line"
done <cmds | xargs -0 -n2 -P "$JOBS" sh -c '
  mkdir -p stdout
  # shellcheck disable=SC2086
  if ! "$0" $2 >"stdout/$1.raw" 2>"stdout/$1.err"; then
    echo "cli_golden: FAILED: schedsim $2" >&2; cat "stdout/$1.err" >&2; exit 255
  fi
  # Wall-clock lines are the one part of a printed summary that may vary.
  sed "/wall time/d" "stdout/$1.raw" >"stdout/$1.txt"' "$SIM"

"$SIM" compare --quiet --no-plots --jobs 2 --speed none --cluster builtin:default \
  --cluster examples/a100-h100-exclusive.json --queue fifo,backfill \
  --policy first-fit,best-fit,fgd,defrag --out out/compare >stdout/compare.txt

# The printed summaries, renamed by their output directory.
n=0
while IFS= read -r line; do
  n=$((n + 1))
  dir=$(printf '%s\n' "$line" | sed -n 's/.*--out \([^ ]*\).*/\1/p')
  mkdir -p "$dir"
  mv "stdout/$n.txt" "$dir/stdout.txt"
done <cmds
mv stdout/compare.txt out/compare/stdout.txt
# compare.csv gained a column for every summary.json metric, appended after
# its original 30 (6 run columns + 24 metrics): those 30, cut out, are
# checked against the hash of compare.csv as it was before the columns were
# added (no field of this compare holds a comma, so cut splits it right),
# and the whole file against its own hash.
cut -d, -f1-30 out/compare/compare.csv >out/compare/compare.original-columns.csv

# GOLDEN_KEEP=DIR: keep a copy of the outputs there (to diff two builds'
# outputs, e.g. scripts/golden_added_keys.sh).
if [ -n "${GOLDEN_KEEP:-}" ]; then
  rm -rf "$GOLDEN_KEEP"
  cp -r out "$GOLDEN_KEEP"
fi

(cd out && find . -type f ! -name '*.png' ! -name '*.svg' ! -path './compare/plots/*' \
  | LC_ALL=C sort | xargs sha256sum) >got.sha256
count=$(wc -l <got.sha256)
if [ "$MODE" = --update ]; then
  mkdir -p "$(dirname "$GOLD")"
  cp got.sha256 "$GOLD"
  echo "cli_golden: wrote $count hashes to $GOLD"
  exit 0
fi
if diff -u "$GOLD" got.sha256 >diff.txt; then
  echo "cli_golden: $count output files byte-identical to the goldens"
else
  echo "cli_golden: outputs differ from the goldens:" >&2
  grep '^[-+][0-9a-f]' diff.txt | head -40 >&2
  exit 1
fi
