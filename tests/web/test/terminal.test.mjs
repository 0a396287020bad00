// The browser terminal in headless Chromium against a real lodged: every
// item the page must show, each a test.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { join } from 'node:path';
import {
  api, browser, control, createShell, enter, log, openPage, openSession, OUT, PAGE, TOKEN, type, until,
  URL_, view, waitText, WAIT_MS,
} from '../kit.mjs';

// In the output directory; tests/web/screenshot.sh copies it beside the page.
const SCREENSHOT = join(OUT, 'screenshot.png');

/** A PNG's width and height from its IHDR chunk; throws if it is no PNG. */
function pngSize(buf) {
  assert.ok(buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'a PNG signature');
  assert.equal(buf.toString('latin1', 12, 16), 'IHDR');
  return [buf.readUInt32BE(16), buf.readUInt32BE(20)];
}

let b;
before(async () => {
  b = await browser();
});
after(async () => {
  await b?.close();
});

test('the token, a session created in the page, typing and Unicode read back', async (t) => {
  const page = await b.ctx.newPage();
  // nothing the page asks for is refused, and it logs no error
  const refused = [];
  page.on('console', (m) => { if (m.type() === 'error') refused.push(`console: ${m.text()}`); });
  page.on('response', (r) => { if (r.status() >= 400) refused.push(`${r.status()} ${r.url()}`); });
  await page.goto(PAGE);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#token', TOKEN);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#app:not([hidden])');
  // the token is kept for the tab, never in the address
  assert.equal(await page.evaluate(() => sessionStorage.getItem('lodge.token')), TOKEN);
  assert.ok(!page.url().includes(TOKEN));
  await page.fill('#create input[name=command]', 'exec bash --norc --noprofile');
  await page.fill('#create input[name=name]', 'web-first');
  await page.click('#create button[type=submit]');
  await until(async () => (await view(page))?.state?.startsWith('live'), 'the new session live');
  await enter(page, 'echo hi; echo "h$((6*7))é ✓ λ→Ω"');
  await waitText(page, /^hi$/m, 'hi');
  await waitText(page, /^h42é ✓ λ→Ω$/m, 'the Unicode line');
  const listed = await api('GET', '/v1/sessions');
  const s = listed.sessions.find((x) => x.name === 'web-first');
  assert.ok(s, 'created through the page');
  assert.equal(s.pty, true);
  // the list stays current: the page's own client is counted
  await until(async () => (await page.locator(`#sessions tr[data-id="${s.id}"] td:nth-child(4)`).textContent()) === '1',
    'one client in the list');
  // the picture: the page at its viewport with the session's tab open
  assert.equal(await page.locator('.pane:not([hidden]) .xterm-screen').count(), 1);
  await page.screenshot({ path: SCREENSHOT });
  const png = readFileSync(SCREENSHOT);
  assert.deepEqual(pngSize(png), [1280, 800]);
  // a blank or a one-colour page compresses to a few kB; this one has text
  assert.ok(png.length > 20_000, `a screenshot of ${png.length} bytes`);
  t.diagnostic(`screenshot: ${SCREENSHOT}`);
  assert.deepEqual(page.errors ?? [], []);
  assert.deepEqual(refused, []);
  await page.close();
});

test('reload: the replay shows what was there', async () => {
  const s = await createShell();
  const page = await openPage(b.ctx);
  await openSession(page, s.id);
  await enter(page, 'echo before-$((40+2))');
  await waitText(page, /^before-42$/m, 'the output before the reload');
  await page.reload();
  await page.waitForSelector('#app:not([hidden])');
  await openSession(page, s.id);
  const v = await waitText(page, /^before-42$/m, 'the replay after the reload');
  assert.match(v.text, /echo before-\$\(\(40\+2\)\)/);
  await page.close();
});

test('the front killed with SIGKILL and started again: typing goes on in the same tab', async () => {
  const s = await createShell();
  const page = await openPage(b.ctx);
  await openSession(page, s.id);
  await enter(page, 'echo one-$((1+1))');
  await waitText(page, /^one-2$/m, 'output before the kill');
  await control('kill-front');
  await enter(page, 'echo while-down-$((2+1))');
  await waitText(page, /^while-down-3$/m, 'output with the front dead');
  await until(async () => (await page.textContent('#status')).startsWith('lodged:'), 'the list reporting the front gone');
  await control('start-front');
  await enter(page, 'echo after-$((3+1))');
  await waitText(page, /^after-4$/m, 'output after the restart');
  await until(async () => (await page.textContent('#status')) === '', 'the list current again');
  const v = await view(page);
  assert.equal(v.text.match(/^one-2$/gm).length, 1, 'nothing repeated');
  await page.close();
});

