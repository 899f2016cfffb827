"""Two session libraries replayed at the protocol level, command for command as their sources send
them, through redis-py (Debian's python3-redis):

- Spring Session's RedisIndexedSessionRepository: at start CONFIG GET notify-keyspace-events and
  CONFIG SET of it with E, g and x added; SUBSCRIBE to __keyevent@0__:del and
  __keyevent@0__:expired, PSUBSCRIBE to its created channel; a session saved as HMSET of
  creationTime / maxInactiveInterval / lastAccessedTime / sessionAttr:*, the created event
  PUBLISHed, its expiry bookkeeping (SADD to the minute's expirations set, APPEND "" to the
  session's expires key, EXPIREs), the principal index SADD; a read and a save that slides the
  expiry; then the `__keyevent@0__:expired` event of the expires key that Spring waits for,
  exactly once, and the clean-up it triggers (HGETALL, SREM from the index, DEL with its
  `__keyevent@0__:del` event).
- ASP.NET Core's Redis cache (Microsoft.Extensions.Caching.StackExchangeRedis, the session
  middleware's store): HSET absexp / sldexp / data, EXPIRE, HMGET on read, EXPIRE on refresh,
  DEL on remove.

Under `compat_server.py --pair` the app writes through the first daemon and listens on the
second, as two app instances would; each instance runs Spring's start-up on its own daemon. The
same script passes against redis-server 7 (tests/compat/CMakeLists.txt). Session ids and
values are compared, never printed."""
import os
import time
import uuid

import redis

from compat_steps import expect, fail, passed, run

PAIR = os.environ.get("SKYDB_COMPAT_PAIR") == "1"
NEAR = os.environ["SKYDB_COMPAT_SOCKET"]  # the app's writes
FAR = os.environ.get("SKYDB_COMPAT_SOCKET_B", NEAR)  # the app's listener

NS = "spring:session:"
PRINCIPAL_INDEX = NS + "index:org.springframework.session.FindByIndexNameSessionRepository." \
                       "PRINCIPAL_NAME_INDEX_NAME:"
MAX_INACTIVE = 2  # seconds; Spring's default is 1800, shortened so the expiry is seen
EVENT_WAIT = 20.0  # seconds for the expired event: a sweep tick, ASan, a shared machine


def connect(path):
    return redis.Redis(unix_socket_path=path, socket_timeout=30)


def configure_keyspace_events(r):
    """Spring's ConfigureNotifyKeyspaceEventsAction: adds E, and g and x unless A is there."""
    current = r.config_get("notify-keyspace-events").get("notify-keyspace-events", "")
    wanted = current
    if "E" not in wanted:
        wanted += "E"
    if "A" not in wanted and "g" not in wanted:
        wanted += "g"
    if "A" not in wanted and "x" not in wanted:
        wanted += "x"
    if wanted != current:
        expect("CONFIG SET notify-keyspace-events " + wanted,
               r.config_set("notify-keyspace-events", wanted), True)
    now = r.config_get("notify-keyspace-events")["notify-keyspace-events"]
    expect("CONFIG GET notify-keyspace-events has E, g and x",
           all(c in now for c in "Egx"), True)


