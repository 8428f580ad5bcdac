#!/usr/bin/env bash
# Cloud bursting in Starburst's setting (issue #14 experiment 6a; Luo et al.,
# USENIX ATC'24): the Philly job list (82,247 jobs, measured on V100M16) on
# on-prem clusters of NODES x 8 V100M16 GPUs (whole GPUs, first-fit), with
# one cloud site of the same GPU at a unit price ($1 per GPU-hour, so cost
# = cloud GPU-hours, as Starburst counts it), unlimited capacity, no
# start-up delay and Starburst's data gravity of 0.25 h per cloud job
# (transfer_s 900, billed). Waiting policies: never (on-prem only, the
# baseline), no-wait, constant:3600 (Starburst's 1 h on Philly) and
# compute-wait:0.076 (k = 0.076 h per GPU-hour on Philly). Queues: fifo
# (head-of-line blocking), skip (out-of-order over the whole queue:
# Starburst's "loop") and skip-cap30 (skip with --queue-cap 30: the newest
# jobs beyond 30 waiting leave at once, Starburst's max_queue_length of its
# Philly runs). --speed none: every job runs its trace duration on-prem and
# in the cloud (same GPU model either way).
# Statistics as Starburst's: the first and last SKIP jobs by submit time
# (ties in trace order) are left out (SKIP=5000 by default).
# Writes OUT/table.csv (and prints it): queue, nodes, GPUs, policy, jobs in
# the window, cloud jobs in it, cloud cost (USD = GPU-hours) of the window,
# mean JCT of the window (h), cost and mean JCT relative to no-wait (same
# queue and cluster), gpu_alloc_ratio_mean (on-prem utilization) and
# system_utilization_mean of the whole run; OUT/runs/Q-N-POLICY/ holds each
# run's outputs. Starburst's published ranges (its Figure 8 and abstract):
# compute-wait cuts cloud cost 54-91% against no-wait-like managers for at
# most 5.8% higher average JCT; the last lines print the ratios found here.
#   scripts/starburst.sh [OUT] [DATA_DIR]   (SCHEDSIM= binary; NODES="16 48
#   80 112 144", SKIP=5000, JOBS=N replays only the first N jobs of the file)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/starburst}
DATA=${2:-../shared/data}
BIN=${SCHEDSIM:-build/schedsim}
NODES=${NODES:-16 48 80 112 144}
SKIP=${SKIP:-5000}
JOBS=${JOBS:-}
QUEUES=${QUEUES:-fifo skip skip-cap30}
POLICIES="never no-wait constant:3600 compute-wait:0.076"
for v in "$SKIP" $NODES $JOBS; do
  case "$v" in *[!0-9]*|"") echo "starburst.sh: NODES, SKIP and JOBS must be numbers" >&2; exit 2 ;; esac
done
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
PT=$DATA/philly/philly.csv
[ -r "$PT" ] || { echo "starburst.sh: $PT not found (see README, Data)" >&2; exit 2; }
mkdir -p "$OUT/specs" "$OUT/runs"
. scripts/lib/summary_json.sh # json KEY [SUBKEY] FILE
if [ -n "$JOBS" ]; then head -n $((JOBS + 1)) "$PT" >"$OUT/philly.csv"; else cp "$PT" "$OUT/philly.csv"; fi

# window FILE: "jobs cloud_jobs cloud_cost mean_jct_h" over the jobs.csv rows
# left after dropping the first and last SKIP by (submit, trace order).
window() {
  awk -F, 'NR > 1 && $10 == "completed"' "$1" | sort -t, -k2,2g -k1,1V |
    awk -F, -v skip="$SKIP" '{ row[NR] = $0 } END {
      for (i = skip + 1; i <= NR - skip; i++) {
        split(row[i], f, ","); n++; jct += f[9]
        if (f[20] != "onprem") { c++; cost += f[21] } }
      printf "%d %d %.6f %.6f\n", n, c, cost, n ? jct / n / 3600 : 0 }'
}

echo "queue,nodes,gpus,policy,jobs_window,cloud_jobs,cloud_cost_usd,jct_mean_h,cost_vs_no_wait,jct_vs_no_wait,onprem_util,system_util" >"$OUT/table.csv"
for q in $QUEUES; do
  for n in $NODES; do
    spec=$OUT/specs/philly-$n.json
    cat >"$spec" <<EOF
{"name": "philly-$n", "node_groups": [{"name": "v100", "count": $n, "gpu_model": "V100M16",
  "gpus_per_node": 8, "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "exclusive"}],
 "cloud": [{"name": "cloud", "gpu_model": "V100M16", "on_demand_per_gpu_hour": 1,
  "startup_s": 0, "transfer_s": 900}]}
EOF
    for p in $POLICIES; do
      tag=${p%%:*}
      d=$OUT/runs/$q-$n-$tag
      cap=()
      case $q in *-cap*) cap=(--queue-cap "${q#*-cap}") ;; esac
      "$BIN" run --cluster "$spec" --trace "$OUT/philly.csv" --trace-format philly \
        --policy first-fit --queue "${q%%-cap*}" "${cap[@]}" --burst "$p" --speed none --quiet --out "$d" >/dev/null
      read -r jobs cj cost jct < <(window "$d/jobs.csv")
      echo "$q $n $p $jobs $cj $cost $jct $(json gpu_alloc_ratio_mean "$d/summary.json") $(json system_utilization_mean "$d/summary.json")"
    done | awk -v OFS=, -v q="$q" -v n="$n" '
      { p[NR] = $3; j[NR] = $4; c[NR] = $5; cost[NR] = $6; jct[NR] = $7; u[NR] = $8; s[NR] = $9
        if ($3 == "no-wait") { bc = $6; bj = $7 } }
      END { for (i = 1; i <= NR; i++)
        printf "%s,%d,%d,%s,%d,%d,%.2f,%.4f,%s,%s,%.4f,%.4f\n", q, n, 8 * n, p[i], j[i], c[i],
          cost[i], jct[i], (bc > 0 ? sprintf("%.4f", cost[i] / bc) : "-"),
          (bj > 0 ? sprintf("%.4f", jct[i] / bj) : "-"), u[i], s[i] }' >>"$OUT/table.csv"
  done
done
cat "$OUT/table.csv"
# The ratios next to Starburst's ranges.
awk -F, 'NR > 1 && $4 != "never" && $4 != "no-wait" && $9 != "-" {
  k = $1 " " $4; if (!(k in lo) || $9 < lo[k]) lo[k] = $9; if (!(k in hi) || $9 > hi[k]) hi[k] = $9
  if (!(k in jl) || $10 < jl[k]) jl[k] = $10; if (!(k in jh) || $10 > jh[k]) jh[k] = $10 }
  END { for (k in lo) printf "%s: cloud cost %.0f%%..%.0f%% of no-wait (a %.0f%%..%.0f%% cut), mean JCT x %.3f..%.3f\n",
          k, 100 * lo[k], 100 * hi[k], 100 * (1 - hi[k]), 100 * (1 - lo[k]), jl[k], jh[k] }' "$OUT/table.csv" | sort
echo "Starburst (ATC'24): cloud cost cut 54-91% against existing managers, average JCT at most +5.8%"