test('resizing the viewport resizes the PTY (stty size)', async () => {
  const s = await createShell();
  const page = await openPage(b.ctx);
  await openSession(page, s.id);
  await enter(page, 'clear; stty size');
  let v = await until(async () => {
    const x = await view(page);
    return x && new RegExp(`^${x.rows} ${x.cols}$`, 'm').test(x.text) ? x : null;
  }, 'stty size matching the terminal');
  const before = { cols: v.cols, rows: v.rows };
  await page.setViewportSize({ width: 900, height: 500 });
  v = await until(async () => {
    const x = await view(page);
    return x && x.cols < before.cols && x.rows < before.rows ? x : null;
  }, 'the terminal fitted to the smaller window');
  await until(async () => {
    await enter(page, 'clear; stty size');
    return waitText(page, new RegExp(`^${v.rows} ${v.cols}$`, 'm'), 'stty size after the resize', 3000);
  }, 'the PTY resized', WAIT_MS);
  const info = await api('GET', `/v1/sessions/${s.id}`);
  assert.equal(info.cols, v.cols);
  assert.equal(info.rows, v.rows);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.close();
});

test('the same session in two pages: both update, and read-only refuses input', async () => {
  const s = await createShell();
  const p1 = await openPage(b.ctx);
  await openSession(p1, s.id);
  const p2 = await openPage(b.ctx);
  await openSession(p2, s.id);
  await enter(p1, 'echo from-one-$((5*5))');
  await waitText(p2, /^from-one-25$/m, 'page 1 typing seen in page 2');
  await enter(p2, 'echo from-two-$((6*6))');
  await waitText(p1, /^from-two-36$/m, 'page 2 typing seen in page 1');
  // a third page, read-only
  const p3 = await openPage(b.ctx);
  await openSession(p3, s.id, 'view');
  assert.match((await view(p3)).state, /read-only/);
  await waitText(p3, /^from-two-36$/m, 'the replay in the read-only view');
  await type(p3, 'echo ro-typed-x');
  await p3.keyboard.press('Enter');
  await enter(p1, 'echo marker-$((7*7))');
  await waitText(p3, /^marker-49$/m, 'live output in the read-only view');
  const out = await log(s.id);
  assert.ok(out.includes('marker-49'));
  assert.ok(!out.includes('ro-typed'), 'the read-only page\'s typing reached the session');
  const info = await api('GET', `/v1/sessions/${s.id}`);
  assert.equal(info.clients, 3);
  for (const p of [p1, p2, p3]) await p.close();
});

test('the replay\'s queries are not answered; live ones are', async () => {
  // ESC [ c asks the terminal who it is; cat -v shows any answer
  const s = await api('POST', '/v1/sessions', {
    command: "printf 'asked\\033[c\\n'; exec cat -v", pty: true, cols: 80, rows: 24,
  });
  await until(async () => (await log(s.id)).includes('asked'), 'the query in the ring');
  const page = await openPage(b.ctx);
  await openSession(page, s.id);
  await enter(page, 'typed-live');
  await waitText(page, /^typed-live$/m, 'the live echo');
  // an answer would be echoed by cat -v as ^[[?...c before the typed line
  assert.ok(!(await log(s.id)).includes('^[[?'), 'the replay was answered');
  assert.ok(!(await view(page)).text.includes('^[[?'));
  await page.close();
});

