/** connect.*: the environment, explicit arguments, the Unix socket. */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { connect, Sandbox } from '@lodge/sdk';

import { env } from './helpers.js';

function checkHealth(h: { status: string; version: string; sessions: number }): void {
  assert.equal(h.status, 'ok');
  assert.equal(typeof h.version, 'string');
  assert.ok(h.version.length > 0);
  assert.ok(Number.isInteger(h.sessions) && h.sessions >= 0);
}

/** Run f with the named environment variables removed. */
async function without<T>(names: string[], f: () => Promise<T>): Promise<T> {
  const saved = names.map((n) => [n, process.env[n]] as const);
  for (const n of names) delete process.env[n];
  try {
    return await f();
  } finally {
    for (const [n, v] of saved) if (v !== undefined) process.env[n] = v;
  }
}

test('connect.env: LODGE_URL and LODGE_TOKEN', async () => {
  const sandbox = await connect();
  assert.equal(sandbox.endpoint, env('LODGE_URL'));
  checkHealth(await sandbox.health());
});

test('connect.explicit: URL and token as arguments', async () => {
  const url = env('LODGE_URL');
  const token = env('LODGE_TOKEN');
  await without(['LODGE_URL', 'LODGE_TOKEN'], async () => {
    const sandbox = await connect({ url, token });
    checkHealth(await sandbox.health());
    assert.ok(new Sandbox({ url, token }) instanceof Sandbox);
  });
});

test('connect.unix: no LODGE_URL, the Unix socket in LODGE_RUNDIR', async () => {
  await without(['LODGE_URL', 'LODGE_TOKEN'], async () => {
    const sandbox = await connect();
    assert.equal(sandbox.endpoint, `unix:${env('LODGE_RUNDIR')}/lodged.sock`);
    checkHealth(await sandbox.health());
    const r = await sandbox.exec({ command: 'echo unix' });
    assert.equal(r.stdout, 'unix\n');
    assert.equal(r.exitCode, 0);
    let out = '';
    const h = sandbox.execStream({ command: 'echo unix', onStdout: (c) => (out += c.toString()) });
    const exit = await h.done;
    assert.equal(out, 'unix\n');
    assert.equal(exit.code, 0);
  });
});
