/**
 * Test helpers: the conformance kit's control line (tests/sdk/with-lodged),
 * child processes for the seed examples, and a client for the checks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

import { connect, type Sandbox } from '@lodge/sdk';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The compiled seed examples, beside this file in dist-test. */
export const seedDir = path.join(here, 'seeds');

export function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is not set: run under tests/sdk/with-lodged`);
  return v;
}

/** One command line to the kit's control port; its reply line. */
export async function kit(command: string): Promise<string> {
  const [host, port] = env('LODGE_KIT_CONTROL').split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), host);
    let buf = '';
    s.setEncoding('utf8');
    s.on('connect', () => s.write(command + '\n'));
    s.on('data', (d: string) => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i >= 0) {
        s.end();
        const line = buf.slice(0, i);
        if (line.startsWith('ok')) resolve(line);
        else reject(new Error(`kit ${command}: ${line}`));
      }
    });
    s.on('error', reject);
  });
}

/** A proxy through the kit: the URL of a Sandbox whose connections the kit can cut. */
export async function proxied(): Promise<Sandbox> {
  const reply = await kit('proxy');
  const port = Number(reply.split(' ')[1]);
  return connect({ url: `http://127.0.0.1:${port}`, token: env('LODGE_TOKEN') });
}

export function client(): Promise<Sandbox> {
  return connect();
}

/** /workspace with a package.json and an index.js, as the seeds expect. */
export function makeWorkspace(): void {
  fs.mkdirSync('/workspace', { recursive: true });
  fs.writeFileSync(
    '/workspace/package.json',
    JSON.stringify({ name: 'workspace', version: '1.0.0', private: true }, null, 2) + '\n',
  );
  // npm install with nothing to fetch: no registry, audit or funding calls
  fs.writeFileSync('/workspace/.npmrc', 'offline=true\naudit=false\nfund=false\nupdate-notifier=false\n');
  fs.writeFileSync('/workspace/index.js', "console.log('index', process.env.NODE_ENV)\n");
}

export interface Run {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout matches. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<void>;
  /** The exit status, once the child is gone. */
  exited: Promise<number | null>;
}

/** Run one compiled seed example as a child process, stdin a pipe. */
export function runSeed(name: string): Run {
  const child = spawn(process.execPath, [path.join(seedDir, name + '.js')], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: process.env,
  });
  let out = '';
  let err = '';
  const watchers: { re: RegExp; resolve(): void }[] = [];
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => {
    out += d;
    for (const w of watchers.splice(0)) {
      if (w.re.test(out)) w.resolve();
      else watchers.push(w);
    }
  });
  child.stderr!.on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  void exited.then(() => clearTimeout(killer));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitFor: (re, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        if (re.test(out)) {
          resolve();
          return;
        }
        const t = setTimeout(
          () => reject(new Error(`no ${re} in the output within ${timeoutMs} ms:\n${out}\n${err}`)),
          timeoutMs,
        );
        watchers.push({
          re,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        });
      }),
    exited,
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Delete a session if it exists (a test's cleanup). */
export async function forget(sandbox: Sandbox, ref: string): Promise<void> {
  try {
    await sandbox.deleteSession(ref);
  } catch (e) {
    if ((e as { code?: string }).code !== 'not_found') throw e;
  }
}

/** This process's resident set size, in bytes. */
export function rss(): number {
  return process.memoryUsage.rss();
}

/** A session name no other test uses. */
export function uname(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}

/** Poll until check returns a value other than undefined (10 s unless said). */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`not within ${ms} ms${last ? ': ' + String(last) : ''}`);
    await sleep(50);
  }
}

/** Whether a process exists. */
export function alive(pid: number): boolean {
  return fs.existsSync(`/proc/${pid}`);
}

/** Collects output bytes, and resolves waits for text in it. */
export class Collector {
  readonly parts: Buffer[] = [];
  private waiters: { re: RegExp | string; resolve(): void }[] = [];
  readonly push = (chunk: Uint8Array): void => {
    this.parts.push(Buffer.from(chunk));
    this.waiters = this.waiters.filter((w) => {
      if (!this.has(w.re)) return true;
      w.resolve();
      return false;
    });
  };
  bytes(): Buffer {
    return Buffer.concat(this.parts);
  }
  text(): string {
    return this.bytes().toString('latin1');
  }
  private has(re: RegExp | string): boolean {
    return typeof re === 'string' ? this.text().includes(re) : re.test(this.text());
  }
  waitFor(re: RegExp | string, ms = 10_000): Promise<void> {
    if (this.has(re)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${String(re)} within ${ms} ms in ${JSON.stringify(this.text().slice(-300))}`)), ms);
      this.waiters.push({ re, resolve: () => (clearTimeout(t), resolve()) });
    });
  }
}
