// socket.io 4.8 with @socket.io/redis-adapter 8.3 and @socket.io/redis-emitter 5.1 on ioredis
// (defaults otherwise), as a real-time app runs them: two app instances, each a socket.io server
// with its own pub and sub connections, instance a on the first server and instance b on the
// second (compat_server.py --pair; against one server both use it), one browser-side client
// (socket.io-client, websocket) on each instance, both in one room. Checked: serverCount() is 2
// on both instances (the adapter counts PUBSUB NUMSUB answers); room broadcasts of 2 KB, 16 KB
// and 64 KB from either instance reach both clients whole and in order; fetchSockets() sees
// both sockets; serverSideEmitWithAck() and emitWithAck() collect every answer; the emitter
// (no socket.io server of its own) reaches both clients. Payloads are compared, never printed.
'use strict';
const crypto = require('crypto');
const http = require('http');
const Redis = require('ioredis');
const { Server } = require('socket.io');
const { io: connectClient } = require('socket.io-client');
const { createAdapter } = require('@socket.io/redis-adapter');
const { Emitter } = require('@socket.io/redis-emitter');
const { expect, fail, inbox, passed, show, step } = require('./compat_steps');

const host = process.env.SKYDB_COMPAT_HOST;
const portA = Number(process.env.SKYDB_COMPAT_PORT);
const portB = Number(process.env.SKYDB_COMPAT_PORT_B || process.env.SKYDB_COMPAT_PORT);
const SIZES = [2 * 1024, 16 * 1024, 64 * 1024];
const ROUNDS = 5;  // broadcasts of each size from each instance

const redisClients = [];

async function connectRedis(port, name) {
  const client = new Redis(port, host);
  client.on('error', (err) => fail(`${name} error event`, show(err)));
  await step(`${name} ready`, () => new Promise((resolve) => client.once('ready', resolve)));
  redisClients.push(client);
  return client;
}

function digest(buffer) {
  return crypto.createHash('sha256').update(buffer).digest('hex');
}

function patch(size, seed) {
  const out = Buffer.alloc(size);
  for (let at = 0, block = 0; at < size; block += 1) {
    at += crypto.createHash('sha256').update(`${seed}/${block}`).digest().copy(out, at);
  }
  for (let i = 0; i < Math.min(256, size); i += 1) out[i] = i;  // every byte value
  return out;
}

async function startInstance(name, port) {
  const pub = await connectRedis(port, `instance ${name} pub`);
  const sub = await connectRedis(port, `instance ${name} sub`);
  const httpServer = http.createServer();
  const io = new Server(httpServer, { maxHttpBufferSize: 1 << 20 });
  io.adapter(createAdapter(pub, sub, { requestsTimeout: 10000 }));
  io.on('connection', (socket) => {
    socket.join('room');
    socket.data.instance = name;
  });
  io.on('ping-instance', (from, ack) => ack(`${name} answers ${from}`));
  await new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return { name, io, httpServer, url: `http://127.0.0.1:${httpServer.address().port}` };
}

async function connectBrowser(instance) {
  const socket = connectClient(instance.url, { transports: ['websocket'], reconnection: false });
  const received = inbox();
  socket.onAny((event, ...args) => {
    if (event !== 'ask') received.push([event, ...args]);  // 'ask' is answered below
  });
  socket.on('ask', (question, ack) => ack(`${instance.name}'s client: ${question}`));
  await step(`client of ${instance.name} connects`,
             () => new Promise((resolve, reject) => {
               socket.once('connect', resolve);
               socket.once('connect_error', reject);
             }));
  return { socket, received, instance: instance.name };
}

// The adapter's subscriptions reach the other server's count shortly after they are made.
async function serverCounts(instances) {
  const deadline = Date.now() + 15000;
  for (;;) {
    const counts = await Promise.all(
        instances.map((i) => step(`serverCount() on ${i.name}`,
                                  () => i.io.of('/').adapter.serverCount())));
    if (counts.every((c) => c === 2) || Date.now() > deadline) {
      expect('serverCount() on a and b', counts, [2, 2]);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function broadcasts(instances, clients) {
  const sent = [];
  for (const size of SIZES) {
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const instance of instances) {
        const body = patch(size, `${instance.name}/${size}/${round}`);
        sent.push({ from: instance.name, size, round, digest: digest(body) });
        instance.io.to('room').emit('patch', instance.name, size, round, body);
      }
    }
  }
  for (const client of clients) {
    const next = { a: [], b: [] };
    for (const want of sent) next[want.from].push(want);
    for (let n = 0; n < sent.length; n += 1) {
      const got = await client.received.next(`broadcast ${n + 1} at the client of ${client.instance}`,
                                             15000);
      const [event, from, size, round, body] = got;
      expect(`event at the client of ${client.instance}`, event, 'patch');
      const want = next[from].shift();
      if (!want) fail(`broadcast from ${from}`, `an extra broadcast at ${client.instance}`);
      expect(`broadcast from ${from} at the client of ${client.instance} (order, size, bytes)`,
             { size, round, digest: digest(Buffer.from(body)) },
             { size: want.size, round: want.round, digest: want.digest });
    }
  }
}

async function requests(instances) {
  for (const instance of instances) {
    const sockets = await step(`fetchSockets() on ${instance.name}`,
                               () => instance.io.in('room').fetchSockets(), 15000);
    expect(`fetchSockets() on ${instance.name} sees both instances' sockets`,
           sockets.map((s) => s.data.instance).sort(), ['a', 'b']);
    const answers = await step(`serverSideEmitWithAck() from ${instance.name}`,
                               () => instance.io.serverSideEmitWithAck('ping-instance',
                                                                       instance.name), 15000);
    const other = instance.name === 'a' ? 'b' : 'a';
    expect(`serverSideEmitWithAck() answers at ${instance.name}`, answers,
           [`${other} answers ${instance.name}`]);
    const acks = await step(`emitWithAck() from ${instance.name}`,
                            () => instance.io.timeout(10000).to('room').emitWithAck('ask', 'q'),
                            15000);
    expect(`emitWithAck() answers at ${instance.name}`, acks.sort(),
           ["a's client: q", "b's client: q"]);
  }
}

async function emitter(clients) {
  const redis = await connectRedis(portA, 'emitter');
  const body = patch(16 * 1024, 'emitter');
  new Emitter(redis).to('room').emit('from-emitter', body);
  for (const client of clients) {
    const [event, got] = await client.received.next(`emitter at the client of ${client.instance}`,
                                                    15000);
    expect(`emitter event at the client of ${client.instance}`, event, 'from-emitter');
    expect(`emitter payload at the client of ${client.instance}`, digest(Buffer.from(got)),
           digest(body));
  }
}

async function main() {
  const instances = [await startInstance('a', portA), await startInstance('b', portB)];
  await serverCounts(instances);
  const clients = [await connectBrowser(instances[0]), await connectBrowser(instances[1])];
  await broadcasts(instances, clients);
  await requests(instances);
  await emitter(clients);
  for (const client of clients) client.socket.close();
  for (const instance of instances) {
    instance.io.close();
  }
  await Promise.all(redisClients.map((c) => c.quit().catch(() => {})));
  passed();
  process.exit(0);
}

main().catch((err) => fail('unexpected', show(err)));
