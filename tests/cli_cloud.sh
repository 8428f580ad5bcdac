#!/usr/bin/env bash
# Cloud bursting and spot through the CLI (sim/README.md "Cloud bursting and
# spot"): a hand-computed burst (jobs.csv row, the bill to the cent, system
# vs on-prem utilization), a spot trace with checkpoints and the fall-back
# to on-demand, the errors (exit 2, naming file, line, field or key), compare
# and sweep pass-through, determinism, and the two experiments
# (scripts/starburst.sh, scripts/spot_deadline.sh) at tiny sizes with
# hand-checked figures (skipped without ../shared/data; a failure under
# CI=true).
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
DATA=${SCHEDSIM_SHARED_DATA:-$SRC/../shared/data}
. "$(dirname "$0")/lib/cli_harness.sh"
. "$SRC/scripts/lib/summary_json.sh"
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# One V100 on-prem (busy with a until 3600 s), a site with start-up 120 s
# and transfer 60 s.
cat >"$T/spec.json" <<'EOF'
{"name": "one-v100", "node_groups": [
  {"name": "n", "count": 1, "gpu_model": "V100M16", "gpus_per_node": 1,
   "cpu_milli": 8000, "memory_mib": 65536, "gpu_mode": "exclusive"}],
 "cloud": [{"name": "aws", "gpu_model": "V100M16", "on_demand_per_gpu_hour": 3.06,
   "spot_per_gpu_hour": 0.9731, "startup_s": 120, "transfer_s": 60}]}
EOF
cat >"$T/trace.csv" <<'EOF'
id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model
a,0,3600,1,1000,1000,1024,
b,10,1800,1,1000,1000,1024,
EOF
RUN=(run --cluster "$T/spec.json" --trace "$T/trace.csv" --policy first-fit --speed none --quiet)

# ---- constant:600: b leaves at 610 s, runs 790..2590 s, billed from 730 s:
# 1860 s x $3.06 / 3600 = $1.581; system utilization (1 + 0.516667) / 1.
expect 0 "" -- "$BIN" "${RUN[@]}" --burst constant:600 --out "$T/c"
[ "$(sed -n 2p "$T/c/jobs.csv")" = "b,10,790,2590,,,1000,780,2580,completed,0,0,0,,,,V100M16,0.000000,0.000000,aws,1.581000" ] \
  && ok || bad "constant:600: b's row: $(sed -n 2p "$T/c/jobs.csv")"
[ "$(sed -n 3p "$T/c/jobs.csv" | cut -d, -f20,21)" = "onprem,0.000000" ] && ok || bad "a ran on-prem"
[ "$(head -1 "$T/c/jobs.csv" | awk -F, '{ print NF, $20, $21 }')" = "21 site cloud_cost_usd" ] && ok \
  || bad "jobs.csv header ends with site,cloud_cost_usd"
[ "$(json cloud on_demand "$T/c/summary.json")" = 1.581 ] && ok || bad "cloud.cost_usd.on_demand 1.581"
[ "$(json cloud jobs "$T/c/summary.json")" = 1 ] && ok || bad "cloud.jobs 1"
near "$(json system_utilization_mean "$T/c/summary.json")" 1.5166666667 1e-9 && ok || bad "system utilization 1.516667"
[ "$(json gpu_alloc_ratio_mean "$T/c/summary.json")" = 1 ] && ok || bad "on-prem utilization 1"
near "$(json cloud gpu_hours "$T/c/summary.json")" 0.5166666667 1e-9 && ok || bad "cloud.gpu_hours 1860 s"
# compare.csv and sweep.csv carry the keys as columns.
expect 0 "" -- "$BIN" compare --cluster "$T/spec.json" --trace "$T/trace.csv" --policy first-fit \
  --speed none --burst constant:600 --out "$T/cmp" --quiet --no-plots
col=$(head -1 "$T/cmp/compare.csv" | tr , '\n' | grep -nx 'cloud.cost_usd.on_demand' | cut -d: -f1)
[ -n "$col" ] && [ "$(sed -n 2p "$T/cmp/compare.csv" | cut -d, -f"$col")" = 1.58 ] && ok \
  || bad "compare.csv cloud.cost_usd.on_demand column"
cmp -s "$T"/cmp/first-fit/jobs.csv "$T/c/jobs.csv" && ok || bad "compare's run = run"
cat >"$T/m.json" <<EOF
{"traces": ["trace.csv"], "clusters": ["spec.json"], "policies": ["first-fit"],
 "parameters": {"burst": ["never", "constant:600"], "speed": ["none"]}}
