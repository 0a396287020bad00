/** stream.*: exec streams (GET /v1/exec/stream). */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { before, test } from 'node:test';

import { BadRequestError, ConnectionLostError, SpawnFailedError, type OutputChunk, type Sandbox } from '@lodge/sdk';

import { alive, client, Collector, eventually, kit, proxied, rss } from './helpers.js';

let sandbox: Sandbox;
before(async () => {
  sandbox = await client();
});

test('stream.basic: callbacks, contiguous offsets, done after the last callback', async () => {
  const chunks: { stream: string; offset: number; len: number }[] = [];
  let out = '';
  let err = '';
  let inCallback = false;
  let lastReturned = false;
  const h = sandbox.execStream({
    command: 'printf out; printf err >&2',
    onStdout: async (c) => {
      inCallback = true;
      out += c.toString();
      await new Promise((r) => setTimeout(r, 100));
      inCallback = false;
      lastReturned = true;
    },
    onStderr: (c) => {
      err += c.toString();
    },
  });
  const it = h[Symbol.asyncIterator]();
  const collect = (async () => {
    for (let r = await it.next(); !r.done; r = await it.next())
      chunks.push({ stream: r.value.stream, offset: r.value.offset, len: r.value.data.length });
  })();
  const exit = await h.done;
  assert.equal(inCallback, false);
  assert.equal(lastReturned, true);
  await collect;
  assert.deepEqual([out, err], ['out', 'err']);
  assert.deepEqual([exit.code, exit.signal], [0, null]);
  let next = 0;
  for (const c of chunks) {
    assert.equal(c.offset, next);
    next += c.len;
  }
  assert.equal(next, 6);
});

test('stream.client_closes: done comes from the SDK closing after the exit, not from lodged giving up', async () => {
  // The SDK starts with clientCloses, so lodged waits up to 10 s for the
  // client's close after the exit message; done must not wait for that.
  const t0 = Date.now();
  const exit = await sandbox.execStream({ command: 'true' }).done;
  assert.equal(exit.code, 0);
  assert.ok(Date.now() - t0 < 5000, `done took ${Date.now() - t0} ms`);
});

test('stream.exit_code', async () => {
  const exit = await sandbox.execStream({ command: 'exit 5' }).done;
  assert.deepEqual([exit.code, exit.signal], [5, null]);
});

test('stream.stdin_eof', async () => {
  const out = new Collector();
  const h = sandbox.execStream({ args: ['cat'], onStdout: out.push });
  h.write('hello\n');
  h.write(new Uint8Array([0x00, 0xff]));
  h.end();
  const exit = await h.done;
  assert.deepEqual([...out.bytes()], [...Buffer.from('hello\n'), 0x00, 0xff]);
  assert.equal(exit.code, 0);
});

test('stream.pty', async () => {
  const out = new Collector();
  let stderrFired = false;
  const h = sandbox.execStream({
    command: 'test -t 0 && test -t 1 && echo "tty $TERM"; echo err >&2',
    tty: true,
    cols: 120,
    rows: 40,
    onStdout: out.push,
    onStderr: () => (stderrFired = true),
  });
  const exit = await h.done;
  assert.match(out.text(), /tty xterm-256color/);
  assert.match(out.text(), /err/);
  assert.equal(stderrFired, false);
  assert.equal(exit.code, 0);
});

test('stream.resize', async () => {
  const out = new Collector();
  const h = sandbox.execStream({ command: 'stty size; read x; stty size', tty: true, cols: 120, rows: 40, onStdout: out.push });
  await out.waitFor('40 120');
  h.resize(100, 30);
  h.write('\n');
  const exit = await h.done;
  assert.match(out.text(), /40 120[\s\S]*30 100/);
  assert.equal(exit.code, 0);
});

test('stream.signal', async () => {
  const out = new Collector();
  const h = sandbox.execStream({ command: 'echo ready; exec sleep 60', onStdout: out.push });
  await out.waitFor('ready');
  h.signal('TERM');
  const exit = await h.done;
  assert.deepEqual([exit.code, exit.signal], [null, 'TERM']);
});

test('stream.signal.group', async () => {
  const out = new Collector();
  const h = sandbox.execStream({ command: 'sleep 60 & echo $!; wait', onStdout: out.push });
  await out.waitFor(/\d+\n/);
  const pid = Number(out.text().trim());
  assert.ok(alive(pid));
  h.signal('TERM');
  const exit = await h.done;
  assert.equal(exit.signal, 'TERM');
  await eventually(() => (alive(pid) ? undefined : true));
});

test('stream.signal.rtmin', async () => {
  const out = new Collector();
  const errors: Error[] = [];
  const h = sandbox.execStream({
    args: ['bash', '-c', "trap 'echo got; exit 7' RTMIN+3; echo ready; while :; do sleep 0.1; done"],
    onStdout: out.push,
    onError: (e) => {
      errors.push(e);
      h.signal('KILL');
    },
  });
  await out.waitFor('ready');
  h.signal('RTMIN+3');
  const exit = await h.done;
  assert.deepEqual(errors, []);
  assert.match(out.text(), /got/);
  assert.equal(exit.code, 7);
});

