#!/usr/bin/env bash
# Configures and builds one flavour of skydb: `release` (build/) or `asan` (build-asan/,
# AddressSanitizer + UndefinedBehaviorSanitizer). Warnings are errors in both.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
case "$flavour" in
  release) dir=build; extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  # Benchmarks are not built for the sanitizer flavour: they never run there. Line-table debug
  # info (-g1: stack traces keep file and line) compiles faster than -g; CI builds this flavour
  # on every run. (-O1 would too, but GCC 12 then warns maybe-uninitialized falsely.)
  asan) dir=build-asan; extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKYDB_SANITIZE=ON
                                "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
                                -DSKYDB_BUILD_BENCH=OFF) ;;
  *) echo "tools/build.sh: unknown flavour '$flavour' (release|asan)" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -DSKYDB_WERROR=ON "${extra[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