EOF
expect 0 "" -- "$BIN" sweep "$T/m.json" --out "$T/sw" --quiet
col=$(head -1 "$T/sw/sweep.csv" | tr , '\n' | grep -nx 'cloud.jobs' | cut -d: -f1)
[ "$(awk -F, -v c="$col" 'NR > 1 { print $c }' "$T/sw/sweep.csv" | sort | tr '\n' ' ')" = "0 1 " ] && ok \
  || bad "sweep over burst: cloud.jobs 0 and 1"

# ---- --queue-cap 1: a holds the GPU, b waits; with c arriving at 20 s
# the newest beyond 1 (c) leaves at once: starts 20 + 180 s.
printf 'c,20,100,1,1000,1000,1024,\n' | cat "$T/trace.csv" - >"$T/t3.csv"
expect 0 "" -- "$BIN" run --cluster "$T/spec.json" --trace "$T/t3.csv" --policy first-fit --speed none \
  --quiet --queue-cap 1 --out "$T/qc"
[ "$(grep '^c,' "$T/qc/jobs.csv" | cut -d, -f3,20)" = "200,aws" ] && [ "$(grep '^b,' "$T/qc/jobs.csv" | cut -d, -f3,20)" = "3600,onprem" ] \
  && ok || bad "queue cap 1: c leaves at 20 s, b waits: $(cut -d, -f1-4,20 "$T/qc/jobs.csv" | tr '\n' ' ')"

# ---- no cloud site, burst never: no cloud key, no extra column
expect 0 "" -- "$BIN" run --cluster builtin:default --trace "$T/trace.csv" --policy first-fit --quiet --out "$T/n"
grep -q '"cloud"\|system_utilization' "$T/n/summary.json" && bad "no cloud keys without sites" || ok
[ "$(head -1 "$T/n/jobs.csv" | awk -F, '{ print NF }')" = 19 ] && ok || bad "19 jobs.csv columns without cloud"

# ---- spot trace (sim/README.md; tests/test_cloud.c has the arithmetic):
# interrupted at 3500 and 6000 s, on-demand from 6000 s, done at 9800 s.
printf 'time_s,instances_available\n0,1\n3500,0\n4000,1\n6000,0\n' >"$T/spot.csv"
sed 's/"startup_s": 120, "transfer_s": 60/"startup_s": 0/' "$T/spec.json" >"$T/spec0.json"
printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\na,0,100000,1,1000,1000,1024,\nb,0,7200,1,1000,1000,1024,\n' >"$T/t2.csv"
SP=(run --cluster "$T/spec0.json" --trace "$T/t2.csv" --policy first-fit --speed none --quiet
  --burst no-wait --checkpoint-interval 1000 --restart-overhead 600 --deadline-slack 1.5)
expect 0 "" -- "$BIN" "${SP[@]}" --spot-trace "$T/spot.csv" --out "$T/s"
[ "$(grep '^b,' "$T/s/jobs.csv" | cut -d, -f3,4,20,21)" = "0,9800,aws,4.716681" ] && ok \
  || bad "spot trace: b runs 0..9800 s for \$1.486681 + \$3.23: $(grep '^b,' "$T/s/jobs.csv")"
[ "$(json cloud interruptions "$T/s/summary.json")" = 2 ] && ok || bad "2 interruptions"
[ "$(json cloud lost_gpu_hours "$T/s/summary.json")" = 0.25 ] && ok || bad "lost 900 s"
[ "$(json cloud on_demand "$T/s/summary.json")" = 3.23 ] && ok || bad "on-demand 3800 s = \$3.23"
# Seeded Poisson: the same seed gives the same file; rate 0 all spot.
expect 0 "" -- "$BIN" "${SP[@]}" --spot-rate 2 --seed 5 --out "$T/p1"
expect 0 "" -- "$BIN" "${SP[@]}" --spot-rate 2 --seed 5 --out "$T/p2"
cmp -s "$T/p1/jobs.csv" "$T/p2/jobs.csv" && cmp -s "$T/p1/summary.json" "$T/p2/summary.json" && ok \
  || bad "spot-rate runs are deterministic"
expect 0 "" -- "$BIN" "${SP[@]}" --spot-rate 0 --deadline-slack 3 --out "$T/p0"
near "$(json cloud spot "$T/p0/summary.json")" 1.9462 1e-9 && ok || bad "rate 0: 2 h x \$0.9731"

# ---- errors: exit 2, naming what is wrong
expect 2 "'bogus': expected never, no-wait, constant:SECONDS, compute-wait:K or star-wait:K" -- \
  "$BIN" "${RUN[@]}" --burst bogus --out "$T/e"
