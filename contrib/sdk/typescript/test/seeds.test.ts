/**
 * Every TypeScript example of the two seed documents, as written, with only
 * the import line and `const sandbox = await connect()` added, run as a
 * child process against the kit's lodged; each check is what the seed says
 * the example prints or does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { Sandbox } from '@lodge/sdk';

import { client, forget, makeWorkspace, runSeed } from './helpers.js';

let sandbox: Sandbox;

before(async () => {
  makeWorkspace();
  sandbox = await client();
});

after(async () => {
  await forget(sandbox, 'shell');
});

describe('seed: exec and execStream', () => {
  test('one-shot exec prints "hello\\n" and the exit code', async () => {
    const r = runSeed('exec-oneshot');
    assert.equal(await r.exited, 0, r.stderr());
    // console.log of "hello\n" prints hello and an empty line, then 0
    assert.equal(r.stdout(), 'hello\n\n0\n');
  });

  test('live streaming output: npm install in /workspace, then "exited with 0"', async () => {
    const r = runSeed('exec-live');
    assert.equal(await r.exited, 0, r.stderr());
    assert.match(r.stdout(), /up to date/);
    assert.match(r.stdout(), /exited with 0\n$/);
  });

  test('interactive shell with PTY: what stdin types reaches bash, its output reaches stdout', async () => {
    const r = runSeed('exec-pty');
    // stdin is a pipe: setRawMode is undefined there, and the seed's ?. skips it
    r.child.stdin!.write('echo hello\n');
    await r.waitFor(/[\r\n]hello\r\n/);
    // bash ends when stdin types exit; closing the pipe lets node exit too
    r.child.stdin!.end('exit\n');
    assert.equal(await r.exited, 0, r.stderr());
    assert.match(r.stdout(), /echo hello/);
  });

  test('sending signals: INT and TERM are sent, KILL ends the interactive bash', async () => {
    const r = runSeed('exec-signals');
    // Nothing is typed: stdin ends at once, so that node can exit.  bash
    // ignores INT and TERM when interactive and nothing else would end it on
    // its PTY: only KILL settles done, and node exits 0 only once the
    // top-level await of done has resolved (13 if it never settles, 1 if it
    // rejects).
    r.child.stdin!.end();
    assert.equal(await r.exited, 0, r.stderr());
    assert.equal(r.stderr(), '');
  });
});

describe('seed: sessions', () => {
  test('create a session prints its id', async () => {
    const r = runSeed('sessions-create');
    assert.equal(await r.exited, 0, r.stderr());
    const id = r.stdout().trim();
    assert.match(id, /^[0-9a-f]{32}$/);
    const s = await sandbox.getSession('shell');
    assert.equal(s.id, id);
    assert.equal(s.state, 'running');
    assert.equal(s.pty, true);
    assert.equal(s.cols, 120);
    assert.equal(s.rows, 40);
    assert.equal(s.workDir, '/workspace');
    await forget(sandbox, 'shell');
  });

  test('attach: echo hello runs in the session; the exit code is printed once bash ends', async () => {
    const r = runSeed('sessions-attach');
    await r.waitFor(/[\r\n]hello\r\n/);
    // The seed waits for bash to exit: end it with input from another client.
    await sandbox.sendInput('shell', 'exit\n');
    assert.equal(await r.exited, 0, r.stderr());
    assert.match(r.stdout(), /^[0-9a-f]{32}\n/);
    assert.match(r.stdout(), /\n0\n$/);
    await forget(sandbox, 'shell');
  });

  test('session log: the buffered output, as text', async () => {
    const r = runSeed('sessions-log');
    await r.waitFor(/[\r\n]hello\r\n/);
    await sandbox.sendInput('shell', 'exit\n');
    assert.equal(await r.exited, 0, r.stderr());
    const out = r.stdout();
    const tail = out.slice(out.lastIndexOf('\n0\n') + 3);
    // the log holds the echoed command, its output and the exit
    assert.match(tail, /echo hello\r\n/);
    assert.match(tail, /[\r\n]hello\r\n/);
    assert.match(tail, /exit/);
    await forget(sandbox, 'shell');
  });
});
