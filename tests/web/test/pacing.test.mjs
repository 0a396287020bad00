// The pacing of output in the page: where paused output is woken.  A file
// of its own, so that its time does not add to the stress tests' budget.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { browser, createShell, openSession, PAGE, TOKEN, WAIT_MS } from '../kit.mjs';

let b;
before(async () => {
  b = await browser();
});
after(async () => {
  await b?.close();
});

test('output paused for the terminal is woken in a task of its own, not inside xterm.js\'s parsing', async () => {
  // xterm.js parses in timer tasks; woken there, the page would hand over
  // the next output in that task and xterm.js's next timer would nest in
  // it, and Chromium holds timers nested 5 deep 4 ms each.  Marked here:
  // code run in a timer's task, its microtasks included.
  const page = await b.ctx.newPage();
  await page.addInitScript(() => {
    const setTimeout0 = window.setTimeout;
    window.inTimer = false;
    window.setTimeout = (fn, ms, ...rest) => typeof fn !== 'function' ? setTimeout0(fn, ms, ...rest) :
      setTimeout0(() => {
        window.inTimer = true;
        try {
          fn();
        } finally {
          // queued behind what fn queued: runs once the task's microtasks did
          queueMicrotask(() => (window.inTimer = false));
        }
      }, ms, ...rest);
  });
  await page.goto(PAGE + '#token=' + encodeURIComponent(TOKEN));
  await page.waitForSelector('#app:not([hidden])', { timeout: WAIT_MS });
  const s = await createShell();
  await openSession(page, s.id);
  const woken = await page.evaluate(async () => {
    const t = window.lodge.active.view;
    const out = [];
    for (let i = 0; i < 3; i++) {
      const p = t.output(new Uint8Array(768 * 1024).fill(0x2e));
      if (p === undefined) return { waited: false };
      await p;
      out.push({ inTimer: window.inTimer, pending: t.pending });
    }
    return { waited: true, out };
  });
  assert.ok(woken.waited, 'output past the high water did not wait for the terminal');
  for (const w of woken.out) {
    assert.equal(w.inTimer, false, 'woken inside a timer\'s task');
    assert.ok(w.pending <= 128 * 1024, `woken with ${w.pending} bytes still unparsed`);
  }
  await page.close();
});
