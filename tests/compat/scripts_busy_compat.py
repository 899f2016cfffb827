"""A script past its busy threshold, with python3-redis on resp.threads = 2 (round-robin: each
client on its own loop thread): other clients get BUSY (the first error word Redis sends); SCRIPT
KILL stops the script, which had not written, even though it loops inside pcall; the script's
client gets Redis's "killed by user" error; afterwards PING answers again. Then a script that
wrote cannot be killed: SCRIPT KILL answers UNKILLABLE and it runs to its end, its write kept."""
import os
import threading
import time

import redis

from compat_steps import expect, fail, passed


def connect():
    return redis.Redis(unix_socket_path=os.environ["SKYDB_COMPAT_SOCKET"], socket_timeout=30)


def busy_until_killed():
    a, b = connect(), connect()
    a.ping()
    b.ping()
    outcome = {}

    def run():
        try:
            outcome["reply"] = a.eval("local f = function() while true do end end "
                                      "while true do pcall(f) end", 0)
        except redis.ResponseError as e:
            outcome["error"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(1)
    deadline = time.time() + 15
    busy = None
    while time.time() < deadline and busy is None:
        busy = error_of(b.ping)
        if busy is None:
            time.sleep(0.2)
    if busy is None or "Redis is busy running a script" not in busy:
        fail("PING while a script runs past 5 s", f"got {busy!r}, expected BUSY")
    expect("SCRIPT KILL", b.execute_command("SCRIPT", "KILL"), b"OK")
    t.join(10)
    if t.is_alive():
        fail("the killed script", "still running 10 s after SCRIPT KILL")
    if "killed by user" not in outcome.get("error", ""):
        fail("the killed script's reply", f"got {outcome!r}")
    expect("PING after the kill", b.ping(), True)


def unkillable_after_a_write():
    a, b = connect(), connect()
    a.ping()
    b.ping()
    outcome = {}
    # About 10 s of work after a write (calibrated below, with room for the calibration to be
    # off under load: BUSY comes after 5 s), then it returns.
    script = ("redis.call('SET', KEYS[1], 'written') local n = 0 "
              "for i = 1, tonumber(ARGV[1]) do n = n + 1 end return n")
    start = time.time()
    a.eval(script, 1, "busy:probe", 20000000)
    per_loop = (time.time() - start) / 20000000
    loops = int(10.0 / max(per_loop, 1e-9))

    def run():
        outcome["reply"] = a.eval(script, 1, "busy:w", loops)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 15
    busy = None
    while time.time() < deadline and busy is None and t.is_alive():
        busy = error_of(b.ping)
        if busy is None:
            time.sleep(0.2)
    if busy is None:
        fail("PING during a 10 s script", "never BUSY")
    kill = error_of(b.execute_command, "SCRIPT", "KILL")
    if not kill or "Sorry the script already executed write commands" not in kill:
        fail("SCRIPT KILL of a script that wrote", f"got {kill!r}")
    t.join(30)
    expect("the script ran to its end", outcome.get("reply"), loops)
    expect("its write", b.get("busy:w"), b"written")


def error_of(fn, *args):
    try:
        fn(*args)
        return None
    except redis.ResponseError as e:
        return str(e)


busy_until_killed()
unkillable_after_a_write()
passed()
