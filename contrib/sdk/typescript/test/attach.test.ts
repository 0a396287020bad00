/** attach.*: session attach, replay, several clients, resume under the kit's faults. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';

import { BadRequestError, ForbiddenError, GapError, type GapInfo, type Sandbox } from '@lodge/sdk';

import { client, Collector, eventually, forget, kit, proxied, sleep, uname } from './helpers.js';

let sandbox: Sandbox;
const made: string[] = [];
before(async () => {
  sandbox = await client();
});
after(async () => {
  await kit('cut-after 0').catch(() => {});
  for (const n of made) await forget(sandbox, n);
});

function name(p: string): string {
  const n = uname(p);
  made.push(n);
  return n;
}

interface Seen {
  offset: number;
  text: string;
}

test('attach.replay', async () => {
  const s = await sandbox.createSession({ name: name('replay'), command: 'echo one; read line; echo "got $line"' });
  await eventually(async () => ((await sandbox.sessionLog(s.id)).toString() === 'one\n' ? true : undefined));
  const seen: Seen[] = [];
  let liveAt = -1;
  const a = sandbox.attachSession(s.id, {
    onStdout: (c) => {
      seen.push({ offset: a.nextOffset! - c.length, text: c.toString() });
    },
    onLive: () => {
      liveAt = seen.map((x) => x.text).join('').length;
      a.write('x\n');
    },
  });
  const exit = await a.done;
  assert.deepEqual(seen[0], { offset: 0, text: 'one\n' });
  assert.equal(liveAt, 4);
  assert.equal(seen.map((x) => x.text).join(''), 'one\ngot x\n');
  assert.equal(seen.find((x) => x.text.startsWith('got'))?.offset, 4);
  assert.equal(exit.code, 0);
});

test('attach.replay.since', async () => {
  const s = await sandbox.createSession({ name: name('since'), command: 'printf abcdef' });
  await sandbox.waitSession(s.id);
  const a = sandbox.attachSession(s.id, { since: 2 });
  const chunks = [];
  let sawLive = false;
  void a.live.then(() => (sawLive = true));
  for await (const c of a) chunks.push(c);
  assert.equal(Buffer.concat(chunks.map((c) => c.data)).toString(), 'cdef');
  assert.equal(chunks[0]?.offset, 2);
  assert.equal(sawLive, true);
  assert.equal((await a.done).code, 0);
});

test('attach.exited', async () => {
  const s = await sandbox.createSession({ name: name('exited'), command: 'echo done; exit 2' });
  await sandbox.waitSession(s.id);
  const out = new Collector();
  let live = false;
  const a = sandbox.attachSession(s.id, { onStdout: out.push, onLive: () => (live = true) });
  const exit = await a.done;
  assert.equal(out.text(), 'done\n');
  assert.equal(live, true);
  assert.equal(exit.code, 2);
});

test('attach.clients', async () => {
  const s = await sandbox.createSession({ name: name('clients'), args: ['cat'] });
  const ao: Seen[] = [];
  const bo = new Collector();
  const bs: Seen[] = [];
  const a = sandbox.attachSession(s.id, { onStdout: (c) => ao.push({ offset: a.nextOffset! - c.length, text: c.toString() }) });
  const b = sandbox.attachSession(s.id, {
    onStdout: (c) => {
      bs.push({ offset: b.nextOffset! - c.length, text: c.toString() });
      bo.push(c);
    },
  });
  await Promise.all([a.live, b.live]);
  await a.write('hi\n');
  await bo.waitFor('hi\n');
  await eventually(() => (ao.length > 0 ? true : undefined));
  assert.deepEqual(ao[0], bs[0]);
  assert.equal((await sandbox.getSession(s.id)).clients, 2);
  a.detach();
  await eventually(async () => ((await sandbox.getSession(s.id)).clients === 1 ? true : undefined));
  await b.write('b\n');
  await bo.waitFor('hi\nb\n');
  b.detach();
});

test('attach.detach', async () => {
  const s = await sandbox.createSession({ name: name('detach'), args: ['cat'] });
  const a = sandbox.attachSession(s.id);
  await a.live;
  a.detach();
  assert.deepEqual(await a.done, { code: null, signal: null, detached: true });
  assert.equal((await sandbox.getSession(s.id)).state, 'running');
});

test('attach.pty', async () => {
  const s = await sandbox.createSession({ name: name('pty'), command: 'bash --norc', pty: true, cols: 120, rows: 40 });
  const out = new Collector();
  const a = sandbox.attachSession(s.id, { cols: 120, rows: 40, onStdout: out.push });
  a.write('echo hello\n');
  await out.waitFor(/[\r\n]hello\r\n/);
  a.write('exit\n');
  assert.equal((await a.done).code, 0);
});

test('attach.readonly', async () => {
  const s = await sandbox.createSession({ name: name('readonly'), args: ['cat'] });
  const errors: Error[] = [];
  const a = sandbox.attachSession(s.id, { readOnly: true, onError: (e) => errors.push(e) });
  await a.live;
  a.write('x');
  a.resize(100, 30);
  a.signal('INT');
  await eventually(() => (errors.length === 3 ? true : undefined));
  for (const e of errors) {
    assert.ok(e instanceof ForbiddenError);
    assert.equal((e as ForbiddenError).code, 'forbidden');
  }
  assert.equal((await sandbox.sessionLog(s.id)).length, 0);
  assert.equal((await sandbox.getSession(s.id)).state, 'running');
  a.detach();
});

test('attach.pace: the process waits for a paced reader, and nothing is skipped', async () => {
  const size = 32 * 1024 * 1024;
  const s = await sandbox.createSession({ name: name('pace'), args: ['sh', '-c', `read x; head -c ${size} /dev/zero`] });
  const gaps: GapInfo[] = [];
  let got = 0;
  let slow = true;
  const a = sandbox.attachSession(s.id, {
    pace: true,
    onGap: (g) => gaps.push(g),
    onStdout: (c) => {
      got += c.length;
      return slow ? sleep(20) : undefined;
    },
  });
  await a.live;
  a.write('go\n');
  await sleep(1500);
  // what lodged read beyond what this reader took: a quarter of the ring,
  // a read, and the sockets' buffers, not the whole 32 MiB
  const ahead = (await sandbox.getSession(s.id)).outputBytes - got;
  assert.ok(ahead < 12 * 1024 * 1024, `the process ran ${ahead} bytes ahead`);
  slow = false;
  const exit = await a.done;
  assert.equal(exit.code, 0);
  assert.deepEqual(gaps, []);
  assert.equal(got, size);
});

test('attach.pace.readonly: refused, a viewer cannot hold the process back', async () => {
  const s = await sandbox.createSession({ name: name('pace-ro'), args: ['cat'] });
  const a = sandbox.attachSession(s.id, { pace: true, readOnly: true, resume: false });
  await assert.rejects(a.done, (e: unknown) => e instanceof BadRequestError && /'pace'/.test(e.message));
  assert.equal((await sandbox.getSession(s.id)).state, 'running');
});

test('attach.eof', async () => {
  const s = await sandbox.createSession({ name: name('eof'), args: ['cat'] });
  const out = new Collector();
  const a = sandbox.attachSession(s.id, { onStdout: out.push });
  a.write('z\n');
  a.end();
  const exit = await a.done;
  assert.equal(out.text(), 'z\n');
  assert.equal(exit.code, 0);
});

/** Attach through the proxy, collecting output and gaps in order, and reconnects. */
async function attachThrough(ref: string, strict = false, since?: number) {
  const via = await proxied();
  const chunks: { offset: number; data: Buffer }[] = [];
  const gaps: GapInfo[] = [];
  const events: ({ gap: GapInfo } | { offset: number; length: number })[] = [];
  let reconnects = 0;
  const a = via.attachSession(ref, {
    strict,
    since,
    onStdout: (c) => {
      const offset = a.nextOffset! - c.length;
      chunks.push({ offset, data: Buffer.from(c) });
      events.push({ offset, length: c.length });
    },
    onGap: (g) => {
      gaps.push(g);
      events.push({ gap: g });
    },
    onReconnect: () => reconnects++,
  });
  return { a, chunks, gaps, events, reconnects: () => reconnects };
}

