/**
 * A session attach (GET /v1/sessions/{ref}/attach), resumed by offset.
 *
 * The handle tracks the offset of the next byte it needs.  When its
 * connection is lost before the session's exit, it reconnects by itself
 * with since= that offset, with a bounded backoff (attempts in a row
 * without progress are bounded too), and drops whatever a
 * replay repeats, so every byte is delivered exactly once.  What the ring no
 * longer held is reported as a gap (onGap), or fails the attach with a
 * GapError in strict mode.  `live` says where the first replay ends.
 */
import { Connection } from './connection.js';
import { ConnectionLostError, GapError, type LodgeError } from './errors.js';
import type { Endpoint, Platform } from './platform/types.js';
import type { ServerMessage } from './protocol.js';
import { StreamBase } from './stream-base.js';
import type { AttachExit, AttachOptions, SessionInfo } from './types.js';

/** Codes after which reconnecting cannot help. */
const FINAL = new Set(['bad_request', 'unauthorized', 'forbidden', 'not_found', 'method_not_allowed']);

export class SessionAttach extends StreamBase<AttachExit> {
  /** Resolves with the session object of the first attached message. */
  readonly attached: Promise<SessionInfo>;
  /** Resolves when the replay is over and output is live. */
  readonly live: Promise<void>;
  private resolveAttached!: (s: SessionInfo) => void;
  private rejectAttached!: (e: unknown) => void;
  private resolveLive!: () => void;
  private next: number | undefined;
  private exit: AttachExit | undefined;
  private isLive = false;
  private detached = false;
  private attempts = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly maxAttempts: number;
  private readonly initialDelay: number;
  private readonly maxDelay: number;

  /** @internal Use Sandbox.attachSession. */
  constructor(
    platform: Platform,
    private readonly ep: Endpoint,
    private readonly ref: string,
    private readonly opts: AttachOptions,
    private readonly connectTimeoutMs: number,
  ) {
    super(platform, opts);
    this.attached = new Promise((res, rej) => {
      this.resolveAttached = res;
      this.rejectAttached = rej;
    });
    this.attached.catch(() => {});
    this.live = new Promise((res) => (this.resolveLive = res));
    const r = opts.resume === false ? undefined : opts.resume === true ? {} : (opts.resume ?? {});
    this.maxAttempts = r === undefined ? 0 : (r.maxAttempts ?? 20);
    this.initialDelay = r?.initialDelayMs ?? 100;
    this.maxDelay = r?.maxDelayMs ?? 2000;
    this.next = opts.since;
    this.open();
    this.watch(opts.signal);
  }

  /** The offset of the next output byte this handle needs. */
  get nextOffset(): number | undefined {
    return this.next;
  }

  /** Whether the replay is over. */
  get isReplayOver(): boolean {
    return this.isLive;
  }

  /** Leave the session running: close the connection; done resolves with detached: true. */
  detach(): void {
    if (this.settled) return;
    this.detached = true;
    clearTimeout(this.retryTimer);
    this.succeed({ code: null, signal: null, detached: true });
    this.conn?.close();
  }

  private path(): string {
    const q: string[] = [];
    const o = this.opts;
    if (o.cols !== undefined) q.push(`cols=${o.cols}`);
    if (o.rows !== undefined) q.push(`rows=${o.rows}`);
    if (this.next !== undefined) q.push(`since=${this.next}`);
    if (o.readOnly) q.push('readOnly=1');
    if (o.pace) q.push('pace=1');
    return `/v1/sessions/${encodeURIComponent(this.ref)}/attach${q.length ? '?' + q.join('&') : ''}`;
  }

  private open(): void {
    const conn: Connection = new Connection(
      this.platform,
      this.ep,
      this.path(),
      {
        message: (m) => this.onMessage(conn, m),
        end: (code, err) => this.onEnd(conn, code, err),
      },
      this.connectTimeoutMs,
    );
    this.conn = conn;
  }

  private onMessage(conn: Connection, m: ServerMessage): void | Promise<void> {
    switch (m.type) {
      case 'stdout':
      case 'stderr': {
        let data = m.data;
        let offset = m.offset;
        if (this.next !== undefined && offset > this.next) {
          // output skipped without a gap message: report it all the same
          const gap = this.gap(conn, this.next, offset);
          if (gap) return;
        }
        if (this.next !== undefined && offset < this.next) {
          // a replay repeats what came before the reconnect
          const skip = this.next - offset;
          if (skip >= data.length) return;
          data = data.subarray(skip);
          offset = this.next;
        }
        this.next = offset + data.length;
        this.attempts = 0; // progress: a fresh budget of reconnects
        return this.deliver({ stream: m.type, data: this.platform.bytes(data), offset });
      }
      case 'attached':
        if (m.limits) this.outbox.maxMessageBytes = m.limits.maxMessageBytes;
        // no since: the replay starts where the ring does
        if (this.next === undefined) this.next = m.replayFrom;
        this.outbox.attach(conn);
        this.resolveAttached(m.session);
        return;
      case 'gap':
        this.gap(conn, m.from, m.to);
        return;
      case 'live':
        this.attempts = 0;
        if (!this.isLive) {
          this.isLive = true;
          this.resolveLive();
          this.opts.onLive?.();
        }
        return;
      case 'exit':
        this.exit = { code: m.exitCode, signal: m.signal };
        return;
      case 'error':
        this.reportError(m.code, m.message);
        return;
      default:
        return;
    }
  }

  /** Output from..to is lost: an event, or the end in strict mode (true). */
  private gap(conn: Connection, from: number, to: number): boolean {
    if (this.opts.strict) {
      conn.terminate(new GapError(from, to));
      return true;
    }
    this.next = Math.max(this.next ?? 0, to);
    this.attempts = 0;
    this.opts.onGap?.({ from, to });
    return false;
  }

  private onEnd(conn: Connection, code: number, err: LodgeError | undefined): void {
    if (conn !== this.conn) return;
    this.outbox.attach(undefined);
    if (this.settled) return;
    if (this.exit !== undefined) {
      this.callbacks.onExit?.(this.exit);
      this.succeed(this.exit);
      return;
    }
    if (this.detached) return;
    const final = err !== undefined && (FINAL.has(err.code) || err instanceof GapError || err.code === 'protocol');
    if (final || this.attempts >= this.maxAttempts) {
      const e =
        err ?? new ConnectionLostError(`the attach's connection closed (${code}) before the session's exit`);
      this.rejectAttached(e);
      this.failWith(e);
      return;
    }
    const delay = Math.min(this.maxDelay, this.initialDelay * 2 ** this.attempts);
    this.attempts++;
    this.retryTimer = setTimeout(() => {
      if (this.settled) return;
      this.open();
      this.opts.onReconnect?.(this.next ?? 0);
    }, delay);
  }
}

