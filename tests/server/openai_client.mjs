// Drives `ember-cli serve` with the official openai npm client (and raw sockets for what a
// client library never sends). Usage: node openai_client.mjs CASE, with EMBER_CLI and
// EMBER_MODEL in the environment; CASE is basic, concurrency, cancel or badinput. Each case
// starts its own server on a free loopback port and stops it with SIGTERM, which must exit 0.
// Nothing here asserts on wall-clock time: order and cancellation are read from events.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';

const CLI = process.env.EMBER_CLI;
const MODEL = process.env.EMBER_MODEL;
const MODEL_ID = 'stories260K';
const LONG = 600_000;  // ms: generous limits for a busy machine, never a pass/fail measure

function log(...a) { console.log('[test]', ...a); }

// Servers this process started: none outlives it, even when a case fails.
const started = new Set();
process.on('exit', () => { for (const p of started) p.kill('SIGKILL'); });

// ---- the server ------------------------------------------------------------------------------

async function startServer(extra = [], model = MODEL) {
  const args = ['serve', '-m', model, '--port', '0', '--backend', 'cpu', '--threads', '1', ...extra];
  const proc = spawn(CLI, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  started.add(proc);
  const lines = [];
  const waiters = [];
  let buf = '';
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      process.stderr.write('  server| ' + line + '\n');
      for (const w of [...waiters]) if (w.re.test(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line); }
    }
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => {
    started.delete(proc);
    resolve({ code, signal });
  }));
  const server = {
    proc, lines, exited,
    waitFor(re) {
      const found = lines.find((l) => re.test(l));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        waiters.push({ re, resolve });
        exited.then(() => reject(new Error('the server exited while waiting for ' + re)));
        setTimeout(() => reject(new Error('no server log line matched ' + re)), LONG).unref();
      });
    },
    async stop() {
      proc.kill('SIGTERM');
      const r = await exited;
      assert.equal(r.code, 0, `the server must exit 0 on SIGTERM (got ${JSON.stringify(r)})`);
    },
  };
  const listening = await server.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/);
  server.port = Number(listening.match(/127\.0\.0\.1:(\d+)/)[1]);
  server.base = `http://127.0.0.1:${server.port}`;
  await server.waitFor(/serving '/);
  return server;
}

function client(server, apiKey = 'none') {
  return new OpenAI({ baseURL: server.base + '/v1', apiKey, maxRetries: 0, timeout: LONG });
}

async function chatText(c, messages, extra = {}) {
  const r = await c.chat.completions.create({ model: MODEL_ID, messages, temperature: 0, ...extra });
  return r;
}

async function streamChat(c, params, onChunk = () => {}) {
  const stream = await c.chat.completions.create({ model: MODEL_ID, temperature: 0, stream: true, ...params });
  let text = '', finish = null, usage = null, id = null, role = null;
  for await (const chunk of stream) {
    id = chunk.id;
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.role) role = ch.delta.role;
      if (ch.delta.content) text += ch.delta.content;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    onChunk(chunk);
  }
  return { text, finish, usage, id, role };
}

// The error a request got: status and OpenAI's body shape.
async function expectApiError(promise, status, code) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, 'an APIError, got ' + e);
    assert.equal(e.status, status, e.message);
    assert.equal(typeof e.error?.message, 'string');
    assert.equal(typeof e.error?.type, 'string');
    if (code) assert.equal(e.error?.code, code);
    return e;
  }
  assert.fail(`expected a ${status} error`);
}

// A raw HTTP exchange: writes `data` (and keeps the socket open), returns status and body.
function raw(server, data, { end = false } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.port, '127.0.0.1');
    let got = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => { got += d; });
    sock.on('error', () => {});  // a reset after the response is read is fine
    sock.on('close', () => {
      const m = got.match(/^HTTP\/1\.1 (\d+)/);
      if (!m) return reject(new Error('no HTTP response, got ' + JSON.stringify(got.slice(0, 200))));
      resolve({ status: Number(m[1]), body: got.slice(got.indexOf('\r\n\r\n') + 4) });
    });
    sock.on('connect', () => { sock.write(data); if (end) sock.end(); });
  });
}

