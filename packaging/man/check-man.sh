#!/usr/bin/env bash
# Fails when skydb's manual pages and its --help disagree:
#   - the pages in PAGES_DIR are not what packaging/man/make-man.sh makes from SKYDB_BINARY's
#     --help now (a page left from an older binary, a page edited by hand);
#   - a command has no page, or a page has no command;
#   - an option a command's --help names is not on its page, or the page's OPTIONS name one
#     its --help does not (read from the roff source, whatever help2man's layout).
#   packaging/man/check-man.sh SKYDB_BINARY PAGES_DIR
# Run by ctest (the build's pages) and by tools/package-test.sh (the installed ones).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
skydb="$1"
pages="$2"
fresh="$(mktemp -d)"
trap 'rm -rf "$fresh"' EXIT
bash "$here/make-man.sh" "$skydb" "$fresh/man" "$fresh/index"
failed=0
fail() {
  echo "check-man: $*" >&2
  failed=1
}

want="$(cd "$fresh/man" && ls)"
have="$(cd "$pages" && ls skydb*.1.gz)"
if [ "$want" != "$have" ]; then
  fail "the pages in $pages are not one per command:"
  diff <(echo "$want") <(echo "$have") >&2 || true
fi

# --long options in roff text: "\-" is a hyphen, font changes and "\/" "\," are dropped.
roff_options() {
  sed -e 's/\\f[BIRP]//g' -e 's/\\[,\/]//g' -e 's/\\-/-/g' |
    grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}
while IFS=$'\t' read -r name words; do
  page="$name.1.gz"
  [ -f "$pages/$page" ] || continue
  if ! cmp -s <(zcat "$fresh/man/$page") <(zcat "$pages/$page"); then
    fail "$page differs from what --help says now:"
    diff <(zcat "$pages/$page") <(zcat "$fresh/man/$page") >&2 || true
  fi
  # shellcheck disable=SC2086  # the words select the command
  help_options="$("$skydb" $words --help </dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)"
  page_options="$(zcat "$pages/$page" | roff_options)"
  listed_options="$(zcat "$pages/$page" | sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/p' | roff_options)"
  missing="$(comm -23 <(echo "$help_options") <(echo "$page_options"))"
  extra="$(comm -13 <(echo "$help_options") <(echo "$listed_options"))"
  [ -z "$missing" ] || fail "$page lacks what 'skydb $words --help' names: $missing"
  [ -z "$extra" ] || fail "$page lists what 'skydb $words --help' does not: $extra"
done <"$fresh/index"
[ "$failed" -eq 0 ] || exit 1
echo "check-man: $(echo "$want" | wc -l) pages match skydb --help"
