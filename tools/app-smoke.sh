#!/usr/bin/env bash
# The example app (examples/app), built against the installed libskydb-dev, run as the
# unprivileged user USER (PostgreSQL refuses root), end to end:
#   1. `app --embed --data-dir D --listen 127.0.0.1:P`: a visitor twice → counter 2;
#   2. the app restarted → the same cookie sees counter 3 and the same ~2 KB model; the visits
#      table in the app's own database has the 3 rows (psql through the contract's URL);
#   3. `app --database-url URL`: URL is the app database of a `skydb serve --embed` the test
#      runs; the store and the visits table live there.
# Every process is started here, bounded in time and stopped by its PID.
#   tools/app-smoke.sh APP_BINARY [USER]        (run as root; tools/package-test.sh calls it)
set -euo pipefail
app="$(realpath "$1")"
user="${2:-skydbtest}"
work="$(mktemp -d /tmp/skydb-app-smoke.XXXXXX)"
chown "$user:" "$work"
chmod 0755 "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    timeout 30 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "app-smoke: $*" >&2; for f in "$work"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done; exit 1; }
as_user() { setpriv --reuid="$user" --regid="$user" --init-groups -- "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_app NAME ARGS...: the app in the background as $user; waits until it serves (<= 120 s).
start_app() {
  local name="$1"; shift
  port="$(free_port)"
  (cd "$work" && HOME="$work" exec setpriv --reuid="$user" --regid="$user" --init-groups -- \
    "$app" "$@" --listen "127.0.0.1:$port" >"$work/$name.log" 2>&1) &
  app_pid=$!
  pids+=("$app_pid")
  for _ in $(seq 1 240); do
    curl -sf "http://127.0.0.1:$port/visits" >/dev/null 2>&1 && return 0
    kill -0 "$app_pid" 2>/dev/null || fail "$name exited before it served"
    sleep 0.5
  done
  fail "$name did not serve within 120 s"
}
stop_pid() {  # SIGTERM, then wait (<= 60 s) for an ordered stop and exit 0
  kill -TERM "$1"
  local status=0
  timeout 60 bash -c "while kill -0 $1 2>/dev/null; do sleep 0.2; done" || fail "PID $1 did not stop within 60 s"
  wait "$1" || status=$?
  local left=() pid
  for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || left+=("$pid"); done
  pids=("${left[@]}")  # never signalled again: the PID may be reused
  [ "$status" -eq 0 ] || fail "PID $1 exited with $status after SIGTERM"
}
# visit JAR → the response's JSON
visit() { curl -sf -b "$1" -c "$1" "http://127.0.0.1:$port/"; }
field() { python3 -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print(v if not isinstance(v,dict) else json.dumps(v,sort_keys=True))' "$1"; }

# 1. embedded
start_app embed --embed --data-dir "$work/data"
jar="$work/cookies"
[ "$(visit "$jar" | field count)" = 1 ] || fail "first visit: count is not 1"
second="$(visit "$jar")"
[ "$(field count <<<"$second")" = 2 ] || fail "second visit: count is not 2"
model="$(field model <<<"$second")"
[ "${#model}" -ge 2000 ] || fail "the session's model is ${#model} bytes, not ~2 KB"
stop_pid "$app_pid"

# 2. restarted: the same session, from the durable store; the visits in the app's database
start_app embed-again --embed --data-dir "$work/data"
third="$(visit "$jar")"
[ "$(field count <<<"$third")" = 3 ] || fail "after the restart the count is not 3: $third"
[ "$(field model <<<"$third")" = "$model" ] || fail "after the restart the model differs"
rows="$(as_user psql -X "postgresql:///app?host=$work/data/run&user=app" -Atc 'SELECT count(*) FROM visits')"
[ "$rows" = 3 ] || fail "the visits table has $rows rows, not 3"
stop_pid "$app_pid"

# 3. an external PostgreSQL: the app database of a second skydb's private cluster
(exec skydb --set http.port=0 serve --embed --data-dir "$work/db" --user "$user" \
  >"$work/serve.log" 2>&1) &
serve_pid=$!
pids+=("$serve_pid")
url="$(skydb env --data-dir "$work/db" --format json | field DATABASE_URL)"
for _ in $(seq 1 240); do
  as_user psql -X "$url" -Atc 'SELECT 1' >/dev/null 2>&1 && break
  kill -0 "$serve_pid" 2>/dev/null || fail "skydb serve exited before it was ready"
  sleep 0.5
done
start_app external --database-url "$url" --data-dir "$work/app2"
jar2="$work/cookies2"
visit "$jar2" >/dev/null
[ "$(visit "$jar2" | field count)" = 2 ] || fail "external: second visit: count is not 2"
rows="$(as_user psql -X "$url" -Atc 'SELECT count(*) FROM visits')"
[ "$rows" = 2 ] || fail "external: the visits table has $rows rows, not 2"
stop_pid "$app_pid"
stop_pid "$serve_pid"
echo "app-smoke: the example app serves, keeps sessions across a restart and runs over an external PostgreSQL"
