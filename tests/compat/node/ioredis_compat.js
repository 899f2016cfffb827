// ioredis on its default settings (HELLO 3 first, falling back to RESP2 only on NOPROTO; ready
// check through INFO; CLIENT SETINFO; offline queue) over loopback TCP: the connection is
// RESP3; multi() pipelined (MULTI ... EXEC in one write) and unpipelined; EXEC results including
// a command that fails inside the transaction and EXECABORT after a queueing error; a WATCH
// conflict resolved by a retry loop; UNWATCH, DISCARD; pub/sub with subscribe, psubscribe and
// publish counting receivers.
'use strict';
const Redis = require('ioredis');
const { expect, fail, inbox, passed, show, step } = require('./compat_steps');

const port = Number(process.env.SKYDB_COMPAT_PORT);
const host = process.env.SKYDB_COMPAT_HOST;

async function connect(name) {
  const client = new Redis(port, host);
  client.on('error', (err) => fail(`${name} error event`, show(err)));
  await step(`${name} ready (INFO ready check)`,
             () => new Promise((resolve) => client.once('ready', resolve)));
  return client;
}

async function transactions(redis) {
  const results = await step('multi().set().get().incr().exec()',
                             () => redis.multi().set('io:k', 'v').get('io:k').incr('io:n').exec());
  expect('multi() exec results', results, [[null, 'OK'], [null, 'v'], [null, 1]]);

  const unpipelined = redis.multi({ pipeline: false });  // MULTI now, each command QUEUED
  await step('multi({pipeline: false}) MULTI', () => unpipelined);
  expect('SET while queued', await step('SET queued', () => redis.set('io:q', '1')), 'QUEUED');
  expect('INCR while queued', await step('INCR queued', () => redis.incr('io:q')), 'QUEUED');
  expect('EXEC', await step('EXEC', () => redis.exec()), [[null, 'OK'], [null, 2]]);

  const mixed = await step('multi() with a failing INCR',
                           () => redis.multi().set('io:s', 'text').incr('io:s').get('io:s').exec());
  expect('EXEC reply count', mixed.length, 3);
  expect('SET inside EXEC', mixed[0], [null, 'OK']);
  if (!(mixed[1][0] instanceof Error) || !/not an integer/.test(mixed[1][0].message)) {
    fail('INCR of a string inside EXEC', `got ${show(mixed[1])}, expected a ReplyError`);
  }
  expect('GET after the failing INCR', mixed[2], [null, 'text']);

  const aborted = await step('multi() with an unknown command',
                             () => redis.multi().set('io:a', '1').call('NOSUCHCMD').exec()
                               .then((r) => ({ r }), (e) => ({ e })));
  if (!aborted.e || !/EXECABORT/.test(aborted.e.message)) {
    fail('EXEC after a queueing error', `got ${show(aborted)}, expected an EXECABORT error`);
  }
  expect('EXECABORT applied nothing', await redis.exists('io:a'), 0);
}

async function watchConflict(redis, other) {
  await redis.set('io:w', '10');
  let attempts = 0;
  for (;;) {
    await step('WATCH', () => redis.watch('io:w'));
    const current = Number(await redis.get('io:w'));
    if (attempts === 0) await step('concurrent SET', () => other.set('io:w', '100'));
    const result = await step('EXEC', () => redis.multi().set('io:w', String(current + 1)).exec());
    if (result !== null) {
      expect('EXEC after the retry', result, [[null, 'OK']]);
      break;
    }
    attempts += 1;  // EXEC answered nil: the watched key changed
    if (attempts > 3) fail('WATCH retry loop', 'EXEC answered nil on 4 attempts');
  }
  expect('WATCH conflicts seen', attempts, 1);
  expect('value after the retry loop', await redis.get('io:w'), '101');

  await step('WATCH then UNWATCH', () => redis.watch('io:w').then(() => redis.unwatch()));
  await other.set('io:w', 'x');
  expect('EXEC after UNWATCH', await redis.multi().set('io:w', 'y').exec(), [[null, 'OK']]);
  await step('MULTI for DISCARD', () => redis.multi({ pipeline: false }));
  expect('SET queued before DISCARD', await redis.set('io:w', 'z'), 'QUEUED');
  expect('DISCARD', await step('DISCARD', () => redis.discard()), 'OK');
  expect('value after DISCARD', await redis.get('io:w'), 'y');
}

async function pubsub(pub) {
  const sub = await connect('subscriber');
  const messages = inbox();
  const patterned = inbox();
  sub.on('message', (channel, message) => messages.push([channel, message]));
  sub.on('pmessage', (pattern, channel, message) => patterned.push([pattern, channel, message]));
  expect('SUBSCRIBE count', await step('SUBSCRIBE', () => sub.subscribe('io:news')), 1);
  expect('PSUBSCRIBE count', await step('PSUBSCRIBE', () => sub.psubscribe('io:n*')), 2);
  expect('PUBSUB NUMPAT', await pub.pubsub('NUMPAT'), 1);
  expect('PUBLISH receiver count', await step('PUBLISH', () => pub.publish('io:news', 'hi')), 2);
  expect('message', await messages.next('message'), ['io:news', 'hi']);
  expect('pmessage', await patterned.next('pmessage'), ['io:n*', 'io:news', 'hi']);
  expect('PUBLISH to a pattern-only channel', await pub.publish('io:notes', 'x'), 1);
  expect('pmessage on io:notes', await patterned.next('pmessage 2'), ['io:n*', 'io:notes', 'x']);
  await step('UNSUBSCRIBE', () => sub.unsubscribe('io:news'));
  await step('PUNSUBSCRIBE', () => sub.punsubscribe('io:n*'));
  expect('PING after unsubscribing all', await step('PING', () => sub.ping()), 'PONG');
  expect('PUBLISH after unsubscribing', await pub.publish('io:news', 'bye'), 0);
  await sub.quit();
}

async function main() {
  const redis = await connect('client');
  const other = await connect('second client');
  expect('PING', await step('PING', () => redis.ping()), 'PONG');
  const info = await step('CLIENT INFO', () => redis.client('INFO'));
  expect('the connection negotiated RESP3 (CLIENT INFO resp=)', / resp=(\d+)/.exec(info)?.[1], '3');
  await transactions(redis);
  await watchConflict(redis, other);
  await pubsub(redis);
  await redis.quit();
  await other.quit();
  passed();
}

main().catch((err) => fail('unexpected', show(err)));
