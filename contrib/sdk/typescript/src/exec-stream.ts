/**
 * An exec stream (GET /v1/exec/stream): one command on a WebSocket, its
 * output live, stdin, signals and resize.  It cannot resume: the daemon
 * kills the command when the connection drops, so a lost connection fails
 * `done` with ConnectionLostError, never an exit code.
 */
import { Connection } from './connection.js';
import { ConnectionLostError, errorFor } from './errors.js';
import type { Endpoint, Platform } from './platform/types.js';
import { encodeStart, type ServerMessage } from './protocol.js';
import { StreamBase } from './stream-base.js';
import type { ExecStreamOptions, ExitInfo } from './types.js';

export class ExecStream extends StreamBase<ExitInfo> {
  /** Resolves with the command's pid once it started. */
  readonly started: Promise<{ pid: number }>;
  private resolveStarted!: (v: { pid: number }) => void;
  private rejectStarted!: (e: unknown) => void;
  private exit: ExitInfo | undefined;
  private isStarted = false;
  private pid_: number | undefined;

  /** @internal Use Sandbox.execStream. */
  constructor(platform: Platform, ep: Endpoint, opts: ExecStreamOptions, connectTimeoutMs: number) {
    super(platform, opts);
    this.started = new Promise((res, rej) => {
      this.resolveStarted = res;
      this.rejectStarted = rej;
    });
    this.started.catch(() => {});
    const start = startMessage(opts);
    this.conn = new Connection(
      platform,
      ep,
      '/v1/exec/stream',
      {
        open: () => {
          // start goes first, ahead of anything queued
          this.conn!.send(start).catch(() => {});
        },
        message: (m) => this.onMessage(m),
        end: (code, err) => this.onEnd(code, err),
      },
      connectTimeoutMs,
    );
    this.watch(opts.signal);
  }

  /** The command's pid, once started. */
  get pid(): number | undefined {
    return this.pid_;
  }

  private onMessage(m: ServerMessage): void | Promise<void> {
    switch (m.type) {
      case 'stdout':
      case 'stderr':
        return this.deliver({ stream: m.type, data: this.platform.bytes(m.data), offset: m.offset });
      case 'started':
        this.isStarted = true;
        this.pid_ = m.pid;
        if (m.limits) this.outbox.maxMessageBytes = m.limits.maxMessageBytes;
        this.outbox.attach(this.conn);
        this.resolveStarted({ pid: m.pid });
        return;
      case 'exit':
        this.exit = { code: m.exitCode, signal: m.signal, timedOut: m.timedOut ?? false };
        // clientCloses: the daemon waits for this close, so nothing the
        // socket still held before the exit is cut off by the daemon's
        this.conn?.close();
        return;
      case 'error':
        if (!this.isStarted) {
          // a start that failed: the daemon closes after it
          const e = errorFor(m.code, m.message);
          this.failWith(e);
          this.rejectStarted(e);
          this.conn?.close();
          return;
        }
        this.reportError(m.code, m.message);
        return;
      default:
        return;
    }
  }

  private onEnd(code: number, err: Error | undefined): void {
    if (this.exit !== undefined) {
      this.callbacks.onExit?.(this.exit);
      this.succeed(this.exit);
      return;
    }
    const e =
      err ?? new ConnectionLostError(`the exec stream's connection closed (${code}) before the command's exit`);
    this.rejectStarted(e);
    this.failWith(e);
  }

  /** Close the connection: the daemon then kills the command (SIGHUP, then SIGKILL). */
  close(): void {
    this.conn?.close();
  }
}

/** The start message of the options, seed spellings mapped to the protocol's. */
export function startMessage(o: ExecStreamOptions): Uint8Array {
  return encodeStart({
    command: o.command,
    args: o.args,
    workDir: o.workDir ?? o.workdir,
    env: o.env,
    user: o.user,
    timeoutSeconds: o.timeoutSeconds,
    tty: o.tty,
    cols: o.cols,
    rows: o.rows,
    clientCloses: true,
  });
}
