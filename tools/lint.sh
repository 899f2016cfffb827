#!/usr/bin/env bash
# The checks on the tree itself, as CI runs them (tools/test.sh): every C++ file formatted as
# .clang-format says (tools/format.sh --check); every file and function within its size bound,
# with the sizes printed (tools/code_sizes.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/format.sh --check
python3 tools/code_sizes.py
