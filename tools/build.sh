#!/usr/bin/env bash
# Configures and builds one flavour of skydb. Warnings are errors in every flavour.
#   release  build/       the default compiler (GCC on Debian 12), RelWithDebInfo, everything
#   asan     build-asan/  clang, AddressSanitizer + UndefinedBehaviorSanitizer, everything (the
#                         benchmarks only compiled, so that they cannot rot); clang also runs
#                         -Wthread-safety (cmake/SkydbWarnings)
#   tsan     build-tsan/  clang, ThreadSanitizer, only the store's and the protocol's unit tests
#                         (unit_store, unit_resp): the code whose threads share state
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
# CI builds the sanitizer flavours on every run, so they are built for compile time: -O1 (what
# the sanitizers' own docs suggest), line-table debug info (-g1: stack traces keep file and
# line), and unity batches of 16 files (each batch parses the heavy headers once).
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                 -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                 -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
targets=()
case "$flavour" in
  # tools/run.sh shares build/ with tests and benchmarks off: this flavour turns them back on.
  release) dir=build; extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKYDB_BUILD_TESTS=ON
                             -DSKYDB_BUILD_BENCH=ON -DCMAKE_UNITY_BUILD=OFF
                             "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG") ;;
  # The benchmarks never run here; the asan flavour compiles them so an interface change that
  # breaks one fails CI.
  asan) dir=build-asan; extra=("${sanitizer_flags[@]}" -DSKYDB_SANITIZE=ON -DSKYDB_BUILD_BENCH=ON) ;;
  tsan) dir=build-tsan; extra=("${sanitizer_flags[@]}" -DSKYDB_TSAN=ON -DSKYDB_BUILD_BENCH=OFF)
        targets=(--target unit_store unit_resp) ;;
  *) echo "tools/build.sh: unknown flavour '$flavour' (release|asan|tsan)" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -DSKYDB_WERROR=ON "${extra[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
