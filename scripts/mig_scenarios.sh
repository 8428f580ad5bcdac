#!/usr/bin/env bash
# MIG scenarios (issue #4): replays that compare whole-GPU allocation, milli
# sharing, static MIG and dynamic MIG, and prints one table per scenario.
#
#   scripts/mig_scenarios.sh [--bin SCHEDSIM] [--data DIR] [--out DIR]
#                            [--only a|b] [--seed N]
#
# (a) 20 A100-SXM4-80GB (sim/examples/mig/a100-20-*.json) at $2.50 per
#     GPU-hour serving sim/examples/mig/inference-dev-mix.json: 70% light
#     inference jobs (5-12.5% of a GPU), 30% development jobs (30-50%),
#     3,000 jobs generated with `schedsim generate --mix` (seed --seed).
#     Columns: jobs done / never started, concurrent jobs (time-weighted
#     mean of running jobs), GPU allocated and GPU asked (the running jobs'
#     own gpu_milli) in % of the cluster, MIG compute slices in use, MIG
#     fragmentation (free slices unusable by the smallest queued kind,
#     mean), queue time mean and p95, makespan, the cluster's cost per hour
#     and the cost per job-hour (cluster cost / hours run by jobs).
# (b) the Alibaba default pod list on a cluster of the same 6,212 GPUs and
#     node shapes with the models replaced by A100-80GB / H100-80GB
#     (sim/examples/mig/alibaba-a100-h100-*.json), every mode and every
#     policy. Replayed at the trace's own times the cluster is nearly idle
#     (0.2% allocated), so every job is submitted at time 0 with its own
#     duration: the first scheduling pass packs as many as each mode and
#     policy can, the rest queue. Columns: GPU jobs placed at time 0 (a
#     job on a new MIG instance starts after the reconfiguration),
#     GPU allocated % and MIG slices in use % after that pass, queue time
#     mean and p95 over all jobs, jobs that waited for a MIG
#     reconfiguration, the cluster's cost per hour, and that cost divided
#     by the GPU jobs running at time 0 (cost per concurrent job-hour at
#     saturation).
# Outputs (summary.json, jobs.csv, timeline.csv per run) go to OUT
# (default out/mig). Plain bash + POSIX awk. Exit status 0, 2 for bad usage
# or missing data (scenario (b) is skipped with a note when the Alibaba
# trace is absent unless --only b), 1 when a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=build/schedsim
DATA=../shared/data
OUT=out/mig
ONLY=""
SEED=1
usage() { sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mig_scenarios.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$ONLY" in ""|a|b) ;; *) echo "mig_scenarios.sh: --only a or b" >&2; exit 2 ;; esac
if [ ! -x "$BIN" ]; then
  bash scripts/setup.sh >/dev/null
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLSCHED_SANITIZE=OFF >/dev/null
  cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target schedsim >/dev/null
  BIN=build/schedsim
fi
EX=sim/examples/mig

# Flattens a cJSON-printed summary.json into "a.b.c=value" lines.
flat() {
  awk '
    { line = $0; gsub(/^[ \t]+|[ \t,]+$/, "", line) }
    line ~ /^"[^"]*":[ \t]*\{$/ { k = line; sub(/^"/, "", k); sub(/".*/, "", k)
                                 stack[++d] = k; next }
    line ~ /^\}/ { if (d > 0) d--; next }
    line ~ /^"[^"]*":/ {
      k = line; sub(/^"/, "", k); sub(/".*/, "", k)
      v = line; sub(/^"[^"]*":[ \t]*/, "", v); gsub(/"/, "", v)
      p = ""; for (i = 1; i <= d; i++) p = p stack[i] "."
      print p k "=" v
    }' "$1"
}
# Value of key path $2 in flattened file $1 (empty when absent).
val() { awk -F= -v k="$2" '$1 == k { print $2; exit }' "$1"; }

run() { # OUTDIR then schedsim run arguments
  local dir=$1; shift
  mkdir -p "$dir"
  if ! "$BIN" run "$@" --out "$dir" --quiet >"$dir/stdout.txt" 2>"$dir/stderr.txt"; then
    echo "mig_scenarios.sh: run failed: $* (see $dir/stderr.txt)" >&2
    cat "$dir/stderr.txt" >&2
    exit 1
  fi
  flat "$dir/summary.json" >"$dir/summary.flat"
}

