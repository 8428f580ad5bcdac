#!/usr/bin/env bash
# Composable GPU pools against fixed GPU servers (issue #15 item 4; the model
# and its parameters: sim/README.md "Composable GPU pools").
#
# (a) Fill mode (the FGD paper's): the Alibaba default trace on its 6,212
#     GPUs in three arrangements of the same GPUs, nodes and CPU/memory:
#       fixed   the node list as JSON (one node group per node shape);
#       pooled  per node shape, each run of 4 nodes keeps floor(g/2) of its g
#               GPUs and puts the other ceil(g/2) x 4 into one chassis all
#               four reach, at most 8 composed GPUs per host (8-GPU nodes:
#               4 local + a 16-GPU chassis per 4 hosts); the 0-3 nodes left
#               over in a shape stay fixed;
#       full    per node shape, one chassis with every GPU of the shape,
#               reachable from every node of it, at most 8 per host (the
#               upper bound: nothing is tied to a server);
#     with best-fit, fgd and compose-aware: median unallocated GPU % at
#     arrived 100% and 130% and the median of failed pods over the seeds
#     (OUT/fill.csv).
# (b) Replay: the Philly trace (whole GPUs, gangs over nodes) on 1,000
#     A100-80GB GPUs as 125 fixed 8-GPU servers vs 124 hosts with 4 local
#     GPUs + 31 16-GPU chassis (4 hosts each, 8 per host) + 1 fixed server,
#     attach latency 5..900 s (detach 10 s, fabric speed 0.95), best-fit and
#     compose-aware, queue skip: queue time and JCT (OUT/philly.csv).
# (c) A control for (a): its arrangements with CPU and memory unbounded,
#     best-fit (OUT/fill_unbounded.csv): what the GPU-model constraints alone
#     leave unallocated.
# Results and their reading: sim/README.md "Composable GPU pools".
#
#   scripts/pools_experiment.sh [OUT] [DATA_DIR]
# Environment: SCHEDSIM (binary, default build/schedsim), SEEDS (fill seeds,
# default 42-51), POLICIES (fill, default "best-fit fgd compose-aware"),
# ATTACH (attach latencies, default "5 30 120 300 900"), PHILLY_JOBS (only
# the first N jobs of Philly; default all), NODES (use only the first N nodes
# of the node list; default all), SKIP_FILL=1 / SKIP_PHILLY=1, CONTROL=0.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/pools}
DATA=${2:-../shared/data}
BIN=${SCHEDSIM:-build/schedsim}
SEEDS=${SEEDS:-42-51}
POLICIES=${POLICIES:-best-fit fgd compose-aware}
ATTACH=${ATTACH:-5 30 120 300 900}
if [ ! -x "$BIN" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target schedsim >/dev/null
fi
. scripts/lib/summary_json.sh
mkdir -p "$OUT"
A=$DATA/alibaba-gpu-v2023

# spec ARRANGEMENT NODE_CSV > JSON: the three arrangements above. Node shapes
# (model, GPUs, CPU, memory) in order of first appearance.
spec() {
  awk -F, -v mode="$1" -v nmax="${NODES:-0}" '
    NR == 1 { next }
    nmax > 0 && NR - 1 > nmax { next }
    {
      key = $5 "," $4 "," $2 "," $3
      if (!(key in n)) { order[++k] = key; n[key] = 0 }
      n[key]++
    }
    function group(name, cnt, model, g, cpu, mem) {
      printf "%s\n    {\"name\": \"%s\", \"count\": %d, \"gpu_model\": \"%s\", \"gpus_per_node\": %d, \"cpu_milli\": %d, \"memory_mib\": %d}", (ng++ ? "," : ""), name, cnt, model, g, cpu, mem
    }
    function pool(name, cnt, model, gpus, hg, hpp) {
      printf "%s\n    {\"name\": \"%s\", \"count\": %d, \"gpu_model\": \"%s\", \"gpus\": %d, \"hosts_group\": \"%s\", \"hosts_per_pool\": %d, \"max_per_host\": 8}", (np++ ? "," : ""), name, cnt, model, gpus, hg, hpp
    }
    END {
      printf "{\n  \"name\": \"alibaba-%s\",\n  \"node_groups\": [", mode
      for (i = 1; i <= k; i++) {
        split(order[i], f, ",")
        model = f[1]; g = f[2]; cpu = f[3]; mem = f[4]; c = n[order[i]]
        name = "s" i "-" model "-" g "g"
        if (mode == "fixed") {
          group(name, c, model, g, cpu, mem)
        } else if (mode == "pooled") {
          ch = int(c / 4)
          if (ch > 0) group(name "-h", 4 * ch, model, int(g / 2), cpu, mem)
          if (c - 4 * ch > 0) group(name "-f", c - 4 * ch, model, g, cpu, mem)
          if (ch > 0) { pch[i] = ch; pg[i] = 4 * (g - int(g / 2)) }
        } else {
          group(name "-h", c, model, 0, cpu, mem)
          pch[i] = 1; pg[i] = c * g; php[i] = c
        }
      }
      printf "\n  ]"
      if (mode != "fixed") {
        printf ",\n  \"pools\": ["
        for (i = 1; i <= k; i++) {
          if (!(i in pch)) continue
          split(order[i], f, ",")
          name = "s" i "-" f[1] "-" f[2] "g"
          pool(name "-pool", pch[i], f[1], pg[i], name "-h", mode == "pooled" ? 4 : php[i])
        }
        printf "\n  ]"
      }
      printf "\n}\n"
    }' "$2"
}

# ---------------------------------------------------------------- (a) fill
if [ "${SKIP_FILL:-0}" != 1 ]; then
  FT=$OUT/fill.csv
  echo "arrangement,policy,gpus,unalloc_pct_100,unalloc_pct_130,failed_pods_median" >"$FT"
  for arr in fixed pooled full; do
    spec "$arr" "$A/openb_node_list_gpu_node.csv" >"$OUT/alibaba-$arr.json"
    for p in $POLICIES; do
      d=$OUT/fill/$arr/$p
      mkdir -p "$(dirname "$d")"
      "$BIN" fill --cluster "$OUT/alibaba-$arr.json" --trace "$A/openb_pod_list_default.csv" \
        --policy "$p" --seeds "$SEEDS" --out "$d" >"$d.log" 2>&1 || {
        echo "failed: fill $arr $p (see $d.log)" >&2
        exit 1
      }
      S=$d/summary.json
      u100=$(json median_at_100 unalloc_pct "$S")
      u130=$(json median_at_130 unalloc_pct "$S")
      failed=$(awk '$1 == "\"failed\":" { gsub(/,/, "", $2); print $2 }' "$S" | sort -n |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
      echo "$arr,$p,$(json gpus "$S"),$u100,$u130,$failed" >>"$FT"
    done
  done
  echo "== fill: median unallocated GPU % over the seeds, median failed pods"
  column -s, -t "$FT"
fi

# -------------------------------------------------------------- (b) Philly
if [ "${SKIP_PHILLY:-0}" != 1 ]; then
  if [ ! -r "$DATA/philly/philly.csv" ]; then
    echo "skipped philly: $DATA/philly/philly.csv not found" >&2
    exit 0
  fi
  TR=$DATA/philly/philly.csv
  if [ -n "${PHILLY_JOBS:-}" ]; then
    head -n $((PHILLY_JOBS + 1)) "$TR" >"$OUT/philly-head.csv"
    TR=$OUT/philly-head.csv
  fi
  M=A100-SXM4-80GB
  cat >"$OUT/philly-fixed.json" <<EOF
{"name": "a100-1000-fixed", "node_groups": [
  {"name": "server", "count": 125, "gpu_model": "$M", "gpus_per_node": 8,
   "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "exclusive"}]}
EOF
  PT=$OUT/philly.csv
  echo "cluster,attach_s,policy,queue_mean_s,queue_p50_s,queue_p95_s,jct_mean_s,jct_p95_s,attaches,attach_wait_s,composed_gpu_hours" >"$PT"
  row() { # CLUSTER ATTACH POLICY DIR
    local S=$4/summary.json
    local pa pw ph # "-" without pools
    pa=$(json pools attaches "$S") pw=$(json pools attach_wait_s "$S") ph=$(json pools composed_gpu_hours "$S")
    echo "$1,$2,$3,$(json queue_time_s mean "$S"),$(json queue_time_s p50 "$S"),$(json queue_time_s p95 "$S"),$(json jct_s mean "$S"),$(json jct_s p95 "$S"),${pa:--},${pw:--},${ph:--}" >>"$PT"
  }
  for p in best-fit compose-aware; do
    d=$OUT/philly/fixed/$p
    mkdir -p "$(dirname "$d")"
    "$BIN" run --quiet --cluster "$OUT/philly-fixed.json" --trace "$TR" --policy "$p" \
      --queue skip --out "$d" >"$d.log" 2>&1 || { echo "failed: philly fixed $p (see $d.log)" >&2; exit 1; }
    row fixed - "$p" "$d"
    for a in $ATTACH; do
      c=$OUT/philly-pooled-$a.json
      cat >"$c" <<EOF
{"name": "a100-1000-pooled-$a", "node_groups": [
  {"name": "host", "count": 124, "gpu_model": "$M", "gpus_per_node": 4,
   "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "exclusive"},
  {"name": "server", "count": 1, "gpu_model": "$M", "gpus_per_node": 8,
   "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "exclusive"}],
 "pools": [{"name": "chassis", "count": 31, "gpus": 16, "hosts_group": "host",
   "hosts_per_pool": 4, "max_per_host": 8, "attach_s": $a, "detach_s": 10,
   "fabric_speed": 0.95}]}
EOF
      d=$OUT/philly/pooled-$a/$p
      mkdir -p "$(dirname "$d")"
      "$BIN" run --quiet --cluster "$c" --trace "$TR" --policy "$p" --queue skip \
        --out "$d" >"$d.log" 2>&1 || { echo "failed: philly pooled $a $p (see $d.log)" >&2; exit 1; }
      row pooled "$a" "$p" "$d"
    done
  done
  echo "== philly: queue time and JCT, fixed vs pooled by attach latency"
  column -s, -t "$PT"
fi

# ------------------------------------------------- (c) control for (a)
# The same three arrangements with every node's CPU and memory unbounded
# (4,000 cores, 40 TB), best-fit: what is left unallocated then is the
# pods' GPU-model constraints alone (OUT/fill_unbounded.csv, columns as
# fill.csv).
if [ "${SKIP_FILL:-0}" != 1 ] && [ "${CONTROL:-1}" = 1 ]; then
  FU=$OUT/fill_unbounded.csv
  echo "arrangement,policy,gpus,unalloc_pct_100,unalloc_pct_130,failed_pods_median" >"$FU"
  for arr in fixed pooled full; do
    sed -E 's/"cpu_milli": [0-9]+/"cpu_milli": 4000000/; s/"memory_mib": [0-9]+/"memory_mib": 40000000/' \
      "$OUT/alibaba-$arr.json" >"$OUT/alibaba-$arr-unbounded.json"
    d=$OUT/fill_unbounded/$arr/best-fit
    mkdir -p "$(dirname "$d")"
    "$BIN" fill --cluster "$OUT/alibaba-$arr-unbounded.json" --trace "$A/openb_pod_list_default.csv" \
      --policy best-fit --seeds "$SEEDS" --out "$d" >"$d.log" 2>&1 || {
      echo "failed: unbounded fill $arr (see $d.log)" >&2
      exit 1
    }
    S=$d/summary.json
    failed=$(awk '$1 == "\"failed\":" { gsub(/,/, "", $2); print $2 }' "$S" | sort -n |
      awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    echo "$arr,best-fit,$(json gpus "$S"),$(json median_at_100 unalloc_pct "$S"),$(json median_at_130 unalloc_pct "$S"),$failed" >>"$FU"
  done
  echo "== control: CPU and memory unbounded (best-fit)"
  column -s, -t "$FU"
fi
