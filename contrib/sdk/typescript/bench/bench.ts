/**
 * npm run bench [-- --execs N --keys N --bytes N]
 *
 * The SDK's figures against LODGE_URL and LODGE_TOKEN, printed as one JSON
 * line on stdout (tests/sdk/bench.sh runs it beside the C client):
 *
 *   exec_p50_us, exec_p99_us  sequential exec of ["/bin/true"] (2,000)
 *   stream_gbps               GB/s (10^9 bytes) of an exec stream of
 *                             head -c 1073741824 /dev/zero, read to its exit
 *   key_p50_us, key_p99_us    one-byte round trips (2,000) on a PTY session
 *                             running stty raw -echo && printf R && exec cat
 *
 * A benchmark, not a test: the figures depend on the machine and its load.
 */
import { connect } from '@lodge/sdk';

const KEY_COMMAND = 'stty raw -echo && printf R && exec cat';

function options(argv: string[]): { execs: number; keys: number; bytes: number } {
  const o = { execs: 2000, keys: 2000, bytes: 1 << 30 };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    const v = Number(argv[i + 1]);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name}: not a count`);
    if (name === '--execs') o.execs = v;
    else if (name === '--keys') o.keys = v;
    else if (name === '--bytes') o.bytes = v;
    else throw new Error(`unknown option ${name}`);
  }
  return o;
}

/** Nearest rank, in microseconds to 0.1. */
function pct(ns: bigint[], p: number): number {
  const s = [...ns].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const v = s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? 0n;
  return Math.round(Number(v) / 100) / 10;
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const sandbox = await connect();
  const now = process.hrtime.bigint;

  for (let i = 0; i < 50; i++) await sandbox.exec({ args: ['/bin/true'] }); // untimed
  const exec: bigint[] = [];
  for (let i = 0; i < o.execs; i++) {
    const t = now();
    const r = await sandbox.exec({ args: ['/bin/true'] });
    exec.push(now() - t);
    if (r.exitCode !== 0) throw new Error(`exec: exit code ${String(r.exitCode)}`);
  }

  let n = 0;
  const t0 = now();
  const h = sandbox.execStream({
    command: `head -c ${o.bytes} /dev/zero`,
    onStdout: (chunk) => {
      n += chunk.length;
    },
  });
  const x = await h.done;
  const secs = Number(now() - t0) / 1e9;
  if (x.code !== 0 || n !== o.bytes) throw new Error(`stream: code ${String(x.code)}, ${n} bytes`);

  const session = await sandbox.createSession({ command: KEY_COMMAND, pty: true });
  let echoed: () => void = () => {};
  let seen = '';
  const attach = sandbox.attachSession(session.id, {
    onStdout: (chunk) => {
      seen += Buffer.from(chunk).toString('latin1');
      echoed();
    },
  });
  const echo = (want: (s: string) => boolean): Promise<void> =>
    new Promise((resolve) => {
      echoed = () => {
        if (want(seen)) {
          seen = '';
          resolve();
        }
      };
      echoed();
    });
  await echo((s) => s.includes('R'));
  const key: bigint[] = [];
  const k = new Uint8Array([0x6b]);
  for (let i = -100; i < o.keys; i++) {
    const t = now();
    const got = echo((s) => s.length > 0);
    await attach.write(k);
    await got;
    if (i >= 0) key.push(now() - t);
  }
  attach.detach();
  await sandbox.deleteSession(session.id);

  console.log(
    JSON.stringify({
      sdk: 'typescript',
      exec_p50_us: pct(exec, 0.5),
      exec_p99_us: pct(exec, 0.99),
      stream_gbps: Math.round((n / secs / 1e9) * 1000) / 1000,
      key_p50_us: pct(key, 0.5),
      key_p99_us: pct(key, 0.99),
    }),
  );
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
