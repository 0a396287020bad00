/** session.*: sessions over REST. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { NotFoundError, type Sandbox } from '@lodge/sdk';

import { alive, client, eventually, forget, uname } from './helpers.js';

let sandbox: Sandbox;
const made: string[] = [];
before(async () => {
  sandbox = await client();
});
after(async () => {
  for (const n of made) await forget(sandbox, n);
});

function name(p: string): string {
  const n = uname(p);
  made.push(n);
  return n;
}

test('session.create', async () => {
  const n = name('create');
  const s = await sandbox.createSession({ name: n, command: 'bash --norc', workDir: '/tmp', pty: true, cols: 120, rows: 40 });
  assert.match(s.id, /^[0-9a-f]{32}$/);
  assert.deepEqual([s.name, s.pty, s.cols, s.rows, s.workDir, s.state], [n, true, 120, 40, '/tmp', 'running']);
  assert.ok(Number.isInteger(s.pid) && s.pid > 0);
});

test('session.create.args', async () => {
  const s = await sandbox.createSession({ name: name('args'), args: ['cat'] });
  assert.equal(s.state, 'running');
  assert.deepEqual(s.args, ['cat']);
  assert.equal(s.pty, false);
});

test('session.list', async () => {
  const a = await sandbox.createSession({ name: name('list-a'), args: ['cat'] });
  const b = await sandbox.createSession({ name: name('list-b'), args: ['cat'] });
  const all = await sandbox.listSessions();
  for (const s of [a, b]) assert.equal(all.find((x) => x.id === s.id)?.name, s.name);
});

test('session.get', async () => {
  const n = name('get');
  const s = await sandbox.createSession({ name: n, args: ['cat'] });
  const byId = await sandbox.getSession(s.id);
  const byName = await sandbox.getSession(n);
  assert.deepEqual([byId.id, byName.id, byId.state], [s.id, s.id, 'running']);
});

test('session.log', async () => {
  const s = await sandbox.createSession({ name: name('log'), command: 'printf abcdef' });
  await sandbox.waitSession(s.id);
  const all = await sandbox.readSessionLog(s.id);
  assert.deepEqual([all.data.toString(), all.start, all.end], ['abcdef', 0, 6]);
  const from2 = await sandbox.readSessionLog(s.id, { since: 2 });
  assert.deepEqual([from2.data.toString(), from2.start, from2.end], ['cdef', 2, 6]);
  const past = await sandbox.readSessionLog(s.id, { since: 100 });
  assert.deepEqual([past.data.toString(), past.start, past.end], ['', 6, 6]);
});

test('session.input', async () => {
  const s = await sandbox.createSession({ name: name('input'), args: ['cat'] });
  await sandbox.sendInput(s.id, 'abc\n');
  await sandbox.sendInput(s.id, new Uint8Array([0, 1]));
  await eventually(async () => {
    const log = await sandbox.sessionLog(s.id);
    return Buffer.from(log).equals(Buffer.from('abc\n\x00\x01', 'latin1')) ? true : undefined;
  });
});

test('session.resize', async () => {
  const s = await sandbox.createSession({ name: name('resize'), command: 'read x; stty size; read y', pty: true, cols: 80, rows: 24 });
  await sandbox.resizeSession(s.id, 100, 30);
  await sandbox.sendInput(s.id, '\n');
  await eventually(async () => ((await sandbox.sessionLog(s.id)).toString().includes('30 100') ? true : undefined));
  const g = await sandbox.getSession(s.id);
  assert.deepEqual([g.cols, g.rows], [100, 30]);
});

test('session.signal', async () => {
  const s = await sandbox.createSession({ name: name('signal'), command: 'exec sleep 600' });
  await sandbox.signalSession(s.id, 'TERM');
  const exit = await sandbox.waitSession(s.id);
  assert.deepEqual([exit.code, exit.signal], [null, 'TERM']);
  assert.equal((await sandbox.getSession(s.id)).state, 'exited');
});

test('session.wait', async () => {
  const s = await sandbox.createSession({ name: name('wait'), command: 'sleep 1; exit 4' });
  assert.deepEqual(await sandbox.waitSession(s.id), { code: 4, signal: null });
  assert.deepEqual(await sandbox.waitSession(s.id), { code: 4, signal: null });
});

test('session.delete', async () => {
  const s = await sandbox.createSession({ name: name('delete'), command: 'echo $$; exec sleep 600' });
  const pid = await eventually(async () => {
    const t = (await sandbox.sessionLog(s.id)).toString();
    return /^\d+\n/.test(t) ? Number(t.trim()) : undefined;
  });
  await sandbox.deleteSession(s.id);
  await assert.rejects(sandbox.getSession(s.id), NotFoundError);
  assert.equal(alive(pid), false);
});

test('session.delete.exited', async () => {
  const s = await sandbox.createSession({ name: name('delexit'), command: 'true' });
  await sandbox.waitSession(s.id);
  await sandbox.deleteSession(s.id);
  await assert.rejects(sandbox.deleteSession(s.id), (e: unknown) => e instanceof NotFoundError && e.status === 404);
});
