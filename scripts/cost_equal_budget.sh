#!/usr/bin/env bash
# Equal-budget clusters (issue #13 item 7a): the same $/hour spent on
# A100-SXM4-80GB nodes, on H100-SXM5-80GB nodes, or on a mix, replaying the
# Alibaba default pod list and the Philly job list with the speed model on
# (`--speed catalog`). Catalog prices: A100-80GB $5.12, H100 $6.88 per
# GPU-hour, so 43 A100 nodes x 8 ($1,761.28/h) = 32 H100 nodes x 8
# ($1,761.28/h) exactly; the mix is 21 A100 + 16 H100 nodes ($1,740.80/h,
# 1.2% less: 43 x 5.12 = 32 x 6.88 has no integer split in between).
# Nodes: 8 GPUs, 256 cores / 2 TiB (A100), 224 cores / 2 TiB (H100),
# gpu_mode shared (the Alibaba pods ask fractions), pue 1.2 and
# node_overhead_w 1000 (assumptions, not measurements); specs are written to
# OUT/specs/. --energy-price 0.10 USD/kWh (an assumed round tariff).
# Policies best-fit (type-agnostic) and fastest-fit, queue skip.
#   - Alibaba: openb_pod_list_default.csv at its own times; none of its
#     8,152 pods names a gpu_spec, so none is constrained to a model the
#     A100/H100 clusters lack, and every duration is measured on G2 (the
#     trace's rule; G2 = V100 speed 1.0 in the built-in table, an
#     assumption). The script checks the first and stops if it fails.
#   - alibaba-t0: the same pods that ask for GPUs (7,064 of 8,152), all
#     submitted at time 0 with their own durations (as
#     scripts/mig_scenarios.sh (b)): at its own times the trace keeps these
#     clusters mostly idle for 150 days, so cost per work hour there is the
#     budget x the span; at time 0 the span is the queue drained at each
#     cluster's speed.
#   - Philly: measured on V100M16 (the reader's rule), 82,247 jobs.
# With JOBS=N in the environment only the first N jobs (file order) of each
# trace are replayed (the smoke test's cut); default: all.
# Writes OUT/table.csv (and prints it): trace, cluster, policy, GPUs,
# $/h, jobs done / never started, work_gpu_hours, cost_usd.total,
# cost_usd.per_work_hour (GPU-hour cost + energy cost per reference
# V100-hour of work), energy_cost_usd, mean and p95 JCT (h), mean queue
# time (h), energy_kwh.gpu and .facility, facility kWh per work hour,
# makespan (h). Each run's outputs are in OUT/TRACE/CLUSTER-POLICY/.
#   scripts/cost_equal_budget.sh [OUT] [DATA_DIR]     (SCHEDSIM= binary)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/cost}
DATA=${2:-../shared/data}
BIN=${SCHEDSIM:-build/schedsim}
JOBS=${JOBS:-}
PRICE=0.10
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
AT=$DATA/alibaba-gpu-v2023/openb_pod_list_default.csv
PT=$DATA/philly/philly.csv
for f in "$AT" "$PT"; do
  [ -r "$f" ] || { echo "cost_equal_budget.sh: $f not found (see README, Data)" >&2; exit 2; }
done
case "$JOBS" in ""|*[!0-9]*) [ -z "$JOBS" ] || { echo "cost_equal_budget.sh: JOBS must be a number" >&2; exit 2; } ;; esac
mkdir -p "$OUT/specs" "$OUT/traces"
. scripts/lib/summary_json.sh # json KEY [SUBKEY] FILE

# No Alibaba pod may be tied to a model: a gpu_spec would make it
# unplaceable on these clusters (it would count in jobs_never_started).
n_spec=$(awk -F, 'NR > 1 && $6 != "" { n++ } END { print n + 0 }' "$AT")
if [ "$n_spec" != 0 ]; then
  echo "cost_equal_budget.sh: $n_spec pods of $AT name a gpu_spec; this experiment assumes none" >&2
  exit 1
fi

