#!/usr/bin/env bash
# Composable GPU pools in the replay (cluster spec "pools", sim/engine/pools.c;
# sim/README.md "Composable GPU pools"): the hand case (a 6-GPU job on a host
# with 2 local GPUs composes 4 and waits attach_s; a queued job reuses an
# attached idle GPU with no wait; the rest detach after detach_s), the
# summary keys, fabric speed, spec errors (exit 2, file and key named) and
# determinism.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"
. "$SRC/scripts/lib/summary_json.sh"

CL=$SRC/sim/examples/pools/tiny-pool.json
HDR=name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
{
  echo "$HDR"
  echo "a,1000,1000,6,1000,,LS,Running,0,100,0"
  echo "b,1000,1000,1,1000,,LS,Running,0,50,0"
  echo "c,1000,1000,3,1000,,LS,Running,10,50,10"
} >"$T/t.csv"
run() { "$BIN" run --cluster "$CL" --trace "$T/t.csv" --policy first-fit --queue fifo --speed none --check --quiet "$@"; }

# ---- the hand case (first-fit, fifo, --speed none; attach 30 s, detach 10 s,
# fabric 0.5). a (6 GPUs, 100 s) takes host-0's 2 local GPUs and composes 4:
# starts at 0 + 30 (attach), runs 100 / 0.5 = 200 s: 30..230. b (1 GPU) runs
# on host-1 locally 0..50 (the chassis is empty, host-1's slots blocked). c (3
# GPUs, arrives 10) fits nowhere (host-1: 2 local, pool empty) until a ends
# at 230: host-0 then has 2 local + 4 attached idle GPUs; c takes 2 local + 1
# attached (sticky reuse: no attach wait), over the fabric 40 / 0.5 = 80 s:
# 230..310. The 3 other idle GPUs detach at 240. Attached pool GPUs: 4 over
# [0, 240), 1 over [240, 310): 4 x 240 + 70 = 1,030 GPU-s = 0.286111 h.
expect 0 "" -- run --out "$T/o"
J=$T/o/jobs.csv
row() { awk -F, -v id="$1" '$1 == id { print $3, $4, $5, $6, $8 }' "$J"; }
[ "$(row a)" = "30 230 host-0 0;1;2;3;4;5 30" ] && ok || bad "job a: $(row a)"
[ "$(row b)" = "0 50 host-1 0 0" ] && ok || bad "job b: $(row b)"
[ "$(row c)" = "230 310 host-0 0;1;2 220" ] && ok || bad "job c: $(row c)"
S=$T/o/summary.json
[ "$(json gpus "$S")" = 8 ] && ok || bad "gpus: 4 local + 4 in the chassis, got $(json gpus "$S")"
[ "$(json pools gpus "$S")" = 4 ] && ok || bad "pools.gpus $(json pools gpus "$S")"
[ "$(json pools attaches "$S")" = 4 ] && ok || bad "pools.attaches $(json pools attaches "$S")"
[ "$(json pools attach_wait_s "$S")" = 30 ] && ok || bad "pools.attach_wait_s $(json pools attach_wait_s "$S")"
awk -v x="$(json pools composed_gpu_hours "$S")" 'BEGIN { d = x - 1030 / 3600; exit !(d < 1e-12 && d > -1e-12) }' &&
  ok || bad "pools.composed_gpu_hours $(json pools composed_gpu_hours "$S") != 1030/3600"
# The timeline has a row at 240 (the detach wakes the loop).
awk -F, '$1 == 240' "$T/o/timeline.csv" | grep -q . && ok || bad "no timeline row at the detach (240)"
# Cost counts every chassis GPU once: 8 GPUs x 310 s at the A100's price.
price=$("$BIN" models | awk '$1 == "A100-SXM4-80GB" { print $6 }')
awk -v x="$(json cost_usd total "$S")" -v p="$price" 'BEGIN { d = x - 8 * 310 / 3600 * p; exit !(p > 0 && d < 1e-9 && d > -1e-9) }' &&
  ok || bad "cost_usd.total $(json cost_usd total "$S") != 8 x 310 s x $price"

