#!/usr/bin/env bash
# schedsim compare: every run's outputs byte-identical to the single
# `schedsim run` it stands for, the table and compare.csv, plots made and
# non-empty with gnuplot and a clear warning (exit 0) without it, input
# errors before any run; --trace-format on run and compare.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
DATA=${SCHEDSIM_SHARED_DATA:-$SRC/../shared/data}
. "$(dirname "$0")/lib/cli_harness.sh"

CL=$SRC/sim/examples/a100-h100.json
EX=$SRC/sim/examples/a100-h100-exclusive.json

# ---- usage and input errors (exit 2, before any run writes anything)
expect 0 "" -- "$BIN" compare --help
grep -q -- "--policy" "$T/out" && ok || bad "compare --help lists --policy"
"$BIN" --help | grep -q "compare" && "$BIN" --help | grep -q "sweep" && ok || bad "main usage lists compare and sweep"
expect 2 "unknown policy 'nope'" -- "$BIN" compare --policy first-fit,nope --out "$T/e1"
[ -e "$T/e1" ] && bad "output written despite a bad policy" || ok
expect 2 "--queue 'lifo'" -- "$BIN" compare --queue fifo,lifo --out "$T/e2"
expect 2 "given twice" -- "$BIN" compare --policy first-fit --policy first-fit --out "$T/e3"
expect 2 "missing.csv" -- "$BIN" compare --trace "$T/missing.csv" --out "$T/e4"
expect 2 "--trace-format 'xml'" -- "$BIN" compare --trace-format xml --out "$T/e5"
expect 2 "unexpected argument" -- "$BIN" compare extra
expect 2 "--jobs" -- "$BIN" compare --jobs 0

# ---- runs equal single runs, byte for byte (2 clusters x 2 queues x 2 policies)
expect 0 "" -- "$BIN" compare --cluster "$CL" --cluster "$EX" --queue fifo,skip \
  --policy first-fit --policy best-fit --seed 5 --out "$T/c" --jobs 3 --quiet
cp "$T/out" "$T/c.out"
n=0
for c in a100-h100 a100-h100-exclusive; do
  cf=$CL
  [ $c = a100-h100-exclusive ] && cf=$EX
  for q in fifo skip; do
    for p in first-fit best-fit; do
      "$BIN" run --cluster "$cf" --trace builtin:default --policy $p --queue $q \
        --seed 5 --out "$T/single" --quiet >/dev/null 2>&1 || bad "single run $c $q $p"
      for f in summary.json jobs.csv timeline.csv; do
        cmp -s "$T/single/$f" "$T/c/${c}_${q}_$p/$f" && ok || bad "compare ${c}_${q}_$p/$f differs from schedsim run"
      done
      n=$((n + 1))
    done
  done
done
[ $n = 8 ] && ok || bad "8 single runs compared"
[ "$(wc -l <"$T/c/compare.csv")" = 9 ] && ok || bad "compare.csv has a header and 8 rows"
head -1 "$T/c/compare.csv" | grep -q '^run,cluster,queue,policy,seed,trace,jobs,jobs_completed,jobs_never_started,gpu_alloc_ratio_mean,queue_mean_s,queue_p50_s,queue_p95_s,queue_p99_s,queue_max_s,jct_mean_s,jct_p50_s,jct_p95_s,jct_p99_s,jct_max_s,makespan_s,allocated_gpu_hours,cost_total_usd,cost_per_allocated_gpu_hour_usd,cost_idle_usd,unpriced_gpus,events,frag_amount_mean_milli,frag_rate_mean,stranded_gpu_milli_mean,nodes,gpus,' \
  && ok || bad "compare.csv header: $(head -1 "$T/c/compare.csv")"
# The row of a run carries that run's summary.json numbers.
row=$(grep '^a100-h100_skip_best-fit,' "$T/c/compare.csv")
[ -n "$row" ] && ok || bad "compare.csv row of a100-h100_skip_best-fit"
jobs=$(echo "$row" | cut -d, -f7)
grep -q "\"jobs\":	$jobs," "$T/c/a100-h100_skip_best-fit/summary.json" && ok || bad "compare.csv jobs column"
ratio=$(echo "$row" | cut -d, -f10)
r2=$(grep '"gpu_alloc_ratio_mean"' "$T/c/a100-h100_skip_best-fit/summary.json" | sed 's/.*:[[:space:]]*//; s/,$//')
awk -v a="$ratio" -v b="$r2" 'BEGIN { d = a - b; exit !(d < 5e-7 && d > -5e-7) }' && ok || bad "ratio $ratio vs $r2"
grep -q "util%" "$T/c.out" && grep -q "queue_p99" "$T/c.out" && grep -q "a100-h100-exclusive_fifo_first-fit" "$T/c.out" \
  && ok || bad "table on stdout: $(cat "$T/c.out")"
ls "$T/c" | grep -q tmp && bad "temporary files left" || ok

