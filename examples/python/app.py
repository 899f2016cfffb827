#!/usr/bin/python3
"""A Sky.Live-style app for skydb's embedded mode (docs/embedding.md).

It reads only the connection contract from its environment: DATABASE_URL (its own database,
peer authentication, no password) and REDIS_URL (the session store's unix socket). It records a
visit in its table, runs one session cycle (SET EX, GET, EXPIRE, DEL), then serves until SIGTERM,
which it answers by exiting cleanly — as `skydb run` and systemd expect.

Optional: APP_STATE_FILE, a file it appends what it did to (the integration tests read it);
APP_EXIT_CODE, the status it exits with after SIGTERM (default 0).
"""
import os
import signal
import sys
import time

import psycopg2
import redis

state_file = os.environ.get("APP_STATE_FILE")


def record(line):
    print(line, flush=True)
    if state_file:
        with open(state_file, "a") as f:
            f.write(line + "\n")


db = psycopg2.connect(os.environ["DATABASE_URL"])
db.autocommit = True
with db.cursor() as cur:
    cur.execute("CREATE TABLE IF NOT EXISTS visits (id serial PRIMARY KEY, at timestamptz DEFAULT now())")
    cur.execute("INSERT INTO visits DEFAULT VALUES")
    cur.execute("SELECT count(*) FROM visits")
    visits = cur.fetchone()[0]

store = redis.Redis.from_url(os.environ["REDIS_URL"])
previous = store.get("sky:live:session:example")
store.set("sky:live:session:example", b"state-%d" % visits, ex=600)
assert store.get("sky:live:session:example") == b"state-%d" % visits
store.expire("sky:live:session:example", 1200)
store.set("sky:live:session:scratch", b"x", ex=60)
store.delete("sky:live:session:scratch")
record("visits=%d previous_session=%s user=%s" % (
    visits, previous.decode() if previous else "none", os.environ.get("USER", "?")))

stopping = False


def on_term(signum, frame):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGHUP, lambda s, f: record("got SIGHUP"))
record("serving")
while not stopping:
    time.sleep(0.05)
db.close()
record("got SIGTERM")
sys.exit(int(os.environ.get("APP_EXIT_CODE", "0")))