# Without a detach delay the idle GPUs go back at once: c composes again and
# waits (230 + 30 = 260 .. 340); attaches 4 + 1.
sed 's/"detach_s": 10/"detach_s": 0/' "$CL" >"$T/d0.json"
expect 0 "" -- "$BIN" run --cluster "$T/d0.json" --trace "$T/t.csv" --policy first-fit --speed none --check --quiet --out "$T/d0"
J=$T/d0/jobs.csv
[ "$(row c)" = "260 340 host-0 0;1;2 250" ] && ok || bad "detach_s 0, job c: $(row c)"
[ "$(json pools attaches "$T/d0/summary.json")" = 5 ] && ok || bad "detach_s 0: attaches $(json pools attaches "$T/d0/summary.json")"
J=$T/o/jobs.csv

# fabric_speed 1 and attach_s 0: a runs 0..100 like on a fixed node.
sed 's/"attach_s": 30/"attach_s": 0/; s/"fabric_speed": 0.5/"fabric_speed": 1/' "$CL" >"$T/f1.json"
expect 0 "" -- "$BIN" run --cluster "$T/f1.json" --trace "$T/t.csv" --policy first-fit --speed none --quiet --out "$T/f1"
J=$T/f1/jobs.csv
[ "$(row a)" = "0 100 host-0 0;1;2;3;4;5 0" ] && ok || bad "attach 0, fabric 1, job a: $(row a)"
J=$T/o/jobs.csv

# Clusters without pools have no "pools" key.
expect 0 "" -- "$BIN" run --cluster "$SRC/sim/examples/a100-h100.json" --trace "$T/t.csv" --policy first-fit --speed none --quiet --out "$T/np"
grep -q '"pools"' "$T/np/summary.json" && bad "a cluster without pools reports pools" || ok

# Every policy runs on the pooled cluster with the invariant checks on.
for p in $("$BIN" policies | awk '{ print $1 }' | grep -v '^mig'); do
  run --policy "$p" --out "$T/p-$p" >/dev/null 2>"$T/err" && ok || bad "policy $p on a pooled cluster: $(cat "$T/err")"
done

# Determinism.
expect 0 "" -- run --out "$T/o2"
cmp -s "$T/o/summary.json" "$T/o2/summary.json" && cmp -s "$T/o/jobs.csv" "$T/o2/jobs.csv" && ok || bad "two runs differ"

