#!/usr/bin/env bash
# schedsim sweep: manifest errors naming the key and the file, --dry-run,
# every run byte-identical to the single `schedsim run` it stands for and
# sweep.csv rebuilt from single runs identical to the sweep's own, and an
# interrupted sweep (run directories deleted, a worker killed mid-run)
# resumed to the same sweep.csv as an uninterrupted one.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"

EX=$SRC/sim/examples/a100-h100-exclusive.json
mkdir -p "$T/m"
# A small generic trace beside the manifest, named relative to it.
printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\na,0,600,1,500,1000,1024,\nb,10,300,8,1000,2000,2048,\nc,20,900,4,1000,0,0,H100-SXM5-80GB\n' >"$T/m/gen.csv"
M=$T/m/grid.json
cat >"$M" <<EOF
{"name": "test grid", "description": "2 traces x 2 clusters x 2 policies x 2 seeds",
 "traces": ["builtin:default", {"path": "gen.csv", "label": "small"}],
 "clusters": ["builtin:default", "$EX"],
 "policies": ["first-fit", "best-fit"],
 "queues": ["fifo"],
 "seeds": [1, 2]}
EOF

# ---- manifest errors: exit 2, the file and the key named
bad_manifest() { # NEEDLE JSON
  printf '%s\n' "$2" >"$T/m/bad.json"
  expect 2 "$1" -- "$BIN" sweep "$T/m/bad.json" --out "$T/bad"
  grep -qF "bad.json" "$T/err" && ok || bad "error names the manifest: $(cat "$T/err")"
}
base='"traces": ["builtin:default"], "clusters": ["builtin:default"], "policies": ["first-fit"]'
bad_manifest "unknown key 'polices'" "{$base, \"polices\": [\"x\"]}"
bad_manifest "unknown key 'bogus'" "{$base, \"parameters\": {\"bogus\": [1]}}"
bad_manifest "unknown key 'fmt'" "{\"traces\": [{\"path\": \"x.csv\", \"fmt\": \"swf\"}], \"clusters\": [\"builtin:default\"], \"policies\": [\"first-fit\"]}"
bad_manifest "missing key 'policies'" '{"traces": ["builtin:default"], "clusters": ["builtin:default"]}'
bad_manifest "'clusters' must be a non-empty list" '{"traces": ["builtin:default"], "clusters": [], "policies": ["first-fit"]}'
bad_manifest "queues[0]: 'lifo'" "{$base, \"queues\": [\"lifo\"]}"
bad_manifest "seeds[1]: expected an integer" "{$base, \"seeds\": [1, -2]}"
bad_manifest "'first-fit' listed twice" '{"traces": ["builtin:default"], "clusters": ["builtin:default"], "policies": ["first-fit", "first-fit"]}'
bad_manifest "unknown policy 'nope'" '{"traces": ["builtin:default"], "clusters": ["builtin:default"], "policies": ["nope"]}'
bad_manifest "same label 'gen'" '{"traces": ["gen.csv", "sub/gen.csv"], "clusters": ["builtin:default"], "policies": ["first-fit"]}'
bad_manifest "'format' must be one of" '{"traces": [{"path": "gen.csv", "format": "xml"}], "clusters": ["builtin:default"], "policies": ["first-fit"]}'
bad_manifest "swf_gpus_per_proc[0]" "{$base, \"parameters\": {\"swf_gpus_per_proc\": [0]}}"
bad_manifest "JSON syntax error" '{"traces": ['
bad_manifest "nosuch.csv" '{"traces": ["nosuch.csv"], "clusters": ["builtin:default"], "policies": ["first-fit"]}'
expect 2 "expected one MANIFEST" -- "$BIN" sweep
expect 2 "cannot open" -- "$BIN" sweep "$T/none.json"
expect 0 "" -- "$BIN" sweep --help

# ---- dry run: lists the runs in order, writes nothing
expect 0 "" -- "$BIN" sweep "$M" --out "$T/s" --dry-run
[ "$(grep -c $'\ttodo\t' "$T/out")" = 16 ] && ok || bad "dry run lists 16 runs: $(cat "$T/out")"
head -1 "$T/out" | grep -q "^builtin-default_builtin-default_fifo_first-fit_s1	todo	trace=builtin:default cluster=builtin:default queue=fifo policy=first-fit seed=1$" \
  && ok || bad "first dry-run line: $(head -1 "$T/out")"
