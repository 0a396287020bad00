/**
 * The wire protocol's WebSocket messages (lodge-protocol(7), WEBSOCKET
 * MESSAGES): msgpack maps with a str key "type", output as bin.  Pure code,
 * with no I/O: the conformance kit's vectors test it.
 */
import { Decoder, Encoder } from '@msgpack/msgpack';

import { ProtocolError } from './errors.js';
import type { SessionInfo } from './types.js';

/** Limits the daemon announces (started, attached, GET /v1/health). */
export interface Limits {
  /** The largest client message the daemon accepts. */
  maxMessageBytes: number;
}

/** --max-message-size's default, lodged(8), for a daemon that does not say. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

/** The largest server message: 256 KiB of output and a small header. */
export const MAX_SERVER_MESSAGE_BYTES = 256 * 1024 + 4096;

/** Bytes of a stdin message besides its data (map, keys, bin32 header). */
export const STDIN_OVERHEAD = 32;

export type ServerMessage =
  | { type: 'stdout' | 'stderr'; data: Uint8Array; offset: number }
  | { type: 'exit'; exitCode: number | null; signal: string | null; timedOut?: boolean }
  | { type: 'error'; code: string; message: string }
  | { type: 'started'; pid: number; limits?: Limits }
  | { type: 'attached'; session: SessionInfo; replayFrom: number; replayTo: number; limits?: Limits }
  | { type: 'gap'; from: number; to: number }
  | { type: 'live' }
  | { type: 'unknown'; raw: Record<string, unknown> };

export type ClientMessage =
  | { type: 'stdin'; data: Uint8Array }
  | { type: 'eof' }
  | { type: 'resize'; cols: number; rows: number }
  | { type: 'signal'; signal: string | number }
  | ({ type: 'start' } & StartFields);

/** The fields of an exec stream's start message that the SDK sends. */
export interface StartFields {
  command?: string | undefined;
  args?: string[] | undefined;
  workDir?: string | undefined;
  env?: Record<string, string> | undefined;
  user?: string | undefined;
  timeoutSeconds?: number | undefined;
  tty?: boolean | undefined;
  cols?: number | undefined;
  rows?: number | undefined;
  clientCloses?: boolean | undefined;
}

const encoder = new Encoder({ ignoreUndefined: true });

/** One client message as msgpack, keys in the order given. */
export function encodeMessage(m: ClientMessage): Uint8Array {
  return encoder.encode(m);
}

/** The start fields in the canonical order (type, then as lodge-protocol(7) lists them). */
const START_ORDER = [
  'command',
  'args',
  'workDir',
  'env',
  'user',
  'timeoutSeconds',
  'tty',
  'cols',
  'rows',
  'clientCloses',
] as const;

/** An exec stream's start message: only the fields set, in the canonical order. */
export function encodeStart(f: StartFields): Uint8Array {
  const m: Record<string, unknown> = { type: 'start' };
  for (const k of START_ORDER) if (f[k] !== undefined && f[k] !== null) m[k] = f[k];
  return encoder.encode(m);
}

/** A stdin message, without building an object for it. */
export function encodeStdin(data: Uint8Array): Uint8Array {
  return encoder.encode({ type: 'stdin', data });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function uint(m: Record<string, unknown>, key: string): number {
  const v = m[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new ProtocolError(`${String(m['type'])} message: ${key} is not an unsigned integer`);
  return v;
}

function limitsOf(v: unknown): Limits | undefined {
  if (!isObject(v)) return undefined;
  const n = v['maxMessageBytes'];
  return typeof n === 'number' && n > 0 ? { maxMessageBytes: n } : undefined;
}

/**
 * A decoder of server messages.  Keys it does not know are ignored, as the
 * protocol asks; a message of an unknown type comes back as "unknown".
 */
export class MessageDecoder {
  private readonly decoder = new Decoder();

  decode(frame: Uint8Array): ServerMessage {
    let m: unknown;
    try {
      m = this.decoder.decode(frame);
    } catch (e) {
      throw new ProtocolError(`a message that is not msgpack: ${(e as Error).message}`);
    }
    if (!isObject(m) || typeof m['type'] !== 'string')
      throw new ProtocolError('a message that is not a map with a str type');
    switch (m['type']) {
      case 'stdout':
      case 'stderr': {
        const data = m['data'];
        if (!(data instanceof Uint8Array)) throw new ProtocolError(`${m['type']} message without bin data`);
        return { type: m['type'], data, offset: uint(m, 'offset') };
      }
      case 'exit': {
        const code = m['exitCode'];
        const sig = m['signal'];
        const out: ServerMessage = {
          type: 'exit',
          exitCode: typeof code === 'number' ? code : null,
          signal: typeof sig === 'string' ? sig : null,
        };
        if (typeof m['timedOut'] === 'boolean') out.timedOut = m['timedOut'];
        return out;
      }
      case 'error':
        return { type: 'error', code: String(m['code'] ?? 'internal'), message: String(m['message'] ?? '') };
      case 'started': {
        const limits = limitsOf(m['limits']);
        return limits ? { type: 'started', pid: uint(m, 'pid'), limits } : { type: 'started', pid: uint(m, 'pid') };
      }
      case 'attached': {
        if (!isObject(m['session'])) throw new ProtocolError('attached message without a session');
        const out: ServerMessage = {
          type: 'attached',
          session: m['session'] as unknown as SessionInfo,
          replayFrom: uint(m, 'replayFrom'),
          replayTo: uint(m, 'replayTo'),
        };
        const limits = limitsOf(m['limits']);
        if (limits) out.limits = limits;
        return out;
      }
      case 'gap':
        return { type: 'gap', from: uint(m, 'from'), to: uint(m, 'to') };
      case 'live':
        return { type: 'live' };
      default:
        return { type: 'unknown', raw: m };
    }
  }
}
