#!/usr/bin/env bash
# clang-format (the repository's .clang-format) over every C++ file under src/ include/ tests/
# bench/. `tools/format.sh` rewrites them in place; `tools/format.sh --check` changes nothing
# and fails, naming each file and line, when any file differs from its formatted self (CI runs
# this). The whole tree, not a diff against some base: the result is the same on every machine.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-i)
case "${1:-}" in
  "") ;;
  --check) mode=(--dry-run -Werror) ;;
  *) echo "tools/format.sh: unknown argument '$1' (--check or nothing)" >&2; exit 2 ;;
esac
find src include tests bench -type f \( -name '*.cc' -o -name '*.h' \) -print0 | sort -z |
  xargs -0 clang-format --style=file "${mode[@]}"
