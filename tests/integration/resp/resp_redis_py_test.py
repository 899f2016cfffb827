"""Debian's python3-redis against the RESP server: every command and its error cases,
pipelines, binary values with every byte, AUTH, limits and malformed input."""
import socket
import time
import unittest

import redis

from resp_support import Server, main_args, wait_until


def client(server, **kwargs):
    return redis.Redis(unix_socket_path=server.socket, socket_timeout=10, **kwargs)


class CommandsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--default-ttl-ms", 0, "--max-value-bytes", 1048576)
        cls.r = client(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.server.stop()

    def assertError(self, text, fn, *args, **kwargs):
        with self.assertRaises(redis.exceptions.ResponseError) as caught:
            fn(*args, **kwargs)
        self.assertEqual(str(caught.exception), text)

    def test_connection(self):
        r = self.r
        self.assertTrue(r.ping())
        self.assertEqual(r.echo(b"hi"), b"hi")
        self.assertTrue(r.execute_command("SELECT", 0))
        self.assertError("DB index is out of range", r.execute_command, "SELECT", 3)
        self.assertError("value is not an integer or out of range", r.execute_command,
                         "SELECT", "x")
        self.assertTrue(r.client_setname("py"))
        self.assertEqual(r.client_getname(), "py")
        self.assertIsInstance(r.client_id(), int)
        self.assertError("Client names cannot contain spaces, newlines or special characters.",
                         r.client_setname, "a b")
        hello = r.execute_command("HELLO", 2)
        self.assertIn(b"proto", hello)
        self.assertError("NOPROTO unsupported protocol version", r.execute_command, "HELLO", 4)
        self.assertError("AUTH <password> called without any password configured for the "
                         "default user. Are you sure your configuration is correct?",
                         r.execute_command, "AUTH", "x")
        self.assertGreater(r.command_count(), 20)
        self.assertIn("redis_version", r.info("server"))

    def test_set_variants(self):
        r = self.r
        self.assertTrue(r.set("s", "1"))
        self.assertIsNone(r.set("s", "2", nx=True))
        self.assertTrue(r.set("s", "2", xx=True))
        self.assertIsNone(r.set("s:missing", "2", xx=True))
        self.assertEqual(r.set("s", "3", get=True), b"2")
        self.assertTrue(r.set("s", "4", ex=100))
        self.assertEqual(r.ttl("s"), 100)
        self.assertTrue(r.set("s", "5", px=50000))
        self.assertTrue(49000 <= r.pttl("s") <= 50000)
        self.assertTrue(r.set("s", "6", exat=int(time.time()) + 200))
        self.assertTrue(199 <= r.ttl("s") <= 200)
        self.assertTrue(r.set("s", "7", pxat=int(time.time() * 1000) + 300000))
        self.assertTrue(r.set("s", "8", keepttl=True))
        self.assertTrue(299 <= r.ttl("s") <= 300)
        self.assertError("invalid expire time in 'set' command", r.set, "s", "x", ex=0)
        self.assertError("invalid expire time in 'set' command", r.execute_command,
                         "SET", "s", "x", "PX", -5)
        self.assertError("value is not an integer or out of range", r.execute_command,
                         "SET", "s", "x", "EX", "soon")
        self.assertError("syntax error", r.execute_command, "SET", "s", "x", "NX", "XX")
        self.assertError("syntax error", r.execute_command, "SET", "s", "x", "EX", 1, "PX", 1)
        self.assertError("syntax error", r.execute_command, "SET", "s", "x", "KEEPTTL", "EX", 1)
        self.assertError("syntax error", r.execute_command, "SET", "s", "x", "EX")
        self.assertError("wrong number of arguments for 'set' command", r.execute_command,
                         "SET", "s")

    def test_setex_getex_getdel(self):
        r = self.r
        self.assertTrue(r.setex("e", 30, "v"))
        self.assertEqual(r.ttl("e"), 30)
        self.assertTrue(r.psetex("e", 40000, "v"))
        self.assertTrue(39000 <= r.pttl("e") <= 40000)
        self.assertError("invalid expire time in 'setex' command", r.setex, "e", 0, "v")
        self.assertError("invalid expire time in 'psetex' command", r.execute_command,
                         "PSETEX", "e", -1, "v")
        self.assertEqual(r.getex("e", ex=60), b"v")
        self.assertEqual(r.ttl("e"), 60)
        self.assertEqual(r.getex("e", persist=True), b"v")
        self.assertEqual(r.ttl("e"), -1)
        self.assertEqual(r.getex("e", px=70000), b"v")
        self.assertEqual(r.getex("e"), b"v")
        self.assertIsNone(r.getex("e:missing", ex=5))
        self.assertError("syntax error", r.execute_command, "GETEX", "e", "EX", 1, "PERSIST")
        self.assertError("invalid expire time in 'getex' command", r.execute_command,
                         "GETEX", "e", "EX", 0)
        self.assertEqual(r.getdel("e"), b"v")
        self.assertIsNone(r.getdel("e"))
        self.assertIsNone(r.get("e"))

    def test_keys(self):
        r = self.r
        r.set("k1", "a")
        r.set("k2", "b")
        self.assertEqual(r.mget("k1", "nope", "k2"), [b"a", None, b"b"])
        self.assertEqual(r.exists("k1", "k2", "k1", "nope"), 3)
        self.assertTrue(r.expire("k1", 100))
        self.assertEqual(r.ttl("k1"), 100)
        self.assertTrue(r.pexpire("k1", 100000))
        self.assertTrue(r.expireat("k1", int(time.time()) + 500))
        self.assertTrue(r.execute_command("PEXPIREAT", "k1", int(time.time() * 1000) + 500000))
        self.assertFalse(r.expire("nope", 10))
        self.assertTrue(r.persist("k1"))
        self.assertFalse(r.persist("k1"))
        self.assertEqual(r.ttl("k1"), -1)
        self.assertEqual(r.ttl("nope"), -2)
        self.assertEqual(r.pttl("nope"), -2)
        self.assertError("Unsupported option XY", r.execute_command, "EXPIRE", "k1", 5, "XY")
        self.assertError("invalid expire time in 'expire' command", r.execute_command,
                         "EXPIRE", "k1", 99999999999999999)
        self.assertTrue(r.expire("k2", -1))  # a past deadline deletes, as in Redis
        self.assertEqual(r.exists("k2"), 0)
        self.assertEqual(r.delete("k1", "nope"), 1)
        self.assertEqual(r.unlink("k1"), 0)
        self.assertError("wrong number of arguments for 'del' command", r.execute_command, "DEL")

    def test_scan_dbsize_info(self):
        r = self.r
        for i in range(50):
            r.set("scan:%d" % i, i)
        self.assertEqual(set(r.scan_iter(match="scan:*", count=7)),
                         {b"scan:%d" % i for i in range(50)})
        self.assertEqual(list(r.scan_iter(match="scan:*", _type="hash")), [])
        self.assertError("invalid cursor", r.execute_command, "SCAN", "x")
        self.assertError("syntax error", r.execute_command, "SCAN", 0, "COUNT", 0)
        self.assertError("syntax error", r.execute_command, "SCAN", 0, "MATCH")
        self.assertGreaterEqual(r.dbsize(), 50)
        info = r.info()
        for field in ["connected_clients", "used_memory", "store_kind", "store_durability",
                      "store_queue_depth", "store_commits", "total_commands_processed"]:
            self.assertIn(field, info)
        self.assertEqual(info["store_kind"], "memory")
        self.assertGreaterEqual(info["db0"]["keys"], 50)
        self.assertEqual(list(r.info("keyspace").keys()), ["db0"])

    def test_unknown_command(self):
        self.assertError("unknown command 'LPUSH', with args beginning with: 'a' 'b' ",
                         self.r.execute_command, "LPUSH", "a", "b")

    def test_binary_values_every_byte(self):
        value = bytes(range(256)) * 4 + b"\r\n$-1\r\n*3\r\n"
        key = bytes(range(1, 256))
        self.assertTrue(self.r.set(key, value))
        self.assertEqual(self.r.get(key), value)
        self.assertEqual(self.r.mget([key]), [value])

    def test_large_value_and_limit(self):
        big = b"x" * 1048576
        self.assertTrue(self.r.set("big", big))
        self.assertEqual(self.r.get("big"), big)
        # Refused at the length header with an error reply, then closed. Whether the client
        # reads the reply or first sees the closed socket depends on timing: either is right.
        with self.assertRaises((redis.exceptions.ConnectionError,
                                redis.exceptions.ResponseError)) as refused:
            self.r.set("too-big", big + b"x")
        if isinstance(refused.exception, redis.exceptions.ResponseError):
            self.assertIn("invalid bulk length", str(refused.exception))
            # The client read the reply before it saw the close, so the pool kept the
            # connection the server closed (as redis-server closes it after a protocol error):
            # its next command finds it closed, and the pool drops it.
            with self.assertRaises(redis.exceptions.ConnectionError):
                self.r.ping()
        self.assertTrue(self.r.ping())  # the pool reconnects

    def test_pipeline_order(self):
        pipe = self.r.pipeline(transaction=False)
        for i in range(1000):
            pipe.set("p:%d" % i, i)
            pipe.get("p:%d" % i)
            pipe.execute_command("LPUSH", "p:%d" % i, "x") if i == 500 else None
        replies = pipe.execute(raise_on_error=False)
        values = [v for v in replies if not isinstance(v, Exception) and v is not True]
        self.assertEqual(values, [str(i).encode() for i in range(1000)])
        self.assertIsInstance(replies[1002], redis.exceptions.ResponseError)



class CountersAndAdminTest(unittest.TestCase):
    """INCR family, EXPIRE conditions, SETNX, TYPE, KEYS, FLUSHALL and INFO through redis-py's
    own methods, with Redis 7's replies and error texts."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--default-ttl-ms", 0, "--allow-flush", 1)
        cls.r = client(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.server.stop()

    def assertError(self, text, fn, *args, **kwargs):
        with self.assertRaises(redis.exceptions.ResponseError) as caught:
            fn(*args, **kwargs)
        self.assertEqual(str(caught.exception), text)

    def test_counters(self):
        r = self.r
        self.assertEqual(r.incr("c"), 1)
        self.assertEqual(r.incrby("c", 41), 42)
        self.assertEqual(r.decr("c"), 41)
        self.assertEqual(r.decrby("c", 40), 1)
        self.assertEqual(r.ttl("c"), -1)
        r.set("t", 5, ex=100)
        self.assertEqual(r.incr("t"), 6)
        self.assertEqual(r.ttl("t"), 100)
        self.assertEqual(r.incrbyfloat("f", 10.5), 10.5)
        self.assertEqual(r.incrbyfloat("f", 0.1), 10.6)
        self.assertEqual(r.get("f"), b"10.6")
        r.set("s", "abc")
        self.assertError("value is not an integer or out of range", r.incr, "s")
        self.assertError("value is not a valid float", r.incrbyfloat, "s", 1)
        r.set("max", 9223372036854775807)
        self.assertError("increment or decrement would overflow", r.incr, "max")
        self.assertError("increment would produce NaN or Infinity", r.incrbyfloat, "f", "inf")
        self.assertEqual(r.get("max"), b"9223372036854775807")

    def test_expire_conditions(self):
        r = self.r
        r.set("e", "v")
        self.assertFalse(r.expire("e", 100, gt=True))  # no TTL is an infinite one
        self.assertTrue(r.expire("e", 100, nx=True))
        self.assertFalse(r.expire("e", 200, lt=True))
        self.assertTrue(r.expire("e", 200, xx=True, gt=True))
        self.assertEqual(r.ttl("e"), 200)
        self.assertTrue(r.pexpire("e", 5000, lt=True))
        self.assertError("NX and XX, GT or LT options at the same time are not compatible",
                         r.execute_command, "EXPIRE", "e", 1, "NX", "GT")
        self.assertError("GT and LT options at the same time are not compatible",
                         r.execute_command, "EXPIRE", "e", 1, "GT", "LT")
        self.assertError("Unsupported option FOO", r.execute_command, "EXPIRE", "e", 1, "FOO")
        self.assertLessEqual(r.pttl("e"), 5000)

    def test_setnx_type_keys(self):
        r = self.r
        self.assertTrue(r.setnx("k:1", "a"))
        self.assertFalse(r.setnx("k:1", "b"))
        self.assertEqual(r.get("k:1"), b"a")
        self.assertEqual(r.type("k:1"), b"string")
        self.assertEqual(r.type("k:none"), b"none")
        for i in range(2, 1500):
            r.set("k:%d" % i, i)
        self.assertEqual(sorted(r.keys("k:*")), sorted(b"k:%d" % i for i in range(1, 1500)))
        self.assertEqual(len(r.keys("k:1?")), 10)

    def test_info_sections_and_stats(self):
        r = self.r
        r.get("x")
        self.assertError("value is not an integer or out of range", r.execute_command,
                         "INCRBY", "x", "y")
        info = r.info()
        for field in ["redis_version", "process_id", "run_id", "uptime_in_seconds",
                      "connected_clients", "maxclients", "used_memory", "used_memory_rss",
                      "maxmemory", "loading", "aof_enabled", "total_commands_processed",
                      "total_error_replies", "role", "connected_slaves", "master_repl_offset",
                      "used_cpu_sys", "used_cpu_user", "errorstat_ERR"]:
            self.assertIn(field, info)
        self.assertEqual(info["role"], "master")
        self.assertEqual(info["aof_enabled"], 0)
        stats = r.info("commandstats")
        self.assertGreaterEqual(stats["cmdstat_get"]["calls"], 1)
        self.assertGreaterEqual(stats["cmdstat_incrby"]["failed_calls"], 1)
        self.assertIn("usec_per_call", stats["cmdstat_get"])
        self.assertIn("cmdstat_get", r.info("everything"))

    def test_zz_flushall(self):  # last: it empties the store
        r = self.r
        r.set("gone:1", "v")
        self.assertTrue(r.flushall())
        self.assertEqual(r.dbsize(), 0)
        r.set("gone:2", "v")
        self.assertTrue(r.flushdb(asynchronous=True))
        self.assertEqual(r.keys("*"), [])

class AuthTest(unittest.TestCase):
    def test_requirepass(self):
        server = Server("--requirepass", "s3cret")
        try:
            anonymous = client(server)
            with self.assertRaises(redis.exceptions.AuthenticationError):
                anonymous.get("x")
            self.assertIn(b"-NOAUTH Authentication required.", server.raw(b"GET x\r\n"))
            with self.assertRaises(redis.exceptions.ResponseError) as wrong:
                client(server, password="wrong").ping()
            self.assertIn("WRONGPASS", str(wrong.exception))
            self.assertIn(b"-WRONGPASS invalid username-password pair or user is disabled.",
                          server.raw(b"AUTH wrong\r\n"))
            r = client(server, password="s3cret")
            self.assertTrue(r.set("a", "b"))
            self.assertTrue(client(server, username="default", password="s3cret").ping())
            hello = server.raw(b"HELLO 2 AUTH default s3cret\r\nGET a\r\n")
            self.assertTrue(hello.endswith(b"$1\r\nb\r\n"), hello)
            self.assertTrue(server.raw(b"QUIT\r\n").startswith(b"+OK\r\n<closed>"))
        finally:
            server.stop()


class LimitsTest(unittest.TestCase):
    def test_max_clients(self):
        server = Server("--max-clients", 2)
        try:
            a, b = client(server), client(server)
            self.assertTrue(a.ping() and b.ping())
            third = socket.socket(socket.AF_UNIX)
            third.connect(server.socket)
            third.settimeout(5)
            self.assertEqual(third.recv(100), b"-ERR max number of clients reached\r\n")
            self.assertEqual(third.recv(100), b"")
            third.close()
            a.connection_pool.disconnect()
            self.assertTrue(wait_until(lambda: server.raw(b"PING\r\n").startswith(b"+PONG")))
        finally:
            server.stop()

    def test_idle_timeout(self):
        server = Server("--idle-timeout-ms", 300)
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(server.socket)
            s.settimeout(5)
            self.assertEqual(s.recv(100), b"")  # closed by the server after ~300 ms
            s.close()
        finally:
            server.stop()

    def test_malformed_input_closes_with_error(self):
        server = Server()
        try:
            cases = {
                b"*x\r\n": b"-ERR Protocol error: invalid multibulk length\r\n<closed>",
                b"*1\r\n$x\r\n": b"-ERR Protocol error: invalid bulk length\r\n<closed>",
                b"*1\r\nfoo\r\n": b"-ERR Protocol error: expected '$', got 'f'\r\n<closed>",
                b"PING\r\n*1\r\n$-5\r\n":
                    b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n<closed>",
                b'SET "a b\r\n': b"-ERR Protocol error: unbalanced quotes in request\r\n<closed>",
            }
            for payload, expected in cases.items():
                self.assertEqual(server.raw(payload), expected)
            self.assertTrue(client(server).ping())  # the server is still fine
        finally:
            server.stop()

    def test_stalled_client_does_not_block_others(self):
        server = Server()
        try:
            stalled = socket.socket(socket.AF_UNIX)
            stalled.connect(server.socket)
            stalled.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n" + b"x" * 10)  # never ends
            hog = socket.socket(socket.AF_UNIX)
            hog.connect(server.socket)
            hog.setblocking(False)
            try:
                for _ in range(2000):  # pipelined GETs whose replies it never reads
                    hog.send(b"PING\r\n" * 500)
            except BlockingIOError:
                pass
            start = time.time()
            self.assertTrue(client(server).ping())
            self.assertLess(time.time() - start, 2)
            stalled.close()
            hog.close()
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(argv=main_args())
