// The browser terminal beside WeTTY, in the same Chromium and the same run:
// keystroke-to-screen latency, output rendered per second, and the tail
// of output of a command that exits right after printing.  Run by
// tests/web/bench.sh under tests/sdk/with-lodged (LODGE_URL, LODGE_TOKEN).
//
// Every figure is taken by the same script in each page, on its xterm.js
// Terminal (lodge: window.lodge.active.view.term, WeTTY: window.wetty_term):
// input goes in through term.input(), as a key press does past xterm's
// keyboard handling, so each page's own onData handler sends it; a figure
// ends when xterm.js has parsed the awaited text (onWriteParsed, then the
// buffer is read) and, for "rendered", at the first onRender after that:
// the frame that put it on the screen.  Both pages use the DOM renderer
// (Chromium runs with WebGL off, so WeTTY's WebGL addon cannot load; the
// renderer found is printed) at the same terminal size.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { api, TOKEN, until, URL_ } from '../kit.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));

const args = process.argv.slice(2);
function opt(name, dflt) {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
}
const ROUNDS = opt('--rounds', 3);
const KEYS = opt('--keys', 400);
const TAIL_RUNS = opt('--tail-runs', 20);
const RATE_BYTES = opt('--rate-bytes', 20_000_000);
const COLS = 100;
const ROWS = 30;
const SHELL = 'bash --norc --noprofile';
const WAIT_MS = 60_000;
// A directory: each output figure also writes a CPU profile of the page's
// main thread there, and prints its writes, timers and CPU per MB by process.
const PROFILE = process.env.LODGE_WEB_BENCH_PROFILE;

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** WeTTY on a free loopback port running the shell itself (root, no SSH). */
async function startWetty() {
  const port = await freePort();
  const child = spawn(process.execPath, [join(HERE, 'node_modules/wetty/build/main.js'),
    '--host', '127.0.0.1', '--port', String(port), '--command', SHELL, '--log-level', 'warn'],
  { stdio: ['ignore', 'ignore', 'inherit'] });
  // gone with the bench, however it ends
  process.on('exit', () => child.kill('SIGTERM'));
  const url = `http://127.0.0.1:${port}/`;
  await until(() => fetch(url).then((r) => r.ok), 'WeTTY listening', 30_000);
  return { url, stop: () => child.kill('SIGTERM') };
}

// ---- the script run in each page, on its Terminal ----------------------

