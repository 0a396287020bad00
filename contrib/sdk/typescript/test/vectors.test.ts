/**
 * vectors.encode, vectors.decode: the conformance kit's msgpack vectors
 * (tests/sdk/vectors) against the SDK's own encoder and decoder.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { encodeMessage, encodeStart, encodeStdin, MessageDecoder, type ClientMessage } from '@lodge/sdk/protocol';

const here = path.dirname(fileURLToPath(import.meta.url));
const kitDir = process.env['LODGE_SDK_KIT'] ?? path.join(here, '..', '..', '..', '..', '..', 'tests', 'sdk');
const dir = path.join(kitDir, 'vectors');

interface Vector {
  name: string;
  canonical?: boolean;
  message: Record<string, unknown>;
  hex: string;
}
interface VectorFile {
  type: string;
  direction: 'client' | 'server';
  vectors: Vector[];
}

/** JSON form to message: {"bin": hex} is bytes. */
function fromJson(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(fromJson);
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === 'bin' && typeof o['bin'] === 'string')
      return new Uint8Array(Buffer.from(o['bin'], 'hex'));
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = fromJson(o[k]);
    return out;
  }
  return v;
}

function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

/** The SDK's encoding of a client message, through the code that sends it. */
function encode(m: Record<string, unknown>): Uint8Array {
  switch (m['type']) {
    case 'stdin':
      return encodeStdin(m['data'] as Uint8Array);
    case 'start': {
      // through the options an application passes, keys in another order
      const o = Object.fromEntries(Object.entries(m).filter(([k]) => k !== 'type').reverse());
      return encodeStart(o);
    }
    default:
      return encodeMessage(m as unknown as ClientMessage);
  }
}

const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as VectorFile);

test('the vectors are there', () => {
  assert.ok(files.length >= 10, `vectors in ${dir}`);
});

describe('vectors.encode', () => {
  for (const f of files.filter((f) => f.direction === 'client'))
    for (const v of f.vectors.filter((v) => v.canonical))
      test(`${f.type}: ${v.name}`, () => {
        assert.equal(hex(encode(fromJson(v.message) as Record<string, unknown>)), v.hex);
      });
});

describe('vectors.decode', () => {
  const dec = new MessageDecoder();
  for (const f of files.filter((f) => f.direction === 'server'))
    for (const v of f.vectors)
      test(`${f.type}: ${v.name}`, () => {
        const got = dec.decode(new Uint8Array(Buffer.from(v.hex, 'hex'))) as unknown as Record<string, unknown>;
        const want = fromJson(v.message) as Record<string, unknown>;
        assert.equal(got['type'], f.type);
        // every field the decoder yields has the vector's value
        for (const [k, val] of Object.entries(got)) {
          if (k === 'timedOut' && !('timedOut' in want)) continue;
          assert.deepEqual(val, want[k], `field ${k}`);
        }
        // and every field the protocol defines for the type is yielded
        const known: Record<string, string[]> = {
          stdout: ['data', 'offset'],
          stderr: ['data', 'offset'],
          exit: ['exitCode', 'signal'],
          error: ['code', 'message'],
          started: ['pid'],
          attached: ['session', 'replayFrom', 'replayTo'],
          gap: ['from', 'to'],
          live: [],
        };
        for (const k of known[f.type] ?? []) assert.ok(k in got, `field ${k} decoded`);
        if ('limits' in want) assert.deepEqual(got['limits'], { maxMessageBytes: (want['limits'] as { maxMessageBytes: number }).maxMessageBytes });
      });
});
