#!/usr/bin/env bash
# MIG on the schedsim command line: the example clusters of every mode load
# and replay with --check, MIG outputs (summary keys, jobs.csv and
# timeline.csv columns), byte-identical reruns, exit status 2 with the file
# and key named for bad specs, bad --mig-map, unsatisfiable --mig-requests
# and bad mix files, `generate --mix`, and the scenario script's syntax.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
EX=$SRC/sim/examples/mig
. "$(dirname "$0")/lib/cli_harness.sh"

# ---- a small workload of the scenario (a) mix
expect 0 "" -- "$BIN" generate --mix "$EX/inference-dev-mix.json" --jobs 300 --seed 3 --out "$T/w.csv"
[ "$(wc -l <"$T/w.csv")" = 301 ] && ok || bad "generate --mix wrote $(wc -l <"$T/w.csv") lines"
"$BIN" generate --help | grep -q -- "--mix" && ok || bad "generate --help lists --mix"

# ---- every example cluster of scenario (a), replayed with --check
for c in exclusive shared mig-static mig-balanced mig-dynamic mig-dynamic-k8s; do
  for p in mig-first-fit mig-best-fit mig-aware best-fit; do
    expect 0 "" -- "$BIN" run --cluster "$EX/a100-20-$c.json" --trace "$T/w.csv" \
      --policy "$p" --queue skip --check --quiet --out "$T/$c-$p"
  done
done
for c in mig-static mig-dynamic; do
  s=$T/$c-mig-aware/summary.json
  for k in '"mig":' '"slice_util_mean":' '"frag_slices_mean":' '"jobs_placed":' \
           '"instances_in_use_mean":' '"reconfig_wait_s":' '"per_job_hour":'; do
    grep -qF "$k" "$s" && ok || bad "$c summary.json lacks $k"
  done
  head -1 "$T/$c-mig-aware/timeline.csv" | grep -q ',mig_slices_used,mig_frag_slices$' && ok ||
    bad "$c timeline header: $(head -1 "$T/$c-mig-aware/timeline.csv")"
  head -1 "$T/$c-mig-aware/jobs.csv" | grep -q ',mig_instance,mig_reconfig_s,class,gpu_model,work_gpu_s,cost_usd$' && ok ||
    bad "$c jobs.csv header"
  grep -qE ',(1g|3g|4g)@[0-6],[0-9.]*,[^,]*,A100[^,]*,[0-9.]+,[0-9.]+$' "$T/$c-mig-aware/jobs.csv" && ok || bad "$c jobs.csv MIG instances"
done
grep -q '"mig":' "$T/shared-best-fit/summary.json" && bad "shared run has a mig object" || ok
head -1 "$T/shared-best-fit/timeline.csv" | grep -q mig && bad "shared timeline has MIG columns" || ok
grep -q '"reconfig_jobs":	0' "$T/mig-static-mig-aware/summary.json" && ok || bad "static MIG reconfigured"
grep -q '"no_node_fits":	0' "$T/mig-balanced-mig-aware/summary.json" && bad "balanced layout holds 4g jobs" || ok
"$BIN" run --cluster "$EX/a100-20-mig-dynamic.json" --trace "$T/w.csv" --policy mig-aware \
  --queue skip --quiet | grep -q "MIG (20 GPUs, --mig-map both)" && ok || bad "human summary MIG line"

# ---- determinism: a rerun gives byte-identical files
"$BIN" run --cluster "$EX/a100-20-mig-dynamic-k8s.json" --trace "$T/w.csv" --policy mig-aware \
  --queue fifo --quiet --out "$T/d1" >/dev/null 2>&1
"$BIN" run --cluster "$EX/a100-20-mig-dynamic-k8s.json" --trace "$T/w.csv" --policy mig-aware \
  --queue fifo --quiet --out "$T/d2" >/dev/null 2>&1
for f in summary.json jobs.csv timeline.csv; do
  cmp -s "$T/d1/$f" "$T/d2/$f" && ok || bad "rerun differs: $f"
done

# ---- --mig-map
expect 2 "--mig-map 'slices'" -- "$BIN" run --cluster "$EX/a100-20-mig-dynamic.json" --trace "$T/w.csv" --policy mig-aware --mig-map slices
for m in compute memory both; do
  expect 0 "" -- "$BIN" run --cluster "$EX/a100-20-mig-dynamic.json" --trace "$T/w.csv" \
    --policy mig-aware --mig-map "$m" --quiet --out "$T/map-$m"
  grep -q "\"map\":	\"$m\"" "$T/map-$m/summary.json" && ok || bad "map $m in summary"
done
# compute maps a 12.5% job to 1g, memory to 1g; 40% to 3g either way; but
# 50% to 4g (compute) and 3g (memory): the mixes differ.
grep -A6 '"jobs_requested"' "$T/map-compute/summary.json" | grep -q '"4g":	[1-9]' && ok || bad "compute asks 4g"
grep -A6 '"jobs_requested"' "$T/map-memory/summary.json" | grep -q '"4g":	0' && ok || bad "memory asks no 4g"