function assertErrorShape(body, status) {
  const j = JSON.parse(body);
  assert.equal(typeof j.error, 'object', 'an OpenAI error object for ' + status);
  for (const k of ['message', 'type']) assert.equal(typeof j.error[k], 'string', k);
  assert.ok('code' in j.error, 'error.code');
  return j.error;
}

// ---- cases -----------------------------------------------------------------------------------

async function basic() {
  const s = await startServer();
  await basicChecks(s);
  await s.stop();
}

// The non-streamed and streamed chat, /v1/models, completions and refusals, on a running server.
async function basicChecks(s) {
  const c = client(s);
  const models = await c.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [MODEL_ID]);
  assert.equal(models.data[0].object, 'model');

  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const full = await chatText(c, messages, { max_tokens: 40 });
  assert.equal(full.object, 'chat.completion');
  const msg = full.choices[0].message;
  assert.equal(msg.role, 'assistant');
  assert.ok(msg.content.length > 0, 'some text');
  assert.ok(['stop', 'length'].includes(full.choices[0].finish_reason));
  assert.ok(full.usage.completion_tokens > 0 && full.usage.completion_tokens <= 40);
  assert.equal(full.usage.total_tokens, full.usage.prompt_tokens + full.usage.completion_tokens);

  // Streamed and greedy: the deltas are the same text, the usage the same numbers.
  const st = await streamChat(c, { messages, max_tokens: 40, stream_options: { include_usage: true } });
  assert.equal(st.text, msg.content);
  assert.equal(st.role, 'assistant');
  assert.equal(st.finish, full.choices[0].finish_reason);
  assert.deepEqual(st.usage, full.usage);

  // The array-of-parts form is the same message.
  const parts = await chatText(c, [{ role: 'user', content: [{ type: 'text', text: 'Once upon ' }, { type: 'text', text: 'a time' }] }], { max_tokens: 40 });
  assert.equal(parts.choices[0].message.content, msg.content);

  // Stop strings: cut before the first occurrence, never sent, also when split over tokens.
  const long = (await chatText(c, messages, { max_tokens: 80 })).choices[0].message.content;
  const k = Math.floor(long.length / 2);
  const stop = long.slice(k, k + 6);
  const expected = long.slice(0, long.indexOf(stop));
  const stopped = await chatText(c, messages, { max_tokens: 80, stop: [stop, 'zzzzqqq'] });
  assert.equal(stopped.choices[0].message.content, expected);
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  const deltas = [];
  const sst = await streamChat(c, { messages, max_tokens: 80, stop }, (ch) => deltas.push(ch.choices[0]?.delta?.content ?? ''));
  assert.equal(sst.text, expected);
  assert.equal(sst.finish, 'stop');
  assert.ok(!deltas.join('').includes(stop), 'the stop string never appears');

  // Completions, plain and streamed.
  const comp = await c.completions.create({ model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 24, temperature: 0 });
  assert.equal(comp.object, 'text_completion');
  assert.ok(comp.choices[0].text.length > 0);
  assert.equal(comp.usage.completion_tokens, 24);
  assert.equal(comp.choices[0].finish_reason, 'length');
  const cs = await c.completions.create({ model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 24, temperature: 0, stream: true });
  let ctext = '';
  for await (const ch of cs) ctext += ch.choices[0]?.text ?? '';
  assert.equal(ctext, comp.choices[0].text);

  // n > 1 and a prompt over the context are refused with the numbers.
  await expectApiError(chatText(c, messages, { n: 2 }), 400, 'unsupported_value');
  const e = await expectApiError(c.completions.create({ model: MODEL_ID, prompt: 'Once upon a time '.repeat(800), max_tokens: 4 }), 400, 'context_length_exceeded');
  assert.match(e.error.message, /context is \d+ tokens, but the prompt has \d+ tokens/);

  const h = await fetch(s.base + '/health');
  assert.equal(h.status, 200);
  assert.equal((await h.json()).status, 'ok');
}

