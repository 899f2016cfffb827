#!/usr/bin/env bash
# Builds skydb's .debs with CPack from a release build (skydb, and libskydb-dev: the C++
# embedding API), installs them with `dpkg -i`, checks what an operator gets (skydb --version
# from /usr/bin, the conffile, units that pass systemd-analyze verify, the skydb user, the docs)
# and what a C++ developer gets (the headers, pkg-config and CMake packages, a consumer that
# compiles against them, examples/app built against the installed package and run end to end
# by tools/app-smoke.sh), then purges them so the machine is left as it was. Run as root on
# Debian 12 after tools/install-deps.sh.
#   tools/package-test.sh [--build-only] [BUILD_DIR]   # default build-package; "build" reuses
#                                                      # a release build
# --build-only compiles skydb and stops (tools/test.sh runs it while the tests run).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi
build="${1:-build-package}"

for package in skydb libskydb-dev; do
  if dpkg-query -W "$package" >/dev/null 2>&1; then
    echo "package-test: a $package package is already installed; not touching it" >&2
    exit 1
  fi
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O2 without debug info: what a distribution ships (it strips symbols), quicker to compile;
  # unity batches as in tools/build.sh's sanitizer flavours (the same batches, already built).
  cmake -S . -B "$build" -DSKYDB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
    -DSKYDB_BUILD_TESTS=OFF -DSKYDB_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target skydb skydb_shared
[ "$build_only" -eq 1 ] && exit 0
rm -f "$build"/skydb_*.deb "$build"/libskydb-dev_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb="$(ls "$build"/skydb_*.deb)"
dev_deb="$(ls "$build"/libskydb-dev_*.deb)"
version="$(dpkg-deb -f "$deb" Version)"
echo "package-test: built $deb and $dev_deb"

# postinst's tmpfiles create /var/lib/skydb; take it away again if it was not there before.
had_state_dir=no
[ -d /var/lib/skydb ] && had_state_dir=yes
scratch="$(mktemp -d /tmp/skydb-package-test.XXXXXX)"
cleanup() {
  dpkg --purge libskydb-dev skydb >/dev/null 2>&1 || true
  rm -rf "$scratch"
  if [ "$had_state_dir" = no ]; then rmdir /var/lib/skydb 2>/dev/null || true; fi
}
trap cleanup EXIT
dpkg -i "$deb" "$dev_deb" >/dev/null

fail() { echo "package-test: $*" >&2; exit 1; }
[ "$(/usr/bin/skydb --version)" = "skydb $version" ] || fail "/usr/bin/skydb --version did not say skydb $version"
dpkg-query -W -f='${Conffiles}\n' skydb | grep -q '^ /etc/skydb/skydb.toml ' ||
  fail "/etc/skydb/skydb.toml is not a conffile"
/usr/bin/skydb --config /etc/skydb/skydb.toml config check >/dev/null ||
  fail "the installed /etc/skydb/skydb.toml does not pass skydb config check"
getent passwd skydb >/dev/null || fail "no skydb user after installation"
for f in /usr/lib/sysusers.d/skydb.conf /usr/lib/tmpfiles.d/skydb.conf \
         /usr/share/doc/skydb/operations.md /usr/share/doc/skydb/grafana-dashboard.json; do
  [ -f "$f" ] || fail "$f is missing"
done
bash tools/verify-units.sh /lib/systemd/system /usr/bin/skydb

# The C++ embedding API (docs/cpp-api.md), as a developer gets it from libskydb-dev.
dpkg -L skydb | grep -q '/libskydb\.so\.[0-9]*$' || fail "the skydb package has no libskydb.so.N"
for f in /usr/include/skydb/embedded.h /usr/include/skydb/config.h; do
  [ -f "$f" ] || fail "$f is missing"
done
[ "$(pkg-config --modversion skydb)" = "$version" ] || fail "pkg-config does not find skydb $version"
cat >"$scratch/consumer.cc" <<'CC'
#include <skydb/embedded.h>
#include <cstdio>
int main() {  // run as root: the installed library refuses, and says why
  skydb::EmbeddedOptions options;
  options.data_dir = "/nonexistent/never";
  auto skydb = skydb::Embedded::Start(options);
  if (skydb.ok() || skydb.error().code != skydb::ErrorCode::kPermission) return 1;
  std::puts(skydb.error().message.c_str());
  return 0;
}
CC
# shellcheck disable=SC2046  # pkg-config's words are separate arguments
c++ -std=c++20 -o "$scratch/consumer" "$scratch/consumer.cc" $(pkg-config --cflags --libs skydb)
refusal="$("$scratch/consumer")" || fail "a pkg-config consumer of libskydb did not refuse root"
grep -q 'PostgreSQL will not run as root' <<<"$refusal" ||
  fail "a pkg-config consumer of libskydb did not refuse root with the reason"
cmake -S examples/app -B "$scratch/app" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/app" -j"$(nproc)" >/dev/null
bash tools/app-smoke.sh "$scratch/app/app" skydbtest

cleanup
trap - EXIT
[ ! -e /usr/bin/skydb ] || fail "/usr/bin/skydb is still there after dpkg --purge"
[ ! -e /etc/skydb/skydb.toml ] || fail "/etc/skydb/skydb.toml is still there after dpkg --purge"
[ ! -e /usr/include/skydb ] || fail "/usr/include/skydb is still there after dpkg --purge"
echo "package-test: $deb and $dev_deb install, run skydb --version ($version), build and run" \
  "the example app, verify and purge cleanly"
