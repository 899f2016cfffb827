"""Debian's prometheus-redis-exporter on its default settings against the server's unix socket:
one scrape of its /metrics must say redis_up 1 and redis_exporter_last_scrape_error 0, its log
must have no error, and the fields it derives from INFO must be the server's (connected
clients, memory used, commands processed, db0's keys and expiring keys, the version)."""
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import redis

from compat_steps import expect, fail, passed, run

EXPORTER = "/usr/bin/prometheus-redis-exporter"
SOCKET = os.environ["SKYDB_COMPAT_SOCKET"]
KEYS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sample(metrics, series):
    """The value of the exposition line `series value`, or None."""
    m = re.search(r"^%s (\S+)$" % re.escape(series), metrics, re.M)
    return float(m.group(1)) if m else None


def scrape(port, log_path):
    url = "http://127.0.0.1:%d/metrics" % port
    deadline = time.monotonic() + 15
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                return reply.read().decode()
        except OSError as e:
            if time.monotonic() > deadline:
                fail("scrape /metrics", "%s; exporter log: %s" % (e, read(log_path)[-2000:]))
            time.sleep(0.1)


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def check(metrics, log):
    def value(series):
        v = sample(metrics, series)
        if v is None:
            name = series.split("{")[0]
            same = [l for l in metrics.splitlines() if l.startswith(name)]
            lines = same or [l for l in metrics.splitlines() if l.startswith("redis_")][:40]
            fail(series, "not in the scrape; seen: %s" % " | ".join(lines))
        return v

    expect("redis_up", value("redis_up"), 1.0)
    expect("redis_exporter_last_scrape_error", value('redis_exporter_last_scrape_error{err=""}'),
           0.0)
    errors = [l for l in log.splitlines() if re.search(r"level=(error|fatal)", l)]
    if errors:
        fail("exporter log", "error lines: %s" % " | ".join(errors[:5]))
    if not value("redis_connected_clients") >= 1:
        fail("redis_connected_clients", "got %r, expected >= 1" % value("redis_connected_clients"))
    if not value("redis_memory_used_bytes") > 0:
        fail("redis_memory_used_bytes", "got %r, expected > 0" % value("redis_memory_used_bytes"))
    if not value("redis_commands_processed_total") >= KEYS:
        fail("redis_commands_processed_total",
             "got %r, expected >= %d" % (value("redis_commands_processed_total"), KEYS))
    expect('redis_db_keys{db="db0"}', value('redis_db_keys{db="db0"}'), float(KEYS))
    expect('redis_db_keys_expiring{db="db0"}', value('redis_db_keys_expiring{db="db0"}'),
           float(KEYS))
    if not re.search(r'^redis_instance_info\{.*redis_version="7\.', metrics, re.M):
        info = [l for l in metrics.splitlines() if l.startswith("redis_instance_info")]
        fail("redis_instance_info redis_version", "got %r, expected 7.x" % info)
    if not value("redis_uptime_in_seconds") >= 0:
        fail("redis_uptime_in_seconds", "negative")


def main():
    r = redis.Redis(unix_socket_path=SOCKET, socket_timeout=10)
    for i in range(KEYS):
        run("SET before the scrape", r.set, "exporter:%d" % i, "v", ex=600)
    port = free_port()
    log_path = os.path.join(os.environ["SKYDB_COMPAT_TMP"], "exporter.log")
    with open(log_path, "wb") as log:
        exporter = subprocess.Popen(
            [EXPORTER, "-redis.addr", "unix://" + SOCKET,
             "-web.listen-address", "127.0.0.1:%d" % port],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        metrics = scrape(port, log_path)
    finally:
        os.kill(exporter.pid, signal.SIGTERM)
        try:
            exporter.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(exporter.pid, signal.SIGKILL)
            exporter.wait(timeout=10)
    check(metrics, read(log_path))
    passed()


if __name__ == "__main__":
    main()