# ---- the speed rule under a speed table (sim/README.md "Composable GPU
# pools"): 2 hosts x 1 local A100, a 4-GPU chassis (attach 30, detach 10,
# fabric 0.5); table: 1 GPU 1 (unconsolidated 0.7), 2 GPUs 2 (unconsolidated
# 1.6); durations measured on the A100. x (2 GPUs, 100 s: work 200) takes
# host-0's local GPU and composes one: not all on the host's NVLink, so the
# unconsolidated 1.6: 200 / 1.6 = 125 s, / fabric 0.5 = 250 s: 30..280. y
# (1 GPU) runs on host-1's local GPU 0..100. z (1 GPU) composes on host-0: a
# 1-GPU job keeps its own speed 1 (no unconsolidated entry): 100 / 0.5 =
# 200 s: 30..230. --speed none: x 30..230 (200 s, fabric only).
sed 's/"gpus_per_node": 2/"gpus_per_node": 1/' "$CL" >"$T/h1.json"
cat >"$T/st.json" <<'EOS'
{"classes": {"default": {"A100-SXM4-80GB": {"1": 1, "2": 2, "unconsolidated": {"1": 0.7, "2": 1.6}}}}}
EOS
{
  echo "$HDR"
  echo "x,1000,1000,2,1000,,LS,Running,0,100,0"
  echo "y,1000,1000,1,1000,,LS,Running,0,100,0"
  echo "z,1000,1000,1,1000,,LS,Running,0,100,0"
} >"$T/sp.csv"
expect 0 "" -- "$BIN" run --cluster "$T/h1.json" --trace "$T/sp.csv" --policy first-fit --queue fifo --speed-table "$T/st.json" --measured-on A100-SXM4-80GB --check --quiet --out "$T/sp"
J=$T/sp/jobs.csv
[ "$(row x)" = "30 280 host-0 0;1 30" ] && ok || bad "speed rule, job x (local + composed): $(row x)"
[ "$(row y)" = "30 230 host-0 2 30" ] && ok || bad "speed rule, job y (1 composed GPU): $(row y)"
[ "$(row z)" = "30 230 host-0 3 30" ] && ok || bad "speed rule, job z (1 composed GPU): $(row z)"
expect 0 "" -- "$BIN" run --cluster "$T/h1.json" --trace "$T/sp.csv" --policy first-fit --queue fifo --speed none --check --quiet --out "$T/spn"
J=$T/spn/jobs.csv
[ "$(row x)" = "30 230 host-0 0;1 30" ] && ok || bad "--speed none, job x: $(row x)"
[ "$(row z)" = "30 230 host-0 3 30" ] && ok || bad "--speed none, job z: $(row z)"
J=$T/o/jobs.csv

# ---- a defrag move onto a composed GPU waits attach_s after its move cost. A
# fixed 4-GPU node "big" and a GPU-less pool host (chassis of 1, attach 30,
# fabric 0.5). a (1 GPU, 1000 s) and b (2 GPUs) start on big at 0; h (2 GPUs,
# at 100) fits nowhere (big 1 free, the host 1 slot); defrag (base first-fit,
# move cost 5 s) moves a onto the host's composed GPU: it resumes at 100 + 5 +
# 30 = 135, its 900 s left over the fabric take 1,800 s: ends at 1,935; lost
# 35 GPU-s. h starts at 100 on big. pools: 1 attach, 30 s of attach wait.
cat >"$T/mv.json" <<'EOS'
{"name": "mv", "node_groups": [
  {"name": "big", "count": 1, "gpu_model": "A100-SXM4-80GB", "gpus_per_node": 4, "cpu_milli": 64000, "memory_mib": 262144},
  {"name": "host", "count": 1, "gpus_per_node": 0, "cpu_milli": 64000, "memory_mib": 262144}],
 "pools": [{"name": "chassis", "count": 1, "gpus": 1, "gpu_model": "A100-SXM4-80GB", "hosts_group": "host",
   "hosts_per_pool": 1, "max_per_host": 1, "attach_s": 30, "detach_s": 10, "fabric_speed": 0.5}]}
EOS
{
  echo "$HDR"
  echo "a,1000,1000,1,1000,,LS,Running,0,1000,0"
  echo "b,1000,1000,2,1000,,LS,Running,0,1000,0"
  echo "h,1000,1000,2,1000,,LS,Running,100,200,100"
} >"$T/mv.csv"
expect 0 "" -- "$BIN" run --cluster "$T/mv.json" --trace "$T/mv.csv" --policy defrag --policy-param base=first-fit --migration-cost 5 --speed none --check --quiet --out "$T/mv"
J=$T/mv/jobs.csv
mrow() { awk -F, -v id="$1" '$1 == id { print $3, $4, $5, $6, $11, $13 }' "$J"; }
[ "$(mrow a)" = "0 1935 host 0 1 35.000000" ] && ok || bad "moved onto a composed GPU, job a: $(mrow a)"
[ "$(mrow h)" = "100 200 big 0;3 0 0.000000" ] && ok || bad "move, job h: $(mrow h)"
S=$T/mv/summary.json
[ "$(json pools attaches "$S")" = 1 ] && ok || bad "move: pools.attaches $(json pools attaches "$S")"
[ "$(json pools attach_wait_s "$S")" = 30 ] && ok || bad "move: pools.attach_wait_s $(json pools attach_wait_s "$S")"
[ "$(json lost_gpu_seconds "$S")" = 35 ] && ok || bad "move: lost_gpu_seconds $(json lost_gpu_seconds "$S")"
J=$T/o/jobs.csv

