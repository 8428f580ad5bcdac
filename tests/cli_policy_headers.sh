#!/usr/bin/env bash
# Policy SDK test: every built-in policy (policies/*.c) is written against
# the public headers only, as an outside policy would be. Each file is
# copied with the policies' own headers (policies/*.h) into a scratch folder
# (so that a relative include such as "../libsched/src/internal.h" cannot
# resolve) and compiled with `cc -fsyntax-only -std=c11 -I libsched/include`
# and no -I libsched/src. A source or policies/ header that names a private
# header (libsched/src/, internal.h, mig_internal.h) in an #include fails too,
# as does a policies/ header that is not self-contained. It also checks that
# libsched/README.md shows tests/test_policy_sdk.c's example policy verbatim.
#
# Environment: SCHEDSIM_SOURCE_DIR (the repository root; defaults to the
# parent of this script's folder). CC overrides the compiler.
set -u

src=${SCHEDSIM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
inc=$src/libsched/include
cc=${CC:-cc}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "SKIP: no C compiler ($cc)"
  exit 77
fi
shopt -s nullglob
sources=("$src"/policies/*.c)
headers=("$src"/policies/*.h)
if [ ${#sources[@]} -eq 0 ]; then
  echo "FAIL: no sources under $src/policies"
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli_policy_headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/policies"
cp "${sources[@]}" "${headers[@]}" "$tmp/policies/"

fails=0
checks=0
cflags=(-std=c11 -Wall -Wextra -Werror -fsyntax-only "-I$inc")

for f in "${sources[@]}" "${headers[@]}"; do
  name=$(basename "$f")
  checks=$((checks + 1))
  bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"][^>"]*(libsched/src/|internal\.h)' "$f" || true)
  if [ -n "$bad" ]; then
    echo "FAIL include: policies/$name names a private header:"
    printf '%s\n' "$bad" | sed 's/^/     > /'
    fails=$((fails + 1))
  else
    echo "ok   include: policies/$name names public headers only"
  fi
  checks=$((checks + 1))
  if [ "${name##*.}" = h ]; then
    unit=$tmp/policies/header_$name.c
    printf '#include "%s"\n' "$name" >"$unit"
  else
    unit=$tmp/policies/$name
  fi
  if out=$(cd "$tmp/policies" && "$cc" "${cflags[@]}" "$unit" 2>&1) &&
     [ -z "$out" ]; then
    echo "ok   compile: policies/$name with -I libsched/include only"
  else
    echo "FAIL compile: policies/$name with -I libsched/include only"
    printf '%s\n' "$out" | sed 's/^/     > /'
    fails=$((fails + 1))
  fi
done

# The README's "Writing a policy" example is tests/test_policy_sdk.c's
# (between its README example markers), verbatim.
checks=$((checks + 1))
test_src=$src/tests/test_policy_sdk.c
readme=$src/libsched/README.md
sed -n '/^\/\* README example begin \*\/$/,/^\/\* README example end \*\/$/p' \
  "$test_src" | sed '1d;$d' >"$tmp/example.test"
sed -n '/^<!-- begin tests\/test_policy_sdk.c example -->$/,/^<!-- end tests\/test_policy_sdk.c example -->$/p' \
  "$readme" | sed '1,2d' | sed '$d' | sed '$d' >"$tmp/example.readme"
if [ -s "$tmp/example.test" ] && diff -u "$tmp/example.test" "$tmp/example.readme" >"$tmp/example.diff"; then
  echo "ok   README: the example policy is tests/test_policy_sdk.c's"
else
  echo "FAIL README: the example policy differs from tests/test_policy_sdk.c's (or is missing)"
  sed 's/^/     > /' "$tmp/example.diff"
  fails=$((fails + 1))
fi

echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
