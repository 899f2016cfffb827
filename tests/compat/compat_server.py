"""Runs one client-compatibility script against a fresh server and stops the server by its pid.

    compat_server.py --skydb PATH [--set KEY=VALUE]... [--timeout S] -- COMMAND [ARG]...
    compat_server.py --redis-server PATH [--timeout S] -- COMMAND [ARG]...

With --skydb the server is a real daemon, `skydb serve --embed` on a private PostgreSQL in a
temp data dir (as root, PostgreSQL runs as $SKYDB_TEST_USER, default skydbtest); with
--redis-server it is redis-server (no persistence), which is how the scripts themselves are
checked. Either way the server listens on a unix socket and on a free loopback TCP port, and
COMMAND runs once it answers PING, with:

    SKYDB_COMPAT_SOCKET  the server's unix socket
    SKYDB_COMPAT_HOST    127.0.0.1
    SKYDB_COMPAT_PORT    its TCP port
    SKYDB_COMPAT_URL     redis://127.0.0.1:PORT
    SKYDB_COMPAT_SERVER  skydb or redis
    SKYDB_COMPAT_TMP     a scratch directory, removed afterwards

SKYDB_COMPAT_REDIS_SERVER=PATH in the environment turns a --skydb run into a --redis-server
run, so the whole ctest matrix can be checked against redis-server:
    SKYDB_COMPAT_REDIS_SERVER=/usr/bin/redis-server ctest -L compat

COMMAND is killed after --timeout seconds (default 60). The exit status is COMMAND's; a server
that fails to start, dies during the run or does not exit 0 on SIGTERM fails the run as well,
with the tail of its log.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

START_TIMEOUT = 60.0  # initdb and the first PostgreSQL start, under ASan on 2 shared cores
STOP_TIMEOUT = 20.0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping(path):
    """True if a RESP server on unix socket `path` answers PING with +PONG."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(2)
            s.connect(path)
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class Server:
    def __init__(self, args, root):
        self.kind = "skydb" if args.skydb else "redis"
        self.port = free_port()
        self.log_path = os.path.join(root, "server.log")
        env = dict(os.environ)
        if args.skydb:
            if os.geteuid() != 0:
                sys.exit("compat_server: --skydb needs root: PostgreSQL runs as "
                         "$SKYDB_TEST_USER and skydb refuses to run it as root")
            data = os.path.join(root, "data")
            self.socket = os.path.join(data, "run", "skydb.sock")
            argv = [args.skydb]
            for kv in ["resp.tcp_port=%d" % self.port, "http.port=0"] + args.set:
                argv += ["--set", kv]
            argv += ["serve", "--embed", "--data-dir", data,
                     "--user", os.environ.get("SKYDB_TEST_USER", "skydbtest")]
            env["SKYDB_CONFIG"] = ""  # the machine's config file must not leak in
        else:
            self.socket = os.path.join(root, "redis.sock")
            argv = [args.redis_server, "--port", str(self.port), "--bind", "127.0.0.1",
                    "--unixsocket", self.socket, "--unixsocketperm", "700", "--dir", root,
                    "--save", "", "--appendonly", "no", "--daemonize", "no"]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return "exited with %s before answering PING" % self.proc.returncode
            if ping(self.socket):
                return None
            time.sleep(0.1)
        return "did not answer PING on %s within %.0f s" % (self.socket, START_TIMEOUT)

    def stop(self):
        """SIGTERM by pid, bounded; returns a failure sentence or None."""
        if self.proc.poll() is not None:
            return "died during the run (exit status %s)" % self.proc.returncode
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
            return "did not exit within %.0f s of SIGTERM (killed)" % STOP_TIMEOUT
        if self.proc.returncode != 0:
            return "exited with %s on SIGTERM" % self.proc.returncode
        return None

    def log_tail(self, limit=4000):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-limit:]


def run_client(command, env, timeout):
    """Runs the client in its own process group so a timeout can end everything it started."""
    started = time.monotonic()
    proc = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        print("compat_server: %s did not finish within %.0f s (killed)" % (command[0], timeout),
              file=sys.stderr)
        code = 124
    print("compat_server: %s took %.1f s" % (os.path.basename(command[-1]),
                                             time.monotonic() - started), file=sys.stderr)
    return code


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--skydb", help="path of the skydb binary")
    which.add_argument("--redis-server", help="path of redis-server, to check the scripts")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a skydb config key for the daemon (repeatable)")
    parser.add_argument("--timeout", type=float, default=60.0, help="client time limit, s")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if os.environ.get("SKYDB_COMPAT_REDIS_SERVER"):
        args.skydb, args.redis_server = None, os.environ["SKYDB_COMPAT_REDIS_SERVER"]
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no client command after --")

    root = tempfile.mkdtemp(prefix="skydb-compat-")
    os.chmod(root, 0o755)  # the cluster user must traverse it
    scratch = os.path.join(root, "tmp")
    os.mkdir(scratch)
    server = Server(args, root)
    code = 1
    try:
        failure = server.wait_ready()
        if failure is None:
            env = dict(os.environ, SKYDB_COMPAT_SOCKET=server.socket,
                       SKYDB_COMPAT_HOST="127.0.0.1", SKYDB_COMPAT_PORT=str(server.port),
                       SKYDB_COMPAT_URL="redis://127.0.0.1:%d" % server.port,
                       SKYDB_COMPAT_SERVER=server.kind, SKYDB_COMPAT_TMP=scratch)
            code = run_client(command, env, args.timeout)
        else:
            print("compat_server: %s %s" % (server.kind, failure), file=sys.stderr)
    finally:
        stopped = server.stop()
        if stopped is not None:
            print("compat_server: %s %s" % (server.kind, stopped), file=sys.stderr)
            code = code or 1
        if code != 0:
            print("compat_server: --- %s log (tail) ---\n%s" % (server.kind, server.log_tail()),
                  file=sys.stderr)
        server.log.close()
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
