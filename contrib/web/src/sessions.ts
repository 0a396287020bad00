/**
 * The list of sessions, kept current by polling GET /v1/sessions, with
 * what can be done to each: open, view read-only, signal, delete.  Rows
 * are kept per session id and updated in place, so a signal being chosen
 * is not reset by the next poll, and only the cells that changed are
 * written.
 */
import type { Sandbox, SessionInfo } from '@lodge/sdk';

export const POLL_MS = 2000;
const SIGNALS = ['INT', 'TERM', 'HUP', 'KILL', 'WINCH'];

export interface SessionActions {
  open(s: SessionInfo, readOnly: boolean): void;
  failed(e: unknown): void;
  reached(): void;
}

export function label(s: SessionInfo): string {
  return s.name ?? s.id.slice(0, 8);
}

export function commandOf(s: SessionInfo): string {
  return s.command ?? (s.args ?? []).join(' ');
}

function age(createdAt: string, now: number): string {
  const t = Math.max(0, Math.floor((now - Date.parse(createdAt)) / 1000));
  if (t < 60) return `${t}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m`;
  if (t < 86400) return `${Math.floor(t / 3600)}h`;
  return `${Math.floor(t / 86400)}d`;
}

/** Only what changed is written: a poll that found the list as it was
 * gives the page nothing to lay out again. */
function setText(e: HTMLElement, text: string): void {
  if (e.textContent !== text) e.textContent = text;
}

function button(text: string, cls: string, title: string, act: () => void): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = cls;
  b.textContent = text;
  b.title = title;
  b.addEventListener('click', act);
  return b;
}

export class SessionList {
  private readonly rows = new Map<string, { tr: HTMLTableRowElement; cells: HTMLTableCellElement[] }>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  sessions: SessionInfo[] = [];

  constructor(
    private readonly sandbox: Sandbox,
    private readonly body: HTMLTableSectionElement,
    private readonly empty: HTMLElement,
    private readonly acts: SessionActions,
  ) {}

  /** Poll now, then every POLL_MS. */
  start(): void {
    void this.refresh();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  async refresh(): Promise<void> {
    clearTimeout(this.timer);
    try {
      this.sessions = await this.sandbox.listSessions({ requestTimeoutMs: 5000 });
      this.render();
      this.acts.reached();
    } catch (e) {
      this.acts.failed(e);
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.refresh(), POLL_MS);
  }

  private render(): void {
    const now = Date.now();
    const seen = new Set<string>();
    for (const s of this.sessions) {
      seen.add(s.id);
      let row = this.rows.get(s.id);
      if (row === undefined) {
        row = this.row(s);
        this.rows.set(s.id, row);
        this.body.append(row.tr);
      }
      const [name, state, cmd, clients, when] = row.cells;
      setText(name!, label(s));
      setText(state!, s.state === 'exited' ? `exited ${s.signal ?? s.exitCode ?? ''}` : s.state);
      if (state!.className !== `state-${s.state}`) state!.className = `state-${s.state}`;
      setText(cmd!, commandOf(s));
      if (cmd!.title !== commandOf(s)) cmd!.title = commandOf(s);
      setText(clients!, String(s.clients));
      setText(when!, age(s.createdAt, now));
    }
    for (const [id, row] of this.rows)
      if (!seen.has(id)) {
        row.tr.remove();
        this.rows.delete(id);
      }
    this.empty.hidden = this.sessions.length > 0;
  }

  private row(s: SessionInfo): { tr: HTMLTableRowElement; cells: HTMLTableCellElement[] } {
    const tr = document.createElement('tr');
    tr.dataset['id'] = s.id;
    const cells = [0, 1, 2, 3, 4].map(() => document.createElement('td'));
    cells[2]!.className = 'cmd';
    const acts = document.createElement('td');
    acts.className = 'acts';
    const sig = document.createElement('select');
    sig.className = 'signal';
    sig.title = 'send a signal';
    sig.append(new Option('signal…', ''));
    for (const n of SIGNALS) sig.append(new Option(n, n));
    const id = s.id;
    sig.addEventListener('change', () => {
      const name = sig.value;
      sig.value = '';
      if (name !== '')
        void this.sandbox.signalSession(id, name).then(() => this.refresh(), (e: unknown) => this.acts.failed(e));
    });
    const current = (): SessionInfo => this.sessions.find((x) => x.id === id) ?? s;
    acts.append(
      button('open', 'open', 'open in a tab', () => this.acts.open(current(), false)),
      button('view', 'view', 'watch, read-only', () => this.acts.open(current(), true)),
      sig,
      button('delete', 'delete', 'end it and forget it', () =>
        void this.sandbox.deleteSession(id).then(() => this.refresh(), (e: unknown) => this.acts.failed(e)),
      ),
    );
    tr.append(...cells, acts);
    return { tr, cells };
  }
}
