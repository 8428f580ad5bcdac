#!/usr/bin/env bash
# --estimates and --overrun on the command line: values and errors (exit 2),
# --estimate-factor F = --estimates factor:F and refused when contradicting,
# SWF requested times (field 9) killing an overrunning job (jobs.csv status
# killed, summary.json jobs_killed) or extending it, compare passing the
# options through, and the model of user estimates (model:tsafrir05): its
# errors, kill by default, sweep manifests, the shared SWF log and Philly.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
DATA=${SCHEDSIM_SHARED_DATA:-$SRC/../shared/data}
. "$(dirname "$0")/lib/cli_harness.sh"

cat >"$T/c.json" <<'J'
{"name": "c", "node_groups": [{"name": "n", "count": 1, "gpu_model": "A100-80GB",
 "gpus_per_node": 4, "cpu_milli": 64000, "memory_mib": 64000, "price_per_gpu_hour": 1}]}
J
# A: 2 procs, runs 100 s, requested 50 s (overruns); B: 4 procs, head at 1;
# C: 2 procs, runs 20 s, requested 30 s; D: no requested time (-1).
cat >"$T/t.swf" <<'S'
; hand case
1 0 -1 100 2 -1 -1 2 50 -1 1 1 1 -1 -1 -1 -1 -1
2 1 -1 50 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1
3 2 -1 20 2 -1 -1 2 30 -1 1 1 1 -1 -1 -1 -1 -1
4 3 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
S
RUN=("$BIN" run --quiet --cluster "$T/c.json" --trace "$T/t.swf" --policy first-fit --queue backfill)

# ---- values and errors
expect 2 "expected exact, trace or factor:F (F > 0)" -- "${RUN[@]}" --estimates bogus
expect 2 "expected exact, trace or factor:F (F > 0)" -- "${RUN[@]}" --estimates factor:0
expect 2 "expected exact, trace or factor:F (F > 0)" -- "${RUN[@]}" --estimates factor:2x
expect 2 "expected kill or extend" -- "${RUN[@]}" --overrun never
expect 2 "--estimates and --estimate-factor contradict" -- "${RUN[@]}" --estimates trace --estimate-factor 2
expect 2 "--estimates and --estimate-factor contradict" -- "${RUN[@]}" --estimates factor:3 --estimate-factor 2
expect 0 "" -- "${RUN[@]}" --estimates factor:2 --estimate-factor 2
"$BIN" run --help | grep -q -- '--estimates SRC' && "$BIN" run --help | grep -q -- '--overrun RULE' \
  && ok || bad "run --help lists --estimates and --overrun"

# ---- the same run three ways
"${RUN[@]}" --out "$T/plain" >/dev/null 2>&1
"${RUN[@]}" --estimates exact --out "$T/exact" >/dev/null 2>&1
for f in summary.json jobs.csv; do
  cmp -s "$T/plain/$f" "$T/exact/$f" && ok || bad "--estimates exact is the default ($f)"
done
"${RUN[@]}" --estimate-factor 2 --out "$T/f2a" >/dev/null 2>&1
"${RUN[@]}" --estimates factor:2 --out "$T/f2b" >/dev/null 2>&1
for f in summary.json jobs.csv; do
  cmp -s "$T/f2a/$f" "$T/f2b/$f" && ok || bad "--estimates factor:2 = --estimate-factor 2 ($f)"
done
grep -Eq '"jobs_killed":[[:space:]]*0,' "$T/plain/summary.json" && ok || bad "exact: jobs_killed 0"

# ---- trace: A is killed at 50 s (kill is the default with trace)
expect 0 "" -- "${RUN[@]}" --estimates trace --out "$T/tr"
row() { awk -F, -v id="$2" '$1 == id' "$T/$1/jobs.csv"; }
row tr 1 | grep -q '^1,0,0,50,.*,killed,' && ok || bad "A killed at 50: $(row tr 1)"
grep -Eq '"jobs_killed":[[:space:]]*1,' "$T/tr/summary.json" && ok || bad "trace: jobs_killed 1"
# B (the head) starts at 50 when A is killed; C's estimated end 2 + 30 = 32
# is before B's reservation (50): C is backfilled at 2.
row tr 2 | grep -q '^2,1,50,100,' && ok || bad "B starts at 50: $(row tr 2)"
row tr 3 | grep -q '^3,2,2,22,.*,completed,' && ok || bad "C backfilled at 2: $(row tr 3)"
# ---- extend: A runs its 100 s
expect 0 "" -- "${RUN[@]}" --estimates trace --overrun extend --out "$T/ext"
row ext 1 | grep -q '^1,0,0,100,.*,completed,' && ok || bad "A extended: $(row ext 1)"
grep -Eq '"jobs_killed":[[:space:]]*0,' "$T/ext/summary.json" && ok || bad "extend: jobs_killed 0"
row ext 2 | grep -q '^2,1,100,150,' && ok || bad "B starts at 100: $(row ext 2)"
# Determinism.
"${RUN[@]}" --estimates trace --out "$T/tr2" >/dev/null 2>&1
cmp -s "$T/tr/jobs.csv" "$T/tr2/jobs.csv" && cmp -s "$T/tr/summary.json" "$T/tr2/summary.json" \
  && ok || bad "trace runs are deterministic"

