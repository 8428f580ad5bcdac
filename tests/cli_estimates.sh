#!/usr/bin/env bash
# --estimates and --overrun on the command line: values and errors (exit 2),
# --estimate-factor F = --estimates factor:F and refused when contradicting,
# SWF requested times (field 9) killing an overrunning job (jobs.csv status
# killed, summary.json jobs_killed) or extending it, and compare passing the
# options through.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
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

cli_summary
