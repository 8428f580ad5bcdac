#!/usr/bin/env bash
# Experiment 6(c) of issue #14: the Alibaba default trace with its BE pods
# preemptible on its own cluster (openb_pod_list_default.csv on
# openb_node_list_gpu_node.csv). Does letting best-effort pods borrow idle
# GPUs, evicted when an LS or Guaranteed pod cannot otherwise start, keep
# the high-priority queue times low, and how much BE work is lost?
#
# On its own cluster the trace never queues (its pods ask ~14 GPUs on
# average over the 149-day span of a 6,212-GPU cluster: it was made for
# fill mode), so the script also replays it under load: the cluster cut to
# every K-th node of the list (FRACTIONS="1 4 8": 1 = the whole cluster;
# every K-th keeps the GPU-model mix), and the arrivals compressed F-fold
# (COMPRESS=1000: creation times / F, whole seconds; every pod keeps its
# duration). Per cluster, one replay per mode (policy best-fit, queue
# priority: Guaranteed > LS > Burstable > BE, --speed none):
#   none          today: BE pods run on any free GPU and are never evicted
#   borrow-ckC    --preemptible BE --checkpoint-interval C for each C in
#                 CHECKPOINTS="0 1800" (an evicted pod keeps whole C-second
#                 intervals of progress; 0 = it restarts from scratch)
#   no-be         the trace without its BE pods: what LS/Guaranteed get
#                 when BE is absent altogether (the bound borrowing can
#                 approach)
# Every replay has --slo SLO (default Guaranteed:60,LS:600) so that
# summary.json has by_class.
# Writes OUT/table.csv (and prints it), one row per cluster x mode:
#   nodes_every,gpus,mode,ls_jobs,ls_queue_mean_s,ls_queue_p95_s,
#   ls_queue_p99_s,ls_slo_misses,g_jobs,g_queue_mean_s,g_queue_max_s,
#   g_slo_misses,be_jobs,be_queue_mean_s,be_jct_mean_s,be_preemptions,
#   be_lost_gpu_hours,gpu_alloc_ratio_mean
# (a class the trace lacks gives "-"), and each replay in OUT/<K>/<mode>/.
#   scripts/preempt_borrowing.sh [OUT] [DATA_DIR]
# Environment: SCHEDSIM (binary), FRACTIONS, COMPRESS, CHECKPOINTS, SLO,
# JOBS (only the first N pods; default all), TRACE_FILE and NODE_FILE
# (another pod list and node list in the same formats; tests use them).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/preempt-borrowing}
DATA=${2:-../shared/data}
BIN=${SCHEDSIM:-build/schedsim}
FRACTIONS=${FRACTIONS:-"1 4 8"}
COMPRESS=${COMPRESS:-1000}
CHECKPOINTS=${CHECKPOINTS:-"0 1800"}
SLO=${SLO:-Guaranteed:60,LS:600}
JOBS=${JOBS:-}
TRACE_FILE=${TRACE_FILE:-$DATA/alibaba-gpu-v2023/openb_pod_list_default.csv}
NODE_FILE=${NODE_FILE:-$DATA/alibaba-gpu-v2023/openb_node_list_gpu_node.csv}
me=preempt_borrowing.sh
num() { case "$2" in ""|*[!0-9]*) echo "$me: $1 must be a whole number (got '$2')" >&2; exit 2 ;; esac; }
for k in $FRACTIONS; do num FRACTIONS "$k"; [ "$k" -ge 1 ] || { echo "$me: FRACTIONS must be >= 1" >&2; exit 2; }; done
num COMPRESS "$COMPRESS"
[ "$COMPRESS" -ge 1 ] || { echo "$me: COMPRESS must be >= 1" >&2; exit 2; }
for c in $CHECKPOINTS; do num CHECKPOINTS "$c"; done
[ -z "$JOBS" ] || num JOBS "$JOBS"
[ -r "$TRACE_FILE" ] || { echo "$me: $TRACE_FILE not found (see README, Data)" >&2; exit 2; }
[ -r "$NODE_FILE" ] || { echo "$me: $NODE_FILE not found (see README, Data)" >&2; exit 2; }
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
mkdir -p "$OUT"

