#!/usr/bin/env bash
# Valgrind memcheck of a full Alibaba replay and a fill run
# (scripts/valgrind_check.sh); skipped with a SKIP line when Valgrind is
# not installed. The test build is sanitized, so the script builds a plain
# schedsim beside it (in the build tree, reused by later runs).
set -u
SRC=${SCHEDSIM_SOURCE_DIR:?}
BIN=${SCHEDSIM_BIN:?}
export VALGRIND_BUILD=${VALGRIND_BUILD:-$(dirname "$BIN")/valgrind-build}
exec bash "$SRC/scripts/valgrind_check.sh" "$BIN"
