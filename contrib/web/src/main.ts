/**
 * lodged's browser terminal: the token, the session list, tabs of
 * terminals.
 *
 * The token is asked once and kept in sessionStorage (this tab only); a
 * #token= fragment pre-fills it and is taken out of the address at once.
 * Fragments never reach a server, and the token travels only as a header
 * on REST calls and as access_token on the WebSocket upgrade (the SDK's).
 */
import { connect, UnauthorizedError, type Sandbox, type SessionInfo } from '@lodge/sdk';
import { commandOf, label, SessionList } from './sessions.js';
import { TermView, type Source } from './terminal.js';

const TOKEN_KEY = 'lodge.token';

function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`the page lacks #${id}`);
  return e;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The token from the fragment (then removed from the address) or the tab's storage. */
function initialToken(): string | null {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (m !== null) {
    history.replaceState(null, '', location.pathname + location.search);
    const t = decodeURIComponent(m[1] ?? '');
    if (t !== '') return t;
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

interface Tab {
  view: TermView;
  button: HTMLElement;
}

class App {
  readonly tabs: Tab[] = [];
  active: Tab | undefined;
  readonly list: SessionList;
  private readonly status = $('status');

  constructor(readonly sandbox: Sandbox) {
    this.list = new SessionList(sandbox, $('sessions').querySelector('tbody')!, $('no-sessions'), {
      open: (s, ro) => this.openSession(s, ro),
      failed: (e) => this.failed(e),
      reached: () => this.setStatus(''),
    });
    $('create').addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.create(ev.target as HTMLFormElement);
    });
    $('exec').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const f = new FormData(ev.target as HTMLFormElement);
      const command = String(f.get('command') ?? '');
      this.open({ kind: 'exec', command, label: `$ ${command}` });
    });
    $('logout').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      location.reload();
    });
    window.addEventListener('resize', () => this.active?.view.fitNow());
    this.list.start();
  }

  private setStatus(s: string, bad = false): void {
    this.status.textContent = s;
    this.status.classList.toggle('bad', bad);
  }

  private failed(e: unknown): void {
    if (e instanceof UnauthorizedError) {
      sessionStorage.removeItem(TOKEN_KEY);
      this.list.stop();
      showLogin('the token was refused');
      return;
    }
    this.setStatus(`lodged: ${message(e)}`, true);
  }

  private async create(form: HTMLFormElement): Promise<void> {
    const f = new FormData(form);
    const err = $('create-error');
    err.textContent = '';
    const name = String(f.get('name') ?? '').trim();
    try {
      const s = await this.sandbox.createSession({
        command: String(f.get('command') ?? ''),
        ...(name !== '' ? { name } : {}),
        pty: f.get('pty') !== null,
        cols: Number(f.get('cols')),
        rows: Number(f.get('rows')),
      });
      await this.list.refresh();
      this.openSession(s, false);
    } catch (e) {
      err.textContent = message(e);
    }
  }

  openSession(s: SessionInfo, readOnly: boolean): void {
    this.open({ kind: 'session', ref: s.id, label: `${label(s)}: ${commandOf(s)}`, readOnly });
  }

  open(source: Source): TermView {
    $('empty').hidden = true;
    const view = new TermView(this.sandbox, $('panes'), source);
    const b = document.createElement('span');
    b.className = 'tab';
    const name = document.createElement('button');
    name.type = 'button';
    name.textContent = source.label.length > 24 ? source.label.slice(0, 23) + '…' : source.label;
    name.title = source.label;
    const x = document.createElement('button');
    x.type = 'button';
    x.className = 'x';
    x.textContent = '×';
    x.title = source.kind === 'exec' ? 'close (ends the command)' : 'close (the session goes on)';
    b.append(name, x);
    $('tabs').append(b);
    const tab: Tab = { view, button: b };
    this.tabs.push(tab);
    name.addEventListener('click', () => this.activate(tab));
    x.addEventListener('click', () => this.close(tab));
    this.activate(tab);
    return view;
  }

  activate(tab: Tab): void {
    this.active = tab;
    for (const t of this.tabs) {
      t.button.classList.toggle('active', t === tab);
      t.view.show(t === tab);
    }
  }

  close(tab: Tab): void {
    const i = this.tabs.indexOf(tab);
    if (i < 0) return;
    this.tabs.splice(i, 1);
    tab.view.close();
    tab.button.remove();
    if (this.active === tab) {
      const next = this.tabs[Math.min(i, this.tabs.length - 1)];
      this.active = undefined;
      if (next !== undefined) this.activate(next);
      else $('empty').hidden = false;
    }
  }
}

declare global {
  interface Window {
    /** The running page, for its tests. */
    lodge?: App;
  }
}

function showLogin(error = ''): void {
  $('app').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = error;
  ($('token') as HTMLInputElement).focus();
}

async function start(token: string): Promise<void> {
  const err = $('login-error');
  try {
    const sandbox = await connect({ url: location.origin, token, requestTimeoutMs: 10000 });
    sessionStorage.setItem(TOKEN_KEY, token);
    $('login').hidden = true;
    $('app').hidden = false;
    window.lodge = new App(sandbox);
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(e instanceof UnauthorizedError ? 'wrong token' : message(e));
    err.dataset['failed'] = '1';
  }
}

$('login-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = $('token') as HTMLInputElement;
  const t = input.value.trim();
  input.value = '';
  void start(t);
});

const token = initialToken();
if (token !== null) void start(token);
else showLogin();
