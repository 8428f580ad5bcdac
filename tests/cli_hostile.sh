#!/usr/bin/env bash
# Hostile inputs end to end (issue #8, part 2): every input either works
# correctly or exits 2 with a message naming the file (and the line and
# field where there is one); never a crash, a hang or a silently wrong
# result. The reader-level matrix (CRLF, BOM, quoting, empty files, garbage,
# 10 MB lines, NaN/inf/negative/huge numbers per field and format) is
# tests/test_hostile.c; this script checks what the command line does with
# such inputs: jobs wider than the cluster in every trace format, numbers
# refused with FILE:LINE: field, times past 2^53 microseconds written
# exactly, garbage and 10 MB lines as trace and cluster, and the JSON
# cluster spec (CRLF/BOM, duplicate and zero-GPU nodes, NaN, huge numbers,
# prices that would make costs infinite).
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"
# no_nulls FILE: no NaN, infinity or null (a number that could not be
# computed) in a summary.json.
no_nulls() {
  if grep -qiE 'null|nan|inf' "$1"; then bad "$1 holds null/nan/inf: $(grep -iE 'null|nan|inf' "$1" | head -3)"; else ok; fi
}
has() { # FILE TEXT
  grep -qF -- "$2" "$1" && ok || bad "$1 lacks '$2': $(head -c 300 "$1")"
}

CL=$SRC/sim/examples/a100-h100.json # 24 nodes of 8 GPUs, 192 GPUs
rc() { "$BIN" run --policy first-fit --quiet "$@"; }
run() { rc --cluster "$CL" "$@"; }

# ---- more GPUs (or CPU) than any node has: counted as never started
GEN=id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model
printf '%s\nok,0,10,1,1000,1,1,\nwide,0,10,500,1000,1,1,\n' $GEN >"$T/w-generic.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\nok,1,1,1,1000\nwide,1,1,500,1000\n' >"$T/w-multi.csv"
printf 'job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\nok,w,1,Terminated,0,10,100,1,100,\nwide,w,1,Terminated,0,10,100,1,50000,\n' >"$T/w-pai.csv"
printf 'job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nok,1,0,1,m,10,1\nwide,500,0,1,m,10,1\n' >"$T/w-tiresias.csv"
printf 'timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,10,1,10,a\n2017-10-09 07:01:55,10,500,5000,a\n' >"$T/w-philly.csv"
printf '; SWF\n1 0 -1 10 1 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n2 0 -1 10 500 -1 -1 500 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n' >"$T/w-swf.swf"
gzip -c "$T/w-swf.swf" >"$T/w-swfgz.swf.gz"
printf '%s\nok,0,10,1,1000,1,1,\ncpu,0,10,1,1000,9223372036854775807,1,\nmem,0,10,0,0,1,9223372036854775807,\n' $GEN >"$T/w-cpu.csv"
for f in generic multi pai tiresias philly swf swfgz cpu; do
  file=$(ls "$T"/w-$f.*)
  expect 0 "can never start" -- run --trace "$file" --out "$T/o-$f" --unknown-duration 10
  has "$T/o-$f/summary.json" '"jobs_completed":	1,'
  has "$T/o-$f/summary.json" '"no_node_fits":	'
  grep -q "never_started:no_node_fits" "$T/o-$f/jobs.csv" && ok || bad "$f: jobs.csv lacks the never-started row"
  no_nulls "$T/o-$f/summary.json"
done

# ---- numbers a reader refuses: exit 2, FILE:LINE: field 'NAME'
bad_trace() { # NAME CONTENT NEEDLE [OPTIONS]
  local f=$T/$1 n=$3
  printf '%s\n' "$2" >"$f"
  shift 3
  expect 2 "$f:$n" -- run --trace "$f" "$@"
}
bad_trace g1.csv "$(printf '%s\nj,0,10,1,1001,1,1,\n' $GEN)" "2: field 'gpu_milli'"
bad_trace g2.csv "$(printf '%s\nj,nan,10,1,1000,1,1,\n' $GEN)" "2: field 'submit': not a finite number"
bad_trace g3.csv "$(printf '%s\nj,0,inf,1,1000,1,1,\n' $GEN)" "2: field 'duration'"
bad_trace g4.csv "$(printf '%s\nj,-1,10,1,1000,1,1,\n' $GEN)" "2: field 'submit': must not be negative"
bad_trace g5.csv "$(printf '%s\nj,9007199254740993,10,1,1000,1,1,\n' $GEN)" "2: field 'submit': beyond the maximum"
bad_trace p1.csv "$(printf 'job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\nj,t,1,T,0,1,inf,1,1,\n')" "2: field 'plan_cpu'"
bad_trace t1.csv "$(printf 'job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nj,1,0,1,m,-5,1\n')" "2: field 'duration'"
bad_trace h1.csv "$(printf 'timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,1,1e400,1,a\n')" "2: field 'num_gpus'"
bad_trace s1.swf "$(printf '; x\n1 1e400 -1 10 1 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n')" "2: field 'submit_time'"
bad_trace m1.csv "$(printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\nj,1,99999999999999999999,1,1000\n')" "2: field 'memory_mib': integer overflow" --unknown-duration 1

