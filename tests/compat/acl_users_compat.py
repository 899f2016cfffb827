"""ACL users as two apps on one store see them, through Debian's python3-redis (issue 45): the
default user makes `shop` and `blog`, each walled into its own key and channel prefix with
every command but @dangerous; under `compat_server.py --pair` they are made on the first daemon
and used on the second, which reads them from the same database. Each app's user may GET, SET,
SCAN, PUBLISH and SUBSCRIBE inside its prefix and gets NOPERM outside it, and KEYS (in
@dangerous) not at all; `HELLO 3 AUTH` and `AUTH user pass` both log in; a rotated password
stops the old one at once on the daemon that rotated it and within a second on the other; ACL
LOG counts the denials without naming a key. Session values are compared, never printed."""
import os
import socket
import time

import redis

from compat_steps import expect, fail, passed, run

NEAR = os.environ["SKYDB_COMPAT_SOCKET"]  # where the users are made
FAR = os.environ.get("SKYDB_COMPAT_SOCKET_B", NEAR)  # where they are used
SKYDB = os.environ.get("SKYDB_COMPAT_SERVER") == "skydb"
RULES = ["+@all", "-@dangerous"]
SECRET = b"session of a shop customer " * 1400  # ~37 KB, as Sky.Live's sessions


def app_client(path, user, password, **kwargs):
    return redis.Redis(unix_socket_path=path, username=user, password=password,
                       socket_timeout=10, **kwargs)


def denied(step, fn, *args):
    try:
        fn(*args)
    except redis.exceptions.NoPermissionError as e:
        if "NOPERM" not in str(e) and "no permissions" not in str(e):
            fail(step, "a NoPermissionError without NOPERM: %s" % e)
        return
    except Exception as e:
        fail(step, "%s: %s, expected NOPERM" % (type(e).__name__, e))
    fail(step, "allowed, expected NOPERM")


