#!/usr/bin/python3
"""Pub/sub fan-out, skydb's RESP server side by side with redis-server in the same run.

Starts resp_test_server (skydb's RESP server over a memory store, the daemon's code path for
PUBLISH) and redis-server, each on a unix socket in a temp dir, stopped by pid. For each: S
subscribers (spread over P reader processes) subscribe to one channel; one publisher pipelines
N PUBLISHes of a B-byte message; the time runs from the first PUBLISH to the last byte reaching
the last subscriber. Prints deliveries/s for both and the ratio, with the run's conditions.

usage: bench/pubsub_fanout.py RESP_TEST_SERVER [subscribers=100] [messages=20000] [bytes=16]
"""
import multiprocessing
import os
import platform
import shutil
import signal
import socket
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


def main():
    server = sys.argv[1]
    subscribers = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    messages = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    d = tempfile.mkdtemp(prefix="skydb-pubsub-bench-")
    try:
        sky_sock, redis_sock = d + "/skydb.sock", d + "/redis.sock"
        sky = start([server, "--socket", sky_sock], sky_sock)
        red = start(["redis-server", "--port", "0", "--unixsocket", redis_sock, "--save", "",
                     "--appendonly", "no", "--client-output-buffer-limit",
                     "pubsub 0 0 0"], redis_sock)
        try:
            results = {}
            for name, path in (("skydb", sky_sock), ("redis", redis_sock)):
                results[name] = run(path, subscribers, messages, size)
        finally:
            stop(sky)
            stop(red)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout
        redis_version = subprocess.run(["redis-server", "--version"], capture_output=True,
                                       text=True).stdout.split()[2]
        print("conditions: commit %s, nproc %d, loadavg %s, %s, python %s, redis %s"
              % (commit.strip(), os.cpu_count(), open("/proc/loadavg").read().strip(),
                 platform.release(), platform.python_version(), redis_version))
        print("fan-out: %d subscribers, %d messages of %d bytes, 1 pipelined publisher"
              % (subscribers, messages, size))
        for name, rate in results.items():
            print("%-6s %12.0f deliveries/s" % (name, rate))
        print("ratio skydb/redis: %.2f" % (results["skydb"] / results["redis"]))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
