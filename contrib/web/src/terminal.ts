/**
 * One terminal: xterm.js on a session attach or an exec stream.
 *
 * Output is paced by xterm's write callbacks: past HIGH_WATER bytes handed
 * to the terminal and not yet parsed, the output callback returns a promise
 * that settles below LOW_WATER, and the SDK stops reading the socket until
 * then.  A session tab that may type attaches with pace, so lodged holds
 * the process back for it while it is the fastest client; a read-only tab
 * is sent a gap when the ring moved on meanwhile (the session's other
 * clients never wait for either).  A session's replay is parsed with
 * the terminal's answers to queries dropped: they answered the past.
 */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import type { ExecStream, Sandbox, SessionAttach } from '@lodge/sdk';

// The output handed to xterm.js and not yet parsed: reading pauses past
// HIGH_WATER and goes on below LOW_WATER, which leaves the parser enough
// to chew on while the next output comes through the browser's network
// process (128 KiB, a few ms of parsing, left it idle at times)
const HIGH_WATER = 2048 * 1024;
const LOW_WATER = 1024 * 1024;
const RESUME_ATTEMPTS = 120;
export const SCROLLBACK = 1000;

export type Source =
  | { kind: 'session'; ref: string; label: string; readOnly: boolean }
  | { kind: 'exec'; command: string; label: string };

function element<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text = ''): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  e.textContent = text;
  return e;
}

export class TermView {
  readonly el: HTMLElement;
  readonly term: Terminal;
  private readonly fit = new FitAddon();
  private readonly stateEl: HTMLElement;
  private readonly noteEl: HTMLElement;
  private readonly termEl: HTMLElement;
  private handle: SessionAttach | ExecStream | undefined;
  private pending = 0;
  private drained: (() => void) | undefined;
  /** Where a write callback posts the wake: a message is a task of its own. */
  private readonly waker = new MessageChannel();
  private waking = false;
  private replaying: boolean;
  private resizeTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly observer: ResizeObserver;
  /** Output bytes handed to the terminal so far. */
  received = 0;
  /** Gaps reported: output the ring no longer held. */
  gaps = 0;
  reconnects = 0;
  /** Times the output waited for the terminal to catch up. */
  pauses = 0;
  ended = false;

