#!/usr/bin/env bash
# Work and speed on the command line (sim/README.md "Work and speed"):
# --speed, --measured-on, --speed-table (schedsim's format and Gavel's file
# unchanged), --class-mix; the note a run prints; errors naming the file,
# key or model (exit 2); compare passing the options through; and the
# issue's reproducer: the built-in workload on 16 x 8 A100 and on 16 x 8
# H100 gives the same JCTs with --speed none and faster ones on the H100s
# with the default.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
DATA=${SCHEDSIM_SHARED_DATA:-$SRC/../shared/data}
. "$(dirname "$0")/lib/cli_harness.sh"

node() { # name model gpus mode
  printf '{"name": "%s", "count": 1, "gpu_model": "%s", "gpus_per_node": %s, "cpu_milli": 64000, "memory_mib": 64000, "price_per_gpu_hour": 1, "gpu_mode": "%s"}' "$1" "$2" "$3" "$4"
}
printf '{"name": "h", "node_groups": [%s]}\n' "$(node h H100-SXM5-80GB 1 exclusive)" >"$T/h.json"
# Generic CSV: a has no model (measured on "same"), b names the A100.
cat >"$T/t.csv" <<'C'
id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model
a,0,1000,1,1000,0,0,
b,0,1000,1,1000,0,0,A100-80GB|H100
C
RUN=("$BIN" run --cluster "$T/h.json" --trace "$T/t.csv" --policy first-fit --queue fifo)
finish() { awk -F, -v id="$2" '$1 == id {print $4}' "$1/jobs.csv"; }

# ---- the default: a runs its duration ("same"); b's spec names two models
# (not one), so it is "same" too; the note says which rule applied.
expect 0 "note: work: durations count as measured on the job's GPU model where its gpu_model names exactly one, else on any type (same)" -- "${RUN[@]}" --out "$T/r1"
[ "$(finish "$T/r1" a)" = 1000 ] && ok || bad "same: a runs 1000 s: $(finish "$T/r1" a)"
[ "$(finish "$T/r1" b)" = 2000 ] && ok || bad "same: b runs after a, 1000 s: $(finish "$T/r1" b)"
# --measured-on A100-80GB: 1000 s x 2.835 / 4.727 = 599.746139 s (rounded
# to the microsecond).
expect 0 "measured on A100-80GB (--measured-on)" -- "${RUN[@]}" --measured-on A100-80GB --out "$T/r2"
[ "$(finish "$T/r2" a)" = 599.746139 ] && ok || bad "A100 work on an H100: $(finish "$T/r2" a)"
[ "$(finish "$T/r2" b)" = 1199.492278 ] && ok || bad "b after a: $(finish "$T/r2" b)"
grep -q '"work_gpu_hours":	1.575' "$T/r2/summary.json" && ok || bad "work_gpu_hours = 2 x 1000 x 2.835 / 3600 = 1.575: $(grep work_gpu "$T/r2/summary.json")"
grep -q '"per_work_hour":' "$T/r2/summary.json" && ok || bad "cost_usd.per_work_hour in summary.json"
# --speed none: the durations, and no note.
expect 0 "" -- "${RUN[@]}" --measured-on A100-80GB --speed none --out "$T/r3"
[ "$(finish "$T/r3" a)" = 1000 ] && ok || bad "--speed none: $(finish "$T/r3" a)"
grep -q "note: work" "$T/err" && bad "--speed none prints no work note" || ok

# ---- errors (exit 2, naming what is wrong)
expect 2 "--speed 'fast': expected catalog or none" -- "${RUN[@]}" --speed fast
expect 2 "--measured-on: unknown GPU model 'Z999'" -- "${RUN[@]}" --measured-on Z999
printf '{"classes": {"default": {"V100M16": 1, "A100-80GB": "x"}}}\n' >"$T/bad.json"
expect 2 "bad.json: classes.default.A100-80GB: expected a speed > 0" -- "${RUN[@]}" --speed-table "$T/bad.json"
printf '{"classes": {"default": {"V100M16": 1, "A100-80GB": 2}}}\n' >"$T/noh.json"
expect 2 "cluster node 0 (h): GPU model 'H100-SXM5-80GB': speed table $T/noh.json has no speed for it" -- "${RUN[@]}" --speed-table "$T/noh.json"
expect 2 "nosuch.json" -- "${RUN[@]}" --speed-table "$T/nosuch.json"
printf '{"default": 1, "other": 2}\n' >"$T/mix.json"
expect 2 "mix.json: key 'other': not a job class of speed table" -- "${RUN[@]}" --class-mix "$T/mix.json"
# A table of its own: H100 8x the V100, A100 2x: A100-measured work runs 250 s.
printf '{"reference": "V100M16", "classes": {"default": {"V100M16": 1, "A100-80GB": 2, "H100": 8}}}\n' >"$T/own.json"
expect 0 "speed table $T/own.json" -- "${RUN[@]}" --speed-table "$T/own.json" --measured-on A100-80GB --out "$T/r4"
[ "$(finish "$T/r4" a)" = 250 ] && ok || bad "own table: $(finish "$T/r4" a)"