# ---- plots: produced and non-empty when gnuplot is present
if command -v gnuplot >/dev/null 2>&1; then
  for f in utilization queue_cdf cost; do
    for e in png svg; do
      [ -s "$T/c/plots/$f.$e" ] && ok || bad "plot $f.$e missing or empty"
    done
  done
  head -c 8 "$T/c/plots/cost.png" | grep -q PNG && ok || bad "cost.png is a PNG"
  grep -q "<svg" "$T/c/plots/utilization.svg" && ok || bad "utilization.svg is SVG"
  [ "$(grep -c . "$T/c/plots/data/cost.dat")" = 9 ] && ok || bad "cost.dat rows"
  grep -q "plots:" "$T/c.out" && ok || bad "stdout names the plots"
else
  echo "SKIP: gnuplot not installed; plot files not checked"
fi

# ---- without gnuplot: tables still written, warning, exit 0
mkdir -p "$T/nobin"
expect 0 "gnuplot not found: plots skipped" -- env PATH="$T/nobin" "$BIN" compare --policy first-fit,best-fit --out "$T/np" --quiet
[ -s "$T/np/compare.csv" ] && [ -s "$T/np/plots/plots.gp" ] && ok || bad "compare.csv and plots.gp written without gnuplot"
[ -e "$T/np/plots/cost.png" ] && bad "cost.png made without gnuplot" || ok
# --no-plots: no plots directory at all.
expect 0 "" -- "$BIN" compare --policy first-fit --out "$T/nop" --no-plots --quiet
[ -e "$T/nop/plots" ] && bad "--no-plots wrote plots/" || ok
grep -q "gnuplot" "$T/err" && bad "--no-plots mentions gnuplot" || ok

# ---- --quiet and progress: no progress line on a non-terminal stderr
[ -s "$T/err" ] && bad "stderr not empty: $(cat "$T/err")" || ok

# ---- other trace formats through run and compare
gen=$T/gen.csv
printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\na,0,60,1,500,1000,1024,\nb,10,30,2,1000,2000,2048,A100-SXM4-80GB\n' >"$gen"
expect 0 "" -- "$BIN" run --cluster "$CL" --trace "$gen" --policy first-fit --out "$T/g1" --quiet
grep -q '"jobs_completed":	2' "$T/g1/summary.json" && ok || bad "generic trace replayed"
tail -n +2 "$gen" >"$T/gen_noheader.csv"
expect 2 "unrecognised header" -- "$BIN" run --cluster "$CL" --trace "$T/gen_noheader.csv" --policy first-fit
expect 0 "" -- "$BIN" run --cluster "$CL" --trace "$T/gen_noheader.csv" --trace-format generic --policy first-fit --out "$T/g2" --quiet
cmp -s <(cut -d, -f2- "$T/g1/jobs.csv") <(cut -d, -f2- "$T/g2/jobs.csv") && ok || bad "headerless generic with --trace-format"
# Every queue discipline of run is accepted.
expect 0 "" -- "$BIN" compare --cluster "$CL" --trace "$gen" --queue backfill,priority --policy first-fit \
  --out "$T/bq" --no-plots --quiet
[ -s "$T/bq/backfill_first-fit/summary.json" ] && [ -s "$T/bq/priority_first-fit/summary.json" ] && ok || bad "backfill and priority runs"
printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\na,0,60,1,5000,1000,1024,\n' >"$T/genbad.csv"
expect 2 "genbad.csv:2: field 'gpu_milli'" -- "$BIN" run --cluster "$CL" --trace "$T/genbad.csv" --policy first-fit
expect 2 "genbad.csv:2: field 'gpu_milli'" -- "$BIN" compare --cluster "$CL" --trace "$T/genbad.csv" --out "$T/e6"
expect 2 "--swf-gpus-per-proc" -- "$BIN" run --cluster "$CL" --trace "$gen" --policy first-fit --swf-gpus-per-proc 0
SWF=$DATA/swf/NASA-iPSC-1993-3.1-cln.swf.gz
if [ -r "$SWF" ]; then
  expect 0 "" -- "$BIN" compare --trace "$SWF" --swf-gpus-per-proc 0.0625 --policy first-fit,best-fit \
    --out "$T/swf" --quiet --no-plots
  grep -q '"jobs":	18239' "$T/swf/first-fit/summary.json" && ok || bad "SWF compare: 18239 jobs"
  grep -q '"jobs_never_started":	0' "$T/swf/first-fit/summary.json" && ok || bad "SWF at 1/16 GPU per proc: every job fits an 8-GPU node"
  "$BIN" run --cluster builtin:default --trace "$SWF" --swf-gpus-per-proc 0.0625 --policy best-fit \
    --out "$T/swf1" --quiet >/dev/null 2>&1
  for f in summary.json jobs.csv timeline.csv; do
    cmp -s "$T/swf1/$f" "$T/swf/best-fit/$f" && ok || bad "SWF compare $f differs from run"
  done
elif [ "${CI:-}" = true ]; then
  bad "CI=true but $SWF is missing"
else
  echo "SKIP: $SWF not found"
fi

echo "cli_compare: $pass passed, $fail failed"
[ "$fail" = 0 ]
