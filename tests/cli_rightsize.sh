#!/usr/bin/env bash
# schedsim rightsize (sim/README.md "Right-sizing"): every number of
# rightsize.csv and rightsize_by_class.csv and the chosen cluster against a
# hand-computed case, the bound's three outcomes, energy cost in the cost
# per work hour, clusters that cannot start every job, determinism, the run
# directories equal to `schedsim run`, jobs.csv's last columns, and the
# errors (exit 2 naming the option or file).
#
# The case: two jobs of 1 GPU x 3,600 s, both submitted at 0, measured on an
# A100-SXM4-80GB; speed table A100 2, H100 4 (reference-GPU units).
#   work per job = 3600 s x 2 = 7,200 reference-GPU-s; total 4 GPU-hours.
#   A100 cluster: one A100 GPU at $2/h. j1 runs 0-3600, j2 3600-7200.
#     cost_total = 1 GPU x 2 h x $2 = $4; per work hour 4 / 4 = 1.0;
#     work per dollar 1.0; queue 0, 3600: mean 1800, p95 (linear, position
#     (n-1) x 0.95) 3420; JCT 3600, 7200: mean 5400, p95 7020;
#     energy: the GPU busy all 2 h at busy_w 400 W = 0.8 kWh, 0.2 per work
#     hour. Per job cost 2 x 1 h = $2.
#   H100 cluster: one H100 GPU at $6/h. Each job runs 7200 / 4 = 1800 s:
#     0-1800, 1800-3600. cost 1 h x $6 = $6; per work hour 1.5; work per
#     dollar 0.666667; queue 0, 1800: mean 900, p95 1710; JCT 1800, 3600:
#     mean 2700, p95 3510; energy 700 W x 1 h = 0.7 kWh, 0.175 per work
#     hour.
#   Bound 2000 s: only the H100 is within -> H100. 4000 s: both -> A100
#   (cheaper). 100 s: none. No bound: A100.
#   --energy-price 0.5: A100 (4 + 0.8 x 0.5) / 4 = 1.1, H100
#   (6 + 0.7 x 0.5) / 4 = 1.5875.
set -u
BIN=${SCHEDSIM_BIN:?}
. "$(dirname "$0")/lib/cli_harness.sh"

printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\nj1,0,3600,1,1000,1000,1024,\nj2,0,3600,1,1000,1000,1024,\n' >"$T/t.csv"
spec() { # FILE MODEL PRICE GPUS
  printf '{"name": "one-%s", "node_groups": [{"name": "n", "count": 1, "gpu_model": "%s", "gpus_per_node": %s, "cpu_milli": 8000, "memory_mib": 65536, "gpu_mode": "exclusive", "price_per_gpu_hour": %s}]}\n' \
    "$2" "$2" "$4" "$3" >"$1"
}
spec "$T/A100.json" A100-SXM4-80GB 2 1
spec "$T/H100.json" H100-SXM5-80GB 6 1
printf '{"classes": {"default": {"A100-SXM4-80GB": 2, "H100-SXM5-80GB": 4}}}\n' >"$T/speeds.json"
RS=("$BIN" rightsize --trace "$T/t.csv" --cluster "$T/A100.json" --cluster "$T/H100.json"
  --speed-table "$T/speeds.json" --measured-on A100-SXM4-80GB --quiet --no-plots)
HDR='run,cluster,cluster_name,gpus,jobs,jobs_completed,jobs_never_started,work_gpu_hours,cost_total_usd,energy_cost_usd,cost_per_work_hour,work_hours_per_usd,jct_mean_s,jct_p95_s,queue_mean_s,queue_p95_s,energy_kwh_facility,energy_kwh_per_work_hour,within_bound,chosen'
rowA="A100,$T/A100.json,one-A100-SXM4-80GB,1,2,2,0,4.000000,4.000000,0.000000,1.000000,1.000000,5400.000000,7020.000000,1800.000000,3420.000000,0.800000,0.200000"
rowH="H100,$T/H100.json,one-H100-SXM5-80GB,1,2,2,0,4.000000,6.000000,0.000000,1.500000,0.666667,2700.000000,3510.000000,900.000000,1710.000000,0.700000,0.175000"

