"""TLS where traffic leaves the host (docs/security.md): a real `skydb serve --store memory`
daemon with resp.tls and http.tls, reached by redis-cli --tls, redis-py ssl=True and curl; a
plain client on the TLS port is refused; the certificate is swapped on SIGHUP; client
certificates when required; a key that does not load stops the start with the file named;
allow_remote without TLS is warned about. Certificates are made with the openssl command.
Usage: tls_test.py SKYDB_BINARY [unittest args]. As root, the daemon runs as SKYDB_TEST_USER."""
import os
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import redis

SKYDB = sys.argv[1]
TEST_USER = os.environ.get("SKYDB_TEST_USER", "skydbtest")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


class Pki:
    """A CA, a server certificate for 127.0.0.1 signed by it, and a client certificate."""

    def __init__(self, root):
        self.root = root
        self.ca_key, self.ca = self.path("ca.key"), self.path("ca.crt")
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.ca_key,
                "-out", self.ca, "-days", "2", "-subj", "/CN=skydb test CA")
        self.cert, self.key = self.issue("server", "127.0.0.1", server=True)
        self.client_cert, self.client_key = self.issue("client", "app1")

    def path(self, name):
        return os.path.join(self.root, name)

    def issue(self, name, cn, server=False):
        key, csr, crt = self.path(name + ".key"), self.path(name + ".csr"), self.path(name + ".crt")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
                "-subj", "/CN=" + cn)
        ext = self.path(name + ".ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n" if server else "extendedKeyUsage=clientAuth\n")
        openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
                "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext)
        if os.geteuid() == 0:  # the service user reads them, as it would in production
            user = pwd.getpwnam(TEST_USER)
            for path in (crt, key):
                os.chown(path, user.pw_uid, user.pw_gid)
        return crt, key