def hello3_auth(path, user, password):
    """HELLO 3 AUTH over a raw socket (python3-redis 4 speaks RESP2 only): the reply's start."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(path)
        args = [b"HELLO", b"3", b"AUTH", user.encode(), password.encode()]
        s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
        return s.recv(4096)


def wait_login(path, user, password, want_ok, within=5.0):
    """Logs in until it succeeds (want_ok) or fails; how long it took."""
    start = time.monotonic()
    while True:
        try:
            app_client(path, user, password).ping()
            ok = True
        except (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError) as e:
            if "WRONGPASS" not in str(e):
                raise
            ok = False
        if ok == want_ok:
            return time.monotonic() - start
        if time.monotonic() - start > within:
            fail("%s's login %s on %s" % (user, "works" if want_ok else "fails", path),
                 "still %s after %.1f s" % ("refused" if want_ok else "accepted", within))
        time.sleep(0.05)


def main():
    admin = redis.Redis(unix_socket_path=NEAR, socket_timeout=10)
    for app in ("shop", "blog"):
        expect("ACL SETUSER %s" % app,
               run("ACL SETUSER %s" % app, admin.acl_setuser, app, enabled=True,
                   passwords=["+%s-pw1" % app], keys=["%s:*" % app],
                   channels=["%s:*" % app], commands=RULES, reset=True),
               True)
    wait_login(FAR, "shop", "shop-pw1", True)
    wait_login(FAR, "blog", "blog-pw1", True)

    shop = app_client(FAR, "shop", "shop-pw1")
    blog = app_client(FAR, "blog", "blog-pw1")
    expect("HELLO 3 AUTH blog", hello3_auth(FAR, "blog", "blog-pw1")[:1], b"%")
    expect("HELLO 3 AUTH with a wrong password", hello3_auth(FAR, "blog", "nope")[:10],
           b"-WRONGPASS")
    expect("shop WHOAMI", run("ACL WHOAMI", shop.acl_whoami), "shop")
    expect("shop SET its session", run("SET", shop.set, "shop:sess:1", SECRET, ex=1800), True)
    expect("shop GET its session", run("GET", shop.get, "shop:sess:1") == SECRET, True)
    expect("blog SET its session", run("SET", blog.set, "blog:sess:1", b"b", ex=1800), True)

    # Outside its prefix: every way in is refused.
    denied("blog GET shop's session", blog.get, "shop:sess:1")
    denied("blog SET shop's session", blog.set, "shop:sess:1", b"forged")
    denied("blog DEL shop's session", blog.delete, "shop:sess:1")
    denied("blog MGET with shop's session", blog.mget, "blog:sess:1", "shop:sess:1")
    denied("blog EXPIRE shop's session", blog.expire, "shop:sess:1", 1)
    denied("blog KEYS", blog.keys, "*")
    denied("blog KEYS in its prefix (KEYS is @dangerous)", blog.keys, "blog:*")
    denied("blog PUBLISH to shop's topic", blog.publish, "shop:live:topic:1", "x")
    denied("blog FLUSHALL", blog.flushall)
    denied("blog CONFIG GET", blog.config_get, "maxmemory")
    denied("blog EVAL on shop's key", blog.eval, "return redis.call('GET', KEYS[1])", 1,
           "shop:sess:1")
    if SKYDB:  # Redis answers SCAN of every key to such a user; skydb refuses it
        denied("blog SCAN of every key", blog.scan, 0)
        denied("blog SCAN MATCH shop:*", blog.scan, 0, "shop:*")
    sub = blog.pubsub()
    # python3-redis sends SUBSCRIBE and reads its answer with the next message.
    denied("blog SUBSCRIBE to shop's topic",
           lambda: (sub.subscribe("shop:live:topic:1"), sub.get_message(timeout=5)))
    sub.close()

    # Inside its prefix.
    cursor, keys = run("blog SCAN MATCH blog:*", blog.scan, 0, "blog:*", 1000)
    expect("blog SCAN MATCH blog:* keys", sorted(keys), [b"blog:sess:1"])
    expect("blog PUBLISH to its topic", run("PUBLISH", blog.publish, "blog:live:1", "x"), 0)
    sub = blog.pubsub()
    run("blog SUBSCRIBE to its topic", sub.subscribe, "blog:live:1")
    expect("shop's session after blog's tries", run("GET", shop.get, "shop:sess:1") == SECRET,
           True)

    # The denials are in the ACL LOG of the daemon that refused them, named by command or
    # channel, never by key.
    far_admin = redis.Redis(unix_socket_path=FAR, socket_timeout=10)
    entries = run("ACL LOG", far_admin.acl_log, 50)
    reasons = {(e["reason"], e["username"]) for e in entries}
    for want in (("key", "blog"), ("command", "blog"), ("channel", "blog")):
        if want not in reasons:
            fail("ACL LOG", "no %r entry among %r" % (want, sorted(reasons)))
    if SKYDB:
        objects = [e["object"] for e in entries]
        if any("sess" in o for o in objects):
            fail("ACL LOG", "a session key is named: %r" % objects)
        info = run("INFO stats", far_admin.info, "stats")
        if info.get("acl_access_denied_key", 0) < 5:
            fail("INFO acl_access_denied_key", "%r" % info.get("acl_access_denied_key"))

    # A rotated password: the old one fails at once where it was rotated, and on the other
    # daemon once it has read the change (its poll: 250 ms).
    run("ACL SETUSER shop resetpass >shop-pw2", admin.acl_setuser, "shop", enabled=True,
        passwords=["+shop-pw2"], reset_passwords=True)
    wait_login(NEAR, "shop", "shop-pw1", False, within=0.0)
    took = wait_login(FAR, "shop", "shop-pw1", False, within=2.0)
    wait_login(FAR, "shop", "shop-pw2", True, within=2.0)
    print("old password refused on the other daemon after %.2f s" % took)
    expect("shop's open connection after the rotation", run("GET", shop.get, "shop:sess:1") ==
           SECRET, True)
    passed()


if __name__ == "__main__":
    main()
