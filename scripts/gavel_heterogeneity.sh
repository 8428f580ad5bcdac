#!/usr/bin/env bash
# Heterogeneity in Gavel's setting (issue #13 item 7b): type-agnostic
# placement (first-fit, best-fit, random) against `fastest-fit` on Gavel's
# simulated cluster, 36 K80 + 36 P100 + 36 V100 (Narayanan et al., OSDI'20,
# "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
# Workloads"), as 9 nodes of 4 GPUs per type (groups listed K80, P100, V100:
# first-fit fills K80 nodes first; 64 cores / 256 GiB per node, jobs ask 1
# core / 1 GiB so only GPUs bind), written to OUT/gavel-108.json, with
# Gavel's throughput table (DATA_DIR/gpu-performance/gavel/
# simulation_throughputs.json, read unchanged by --speed-table).
# Trace (generic CSV, OUT/trace-RATE.csv): JOBS jobs (default 2,000) of one
# GPU each, Gavel's "continuous-single" setting; Poisson arrivals at RATE
# jobs/hour; duration as Gavel's simulator draws it (scheduler/utils.py
# `_generate_duration`, stanford-futuredata/gavel): 60 x 10^x seconds with x
# uniform in [1.5, 3] with probability 0.8, in [3, 4] otherwise, a run time
# on a V100 (`--measured-on V100M16`); the job's class is drawn by schedsim
# uniformly from the table's 26 models x batch sizes (Gavel's table has no
# `default` class; `--seed 1` and the job's position), as Gavel draws job
# types uniformly. Random numbers: MINSTD (x = 48271 x mod 2^31-1, seed 1),
# so every awk gives the same trace. Queue fifo (single-GPU jobs: fifo and
# skip start the same jobs).
# Writes OUT/table.csv (and prints it): rate, policy, jobs done, mean /
# p50 / p95 JCT (h), mean queue time (h), makespan (h), and
# ratio = the type-agnostic policy's mean JCT / fastest-fit's at that rate.
#   scripts/gavel_heterogeneity.sh [OUT] [DATA_DIR]   (SCHEDSIM= binary;
#   RATES="0.5 1 ..." and JOBS=N in the environment change the grid)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/gavel}
DATA=${2:-../shared/data}
BIN=${SCHEDSIM:-build/schedsim}
JOBS=${JOBS:-2000}
RATES=${RATES:-"1 2 3 4 5 6"}
TABLE_FILE=$DATA/gpu-performance/gavel/simulation_throughputs.json
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
[ -r "$TABLE_FILE" ] || { echo "gavel_heterogeneity.sh: $TABLE_FILE not found (see README, Data)" >&2; exit 2; }
case "$JOBS" in ""|*[!0-9]*) echo "gavel_heterogeneity.sh: JOBS must be a number" >&2; exit 2 ;; esac
mkdir -p "$OUT"
. scripts/lib/summary_json.sh # json KEY [SUBKEY] FILE

cat >"$OUT/gavel-108.json" <<'EOF'
{
  "name": "gavel-108",
  "description": "Gavel's simulated cluster (OSDI'20): 36 K80 + 36 P100 + 36 V100, here 9 nodes of 4 GPUs per type; written by scripts/gavel_heterogeneity.sh",
  "node_groups": [
    {"name": "k80", "count": 9, "gpu_model": "K80", "gpus_per_node": 4, "cpu_milli": 64000, "memory_mib": 262144, "gpu_mode": "exclusive"},
    {"name": "p100", "count": 9, "gpu_model": "P100", "gpus_per_node": 4, "cpu_milli": 64000, "memory_mib": 262144, "gpu_mode": "exclusive"},
    {"name": "v100", "count": 9, "gpu_model": "V100M16", "gpus_per_node": 4, "cpu_milli": 64000, "memory_mib": 262144, "gpu_mode": "exclusive"}
  ]
}
EOF

gen_trace() { # RATE FILE
  awk -v rate="$1" -v n="$JOBS" 'BEGIN {
    M = 2147483647; x = 1
    print "id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model"
    t = 0
    for (i = 0; i < n; i++) {
      x = (x * 48271) % M; u = x / M               # (0, 1)
      t += -log(u) / rate * 3600                   # exponential gap, s
      x = (x * 48271) % M; a = x / M
      x = (x * 48271) % M; b = x / M
      e = (a >= 0.8) ? 3 + b : 1.5 + 1.5 * b
      printf "gavel-%d,%.6f,%.6f,1,1000,1000,1024,\n", i, t, 60 * 10 ^ e
    }
  }' >"$2"
}

TABLE=$OUT/table.csv
echo "rate_per_h,policy,done,jct_mean_h,jct_p50_h,jct_p95_h,queue_mean_h,makespan_h,ratio_vs_fastest_fit" >"$TABLE"
for rate in $RATES; do
  case "$rate" in ""|*[!0-9.]*) echo "gavel_heterogeneity.sh: bad rate '$rate'" >&2; exit 2 ;; esac
  tr=$OUT/trace-$rate.csv
  gen_trace "$rate" "$tr"
  declare -A MEAN=()
  rows=""
  for pol in fastest-fit first-fit best-fit random; do
    d=$OUT/rate-$rate/$pol
    mkdir -p "$d"
    if ! "$BIN" run --quiet --cluster "$OUT/gavel-108.json" --trace "$tr" --trace-format generic \
      --policy "$pol" --queue fifo --seed 1 --speed catalog --speed-table "$TABLE_FILE" \
      --measured-on V100M16 --out "$d" >"$d.log" 2>&1; then
      echo "gavel_heterogeneity.sh: run failed: rate $rate $pol (see $d.log)" >&2
      exit 1
    fi
    s=$d/summary.json
    MEAN[$pol]=$(json jct_s mean "$s")
    rows+=$(awk -v r="$rate" -v p="$pol" -v done="$(json jobs_completed "$s")" \
      -v jm="${MEAN[$pol]}" -v j5="$(json jct_s p50 "$s")" -v j9="$(json jct_s p95 "$s")" \
      -v qm="$(json queue_time_s mean "$s")" -v ms="$(json makespan_s "$s")" -v ff="${MEAN[fastest-fit]}" \
      'BEGIN { printf "%s,%s,%d,%.2f,%.2f,%.2f,%.2f,%.1f,%.2f\n", r, p, done, jm / 3600,
                 j5 / 3600, j9 / 3600, qm / 3600, ms / 3600, (ff > 0 ? jm / ff : 0) }')$'\n'
  done
  printf '%s' "$rows" >>"$TABLE"
done
column -s, -t <"$TABLE"
echo "table: $TABLE; runs: $OUT/rate-*/; cluster: $OUT/gavel-108.json"
