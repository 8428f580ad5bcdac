#!/usr/bin/env bash
# Gang placement, EASY backfilling and the defragmenting scheduler side by
# side (issue #5 experiments):
#   - the Alibaba multigpu20/multigpu30 pod lists (5 columns, no times) on
#     1,000 A100-80GB GPUs shared by milli (125 nodes x 8), with synthetic
#     times: durations drawn from the default trace and Poisson arrivals
#     offering LOAD (default 0.9) x the cluster's GPUs over the arrival
#     window (same seed for every configuration; see trace_synthetic_times);
#   - the Philly trace on 1,000 A100-80GB GPUs (125 nodes x 8, whole GPUs).
# Each under fifo, backfill, defrag+fifo and defrag+backfill (defrag wraps
# best-fit), migration cost 0, 30, 120 and 600 s per move. Prints one table
# (queue time p50/p95/p99 of multi-GPU jobs and of all jobs, mean GPU
# allocation, stranded GPU milli when reported, migrations, GPU-seconds lost)
# and writes it to OUT/table.csv.
#   scripts/defrag_experiments.sh [OUT] [DATA_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/defrag}
DATA=${2:-../shared/data}
LOAD=${LOAD:-0.9}
BIN=${SCHEDSIM:-build/schedsim}
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
A=$DATA/alibaba-gpu-v2023
mkdir -p "$OUT"
TABLE=$OUT/table.csv
echo "trace,config,migration_cost_s,q_multi_p50,q_multi_p95,q_multi_p99,q_all_p50,q_all_p95,q_all_p99,gpu_alloc_pct,stranded_gpu_milli_mean,migrations,lost_gpu_seconds" >"$TABLE"

# json KEY [SUBKEY] FILE: a number from summary.json.
. scripts/lib/summary_json.sh # (run from the repository root, see above)

run_one() { # TRACE_LABEL CONFIG COST ARGS...
  local label=$1 config=$2 cost=$3
  shift 3
  local dir=$OUT/$label/$config-$cost
  "$BIN" run --quiet --out "$dir" "$@" >"$dir.log" 2>&1 || {
    echo "failed: $label $config $cost (see $dir.log)" >&2
    return 1
  }
  local s=$dir/summary.json
  printf '%s,%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.2f,%.1f,%s,%.1f\n' "$label" "$config" "$cost" \
    "$(json queue_time_multigpu_s p50 "$s")" "$(json queue_time_multigpu_s p95 "$s")" \
    "$(json queue_time_multigpu_s p99 "$s")" "$(json queue_time_s p50 "$s")" \
    "$(json queue_time_s p95 "$s")" "$(json queue_time_s p99 "$s")" \
    "$(awk -v v="$(json gpu_alloc_ratio_mean "$s")" 'BEGIN {print 100 * v}')" \
    "$(json stranded_gpu_milli_mean "$s" | sed 's/^-$/0/')" "$(json migrations "$s")" \
    "$(json lost_gpu_seconds "$s")" >>"$TABLE"
}

experiment() { # LABEL ARGS...
  local label=$1
  shift
  mkdir -p "$OUT/$label"
  run_one "$label" fifo - --policy best-fit --queue fifo "$@"
  run_one "$label" backfill - --policy best-fit --queue backfill "$@"
  for cost in 0 30 120 600; do
    run_one "$label" defrag-fifo "$cost" --policy defrag --queue fifo \
      --migration-cost "$cost" "$@"
    run_one "$label" defrag-backfill "$cost" --policy defrag --queue backfill \
      --migration-cost "$cost" "$@"
  done
}

for m in multigpu20 multigpu30; do
  if [ -r "$A/openb_pod_list_$m.csv" ]; then
    experiment "alibaba-$m" --cluster sim/examples/a100-1000-shared.json \
      --trace "$A/openb_pod_list_$m.csv" --synthetic-load "$LOAD" \
      --durations-from "$A/openb_pod_list_default.csv" --seed 1
  else
    echo "skipped alibaba-$m: $A/openb_pod_list_$m.csv not found" >&2
  fi
done
if [ -r "$DATA/philly/philly.csv" ]; then
  experiment philly --cluster sim/examples/a100-1000.json \
    --trace "$DATA/philly/philly.csv" --seed 1
else
  echo "skipped philly: $DATA/philly/philly.csv not found" >&2
fi
column -s, -t "$TABLE"
