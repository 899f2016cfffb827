"""Django's session framework on Redis through Debian's python3-django-redis-sessions
(SESSION_ENGINE = "redis_sessions.session") over the unix
socket: SessionStore saves a session (SETEX with the session's age), a new SessionStore loads it
by key, the key and its TTL are in the store, a custom expiry is honoured, cycle_key() moves the
data to a new key, delete() removes it, and a missing key loads as an empty session."""
import os

import django
from django.conf import settings

from compat_steps import expect, fail, passed, run

SOCKET = os.environ["SKYDB_COMPAT_SOCKET"]
settings.configure(
    SECRET_KEY="compat-matrix-secret",
    INSTALLED_APPS=["django.contrib.sessions"],
    SESSION_ENGINE="redis_sessions.session",
    # The library's default socket timeout, 0.1 s, is shorter than a durable commit may take on
    # a loaded CI machine under ASan; docs/protocol.md tells operators to raise it the same way.
    SESSION_REDIS={"unix_domain_socket_path": SOCKET, "prefix": "session", "socket_timeout": 5},
    USE_TZ=True,
)
django.setup()

import redis  # noqa: E402  (after settings, as an app imports it)
from django.contrib.sessions.backends.base import CreateError  # noqa: E402
from redis_sessions.session import SessionStore  # noqa: E402

AGE = settings.SESSION_COOKIE_AGE  # two weeks, Django's default


def stored_key(session_key):
    return "session:" + session_key


def save_and_load(probe):
    s = SessionStore()
    s["user"] = "alice"
    s["cart"] = [1, 2, 3]
    run("SessionStore.save()", s.save)
    key = s.session_key
    if not key:
        fail("SessionStore.save()", "no session_key after save()")
    expect("session key in the store", probe.exists(stored_key(key)), 1)
    ttl = probe.ttl(stored_key(key))
    if not AGE - 60 < ttl <= AGE:
        fail("TTL of the session key", "got %r, expected ~%d (SESSION_COOKIE_AGE)" % (ttl, AGE))

    loaded = SessionStore(session_key=key)
    data = run("SessionStore(session_key).load()", loaded.load)
    expect("loaded session", data, {"user": "alice", "cart": [1, 2, 3]})
    expect("SessionStore.exists()", bool(loaded.exists(key)), True)

    loaded["user"] = "bob"
    run("save() of a loaded session", loaded.save)
    expect("updated session", SessionStore(session_key=key).load()["user"], "bob")

    # save(must_create=True) on a key that exists is Django's CreateError.
    clash = SessionStore(session_key=key)
    try:
        clash.save(must_create=True)
        fail("save(must_create=True) on an existing key", "no CreateError")
    except CreateError:
        pass
    return key


def expiry(probe):
    s = SessionStore()
    s["x"] = 1
    s.set_expiry(120)
    run("save() with set_expiry(120)", s.save)
    ttl = probe.ttl(stored_key(s.session_key))
    if not 110 < ttl <= 120:
        fail("TTL after set_expiry(120)", "got %r, expected ~120" % ttl)
    expect("get_expiry_age() of the loaded session",
           SessionStore(session_key=s.session_key).get_expiry_age(), 120)
    expect("loaded _session_expiry", SessionStore(session_key=s.session_key).load(),
           {"x": 1, "_session_expiry": 120})


def cycle_and_delete(probe, key):
    s = SessionStore(session_key=key)
    s.load()
    run("cycle_key()", s.cycle_key)
    new_key = s.session_key
    if new_key == key:
        fail("cycle_key()", "the key did not change")
    expect("cycle_key(): new key holds the data", SessionStore(session_key=new_key).load()["user"],
           "bob")
    expect("cycle_key(): old key deleted", probe.exists(stored_key(key)), 0)

    run("delete()", s.delete)
    expect("delete(): key gone", probe.exists(stored_key(new_key)), 0)
    expect("load() of a deleted session", SessionStore(session_key=new_key).load(), {})
    missing = SessionStore(session_key="x" * 32)
    expect("load() of a key never written", missing.load(), {})


def main():
    probe = redis.Redis(unix_socket_path=SOCKET, socket_timeout=10)
    expect("PING", run("PING", probe.ping), True)
    key = run("save and load", save_and_load, probe)
    run("expiry", expiry, probe)
    run("cycle_key and delete", cycle_and_delete, probe, key)
    passed()


if __name__ == "__main__":
    main()
