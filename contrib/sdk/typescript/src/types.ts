/**
 * The public shapes of the SDK: options and results.  Field names follow
 * the seed documents; each is sent as the protocol's field (seed `workdir`
 * and `workDir` both become `workDir`).
 */
import type { Bytes } from './platform/types.js';

export type { Bytes };

/** How to reach lodged; everything defaults from the environment. */
export interface ClientOptions {
  /** http://host:port; default LODGE_URL, else the Unix socket (Node). */
  url?: string;
  /** The bearer token; default LODGE_TOKEN. */
  token?: string;
  /** The front's Unix socket; default $LODGE_RUNDIR/lodged.sock or /run/lodge/lodged.sock (Node only). */
  socketPath?: string;
  /** Client-side limit on opening a WebSocket, in ms (default 10000). */
  connectTimeoutMs?: number;
  /**
   * Client-side limit on each REST call, in ms (default 30000).  It does not
   * apply to exec, which runs as long as its command unless the call sets it:
   * the server-side limit on the command is timeoutSeconds.
   */
  requestTimeoutMs?: number;
  /** Ask GET /v1/health in connect(), so a wrong URL or token fails there (default true). */
  check?: boolean;
}

/** Options every call takes. */
export interface CallOptions {
  /** Abort the call: a REST call is cancelled, a stream's connection closed. */
  signal?: AbortSignal;
}

/** Options of a REST call. */
export interface RequestOptions extends CallOptions {
  /** Overrides the client's requestTimeoutMs for this call. */
  requestTimeoutMs?: number;
}

/** The fields of every run request (exec, exec stream, session). */
export interface RunOptions {
  /** Run as `SHELL -c command` with the user's login shell. */
  command?: string;
  /** Run directly, without a shell (exactly one of command and args). */
  args?: string[];
  /** The working directory (default: the user's home). */
  workDir?: string;
  /** Variables added to the default environment. */
  env?: Record<string, string>;
  /** The user to run as (needs lodged to run as root). */
  user?: string;
}

export interface ExecOptions extends RunOptions, RequestOptions {
  /** Server-side: SIGTERM the process group after this many seconds, SIGKILL 2 s later. */
  timeoutSeconds?: number;
  /** Fed to the command's stdin, which is then closed. */
  stdin?: string;
  /** "utf8" (default): text; "base64": stdout and stderr in base64, and as bytes in stdoutBytes/stderrBytes. */
  encoding?: 'utf8' | 'base64';
  /** The most bytes kept of each of stdout and stderr. */
  maxOutputBytes?: number;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** null when a signal ended the command. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
  /** With encoding "base64": the decoded bytes. */
  stdoutBytes?: Bytes;
  stderrBytes?: Bytes;
}

/**
 * An output callback.  Its return value is ignored unless it is a promise:
 * then the stream stops reading until it settles (so an async consumer
 * paces the command), and a rejection fails the stream.
 */
export type OutputCallback = (chunk: Bytes) => unknown;

/** One message of output. */
export interface OutputChunk {
  stream: 'stdout' | 'stderr';
  data: Bytes;
  /** The position of data's first byte in the output (both streams share one counter). */
  offset: number;
}

/** Decoded text of one stream, from one incremental UTF-8 decoder per stream. */
export interface TextChunk {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** How a process ended. */
export interface ExitInfo {
  /** The exit status; null when a signal ended it. */
  code: number | null;
  signal: string | null;
  /** Exec streams: timeoutSeconds ran out. */
  timedOut?: boolean;
}

export interface StreamCallbacks {
  onStdout?: OutputCallback;
  onStderr?: OutputCallback;
  /** Called with the exit, after the last output callback returned. */
  onExit?: (exit: ExitInfo) => void;
  /** An error message that does not end the stream (a signal to an exited process, say). */
  onError?: (err: Error) => void;
}

export interface ExecStreamOptions extends RunOptions, StreamCallbacks, CallOptions {
  /** The seeds' spelling of workDir. */
  workdir?: string;
  /** Run on a PTY (stdout and stderr merged onto it). */
  tty?: boolean;
  cols?: number;
  rows?: number;
  /** Server-side limit on the command, in seconds. */
  timeoutSeconds?: number;
}

export interface CreateSessionOptions extends RunOptions, RequestOptions {
  /** 1 to 64 characters of A-Z a-z 0-9 . _ -, unique. */
  name?: string;
  pty?: boolean;
  cols?: number;
  rows?: number;
  /** The output ring's size in bytes. */
  bufferSize?: number;
}

/** A session as lodged describes it (lodge-protocol(7), THE SESSION OBJECT). */
export interface SessionInfo {
  id: string;
  name: string | null;
  command?: string | null;
  args?: string[];
  pid: number;
  pty: boolean;
  cols: number;
  rows: number;
  workDir: string;
  user: string;
  createdAt: string;
  state: 'running' | 'exited';
  exitCode: number | null;
  signal: string | null;
  clients: number;
  bufferSize: number;
  outputBytes: number;
}

export interface GapInfo {
  /** The first offset missed. */
  from: number;
  /** The offset output goes on from. */
  to: number;
}

export interface ResumeOptions {
  /** Reconnect attempts in a row before giving up (default 20). */
  maxAttempts?: number;
  /** The first delay between attempts, doubled up to maxDelayMs (default 100). */
  initialDelayMs?: number;
  maxDelayMs?: number;
}

export interface AttachOptions extends StreamCallbacks, CallOptions {
  /** Resize the PTY on attach. */
  cols?: number;
  rows?: number;
  /** Replay from this offset instead of the oldest byte held. */
  since?: number;
  /** Receive only: input, resize and signal are refused. */
  readOnly?: boolean;
  /**
   * Hold the process back rather than skip output: while every client is
   * behind and this one still reads, the process waits for it, as for a
   * terminal (default false; not with readOnly).
   */
  pace?: boolean;
  /** The replay is over: what follows is live. */
  onLive?: () => void;
  /** Output the ring no longer held was skipped. */
  onGap?: (gap: GapInfo) => void;
  /** A lost connection was resumed. */
  onReconnect?: (nextOffset: number) => void;
  /** Fail with a GapError rather than report a gap (default false). */
  strict?: boolean;
  /** Reconnect after a lost connection (default true), and how. */
  resume?: boolean | ResumeOptions;
}

/** The end of an attach: the session's exit, or a detach. */
export interface AttachExit extends ExitInfo {
  /** true when detach() ended the attach; code and signal are then null. */
  detached?: boolean;
}

export interface SessionLog {
  data: Bytes;
  /** The offset of data's first byte (Lodge-Log-Start). */
  start: number;
  /** One past its last byte: the session's outputBytes then (Lodge-Log-End). */
  end: number;
}

export interface Health {
  status: string;
  version: string;
  sessions: number;
  protocol?: number;
  limits?: Record<string, number>;
  [key: string]: unknown;
}
