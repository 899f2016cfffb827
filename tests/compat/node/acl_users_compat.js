// ACL users through node-redis (npm `redis`, HELLO 3 AUTH from the URL's user) and ioredis
// (`username`/`password` options, INFO ready check), over loopback TCP: the default user makes
// `shop` and `blog` as `skydb app add` makes an app's store user (its prefix, every command but
// @dangerous, plus INFO); each library, logged in as one app, may SET, GET, SCAN MATCH and
// PUBLISH inside its prefix, and gets NOPERM for GET, SET, SCAN, KEYS, PUBLISH and SUBSCRIBE
// outside it.
'use strict';
const Redis = require('ioredis');
const { createClient } = require('redis');
const { expect, fail, passed, show, step } = require('./compat_steps');

const port = Number(process.env.SKYDB_COMPAT_PORT);
const host = process.env.SKYDB_COMPAT_HOST;
const skydb = process.env.SKYDB_COMPAT_SERVER === 'skydb';
const rules = (app) => ['reset', 'on', `>${app}-pw`, `~${app}:*`, `&${app}:*`, '+@all',
  '-@dangerous', '+info'];
const session = Buffer.alloc(37 * 1024, 's');

// Expects `fn()` to be refused with NOPERM, within 10 s.
async function refused(name, fn) {
  let timer;
  const limit = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), 10000); });
  let outcome;
  try {
    outcome = await Promise.race([Promise.resolve().then(fn), limit]);
  } catch (err) {
    clearTimeout(timer);
    if (!/NOPERM/.test(String(err && err.message))) fail(name, `got ${show(err)}, expected NOPERM`);
    return;
  }
  clearTimeout(timer);
  fail(name, `answered ${show(outcome)}, expected NOPERM`);
}

async function walledIn(lib, app, other, call, subscribe) {
  expect(`${lib}: ACL WHOAMI`, String(await step(`${lib} WHOAMI`, () => call(['ACL', 'WHOAMI']))),
         app);
  expect(`${lib}: SET its session`,
         String(await step(`${lib} SET`, () => call(['SET', `${app}:sess:1`, session, 'EX', '1800']))),
         'OK');
  const got = await step(`${lib} GET`, () => call(['GET', `${app}:sess:1`]));
  expect(`${lib}: GET its session`, Buffer.from(got).equals(session), true);
  const scan = await step(`${lib} SCAN MATCH`, () => call(['SCAN', '0', 'MATCH', `${app}:*`,
    'COUNT', '1000']));
  expect(`${lib}: SCAN MATCH ${app}:*`, scan[1].map(String).sort(), [`${app}:sess:1`]);
  expect(`${lib}: PUBLISH to its topic`,
         Number(await step(`${lib} PUBLISH`, () => call(['PUBLISH', `${app}:live:1`, 'x']))), 0);

  await refused(`${lib}: GET ${other}'s session`, () => call(['GET', `${other}:sess:1`]));
  await refused(`${lib}: SET ${other}'s session`, () => call(['SET', `${other}:sess:1`, 'x']));
  await refused(`${lib}: KEYS *`, () => call(['KEYS', '*']));
  if (skydb) await refused(`${lib}: SCAN of every key`, () => call(['SCAN', '0']));
  await refused(`${lib}: PUBLISH to ${other}'s topic`, () => call(['PUBLISH', `${other}:live:1`, 'x']));
  await refused(`${lib}: SUBSCRIBE to ${other}'s topic`, () => subscribe(`${other}:live:1`));
}

async function main() {
  const admin = createClient({ url: process.env.SKYDB_COMPAT_URL });
  admin.on('error', (err) => fail('admin error event', show(err)));
  await step('admin connect', () => admin.connect());
  for (const app of ['shop', 'blog']) {
    expect(`ACL SETUSER ${app}`,
           await step(`ACL SETUSER ${app}`, () => admin.sendCommand(['ACL', 'SETUSER', app, ...rules(app)])),
           'OK');
  }
  expect('blog SET its session', await admin.set('blog:sess:1', 'b'), 'OK');

  // node-redis: the URL's user and password (HELLO 3 AUTH).
  const nodeRedis = createClient({ url: `redis://shop:shop-pw@${host}:${port}` });
  nodeRedis.on('error', (err) => fail('node-redis error event', show(err)));
  await step('node-redis connect as shop', () => nodeRedis.connect());
  const nodeSub = nodeRedis.duplicate();
  nodeSub.on('error', () => {});
  await step('node-redis subscriber connect', () => nodeSub.connect());
  await walledIn('node-redis', 'shop', 'blog',
                 (args) => nodeRedis.sendCommand(args),
                 (channel) => nodeSub.subscribe(channel, () => {}));
  expect('node-redis: a wrong password',
         await step('node-redis connect with a wrong password',
                    () => createClient({ url: `redis://shop:wrong@${host}:${port}`,
                                         socket: { reconnectStrategy: false } })
                      .on('error', () => {}).connect()
                      .then(() => 'connected', (e) => String(e.message))),
         'WRONGPASS invalid username-password pair or user is disabled.');

  // ioredis: username and password options; its INFO ready check is allowed (+info).
  const io = new Redis({ port, host, username: 'blog', password: 'blog-pw', lazyConnect: true });
  io.on('error', (err) => fail('ioredis error event', show(err)));
  await step('ioredis connect as blog', () => io.connect());
  const ioSub = new Redis({ port, host, username: 'blog', password: 'blog-pw' });
  ioSub.on('error', () => {});
  await walledIn('ioredis', 'blog', 'shop', (args) => io.callBuffer(...args),
                 (channel) => ioSub.subscribe(channel));

  for (const c of [nodeRedis, nodeSub, admin]) await c.quit().catch(() => {});
  io.disconnect();
  ioSub.disconnect();
  passed();
}

main().catch((err) => fail('unexpected', show(err)));
