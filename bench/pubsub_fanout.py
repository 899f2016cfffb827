#!/usr/bin/python3
"""Pub/sub fan-out, skydb's RESP server side by side with redis-server in the same run.

Starts resp_test_server (skydb's RESP server over a memory store, the daemon's code path for
PUBLISH) and redis-server, each on a unix socket in a temp dir, stopped by pid. For each: S
subscribers (spread over P reader processes) subscribe to one channel; one publisher pipelines
N PUBLISHes of a B-byte message; the time runs from the first PUBLISH to the last byte reaching
the last subscriber. Prints deliveries/s for both and the ratio, with the run's conditions.

Rounds alternate the order of the two servers (skydb first, then redis first, ...), each server
kept running across rounds; the ratio of each round, their median and range are printed. A run
is flagged when other work shares the cores (the bench itself saturates both cores of a 2-core
host, so another load changes who wins): when more than half a core was busy in the 2 s before
it started, read from /proc/stat (the load average would also count the bench's own previous
run). With --daemon SKYDB the skydb arm is the real daemon, `skydb serve --store memory` (its
default resp.threads, as the user SKYDB_TEST_USER or skydbtest when run as root), instead of
resp_test_server.

usage: bench/pubsub_fanout.py RESP_TEST_SERVER [subscribers=100] [messages=20000] [bytes=16]
                              [--rounds 1] [--daemon SKYDB] [--out FILE]
"""
import argparse
import json
import multiprocessing
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def frame_size(channel, payload_len):
    def bulk(n):
        return len(str(n)) + 3 + n + 2
    return 4 + bulk(7) + bulk(len(channel)) + bulk(payload_len)


def reader(path, count, want_bytes, ready, done):
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(b"SUBSCRIBE bench\r\n")
        socks.append(s)
    confirmation = b"*3\r\n$9\r\nsubscribe\r\n$5\r\nbench\r\n:1\r\n"
    for s in socks:
        got = b""
        while len(got) < len(confirmation):
            got += s.recv(len(confirmation) - len(got))
    ready.release()
    import selectors
    sel = selectors.DefaultSelector()
    left = {}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        left[s] = want_bytes
    while left:
        for key, _ in sel.select(timeout=30):
            s = key.fileobj
            data = s.recv(1 << 20)
            if not data:
                raise SystemExit("subscriber closed early")
            left[s] -= len(data)
            if left[s] <= 0:
                sel.unregister(s)
                del left[s]
    done.put(time.time())


