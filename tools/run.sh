#!/usr/bin/env bash
# Installs dependencies, builds skydb and starts it in production mode on the default data dir
# (/var/lib/skydb): root prepares it, then skydb and PostgreSQL run as the system user skydb.
# Run as root on Debian 12.
# Stop it with Ctrl-C (or SIGTERM); run it again to reuse the same cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh release
exec ./build/src/skydb serve --embed --data-dir /var/lib/skydb --user skydb "$@"
