// What the browser tests share: Debian's Chromium driven by playwright-core
// (never a downloaded browser), the daemon of tests/sdk/with-lodged (its
// URL, token and fault control), and waits on conditions with generous
// bounds (no sleeps that hope).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const URL_ = process.env.LODGE_URL;
export const TOKEN = process.env.LODGE_TOKEN;
if (!URL_ || !TOKEN) throw new Error('run under tests/sdk/with-lodged: LODGE_URL and LODGE_TOKEN are unset');
export const PAGE = URL_ + '/ui/';
/** Where the tests write what they make (the screenshot): never the tree. */
export const OUT = process.env.LODGE_WEB_OUT || mkdtempSync(join(tmpdir(), 'lodge-web-out-'));
mkdirSync(OUT, { recursive: true });
// A loaded CI machine is slower than this one: every wait is generous.
export const WAIT_MS = 60_000;

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** A browser with a fresh profile; close() removes it. */
export async function browser() {
  const dir = mkdtempSync(join(tmpdir(), 'lodge-web-profile-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 800 },
  });
  return {
    ctx,
    async close() {
      await ctx.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Wait until fn() gives a truthy value; return it. */
export async function until(fn, what, ms = WAIT_MS) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`no ${what} within ${ms} ms (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A REST call of the test itself (not the page's). */
export async function api(method, path, body) {
  const res = await fetch(URL_ + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

export async function log(id) {
  const res = await fetch(`${URL_}/v1/sessions/${id}/log`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return Buffer.from(await res.arrayBuffer()).toString('latin1');
}

/** A shell that reads no rc file: the tests type into it. */
export const SHELL = 'exec bash --norc --noprofile';

export async function createShell(extra = {}) {
  return api('POST', '/v1/sessions', { command: SHELL, pty: true, cols: 80, rows: 24, ...extra });
}

/** One line to with-lodged's fault control: kill-front, start-front, proxy, cut. */
export function control(line) {
  const [host, port] = process.env.LODGE_KIT_CONTROL.split(':');
  return new Promise((resolve, reject) => {
    const s = createConnection({ host, port: Number(port) }, () => s.write(line + '\n'));
    let buf = '';
    s.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) {
        s.end();
        const reply = buf.trim();
        if (reply.startsWith('ok')) resolve(reply.slice(2).trim());
        else reject(new Error(`${line}: ${reply}`));
      }
    });
    s.on('error', reject);
  });
}

/** A page logged in with the token through the #token= fragment. */
export async function openPage(ctx, base = PAGE) {
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(new Error(m.text()));
  });
  page.errors = errors;
  await page.goto(base + '#token=' + encodeURIComponent(TOKEN));
  await page.waitForSelector('#app:not([hidden])', { timeout: WAIT_MS });
  return page;
}

/** The active terminal's text, its state, and counters. */
export function view(page) {
  return page.evaluate(() => {
    const v = window.lodge?.active?.view;
    if (!v) return null;
    return { text: v.text(), cols: v.term.cols, rows: v.term.rows, received: v.received, gaps: v.gaps,
      reconnects: v.reconnects, pauses: v.pauses, state: v.el.querySelector('.state').textContent,
      note: v.el.querySelector('.note').textContent };
  });
}

export async function waitText(page, re, what = String(re), ms = WAIT_MS) {
  return until(async () => {
    const v = await view(page);
    return v && re.test(v.text) ? v : null;
  }, what, ms);
}

/** Open a listed session in a tab: its row's open (or view) button. */
export async function openSession(page, id, button = 'open') {
  const b = page.locator(`#sessions tr[data-id="${id}"] button.${button}`);
  await b.waitFor({ timeout: WAIT_MS });
  await b.click();
  await until(async () => (await view(page))?.state?.startsWith('live'), `${id} live in the page`);
}

/** Type into the active terminal, as a user does. */
export async function type(page, text) {
  await page.locator('.pane:not([hidden]) .xterm-helper-textarea').focus();
  await page.keyboard.type(text);
}

export async function enter(page, line) {
  await type(page, line);
  await page.keyboard.press('Enter');
}
