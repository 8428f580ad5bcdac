#!/usr/bin/env bash
# Backfilling with inaccurate runtime estimates (issue #20 experiment):
#   - the shared SWF log (NASA iPSC/860, 18,239 jobs of 1..128 processors)
#     on 128 whole A100s (16 nodes x 8, one GPU per processor; jobs wider
#     than a node run as gangs);
#   - the Philly trace on 768 whole A100s (96 nodes x 8): on the 1,000 of
#     sim/examples/a100-1000.json hardly a job waits (mean queue time 19 s
#     under any discipline), on 768 FIFO queues jobs for ~45 min on average.
# Each under FIFO and EASY (`--queue fifo|backfill`, best-fit) with
# `--estimates exact`, `factor:2`, `factor:5`, `model:tsafrir05` (Tsafrir,
# Etsion & Feitelson's modal model of user estimates, --seed 1, the maximal
# estimate the longest job in whole hours: 18 h for SWF, 1286 h for
# Philly) and, for SWF, `trace` (field 9; Philly carries no limit, so it
# has no trace row). Prints one table and
# writes it to OUT/table.csv: mean and p95 queue time (s), mean and p95
# bounded slowdown (threshold 10 s), jobs killed at their estimate; each
# run's outputs are in OUT/LABEL/QUEUE-ESTIMATES/.
#   scripts/estimates_experiment.sh [OUT] [DATA_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/estimates}
DATA=${2:-../shared/data}
BIN=${SCHEDSIM:-build/schedsim}
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
mkdir -p "$OUT"
TABLE=$OUT/table.csv
echo "trace,queue,estimates,queue_mean_s,queue_p95_s,bsld_mean,bsld_p95,jobs_killed" >"$TABLE"

# json KEY [SUBKEY] FILE: a number from summary.json.
. scripts/lib/summary_json.sh # (run from the repository root, see above)

run_one() { # LABEL QUEUE ESTIMATES ARGS...
  local label=$1 q=$2 est=$3
  shift 3
  local dir=$OUT/$label/$q-${est//:/}
  "$BIN" run --quiet --out "$dir" --policy best-fit --queue "$q" --estimates "$est" "$@" \
    >"$dir.log" 2>&1 || {
    echo "failed: $label $q $est (see $dir.log)" >&2
    return 1
  }
  local s=$dir/summary.json
  printf '%s,%s,%s,%.1f,%.1f,%.3f,%.3f,%s\n' "$label" "$q" "$est" \
    "$(json queue_time_s mean "$s")" "$(json queue_time_s p95 "$s")" \
    "$(json bounded_slowdown mean "$s")" "$(json bounded_slowdown p95 "$s")" \
    "$(json jobs_killed "$s")" >>"$TABLE"
}

experiment() { # LABEL "ESTIMATES..." ARGS...
  local label=$1 ests=$2
  shift 2
  mkdir -p "$OUT/$label"
  for q in fifo backfill; do
    for est in $ests; do
      run_one "$label" "$q" "$est" "$@"
    done
  done
}

SWF=$DATA/swf/NASA-iPSC-1993-3.1-cln.swf.gz
if [ -r "$SWF" ]; then
  cat >"$OUT/swf128.json" <<'J'
{"name": "swf128", "description": "128 whole A100s (16 nodes x 8): one GPU per processor of the NASA iPSC/860",
 "node_groups": [{"name": "n", "count": 16, "gpu_model": "A100-SXM4-80GB", "gpus_per_node": 8,
  "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "exclusive"}]}
J
  experiment swf-nasa "exact factor:2 factor:5 model:tsafrir05 trace" --cluster "$OUT/swf128.json" --trace "$SWF"
else
  echo "skipped swf: $SWF not found" >&2
fi
if [ -r "$DATA/philly/philly.csv" ]; then
  cat >"$OUT/a100-768.json" <<'J'
{"name": "a100-768", "description": "768 whole A100s (96 nodes x 8) for the Philly trace",
 "node_groups": [{"name": "n", "count": 96, "gpu_model": "A100-SXM4-80GB", "gpus_per_node": 8,
  "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "exclusive"}]}
J
  experiment philly "exact factor:2 factor:5 model:tsafrir05" --cluster "$OUT/a100-768.json" \
    --trace "$DATA/philly/philly.csv"
else
  echo "skipped philly: $DATA/philly/philly.csv not found" >&2
fi
column -s, -t "$TABLE"
