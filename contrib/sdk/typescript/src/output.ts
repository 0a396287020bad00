/**
 * Output delivery: callbacks, and an async iterator whose queue is bounded
 * (past highWaterMark bytes the stream stops reading, so a slow consumer
 * slows the command, never fills memory).  Text helpers decode with one
 * incremental UTF-8 decoder per stream.
 */
import type { OutputChunk, TextChunk } from './types.js';

const HIGH_WATER_MARK = 1024 * 1024;

/** An incremental UTF-8 decoder: a character split across chunks is kept whole. */
export class Utf8Stream {
  private readonly decoder = new TextDecoder('utf-8');

  /** The text of chunk, less any incomplete character at its end (kept for the next). */
  decode(chunk: Uint8Array): string {
    return this.decoder.decode(chunk, { stream: true });
  }

  /** What is left at the end of the stream (U+FFFD for a cut-off character). */
  flush(): string {
    return this.decoder.decode();
  }
}

/**
 * The iterator side of a stream: queued chunks, the end, and the waiters.
 * The owner calls push (which says whether the queue is over its mark),
 * finish or fail; onDrain tells the owner when to read again.
 */
export class OutputQueue {
  private readonly chunks: OutputChunk[] = [];
  private head = 0;
  private bytes = 0;
  private ended = false;
  private failure: unknown = undefined;
  private waiter: (() => void) | undefined;
  /** Set while the owner waits for room. */
  onDrain: (() => void) | undefined;
  /** Whether an iterator was asked for: output is queued only then. */
  active = false;

  /** Queue a chunk; true if the queue is now over its mark. */
  push(c: OutputChunk): boolean {
    this.chunks.push(c);
    this.bytes += c.data.length;
    this.wake();
    return this.bytes > HIGH_WATER_MARK;
  }

  finish(): void {
    this.ended = true;
    this.wake();
  }

  fail(err: unknown): void {
    if (this.ended) return;
    this.failure = err;
    this.ended = true;
    this.wake();
  }

  get full(): boolean {
    return this.bytes > HIGH_WATER_MARK;
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  async next(): Promise<IteratorResult<OutputChunk>> {
    for (;;) {
      if (this.head < this.chunks.length) {
        const c = this.chunks[this.head++]!;
        if (this.head > 1024 && this.head * 2 > this.chunks.length) {
          this.chunks.splice(0, this.head);
          this.head = 0;
        }
        this.bytes -= c.data.length;
        if (this.onDrain !== undefined && this.bytes <= HIGH_WATER_MARK / 2) {
          const d = this.onDrain;
          this.onDrain = undefined;
          d();
        }
        return { value: c, done: false };
      }
      if (this.ended) {
        if (this.failure !== undefined) {
          const f = this.failure;
          this.failure = undefined;
          throw f;
        }
        return { value: undefined, done: true };
      }
      await new Promise<void>((r) => (this.waiter = r));
    }
  }

  /** The consumer stopped iterating: queue nothing more, let the stream run. */
  stop(): void {
    this.active = false;
    this.chunks.length = 0;
    this.head = 0;
    this.bytes = 0;
    const d = this.onDrain;
    this.onDrain = undefined;
    d?.();
  }
}

/** An AsyncIterableIterator over a queue, made active by asking for it. */
export function iterate(q: OutputQueue): AsyncIterableIterator<OutputChunk> {
  q.active = true;
  const it: AsyncIterableIterator<OutputChunk> = {
    next: () => q.next(),
    return: () => {
      q.stop();
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]: () => it,
  };
  return it;
}

/** Text of an iterator of chunks, one incremental decoder per stream. */
export async function* textOf(chunks: AsyncIterable<OutputChunk>): AsyncGenerator<TextChunk> {
  const dec = { stdout: new Utf8Stream(), stderr: new Utf8Stream() };
  for await (const c of chunks) {
    const text = dec[c.stream].decode(c.data);
    if (text !== '') yield { stream: c.stream, text };
  }
  for (const stream of ['stdout', 'stderr'] as const) {
    const text = dec[stream].flush();
    if (text !== '') yield { stream, text };
  }
}