/** Installed in a page once its Terminal exists: window.__bench. */
function install(which) {
  // no eval: lodge's Content-Security-Policy forbids it
  const term = which === 'lodge' ? window.lodge.active.view.term : window.wetty_term;
  // What reaches the terminal: lodge's session skips what its ring no
  // longer held (the process never waits), WeTTY pauses the process.
  const write = term.write.bind(term);
  let written = 0;
  let writes = 0;
  term.write = (data, cb) => {
    written += data.length;
    writes++;
    write(data, cb);
  };
  // Profiling: how long each zero-delay timer waited (xterm.js parses in
  // slices, each after a setTimeout; Chromium holds timers nested 5 deep
  // 4 ms each)
  const timers = { n: 0, held: 0, waited: 0 };
  const setTimeout0 = window.setTimeout;
  if (window.__benchProfile) window.setTimeout = (fn, ms, ...rest) => {
    if (ms || typeof fn !== 'function') return setTimeout0(fn, ms, ...rest);
    const t = performance.now();
    return setTimeout0(() => {
      const w = performance.now() - t;
      timers.n++;
      timers.waited += w;
      if (w >= 4) timers.held++;
      fn();
    });
  };
  const waiters = new Set();
  term.onWriteParsed(() => {
    for (const w of [...waiters]) w.parsed();
  });
  term.onRender(() => {
    for (const w of [...waiters]) w.rendered();
  });
  /** Resolves {parsed, rendered} (ms since t0) once cond() holds after a parse. */
  function wait(cond, t0, ms) {
    return new Promise((resolve, reject) => {
      let parsed = -1;
      const w = {
        parsed() {
          if (parsed < 0 && cond()) parsed = performance.now() - t0;
        },
        rendered() {
          if (parsed >= 0) {
            waiters.delete(w);
            clearTimeout(timer);
            resolve({ parsed, rendered: performance.now() - t0 });
          }
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(w);
        const b = buf();
        reject(new Error(`timed out (parsed: ${parsed}, cursor ${b.cursorX},${b.cursorY}+${b.baseY}): ` +
          JSON.stringify(screen().join('\n').trimEnd().slice(-300))));
      }, ms);
      waiters.add(w);
    });
  }
  const buf = () => term.buffer.active;
  const cell = (x, y) => buf().getLine(y)?.getCell(x)?.getChars() ?? '';
  const screen = () => {
    const b = buf();
    const lines = [];
    for (let y = b.baseY; y < b.baseY + term.rows; y++) lines.push(b.getLine(y)?.translateToString(true) ?? '');
    return lines;
  };
  const renderer = () => (document.querySelector('.xterm-screen canvas') ? 'canvas/webgl' : 'dom');
  window.__bench = {
    term,
    renderer,
    size: () => [term.cols, term.rows],
    written: () => written,
    writes: () => writes,
    timers: () => ({ ...timers }),
    screen,
    /**
     * One keystroke per character, each timed to its echo on the screen.
     * A person's key comes at any moment of a frame: each is sent a delay
     * after the previous echo was drawn, spread over one frame (the same
     * sequence in both pages).  Sent right after a frame, every echo
     * parsed within the frame would be drawn one frame after its key,
     * whatever the time it took.
     */
    async keys(n) {
      const out = [];
      for (let i = 0; i < n; i++) {
        if (i % 40 === 0) {
          // back to column 0 (cat echoes the CR): the echoes stay on one line
          const t = performance.now();
          term.input('\r', true);
          await wait(() => buf().cursorX === 0, t, 10_000);
        }
        const ch = String.fromCharCode(97 + (i % 26));
        const x = buf().cursorX;
        const y = buf().baseY + buf().cursorY;
        // 0 to 16.6 ms, in steps of 0.1 (7919 is prime to 167); a timer
        // would be held 4 ms once nested, so the wait spins
        const until = performance.now() + ((i * 7919) % 167) / 10;
        while (performance.now() < until);
        const t0 = performance.now();
        term.input(ch, true);
        out.push(await wait(() => cell(x, y) === ch, t0, 10_000));
      }
      return out;
    },
    /** Type a command line, wait for its echo; then Enter, timed until marker is on the screen. */
    async run(line, marker, ms) {
      term.input(line, true);
      const tail = line.slice(-20);
      await wait(() => screen().some((l) => l.includes(tail)), performance.now(), 10_000);
      const t0 = performance.now();
      term.input('\r', true);
      return wait(() => screen().some((l) => l === marker), t0, ms);
    },
    /** Resolves once everything handed to the terminal so far is parsed. */
    flushed: () => new Promise((r) => term.write('', r)),
    text() {
      const b = buf();
      const lines = [];
      for (let y = 0; y < b.length; y++) lines.push(b.getLine(y)?.translateToString(true) ?? '');
      return lines.join('\n');
    },
  };
  term.resize(window.__benchCols, window.__benchRows);
  return renderer();
}

// ---- the two pages -----------------------------------------------------

