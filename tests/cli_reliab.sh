#!/usr/bin/env bash
# Reliability, second round (issue #17), end to end: the time range (sums
# of times refused naming file, line and field, nothing written), sweep run
# ids that cannot collide, 64-bit seeds written exactly, messages that give
# the real reason (option ranges, PAI gpu_type, mix fields, long paths),
# JSON duplicate keys, \u0000 in names and catalog aliases on two models.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"
has() { # FILE TEXT
  grep -qF -- "$2" "$1" && ok || bad "$1 lacks '$2': $(head -c 300 "$1")"
}
absent() { [ ! -e "$1" ] && ok || bad "$1 exists"; }
CL=$SRC/sim/examples/a100-h100.json
GEN=id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model
run() { "$BIN" run --cluster "$CL" --policy first-fit --quiet "$@"; }

# ---- 1. the time range: sums, not only single values
printf '%s\na,9007199254.740992,9223372036854,1,1000,1000,1024,\n' $GEN >"$T/t1.csv"
expect 2 "t1.csv:2: field 'duration': submit + duration ends past the time range" -- run --trace "$T/t1.csv" --out "$T/o1"
absent "$T/o1"
printf '%s\na,0,5000000000000,1,1000,1000,1024,\nb,1,5000000000000,1,1000,1000,1024,\n' $GEN >"$T/t2.csv"
for q in fifo skip backfill priority; do
  expect 2 "t2.csv:3: field 'duration': the jobs so far" -- run --trace "$T/t2.csv" --queue $q --out "$T/o2"
done
absent "$T/o2"
printf 'timestamp,duration,num_gpus,gpu_time,cluster\n1970-01-01 00:00:00,10,1,10,c\n9999-12-31 23:59:59,9223372036854,1,1,c\n' >"$T/ph.csv"
expect 2 "ph.csv:3: field 'duration'" -- run --trace "$T/ph.csv"
# durations drawn from a trace with a 9223372036854 s job
printf '%s\na,0,9223372036854,1,1000,1000,1024,\n' $GEN >"$T/big.csv"
printf '%s\na,0,10,1,1000,1000,1024,\nb,0,10,1,1000,1000,1024,\n' $GEN >"$T/ok.csv"
expect 2 "field 'duration'" -- run --trace "$T/ok.csv" --durations-from "$T/big.csv" --synthetic-load 1 --out "$T/o3"
absent "$T/o3"
expect 2 "field 'duration'" -- "$BIN" compare --trace "$T/ok.csv" --durations-from "$T/big.csv" --synthetic-load 1 --policy first-fit --quiet --out "$T/o4"
# the engine's own sums: a run time from --unknown-duration past the range
printf '%s\na,9223372036000,,1,1000,1000,1024,\n' $GEN >"$T/un.csv"
for q in fifo skip backfill priority; do
  expect 2 "un.csv:2: field 'duration': job a would end past the time range" -- run --trace "$T/un.csv" --unknown-duration 1000 --queue $q --out "$T/o9"
done
absent "$T/o9"
# a valid trace at the very end of the range still runs, exactly
printf '%s\na,9223372036844,10,1,1000,1000,1024,\n' $GEN >"$T/edge.csv"
expect 0 "" -- run --trace "$T/edge.csv" --out "$T/o5"
has "$T/o5/jobs.csv" "9223372036854"

# ---- 2. inputs from pipes, FIFOs and "-": read once, never a hang
"$BIN" run --cluster "$CL" --trace "$T/ok.csv" --policy first-fit --quiet --out "$T/p0" >/dev/null
for how in - /dev/stdin; do
  rm -rf "$T/p1"
  timeout 60 "$BIN" run --cluster "$CL" --trace "$how" --policy first-fit --quiet --out "$T/p1" <"$T/ok.csv" >/dev/null 2>"$T/err"
  [ $? = 0 ] && cmp -s "$T/p0/jobs.csv" "$T/p1/jobs.csv" && ok || bad "--trace $how from a pipe: $(cat "$T/err")"
  cat "$T/ok.csv" | timeout 60 "$BIN" run --cluster "$CL" --trace "$how" --policy first-fit --quiet --out "$T/p2" >/dev/null 2>"$T/err"
  [ $? = 0 ] && cmp -s "$T/p0/jobs.csv" "$T/p2/jobs.csv" && ok || bad "cat | --trace $how: $(cat "$T/err")"
  rm -rf "$T/p2"
