/**
 * The platform seam: the little that differs between Node and a browser.
 *
 * Everything else in the SDK is plain ECMAScript that runs in both.  Node's
 * side (./node.ts) uses `ws`, `node:http` and Buffer and can reach the
 * daemon's Unix socket; the browser's (./browser.ts) uses the browser's own
 * WebSocket and fetch, and carries the token in the query string of a
 * WebSocket URL because a browser cannot set its header fields.
 */

/** Output bytes: a Uint8Array whose toString() decodes it as UTF-8. */
export type Bytes = Uint8Array & { toString(): string };

/** Where a client reaches lodged. */
export interface Endpoint {
  /** http://host:port, or undefined for the Unix socket. */
  url?: string | undefined;
  /** The front's Unix socket (Node only). */
  socketPath?: string | undefined;
  token?: string | undefined;
}

export interface HttpRequest {
  method: string;
  /** The path and query, such as /v1/exec. */
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array | undefined;
  signal?: AbortSignal | undefined;
}

export interface HttpResponse {
  status: number;
  /** A header field's value (name in any case), or null. */
  header(name: string): string | null;
  body: Uint8Array;
}

/** What the SDK needs of a WebSocket: binary messages in, binary out. */
export interface Socket {
  /** Send one binary message; resolves once the platform took it. */
  send(data: Uint8Array): Promise<void>;
  /** Stop (true) or resume (false) reading, where the platform can. */
  pause(paused: boolean): void;
  close(code?: number): void;
  /** Drop the connection at once, without a closing handshake. */
  terminate(): void;
}

export interface SocketEvents {
  open(): void;
  message(data: Uint8Array): void;
  /** Once, at the end; error is set if the socket failed. */
  close(code: number, error?: Error): void;
}

export interface SocketOptions {
  /** The path and query of the upgrade. */
  path: string;
  /** The largest message accepted from the server. */
  maxMessageBytes: number;
  events: SocketEvents;
}

export interface Platform {
  /** The endpoint from the environment (LODGE_URL, LODGE_TOKEN, ...). */
  defaultEndpoint(): Endpoint;
  request(ep: Endpoint, req: HttpRequest): Promise<HttpResponse>;
  openSocket(ep: Endpoint, opts: SocketOptions): Socket;
  /** Wrap bytes (no copy) so that toString() gives UTF-8 text. */
  bytes(data: Uint8Array): Bytes;
}
