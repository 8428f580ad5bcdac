#!/usr/bin/env bash
# Fuzzes the trace readers, the JSON inputs and libsched with libFuzzer.
#
#   bash scripts/fuzz.sh TARGET|all [SECONDS] [LIBFUZZER_OPTION...]
#
# TARGET: trace, nodes, cluster, catalog, sweep, libsched (tests/fuzz/
# fuzz_TARGET.c says what each covers and checks); `all` runs them one
# after the other. SECONDS per target (default 60). The targets are built
# with clang, AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer into
# build-fuzz/ ($FUZZ_BUILD), and run on one core. Each starts from its seed
# corpus tests/fuzz/corpus/TARGET (read only) plus the inputs earlier runs
# found (build-fuzz/corpus/TARGET). A crash, sanitizer report, leak or
# failed check leaves its input in build-fuzz/artifacts/TARGET/; once the
# bug is fixed, copy the input into tests/fuzz/corpus/TARGET/ so that ctest
# replays it in every build (fuzz_corpus_TARGET). Executions per target go
# to build-fuzz/fuzz-summary.txt. Exit status 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
ALL="trace nodes cluster catalog sweep libsched times"
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
what=$1
secs=${2:-60}
shift $(($# >= 2 ? 2 : 1))
targets=$what
[ "$what" = all ] && targets=$ALL
for t in $targets; do
  case " $ALL " in *" $t "*) ;; *)
    echo "fuzz.sh: unknown target '$t' (targets: $ALL, all)" >&2
    exit 2 ;;
  esac
done
command -v clang >/dev/null || {
  echo "fuzz.sh: clang not found (apt-get install clang)" >&2
  exit 2
}
B=${FUZZ_BUILD:-build-fuzz}
CC=clang cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLSCHED_SANITIZE=ON -DLSCHED_FUZZ=ON -DLSCHED_BUILD_BENCH=OFF >/dev/null
for t in $targets; do
  cmake --build "$B" --target "fuzz_$t" -j"${JOBS:-$(nproc)}" >/dev/null
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in $targets; do
  mkdir -p "$B/corpus/$t" "$B/artifacts/$t"
  case $t in
    trace | nodes) dict=(-dict=tests/fuzz/trace.dict) ;;
    cluster | catalog | sweep) dict=(-dict=tests/fuzz/json.dict) ;;
    *) dict=() ;;
  esac
  log="$B/fuzz-$t.log"
  echo "fuzz.sh: $t for $secs s (log $log)"
  rc=0
  # One process on one core; -rss_limit_mb covers traces that legitimately
  # expand (a PAI task may have 100,000 instances).
  "$B/tests/fuzz/fuzz_$t" "$B/corpus/$t" "tests/fuzz/corpus/$t" \
    -max_total_time="$secs" -timeout=60 -rss_limit_mb=4096 \
    -artifact_prefix="$B/artifacts/$t/" -print_final_stats=1 \
    "${dict[@]}" "$@" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  found=$(find "$B/artifacts/$t" -type f | wc -l)
  line="$(date -u +%FT%TZ) $t seconds=$secs execs=${execs:-?} cov=${cov:-?} exit=$rc artifacts=$found"
  echo "$line" | tee -a "$B/fuzz-summary.txt"
  if [ "$rc" != 0 ]; then
    status=1
    grep -m3 -E 'check failed|runtime error|ERROR: [A-Za-z]*Sanitizer|SUMMARY|out-of-memory|timeout' "$log" || tail -20 "$log"
  fi
done
exit $status