test('stream.timeout', async () => {
  const exit = await sandbox.execStream({ command: 'sleep 30', timeoutSeconds: 1 }).done;
  assert.deepEqual([exit.timedOut, exit.signal], [true, 'TERM']);
});

test('stream.spawn_failed', async () => {
  let fired = false;
  const h = sandbox.execStream({ command: 'true', workDir: '/nonexistent', onStdout: () => (fired = true), onStderr: () => (fired = true) });
  await assert.rejects(h.done, (e: unknown) => e instanceof SpawnFailedError && e.status === 422 && e.message.length > 0);
  await assert.rejects(h.started, SpawnFailedError);
  assert.equal(fired, false);
});

test('stream.kill_on_disconnect: close() without eof', async () => {
  const out = new Collector();
  const h = sandbox.execStream({ command: 'echo $$; exec sleep 600', onStdout: out.push });
  await out.waitFor(/\d+\n/);
  const pid = Number(out.text().trim());
  h.close();
  await assert.rejects(h.done, ConnectionLostError);
  await eventually(() => (alive(pid) ? undefined : true));
});

test('stream.kill_on_disconnect: an AbortSignal', async () => {
  const out = new Collector();
  const ac = new AbortController();
  const h = sandbox.execStream({ command: 'echo $$; exec sleep 600', onStdout: out.push, signal: ac.signal });
  await out.waitFor(/\d+\n/);
  const pid = Number(out.text().trim());
  ac.abort();
  await assert.rejects(h.done, (e: unknown) => (e as Error).name === 'AbortError');
  await eventually(() => (alive(pid) ? undefined : true));
});

test('stream.connection_lost: the kit cuts the connection', async () => {
  const via = await proxied();
  const out = new Collector();
  const h = via.execStream({ command: 'echo $$; exec sleep 600', onStdout: out.push });
  await out.waitFor(/\d+\n/);
  const pid = Number(out.text().trim());
  await kit('cut');
  await assert.rejects(h.done, ConnectionLostError);
  await eventually(() => (alive(pid) ? undefined : true));
});

test('stream.text: one incremental UTF-8 decoder per stream', async () => {
  const h = sandbox.execStream({ command: "printf '\\342'; sleep 0.3; printf '\\202\\254\\n'" });
  let text = '';
  let messages = 0;
  const chunks: OutputChunk[] = [];
  for await (const t of h.text()) text += t.text;
  void chunks;
  assert.equal(text, '€\n');
  // the character did come in two messages
  const h2 = sandbox.execStream({ command: "printf '\\342'; sleep 0.3; printf '\\202\\254\\n'" });
  for await (const c of h2) {
    void c;
    messages++;
  }
  assert.ok(messages >= 2);
  assert.equal((await h.done).code, 0);
});

test('stream.bad_message: the error reaches onError; the stream goes on', async () => {
  const errors: Error[] = [];
  const out = new Collector();
  const h = sandbox.execStream({ args: ['cat'], onStdout: out.push, onError: (e) => errors.push(e) });
  h.signal('NOSUCHSIG');
  h.write('x');
  h.end();
  const exit = await h.done;
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof BadRequestError);
  assert.equal((errors[0] as BadRequestError).code, 'bad_request');
  assert.equal(out.text(), 'x');
  assert.equal(exit.code, 0);
});

test('stream.big_output: 2 GiB with flat client memory', async () => {
  const total = 2147483648;
  let count = 0;
  let base = 0;
  let peak = 0;
  let n = 0;
  const h = sandbox.execStream({
    command: `head -c ${total} /dev/zero`,
    onStdout: (c) => {
      if (base === 0) base = rss();
      count += c.length;
      if ((++n & 255) === 0) peak = Math.max(peak, rss());
    },
  });
  const exit = await h.done;
  assert.equal(count, total);
  assert.equal(exit.code, 0);
  const growth = peak - base;
  assert.ok(growth < 256 * 1024 * 1024, `RSS grew by ${growth} bytes`);
});

test('stream.big_output (iterator): a slow consumer paces the stream, memory stays flat', async () => {
  const total = 256 * 1024 * 1024;
  const h = sandbox.execStream({ command: `head -c ${total} /dev/zero` });
  let count = 0;
  let base = 0;
  let peak = 0;
  let i = 0;
  for await (const c of h) {
    if (base === 0) {
      base = rss();
      // not reading for a while: the stream must wait, not queue
      await new Promise((r) => setTimeout(r, 1000));
    }
    count += c.data.length;
    if ((++i & 63) === 0) peak = Math.max(peak, rss());
  }
  assert.equal(count, total);
  assert.ok(peak - base < 128 * 1024 * 1024, `RSS grew by ${peak - base} bytes`);
});

test('stream.big_write: one write of 64 MiB arrives whole', async () => {
  const size = 64 * 1024 * 1024;
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i++) data[i] = i % 251;
  const want = createHash('sha256').update(data).digest('hex');
  const out = new Collector();
  const h = sandbox.execStream({ args: ['sha256sum'], onStdout: out.push });
  await h.write(data);
  await h.end();
  const exit = await h.done;
  assert.equal(out.text().split(' ')[0], want);
  assert.equal(exit.code, 0);
});
