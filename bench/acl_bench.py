#!/usr/bin/env python3
"""What the ACL check costs per command: the same redis-benchmark commands as the `default`
user (every right: no check, as with resp.requirepass alone) and as an app's store user walled
into `shop:` (the rules `skydb app add` gives it), side by side on one `skydb serve --embed`
daemon (sync durability, native disk). Commands: GET of a 100-byte value answered from memory
(-P 1 and -P 16, 50 clients) and SET of 2,080 bytes (-P 1, 50 clients; durable, so the check
is a small part of it). Arms alternate (default, shop, shop, default) and each figure is the
median of its two runs; each run is about 3 s. Prints ops/s, the ratio shop/default and the conditions; refuses a
loaded machine unless --force. Not a test.

Run as root from the repo: bench/acl_bench.py [--requests 200000] [--force]
"""
import re
import shutil
import statistics
import subprocess

from embedded_daemon import arguments, embedded_daemon, start_conditions, write_report

PASSWORD = "shop-bench-password"
RULES = ["reset", "on", ">" + PASSWORD, "~shop:*", "&shop:*", "+@all", "-@dangerous", "+info"]


def cli(sock, *args):
    return subprocess.run(["redis-cli", "-s", sock] + list(args), check=True,
                          capture_output=True, text=True).stdout


def ops(sock, user, requests, pipeline, command):
    login = ["--user", "shop", "-a", PASSWORD] if user == "shop" else []
    out = subprocess.run(["redis-benchmark", "-s", sock, "-n", str(requests), "-c", "50",
                          "-P", str(pipeline), "-r", "1000", "-q"] + login + command,
                         check=True, capture_output=True, text=True).stdout
    line = [l for l in out.replace("\r", "\n").splitlines() if "requests per second" in l][-1]
    return float(re.search(r"([\d.]+) requests per second", line).group(1))


def main():
    p = arguments(__doc__.splitlines()[0], 0)
    p.add_argument("--requests", type=int, default=200000)
    a = p.parse_args()
    work, conditions = start_conditions(a, "skydb-acl-bench-")
    conditions["redis_benchmark"] = subprocess.run(["redis-benchmark", "--version"],
                                                   capture_output=True, text=True).stdout.strip()
    cases = [("GET 100 B -P 1", 1, ["GET", "shop:k:__rand_int__"]),
             ("GET 100 B -P 16", 16, ["GET", "shop:k:__rand_int__"]),
             ("SET 2080 B -P 1", 1, ["SET", "shop:s:__rand_int__", "x" * 2080])]
    results = []
    try:
        with embedded_daemon(a, work, "native", "skydbtest") as (_, sock):
            cli(sock, "ACL", "SETUSER", "shop", *RULES)
            for i in range(1000):  # the GETs find their values in memory
                cli(sock, "SET", "shop:k:%012d" % i, "v" * 100)
            for name, pipeline, command in cases:
                runs = {"default": [], "shop": []}
                for user in ("default", "shop", "shop", "default"):
                    # About 3 s each on a 2-core VM: pipelined GETs run ten times as many.
                    n = a.requests * (10 if pipeline > 1 else 1 if "GET" in name else 0.1)
                    n = int(n)
                    runs[user].append(ops(sock, user, n, pipeline, command))
                d, s = statistics.median(runs["default"]), statistics.median(runs["shop"])
                results.append({"case": name, "default_ops": d, "shop_ops": s,
                                "ratio": round(s / d, 3), "runs": runs})
                print("%-16s default %9.0f/s  shop %9.0f/s  ratio %.3f" % (name, d, s, s / d))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("conditions:", conditions)
    print("written:", write_report("acl", conditions, results))


if __name__ == "__main__":
    main()