grep -q "^small_a100-h100-exclusive_fifo_best-fit_s2	todo	trace=$T/m/gen.csv " "$T/out" && ok || bad "relative trace path resolved beside the manifest"
[ -e "$T/s" ] && bad "dry run wrote $T/s" || ok
grep -q "16 runs: 0 done, 16 to run" "$T/out" && ok || bad "dry-run totals"
cp "$T/out" "$T/dry.txt"

# ---- the whole sweep
expect 0 "" -- "$BIN" sweep "$M" --out "$T/s" --jobs 2 --quiet
[ -s "$T/s/sweep.csv" ] && ok || bad "sweep.csv written"
[ "$(wc -l <"$T/s/sweep.csv")" = 17 ] && ok || bad "sweep.csv: header + 16 rows"
head -1 "$T/s/sweep.csv" | grep -q '^run_id,trace,trace_format,cluster,queue,policy,seed,unknown_duration_s,swf_gpus_per_proc,jobs,jobs_completed,jobs_never_started,gpu_alloc_ratio_mean,queue_mean_s,queue_p50_s,queue_p95_s,queue_p99_s,queue_max_s,jct_mean_s,jct_p50_s,jct_p95_s,jct_p99_s,jct_max_s,makespan_s,allocated_gpu_hours,cost_total_usd,cost_per_allocated_gpu_hour_usd,cost_idle_usd,unpriced_gpus,events,frag_amount_mean_milli,frag_rate_mean,stranded_gpu_milli_mean,nodes,gpus,' \
  && ok || bad "sweep.csv header: $(head -1 "$T/s/sweep.csv")"
# Rows in run order (the dry-run order).
cmp -s <(cut -f1 "$T/dry.txt" | grep -v ' runs: ') <(tail -n +2 "$T/s/sweep.csv" | cut -d, -f1) \
  && ok || bad "sweep.csv rows in run order"
grep -q '^small_builtin-default_fifo_first-fit_s1,'"$T"'/m/gen.csv,,builtin:default,fifo,first-fit,1,,,3,3,0,' "$T/s/sweep.csv" \
  && ok || bad "row of small trace: $(grep '^small_builtin-default_fifo_first-fit_s1' "$T/s/sweep.csv")"
ls -a "$T/s/runs" | grep -q tmp && bad "temporary run directory left" || ok

# ---- every run equals its single `schedsim run`; a sweep over those
# single runs' outputs merges to the identical sweep.csv
mkdir -p "$T/single/runs"
while IFS=$'\t' read -r id _ args; do
  [ -n "$args" ] || continue
  tr=$(echo "$args" | sed 's/.*trace=\([^ ]*\).*/\1/')
  cl=$(echo "$args" | sed 's/.*cluster=\([^ ]*\).*/\1/')
  q=$(echo "$args" | sed 's/.*queue=\([^ ]*\).*/\1/')
  p=$(echo "$args" | sed 's/.*policy=\([^ ]*\).*/\1/')
  s=$(echo "$args" | sed 's/.*seed=\([^ ]*\).*/\1/')
  "$BIN" run --trace "$tr" --cluster "$cl" --queue "$q" --policy "$p" --seed "$s" \
    --out "$T/single/runs/$id" --quiet >/dev/null 2>&1 || bad "single run $id"
  for f in summary.json jobs.csv timeline.csv; do
    cmp -s "$T/single/runs/$id/$f" "$T/s/runs/$id/$f" && ok || bad "run $id: $f differs from schedsim run"
  done
done <"$T/dry.txt"
expect 0 "" -- "$BIN" sweep "$M" --out "$T/single" --quiet
grep -q "16 runs, 16 already done, 0 to run" "$T/out" && ok || bad "single runs counted as done: $(cat "$T/out")"
cmp -s "$T/s/sweep.csv" "$T/single/sweep.csv" && ok || bad "sweep.csv merged from single runs differs"

# ---- resume after deleted runs and a stale temporary directory
cp "$T/s/sweep.csv" "$T/ref.csv"
rm -rf "$T/s/runs/builtin-default_a100-h100-exclusive_fifo_best-fit_s2" "$T/s/runs/small_builtin-default_fifo_first-fit_s1"
rm -f "$T/s/runs/builtin-default_builtin-default_fifo_first-fit_s1/summary.json" # incomplete
mkdir -p "$T/s/runs/.builtin-default_builtin-default_fifo_first-fit_s2.tmp.99999"
echo junk >"$T/s/runs/.builtin-default_builtin-default_fifo_first-fit_s2.tmp.99999/jobs.csv"
expect 0 "" -- "$BIN" sweep "$M" --out "$T/s" --dry-run
[ "$(grep -c $'\ttodo\t' "$T/out")" = 3 ] && ok || bad "dry run after deletion: 3 to do"
expect 0 "" -- "$BIN" sweep "$M" --out "$T/s" --quiet
grep -q "16 runs, 13 already done, 3 to run" "$T/out" && ok || bad "resume counts: $(cat "$T/out")"
cmp -s "$T/ref.csv" "$T/s/sweep.csv" && ok || bad "resumed sweep.csv differs"
ls -a "$T/s/runs" | grep -q tmp && bad "stale temporary directory not removed" || ok
[ -s "$T/s/runs/builtin-default_builtin-default_fifo_first-fit_s1/jobs.csv" ] && ok || bad "incomplete run redone"

