#!/usr/bin/env bash
# Installs libpolite into a temporary prefix and builds a consumer twice:
# through the pkg-config file and through the CMake package. Fails when the
# installed headers, library, libpolite.pc or politeConfig.cmake are unusable.
. "$(dirname "$0")/lib.sh"
BUILD=$POLITE_BUILD

check_quiet "cmake --install" cmake --install "$BUILD" --prefix "$TMP/prefix"

# A sanitized libpolite needs a sanitized consumer (the ASan runtime must come
# first), exactly as a user's program would.
SAN=
grep -q '^POLITE_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null &&
  SAN="-fsanitize=address,undefined"

cat >"$TMP/consumer.c" <<'C'
#include <polite/polite.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  polite_retry_after ra;
  polite_retry_after_parse("12", 2, 0, &ra);
  if (!POLITE_VERSION_AT_LEAST(0, 1, 0) ||
      strcmp(polite_version(), POLITE_VERSION_STR) != 0 ||
      polite_retry_after_delay_ms(&ra, 0, -1) != 12000)
    return 1;
  puts("consumer ok");
  return 0;
}
C

# Every public header is installed and stands alone (request.h and redact.h
# were split out of batch.h; a consumer may include any one of them first).
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for h in "$SRC"/include/polite/*.h; do
  n=$(basename "$h")
  check "installed $n compiles alone" bash -c "printf '#include <polite/$n>\\n' | cc -xc -fsyntax-only -Wall -Werror -I'$TMP/prefix/include' -"
done

export PKG_CONFIG_PATH="$TMP/prefix/lib/pkgconfig"
check_quiet "pkg-config knows libpolite" pkg-config --exists libpolite
check_quiet "pkg-config version matches the header" \
  bash -c "[ \"\$(pkg-config --modversion libpolite)\" = \"\$(sed -n 's/.*POLITE_VERSION_STR \"\\(.*\\)\"/\\1/p' '$TMP/prefix/include/polite/version.h')\" ]"
check_quiet "build with pkg-config" bash -c "cc $SAN '$TMP/consumer.c' \$(pkg-config --cflags --libs libpolite) -Wl,-rpath,'$TMP/prefix/lib' -o '$TMP/pc' && '$TMP/pc'"

mkdir -p "$TMP/cm"
cat >"$TMP/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(polite 0.1 REQUIRED)
add_executable(consumer $TMP/consumer.c)
target_link_libraries(consumer polite::polite)
CM
check_quiet "build with find_package(polite)" bash -c "cmake -S '$TMP/cm' -B '$TMP/cm/b' -DCMAKE_PREFIX_PATH='$TMP/prefix' -DCMAKE_C_FLAGS='$SAN' && cmake --build '$TMP/cm/b' && '$TMP/cm/b/consumer'"

finish
