// node-redis (npm `redis`) on its default settings, which open every connection with HELLO 3
// (RESP3), as the session store of an express app through connect-redis and express-session:
// a request that writes the session, a second request with the cookie that reads it back, the
// session key and its TTL in the store, logout deleting it. Then MULTI/EXEC through
// multi().set().get().exec(), a WATCH conflict, and pub/sub on a duplicate() subscriber.
'use strict';
const http = require('http');
const express = require('express');
const session = require('express-session');
const { RedisStore } = require('connect-redis');
const { createClient, WatchError } = require('redis');
const { expect, fail, inbox, passed, show, step } = require('./compat_steps');

const url = process.env.SKYDB_COMPAT_URL;

function newClient() {
  const client = createClient({ url });  // defaults otherwise: RESP3, reconnects on error
  client.on('error', (err) => fail('client error event', show(err)));
  return client;
}

function startApp(client) {
  const app = express();
  app.use(session({
    store: new RedisStore({ client }),
    secret: 'compat-matrix-secret',
    resave: false,
    saveUninitialized: false,
  }));
  app.get('/login', (req, res) => {
    req.session.user = 'alice';
    req.session.views = 1;
    res.json({ ok: true });
  });
  app.get('/me', (req, res) => {
    if (req.session.views) req.session.views += 1;
    res.json({ user: req.session.user || null, views: req.session.views || 0 });
  });
  app.get('/logout', (req, res, next) => {
    req.session.destroy((err) => (err ? next(err) : res.json({ ok: true })));
  });
  app.use((err, req, res, next) => res.status(500).json({ error: String(err) }));
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function get(port, path, cookie) {
  return new Promise((resolve, reject) => {
    const headers = cookie ? { Cookie: cookie } : {};
    http.get({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

async function sessions(client) {
  const app = await step('express listen', () => startApp(client));
  const port = app.address().port;

  const login = await step('GET /login', () => get(port, '/login'));
  expect('GET /login status', [login.status, login.body], [200, '{"ok":true}']);
  const setCookie = (login.headers['set-cookie'] || [])[0] || '';
  const cookie = setCookie.split(';')[0];
  const signed = decodeURIComponent(cookie.split('=')[1] || '');
  if (!cookie.startsWith('connect.sid=') || !signed.startsWith('s:')) {
    fail('session cookie', `got Set-Cookie ${show(login.headers['set-cookie'])}`);
  }
  const sid = signed.slice(2).split('.')[0];

  const key = `sess:${sid}`;
  const stored = await step('GET the session key', () => client.get(key));
  if (stored === null) fail('session key in the store', `${key} is missing`);
  const data = JSON.parse(stored);
  expect('stored session data', [data.user, data.views], ['alice', 1]);
  const ttl = await step('TTL of the session key', () => client.ttl(key));
  if (!(ttl > 86000 && ttl <= 86400)) fail('TTL of the session key', `got ${ttl}, expected ~86400`);
  const listed = await step('store.ids() (SCAN MATCH sess:*)',
                            () => new RedisStore({ client }).ids());
  expect('store.ids()', listed, [sid]);

  const me = await step('GET /me with the cookie', () => get(port, '/me', cookie));
  expect('GET /me reads the session back', [me.status, me.body],
         [200, '{"user":"alice","views":2}']);
  expect('the second request updated the store', JSON.parse(await client.get(key)).views, 2);
  const anonymous = await step('GET /me without a cookie', () => get(port, '/me'));
  expect('GET /me without a cookie', anonymous.body, '{"user":null,"views":0}');

  const logout = await step('GET /logout', () => get(port, '/logout', cookie));
  expect('GET /logout status', [logout.status, logout.body], [200, '{"ok":true}']);
  expect('logout deleted the session key', await client.exists(key), 0);
  await step('express close', () => new Promise((resolve) => app.close(resolve)));
}

async function transactions(client) {
  const results = await step('multi().set().get().exec()',
                             () => client.multi().set('node:m', 'v').get('node:m').exec());
  expect('multi().set().get().exec()', results, ['OK', 'v']);
  const counted = await step('multi().incr().incrBy().exec()',
                             () => client.multi().incr('node:n').incrBy('node:n', 9).exec());
  expect('multi().incr().incrBy().exec()', counted, [1, 10]);

  // WATCH on a connection of its own; another client changes the key before EXEC.
  const watcher = newClient();
  await step('watcher connect', () => watcher.connect());
  await step('WATCH', () => watcher.watch('node:w'));
  await step('concurrent SET', () => client.set('node:w', 'theirs'));
  const outcome = await step('EXEC after a watched change',
                             () => watcher.multi().set('node:w', 'mine').exec().catch((e) => e));
  if (!(outcome instanceof WatchError)) {
    fail('EXEC after a watched change', `got ${show(outcome)}, expected a WatchError`);
  }
  expect('the watched key kept the other write', await client.get('node:w'), 'theirs');
  await step('watcher close', () => watcher.close());
}

async function pubsub(client) {
  const sub = client.duplicate();
  sub.on('error', (err) => fail('subscriber error event', show(err)));
  await step('duplicate().connect()', () => sub.connect());
  const messages = inbox();
  const patterned = inbox();
  await step('SUBSCRIBE', () => sub.subscribe('node:news', (m, ch) => messages.push([ch, m])));
  await step('PSUBSCRIBE', () => sub.pSubscribe('node:n*', (m, ch) => patterned.push([ch, m])));
  expect('PUBSUB NUMSUB', await client.pubSubNumSub('node:news'), { 'node:news': 1 });
  expect('PUBLISH receiver count', await client.publish('node:news', 'hello'), 2);
  expect('message', await messages.next('message'), ['node:news', 'hello']);
  expect('pmessage', await patterned.next('pmessage'), ['node:news', 'hello']);
  expect('PUBLISH to a pattern-only channel', await client.publish('node:notes', 'x'), 1);
  expect('pmessage on node:notes', await patterned.next('pmessage 2'), ['node:notes', 'x']);
  await step('UNSUBSCRIBE', () => sub.unsubscribe('node:news'));
  await step('PUNSUBSCRIBE', () => sub.pUnsubscribe('node:n*'));
  expect('PUBLISH after unsubscribing', await client.publish('node:news', 'bye'), 0);
  await step('subscriber close', () => sub.close());
}

async function main() {
  const client = newClient();
  await step('connect (HELLO 3 handshake)', () => client.connect());
  expect('PING', await step('PING', () => client.ping()), 'PONG');
  const info = await step('CLIENT INFO', () => client.clientInfo());
  expect('the connection speaks RESP3 (CLIENT INFO resp)', info.resp, 3);
  await sessions(client);
  await transactions(client);
  await pubsub(client);
  await step('close', () => client.close());
  passed();
}

main().catch((err) => fail('unexpected', show(err)));
