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
  for f in bars utilization queue_cdf cost; do
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

# ---- the answer, hand-computed: one exclusive GPU at $2.50/GPU-hour, two
# 1-GPU jobs of 100 s submitted at 0. Every policy runs them back to back:
# queue times 0 and 100 (mean 50 s), the GPU busy all 200 s (useful
# utilization 100%), cost 2.5 x 200/3600 over 200/3600 job-hours = $2.500.
cat >"$T/one.json" <<'JSON'
{"name": "one", "node_groups": [{"name": "n", "count": 1, "gpu_model": "A100-SXM4-80GB",
 "gpus_per_node": 1, "cpu_milli": 8000, "memory_mib": 65536, "gpu_mode": "exclusive",
 "price_per_gpu_hour": 2.5}]}
JSON
printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\na,0,100,1,1000,1000,1000,\nb,0,100,1,1000,1000,1000,\n' >"$T/two.csv"
expect 0 "" -- "$BIN" compare --trace "$T/two.csv" --cluster "$T/one.json" \
  --policy first-fit,best-fit --out "$T/ans" --no-plots --quiet
grep -qxF "Useful utilization (the GPU share running jobs asked for) is highest with first-fit on one: 100.0% (first-fit itself)." "$T/out" \
  && ok || bad "answer: utilization: $(cat "$T/out")"
grep -qxF "Mean queue time is lowest with first-fit on one: 50 s (first-fit itself)." "$T/out" \
  && ok || bad "answer: queue time"
grep -qxF 'Cost per job-hour is lowest with first-fit on one: $2.500 (first-fit itself).' "$T/out" \
  && ok || bad "answer: cost per job-hour"
# Cost per unit of work by hand: the jobs' measured type is 'same' (speed 1),
# work = 2 x 100 GPU-s = 0.05556 GPU-h; cost = 200 s x $2.5/h = $0.13889;
# 0.13889 / 0.05556 = $2.500.
grep -qxF 'Cost per unit of work (USD per reference GPU-hour done) is lowest with first-fit on one: $2.500 (first-fit itself).' "$T/out" \
  && ok || bad "answer: cost per unit of work"
# A tie goes to the earliest run; its margin over first-fit is "the same".
expect 0 "" -- "$BIN" compare --trace "$T/two.csv" --cluster "$T/one.json" \
  --policy best-fit,first-fit --out "$T/ans2" --no-plots --quiet
grep -qxF "Mean queue time is lowest with best-fit on one: 50 s; first-fit there: 50 s, the same." "$T/out" \
  && ok || bad "answer: tie to the earliest run: $(cat "$T/out")"

# ---- the answer against compare.csv: the best run per metric and its
# margin over first-fit of its cluster, recomputed from the CSV columns.
expect 0 "" -- "$BIN" compare --cluster "$CL" --cluster "$EX" --policy first-fit,best-fit,worst-fit \
  --seed 5 --out "$T/a3" --no-plots --quiet
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { u = $col["gpu_used_ratio_mean"]; q = $col["queue_mean_s"]; run[NR] = $1; cl[NR] = $2
    U[NR] = u; Q[NR] = q; if ($col["policy"] == "first-fit") { fu[$2] = u; fq[$2] = q }
    if (bu == "" || u > U[bu]) bu = NR; if (bq == "" || q < Q[bq]) bq = NR }
  END { split(run[bu], a, "_"); printf "%s %.1f%% %+.1f\n", a[1], 100 * U[bu], 100 * (U[bu] - fu[cl[bu]])
        split(run[bq], b, "_"); printf "%s %.0f s\n", b[1], Q[bq] }' \
  "$T/a3/compare.csv" >"$T/a3.want"
read -r ucl upct upts <"$T/a3.want"
grep -q "^Useful utilization .* on $ucl: $upct.* $upts points\.$\|^Useful utilization .* on $ucl: $upct (first-fit itself)\.$" "$T/out" \
  && ok || bad "answer: utilization vs compare.csv ($(cat "$T/a3.want")): $(grep Useful "$T/out")"
qline=$(sed -n 2p "$T/a3.want")
qcl=${qline%% *}
grep -q "^Mean queue time is lowest with .* on $qcl: $(echo "$qline" | cut -d' ' -f2-3)" "$T/out" \
  && ok || bad "answer: queue time vs compare.csv ($qline): $(grep Mean "$T/out")"

# ---- the default policy set: MIG policies only on MIG clusters, and only
# they where every GPU is MIG; built-in clusters by name
"$BIN" generate --out "$T/small.csv" --jobs 200 --seed 2 >/dev/null 2>&1
expect 0 "" -- "$BIN" compare --trace "$T/small.csv" --cluster builtin:default \
  --cluster builtin:mig-dynamic --out "$T/dp" --no-plots --quiet
