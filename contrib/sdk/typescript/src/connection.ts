/**
 * One WebSocket to lodged, and the outbox of what a handle sends on it.
 *
 * Messages are handled one at a time, in order: a handler that returns a
 * promise (an async output callback, a full iterator queue) pauses reading
 * until it settles, and the end of the connection is reported only after
 * the last message was handled.  The outbox keeps the order of writes and
 * control messages, splits stdin to the daemon's message limit when it
 * sends, and holds everything until the connection is ready.
 */
import { ClientTimeoutError, ConnectionLostError, LodgeError, ProtocolError } from './errors.js';
import type { Endpoint, Platform, Socket } from './platform/types.js';
import {
  type ClientMessage,
  DEFAULT_MAX_MESSAGE_BYTES,
  encodeMessage,
  encodeStdin,
  MAX_SERVER_MESSAGE_BYTES,
  MessageDecoder,
  STDIN_OVERHEAD,
  type ServerMessage,
} from './protocol.js';

export interface ConnectionHooks {
  /** A message; a returned promise pauses reading until it settles. */
  message(m: ServerMessage): void | Promise<void>;
  open?(): void;
  /** The end, once every message was handled; err when it failed. */
  end(code: number, err?: LodgeError): void;
}

export class Connection {
  private readonly socket: Socket;
  private readonly decoder = new MessageDecoder();
  private readonly backlog: Uint8Array[] = [];
  private busy = false;
  private ending: { code: number; err?: LodgeError | undefined } | undefined;
  private closed = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private failure: LodgeError | undefined;
  isOpen = false;

  constructor(
    platform: Platform,
    ep: Endpoint,
    path: string,
    private readonly hooks: ConnectionHooks,
    connectTimeoutMs: number,
  ) {
    this.timer = setTimeout(() => {
      this.failure = new ClientTimeoutError(`no WebSocket to lodged within ${connectTimeoutMs} ms`);
      this.socket.terminate();
    }, connectTimeoutMs);
    this.socket = platform.openSocket(ep, {
      path,
      maxMessageBytes: MAX_SERVER_MESSAGE_BYTES * 4,
      events: {
        open: () => {
          clearTimeout(this.timer);
          this.isOpen = true;
          this.hooks.open?.();
        },
        message: (data) => this.onFrame(data),
        close: (code, err) => {
          clearTimeout(this.timer);
          this.isOpen = false;
          this.closed = true;
          let e: LodgeError | undefined = this.failure;
          if (e === undefined && err !== undefined)
            e = err instanceof LodgeError ? err : new ConnectionLostError(err.message, { cause: err });
          this.ending = { code, err: e };
          if (!this.busy) this.finish();
        },
      },
    });
  }

  private onFrame(data: Uint8Array): void {
    if (this.failure !== undefined) return;
    if (this.busy) {
      this.backlog.push(data);
      return;
    }
    this.handle(data);
  }

  private handle(data: Uint8Array): void {
    let r: void | Promise<void>;
    try {
      r = this.hooks.message(this.decoder.decode(data));
    } catch (e) {
      this.fail(e);
      return;
    }
    if (r !== undefined) this.wait(r);
  }

  private wait(p: Promise<void>): void {
    this.busy = true;
    this.socket.pause(true);
    p.then(
      () => this.resume(),
      (e: unknown) => {
        this.busy = false;
        this.fail(e);
        this.resume();
      },
    );
  }

  private resume(): void {
    this.busy = false;
    while (!this.busy && this.backlog.length > 0 && this.failure === undefined) this.handle(this.backlog.shift()!);
    if (this.busy) return;
    this.backlog.length = 0;
    if (this.ending !== undefined) this.finish();
    else this.socket.pause(false);
  }

  private finish(): void {
    const e = this.ending!;
    this.ending = undefined;
    this.hooks.end(e.code, this.failure ?? e.err);
  }

  /** Fail the connection: a handler threw, or lodged broke the protocol. */
  fail(e: unknown): void {
    if (this.failure !== undefined) return;
    this.failure =
      e instanceof LodgeError ? e : e instanceof Error ? new ProtocolError(e.message) : new ProtocolError(String(e));
    if (!(e instanceof LodgeError) && e instanceof Error) (this.failure as { cause?: unknown }).cause = e;
    this.socket.terminate();
  }

  send(data: Uint8Array): Promise<void> {
    return this.socket.send(data);
  }

  close(code = 1000): void {
    if (!this.closed) this.socket.close(code);
  }

  /** Drop the connection now (an abort). */
  terminate(err?: LodgeError): void {
    if (err !== undefined && this.failure === undefined) this.failure = err;
    this.socket.terminate();
  }
}

type OutItem =
  | { kind: 'stdin'; data: Uint8Array; pos: number; done?: Settle }
  | { kind: 'msg'; msg: ClientMessage; done?: Settle };

interface Settle {
  resolve(): void;
  reject(e: unknown): void;
}

/** The handle's queue of messages to send, kept across reconnects. */
export class Outbox {
  private readonly items: OutItem[] = [];
  private conn: Connection | undefined;
  private pumping = false;
  private failure: unknown;
  maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;

  /** Start sending on conn (null: hold everything). */
  attach(conn: Connection | undefined): void {
    this.conn = conn;
    void this.pump();
  }

  /** Fail everything queued, and all that is queued later, with err. */
  fail(err: unknown): void {
    this.failure ??= err;
    this.conn = undefined;
    for (const it of this.items.splice(0)) it.done?.reject(err);
  }

  /** Queue stdin bytes; resolves once they were all handed to the connection. */
  stdin(data: Uint8Array): Promise<void> {
    return this.add({ kind: 'stdin', data, pos: 0 });
  }

  message(msg: ClientMessage): Promise<void> {
    return this.add({ kind: 'msg', msg });
  }

  private add(it: OutItem): Promise<void> {
    const p = new Promise<void>((resolve, reject) => {
      if (this.failure !== undefined) {
        reject(this.failure);
        return;
      }
      it.done = { resolve, reject };
      this.items.push(it);
      void this.pump();
    });
    // Seed code writes without awaiting: its failure shows in done too.
    p.catch(() => {});
    return p;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.items.length > 0 && this.conn !== undefined) {
        const conn = this.conn;
        const it = this.items[0]!;
        let frame: Uint8Array;
        let last = true;
        if (it.kind === 'stdin') {
          const room = Math.max(1, this.maxMessageBytes - STDIN_OVERHEAD);
          const end = Math.min(it.data.length, it.pos + room);
          frame = encodeStdin(it.data.subarray(it.pos, end));
          last = end >= it.data.length;
          try {
            await conn.send(frame);
          } catch {
            // the connection went; the item stays, for the next one
            if (this.conn === conn) this.conn = undefined;
            return;
          }
          it.pos = end;
        } else {
          frame = encodeMessage(it.msg);
          try {
            await conn.send(frame);
          } catch {
            if (this.conn === conn) this.conn = undefined;
            return;
          }
        }
        if (last && this.items[0] === it) {
          this.items.shift();
          it.done?.resolve();
        }
      }
    } finally {
      this.pumping = false;
    }
  }
}
