/**
 * The client: connect() and the Sandbox it resolves, with the seed surface
 * (exec, execStream, createSession, attachSession, sessionLog) and the rest
 * of the API (list, get, delete, signal, input, resize, wait, health).
 */
import { SessionAttach } from './attach.js';
import { ClientTimeoutError, errorFromReply, ProtocolError } from './errors.js';
import { ExecStream } from './exec-stream.js';
import { platform } from '#platform';
import type { Endpoint } from './platform/types.js';
import type {
  AttachOptions,
  Bytes,
  ClientOptions,
  CreateSessionOptions,
  ExecOptions,
  ExecResult,
  ExecStreamOptions,
  ExitInfo,
  Health,
  RequestOptions,
  SessionInfo,
  SessionLog,
} from './types.js';

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

const utf8 = new TextEncoder();

function base64Encode(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}

function base64Decode(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Copy only the fields that are set, so a strict daemon sees no undefined ones. */
function pick<T extends object>(o: T, keys: readonly (keyof T)[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) out[k as string] = o[k];
  return out;
}

const RUN_FIELDS = ['command', 'args', 'workDir', 'env', 'user'] as const;

/** A connection to one lodged.  Cheap: REST calls share keep-alive connections. */
export class Sandbox {
  private readonly ep: Endpoint;
  private readonly connectTimeoutMs: number;
  private readonly requestTimeoutMs: number;

  constructor(options: ClientOptions = {}) {
    const env = platform.defaultEndpoint();
    if (options.url !== undefined) this.ep = { url: options.url.replace(/\/+$/, ''), token: options.token ?? env.token };
    else if (options.socketPath !== undefined) this.ep = { socketPath: options.socketPath, token: options.token };
    else this.ep = { ...env, url: env.url?.replace(/\/+$/, ''), token: options.token ?? env.token };
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** Where this client reaches lodged: a URL, or a Unix socket's path. */
  get endpoint(): string {
    return this.ep.url ?? `unix:${this.ep.socketPath ?? ''}`;
  }

  private async call(
    method: string,
    path: string,
    body: unknown,
    opts: RequestOptions | undefined,
    timeoutMs: number | undefined,
  ): Promise<{ status: number; body: Uint8Array; header(n: string): string | null }> {
    const headers: Record<string, string> = {};
    if (this.ep.token !== undefined && this.ep.url !== undefined) headers['authorization'] = `Bearer ${this.ep.token}`;
    let data: Uint8Array | undefined;
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      data = utf8.encode(JSON.stringify(body));
    }
    const limit = opts?.requestTimeoutMs ?? timeoutMs;
    const timeout = limit !== undefined ? AbortSignal.timeout(limit) : undefined;
    const signals = [opts?.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    opts?.signal?.throwIfAborted();
    let res;
    try {
      res = await platform.request(this.ep, { method, path, headers, body: data, signal });
    } catch (e) {
      if (timeout?.aborted && !opts?.signal?.aborted)
        throw new ClientTimeoutError(`${method} ${path}: no reply within ${limit} ms`);
      if (opts?.signal?.aborted) throw opts.signal.reason;
      throw e;
    }
    if (res.status < 200 || res.status > 299) throw errorFromReply(res.status, res.body);
    return res;
  }

  private async json<T>(method: string, path: string, body?: unknown, opts?: RequestOptions): Promise<T> {
    const res = await this.call(method, path, body, opts, this.requestTimeoutMs);
    return parseJson<T>(res.body);
  }

  private sessionPath(ref: string, tail = ''): string {
    return `/v1/sessions/${encodeURIComponent(ref)}${tail}`;
  }

  /** GET /v1/health. */
  health(opts?: RequestOptions): Promise<Health> {
    return this.json<Health>('GET', '/v1/health', undefined, opts);
  }

  /**
   * Run a command to completion, its output buffered (POST /v1/exec).  A
   * command that cannot start rejects with SpawnFailedError, never an exit
   * code.  No client timeout unless requestTimeoutMs is given: the command's
   * own limit is timeoutSeconds, enforced by the daemon.
   */
  async exec(options: ExecOptions | string): Promise<ExecResult> {
    const o: ExecOptions = typeof options === 'string' ? { command: options } : options;
    const body = pick(o, [...RUN_FIELDS, 'timeoutSeconds', 'stdin', 'encoding', 'maxOutputBytes']);
    const res = await this.call('POST', '/v1/exec', body, o, undefined);
    const r = parseJson<ExecResult>(res.body);
    if (o.encoding === 'base64') {
      r.stdoutBytes = platform.bytes(base64Decode(r.stdout));
      r.stderrBytes = platform.bytes(base64Decode(r.stderr));
    }
    return r;
  }

  /**
   * Start a command on a WebSocket, its output live (GET /v1/exec/stream).
   * Returns at once; the handle queues writes until the command started.
   */
  execStream(options: ExecStreamOptions): ExecStream {
    return new ExecStream(platform, this.ep, options, this.connectTimeoutMs);
  }

  /** Start a session (POST /v1/sessions); resolves once its process started. */
  createSession(options: CreateSessionOptions = {}): Promise<SessionInfo> {
    const body = pick(options, [...RUN_FIELDS, 'name', 'pty', 'cols', 'rows', 'bufferSize']);
    return this.json<SessionInfo>('POST', '/v1/sessions', body, options);
  }

  /** Every session, running and exited (GET /v1/sessions). */
  async listSessions(opts?: RequestOptions): Promise<SessionInfo[]> {
    return (await this.json<{ sessions: SessionInfo[] }>('GET', '/v1/sessions', undefined, opts)).sessions;
  }

  /** One session by id or name, current (GET /v1/sessions/{ref}). */
  getSession(ref: string, opts?: RequestOptions): Promise<SessionInfo> {
    return this.json<SessionInfo>('GET', this.sessionPath(ref), undefined, opts);
  }

  /** End a session's process group and forget it; resolves once it is gone. */
  async deleteSession(ref: string, opts?: RequestOptions): Promise<void> {
    await this.call('DELETE', this.sessionPath(ref), undefined, opts, this.requestTimeoutMs);
  }

  /** Send a signal to a session, without attaching. */
  async signalSession(ref: string, signal: string | number, opts?: RequestOptions): Promise<void> {
    await this.call('POST', this.sessionPath(ref, '/signal'), { signal }, opts, this.requestTimeoutMs);
  }

  /** Queue input for a session, without attaching (a string as UTF-8; bytes as base64 on the wire). */
  async sendInput(ref: string, data: string | Uint8Array, opts?: RequestOptions): Promise<void> {
    const body = typeof data === 'string' ? { data } : { dataBase64: base64Encode(data) };
    await this.call('POST', this.sessionPath(ref, '/input'), body, opts, this.requestTimeoutMs);
  }

  /** Resize a PTY session, without attaching. */
  async resizeSession(ref: string, cols: number, rows: number, opts?: RequestOptions): Promise<void> {
    await this.call('POST', this.sessionPath(ref, '/resize'), { cols, rows }, opts, this.requestTimeoutMs);
  }

  /** The bytes held in a session's ring, from since (default: the oldest held), with their offsets. */
  async readSessionLog(ref: string, opts: RequestOptions & { since?: number } = {}): Promise<SessionLog> {
    const q = opts.since !== undefined ? `?since=${opts.since}` : '';
    const res = await this.call('GET', this.sessionPath(ref, '/log' + q), undefined, opts, this.requestTimeoutMs);
    const start = Number(res.header('lodge-log-start'));
    const end = Number(res.header('lodge-log-end'));
    if (!Number.isInteger(start) || !Number.isInteger(end)) throw new ProtocolError('a log reply without its offsets');
    return { data: platform.bytes(res.body), start, end };
  }

  /** A session's buffered output (.toString() gives the text). */
  async sessionLog(ref: string, opts?: RequestOptions & { since?: number }): Promise<Bytes> {
    return (await this.readSessionLog(ref, opts)).data;
  }

  /**
   * Attach to a session: replay, then live output; input, resize and
   * signals.  Returns at once; resumes by itself after a lost connection.
   */
  attachSession(ref: string, options: AttachOptions = {}): SessionAttach {
    return new SessionAttach(platform, this.ep, ref, options, this.connectTimeoutMs);
  }

  /**
   * Wait for a session's exit: a read-only attach that replays nothing and
   * waits for the exit message.
   */
  async waitSession(ref: string, opts: { signal?: AbortSignal } = {}): Promise<ExitInfo> {
    const a = this.attachSession(ref, { readOnly: true, since: Number.MAX_SAFE_INTEGER, ...opts });
    const exit = await a.done;
    return { code: exit.code, signal: exit.signal };
  }
}

function parseJson<T>(body: Uint8Array): T {
  try {
    return JSON.parse(new TextDecoder().decode(body)) as T;
  } catch {
    throw new ProtocolError('a reply that is not JSON');
  }
}

/**
 * Connect to lodged: LODGE_URL and LODGE_TOKEN by default, else (in Node)
 * the Unix socket $LODGE_RUNDIR/lodged.sock or /run/lodge/lodged.sock.
 * Checks GET /v1/health unless options.check is false.
 */
export async function connect(options: ClientOptions = {}): Promise<Sandbox> {
  const s = new Sandbox(options);
  if (options.check !== false) await s.health();
  return s;
}