  constructor(
    private readonly sandbox: Sandbox,
    parent: HTMLElement,
    readonly source: Source,
  ) {
    this.el = element('div', 'pane');
    const bar = element('div', 'bar');
    bar.append(element('span', 'title', source.label + (source.kind === 'session' && source.readOnly ? ' (read-only)' : '')));
    this.stateEl = element('span', 'state', 'connecting');
    this.noteEl = element('span', 'note');
    bar.append(this.stateEl, this.noteEl);
    this.termEl = element('div', 'term');
    this.el.append(bar, this.termEl);
    parent.append(this.el);
    this.replaying = source.kind === 'session';
    this.waker.port1.onmessage = () => {
      this.waking = false;
      const wake = this.drained;
      this.drained = undefined;
      wake?.();
    };
    this.term = new Terminal({
      convertEol: false,
      // xterm.js's default, as in WeTTY: until the scrollback is full
      // every new line allocates a line and moves the scrollbar (a timer
      // set and cleared per line), which made a fresh tab's first 5,000
      // lines of a flood a tenth of a session tab's output figure
      scrollback: SCROLLBACK,
      // xterm.js's default, as in WeTTY: a blinking cursor is a CSS
      // animation in the DOM renderer, started again at every echo
      cursorBlink: false,
      disableStdin: source.kind === 'session' && source.readOnly,
      fontFamily: 'monospace',
      theme: { background: '#000000' },
    });
    this.term.loadAddon(this.fit);
    this.term.open(this.termEl);
    this.fitNow();
    this.term.onData((d) => this.input(d));
    this.term.onBinary((d) => this.input(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
    this.term.onResize(({ cols, rows }) => this.resized(cols, rows));
    this.observer = new ResizeObserver(() => this.fitNow());
    this.observer.observe(this.termEl);
    this.start();
  }

  private start(): void {
    const s = this.source;
    const cols = this.term.cols;
    const rows = this.term.rows;
    const onStdout = (d: Uint8Array): Promise<void> | undefined => this.output(d);
    if (s.kind === 'exec') {
      const h = this.sandbox.execStream({ command: s.command, tty: true, cols, rows, onStdout, onStderr: onStdout });
      this.handle = h;
      this.state('running');
      h.done.then(
        (e) => this.finish(`exited (${e.signal ?? e.code})`),
        (e: unknown) => this.finish(`failed: ${String((e as Error).message ?? e)}`),
      );
      return;
    }
    const h = this.sandbox.attachSession(s.ref, {
      // A tab that may type is the session's terminal: it paces the process
      // (a viewer never does), so a flood is drawn whole, not skipped.
      ...(s.readOnly ? { readOnly: true } : { cols, rows, pace: true }),
      // a tab waits minutes for lodged to come back, not seconds
      resume: { maxAttempts: RESUME_ATTEMPTS, maxDelayMs: 3000 },
      onStdout,
      onStderr: onStdout,
      onLive: () => {
        this.state(s.readOnly ? 'live, read-only' : 'live');
        // Answers to queries in the replay are dropped until it is parsed.
        this.term.write('', () => (this.replaying = false));
      },
      onGap: ({ from, to }) => {
        this.gaps++;
        this.note(`${to - from} bytes of output were lost: the session's ring no longer held them`);
      },
      onReconnect: (next) => {
        this.reconnects++;
        this.state(`reconnected at offset ${next}`);
      },
      onError: (e) => this.note(e.message),
    });
    this.handle = h;
    h.attached.then(
      () => this.state('replaying'),
      () => {},
    );
    h.done.then(
      (e) => this.finish(e.detached ? 'detached' : `exited (${e.signal ?? e.code})`),
      (e: unknown) => this.finish(`closed: ${String((e as Error).message ?? e)}`),
    );
  }

  private output(d: Uint8Array): Promise<void> | undefined {
    const n = d.length;
    this.pending += n;
    this.received += n;
    this.term.write(d, () => {
      this.pending -= n;
      if (this.drained !== undefined && this.pending <= LOW_WATER && !this.waking) {
        this.waking = true;
        this.waker.port2.postMessage(null);
      }
    });
    if (this.pending <= HIGH_WATER) return undefined;
    this.pauses++;
    return new Promise((r) => (this.drained = r));
  }

  private input(d: string | Uint8Array): void {
    if (this.replaying || this.ended || this.handle === undefined) return;
    if (this.source.kind === 'session' && this.source.readOnly) return;
    void this.handle.write(d).catch(() => {});
  }

  private resized(cols: number, rows: number): void {
    if (this.source.kind === 'session' && this.source.readOnly) return;
    clearTimeout(this.resizeTimer);
    this.resizeTimer = setTimeout(() => void this.handle?.resize(cols, rows).catch(() => {}), 50);
  }

  /** Fit the terminal to its box, when it is shown. */
  fitNow(): void {
    if (this.el.hidden || this.termEl.clientWidth === 0) return;
    try {
      this.fit.fit();
    } catch {
      // not laid out yet
    }
  }

  private state(s: string): void {
    this.stateEl.textContent = s;
  }

  private note(s: string): void {
    this.noteEl.textContent = s;
  }

  private finish(s: string): void {
    this.ended = true;
    this.state(s);
  }

  show(on: boolean): void {
    this.el.hidden = !on;
    if (on) {
      this.fitNow();
      this.term.focus();
    }
  }

  /** The text on the terminal's buffer (scrollback and screen), lines trimmed. */
  text(): string {
    const b = this.term.buffer.active;
    const lines: string[] = [];
    for (let i = 0; i < b.length; i++) lines.push(b.getLine(i)?.translateToString(true) ?? '');
    return lines.join('\n');
  }

  /** Close the tab: a session is left running, an exec stream ends. */
  close(): void {
    this.observer.disconnect();
    this.waker.port1.close();
    const h = this.handle;
    if (h !== undefined && 'detach' in h) h.detach();
    else h?.close();
    this.term.dispose();
    this.el.remove();
  }
}
