"""Hashes and sets through redis-py (Debian's python3-redis), with Redis's replies: the hash and
set commands session libraries use, WRONGTYPE, TYPE, RENAME, SCAN TYPE, a hash emptied by HDEL
disappearing, hashes and sets in MULTI and in pipelines, 37 KB field values, and (where the
server has them: Redis 7.4 and later, skydb) field deadlines. The same script passes against
redis-server (tests/compat/CMakeLists.txt)."""
import os
import time

import redis

from compat_steps import expect, fail, passed, run

BIG = bytes(range(256)) * 148  # 37,888 bytes, every byte value


def connect(**kwargs):
    return redis.Redis(unix_socket_path=os.environ["SKYDB_COMPAT_SOCKET"], socket_timeout=10,
                       **kwargs)


def hashes(r):
    expect("HSET three fields", r.hset("c:h", mapping={"a": "1", "b": "2", "c": "3"}), 3)
    expect("HSET one new, one old", r.hset("c:h", mapping={"a": "10", "d": "4"}), 1)
    expect("HGET", r.hget("c:h", "a"), b"10")
    expect("HGET missing field", r.hget("c:h", "zz"), None)
    expect("HGET missing key", r.hget("c:none", "a"), None)
    expect("HMGET", r.hmget("c:h", ["a", "zz", "d"]), [b"10", None, b"4"])
    expect("HGETALL", r.hgetall("c:h"), {b"a": b"10", b"b": b"2", b"c": b"3", b"d": b"4"})
    expect("HGETALL missing key", r.hgetall("c:none"), {})
    expect("HLEN", r.hlen("c:h"), 4)
    expect("HEXISTS", [r.hexists("c:h", "b"), r.hexists("c:h", "zz")], [True, False])
    expect("HKEYS", sorted(r.hkeys("c:h")), [b"a", b"b", b"c", b"d"])
    expect("HVALS", sorted(r.hvals("c:h")), [b"10", b"2", b"3", b"4"])
    expect("HSTRLEN", r.hstrlen("c:h", "a"), 2)
    expect("HSETNX on a field that exists", r.hsetnx("c:h", "a", "x"), False)
    expect("HSETNX on a new field", r.hsetnx("c:h", "e", "5"), True)
    expect("HINCRBY", r.hincrby("c:h", "a", 5), 15)
    expect("HINCRBY a new field", r.hincrby("c:h", "n", -3), -3)
    expect("HINCRBYFLOAT", r.hincrbyfloat("c:h", "f", 1.5), 1.5)
    try:
        r.hincrby("c:h", "f", 1)
        fail("HINCRBY on a float field", "no error")
    except redis.exceptions.ResponseError as e:
        expect("HINCRBY on a float field", str(e), "hash value is not an integer")
    expect("HDEL two, one missing", r.hdel("c:h", "b", "zz", "c"), 2)
    expect("HMSET", r.execute_command("HMSET", "c:h", "g", "7"), True)
    seen = {}
    cursor = 0
    while True:
        cursor, page = r.hscan("c:h", cursor, count=2)
        seen.update(page)
        if cursor == 0:
            break
    expect("HSCAN visits every field", seen, r.hgetall("c:h"))
    fields = r.hrandfield("c:h", 3)
    expect("HRANDFIELD 3: distinct fields of the hash",
           len(set(fields)) == 3 and set(fields) <= set(seen), True)
    expect("HRANDFIELD -10: ten fields", len(r.hrandfield("c:h", -10)), 10)
    # A hash whose last field goes is gone.
    r.hset("c:one", "only", "x")
    expect("HDEL of the last field", r.hdel("c:one", "only"), 1)
    expect("EXISTS after the last field went", r.exists("c:one"), 0)
    # 37 KB values, binary-safe.
    r.hset("c:big", mapping={"blob": BIG, "small": "s"})
    expect("HGET of a 37 KB value", r.hget("c:big", "blob"), BIG)
    expect("HSTRLEN of a 37 KB value", r.hstrlen("c:big", "blob"), len(BIG))


