"""Step reporting for the Python compatibility scripts: the first step that fails ends the
script with exit 1 and one line naming the step, what was received and what was expected."""
import os
import sys
import traceback


def fail(step, message):
    print("FAIL [%s] %s: %s" % (os.path.basename(sys.argv[0]), step, message), file=sys.stderr)
    sys.exit(1)


def expect(step, got, want):
    if got != want:
        fail(step, "got %r, expected %r" % (got, want))
    return got


def run(step, fn, *args, **kwargs):
    """Calls fn; an exception fails `step` with the exception's type and text."""
    try:
        return fn(*args, **kwargs)
    except SystemExit:
        raise
    except Exception as e:  # the client's own exception is what the report must show
        tb = traceback.extract_tb(e.__traceback__)
        where = "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else "?"
        fail(step, "%s: %s (at %s)" % (type(e).__name__, e, where))


def passed():
    print("PASS [%s] against %s" % (os.path.basename(sys.argv[0]),
                                   os.environ.get("SKYDB_COMPAT_SERVER", "?")))
