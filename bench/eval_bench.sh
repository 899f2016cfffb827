#!/usr/bin/env bash
# EVALSHA of rate-limit-redis's increment script against SET of 100 B, with redis-benchmark, on
# the server whose unix socket is $SKYDB_COMPAT_SOCKET: one client (2,000 requests) and 50
# clients (10,000), keys drawn from 1,000. Run it under tests/compat/compat_server.py:
#   python3 tests/compat/compat_server.py --skydb build/src/skydb -- bench/eval_bench.sh
# and against redis-server with appendfsync always started by hand (docs/performance.md).
set -euo pipefail
socket=(-s "${SKYDB_COMPAT_SOCKET:?run under tests/compat/compat_server.py}")
script='local windowMs = tonumber(ARGV[1])
local timeToExpire = redis.call("PTTL", KEYS[1])
if timeToExpire <= 0 then
redis.call("SET", KEYS[1], 1, "PX", windowMs)
return { 1, windowMs }
end
local totalHits = redis.call("INCR", KEYS[1])
return { totalHits, timeToExpire }'
sha=$(redis-cli "${socket[@]}" SCRIPT LOAD "$script")
value=$(head -c 100 /dev/zero | tr '\0' x)
for clients in 1 50; do
  n=$([ "$clients" = 1 ] && echo 2000 || echo 10000)
  echo "== ${SKYDB_COMPAT_SERVER:-server}, $clients clients, $n requests"
  for command in "EVALSHA $sha 1 rl:__rand_int__ 60000" "SET k:__rand_int__ $value"; do
    # shellcheck disable=SC2086 # the command's words
    redis-benchmark "${socket[@]}" -n "$n" -c "$clients" -r 1000 -q $command |
      tr '\r' '\n' | grep 'requests per second' | sed 's/x\{100\}/<100 B>/'
  done
done
