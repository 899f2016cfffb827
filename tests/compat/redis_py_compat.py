"""redis-py (Debian's python3-redis) on its default settings: a transaction pipeline
(pipeline() is transaction=True: MULTI ... EXEC in one round trip), WATCH with a retry loop that
a concurrent change forces to run twice, EXEC answering nil after a change to a watched key,
and pub/sub (subscribe, psubscribe, get_message, PUBLISH counting receivers)."""
import os
import time

import redis

from compat_steps import expect, fail, passed, run


def connect(**kwargs):
    return redis.Redis(unix_socket_path=os.environ["SKYDB_COMPAT_SOCKET"], socket_timeout=10,
                       **kwargs)


def transaction_pipeline(r):
    pipe = r.pipeline()  # transaction=True by default
    pipe.set("py:tx:k", "v1").get("py:tx:k").incr("py:tx:n").incrby("py:tx:n", 4)
    pipe.expire("py:tx:k", 600).ttl("py:tx:k")
    expect("pipeline() EXEC results", pipe.execute(), [True, b"v1", 1, 5, True, 600])

    # A command that fails inside EXEC fails alone; the others are applied (Redis semantics).
    pipe = r.pipeline()
    pipe.set("py:tx:s", "text").incr("py:tx:s").set("py:tx:after", "yes")
    results = pipe.execute(raise_on_error=False)
    expect("EXEC with a failing INCR: reply count", len(results), 3)
    expect("EXEC with a failing INCR: SET", results[0], True)
    if not isinstance(results[1], redis.exceptions.ResponseError):
        fail("EXEC with a failing INCR: INCR", "got %r, expected a ResponseError" % results[1])
    expect("EXEC with a failing INCR: the later SET ran", r.get("py:tx:after"), b"yes")

    # A command the server refuses while queueing aborts the whole transaction (EXECABORT).
    pipe = r.pipeline()
    pipe.set("py:tx:aborted", "no").execute_command("SET", "py:tx:aborted")  # wrong arity
    try:
        pipe.execute()
        fail("EXEC after a queueing error", "execute() returned, expected ExecAbortError")
    except redis.exceptions.ExecAbortError:
        pass
    except redis.exceptions.ResponseError as e:
        # redis-py raises the queueing error itself; either way nothing may have run.
        if "wrong number of arguments" not in str(e) and "EXECABORT" not in str(e):
            fail("EXEC after a queueing error", "got ResponseError %r" % str(e))
    expect("EXEC after a queueing error: nothing applied", r.get("py:tx:aborted"), None)

    # Without transaction=True, a pipeline is plain pipelining (no MULTI).
    pipe = r.pipeline(transaction=False)
    expect("pipeline(transaction=False)", pipe.set("py:p", "1").get("py:p").execute(),
           [True, b"1"])


def watch_retry_loop(r, other):
    r.set("py:w:counter", 10)
    attempts = 0
    with r.pipeline() as pipe:
        while True:
            try:
                pipe.watch("py:w:counter")
                current = int(pipe.get("py:w:counter"))
                if attempts == 0:
                    other.set("py:w:counter", 100)  # a concurrent writer on another connection
                pipe.multi()
                pipe.set("py:w:counter", current + 1)
                pipe.execute()
                break
            except redis.exceptions.WatchError:
                attempts += 1
                if attempts > 3:
                    fail("WATCH retry loop", "WatchError on every one of 4 attempts")
    expect("WATCH retry loop: WatchError count", attempts, 1)
    expect("WATCH retry loop: final value", r.get("py:w:counter"), b"101")

    # The helper redis-py offers for the same loop.
    calls = []

    def increment(pipe):
        value = int(pipe.get("py:w:counter"))
        if not calls:
            other.incr("py:w:counter")
        calls.append(value)
        pipe.multi()
        pipe.set("py:w:counter", value * 2)

    run("Redis.transaction()", r.transaction, increment, "py:w:counter")
    expect("Redis.transaction(): values seen", calls, [101, 102])
    expect("Redis.transaction(): final value", r.get("py:w:counter"), b"204")


