#!/usr/bin/env python3
"""What a transaction costs: MULTI + 10 SETs + EXEC against the same 10 SETs pipelined, on one
`skydb serve --embed` daemon (sync durability), side by side in one run (arms alternate A B B A),
at native fsync and under the 1 ms fsync model (bench/slowfsync.c preloaded into skydb, hence
its PostgreSQL). Prints batches/s of each arm, their ratio and the conditions; refuses a loaded
machine unless --force, and flags a run whose load generator used most of a core. Not a test.

Run as root from the repo: bench/exec_bench.py [--seconds 5] [--clients 8] [--force]
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import threading
import time

from embedded_daemon import (arguments, command, disks, embedded_daemon, start_conditions,
                             write_report)


class Reader:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        if line[:1] == b"*":
            return [self.reply() for _ in range(int(line[1:]))]
        if line[:1] == b"$" and int(line[1:]) >= 0:
            n = int(line[1:])
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if line[:1] == b"-":
            raise RuntimeError(line.decode())
        return line


def batch(kind, client_id, i, value):
    sets = [command("SET", "b:%d:%d" % (client_id, k), value) for k in range(10)]
    if kind == "exec10":
        return command("MULTI") + b"".join(sets) + command("EXEC"), 12
    return b"".join(sets), 10


def run_arm(sock_path, kind, clients, seconds):
    done = [0] * clients
    latencies = [[] for _ in range(clients)]
    stop = time.monotonic() + seconds
    value = b"v" * 2080

    def client(cid):
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock_path)
        r = Reader(s)
        i = 0
        while time.monotonic() < stop:
            payload, replies = batch(kind, cid, i, value)
            t = time.perf_counter()
            s.sendall(payload)
            last = None
            for _ in range(replies):
                last = r.reply()
            if kind == "exec10" and (not isinstance(last, list) or len(last) != 10):
                raise RuntimeError("EXEC answered %r" % (last,))
            latencies[cid].append(time.perf_counter() - t)
            done[cid] += 1
            i += 1
        s.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    cpu0 = os.times()
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    cpu1 = os.times()
    lat = sorted(x for per in latencies for x in per)
    return {
        "batches_per_s": sum(done) / elapsed,
        "p50_ms": lat[len(lat) // 2] * 1e3 if lat else None,
        "p99_ms": lat[int(len(lat) * 0.99)] * 1e3 if lat else None,
        "generator_core_share": ((cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)) / elapsed,
    }


def main():
    p = arguments("MULTI + 10 SETs + EXEC against the same 10 SETs pipelined", seconds=5)
    p.add_argument("--clients", type=int, default=8)
    a = p.parse_args()
    user = os.environ.get("SKYDB_TEST_USER", "skydbtest")
    work, conditions = start_conditions(a, "skydb-execbench-")
    conditions.update(clients=a.clients, seconds_per_arm=a.seconds, value_bytes=2080)
    results = []
    try:
        for disk in disks(a.slowfsync):
            with embedded_daemon(a, work, disk, user) as (_, sock_path):
                run_arm(sock_path, "pipe10", a.clients, 1)  # warm-up
                arms = {"exec10": [], "pipe10": []}
                for kind in ("exec10", "pipe10", "pipe10", "exec10"):
                    arms[kind].append(run_arm(sock_path, kind, a.clients, a.seconds))
                row = {"disk": disk}
                for kind, runs in arms.items():
                    row[kind] = {
                        "batches_per_s": round(statistics.mean(r["batches_per_s"] for r in runs), 1),
                        "p50_ms": round(statistics.mean(r["p50_ms"] for r in runs), 2),
                        "p99_ms": round(statistics.mean(r["p99_ms"] for r in runs), 2),
                        "generator_core_share": round(
                            max(r["generator_core_share"] for r in runs), 2),
                    }
                row["exec_over_pipeline"] = round(
                    row["exec10"]["batches_per_s"] / row["pipe10"]["batches_per_s"], 3)
                flagged = max(row[k]["generator_core_share"] for k in arms) > 0.8
                row["flag"] = "load generator above 80% of a core" if flagged else ""
                results.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = write_report("exec", conditions, results)
    print(json.dumps({"conditions": conditions, "results": results}, indent=1))
    print("written to", out)


if __name__ == "__main__":
    main()