# The trace, compressed: creation / F (whole seconds), scheduled = creation,
# deletion = creation + the pod's duration (deletion - scheduled, or
# deletion - creation for a pod that was never scheduled: the reader's
# rule). Columns: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,
# pod_phase,creation_time,deletion_time,scheduled_time.
awk -F, -v OFS=, -v f="$COMPRESS" -v n="${JOBS:-0}" '
  NR == 1 { print; next }
  n > 0 && NR > n + 1 { exit }
  { d = ($11 == "") ? $10 - $9 : $10 - $11; c = int($9 / f)
    $9 = c; $11 = c; $10 = c + d; print }' "$TRACE_FILE" >"$OUT/trace.csv"
awk -F, 'NR == 1 || $7 != "BE"' "$OUT/trace.csv" >"$OUT/trace-no-be.csv"

# cls FILE CLASS KEY [SUB]: by_class.CLASS.KEY[.SUB] of a summary.json ("-"
# when the class is absent; cJSON prints one key per line).
cls() {
  awk -v c="\"$2\":" -v k="\"$3\":" -v s="${4:+\"$4\":}" '
    !in_c && $1 == c { in_c = 1; depth = 0 }
    in_c {
      if ($1 == k && s == "") { gsub(/,/, "", $2); print $2; found = 1; exit }
      if ($1 == k) in_k = 1
      if (in_k && $1 == s) { gsub(/,/, "", $2); print $2; found = 1; exit }
      depth += gsub(/\{/, "{"); depth -= gsub(/\}/, "}")
      if (depth <= 0 && $1 != c) exit
    }
    END { if (!found) print "-" }' "$1"
}
top() { awk -v k="\"$1\":" '$1 == k { gsub(/,/, "", $2); print $2; exit }' "$2"; }
gh() { [ "$1" = - ] && echo - || awk -v x="$1" 'BEGIN { printf "%.4f", x / 3600 }'; }

TABLE=$OUT/table.csv
echo "nodes_every,gpus,mode,ls_jobs,ls_queue_mean_s,ls_queue_p95_s,ls_queue_p99_s,ls_slo_misses,g_jobs,g_queue_mean_s,g_queue_max_s,g_slo_misses,be_jobs,be_queue_mean_s,be_jct_mean_s,be_preemptions,be_lost_gpu_hours,gpu_alloc_ratio_mean" >"$TABLE"
for k in $FRACTIONS; do
  mkdir -p "$OUT/$k"
  awk -v k="$k" 'NR == 1 || (NR - 2) % k == 0' "$NODE_FILE" >"$OUT/$k/nodes.csv"
  modes="none"
  for c in $CHECKPOINTS; do modes="$modes borrow-ck$c"; done
  modes="$modes no-be"
  for m in $modes; do
    args=() tr=$OUT/trace.csv
    case "$m" in
      borrow-ck*) args=(--preemptible BE --checkpoint-interval "${m#borrow-ck}") ;;
      no-be) tr=$OUT/trace-no-be.csv ;;
    esac
    d=$OUT/$k/$m
    "$BIN" run --quiet --cluster "$OUT/$k/nodes.csv" --trace "$tr" --policy best-fit \
      --queue priority --speed none --slo "$SLO" "${args[@]}" --out "$d" >/dev/null
    f=$d/summary.json
    printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$k" "$(top gpus "$f")" "$m" \
      "$(cls "$f" LS jobs)" "$(cls "$f" LS queue_time_s mean)" "$(cls "$f" LS queue_time_s p95)" \
      "$(cls "$f" LS queue_time_s p99)" "$(cls "$f" LS slo_misses)" \
      "$(cls "$f" Guaranteed jobs)" "$(cls "$f" Guaranteed queue_time_s mean)" \
      "$(cls "$f" Guaranteed queue_time_s max)" "$(cls "$f" Guaranteed slo_misses)" \
      "$(cls "$f" BE jobs)" "$(cls "$f" BE queue_time_s mean)" "$(cls "$f" BE jct_s mean)" \
      "$(cls "$f" BE preemptions)" "$(gh "$(cls "$f" BE lost_gpu_seconds)")" \
      "$(top gpu_alloc_ratio_mean "$f")" >>"$TABLE"
  done
done
cat "$TABLE"
