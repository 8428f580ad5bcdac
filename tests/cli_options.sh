#!/usr/bin/env bash
# The option table (sim/cli/options.def): every option row is in its
# commands' --help and in sim/README.md; every row with a manifest key is
# accepted as a sweep "parameters" key and listed in sim/README.md; the run
# options work in compare (every run byte-identical to `schedsim run` with
# the same options) and as sweep grid axes (every run equal to its single
# run); --workers and --jobs give the same results.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"

# same DIR_A DIR_B WHAT: the three run outputs byte-identical.
same() {
  for f in summary.json jobs.csv timeline.csv; do
    cmp -s "$1/$f" "$2/$f" && ok || bad "$3: $f differs ($1 vs $2)"
  done
}

CL=$SRC/sim/examples/a100-h100.json

# ---- the table: `schedsim options` lists it; every row is in the --help
# of every command it names
expect 0 "" -- "$BIN" options
cp "$T/out" "$T/table"
[ "$(wc -l <"$T/table")" -ge 30 ] && ok || bad "schedsim options lists the table: $(cat "$T/table")"
while IFS=$'\t' read -r name cmds mkey _; do
  for c in ${cmds//,/ }; do
    "$BIN" "$c" --help >"$T/help" 2>&1 || bad "$c --help fails"
    grep -qE -- "^  $name( |$)" "$T/help" && ok || bad "$c --help lacks $name"
  done
  grep -qF -- "$name" "$SRC/sim/README.md" && ok || bad "sim/README.md lacks option $name"
done <"$T/table"
# An option a command does not take is unknown there.
expect 2 "unknown option '--queue'" -- "$BIN" fill --queue fifo
expect 2 "unknown option '--mix'" -- "$BIN" run --mix x.json
expect 2 "needs a value" -- "$BIN" run --cluster
expect 2 "takes no value" -- "$BIN" run --preempt=1
# --name=value and unambiguous abbreviations, as getopt_long took them.
expect 0 "" -- "$BIN" run --clu=builtin:default --trace builtin:default --policy first-fit --quiet
expect 2 "ambiguous option '--max'" -- "$BIN" run --max 2

# ---- every manifest key of the table is accepted in a manifest (one
# sample value per key; a new key needs one here), and the README lists it
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\nj1,1000,1000,1,1000\n' >"$T/req.csv"
printf 'job,profile\n' >"$T/migreq.csv"
printf '{"classes": {"default": {"A100-80GB": 2, "H100": 4}}}\n' >"$T/speeds.json"
printf '{"default": 1}\n' >"$T/classmix.json"
printf 'time_s,instances_available\n0,8\n' >"$T/spot.csv"
sample() {
  case $1 in
  unknown_duration) echo '[60, 600]' ;;
  swf_gpus_per_proc) echo '[0.5, 1]' ;;
  estimate_factor) echo '[1, 3]' ;;
  estimates) echo '["exact", "factor:2", "trace"]' ;;
  overrun) echo '["kill", "extend"]' ;;
  policy_param) echo '["base=first-fit", "base=best-fit"]' ;;
  migration_cost | migration_cost_per_gib | checkpoint_interval) echo '[0, 30]' ;;
  max_moves | max_moves_per_job) echo '[1, 4]' ;;
  preempt) echo '[false, true]' ;;
  synthetic_load) echo '[0.5, 0.9]' ;;
  durations_from) echo '["req.csv"]' ;;
  mig_map) echo '["compute", "both"]' ;;
  energy_price) echo '[0.1, 0.25]' ;;
  mig_requests) echo '["migreq.csv"]' ;;
  speed) echo '["catalog", "none"]' ;;
  speed_table) echo '["speeds.json"]' ;;
  measured_on) echo '["A100-80GB", "same"]' ;;
  class_mix) echo '["classmix.json"]' ;;
  burst) echo '["never", "compute-wait:0.076"]' ;;
  spot_rate) echo '[0, 0.5]' ;;
  spot_trace) echo '["spot.csv"]' ;;
  restart_overhead) echo '[0, 600]' ;;
  deadline_slack) echo '[1.1, 1.5]' ;;
  queue_cap) echo '[30, 100]' ;;
  preemptible) echo '["BE", "Burstable,BE"]' ;;
  max_preemptions) echo '[1, 3]' ;;
  slo) echo '["LS:600", "LS:60,Guaranteed:10"]' ;;
  *) echo "" ;;
  esac
}
base='"traces": ["builtin:default"], "clusters": ["builtin:default"], "policies": ["first-fit"]'
keys=$(awk -F'\t' '$3 != "-" {print $3}' "$T/table")
[ -n "$keys" ] && ok || bad "the table has manifest keys"
for k in $keys; do
  v=$(sample "$k")
  if [ -z "$v" ]; then
    bad "no sample value for manifest key $k (add one to tests/cli_options.sh)"
    continue
  fi
  extra=""
  [ "$k" = synthetic_load ] && extra=', "durations_from": ["req.csv"]'
  [ "$k" = durations_from ] && extra=', "synthetic_load": [0.5]'
  printf '{%s, "parameters": {"%s": %s%s}}\n' "$base" "$k" "$v" "$extra" >"$T/k.json"
  expect 0 "" -- "$BIN" sweep "$T/k.json" --out "$T/k" --dry-run
  grep -q " $k=" "$T/out" && ok || bad "dry run of $k shows it: $(head -2 "$T/out")"
  # sim/README.md: the key in the sweep section's parameters list.
  grep -qE -- "^\| \`$k\` \|" "$SRC/sim/README.md" && ok || bad "sim/README.md's parameters table lacks $k"
