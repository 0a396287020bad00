/**
 * The platform seam in Node: `ws` for WebSockets, `node:http` with a
 * keep-alive agent for REST calls (it also speaks to a Unix socket, which
 * fetch cannot), Buffer for output bytes.
 */
import * as http from 'node:http';
import * as path from 'node:path';
import WebSocket from 'ws';

import { errorFromReply } from '../errors.js';
import type {
  Bytes,
  Endpoint,
  HttpRequest,
  HttpResponse,
  Platform,
  Socket,
  SocketOptions,
} from './types.js';

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

function defaultEndpoint(): Endpoint {
  const url = process.env['LODGE_URL'];
  const token = process.env['LODGE_TOKEN'];
  if (url !== undefined && url !== '')
    return { url, token: token === '' ? undefined : token };
  const rundir = process.env['LODGE_RUNDIR'] || '/run/lodge';
  return { socketPath: path.join(rundir, 'lodged.sock'), token };
}

function request(ep: Endpoint, req: HttpRequest): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const opts: http.RequestOptions = {
      method: req.method,
      path: req.path,
      headers: { ...req.headers },
      agent,
      signal: req.signal,
    };
    if (ep.socketPath !== undefined) {
      opts.socketPath = ep.socketPath;
      opts.agent = false;
      (opts.headers as Record<string, string>)['host'] = 'lodge';
    } else {
      const u = new URL(ep.url ?? '');
      opts.host = u.hostname.replace(/^\[(.*)\]$/, '$1');
      opts.port = u.port === '' ? 80 : Number(u.port);
    }
    if (req.body !== undefined)
      (opts.headers as Record<string, string>)['content-length'] = String(req.body.length);
    const r = http.request(opts, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('error', reject);
      res.on('end', () => {
        const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
        resolve({
          status: res.statusCode ?? 0,
          header: (name) => {
            const v = res.headers[name.toLowerCase()];
            return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
          },
          body,
        });
      });
    });
    r.on('error', reject);
    r.end(req.body);
  });
}

function openSocket(ep: Endpoint, opts: SocketOptions): Socket {
  const headers: Record<string, string> = {};
  let url: string;
  if (ep.socketPath !== undefined) {
    url = `ws+unix://${ep.socketPath}:${opts.path}`;
  } else {
    url = ep.url!.replace(/^http/, 'ws') + opts.path;
    if (ep.token !== undefined) headers['authorization'] = `Bearer ${ep.token}`;
  }
  const ws = new WebSocket(url, {
    headers,
    perMessageDeflate: false,
    maxPayload: opts.maxMessageBytes,
    skipUTF8Validation: true,
  });
  const ev = opts.events;
  let failure: Error | undefined;
  let ended = false;
  const end = (code: number): void => {
    if (ended) return;
    ended = true;
    ev.close(code, failure);
  };
  ws.binaryType = 'nodebuffer';
  ws.on('open', () => ev.open());
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) ev.message(data);
    else ev.message(Buffer.from(data));
  });
  ws.on('unexpected-response', (_req, res) => {
    // A refused upgrade: the daemon's JSON error reply, read whole.
    const parts: Buffer[] = [];
    res.on('data', (b: Buffer) => parts.push(b));
    res.on('end', () => {
      failure = errorFromReply(res.statusCode ?? 0, Buffer.concat(parts));
      ws.terminate();
      end(1006);
    });
    res.on('error', () => {
      failure = errorFromReply(res.statusCode ?? 0, new Uint8Array());
      end(1006);
    });
  });
  ws.on('error', (e: Error) => {
    failure ??= e;
  });
  ws.on('close', (code: number) => end(code));
  return {
    send: (data) =>
      new Promise<void>((resolve, reject) => {
        if (ws.readyState !== WebSocket.OPEN) {
          reject(new Error('WebSocket is not open'));
          return;
        }
        ws.send(data, { binary: true }, (err) => (err ? reject(err) : resolve()));
      }),
    pause: (paused) => (paused ? ws.pause() : ws.resume()),
    close: (code) => {
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(code ?? 1000);
    },
    terminate: () => ws.terminate(),
  };
}

function bytes(data: Uint8Array): Bytes {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

export const platform: Platform = { defaultEndpoint, request, openSocket, bytes };
