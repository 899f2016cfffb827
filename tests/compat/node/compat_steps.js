// Step reporting for the Node.js compatibility scripts: the first step that fails ends the
// script with exit 1 and one line naming the step, what was received and what was expected.
// Every awaited step is bounded, so a client that waits forever on a reply fails by name.
'use strict';
const path = require('path');
const util = require('util');

const script = path.basename(process.argv[1]);

function fail(step, message) {
  process.stderr.write(`FAIL [${script}] ${step}: ${message}\n`);
  process.exit(1);
}

function show(value) {
  return util.inspect(value, { depth: 5, breakLength: Infinity });
}

function expect(step, got, want) {
  if (!util.isDeepStrictEqual(got, want)) fail(step, `got ${show(got)}, expected ${show(want)}`);
  return got;
}

// Awaits `fn()` for at most `ms`; a rejection or the time limit fails `name`.
async function step(name, fn, ms = 10000) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([Promise.resolve().then(fn), limit]);
  } catch (err) {
    fail(name, err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : show(err));
  } finally {
    clearTimeout(timer);
  }
}

// Resolves with the first value `push` receives; `wait(name)` fails `name` after `ms`.
function inbox() {
  const queue = [];
  const waiters = [];
  return {
    push(value) {
      const w = waiters.shift();
      if (w) w(value);
      else queue.push(value);
    },
    next(name, ms = 5000) {
      if (queue.length) return Promise.resolve(queue.shift());
      return step(name, () => new Promise((resolve) => waiters.push(resolve)), ms);
    },
  };
}

function passed() {
  process.stdout.write(`PASS [${script}] against ${process.env.SKYDB_COMPAT_SERVER || '?'}\n`);
}

module.exports = { fail, expect, step, inbox, passed, show };