async function concurrency() {
  const s = await startServer();
  const c = client(s);
  const N = 16;
  const prompt = (i) => [{ role: 'user', content: `Story ${i}: once upon a time there was a ${['cat', 'dog', 'bird', 'fish'][i % 4]}` }];
  const expected = [];
  for (let i = 0; i < N; i++) expected.push((await chatText(c, prompt(i), { max_tokens: 48 })).choices[0].message.content);

  const results = await Promise.all(Array.from({ length: N }, (_, i) => streamChat(c, { messages: prompt(i), max_tokens: 48 })));
  const ids = [];
  results.forEach((r, i) => {
    assert.equal(r.text, expected[i], `client ${i} got its own text, whole`);
    assert.ok(r.finish, `client ${i} finished`);
    ids.push(Number(r.id.split('-')[1]));  // chatcmpl-<arrival number>-...
  });
  assert.equal(new Set(ids).size, N, 'one job each');

  // One at a time, in arrival order: the log's starts and ends alternate, ids rising. The last
  // request's end is logged after its response is sent: wait for that line (requests end in
  // order, so every line before it is in).
  await s.waitFor(new RegExp(`request ${Math.max(...ids)} finished`));
  const events = s.lines.map((l) => l.match(/request (\d+) (started|finished)/)).filter(Boolean)
    .map((m) => [Number(m[1]), m[2]]).filter(([id]) => ids.includes(id));
  assert.equal(events.length, 2 * N);
  const order = [...ids].sort((a, b) => a - b);
  for (let i = 0; i < N; i++) {
    assert.deepEqual(events[2 * i], [order[i], 'started']);
    assert.deepEqual(events[2 * i + 1], [order[i], 'finished']);
  }
  assert.ok(s.lines.some((l) => /queued \(.* [1-9]\d* ahead\)/.test(l)), 'some requests waited');
  await s.stop();
}

// A separate process that streams a long completion, says when the first text came, and is
// then killed by its parent (a client that dies mid-stream).
async function childStream() {
  const c = new OpenAI({ baseURL: process.argv[3], apiKey: 'none', maxRetries: 0 });
  const stream = await c.completions.create({ model: 'slow', prompt: 'Once upon a time', max_tokens: SLOW_TOKENS, ignore_eos: true, temperature: 0, stream: true });
  for await (const ch of stream) {
    if (ch.choices[0]?.text) console.log('FIRST ' + ch.id);
    await new Promise(() => {});  // wait to be killed
  }
}

// A random-weights model with a long context (ember-cli mkmodel), so that the stream to kill
// runs for thousands of tokens: long enough on any machine to be killed mid-way.
const SLOW_TOKENS = 8000;

async function cancel() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ember-server-test-'));
  const slow = path.join(dir, 'slow.gguf');
  await new Promise((resolve, reject) => {
    const p = spawn(CLI, ['mkmodel', '-o', slow, '--embd', '512', '--layers', '8', '--heads', '8', '--kv-heads', '8',
      '--ffn', '1536', '--vocab-from', MODEL, '--ctx', '8192', '--type', 'q8_0', '--seed', '7'], { stdio: 'inherit' });
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error('mkmodel failed: ' + code))));
  });
  const s = await startServer(['--ctx', '8192'], slow);
  const child = spawn(process.execPath, [process.argv[1], 'child-stream', s.base + '/v1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => { const m = d.match(/FIRST cmpl-(\d+)-/); if (m) resolve(Number(m[1])); });
    child.on('exit', () => reject(new Error('the streaming client ended before its first text')));
  });
  // The next client waits behind the one that is about to die.
  const c = client(s);
  const next = c.completions.create({ model: 'slow', prompt: 'The next one', max_tokens: 8, temperature: 0 });
  await s.waitFor(new RegExp(`request ${first + 1} queued \\(.*1 ahead`));
  const killedAt = Date.now();
  child.kill('SIGKILL');
  const r = await next;
  log(`the next client's answer came ${Date.now() - killedAt} ms after the kill`);
  assert.equal(r.choices[0].text.length > 0, true);
  const cancelled = await s.waitFor(new RegExp(`request ${first} cancelled after (\\d+) generated tokens: client disconnected`));
  const n = Number(cancelled.match(/after (\d+) generated/)[1]);
  assert.ok(n < SLOW_TOKENS, `the killed client's generation stopped early (${n} of ${SLOW_TOKENS} tokens)`);
  const idx = (re) => s.lines.findIndex((l) => re.test(l));
  assert.ok(idx(new RegExp(`request ${first} cancelled`)) < idx(new RegExp(`request ${first + 1} started`)),
    'the next request started once the killed one was cancelled');

  // SIGTERM mid-stream: the stream ends with an error event, the server exits 0 (stop()).
  const long = await c.completions.create({ model: 'slow', prompt: 'Again', max_tokens: SLOW_TOKENS, ignore_eos: true, stream: true });
  let streamError = null, stopped = null;
  try {
    for await (const ch of long) if (ch.choices[0]?.text && !stopped) stopped = s.stop();
  } catch (e) { streamError = e; }
  await stopped;
  assert.ok(streamError, 'the stream ended with an error');
  assert.ok(s.lines.some((l) => /cancelled after \d+ generated tokens: the server is stopping/.test(l)));
  fs.rmSync(dir, { recursive: true, force: true });
}


