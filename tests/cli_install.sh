#!/usr/bin/env bash
# Installed libsched: `cmake --install` of the build tree into a temporary
# prefix, then
#   - the files a consumer needs are there (libsched.so.<major> with that
#     SONAME, libsched.a, include/libsched/libsched.h, libsched.pc, the CMake
#     package);
#   - every exported dynamic symbol of libsched.so starts with lsched_ (and
#     none with lsched__, the prefix of internal helpers), and every global
#     symbol defined in libsched.a starts with lsched_;
#   - tests/install_consumer/consumer.c, copied outside the source tree, is
#     built once through pkg-config and once through the CMake package
#     (find_package(libsched): libsched::libsched and libsched_static); each
#     binary runs, places jobs with best-fit and checks the results, and the
#     shared ones load the installed libsched.so;
#   - pkg-config still works after the installed tree is moved;
#   - libsched/README.md carries consumer.c verbatim (the example the README shows is
#     the one this test compiles and runs).
# The header self-containment checks are tests/cli_headers.sh.
#
# Environment: SCHEDSIM_SOURCE_DIR (repository root), SCHEDSIM_BIN (schedsim in
# the build tree, whose folder is the build tree; or LSCHED_BUILD_DIR).
set -u

src=${SCHEDSIM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
if [ -n "${LSCHED_BUILD_DIR:-}" ]; then
  build=$LSCHED_BUILD_DIR
elif [ -n "${SCHEDSIM_BIN:-}" ]; then
  build=$(dirname "$SCHEDSIM_BIN")
else
  build=$src/build
fi
for tool in cmake pkg-config nm readelf cc; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found"
    exit 77
  fi
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "FAIL: no CMake build tree at $build (set LSCHED_BUILD_DIR)"
  exit 1
fi

CLI_VERBOSE=1
. "$(dirname "$0")/lib/cli_harness.sh"
tmp=$T

# A sanitizer build installs an instrumented libsched: its consumers must link
# the sanitizer runtime too.
san=()
if grep -q '^LSCHED_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  # shellcheck disable=SC2054 # the comma belongs to the flag
  san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
fi

major=$(sed -n 's/^#define LSCHED_VERSION_MAJOR \([0-9]*\).*/\1/p' \
        "$src/libsched/include/libsched/libsched.h")
version=$(sed -n 's/^#define LSCHED_VERSION_STRING "\(.*\)".*/\1/p' \
          "$src/libsched/include/libsched/libsched.h")

# ------------------------------------------------------------------ install
prefix=$tmp/prefix
if ! out=$(cmake --install "$build" --prefix "$prefix" 2>&1); then
  printf '%s\n' "$out" | tail -20
  bad "cmake --install $build --prefix $prefix"
  exit 1
fi
ok "cmake --install into $prefix"

so=$(find "$prefix" -name "libsched.so.$major" | head -1)
libdir=$(dirname "${so:-$prefix/lib/x}")
[ -n "$so" ] && ok "installed ${so#"$prefix"/}" || bad "no libsched.so.$major under $prefix"
for f in "$libdir/libsched.a" "$libdir/libsched.so" "$libdir/pkgconfig/libsched.pc" \
         "$libdir/cmake/libsched/libschedConfig.cmake" \
         "$libdir/cmake/libsched/libschedConfigVersion.cmake" \
         "$prefix/include/libsched/libsched.h"; do
  [ -e "$f" ] && ok "installed ${f#"$prefix"/}" || bad "missing ${f#"$prefix"/}"
done
if [ -n "$so" ]; then
  soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libsched.so.$major" ] && ok "SONAME $soname" ||
    bad "SONAME is '$soname', want libsched.so.$major"
fi

# ------------------------------------------------------------------ symbols
if [ -n "$so" ]; then
  nm -D --defined-only "$so" | awk '{print $NF}' | sort -u >"$tmp/dynsyms"
  n=$(wc -l <"$tmp/dynsyms")
  badsyms=$(grep -v '^lsched_[a-z0-9]' "$tmp/dynsyms" || true)
  if [ -n "$badsyms" ]; then
    bad "exported symbols without the lsched_ prefix (or internal lsched__):"
    printf '%s\n' "$badsyms" | head -20 | sed 's/^/     > /'
  elif [ "$n" -lt 10 ] || ! grep -qx lsched_cluster_create "$tmp/dynsyms" ||
       ! grep -qx lsched_version_string "$tmp/dynsyms"; then
    bad "only $n exported symbols, or lsched_cluster_create/lsched_version_string missing"
  else
    ok "$n exported dynamic symbols, all lsched_*"
  fi
fi
if [ -e "$libdir/libsched.a" ]; then
  # Global symbols defined by the static archive: a static consumer links them
  # into its own namespace, so they must carry the prefix as well (the
  # sanitizers' own instrumentation symbols, __odr_asan.* and the like, in a
  # sanitizer build aside).
  badsyms=$(nm -g --defined-only "$libdir/libsched.a" 2>/dev/null |
            awk 'NF == 3 {print $3}' | grep -v '^lsched_' |
            grep -Ev '^_{1,3}(odr_asan|asan|ubsan|sancov)' | sort -u || true)
  [ -z "$badsyms" ] && ok "global symbols of libsched.a all start with lsched_" || {
    bad "libsched.a defines global symbols without the lsched_ prefix:"
    printf '%s\n' "$badsyms" | head -20 | sed 's/^/     > /'
  }
fi

# -------------------------------------------------------- consumer sources
cons=$tmp/consumer-src
mkdir -p "$cons"
cp "$src/tests/install_consumer/consumer.c" "$src/tests/install_consumer/CMakeLists.txt" "$cons/"

# loads_installed BINARY: the shared libsched it loads is the installed one.
loads_installed() {
  local lib
  lib=$(ldd "$1" 2>/dev/null | awk '/libsched\.so/ {print $3}')
  [ -n "$lib" ] && [ "$(readlink -f "$lib")" = "$(readlink -f "$so")" ]
}

# run_consumer NAME BINARY [shared]
run_consumer() {
  local name=$1 bin=$2 out
  if ! out=$("$bin" 2>&1); then
    bad "$name: consumer failed:"
    printf '%s\n' "$out" | sed 's/^/     > /'
    return
  fi
  if ! printf '%s\n' "$out" | grep -qx "libsched $version: ok"; then
    bad "$name: unexpected output:"
    printf '%s\n' "$out" | sed 's/^/     > /'
    return
  fi
  if [ "${3:-}" = shared ] && ! loads_installed "$bin"; then
    bad "$name: does not load $so ($(ldd "$bin" | grep libsched))"
    return
  fi
  ok "$name: ran, placed 4 jobs with best-fit${3:+ (loads the installed libsched.so.$major)}"
}

# --------------------------------------------------------- via pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
pcver=$(pkg-config --modversion libsched 2>&1)
[ "$pcver" = "$version" ] && ok "pkg-config --modversion libsched = $pcver" ||
  bad "pkg-config --modversion libsched: '$pcver', want $version"
# shellcheck disable=SC2046
if out=$(cc -std=c11 -pedantic -Wall -Wextra -Werror "${san[@]}" -o "$tmp/consumer_pc" \
           "$cons/consumer.c" $(pkg-config --cflags --libs libsched) \
           "-Wl,-rpath,$libdir" 2>&1); then
  run_consumer "pkg-config build" "$tmp/consumer_pc" shared
else
  bad "pkg-config build: cc failed:"
  printf '%s\n' "$out" | sed 's/^/     > /'
fi

# ------------------------------------------------------ via CMake package
cb=$tmp/consumer-build
if out=$(cmake -S "$cons" -B "$cb" -DCMAKE_PREFIX_PATH="$prefix" \
           -DCMAKE_C_FLAGS="-Wall -Wextra -Werror ${san[*]}" 2>&1) &&
   out=$(cmake --build "$cb" 2>&1); then
  run_consumer "CMake package, libsched::libsched" "$cb/consumer" shared
  run_consumer "CMake package, libsched::libsched_static" "$cb/consumer_static"
  if ldd "$cb/consumer_static" 2>/dev/null | grep -q libsched; then
    bad "consumer_static loads a shared libsched"
  fi
else
  bad "CMake package build failed:"
  printf '%s\n' "$out" | tail -20 | sed 's/^/     > /'
fi
# A version the package does not satisfy must be refused.
mkdir -p "$tmp/badver"
cat >"$tmp/badver/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(badver LANGUAGES C)
find_package(libsched $((major + 1)).0 REQUIRED)
EOF
if cmake -S "$tmp/badver" -B "$tmp/badver/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
  bad "find_package(libsched $((major + 1)).0) accepted version $version"
else
  ok "find_package(libsched $((major + 1)).0) refuses $version"
fi

# ------------------------------------------------------- moved install tree
mv "$prefix" "$tmp/moved"
export PKG_CONFIG_PATH=$tmp/moved/${libdir#"$prefix"/}/pkgconfig
# shellcheck disable=SC2046
if out=$(cc -std=c11 "${san[@]}" -o "$tmp/consumer_moved" "$cons/consumer.c" \
           $(pkg-config --cflags --libs libsched) 2>&1) &&
   out=$(LD_LIBRARY_PATH=$tmp/moved/${libdir#"$prefix"/} "$tmp/consumer_moved" 2>&1); then
  ok "pkg-config build after moving the installed tree"
else
  bad "pkg-config build after moving the installed tree:"
  printf '%s\n' "$out" | sed 's/^/     > /'
fi

# ----------------------------------------------------------- README example
# The README shows consumer.c between the markers below; it must be the file
# this test compiled.
awk '/<!-- begin tests\/install_consumer\/consumer.c -->/ {on = 1; next}
     /<!-- end tests\/install_consumer\/consumer.c -->/ {on = 0}
     on && !/^```/' "$src/libsched/README.md" >"$tmp/readme_example.c"
if [ ! -s "$tmp/readme_example.c" ]; then
  bad "libsched/README.md has no consumer.c example between the begin/end markers"
elif diff -u "$src/tests/install_consumer/consumer.c" "$tmp/readme_example.c" >"$tmp/readme.diff"; then
  ok "libsched/README.md example is tests/install_consumer/consumer.c"
else
  bad "libsched/README.md example differs from tests/install_consumer/consumer.c:"
  sed 's/^/     > /' "$tmp/readme.diff" | head -30
fi

cli_summary