/** The page's shell is up: the script installed, the terminal at COLS x ROWS. */
async function setup(page, which) {
  await until(() => page.evaluate((w) => {
    const t = w === 'lodge' ? window.lodge.active.view.term : window.wetty_term;
    const b = t.buffer.active;
    return /[#$] *$/.test(b.getLine(b.baseY + b.cursorY).translateToString(true));
  }, which), 'the shell prompt').catch(async (e) => {
    const text = await page.evaluate((w) => {
      const t = w === 'lodge' ? window.lodge.active.view.term : window.wetty_term;
      const b = t.buffer.active;
      const l = [];
      for (let y = 0; y < b.length; y++) l.push(b.getLine(y).translateToString(true));
      return JSON.stringify(l.join('\n').trimEnd()) + ` cursor ${b.cursorX},${b.cursorY}`;
    }, which).catch((x) => String(x));
    throw new Error(`${e.message}: the terminal holds ${text}`);
  });
  await page.evaluate(([c, r, p]) => {
    window.__benchCols = c;
    window.__benchRows = r;
    window.__benchProfile = p;
  }, [COLS, ROWS, Boolean(PROFILE)]);
  const renderer = await page.evaluate(install, which);
  await until(() => page.evaluate(([c, r]) => window.__bench.size().join('x') === `${c}x${r}`, [COLS, ROWS]), 'the size');
  return renderer;
}

/** lodge's page with the shell: a new PTY session (or an exec stream) open in a tab. */
async function lodgeTerminal(ctx, kind = 'session') {
  const page = await ctx.newPage();
  // the SDK on a plain WebSocket (no paused reading), to compare
  if (process.env.LODGE_WEB_BENCH_PLAIN_WS) await page.addInitScript(() => delete window.WebSocketStream);
  await page.goto(`${URL_}/ui/#token=${encodeURIComponent(TOKEN)}`);
  await page.waitForSelector('#app:not([hidden])', { timeout: WAIT_MS });
  let id;
  if (kind === 'session') {
    const s = await api('POST', '/v1/sessions', { command: 'exec ' + SHELL, pty: true, cols: COLS, rows: ROWS });
    id = s.id;
    await page.evaluate((ref) => window.lodge.open({ kind: 'session', ref, label: 'bench', readOnly: false }), id);
    await until(() => page.evaluate(() => window.lodge.active.view.el.querySelector('.state').textContent.startsWith('live')),
      'the session live');
  } else {
    await page.evaluate((command) => window.lodge.open({ kind: 'exec', command, label: 'bench' }), SHELL);
  }
  const renderer = await setup(page, 'lodge');
  return {
    page,
    renderer,
    ended: () => page.evaluate(() => window.lodge.active.view.ended),
    async close() {
      await page.close();
      if (id) await api('DELETE', `/v1/sessions/${id}`).catch(() => {});
    },
  };
}

async function wettyTerminal(ctx, wetty) {
  const page = await ctx.newPage();
  await page.goto(wetty.url);
  await until(() => page.evaluate(() => window.wetty_term !== undefined), 'WeTTY\'s terminal');
  const renderer = await setup(page, 'wetty');
  return {
    page,
    renderer,
    // WeTTY shows its overlay when the command has exited ("logout")
    ended: () => page.evaluate(() => getComputedStyle(document.getElementById('overlay')).display !== 'none'),
    close: () => page.close(),
  };
}

// ---- figures -----------------------------------------------------------

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function latency(t) {
  // READY is printed once the terminal is raw: every key after it reaches cat
  await t.page.evaluate(() => window.__bench.run("stty raw -echo; printf 'R%s\\n' EADY; exec cat", 'READY', 30_000));
  return t.page.evaluate((n) => window.__bench.keys(n), KEYS);
}

/** CPU ms so far (clock ticks of 10 ms) of the processes under the bench's parent, by kind. */
function cpuByKind() {
  const parent = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const mine = new Set([process.ppid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [p, q] of parent) if (!mine.has(p) && mine.has(q)) grew = mine.add(p) !== undefined;
  }
  const kinds = {};
  for (const p of mine) {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      const st = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      const ms = (Number(f[11]) + Number(f[12])) * 10;
      const comm = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      let k = comm;
      if (cmd.includes('--type=renderer')) k = 'renderer';
      else if (cmd.includes('--type=')) k = 'chromium ' + /--type=(\S+?)\0/.exec(cmd)?.[1];
      else if (comm === 'chromium') k = 'chromium browser';
      else if (cmd.includes('wetty')) k = 'wetty';
      else if (p === process.pid) k = 'bench';
      kinds[k] = (kinds[k] ?? 0) + ms;
    } catch {
      // gone meanwhile
    }
  }
  return kinds;
}

/** base64 of n bytes: its characters plus one newline per 76. */
function base64Size(n) {
  const chars = 4 * Math.ceil(n / 3);
  return chars + Math.ceil(chars / 76);
}

/**
 * The base64 of RATE_BYTES, timed from the Enter to DONE42 drawn; the rate
 * is of the bytes that reached the terminal (written counts the echo of
 * the command line too: under 200 bytes).
 */
