"""Runs one client-compatibility script against a fresh server and stops the server by its pid.

    compat_server.py --skydb PATH [--pair] [--set KEY=VALUE]... [--timeout S] -- COMMAND [ARG]...
    compat_server.py --redis-server PATH [--pair] [--timeout S] -- COMMAND [ARG]...

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

--pair runs two servers that behave as one, for clients of two app instances: with --skydb, a
PostgreSQL cluster of its own (initdb, pg_ctl, as $SKYDB_TEST_USER, socket only) and two
`skydb serve --database-url` daemons on it (shared coherence), started once both are registered
for pub/sub; with --redis-server, one redis-server that both names point at. COMMAND then also
gets SKYDB_COMPAT_SOCKET_B, SKYDB_COMPAT_PORT_B and SKYDB_COMPAT_URL_B (the second daemon) and
SKYDB_COMPAT_PAIR=1.

SKYDB_COMPAT_REDIS_SERVER=PATH in the environment turns a --skydb run into a --redis-server
run, so the whole ctest matrix can be checked against redis-server:
    SKYDB_COMPAT_REDIS_SERVER=/usr/bin/redis-server ctest -L compat

COMMAND is killed after --timeout seconds (default 60). The exit status is COMMAND's; a server
that fails to start, dies during the run or does not exit 0 on SIGTERM fails the run as well,
with the tail of its log.
"""
import argparse
import glob
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


def test_user():
    return os.environ.get("SKYDB_TEST_USER", "skydbtest")


class Cluster:
    """The pair's PostgreSQL: initdb and pg_ctl as the test user, a unix socket only."""

    def __init__(self, root):
        majors = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(p.split("/")[4]))
        if not majors:
            sys.exit("compat_server: --pair needs PostgreSQL's server binaries")
        self.bin = os.path.dirname(majors[-1])
        self.dir = os.path.join(root, "pg")
        os.mkdir(self.dir)
        shutil.chown(self.dir, test_user(), test_user())
        self.started = False
        init = self.as_user([self.bin + "/initdb", "--nosync", "--auth=trust", "-E", "UTF8",
                             "--locale=C", "-D", self.dir + "/pgdata"])
        if init.returncode != 0:
            sys.exit("compat_server: initdb failed: " + init.stderr)
        options = ("-c listen_addresses='' -c unix_socket_directories=%s -c fsync=off "
                   "-c max_connections=60" % self.dir)
        start = self.as_user([self.bin + "/pg_ctl", "-w", "-D", self.dir + "/pgdata", "-l",
                              self.dir + "/log", "-o", options, "start"])
        if start.returncode != 0:
            sys.exit("compat_server: pg_ctl start failed: " + start.stdout + start.stderr)
        self.started = True

    def as_user(self, argv):
        return subprocess.run(argv, user=test_user(), group=test_user(), extra_groups=[],
                              cwd=self.dir, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, LC_ALL="C"))

    def url(self):
        return "host=%s port=5432 dbname=postgres user=%s" % (self.dir, test_user())

    def query(self, sql):
        """The first column of the first row, or None when the statement fails."""
        out = subprocess.run(["psql", "-h", self.dir, "-U", test_user(), "-d", "postgres",
                              "-Atc", sql], capture_output=True, text=True, timeout=30)
        return out.stdout.strip() if out.returncode == 0 else None

    def stop(self):
        if self.started:
            self.as_user([self.bin + "/pg_ctl", "-w", "-D", self.dir + "/pgdata", "-m", "fast",
                          "stop"])
            self.started = False


class Server:
    def __init__(self, args, root, name="", database_url=None):
        self.kind = "skydb" if args.skydb else "redis"
        self.name = name
        self.port = free_port()
        self.log_path = os.path.join(root, "server%s.log" % name)
        env = dict(os.environ)
        if args.skydb:
            if os.geteuid() != 0:
                sys.exit("compat_server: --skydb needs root: PostgreSQL runs as "
                         "$SKYDB_TEST_USER and skydb refuses to run it as root")
            data = os.path.join(root, "data" + name)
            self.socket = os.path.join(data, "run", "skydb.sock")
            argv = [args.skydb]
            for kv in ["resp.tcp_port=%d" % self.port, "http.port=0"] + args.set:
                argv += ["--set", kv]
            if database_url:
                argv += ["serve", "--database-url", database_url]
            else:
                argv += ["serve", "--embed"]
            argv += ["--data-dir", data, "--user", test_user()]
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


def wait_registered(cluster, count):
    """Until `count` daemons are registered for pub/sub (each LISTENs), bounded; None or why."""
    sql = ("SELECT count(*) FROM skydb_pubsub_daemons "
           "WHERE heartbeat_at > now() - interval '10 s'")
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if cluster.query(sql) == str(count):
            return None
        time.sleep(0.1)
    return "%d daemons did not register for pub/sub within %.0f s" % (count, START_TIMEOUT)


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
    parser.add_argument("--pair", action="store_true",
                        help="two servers that behave as one (two daemons on one database)")
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
    cluster = None
    servers = []
    code = 1
    try:
        if args.pair and args.skydb:
            cluster = Cluster(root)
            servers = [Server(args, root, name, cluster.url()) for name in ("a", "b")]
        else:
            servers = [Server(args, root)]
        failure = None
        for server in servers:
            failure = failure or server.wait_ready()
        if failure is None and cluster is not None:
            failure = wait_registered(cluster, 2)
        if failure is None:
            first, second = servers[0], servers[-1]
            env = dict(os.environ, SKYDB_COMPAT_SOCKET=first.socket,
                       SKYDB_COMPAT_HOST="127.0.0.1", SKYDB_COMPAT_PORT=str(first.port),
                       SKYDB_COMPAT_URL="redis://127.0.0.1:%d" % first.port,
                       SKYDB_COMPAT_SERVER=first.kind, SKYDB_COMPAT_TMP=scratch)
            if args.pair:
                env.update(SKYDB_COMPAT_PAIR="1", SKYDB_COMPAT_SOCKET_B=second.socket,
                           SKYDB_COMPAT_PORT_B=str(second.port),
                           SKYDB_COMPAT_URL_B="redis://127.0.0.1:%d" % second.port)
            code = run_client(command, env, args.timeout)
        else:
            print("compat_server: %s %s" % (servers[0].kind, failure), file=sys.stderr)
    finally:
        for server in servers:
            stopped = server.stop()
            if stopped is not None:
                print("compat_server: %s%s %s" % (server.kind, server.name, stopped),
                      file=sys.stderr)
                code = code or 1
            if code != 0:
                print("compat_server: --- %s%s log (tail) ---\n%s"
                      % (server.kind, server.name, server.log_tail()), file=sys.stderr)
            server.log.close()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