# ---- a move from a composed GPU to a composed GPU: the run time left is
# converted from the source's fabric factor (not slowed twice). Two GPU-less
# hosts, one 2-GPU chassis each (attach 30, detach 0, fabric 0.5). x and y
# (1 GPU, 1000 s) compose on host-0 and host-1 (worst-fit): 30..2030. h (2
# GPUs, at 100) fits on neither (one open slot each); defrag moves x to
# host-1: at 100 x has run 70 s at 0.5 (35 s of work), 965 s of work left =
# 1,930 s over the fabric; it resumes at 100 + 5 + 30 and ends at 2,065 (not
# 135 + 3,860). h composes host-0's 2 GPUs: 130..330. attaches 5 (x, y, x's
# move, h's 2), attach wait 4 x 30.
cat >"$T/cc.json" <<'EOS'
{"name": "cc", "node_groups": [{"name": "host", "count": 2, "gpus_per_node": 0, "cpu_milli": 64000, "memory_mib": 262144}],
 "pools": [{"name": "chassis", "count": 2, "gpus": 2, "gpu_model": "A100-SXM4-80GB", "hosts_group": "host",
   "hosts_per_pool": 1, "max_per_host": 2, "attach_s": 30, "detach_s": 0, "fabric_speed": 0.5}]}
EOS
{
  echo "$HDR"
  echo "x,1000,1000,1,1000,,LS,Running,0,1000,0"
  echo "y,1000,1000,1,1000,,LS,Running,0,1000,0"
  echo "h,1000,1000,2,1000,,LS,Running,100,200,100"
} >"$T/cc.csv"
expect 0 "" -- "$BIN" run --cluster "$T/cc.json" --trace "$T/cc.csv" --policy defrag --policy-param base=worst-fit --migration-cost 5 --speed none --check --quiet --out "$T/cc"
J=$T/cc/jobs.csv
[ "$(mrow x)" = "30 2065 host-1 1 1 35.000000" ] && ok || bad "composed-to-composed move, job x: $(mrow x)"
[ "$(mrow y)" = "30 2030 host-1 0 0 0.000000" ] && ok || bad "composed-to-composed move, job y: $(mrow y)"
[ "$(mrow h)" = "130 330 host-0 0;1 0 0.000000" ] && ok || bad "composed-to-composed move, job h: $(mrow h)"
S=$T/cc/summary.json
[ "$(json pools attaches "$S")" = 5 ] && ok || bad "composed move: pools.attaches $(json pools attaches "$S")"
[ "$(json pools attach_wait_s "$S")" = 120 ] && ok || bad "composed move: pools.attach_wait_s $(json pools attach_wait_s "$S")"
# The same under a speed table (1 GPU: speed 1, measured on the A100): the
# speed part carries the fabric factor in the job's speed: x the same. h's 2
# pool GPUs are not on the host's NVLink: work 200 / 1.6 / 0.5 = 250 s:
# 130..380.
expect 0 "" -- "$BIN" run --cluster "$T/cc.json" --trace "$T/cc.csv" --policy defrag --policy-param base=worst-fit --migration-cost 5 --speed-table "$T/st.json" --measured-on A100-SXM4-80GB --check --quiet --out "$T/ccs"
J=$T/ccs/jobs.csv
[ "$(mrow x)" = "30 2065 host-1 1 1 35.000000" ] && ok || bad "composed move under a speed table, job x: $(mrow x)"
[ "$(mrow h)" = "130 380 host-0 0;1 0 0.000000" ] && ok || bad "composed move under a speed table, job h: $(mrow h)"
J=$T/o/jobs.csv

