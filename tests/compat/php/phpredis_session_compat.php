<?php
// phpredis's session handler (Debian's php-redis) as PHP runs it: session.save_handler=redis,
// every request its own php process, the session id carried from one request to the next.
// With locking off (loopback TCP save_path) and on (redis.session.locking_enabled=1, unix socket
// save_path): a request writes the session, a new request with the id reads it back and
// updates it, the key has the session's TTL, and with locking on the lock key exists while a
// request runs and is gone once it ends. PHP warnings (a lock phpredis failed to release, a
// write it could not make) fail the step that printed them.
//
//   php phpredis_session_compat.php                 the test (drives the requests below)
//   php phpredis_session_compat.php request MODE ID one request: MODE write|read|destroy

const PREFIX = 'PHPREDIS_SESSION:';

function fail(string $step, string $message): void {
    fwrite(STDERR, "FAIL [phpredis_session_compat.php] $step: $message\n");
    exit(1);
}

function expect(string $step, $got, $want): void {
    if ($got !== $want) {
        fail($step, 'got ' . var_export($got, true) . ', expected ' . var_export($want, true));
    }
}

// One request in a php process of its own, with the handler's settings; returns its JSON.
function request(string $step, string $savePath, bool $locking, string $mode, string $id): array {
    $cmd = [PHP_BINARY, '-d', 'session.save_handler=redis',
            '-d', 'session.save_path=' . $savePath, '-d', 'session.use_cookies=0',
            '-d', 'session.use_strict_mode=0', '-d', 'error_reporting=' . E_ALL,
            '-d', 'display_errors=stderr', '-d', 'log_errors=0',
            '-d', 'redis.session.locking_enabled=' . ($locking ? '1' : '0'),
            __FILE__, 'request', $mode, $id];
    $proc = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    if (!is_resource($proc)) fail($step, 'could not start php');
    $out = stream_get_contents($pipes[1]);
    $err = stream_get_contents($pipes[2]);
    $code = proc_close($proc);
    if ($code !== 0 || trim($err) !== '') {
        fail($step, "php exited $code; stdout " . var_export($out, true) . ', stderr '
             . var_export(trim($err), true));
    }
    $reply = json_decode($out, true);
    if (!is_array($reply)) fail($step, 'request printed ' . var_export($out, true));
    return $reply;
}

// The request side: what a web request of an app on phpredis sessions does.
function serve(string $mode, string $id, string $socket): void {
    if ($id !== '-') session_id($id);
    if (!session_start()) {
        fwrite(STDERR, "session_start() failed\n");
        exit(1);
    }
    $reply = ['id' => session_id(), 'before' => $_SESSION];
    // What the store holds while the request runs (a client of its own, like a second request).
    $probe = new Redis();
    $probe->connect($socket);
    $reply['lock_during'] = $probe->exists(PREFIX . session_id() . '_LOCK');
    $probe->close();
    if ($mode === 'write') {
        $_SESSION['user'] = 'alice';
        $_SESSION['views'] = 1;
    } elseif ($mode === 'read') {
        $_SESSION['views'] += 1;
    } elseif ($mode === 'destroy') {
        session_destroy();
    }
    echo json_encode($reply);
}

function check(string $label, string $savePath, bool $locking, Redis $redis): void {
    $first = request("$label: first request (write)", $savePath, $locking, 'write', '-');
    $id = $first['id'];
    if (!preg_match('/^[A-Za-z0-9,-]{22,256}$/', $id)) fail("$label: session id", $id);
    expect("$label: first request starts empty", $first['before'], []);
    $key = PREFIX . $id;
    $lock = $key . '_LOCK';
    expect("$label: lock key during the first request", $first['lock_during'], $locking ? 1 : 0);
    expect("$label: lock key after the first request", $redis->exists($lock), 0);

    $stored = $redis->get($key);
    expect("$label: session key in the store", $stored, 'user|s:5:"alice";views|i:1;');
    $ttl = $redis->ttl($key);
    if (!is_int($ttl) || $ttl < 1400 || $ttl > 1440) {
        fail("$label: TTL of the session key", var_export($ttl, true) . ', expected ~1440');
    }

    $second = request("$label: second request (read)", $savePath, $locking, 'read', $id);
    expect("$label: second request reads the session", $second['before'],
           ['user' => 'alice', 'views' => 1]);
    expect("$label: lock key during the second request", $second['lock_during'],
           $locking ? 1 : 0);
    expect("$label: lock key after the second request", $redis->exists($lock), 0);
    expect("$label: second request's write", $redis->get($key), 'user|s:5:"alice";views|i:2;');

    request("$label: third request (destroy)", $savePath, $locking, 'destroy', $id);
    expect("$label: session_destroy() deleted the key", $redis->exists($key), 0);
    expect("$label: lock key after session_destroy()", $redis->exists($lock), 0);
}

function main(): void {
    $socket = getenv('SKYDB_COMPAT_SOCKET');
    $port = getenv('SKYDB_COMPAT_PORT');
    global $argv;
    if (($argv[1] ?? '') === 'request') {
        serve($argv[2], $argv[3], $socket);
        return;
    }
    $redis = new Redis();
    try {
        $redis->connect($socket);
    } catch (RedisException $e) {
        fail('connect', $e->getMessage());
    }
    check('locking off', "tcp://127.0.0.1:$port", false, $redis);
    check('locking on', "unix://$socket", true, $redis);
    echo 'PASS [phpredis_session_compat.php] against ' . getenv('SKYDB_COMPAT_SERVER') . "\n";
}

main();
