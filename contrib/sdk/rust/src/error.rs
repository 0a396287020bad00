//! The crate's one error type: a variant per protocol error code, and the
//! client's own failures (connection lost, gap in strict mode, timeouts).

use std::sync::Arc;

/// What a call of this crate can fail with.
///
/// Each protocol error code (`man lodge-protocol.7`) has its own variant
/// carrying the HTTP status (0 when the daemon sent it as an `error`
/// message on an open WebSocket) and the daemon's message.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `bad_request` (400): a malformed request or client message.
    #[error("bad_request ({status}): {message}")]
    BadRequest { status: u16, message: String },
    /// `unauthorized` (401): missing or wrong token.
    #[error("unauthorized ({status}): {message}")]
    Unauthorized { status: u16, message: String },
    /// `forbidden` (403): e.g. input on a read-only attach.
    #[error("forbidden ({status}): {message}")]
    Forbidden { status: u16, message: String },
    /// `not_found` (404): no such session or path.
    #[error("not_found ({status}): {message}")]
    NotFound { status: u16, message: String },
    /// `conflict` (409): a name in use, input to an exited session.
    #[error("conflict ({status}): {message}")]
    Conflict { status: u16, message: String },
    /// `payload_too_large` (413).
    #[error("payload_too_large ({status}): {message}")]
    PayloadTooLarge { status: u16, message: String },
    /// `spawn_failed` (422): the program could not start (never an exit code).
    #[error("spawn_failed ({status}): {message}")]
    SpawnFailed { status: u16, message: String },
    /// `unavailable` (503): the daemon cannot take this now.
    #[error("unavailable ({status}): {message}")]
    Unavailable { status: u16, message: String },
    /// `internal` (500): a fault in the daemon.
    #[error("internal ({status}): {message}")]
    Internal { status: u16, message: String },
    /// A code this version does not know, with its status and message.
    #[error("{code} ({status}): {message}")]
    Api {
        code: String,
        status: u16,
        message: String,
    },
    /// A stream ended without an `exit` message (or could not be
    /// resumed): never a success.
    #[error("connection lost: {0}")]
    ConnectionLost(String),
    /// In strict mode, an attach whose resume found bytes the ring no
    /// longer holds: `from..to` were lost.
    #[error("output lost between offsets {from} and {to}")]
    Gap { from: u64, to: u64 },
    /// The attach handle was detached by its caller before an exit.
    #[error("detached before the process exited")]
    Detached,
    /// An output or event callback panicked; the stream was closed.
    #[error("a callback panicked: {0}")]
    CallbackPanicked(String),
    /// A client-side timeout (connect or request), not the server's
    /// `timeoutSeconds`.
    #[error("client timeout: {0}")]
    Timeout(String),
    /// The daemon sent something that does not follow the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Bad client configuration (URL, token).
    #[error("configuration: {0}")]
    Config(String),
    /// A socket or transport error before any reply.
    #[error("I/O: {0}")]
    Io(Arc<std::io::Error>),
}

impl Error {
    /// The error of a protocol `code`, with `status` and `message`.
    pub fn from_code(code: &str, status: u16, message: String) -> Error {
        match code {
            "bad_request" => Error::BadRequest { status, message },
            "unauthorized" => Error::Unauthorized { status, message },
            "forbidden" => Error::Forbidden { status, message },
            "not_found" => Error::NotFound { status, message },
            "conflict" => Error::Conflict { status, message },
            "payload_too_large" => Error::PayloadTooLarge { status, message },
            "spawn_failed" => Error::SpawnFailed { status, message },
            "unavailable" => Error::Unavailable { status, message },
            "internal" => Error::Internal { status, message },
            _ => Error::Api {
                code: code.to_string(),
                status,
                message,
            },
        }
    }

    /// The error of a non-2xx reply: its JSON body's code and message.
    pub fn from_reply(status: u16, body: &[u8]) -> Error {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let e = &v["error"];
        match (e["code"].as_str(), e["message"].as_str()) {
            (Some(code), Some(msg)) => Error::from_code(code, status, msg.to_string()),
            _ => Error::Api {
                code: "http".into(),
                status,
                message: String::from_utf8_lossy(body).into_owned(),
            },
        }
    }

    /// The protocol code, for the daemon's errors.
    pub fn code(&self) -> Option<&str> {
        Some(match self {
            Error::BadRequest { .. } => "bad_request",
            Error::Unauthorized { .. } => "unauthorized",
            Error::Forbidden { .. } => "forbidden",
            Error::NotFound { .. } => "not_found",
            Error::Conflict { .. } => "conflict",
            Error::PayloadTooLarge { .. } => "payload_too_large",
            Error::SpawnFailed { .. } => "spawn_failed",
            Error::Unavailable { .. } => "unavailable",
            Error::Internal { .. } => "internal",
            Error::Api { code, .. } => code,
            _ => return None,
        })
    }

    /// The HTTP status, for the daemon's errors (0 for an `error` message).
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::BadRequest { status, .. }
            | Error::Unauthorized { status, .. }
            | Error::Forbidden { status, .. }
            | Error::NotFound { status, .. }
            | Error::Conflict { status, .. }
            | Error::PayloadTooLarge { status, .. }
            | Error::SpawnFailed { status, .. }
            | Error::Unavailable { status, .. }
            | Error::Internal { status, .. }
            | Error::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The daemon's message, for the daemon's errors.
    pub fn message(&self) -> Option<&str> {
        match self {
            Error::BadRequest { message, .. }
            | Error::Unauthorized { message, .. }
            | Error::Forbidden { message, .. }
            | Error::NotFound { message, .. }
            | Error::Conflict { message, .. }
            | Error::PayloadTooLarge { message, .. }
            | Error::SpawnFailed { message, .. }
            | Error::Unavailable { message, .. }
            | Error::Internal { message, .. }
            | Error::Api { message, .. } => Some(message),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        match e.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                Error::Timeout(e.to_string())
            }
            _ => Error::Io(Arc::new(e)),
        }
    }
}

pub(crate) fn panic_message(p: Box<dyn std::any::Any + Send>) -> Error {
    let m = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    Error::CallbackPanicked(m)
}

/// This crate's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
