/**
 * The platform seam in a browser: its own WebSocket and fetch.  A browser
 * cannot set header fields on a WebSocket, so the token travels as the
 * access_token query parameter there (lodge-protocol(7), AUTHENTICATION).
 * Where the browser has WebSocketStream, reading pauses for real (a slow
 * consumer leaves the bytes in the kernel and lodged reports a gap if the
 * ring moves on); a plain WebSocket cannot pause, and output not yet taken
 * is then queued in memory.
 */
import { ConnectionLostError } from '../errors.js';
import type {
  Bytes,
  Endpoint,
  HttpRequest,
  HttpResponse,
  Platform,
  Socket,
  SocketOptions,
} from './types.js';

const utf8 = new TextDecoder();

/** Output bytes in a browser: toString() decodes them as UTF-8. */
export class LodgeBytes extends Uint8Array {
  override toString(): string {
    return utf8.decode(this);
  }
}

function defaultEndpoint(): Endpoint {
  const loc = (globalThis as { location?: { origin?: string } }).location;
  return { url: loc?.origin };
}

async function request(ep: Endpoint, req: HttpRequest): Promise<HttpResponse> {
  if (ep.url === undefined) throw new Error('lodge: no URL to reach lodged');
  const res = await fetch(ep.url + req.path, {
    method: req.method,
    headers: req.headers,
    body: req.body as Uint8Array<ArrayBuffer> | undefined,
    signal: req.signal,
  });
  const body = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, header: (n) => res.headers.get(n), body };
}

/** The little of WebSocketStream used here (not yet in TypeScript's DOM library). */
interface WebSocketStreamLike {
  readonly opened: Promise<{
    readable: ReadableStream<ArrayBuffer | string>;
    writable: WritableStream<Uint8Array>;
  }>;
  readonly closed: Promise<{ closeCode?: number; reason?: string }>;
  close(info?: { closeCode?: number; reason?: string }): void;
}
type WebSocketStreamCtor = new (url: string) => WebSocketStreamLike;

const upgradeFailed = (): Error =>
  new ConnectionLostError('the WebSocket upgrade failed (the browser does not say why)');

/** A socket on WebSocketStream: read one message at a time, and only while not paused. */
function openStream(Ctor: WebSocketStreamCtor, url: string, opts: SocketOptions): Socket {
  const ev = opts.events;
  const wss = new Ctor(url);
  const text = new TextEncoder();
  let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  let paused = false;
  let wake: (() => void) | undefined;
  const run = async (): Promise<void> => {
    let streams;
    try {
      streams = await wss.opened;
    } catch {
      ev.close(1006, upgradeFailed());
      return;
    }
    writer = streams.writable.getWriter();
    ev.open();
    const reader = streams.readable.getReader();
    try {
      for (;;) {
        while (paused) await new Promise<void>((r) => (wake = r));
        const { value, done } = await reader.read();
        if (done) break;
        ev.message(typeof value === 'string' ? text.encode(value) : new Uint8Array(value));
      }
    } catch {
      // a reset: the close below says how it ended
    }
    let code = 1006;
    try {
      code = (await wss.closed).closeCode ?? 1005;
    } catch {
      // closed abnormally
    }
    ev.close(code);
  };
  void run();
  return {
    send: async (data) => {
      if (writer === undefined) throw new ConnectionLostError('the WebSocket is not open');
      await writer.write(data);
    },
    pause: (p) => {
      paused = p;
      if (!p) {
        const w = wake;
        wake = undefined;
        w?.();
      }
    },
    close: (code) => wss.close({ closeCode: code ?? 1000 }),
    terminate: () => wss.close(),
  };
}

function openSocket(ep: Endpoint, opts: SocketOptions): Socket {
  if (ep.url === undefined) throw new Error('lodge: no URL to reach lodged');
  let url = ep.url.replace(/^http/, 'ws') + opts.path;
  if (ep.token !== undefined)
    url += (opts.path.includes('?') ? '&' : '?') + 'access_token=' + encodeURIComponent(ep.token);
  const Stream = (globalThis as { WebSocketStream?: WebSocketStreamCtor }).WebSocketStream;
  if (Stream !== undefined) return openStream(Stream, url, opts);
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  const ev = opts.events;
  let opened = false;
  ws.onopen = () => {
    opened = true;
    ev.open();
  };
  ws.onmessage = (m: MessageEvent) => {
    if (m.data instanceof ArrayBuffer) ev.message(new Uint8Array(m.data));
    else ev.message(new TextEncoder().encode(String(m.data)));
  };
  ws.onclose = (c: CloseEvent) =>
    ev.close(c.code, opened ? undefined : upgradeFailed());
  return {
    send: async (data) => {
      ws.send(data);
      // No drain event in a browser: let its send buffer empty a little.
      while (ws.bufferedAmount > 4 * 1024 * 1024 && ws.readyState === WebSocket.OPEN)
        await new Promise((r) => setTimeout(r, 5));
    },
    pause: () => {},
    close: (code) => ws.close(code ?? 1000),
    terminate: () => ws.close(),
  };
}

function bytes(data: Uint8Array): Bytes {
  return new LodgeBytes(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
}

export const platform: Platform = { defaultEndpoint, request, openSocket, bytes };