# ---- times past 2^53 microseconds (about 285 years) are kept exactly
printf '%s\na,9007199254.740993,0.000001,1,1000,1,1,\nb,9007199254.740992,1,1,1000,1,1,\n' $GEN >"$T/t53.csv"
expect 0 "" -- run --trace "$T/t53.csv" --out "$T/o53"
has "$T/o53/jobs.csv" "a,9007199254.740993,9007199254.740993,9007199254.740994,"
has "$T/o53/jobs.csv" "b,9007199254.740992,9007199254.740992,9007199255.740992,"
has "$T/o53/timeline.csv" "9007199254.740993,2000,"

# ---- binary garbage and a 10 MB line, as trace and as cluster
head -c 65536 "$BIN" >"$T/garbage.bin"
head -c 10485760 /dev/zero | tr '\0' x >"$T/long.csv"
for f in garbage.bin long.csv; do
  expect 2 "$T/$f" -- run --trace "$T/$f"
  expect 2 "$T/$f" -- "$BIN" run --cluster "$T/$f" --trace builtin:default --policy first-fit --quiet
  expect 2 "$T/$f" -- "$BIN" run --cluster "$CL" --trace builtin:default --policy first-fit --quiet --catalog "$T/$f"
  expect 2 "$T/$f" -- "$BIN" sweep "$T/$f" --out "$T/sw"
done

# ---- JSON cluster spec
spec() { # NAME JSON
  printf '%s' "$2" >"$T/$1"
}
G='"count": 2, "gpu_model": "A100", "gpus_per_node": 8, "cpu_milli": 64000, "memory_mib": 262144'
spec c.json "{\"name\": \"c\", \"node_groups\": [{\"name\": \"a\", $G}]}"
printf '%s\nj1,0,10,1,500,1000,1024,\nj2,5,10,8,1000,1000,1024,\nj3,6,10,0,0,1000,1024,\n' $GEN >"$T/jobs.csv"
expect 0 "" -- rc --cluster "$T/c.json" --trace "$T/jobs.csv" --out "$T/oc"
# CRLF, a BOM and no final newline: the same run, byte for byte
{ printf '\357\273\277'; sed 's/$/\r/' "$T/c.json"; } >"$T/c-crlf.json"
printf '%s' "$(cat "$T/c.json")" >"$T/c-noeol.json"
for v in c-crlf c-noeol; do
  expect 0 "" -- rc --cluster "$T/$v.json" --trace "$T/jobs.csv" --out "$T/o-$v"
  for f in summary.json jobs.csv timeline.csv; do
    cmp -s "$T/oc/$f" "$T/o-$v/$f" && ok || bad "$v: $f differs from the clean spec's"
  done
done
: >"$T/empty.json"
expect 2 "$T/empty.json: empty file" -- rc --cluster "$T/empty.json" --trace "$T/jobs.csv"
spec dup.json "{\"node_groups\": [{\"name\": \"a\", $G}, {\"name\": \"a\", $G}]}"
expect 2 "node_groups[1].name: node name 'a-0' is also made by node_groups[0]" -- rc --cluster "$T/dup.json" --trace "$T/jobs.csv"
spec dup2.json "{\"node_groups\": [{\"name\": \"a\", $G}, {\"name\": \"a-1\", \"count\": 1, \"gpus_per_node\": 0, \"cpu_milli\": 1, \"memory_mib\": 1}]}"
expect 2 "node name 'a-1'" -- rc --cluster "$T/dup2.json" --trace "$T/jobs.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1000,0,\nn1,1000,1000,2,T4\nn0,1,1,0,\n' >"$T/dupnodes.csv"
expect 2 "$T/dupnodes.csv:4: field 'sn': duplicate node name, first on line 2" -- rc --cluster "$T/dupnodes.csv" --trace "$T/jobs.csv"
# zero-GPU nodes: CPU jobs may use them, GPU jobs never do
spec z.json "{\"node_groups\": [{\"name\": \"cpu\", \"count\": 2, \"gpus_per_node\": 0, \"cpu_milli\": 64000, \"memory_mib\": 262144}, {\"name\": \"a\", $G}]}"
expect 0 "" -- rc --cluster "$T/z.json" --trace "$T/jobs.csv" --out "$T/oz"
has "$T/oz/summary.json" '"jobs_completed":	3,'
no_nulls "$T/oz/summary.json"
grep -q '^j2,.*,cpu-[01],' "$T/oz/jobs.csv" && bad "a GPU job was placed on a zero-GPU node" || ok
spec z0.json '{"node_groups": [{"name": "cpu", "count": 2, "gpus_per_node": 0, "cpu_milli": 64000, "memory_mib": 262144}]}'
expect 0 "can never start" -- rc --cluster "$T/z0.json" --trace "$T/jobs.csv" --out "$T/oz0"
has "$T/oz0/summary.json" '"no_node_fits":	2'
no_nulls "$T/oz0/summary.json"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,64000,1000,0,\nn1,64000,1000,0,nan\n' >"$T/z.csv"
expect 0 "can never start" -- rc --cluster "$T/z.csv" --trace "$T/jobs.csv" --out "$T/ozc"
no_nulls "$T/ozc/summary.json"
# numbers
spec nan.json "{\"node_groups\": [{\"name\": \"a\", \"count\": NaN, \"gpus_per_node\": 0, \"cpu_milli\": 1, \"memory_mib\": 1}]}"
expect 2 "$T/nan.json:1: JSON syntax error" -- rc --cluster "$T/nan.json" --trace "$T/jobs.csv"
for c in 1e400 -1 2.5 9007199254740993 0; do
  spec n.json "{\"node_groups\": [{\"name\": \"a\", \"count\": $c, \"gpus_per_node\": 0, \"cpu_milli\": 1, \"memory_mib\": 1}]}"
  expect 2 "$T/n.json: node_groups[0]: 'count' must be an integer in 1..1000000" -- rc --cluster "$T/n.json" --trace "$T/jobs.csv"
