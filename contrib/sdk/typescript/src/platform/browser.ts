/**
 * The platform seam in a browser: its own WebSocket and fetch.  A browser
 * cannot set header fields on a WebSocket, so the token travels as the
 * access_token query parameter there (lodge-protocol(7), AUTHENTICATION).
 * A browser's WebSocket cannot pause reading: output not yet taken by an
 * iterator is queued in memory.
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

function openSocket(ep: Endpoint, opts: SocketOptions): Socket {
  if (ep.url === undefined) throw new Error('lodge: no URL to reach lodged');
  let url = ep.url.replace(/^http/, 'ws') + opts.path;
  if (ep.token !== undefined)
    url += (opts.path.includes('?') ? '&' : '?') + 'access_token=' + encodeURIComponent(ep.token);
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
    ev.close(
      c.code,
      opened ? undefined : new ConnectionLostError('the WebSocket upgrade failed (the browser does not say why)'),
    );
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
