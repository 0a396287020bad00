//! Options and results, with the seeds' field names.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

/// An output callback: gets each chunk of bytes as it arrives, in order.
pub type OutputCallback = Arc<dyn Fn(Vec<u8>) + Send + Sync>;
/// A gap callback: `(from, to)`, the offsets of output the ring no longer held.
pub type GapCallback = Arc<dyn Fn(u64, u64) + Send + Sync>;
/// An error callback: a non-fatal `error` message on an open stream
/// (e.g. `bad_request` for an unknown signal name).
pub type ErrorCallback = Arc<dyn Fn(crate::Error) + Send + Sync>;
/// Called once when an attach's replay has been delivered, with its end offset.
pub type LiveCallback = Arc<dyn Fn(u64) + Send + Sync>;

/// A one-shot exec (`POST /v1/exec`).
#[derive(Clone, Debug, Default)]
pub struct ExecRequest {
    /// Run as `SHELL -c command`; leave empty and set `args` to run argv.
    pub command: String,
    /// Run this argv directly (no shell), instead of `command`.
    pub args: Option<Vec<String>>,
    /// The working directory (`workDir`).
    pub work_dir: Option<String>,
    /// Added to the user's environment, sent in this order.
    pub env: Option<Vec<(String, String)>>,
    /// The server-side time limit in whole seconds (`timeoutSeconds`).
    pub timeout_seconds: Option<u64>,
    /// The server-side time limit with fractions; wins over `timeout_seconds`.
    pub timeout: Option<Duration>,
    /// Fed to the process, then closed (default: `/dev/null`).
    pub stdin: Option<String>,
    /// Run as this user (when lodged runs as root).
    pub user: Option<String>,
    /// Per-stream output cap (`maxOutputBytes`).
    pub max_output_bytes: Option<u64>,
    /// Ask for base64 output: the result's `stdout_bytes`/`stderr_bytes`
    /// are then exact, and `stdout`/`stderr` their lossy UTF-8.
    pub base64: bool,
}

/// The result of [`ExecRequest`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecResult {
    /// Standard output as text (invalid UTF-8 replaced by U+FFFD).
    pub stdout: String,
    /// Standard error as text.
    pub stderr: String,
    /// The exact bytes of stdout when `base64` was asked for.
    pub stdout_bytes: Option<Vec<u8>>,
    /// The exact bytes of stderr when `base64` was asked for.
    pub stderr_bytes: Option<Vec<u8>>,
    /// The exit code; `None` if a signal ended the process.
    pub exit_code: Option<i32>,
    /// The signal's name (`"TERM"`), if one ended it.
    pub signal: Option<String>,
    /// The server's `timeoutSeconds` ran out.
    pub timed_out: bool,
    /// Output past `maxOutputBytes` was dropped.
    pub truncated: bool,
    /// How long it ran.
    pub duration_ms: u64,
}

/// How a process ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExitStatus {
    /// The exit code; `None` if a signal ended it.
    pub code: Option<i32>,
    /// The signal's name, if one ended it.
    pub signal: Option<String>,
    /// (exec streams) the server's `timeoutSeconds` ran out.
    pub timed_out: bool,
}

/// A live exec stream (`GET /v1/exec/stream`).
#[derive(Clone, Default)]
pub struct ExecStreamOptions {
    /// Run as `SHELL -c command`; leave empty and set `args` to run argv.
    pub command: String,
    /// Run this argv directly (no shell), instead of `command`.
    pub args: Option<Vec<String>>,
    /// The working directory (`workDir`).
    pub work_dir: Option<String>,
    /// Added to the user's environment, sent in this order.
    pub env: Option<Vec<(String, String)>>,
    /// Run as this user (when lodged runs as root).
    pub user: Option<String>,
    /// The server-side time limit in whole seconds.
    pub timeout_seconds: Option<u64>,
    /// The server-side time limit with fractions; wins over `timeout_seconds`.
    pub timeout: Option<Duration>,
    /// Run on a pseudo-terminal (stdout and stderr merged).
    pub tty: bool,
    /// Terminal width (default 80).
    pub cols: Option<u16>,
    /// Terminal height (default 24).
    pub rows: Option<u16>,
    /// Gets stdout bytes.
    pub on_stdout: Option<OutputCallback>,
    /// Gets stderr bytes (never in tty mode).
    pub on_stderr: Option<OutputCallback>,
    /// Gets non-fatal `error` messages.
    pub on_error: Option<ErrorCallback>,
}