async function badinput() {
  const key = 'sekrit-' + Math.random().toString(36).slice(2);
  const s = await startServer(['--api-key', key, '--timeout', '3', '--max-body', String(1 << 20)]);
  const good = client(s, key);
  const auth = { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key };
  const post = async (path, body, headers = auth) => {
    const r = await fetch(s.base + path, { method: 'POST', headers, body });
    return { status: r.status, error: assertErrorShape(await r.text(), r.status) };
  };
  const chat = (o) => JSON.stringify({ model: MODEL_ID, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, ...o });

  // Keys.
  await expectApiError(client(s, 'wrong').models.list(), 401, 'invalid_api_key');
  const nokey = await fetch(s.base + '/v1/models');
  assert.equal(nokey.status, 401);
  assert.equal(assertErrorShape(await nokey.text()).code, 'missing_api_key');
  assert.equal((await good.models.list()).data[0].id, MODEL_ID);

  // Malformed JSON, wrong types and values, unknown model and route.
  let r = await post('/v1/chat/completions', '{"model": "stories260K", "messages": [');
  assert.deepEqual([r.status, r.error.code], [400, 'invalid_json']);
  for (const [body, param] of [
    [chat({ messages: 'hi' }), 'messages'], [chat({ temperature: 'hot' }), 'temperature'],
    [chat({ max_tokens: -5 }), 'max_tokens'], [chat({ stop: 5 }), 'stop'],
    [chat({ messages: [{ role: 'wizard', content: 'x' }] }), 'messages[0].role'],
    [chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }), 'messages[0].content[0].type'],
    [chat({ stream: 'yes' }), 'stream'], [chat({ n: 3 }), 'n'],
    ['[1, 2]', null], ['"text"', null],
  ]) {
    r = await post('/v1/chat/completions', body);
    assert.equal(r.status, 400, body);
    if (param) assert.equal(r.error.param, param, body);
  }
  r = await post('/v1/completions', JSON.stringify({ model: MODEL_ID, prompt: 42 }));
  assert.deepEqual([r.status, r.error.param], [400, 'prompt']);
  await expectApiError(good.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] }), 404, 'model_not_found');
  r = await post('/v1/embeddings', '{}');
  assert.equal(r.status, 404);

  // A 10 MB body: 413 before it is read whole.
  const big = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/v1/chat/completions', headers: { ...auth, 'Content-Length': 10 << 20 } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end(Buffer.alloc(10 << 20, 'a'));
  });
  assert.equal(big.status, 413);
  assert.equal(assertErrorShape(big.body).code, 'request_too_large');

  // A header flood and a client that never finishes its request.
  const flood = 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' + Array.from({ length: 5000 }, (_, i) => `X-Flood-${i}: y\r\n`).join('') + '\r\n';
  let x = await raw(s, flood);
  assert.equal(x.status, 431);
  assertErrorShape(x.body);
  x = await raw(s, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Len');
  assert.equal(x.status, 408);
  assert.equal(assertErrorShape(x.body).code, 'request_timeout');
  x = await raw(s, `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model": `);
  assert.equal(x.status, 408);
  assert.equal(assertErrorShape(x.body).code, 'request_timeout');
  x = await raw(s, 'GARBAGE\r\n\r\n');
  assert.equal(x.status, 400);
  assertErrorShape(x.body);

  // And it still serves.
  const ok = await good.chat.completions.create({ model: MODEL_ID, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
  assert.ok(ok.choices[0].message.content.length >= 0 && ok.usage.completion_tokens > 0);
  assert.equal((await fetch(s.base + '/health')).status, 200);
  await s.stop();
}

// --max-connections: with 2, two clients that never finish their requests hold both
// connections, and a third is answered only once one of them has timed out (408); with the
// default, the third is answered while they still hang.
async function limits() {
  const stalled = (s, events, name) => new Promise((connected) => {
    const sock = net.connect(s.port, '127.0.0.1');
    let got = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => { got += d; });
    sock.on('error', () => {});
    sock.on('close', () => events.push(name + ' ' + (got.match(/^HTTP\/1\.1 (\d+)/)?.[1] ?? 'closed')));
    sock.on('connect', () => { sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Len'); connected(sock); });
  });
  for (const [extra, limited] of [[['--max-connections', '2', '--timeout', '3'], true], [['--timeout', '60'], false]]) {
    const s = await startServer(extra);
    const events = [];
    const socks = [await stalled(s, events, 'stalled'), await stalled(s, events, 'stalled')];
    // The third connects after both: the server takes connections in the order they came.
    const h = await fetch(s.base + '/health');
    events.push('health ' + h.status);
    if (limited) {
      assert.equal(events[0], 'stalled 408', 'the third waited for a connection: ' + events.join(', '));
    } else {
      assert.equal(events[0], 'health 200', 'the third was answered at once: ' + events.join(', '));
    }
    for (const sock of socks) sock.destroy();
    await s.stop();
  }
}

// ---- the app's server -----------------------------------------------------------------------

// The app (EMBER_APP) on the tiny model in a fresh profile, with the settings dialog open and
// its server driven through stdin (--api-server-control). Its stdout ("EMBER_API_SERVER: ...")
// and stderr (the server's log) are the lines waited for.
async function startApp() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ember-app-server-'));
  const env = { ...process.env, XDG_CONFIG_HOME: path.join(home, 'config'), XDG_DATA_HOME: path.join(home, 'data'),
    XDG_RUNTIME_DIR: path.join(home, 'run') };
  fs.mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
  const proc = spawn(process.env.EMBER_APP, ['--model', MODEL, '--device', 'cpu', '--show-settings', '--api-server-control'],
    { stdio: ['pipe', 'pipe', 'pipe'], env });
  started.add(proc);
  const lines = [];
  const waiters = [];
  const take = (stream, tag) => {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        process.stderr.write(`  app ${tag}| ${line}\n`);
        for (const w of [...waiters]) if (w.re.test(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line); }
      }
    });
  };
  take(proc.stdout, 'out');
  take(proc.stderr, 'err');
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => { started.delete(proc); resolve({ code, signal }); }));
  const app = {
    proc, lines, exited,
    send(command) { proc.stdin.write(command + '\n'); },
    // Lines from `from` on that match.
    waitFor(re, from = 0) {
      const found = lines.slice(from).find((l) => re.test(l));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        waiters.push({ re, resolve });
        exited.then(() => reject(new Error('the app exited while waiting for ' + re)));
        setTimeout(() => reject(new Error('no app line matched ' + re)), LONG).unref();
      });
    },
    async stop() {
      app.send('quit');
      const r = await exited;
      fs.rmSync(home, { recursive: true, force: true });
      assert.equal(r.code, 0, `the app must exit 0 (got ${JSON.stringify(r)})`);
    },
  };
  await app.waitFor(/^EMBER_API_SERVER: ready/);
  return app;
}

