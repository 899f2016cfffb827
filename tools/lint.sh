#!/usr/bin/env bash
# clang-tidy over skydb's sources with the curated .clang-tidy, using build/'s compile database.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || bash tools/build.sh release
git ls-files 'src/*.cc' | xargs -P"$(nproc)" -n4 clang-tidy -p build --quiet
