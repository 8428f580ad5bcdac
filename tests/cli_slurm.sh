#!/usr/bin/env bash
# lsched-slurm-advisor on a real Slurm (22.05, Debian packages): a local
# 4-node cluster with 8 fake A100 GPUs and 32 shards per node, plus gn5 with
# MIG-style GRES in its own partition (scripts/slurm_testbed.sh MIG_NODE=1;
# slurmctld + 5 slurmd on 127.0.0.2-6, stopped by PID on exit even when a
# step fails).
#
# The job sequence, all single-node, 1 CPU and 1000 MiB each:
#     g4  g6  g2  g4  g6  g8      (GPUs per job, in submission order)
# Slurm's select/cons_tres picks, for each job in priority order (here: FIFO),
# the first node in node order that fits (verified: a 2-GPU job went to gn1
# with 4 GPUs free rather than to gn2 with exactly 2 free):
#     g4 -> gn1 (4 left)   g6 -> gn2 (2 left)   g2 -> gn1 (2 left)
#     g4 -> gn3 (4 left)   g6 -> gn4 (2 left)
# 10 GPUs are idle (2 + 2 + 4 + 2) but no node has 8, so g8 waits
# (PENDING, Resources). Best-fit puts the same jobs where they leave the least
# behind: g2 beside g6 on gn2 (0 left), the second g4 on gn1 (0 left), the
# second g6 on gn3, and g8 gets the untouched gn4.
#
# Slurm starts a job the moment it is submitted if it fits, before any outside
# advisor can look at it. Both runs therefore submit the sequence while the
# queue gate (below) is closed and then open it, so that Slurm faces the same
# queue in the same order either way; without the advisor Slurm places it
# itself, with the advisor every job is already pinned (required node) by
# then. Submitting the jobs one by one into an open partition gives the
# baseline placement too.
#
# Checks:
#  1. baseline: g8 stays PENDING while 10 GPUs are idle, nodes as above;
#  2. advisor (best-fit, --once): six decisions, all applied; after the
#     partition opens all six jobs run, g8 on gn4 (squeue);
#  3. one library, two hosts: the advisor's --dump of a mirrored state (the
#     stranded cluster plus a few queued jobs, and the state of check 2) is
#     replayed by lsched-slurm-replay, which rebuilds it through schedsim's
#     cluster loader and asks libsched's policy again: same node and GPUs for
#     every job;
#  4. the mirror agrees with Slurm on the GPUs in use per node;
#  5. running jobs are never touched; --exclude is honoured; a job Slurm could
#     never run on any node is not pinned; skipped jobs are left alone;
#  6. loop mode (--interval) pins a newly queued job and exits 0 on SIGTERM;
#  7. Slurm unreachable or no configuration: exit 1 with a message; unknown
#     policy: exit 2; --config read, overridden by the command line, an
#     unknown key exits 2 naming file, line and key;
#  8. a pin on a job whose AdminComment holds someone else's text keeps the
#     text (marker appended, state file entry); its node drained, Slurm keeps
#     the job PENDING (ReqNodeNotAvail) with idle nodes, the advisor moves
#     the pin and the job runs on the new node;
#  9. --unpin-all removes exactly the advisor's pins (not a user's -w, not a
#     copied marker without a state entry), comments intact;
# 10. a DOWN partition: no pins, an earlier pin removed;
# 11. slurmctld restarted in the middle of a loop run: a failed cycle, retried
#     with backoff, resumed by the same process (mirror built once); a second
#     advisor on the same state directory is refused;
# 12. MIG GRES (test bed node gn5, MIG_NODE=1) mirrored as MIG sub-nodes: the
#     advisor picks the free instances Slurm then uses.
#
# The queue gate: Slurm starts a job the moment it is submitted if it fits,
# so jobs are queued while the partition's MaxTime is 1 minute and they ask
# 30 (PartitionTimeLimit); the partition stays UP, so the advisor places
# them (a DOWN partition would not do: the advisor leaves its jobs alone).
#
# Skips (exit 77) when the Slurm packages, the advisor binary or root are
# missing; with CI=true (where .ci/run installs the packages through
# scripts/setup-slurm.sh) those are failures. LSCHED_SKIP_SLURM=1 always skips.
set -u