class Daemon:
    def __init__(self, root, sets):
        self.dir = os.path.join(root, "data-%d" % free_port())
        self.log_path = os.path.join(root, "daemon-%d.log" % free_port())
        args = [SKYDB]
        for s in sets:
            args += ["--set", s]
        args += ["serve", "--store", "memory", "--data-dir", self.dir]
        if os.geteuid() == 0:
            args += ["--user", TEST_USER]
        env = dict(os.environ, SKYDB_CONFIG="")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log, env=env)

    def text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("latin1")

    def wait_log(self, needle, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if needle in self.text():
                return True
            if self.proc.poll() is not None:
                return needle in self.text()
            time.sleep(0.05)
        return False

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()
        return self.proc.returncode


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="skydb-tls-")
        os.chmod(cls.root, 0o755)
        cls.pki = Pki(cls.root)
        if os.geteuid() == 0:  # the service user reads the files, as it would in production
            user = pwd.getpwnam(TEST_USER)
            for name in os.listdir(cls.root):
                os.chown(os.path.join(cls.root, name), user.pw_uid, user.pw_gid)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def start(self, extra=(), ready="resp: listening"):
        self.port, self.http_port = free_port(), free_port()
        sets = ["resp.tcp_port=%d" % self.port, "resp.tls=true",
                "http.port=%d" % self.http_port, "http.tls=true",
                "tls.cert_file=" + self.pki.cert, "tls.key_file=" + self.pki.key, *extra]
        d = Daemon(self.root, sets)
        self.addCleanup(self.stop_cleanly, d)
        self.assertTrue(d.wait_log(ready), d.text())
        return d

    def stop_cleanly(self, d):
        """SIGTERM: exit 0 and no sanitizer report (the ASan build)."""
        code = d.stop()
        log = d.text()
        self.assertEqual(code, 0, log[-4000:])
        self.assertNotIn("AddressSanitizer", log)
        self.assertNotIn("runtime error", log)

    def redis_cli(self, *args, tls=True, extra=()):
        argv = ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port)]
        if tls:
            argv += ["--tls", "--cacert", self.pki.ca, *extra]
        return subprocess.run(argv + list(args), capture_output=True, text=True, timeout=30)

    def test_redis_cli_and_redis_py_speak_tls_and_plain_is_refused(self):
        d = self.start()
        self.assertEqual(self.redis_cli("PING").stdout, "PONG\n")
        self.assertEqual(self.redis_cli("SET", "k", "v").stdout, "OK\n")
        self.assertEqual(self.redis_cli("GET", "k").stdout, "v\n")
        r = redis.Redis(host="127.0.0.1", port=self.port, ssl=True, ssl_ca_certs=self.pki.ca,
                        socket_timeout=10)
        self.assertTrue(r.ping())
        pipe = r.pipeline(transaction=False)
        for i in range(200):
            pipe.set("p:%d" % i, "x" * 5000)
        pipe.get("p:199")
        self.assertEqual(pipe.execute()[-1], b"x" * 5000)
        self.assertEqual(len(r.mget(["p:%d" % i for i in range(200)])), 200)
        r.close()
        plain = self.redis_cli("PING", tls=False)
        self.assertNotIn("PONG", plain.stdout + plain.stderr)
        plain_py = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)
        with self.assertRaises(redis.exceptions.ConnectionError):
            plain_py.ping()
        self.assertTrue(d.wait_log("TLS handshake failed"), d.text())
        # The store still serves TLS clients after the plain ones were turned away.
        self.assertEqual(self.redis_cli("GET", "k").stdout, "v\n")

    def test_https_endpoints_and_plain_http_refused(self):
        self.start(ready="http: /metrics")
        url = "https://127.0.0.1:%d/healthz" % self.http_port
        ok = subprocess.run(["curl", "-sS", "--cacert", self.pki.ca, url], capture_output=True,
                            text=True, timeout=30)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        plain = subprocess.run(["curl", "-sS", "-m", "5", "http://127.0.0.1:%d/healthz"
                                % self.http_port], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(plain.returncode, 0)

    def peer_cn(self):
        ctx = ssl.create_default_context(cafile=self.pki.ca)
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                return dict(x[0] for x in t.getpeercert()["subject"])["commonName"]

    def test_sighup_swaps_the_certificate_for_new_connections(self):
        d = self.start()
        self.assertEqual(self.peer_cn(), "127.0.0.1")
        kept = redis.Redis(host="127.0.0.1", port=self.port, ssl=True, ssl_ca_certs=self.pki.ca)
        self.assertTrue(kept.ping())
        new_cert, new_key = self.pki.issue("renewed", "renewed.example", server=True)
        os.replace(new_cert, self.pki.cert)
        os.replace(new_key, self.pki.key)
        os.kill(d.proc.pid, signal.SIGHUP)
        self.assertTrue(d.wait_log("SIGHUP: tls: "), d.text())
        self.assertEqual(self.peer_cn(), "renewed.example")
        self.assertTrue(kept.ping(), "an open connection keeps its certificate")
        # A key that does not load on SIGHUP leaves the running certificate in place.
        with open(self.pki.key, "w") as f:
            f.write("not a key\n")
        os.kill(d.proc.pid, signal.SIGHUP)
        self.assertTrue(d.wait_log("the running certificate stays"), d.text())
        self.assertEqual(self.peer_cn(), "renewed.example")
        kept.close()
        # Put a good pair back for the other tests.
        self.pki.issue("server", "127.0.0.1", server=True)

    def test_client_certificates_when_required(self):
        self.start(["tls.client_certs=required", "tls.ca_file=" + self.pki.ca])
        without = self.redis_cli("PING")
        self.assertNotIn("PONG", without.stdout)
        with_cert = self.redis_cli("PING", extra=["--cert", self.pki.client_cert,
                                                  "--key", self.pki.client_key])
        self.assertEqual(with_cert.stdout, "PONG\n", with_cert.stderr)

    def test_a_key_that_does_not_load_stops_the_start_naming_the_file(self):
        bad = os.path.join(self.root, "bad.key")
        with open(bad, "w") as f:
            f.write("not a key\n")
        os.chmod(bad, 0o644)
        d = Daemon(self.root, ["resp.tcp_port=%d" % free_port(), "resp.tls=true",
                               "tls.cert_file=" + self.pki.cert, "tls.key_file=" + bad])
        self.assertNotEqual(d.proc.wait(timeout=60), 0)
        d.stop()
        self.assertIn("tls.key_file " + bad, d.text())
        missing = subprocess.run([SKYDB, "--set", "resp.tls=true", "--set", "resp.tcp_port=7000",
                                  "config", "check"], capture_output=True, text=True,
                                 env=dict(os.environ, SKYDB_CONFIG=""), timeout=30)
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("need tls.cert_file and tls.key_file", missing.stdout + missing.stderr)

    def config_check(self, *sets):
        argv = [SKYDB]
        for s in sets:
            argv += ["--set", s]
        run = subprocess.run(argv + ["config", "check"], capture_output=True, text=True,
                             env=dict(os.environ, SKYDB_CONFIG=""), timeout=30)
        return run.returncode, run.stdout + run.stderr

    def test_configurations_that_cannot_serve_tls_are_refused_with_the_fix(self):
        files = ["tls.cert_file=" + self.pki.cert, "tls.key_file=" + self.pki.key]
        for sets, message in [
                (["resp.tls=true", *files], "resp.tls = true (flag --set resp.tls) needs a TCP "
                 "listener: set resp.tcp_port"),
                (["http.tls=true", "http.listen=http.sock", *files],
                 "applies to http.listen = \"tcp\""),
                (["http.tls=true"], "http.tls need tls.cert_file and tls.key_file"),
                (["resp.tls=true", "resp.tcp_port=7000", *files, "tls.client_certs=required"],
                 "needs tls.ca_file"),
                (["tls.client_certs=sometimes"], "tls.client_certs")]:
            code, out = self.config_check(*sets)
            self.assertEqual(code, 2, (sets, out))
            self.assertIn(message, out, sets)

    def test_files_that_do_not_load_stop_the_start_naming_them(self):
        other_cert, other_key = self.pki.issue("other", "other.example", server=True)
        empty_ca = os.path.join(self.root, "empty-ca.pem")
        with open(empty_ca, "w") as f:
            f.write("no certificates here\n")
        os.chmod(empty_ca, 0o644)
        missing = os.path.join(self.root, "missing.crt")
        for sets, message in [
                (["tls.cert_file=" + missing, "tls.key_file=" + self.pki.key],
                 "tls.cert_file " + missing),
                (["tls.cert_file=" + self.pki.cert, "tls.key_file=" + other_key],
                 "tls.key_file %s is not the key of tls.cert_file %s" % (other_key, self.pki.cert)),
                (["tls.cert_file=" + self.pki.cert, "tls.key_file=" + self.pki.key,
                  "tls.client_certs=required", "tls.ca_file=" + empty_ca],
                 "tls.ca_file %s holds no PEM certificate" % empty_ca)]:
            d = Daemon(self.root, ["resp.tcp_port=%d" % free_port(), "resp.tls=true", *sets])
            self.assertEqual(d.proc.wait(timeout=60), 2, d.text())  # a configuration problem
            d.stop()
            self.assertIn(message, d.text(), sets)

    def test_allow_remote_without_tls_is_warned_loudly(self):
        port = free_port()
        d = Daemon(self.root, ["resp.tcp_port=%d" % port, "resp.bind=0.0.0.0",
                               "resp.allow_remote=true", "resp.requirepass=s3cret-pass-word"])
        self.addCleanup(self.stop_cleanly, d)
        self.assertTrue(d.wait_log("resp: listening"), d.text())
        self.assertIn("resp.allow_remote = true WITHOUT resp.tls", d.text())
        self.assertNotIn("s3cret-pass-word", d.text())


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:])