# ---- compare passes the options through (each run = run's)
expect 0 "" -- "$BIN" compare --quiet --no-plots --trace "$T/t.csv" --cluster "$T/h.json" \
  --policy first-fit,best-fit --measured-on A100-80GB --speed-table "$T/own.json" --out "$T/c" --jobs 1
"${RUN[@]}" --quiet --measured-on A100-80GB --speed-table "$T/own.json" --out "$T/r5" >/dev/null 2>&1
cmp -s "$T/c/first-fit/jobs.csv" "$T/r5/jobs.csv" && cmp -s "$T/c/first-fit/summary.json" "$T/r5/summary.json" &&
  ok || bad "compare --measured-on --speed-table = run"
grep -q "work_gpu_hours" "$T/c/compare.csv" && ok || bad "compare.csv has work_gpu_hours"

# ---- the issue's reproducer: 16 x 8 A100-80GB against 16 x 8 H100-80GB
grp() { printf '{"name": "%s", "count": 16, "gpu_model": "%s", "gpus_per_node": 8, "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "shared"}' "$1" "$2"; }
printf '{"name": "a", "node_groups": [%s]}\n' "$(grp a A100-SXM4-80GB)" >"$T/a16.json"
printf '{"name": "h", "node_groups": [%s]}\n' "$(grp h H100-SXM5-80GB)" >"$T/h16.json"
jct() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jct_s"]["mean"])' "$1/summary.json"; }
for sp in none catalog; do
  for c in a16 h16; do
    "$BIN" run --quiet --speed $sp --cluster "$T/$c.json" --trace builtin:default --policy best-fit \
      --out "$T/$sp-$c" >/dev/null 2>&1 || bad "run $sp $c"
  done
done
[ "$(jct "$T/none-a16")" = "$(jct "$T/none-h16")" ] && ok || bad "--speed none: same JCT on A100 and H100"
python3 -c 'import sys; a, h = map(float, sys.argv[1:]); sys.exit(0 if h < a / 1.5 else 1)' \
  "$(jct "$T/catalog-a16")" "$(jct "$T/catalog-h16")" && ok ||
  bad "catalog: H100 JCT well below A100's: $(jct "$T/catalog-a16") vs $(jct "$T/catalog-h16")"
# The built-in workload is measured on A100s: on whole A100s (no sharing,
# no interference) its run times are the durations, as with --speed none.
printf '{"name": "x", "node_groups": [%s]}\n' "$(grp a A100-SXM4-80GB | sed 's/"shared"/"exclusive"/')" >"$T/a16x.json"
for sp in none catalog; do
  "$BIN" run --quiet --speed $sp --cluster "$T/a16x.json" --trace builtin:default --policy best-fit \
    --out "$T/$sp-a16x" >/dev/null 2>&1 || bad "run $sp a16x"
done
# (jobs.csv up to mig_reconfig_s: its last columns, class and work, differ
# by definition: no class and GPUs x share under --speed none)
cmp -s <(cut -d, -f1-15 "$T/none-a16x/jobs.csv") <(cut -d, -f1-15 "$T/catalog-a16x/jobs.csv") &&
  ok || bad "A100-measured work on whole A100s: the durations"

# ---- Gavel's file, unchanged, on Gavel's K80/P100/V100 cluster
G=$DATA/gpu-performance/gavel/simulation_throughputs.json
if [ -r "$G" ]; then
  printf '{"name": "g", "node_groups": [%s, %s, %s]}\n' "$(grp k K80 | sed 's/"shared"/"exclusive"/')" \
    "$(grp p P100 | sed 's/"shared"/"exclusive"/')" "$(grp v V100M16 | sed 's/"shared"/"exclusive"/')" >"$T/g.json"
  printf '{"ResNet-50 (batch size 64)": 1, "LM (batch size 80)": 3}\n' >"$T/gmix.json"
  expect 0 "speed table $G" -- "$BIN" run --cluster "$T/g.json" --trace builtin:default --policy first-fit \
    --speed-table "$G" --class-mix "$T/gmix.json" --measured-on V100M16 --queue skip --out "$T/g"
  grep -q '"jobs_completed":	5000' "$T/g/summary.json" && ok || bad "Gavel table run completes"
  printf '{"ResNet-50": 1}\n' >"$T/gbad.json"
  expect 2 "gbad.json: key 'ResNet-50': not a job class of speed table" -- "$BIN" run --cluster "$T/g.json" \
    --trace builtin:default --policy first-fit --speed-table "$G" --class-mix "$T/gbad.json"
  # The A100 is not in Gavel's table.
  expect 2 "has no speed for it" -- "${RUN[@]}" --speed-table "$G"
elif [ "${CI:-}" = true ]; then
  bad "$G not found (CI=true: shared data is required)"
else
  echo "cli_speed: SKIP: Gavel checks ($G not found)"
fi

cli_summary
