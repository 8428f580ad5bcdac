#!/usr/bin/env bash
# scripts/pools_experiment.sh (issue #15 item 4) at a tiny size: the first 60
# nodes of the Alibaba node list (318 GPUs, hand-counted: 22 x 2 P100 + 4 x 8
# G3 + 2 x 8 V100M32 + 4 V100M16 + 26 x 8 G2 + 2 x 4 + 2 x 2 T4 + 2 P100), seed
# 42, and the first 100 Philly jobs at attach 5 and 900 s. Skipped without the
# shared data (a failure under CI=true).
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
DATA=${SCHEDSIM_SHARED_DATA:-$SRC/../shared/data}
. "$(dirname "$0")/lib/cli_harness.sh"
if [ ! -r "$DATA/alibaba-gpu-v2023/openb_node_list_gpu_node.csv" ] || [ ! -r "$DATA/philly/philly.csv" ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $DATA (shared data) missing under CI=true"
    exit 1
  fi
  echo "SKIP: $DATA/alibaba-gpu-v2023 or philly not found"
  exit 77
fi
O=$T/pe
if SCHEDSIM=$BIN NODES=60 SEEDS=42 PHILLY_JOBS=100 ATTACH="5 900" \
  bash "$SRC/scripts/pools_experiment.sh" "$O" "$DATA" >"$T/log" 2>&1; then ok; else bad "the script failed: $(tail -5 "$T/log")"; fi

# The arrangements keep every GPU: 318 in each.
for a in fixed pooled full; do
  g=$(awk -F, -v a="$a" '$1 == a { print $3 }' "$O/fill.csv" | sort -u)
  [ "$g" = 318 ] && ok || bad "fill $a: gpus '$g', expected 318"
done
# 3 arrangements x 3 policies, unallocated % in 0..100.
[ "$(awk 'NR > 1' "$O/fill.csv" | wc -l)" = 9 ] && ok || bad "fill.csv: 9 rows"
awk -F, 'NR > 1 && !($4 >= 0 && $4 <= 100 && $5 >= 0 && $5 <= 100) { bad = 1 } END { exit bad }' "$O/fill.csv" &&
  ok || bad "fill.csv: unallocated % outside 0..100"
# pooled: the 22 P100 64-core nodes become 20 hosts with 1 local GPU + 5
# chassis of 4 (4 hosts each) and 2 fixed nodes; full: 22 GPU-less hosts on one
# 44-GPU chassis.
grep -q '"name": "s1-P100-2g-h", "count": 20, "gpu_model": "P100", "gpus_per_node": 1' "$O/alibaba-pooled.json" && ok || bad "pooled P100 hosts"
grep -q '"name": "s1-P100-2g-f", "count": 2, "gpu_model": "P100", "gpus_per_node": 2' "$O/alibaba-pooled.json" && ok || bad "pooled P100 fixed rest"
grep -q '"name": "s1-P100-2g-pool", "count": 5, "gpu_model": "P100", "gpus": 4, "hosts_group": "s1-P100-2g-h", "hosts_per_pool": 4, "max_per_host": 8' "$O/alibaba-pooled.json" && ok || bad "pooled P100 chassis"
grep -q '"name": "s1-P100-2g-pool", "count": 1, "gpu_model": "P100", "gpus": 44, "hosts_group": "s1-P100-2g-h", "hosts_per_pool": 22' "$O/alibaba-full.json" && ok || bad "full P100 chassis"
# The control (CPU and memory unbounded): 3 rows, every GPU kept.
[ "$(awk -F, 'NR > 1 && $3 == 318' "$O/fill_unbounded.csv" | wc -l)" = 3 ] && ok || bad "fill_unbounded.csv: 3 rows of 318 GPUs"
# Philly: fixed + 2 attach latencies, x 2 policies; fixed rows have no pools.
[ "$(awk 'NR > 1' "$O/philly.csv" | wc -l)" = 6 ] && ok || bad "philly.csv: 6 rows"
awk -F, '$1 == "fixed" && $9 != "-" { bad = 1 } END { exit bad }' "$O/philly.csv" && ok || bad "philly fixed rows report pools"
# attach_wait_s is attach_s x the jobs that composed: a multiple of 5 and 900.
awk -F, '$1 == "pooled" && ($10 % $2 != 0) { bad = 1 } END { exit bad }' "$O/philly.csv" && ok || bad "philly: attach_wait_s not a multiple of attach_s"
cli_summary
