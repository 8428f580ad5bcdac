#!/usr/bin/env bash
# Installed libsched: `cmake --install` of the build tree into a temporary
# prefix, then
#   - the files a consumer needs are there (the shared library with its
#     SONAME: libsched.so.0.<minor> while the major is 0, libsched.so.<major>
#     from 1.0; libsched.a, include/libsched/libsched.h, libsched.pc, the
#     CMake package);
#   - every exported dynamic symbol of libsched.so starts with lsched_ (and
#     none with lsched__, the prefix of internal helpers), and every global
#     symbol defined in libsched.a starts with lsched_;
#   - symbol versions (libsched/cmake/libsched.map): every exported symbol
#     carries a LIBSCHED_<major>.<minor> version node, the names the map
#     lists under a node are exported with that node, the map has a node for
#     this release, and a consumer's references carry the versions;
#   - tests/install_consumer/consumer.c, copied outside the source tree, is
#     built once through pkg-config and once through the CMake package
#     (find_package(libsched): libsched::libsched and libsched_static); each
#     binary runs, checks the library's version at run time
#     (lsched_version_check), places jobs with best-fit and checks the
#     results, and the shared ones load the installed libsched.so; the same
#     for consumer_cxx.cpp, the C++11 consumer (every header, every _INIT
#     macro under -Wall -Wextra -Werror), when a C++ compiler exists;
#   - the ABI: tests/lib/test_abi.c (frozen struct layouts, _INIT macros,
#     version rules, the fill-up-to-the-caller's-version rule) built against
#     the installed headers and library, and run;
#   - find_package refuses incompatible versions (another major; in 0.x
#     another minor);
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
for tool in cmake pkg-config nm readelf objdump cc; do
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
minor=$(sed -n 's/^#define LSCHED_VERSION_MINOR \([0-9]*\).*/\1/p' \
        "$src/libsched/include/libsched/libsched.h")
# The SONAME's version: major.minor in 0.x (each minor may change the ABI).
if [ "$major" -eq 0 ]; then sover=$major.$minor; else sover=$major; fi
cxx=${CXX:-c++}
have_cxx=0
command -v "$cxx" >/dev/null 2>&1 && have_cxx=1
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

so=$(find "$prefix" -name "libsched.so.$sover" | head -1)
libdir=$(dirname "${so:-$prefix/lib/x}")
[ -n "$so" ] && ok "installed ${so#"$prefix"/}" || bad "no libsched.so.$sover under $prefix"
for f in "$libdir/libsched.a" "$libdir/libsched.so" "$libdir/pkgconfig/libsched.pc" \
         "$libdir/cmake/libsched/libschedConfig.cmake" \
         "$libdir/cmake/libsched/libschedConfigVersion.cmake" \
         "$prefix/include/libsched/libsched.h"; do
  [ -e "$f" ] && ok "installed ${f#"$prefix"/}" || bad "missing ${f#"$prefix"/}"
done
if [ -n "$so" ]; then
  soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libsched.so.$sover" ] && ok "SONAME $soname" ||
    bad "SONAME is '$soname', want libsched.so.$sover"
fi

# ------------------------------------------------------------------ symbols
if [ -n "$so" ]; then
  # (nm prints a versioned name as NAME@@LIBSCHED_x.y: the name alone here.)
  nm -D --defined-only "$so" | awk '{n = $NF; sub(/@.*/, "", n); print n}' |
    sort -u >"$tmp/dynsyms"
  n=$(wc -l <"$tmp/dynsyms")
  # (LIBSCHED_x.y themselves are the version nodes' definitions.)
  badsyms=$(grep -v '^lsched_[a-z0-9]' "$tmp/dynsyms" |
            grep -Ev '^LIBSCHED_[0-9]+\.[0-9]+$' || true)
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

# ---------------------------------------------------------- symbol versions
# objdump -T: "ADDR FLAGS SECTION SIZE VERSION NAME" for each dynamic symbol.
map=$src/libsched/cmake/libsched.map
if [ -n "$so" ]; then
  objdump -T "$so" | awk '$NF ~ /^lsched_/ && $3 != "*UND*" {print $NF, $(NF-1)}' |
    sort -u >"$tmp/symver"
  unversioned=$(awk '$2 !~ /^LIBSCHED_[0-9]+\.[0-9]+$/' "$tmp/symver")
  if [ -n "$unversioned" ] || [ ! -s "$tmp/symver" ]; then
    bad "exported symbols without a LIBSCHED_<major>.<minor> version:"
    printf '%s\n' "$unversioned" | head -20 | sed 's/^/     > /'
  else
    ok "$(wc -l <"$tmp/symver") exported symbols, each with a version node ($(awk '{print $2}' "$tmp/symver" | sort -u | tr '\n' ' '))"
  fi
  # The names the map lists under each node are exported with that node (a
  # listed name missing from the library, or with another node, is a slip).
  awk '/^LIBSCHED_[0-9.]+ *\{/ {node = $1}
       /^ *lsched_[a-z0-9_]+;/ {sub(/^ */, ""); sub(/;.*/, ""); print $0, node}' \
    "$map" | sort -u >"$tmp/mapped"
  missing=$(comm -23 "$tmp/mapped" "$tmp/symver")
  if [ -n "$missing" ] || [ ! -s "$tmp/mapped" ]; then
    bad "symbols listed in libsched.map but not exported with that version:"
    printf '%s\n' "$missing" | head -20 | sed 's/^/     > /'
  else
    ok "$(wc -l <"$tmp/mapped") symbols exported with the node libsched.map lists them in"
  fi
  nodes=" $(awk '/^LIBSCHED_[0-9.]+ *\{/ {print $1}' "$map" | tr '\n' ' ')"
  case "$nodes" in
    *" LIBSCHED_$major.$minor "*) ok "libsched.map has a node for this release (LIBSCHED_$major.$minor)" ;;
    *) bad "libsched.map has no LIBSCHED_$major.$minor node (nodes:$nodes)" ;;
  esac
