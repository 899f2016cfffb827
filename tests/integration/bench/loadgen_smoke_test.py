"""Smoke test of the load generator (bench/loadgen) against a real memory-only skydb: a short
run is reported valid, and each validity gate makes a run invalid when it should. Seconds, tiny
N; every server is started in its own temp dir and stopped by its pid.

Usage: loadgen_smoke_test.py SKYDB_BINARY LOADGEN_BINARY
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SKYDB, LOADGEN = sys.argv[1], sys.argv[2]


class Daemon:
    """`skydb serve --store memory` with config overrides, on DIR/run/skydb.sock."""

    def __init__(self, *sets):
        # The log sits beside DIR: skydb refuses a DIR holding files that are not its own.
        self.root = tempfile.mkdtemp(prefix="skydb-loadgen-")
        os.chmod(self.root, 0o755)  # the service user must reach DIR below it
        self.dir = os.path.join(self.root, "d")
        self.socket = os.path.join(self.dir, "run", "skydb.sock")
        args = [SKYDB]
        for kv in sets:
            args += ["--set", kv]
        args += ["serve", "--store", "memory", "--data-dir", self.dir]
        if os.geteuid() == 0:  # a daemon started as root drops to its service user
            args += ["--user", os.environ.get("SKYDB_TEST_USER", "skydbtest")]
        self.log = open(os.path.join(self.root, "daemon.log"), "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log,
                                     env=dict(os.environ, SKYDB_CONFIG="", SKYDB_HTTP_PORT="0"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(self.socket)
                    return
                except OSError:
                    time.sleep(0.05)
        self.stop()
        raise RuntimeError("skydb did not listen: " + open(self.log.name).read())

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


def loadgen(sock, *extra, store="memory", durability="none", duration=1):
    """Runs a short load; returns (exit code, parsed JSON or None, stderr)."""
    args = [LOADGEN, "--socket", sock, "--expect-store", store, "--expect-durability", durability,
            "--connections", "4", "--warmup", "0.2", "--duration", str(duration), "--drain", "2",
            "--establish-timeout", "2", *map(str, extra)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    out = json.loads(p.stdout) if p.stdout.strip() else None
    return p.returncode, out, p.stderr


class LoadgenSmoke(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def assertInvalidBecause(self, rc, out, fragment):
        self.assertEqual(rc, 1, out)
        self.assertFalse(out["valid"])
        self.assertIsNone(out["result"], "an invalid run must not report figures")
        self.assertTrue(any(fragment in r for r in out["invalid_reasons"]),
                        f"no reason mentions {fragment!r}: {out['invalid_reasons']}")

    def test_a_healthy_closed_loop_run_is_valid_with_its_conditions(self):
        # 1 ms think time keeps the generator far from its CPU gate even under ASan
        rc, out, err = loadgen(self.daemon.socket, "--value-bytes", "2080", "--think-ms", "1",
                               "--label", "arm=smoke")
        self.assertEqual(rc, 0, (out, err))
        self.assertTrue(out["valid"], out["invalid_reasons"])
        res, cond = out["result"], out["conditions"]
        self.assertGreater(res["interactions"], 0)
        self.assertEqual(res["interactions"], res["interaction"]["count"])
        self.assertGreater(res["writes_per_s"], 0)
        self.assertLess(res["interactions_per_s"], 4 * 1000)  # 4 connections, ≥ 1 ms apart
        # every interaction after a session's first write reads that write back
        self.assertGreater(res["read_hits"], 0)
        lat = res["interaction"]
        self.assertLessEqual(lat["p50_us"], lat["p99_us"])
        self.assertLessEqual(lat["p99_us"], lat["max_us"])
        self.assertEqual(out["checks"]["stale_reads"], 0)
        self.assertEqual(cond["store_kind"], "memory")
        self.assertEqual(cond["value_bytes"], 2080)
        self.assertEqual(cond["loop"], "closed")
        self.assertEqual(cond["label_arm"], "smoke")
        for key in ("commit", "host", "kernel", "cores_online", "load_start", "load_end",
                    "server_skydb_version", "store_durability"):
            self.assertIn(key, cond)

    def test_an_open_loop_run_keeps_its_rate(self):
        rc, out, err = loadgen(self.daemon.socket, "--rate", "200", duration=2)
        self.assertEqual(rc, 0, (out, err))
        self.assertEqual(out["conditions"]["loop"], "open")
        self.assertAlmostEqual(out["result"]["interactions_per_s"], 200, delta=60)
        self.assertFalse(out["result"]["saturated"])

    def test_two_load_threads_split_the_connections_and_merge_their_counts(self):
        rc, out, err = loadgen(self.daemon.socket, "--threads", "2", "--think-ms", "1")
        self.assertEqual(rc, 0, (out, err))
        res, checks = out["result"], out["checks"]
        self.assertEqual(out["conditions"]["threads"], 2)
        self.assertEqual(res["generator_threads"], 2)
        self.assertEqual(checks["generator_threads"], 2)
        self.assertEqual(checks["sessions_established"], 4)
        self.assertEqual(len(checks["generator_thread_cpu_cores"]), 2)
        self.assertEqual(checks["stale_reads"], 0)
        self.assertGreater(res["read_hits"], 0)
        # the merged histograms hold every thread's interactions, no more and no fewer
        self.assertEqual(res["interactions"], res["interaction"]["count"])
        self.assertEqual(res["interactions"], res["set"]["count"])
        self.assertLessEqual(checks["generator_cpu_capacity_cores"], 2)
        self.assertAlmostEqual(checks["generator_cpu_fraction"]
                               * checks["generator_cpu_capacity_cores"],
                               checks["generator_cpu_cores"], places=6)

    def test_an_open_loop_rate_is_split_across_threads(self):
        rc, out, err = loadgen(self.daemon.socket, "--rate", "200", "--threads", "2", duration=2)
        self.assertEqual(rc, 0, (out, err))
        self.assertAlmostEqual(out["result"]["interactions_per_s"], 200, delta=60)
        self.assertFalse(out["result"]["saturated"])

    def test_a_wrong_store_expectation_is_invalid(self):
        rc, out, _ = loadgen(self.daemon.socket, store="tiered", durability="sync")
        self.assertInvalidBecause(rc, out, "store_kind memory")

    def test_skydb_cannot_pass_for_redis_server(self):
        rc, out, _ = loadgen(self.daemon.socket, store="redis", durability="always")
        self.assertInvalidBecause(rc, out, "skydb_version")

    def test_sessions_that_cannot_be_established_make_the_run_invalid(self):
        rc, out, _ = loadgen(os.path.join(self.daemon.dir, "no-such.sock"))
        self.assertInvalidBecause(rc, out, "only 0 of 4 sessions")
        small = Daemon("resp.max_clients=2")
        try:
            rc, out, _ = loadgen(small.socket)
            self.assertInvalidBecause(rc, out, "sessions were established")
            self.assertLess(out["checks"]["sessions_established"], 4)
        finally:
            small.stop()

    def test_errors_and_zero_acknowledged_writes_are_separate_gates(self):
        strict = Daemon("store.max_value_bytes=1024")
        try:
            rc, out, _ = loadgen(strict.socket, "--value-bytes", "2080")
            self.assertInvalidBecause(rc, out, "errors in")
            self.assertInvalidBecause(rc, out, "no write was acknowledged")
            rc, out, _ = loadgen(strict.socket, "--value-bytes", "2080",
                                 "--max-error-ratio", "1")
            self.assertInvalidBecause(rc, out, "no write was acknowledged")
            self.assertFalse(any("errors in" in r for r in out["invalid_reasons"]))
        finally:
            strict.stop()

    def test_the_generator_cpu_gate_fires_past_its_limit(self):
        rc, out, _ = loadgen(self.daemon.socket, "--max-cpu-fraction", "0")
        self.assertInvalidBecause(rc, out, "the generator used")

    def test_usage_errors_exit_2_with_a_reason(self):
        p = subprocess.run([LOADGEN, "--socket", self.daemon.socket], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("expect-store", p.stderr)
        rc, out, err = loadgen(self.daemon.socket, store="memory", durability="sync")
        self.assertEqual(rc, 2)
        self.assertIn("must be one of none", err)
        rc, out, err = loadgen(self.daemon.socket, "--threads", "5")  # 4 connections
        self.assertEqual(rc, 2)
        self.assertIn("--threads (5) must be at most --connections (4)", err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