src=${SCHEDSIM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
if [ -n "${LSCHED_BUILD_DIR:-}" ]; then
  bin=$LSCHED_BUILD_DIR
elif [ -n "${SCHEDSIM_BIN:-}" ]; then
  bin=$(dirname "$SCHEDSIM_BIN")
else
  bin=$src/build
fi
ADV=$bin/lsched-slurm-advisor
REPLAY=$bin/lsched-slurm-replay

skip() {
  if [ "${CI:-}" = true ] && [ "${LSCHED_SKIP_SLURM:-}" != 1 ]; then
    echo "FAIL: $* (CI=true: scripts/setup-slurm.sh should have installed Slurm)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
[ "${LSCHED_SKIP_SLURM:-}" = 1 ] && skip "LSCHED_SKIP_SLURM=1"
for tool in slurmctld slurmd sbatch squeue scontrol sinfo scancel munge unmunge; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] ||
    skip "$tool not found (Debian: apt-get install slurmctld slurmd slurm-client munge libslurm-dev)"
done
[ -x "$ADV" ] || skip "$ADV not built (libslurm-dev was missing when CMake ran)"
[ -x "$REPLAY" ] || skip "$REPLAY not built"
[ "$(id -u)" -eq 0 ] || skip "needs root (slurmd runs as root, mknod)"
command -v flock >/dev/null 2>&1 || skip "flock not found"

# One test bed at a time on this machine (fixed ports).
exec 9>"${TMPDIR:-/tmp}/lsched-slurm-test.lock"
flock -w 300 9 || { echo "FAIL: another Slurm test held the lock for 300 s"; exit 1; }

export TB
TB=$(mktemp -d "${TMPDIR:-/tmp}/cli_slurm.XXXXXX")
export PORT_BASE=${LSCHED_TEST_PORT_BASE:-17917}
TESTBED=$src/scripts/slurm_testbed.sh
loop_pid=""
cleanup() {
  [ -n "$loop_pid" ] && kill "$loop_pid" 2>/dev/null
  bash "$TESTBED" stop >/dev/null 2>&1
  if [ "${KEEP_TB:-}" = 1 ]; then echo "kept $TB"; else rm -rf "$TB"; fi
}
trap 'exit 143' TERM INT HUP

CLI_VERBOSE=1
. "$(dirname "$0")/lib/cli_harness.sh"
CLI_AT_EXIT+=(cleanup)
t0=$(date +%s)
die() {
  bad "$*"
  echo "--- slurmctld log (tail)"; tail -20 "$TB/log/slurmctld.log" 2>/dev/null
  exit 1
}

out=$(MIG_NODE=1 bash "$TESTBED" start 2>&1 9>&-) || die "test bed did not start: $out"
eval "$(printf '%s\n' "$out" | grep '^export SLURM_CONF=')"
[ -n "${SLURM_CONF:-}" ] || die "no SLURM_CONF from the test bed: $out"
ok "test bed up: $(printf '%s\n' "$out" | grep -o '[0-9]* nodes up in [0-9.]* s')"
cd "$TB" || exit 1

# ----------------------------------------------------------------- helpers
state() { squeue -h -j "$1" -o %T 2>/dev/null; }
nodeof() { squeue -h -j "$1" -o %N 2>/dev/null; }
reqnodes() { squeue -h -j "$1" -o %n 2>/dev/null; }
# wait_for SECONDS COMMAND...: polls every 0.1 s until COMMAND succeeds.
wait_for() {
  local end=$(($(date +%s) + $1))
  shift
  while [ "$(date +%s)" -lt $end ]; do "$@" && return 0; sleep 0.1; done
  "$@"
}
all_running() { local j; for j; do [ "$(state "$j")" = RUNNING ] || return 1; done; }
no_jobs() { [ -z "$(squeue -h -t PD,R,CG -o %i 2>/dev/null)" ]; }
reset() { scancel --quiet -u root 2>/dev/null; wait_for 20 no_jobs || bad "jobs did not drain"; }
part() { scontrol update PartitionName=gpu State="$1" || die "cannot set the partition $1"; }
# The queue gate: with the partition's MaxTime at 1 minute, jobs asking 30
# minutes wait (PartitionTimeLimit) while the partition stays UP, so the
# advisor (which leaves DOWN partitions alone) still places them.
gate() {
  case $1 in
  close) scontrol update PartitionName=gpu MaxTime=1 || die "cannot close the gate" ;;
  open) scontrol update PartitionName=gpu MaxTime=INFINITE || die "cannot open the gate" ;;
  esac
}
SB=(sbatch --parsable -t 30 -o /dev/null -c 1 --mem=1000)
# The advisor with the test's state directory (the pins it set).
ST=$TB/advstate
adv() { "$ADV" --state-dir "$ST" "$@"; }
admin_comment() {
  scontrol -o show job "$1" | sed -n 's/.*AdminComment=\(.*\) StdErr=.*/\1/p' | sed 's/ *$//'
}
SEQ=(4 6 2 4 6 8)
submit_seq() { # prints job ids
  local g
  for g in "${SEQ[@]}"; do
    "${SB[@]}" -J "g$g" --gres="gpu:a100:$g" --wrap 'sleep 600' || return 1
  done
}
# free GPUs of a node according to Slurm (8 - whole GPUs in gres_used)
slurm_free() {
  local used
  used=$(sinfo -h -N -n "$1" -O GresUsed:100 | grep -o 'gpu:a100:[0-9]*' | head -1 | cut -d: -f3)
  echo $((8 - ${used:-0}))
}
# field KEY JSON-LINE: a scalar value from one of the advisor's JSON lines
field() { printf '%s\n' "$2" | grep -o "\"$1\":[^,}]*" | head -1 | cut -d: -f2- | tr -d '"'; }
line_of() { grep "\"job_id\":$1," "$2"; }
replay_check() { # DUMP WHAT
  local r
  if r=$("$REPLAY" "$1" 2>&1); then
    ok "$2: lsched-slurm-replay agrees on $(grep -c '"match":true' <<<"$r") decisions"
  else
    bad "$2: lsched-slurm-replay disagrees:"
    printf '%s\n' "$r" | sed 's/^/     > /'
  fi
}

