#!/usr/bin/env bash
# Header test: every public header of libsched compiles on its own, after
# <pthread.h>, before <sched.h>, twice in one unit (include guard), as C11
# with -pedantic -Werror and, when a C++ compiler exists, as C++. It also
# checks that no header declares anything in POSIX's sched_/SCHED_ namespace.
#
# Environment: SCHEDSIM_SOURCE_DIR (the repository root; defaults to the
# parent of this script's folder). CC / CXX override the compilers.
set -u

src=${SCHEDSIM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
inc=$src/libsched/include
cc=${CC:-cc}
cxx=${CXX:-c++}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "SKIP: no C compiler ($cc)"
  exit 77
fi
shopt -s nullglob
headers=("$inc"/libsched/*.h)
if [ ${#headers[@]} -eq 0 ]; then
  echo "FAIL: no headers under $inc/libsched"
  exit 1
fi

CLI_VERBOSE=1
. "$(dirname "$0")/lib/cli_harness.sh"
tmp=$T

cflags=(-std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only "-I$inc")
cxxflags=(-std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only "-I$inc")
have_cxx=0
if command -v "$cxx" >/dev/null 2>&1; then
  have_cxx=1
else
  echo "note: no C++ compiler ($cxx); C++ checks skipped"
fi

# compile LANG NAME SOURCE-TEXT
compile() {
  local lang=$1 name=$2 text=$3 file out
  if [ "$lang" = c ]; then
    file=$tmp/$name.c
    printf '%s\n' "$text" >"$file"
    out=$("$cc" "${cflags[@]}" "$file" 2>&1)
  else
    file=$tmp/$name.cpp
    printf '%s\n' "$text" >"$file"
    out=$("$cxx" "${cxxflags[@]}" "$file" 2>&1)
  fi
  if [ $? -eq 0 ] && [ -z "$out" ]; then
    ok "$lang: $name"
  else
    bad "$lang: $name"
    printf '%s\n' "$text" | sed 's/^/     | /'
    printf '%s\n' "$out" | sed 's/^/     > /'
  fi
}

for h in "${headers[@]}"; do
  rel=libsched/$(basename "$h")
  base=$(basename "$h" .h)
  echo "== $rel"
  alone="#include <$rel>"
  after_pthread="#include <pthread.h>
#include <$rel>"
  before_sched="#include <$rel>
#include <sched.h>"
  twice="#include <$rel>
#include <$rel>"
  # A unit that uses the header's main entry points, so that a header whose
  # declarations only parse when unused also fails.
  use=""
  if [ "$base" = libsched ]; then
    use="#include <$rel>
int lsched_header_probe(void);
int lsched_header_probe(void) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT;
  lsched_node_spec s = LSCHED_NODE_SPEC_INIT;
  lsched_request r = LSCHED_REQUEST_INIT;
  (void)o;
  (void)s;
  return lsched_request_validate(&r) == LSCHED_OK &&
         lsched_strerror(LSCHED_ENOFIT) != 0 ? 0 : 1;
}"
  elif [ "$base" = policy_sdk ]; then
    # The SDK's structs, INIT macros and static inline accessors.
    use="#include <$rel>
int lsched_header_probe(const lsched_cluster *c, const lsched_request *r);
int lsched_header_probe(const lsched_cluster *c, const lsched_request *r) {
  lsched_view v = LSCHED_VIEW_INIT;
  lsched_observer o = LSCHED_OBSERVER_INIT;
  (void)o;
  if (lsched_cluster_view(c, &v) != LSCHED_OK || v.n == 0)
    return -1;
  const lsched_node *nd = lsched_view_node(&v, v.order[0]);
  const int *g = lsched_view_gpus(&v, nd);
  const lsched_mig_gpu_view *m = lsched_view_mig_gpus(&v, nd);
  int k = lsched_node_mig_kind(nd, 1);
  return (int)lsched_fit_score(&v, v.order[0], r, 0) +
         lsched_node_eff_milli(nd, r) + (g ? g[0] : 0) +
         (m ? lsched_mig_gpu_start(m, k > 0 ? k : 1) : 0) +
         lsched_mig_slices_of(k) + (int)lsched_mig_starts_of(1) +
         lsched_request_mig_kind(r);
}"
  fi
  for lang in c cxx; do
    [ "$lang" = cxx ] && [ $have_cxx -eq 0 ] && continue
    compile $lang "$base-alone" "$alone"
    compile $lang "$base-after-pthread" "$after_pthread"
    compile $lang "$base-before-sched" "$before_sched"
    compile $lang "$base-twice" "$twice"
    [ -n "$use" ] && compile $lang "$base-use" "$use"
  done

  # Identifiers (outside comments) that start with sched_ / SCHED_ belong to
  # POSIX <sched.h>; libsched's own names start with lsched_ / LSCHED_.
  hits=$("$cc" -std=c11 -fpreprocessed -dD -E -P "$h" 2>/dev/null |
         grep -nE '(^|[^A-Za-z0-9_])(sched_|SCHED_)[A-Za-z0-9_]*' || true)
  if [ -n "$hits" ]; then
    bad "namespace: $rel uses the POSIX sched_/SCHED_ prefix:"
    printf '%s\n' "$hits" | sed 's/^/     > /'
  else
    ok "namespace: no sched_/SCHED_ identifiers in $rel"
  fi
done

cli_summary
