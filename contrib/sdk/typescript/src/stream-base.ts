/**
 * What exec streams and attaches share: output to callbacks and the
 * iterator, the outbox, text helpers, and the settling of `done` only after
 * the last output callback returned.
 */
import { Connection, Outbox } from './connection.js';
import { ConnectionLostError, errorFor, type LodgeError } from './errors.js';
import { iterate, OutputQueue, textOf } from './output.js';
import type { Platform } from './platform/types.js';
import type { OutputChunk, StreamCallbacks, TextChunk } from './types.js';

const textEncoder = new TextEncoder();

/** Bytes of a write: a string is sent as its UTF-8 bytes. */
export function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? textEncoder.encode(data) : data;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

export abstract class StreamBase<Exit> implements AsyncIterable<OutputChunk> {
  /** Settles once the stream ended: its exit, or why it failed. */
  readonly done: Promise<Exit>;
  protected readonly queue = new OutputQueue();
  protected readonly outbox = new Outbox();
  protected conn: Connection | undefined;
  protected settled = false;
  private resolveDone!: (v: Exit) => void;
  private rejectDone!: (e: unknown) => void;

  protected constructor(
    protected readonly platform: Platform,
    protected readonly callbacks: StreamCallbacks,
  ) {
    this.done = new Promise<Exit>((res, rej) => {
      this.resolveDone = res;
      this.rejectDone = rej;
    });
    // A handle nobody awaits must not be an unhandled rejection.
    this.done.catch(() => {});
  }

  /** Send bytes (a string as UTF-8) to the process's stdin; split to the daemon's limit. */
  write(data: string | Uint8Array): Promise<void> {
    return this.outbox.stdin(toBytes(data));
  }

  /** Close the process's stdin once queued input is written (pipe mode; the protocol's eof). */
  end(): Promise<void> {
    return this.outbox.message({ type: 'eof' });
  }

  /** Alias of end(). */
  closeStdin(): Promise<void> {
    return this.end();
  }

  /** Set the PTY's size. */
  resize(cols: number, rows: number): Promise<void> {
    return this.outbox.message({ type: 'resize', cols, rows });
  }

  /** Send a signal by name (INT, SIGTERM, RTMIN+3) or number. */
  signal(name: string | number): Promise<void> {
    return this.outbox.message({ type: 'signal', signal: name });
  }

  /** Output chunks, in order, from the first message on; ends at the exit, throws if the stream failed. */
  [Symbol.asyncIterator](): AsyncIterableIterator<OutputChunk> {
    return iterate(this.queue);
  }

  /** Decoded text, one incremental UTF-8 decoder per stream. */
  text(): AsyncGenerator<TextChunk> {
    return textOf(this);
  }

  /** Output to callbacks and the iterator; a promise while the consumer needs time. */
  protected deliver(c: OutputChunk): void | Promise<void> {
    const cb = c.stream === 'stdout' ? this.callbacks.onStdout : this.callbacks.onStderr;
    const r = cb?.(c.data);
    let wait: Promise<void> | undefined = isThenable(r) ? Promise.resolve(r).then(() => {}) : undefined;
    if (this.queue.active && this.queue.push(c)) {
      const room = new Promise<void>((res) => (this.queue.onDrain = res));
      wait = wait ? Promise.all([wait, room]).then(() => {}) : room;
    }
    return wait;
  }

  /** A non-fatal error message. */
  protected reportError(code: string, message: string): void {
    this.callbacks.onError?.(errorFor(code, message));
  }

  protected succeed(v: Exit): void {
    if (this.settled) return;
    this.settled = true;
    this.outbox.fail(new ConnectionLostError('the stream has ended'));
    this.queue.finish();
    this.resolveDone(v);
  }

  protected failWith(e: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.outbox.fail(e);
    this.queue.fail(e);
    this.rejectDone(e);
  }

  /** Follow an AbortSignal: abort closes the connection and fails done with its reason. */
  protected watch(signal: AbortSignal | undefined): void {
    if (signal === undefined) return;
    const onAbort = (): void => {
      const reason: unknown = signal.reason;
      this.failWith(reason);
      this.conn?.terminate(reason as LodgeError);
    };
    if (signal.aborted) {
      queueMicrotask(onAbort);
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    void this.done.finally(() => signal.removeEventListener('abort', onAbort)).catch(() => {});
  }
}