expect 2 "expected never, no-wait" -- "$BIN" "${RUN[@]}" --burst constant --out "$T/e"
expect 2 "expected never, no-wait" -- "$BIN" "${RUN[@]}" --burst no-wait:3 --out "$T/e"
expect 2 "expected never, no-wait" -- "$BIN" "${RUN[@]}" --burst compute-wait:-1 --out "$T/e"
expect 2 "'-1': expected a number >= 0" -- "$BIN" "${RUN[@]}" --spot-rate -1 --out "$T/e"
expect 2 "expected a number > 0" -- "$BIN" "${RUN[@]}" --deadline-slack 0 --out "$T/e"
expect 2 "--burst needs a cluster spec with cloud sites" -- \
  "$BIN" run --cluster builtin:default --trace "$T/trace.csv" --policy first-fit --burst no-wait --quiet --out "$T/e"
expect 2 "--queue-cap needs a cluster spec with cloud sites" -- \
  "$BIN" run --cluster builtin:default --trace "$T/trace.csv" --policy first-fit --queue-cap 5 --quiet --out "$T/e"
expect 2 "'0': expected 1..1e9" -- "$BIN" "${RUN[@]}" --queue-cap 0 --out "$T/e"
expect 2 "--spot-rate and --spot-trace exclude each other" -- \
  "$BIN" "${SP[@]}" --spot-rate 1 --spot-trace "$T/spot.csv" --out "$T/e"
printf 'time,n\n0,1\n' >"$T/b1.csv"
expect 2 "b1.csv:1: expected the header 'time_s,instances_available'" -- "$BIN" "${SP[@]}" --spot-trace "$T/b1.csv" --out "$T/e"
printf 'time_s,instances_available\n0,1\n5,2\n5,1\n' >"$T/b2.csv"
expect 2 "b2.csv:4: field 'time_s': times must increase" -- "$BIN" "${SP[@]}" --spot-trace "$T/b2.csv" --out "$T/e"
printf 'time_s,instances_available\n10,1\n' >"$T/b3.csv"
expect 2 "b3.csv:2: field 'time_s': the first row must be at time 0" -- "$BIN" "${SP[@]}" --spot-trace "$T/b3.csv" --out "$T/e"
printf 'time_s,instances_available\n0,x\n' >"$T/b4.csv"
expect 2 "b4.csv:2: field 'instances_available'" -- "$BIN" "${SP[@]}" --spot-trace "$T/b4.csv" --out "$T/e"
expect 2 "cannot open the spot trace" -- "$BIN" "${SP[@]}" --spot-trace "$T/none.csv" --out "$T/e"
sed 's/"transfer_s": 60/"transfer_s": 60, "egress": 1/' "$T/spec.json" >"$T/bad.json"
expect 2 "bad.json: cloud[0]: unknown key 'egress'" -- \
  "$BIN" run --cluster "$T/bad.json" --trace "$T/trace.csv" --policy first-fit --quiet --out "$T/e"
sed 's/"on_demand_per_gpu_hour": 3.06/"on_demand_per_gpu_hour": -3/' "$T/spec.json" >"$T/bad2.json"
expect 2 "bad2.json: 'cloud[0].on_demand_per_gpu_hour' must be a number" -- \
  "$BIN" run --cluster "$T/bad2.json" --trace "$T/trace.csv" --policy first-fit --quiet --out "$T/e"
# The example spec loads and runs.
expect 0 "" -- "$BIN" run --cluster "$SRC/sim/examples/a100-h100-cloud.json" --trace builtin:default \
  --policy best-fit --queue skip --burst constant:60 --quiet --out "$T/ex"
[ "$(json cloud jobs "$T/ex/summary.json")" -gt 0 ] && ok || bad "the example spec bursts jobs"

