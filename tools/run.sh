#!/usr/bin/env bash
# The app's production mode, on this machine: installs what running needs (tools/install-deps.sh
# run), builds only skydb, its C++ embedding library (libskydb) and the example web app
# (examples/app) -- no test, no benchmark --, installs skydb and libskydb into a staging prefix
# the way the packages would (/opt/skydb-example/usr), and runs the app as the system user skydb
# (PostgreSQL refuses root):
#   app --embed --data-dir /var/lib/skydb-app --listen 127.0.0.1:8080
# The app gets a private, tuned PostgreSQL for its own tables and the durable session store, in
# one process. Each phase prints the seconds since the start, the last one when the app answers
# HTTP. Extra arguments go to the app. Run as root on Debian 12. Stop it with Ctrl-C (or
# SIGTERM): the store is drained and PostgreSQL stopped; run it again to reuse the data.
set -euo pipefail
cd "$(dirname "$0")/.."
phase() { echo "== tools/run.sh: $1 at ${SECONDS}s"; }
bash tools/install-deps.sh run
phase "packages installed"
# -O2 without debug info, unity batches: the quickest build of what runs (tools/build.sh
# release builds everything, tests included, into the same build/).
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 -DSKYDB_BUILD_TESTS=OFF \
  -DSKYDB_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
phase "configured"
cmake --build build -j"$(nproc)" --target skydb skydb_shared
phase "skydb and libskydb built"
# World-readable and outside this clone, which the user skydb may not be able to reach.
stage=/opt/skydb-example
rm -rf "$stage"
DESTDIR="$stage" cmake --install build --prefix /usr >/dev/null
cmake -S examples/app -B build-app -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$stage/usr" \
  "${launcher[@]}" >/dev/null
cmake --build build-app -j"$(nproc)"
install -m 0755 build-app/app "$stage/usr/bin/skydb-example-app"
phase "example app built"
dir=/var/lib/skydb-app
install -d -m 0700 -o skydb -g skydb "$dir"
cd "$dir"
# Says when the app first answers (/visits reads its table: the store and its database are up);
# gives up after 10 minutes.
(
  for _ in $(seq 1 3000); do
    if curl -fsS -o /dev/null http://127.0.0.1:8080/visits 2>/dev/null; then
      phase "the app answers on http://127.0.0.1:8080/"
      exit 0
    fi
    sleep 0.2
  done
) &
exec setpriv --reuid=skydb --regid=skydb --init-groups env HOME="$dir" \
  "$stage/usr/bin/skydb-example-app" --embed --data-dir "$dir" --listen 127.0.0.1:8080 "$@"