# ------------------------------------------------------------------ (a)
scenario_a() {
  local A=$OUT/a
  mkdir -p "$A"
  "$BIN" generate --mix "$EX/inference-dev-mix.json" --seed "$SEED" \
    --out "$A/trace.csv" >/dev/null
  echo "(a) 20 x A100-SXM4-80GB at \$2.50/GPU-hour; 3,000 jobs: 70% inference (5-12.5% of a GPU), 30% dev (30-50%); queue skip, --mig-map both"
  printf '%-16s %-13s %6s %5s %7s %7s %7s %7s %6s %9s %9s %7s %7s %8s\n' \
    mode policy done never concur alloc% asked% slices% frag queue_s p95_s span_h '$/h' '$/job-h'
  local rows="exclusive:best-fit shared:best-fit shared:fgd
    mig-static:mig-first-fit mig-static:mig-best-fit mig-static:mig-aware
    mig-balanced:mig-aware
    mig-dynamic:mig-first-fit mig-dynamic:mig-best-fit mig-dynamic:mig-aware
    mig-dynamic-k8s:mig-first-fit mig-dynamic-k8s:mig-aware"
  for r in $rows; do
    local mode=${r%%:*} pol=${r#*:} d=$A/${r/:/_}
    "$BIN" policies | awk '{print $1}' | grep -qx "$pol" || continue
    run "$d" --cluster "$EX/a100-20-$mode.json" --trace "$A/trace.csv" \
      --policy "$pol" --queue skip --seed "$SEED"
    local f=$d/summary.flat
    awk -v mode="$mode" -v pol="$pol" \
      -v done="$(val "$f" jobs_completed)" -v never="$(val "$f" jobs_never_started)" \
      -v conc="$(val "$f" running_jobs_mean)" -v alloc="$(val "$f" gpu_alloc_ratio_mean)" \
      -v asked="$(val "$f" gpu_used_ratio_mean)" -v sl="$(val "$f" mig.slice_util_mean)" \
      -v frag="$(val "$f" mig.frag_slices_mean)" -v qm="$(val "$f" queue_time_s.mean)" \
      -v qp="$(val "$f" queue_time_s.p95)" -v span="$(val "$f" makespan_s)" \
      -v cost="$(val "$f" cost_usd.total)" -v cjh="$(val "$f" cost_usd.per_job_hour)" \
      'BEGIN {
         h = span / 3600
         printf "%-16s %-13s %6d %5d %7.1f %7.1f %7.1f %7s %6s %9.0f %9.0f %7.1f %7.2f %8.3f\n",
           mode, pol, done, never, conc, 100 * alloc, 100 * asked,
           sl == "" ? "-" : sprintf("%.1f", 100 * sl),
           frag == "" ? "-" : sprintf("%.1f", frag), qm, qp, h,
           (h > 0 ? cost / h : 0), cjh }'
  done
  echo
}

# ------------------------------------------------------------------ (b)
scenario_b() {
  local T=$DATA/alibaba-gpu-v2023/openb_pod_list_default.csv B=$OUT/b
  if [ ! -r "$T" ]; then
    echo "(b) skipped: $T not found (see README, Data)"
    [ "$ONLY" = b ] && exit 2
    return
  fi
  mkdir -p "$B"
  # Every job submitted at 0 with its own duration (deletion - scheduled,
  # or deletion - creation for pods that never got scheduled).
  awk -F, 'BEGIN { OFS = "," } NR == 1 { print; next }
           { s = ($11 == "") ? $9 : $11; d = $10 - s; $9 = 0; $10 = d
             if ($11 != "") $11 = 0; print }' "$T" >"$B/trace-t0.csv"
  echo "(b) Alibaba default trace (8,152 pods, all submitted at 0) on 6,212 A100-80GB/H100-80GB GPUs (node shapes of the trace's cluster); queue skip, --mig-map both"
  printf '%-16s %-15s %8s %7s %7s %9s %9s %8s %9s %10s\n' \
    mode policy gpujobs0 alloc0% slices0% queue_s p95_s reconfig '$/h' '$/job-h@0'
  local pols
  pols=$("$BIN" policies | awk '{print $1}')
  for mode in exclusive shared mig-static mig-dynamic mig-dynamic-k8s; do
    for pol in $pols; do
      local d=$B/${mode}_$pol
      run "$d" --cluster "$EX/alibaba-a100-h100-$mode.json" \
        --trace "$B/trace-t0.csv" --policy "$pol" --queue skip --seed "$SEED"
      local f=$d/summary.flat
      # The first timeline row is the state after the pass at time 0.
      local row0 started0
      row0=$(sed -n 2p "$d/timeline.csv")
      # GPU jobs placed in that pass: start - MIG reconfiguration wait = 0.
      started0=$(awk -F, 'NR > 1 && $6 != "" && $3 != "" && $3 - $15 == 0 { n++ }
                          END { print n + 0 }' "$d/jobs.csv")
      awk -v mode="$mode" -v pol="$pol" -v row0="$row0" -v g0="$started0" \
        -v gpus="$(val "$f" gpus)" -v qm="$(val "$f" queue_time_s.mean)" \
        -v qp="$(val "$f" queue_time_s.p95)" -v rj="$(val "$f" mig.reconfig_jobs)" \
        -v span="$(val "$f" makespan_s)" -v cost="$(val "$f" cost_usd.total)" \
        'BEGIN {
           n = split(row0, c, ",")
           h = span / 3600; ph = h > 0 ? cost / h : 0
           sl = (rj == "") ? "-" : sprintf("%.1f", 100 * c[n - 1] / (7 * gpus))
           printf "%-16s %-15s %8d %7.1f %7s %9.1f %9.1f %8s %9.0f %10.2f\n",
             mode, pol, g0, 100 * c[3], sl, qm, qp, (rj == "" ? "-" : rj), ph,
             (g0 > 0 ? ph / g0 : 0) }'
    done
  done
  echo
}

[ "$ONLY" = b ] || scenario_a
[ "$ONLY" = a ] || scenario_b
echo "outputs in $OUT/"
