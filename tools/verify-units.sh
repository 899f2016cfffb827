#!/usr/bin/env bash
# Checks skydb's systemd units with `systemd-analyze verify`: skydb.service and an instance of
# each template (skydb@demo.service, skydb-app@demo.service). Any output at all (an unknown key is only a warning to
# systemd) fails the check.
#   tools/verify-units.sh UNIT_DIR BINARY
# UNIT_DIR holds skydb.service, skydb@.service and skydb-app@.service (packaging/, or /lib/systemd/system once
# installed); BINARY replaces /usr/bin/skydb in ExecStart when it is not installed there.
set -euo pipefail
unit_dir="$1"
binary="$2"
if ! command -v systemd-analyze >/dev/null; then
  echo "verify-units: systemd-analyze is missing (apt-get install systemd)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$unit_dir/skydb.service" "$work/skydb.service"
cp "$unit_dir/skydb@.service" "$work/skydb@demo.service"
units=(skydb.service skydb@demo.service)
# packaging/ always has it (the ctest check); a package built before it existed may not.
if [ -f "$unit_dir/skydb-app@.service" ]; then
  cp "$unit_dir/skydb-app@.service" "$work/skydb-app@demo.service"
  units+=(skydb-app@demo.service)
else
  echo "verify-units: $unit_dir has no skydb-app@.service; not checked" >&2
fi
for unit in "${units[@]}"; do sed -i "s|/usr/bin/skydb|$binary|g" "$work/$unit"; done
status=0
for unit in "${units[@]}"; do
  out="$(cd "$work" && systemd-analyze verify "./$unit" 2>&1)" || status=1
  if [ -n "$out" ]; then
    echo "verify-units: $unit:" >&2
    echo "$out" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "verify-units: ${units[*]} pass systemd-analyze verify"
exit "$status"
