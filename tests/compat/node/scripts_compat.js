// Lua scripts as session stacks' lock and rate-limit libraries send them, on their default
// settings over loopback TCP:
// - redlock 4 (over ioredis): EVALSHA, falling back to EVAL on NOSCRIPT, of its lock, extend
//   and unlock scripts; a second lock of a held resource fails; a lock of two resources takes
//   both or neither; unlock deletes only this lock's keys.
// - rate-limit-redis 6 under express-rate-limit 8 in an express app: SCRIPT LOAD at start, then
//   EVALSHA per request; the limit answers 429 past its count with the RateLimit headers; after
//   SCRIPT FLUSH the store reloads its script on NOSCRIPT and goes on counting.
'use strict';
const http = require('http');
const express = require('express');
const Redis = require('ioredis');
const Redlock = require('redlock');
const { rateLimit } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');
const { expect, fail, passed, show, step } = require('./compat_steps');

const port = Number(process.env.SKYDB_COMPAT_PORT);
const host = process.env.SKYDB_COMPAT_HOST;

async function redlock(redis) {
  const locks = new Redlock([redis], { retryCount: 0 });
  const lock = await step('redlock lock', () => locks.lock('rl:res:a', 2000));
  expect('lock key holds the lock value', await redis.get('rl:res:a'), lock.value);
  const pttl = await redis.pttl('rl:res:a');
  if (!(pttl > 0 && pttl <= 2000)) fail('lock key PTTL', `got ${pttl}, expected 1..2000`);
  const second = await step('second lock of a held resource',
                            () => locks.lock('rl:res:a', 2000).then(() => 'locked', (e) => e));
  if (!(second instanceof Redlock.LockError)) fail('second lock', `got ${show(second)}`);
  const extended = await step('redlock extend', () => lock.extend(5000));
  const extendedTtl = await redis.pttl('rl:res:a');
  if (!(extendedTtl > 2000)) fail('extended PTTL', `got ${extendedTtl}, expected > 2000`);
  await step('redlock unlock', () => extended.unlock());
  expect('unlock deleted the key', await redis.exists('rl:res:a'), 0);

  await redis.set('rl:res:c', 'someone else');
  const both = await step('lock of two resources, one held',
                          () => locks.lock(['rl:res:b', 'rl:res:c'], 2000).then(() => 'locked', (e) => e));
  if (!(both instanceof Redlock.LockError)) fail('lock of a held pair', `got ${show(both)}`);
  expect('neither key was taken', await redis.exists('rl:res:b'), 0);
  expect('the holder keeps its key', await redis.get('rl:res:c'), 'someone else');
  await redis.del('rl:res:c');
  const pair = await step('lock of two free resources', () => locks.lock(['rl:res:b', 'rl:res:c'], 2000));
  expect('both keys taken', await redis.exists('rl:res:b', 'rl:res:c'), 2);
  await redis.set('rl:res:c', 'stolen');
  await step('unlock of a pair, one stolen', () => pair.unlock().catch(() => null));
  expect('unlock deleted only its own key', [await redis.exists('rl:res:b'), await redis.get('rl:res:c')],
         [0, 'stolen']);
}

function get(server, path) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: server.address().port, path }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers }));
    }).on('error', reject);
  });
}

async function rateLimiter(redis) {
  const app = express();
  app.use(rateLimit({
    windowMs: 60000,
    limit: 3,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    store: new RedisStore({ sendCommand: (...args) => redis.call(...args), prefix: 'rl:ip:' }),
  }));
  app.get('/', (req, res) => res.send('ok'));
  const server = await step('express listens', () => new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  }));
  try {
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await step(`request ${i + 1}`, () => get(server, '/'))).status);
    expect('statuses under a limit of 3', statuses, [200, 200, 200, 429, 429]);
    const keys = await redis.keys('rl:ip:*');
    expect('one counter key', keys.length, 1);
    expect('the counter', await redis.get(keys[0]), '5');
    const ttl = await redis.pttl(keys[0]);
    if (!(ttl > 0 && ttl <= 60000)) fail('counter PTTL', `got ${ttl}`);
    await redis.del(keys[0]);
    expect('SCRIPT FLUSH', await redis.script('FLUSH'), 'OK');
    const after = await step('request after SCRIPT FLUSH', () => get(server, '/'));
    expect('status after the reload', after.status, 200);
    if (!/limit=3, remaining=2/.test(after.headers.ratelimit || '')) {
      fail('RateLimit header', `got ${show(after.headers.ratelimit)}`);
    }
  } finally {
    server.close();
  }
}

async function main() {
  const redis = new Redis(port, host);
  redis.on('error', (err) => fail('ioredis error event', show(err)));
  await redlock(redis);
  await rateLimiter(redis);
  redis.disconnect();
  passed();
}

main().catch((err) => fail('unexpected', err && err.stack ? err.stack : show(err)));
