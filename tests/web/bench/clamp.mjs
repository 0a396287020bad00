// How long Chromium holds a zero-delay timer: scheduled from a timer's
// microtasks past the 5th nesting level (as xterm.js's next slice was when
// the page woke its output inside a write callback), and from a
// MessageChannel message (as it is now).  Prints each kind's count, minimum,
// median and how many waited under 3.9 ms:
//   cd tests/web/bench && npm ci && node clamp.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const dir = mkdtempSync(join(tmpdir(), 'lodge-clamp-'));
const ctx = await chromium.launchPersistentContext(dir, {
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox'],
});
try {
  const page = await ctx.newPage();
  await page.goto('about:blank');
  const r = await page.evaluate(async () => {
    /** n timers in a chain, each scheduled from the one before: the delays. */
    async function chain(n, fresh) {
      const d = [];
      await new Promise((done) => {
        let i = 0;
        const step = () => {
          const t = performance.now();
          setTimeout(() => {
            d.push(performance.now() - t);
            if (++i >= n) return done();
            if (!fresh) return void Promise.resolve().then(step);
            const c = new MessageChannel();
            c.port1.onmessage = step;
            c.port2.postMessage(null);
          });
        };
        step();
      });
      return d;
    }
    const nested = [];
    const fresh = [];
    for (let k = 0; k < 20; k++) {
      // past the 5th level only
      nested.push(...(await chain(20, false)).slice(6));
      fresh.push(...(await chain(20, true)).slice(6));
    }
    const sum = (a) => {
      a.sort((x, y) => x - y);
      return { n: a.length, min: a[0].toFixed(2), median: a[a.length >> 1].toFixed(2), under4: a.filter((x) => x < 3.9).length };
    };
    return { nested: sum(nested), message: sum(fresh) };
  });
  console.log(JSON.stringify(r));
} finally {
  await ctx.close();
  rmSync(dir, { recursive: true, force: true });
}