npol=$("$BIN" policies | wc -l)
nmig=$("$BIN" policies | grep -c '^mig-')
[ "$(grep -c '^builtin-default_' "$T/dp/compare.csv")" = $((npol - nmig)) ] && ok || bad "default policies on a shared cluster"
grep -q '^builtin-default_mig-' "$T/dp/compare.csv" && bad "MIG policy on a cluster without MIG GPUs" || ok
[ "$(grep -c '^builtin-mig-dynamic_mig-' "$T/dp/compare.csv")" = "$nmig" ] && ok || bad "MIG policies on the MIG cluster"
[ "$(grep -c '^builtin-mig-dynamic_' "$T/dp/compare.csv")" = "$nmig" ] && ok || bad "only MIG policies on an all-MIG cluster"
grep -q "the policies that apply to each" "$T/out" && ok || bad "header says the policies apply per cluster"
# An explicit --policy list runs on every cluster as given.
expect 0 "" -- "$BIN" compare --trace "$T/small.csv" --cluster builtin:default \
  --cluster builtin:mig-static --policy first-fit,mig-aware --out "$T/dp2" --no-plots --quiet
[ "$(grep -c . "$T/dp2/compare.csv")" = 5 ] && ok || bad "explicit policies on every cluster"
expect 2 "unknown built-in cluster" -- "$BIN" compare --cluster builtin:nope --out "$T/bn"
[ -e "$T/bn" ] && bad "output written for an unknown built-in cluster" || ok
for c in exclusive mig-static mig-dynamic; do
  expect 0 "" -- "$BIN" run --cluster builtin:$c --trace "$T/small.csv" --policy mig-first-fit --quiet
  grep -q "cluster a100-h100-$c (24 nodes, 192 GPUs)" "$T/out" && ok || bad "builtin:$c: $(head -1 "$T/out")"
done

# ---- report.html: self-contained, the table, the answer, links, plots
R=$T/dp/report.html
[ -s "$R" ] && ok || bad "compare wrote no report.html"
[ "$(grep -c '^<tr><td>' "$R")" = "$npol" ] && ok || bad "report table rows"
grep -q 'id="answer">Useful utilization' "$R" && ok || bad "report shows the answer"
grep -q 'href="builtin-mig-dynamic_mig-aware/jobs.csv"' "$R" && ok || bad "report links the run files"
grep -qiE '<script|<link|<img|<iframe|(src|href)="(https?:)?//' "$R" && bad "report fetches something" || ok
grep -q 'No plots' "$R" && ok || bad "report says it has no plots (--no-plots)"
if command -v gnuplot >/dev/null 2>&1; then
  expect 0 "" -- "$BIN" compare --trace "$T/small.csv" --cluster builtin:default \
    --cluster builtin:mig-dynamic --out "$T/rp" --quiet
  [ "$(grep -c '<svg' "$T/rp/report.html")" = 4 ] && ok || bad "report inlines the four plots"
  grep -qiE '(src|href)="(https?:)?//' "$T/rp/report.html" && bad "report with plots fetches something" || ok
  # At most six lines per CDF/utilization panel; a policy's colour is the
  # same everywhere.
  awk '/^  plot "data\/[^"]*\.(qcdf|util)"/ { n = 1 } /^    "data\/[^"]*\.(qcdf|util)"/ { n++ }
       /^  plot / && !/\.(qcdf|util)"/ { n = 0 } n > m { m = n } END { exit m > 6 }' "$T/rp/plots/plots.gp" \
    && ok || bad "a panel draws more than six lines"
  grep -o 'lc rgb "#[0-9a-f]*" title "[^"]*"' "$T/rp/plots/plots.gp" | sort -u \
    | awk '{ print $NF }' | sort | uniq -d | grep -q . && bad "a policy has two colours" || ok
  # The builtin-default panel draws first-fit and the runs with the least
  # and the most mean queue time (from compare.csv).
  # (ties go to the earliest run)
  awk -F, 'NR > 1 && $2 == "builtin:default" { if (lo == "" || $11 < lo) { lo = $11; lp = $4 }
                                              if (hi == "" || $11 > hi) { hi = $11; hp = $4 } }
           END { print lp; print hp }' "$T/rp/compare.csv" >"$T/qm"
  for p in first-fit "$(sed -n 1p "$T/qm")" "$(sed -n 2p "$T/qm")"; do
    grep -q "data/builtin-default_$p.qcdf" "$T/rp/plots/plots.gp" && ok || bad "CDF panel lacks $p"
  done
  [ "$(grep -c . "$T/rp/plots/data/bars_1.dat")" = $((npol - nmig + 1)) ] && ok || bad "bars_1.dat rows"
fi
# sweep writes one too
printf '{"traces": ["%s"], "clusters": ["builtin:default"], "policies": ["first-fit", "defrag"]}\n' "$T/small.csv" >"$T/g.json"
expect 0 "" -- "$BIN" sweep "$T/g.json" --out "$T/sw" --quiet
grep -q 'href="runs/small_builtin-default_fifo_defrag_s1/summary.json"' "$T/sw/report.html" && ok || bad "sweep report.html links its runs"
grep -qE 'first-fit there|first-fit itself' "$T/sw/report.html" && ok || bad "sweep report.html answers against first-fit"

echo "cli_compare: $pass passed, $fail failed"
[ "$fail" = 0 ]