# ---- bound 2000 s: the H100
expect 0 "" -- "${RS[@]}" --max-queue-p95 2000 --out "$T/b2000"
printf '%s\n%s\n%s\n' "$HDR" "$rowA,no,0" "$rowH,yes,1" >"$T/want"
cmp -s "$T/want" "$T/b2000/rightsize.csv" && ok || bad "rightsize.csv, bound 2000: $(diff "$T/want" "$T/b2000/rightsize.csv")"
grep -q '^answer: H100 (.*H100.json) has the lowest cost per unit of work within the bound of 2000 s: 1.5000 USD' "$T/out" &&
  ok || bad "answer, bound 2000: $(cat "$T/out")"
grep -q '^\* H100 ' "$T/out" && ok || bad "table marks the H100: $(cat "$T/out")"
cat >"$T/want" <<EOF
run,class,gpu_model,share,jobs,work_gpu_hours,cost_usd,work_hours_per_usd,run_mean_s,energy_kwh,energy_kwh_per_work_hour,energy_unknown_jobs
A100,default,A100-SXM4-80GB,whole,2,4.000000,4.000000,1.000000,3600.000000,0.800000,0.200000,0
H100,default,H100-SXM5-80GB,whole,2,4.000000,6.000000,0.666667,1800.000000,0.700000,0.175000,0
EOF
cmp -s "$T/want" "$T/b2000/rightsize_by_class.csv" && ok || bad "rightsize_by_class.csv: $(diff "$T/want" "$T/b2000/rightsize_by_class.csv")"
[ ! -e "$T/b2000/plots" ] && ok || bad "--no-plots writes no plots"

# jobs.csv's last columns: class, model, work (ref GPU-s), allocated cost
grep -q '^j1,0,0,3600,n,0,1000,0,3600,completed,0,0,0,,,default,A100-SXM4-80GB,7200.000000,2.000000$' "$T/b2000/A100/jobs.csv" &&
  ok || bad "A100 jobs.csv j1: $(cat "$T/b2000/A100/jobs.csv")"
grep -q '^j2,0,1800,3600,n,0,1000,1800,3600,completed,0,0,0,,,default,H100-SXM5-80GB,7200.000000,3.000000$' "$T/b2000/H100/jobs.csv" &&
  ok || bad "H100 jobs.csv j2: $(cat "$T/b2000/H100/jobs.csv")"
# each run is `schedsim run` with the same options
for c in A100 H100; do
  expect 0 "" -- "$BIN" run --trace "$T/t.csv" --cluster "$T/$c.json" --policy best-fit \
    --speed-table "$T/speeds.json" --measured-on A100-SXM4-80GB --quiet --out "$T/run-$c"
  for f in summary.json jobs.csv timeline.csv; do
    cmp -s "$T/run-$c/$f" "$T/b2000/$c/$f" && ok || bad "$c/$f differs from schedsim run"
  done
done

# ---- bound 4000 s: both within, the A100 is cheaper; no bound: the A100
expect 0 "" -- "${RS[@]}" --max-queue-p95 4000 --out "$T/b4000" --workers 1
printf '%s\n%s\n%s\n' "$HDR" "$rowA,yes,1" "$rowH,yes,0" >"$T/want"
cmp -s "$T/want" "$T/b4000/rightsize.csv" && ok || bad "rightsize.csv, bound 4000: $(diff "$T/want" "$T/b4000/rightsize.csv")"
grep -q '^answer: A100 ' "$T/out" && ok || bad "answer, bound 4000: $(cat "$T/out")"
expect 0 "" -- "${RS[@]}" --out "$T/nob"
printf '%s\n%s\n%s\n' "$HDR" "$rowA,,1" "$rowH,,0" >"$T/want"
cmp -s "$T/want" "$T/nob/rightsize.csv" && ok || bad "rightsize.csv, no bound: $(diff "$T/want" "$T/nob/rightsize.csv")"
grep -q '^answer: A100 (.*A100.json) has the lowest cost per unit of work: 1.0000 USD' "$T/out" &&
  ok || bad "answer, no bound: $(cat "$T/out")"