done
printf '; swf\n1 0 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n' >"$T/one.swf"
cat "$T/one.swf" | timeout 60 "$BIN" run --cluster "$CL" --trace - --policy first-fit --quiet >/dev/null 2>"$T/err"
[ $? = 0 ] && ok || bad "SWF on stdin: $(cat "$T/err")"
cat "$CL" | timeout 60 "$BIN" run --cluster - --trace "$T/ok.csv" --policy first-fit --quiet --out "$T/p3" >/dev/null 2>"$T/err"
[ $? = 0 ] && cmp -s "$T/p0/jobs.csv" "$T/p3/jobs.csv" && ok || bad "cluster on stdin: $(cat "$T/err")"
mkfifo "$T/fifo"
(cat "$T/ok.csv" >"$T/fifo" &)
timeout 60 "$BIN" run --cluster "$CL" --trace "$T/fifo" --policy first-fit --quiet --out "$T/p4" >/dev/null 2>"$T/err"
[ $? = 0 ] && cmp -s "$T/p0/jobs.csv" "$T/p4/jobs.csv" && ok || bad "FIFO trace: $(cat "$T/err")"
(cat "$T/ph.csv" >"$T/fifo" &)
expect 2 "fifo:3: field 'duration'" -- timeout 60 "$BIN" run --cluster "$CL" --trace "$T/fifo" --policy first-fit --quiet
printf '%s\na,0,abc,1,1000,1000,1024,\n' $GEN >"$T/badd.csv"
cat "$T/badd.csv" | timeout 60 "$BIN" run --cluster "$CL" --trace - --policy first-fit --quiet 2>"$T/err" >/dev/null
has "$T/err" "schedsim: -:2: field 'duration': not a number of seconds"
(cat "$T/ok.csv" >"$T/fifo" &)
expect 0 "" -- timeout 60 "$BIN" compare --cluster "$CL" --trace "$T/fifo" --policy first-fit --quiet --out "$T/p5"

# ---- 3. sweep run ids: labels with '_' must not join into one id
cp "$T/ok.csv" "$T/a.csv"
cp "$T/ok.csv" "$T/a_b.csv"
printf '%s\na,0,20,1,1000,1000,1024,\nb,0,20,1,1000,1000,1024,\n' $GEN >"$T/a_b.csv"
cat >"$T/m.json" <<JSON
{"traces": ["a.csv", "a_b.csv"],
 "clusters": [{"path": "$CL", "label": "b_c"}, {"path": "$CL", "label": "c"}],
 "queues": ["fifo"], "policies": ["first-fit"]}
JSON
expect 0 "" -- "$BIN" sweep "$T/m.json" --out "$T/sw" --quiet
n=$(ls "$T/sw/runs" | wc -l)
[ "$n" = 4 ] && ok || bad "4 runs in $n directories: $(ls "$T/sw/runs")"
# every row's id names its own trace: a_b.csv's jobs run 20 s, a.csv's 10 s
for id in 'a_b%5Fc' 'a_c' 'a%5Fb_b%5Fc' 'a%5Fb_c'; do
  row=$(grep "^${id}_fifo" "$T/sw/sweep.csv")
  case $id in a%5Fb*) want=a_b.csv ;; *) want=a.csv ;; esac
  echo "$row" | grep -q "/$want," && ok || bad "row $id: $row"
  has "$T/sw/runs/${id}_fifo_first-fit_s1/summary.json" "\"trace\":	\"$T/$want\""
done
# a manifest without such a clash keeps its ids (sweeps resume)
cat >"$T/m2.json" <<JSON
{"traces": ["a_b.csv"], "clusters": [{"path": "$CL", "label": "c"}],
 "queues": ["fifo"], "policies": ["first-fit"]}
JSON
expect 0 "" -- "$BIN" sweep "$T/m2.json" --out "$T/sw2" --quiet
[ -d "$T/sw2/runs/a_b_c_fifo_first-fit_s1" ] && ok || bad "ids changed: $(ls "$T/sw2/runs")"