def exec_nil_after_watched_change(other):
    # Raw replies on one connection, past redis-py's per-command reply callbacks.
    conn = connect(single_connection_client=True).connection

    def cmd(*args):
        conn.send_command(*args)
        return conn.read_response()

    expect("WATCH", cmd("WATCH", "py:w:raw"), b"OK")
    other.set("py:w:raw", "changed")
    expect("MULTI", cmd("MULTI"), b"OK")
    expect("SET while queued", cmd("SET", "py:w:raw", "mine"), b"QUEUED")
    expect("EXEC after a watched key changed", cmd("EXEC"), None)
    expect("the watched key kept the other write", other.get("py:w:raw"), b"changed")
    # UNWATCH forgets the watch: the next EXEC runs.
    cmd("WATCH", "py:w:raw")
    other.set("py:w:raw", "again")
    expect("UNWATCH", cmd("UNWATCH"), b"OK")
    cmd("MULTI")
    cmd("SET", "py:w:raw", "mine")
    expect("EXEC after UNWATCH", cmd("EXEC"), [b"OK"])
    # DISCARD drops what was queued.
    cmd("MULTI")
    cmd("SET", "py:w:raw", "discarded")
    expect("DISCARD", cmd("DISCARD"), b"OK")
    expect("after DISCARD", cmd("GET", "py:w:raw"), b"mine")
    conn.disconnect()


def next_message(p, step):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        m = p.get_message(timeout=1.0)
        if m is not None:
            return m
    fail(step, "no message within 5 s")


def pubsub(r):
    p = r.pubsub()
    p.subscribe("py:news")
    expect("subscribe confirmation", next_message(p, "subscribe confirmation"),
           {"type": "subscribe", "pattern": None, "channel": b"py:news", "data": 1})
    p.psubscribe("py:n*")
    expect("psubscribe confirmation", next_message(p, "psubscribe confirmation"),
           {"type": "psubscribe", "pattern": None, "channel": b"py:n*", "data": 2})
    second = r.pubsub(ignore_subscribe_messages=True)
    second.subscribe("py:news")
    second.get_message(timeout=1.0)  # the confirmation, ignored

    expect("PUBSUB CHANNELS", sorted(r.pubsub_channels("py:*")), [b"py:news"])
    expect("PUBSUB NUMSUB", r.pubsub_numsub("py:news"), [(b"py:news", 2)])
    expect("PUBSUB NUMPAT", r.pubsub_numpat(), 1)
    # Two subscribers of the channel plus one matching pattern: three deliveries.
    expect("PUBLISH receiver count", r.publish("py:news", "hello"), 3)
    expect("message", next_message(p, "message"),
           {"type": "message", "pattern": None, "channel": b"py:news", "data": b"hello"})
    expect("pmessage", next_message(p, "pmessage"),
           {"type": "pmessage", "pattern": b"py:n*", "channel": b"py:news", "data": b"hello"})
    expect("second subscriber's message", next_message(second, "second subscriber")["data"],
           b"hello")
    expect("PUBLISH to a pattern-only channel", r.publish("py:notes", "x"), 1)
    expect("pmessage on py:notes", next_message(p, "pmessage on py:notes")["channel"],
           b"py:notes")
    expect("PUBLISH with no receiver", r.publish("other", "x"), 0)

    p.unsubscribe("py:news")
    expect("unsubscribe confirmation", next_message(p, "unsubscribe")["type"], "unsubscribe")
    p.punsubscribe()
    expect("punsubscribe confirmation", next_message(p, "punsubscribe")["type"], "punsubscribe")
    expect("PUBLISH after unsubscribing one", r.publish("py:news", "bye"), 1)
    p.close()
    second.close()
    # The connection a pubsub used goes back to the pool usable for ordinary commands.
    expect("PING after pub/sub", r.ping(), True)


def main():
    r = connect()
    other = connect()
    expect("PING", run("PING", r.ping), True)
    run("transaction pipeline", transaction_pipeline, r)
    run("WATCH retry loop", watch_retry_loop, r, other)
    run("EXEC nil after a watched change", exec_nil_after_watched_change, other)
    run("pub/sub", pubsub, r)
    passed()


if __name__ == "__main__":
    main()