# ------------------------------------------------- 1. Slurm alone: strands
gate close
mapfile -t J < <(submit_seq) || die "sbatch failed"
[ ${#J[@]} -eq 6 ] || die "submitted ${#J[@]} jobs, want 6"
gate open
wait_for 20 all_running "${J[@]:0:5}" || die "the five small jobs did not start"
sleep 3 # a few main and backfill passes (bf_interval=1)
want=(gn1 gn2 gn1 gn3 gn4)
got=()
for i in 0 1 2 3 4; do got+=("$(nodeof "${J[$i]}")"); done
if [ "${got[*]}" = "${want[*]}" ]; then
  ok "baseline: Slurm placed g4 g6 g2 g4 g6 on ${got[*]} (first fit in node order)"
else
  bad "baseline: Slurm placed the small jobs on ${got[*]}, expected ${want[*]}"
fi
free="$(slurm_free gn1) $(slurm_free gn2) $(slurm_free gn3) $(slurm_free gn4)"
reason=$(squeue -h -j "${J[5]}" -o %r)
if [ "$(state "${J[5]}")" = PENDING ] && [ "$free" = "2 2 4 2" ]; then
  ok "baseline: g8 is PENDING ($reason) with 10 GPUs idle, free per node: $free"
else
  bad "baseline: g8 is $(state "${J[5]}") ($reason), free GPUs per node: $free (want PENDING, 2 2 4 2)"
fi

# The stranded state, mirrored: g8 cannot fit anywhere; a few queued jobs
# (partition closed again so that they wait) give the replay more to check.
before=$(scontrol -o show job "${J[0]}" | grep -o 'AdminComment=[^ ]*\|ReqNodeList=[^ ]*')
gate close
e1=$("${SB[@]}" -J e2 --gres=gpu:a100:2 --wrap 'sleep 600')
e2=$("${SB[@]}" -J s2 --gres=shard:2 --wrap 'sleep 600')
e3=$("${SB[@]}" -J x4 --gres=gpu:a100:4 -x gn3 --wrap 'sleep 600')
e4=$(sbatch --parsable -t 30 -J s3 -o /dev/null -c 2 --mem=2000 --gres=shard:3 --wrap 'sleep 600')
e5=$("${SB[@]}" -J huge --gres=gpu:a100:8 -x gn1,gn2,gn3,gn4 \
       --wrap 'sleep 600' 2>/dev/null) || e5=""
e6=$("${SB[@]}" -J held --hold --gres=gpu:a100:1 --wrap 'sleep 600')
adv --once --dry-run --policy best-fit --dump "$TB/stranded.json" >"$TB/stranded.jsonl" \
  2>"$TB/stranded.err" || bad "advisor --dry-run on the stranded state: exit $? ($(cat "$TB/stranded.err"))"
l=$(line_of "${J[5]}" "$TB/stranded.jsonl")
[ "$(field decision "$l")" = nofit ] && ok "advisor: g8 has no node in the stranded state (nofit)" ||
  bad "advisor on the stranded state, g8: $l"
l=$(line_of "$e1" "$TB/stranded.jsonl")
[ "$(field node "$l")" = gn1 ] && ok "advisor: a queued 2-GPU job goes to gn1 (exactly 2 GPUs free, earliest)" ||
  bad "advisor, queued 2-GPU job: $l"
l=$(line_of "$e3" "$TB/stranded.jsonl")
n=$(field node "$l")
[ "$(field decision "$l")" = nofit ] && ok "advisor: 4 GPUs with --exclude gn3 has no node (only gn3 has 4 free)" ||
  bad "advisor, 4-GPU job excluding gn3: $l"
for e in "$e2" "$e4"; do
  l=$(line_of "$e" "$TB/stranded.jsonl")
  [ "$(field decision "$l")" = place ] && [ "$(field gpu_milli "$l")" -gt 0 ] &&
    ok "advisor: shard job $e -> $(field node "$l") GPU $(printf '%s' "$l" | grep -o '"gpus":\[[0-9,]*\]' | tr -dc '0-9,') at $(field gpu_milli "$l") milli" ||
    bad "advisor, shard job $e: $l"
done
l=$(line_of "$e6" "$TB/stranded.jsonl")
[ "$(field decision "$l")" = skip ] && [ "$(field note "$l")" = held ] && ok "advisor: a held job is skipped" ||
  bad "advisor, held job: $l"
if [ -n "$e5" ]; then
  l=$(line_of "$e5" "$TB/stranded.jsonl")
  [ "$(field decision "$l")" = nofit ] && ok "advisor: a job excluding every node is not placed" ||
    bad "advisor, job excluding every node: $l"
fi
replay_check "$TB/stranded.json" "stranded state + 6 queued jobs"
# The mirror's GPUs in use per node = Slurm's (whole GPUs, from the dump).
for n in gn1 gn2 gn3 gn4; do
  m=$(grep -c "{\"node\": \"$n\", \"cpu_milli\": 0, \"memory_mib\": 0, \"gpu_milli\": 1000" "$TB/stranded.json")
  [ $((8 - m)) -eq "$(slurm_free $n)" ] || bad "mirror of $n: $m GPUs in use, Slurm: $((8 - $(slurm_free $n)))"
done
ok "mirror: GPUs in use per node equal Slurm's gres_used"
# A real (not dry) cycle changes pending jobs only.
adv --once --quiet --policy best-fit >"$TB/real1.jsonl" 2>"$TB/real1.err"
after=$(scontrol -o show job "${J[0]}" | grep -o 'AdminComment=[^ ]*\|ReqNodeList=[^ ]*')
[ "$before" = "$after" ] && ok "a running job is untouched by a real cycle ($after)" ||
  bad "running job changed: '$before' -> '$after'"
[ "$(reqnodes "$e1")" = gn1 ] && ok "real cycle pinned the queued 2-GPU job to gn1" ||
  bad "queued 2-GPU job req nodes: '$(reqnodes "$e1")'"
[ -z "$(reqnodes "${J[5]}")" ] && [ -z "$(reqnodes "$e6")" ] && [ -z "$(reqnodes "$e3")" ] &&
  ok "jobs without a fitting node, and the held job, are not pinned" ||
  bad "unexpected pins: g8 '$(reqnodes "${J[5]}")' held '$(reqnodes "$e6")' x4 '$(reqnodes "$e3")'"
reset
gate open

# --------------------------------------------- 2. with the advisor: fits
gate close
mapfile -t J < <(submit_seq) || die "sbatch failed"
adv --once --policy best-fit --dump "$TB/advised.json" >"$TB/advised.jsonl" 2>"$TB/advised.err"
rc=$?
[ $rc -eq 0 ] || bad "advisor --once: exit $rc ($(cat "$TB/advised.err"))"
want=(gn1 gn2 gn2 gn1 gn3 gn4)
got=()
napplied=0
for i in 0 1 2 3 4 5; do
  l=$(line_of "${J[$i]}" "$TB/advised.jsonl")
  got+=("$(field node "$l")")
  [ "$(field decision "$l")" = place ] && [ "$(field applied "$l")" = true ] && napplied=$((napplied + 1))
done
[ "${got[*]}" = "${want[*]}" ] && [ $napplied -eq 6 ] &&
  ok "advisor (best-fit) pinned g4 g6 g2 g4 g6 g8 to ${got[*]}" ||
  bad "advisor decisions: ${got[*]} ($napplied applied), want ${want[*]}"
replay_check "$TB/advised.json" "advisor run"
gate open
if wait_for 20 all_running "${J[@]}"; then
  got=()
  for j in "${J[@]}"; do got+=("$(nodeof "$j")"); done
  [ "${got[*]}" = "${want[*]}" ] &&
    ok "with the advisor all six jobs run, g8 on $(nodeof "${J[5]}"): ${got[*]}" ||
    bad "with the advisor the jobs run on ${got[*]}, want ${want[*]}"
else
  bad "with the advisor not every job runs: $(squeue -h -o '%i %T %N %r' | tr '\n' ';')"
fi
adv --once --dry-run >/dev/null 2>"$TB/after.err"
grep -q '6 running, 0 pending' "$TB/after.err" && ok "libslurm read-back: 6 running, 0 pending" ||
  bad "read-back after the run: $(cat "$TB/after.err")"
# A running shard job is mirrored as its share of one GPU: 2 of 4 shards on
# the GPU Slurm chose = 500 milli on that index.
sj=$(sbatch --parsable -J s2run -o /dev/null -c 1 --mem=1000 --gres=shard:2 --wrap 'sleep 600')
if wait_for 15 all_running "$sj"; then
  idx=$(scontrol -d show job "$sj" | grep -o 'GRES=shard[^ ]*(IDX:[0-9]*)' | grep -o 'IDX:[0-9]*' | cut -d: -f2)
  sn=$(nodeof "$sj")
  adv --once --dry-run --dump "$TB/shard.json" >/dev/null 2>&1
  if grep -q "{\"node\": \"$sn\", \"cpu_milli\": 0, \"memory_mib\": 0, \"gpu_milli\": 500, \"gpus\": \[$idx\]}" "$TB/shard.json"; then
    ok "mirror: running shard:2 job on $sn GPU $idx is 500 milli of that GPU"
  else
    bad "mirror of the running shard job ($sn IDX $idx): $(grep "\"$sn\"" "$TB/shard.json" | tr -d '\n')"
  fi
else
  bad "shard job $sj did not start: $(squeue -h -j "$sj" -o '%T %r')"
fi
# The replay notices a decision that is not the policy's.
sed 's/"decision": "place", "node": "gn4"/"decision": "place", "node": "gn3"/' \
  "$TB/advised.json" >"$TB/tampered.json"
if "$REPLAY" "$TB/tampered.json" >/dev/null 2>&1; then
  bad "lsched-slurm-replay accepted a tampered decision"
else
  ok "lsched-slurm-replay reports a decision the policy would not make"
fi
reset

# ---------------------------------------------------- 6. loop mode
gate close
# (the binary itself in the background, not the adv function: the PID must
# be the advisor's for the SIGTERM below)
"$ADV" --state-dir "$ST" --interval 0.3 --policy best-fit >"$TB/loop.jsonl" 2>"$TB/loop.err" &
loop_pid=$!
lj=$("${SB[@]}" -J loop --gres=gpu:a100:3 --wrap 'sleep 600')
pinned() { [ -n "$(reqnodes "$lj")" ]; }
if wait_for 15 pinned; then
  ok "loop mode pinned a newly queued job to $(reqnodes "$lj")"
else
  bad "loop mode did not pin job $lj: $(tail -3 "$TB/loop.err")"
fi
two_cycles() { [ "$(grep -c 'cycle' "$TB/loop.err")" -ge 2 ]; }
wait_for 10 two_cycles
kill -TERM "$loop_pid"
wait "$loop_pid"
rc=$?
loop_pid=""
cycles=$(grep -c 'cycle' "$TB/loop.err")
[ $rc -eq 0 ] && [ "$cycles" -ge 2 ] && ok "loop mode: $cycles cycles, exit 0 on SIGTERM" ||
  bad "loop mode: exit $rc after $cycles cycles"
gate open
reset

# ------------------------------- 8. own pins: a foreign comment, a drained node
# The issue's case: the job's AdminComment already holds someone else's text.
# The advisor appends its marker (the text stays), records the pin in its
# state file, and a later cycle still knows the pin as its own: when the
# node is drained, Slurm keeps the job waiting on it (ReqNodeNotAvail) with
# other nodes idle, and the advisor moves the pin to a free node.
gate close
k1=$("${SB[@]}" -J own --gres=gpu:a100:4 --wrap 'sleep 600')
scontrol update JobId="$k1" AdminComment="ticket 42: ask ops before moving" ||
  bad "cannot set the AdminComment of $k1"
adv --once --quiet --policy best-fit >"$TB/own1.jsonl" 2>&1
n1=$(reqnodes "$k1")
c1=$(admin_comment "$k1")
if [ -n "$n1" ] && [ "$c1" = "ticket 42: ask ops before moving [lsched-slurm-advisor: best-fit placed on $n1]" ] &&
   grep -qx "$k1 $n1" "$ST/pins"; then
  ok "pin on a job with a foreign AdminComment: $n1, text kept, marker appended, state file '$k1 $n1'"
else
  bad "pin with a foreign comment: node '$n1', comment '$c1', pins: $(tr '\n' ';' <"$ST/pins" 2>/dev/null)"
fi
scontrol update NodeName="$n1" State=DRAIN Reason=lsched-test || bad "cannot drain $n1"
gate open
sleep 2 # a few scheduling passes
r=$(squeue -h -j "$k1" -o %r)
idle=$(sinfo -h -N -o '%N %T' | awk '$2 == "idle" {print $1}' | sort -u | tr '\n' ' ')
if [ "$(state "$k1")" = PENDING ] && [ -n "$idle" ]; then
  ok "drained pinned node: Slurm keeps job $k1 PENDING ($r) while nodes ${idle% } are idle"
else
  bad "drained pinned node: job $k1 is $(state "$k1") ($r), idle nodes '$idle'"
fi
adv --once --quiet --policy best-fit >"$TB/own2.jsonl" 2>&1
l=$(line_of "$k1" "$TB/own2.jsonl")
n2=$(field node "$l")
if [ "$(field decision "$l")" = place ] && [ -n "$n2" ] && [ "$n2" != "$n1" ] &&
   grep -q "moved from $n1" <<<"$l" && wait_for 20 all_running "$k1" && [ "$(nodeof "$k1")" = "$n2" ]; then
  ok "the advisor moved its pin from drained $n1 to $n2 and job $k1 runs there"
else
  bad "re-pin after drain: $l; job $k1 $(state "$k1") on '$(nodeof "$k1")' ($(squeue -h -j "$k1" -o %r))"
fi
c2=$(admin_comment "$k1")
[ "$c2" = "ticket 42: ask ops before moving [lsched-slurm-advisor: best-fit placed on $n2]" ] &&
  ok "the foreign text is still intact: '$c2'" || bad "comment after the move: '$c2'"
scontrol update NodeName="$n1" State=RESUME || bad "cannot resume $n1"
reset

# ------------------------------------------------------ 9. --unpin-all
# Three pins of the advisor's (one on a job with a foreign comment), a
# user's own -w, and a job whose comment carries a copied marker and whose
# ReqNodeList someone set by hand (no state entry): only the three go.
gate close
u1=$("${SB[@]}" -J u1 --gres=gpu:a100:2 --wrap 'sleep 600')
u2=$("${SB[@]}" -J u2 --gres=shard:2 --wrap 'sleep 600')
u3=$("${SB[@]}" -J u3 --gres=gpu:a100:1 --wrap 'sleep 600')
scontrol update JobId="$u3" AdminComment="keep me"
w1=$("${SB[@]}" -J user-w -w gn3 --gres=gpu:a100:1 --wrap 'sleep 600')
f1=$("${SB[@]}" -J copied --gres=gpu:a100:1 --wrap 'sleep 600')
scontrol update JobId="$f1" ReqNodeList=gn4 AdminComment="[lsched-slurm-advisor: best-fit placed on gn4]"
adv --once --quiet >"$TB/unpin1.jsonl" 2>&1
npinned=0
for j in "$u1" "$u2" "$u3"; do [ -n "$(reqnodes "$j")" ] && npinned=$((npinned + 1)); done
lw=$(line_of "$w1" "$TB/unpin1.jsonl")
lf=$(line_of "$f1" "$TB/unpin1.jsonl")
[ $npinned -eq 3 ] && [ "$(field note "$lw")" = user_nodelist ] && [ "$(field note "$lf")" = user_nodelist ] &&
  ok "3 jobs pinned; a user's -w and a copied marker without a state entry are not taken for the advisor's" ||
  bad "before --unpin-all: $npinned pinned; user -w: $lw; copied marker: $lf"
out=$(adv --unpin-all --quiet 2>"$TB/unpin.err")
rc=$?
if [ $rc -eq 0 ] && [ "$out" = '{"unpinned":3,"failed":0,"dry_run":false}' ] &&
   [ -z "$(reqnodes "$u1")$(reqnodes "$u2")$(reqnodes "$u3")" ] &&
   [ "$(admin_comment "$u3")" = "keep me" ] && [ -z "$(admin_comment "$u1")" ] &&
   [ "$(reqnodes "$w1")" = gn3 ] && [ "$(reqnodes "$f1")" = gn4 ] &&
   [ "$(admin_comment "$f1")" = "[lsched-slurm-advisor: best-fit placed on gn4]" ] &&
   [ "$(grep -vc '^#' "$ST/pins")" -eq 0 ]; then
  ok "--unpin-all: exit 0, $out; others' pins and comment text intact; state file empty"
else
  bad "--unpin-all: exit $rc, '$out'; u1 '$(reqnodes "$u1")' u3 '$(reqnodes "$u3")' '$(admin_comment "$u3")' w1 '$(reqnodes "$w1")' f1 '$(reqnodes "$f1")' pins: $(tr '\n' ';' <"$ST/pins")"
fi
out=$(adv --unpin-all --quiet 2>"$TB/unpin.err")
[ "$out" = '{"unpinned":0,"failed":0,"dry_run":false}' ] && ok "--unpin-all again: nothing left to unpin" ||
  bad "second --unpin-all: '$out'"
reset

# ------------------------------------------------------ 10. a DOWN partition
# Slurm starts nothing from a DOWN partition: its jobs are not pinned, and a
# pin set before the partition went down is removed.
gate close
d1=$("${SB[@]}" -J d1 --gres=gpu:a100:2 --wrap 'sleep 600')
adv --once --quiet >/dev/null 2>&1
p1=$(reqnodes "$d1")
part DOWN
d2=$("${SB[@]}" -J d2 --gres=gpu:a100:2 --wrap 'sleep 600')
adv --once >"$TB/down.jsonl" 2>"$TB/down.err"
l1=$(line_of "$d1" "$TB/down.jsonl")
l2=$(line_of "$d2" "$TB/down.jsonl")
if [ -n "$p1" ] && [ "$(field decision "$l1")" = skip ] && [ "$(field note "$l1")" = "partition_down; unpinned" ] &&
   [ "$(field note "$l2")" = partition_down ] && [ -z "$(reqnodes "$d1")$(reqnodes "$d2")" ]; then
  ok "DOWN partition: no pins (job $d1 unpinned from $p1, job $d2 skipped: partition_down)"
else
  bad "DOWN partition: pinned before '$p1'; $l1; $l2; req '$(reqnodes "$d1")' '$(reqnodes "$d2")'"
fi
part UP
reset

# ------------------------------------- 11. slurmctld restarts mid-run
# The loop keeps running while slurmctld is away (libslurm gives up after
# about 9 s: one failed cycle, then retries with backoff), keeps its mirror
# and its pins, and places a job queued after the restart. A second advisor
# on the same state directory is refused.
gate close
rj1=$("${SB[@]}" -J before --gres=gpu:a100:2 --wrap 'sleep 600')
"$ADV" --state-dir "$ST" --interval 0.3 --retries 3 --policy best-fit >"$TB/restart.jsonl" 2>"$TB/restart.err" &
loop_pid=$!
pinned1() { [ -n "$(reqnodes "$rj1")" ]; }
wait_for 15 pinned1 || bad "loop did not pin job $rj1 before the restart"
msg=$(adv --once 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] && grep -q 'another advisor uses this state directory' <<<"$msg" &&
  ok "a second advisor on the same state directory: exit 1, '$msg'" || bad "second advisor: exit $rc, '$msg'"
out=$(DOWN_S=10 bash "$TESTBED" restart-ctld 2>&1) || die "slurmctld restart failed: $out"
gate close # the partition's MaxTime comes back from slurm.conf
rj2=$("${SB[@]}" -J after --gres=gpu:a100:2 --wrap 'sleep 600')
pinned2() { [ -n "$(reqnodes "$rj2")" ]; }
if wait_for 30 pinned2; then
  ok "after the slurmctld restart ($out) the same advisor pinned job $rj2 to $(reqnodes "$rj2")"
else
  bad "no pin after the restart: $(tail -3 "$TB/restart.err")"
fi
kill -TERM "$loop_pid"
wait "$loop_pid"
rc=$?
loop_pid=""
fails=$(grep -c 'failed (1 in a row); retrying in' "$TB/restart.err")
back=$(grep -c 'Slurm answers again' "$TB/restart.err")
adds=$(grep -c 'mirror +7 ' "$TB/restart.err")
[ $rc -eq 0 ] && [ "$fails" -ge 1 ] && [ "$back" -ge 1 ] && [ "$adds" -eq 1 ] &&
  ok "restart: loop exit 0 on SIGTERM, a failed cycle retried, 'Slurm answers again', mirror built once" ||
  bad "restart: exit $rc, $fails failed, $back answered again, $adds mirror builds: $(grep -v ': cycle [0-9]*: ' "$TB/restart.err" | head -5)"
st1=$(state "$rj1")
[ "$st1" = RUNNING ] || [ -n "$(reqnodes "$rj1")" ] &&
  ok "the job pinned before the restart is $st1 $(nodeof "$rj1")$(reqnodes "$rj1")" ||
  bad "job pinned before the restart: $st1, req '$(reqnodes "$rj1")'"
gate open
reset

# ----------------------------------------------- 12. MIG GRES mirrored
# gn5 (partition "mig"): 4 whole a100 (IDX 0-3), 7 x 1g.10gb (IDX 4-10) and
# 2 x 3g.40gb (IDX 11-12). A running 1g.10gb:3 job takes three instances;
# the advisor mirrors each MIG type as a static MIG sub-node and places
# 1g.10gb:4 on exactly the four instances left, 3g.40gb:2 on IDX 11-12 and
# a100:4 on the whole GPUs; a fifth 1g.10gb job has no instance left.
expand() { # "4-6,9" -> "4 5 6 9"
  local r out=""
  for r in ${1//,/ }; do
    if [[ $r == *-* ]]; then out="$out $(seq -s ' ' "${r%-*}" "${r#*-}")"; else out="$out $r"; fi
  done
  echo $out
}
mr=$(sbatch --parsable -p mig -o /dev/null -c 2 --mem=2000 --gres=gpu:1g.10gb:3 --wrap 'sleep 600')
if wait_for 15 all_running "$mr"; then
  used=$(expand "$(scontrol -d show job "$mr" | grep -o 'GRES=gpu:1g.10gb:3(IDX:[0-9,-]*)' | sed 's/.*IDX://; s/)//')")
  left=""
  for i in 4 5 6 7 8 9 10; do [[ " $used " == *" $i "* ]] || left="$left,$i"; done
  left=${left#,}
  scontrol update PartitionName=mig MaxTime=1
  # (the job that cannot run goes last: queued first, Slurm's backfill
  # would hold the node for it and keep the others waiting)
  m1=$("${SB[@]}" -p mig -J mig4 --gres=gpu:1g.10gb:4 --wrap 'sleep 600')
  m3=$("${SB[@]}" -p mig -J mig3g --gres=gpu:3g.40gb:2 --wrap 'sleep 600')
  m4=$("${SB[@]}" -p mig -J whole4 --gres=gpu:a100:4 --wrap 'sleep 600')
  m2=$("${SB[@]}" -p mig -J mig1 --gres=gpu:1g.10gb:1 --wrap 'sleep 600')
  adv --once --policy best-fit --dump "$TB/mig.json" >"$TB/mig.jsonl" 2>"$TB/mig.err"
  l1=$(line_of "$m1" "$TB/mig.jsonl")
  l2=$(line_of "$m2" "$TB/mig.jsonl")
  l3=$(line_of "$m3" "$TB/mig.jsonl")
  l4=$(line_of "$m4" "$TB/mig.jsonl")
  if grep -q "\"decision\":\"place\",\"node\":\"gn5\",\"gpus\":\[$left\],\"gpu_milli\":142" <<<"$l1" &&
     [ "$(field decision "$l2")" = nofit ] &&
     grep -q '"node":"gn5","gpus":\[11,12\],"gpu_milli":428' <<<"$l3" &&
     grep -q '"node":"gn5","gpus":\[0,1,2,3\],"gpu_milli":1000' <<<"$l4" &&
     grep -q 'mirror +7 ' "$TB/mig.err"; then
    ok "MIG mirror: running 1g.10gb:3 on IDX $used; advisor: 1g.10gb:4 -> IDX $left, 1g.10gb:1 nofit, 3g.40gb:2 -> IDX 11-12, a100:4 -> IDX 0-3 (7 mirror nodes: 5 + 2 MIG sub-nodes)"
  else
    bad "MIG mirror (running on IDX $used): $l1 | $l2 | $l3 | $l4 | $(grep -o 'mirror [^;]*' "$TB/mig.err")"
  fi
  replay_check "$TB/mig.json" "MIG node's whole GPUs"
  scontrol update PartitionName=mig MaxTime=INFINITE
  if wait_for 20 all_running "$m1" "$m3" "$m4" && [ "$(state "$m2")" = PENDING ]; then
    got=$(expand "$(scontrol -d show job "$m1" | grep -o 'GRES=gpu:1g.10gb:4(IDX:[0-9,-]*)' | sed 's/.*IDX://; s/)//')")
    [ "${got// /,}" = "$left" ] &&
      ok "MIG jobs run where the advisor said (1g.10gb:4 on IDX $got); the fifth 1g.10gb job waits" ||
      bad "1g.10gb:4 runs on IDX '$got', advisor said $left"
  else
    bad "MIG jobs after opening: $(squeue -h -p mig -o '%i %T %r' | tr '\n' ';')"
  fi
else
  bad "the running 1g.10gb:3 job did not start: $(squeue -h -j "$mr" -o '%T %r')"
fi
reset

# ------------------------------------------------------- 7. errors
sed 's/^SlurmctldPort=.*/SlurmctldPort=1/' "$SLURM_CONF" >"$TB/unreachable.conf"
msg=$(adv --once --conf "$TB/unreachable.conf" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] && grep -q 'cannot read the nodes from slurmctld' <<<"$msg" &&
  ok "slurmctld unreachable: exit 1, '$msg'" || bad "unreachable: exit $rc, '$msg'"
msg=$(SLURM_CONF=$TB/none.conf adv --once 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] && grep -q 'cannot read the Slurm configuration' <<<"$msg" &&
  ok "no configuration: exit 1" || bad "no configuration: exit $rc, '$msg'"
msg=$(adv --once --policy no-such-policy 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && ok "unknown policy: exit 2" || bad "unknown policy: exit $rc, '$msg'"
# --config: keys are the long options; the command line overrides them;
# errors name the file, the line and the key (exit 2).
printf '# advisor\npolicy = first-fit\nstate_dir = %s\nquiet = yes\nonce = yes\n' "$ST" >"$TB/advisor.conf"
cj=$("${SB[@]}" -J cfg --gres=gpu:a100:1 --hold --wrap 'sleep 600')
out=$("$ADV" --config "$TB/advisor.conf" --dry-run 2>"$TB/cfg.err")
rc=$?
[ $rc -eq 0 ] && grep -q '"policy":"first-fit"' <<<"$out" && ! grep -q 'cycle' "$TB/cfg.err" &&
  ok "--config: policy, state_dir, quiet and once from the file" || bad "--config: exit $rc, '$out' $(cat "$TB/cfg.err")"
out=$("$ADV" --config "$TB/advisor.conf" --dry-run --policy best-fit 2>&1)
grep -q '"policy":"best-fit"' <<<"$out" && ok "--config: the command line overrides the file" ||
  bad "--config override: '$out'"
printf 'policy = fgd\nintervall = 3\n' >"$TB/bad.conf"
msg=$("$ADV" --config "$TB/bad.conf" --once 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] && grep -q "bad.conf:2: key 'intervall': unknown" <<<"$msg" &&
  ok "--config with an unknown key: exit 2, names file, line and key" || bad "bad config: exit $rc, '$msg'"
scancel "$cj"

echo "$(($(date +%s) - t0)) s"
cli_summary
