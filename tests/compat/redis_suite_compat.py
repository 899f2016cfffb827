"""Units of Redis's own test suite (tests/test_helper.tcl of a Redis source tree) run against the
server under test in the suite's external-server mode, over TCP.

    redis_suite_compat.py UNIT TEST_REGEXP

The suite is not part of this repository: SKYDB_TEST_REDIS_TESTS_DIR names a Redis source tree
(a checkout of the 7.0.15 tag has tests/ and runtest); without it the script exits 77, which ctest
reports as skipped. The tree is copied to the scratch directory first (the suite writes under
tests/tmp), and in the copy the FUNCTION FLUSH of the external-server setup is made to tolerate
skydb's "unknown command" (skydb has no functions). Tests that do not apply to skydb are skipped
by name; each is listed, with its
reason, in SKIPPED below and in docs/protocol.md ("Redis's test suite"). Every other test the
regexp selects must pass."""
import os
import re
import shutil
import subprocess
import sys

# Per unit, test name -> why it does not apply to skydb. The same lists are in docs/protocol.md.
# Tests tagged needs:debug (DEBUG, which skydb does not have) are left out of every unit.
SKIPPED = {
    "unit/pubsub": {
        "Keyspace notifications: we are able to mask events": "uses LPUSH: skydb has no lists",
        "Keyspace notifications: list events test": "skydb has no lists",
        "Keyspace notifications: zset events test": "skydb has no sorted sets",
        "Keyspace notifications: stream events test": "skydb has no streams",
        "Keyspace notifications: evicted events":
            "skydb never evicts a key (only clean values leave memory; PostgreSQL keeps them)",
    },
    "unit/type/hash": {
        "Hash ziplist of various encodings": "uses DUMP and RESTORE: skydb has no RDB payloads",
        "Hash ziplist of various encodings - sanitize dump":
            "uses RESTORE: skydb has no RDB payloads",
    },
    "unit/acl": {
        "By default, only default user is not able to publish to any shard channel":
            "uses SPUBLISH/SSUBSCRIBE: skydb has no sharded pub/sub",
        "By default, only default user is able to subscribe to any shard channel":
            "uses SPUBLISH/SSUBSCRIBE: skydb has no sharded pub/sub",
        "It's possible to allow publishing to a subset of shard channels":
            "uses SPUBLISH/SSUBSCRIBE: skydb has no sharded pub/sub",
        "It's possible to allow subscribing to a subset of shard channels":
            "uses SPUBLISH/SSUBSCRIBE: skydb has no sharded pub/sub",
        "Subscribers are pardoned if literal permissions are retained and/or gaining allchannels":
            "uses SPUBLISH/SSUBSCRIBE: skydb has no sharded pub/sub",
        "Subscribers are killed when revoked of channel permission":
            "skydb does not close subscribers whose channels were taken away",
        "Subscribers are killed when revoked of pattern permission":
            "skydb does not close subscribers whose channels were taken away",
        "Subscribers are killed when revoked of allchannels permission":
            "skydb does not close subscribers whose channels were taken away",
        "ACLs can include single subcommands":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs can exclude single subcommands, case 1":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs can exclude single subcommands, case 2":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs cannot include a subcommand with a specific arg":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs cannot exclude or include a container commands with a specific arg":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs cannot exclude or include a container command with two args":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs can block SELECT of all but a specific DB":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs can block all DEBUG subcommands except one":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs set can include subcommands, if already full command exists":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs set can exclude subcommands, if already full command exists":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACL CAT category - list all commands/subcommands that belong to category":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACL LOG shows failed subcommand executions at toplevel":
            "subcommand rules (+config|get, +client|id): skydb's rules name whole commands",
        "ACLs including of a type includes also subcommands":
            "uses XADD: skydb has no streams",
        "ACL GETUSER is able to translate back command permissions":
            "uses DEBUG: skydb has none",
        "ACL #5998 regression: memory leaks adding / removing subcommands":
            "uses DEBUG: skydb has none",
        "ACL requires explicit permission for scripting for EVAL_RO, EVALSHA_RO and FCALL_RO":
            "uses READONLY and FCALL_RO: skydb has neither",
        "ACL LOG is able to log keys access violations and key name":
            "skydb's ACL LOG never names a key (session keys are credentials)",
        "ACL LOG entries are limited to a maximum amount":
            "uses CONFIG SET acllog-max-len: skydb keeps 128 entries",
    },
    "unit/type/set": {
        "SMISMEMBER against non set": "uses LPUSH: skydb has no lists",
        "SMISMEMBER requires one or more members": "uses ZADD: skydb has no sorted sets",
        "SADD against non set": "uses LPUSH: skydb has no lists",
    },
}


