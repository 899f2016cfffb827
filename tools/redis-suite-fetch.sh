#!/usr/bin/env bash
# Redis 7.0.15's source tree, for its own test suite (tests/compat/redis_suite_compat.py and
# tools/redis-scripting-suite.sh): Debian's source package of the redis-server that
# tools/install-deps.sh installs, fetched with apt from the machine's own Debian mirror (a
# deb-src copy of its sources, in a private apt state: the system's apt configuration is not
# changed), its upstream tarball checked against the sha256 below and unpacked under
# $SKYDB_REDIS_SUITE_CACHE (default /var/cache/skydb). A complete unpack is reused.
#   tools/redis-suite-fetch.sh        prints the tree's directory
set -euo pipefail
cache="${SKYDB_REDIS_SUITE_CACHE:-/var/cache/skydb}"
version=7.0.15
sha256=4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982
tree="$cache/redis-$version"
if [ -f "$tree/tests/test_helper.tcl" ]; then
  echo "$tree"
  exit 0
fi
umask 022
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sources" "$work/lists/partial" "$work/archives/partial"
# The machine's Debian sources, as deb-src.
found=0
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  sed 's/^Types: .*/Types: deb-src/' "$f" >"$work/sources/$(basename "$f")"
  found=1
done
if [ -f /etc/apt/sources.list ]; then
  sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$work/sources/list.list"
  [ -s "$work/sources/list.list" ] && found=1
fi
if [ "$found" = 0 ]; then
  echo "tools/redis-suite-fetch.sh: no apt sources under /etc/apt to fetch Redis's source from" >&2
  exit 1
fi
apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work/sources"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
          -o "APT::Sandbox::User=root" -qq)
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only redis >/dev/null)
orig="$work/redis_$version.orig.tar.gz"
if [ ! -f "$orig" ]; then
  echo "tools/redis-suite-fetch.sh: apt did not fetch redis_$version.orig.tar.gz" >&2
  exit 1
fi
echo "$sha256  $orig" | sha256sum --check --quiet
tar -xzf "$orig" -C "$work"
rm -rf "$tree.partial"
mv "$work/redis-$version" "$tree.partial"
mv "$tree.partial" "$tree"
echo "$tree"
