/** error.*: each protocol code as its own typed error. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import {
  BadRequestError,
  ConflictError,
  connect,
  errorFromReply,
  ForbiddenError,
  InternalError,
  LodgeError,
  NotFoundError,
  PayloadTooLargeError,
  SpawnFailedError,
  UnauthorizedError,
  UnavailableError,
  type Sandbox,
} from '@lodge/sdk';

import { client, env, forget, uname } from './helpers.js';

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

function typed(cls: new (...a: never[]) => LodgeError, code: string, status: number) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof cls, `${String(e)} is a ${cls.name}`);
    assert.equal(e.code, code);
    assert.equal(e.status, status);
    assert.ok(e.message.length > 0);
    return true;
  };
}

test('error.bad_request', async () => {
  await assert.rejects(sandbox.createSession({ name: name('bad'), args: ['cat'], cols: 0 }), typed(BadRequestError, 'bad_request', 400));
  await assert.rejects(sandbox.getSession('a b'), typed(BadRequestError, 'bad_request', 400));
});

test('error.unauthorized: REST and both refused upgrades', async () => {
  const bad = await connect({ url: env('LODGE_URL'), token: 'wrong-token-0123456789', check: false });
  const is = typed(UnauthorizedError, 'unauthorized', 401);
  await assert.rejects(bad.health(), is);
  await assert.rejects(bad.attachSession('whatever').done, is);
  await assert.rejects(bad.execStream({ command: 'true' }).done, is);
  await assert.rejects(connect({ url: env('LODGE_URL'), token: 'wrong-token-0123456789' }), is);
});

test('error.forbidden: a read-only client\'s input', async () => {
  const s = await sandbox.createSession({ name: name('forbidden'), args: ['cat'] });
  const errors: Error[] = [];
  const a = sandbox.attachSession(s.id, { readOnly: true, onError: (e) => errors.push(e) });
  await a.live;
  await a.write('x');
  await new Promise((r) => setTimeout(r, 300));
  a.detach();
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof ForbiddenError);
  assert.equal((errors[0] as ForbiddenError).code, 'forbidden');
});

test('error.not_found: get, delete, log and attach', async () => {
  const is = typed(NotFoundError, 'not_found', 404);
  await assert.rejects(sandbox.getSession('no-such-session'), is);
  await assert.rejects(sandbox.deleteSession('no-such-session'), is);
  await assert.rejects(sandbox.sessionLog('no-such-session'), is);
  await assert.rejects(sandbox.attachSession('no-such-session').done, is);
});

test('error.conflict: a name taken; input to an exited session', async () => {
  const n = name('conflict');
  const s = await sandbox.createSession({ name: n, command: 'true' });
  const is = typed(ConflictError, 'conflict', 409);
  await assert.rejects(sandbox.createSession({ name: n, args: ['cat'] }), is);
  await sandbox.waitSession(s.id);
  await assert.rejects(sandbox.sendInput(s.id, 'x'), is);
});

test('error.payload_too_large', async () => {
  const s = await sandbox.createSession({ name: name('big'), args: ['cat'] });
  await assert.rejects(sandbox.sendInput(s.id, 'a'.repeat(9 * 1024 * 1024)), typed(PayloadTooLargeError, 'payload_too_large', 413));
});

test('error.spawn_failed', async () => {
  const is = typed(SpawnFailedError, 'spawn_failed', 422);
  await assert.rejects(sandbox.exec({ command: 'true', workDir: '/nonexistent' }), is);
  await assert.rejects(sandbox.exec({ args: ['/nonexistent/program'] }), is);
  await assert.rejects(sandbox.createSession({ name: name('spawn'), command: 'true', workDir: '/nonexistent' }), is);
});

test('error.unavailable: input past the 4 MiB queue', async () => {
  const s = await sandbox.createSession({ name: name('unavail'), command: 'exec sleep 600' });
  await sandbox.sendInput(s.id, 'a'.repeat(3 * 1024 * 1024));
  await assert.rejects(sandbox.sendInput(s.id, 'a'.repeat(2 * 1024 * 1024)), typed(UnavailableError, 'unavailable', 503));
});

test('error.unknown_code: the generic error, with the code, status and message', () => {
  const e = errorFromReply(418, new TextEncoder().encode('{"error":{"code":"teapot","message":"m"}}'));
  assert.ok(e instanceof InternalError);
  assert.ok(e instanceof LodgeError);
  assert.deepEqual([e.code, e.status, e.message], ['teapot', 418, 'm']);
});
