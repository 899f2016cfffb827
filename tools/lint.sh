#!/usr/bin/env bash
# The checks on the tree itself, as CI runs them (tools/test.sh): every C++ file formatted as
# .clang-format says (tools/format.sh --check); every file and function within its size bound,
# with the sizes printed (tools/code_sizes.py); bench/results within its cap, free of profiler
# dumps and holding only results the docs cite; every library of src/ layered by its include path;
# no clock read outside src/os but the protocol server's shutdown drain.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/format.sh --check
python3 tools/code_sizes.py
# bench/results holds the results the docs cite, not profiler dumps or every run ever made.
results_kib=$(du -sk bench/results | cut -f1)
if [ "$results_kib" -gt 2560 ] || find bench/results -name '*.callgrind' | grep -q .; then
  echo "tools/lint.sh: bench/results holds ${results_kib} KiB (at most 2560) or a profiler dump:" \
       "keep only what docs/performance.md cites; profiles belong outside the repository" >&2
  exit 1
fi
# ...and only what the docs cite: each result's run stamp (…THHMMSSZ) appears in docs/ or README.md.
uncited=()
for entry in bench/results/*; do
  stamp=$(basename "$entry" | grep -oE 'T[0-9]{6}Z' | head -1 || true)
  if [ -z "$stamp" ] || ! grep -rqF -- "$stamp" docs README.md; then uncited+=("$entry"); fi
done
if [ "${#uncited[@]}" -gt 0 ]; then
  echo "tools/lint.sh: bench/results holds results no doc cites: ${uncited[*]};" \
       "cite them (docs/performance.md) or leave them out of the repository" >&2
  exit 1
fi
echo "lint: bench/results holds ${results_kib} KiB (at most 2560), no profiler dumps, all cited"
# Every library of src/ sees its own folder, include/ and the headers other libraries export,
# never all of src/ (cmake/SkydbLayering.cmake; docs/architecture.md).
for cmakelists in src/*/CMakeLists.txt; do
  if ! grep -q '^skydb_layer(' "$cmakelists"; then
    echo "tools/lint.sh: $cmakelists declares a library without skydb_layer()" >&2
    exit 1
  fi
done
if grep -n 'target_include_directories.*PROJECT_SOURCE_DIR}/src' src/CMakeLists.txt src/*/CMakeLists.txt; then
  echo "tools/lint.sh: a library puts all of src/ on its include path; use skydb_layer()" >&2
  exit 1
fi
echo "lint: every library of src/ is layered"
# Time comes from the Env's Clock (include/skydb/env.h): only src/os reads the system's clocks,
# and the protocol server's shutdown drain, on purpose (docs/architecture.md, "Threads").
clock_reads=$(grep -rnE '(steady|system|high_resolution)_clock::now|clock_gettime|gettimeofday' \
                src --include='*.cc' --include='*.h' |
              grep -vE '^src/os/|^src/resp/(server|loop)\.cc:' || true)
if [ -n "$clock_reads" ]; then
  echo "$clock_reads" >&2
  echo "tools/lint.sh: the lines above read a clock outside src/os; use the Env's Clock" >&2
  exit 1
fi
echo "lint: every clock read goes through the Env's Clock"