# ---- 4. results all old or all new
# a run stopped between its renames leaves the marker; sweep redoes such a
# run, and the merged table never reads it
R="$T/sw2/runs/a_b_c_fifo_first-fit_s1"
touch "$R/.schedsim-incomplete"
echo '{"broken": ' >"$R/summary.json"
expect 0 "" -- "$BIN" sweep "$T/m2.json" --out "$T/sw2" --quiet
[ ! -e "$R/.schedsim-incomplete" ] && ok || bad "marker left in $R"
has "$R/summary.json" '"seed":	1'
# run --out over a complete directory: no marker after success; the
# temporary files of a killed run (a PID that is gone) are removed
dead=0
for pid in $(seq 4194000 -7919 300000); do kill -0 $pid 2>/dev/null || { dead=$pid; break; }; done
expect 0 "" -- run --trace "$T/ok.csv" --out "$T/o8"
: >"$T/o8/timeline.csv.tmp.$dead"
: >"$T/o8/jobs.csv.tmp.$dead.3"
expect 0 "" -- run --trace "$T/ok.csv" --out "$T/o8"
[ ! -e "$T/o8/.schedsim-incomplete" ] && [ ! -e "$T/o8/timeline.csv.tmp.$dead" ] && [ ! -e "$T/o8/jobs.csv.tmp.$dead.3" ] && ok || bad "left in o8: $(ls -a "$T/o8")"
# two generate --out F at once: F is one of them, whole
"$BIN" generate --out "$T/gen1.csv" --jobs 20000 --seed 1 >/dev/null 2>&1
"$BIN" generate --out "$T/gen.csv" --jobs 20000 --seed 1 >/dev/null 2>&1 &
p1=$!
"$BIN" generate --out "$T/gen.csv" --jobs 20000 --seed 1 >/dev/null 2>&1 &
p2=$!
wait $p1; wait $p2
cmp -s "$T/gen.csv" "$T/gen1.csv" && ok || bad "concurrent generate left a different file"
ls -a "$T" | grep -q 'gen.csv.tmp' && bad "temporary file left: $(ls -a "$T" | grep tmp)" || ok

# ---- 5. smaller ones
# seeds above 2^53 written exactly
expect 0 "" -- run --trace "$T/ok.csv" --seed 9007199254740993 --out "$T/o6"
has "$T/o6/summary.json" '"seed":	9007199254740993'
expect 0 "" -- run --trace "$T/ok.csv" --seed 18446744073709551615 --out "$T/o7"
has "$T/o7/summary.json" '"seed":	18446744073709551615'
# option messages give the range that was missed
expect 2 "--estimate-factor '1e7': expected a number > 0 and <= 1e6" -- run --trace "$T/ok.csv" --estimate-factor 1e7
expect 2 "expected seconds >= 0 and <= 9.2e12" -- run --trace "$T/ok.csv" --unknown-duration 1e13
expect 2 "" -- "$BIN" demo --seed 18446744073709551616 --quiet --out "$T/d"
absent "$T/d"
# a PAI model error names PAI's column
printf 'job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\nj,w,1,Terminated,0,10,100,1,100,NoSuchGPU\n' >"$T/pai.csv"
expect 2 "pai.csv:2: field 'gpu_type'" -- run --trace "$T/pai.csv"
printf '%s\na,0,10,1,1000,1000,1024,NoSuchGPU\n' $GEN >"$T/gm.csv"
expect 2 "gm.csv:2: field 'gpu_model'" -- run --trace "$T/gm.csv"
# mix fields out of range say so (not "is required")
printf '{"arrival_rate_per_hour": 1e308, "shapes": [{"weight": 1, "cpu_milli": 1, "memory_mib": 1, "num_gpu": 1, "gpu_milli": 1000}]}' >"$T/mix.json"
expect 2 "'arrival_rate_per_hour' (jobs per hour, > 0 and <= 1e9) is out of range" -- "$BIN" generate --mix "$T/mix.json" --out "$T/g.csv"
# a long trace path keeps line, field and reason in the message
D="$T/$(printf 'x%.0s' $(seq 200))/$(printf 'y%.0s' $(seq 250))"
mkdir -p "$D"
printf '%s\na,0,abc,1,1000,1000,1024,\n' $GEN >"$D/bad.csv"
expect 2 "bad.csv:2: field 'duration': not a number of seconds (got 'abc')" -- run --trace "$D/bad.csv"
# JSON: a duplicate key is refused naming it; so is \u0000 in a name
sed 's/"name": "a100-h100",/"name": "a100-h100", "name": "other",/' "$CL" >"$T/dup.json"
expect 2 "duplicate key 'name'" -- "$BIN" run --cluster "$T/dup.json" --trace "$T/ok.csv" --policy first-fit --quiet
sed 's/"dgx-a100"/"dgx\\u0000a100"/' "$CL" >"$T/nul.json"
expect 2 "nul.json:6: a string holds \\u0000" -- "$BIN" run --cluster "$T/nul.json" --trace "$T/ok.csv" --policy first-fit --quiet
# the same alias on two catalog models
printf '{"models": [{"name": "X1", "aliases": ["same"]}, {"name": "Y1", "aliases": ["same"]}]}' >"$T/cat.json"
expect 2 "alias 'same' already names model 'X1'" -- run --trace "$T/ok.csv" --catalog "$T/cat.json"

cli_summary
