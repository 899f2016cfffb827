#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs dependencies, builds with ASan+UBSan and
# -Werror, runs every unit and integration test (real PostgreSQL 15, run as the unprivileged
# user skydbtest). Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh asan
export SKYDB_TEST_USER=skydbtest
# A leak in a child that execs is not ours to report; real leaks in skydb still fail.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd build-asan
ctest --output-on-failure --timeout 600 -j2
