#!/usr/bin/env bash
# Preemptible jobs from the command line (--preemptible, --max-preemptions,
# --slo; summary.json by_class) and experiment 6(c),
# scripts/preempt_borrowing.sh, at tiny sizes: a hand case whose every
# figure is computed below (no shared data needed), then the Alibaba trace
# at a few hundred pods (skipped without the shared data; a failure under
# CI=true).
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
DATA=${SCHEDSIM_SHARED_DATA:-$SRC/../shared/data}
. "$(dirname "$0")/lib/cli_harness.sh"
. "$SRC/scripts/lib/summary_json.sh"

rows() { awk 'NR > 1' "$1" | wc -l | tr -d ' '; }
cols() { awk -F, '{ print NF }' "$1" | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# row FILE MODE FIRST LAST: fields FIRST..LAST of MODE's row, comma-joined
row() { awk -F, -v OFS=, -v m="$2" -v a="$3" -v b="$4" '$3 == m { s = $a; for (i = a + 1; i <= b; i++) s = s OFS $i; print s }' "$1"; }

# Two nodes of 2 V100s. b1 (BE, 2 GPUs, 1000 s) starts at 0 on the first
# node, b2 (BE, 1000 s) at 10 on the second; ls (LS, 2 GPUs, 50 s) arrives
# at 100.
#   no preemptible class: ls waits for b1 (ends 1000): queue 900 s, an SLO
#     miss at LS:600;
#   BE preemptible, no checkpoint: stopping b1 loses 100 s x 2 GPUs, b2
#     90 x 2 = 180 GPU-s: b2 goes, ls runs 100..150, b2 restarts from
#     scratch at 150 and ends at 1150 (JCT 1140; BE JCT mean (1000 + 1140)
#     / 2 = 1070); lost 180 GPU-s = 0.05 GPU-hours;
#   checkpoint 50 s: b1 keeps 100 s (loses 0), b2 keeps 50 (loses 80): b1
#     goes and ends at 150 + 900 = 1050 (BE JCT mean 1025), nothing lost.
cat >"$T/nodes.csv" <<'EOF'
sn,cpu_milli,memory_mib,gpu,model
n0,64000,262144,2,V100M16
n1,64000,262144,2,V100M16
EOF
cat >"$T/pods.csv" <<'EOF'
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
b1,1000,1024,2,1000,,BE,Running,0,1000,0
b2,1000,1024,2,1000,,BE,Running,10,1010,10
ls,1000,1024,2,1000,,LS,Running,100,150,100
EOF
run() { "$BIN" run --quiet --cluster "$T/nodes.csv" --trace "$T/pods.csv" --policy first-fit --speed none "$@"; }
if run --preemptible BE --out "$T/r0" >/dev/null; then
  ok
  s=$T/r0/summary.json
  [ "$(json preemptions "$s")" = 1 ] && [ "$(json lost_gpu_seconds "$s")" = 180 ] && ok \
    || bad "hand: 1 preemption, 180 GPU-s lost"
  [ "$(awk -F, '$1 == "b2" { print $4 "," $9 "," $12 "," $13 }' "$T/r0/jobs.csv")" = "1150,1140,1,180.000000" ] && ok \
    || bad "hand: b2 stopped, restarted at 150, ends at 1150 (jobs.csv)"
  grep -q '"by_class"' "$s" && ok || bad "hand: by_class with --preemptible"
else
  bad "run --preemptible BE failed"
fi
run --preemptible BE --checkpoint-interval 50 --out "$T/r50" >/dev/null && ok || bad "run with a checkpoint failed"
[ "$(awk -F, '$1 == "b1" { print $4 "," $12 "," $13 }' "$T/r50/jobs.csv")" = "1050,1,0.000000" ] && ok \
  || bad "hand: with checkpoint 50 s b1 goes, loses nothing, ends at 1050"
# --max-preemptions 1 and a third LS pod at 200: b2 (stopped once) is
# evicted no more; b1 (never stopped) is, at 200 (lost 200 x 2 = 400).
sed '$a\
l2,1000,1024,2,1000,,LS,Running,200,210,200' "$T/pods.csv" >"$T/pods3.csv"
"$BIN" run --quiet --cluster "$T/nodes.csv" --trace "$T/pods3.csv" --policy first-fit --speed none \
  --preemptible BE --max-preemptions 1 --out "$T/cap" >/dev/null && ok || bad "run --max-preemptions failed"
[ "$(awk -F, '$1 == "b1" || $1 == "b2" { printf "%s:%s:%s ", $1, $12, $13 }' "$T/cap/jobs.csv")" = "b2:1:180.000000 b1:1:400.000000 " ] && ok \
  || bad "hand: cap 1: b2 once, then b1 (got $(awk -F, '$1 ~ /^b/ { printf "%s:%s:%s ", $1, $12, $13 }' "$T/cap/jobs.csv"))"
run --slo LS:600 --out "$T/slo" >/dev/null && ok || bad "run --slo failed"
[ "$(json preemptions "$T/slo/summary.json")" = 0 ] && ok || bad "hand: --slo alone preempts nothing"
grep -A20 '"LS"' "$T/slo/summary.json" | grep -q '"slo_misses":	1' && ok || bad "hand: ls misses LS:600"
run --out "$T/plain" >/dev/null && ! grep -q by_class "$T/plain/summary.json" && ok \
  || bad "hand: no by_class without --preemptible or --slo"
# compare passes the options on: its run is byte-identical to `run`'s.
"$BIN" compare --quiet --no-plots --cluster "$T/nodes.csv" --trace "$T/pods.csv" --policy first-fit \
  --speed none --preemptible BE --checkpoint-interval 50 --out "$T/cmp" >/dev/null && ok || bad "compare --preemptible failed"
for f in summary.json jobs.csv; do
  cmp -s "$T/cmp/first-fit/$f" "$T/r50/$f" && ok || bad "compare --preemptible: $f differs from run's"
done
expect 2 "--preemptible 'BE,XX': unknown class 'XX'" -- run --preemptible BE,XX --out "$T/x"
expect 2 "--slo 'LS=5': bad item 'LS=5'" -- run --slo LS=5 --out "$T/x"
expect 2 "--max-preemptions" -- run --preemptible BE --max-preemptions 0 --out "$T/x"

# A generic CSV with the spot column: s (spot, 2 GPUs, 1000 s) at 0 on one
# node of 2 GPUs, j (not spot) at 100 for 50 s. With --preemptible spot, j
# stops s (lost 100 s x 2 GPUs) and runs 100..150; s restarts and ends at
# 1150. by_class has spot (1 job, 1 preemption) and unknown (j).
head -2 "$T/nodes.csv" >"$T/node1.csv"
printf 'id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model,spot\ns,0,1000,2,1000,1000,1024,,1\nj,100,50,2,1000,1000,1024,,\n' >"$T/spot.csv"
"$BIN" run --quiet --cluster "$T/node1.csv" --trace "$T/spot.csv" --policy best-fit --speed none \
  --preemptible spot --out "$T/spot" >/dev/null && ok || bad "run with a spot column failed"
[ "$(awk -F, '$1 == "s" { print $4 "," $12 "," $13 }' "$T/spot/jobs.csv")" = "1150,1,200.000000" ] && ok \
  || bad "spot: s stopped at 100, ends at 1150"
grep -A3 '"spot"' "$T/spot/summary.json" | grep -q '"jobs":	1' && ok || bad "spot: by_class.spot"
"$BIN" run --quiet --cluster "$T/node1.csv" --trace "$T/spot.csv" --policy best-fit --speed none \
  --preemptible BE --out "$T/spot-be" >/dev/null && [ "$(json preemptions "$T/spot-be/summary.json")" = 0 ] && ok \
  || bad "spot: without --preemptible spot nothing is stopped"
sed 's/,,1$/,,2/' "$T/spot.csv" >"$T/spot-bad.csv"
expect 2 "spot-bad.csv:2: field 'spot': expected 0, 1 or empty" -- "$BIN" run --cluster "$T/node1.csv" \
  --trace "$T/spot-bad.csv" --policy best-fit --out "$T/x"

# ---- the experiment script on the hand case: one cluster, no compression
E=$T/exp
if TRACE_FILE=$T/pods.csv NODE_FILE=$T/nodes.csv FRACTIONS=1 COMPRESS=1 CHECKPOINTS="0 50" \
  SCHEDSIM=$BIN bash "$SRC/scripts/preempt_borrowing.sh" "$E" >"$T/exp.out" 2>&1; then
  ok
  [ "$(rows "$E/table.csv")" = 4 ] && [ "$(cols "$E/table.csv")" = 18 ] && ok \
    || bad "preempt_borrowing: 4 rows of 18 columns"
  # ls_jobs,ls_queue_mean_s,p95,p99,ls_slo_misses ... be_jobs..be_lost_gpu_hours
  [ "$(row "$E/table.csv" none 4 8)" = "1,900,900,900,1" ] && ok || bad "preempt_borrowing: none: ls waits 900 s"
  [ "$(row "$E/table.csv" none 13 17)" = "2,0,1000,0,0.0000" ] && ok || bad "preempt_borrowing: none: BE"
  [ "$(row "$E/table.csv" borrow-ck0 4 8)" = "1,0,0,0,0" ] && ok || bad "preempt_borrowing: borrow: ls at once"
  [ "$(row "$E/table.csv" borrow-ck0 13 17)" = "2,0,1070,1,0.0500" ] && ok || bad "preempt_borrowing: borrow-ck0: BE"
  [ "$(row "$E/table.csv" borrow-ck50 13 17)" = "2,0,1025,1,0.0000" ] && ok || bad "preempt_borrowing: borrow-ck50: BE"
  [ "$(row "$E/table.csv" no-be 4 17)" = "1,0,0,0,0,-,-,-,-,-,-,-,-,-" ] && ok || bad "preempt_borrowing: no-be"
else
  bad "preempt_borrowing.sh failed: $(tail -3 "$T/exp.out")"
fi
expect 2 "COMPRESS must be a whole number" -- env COMPRESS=x SCHEDSIM="$BIN" bash "$SRC/scripts/preempt_borrowing.sh" "$T/x" "$DATA"

# ---- the Alibaba trace, first 400 pods, on the whole cluster and 1/8 of it
if [ -r "$DATA/alibaba-gpu-v2023/openb_pod_list_default.csv" ]; then
  A=$T/ali
  if JOBS=400 FRACTIONS="1 8" SCHEDSIM=$BIN bash "$SRC/scripts/preempt_borrowing.sh" "$A" "$DATA" >"$T/ali.out" 2>&1; then
    ok
    [ "$(rows "$A/table.csv")" = 8 ] && [ "$(cols "$A/table.csv")" = 18 ] && ok \
      || bad "preempt_borrowing (Alibaba): 8 rows of 18 columns"
    [ "$(awk -F, 'NR > 1 { print $4 }' "$A/table.csv" | sort -u)" = "$(awk -F, 'NR > 1 && $7 == "LS"' "$A/trace.csv" | wc -l | tr -d ' ')" ] && ok \
      || bad "preempt_borrowing (Alibaba): every mode has every LS pod"
    [ "$(awk -F, 'NR > 1 && ($3 == "none" || $1 == 1) && $3 != "no-be" { print $16 }' "$A/table.csv" | sort -u)" = 0 ] && ok \
      || bad "preempt_borrowing (Alibaba): no preemption without borrowing or on the whole cluster"
    [ "$(awk -F, 'NR > 1 && $1 == 1 && $3 != "no-be" { print $5 "," $14 "," $15 }' "$A/table.csv" | sort -u | wc -l)" = 1 ] && ok \
      || bad "preempt_borrowing (Alibaba): the whole cluster does not queue: borrowing changes nothing"
  else
    bad "preempt_borrowing.sh (Alibaba) failed: $(tail -3 "$T/ali.out")"
  fi
elif [ "${CI:-}" = true ]; then
  bad "CI=true but the Alibaba data under $DATA is missing"
else
  echo "cli_preempt: SKIP: shared data not found under $DATA; the Alibaba run skipped"
fi
cli_summary
