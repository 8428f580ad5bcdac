#!/usr/bin/env bash
# Valgrind memcheck of schedsim (issue #8): one full replay of the Alibaba
# default trace on its own cluster and one fill run of the same trace, each
# required to be clean: no invalid read or write, no use of uninitialised
# values, no leak (definitely, indirectly or possibly lost).
#
#   bash scripts/valgrind_check.sh [SCHEDSIM]
#
# SCHEDSIM: a schedsim built without sanitizers (Valgrind cannot run an
# AddressSanitizer binary). Without it, or when it is sanitized, a plain
# RelWithDebInfo schedsim is built into $VALGRIND_BUILD (default
# build-valgrind/ here; incremental afterwards). Data:
# $SCHEDSIM_SHARED_DATA (default ../shared/data); without the Alibaba folder
# the built-in default workload and cluster are used instead and a SKIP note
# says so (under CI=true that is a failure). POLICY (default first-fit) and
# FILL_POLICY (default first-fit) choose the policies. Exit status: 0 clean,
# 1 errors or leaks (the report is printed), 77 Valgrind not installed.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null; then
  echo "SKIP: valgrind not found (apt-get install valgrind): memory check skipped"
  exit 77
fi
bin=${1:-}
# (No `ldd | grep -q` here: under pipefail grep's early exit makes ldd die of
# SIGPIPE and the test read as "not sanitized".)
libs=$( [ -n "$bin" ] && ldd "$bin" 2>/dev/null || true)
sanitized=0
case "$libs" in *libasan* | *libubsan* | *libtsan*) sanitized=1 ;; esac
if [ -z "$bin" ] || [ "$sanitized" = 1 ]; then
  B=${VALGRIND_BUILD:-build-valgrind}
  echo "valgrind_check: building a schedsim without sanitizers in $B"
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLSCHED_BUILD_TESTS=OFF \
    -DLSCHED_BUILD_BENCH=OFF >"$B.log" 2>&1 &&
    cmake --build "$B" --target schedsim -j"$(nproc)" >>"$B.log" 2>&1 || {
    cat "$B.log"
    echo "valgrind_check: build failed"
    exit 1
  }
  bin=$B/schedsim
fi
DATA=${SCHEDSIM_SHARED_DATA:-../shared/data}
D=$DATA/alibaba-gpu-v2023
if [ -r "$D/openb_pod_list_default.csv" ] && [ -r "$D/openb_node_list_gpu_node.csv" ]; then
  cluster=$D/openb_node_list_gpu_node.csv
  trace=$D/openb_pod_list_default.csv
elif [ "${CI:-}" = true ]; then
  echo "valgrind_check: CI=true but $D is missing"
  exit 1
else
  echo "SKIP: $D not found: checking the built-in default workload instead"
  cluster=builtin:default
  trace=builtin:default
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
check() { # NAME ARGS...
  local name=$1
  shift
  local log=$out/$name.log
  local t0=$SECONDS
  valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible \
    --track-origins=yes --log-file="$log" "$bin" "$@" >"$out/$name.out" 2>&1
  local rc=$?
  local errs
  errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
  if [ "$rc" = 0 ] && [ "${errs:-1}" = 0 ]; then
    echo "valgrind_check: $name: clean ($((SECONDS - t0)) s; $(grep -m1 'total heap usage' "$log" | sed 's/.*total heap usage: //'))"
  else
    echo "valgrind_check: $name: exit $rc, ${errs:-?} errors"
    cat "$log"
    tail -20 "$out/$name.out"
    status=1
  fi
}
check replay run --cluster "$cluster" --trace "$trace" --policy "${POLICY:-first-fit}" \
  --quiet --out "$out/replay"
check fill fill --cluster "$cluster" --trace "$trace" --policy "${FILL_POLICY:-first-fit}" \
  --seeds 1 --out "$out/fill"
exit $status
