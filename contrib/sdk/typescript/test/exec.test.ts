/** exec.*: POST /v1/exec. */
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { before, test } from 'node:test';

import { SpawnFailedError, type Sandbox } from '@lodge/sdk';

import { client } from './helpers.js';

let sandbox: Sandbox;
before(async () => {
  sandbox = await client();
});

test('exec.basic', async () => {
  const r = await sandbox.exec({ command: 'echo hello' });
  assert.equal(r.stdout, 'hello\n');
  assert.equal(r.stderr, '');
  assert.equal(r.exitCode, 0);
  assert.equal(r.signal, null);
  assert.equal(r.timedOut, false);
  assert.equal(r.truncated, false);
  assert.ok(Number.isInteger(r.durationMs) && r.durationMs >= 0);
});

test('exec.exit_code', async () => {
  const r = await sandbox.exec({ command: 'echo out; echo err >&2; exit 3' });
  assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.signal], ['out\n', 'err\n', 3, null]);
});

test('exec.signal', async () => {
  const t = await sandbox.exec({ command: 'kill -TERM $$' });
  assert.deepEqual([t.exitCode, t.signal], [null, 'TERM']);
  const k = await sandbox.exec({ command: 'kill -KILL $$' });
  assert.deepEqual([k.exitCode, k.signal], [null, 'KILL']);
});

test('exec.timeout', async () => {
  const r = await sandbox.exec({ command: 'sleep 30', timeoutSeconds: 1, requestTimeoutMs: 10_000 });
  assert.deepEqual([r.timedOut, r.exitCode, r.signal], [true, null, 'TERM']);
});

test('exec.timeout.fraction', async () => {
  const r = await sandbox.exec({ args: ['sleep', '30'], timeoutSeconds: 0.5 });
  assert.deepEqual([r.timedOut, r.signal], [true, 'TERM']);
});

test('exec.spawn_failed', async () => {
  for (const o of [{ command: 'true', workDir: '/nonexistent' }, { args: ['/nonexistent/program'] }]) {
    await assert.rejects(sandbox.exec(o), (e: unknown) => {
      assert.ok(e instanceof SpawnFailedError);
      assert.equal(e.code, 'spawn_failed');
      assert.equal(e.status, 422);
      assert.ok(e.message.length > 0);
      return true;
    });
  }
});

test('exec.base64: the SDK decodes the bytes into stdoutBytes; stdout is the base64 string', async () => {
  const b = await sandbox.exec({ command: "printf '\\377\\000A\\n'", encoding: 'base64' });
  assert.equal(b.stdout, '/wBBCg==');
  assert.deepEqual([...b.stdoutBytes!], [0xff, 0x00, 0x41, 0x0a]);
  const u = await sandbox.exec({ command: "printf '\\377\\000A\\n'" });
  assert.equal(u.stdout, '\ufffd\u0000A\n');
});

test('exec.workdir_env_user', async () => {
  const me = os.userInfo().username;
  const r = await sandbox.exec({ command: 'pwd; echo "$FOO"; id -un', workDir: '/tmp', env: { FOO: 'bar' }, user: me });
  assert.equal(r.stdout, `/tmp\nbar\n${me}\n`);
  assert.equal(r.exitCode, 0);
  await assert.rejects(sandbox.exec({ command: 'true', user: 'no-such-user-xyz' }), SpawnFailedError);
});

test('exec.stdin', async () => {
  const r = await sandbox.exec({ args: ['cat'], stdin: 'abc' });
  assert.equal(r.stdout, 'abc');
});

test('exec.truncated', async () => {
  const r = await sandbox.exec({ command: 'head -c 100000 /dev/zero', maxOutputBytes: 10 });
  assert.equal(r.truncated, true);
  assert.equal(r.stdout, '\0'.repeat(10));
  assert.equal(r.exitCode, 0);
});

test('exec: a string is a command; an aborted call rejects with the signal\'s reason', async () => {
  assert.equal((await sandbox.exec('echo short')).stdout, 'short\n');
  const ac = new AbortController();
  const p = sandbox.exec({ command: 'sleep 30', signal: ac.signal });
  setTimeout(() => ac.abort(), 200);
  await assert.rejects(p, (e: unknown) => (e as Error).name === 'AbortError');
});
