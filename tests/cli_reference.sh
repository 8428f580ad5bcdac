#!/usr/bin/env bash
# The reference documents every interface: each option that any command's
# --help lists, and each key and column of every output file (summary.json,
# jobs.csv, timeline.csv with and without MIG, compare.csv, rightsize.csv
# and rightsize_by_class.csv, sweep.csv,
# fill.csv and fill's summary.json, demo's comparison.csv) appears in the
# references (README.md, sim/, traces/, policies/, libsched/, bench/, tests/
# README.md and docs/). A name counts as documented when it appears
# delimited by a backquote, dot, comma or space on either side (so `a,b,c`
# column lists and key paths such as `cost_usd.total` document their parts).
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"

REF=$T/reference.md
cat "$SRC/README.md" "$SRC"/*/README.md "$SRC"/docs/*.md >"$REF" 2>/dev/null
[ -s "$SRC/sim/README.md" ] && ok || bad "sim/README.md exists"

documented() { # NAME WHERE
  local re
  re=$(printf '%s' "$1" | sed 's/[.[\*^$]/\\&/g')
  grep -qE -- "(^|[\`., (=])$re(\$|[\`., )=:])" "$REF" && ok || bad "reference lacks $2 '$1'"
}

# ---- every option of every command's --help
"$BIN" --help >"$T/main" 2>&1 || bad "schedsim --help"
cmds=$(awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' "$T/main")
[ -n "$cmds" ] && ok || bad "schedsim --help lists commands"
for c in $cmds; do
  documented "$c" "command"
  "$BIN" "$c" --help >"$T/help" 2>&1 || bad "$c --help fails"
  for o in $(grep -oE -- '(^|[ [])--[a-z][a-z0-9-]*' "$T/help" | sed 's/^[ [ ]*//' | sort -u); do
    documented "$o" "option of $c"
  done
done

# ---- every output key and column
"$BIN" generate --out "$T/tr.csv" --jobs 300 --seed 3 >/dev/null 2>&1 || bad "generate"
json_keys() { grep -oE '"[A-Za-z0-9_.-]+" *:' "$1" | sed 's/^"//; s/" *:$//' | sort -u; }
csv_cols() { head -1 "$1" | tr -d '\r' | tr ',' '\n'; }
check_json() { for k in $(json_keys "$1"); do documented "$k" "key of $2"; done; }
check_csv() { for k in $(csv_cols "$1"); do documented "$k" "column of $2"; done; }

expect 0 "" -- "$BIN" run --cluster builtin:default --trace "$T/tr.csv" --policy best-fit \
  --out "$T/run" --quiet
check_json "$T/run/summary.json" summary.json
check_csv "$T/run/jobs.csv" jobs.csv
check_csv "$T/run/timeline.csv" timeline.csv
expect 0 "" -- "$BIN" run --cluster "$SRC/sim/examples/mig/a100-20-mig-dynamic.json" \
  --trace "$T/tr.csv" --policy mig-aware --out "$T/mig" --quiet
check_json "$T/mig/summary.json" "summary.json (MIG)"
check_csv "$T/mig/jobs.csv" "jobs.csv (MIG)"
check_csv "$T/mig/timeline.csv" "timeline.csv (MIG)"
expect 0 "" -- "$BIN" compare --trace "$T/tr.csv" --policy first-fit,fgd --no-plots \
  --out "$T/cmp" --workers 2 --quiet
check_csv "$T/cmp/compare.csv" compare.csv
expect 0 "" -- "$BIN" rightsize --trace "$T/tr.csv" --cluster builtin:default \
  --cluster builtin:mig-dynamic --no-plots --out "$T/rs" --workers 2 --quiet
check_csv "$T/rs/rightsize.csv" rightsize.csv
check_csv "$T/rs/rightsize_by_class.csv" rightsize_by_class.csv
cat >"$T/grid.json" <<JSON
{"traces": ["$T/tr.csv"], "clusters": ["builtin:default"], "policies": ["first-fit"],
 "parameters": {"estimate_factor": [1, 2]}}
JSON
expect 0 "" -- "$BIN" sweep "$T/grid.json" --out "$T/sw" --workers 2 --quiet
check_csv "$T/sw/sweep.csv" sweep.csv
expect 0 "" -- "$BIN" fill --cluster builtin:default --trace "$T/tr.csv" --policy fgd \
  --seeds 1-2 --out "$T/fill"
check_json "$T/fill/summary.json" "fill summary.json"
check_csv "$T/fill/fill.csv" fill.csv
expect 0 "" -- "$BIN" demo --out "$T/demo"
check_csv "$T/demo/comparison.csv" "demo comparison.csv"

cli_summary