# ---- compare passes them through
expect 0 "" -- "$BIN" compare --quiet --no-plots --cluster "$T/c.json" --trace "$T/t.swf" \
  --policy first-fit --queue backfill --estimates trace --out "$T/cmp"
col=$(head -1 "$T/cmp/compare.csv" | tr , '\n' | grep -n '^jobs_killed$' | cut -d: -f1)
[ -n "$col" ] && [ "$(sed -n 2p "$T/cmp/compare.csv" | cut -d, -f"$col")" = 1 ] \
  && ok || bad "compare --estimates trace: jobs_killed 1 in compare.csv"

# ---- model:NAME[:MAX_S[:P]]: values and errors
MSG="expected exact, trace or factor:F (F > 0), or model:NAME[:MAX_S[:P]] (NAME one of: tsafrir05;"
for v in model: model:nope model:tsafrir model:tsafrir05x model:tsafrir05: model:tsafrir05:3599 \
  model:tsafrir05:1000000001 model:tsafrir05:3600x model:tsafrir05:-3600 model:tsafrir05:3600: \
  model:tsafrir05:3600:0 model:tsafrir05:3600:100.5 model:tsafrir05:3600:5:1; do
  expect 2 "--estimates '$v': $MSG" -- "${RUN[@]}" --estimates "$v"
done
"$BIN" run --help | grep -q 'model:NAME\[:MAX_S\[:P\]\]' && ok || bad "run --help lists model:NAME[:MAX_S[:P]]"
# On the hand case (every run <= 100 s, the default maximum 1 h): nothing
# is killed, every job completes, and the same seed gives the same files.
for k in a b; do
  expect 0 "" -- "${RUN[@]}" --estimates model:tsafrir05 --out "$T/m$k"
done
grep -Eq '"jobs_killed":[[:space:]]*0,' "$T/ma/summary.json" && ok || bad "model: jobs_killed 0"
grep -Eq '"jobs_completed":[[:space:]]*4,' "$T/ma/summary.json" && ok || bad "model: 4 completed"
for f in summary.json jobs.csv timeline.csv; do
  cmp -s "$T/ma/$f" "$T/mb/$f" && ok || bad "model runs are deterministic ($f)"
done
# A job longer than the maximal estimate: A runs 2 h, B and C 10 s, MAX_S
# 3600. A gets the maximum (1 h) and is killed there (kill is the default
# with a model); extend lets it run its 2 h; the default maximum (A's 2 h)
# kills nothing.
cat >"$T/m.swf" <<'S'
1 0 -1 7200 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
2 1 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
3 2 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
S
MRUN=("$BIN" run --quiet --cluster "$T/c.json" --trace "$T/m.swf" --policy first-fit --queue backfill)
expect 0 "" -- "${MRUN[@]}" --estimates model:tsafrir05:3600 --out "$T/mk"
row mk 1 | grep -q '^1,0,0,3600,.*,killed,' && ok || bad "model: A killed at 3600: $(row mk 1)"
grep -Eq '"jobs_killed":[[:space:]]*1,' "$T/mk/summary.json" && ok || bad "model: jobs_killed 1"
expect 0 "" -- "${MRUN[@]}" --estimates model:tsafrir05:3600 --overrun extend --out "$T/me"
row me 1 | grep -q '^1,0,0,7200,.*,completed,' && ok || bad "model extend: A runs 7200 s: $(row me 1)"
expect 0 "" -- "${MRUN[@]}" --estimates model:tsafrir05 --out "$T/md"
grep -Eq '"jobs_killed":[[:space:]]*0,' "$T/md/summary.json" && ok || bad "model, default max: jobs_killed 0"
# Jobs the model cannot cover (four of 50 min, MAX_S 3600: it draws 45,
# 50, 55 and 60 min, and 45 min is too short): exit 2 naming the option
# and the share at the maximum that covers them, which then works.
cat >"$T/long.swf" <<'S'
1 0 -1 3000 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
2 0 -1 3000 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
3 0 -1 3000 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
4 0 -1 3000 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
S
LRUN=("$BIN" run --quiet --cluster "$T/c.json" --trace "$T/long.swf" --policy first-fit --queue backfill)
expect 2 "--estimates model:tsafrir05: with a maximal estimate of 3600 s the model cannot give every job an estimate at least its run time" \
  -- "${LRUN[@]}" --estimates model:tsafrir05:3600 --out "$T/lf"
