"""redis-cli against the RESP server: every supported command, errors, and --pipe mass
insertion of 100k keys."""
import subprocess
import unittest

from resp_support import Server, main_args


class RedisCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--default-ttl-ms", 0)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def cli(self, *args, stdin=None):
        result = subprocess.run(["redis-cli", "-s", self.server.socket, *map(str, args)],
                                input=stdin, capture_output=True, timeout=60)
        return result.stdout.decode("latin1").rstrip("\n")

    def test_connection_commands(self):
        self.assertEqual(self.cli("PING"), "PONG")
        self.assertEqual(self.cli("PING", "hi"), "hi")
        self.assertEqual(self.cli("ECHO", "hello world"), "hello world")
        self.assertEqual(self.cli("SELECT", 0), "OK")
        self.assertEqual(self.cli("SELECT", 1), "ERR DB index is out of range")
        self.assertEqual(self.cli("CLIENT", "SETNAME", "x"), "OK")
        self.assertTrue(self.cli("CLIENT", "ID").isdigit())
        self.assertEqual(self.cli("CLIENT", "GETNAME"), "")
        self.assertEqual(self.cli("CLIENT", "SETINFO", "lib-name", "cli"), "OK")
        self.assertIn("proto", self.cli("HELLO", 2))
        self.assertIn("proto 3", self.cli("HELLO", 3).split("\n"))
        self.assertIn("NOPROTO", self.cli("HELLO", 4))
        self.assertEqual(self.cli("QUIT"), "OK")
        self.assertTrue(self.cli("COMMAND", "COUNT").isdigit())
        self.assertIn("get", self.cli("COMMAND").split("\n"))
        self.assertEqual(self.cli("COMMAND", "DOCS"), "")

    def test_strings(self):
        self.assertEqual(self.cli("SET", "cli:a", "1"), "OK")
        self.assertEqual(self.cli("GET", "cli:a"), "1")
        self.assertEqual(self.cli("SET", "cli:a", "2", "NX"), "")
        self.assertEqual(self.cli("SET", "cli:a", "2", "XX", "GET"), "1")
        self.assertEqual(self.cli("SET", "cli:a", "3", "EX", 100), "OK")
        self.assertEqual(self.cli("TTL", "cli:a"), "100")
        self.assertEqual(self.cli("SET", "cli:a", "4", "KEEPTTL"), "OK")
        self.assertEqual(self.cli("TTL", "cli:a"), "100")
        self.assertEqual(self.cli("SETEX", "cli:b", 50, "v"), "OK")
        self.assertEqual(self.cli("PSETEX", "cli:c", 50000, "v"), "OK")
        self.assertIn(self.cli("PTTL", "cli:c"), [str(n) for n in range(49000, 50001)])
        self.assertEqual(self.cli("GETEX", "cli:b", "PERSIST"), "v")
        self.assertEqual(self.cli("TTL", "cli:b"), "-1")
        self.assertEqual(self.cli("GETEX", "cli:b", "EX", 7), "v")
        self.assertEqual(self.cli("TTL", "cli:b"), "7")
        self.assertEqual(self.cli("MGET", "cli:a", "cli:nope", "cli:b"), "4\n\nv")
        self.assertEqual(self.cli("GETDEL", "cli:b"), "v")
        self.assertEqual(self.cli("GET", "cli:b"), "")
        self.assertEqual(self.cli("SET", "cli:a", "x", "EX", 0),
                         "ERR invalid expire time in 'set' command")
        self.assertEqual(self.cli("SET", "cli:a", "x", "NX", "XX"), "ERR syntax error")
        self.assertEqual(self.cli("GET"), "ERR wrong number of arguments for 'get' command")

    def test_keys(self):
        self.assertEqual(self.cli("SET", "k:1", "v"), "OK")
        self.assertEqual(self.cli("SET", "k:2", "v"), "OK")
        self.assertEqual(self.cli("EXISTS", "k:1", "k:2", "k:3"), "2")
        self.assertEqual(self.cli("EXPIRE", "k:1", 100), "1")
        self.assertEqual(self.cli("TTL", "k:1"), "100")
        self.assertEqual(self.cli("PEXPIRE", "k:1", 5000), "1")
        self.assertEqual(self.cli("EXPIREAT", "k:1", 4102444800), "1")
        self.assertEqual(self.cli("PERSIST", "k:1"), "1")
        self.assertEqual(self.cli("TTL", "k:1"), "-1")
        self.assertEqual(self.cli("TTL", "k:none"), "-2")
        self.assertEqual(self.cli("PTTL", "k:none"), "-2")
        self.assertEqual(self.cli("DEL", "k:1", "k:none"), "1")
        self.assertEqual(self.cli("UNLINK", "k:2"), "1")
        self.assertTrue(self.cli("DBSIZE").isdigit())
        self.assertEqual(self.cli("FLUSHALL"),
                         "ERR flushall is disabled: it would delete every session; "
                         "set resp.allow_flush = true to allow it")
        self.assertEqual(self.cli("LPUSH", "l", "x"),
                         "ERR unknown command 'LPUSH', with args beginning with: 'l' 'x' ")
        self.assertEqual(self.cli("EXISTS", "l"), "0")

    def test_scan_and_info(self):
        for i in range(30):
            self.cli("SET", "scan:%d" % i, i)
        keys = set(self.cli("--scan", "--pattern", "scan:*").split("\n"))
        self.assertEqual(keys, {"scan:%d" % i for i in range(30)})
        info = self.cli("INFO")
        for section in ["# Server", "# Clients", "# Memory", "# Persistence", "# Stats",
                        "# Keyspace"]:
            self.assertIn(section, info)
        self.assertIn("store_kind:memory", info)
        self.assertIn("db0:keys=", self.cli("INFO", "keyspace"))

    def test_pipe_mass_insertion(self):
        lines = []
        for i in range(100000):
            key = "mass:%d" % i
            value = "value-%d" % i
            lines.append("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                         % (len(key), key, len(value), value))
        out = self.cli("--pipe", stdin="".join(lines).encode())
        self.assertIn("errors: 0, replies: 100000", out)
        self.assertEqual(self.cli("GET", "mass:99999"), "value-99999")
        self.assertEqual(self.cli("--scan", "--pattern", "mass:*").count("\n"),
                         99999)
        self.assertEqual(self.cli("DEL", *["mass:%d" % i for i in range(10)]), "10")
        self.assertEqual(self.cli("EXISTS", "mass:10"), "1")


class RedisCliMassInsertOnly(unittest.TestCase):
    def test_dbsize_after_pipe(self):
        server = Server("--default-ttl-ms", 0)
        try:
            payload = "".join("SET key:%d %d\r\n" % (i, i) for i in range(100000))
            result = subprocess.run(["redis-cli", "-s", server.socket, "--pipe"],
                                    input=payload.encode(), capture_output=True, timeout=120)
            self.assertIn(b"errors: 0, replies: 100000", result.stdout)
            dbsize = subprocess.run(["redis-cli", "-s", server.socket, "DBSIZE"],
                                    capture_output=True, timeout=30).stdout.strip()
            self.assertEqual(dbsize, b"100000")
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(argv=main_args())
