"""What the benchmarks that drive one `skydb serve --embed` daemon share: the load gate, the
fsync probe, RESP encoding, and a daemon (sync durability) per disk — native, or under the 1 ms
fsync model (bench/slowfsync.c preloaded into skydb, hence its PostgreSQL)."""
import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DISKS = ("native", "slow-1ms")


def arguments(description, seconds):
    """The flags every such benchmark takes; add its own to the returned parser."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--skydb", default=os.path.join(ROOT, "build/src/skydb"))
    p.add_argument("--slowfsync", default=os.path.join(ROOT, "build/bench/libslowfsync.so"))
    p.add_argument("--seconds", type=float, default=seconds)
    p.add_argument("--force", action="store_true")
    return p


def refuse_if_loaded(force):
    """The load average at the start; exits when above half the cores, unless forced."""
    cores = os.cpu_count()
    load = os.getloadavg()[0]
    if load > cores * 0.5 and not force:
        sys.exit("refusing: load average %.2f on %d cores (--force to run anyway)" % (load, cores))
    return load


def fsync_latency_us(directory, n=200):
    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    times = []
    for _ in range(n):
        os.write(fd, b"x" * 4096)
        t = time.perf_counter()
        os.fdatasync(fd)
        times.append((time.perf_counter() - t) * 1e6)
    os.close(fd)
    os.unlink(path)
    return statistics.median(times)


def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def wait_ping(sock_path, proc, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(1)
            s.connect(sock_path)
            s.sendall(command("PING"))
            if s.recv(64).startswith(b"+PONG"):
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def disks(slowfsync):
    """The disks to run: the 1 ms model only when its library is built."""
    if os.path.exists(slowfsync):
        return DISKS
    print("no %s: build the slowfsync target; skipping the 1 ms model" % slowfsync)
    return DISKS[:1]


@contextlib.contextmanager
def embedded_daemon(a, work, disk, user, extra_sets=()):
    """Starts `skydb serve --embed` (sync durability) under DIR=work/disk as `user`; yields
    (DIR, its store socket) once it answers PING, and stops it with SIGTERM."""
    env = dict(os.environ, SKYDB_CONFIG="")
    if disk != "native":
        # Absolute: the daemon's PostgreSQL runs in another directory, where a relative
        # LD_PRELOAD would be ignored and the "1 ms model" would run at native speed.
        env.update(LD_PRELOAD=os.path.abspath(a.slowfsync), SLOWFSYNC_US="1000")
    d = os.path.join(work, disk)
    sets = []
    for s in ("store.durability=sync",) + tuple(extra_sets):
        sets += ["--set", s]
    with open(d + ".log", "wb") as log:
        proc = subprocess.Popen([a.skydb] + sets + ["serve", "--embed", "--data-dir", d,
                                                    "--user", user],
                                env=env, stdout=log, stderr=log)
    try:
        sock_path = os.path.join(d, "run/skydb.sock")
        if not wait_ping(sock_path, proc):
            sys.exit("skydb did not start; see %s.log" % d)
        yield d, sock_path
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def commit():
    return subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip()


def write_report(prefix, conditions, results):
    """Writes bench/results/<prefix>-<UTC time>.json, the load at the end added; its path."""
    conditions["load_end"] = round(os.getloadavg()[0], 2)
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    out = os.path.join(ROOT, "bench/results",
                       "%s-%s.json" % (prefix, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))
    with open(out, "w") as f:
        json.dump({"conditions": conditions, "results": results}, f, indent=1)
    return out


def start_conditions(a, prefix):
    """Refuses a loaded machine (unless --force), makes the work directory and returns it with
    the conditions every such run records: commit, host, cores, load, fsync latency, version."""
    load = refuse_if_loaded(a.force)
    work = tempfile.mkdtemp(prefix=prefix)
    os.chmod(work, 0o755)
    return work, {
        "commit": commit(), "host": os.uname().nodename, "cores": os.cpu_count(),
        "load_start": load, "fsync_us_median": round(fsync_latency_us(work), 1),
        "skydb": subprocess.run([a.skydb, "--version"], capture_output=True,
                                text=True).stdout.strip(),
    }