# ---- a worker killed mid-run: the sweep fails without sweep.csv; the rerun
# completes it to the same sweep.csv
"$BIN" sweep "$M" --out "$T/k" --jobs 1 --quiet >"$T/k.out" 2>"$T/k.err" &
parent=$!
killed=0
for _ in $(seq 1 500); do
  kids=$(cat /proc/$parent/task/$parent/children 2>/dev/null || true)
  if [ -n "$kids" ]; then
    kill -9 $kids 2>/dev/null && killed=1
    break
  fi
  sleep 0.01
done
wait $parent
st=$?
if [ $killed = 1 ] && [ $st != 0 ]; then
  grep -q "killed by signal 9" "$T/k.err" && ok || bad "kill reported: $(cat "$T/k.err")"
  [ -e "$T/k/sweep.csv" ] && bad "sweep.csv written although a run was killed" || ok
else
  echo "note: the worker could not be killed mid-run (status $st); resume checked anyway"
fi
expect 0 "" -- "$BIN" sweep "$M" --out "$T/k" --quiet
cmp -s "$T/ref.csv" "$T/k/sweep.csv" && ok || bad "sweep.csv after a killed worker differs"
ls -a "$T/k/runs" | grep -q tmp && bad "temporary directory of the killed run left" || ok

# ---- parameters: unknown_duration (a trace without times) and
# swf_gpus_per_proc, each run equal to run with the same options
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1000,1,500\nb,1000,1000,8,1000\nc,0,0,16,1000\n' >"$T/m/multi.csv"
printf '; SWF\n1 0 -1 100 16 -1 -1 16 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n2 5 -1 50 3 -1 -1 3 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n' >"$T/m/tiny.swf"
cat >"$T/m/params.json" <<EOF
{"traces": ["multi.csv", {"path": "tiny.swf", "format": "swf"}],
 "clusters": ["builtin:default"], "policies": ["best-fit"],
 "parameters": {"unknown_duration": [60, 120], "swf_gpus_per_proc": [0.5, 1]}}
EOF
expect 0 "" -- "$BIN" sweep "$T/m/params.json" --out "$T/p" --quiet
[ "$(wc -l <"$T/p/sweep.csv")" = 9 ] && ok || bad "parameter sweep rows"
grep -q '^tiny_builtin-default_fifo_best-fit_s1_ud120_gpp0.5,'"$T"'/m/tiny.swf,swf,builtin:default,fifo,best-fit,1,120,0.5,2,2,0,' "$T/p/sweep.csv" \
  && ok || bad "SWF parameter row: $(grep '^tiny' "$T/p/sweep.csv" | head -2)"
"$BIN" run --trace "$T/m/tiny.swf" --trace-format swf --swf-gpus-per-proc 0.5 --unknown-duration 120 \
  --cluster builtin:default --policy best-fit --out "$T/p1" --quiet >/dev/null 2>&1
for f in summary.json jobs.csv timeline.csv; do
  cmp -s "$T/p1/$f" "$T/p/runs/tiny_builtin-default_fifo_best-fit_s1_ud120_gpp0.5/$f" && ok || bad "parameter run $f differs"
done
"$BIN" run --trace "$T/m/multi.csv" --unknown-duration 60 --cluster builtin:default --policy best-fit \
  --out "$T/p2" --quiet >/dev/null 2>&1
for f in summary.json jobs.csv timeline.csv; do
  cmp -s "$T/p2/$f" "$T/p/runs/multi_builtin-default_fifo_best-fit_s1_ud60_gpp1/$f" && ok || bad "unknown_duration run $f differs"
done
# Without unknown_duration, a trace without times is an input error.
printf '{"traces": ["multi.csv"], "clusters": ["builtin:default"], "policies": ["best-fit"]}\n' >"$T/m/nodur.json"
expect 2 "unknown_duration" -- "$BIN" sweep "$T/m/nodur.json" --out "$T/nd"

echo "cli_sweep: $pass passed, $fail failed"
[ "$fail" = 0 ]