fi

# -------------------------------------------------------- consumer sources
cons=$tmp/consumer-src
mkdir -p "$cons"
cp "$src/tests/install_consumer/consumer.c" "$src/tests/install_consumer/consumer_cxx.cpp" \
   "$src/tests/install_consumer/CMakeLists.txt" "$cons/"

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
  if ! printf '%s\n' "$out" | grep -Eqx "libsched $version: ok( \(C\+\+\))?"; then
    bad "$name: unexpected output:"
    printf '%s\n' "$out" | sed 's/^/     > /'
    return
  fi
  if [ "${3:-}" = shared ] && ! loads_installed "$bin"; then
    bad "$name: does not load $so ($(ldd "$bin" | grep libsched))"
    return
  fi
  ok "$name: ran and checked its placements${3:+ (loads the installed libsched.so.$sover)}"
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
# The program records the version node of every libsched symbol it uses.
if [ -x "$tmp/consumer_pc" ]; then
  refs=$(objdump -T "$tmp/consumer_pc" |
         awk '$NF ~ /^lsched_/ {v = $(NF-1); gsub(/[()]/, "", v); print $NF, v}')
  if printf '%s\n' "$refs" | grep -qx 'lsched_cluster_create LIBSCHED_0.1' &&
     printf '%s\n' "$refs" | grep -qx 'lsched_version_check LIBSCHED_0.2' &&
     ! printf '%s\n' "$refs" | awk '$2 !~ /^LIBSCHED_/' | grep -q .; then
    ok "consumer references versioned symbols (lsched_cluster_create@LIBSCHED_0.1, lsched_version_check@LIBSCHED_0.2, ...)"
  else
    bad "consumer's libsched references lack versions:"
    printf '%s\n' "$refs" | head -10 | sed 's/^/     > /'
  fi
fi
if [ "$have_cxx" = 1 ]; then
  # shellcheck disable=SC2046
  if out=$("$cxx" -std=c++11 -pedantic -Wall -Wextra -Werror "${san[@]}" \
             -o "$tmp/consumer_cxx_pc" "$cons/consumer_cxx.cpp" \
             $(pkg-config --cflags --libs libsched) "-Wl,-rpath,$libdir" 2>&1); then
    run_consumer "pkg-config build, C++" "$tmp/consumer_cxx_pc" shared
  else
    bad "pkg-config build, C++: $cxx failed:"
    printf '%s\n' "$out" | sed 's/^/     > /'
  fi
else
  echo "note: no C++ compiler ($cxx); C++ consumer skipped"
fi

# --------------------------------------------------------------------- ABI
# The frozen layouts and version rules, against what was installed.
mkdir -p "$tmp/abi"
cp "$src/tests/lib/test_abi.c" "$src/tests/lib/minitest.h" "$tmp/abi/"
# shellcheck disable=SC2046
if out=$(cc -std=c11 -Wall -Wextra -Werror "${san[@]}" -o "$tmp/abi/test_abi" \
           "$tmp/abi/test_abi.c" $(pkg-config --cflags --libs libsched) \
           "-Wl,-rpath,$libdir" 2>&1) &&
   out=$("$tmp/abi/test_abi" 2>&1); then
  ok "ABI: $(printf '%s\n' "$out" | tail -1) (tests/lib/test_abi.c on the installed headers and library)"
else
  bad "ABI check on the installed library:"
  printf '%s\n' "$out" | tail -20 | sed 's/^/     > /'
fi

# ------------------------------------------------------ via CMake package
cb=$tmp/consumer-build
if out=$(cmake -S "$cons" -B "$cb" -DCMAKE_PREFIX_PATH="$prefix" \
           -DCMAKE_C_FLAGS="-Wall -Wextra -Werror ${san[*]}" \
           -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror -pedantic ${san[*]}" 2>&1) &&
   out=$(cmake --build "$cb" 2>&1); then
  run_consumer "CMake package, libsched::libsched" "$cb/consumer" shared
  run_consumer "CMake package, libsched::libsched_static" "$cb/consumer_static"
  if [ "$have_cxx" = 1 ]; then
    run_consumer "CMake package, C++, libsched::libsched" "$cb/consumer_cxx" shared
  fi
  if ldd "$cb/consumer_static" 2>/dev/null | grep -q libsched; then
    bad "consumer_static loads a shared libsched"
  fi
else
  bad "CMake package build failed:"
  printf '%s\n' "$out" | tail -20 | sed 's/^/     > /'
fi
# Versions the package does not satisfy must be refused: another major, and
# while the major is 0 another minor (older or newer).
refuse=("$((major + 1)).0")
if [ "$major" -eq 0 ]; then
  refuse+=("0.$((minor + 1))")
  [ "$minor" -gt 0 ] && refuse+=("0.$((minor - 1))")
fi
for want in "${refuse[@]}"; do
  mkdir -p "$tmp/badver-$want"
  cat >"$tmp/badver-$want/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(badver LANGUAGES C)
find_package(libsched $want REQUIRED)
EOF
  if cmake -S "$tmp/badver-$want" -B "$tmp/badver-$want/b" \
       -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
    bad "find_package(libsched $want) accepted version $version"
  else
    ok "find_package(libsched $want) refuses $version"
  fi
done

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