// The scenario's cut-after 65536 cannot pass against this lodged: its
// replay messages carry 64 KiB of output each, so after the first cut no
// connection ever delivers a whole message (a livelock the SDK ends with
// connection-lost after maxAttempts without progress).  256 KiB + 4 KiB
// lets one message through per connection and still cuts 7 times or more.
test('attach.resume: cut after every 260 KiB, every byte exactly once', async () => {
  const s = await sandbox.createSession({ name: name('resume'), command: 'sleep 1; seq 1 300000', bufferSize: 4 * 1024 * 1024 });
  await proxied();
  await kit('cut-after 266240');
  try {
    const r = await attachThrough(s.id);
    const exit = await r.a.done;
    const want = execFileSync('seq', ['1', '300000'], { maxBuffer: 64 << 20 });
    let next = 0;
    for (const c of r.chunks) {
      assert.equal(c.offset, next);
      next += c.data.length;
    }
    assert.ok(Buffer.concat(r.chunks.map((c) => c.data)).equals(want));
    assert.ok(r.reconnects() >= 3, `${r.reconnects()} reconnects`);
    assert.deepEqual(r.gaps, []);
    assert.equal(exit.code, 0);
  } finally {
    await kit('cut-after 0');
  }
});

test('attach.resume.cuts: three cuts while it runs', async () => {
  const cmd = 'for i in $(seq 1 40); do seq $((i*1000)) $((i*1000+999)); sleep 0.1; done';
  const s = await sandbox.createSession({ name: name('cuts'), command: cmd, bufferSize: 4 * 1024 * 1024 });
  const r = await attachThrough(s.id);
  for (let i = 0; i < 3; i++) {
    await sleep(1000);
    await kit('cut');
  }
  const exit = await r.a.done;
  const want = execFileSync('sh', ['-c', cmd], { maxBuffer: 64 << 20 });
  assert.ok(Buffer.concat(r.chunks.map((c) => c.data)).equals(want));
  assert.ok(r.reconnects() >= 3, `${r.reconnects()} reconnects`);
  assert.deepEqual(r.gaps, []);
  assert.equal(exit.code, 0);
});