def sets(r):
    expect("SADD", r.sadd("c:s", "a", "b", "c", "a"), 3)
    expect("SADD again", r.sadd("c:s", "c", "d"), 1)
    expect("SMEMBERS", r.smembers("c:s"), {b"a", b"b", b"c", b"d"})
    expect("SCARD", r.scard("c:s"), 4)
    expect("SISMEMBER", [r.sismember("c:s", "a"), r.sismember("c:s", "z")], [True, False])
    expect("SMISMEMBER", r.smismember("c:s", ["a", "z", "d"]), [1, 0, 1])
    expect("SREM", r.srem("c:s", "a", "z"), 1)
    r.sadd("c:t", "c", "d", "e")
    expect("SINTER", r.sinter("c:s", "c:t"), {b"c", b"d"})
    expect("SUNION", r.sunion("c:s", "c:t"), {b"b", b"c", b"d", b"e"})
    expect("SDIFF", r.sdiff("c:s", "c:t"), {b"b"})
    expect("SINTER with a missing key", r.sinter("c:s", "c:none"), set())
    expect("SINTERSTORE", r.sinterstore("c:i", ["c:s", "c:t"]), 2)
    expect("SINTERSTORE's set", r.smembers("c:i"), {b"c", b"d"})
    expect("SUNIONSTORE", r.sunionstore("c:u", ["c:s", "c:t"]), 4)
    expect("SDIFFSTORE of nothing deletes", r.sdiffstore("c:u", ["c:none", "c:s"]), 0)
    expect("SDIFFSTORE's destination is gone", r.exists("c:u"), 0)
    expect("SINTERCARD", r.sintercard(2, ["c:s", "c:t"]), 2)
    expect("SINTERCARD LIMIT", r.sintercard(2, ["c:s", "c:t"], limit=1), 1)
    expect("SMOVE", r.smove("c:s", "c:m", "b"), True)
    expect("SMOVE of a missing member", r.smove("c:s", "c:m", "zz"), False)
    expect("SMOVE's destination", r.smembers("c:m"), {b"b"})
    members = r.srandmember("c:t", 2)
    expect("SRANDMEMBER 2", len(set(members)) == 2 and set(members) <= {b"c", b"d", b"e"}, True)
    expect("SRANDMEMBER -5", len(r.srandmember("c:t", -5)), 5)
    popped = r.spop("c:t")
    expect("SPOP: a member", popped in (b"c", b"d", b"e"), True)
    expect("SPOP: it is gone", r.sismember("c:t", popped), False)
    expect("SPOP of the rest", len(r.spop("c:t", 10)), 2)
    expect("a set whose last member went is gone", r.exists("c:t"), 0)
    seen = set()
    r.sadd("c:many", *["m%d" % i for i in range(300)])
    cursor = 0
    while True:
        cursor, page = r.sscan("c:many", cursor, match="m1*", count=50)
        seen.update(page)
        if cursor == 0:
            break
    expect("SSCAN MATCH visits every match", seen,
           {("m%d" % i).encode() for i in range(300) if str(i).startswith("1")})


def types_and_keys(r):
    r.set("c:str", "v")
    for step, fn in [("GET on a hash", lambda: r.get("c:h")),
                     ("HSET on a string", lambda: r.hset("c:str", "f", "v")),
                     ("SADD on a hash", lambda: r.sadd("c:h", "m")),
                     ("HGETALL on a set", lambda: r.hgetall("c:s")),
                     ("INCR on a set", lambda: r.incr("c:s")),
                     ("SINTER with a string", lambda: r.sinter("c:s", "c:str"))]:
        try:
            fn()
            fail(step, "no error")
        except redis.exceptions.ResponseError as e:
            expect(step, str(e), "WRONGTYPE Operation against a key holding the wrong kind of value")
    expect("TYPE", [r.type(k) for k in ["c:str", "c:h", "c:s", "c:none"]],
           [b"string", b"hash", b"set", b"none"])
    expect("SET replaces a hash", r.set("c:big", "now a string"), True)
    expect("TYPE after SET", r.type("c:big"), b"string")
    expect("EXPIRE on a hash", r.expire("c:h", 100), True)
    expect("TTL of a hash", r.ttl("c:h"), 100)
    expect("RENAME a hash", r.rename("c:h", "c:h2"), True)
    expect("the renamed hash", r.hget("c:h2", "a"), b"15")
    expect("its deadline moved along", r.ttl("c:h2"), 100)
    expect("the old name is gone", r.exists("c:h"), 0)
    expect("RENAMENX onto an existing key", r.renamenx("c:h2", "c:s"), False)
    expect("RENAMENX onto a new name", r.renamenx("c:h2", "c:h3"), True)
    try:
        r.rename("c:none", "c:x")
        fail("RENAME of a missing key", "no error")
    except redis.exceptions.ResponseError as e:
        expect("RENAME of a missing key", str(e), "no such key")
    found = set()
    cursor = 0
    while True:
        cursor, page = r.scan(cursor, match="c:*", count=100, _type="set")
        found.update(page)
        if cursor == 0:
            break
    expect("SCAN TYPE set", found, {b"c:s", b"c:i", b"c:m", b"c:many"})
    expect("DEL of a hash and a set", r.delete("c:h3", "c:m"), 2)
    expect("DEL'd keys are gone", r.exists("c:h3", "c:m"), 0)