test('a one-off terminal on an exec stream, several tabs, signal and delete', async () => {
  const a = await api('POST', '/v1/sessions', { name: 'tab-a', command: 'echo in-tab-a; exec sleep 600', pty: true });
  const c = await api('POST', '/v1/sessions', { name: 'tab-c', command: 'echo in-tab-c; exec sleep 600', pty: true });
  const page = await openPage(b.ctx);
  await openSession(page, a.id);
  await waitText(page, /^in-tab-a$/m, 'tab a');
  await openSession(page, c.id);
  await waitText(page, /^in-tab-c$/m, 'tab c');
  assert.equal(await page.locator('#tabs .tab').count(), 2);
  await page.locator('#tabs .tab button:not(.x)').first().click();
  const v = await waitText(page, /^in-tab-a$/m, 'tab a again');
  assert.ok(!v.text.includes('in-tab-c'));
  // exec stream
  await page.fill('#exec input[name=command]', 'echo one-off-$((6*7)); tty');
  await page.click('#exec button[type=submit]');
  await waitText(page, /^one-off-42$/m, 'the exec stream\'s output');
  await waitText(page, /^\/dev\/pts\//m, 'a PTY for the exec stream');
  await until(async () => /^exited \(0\)$/.test((await view(page)).state), 'the exec stream\'s exit');
  assert.equal(await page.locator('#tabs .tab').count(), 3);
  // signal tab-a with TERM
  const row = page.locator(`#sessions tr[data-id="${a.id}"]`);
  await row.locator('select.signal').selectOption('TERM');
  await until(async () => (await api('GET', `/v1/sessions/${a.id}`)).state === 'exited', 'tab-a ended by TERM');
  assert.equal((await api('GET', `/v1/sessions/${a.id}`)).signal, 'TERM');
  await until(async () => /exited/.test(await row.locator('td:nth-child(2)').textContent()), 'the list showing the exit');
  // delete tab-c
  await page.locator(`#sessions tr[data-id="${c.id}"] button.delete`).click();
  await until(async () => !(await api('GET', '/v1/sessions')).sessions.some((x) => x.id === c.id), 'tab-c deleted');
  await page.locator(`#sessions tr[data-id="${c.id}"]`).waitFor({ state: 'detached', timeout: WAIT_MS });
  await page.close();
});

test('wrong token and a foreign origin are refused', async () => {
  const page = await b.ctx.newPage();
  await page.goto(PAGE + '#token=wrong-token-0123456789');
  await page.waitForSelector('#login:not([hidden])');
  assert.equal(await page.textContent('#login-error'), 'wrong token');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('lodge.token')), null);
  assert.equal(await page.isHidden('#app'), true);
  // a page of another origin, with the right token, cannot attach
  const s = await createShell();
  const foreign = 'http://foreign.example';
  await page.route(foreign + '/**', (r) => r.fulfill({ contentType: 'text/html', body: '<!DOCTYPE html><title>f</title>' }));
  await page.goto(foreign + '/');
  const ws = `${URL_.replace(/^http/, 'ws')}/v1/sessions/${s.id}/attach?access_token=${encodeURIComponent(TOKEN)}`;
  const tryWs = (u) => new Promise((resolve) => {
    const w = new WebSocket(u);
    w.onopen = () => {
      w.close();
      resolve('open');
    };
    w.onclose = () => resolve('refused');
  });
  assert.equal(await page.evaluate(tryWs, ws), 'refused');
  const rest = await page.evaluate(async (u) => {
    try {
      const r = await fetch(u, { method: 'POST', body: '{"signal":"KILL"}', mode: 'no-cors' });
      return r.type;
    } catch (e) {
      return 'failed';
    }
  }, `${URL_}/v1/sessions/${s.id}/signal?access_token=${encodeURIComponent(TOKEN)}`);
  assert.ok(rest === 'opaque' || rest === 'failed', rest);
  assert.equal((await api('GET', `/v1/sessions/${s.id}`)).state, 'running', 'a foreign page signalled the session');
  // the same WebSocket from the daemon's own page opens
  const own = await openPage(b.ctx);
  assert.equal(await own.evaluate(tryWs, ws), 'open');
  await own.close();
  await page.close();
});

test('a page left alone: the list\'s polls rewrite only what changed, the cursor does not blink', async () => {
  const s = await createShell();
  const page = await openPage(b.ctx);
  await openSession(page, s.id);
  await enter(page, 'echo quiet-$((6*7))');
  await waitText(page, /^quiet-42$/m, 'the echo');
  const row = `#sessions tr[data-id="${s.id}"]`;
  await until(async () => (await page.locator(`${row} td:nth-child(4)`).textContent()) === '1', 'one client in the list');
  // the age cell changes at every poll (a young session is counted in
  // seconds); the other cells stay as they are and must not be written
  const touched = await page.evaluate(async ([sel, polls, ms]) => {
    const tr = document.querySelector(sel);
    const cells = new Set();
    let ages = 0;
    const age = tr.cells[4];
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${ages} polls seen in ${ms} ms`)), ms);
      new MutationObserver((records) => {
        for (const r of records) {
          const td = (r.target.nodeType === Node.TEXT_NODE ? r.target.parentElement : r.target).closest('td');
          cells.add(td === null ? 'row' : td.cellIndex);
          if (td === age) ages++;
        }
        if (ages >= polls) {
          clearTimeout(timer);
          resolve([...cells].sort());
        }
      }).observe(tr, { subtree: true, childList: true, characterData: true, attributes: true });
    });
  }, [row, 3, WAIT_MS]);
  assert.deepEqual(touched, [4], 'cells written by polls that found them unchanged');
  // xterm.js's DOM renderer blinks with a CSS animation, started again at
  // every echo; the cursor is drawn focused and still
  const cursor = await page.evaluate(() => {
    const c = document.querySelector('.pane:not([hidden]) .xterm-rows .xterm-cursor');
    return c && { cls: c.className, animation: getComputedStyle(c).animationName };
  });
  assert.ok(cursor, 'a cursor on the screen');
  assert.match(cursor.cls, /xterm-cursor-block/, 'the terminal focused');
  assert.doesNotMatch(cursor.cls, /xterm-cursor-blink/);
  assert.equal(cursor.animation, 'none');
  await page.close();
  await api('DELETE', `/v1/sessions/${s.id}`);
});