hint=$(grep -o 'model:tsafrir05:3600:[0-9.]*' "$T/err" | head -1)
[ -n "$hint" ] && ok || bad "no share suggested: $(cat "$T/err")"
expect 0 "" -- "${LRUN[@]}" --estimates "$hint" --out "$T/lh"
grep -Eq '"jobs_killed":[[:space:]]*0,' "$T/lh/summary.json" && ok || bad "$hint: jobs_killed 0"

# ---- sweep: "estimates": ["exact", "model:tsafrir05"], each run equal to
# its single run
cat >"$T/grid.json" <<J
{"traces": ["$T/t.swf"], "clusters": ["$T/c.json"], "policies": ["first-fit"],
 "queues": ["backfill"], "seeds": [3], "parameters": {"estimates": ["exact", "model:tsafrir05"]}}
J
expect 0 "" -- "$BIN" sweep "$T/grid.json" --out "$T/sw" --quiet
[ "$(wc -l <"$T/sw/sweep.csv")" = 3 ] && ok || bad "sweep.csv: header + 2 rows"
id=$(ls "$T/sw/runs" | grep 'estimatesmodel-tsafrir05$')
[ -n "$id" ] && ok || bad "sweep run id of model:tsafrir05: $(ls "$T/sw/runs")"
expect 0 "" -- "${RUN[@]}" --seed 3 --estimates model:tsafrir05 --out "$T/sw1"
for f in summary.json jobs.csv; do
  cmp -s "$T/sw/runs/$id/$f" "$T/sw1/$f" && ok || bad "sweep model run = its single run ($f)"
done

# ---- the shared SWF log (backfill on 128 GPUs) and Philly (backfill on
# sim/examples/a100-1000.json, where the queue stays short and the replay
# quick): the model covers both (default maximum: 18 h and 1286 h), nothing
# is killed, every job completes.
SWF=$DATA/swf/NASA-iPSC-1993-3.1-cln.swf.gz
PHILLY=$DATA/philly/philly.csv
if [ -r "$SWF" ] && [ -r "$PHILLY" ]; then
  cat >"$T/swf128.json" <<'J'
{"name": "swf128", "node_groups": [{"name": "n", "count": 16, "gpu_model": "A100-SXM4-80GB",
 "gpus_per_node": 8, "cpu_milli": 256000, "memory_mib": 2097152, "gpu_mode": "exclusive"}]}
J
  expect 0 "" -- "$BIN" run --quiet --cluster "$T/swf128.json" --trace "$SWF" --policy best-fit \
    --queue backfill --estimates model:tsafrir05 --check --out "$T/swf"
  grep -Eq '"jobs_completed":[[:space:]]*18239,' "$T/swf/summary.json" && ok || bad "SWF model: 18239 completed"
  grep -Eq '"jobs_killed":[[:space:]]*0,' "$T/swf/summary.json" && ok || bad "SWF model: jobs_killed 0"
  expect 0 "" -- "$BIN" run --quiet --cluster "$SRC/sim/examples/a100-1000.json" --trace "$PHILLY" \
    --policy best-fit --queue backfill --estimates model:tsafrir05 --out "$T/philly"
  grep -Eq '"jobs_completed":[[:space:]]*82247,' "$T/philly/summary.json" && ok || bad "Philly model: 82247 completed"
  grep -Eq '"jobs_killed":[[:space:]]*0,' "$T/philly/summary.json" && ok || bad "Philly model: jobs_killed 0"
elif [ "${CI:-}" = true ]; then
  bad "CI=true but $SWF or $PHILLY is missing"
else
  echo "SKIP: $SWF or $PHILLY not found; model runs on the shared traces skipped"
fi

cli_summary
