#!/usr/bin/env bash
# Installs everything skydb needs to build, test and run, from Debian's archive only, and the
# unprivileged users the daemon (skydb) and the test suite (skydbtest) run PostgreSQL as.
# Run as root on Debian 12.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "tools/install-deps.sh: run as root (it installs packages and creates users)" >&2
  exit 1
fi

packages=(
  build-essential cmake pkg-config git
  libpq-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libsystemd-dev libcli11-dev
  nlohmann-json3-dev libcpp-httplib-dev libarchive-dev libzstd-dev libssl-dev
  libgtest-dev libgmock-dev
  libpqxx-dev curl
  postgresql-15 postgresql-client-15 redis-server redis-tools python3 python3-redis
  python3-psycopg2 golang-go
  clang libclang-rt-14-dev clang-format
  prometheus systemd
  patchelf zstd lz4
  php-cli php-redis ruby-redis python3-django python3-django-redis-sessions
  prometheus-redis-exporter pgbouncer
  patroni etcd-server etcd-client postgresql-15-auto-failover pg-auto-failover-cli
  postgresql-15-ip4r
)
# Node.js and npm for the client compatibility matrix (tests/compat/node): the machine's own
# Node.js when it has one (the image's NodeSource build bundles npm and conflicts with Debian's
# npm package), else Debian's.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

# Debian's postgresql-common may start a cluster of its own on port 5432; skydb does not use
# it and never touches it.

ensure_user() {
  if ! id -u "$1" >/dev/null 2>&1; then
    useradd --system --user-group --home-dir "$2" --no-create-home \
      --shell /usr/sbin/nologin "$1"
  fi
}
ensure_user skydb /var/lib/skydb
ensure_user skydbtest /nonexistent
