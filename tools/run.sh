#!/usr/bin/env bash
# The app's production mode, on this machine: installs dependencies, builds skydb and its C++
# embedding library (libskydb), installs them into a staging prefix the way the packages would
# (/opt/skydb-example/usr), builds the example web app (examples/app) against that installed
# library, and runs it as the system user skydb (PostgreSQL refuses root):
#   app --embed --data-dir /var/lib/skydb-app --listen 127.0.0.1:8080
# The app gets a private, tuned PostgreSQL for its own tables and the durable session store, in
# one process. Extra arguments go to the app. Run as root on Debian 12. Stop it with Ctrl-C (or
# SIGTERM): the store is drained and PostgreSQL stopped; run it again to reuse the data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh release
# World-readable and outside this clone, which the user skydb may not be able to reach.
stage=/opt/skydb-example
rm -rf "$stage"
DESTDIR="$stage" cmake --install build --prefix /usr >/dev/null
cmake -S examples/app -B build-app -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$stage/usr" \
  >/dev/null
cmake --build build-app -j"$(nproc)"
install -m 0755 build-app/app "$stage/usr/bin/skydb-example-app"
dir=/var/lib/skydb-app
install -d -m 0700 -o skydb -g skydb "$dir"
cd "$dir"
exec setpriv --reuid=skydb --regid=skydb --init-groups env HOME="$dir" \
  "$stage/usr/bin/skydb-example-app" --embed --data-dir "$dir" --listen 127.0.0.1:8080 "$@"
