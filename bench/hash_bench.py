#!/usr/bin/env python3
"""What a hash field write costs: `HSET` of one 100-byte field in hashes of 50 fields, against
skydb's own `SET` of a 2,080-byte value and against redis-server `appendfsync always` doing the
same, side by side in one run (redis-benchmark, -c 50, keys drawn from 1,000 per arm), at native
fsync and under the 1 ms fsync model (bench/slowfsync.c preloaded into skydb, hence its
PostgreSQL, and into redis-server). skydb runs `serve --embed` with sync durability; its WAL
bytes per write come from pg_current_wal_lsn() before and after each arm. Arms alternate
(redis, skydb, skydb, redis). Prints ops/s, the ratios and the conditions; refuses a loaded
machine unless --force. Not a test.

Run as root from the repo: bench/hash_bench.py [--requests 20000] [--force]
"""
import os
import shutil
import signal
import statistics
import subprocess

from embedded_daemon import (arguments, disks, embedded_daemon, start_conditions, wait_ping,
                             write_report)

HASHES, FIELDS, FIELD_BYTES, SET_BYTES = 1000, 50, 100, 2080


def cli(sock, *args, stdin=None):
    return subprocess.run(["redis-cli", "-s", sock] + list(args), input=stdin, check=True,
                          capture_output=True, text=True).stdout


def populate(sock):
    """1,000 hashes of 50 fields, written once through a pipe (redis-cli --pipe)."""
    lines = []
    for h in range(HASHES):
        args = ["HSET", "h:%012d" % h]
        for f in range(FIELDS):
            args += ["f%d" % f, "x" * FIELD_BYTES]
        lines.append("".join("$%d\r\n%s\r\n" % (len(a), a) for a in args))
        lines[-1] = "*%d\r\n" % len(args) + lines[-1]
    cli(sock, "--pipe", stdin="".join(lines))


def benchmark(sock, requests, test):
    """ops/s of redis-benchmark for one command."""
    if test == "hset":
        cmd = ["HSET", "h:__rand_int__", "f7", "y" * FIELD_BYTES]
    else:
        cmd = ["SET", "s:__rand_int__", "z" * SET_BYTES]
    out = subprocess.run(["redis-benchmark", "-s", sock, "-c", "50", "-n", str(requests),
                          "-r", str(HASHES), "--csv"] + cmd,
                         capture_output=True, text=True, check=True).stdout
    last = [l for l in out.splitlines() if l.strip()][-1]
    return float(last.split(",")[1].strip('"'))


def wal_lsn(skydb, data_dir):
    out = subprocess.run([skydb, "psql", "--data-dir", data_dir, "-Atc",
                          "SELECT pg_current_wal_lsn() - '0/0'"],
                         capture_output=True, text=True)
    return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def redis_always(work, disk, slowfsync):
    d = os.path.join(work, "redis-" + disk)
    os.makedirs(d)
    env = dict(os.environ)
    if disk != "native":
        env.update(LD_PRELOAD=os.path.abspath(slowfsync), SLOWFSYNC_US="1000")
    sock = os.path.join(d, "redis.sock")
    proc = subprocess.Popen(["redis-server", "--unixsocket", sock, "--port", "0", "--save", "",
                             "--appendonly", "yes", "--appendfsync", "always", "--dir", d],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_ping(sock, proc):
        proc.kill()
        raise SystemExit("redis-server did not start")
    return proc, sock


def main():
    p = arguments("HSET of one field in a 50-field hash vs SET, skydb vs redis-server", 0)
    p.add_argument("--requests", type=int, default=20000)
    a = p.parse_args()
    user = os.environ.get("SKYDB_TEST_USER", "skydbtest")
    work, conditions = start_conditions(a, "skydb-hashbench-")
    conditions.update({
        "redis": subprocess.run(["redis-server", "--version"], capture_output=True,
                                text=True).stdout.strip(),
        "requests_per_arm": a.requests, "clients": 50, "hashes": HASHES, "fields": FIELDS,
        "field_bytes": FIELD_BYTES, "set_bytes": SET_BYTES,
    })
    results = []
    try:
        for disk in disks(a.slowfsync):
            redis, redis_sock = redis_always(work, disk, a.slowfsync)
            try:
                with embedded_daemon(a, work, disk, user) as (data_dir, sock):
                    populate(sock)
                    populate(redis_sock)
                    runs = {(arm, test): [] for arm in ("redis", "skydb") for test in ("hset", "set")}
                    wal = {"hset": [], "set": []}
                    for arm in ("redis", "skydb", "skydb", "redis"):
                        for test in ("hset", "set"):
                            before = wal_lsn(a.skydb, data_dir) if arm == "skydb" else None
                            target = sock if arm == "skydb" else redis_sock
                            runs[(arm, test)].append(benchmark(target, a.requests, test))
                            after = wal_lsn(a.skydb, data_dir) if arm == "skydb" else None
                            if before is not None and after is not None:
                                wal[test].append((after - before) / a.requests)
                    row = {"disk": disk}
                    for (arm, test), values in runs.items():
                        row["%s_%s_ops" % (arm, test)] = round(statistics.mean(values))
                    for test in ("hset", "set"):
                        row["skydb_%s_wal_bytes_per_write" % test] = (
                            round(statistics.mean(wal[test])) if wal[test] else None)
                    row["hset_over_redis_hset"] = round(
                        row["skydb_hset_ops"] / row["redis_hset_ops"], 3)
                    row["hset_over_skydb_set"] = round(
                        row["skydb_hset_ops"] / row["skydb_set_ops"], 3)
                    results.append(row)
                    print(row, flush=True)
            finally:
                redis.send_signal(signal.SIGTERM)
                redis.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    conditions["flag"] = ("loaded: load average above half the cores"
                          if max(conditions["load_start"], os.getloadavg()[0]) > os.cpu_count() * 0.5
                          else "")
    print("conditions:", conditions)
    print("written to", write_report("hash", conditions, results))


if __name__ == "__main__":
    main()
