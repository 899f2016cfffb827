#!/usr/bin/env bash
# Builds skydb's .deb with CPack from a release build, installs it with `dpkg -i`, checks what
# an operator gets (skydb --version from /usr/bin, the conffile, units that pass
# systemd-analyze verify, the skydb user, the docs), then purges it so the machine is left as
# it was. Run as root on Debian 12 after tools/install-deps.sh.
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

if dpkg-query -W skydb >/dev/null 2>&1; then
  echo "package-test: a skydb package is already installed; not touching it" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O2 without debug info: what a distribution ships (it strips symbols), quicker to compile.
  cmake -S . -B "$build" -DSKYDB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
    -DSKYDB_BUILD_TESTS=OFF -DSKYDB_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target skydb
[ "$build_only" -eq 1 ] && exit 0
rm -f "$build"/skydb_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb="$(ls "$build"/skydb_*.deb)"
version="$(dpkg-deb -f "$deb" Version)"
echo "package-test: built $deb"

# postinst's tmpfiles create /var/lib/skydb; take it away again if it was not there before.
had_state_dir=no
[ -d /var/lib/skydb ] && had_state_dir=yes
cleanup() {
  dpkg --purge skydb >/dev/null 2>&1 || true
  if [ "$had_state_dir" = no ]; then rmdir /var/lib/skydb 2>/dev/null || true; fi
}
trap cleanup EXIT
dpkg -i "$deb" >/dev/null

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

cleanup
trap - EXIT
[ ! -e /usr/bin/skydb ] || fail "/usr/bin/skydb is still there after dpkg --purge"
[ ! -e /etc/skydb/skydb.toml ] || fail "/etc/skydb/skydb.toml is still there after dpkg --purge"
echo "package-test: $deb installs, runs skydb --version ($version), verifies and purges cleanly"
