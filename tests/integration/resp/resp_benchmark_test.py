"""redis-benchmark over the unix socket finishes SET and GET with no errors."""
import subprocess
import unittest

from resp_support import Server, main_args


class BenchmarkTest(unittest.TestCase):
    def run_benchmark(self, *extra):
        server = Server("--default-ttl-ms", 0)
        try:
            result = subprocess.run(
                ["redis-benchmark", "-s", server.socket, "-t", "set,get", "-n", "20000",
                 "-c", "50", "-d", "2080", "-q", *map(str, extra)],
                capture_output=True, timeout=120)
            out = (result.stdout + result.stderr).decode("latin1")
            self.assertEqual(result.returncode, 0, out)
            self.assertNotIn("ERR", out)
            self.assertNotIn("rror", out)
            self.assertRegex(out, r"SET: [0-9.]+ requests per second")
            self.assertRegex(out, r"GET: [0-9.]+ requests per second")
            stats = subprocess.run(["redis-cli", "-s", server.socket, "INFO", "stats"],
                                   capture_output=True, timeout=30).stdout.decode()
            self.assertIn("total_error_replies_protocol:0", stats)
            return out
        finally:
            server.stop()

    def test_set_get_no_pipeline(self):
        print(self.run_benchmark())

    def test_set_get_pipelined(self):
        print(self.run_benchmark("-P", 16))


if __name__ == "__main__":
    unittest.main(argv=main_args())
