#!/usr/bin/env bash
# Output faults (issue #8, part 3): an unwritable directory and a full disk
# give a clear error and exit status 1, and a results file is never left
# half-written under its final name. Every writer puts a file under a
# temporary name beside it (NAME.tmp.PID, created exclusively) and renames
# it when complete; a full disk is simulated by sending the writes to that
# temporary name to /dev/full (tests/lib/full_shim.c, preloaded; the PID
# is known because the command is exec'd by a subshell whose PID it
# keeps), and by a file-size limit (ulimit -f, SIGXFSZ
# ignored: writes fail with EFBIG in the middle of a file). Covered:
# summary.json, jobs.csv and timeline.csv (run), fill.csv and its
# summary.json (fill), compare.csv (compare), sweep.csv (sweep), and the
# trace written by `schedsim generate`.
set -u
BIN=${SCHEDSIM_BIN:?}
SRC=${SCHEDSIM_SOURCE_DIR:?}
. "$(dirname "$0")/lib/cli_harness.sh"

# check STATUS NEEDLE: the last command's status and a stderr substring.
check() {
  local got=$1 want=$2 needle=$3 what=$4
  if [ "$got" != "$want" ]; then
    bad "$what: exit $got, want $want; stderr: $(head -c 400 "$T/err")"
  elif ! grep -qF -- "$needle" "$T/err"; then
    bad "$what: stderr lacks '$needle': $(head -c 400 "$T/err")"
  else
    ok
  fi
}
absent() { [ ! -e "$1" ] && ok || bad "$1 exists after a failed write"; }
no_tmp() { # DIR: no temporary file left
  if ls -a "$1" 2>/dev/null | grep -q '\.tmp'; then bad "temporary file left in $1: $(ls -a "$1")"; else ok; fi
}

CL=$SRC/sim/examples/a100-h100.json
GEN=id,submit,duration,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_model
{
  echo $GEN
  for i in $(seq 1 300); do echo "job-$i,$((i * 7)),$((600 + i)),1,500,1000,1024,"; done
} >"$T/jobs.csv"
run() { "$BIN" run --cluster "$CL" --trace "$T/jobs.csv" --policy first-fit --quiet "$@"; }

# full_at PATH: in this (sub)shell, writes to PATH go to /dev/full.
SHIM=$T/full_shim.so
${CC:-cc} -shared -fPIC -o "$SHIM" "$(dirname "$0")/lib/full_shim.c" -ldl || {
  echo "cli_faults: cannot build the full-disk shim" >&2
  exit 1
}
full_at() {
  export LD_PRELOAD=$SHIM SCHEDSIM_FULL_AT=$1
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
}

# A complete run, for comparisons.
run --out "$T/ref" >/dev/null 2>&1 || bad "reference run failed"

# ---- full disk: NAME.tmp.PID -> /dev/full, one output file at a time
for f in timeline.csv summary.json jobs.csv; do
  D=$T/full-$f
  mkdir -p "$D"
  (
    full_at "$D/$f.tmp.$BASHPID"
    exec "$BIN" run --cluster "$CL" --trace "$T/jobs.csv" --policy first-fit --quiet --out "$D"
  ) >/dev/null 2>"$T/err"
  check $? 1 "$D/$f: write failed: No space left on device" "run, $f on a full disk"
  absent "$D/$f"
  no_tmp "$D"
  # What was written before the failure is complete.
  for g in timeline.csv summary.json jobs.csv; do
    [ -e "$D/$g" ] || continue
    cmp -s "$D/$g" "$T/ref/$g" && ok || bad "$g next to a failed $f is not complete"
  done
done
# A failed rewrite keeps the previous complete file under the final name.
D=$T/again
cp -r "$T/ref" "$D"
(
  full_at "$D/jobs.csv.tmp.$BASHPID"
  exec "$BIN" run --cluster "$CL" --trace "$T/jobs.csv" --policy first-fit --quiet --out "$D"
) >/dev/null 2>"$T/err"
check $? 1 "No space left on device" "rerun on a full disk"
cmp -s "$D/jobs.csv" "$T/ref/jobs.csv" && ok || bad "the previous jobs.csv was damaged"
no_tmp "$D"

