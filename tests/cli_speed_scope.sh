#!/usr/bin/env bash
# The speed scope schedsim declares (lsched_request.speed_scope, set in
# sim/engine/speed.c; sim/README.md "Work and speed"): under --speed catalog
# fastest-fit and cheapest-work place GPU jobs through their score index,
# one speed call per model, which is exact only if the callback's answer
# really depends on the node's model alone. So every run here is made twice,
# index on (the default) and --policy-param index=off (the scan asks every
# node), and every output file must be byte-identical: a mixed cluster of
# three models, exclusive and shared nodes, priced and unpriced (V100 has
# no catalog price here: an unknown cost), the built-in workload with
# Gavel's speed table (job classes drawn, per-class and per-GPU-count
# speeds, tie-heavy across classes), every queue discipline, a CPU-only
# trace (declared constant), a MIG cluster (MIG requests are asked per node)
# and a pooled cluster (declared any). And a sanity check that the speeds
# matter there: fastest-fit does not place as best-fit does.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
DATA=${SCHEDSIM_SHARED_DATA:-$SRC/../shared/data}
. "$(dirname "$0")/lib/cli_harness.sh"

group() { # name count model gpus mode [price]
  local price=""
  [ $# -ge 6 ] && price=", \"price_per_gpu_hour\": $6"
  printf '{"name": "%s", "count": %s, "gpu_model": "%s", "gpus_per_node": %s, "cpu_milli": 96000, "memory_mib": 786432, "gpu_mode": "%s"%s}' "$1" "$2" "$3" "$4" "$5" "$price"
}
printf '{"name": "mixed3", "node_groups": [%s, %s, %s, %s, %s]}\n' \
  "$(group a-sh 6 A100-SXM4-80GB 8 shared)" \
  "$(group h-ex 3 H100-SXM5-80GB 8 exclusive)" \
  "$(group a-ex 3 A100-SXM4-80GB 4 exclusive 1.5)" \
  "$(group h-sh 3 H100-SXM5-80GB 4 shared)" \
  "$(group v-sh 4 V100M16 8 shared)" >"$T/mixed.json"

# Both runs of one configuration, compared file by file.
same() { # label args...
  local label=$1
  shift
  if ! "$BIN" run "$@" --quiet --out "$T/on" >"$T/log" 2>&1; then
    bad "$label: index on failed: $(tail -2 "$T/log")"
    return
  fi
  if ! "$BIN" run "$@" --quiet --policy-param index=off --out "$T/off" >"$T/log" 2>&1; then
    bad "$label: index=off failed: $(tail -2 "$T/log")"
    return
  fi
  if diff -r "$T/on" "$T/off" >"$T/diff"; then
    ok "$label"
  else
    bad "$label: index and scan differ: $(head -3 "$T/diff")"
  fi
  rm -rf "$T/on" "$T/off"
}

GAVEL=$DATA/gpu-performance/gavel/simulation_throughputs.json
for p in fastest-fit cheapest-work; do
  for q in skip fifo backfill; do
    same "$p $q mixed, default table" --cluster "$T/mixed.json" \
      --trace builtin:default --policy "$p" --queue "$q"
  done
  same "$p fifo builtin:default cluster" --cluster builtin:default \
    --trace builtin:default --policy "$p" --queue fifo
  same "$p fifo builtin:mig-dynamic" --cluster builtin:mig-dynamic \
    --trace builtin:default --policy "$p" --queue fifo
  same "$p fifo pools" --cluster "$SRC/sim/examples/pools/tiny-pool.json" \
    --trace builtin:default --policy "$p" --queue fifo
  same "$p skip --speed none" --cluster "$T/mixed.json" \
    --trace builtin:default --policy "$p" --queue skip --speed none
done

# Gavel's table: 26 classes drawn per job (uniform: the table has no
# "default"), 1 to 8 GPUs per class with their own speeds (the table has no
# A100/H100: a V100 + P100 + K80 cluster), measured on V100.
if [ -r "$GAVEL" ]; then
  printf '{"name": "gavel3", "node_groups": [%s, %s, %s]}\n' \
    "$(group v 4 V100M16 8 shared)" "$(group p 4 P100 4 exclusive 0.9)" \
    "$(group k 6 K80 8 shared 0.45)" >"$T/gavel.json"
  for p in fastest-fit cheapest-work; do
    same "$p fifo gavel classes" --cluster "$T/gavel.json" \
      --trace builtin:default --speed-table "$GAVEL" --measured-on V100M16 \
      --policy "$p" --queue fifo
  done
elif [ "${CI:-}" = true ]; then
  bad "$GAVEL not found (CI=true: shared data is required)"
else
  echo "skip: $GAVEL not found (the Gavel-table comparisons)"
fi

# A CPU-only trace: every request declared constant.
{
  echo "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model"
  for i in $(seq 1 60); do
    echo "c$i,$((i * 7 % 50)),$((100 + i * 37 % 400)),0,0,$((8000 + i * 1000 % 30000)),4096,"
  done
} >"$T/cpu.csv"
for p in fastest-fit cheapest-work; do
  same "$p fifo CPU-only" --cluster "$T/mixed.json" --trace "$T/cpu.csv" \
    --policy "$p" --queue fifo
done

# The speeds matter on the mixed cluster: fastest-fit's placements are not
# best-fit's (so the comparisons above are not between two best-fits).
"$BIN" run --cluster "$T/mixed.json" --trace builtin:default \
  --policy fastest-fit --queue fifo --quiet --out "$T/ff" >/dev/null 2>&1
"$BIN" run --cluster "$T/mixed.json" --trace builtin:default \
  --policy best-fit --queue fifo --quiet --out "$T/bf" >/dev/null 2>&1
if [ -f "$T/ff/jobs.csv" ] && ! cmp -s "$T/ff/jobs.csv" "$T/bf/jobs.csv"; then
  ok "fastest-fit places otherwise than best-fit"
else
  bad "fastest-fit and best-fit gave the same jobs.csv (or a run failed)"
fi

cli_summary
