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

/** The page with a new shell session open in its tab. */
async function openShell(page) {
  await page.goto(PAGE + '#token=' + encodeURIComponent(TOKEN));
  await page.waitForSelector('#app:not([hidden])', { timeout: WAIT_MS });
  const s = await createShell();
  await openSession(page, s.id);
}

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
  await openShell(page);
  const woken = await page.evaluate(async () => {
    const t = window.lodge.active.view;
    const out = [];
    for (let i = 0; i < 3; i++) {
      const p = t.output(new Uint8Array(2560 * 1024).fill(0x2e));
      if (p === undefined) return { waited: false };
      await p;
      out.push({ inTimer: window.inTimer, pending: t.pending });
    }
    return { waited: true, out };
  });
  assert.ok(woken.waited, 'output past the high water did not wait for the terminal');
  for (const w of woken.out) {
    assert.equal(w.inTimer, false, 'woken inside a timer\'s task');
    assert.ok(w.pending <= 1024 * 1024, `woken with ${w.pending} bytes still unparsed`);
  }
  await page.close();
});

test('the terminal is handed up to 2 MiB before the output waits, and woken with 1 MiB of it left', async () => {
  // Paused past 512 KiB and woken with 128 KiB left (a few ms of
  // parsing), xterm.js sat idle at times while the next output came
  // through the browser's network process.  Handed 256 KiB at a time.
  const page = await b.ctx.newPage();
  await openShell(page);
  const r = await page.evaluate(async () => {
    const t = window.lodge.active.view;
    await new Promise((res) => t.term.write('', res));
    let handed = 0;
    for (;;) {
      const p = t.output(new Uint8Array(256 * 1024).fill(0x2e));
      handed += 256 * 1024;
      if (p !== undefined) {
        await p;
        return { handed, pending: t.pending };
      }
      if (handed > 64 * 1024 * 1024) return { handed, pending: -1 };
    }
  });
  assert.ok(r.pending >= 0, 'the output never waited for the terminal');
  assert.ok(r.handed >= 2048 * 1024, `the output waited after ${r.handed} bytes`);
  assert.ok(r.handed <= 2048 * 1024 + 256 * 1024, `the output waited only after ${r.handed} bytes`);
  assert.ok(r.pending <= 1024 * 1024, `woken with ${r.pending} bytes still unparsed`);
  await page.close();
});

test('a terminal keeps xterm.js\'s default 1,000 lines of scrollback', async () => {
  // Until the scrollback is full, xterm.js allocates every new line and
  // moves its scrollbar (a timer set and cleared) at each one: with 5,000
  // lines, a fresh tab drew the first 400 KB of a flood at a fraction of
  // its later speed, while the session's ring moved on.
  const page = await b.ctx.newPage();
  await openShell(page);
  const r = await page.evaluate(async () => {
    const t = window.lodge.active.view;
    const lines = Array.from({ length: 3000 }, (_, i) => `scroll-${i}\r\n`).join('');
    await new Promise((res) => t.term.write(lines, res));
    const b = t.term.buffer.active;
    return { length: b.length, rows: t.term.rows, first: b.getLine(0).translateToString(true) };
  });
  assert.equal(r.length, 1000 + r.rows, `the buffer holds ${r.length} lines`);
  assert.match(r.first, /^scroll-\d+$/);
  await page.close();
});