# ---- --mig-requests
first=$(awk -F, 'NR == 2 { print $1 }' "$T/w.csv")
printf 'job,profile,gpu_memory_gib,compute_fraction\n%s,3g.40gb,,\n' "$first" >"$T/req.csv"
expect 0 "" -- "$BIN" run --cluster "$EX/a100-20-mig-dynamic.json" --trace "$T/w.csv" \
  --policy mig-first-fit --mig-requests "$T/req.csv" --quiet --out "$T/req"
awk -F, -v j="$first" '$1 == j { print $14 }' "$T/req/jobs.csv" | grep -q '^3g@' && ok || bad "requested 3g.40gb: $(grep "^$first," "$T/req/jobs.csv")"
printf 'job,profile,gpu_memory_gib,compute_fraction\n%s,,200,\n' "$first" >"$T/req2.csv"
expect 2 "w.csv:2: job $first: no MIG profile of the cluster's models satisfies" -- \
  "$BIN" run --cluster "$EX/a100-20-mig-dynamic.json" --trace "$T/w.csv" --policy mig-aware --mig-requests "$T/req2.csv"
printf 'job,profile,gpu_memory_gib,compute_fraction\n%s,3g.20gb,,\n' "$first" >"$T/req3.csv"
expect 2 "req3.csv:2: field 'profile'" -- \
  "$BIN" run --cluster "$EX/a100-20-mig-dynamic.json" --trace "$T/w.csv" --policy mig-aware --mig-requests "$T/req3.csv"
expect 2 "the cluster has no MIG GPUs" -- \
  "$BIN" run --cluster "$EX/a100-20-shared.json" --trace "$T/w.csv" --policy best-fit --mig-requests "$T/req.csv"

# ---- bad cluster specs: exit 2, file and key named
spec() { # NAME GROUP-EXTRA
  printf '{"name": "x", "node_groups": [{"name": "g", "count": 1, "gpu_model": "%s", "gpus_per_node": 2, "cpu_milli": 1000, "memory_mib": 1000%s}]}\n' \
    "$2" "$3" >"$T/$1.json"
}
spec overlap A100-80GB ', "gpu_mode": "mig-static", "mig_layout": ["4g.40gb@0", "2g.20gb@2"]'
expect 2 "overlap.json: node_groups[0].mig_layout[1]: '2g.20gb@2' overlaps '4g.40gb@0'" -- \
  "$BIN" run --cluster "$T/overlap.json" --trace "$T/w.csv" --policy mig-aware
spec start H100 ', "gpu_mode": "mig-static", "mig_layout": ["1g.20gb@1"]'
expect 2 "start.json: node_groups[0].mig_layout[0]: '1g.20gb@1': 1g.20gb cannot start at slot 1" -- \
  "$BIN" run --cluster "$T/start.json" --trace "$T/w.csv" --policy mig-aware
spec prof H200 ', "gpu_mode": "mig-static", "mig_layout": ["1g.10gb@0"]'
expect 2 "unknown MIG profile '1g.10gb' for H200-SXM-141GB" -- \
  "$BIN" run --cluster "$T/prof.json" --trace "$T/w.csv" --policy mig-aware
spec nomig T4 ', "gpu_mode": "mig-dynamic"'
expect 2 "nomig.json: node_groups[0].gpu_mode: GPU model T4 has no MIG profiles" -- \
  "$BIN" run --cluster "$T/nomig.json" --trace "$T/w.csv" --policy mig-aware
spec key A100-80GB ', "gpu_mode": "mig-dynamic", "mig_reconfig": 5'
expect 2 "key.json: node_groups[0]: unknown key 'mig_reconfig'" -- \
  "$BIN" run --cluster "$T/key.json" --trace "$T/w.csv" --policy mig-aware

# ---- bad mix files
printf '{"arrival_rate_per_hour": 10, "shapes": [{"weight": 1, "cpu_milli": 0, "memory_mib": 0, "num_gpu": 1, "gpu_milli": 0}]}\n' >"$T/m1.json"
expect 2 "m1.json: shapes[0]" -- "$BIN" generate --mix "$T/m1.json" --out "$T/x.csv"
printf '{"shapes": [{"weight": 1, "cpu_milli": 0, "memory_mib": 0, "num_gpu": 0, "gpu_milli": 0}]}\n' >"$T/m2.json"
expect 2 "arrival_rate_per_hour" -- "$BIN" generate --mix "$T/m2.json" --out "$T/x.csv"
printf '{"arrival_rate_per_hour": 1, "colour": 1, "shapes": []}\n' >"$T/m3.json"
expect 2 "colour" -- "$BIN" generate --mix "$T/m3.json" --out "$T/x.csv"

# ---- models and the scenario script
"$BIN" models | grep -q 'MIG: 1g.10gb(1g 9.50GiB 14SM)' && ok || bad "models lists MIG profiles"
bash -n "$SRC/scripts/mig_scenarios.sh" && ok || bad "mig_scenarios.sh syntax"

cli_summary
