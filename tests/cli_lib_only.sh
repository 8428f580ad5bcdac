#!/usr/bin/env bash
# libsched builds alone: `cmake -DLSCHED_BUILD_SIM=OFF` with a C compiler and
# libc only.
#   - Nothing under libsched/ or policies/ (the library and the Slurm
#     advisor, a plain consumer of its API) includes a simulator header: every
#     quoted include resolves inside libsched/ or policies/, and no include
#     names a header of sim/ or traces/ or of the simulator's libraries.
#   - A fresh build tree configured with LSCHED_BUILD_SIM=OFF never runs
#     pkg-config (a pkg-config that records its calls is first on PATH) and
#     its CMakeCache.txt mentions none of GSL, cJSON, libcsv, zlib and Check.
#   - It builds libsched and no simulator target, and its own ctest passes
#     and runs the library's tests: test_lib_core (no Check), cli_headers and
#     cli_install (install to a temporary prefix, then build
#     tests/install_consumer against it through pkg-config and the CMake
#     package).
# Environment: SCHEDSIM_SOURCE_DIR (repository root; defaults to the parent
# of this script's folder). CC overrides the compiler.
set -u
src=${SCHEDSIM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
for tool in cmake cc; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found"
    exit 77
  fi
done
CLI_VERBOSE=1
. "$(dirname "$0")/lib/cli_harness.sh"

# ------------------------------------------------------ include layering
# Headers of the simulator and of the libraries only the simulator may use.
find "$src/sim" "$src/traces" -name '*.h' -printf '%f\n' | sort -u >"$T/sim_headers"
printf '%s\n' cJSON.h cjson/cJSON.h csv.h zlib.h check.h gsl >>"$T/sim_headers"
layering_bad=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  while IFS= read -r line; do
    name=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*)[>"].*/\1/' <<<"$line")
    case $line in
    *'"'*)
      # A quoted include must resolve inside the library's own folders.
      found=""
      for d in "$dir" "$src/libsched/include" "$src/libsched/src"; do
        if [ -f "$d/$name" ]; then
          found=$(readlink -f "$d/$name")
          break
        fi
      done
      case $found in
      "$src"/libsched/* | "$src"/policies/*) ;;
      *)
        bad "${file#"$src"/}: #include \"$name\" does not resolve inside libsched/ or policies/ (${found:-not found})"
        layering_bad=1
        ;;
      esac
      ;;
    *)
      # The simulator's include folders are flat, so its headers are named
      # by their plain names; <libsched/mig.h> is not sim/mig/mig.h.
      if grep -qxF -- "$name" "$T/sim_headers" ||
         [ "${name%%/*}" = gsl ]; then
        bad "${file#"$src"/}: #include <$name> is a simulator header or dependency"
        layering_bad=1
      fi
      ;;
    esac
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$file")
done < <(find "$src/libsched" "$src/policies" -name '*.[ch]' | sort)
[ $layering_bad = 0 ] && ok "libsched/ and policies/ include no sim/ or traces/ header"

# ------------------------------------------------- configure without sim
b=$T/build
mkdir -p "$T/bin"
# A pkg-config that records that it was called: LSCHED_BUILD_SIM=OFF must
# not need one.
cat >"$T/bin/pkg-config" <<EOF
#!/bin/sh
echo "\$*" >>"$T/pkg-config-called"
exit 1
EOF
chmod +x "$T/bin/pkg-config"
if out=$(PATH=$T/bin:$PATH cmake -S "$src" -B "$b" -DLSCHED_BUILD_SIM=OFF \
           -DCMAKE_BUILD_TYPE=Release -DLSCHED_WERROR=ON 2>&1); then
  ok "configured with -DLSCHED_BUILD_SIM=OFF"
else
  bad "cmake -DLSCHED_BUILD_SIM=OFF failed:"
  printf '%s\n' "$out" | tail -20 | sed 's/^/     > /'
  cli_summary
  exit 1
fi
if [ -e "$T/pkg-config-called" ]; then
  bad "configuring without the simulator ran pkg-config: $(head -3 "$T/pkg-config-called")"
else
  ok "pkg-config never ran"
fi
# The source and build directories are left out of the lines first: a
# checkout in a directory named like a dependency (say, ci-check) must not
# count as one.
hits=$(grep -n . "$b/CMakeCache.txt" | sed -e "s#$src##g" -e "s#$b##g" |
  grep -iE 'gsl|cjson|csv|zlib|check|pkg-?config' || true)
if [ -z "$hits" ]; then
  ok "CMakeCache.txt mentions none of GSL, cJSON, libcsv, zlib, Check, pkg-config"
else
  bad "CMakeCache.txt mentions a simulator dependency:"
  printf '%s\n' "$hits" | head -10 | sed 's/^/     > /'
fi

# ------------------------------------------------------------------ build
if out=$(cmake --build "$b" -j2 2>&1); then
  ok "built"
else
  bad "build failed:"
  printf '%s\n' "$out" | tail -30 | sed 's/^/     > /'
  cli_summary
  exit 1
fi
for f in libsched/libsched.a tests/test_lib_core; do
  [ -e "$b/$f" ] && ok "built $f" || bad "no $f in the build tree"
done
[ -n "$(find "$b/libsched" -maxdepth 1 -name 'libsched.so.*' -print -quit)" ] &&
  ok "built libsched.so" || bad "no libsched.so in the build tree"
for f in schedsim lsched-slurm-replay; do
  [ ! -e "$b/$f" ] && ok "no $f without the simulator" || bad "$f was built with LSCHED_BUILD_SIM=OFF"
done

# ------------------------------------------------------------------ ctest
(cd "$b" && ctest -N) >"$T/tests" 2>&1
for t in test_lib_core cli_headers cli_install; do
  grep -qE "Test +#[0-9]+: $t\$" "$T/tests" && ok "ctest has $t" || bad "ctest lacks $t"
done
if (cd "$b" && ctest --output-on-failure --no-tests=error) >"$T/ctest" 2>&1; then
  ok "ctest: $(grep -E 'tests passed' "$T/ctest")"
else
  bad "ctest of the libsched-only build failed:"
  grep -vE '^ *(Start|[0-9]+/[0-9]+ Test.*Passed)' "$T/ctest" | tail -40 | sed 's/^/     > /'
fi

cli_summary