# ---- the experiments at tiny sizes
if [ -r "$DATA/philly/philly.csv" ]; then
  # 6a: the first 40 Philly jobs on 1 node, no window. On 1 x 8 GPUs with
  # no-wait every job that does not fit at once leaves; never keeps all.
  S=$T/sb
  if JOBS=40 SKIP=0 NODES=1 QUEUES=fifo SCHEDSIM=$BIN bash "$SRC/scripts/starburst.sh" "$S" "$DATA" >"$T/sb.out" 2>&1; then
    ok
    [ "$(awk 'NR > 1' "$S/table.csv" | wc -l)" = 4 ] && [ "$(awk -F, '{ print NF }' "$S/table.csv" | sort -u)" = 12 ] \
      && ok || bad "starburst: 4 rows of 12 columns"
    # never: no cloud job, cost 0; no-wait's ratios are 1.
    [ "$(awk -F, '$4 == "never" { print $6 "," $7 }' "$S/table.csv")" = "0,0.00" ] && ok || bad "starburst: never has no cloud cost"
    [ "$(awk -F, '$4 == "no-wait" { print $9 "," $10 }' "$S/table.csv")" = "1.0000,1.0000" ] && ok || bad "starburst: no-wait ratios 1"
    # Cloud cost at $1/GPU-h = sum over cloud jobs of GPUs x (duration + 900 s) / 3600.
    d=$S/runs/fifo-1-no-wait
    want=$(awk -F, 'NR > 1 && $20 != "onprem" && $20 != "" { split($0, f, ","); s += f[21] } END { printf "%.2f", s }' "$d/jobs.csv")
    got=$(awk -F, '$4 == "no-wait" { print $7 }' "$S/table.csv")
    [ "$got" = "$want" ] && ok || bad "starburst: window cost = the jobs' cloud_cost_usd ($got vs $want)"
    # Each cloud job at $1: cost = GPUs x (run + 900 s) / 3600, GPUs from the trace.
    awk -F, 'NR == FNR { if (FNR > 1) g["philly-" (FNR - 1)] = $3; next }
             FNR > 1 && $20 == "cloud" { c = g[$1] * ($4 - $3 + 900) / 3600
               if (c - $21 > 1e-6 || $21 - c > 1e-6) bad++ ; n++ }
             END { exit !(n > 0 && bad == 0) }' "$S/philly.csv" "$d/jobs.csv" && ok \
      || bad "starburst: every cloud job pays GPUs x (run + 900 s) at \$1"
  else
    bad "starburst.sh failed: $(tail -3 "$T/sb.out")"
  fi
  # 6b: the first 12 Philly jobs of >= 1 h (7 go to the cloud); rate 0
  # only: spot = on-demand x 0.9731 / 3.06 (no interruption, same
  # GPU-hours), a 68.2% saving; on-demand = $3.06 x GPUs x duration of each
  # cloud job (start-up not billed, no transfer).
  P=$T/sd
  if JOBS=12 RATES=0 SLACKS=1.5 SCHEDSIM=$BIN bash "$SRC/scripts/spot_deadline.sh" "$P" "$DATA" >"$T/sd.out" 2>&1; then
    ok
    [ "$(awk 'NR > 1' "$P/table.csv" | wc -l)" = 3 ] && [ "$(awk -F, '{ print NF }' "$P/table.csv" | sort -u)" = 12 ] \
      && ok || bad "spot_deadline: 3 rows of 12 columns"
    od=$(awk -F, '$2 == "on-demand" { print $5 }' "$P/table.csv")
    sp=$(awk -F, '$2 == "spot" { print $6 }' "$P/table.csv")
    near "$sp" "$(awk -v o="$od" 'BEGIN { print o * 0.9731 / 3.06 }')" 0.01 && ok || bad "spot_deadline: spot = on-demand x 0.9731 / 3.06 ($sp vs $od)"
    [ "$(awk -F, '$2 == "spot" { print $8 }' "$P/table.csv")" = 68.2 ] && ok || bad "spot_deadline: 68.2% saved at rate 0"
    hand=$(awk -F, 'NR == FNR { if (FNR > 1) g["philly-" (FNR - 1)] = $3; next }
             FNR > 1 && $20 == "aws-v100" { s += 3.06 * g[$1] * ($4 - $3) / 3600; n++ }
             END { printf "%d %.2f", n, s }' "$P/jobs.csv" "$P/runs/on-demand/jobs.csv")
    [ "$hand" = "7 $od" ] && ok || bad "spot_deadline: on-demand bill by hand ($hand vs 7 $od)"
    [ "$(awk -F, 'NR > 1 { s += $11 } END { print s + 0 }' "$P/table.csv")" = 0 ] && ok || bad "spot_deadline: no deadline missed"
  else
    bad "spot_deadline.sh failed: $(tail -3 "$T/sd.out")"
  fi
  expect 2 "must be numbers" -- env NODES=x SCHEDSIM="$BIN" bash "$SRC/scripts/starburst.sh" "$T/x" "$DATA"
  expect 2 "must be whole numbers" -- env JOBS=x SCHEDSIM="$BIN" bash "$SRC/scripts/spot_deadline.sh" "$T/x" "$DATA"
elif [ "${CI:-}" = true ]; then
  bad "$DATA/philly/philly.csv not found (CI=true: shared data is required)"
else
  echo "SKIP: the experiments need $DATA/philly/philly.csv"
fi

cli_summary
