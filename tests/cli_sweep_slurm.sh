#!/usr/bin/env bash
# `schedsim sweep MANIFEST --emit-slurm DIR` on a real Slurm (the local test
# bed of scripts/slurm_testbed.sh, stopped by PID on exit): a manifest of 8
# runs (a 300-job synthetic trace x 2 clusters x 2 policies x 2 seeds) is
# run once locally with `schedsim sweep` and once as a Slurm job array (one
# task per run, at most 3 at once) plus its merge job; the two sweep.csv
# files and every run's outputs must be byte-identical. Then one run is
# removed and the merge job alone is resubmitted: it runs the missing run
# again and merges the same sweep.csv. Also: --task out of range is an
# error.
#
# Skips (exit 77) without the Slurm packages or root; with CI=true (where
# .ci/run installs them through scripts/setup-slurm.sh) that is a failure.
# LSCHED_SKIP_SLURM=1 always skips.
set -u

src=${SCHEDSIM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
SCHEDSIM=${SCHEDSIM_BIN:-$src/build/schedsim}

skip() {
  if [ "${CI:-}" = true ] && [ "${LSCHED_SKIP_SLURM:-}" != 1 ]; then
    echo "FAIL: $* (CI=true: scripts/setup-slurm.sh should have installed Slurm)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
[ "${LSCHED_SKIP_SLURM:-}" = 1 ] && skip "LSCHED_SKIP_SLURM=1"
[ -x "$SCHEDSIM" ] || { echo "FAIL: no schedsim at $SCHEDSIM"; exit 1; }
for tool in slurmctld slurmd sbatch squeue scontrol sinfo scancel munge unmunge; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] ||
    skip "$tool not found (Debian: apt-get install slurmctld slurmd slurm-client munge)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root (slurmd runs as root, mknod)"
command -v flock >/dev/null 2>&1 || skip "flock not found"

exec 9>"${TMPDIR:-/tmp}/lsched-slurm-test.lock"
flock -w 300 9 || { echo "FAIL: another Slurm test held the lock for 300 s"; exit 1; }

export TB
TB=$(mktemp -d "${TMPDIR:-/tmp}/cli_sweep_slurm.XXXXXX")
export PORT_BASE=${LSCHED_TEST_PORT_BASE:-17917}
TESTBED=$src/scripts/slurm_testbed.sh
cleanup() {
  bash "$TESTBED" stop >/dev/null 2>&1
  if [ "${KEEP_TB:-}" = 1 ]; then echo "kept $TB"; else rm -rf "$TB"; fi
}
trap 'exit 143' TERM INT HUP

CLI_VERBOSE=1
. "$(dirname "$0")/lib/cli_harness.sh"
CLI_AT_EXIT+=(cleanup)
t0=$(date +%s)
die() { bad "$*"; exit 1; }

# ------------------------------------------------------ manifest, local run
W=$TB/work
mkdir -p "$W"
"$SCHEDSIM" generate --out "$W/gen.csv" --jobs 300 --seed 5 >/dev/null ||
  die "schedsim generate failed"
cat >"$W/m.json" <<EOF
{"name": "slurm sweep test", "description": "8 runs",
 "traces": [{"path": "gen.csv", "label": "gen"}],
 "clusters": ["builtin:default", "$src/sim/examples/a100-h100-exclusive.json"],
 "policies": ["first-fit", "best-fit"], "queues": ["fifo"], "seeds": [1, 2]}
EOF
"$SCHEDSIM" sweep "$W/m.json" --out "$W/local" --jobs 2 --quiet >"$W/local.log" 2>&1 ||
  die "local sweep failed: $(cat "$W/local.log")"
rows=$(($(wc -l <"$W/local/sweep.csv") - 1))
[ "$rows" -eq 8 ] && ok "local sweep: 8 runs merged" || die "local sweep.csv has $rows rows"

out=$("$SCHEDSIM" sweep "$W/m.json" --out "$W/slurm" --task 9 2>&1)
[ $? -eq 2 ] && grep -q 'has 8 runs' <<<"$out" && ok "--task 9 of 8 runs: exit 2" ||
  bad "--task 9: $out"

# ------------------------------------------------------------- on Slurm
E=$W/emit
"$SCHEDSIM" sweep "$W/m.json" --out "$W/slurm" --emit-slurm "$E" --slurm-max-running 3 \
  >"$W/emit.log" 2>&1 || die "--emit-slurm failed: $(cat "$W/emit.log")"
for f in sweep.sbatch merge.sbatch submit.sh; do
  [ -x "$E/$f" ] || bad "--emit-slurm wrote no executable $f"
done
grep -qx '#SBATCH --array=1-8%3' "$E/sweep.sbatch" && ok "job array 1-8%3 written" ||
  bad "array line: $(grep array "$E/sweep.sbatch")"
[ -e "$W/slurm/sweep.csv" ] && bad "--emit-slurm ran something"

tbout=$(bash "$TESTBED" start 2>&1 9>&-) || die "test bed did not start: $tbout"
eval "$(printf '%s\n' "$tbout" | grep '^export SLURM_CONF=')"
ok "test bed up"
cd "$TB" || exit 1

ids=$(bash "$E/submit.sh" 2>"$W/submit.err") || die "submit.sh failed: $(cat "$W/submit.err")"
read -r array merge <<<"$ids"
[ -n "$array" ] && [ -n "$merge" ] || die "submit.sh printed '$ids'"
maxrun=0
end=$(($(date +%s) + 120))
while [ -n "$(squeue -h -j "$array,$merge" -o %i 2>/dev/null)" ] && [ "$(date +%s)" -lt $end ]; do
  r=$(squeue -h -j "$array" -t R -o %i 2>/dev/null | wc -l)
  [ "$r" -gt "$maxrun" ] && maxrun=$r
  sleep 0.1
done
[ -z "$(squeue -h -j "$array,$merge" -o %i 2>/dev/null)" ] || die "sweep jobs still queued after 120 s"
[ "$maxrun" -le 3 ] && ok "array job $array ran, at most $maxrun tasks at once (limit 3)" ||
  bad "$maxrun array tasks ran at once, limit 3"
n=$(ls "$E/logs"/run-*.out 2>/dev/null | wc -l)
[ "$n" -eq 8 ] && ok "8 array task logs" || bad "$n array task logs, want 8"
if cmp -s "$W/local/sweep.csv" "$W/slurm/sweep.csv"; then
  ok "merged sweep.csv from Slurm = local sweep.csv"
else
  bad "sweep.csv differs: $(diff "$W/local/sweep.csv" "$W/slurm/sweep.csv" 2>&1 | head -5)"
fi
diff -r "$W/local/runs" "$W/slurm/runs" >/dev/null && ok "every run's outputs are byte-identical" ||
  bad "run outputs differ: $(diff -rq "$W/local/runs" "$W/slurm/runs" | head -3)"

# A run lost (a failed task): the merge job alone runs it again and merges.
victim=$(ls "$W/slurm/runs" | sed -n 5p)
rm -rf "${W:?}/slurm/runs/$victim" "$W/slurm/sweep.csv"
mj=$(sbatch --parsable "$E/merge.sbatch") || die "sbatch merge.sbatch failed"
wait_gone() { [ -z "$(squeue -h -j "$mj" -o %i 2>/dev/null)" ]; }
end=$(($(date +%s) + 60))
until wait_gone || [ "$(date +%s)" -ge $end ]; do sleep 0.1; done
if [ -d "$W/slurm/runs/$victim" ] && cmp -s "$W/local/sweep.csv" "$W/slurm/sweep.csv"; then
  ok "merge job reran the missing run ($victim) and merged the same sweep.csv"
else
  bad "after removing $victim the merge job gave: $(cat "$E/logs/merge.out")"
fi

echo "$(($(date +%s) - t0)) s"
cli_summary