def run(path, subscribers, messages, size, procs=4):
    want = frame_size("bench", size) * messages
    ready = multiprocessing.Semaphore(0)
    done = multiprocessing.Queue()
    per = [subscribers // procs + (1 if i < subscribers % procs else 0) for i in range(procs)]
    workers = [multiprocessing.Process(target=reader, args=(path, n, want, ready, done))
               for n in per if n > 0]
    for w in workers:
        w.start()
    for _ in workers:
        ready.acquire(timeout=60)
    pub = socket.socket(socket.AF_UNIX)
    pub.connect(path)
    command = b"PUBLISH bench " + b"m" * size + b"\r\n"
    reply = b":%d\r\n" % subscribers
    started = time.time()
    batch = 500
    for i in range(0, messages, batch):
        n = min(batch, messages - i)
        pub.sendall(command * n)
        got = b""
        while len(got) < len(reply) * n:
            got += pub.recv(1 << 20)
        assert got == reply * n, got[:100]
    ends = [done.get(timeout=300) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    pub.close()
    return subscribers * messages / (max(ends) - started)


def start(argv, sock):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while not os.path.exists(sock) and time.time() < deadline:
        time.sleep(0.05)
    return proc


def stop(proc):
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def busy_cores(seconds=2.0):
    """Cores busy over the next SECONDS (all CPUs' non-idle time from /proc/stat)."""
    def sample():
        fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait
    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    busy = (total1 - total0) - (idle1 - idle0)
    return os.cpu_count() * busy / max(1, total1 - total0)


def start_daemon(skydb, data_dir):
    """`skydb serve --store memory` on DATA_DIR; its socket is DATA_DIR/run/skydb.sock."""
    sock = os.path.join(data_dir, "run", "skydb.sock")
    argv = [skydb, "--set", "http.listen=http.sock", "serve", "--store", "memory", "--data-dir",
            data_dir]
    if os.geteuid() == 0:  # skydb runs as an unprivileged user; root still reaches its socket
        os.chmod(os.path.dirname(data_dir), 0o755)
        argv += ["--user", os.environ.get("SKYDB_TEST_USER", "skydbtest")]
    proc = subprocess.Popen(argv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while not os.path.exists(sock) and time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("skydb serve --store memory exited with %d" % proc.returncode)
        time.sleep(0.05)
    return proc, sock


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("server")
    ap.add_argument("subscribers", nargs="?", type=int, default=100)
    ap.add_argument("messages", nargs="?", type=int, default=20000)
    ap.add_argument("size", nargs="?", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--daemon", help="the skydb binary: measure `skydb serve --store memory`")
    ap.add_argument("--out", help="write the figures and conditions as one JSON object")
    args = ap.parse_args()
    busy_before = busy_cores()
    load_before = open("/proc/loadavg").read().strip()
    d = tempfile.mkdtemp(prefix="skydb-pubsub-bench-")
    try:
        redis_sock = d + "/redis.sock"
        if args.daemon:
            sky, sky_sock = start_daemon(args.daemon, d + "/daemon")
            sky_name = "skydb serve --store memory"
        else:
            sky_sock = d + "/skydb.sock"
            sky = start([args.server, "--socket", sky_sock], sky_sock)
            sky_name = "resp_test_server"
        red = start(["redis-server", "--port", "0", "--unixsocket", redis_sock, "--save", "",
                     "--appendonly", "no", "--client-output-buffer-limit",
                     "pubsub 0 0 0"], redis_sock)
        rounds = []
        try:
            for r in range(args.rounds):
                order = (("skydb", sky_sock), ("redis", redis_sock))
                if r % 2:
                    order = order[::-1]
                rates = {}
                for name, path in order:
                    rates[name] = run(path, args.subscribers, args.messages, args.size)
                rates["ratio"] = rates["skydb"] / rates["redis"]
                rates["loadavg"] = open("/proc/loadavg").read().split()[0]
                rounds.append(rates)
        finally:
            stop(sky)
            stop(red)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout
        redis_version = subprocess.run(["redis-server", "--version"], capture_output=True,
                                       text=True).stdout.split()[2].replace("v=", "")
        conditions = ("commit %s, host %s, nproc %d, %.2f cores busy in the 2 s before, loadavg "
                      "before %s, after %s, %s, python %s, redis %s"
                      % (commit.strip(), platform.node(), os.cpu_count(), busy_before,
                         load_before, open("/proc/loadavg").read().strip(), platform.release(),
                         platform.python_version(), redis_version))
        print("conditions: " + conditions)
        flagged = busy_before > 0.5
        if flagged:
            print("FLAGGED: %.2f cores were busy before the start: other work shared the cores, "
                  "the ratio is not meaningful" % busy_before)
        print("fan-out: %d subscribers, %d messages of %d bytes, 1 pipelined publisher; skydb "
              "arm: %s" % (args.subscribers, args.messages, args.size, sky_name))
        for i, r in enumerate(rounds):
            print("round %d: skydb %12.0f  redis %12.0f deliveries/s  ratio %.2f  (load %s)"
                  % (i + 1, r["skydb"], r["redis"], r["ratio"], r["loadavg"]))
        ratios = [r["ratio"] for r in rounds]
        print("ratio skydb/redis: %.2f (median of %d rounds, range %.2f-%.2f)"
              % (statistics.median(ratios), len(ratios), min(ratios), max(ratios)))
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"conditions": conditions, "flagged": flagged, "skydb_arm": sky_name,
                           "subscribers": args.subscribers, "messages": args.messages,
                           "bytes": args.size, "rounds": rounds,
                           "median_ratio": statistics.median(ratios)}, f, indent=1)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
