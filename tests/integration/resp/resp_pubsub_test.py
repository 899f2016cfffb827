"""Pub/sub and CLIENT LIST/KILL with real clients (Debian's python3-redis, a raw socket for
RESP3 push frames and redis-cli) against resp_test_server: subscribe, publish, patterns,
unsubscribe, subscribed-mode errors, a slow subscriber closed while a publisher keeps its rate."""
import socket
import subprocess
import threading
import time
import unittest

import redis

from resp_support import Server, main_args, wait_until


def client(server, **kwargs):
    return redis.Redis(unix_socket_path=server.socket, socket_timeout=10, **kwargs)


def next_message(pubsub, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = pubsub.get_message(timeout=0.2)
        if m is not None:
            return m
    return None


class RawClient:
    """A socket that sends commands and reads exactly the bytes expected (bounded in time)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.s.settimeout(5)

    def send(self, *commands):
        self.s.sendall(b"".join(c.encode() + b"\r\n" for c in commands))

    def read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                break
            out += chunk
        return out

    def readline(self):
        out = b""
        while not out.endswith(b"\r\n"):
            chunk = self.s.recv(1)
            if not chunk:
                break
            out += chunk
        return out.strip()

    def close(self):
        self.s.close()


class PubSubTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--threads", 2)
        cls.r = client(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.server.stop()

    def test_subscribe_publish_patterns_unsubscribe(self):
        p = client(self.server).pubsub()
        p.subscribe("news", "sports")
        self.assertEqual(next_message(p)["type"], "subscribe")
        self.assertEqual(next_message(p)["data"], 2)
        p.psubscribe("n*")
        self.assertEqual(next_message(p)["type"], "psubscribe")
        self.assertEqual(self.r.publish("news", b"hello \x00\xff"), 2)
        got = [next_message(p), next_message(p)]
        kinds = sorted((m["type"], m["data"]) for m in got)
        self.assertEqual(kinds, [("message", b"hello \x00\xff"), ("pmessage", b"hello \x00\xff")])
        self.assertEqual(self.r.pubsub_numsub("news", "none"), [(b"news", 1), (b"none", 0)])
        self.assertEqual(sorted(self.r.pubsub_channels()), [b"news", b"sports"])
        self.assertEqual(self.r.pubsub_numpat(), 1)
        p.unsubscribe()
        left = sorted(next_message(p)["data"] for _ in range(2))
        self.assertEqual(left, [1, 2])  # one pattern remains
        p.punsubscribe()
        self.assertEqual(next_message(p)["data"], 0)
        self.assertEqual(self.r.publish("news", "x"), 0)
        p.close()

    def test_subscribed_mode_errors_and_ping(self):
        raw = RawClient(self.server.socket)
        raw.send("SUBSCRIBE a", "GET x", "PING")
        confirmation = b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
        error = (b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
                 b"QUIT / RESET are allowed in this context\r\n")
        pong = b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        want = confirmation + error + pong
        self.assertEqual(raw.read(len(want)), want)
        raw.send("UNSUBSCRIBE", "UNSUBSCRIBE", "PING")
        want = (b"*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n"
                b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n+PONG\r\n")
        self.assertEqual(raw.read(len(want)), want)
        raw.close()

    def test_resp3_push_frames(self):
        raw = RawClient(self.server.socket)
        raw.send("HELLO 3")
        self.assertEqual(raw.read(2), b"%7")
        raw.s.settimeout(0.5)
        try:
            while raw.s.recv(4096):
                pass
        except socket.timeout:
            pass
        raw.s.settimeout(5)
        raw.send("SUBSCRIBE ch", "PSUBSCRIBE c*", "GET k")  # GET is allowed in RESP3
        want = (b">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
                b">3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n_\r\n")
        self.assertEqual(raw.read(len(want)), want)
        self.assertEqual(self.r.publish("ch", "m"), 2)
        want = (b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n"
                b">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$1\r\nm\r\n")
        self.assertEqual(raw.read(len(want)), want)
        raw.close()

    def test_client_list_info_kill(self):
        victim = RawClient(self.server.socket)
        victim.send("CLIENT SETNAME victim", "CLIENT ID")
        self.assertEqual(victim.read(5), b"+OK\r\n")
        victim_id = int(victim.readline()[1:])
        listed = self.r.client_list()
        names = [c["name"] for c in listed]
        self.assertIn("victim", names)
        me = self.r.client_info()
        for field in ("id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub",
                      "psub", "multi", "qbuf", "obl", "oll", "omem", "cmd", "user", "resp",
                      "lib-name", "lib-ver"):
            self.assertIn(field, me)
        self.assertEqual(me["cmd"], "client|info")
        sub = client(self.server).pubsub()
        sub.subscribe("x")
        next_message(sub)
        pubsub_clients = self.r.client_list(_type="pubsub")
        self.assertEqual(len(pubsub_clients), 1)
        self.assertEqual(pubsub_clients[0]["sub"], "1")
        self.assertEqual(self.r.client_kill_filter(_id=victim_id), 1)
        self.assertEqual(victim.s.recv(100), b"")  # closed by the server
        victim.close()
        self.assertNotIn(str(victim_id), [c["id"] for c in self.r.client_list()])
        out = subprocess.run(["redis-cli", "-s", self.server.socket, "CLIENT", "KILL", "ID",
                              "999999"], capture_output=True, timeout=10)
        self.assertEqual(out.stdout.strip(), b"0")
        sub.close()

    def test_slow_subscriber_is_closed_and_publisher_keeps_its_rate(self):
        # A server whose clients may hold 1 MiB of replies; the subscriber reads nothing.
        server = Server("--threads", 2, "--max-output-buffer", 1 << 20)
        try:
            slow = RawClient(server.socket)
            slow.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            slow.send("SUBSCRIBE ch")
            slow.read(31)
            pub = client(server)
            payload = b"m" * 8192
            started = time.time()
            counts = [pub.publish("ch", payload) for _ in range(2000)]  # 16 MiB
            took = time.time() - started
            self.assertLess(took, 10.0, "the publisher was slowed by the subscriber")
            self.assertEqual(counts[0], 1)
            self.assertEqual(counts[-1], 0)  # the subscriber was closed
            # The publisher's rate after the close is not lower than before it (no stall).
            self.assertTrue(wait_until(lambda: pub.pubsub_numsub("ch") == [(b"ch", 0)]))
            pub.close()
            slow.close()
            server.log.flush()
            with open(server.log.name, "rb") as f:
                log = f.read()
            self.assertIn(b"output buffer limit (resp.max_output_buffer = 1048576 bytes) reached",
                          log)
            self.assertIn(b"client id=", log)
            self.assertNotIn(b"mmmm", log)  # never the messages themselves
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(argv=main_args())
