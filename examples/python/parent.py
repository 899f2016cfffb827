#!/usr/bin/python3
"""Child mode (docs/embedding.md): the app starts skydb itself and owns it.

    parent.py SKYDB DATA_DIR [extra skydb arguments...]

skydb runs with --exit-with-parent --parent-pid PID (it stops in order when this process dies,
even by kill -9 in the instant after starting it) and --ready-fd N (the write end of a pipe): at READY it writes one JSON line there (database_url, store_socket, http,
pid) and closes it. This parent reads it, uses both, prints the line, and serves until SIGTERM.
"""
import json
import os
import signal
import subprocess
import sys
import time

import psycopg2
import redis

skydb, data_dir, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
read_end, write_end = os.pipe()
daemon = subprocess.Popen(
    [skydb] + extra + ["serve", "--embed", "--data-dir", data_dir, "--exit-with-parent",
                       "--parent-pid", str(os.getpid()), "--ready-fd", str(write_end)],
    pass_fds=(write_end,))
os.close(write_end)  # skydb holds the only write end: EOF if it exits before READY
with os.fdopen(read_end) as ready:
    line = ready.readline()
if not line:
    sys.exit("skydb exited before it was ready (status %s)" % daemon.wait())
info = json.loads(line)

with psycopg2.connect(info["database_url"]) as db, db.cursor() as cur:
    cur.execute("SELECT current_user, current_database()")
    print("database:", cur.fetchone(), flush=True)
store = redis.Redis(unix_socket_path=info["store_socket"])
store.set("sky:live:session:parent", b"hello", ex=60)
print("ready:", json.dumps(info), flush=True)

signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
while daemon.poll() is None:
    time.sleep(0.1)
