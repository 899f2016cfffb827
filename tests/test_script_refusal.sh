#!/usr/bin/env bash
# tools/test.sh as root from a clone under /tmp (writable by every user) or under a directory
# other users cannot enter: exit 2, a message that names the directory and the fix, and nothing
# installed or built. Skipped (77) unless root.
set -euo pipefail
[ "$(id -u)" = 0 ] || exit 77
source_dir=$1
clone=$(mktemp -d /tmp/skydb-untrusted-XXXXXX)
chmod 0755 "$clone"  # so /tmp above it is what is refused
trap 'rm -rf "$clone" "${closed:-}"' EXIT
closed=$(mktemp -d "$source_dir/.refusal-XXXXXX")  # mode 0700, below the source tree
fail() { echo "FAIL: $1; it printed: $out" >&2; exit 1; }
# $1 where the clone goes, $2 what the message must say of the directory
expect_refusal() {
  mkdir -p "$1/repo/tools"
  cp "$source_dir/tools/test.sh" "$1/repo/tools/test.sh"
  set +e
  out=$(bash "$1/repo/tools/test.sh" 2>&1)
  code=$?
  set -e
  [ "$code" = 2 ] || fail "exit code $code, not 2"
  grep -qF "$2" <<<"$out" || fail "no \"$2\""
  grep -qF "git clone <repository> /srv/skydb" <<<"$out" || fail "no fix named"
  ! grep -q "== tools/test.sh" <<<"$out" || fail "it went on past the check"
  echo "ok: $out"
}
expect_refusal "$clone" "under /tmp (owner uid 0, mode 1777), which someone other than root can write"
expect_refusal "$closed" "under $closed (owner uid 0, mode 700), which other users cannot enter"