async function rate(t, name) {
  const w0 = await t.page.evaluate(() => window.__bench.written());
  const n0 = await t.page.evaluate(() => window.__bench.writes());
  const z0 = await t.page.evaluate(() => window.__bench.timers());
  const c0 = PROFILE ? cpuByKind() : undefined;
  const cdp = PROFILE ? await t.page.context().newCDPSession(t.page) : undefined;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
  }
  const r = await t.page.evaluate(([n]) => window.__bench.run(`head -c ${n} /dev/urandom | base64; printf 'DONE%s\\n' 42`, 'DONE42', 300_000),
    [RATE_BYTES]);
  if (cdp) {
    const { profile } = await cdp.send('Profiler.stop');
    const f = join(PROFILE, `${name.replace(/ /g, '-')}-${Date.now()}.cpuprofile`);
    writeFileSync(f, JSON.stringify(profile));
    const w = (await t.page.evaluate(() => window.__bench.written())) - w0;
    const k = (await t.page.evaluate(() => window.__bench.writes())) - n0;
    const c1 = cpuByKind();
    const z1 = await t.page.evaluate(() => window.__bench.timers());
    const zn = z1.n - z0.n;
    process.stderr.write(`${name}: ${zn} zero-delay timers, ${(100 * (z1.held - z0.held) / zn).toFixed(0)} % of them held 4 ms or more, ` +
      `${((z1.waited - z0.waited) / zn).toFixed(2)} ms waited on average\n`);
    const per = Object.entries(c1).map(([x, v]) => [x, (v - (c0[x] ?? 0)) / (w / 1e6)]).filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1]).map(([x, v]) => `${x} ${v.toFixed(0)}`).join(', ');
    process.stderr.write(`${name}: ${k} writes of ${(w / k).toFixed(0)} B on average; CPU ms per MB drawn: ${per}; profile ${f}\n`);
    await cdp.detach();
  }
  const mb = Math.min(base64Size(RATE_BYTES), (await t.page.evaluate(() => window.__bench.written())) - w0) / 1e6;
  return { parsed: mb / (r.parsed / 1000), rendered: mb / (r.rendered / 1000), share: mb / (base64Size(RATE_BYTES) / 1e6),
    seconds: r.rendered / 1000 };
}

