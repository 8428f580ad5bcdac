# The harness of the shell tests (tests/cli_*.sh), sourced by each of them:
#
#   . "$(dirname "$0")/lib/cli_harness.sh"
#
# It lives under tests/lib/ so that the ctest glob of tests/cli_*.sh does not
# take it for a test. It provides:
#   T              a fresh temporary directory, removed when the script exits
#                  (made writable first: some tests take write permission
#                  away); a script with more to clean up appends a command
#                  to the array CLI_AT_EXIT, run before T is removed;
#   pass, fail     the counts of passed and failed checks;
#   ok [WHAT]      counts a passed check; with CLI_VERBOSE=1 (set before
#                  sourcing) it prints "ok   WHAT". Always returns 0, so
#                  `test && ok || bad ...` never counts both;
#   bad WHAT       counts a failed check and prints "FAIL: WHAT";
#   expect STATUS NEEDLE -- COMMAND...
#                  runs COMMAND (stdout to $T/out, stderr to $T/err) and
#                  checks its exit status and, unless NEEDLE is empty, that
#                  stderr contains NEEDLE;
#   cli_summary    prints the closing line "NAME: N passed, N failed" (NAME
#                  is CLI_NAME, by default the script's name) and returns
#                  non-zero when a check failed, so it can end a script.
# Exit status 77 is ctest's skip code in this project (SKIP_RETURN_CODE).

CLI_NAME=${CLI_NAME:-$(basename "$0" .sh)}
T=$(mktemp -d "${TMPDIR:-/tmp}/$CLI_NAME.XXXXXX")
CLI_AT_EXIT=()
pass=0
fail=0

cli_exit_() {
  local cmd
  for cmd in "${CLI_AT_EXIT[@]}"; do
    $cmd
  done
  chmod -R u+w "$T" 2>/dev/null
  rm -rf "$T"
}
trap cli_exit_ EXIT

ok() {
  pass=$((pass + 1))
  if [ "${CLI_VERBOSE:-0}" = 1 ] && [ $# -gt 0 ]; then
    echo "ok   $*"
  fi
  return 0
}

bad() {
  echo "FAIL: $*"
  fail=$((fail + 1))
  return 0
}

expect() {
  local want=$1 needle=$2
  shift 3
  "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    bad "$* -> exit $got, want $want; stderr: $(head -c 400 "$T/err")"
  elif [ -n "$needle" ] && ! grep -qF -- "$needle" "$T/err"; then
    bad "$* -> stderr lacks '$needle': $(head -c 400 "$T/err")"
  else
    ok
  fi
}

cli_summary() {
  echo "$CLI_NAME: $pass passed, $fail failed"
  [ "$fail" = 0 ]
}