# ---- spec errors: exit 2 naming the file and the key
spec() { # NAME POOLS-JSON [GROUP-GPUS]
  cat >"$T/$1.json" <<EOS
{"name": "x", "node_groups": [{"name": "host", "count": 2, "gpu_model": "A100-SXM4-80GB",
  "gpus_per_node": ${3:-2}, "cpu_milli": 1000, "memory_mib": 1000}], "pools": $2}
EOS
}
spec model '[{"count": 1, "gpus": 4, "gpu_model": "H100-SXM5-80GB", "hosts_group": "host", "hosts_per_pool": 2}]'
expect 2 "model.json: pools[0].gpu_model: 'H100-SXM5-80GB' differs from node group 'host'" -- "$BIN" run --cluster "$T/model.json" --trace "$T/t.csv" --policy first-fit
spec group '[{"count": 1, "hosts_group": "nope"}]'
expect 2 "group.json: pools[0].hosts_group: no node group named 'nope'" -- "$BIN" run --cluster "$T/group.json" --trace "$T/t.csv" --policy first-fit
spec many '[{"count": 2, "hosts_group": "host", "hosts_per_pool": 2}]'
expect 2 "many.json: pools[0]: 2 chassis x 2 hosts_per_pool need 4 hosts, node group 'host' has 2" -- "$BIN" run --cluster "$T/many.json" --trace "$T/t.csv" --policy first-fit
spec key '[{"count": 1, "hosts_group": "host", "hosts_per_pool": 2, "attach": 5}]'
expect 2 "key.json: pools[0]" -- "$BIN" run --cluster "$T/key.json" --trace "$T/t.csv" --policy first-fit
grep -q "attach" "$T/err" && ok || bad "unknown key named: $(cat "$T/err")"
spec fab '[{"count": 1, "hosts_group": "host", "hosts_per_pool": 2, "fabric_speed": 0}]'
expect 2 "fab.json: 'pools[0].fabric_speed' must be a number in 0.01..1" -- "$BIN" run --cluster "$T/fab.json" --trace "$T/t.csv" --policy first-fit
spec nomodel '[{"count": 1, "hosts_group": "host", "hosts_per_pool": 2}]' 0
expect 2 "nomodel.json: pools[0]: 'gpu_model' is required when node group 'host' has no GPUs" -- "$BIN" run --cluster "$T/nomodel.json" --trace "$T/t.csv" --policy first-fit
spec twice '[{"count": 1, "hosts_group": "host", "hosts_per_pool": 2}, {"count": 1, "hosts_group": "host", "hosts_per_pool": 1}]'
expect 2 "twice.json: pools[1]: node 0 already reaches a pool" -- "$BIN" run --cluster "$T/twice.json" --trace "$T/t.csv" --policy first-fit
spec wide '[{"count": 1, "gpus": 64, "max_per_host": 64, "hosts_group": "host", "hosts_per_pool": 2}]'
expect 2 "wide.json: pools[0]: 2 local GPUs + 64 composable slots exceed 64 per host" -- "$BIN" run --cluster "$T/wide.json" --trace "$T/t.csv" --policy first-fit
# GPU-less hosts take the pool's model and price.
spec zero '[{"count": 1, "gpus": 4, "gpu_model": "A100-SXM4-80GB", "hosts_group": "host", "hosts_per_pool": 2}]' 0
expect 0 "" -- "$BIN" run --cluster "$T/zero.json" --trace "$T/t.csv" --policy best-fit --speed none --check --quiet --out "$T/z"
[ "$(json gpus "$T/z/summary.json")" = 4 ] && ok || bad "zero-GPU hosts: gpus $(json gpus "$T/z/summary.json")"

cli_summary
