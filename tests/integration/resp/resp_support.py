"""Starts and stops one resp_test_server for a test: socket in a fresh temp dir, stopped by
its pid, every wait bounded."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SERVER = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("RESP_TEST_SERVER", "")


class Server:
    def __init__(self, *flags):
        self.dir = tempfile.mkdtemp(prefix="skydb-resp-")
        self.socket = os.path.join(self.dir, "skydb.sock")
        self.log = open(os.path.join(self.dir, "server.log"), "wb")
        self.proc = subprocess.Popen([SERVER, "--socket", self.socket, *map(str, flags)],
                                     stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline()  # "ready" once listening
        if line.strip() != b"ready":
            self.proc.kill()
            self.proc.wait(timeout=10)
            err = open(self.log.name, "rb").read()
            self.stop(check=False)
            raise RuntimeError("resp_test_server did not start: %r %r" % (line, err))

    def raw(self, payload, wait=0.5):
        """Sends bytes on a fresh connection and returns everything read until the server
        closes it or `wait` seconds pass with nothing new."""
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.socket)
        s.settimeout(wait)
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may refuse and close before reading (max clients)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    out += b"<closed>"
                    break
                out += chunk
        except socket.timeout:
            pass
        s.close()
        return out

    def stop(self, check=True):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.log.close()
        log = open(self.log.name, "rb").read().decode("latin1")
        shutil.rmtree(self.dir, ignore_errors=True)
        # A sanitizer report (ASan build) or a crash at shutdown fails the test here.
        failed = (self.proc.returncode != 0 or "ERROR: AddressSanitizer" in log
                  or "runtime error" in log)
        if check and failed:
            raise RuntimeError("resp_test_server exited with %s:\n%s"
                               % (self.proc.returncode, log[-4000:]))


def main_args():
    """unittest.main must not see the server path argument."""
    return [sys.argv[0]] + sys.argv[2:]


def wait_until(predicate, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False