done
# Values are checked by the option's own parser; unknown keys name the file.
printf '{%s, "parameters": {"migration_cost": [0, -5]}}\n' "$base" >"$T/bad1.json"
expect 2 "bad1.json: parameters.migration_cost[1]: '-5': expected seconds >= 0" -- "$BIN" sweep "$T/bad1.json" --dry-run
printf '{%s, "parameters": {"migration_costs": [0]}}\n' "$base" >"$T/bad2.json"
expect 2 "unknown key 'migration_costs'" -- "$BIN" sweep "$T/bad2.json" --dry-run
grep -qF "bad2.json" "$T/err" && ok || bad "unknown parameter key names the file: $(cat "$T/err")"
printf '{%s, "parameters": {"mig_map": ["compute", "slices"]}}\n' "$base" >"$T/bad3.json"
expect 2 "parameters.mig_map[1]: 'slices': expected compute, memory or both" -- "$BIN" sweep "$T/bad3.json" --dry-run
printf '{%s, "parameters": {"max_moves": [2, 2]}}\n' "$base" >"$T/bad4.json"
expect 2 "parameters.max_moves: 2 listed twice" -- "$BIN" sweep "$T/bad4.json" --dry-run
printf '{%s, "parameters": {"synthetic_load": [1]}}\n' "$base" >"$T/bad5.json"
expect 2 "synthetic_load and durations_from go together" -- "$BIN" sweep "$T/bad5.json" --dry-run

# ---- compare: the run options apply to every run, each run byte-identical
# to `schedsim run` with the same options
OPTS=(--estimate-factor 2 --migration-cost 30 --migration-cost-per-gib 1
  --max-moves 3 --max-moves-per-job 2 --seed 3 --speed none)
expect 0 "" -- "$BIN" compare --queue backfill --policy defrag,first-fit,best-fit \
  "${OPTS[@]}" --out "$T/c" --workers 2 --quiet --no-plots
for p in defrag first-fit best-fit; do
  "$BIN" run --cluster builtin:default --trace builtin:default --queue backfill \
    --policy $p "${OPTS[@]}" --out "$T/r-$p" --quiet >/dev/null 2>&1 || bad "single run $p"
  same "$T/c/$p" "$T/r-$p" "compare run $p with the run options"
done
# The options matter (else the comparison above proves nothing).
"$BIN" run --cluster builtin:default --trace builtin:default --queue backfill \
  --policy best-fit --seed 3 --speed none --out "$T/plain" --quiet >/dev/null 2>&1
cmp -s "$T/plain/summary.json" "$T/r-best-fit/summary.json" && bad "--estimate-factor 2 changed nothing" || ok
# --preempt, --checkpoint-interval and --policy-param in compare.
expect 0 "" -- "$BIN" compare --policy defrag --preempt --checkpoint-interval 600 \
  --policy-param base=first-fit --seed 2 --out "$T/c2" --jobs 1 --quiet --no-plots
"$BIN" run --cluster builtin:default --trace builtin:default --policy defrag --preempt \
  --checkpoint-interval 600 --policy-param base=first-fit --seed 2 --out "$T/r2" --quiet >/dev/null 2>&1
same "$T/c2/defrag" "$T/r2" "compare --preempt --policy-param"
# Synthetic times in compare (per cluster) equal run's.
"$BIN" generate --jobs 40 --seed 4 --out "$T/gen.csv" >/dev/null
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\n' >"$T/shapes.csv"
for i in $(seq 1 30); do echo "s$i,1000,1000,$((i % 3 + 1)),1000"; done >>"$T/shapes.csv"
expect 0 "" -- "$BIN" compare --trace "$T/shapes.csv" --cluster "$CL" --cluster builtin:default \
  --policy best-fit --synthetic-load 0.8 --durations-from "$T/gen.csv" --out "$T/c3" --quiet --no-plots