def transactions_and_pipelines(r):
    pipe = r.pipeline()  # MULTI ... EXEC
    pipe.hset("c:tx", mapping={"a": "1"}).hincrby("c:tx", "a", 2).sadd("c:txs", "x")
    pipe.hgetall("c:tx").smembers("c:txs").incr("c:tx")
    results = pipe.execute(raise_on_error=False)
    expect("EXEC: the collection replies", results[:5], [1, 3, 1, {b"a": b"3"}, {b"x"}])
    expect("EXEC: INCR on a hash fails alone",
           isinstance(results[5], redis.exceptions.ResponseError), True)
    pipe = r.pipeline(transaction=False)
    for i in range(500):
        pipe.hset("c:pipe", "f%d" % i, "v%d" % i)
        pipe.sadd("c:pipes", i)
    pipe.hlen("c:pipe").scard("c:pipes").hget("c:pipe", "f499")
    out = pipe.execute()
    expect("pipelined HSET/SADD then reads", out[-3:], [500, 500, b"v499"])


def field_deadlines(r):
    try:
        r.execute_command("HEXPIRE", "c:none", 10, "FIELDS", 1, "f")
    except redis.exceptions.ResponseError as e:
        if "unknown command" in str(e):
            print("field deadlines: this server has no HEXPIRE (Redis before 7.4); skipped")
            return
        raise
    r.hset("c:fd", mapping={"a": "1", "b": "2", "c": "3"})
    expect("HEXPIRE", r.execute_command("HEXPIRE", "c:fd", 100, "FIELDS", 2, "a", "zz"), [1, -2])
    expect("HTTL", r.execute_command("HTTL", "c:fd", "FIELDS", 3, "a", "b", "zz"), [100, -1, -2])
    expect("HPERSIST", r.execute_command("HPERSIST", "c:fd", "FIELDS", 1, "a"), [1])
    expect("HPEXPIRE 100 ms", r.execute_command("HPEXPIRE", "c:fd", 100, "FIELDS", 1, "b"), [1])
    time.sleep(0.4)
    expect("a field past its deadline is gone", r.hgetall("c:fd"), {b"a": b"1", b"c": b"3"})
    expect("HEXPIRE 0 deletes the field",
           r.execute_command("HEXPIRE", "c:fd", 0, "FIELDS", 1, "c"), [2])
    expect("HLEN", r.hlen("c:fd"), 1)
    # Redis 7.4's "hexpired" once the field's deadline passes, then "del" as it took the hash's
    # last field. skydb's announcer looks once a second, from its first look after the classes
    # are on: the deadline is set after that.
    r.config_set("notify-keyspace-events", "Egh")
    time.sleep(1.5)
    sub = r.pubsub()
    sub.subscribe("__keyevent@0__:hexpired", "__keyevent@0__:del")
    for _ in range(2):
        sub.get_message(timeout=5)  # the subscriptions' confirmations
    r.hset("c:hx", "a", "1")
    r.execute_command("HPEXPIRE", "c:hx", 200, "FIELDS", 1, "a")
    heard, deadline = [], time.time() + 5
    while len(heard) < 2 and time.time() < deadline:
        m = sub.get_message(timeout=0.5)
        if m is not None and m["type"] == "message":
            heard.append((m["channel"], m["data"]))
    expect("hexpired, then del", heard,
           [(b"__keyevent@0__:hexpired", b"c:hx"), (b"__keyevent@0__:del", b"c:hx")])
    sub.close()
    r.config_set("notify-keyspace-events", "")


def main():
    r = connect()
    expect("PING", run("PING", r.ping), True)
    r.delete(*[k for k in r.scan_iter(match="c:*")] or ["c:none"])
    run("hashes", hashes, r)
    run("sets", sets, r)
    run("types and keys", types_and_keys, r)
    run("transactions and pipelines", transactions_and_pipelines, r)
    run("field deadlines", field_deadlines, r)
    passed()


if __name__ == "__main__":
    main()