test('attach.resume.gap: a small ring, gaps with their offsets', async () => {
  const s = await sandbox.createSession({
    name: name('gap'),
    command: "sleep 1; head -c 20000000 /dev/zero | tr '\\0' a; echo end",
    bufferSize: 4096,
  });
  await proxied();
  await kit('cut-after 16384');
  try {
    // since 0: what the process wrote before the attach counts too
    const r = await attachThrough(s.id, false, 0);
    const exit = await r.a.done;
    assert.ok(r.gaps.length >= 1);
    // each chunk starts where the one before ended, but right after a
    // gap, which starts there and says where output goes on
    let expect = 0;
    let delivered = 0;
    for (const e of r.events) {
      if ('gap' in e) {
        assert.equal(e.gap.from, expect);
        expect = e.gap.to;
      } else {
        assert.equal(e.offset, expect);
        expect += e.length;
        delivered += e.length;
      }
    }
    for (const g of r.gaps) assert.ok(g.from < g.to);
    const lost = r.gaps.reduce((n, g) => n + (g.to - g.from), 0);
    const info = await sandbox.getSession(s.id);
    assert.equal(delivered + lost, info.outputBytes, `exit ${JSON.stringify(exit)}, ${info.state}, next ${r.a.nextOffset}, ${r.gaps.length} gaps, ${r.reconnects()} reconnects`);
    assert.equal(exit.code, 0);
  } finally {
    await kit('cut-after 0');
  }
});

test('attach.resume.strict: the gap is an error', async () => {
  const s = await sandbox.createSession({
    name: name('strict'),
    command: "sleep 1; head -c 20000000 /dev/zero | tr '\\0' a; echo end",
    bufferSize: 4096,
  });
  await proxied();
  await kit('cut-after 16384');
  try {
    const r = await attachThrough(s.id, true, 0);
    await assert.rejects(r.a.done, (e: unknown) => e instanceof GapError && e.from < e.to);
  } finally {
    await kit('cut-after 0');
  }
});

test('attach.front_killed: the attach carries on while the front is down', async () => {
  const s = await sandbox.createSession({ name: name('front'), args: ['cat'] });
  const out = new Collector();
  let reconnects = 0;
  const a = sandbox.attachSession(s.id, { onStdout: out.push, onReconnect: () => reconnects++ });
  await a.live;
  await kit('kill-front');
  try {
    await a.write('after\n');
    await out.waitFor('after\n');
  } finally {
    await kit('start-front');
  }
  await eventually(() => sandbox.health());
  await sandbox.signalSession(s.id, 'TERM');
  const exit = await a.done;
  assert.equal(exit.signal, 'TERM');
  assert.equal(out.text(), 'after\n');
  assert.equal(reconnects, 0);
});
