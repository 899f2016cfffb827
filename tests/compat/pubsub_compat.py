"""Pub/sub as a real app sees it (Debian's python3-redis for RESP2, a raw socket for RESP3),
on one server or, under `compat_server.py --pair`, across two that must behave as one:
payloads of 100 B, 5,000 B, 6,000 B, 16 KiB, 37 KiB, 256 KiB and 1 MiB, every byte value in
them, reach every channel and pattern subscriber whole and in publish order; PUBLISH counts
them all; PUBSUB NUMSUB / CHANNELS / NUMPAT answer for every server. Subscribers sit on the
second server, the publisher on the first (one server: both on it). Payloads are compared,
never printed."""
import hashlib
import os
import socket
import time

import redis

from compat_steps import expect, fail, passed, run

SIZES = [100, 5000, 6000, 16 * 1024, 37 * 1024, 256 * 1024, 1 << 20]
PAIR = os.environ.get("SKYDB_COMPAT_PAIR") == "1"
NEAR = os.environ["SKYDB_COMPAT_SOCKET"]  # the publisher's server
FAR = os.environ.get("SKYDB_COMPAT_SOCKET_B", NEAR)  # the subscribers'


def payload(size, seed):
    """`size` bytes in which every byte value occurs (size >= 256), different per seed."""
    out = bytearray()
    block = 0
    while len(out) < size:
        out += hashlib.sha256(b"%d/%d" % (seed, block)).digest()
        block += 1
    out[: min(256, size)] = bytes(range(256))[: min(256, size)]
    return bytes(out[:size])


def digest(data):
    return "%d bytes, sha256 %s" % (len(data), hashlib.sha256(data).hexdigest()[:16])


def connect(path):
    return redis.Redis(unix_socket_path=path, socket_timeout=30)


class Resp3Subscriber:
    """A raw RESP3 client (HELLO 3) that subscribes and reads push frames."""

    def __init__(self, path, channel):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.buf = b""
        self.send(b"HELLO", b"3")
        hello = self.read()
        if not isinstance(hello, dict) or hello.get(b"proto") != 3:
            fail("RESP3 HELLO", "no RESP3 map: %r" % (hello,))
        self.send(b"SUBSCRIBE", channel)
        expect("RESP3 subscribe confirmation", self.read(), ("push", [b"subscribe", channel, 1]))

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exactly(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return self.exactly(int(rest))
        if kind == b"_":
            return None
        if kind in (b"*", b">"):
            items = [self.read() for _ in range(int(rest))]
            return ("push", items) if kind == b">" else items
        if kind == b"%":
            return {self.read(): self.read() for _ in range(int(rest))}
        fail("RESP3 read", "unexpected reply type %r" % kind)


def wait_message(pubsub, step):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = pubsub.get_message(timeout=1)
        if m is not None and m["type"] in ("message", "pmessage"):
            return m
    fail(step, "no message within 30 s")


def sizes_reach_every_subscriber():
    publisher = connect(NEAR)
    resp2 = connect(FAR).pubsub()
    resp2.subscribe("sizes")
    pattern = connect(FAR).pubsub()
    pattern.psubscribe("si*")
    for p in (resp2, pattern):
        wait_confirmation = p.get_message(timeout=10)
        expect("subscription confirmed", wait_confirmation["type"] in ("subscribe", "psubscribe"),
               True)
    resp3 = Resp3Subscriber(FAR, b"sizes")
    for i, size in enumerate(SIZES):
        data = payload(size, i)
        step = "PUBLISH of %d bytes" % size
        expect(step + ": receivers counted", publisher.publish("sizes", data), 3)
        m = wait_message(resp2, step + " (RESP2 channel subscriber)")
        expect(step + ": RESP2 channel and payload", (m["channel"], digest(m["data"])),
               (b"sizes", digest(data)))
        m = wait_message(pattern, step + " (pattern subscriber)")
        expect(step + ": pattern, channel and payload",
               (m["pattern"], m["channel"], digest(m["data"])), (b"si*", b"sizes", digest(data)))
        kind, items = resp3.read()
        expect(step + ": RESP3 push", (kind, items[:2], digest(items[2])),
               ("push", [b"message", b"sizes"], digest(data)))


def order_is_kept():
    publisher = connect(NEAR)
    sub = connect(FAR).pubsub()
    sub.subscribe("order")
    sub.get_message(timeout=10)
    pipe = publisher.pipeline(transaction=False)
    sent = []
    for i in range(200):
        data = payload(16 * 1024 if i % 20 == 0 else 40, 1000 + i)
        sent.append(digest(data))
        pipe.publish("order", data)
    expect("200 pipelined PUBLISHes: receivers", pipe.execute(), [1] * 200)
    got = [digest(wait_message(sub, "message %d of 200" % i)["data"]) for i in range(200)]
    expect("200 messages in publish order", got, sent)


def introspection_counts_every_server():
    near, far = connect(NEAR), connect(FAR)
    subs = [connect(FAR).pubsub(), connect(NEAR).pubsub()]
    subs[0].subscribe("intro:a", "intro:b")
    subs[1].subscribe("intro:a")
    subs[0].psubscribe("intro:*")
    subs[1].psubscribe("intro:*", "other:*")
    for s in subs:  # each confirmation is the command's reply: counted from then on
        for _ in range(len(s.channels) + len(s.patterns)):
            s.get_message(timeout=10)
    for r in (near, far):
        expect("PUBSUB NUMSUB", r.pubsub_numsub("intro:a", "intro:b", "intro:none"),
               [(b"intro:a", 2), (b"intro:b", 1), (b"intro:none", 0)])
        expect("PUBSUB CHANNELS intro:*", sorted(r.pubsub_channels("intro:*")),
               [b"intro:a", b"intro:b"])
        expect("PUBSUB NUMPAT", r.pubsub_numpat(), 2)
    # Two channel subscribers and two pattern ones ('intro:*' on both servers).
    expect("PUBLISH to a channel and its patterns", near.publish("intro:a", b"x"), 4)
    subs[0].unsubscribe("intro:b")
    deadline = time.monotonic() + 10
    confirmed = False
    while not confirmed and time.monotonic() < deadline:  # past the two messages just sent
        m = subs[0].get_message(timeout=1)
        confirmed = m is not None and m["type"] == "unsubscribe"
    expect("UNSUBSCRIBE confirmed", confirmed, True)
    expect("NUMSUB after UNSUBSCRIBE", near.pubsub_numsub("intro:b"), [(b"intro:b", 0)])


run("every size reaches every subscriber", sizes_reach_every_subscriber)
run("publish order", order_is_kept)
run("introspection counts every server", introspection_counts_every_server)
passed()
