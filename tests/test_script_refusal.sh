#!/usr/bin/env bash
# tools/test.sh as root from a clone under /tmp (writable by every user): exit 2, a message that
# names the directory and the fix, and nothing installed or built. Skipped (77) unless root.
set -euo pipefail
[ "$(id -u)" = 0 ] || exit 77
source_dir=$1
clone=$(mktemp -d /tmp/skydb-untrusted-XXXXXX)
trap 'rm -rf "$clone"' EXIT
mkdir -p "$clone/repo/tools"
cp "$source_dir/tools/test.sh" "$clone/repo/tools/test.sh"
set +e
out=$(bash "$clone/repo/tools/test.sh" 2>&1)
code=$?
set -e
fail() { echo "FAIL: $1; it printed: $out" >&2; exit 1; }
[ "$code" = 2 ] || fail "exit code $code, not 2"
grep -q "this clone is under /tmp (owner uid 0, mode 1777)" <<<"$out" || fail "no directory named"
grep -q "git clone <repository> /root/skydb" <<<"$out" || fail "no fix named"
! grep -q "== tools/test.sh" <<<"$out" || fail "it went on past the check"
echo "ok: $out"
