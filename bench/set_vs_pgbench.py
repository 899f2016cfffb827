#!/usr/bin/env python3
"""Durable SET at modest depth against the naive store's engine (issue 19, goal 2):
`redis-benchmark -c 50 -P 1 -d 2080 -t set` against one `skydb serve --embed` daemon (sync
durability), side by side with `pgbench -c 6 -M prepared` doing one INSERT … ON CONFLICT per
transaction on the same daemon's own cluster, arms alternating A B B A, at native fsync and
under the 1 ms fsync model (bench/slowfsync.c preloaded into skydb, hence its PostgreSQL).
Prints SET/s, tps, their ratio and the conditions; refuses a loaded machine unless --force and
flags a run whose redis-benchmark used most of a core. Not a test.

Run as root from the repo: bench/set_vs_pgbench.py [--seconds 10] [--force]
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from embedded_daemon import (arguments, commit, disks, embedded_daemon, fsync_latency_us,
                             refuse_if_loaded, write_report)

VALUE_BYTES = 2080
KEYS = 6400
UPSERT = """\\set k random(1, %d)
INSERT INTO naive_sessions (key, value) VALUES ('s:' || :k, :v)
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();
""" % KEYS


def child_cpu():
    t = os.times()
    return t.children_user + t.children_system


def redis_set(sock_path, clients, requests):
    """SET/s of one redis-benchmark run, and the share of a core it used."""
    cpu0, t0 = child_cpu(), time.monotonic()
    out = subprocess.run(["redis-benchmark", "-s", sock_path, "-c", str(clients), "-P", "1",
                          "-d", str(VALUE_BYTES), "-t", "set", "-r", str(KEYS),
                          "-n", str(requests), "--csv"],
                         capture_output=True, text=True, check=True).stdout
    elapsed = time.monotonic() - t0
    rows = [line.split('","') for line in out.splitlines() if line.startswith('"SET"')]
    if not rows:
        sys.exit("redis-benchmark printed no SET row:\n" + out)
    return {"per_s": float(rows[0][1]), "p99_ms": float(rows[0][6]),
            "generator_core_share": round((child_cpu() - cpu0) / elapsed, 2)}


def pgbench_tps(env, user, script, clients, seconds):
    out = subprocess.run(["runuser", "-u", user, "--", "pgbench", "-n", "-M", "prepared",
                          "-c", str(clients), "-j", "2", "-T", str(int(round(seconds))), "-f", script,
                          "-D", "v=" + "v" * VALUE_BYTES],
                         env=env, capture_output=True, text=True)
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit("pgbench failed:\n" + out.stdout + out.stderr)
    lat = re.search(r"latency average = ([0-9.]+) ms", out.stdout)
    return {"per_s": float(m.group(1)), "latency_avg_ms": float(lat.group(1)) if lat else None}


def cluster_env(skydb, data_dir, user):
    """libpq's environment for the app's own database, from `skydb env`."""
    out = subprocess.run([skydb, "env", "--data-dir", data_dir, "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    env = dict(os.environ)
    env.update({k: v for k, v in json.loads(out).items() if k.startswith("PG")})
    return env


def run_disk(a, work, disk, user):
    with embedded_daemon(a, work, disk, user, ["app.user=" + user]) as (d, sock_path):
        pg = cluster_env(a.skydb, d, user)
        subprocess.run(["runuser", "-u", user, "--", "psql", "-q", "-v", "ON_ERROR_STOP=1", "-c",
                        "CREATE TABLE naive_sessions (key text PRIMARY KEY, value text NOT NULL,"
                        " updated_at timestamptz NOT NULL DEFAULT now())"],
                       env=pg, check=True)
        script = os.path.join(work, "upsert.sql")
        with open(script, "w") as f:
            f.write(UPSERT)
        os.chmod(script, 0o644)
        # Warm-up of both, and the request count that makes a redis-benchmark run ~a.seconds.
        probe = redis_set(sock_path, a.clients, 20000)
        pgbench_tps(pg, user, script, a.pgbench_clients, 2)
        requests = max(20000, int(probe["per_s"] * a.seconds))
        arms = {"skydb_set": [], "pgbench": []}
        for kind in ("skydb_set", "pgbench", "pgbench", "skydb_set"):
            if kind == "skydb_set":
                arms[kind].append(redis_set(sock_path, a.clients, requests))
            else:
                arms[kind].append(pgbench_tps(pg, user, script, a.pgbench_clients, a.seconds))
        row = {"disk": disk, "runs": arms}
        for kind, runs in arms.items():
            row[kind + "_per_s"] = round(statistics.mean(r["per_s"] for r in runs), 1)
        row["ratio"] = round(row["skydb_set_per_s"] / row["pgbench_per_s"], 2)
        share = max(r["generator_core_share"] for r in arms["skydb_set"])
        row["flag"] = "redis-benchmark above 80% of a core" if share > 0.8 else ""
        return row


def version(cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


def main():
    p = arguments("durable SET at -c 50 -P 1 against pgbench upserts", seconds=10)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--pgbench-clients", type=int, default=6)
    a = p.parse_args()
    load = refuse_if_loaded(a.force)
    for tool in ("redis-benchmark", "pgbench", "psql", "runuser"):
        if not shutil.which(tool):
            sys.exit("no %s on PATH" % tool)
    user = os.environ.get("SKYDB_TEST_USER", "skydbtest")
    work = tempfile.mkdtemp(prefix="skydb-setpg-")
    os.chmod(work, 0o755)
    conditions = {
        "commit": commit(), "host": os.uname().nodename, "cores": os.cpu_count(),
        "load_start": round(load, 2),
        "fsync_us_median": round(fsync_latency_us(work), 1),
        "skydb": version([a.skydb, "--version"]),
        "redis_benchmark": version(["redis-benchmark", "--version"]),
        "pgbench": version(["pgbench", "--version"]),
        "clients": a.clients, "pgbench_clients": a.pgbench_clients,
        "seconds_per_arm": a.seconds, "value_bytes": VALUE_BYTES, "keys": KEYS,
    }
    results = []
    try:
        for disk in disks(a.slowfsync):
            results.append(run_disk(a, work, disk, user))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = write_report("setpg", conditions, results)
    c = conditions
    print("conditions: commit %s, host %s, %d cores, load %.2f -> %.2f, fsync median %.0f us, %s"
          % (c["commit"], c["host"], c["cores"], c["load_start"], c["load_end"],
             c["fsync_us_median"], c["skydb"]))
    for row in results:
        print("%-8s skydb SET -c %d -P 1: %8.0f/s   pgbench -c %d upserts: %8.0f tps   %.2fx %s"
              % (row["disk"], a.clients, row["skydb_set_per_s"], a.pgbench_clients,
                 row["pgbench_per_s"], row["ratio"],
                 ("FLAGGED: " + row["flag"]) if row["flag"] else ""))
    print("written to", out)


if __name__ == "__main__":
    main()