# determinism: the same CSVs from 1 and 2 workers, run again
expect 0 "" -- "${RS[@]}" --out "$T/nob2" --workers 2
for f in rightsize.csv rightsize_by_class.csv; do
  cmp -s "$T/nob/$f" "$T/nob2/$f" && ok || bad "$f not deterministic"
done

# ---- bound 100 s: no cluster meets it (exit 0)
expect 0 "" -- "${RS[@]}" --max-queue-p95 100 --out "$T/b100"
grep -q '^answer: no cluster meets the bound' "$T/out" && ok || bad "no cluster meets 100 s: $(cat "$T/out")"
printf '%s\n%s\n%s\n' "$HDR" "$rowA,no,0" "$rowH,no,0" >"$T/want"
cmp -s "$T/want" "$T/b100/rightsize.csv" && ok || bad "rightsize.csv, bound 100: $(diff "$T/want" "$T/b100/rightsize.csv")"

# ---- energy cost counts in the cost per work hour
expect 0 "" -- "${RS[@]}" --energy-price 0.5 --out "$T/en"
cut -d, -f1,10,11 "$T/en/rightsize.csv" | tail -n +2 >"$T/got"
printf 'A100,0.400000,1.100000\nH100,0.350000,1.587500\n' >"$T/want"
cmp -s "$T/want" "$T/got" && ok || bad "energy cost per work hour: $(cat "$T/got")"

# ---- a cluster that cannot start every job is not an answer
printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model\nj1,0,3600,1,1000,1000,1024,\nbig,0,3600,2,1000,1000,1024,\n' >"$T/t2.csv"
spec "$T/two.json" A100-SXM4-80GB 2 2
expect 0 "" -- "$BIN" rightsize --trace "$T/t2.csv" --cluster "$T/A100.json" --quiet \
  --no-plots --out "$T/nev"
grep -q '^answer: no cluster starts every job' "$T/out" && ok || bad "never started: $(cat "$T/out")"
expect 0 "" -- "$BIN" rightsize --trace "$T/t2.csv" --cluster "$T/A100.json" \
  --cluster "$T/two.json" --quiet --no-plots --out "$T/nev2"
grep -q '^answer: two ' "$T/out" && ok || bad "the cluster that starts every job: $(cat "$T/out")"
awk -F, 'NR == 2 {print $7, $NF} NR == 3 {print $7, $NF}' "$T/nev2/rightsize.csv" >"$T/got"
printf '1 0\n0 1\n' >"$T/want"
cmp -s "$T/want" "$T/got" && ok || bad "jobs_never_started, chosen: $(cat "$T/got")"

# ---- the plot (with gnuplot) or the warning (without)
expect 0 "" -- "$BIN" rightsize --trace "$T/t.csv" --cluster "$T/A100.json" \
  --cluster "$T/H100.json" --quiet --out "$T/plot"
if command -v gnuplot >/dev/null; then
  [ -s "$T/plot/plots/rightsize.png" ] && [ -s "$T/plot/plots/rightsize.svg" ] &&
    ok || bad "rightsize.{png,svg}: $(cat "$T/plot/plots/gnuplot.log" 2>&1)"
else
  grep -q "gnuplot not found" "$T/err" && ok || bad "no gnuplot warning"
fi
[ -s "$T/plot/plots/rightsize.dat" ] && ok || bad "rightsize.dat"

# ---- errors: exit 2 naming the option or the file
expect 2 "nope.json" -- "$BIN" rightsize --trace "$T/t.csv" --cluster "$T/nope.json" --out "$T/e1"
expect 2 "--max-queue-p95 '-5'" -- "$BIN" rightsize --trace "$T/t.csv" --max-queue-p95 -5 --out "$T/e2"
expect 2 "--max-queue-p95 'soon'" -- "$BIN" rightsize --trace "$T/t.csv" --max-queue-p95 soon --out "$T/e3"
expect 2 "unknown policy 'nope'" -- "$BIN" rightsize --trace "$T/t.csv" --policy nope --out "$T/e4"
expect 2 "unknown option '--max-queue-p95'" -- "$BIN" compare --max-queue-p95 5
cli_summary