for c in a100-h100 builtin-default; do
  cf=$CL
  [ $c = builtin-default ] && cf=builtin:default
  "$BIN" run --trace "$T/shapes.csv" --cluster "$cf" --policy best-fit --synthetic-load 0.8 \
    --durations-from "$T/gen.csv" --out "$T/r3-$c" --quiet >/dev/null 2>&1 || bad "synthetic single run $c"
  same "$T/c3/${c}_best-fit" "$T/r3-$c" "compare --synthetic-load on $c"
done
expect 2 "go together" -- "$BIN" compare --synthetic-load 0.8 --out "$T/c4"
# A bad --durations-from stops compare (and sweep) before any run.
expect 2 "nosuch.csv" -- "$BIN" compare --synthetic-load 0.8 --durations-from "$T/nosuch.csv" --out "$T/c5"
[ -e "$T/c5" ] && bad "compare wrote $T/c5 despite a bad --durations-from" || ok
printf '{%s, "parameters": {"synthetic_load": [1], "durations_from": ["nosuch.csv"]}}\n' "$base" >"$T/bad6.json"
expect 2 "bad6.json: parameters.durations_from[0]" -- "$BIN" sweep "$T/bad6.json" --out "$T/s6"
[ -e "$T/s6" ] && bad "sweep wrote $T/s6 despite a bad durations_from" || ok

# --mig-map in compare equals run's (and changes the run).
MIG=$SRC/sim/examples/mig
"$BIN" generate --mix "$MIG/inference-dev-mix.json" --seed 1 --jobs 300 --out "$T/mig.csv" >/dev/null
expect 0 "" -- "$BIN" compare --trace "$T/mig.csv" --cluster "$MIG/a100-20-mig-dynamic.json" \
  --policy mig-best-fit --queue skip --mig-map compute --out "$T/cm" --quiet --no-plots
for map in compute both; do
  "$BIN" run --trace "$T/mig.csv" --cluster "$MIG/a100-20-mig-dynamic.json" --policy mig-best-fit \
    --queue skip --mig-map $map --out "$T/rm-$map" --quiet >/dev/null 2>&1 || bad "MIG single run $map"
done
same "$T/cm/mig-best-fit" "$T/rm-compute" "compare --mig-map compute"
cmp -s "$T/rm-compute/summary.json" "$T/rm-both/summary.json" && bad "--mig-map changed nothing" || ok

# ---- --workers and --jobs: the same results
expect 0 "" -- "$BIN" compare --policy first-fit,best-fit,fgd --queue fifo,skip --out "$T/w1" --workers 3 --quiet --no-plots
expect 0 "" -- "$BIN" compare --policy first-fit,best-fit,fgd --queue fifo,skip --out "$T/w2" --jobs 1 --quiet --no-plots
for d in "$T/w1"/*/; do
  r=$(basename "$d")
  same "$T/w1/$r" "$T/w2/$r" "compare --workers 3 vs --jobs 1 ($r)"
done
cmp -s "$T/w1/compare.csv" "$T/w2/compare.csv" && ok || bad "compare.csv differs between --workers and --jobs"
expect 2 "--workers '0': expected 1..4096" -- "$BIN" compare --workers 0

# ---- sweep: a grid over migration_cost x estimate_factor, 4 runs per
# (policy, trace, cluster, seed, queue), each equal to its single run
cat >"$T/grid.json" <<EOF
{"traces": ["builtin:default"], "clusters": ["builtin:default"],
 "policies": ["defrag", "best-fit"], "queues": ["fifo", "backfill"], "seeds": [2],
 "parameters": {"migration_cost": [0, 600], "estimate_factor": [1, 3]}}
EOF
expect 0 "" -- "$BIN" sweep "$T/grid.json" --out "$T/g" --dry-run
[ "$(grep -c $'\ttodo\t' "$T/out")" = 16 ] && ok || bad "grid of 16 runs: $(tail -1 "$T/out")"
head -1 "$T/out" | grep -q "^builtin-default_builtin-default_fifo_defrag_s2_estimate_factor1_migration_cost0	todo	.* estimate_factor=1 migration_cost=0$" \
  && ok || bad "first grid run: $(head -1 "$T/out")"
cp "$T/out" "$T/grid.txt"
expect 0 "" -- "$BIN" sweep "$T/grid.json" --out "$T/g" --workers 2 --quiet
[ "$(wc -l <"$T/g/sweep.csv")" = 17 ] && ok || bad "sweep.csv: header + 16 rows"
n=0
while IFS=$'\t' read -r id _ args; do
  [ -n "$args" ] || continue
  q=$(echo "$args" | sed 's/.*queue=\([^ ]*\).*/\1/')
  p=$(echo "$args" | sed 's/.*policy=\([^ ]*\).*/\1/')
  s=$(echo "$args" | sed 's/.*seed=\([^ ]*\).*/\1/')
  e=$(echo "$args" | sed 's/.*estimate_factor=\([^ ]*\).*/\1/')
  m=$(echo "$args" | sed 's/.*migration_cost=\([^ ]*\).*/\1/')
  n=$((n + 1))
  "$BIN" run --cluster builtin:default --trace builtin:default --queue "$q" --policy "$p" \
    --seed "$s" --estimate-factor "$e" --migration-cost "$m" --out "$T/gs/$id" --quiet >/dev/null 2>&1 \
    || bad "single run $id"
  same "$T/g/runs/$id" "$T/gs/$id" "sweep run $id"
