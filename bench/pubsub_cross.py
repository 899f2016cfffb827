#!/usr/bin/python3
"""Pub/sub between two daemons on one database, next to one redis-server in the same run.

    bench/pubsub_cross.py SKYDB [--rounds N] [--messages M] [--out FILE] [--note TEXT]

Runs tests/compat/compat_server.py --pair twice: with SKYDB (two `skydb serve --database-url`
daemons on a private PostgreSQL cluster, shared coherence), then with redis-server (one server
that both names point at). Each time this script runs again as the client (--client): a raw
RESP2 subscriber on the second server, a raw publisher on the first.

- Latency: for 100 B, 16 KiB and 256 KiB, N messages one at a time (the next PUBLISH after the
  previous message arrived); from sending the PUBLISH to the last byte of the message at the
  subscriber. p50 and p99.
- Throughput: M messages of 16 KiB pipelined by one publisher (a thread reads its replies);
  from the first PUBLISH to the last message at the subscriber. Messages/s and MiB/s.

Every message is checked whole at the subscriber (its sequence number and length). Prints the
figures with the run's conditions and writes them as one JSON object to --out.
"""
import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(HERE, "..", "tests", "compat", "compat_server.py")
SIZES = [100, 16 * 1024, 256 * 1024]
CHANNEL = b"bench:cross"


def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Reader:
    """Reads RESP2 replies (integers, bulks, arrays of them) from a socket."""

    def __init__(self, sock):
        self.sock, self.buf = sock, bytearray()

    def _fill(self, need):
        while len(self.buf) < need:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise SystemExit("pubsub_cross: the server closed the connection")
            self.buf += chunk

    def _line(self):
        while True:
            at = self.buf.find(b"\r\n")
            if at >= 0:
                line = bytes(self.buf[:at])
                del self.buf[: at + 2]
                return line
            self._fill(len(self.buf) + 1)

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            self._fill(n + 2)
            data = bytes(self.buf[:n])
            del self.buf[: n + 2]
            return data
        if kind == b"*":
            return [self.read() for _ in range(int(rest))]
        raise SystemExit("pubsub_cross: unexpected reply %r" % line[:80])


def body(seq, size):
    head = b"%d:" % seq
    return head + b"x" * (size - len(head))


def take(sub, seq, size):
    frame = sub.read()
    if frame[:2] != [b"message", CHANNEL] or frame[2] != body(seq, size):
        got = frame[2][:16] if len(frame) == 3 else frame
        raise SystemExit("pubsub_cross: message %d of %d bytes arrived wrong: %r" % (seq, size, got))


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def client(rounds, messages):
    near = socket.socket(socket.AF_UNIX)
    near.connect(os.environ["SKYDB_COMPAT_SOCKET"])
    far = socket.socket(socket.AF_UNIX)
    far.connect(os.environ.get("SKYDB_COMPAT_SOCKET_B", os.environ["SKYDB_COMPAT_SOCKET"]))
    pub, sub = Reader(near), Reader(far)
    far.sendall(command(b"SUBSCRIBE", CHANNEL))
    sub.read()
    # The subscription is counted on the publisher's server before the run starts.
    deadline = time.time() + 30
    while True:
        near.sendall(command(b"PUBSUB", b"NUMSUB", CHANNEL))
        if pub.read()[1] == 1 or time.time() > deadline:
            break
        time.sleep(0.1)
    result = {"latency_ms": {}, "rounds": rounds}
    seq = 0
    for size in SIZES:
        samples = []
        for _ in range(rounds):
            seq += 1
            started = time.perf_counter()
            near.sendall(command(b"PUBLISH", CHANNEL, body(seq, size)))
            take(sub, seq, size)
            samples.append((time.perf_counter() - started) * 1000)
            if pub.read() != 1:
                raise SystemExit("pubsub_cross: PUBLISH did not count the subscriber")
        result["latency_ms"][str(size)] = {"p50": round(percentile(samples, 50), 3),
                                           "p99": round(percentile(samples, 99), 3)}
    size = 16 * 1024
    first = seq + 1
    replies = threading.Thread(target=lambda: [pub.read() for _ in range(messages)])
    replies.start()
    started = time.perf_counter()
    for seq in range(first, first + messages):
        near.sendall(command(b"PUBLISH", CHANNEL, body(seq, size)))
    for seq in range(first, first + messages):
        take(sub, seq, size)
    elapsed = time.perf_counter() - started
    replies.join(timeout=60)
    result["throughput_16k"] = {"messages": messages,
                                "messages_per_s": round(messages / elapsed),
                                "mib_per_s": round(messages * size / elapsed / (1 << 20), 1)}
    print("RESULT " + json.dumps(result), flush=True)


def measure(server_args, rounds, messages):
    argv = [sys.executable, LAUNCHER] + server_args + [
        "--pair", "--timeout", "600", "--", sys.executable, os.path.abspath(__file__),
        "--client", "--rounds", str(rounds), "--messages", str(messages)]
    done = subprocess.run(argv, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
    raise SystemExit("pubsub_cross: no result from %s" % " ".join(server_args))


def conditions(skydb, note):
    def output(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"
    return {"commit": output(["git", "-C", HERE, "rev-parse", "--short", "HEAD"]),
            "skydb": skydb, "nproc": os.cpu_count(), "host": platform.node(),
            "kernel": platform.release(), "loadavg_before": open("/proc/loadavg").read().split()[:3],
            "redis": output(["redis-server", "--version"]).split()[2:3],
            "postgres": output(["pg_config", "--version"]),
            "transport": "unix sockets, RESP2, one publisher and one subscriber connection",
            "database": "compat_server.py --pair: a private cluster on this host, initdb defaults,"
                        " fsync=off, unix socket; the carrier commits with synchronous_commit=off",
            "note": note}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("skydb", nargs="?")
    parser.add_argument("--client", action="store_true")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--out")
    parser.add_argument("--note", default="", help="the build, what else ran: kept with the result")
    args = parser.parse_args()
    if args.client:
        return client(args.rounds, args.messages)
    if not args.skydb:
        parser.error("the skydb binary is required")
    run = {"conditions": conditions(os.path.abspath(args.skydb), args.note), "started": time.time()}
    run["skydb"] = measure(["--skydb", args.skydb], args.rounds, args.messages)
    run["redis"] = measure(["--redis-server", args.redis_server], args.rounds, args.messages)
    run["conditions"]["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    print(json.dumps(run["conditions"]))
    print("%-28s %18s %18s" % ("", "skydb (2 daemons)", "redis-server"))
    for size in SIZES:
        s, r = run["skydb"]["latency_ms"][str(size)], run["redis"]["latency_ms"][str(size)]
        print("%-28s %8.2f / %7.2f %8.2f / %7.2f" % ("latency p50/p99 ms, %d B" % size,
                                                     s["p50"], s["p99"], r["p50"], r["p99"]))
    s, r = run["skydb"]["throughput_16k"], run["redis"]["throughput_16k"]
    print("%-28s %8d (%5.1f MiB/s) %8d (%5.1f MiB/s)" % (
        "16 KiB messages/s", s["messages_per_s"], s["mib_per_s"], r["messages_per_s"],
        r["mib_per_s"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(run, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