done
for k in cpu_milli memory_mib; do
  for v in 1e300 -1 1099511627777; do
    spec n.json "$(printf '{"node_groups": [{"name": "a", "count": 1, "gpus_per_node": 0, %s}]}' \
      "$([ $k = cpu_milli ] && echo "\"cpu_milli\": $v, \"memory_mib\": 1" || echo "\"cpu_milli\": 1, \"memory_mib\": $v")")"
    expect 2 "'$k' must be an integer" -- rc --cluster "$T/n.json" --trace "$T/jobs.csv"
  done
done
spec g65.json '{"node_groups": [{"name": "a", "count": 1, "gpu_model": "T4", "gpus_per_node": 65, "cpu_milli": 1, "memory_mib": 1}]}'
expect 2 "'gpus_per_node' must be an integer in 0..64" -- rc --cluster "$T/g65.json" --trace "$T/jobs.csv"
spec price.json "{\"node_groups\": [{\"name\": \"a\", $G, \"price_per_gpu_hour\": 1e308}]}"
expect 2 "'price_per_gpu_hour' must be a number in 0..1e+06" -- rc --cluster "$T/price.json" --trace "$T/jobs.csv"
expect 2 "price must be a number in 0..1e+06" -- run --trace "$T/jobs.csv" --price A100=1e308
expect 2 "price must be a number in 0..1e+06" -- run --trace "$T/jobs.csv" --price A100=nan
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,1099511627777,1000,0,\n' >"$T/bigcpu.csv"
expect 2 "$T/bigcpu.csv:2: field 'cpu_milli': above the limit" -- rc --cluster "$T/bigcpu.csv" --trace "$T/jobs.csv"
# 10 MB: a description is fine, a group name is refused (node names are made of it)
long=$(head -c 10485760 /dev/zero | tr '\0' d)
printf '{"description": "%s", "node_groups": [{"name": "a", %s}]}' "$long" "$G" >"$T/longdesc.json"
expect 0 "" -- rc --cluster "$T/longdesc.json" --trace "$T/jobs.csv"
printf '{"node_groups": [{"name": "%s", %s}]}' "${long:0:200}" "$G" >"$T/longname.json"
expect 2 "node_groups[0].name: must be a string of at most 100 bytes" -- rc --cluster "$T/longname.json" --trace "$T/jobs.csv"
spec numname.json "{\"node_groups\": [{\"name\": 7, $G}]}"
expect 2 "node_groups[0].name: must be a string" -- rc --cluster "$T/numname.json" --trace "$T/jobs.csv"

# ---- the GPU catalog and the sweep manifest
printf '[1, 2]' >"$T/cat.json"
expect 2 "$T/cat.json: the catalog must be a JSON object" -- run --trace "$T/jobs.csv" --catalog "$T/cat.json"
printf '{"models": [7]}' >"$T/cat2.json"
expect 2 "$T/cat2.json: models[0]: must be an object" -- run --trace "$T/jobs.csv" --catalog "$T/cat2.json"
seeds=$(seq -s, 0 4095)
printf '{"traces": ["builtin:default"], "clusters": ["builtin:default"], "policies": ["first-fit"], "seeds": [%s], "parameters": {"unknown_duration": [%s]}}' \
  "$seeds" "$seeds" >"$T/grid.json"
expect 2 "$T/grid.json: the grid has 16777216 runs" -- "$BIN" sweep "$T/grid.json" --out "$T/grid" --dry-run

cli_summary