# tools/redis-scripting-suite.sh uses 24111.
BASE_PORTS = {"unit/pubsub": 21111, "unit/type/hash": 22111, "unit/type/set": 23111,
              "unit/acl": 25111}
# Redis tags all of unit/acl external:skip, for the servers its later blocks start with their own
# configuration; its first block runs on any server, so in the copy that block's tag is removed.
OPEN_TO_EXTERNAL = {"unit/acl": ('start_server {tags {"acl external:skip"}} {',
                                 'start_server {tags {"acl"}} {')}


def tolerate_function_flush(suite):
    """The external-server setup runs FUNCTION FLUSH before each file; skydb has no functions, so
    in the copy (never in the source tree) its error is caught. Nothing else is changed."""
    path = os.path.join(suite, "tests", "support", "server.tcl")
    with open(path) as f:
        text = f.read()
    if "    r function flush\n" not in text:
        sys.exit("FAIL [redis_suite_compat.py] the suite's server.tcl has no FUNCTION FLUSH line")
    with open(path, "w") as f:
        f.write(text.replace("    r function flush\n", "    catch {r function flush}\n", 1))


def main():
    unit, only = sys.argv[1], sys.argv[2]
    source = os.environ.get("SKYDB_TEST_REDIS_TESTS_DIR", "")
    if not source or not os.path.isfile(os.path.join(source, "tests", "test_helper.tcl")):
        print("SKIP: SKYDB_TEST_REDIS_TESTS_DIR does not name a Redis source tree")
        sys.exit(77)
    suite = os.path.join(os.environ["SKYDB_COMPAT_TMP"], "redis-suite")
    shutil.copytree(source, suite, ignore=shutil.ignore_patterns("tmp"), symlinks=True)
    os.makedirs(os.path.join(suite, "tests", "tmp"), exist_ok=True)
    tolerate_function_flush(suite)
    if unit in OPEN_TO_EXTERNAL:
        path = os.path.join(suite, "tests", unit + ".tcl")
        with open(path) as f:
            text = f.read()
        tagged, untagged = OPEN_TO_EXTERNAL[unit]
        if not text.startswith(tagged):
            sys.exit("FAIL [redis_suite_compat.py] %s does not start with %s" % (path, tagged))
        with open(path, "w") as f:
            f.write(text.replace(tagged, untagged, 1))
    argv = ["tclsh", "tests/test_helper.tcl", "--host", os.environ["SKYDB_COMPAT_HOST"],
            "--port", os.environ["SKYDB_COMPAT_PORT"], "--singledb", "--ignore-encoding",
            "--ignore-digest", "--single", unit, "--only", only, "--timeout", "60",
            # A port range of its own per unit: ctest runs units side by side, and the suite's
            # own test server takes the first free port below it, racing another unit's.
            "--baseport", str(BASE_PORTS[unit]), "--portcount", "500"]
    if os.environ.get("SKYDB_COMPAT_SERVER") == "skydb":
        argv += ["--tags", "-needs:debug"]
        for name in SKIPPED[unit]:
            argv += ["--skiptest", name]
    done = subprocess.run(argv, cwd=suite, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=360)
    out = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout.decode(errors="replace"))
    for line in out.splitlines():
        if "[ok]" in line or "[err]" in line or "[skip]" in line or "exception" in line.lower():
            print(line)
    if done.returncode != 0 or "All tests passed" not in out:
        print(out[-4000:], file=sys.stderr)
        print("FAIL [redis_suite_compat.py] %s %s" % (unit, only), file=sys.stderr)
        sys.exit(1)
    print("PASS [redis_suite_compat.py] %s %s against %s" %
          (unit, only, os.environ.get("SKYDB_COMPAT_SERVER", "?")))


if __name__ == "__main__":
    main()
