#!/usr/bin/env bash
# Installs, from Debian's archive only, what skydb needs, and the unprivileged users the daemon
# (skydb) and the test suite (skydbtest) run PostgreSQL as. Run as root on Debian 12.
#   tools/install-deps.sh run    what tools/run.sh needs: build skydb, libskydb and the example
#                                app, run them on PostgreSQL 15 (and curl, redis-cli, psql to
#                                look at them)
#   tools/install-deps.sh [test] all of that, and what the test suite, the fuzzers, the
#                                package (lintian, help2man for the manual pages) and the
#                                client/HA compatibility tests need (CI)
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "tools/install-deps.sh: run as root (it installs packages and creates users)" >&2
  exit 1
fi
set_name="${1:-test}"
run_packages=(
  build-essential cmake pkg-config
  libpq-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libsystemd-dev libcli11-dev
  nlohmann-json3-dev libcpp-httplib-dev libarchive-dev libzstd-dev libssl-dev
  libpqxx-dev liblua5.1-0-dev
  postgresql-15 postgresql-client-15 redis-tools curl
)
test_packages=(
  git libgtest-dev libgmock-dev
  redis-server tcl python3 python3-redis python3-psycopg2 golang-go golang-github-gomodule-redigo-dev
  clang libclang-rt-14-dev clang-format
  prometheus systemd
  patchelf zstd lz4 openssl
  lintian help2man man-db
  php-cli php-redis ruby-redis python3-django python3-django-redis-sessions
  prometheus-redis-exporter pgbouncer
  patroni etcd-server etcd-client postgresql-15-auto-failover pg-auto-failover-cli
  postgresql-15-ip4r
)
case "$set_name" in
  run) packages=("${run_packages[@]}") ;;
  test)
    packages=("${run_packages[@]}" "${test_packages[@]}")
    # Node.js and npm for the client compatibility matrix (tests/compat/node): the machine's
    # own Node.js when it has one (the image's NodeSource build bundles npm and conflicts with
    # Debian's npm package), else Debian's.
    if ! command -v npm >/dev/null 2>&1; then
      packages+=(nodejs npm)
    fi
    ;;
  *) echo "tools/install-deps.sh: unknown set '$set_name' (run or test)" >&2; exit 2 ;;
esac
# Nothing to fetch when every package is installed already: no index update, no apt run.
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q '^install ok installed$' ||
    missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "tools/install-deps.sh: installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's postgresql-common may start a cluster of its own on port 5432; skydb does not use
# it and never touches it.

ensure_user() {
  if ! id -u "$1" >/dev/null 2>&1; then
    useradd --system --user-group --home-dir "$2" --no-create-home \
      --shell /usr/sbin/nologin "$1"
  fi
}
ensure_user skydb /var/lib/skydb
if [ "$set_name" = test ]; then ensure_user skydbtest /nonexistent; fi