/** One run of `seq 1 100000; exit`: true when 100000 reached the screen. */
async function tail(t) {
  await t.page.evaluate(() => window.__bench.term.input('seq 1 100000; exit\r', true));
  await until(() => t.ended(), 'the shell\'s exit', WAIT_MS);
  // what arrived is parsed; then a generous 3 s for anything still on its way
  const end = Date.now() + 3000;
  for (;;) {
    await t.page.evaluate(() => window.__bench.flushed());
    if (await t.page.evaluate(() => /^100000$/m.test(window.__bench.text()))) return true;
    if (Date.now() > end) {
      const last = await t.page.evaluate(() => window.__bench.text().trimEnd().split('\n').slice(-2).join(' | ') +
        (window.lodge ? ` (received ${window.lodge.active.view.received}, state ${window.lodge.active.view.el.querySelector('.state').textContent})` : ''));
      process.stderr.write(`tail lost: the terminal ends with ${JSON.stringify(last)}\n`);
      return false;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---- the run -----------------------------------------------------------

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-webgl', '--disable-3d-apis', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows',
];

async function main() {
  const load0 = loadavg();
  const started = new Date();
  const wetty = await startWetty();
  const dir = mkdtempSync(join(tmpdir(), 'lodge-web-bench-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 800 },
  });
  const version = ctx.browser()?.version() ?? (await (await ctx.newPage()).evaluate(() => navigator.userAgent));
  const sides = {
    lodge: () => lodgeTerminal(ctx, 'session'),
    'lodge exec': () => lodgeTerminal(ctx, 'exec'),
    WeTTY: () => wettyTerminal(ctx, wetty),
  };
  const names = process.env.LODGE_WEB_BENCH_SIDES?.split(',') ?? Object.keys(sides);
  const res = Object.fromEntries(names.map((n) => [n, { keys: [], rates: [], tailLost: 0, tailRuns: 0, renderer: new Set(), size: '' }]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // interleaved, the order turned each round
      const order = round % 2 === 0 ? names : [...names].reverse();
      for (const name of order) {
        const r = res[name];
        let t = await sides[name]();
        r.renderer.add(t.renderer);
        r.size = (await t.page.evaluate(() => window.__bench.size())).join('x');
        r.rates.push(await rate(t, name));
        r.keys.push(...(await latency(t)));
        await t.close();
        const runs = Math.ceil(TAIL_RUNS / ROUNDS);
        for (let i = 0; i < runs && r.tailRuns < TAIL_RUNS; i++) {
          t = await sides[name]();
          if (!(await tail(t))) r.tailLost++;
          r.tailRuns++;
          await t.close();
        }
        const last = r.rates.at(-1);
        process.stderr.write(`round ${round + 1}/${ROUNDS}: ${name} done, output ${fmt(last.rendered)} MB/s (${fmt(100 * last.share)} % reached)\n`);
      }
    }
  } finally {
    await ctx.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    wetty.stop();
  }
  report(res, { started, load0, load1: loadavg(), version });
}

function fmt(x) {
  if (x >= 100) return x.toFixed(0);
  if (x >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

function report(res, { started, load0, load1, version }) {
  const L = res.lodge;
  const W = res.WeTTY;
  const E = res['lodge exec'];
  const med = (xs) => quantile(xs, 0.5);
  const rows = [];
  // lower is better for latency, higher for rates; ratio = lodge / WeTTY
  for (const [what, key] of [['rendered', 'rendered'], ['parsed', 'parsed']]) {
    for (const [q, qn] of [[0.5, 'p50'], [0.99, 'p99']]) {
      const l = quantile(L.keys.map((k) => k[key]), q);
      const w = quantile(W.keys.map((k) => k[key]), q);
      const e = quantile(E.keys.map((k) => k[key]), q);
      rows.push([`keystroke to screen ${qn} (${what})`, 'ms', l, w, e, l / w, '<= 1.0x', l <= w]);
    }
  }
  for (const [what, key] of [['rendered', 'rendered'], ['parsed', 'parsed']]) {
    const l = med(L.rates.map((r) => r[key]));
    const w = med(W.rates.map((r) => r[key]));
    const e = med(E.rates.map((r) => r[key]));
    rows.push([`output per second, median (${what})`, 'MB/s', l, w, e, l / w, '>= 1.0x', l >= w]);
  }
  {
    const [l, w, e] = [L, W, E].map((x) => med(x.rates.map((r) => 100 * r.share)));
    rows.push(['output that reached the terminal', '%', l, w, e, null, '-', null]);
    const [ls, ws, es] = [L, W, E].map((x) => med(x.rates.map((r) => r.seconds)));
    rows.push([`the command's end drawn (${fmt(base64Size(RATE_BYTES) / 1e6)} MB)`, 's', ls, ws, es, ls / ws, '-', null]);
  }
  rows.push([`tail lost (seq 1 100000; exit)`, 'runs', L.tailLost, W.tailLost, E.tailLost, null, '0 lost', L.tailLost === 0]);
  const out = [];
  out.push(`lodge web bench  ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`);
  out.push(`machine: ${cpus().length} CPUs, ${cpus()[0]?.model ?? '?'}; Chromium ${version}`);
  out.push(`load average (1/5/15 min): ${load0} at start, ${load1} at end`);
  out.push(`${ROUNDS} interleaved rounds; ${L.keys.length} keystrokes, ${L.rates.length} x ${fmt(base64Size(RATE_BYTES) / 1e6)} MB of base64, ` +
    `${L.tailRuns} tail runs per side; renderer: lodge ${[...L.renderer]}, WeTTY ${[...W.renderer]}; ` +
    `terminal ${L.size} (lodge), ${W.size} (WeTTY)`);
  out.push('ratio = lodge / WeTTY; "lodge" is a session attach, "lodge exec" a one-off terminal on an exec stream (context)');
  out.push('');
  const head = ['figure', 'unit', 'lodge', 'WeTTY', 'ratio', 'target', 'met', 'lodge exec'];
  const body = rows.map(([f, u, l, w, e, ratio, target, met]) => [f, u,
    u === 'runs' ? `${l}/${L.tailRuns}` : fmt(l), u === 'runs' ? `${w}/${W.tailRuns}` : fmt(w),
    ratio === null ? '-' : fmt(ratio), target, met === null ? '-' : met ? 'yes' : 'NO', u === 'runs' ? `${e}/${E.tailRuns}` : fmt(e)]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  for (const r of [head, ...body]) out.push(r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
  const text = out.join('\n') + '\n';
  process.stdout.write(text);
  if (process.env.LODGE_WEB_BENCH_OUT) writeFileSync(process.env.LODGE_WEB_BENCH_OUT, text);
}

await main();