def rounded_up_minute(ms):
    return (ms // 60000 + 1) * 60000


def save(r, sid, attrs, created_ms, accessed_ms, previous_minute=None):
    """RedisSession.saveDelta, then RedisSessionExpirationPolicy.onExpirationUpdated."""
    key = NS + "sessions:" + sid
    fields = {"creationTime": created_ms, "maxInactiveInterval": MAX_INACTIVE,
              "lastAccessedTime": accessed_ms}
    fields.update({"sessionAttr:" + name: value for name, value in attrs.items()})
    expect("HMSET session", r.execute_command("HMSET", key, *sum(fields.items(), ())), True)
    minute = rounded_up_minute(accessed_ms + MAX_INACTIVE * 1000)
    if previous_minute is not None and previous_minute != minute:
        r.srem(NS + "expirations:%d" % previous_minute, "expires:" + sid)
    expect("SADD expirations", r.sadd(NS + "expirations:%d" % minute, "expires:" + sid) in (0, 1),
           True)
    expect("EXPIRE expirations", r.expire(NS + "expirations:%d" % minute, MAX_INACTIVE + 300),
           True)
    expires_key = NS + "sessions:expires:" + sid
    expect("APPEND expires key", r.append(expires_key, ""), 0)
    expect("EXPIRE expires key", r.expire(expires_key, MAX_INACTIVE), True)
    expect("EXPIRE session", r.expire(key, MAX_INACTIVE + 300), True)
    return minute


def next_message(pubsub, deadline):
    while time.time() < deadline:
        message = pubsub.get_message(timeout=0.5)
        if message is not None and message["type"] in ("message", "pmessage"):
            return message
    return None


def spring_session(app, listeners):
    for r in listeners:
        configure_keyspace_events(r)
    pubsub = listeners[-1].pubsub()
    pubsub.subscribe("__keyevent@0__:del", "__keyevent@0__:expired")
    pubsub.psubscribe(NS + "event:0:created:*")
    for _ in range(3):  # the three confirmations
        pubsub.get_message(timeout=5)

    sid = str(uuid.uuid4())
    now = int(time.time() * 1000)
    attrs = {"SPRING_SECURITY_CONTEXT": bytes(range(256)) * 8, "cart": b"\xac\xed\x00\x05t\x00\x03abc"}
    minute = save(app, sid, attrs, now, now)
    app.publish(NS + "event:0:created:" + sid, b"\xac\xed\x00\x05sr")
    expect("SADD principal index", app.sadd(PRINCIPAL_INDEX + "alice", sid), 1)

    created = next_message(pubsub, time.time() + EVENT_WAIT)
    expect("created event heard", created is not None and
           created["channel"] == (NS + "event:0:created:" + sid).encode(), True)

    stored = app.hgetall(NS + "sessions:" + sid)
    expect("HGETALL session fields", sorted(stored),
           sorted([b"creationTime", b"maxInactiveInterval", b"lastAccessedTime",
                   b"sessionAttr:SPRING_SECURITY_CONTEXT", b"sessionAttr:cart"]))
    expect("session attribute bytes", stored[b"sessionAttr:SPRING_SECURITY_CONTEXT"],
           attrs["SPRING_SECURITY_CONTEXT"])
    expect("TYPE of the expires key", app.type(NS + "sessions:expires:" + sid), b"string")

    accessed = int(time.time() * 1000)  # a request slides the expiry
    save(app, sid, {}, now, accessed, previous_minute=minute)

    expected = (NS + "sessions:expires:" + sid).encode()
    heard = []
    deadline = time.time() + EVENT_WAIT
    while time.time() < deadline and not heard:
        message = next_message(pubsub, deadline)
        if message is not None and message["channel"] == b"__keyevent@0__:expired" \
                and message["data"] == expected:
            heard.append(message)
    if not heard:
        fail("expired event of the expires key", "none within %.0f s" % EVENT_WAIT)

    # Spring's handler: the session is still there (5 minutes longer), the index is cleaned,
    # the session deleted; its del event reaches the listener.
    expect("session outlives its expires key", app.exists(NS + "sessions:" + sid), 1)
    expect("the expires key is gone", app.exists(NS + "sessions:expires:" + sid), 0)
    expect("SREM principal index", app.srem(PRINCIPAL_INDEX + "alice", sid), 1)
    expect("DEL session", app.delete(NS + "sessions:" + sid), 1)
    # The index's last member went, so Redis deletes the set: its del comes first.
    for step, key in (("del event of the emptied index", PRINCIPAL_INDEX + "alice"),
                      ("del event of the session", NS + "sessions:" + sid)):
        deleted = next_message(pubsub, time.time() + EVENT_WAIT)
        expect(step + ": channel", deleted is not None and deleted["channel"],
               b"__keyevent@0__:del")
        expect(step + ": key", deleted["data"] == key.encode(), True)
    extra = next_message(pubsub, time.time() + 2.5)
    expect("each expiry announced once", extra is None or
           extra["data"] != expected, True)
    pubsub.close()


def aspnet_cache(app):
    key = "SampleInstance" + str(uuid.uuid4())
    data = bytes(range(256)) * 16
    sliding_ticks = 20 * 60 * 10_000_000  # 20 minutes in .NET ticks
    expect("HSET absexp sldexp data",
           app.hset(key, mapping={"absexp": -1, "sldexp": sliding_ticks, "data": data}), 3)
    expect("EXPIRE 1200", app.expire(key, 1200), True)
    got = app.hmget(key, ["absexp", "sldexp", "data"])
    expect("HMGET absexp sldexp data", got, [b"-1", str(sliding_ticks).encode(), data])
    expect("EXPIRE on refresh", app.expire(key, 1200), True)
    expect("TTL after refresh", 1190 <= app.ttl(key) <= 1200, True)
    expect("HMGET of a missing entry", app.hmget(key + "x", ["absexp", "sldexp", "data"]),
           [None, None, None])
    expect("DEL on remove", app.delete(key), 1)
    expect("gone", app.exists(key), 0)


def main():
    app = connect(NEAR)
    listeners = [app] if not PAIR else [app, connect(FAR)]
    run("Spring Session", spring_session, app, listeners)
    run("ASP.NET Core cache", aspnet_cache, app)
    passed()


if __name__ == "__main__":
    main()
