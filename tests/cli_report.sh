#!/usr/bin/env bash
# report.html in a real browser: a compare over the four built-in GPU modes
# writes it, headless Chromium renders it (--dump-dom gives the DOM after
# parsing, without network access), and the rendered page has the answer,
# the table with one row per run, every plot as an inline SVG, and fetches
# nothing. Also: demo prints the answer under its table, with every mode.
# Without a browser the rendering part is skipped with a SKIP: line (under
# CI=true that is a failure: .ci/run installs chromium first, see
# scripts/setup.sh --browser).
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"

# ---- demo: four modes, the policies that apply to each, the answer
expect 0 "" -- "$BIN" demo --out "$T/demo"
for m in shared exclusive mig-static mig-dynamic; do
  grep -q "^$m " "$T/out" && ok || bad "demo table lacks mode $m"
done
grep -qE '^(shared|exclusive) +mig-' "$T/out" && bad "demo runs a MIG policy without MIG GPUs" || ok
grep -qE '^mig-(static|dynamic) +(first-fit|best-fit|fgd|defrag) ' "$T/out" && bad "demo runs a non-MIG policy on MIG" || ok
grep -q '^Useful utilization .* is highest with ' "$T/out" && ok || bad "demo prints the answer"
grep -q '^Mean queue time is lowest with ' "$T/out" && ok || bad "demo answer: queue time"
grep -q '^Cost per job-hour is lowest with ' "$T/out" && ok || bad "demo answer: cost"
grep -q '^Cost per unit of work (USD per reference GPU-hour done) is lowest with ' "$T/out" \
  && ok || bad "demo answer: cost per unit of work"
# Each demo run equals `schedsim run` of its built-in cluster.
"$BIN" run --cluster builtin:mig-dynamic --trace builtin:default --policy mig-aware \
  --out "$T/one" --quiet >/dev/null 2>&1 || bad "run builtin:mig-dynamic"
cmp -s "$T/one/jobs.csv" "$T/demo/mig-dynamic-mig-aware/jobs.csv" && ok || bad "demo mig-dynamic run differs from run"

# ---- the report
"$BIN" generate --out "$T/tr.csv" --jobs 400 --seed 4 >/dev/null 2>&1 || bad "generate"
expect 0 "" -- "$BIN" compare --trace "$T/tr.csv" --cluster builtin:default \
  --cluster builtin:exclusive --cluster builtin:mig-static --cluster builtin:mig-dynamic \
  --out "$T/c" --quiet --workers 2
runs=$(($(grep -c . "$T/c/compare.csv") - 1))
plots=0
command -v gnuplot >/dev/null 2>&1 && plots=4

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$b
    break
  fi
done
if [ -z "$browser" ]; then
  if [ "${CI:-}" = true ]; then
    bad "CI=true but no headless browser (chromium) is installed"
    cli_summary
    exit 1
  fi
  echo "SKIP: no headless browser (chromium); report.html not rendered (bash scripts/setup.sh --browser installs one)"
  cli_summary >/dev/null
  exit 77
fi
profile=$(mktemp -d "$T/profile.XXXXXX")
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --dump-dom "file://$T/c/report.html" \
  >"$T/dom.html" 2>"$T/browser.err"
[ -s "$T/dom.html" ] && ok || bad "$browser rendered nothing: $(tail -3 "$T/browser.err")"
grep -q '<table id="runs">' "$T/dom.html" && ok || bad "rendered page has the table"
[ "$(grep -o '<tr><td>' "$T/dom.html" | wc -l)" = "$runs" ] && ok || bad "rendered table has $runs runs"
grep -q 'id="answer">Useful utilization' "$T/dom.html" && ok || bad "rendered page has the answer"
[ "$(grep -o '<svg' "$T/dom.html" | wc -l)" = "$plots" ] && ok || bad "rendered page has $plots plots"
for p in bars queue_cdf utilization cost; do
  [ "$plots" = 0 ] && break
  grep -q "<figure id=\"plot-$p\">" "$T/dom.html" && ok || bad "rendered page lacks plot $p"
done
# A screenshot: the page lays out and paints.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1400,3000 --screenshot="$T/shot.png" \
  "file://$T/c/report.html" >/dev/null 2>&1
head -c 8 "$T/shot.png" 2>/dev/null | grep -q PNG && ok || bad "no screenshot of report.html"
cli_summary