done <"$T/grid.txt"
[ $n = 16 ] && ok || bad "compared $n of 16 grid runs with their single runs"
# The swept parameters are columns of sweep.csv (after the metric columns),
# each row holding its run's values.
head -1 "$T/g/sweep.csv" | grep -q ',estimate_factor,migration_cost$' \
  && ok || bad "sweep.csv header ends with the parameter columns"
grep -q '^builtin-default_builtin-default_backfill_best-fit_s2_estimate_factor3_migration_cost600,.*,3,600$' \
  "$T/g/sweep.csv" && ok || bad "sweep.csv row carries estimate_factor 3, migration_cost 600"
# --jobs (alias) and --workers give the same sweep.csv.
expect 0 "" -- "$BIN" sweep "$T/grid.json" --out "$T/g1" --jobs 1 --quiet
cmp -s "$T/g/sweep.csv" "$T/g1/sweep.csv" && ok || bad "sweep.csv differs between --workers 2 and --jobs 1"
# Today's manifests keep today's run ids (resumed sweeps find their runs).
printf '{%s, "parameters": {"unknown_duration": [60], "swf_gpus_per_proc": [0.5]}}\n' "$base" >"$T/old.json"
expect 0 "" -- "$BIN" sweep "$T/old.json" --dry-run
grep -q "^builtin-default_builtin-default_fifo_first-fit_s1_ud60_gpp0.5	" "$T/out" && ok || bad "old id format: $(head -1 "$T/out")"

# ---- sweep: preempt, policy_param and synthetic times as grid axes
mkdir -p "$T/m"
cp "$T/gen.csv" "$T/shapes.csv" "$T/m/"
cat >"$T/m/syn.json" <<EOF
{"traces": ["shapes.csv"], "clusters": ["builtin:default"], "policies": ["defrag"],
 "parameters": {"synthetic_load": [0.9], "durations_from": ["gen.csv"],
                "preempt": [false, true], "policy_param": ["base=first-fit"]}}
EOF
expect 0 "" -- "$BIN" sweep "$T/m/syn.json" --out "$T/sy" --quiet
for pre in 0 1; do
  id=shapes_builtin-default_fifo_defrag_s1_policy_parambase-first-fit_preempt${pre}_synthetic_load0.9_durations_fromgen
  flag=""
  [ $pre = 1 ] && flag=--preempt
  "$BIN" run --trace "$T/m/shapes.csv" --cluster builtin:default --policy defrag $flag \
    --policy-param base=first-fit --synthetic-load 0.9 --durations-from "$T/m/gen.csv" \
    --out "$T/sy1-$pre" --quiet >/dev/null 2>&1 || bad "synthetic single run preempt=$pre"
  [ -d "$T/sy/runs/$id" ] && same "$T/sy/runs/$id" "$T/sy1-$pre" "sweep synthetic preempt=$pre" \
    || bad "run dir $id missing: $(ls "$T/sy/runs")"
done

# ---- fill: --workers gives the same output; --trace-format applies
F=(fill --cluster builtin:default --trace "$T/gen.csv" --policy best-fit --seeds 1-4)
expect 0 "" -- "$BIN" "${F[@]}" --out "$T/f1"
expect 0 "" -- "$BIN" "${F[@]}" --out "$T/f3" --workers 3
for f in fill.csv summary.json; do
  cmp -s "$T/f1/$f" "$T/f3/$f" && ok || bad "fill $f differs between 1 and 3 workers"
done
expect 0 "" -- "$BIN" "${F[@]}" --trace-format alibaba --out "$T/f4"
cmp -s "$T/f1/fill.csv" "$T/f4/fill.csv" && ok || bad "fill --trace-format alibaba differs"
expect 2 "gen.csv" -- "$BIN" "${F[@]}" --trace-format swf --out "$T/f5"

# ---- demo takes the run options too
expect 0 "" -- "$BIN" demo --queue backfill --estimate-factor 2 --out "$T/d"
grep -q "queue backfill" "$T/out" && ok || bad "demo --queue backfill: $(head -1 "$T/out")"

cli_summary