// The app's server, switched on in its settings dialog: the same client checks as ember-cli
// serve; switched off, it no longer answers.
async function appServer() {
  const app = await startApp();
  // A port in use is said in plain words; another port then works without switching again.
  const blocker = net.createServer();
  await new Promise((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const taken = blocker.address().port;
  app.send('port ' + taken);
  const from = app.lines.length;
  app.send('on');
  assert.match(await app.waitFor(/^EMBER_API_SERVER: (switch|no settings)/, from), /switch on/, 'toggled in the settings dialog');
  const error = await app.waitFor(/^EMBER_API_SERVER: error /, from);
  assert.match(error, new RegExp(`Port ${taken} is already in use by another program`));
  app.send('port 0');  // any free port: the app says which
  const running = await app.waitFor(/^EMBER_API_SERVER: running /, from);
  blocker.close();
  const m = running.match(/^EMBER_API_SERVER: running http:\/\/127\.0\.0\.1:(\d+)\/v1$/);
  assert.ok(m, 'on loopback only: ' + running);
  app.port = Number(m[1]);
  app.base = `http://127.0.0.1:${app.port}`;
  await app.waitFor(/^EMBER_API_SERVER: serving stories260K/);
  await basicChecks(app);

  // The app's own chat and API requests, sent together, take turns on the engine: in the
  // worker's order (its thread writes both to stderr), each generation ends before the next.
  const mark = app.lines.length;
  app.send('chat Once upon a time');
  const asks = [0, 1, 2].map((i) => chatText(client(app), [{ role: 'user', content: `A story about a cat, ${i}` }], { max_tokens: 48 }));
  assert.match(await app.waitFor(/^EMBER_API_SERVER: chat (sent|refused)/, mark), /sent/);
  await Promise.all(asks);
  await app.waitFor(/^EMBER_CHAT: (finished|failed)/, mark);
  const turns = app.lines.slice(mark)
    .map((l) => l.match(/^EMBER_CHAT: (started|finished|failed)|api server: request (\d+) (started|finished|cancelled)/))
    .filter(Boolean).map((m) => (m[1] ? ['chat', m[1]] : ['request ' + m[2], m[3]]));
  assert.equal(turns.length, 8, JSON.stringify(turns));
  for (let i = 0; i < turns.length; i += 2) {
    assert.deepEqual([turns[i][0], turns[i][1], turns[i + 1][0], turns[i + 1][1]],
      [turns[i][0], 'started', turns[i][0], 'finished'], 'one at a time: ' + JSON.stringify(turns));
  }
  log('turns on the engine: ' + turns.filter((t) => t[1] === 'started').map((t) => t[0]).join(', '));

  // The requests ran through the app's worker, and the app counted them.
  assert.ok(app.lines.some((l) => /api server: request \d+ finished/.test(l)));
  const served = () => Math.max(0, ...app.lines.map((l) => l.match(/^EMBER_API_SERVER: served (\d+)/)).filter(Boolean).map((m) => Number(m[1])));
  await app.waitFor(/^EMBER_API_SERVER: served ([1-9]\d*)/);
  log(`the app counted ${served()} requests`);

  const off = app.lines.length;
  app.send('off');
  await app.waitFor(/^EMBER_API_SERVER: stopped/, off);
  const before = served();  // the final count, printed as the server stopped
  await assert.rejects(fetch(app.base + '/health'), 'nothing listens once the server is switched off');
  // Back on: it serves again, and the count goes on.
  const on = app.lines.length;
  app.send('on');
  const again_at = (await app.waitFor(/^EMBER_API_SERVER: running /, on)).match(/:(\d+)\/v1$/);
  app.port = Number(again_at[1]);
  app.base = `http://127.0.0.1:${app.port}`;
  await app.waitFor(/^EMBER_API_SERVER: serving stories260K/, on);
  const again = await client(app).chat.completions.create({ model: MODEL_ID, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
  assert.ok(again.usage.completion_tokens > 0);
  await app.waitFor(new RegExp(`^EMBER_API_SERVER: served ${before + 1}$`), on);
  await app.stop();
}

const cases = { basic, concurrency, cancel, badinput, limits, app: appServer, 'child-stream': childStream };
const name = process.argv[2];
if (!cases[name]) {
  console.error('usage: node openai_client.mjs ' + Object.keys(cases).join('|'));
  process.exit(2);
}
if (name === 'app') {
  assert.ok(process.env.EMBER_APP && MODEL, 'EMBER_APP and EMBER_MODEL must be set');
} else if (name !== 'child-stream') {
  assert.ok(CLI && MODEL, 'EMBER_CLI and EMBER_MODEL must be set');
}
cases[name]().then(() => { if (name !== 'child-stream') log(name + ': passed'); },
  (e) => { console.error(e); process.exit(1); });
