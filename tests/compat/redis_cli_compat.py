"""redis-cli and redis-benchmark (Debian's redis-tools) against the unix socket.

redis-cli: commands typed as in an interactive session, one connection, replies in the
interactive format (--no-raw): MULTI/EXEC/DISCARD, SETNX, the INCR family, EXPIRE NX|XX|GT|LT,
TYPE, KEYS, CLIENT INFO/LIST; INFO one section at a time, several at once and `everything`;
--scan with a pattern. redis-benchmark: the plain string/key tests of its default suite
(ping_inline, ping_mbulk, set, get, incr, mset; the list/set/hash/zset ones are outside the
subset) with -n small (it stops at the first error reply, which fails the step) and the INCR
counter checked afterwards."""
import os
import re
import subprocess

from compat_steps import expect, fail, passed

SOCKET = os.environ["SKYDB_COMPAT_SOCKET"]
BENCH_REQUESTS = 2000


def cli(step, *args, stdin=None):
    try:
        done = subprocess.run(["/usr/bin/redis-cli", "-s", SOCKET, *args], input=stdin,
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        fail(step, "redis-cli did not finish within 20 s")
    if done.returncode != 0 or done.stderr.strip():
        fail(step, "redis-cli exited %d, stderr %r, stdout %r"
             % (done.returncode, done.stderr.strip(), done.stdout[-500:]))
    return done.stdout


def session(commands, replies):
    """Types `commands` into one redis-cli session and checks each reply, in order."""
    out = cli("interactive session", "--no-raw", stdin="".join(c + "\n" for c in commands))
    got = out.splitlines()
    for i, (command, want) in enumerate(zip(commands, replies)):
        lines = want.count("\n") + 1
        reply = "\n".join(got[:lines])
        got = got[lines:]
        if reply != want:
            fail("redis-cli> %s" % command, "got %r, expected %r" % (reply, want))
    if got:
        fail("interactive session", "unexpected extra output %r" % got)


def interactive():
    session(
        ["PING", "SET cli:k v", "SETNX cli:k other", "SETNX cli:new 1", "GET cli:k",
         "INCR cli:n", "INCRBY cli:n 10", "DECR cli:n", "DECRBY cli:n 5", "INCRBYFLOAT cli:f 1.5",
         "INCR cli:k",
         "MULTI", "SET cli:tx 1", "INCR cli:tx", "GET cli:tx", "EXEC",
         "MULTI", "SET cli:tx gone", "DISCARD", "GET cli:tx",
         "EXPIRE cli:k 100 NX", "EXPIRE cli:k 200 NX", "EXPIRE cli:k 50 GT", "EXPIRE cli:k 300 GT",
         "EXPIRE cli:k 400 LT", "EXPIRE cli:k 30 LT", "EXPIRE cli:missing 10 XX", "TTL cli:k",
         "TYPE cli:k", "TYPE cli:missing", "KEYS cli:t*"],
        ["PONG", "OK", "(integer) 0", "(integer) 1", '"v"',
         "(integer) 1", "(integer) 11", "(integer) 10", "(integer) 5", '"1.5"',
         "(error) ERR value is not an integer or out of range",
         "OK", "QUEUED", "QUEUED", "QUEUED", '1) OK\n2) (integer) 2\n3) "2"',
         "OK", "QUEUED", "OK", '"2"',
         "(integer) 1", "(integer) 0", "(integer) 0", "(integer) 1",
         "(integer) 0", "(integer) 1", "(integer) 0", "(integer) 30",
         "string", "none", '1) "cli:tx"'])
    info = cli("CLIENT INFO", "CLIENT", "INFO")
    for field in ("id=", " addr=", " db=0", " multi=-1", " cmd=client|info", " resp=2"):
        if field not in info:
            fail("CLIENT INFO", "no %r in %r" % (field, info))
    listed = cli("CLIENT LIST", "CLIENT", "LIST")
    if "cmd=client|list" not in listed:
        fail("CLIENT LIST", "its own connection is not listed: %r" % listed)


SECTIONS = {
    "server": ("# Server", "redis_version:", "uptime_in_seconds:", "tcp_port:"),
    "clients": ("# Clients", "connected_clients:", "blocked_clients:"),
    "memory": ("# Memory", "used_memory:", "used_memory_human:", "maxmemory:"),
    # skydb has no RDB snapshots, so no rdb_changes_since_last_save; it says it has no AOF.
    "persistence": ("# Persistence", "loading:", "aof_enabled:"),
    "stats": ("# Stats", "total_connections_received:", "total_commands_processed:",
              "keyspace_hits:", "keyspace_misses:", "expired_keys:", "evicted_keys:"),
    "replication": ("# Replication", "role:master", "connected_slaves:"),
    "cpu": ("# CPU", "used_cpu_sys:", "used_cpu_user:"),
    "keyspace": ("# Keyspace", "db0:keys="),
}


def info_sections():
    for section, fields in SECTIONS.items():
        out = cli("INFO %s" % section, "INFO", section)
        for field in fields:
            if field not in out:
                fail("INFO %s" % section, "no %r in %r" % (field, out[:800]))
    two = cli("INFO server clients", "INFO", "server", "clients")
    if "# Server" not in two or "# Clients" not in two or "# Memory" in two:
        fail("INFO server clients", "expected exactly those two sections: %r" % two[:800])
    everything = cli("INFO everything", "INFO", "everything")
    for section, fields in SECTIONS.items():
        if fields[0] not in everything:
            fail("INFO everything", "no %r section" % fields[0])
    m = re.search(r"^db0:keys=(\d+),expires=(\d+)", everything, re.M)
    if not m:
        fail("INFO keyspace", "no db0 line in %r" % everything[-500:])


def scan():
    keys = ["cli:scan:%02d" % i for i in range(25)]
    cli("SET for --scan", stdin="".join("SET %s v\n" % k for k in keys))
    found = cli("--scan --pattern", "--scan", "--pattern", "cli:scan:*").split()
    expect("--scan --pattern 'cli:scan:*'", sorted(found), keys)
    subset = cli("--scan --pattern 'cli:scan:1*'", "--scan", "--pattern", "cli:scan:1*").split()
    expect("--scan --pattern 'cli:scan:1*'", sorted(subset), keys[10:20])
    everything = cli("--scan", "--scan").split()
    expect("--scan (no pattern) lists every key once", len(everything), len(set(everything)))
    if not set(keys) <= set(everything):
        fail("--scan (no pattern)", "missing %r" % sorted(set(keys) - set(everything)))


def benchmark():
    tests = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)"]
    try:
        done = subprocess.run(
            ["/usr/bin/redis-benchmark", "-s", SOCKET, "-t",
             "ping_inline,ping_mbulk,set,get,incr,mset", "-n", str(BENCH_REQUESTS), "--csv"],
            capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fail("redis-benchmark", "did not finish within 60 s")
    errors = [l for l in (done.stdout + done.stderr).splitlines()
              if "error" in l.lower() or l.startswith("ERR")]
    if done.returncode != 0 or errors:
        fail("redis-benchmark", "exit %d; %s" % (done.returncode,
                                                 " | ".join(errors[:3]) or done.stderr[-500:]))
    rows = {}
    for line in done.stdout.splitlines()[1:]:
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) >= 2:
            rows[cells[0]] = float(cells[1])
    for test in tests:
        if not rows.get(test, 0) > 0:
            fail("redis-benchmark %s" % test, "no requests per second in %r" % done.stdout)
    expect("counter after redis-benchmark -t incr",
           cli("GET counter", "GET", "counter:__rand_int__"), "%d\n" % BENCH_REQUESTS)
    # SET and MSET write a 3-byte payload (-d's default) to key:__rand_int__.
    expect("key after redis-benchmark -t set,mset",
           len(cli("GET key", "GET", "key:__rand_int__").rstrip("\n")), 3)


def main():
    interactive()
    info_sections()
    scan()
    benchmark()
    passed()


if __name__ == "__main__":
    main()