cut_trace() { # SRC DST
  if [ -n "$JOBS" ]; then head -n $((JOBS + 1)) "$1" >"$2"; else cp "$1" "$2"; fi
}
cut_trace "$AT" "$OUT/traces/alibaba.csv"
cut_trace "$PT" "$OUT/traces/philly.csv"
# Every pod submitted at 0 with its own duration (deletion - scheduled, or
# deletion - creation for pods never scheduled), as scripts/mig_scenarios.sh
# (b) does, GPU pods only (a CPU-only pod does not speed up on any GPU and
# the longest, 2,817 h, would set the span on every cluster).
awk -F, 'BEGIN { OFS = "," } NR == 1 { print; next } $4 == 0 { next }
         { s = ($11 == "") ? $9 : $11; d = $10 - s; $9 = 0; $10 = d
           if ($11 != "") $11 = 0; print }' "$OUT/traces/alibaba.csv" >"$OUT/traces/alibaba-t0.csv"

group() { # NAME COUNT MODEL CPU_MILLI
  printf '    {"name": "%s", "count": %d, "gpu_model": "%s", "gpus_per_node": 8, "cpu_milli": %d, "memory_mib": 2097152, "gpu_mode": "shared"}' "$1" "$2" "$3" "$4"
}
declare -A RATE # cluster -> $/hour at catalog prices
spec() { # NAME A100_NODES H100_NODES
  local f=$OUT/specs/$1.json sep=""
  RATE[$1]=$(awk -v a="$2" -v h="$3" 'BEGIN { printf "%.2f", 8 * (a * 5.12 + h * 6.88) }')
  {
    printf '{\n  "name": "%s",\n  "description": "scripts/cost_equal_budget.sh: %d A100-80GB + %d H100 nodes of 8 GPUs",\n' "$1" "$2" "$3"
    printf '  "pue": 1.2, "node_overhead_w": 1000,\n  "node_groups": [\n'
    if [ "$2" -gt 0 ]; then group a100 "$2" A100-SXM4-80GB 256000; sep=",\n"; fi
    if [ "$3" -gt 0 ]; then printf '%b' "$sep"; group h100 "$3" H100-SXM5-80GB 224000; fi
    printf '\n  ]\n}\n'
  } >"$f"
}
spec a100 43 0
spec h100 0 32
spec mix 21 16

TABLE=$OUT/table.csv
echo "trace,cluster,policy,gpus,usd_per_h,done,never,work_gpu_h,cost_usd,usd_per_work_h,energy_usd,jct_mean_h,jct_p95_h,queue_mean_h,gpu_kwh,facility_kwh,kwh_per_work_h,makespan_h" >"$TABLE"
for trace in alibaba alibaba-t0 philly; do
  for cl in a100 h100 mix; do
    for pol in best-fit fastest-fit; do
      d=$OUT/$trace/$cl-$pol
      mkdir -p "$d"
      if ! "$BIN" run --quiet --cluster "$OUT/specs/$cl.json" --trace "$OUT/traces/$trace.csv" \
        --policy "$pol" --queue skip --speed catalog --energy-price "$PRICE" --out "$d" \
        >"$d.log" 2>&1; then
        echo "cost_equal_budget.sh: run failed: $trace $cl $pol (see $d.log)" >&2
        exit 1
      fi
      s=$d/summary.json
      awk -v t="$trace" -v c="$cl" -v p="$pol" -v g="$(json gpus "$s")" \
        -v a="${RATE[$cl]}" \
        -v done="$(json jobs_completed "$s")" -v nev="$(json jobs_never_started "$s")" \
        -v w="$(json work_gpu_hours "$s")" -v cost="$(json cost_usd total "$s")" \
        -v cpw="$(json cost_usd per_work_hour "$s")" -v eu="$(json energy_cost_usd "$s")" \
        -v jm="$(json jct_s mean "$s")" -v jp="$(json jct_s p95 "$s")" \
        -v qm="$(json queue_time_s mean "$s")" -v eg="$(json energy_kwh gpu "$s")" \
        -v ef="$(json energy_kwh facility "$s")" -v ms="$(json makespan_s "$s")" \
        'BEGIN { printf "%s,%s,%s,%d,%s,%d,%d,%.1f,%.0f,%.3f,%.0f,%.3f,%.3f,%.3f,%.0f,%.0f,%.3f,%.1f\n",
                   t, c, p, g, a, done, nev, w, cost, cpw, eu, jm / 3600, jp / 3600, qm / 3600,
                   eg, ef, (w > 0 ? ef / w : 0), ms / 3600 }' >>"$TABLE"
    done
  done
done
column -s, -t <"$TABLE"
echo "table: $TABLE; runs: $OUT/{alibaba,alibaba-t0,philly}/; specs: $OUT/specs/"