# ---- a file-size limit: writes fail with EFBIG in the middle of a file
for kb in 1 8; do
  D=$T/limit-$kb
  (
    trap '' XFSZ
    ulimit -f "$kb"
    exec "$BIN" run --cluster "$CL" --trace "$T/jobs.csv" --policy first-fit --quiet --out "$D"
  ) >/dev/null 2>"$T/err"
  check $? 1 "write failed: File too large" "run with files limited to $kb KiB"
  no_tmp "$D"
  for g in timeline.csv summary.json jobs.csv; do
    [ -e "$D/$g" ] || continue
    cmp -s "$D/$g" "$T/ref/$g" && ok || bad "$g written under a $kb KiB limit is not complete"
  done
done

# ---- fill, compare, sweep, generate
D=$T/fill
mkdir -p "$D"
for f in fill.csv summary.json; do
  rm -f "$D"/*
  (
    full_at "$D/$f.tmp.$BASHPID"
    exec "$BIN" fill --cluster "$CL" --trace "$T/jobs.csv" --policy first-fit --seeds 1 --out "$D"
  ) >/dev/null 2>"$T/err"
  check $? 1 "No space left on device" "fill, $f on a full disk"
  absent "$D/$f"
  no_tmp "$D"
done
D=$T/cmp
mkdir -p "$D"
(
  full_at "$D/compare.csv.tmp.$BASHPID"
  exec "$BIN" compare --trace "$T/jobs.csv" --policy first-fit,best-fit --no-plots --quiet --jobs 1 --out "$D"
) >/dev/null 2>"$T/err"
check $? 1 "No space left on device" "compare.csv on a full disk"
absent "$D/compare.csv"
no_tmp "$D"
D=$T/sweep
mkdir -p "$D"
printf '{"traces": ["%s"], "clusters": ["builtin:default"], "policies": ["first-fit"]}\n' "$T/jobs.csv" >"$T/m.json"
(
  full_at "$D/sweep.csv.tmp.$BASHPID"
  exec "$BIN" sweep "$T/m.json" --quiet --jobs 1 --out "$D"
) >/dev/null 2>"$T/err"
check $? 1 "No space left on device" "sweep.csv on a full disk"
absent "$D/sweep.csv"
no_tmp "$D"
(
  full_at "$T/gen.csv.tmp.$BASHPID"
  exec "$BIN" generate --out "$T/gen.csv" --jobs 100
) >/dev/null 2>"$T/err"
check $? 1 "No space left on device" "generate on a full disk"
absent "$T/gen.csv"

# ---- unwritable directories
: >"$T/afile"
run --out "$T/afile/x" >/dev/null 2>"$T/err"
check $? 1 "cannot create directory: Not a directory" "--out under a regular file"
# Permissions do not bind root: drop to an unprivileged user when root.
# What that user reads and runs (the binary, the cluster spec, the trace)
# is copied into its own world-readable directory under /tmp: the clone
# (and $TMPDIR) may sit under a directory uid 65534 cannot read (#17).
U=$(mktemp -d /tmp/cli_faults_user.XXXXXX)
CLI_AT_EXIT+=("rm -rf $U")
cp "$BIN" "$U/schedsim"
cp "$CL" "$U/cluster.json"
cp "$T/jobs.csv" "$U/jobs.csv"
chmod 755 "$U" "$U/schedsim"
chmod 644 "$U/cluster.json" "$U/jobs.csv"
mkdir -p "$U/ro"
chmod 555 "$U/ro"
as_user=()
if [ "$(id -u)" = 0 ]; then
  if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  else
    as_user=(skip)
  fi
fi
if [ "${as_user[0]:-}" = skip ]; then
  echo "SKIP: running as root without setpriv: permission checks skipped"
else
  (cd "$U" && "${as_user[@]}" "$U/schedsim" run --cluster "$U/cluster.json" --trace "$U/jobs.csv" --policy first-fit --quiet --out "$U/ro/x") >/dev/null 2>"$T/err"
  check $? 1 "$U/ro/x: cannot create directory: Permission denied" "--out in a read-only directory"
  (cd "$U" && "${as_user[@]}" "$U/schedsim" run --cluster "$U/cluster.json" --trace "$U/jobs.csv" --policy first-fit --quiet --out "$U/ro") >/dev/null 2>"$T/err"
  check $? 1 "$U/ro/timeline.csv: cannot write: Permission denied" "--out a read-only directory"
  no_tmp "$U/ro"
fi

cli_summary
