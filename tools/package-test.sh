#!/usr/bin/env bash
# Builds skydb's .debs with CPack from a release build (skydb; libskydb0, the C++ embedding
# API; libskydb-dev, its headers), checks them with lintian (no error; every warning one that
# docs/operations.md justifies), installs them with `dpkg -i`, checks what an operator gets
# (skydb --version from /usr/bin, the conffile 0640 root:skydb, units that pass systemd-analyze
# verify, the skydb user, the docs, copyright and changelog of each package, the hardened
# binaries, manual pages that match --help) and what a C++ developer gets (the headers,
# pkg-config and CMake packages, a consumer that compiles against them, examples/app built
# against the installed package and run end to end by tools/app-smoke.sh), then purges them so
# the machine is left as it was. Run as root on Debian 12 after tools/install-deps.sh.
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
packages=(skydb libskydb0 libskydb-dev)

for package in "${packages[@]}"; do
  if dpkg-query -W "$package" >/dev/null 2>&1; then
    echo "package-test: a $package package is already installed; not touching it" >&2
    exit 1
  fi
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O2 without debug info: what a distribution ships (it strips symbols), quicker to compile;
  # unity batches as in tools/build.sh's sanitizer flavours (the same batches, already built).
  # SKYDB_HARDENING (on by default) adds dpkg-buildflags' hardening; SKYDB_MAN the pages. The
  # /usr prefix gives GNUInstallDirs Debian's multiarch libdir (lib/x86_64-linux-gnu).
  cmake -S . -B "$build" -DSKYDB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INSTALL_PREFIX=/usr \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
    -DSKYDB_BUILD_TESTS=OFF -DSKYDB_BUILD_BENCH=OFF -DSKYDB_MAN=ON >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target skydb skydb_shared skydb_man
[ "$build_only" -eq 1 ] && exit 0
rm -f "$build"/skydb_*.deb "$build"/libskydb0_*.deb "$build"/libskydb-dev_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb="$(ls "$build"/skydb_*.deb)"
lib_deb="$(ls "$build"/libskydb0_*.deb)"
dev_deb="$(ls "$build"/libskydb-dev_*.deb)"
version="$(dpkg-deb -f "$deb" Version)"
echo "package-test: built $deb, $lib_deb and $dev_deb"

fail() { echo "package-test: $*" >&2; exit 1; }

# lintian: no error; each warning's tag, and each tag a package overrides, is one
# docs/operations.md names and justifies.
lintian_out="$(lintian --fail-on none --display-level '>=warning' "$deb" "$lib_deb" "$dev_deb" \
  2>&1 | grep -v '^N: ' || true)"
echo "$lintian_out" | sed 's/^/package-test: lintian: /'
if grep -q '^E: ' <<<"$lintian_out"; then fail "lintian reports errors"; fi
while read -r tag; do
  [ -n "$tag" ] || continue
  grep -q "\`$tag\`" docs/operations.md ||
    fail "lintian warns $tag, and docs/operations.md does not say why that is right"