impl fmt::Debug for ExecStreamOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecStreamOptions")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("work_dir", &self.work_dir)
            .field("tty", &self.tty)
            .finish_non_exhaustive()
    }
}

/// A new session (`POST /v1/sessions`).
#[derive(Clone, Debug, Default)]
pub struct CreateSessionOptions {
    /// Unique name, 1-64 of `[A-Za-z0-9._-]`.
    pub name: Option<String>,
    /// Run as `SHELL -c command` (absent with `args`: the login shell).
    pub command: Option<String>,
    /// Run this argv directly.
    pub args: Option<Vec<String>>,
    /// The working directory.
    pub work_dir: Option<String>,
    /// Added to the user's environment.
    pub env: Option<Vec<(String, String)>>,
    /// Run as this user.
    pub user: Option<String>,
    /// A pseudo-terminal (default: a pipe pair).
    pub pty: Option<bool>,
    /// Terminal width.
    pub cols: Option<u16>,
    /// Terminal height.
    pub rows: Option<u16>,
    /// Ring buffer bytes (default 1 MiB).
    pub buffer_size: Option<u64>,
}

/// A session object, as the daemon describes it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub name: Option<String>,
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub pid: Option<i64>,
    pub pty: bool,
    pub cols: u16,
    pub rows: u16,
    pub work_dir: Option<String>,
    pub user: Option<String>,
    pub created_at: Option<String>,
    /// `"running"` or `"exited"`.
    pub state: String,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// Clients attached now.
    pub clients: u32,
    pub buffer_size: u64,
    /// Total output ever written: the offset of the next byte.
    pub output_bytes: u64,
}

impl Session {
    /// Whether the process has exited.
    pub fn exited(&self) -> bool {
        self.state == "exited"
    }
}

/// `GET /v1/health`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Health {
    pub status: String,
    pub version: String,
    pub sessions: u64,
    pub protocol: Option<u64>,
}

/// A session's log (`GET /v1/sessions/{ref}/log`): bytes with offsets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionLog {
    pub data: Vec<u8>,
    /// Offset of the first byte (`Lodge-Log-Start`).
    pub start: u64,
    /// One past the last (`Lodge-Log-End`).
    pub end: u64,
}

/// Attaching to a session.
#[derive(Clone, Default)]
pub struct SessionAttachOptions {
    /// Resize the PTY to this on attach.
    pub cols: Option<u16>,
    pub rows: Option<u16>,
    /// Replay from this offset instead of the ring's start.
    pub since: Option<u64>,
    /// Attach read-only (input, resize and signal are refused).
    pub read_only: bool,
    /// Hold the process back rather than skip output (`pace=1`): while
    /// every client is behind and this one still takes output, the process
    /// waits for it, as for a terminal. Not with `read_only`: the daemon
    /// refuses the attach with [`crate::Error::BadRequest`].
    pub pace: bool,
    /// Fail with [`crate::Error::Gap`] instead of calling `on_gap`.
    pub strict: bool,
    /// Don't reconnect when the connection drops (default: resume).
    pub no_resume: bool,
    pub on_stdout: Option<OutputCallback>,
    pub on_stderr: Option<OutputCallback>,
    pub on_gap: Option<GapCallback>,
    pub on_live: Option<LiveCallback>,
    pub on_error: Option<ErrorCallback>,
}

impl fmt::Debug for SessionAttachOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionAttachOptions")
            .field("cols", &self.cols)
            .field("rows", &self.rows)
            .field("since", &self.since)
            .field("read_only", &self.read_only)
            .field("pace", &self.pace)
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

/// An incremental UTF-8 decoder: a character split across chunks is kept
/// until its last byte arrives, never mangled.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode `chunk`, holding back an incomplete character at its end.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    out.push_str(std::str::from_utf8(good).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            out.push('\u{fffd}');
                            rest = &bad[n..];
                        }
                        None => {
                            rest = bad;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        out
    }

    /// The end of the stream: what is held back becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

/// An output callback that decodes with its own [`Utf8Decoder`] and hands
/// `f` text.
pub fn text_callback(f: impl Fn(&str) + Send + Sync + 'static) -> OutputCallback {
    let dec = Mutex::new(Utf8Decoder::new());
    Arc::new(move |chunk: Vec<u8>| {
        let s = dec.lock().unwrap_or_else(|p| p.into_inner()).push(&chunk);
        if !s.is_empty() {
            f(&s)
        }
    })
}
