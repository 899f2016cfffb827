#!/usr/bin/env python3
"""Measures the supervisor: cold start, warm start (median of N), postmaster kill -9 → ready,
idle PSS of the PostgreSQL process tree (smaps_rollup) and RSS of skydb.

Usage (as root, from the repository):
    python3 bench/supervisor_startup.py [--skydb build/src/skydb] [--user skydbtest] [--runs 5]

"Ready" is the moment DIR/run/skydb.status.json says state "ready" for the daemon just started:
PostgreSQL answers PQping on its socket and migrations ran. Times are wall-clock from spawning
`skydb serve --embed` (or from the kill) and include the 10 ms polling granularity.
"""
import argparse, json, os, platform, shutil, signal, statistics, subprocess, sys, tempfile, time


def status(d):
    try:
        with open(os.path.join(d, "run", "skydb.status.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def wait_ready(d, daemon_pid, min_restarts=0, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = status(d)
        if (s.get("state") == "ready" and s.get("daemon_pid") == daemon_pid
                and s.get("restarts", 0) >= min_restarts):
            return time.monotonic()
        time.sleep(0.01)
    raise SystemExit(f"not ready within {timeout}s: {status(d)}")


def serve(args, d):
    env = dict(os.environ, SKYDB_CONFIG="")
    sets = [a for kv in args.sets for a in ("--set", kv)]
    return subprocess.Popen([args.skydb, *sets, "serve", "--embed", "--data-dir", d,
                             "--user", args.user],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)


def pg_tree(pgdata):
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/cwd") == pgdata:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def kib(path, field):
    with open(path) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def conditions(args):  # noqa: C901 - flat list of facts
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True).stdout
    pg = subprocess.run(["/usr/lib/postgresql/15/bin/postgres", "--version"], capture_output=True,
                        text=True).stdout.strip()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    mem = kib("/proc/meminfo", "MemTotal") // 1024
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"commit": commit + (" (uncommitted changes)" if dirty else ""),
            "host": platform.node(), "kernel": platform.release(), "cpu": cpu,
            "cores": os.cpu_count(), "ram_mib": mem, "load_avg": load, "postgres": pg,
            "skydb": args.skydb, "overrides": args.sets}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skydb", default="build/src/skydb")
    ap.add_argument("--user", default=os.environ.get("SKYDB_TEST_USER", "skydbtest"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=10.0, help="seconds idle before memory")
    ap.add_argument("--set", action="append", default=[], dest="sets",
                    help="a config override passed to skydb, e.g. host.ram=1975MiB (repeatable)")
    args = ap.parse_args()
    args.skydb = os.path.abspath(args.skydb)
    root = tempfile.mkdtemp(prefix="skydb-bench-")
    os.chmod(root, 0o755)
    d = os.path.join(root, "d")
    out = {"conditions": conditions(args)}
    try:
        t0 = time.monotonic()
        p = serve(args, d)
        out["cold_start_s"] = round(wait_ready(d, p.pid) - t0, 3)
        stop(p)

        warm = []
        for _ in range(args.runs):
            t0 = time.monotonic()
            p = serve(args, d)
            warm.append(wait_ready(d, p.pid) - t0)
            stop(p)
        out["warm_start_s"] = {"median": round(statistics.median(warm), 3),
                               "all": [round(x, 3) for x in warm]}

        # A fresh daemon per kill: the first restart's backoff (0.5 s) is what is measured,
        # not the doubled backoff of back-to-back crashes.
        kills = []
        for _ in range(args.runs):
            p = serve(args, d)
            wait_ready(d, p.pid)
            time.sleep(2)
            t0 = time.monotonic()
            os.kill(status(d)["postgres_pid"], signal.SIGKILL)
            kills.append(wait_ready(d, p.pid, min_restarts=1) - t0)
            stop(p)
        out["kill9_to_ready_s"] = {"median": round(statistics.median(kills), 3),
                                   "all": [round(x, 3) for x in kills]}

        p = serve(args, d)
        wait_ready(d, p.pid)
        time.sleep(args.idle)
        pids = pg_tree(os.path.join(d, "pgdata"))
        pss = sum(kib(f"/proc/{pid}/smaps_rollup", "Pss") for pid in pids)
        rss = sum(kib(f"/proc/{pid}/status", "VmRSS") for pid in pids)
        out["idle_postgres_tree"] = {"processes": len(pids), "pss_mib": round(pss / 1024, 1),
                                     "summed_rss_mib": round(rss / 1024, 1)}
        out["skydb_rss_mib"] = round(kib(f"/proc/{p.pid}/status", "VmRSS") / 1024, 1)
        out["settings"] = {k: subprocess.run(
            [args.skydb, "psql", "--data-dir", d, "--", "-Atc", f"SHOW {k}"], capture_output=True,
            text=True, env=dict(os.environ, SKYDB_CONFIG="")).stdout.strip()
            for k in ("shared_buffers", "max_connections")}
        stop(p)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
