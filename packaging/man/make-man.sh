#!/usr/bin/env bash
# Writes skydb's manual pages from the CLI's own --help with help2man, so that they cannot
# drift from it: skydb.1 and one page per command and subcommand (skydb-serve.1,
# skydb-config-check.1, ...), each gzipped as Debian ships them. The commands are those the
# "Subcommands:" lists of --help name, so a new command gets its page without an edit here.
# The date is the newest entry's of packaging/debian/changelog (reproducible builds).
#   packaging/man/make-man.sh SKYDB_BINARY OUT_DIR [INDEX]
# INDEX, when given, receives one line per page: its name, a tab, the words after "skydb".
# packaging/man/check-man.sh fails when the pages and --help disagree.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
skydb="$(realpath "$1")"
out="$2"
index="${3:-/dev/null}"
version="$("$skydb" --version | awk '{print $2}')"
changed="$(sed -n 's/^ -- .*>  //p' "$here/../debian/changelog" | head -1)"
SOURCE_DATE_EPOCH="$(date -d "$changed" +%s)"
export SOURCE_DATE_EPOCH
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
rm -f "$out"/skydb*.1.gz

# "NAME  DESCRIPTION" for each subcommand `skydb WORDS... --help` lists.
subcommands() {
  "$skydb" "$@" --help | awk '/^Subcommands:/ { on = 1; next }
    on && /^  [a-z]/ { name = $1; sub(/^  [^ ]+ +/, ""); print name "\t" $0; next }
    on { on = 0 }'
}

# One page: $1 the page's name (skydb-config-check), $2 the description, then the words
# after "skydb" that select the command. help2man runs a wrapper that runs skydb under the
# name "skydb", so the page's synopsis says "skydb config check", not the build path.
page() {
  local name="$1" description="$2"
  shift 2
  local wrapper="$work/$name"
  printf '#!/bin/bash\nexec -a skydb %q' "$skydb" >"$wrapper"
  [ "$#" -gt 0 ] && printf ' %q' "$@" >>"$wrapper"
  printf ' "$@"\n' >>"$wrapper"
  chmod +x "$wrapper"
  {
    echo '[SEE ALSO]'
    if [ "$name" = skydb ]; then
      for other in $see_also; do echo ".BR $other (1),"; done
    else
      echo '.BR skydb (1),'
    fi
    echo 'and the documentation in'
    echo '.IR /usr/share/doc/skydb/ :'
    echo 'operations.md (the package, the units, the metrics), configuration.md (every key).'
    if [ "$name" = skydb ]; then
      echo '[FILES]'
      echo '.TP'
      echo '.I /etc/skydb/skydb.toml'
      echo 'The configuration (a conffile, mode 0640, group skydb). Every key is listed by'
      echo '.BR "skydb config keys" .'
      echo '[ENVIRONMENT]'
      echo '.TP'
      echo '.B SKYDB_CONFIG'
      echo 'The configuration file when --config is not given.'
    fi
  } >"$work/$name.h2m"
  help2man --no-info --no-discard-stderr --section=1 --version-string="$version" \
    --source="skydb $version" --manual="skydb manual" --name="$description" \
    --include="$work/$name.h2m" --output="$work/$name.1" "$wrapper"
  gzip -9n <"$work/$name.1" >"$out/$name.1.gz"
}

# Every command path, depth first: "serve", "config", "config check", ...
commands=()
walk() {
  local line name
  while IFS=$'\t' read -r name line; do
    commands+=("$*${*:+ }$name"$'\t'"$line")
    walk "$@" "$name"
  done < <(subcommands "$@")
}
walk
see_also=""
for entry in "${commands[@]}"; do
  words="${entry%%$'\t'*}"
  see_also+="skydb-${words// /-} "
done
page skydb "$("$skydb" --help | head -1 | sed 's/^skydb: //')"
printf 'skydb\t\n' >"$index"
for entry in "${commands[@]}"; do
  words="${entry%%$'\t'*}"
  printf 'skydb-%s\t%s\n' "${words// /-}" "$words" >>"$index"
  # shellcheck disable=SC2086  # the words select the command
  page "skydb-${words// /-}" "${entry#*$'\t'}" $words
done