done < <({
  sed -n 's/^W: [^:]*: \([a-z0-9-]*\).*/\1/p' <<<"$lintian_out"
  sed -n 's/^[a-z0-9-]*: \([a-z0-9-]*\).*/\1/p' packaging/debian/*/lintian-overrides
} | sort -u)
[ "$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)" = "$version" ] ||
  fail "packaging/debian/changelog's newest entry is not version $version"
dpkg-deb -I "$lib_deb" shlibs | grep -qx "libskydb 0 libskydb0 (>= $version)" ||
  fail "libskydb0's shlibs is not 'libskydb 0 libskydb0 (>= $version)'"

# postinst's tmpfiles create /var/lib/skydb; take it away again if it was not there before.
had_state_dir=no
[ -d /var/lib/skydb ] && had_state_dir=yes
scratch="$(mktemp -d /tmp/skydb-package-test.XXXXXX)"
cleanup() {
  dpkg --purge libskydb-dev libskydb0 skydb >/dev/null 2>&1 || true
  rm -rf "$scratch"
  if [ "$had_state_dir" = no ]; then rmdir /var/lib/skydb 2>/dev/null || true; fi
}
trap cleanup EXIT
dpkg -i "$deb" "$lib_deb" "$dev_deb" >/dev/null

[ "$(/usr/bin/skydb --version)" = "skydb $version" ] || fail "/usr/bin/skydb --version did not say skydb $version"
dpkg-query -W -f='${Conffiles}\n' skydb | grep -q '^ /etc/skydb/skydb.toml ' ||
  fail "/etc/skydb/skydb.toml is not a conffile"
[ "$(stat -c '%a %U:%G' /etc/skydb/skydb.toml)" = "640 root:skydb" ] ||
  fail "/etc/skydb/skydb.toml is $(stat -c '%a %U:%G' /etc/skydb/skydb.toml), not 640 root:skydb"
/usr/bin/skydb --config /etc/skydb/skydb.toml config check >/dev/null ||
  fail "the installed /etc/skydb/skydb.toml does not pass skydb config check"
getent passwd skydb >/dev/null || fail "no skydb user after installation"
for f in /usr/lib/sysusers.d/skydb.conf /usr/lib/tmpfiles.d/skydb.conf \
         /usr/share/doc/skydb/operations.md /usr/share/doc/skydb/grafana-dashboard.json; do
  [ -f "$f" ] || fail "$f is missing"
done
for package in "${packages[@]}"; do
  cmp -s "/usr/share/doc/$package/copyright" packaging/debian/copyright ||
    fail "/usr/share/doc/$package/copyright is not packaging/debian/copyright"
  cmp -s <(zcat "/usr/share/doc/$package/changelog.gz") packaging/debian/changelog ||
    fail "/usr/share/doc/$package/changelog.gz is not packaging/debian/changelog"
done
bash tools/verify-units.sh /lib/systemd/system /usr/bin/skydb
# The pages are what the installed binary's --help says, one per command.
bash packaging/man/check-man.sh /usr/bin/skydb /usr/share/man/man1
man -w skydb-serve >/dev/null || fail "man does not find skydb-serve(1)"

# dpkg-buildflags' hardening on what the packages ship (hardening=+all): PIE, full RELRO,
# stack protector, fortified libc calls.
lib="$(dpkg -L libskydb0 | grep '/libskydb\.so\.[0-9]*$')" || fail "libskydb0 has no libskydb.so.N"
# readelf's output is read whole: grep -q would close the pipe early (pipefail, SIGPIPE).
for elf in /usr/bin/skydb "$lib"; do
  segments="$(readelf -lW "$elf")"
  dynamic="$(readelf -dW "$elf")"
  symbols="$(readelf -sW --dyn-syms "$elf")"
  grep -q GNU_RELRO <<<"$segments" || fail "$elf has no RELRO segment"
  grep -q BIND_NOW <<<"$dynamic" || fail "$elf is not linked -z now"
  grep -q '__stack_chk_fail' <<<"$symbols" ||
    fail "$elf has no stack protector (-fstack-protector-strong)"
  grep -q '__[a-z]*_chk@' <<<"$symbols" ||
    fail "$elf calls no fortified libc function (-D_FORTIFY_SOURCE=2)"
done
grep -q 'Flags:.*PIE' <<<"$(readelf -dW /usr/bin/skydb)" ||
  fail "/usr/bin/skydb is not a position-independent executable"

# The C++ embedding API (docs/cpp-api.md), as a developer gets it from libskydb-dev.
if grep -q libskydb <<<"$(dpkg -L skydb)"; then
  fail "the skydb package ships libskydb (it is libskydb0's)"
fi
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
[ ! -e "$lib" ] || fail "$lib is still there after dpkg --purge"
echo "package-test: $deb, $lib_deb and $dev_deb pass lintian, install, run skydb --version" \
  "($version), build and run the example app, verify and purge cleanly"
