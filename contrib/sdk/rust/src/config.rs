//! Where the daemon is and how long to wait for it.

use std::path::PathBuf;
use std::time::Duration;

use crate::{Error, Result};

/// The client's own settings. `connect_timeout` and `request_timeout`
/// are client-side, unrelated to a command's server-side `timeoutSeconds`.
#[derive(Clone, Debug)]
pub struct Config {
    /// `http://host:port`; not used when `socket` is set.
    pub url: String,
    /// The daemon's Unix socket (`lodged.sock`), which needs no token: the
    /// blocking client then speaks over it instead of TCP.
    pub socket: Option<PathBuf>,
    /// The bearer token (not sent over the Unix socket).
    pub token: Option<String>,
    /// Bound on establishing a TCP connection.
    pub connect_timeout: Duration,
    /// Bound on one REST call as a whole (`None`: none). An exec whose
    /// command runs long needs this larger than its `timeoutSeconds`.
    pub request_timeout: Option<Duration>,
    /// How long an attach keeps trying to resume after its connection drops.
    pub resume_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            url: "http://127.0.0.1:5634".into(),
            socket: None,
            token: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: None,
            resume_timeout: Duration::from_secs(30),
        }
    }
}

impl Config {
    /// From `LODGE_URL` and `LODGE_TOKEN` (or `$LODGE_RUNDIR/token`);
    /// without `LODGE_URL`, the Unix socket `$LODGE_RUNDIR/lodged.sock`
    /// (`/run/lodge/lodged.sock`). `LODGE_URL=unix:PATH` names a socket.
    pub fn from_env() -> Result<Config> {
        let mut c = Config::default();
        let dir = std::env::var("LODGE_RUNDIR").unwrap_or_else(|_| "/run/lodge".into());
        match std::env::var("LODGE_URL") {
            Ok(u) if !u.is_empty() => match u.strip_prefix("unix:") {
                Some(path) => c.socket = Some(path.into()),
                None => c.url = u,
            },
            _ => c.socket = Some(PathBuf::from(&dir).join("lodged.sock")),
        }
        if c.socket.is_none() {
            c.token = std::env::var("LODGE_TOKEN").ok().or_else(|| {
                std::fs::read_to_string(format!("{dir}/token"))
                    .ok()
                    .map(|t| t.trim().to_string())
            });
        }
        Ok(c)
    }

    /// Over the daemon's Unix socket at `path`.
    pub fn unix(path: impl Into<PathBuf>) -> Config {
        Config {
            socket: Some(path.into()),
            ..Config::default()
        }
    }

    /// With an explicit URL and token.
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Config {
        Config {
            url: url.into(),
            token: Some(token.into()),
            ..Config::default()
        }
    }

    /// `host:port` of the URL (`localhost` on the Unix socket).
    pub(crate) fn authority(&self) -> Result<String> {
        if self.socket.is_some() {
            return Ok("localhost".into());
        }
        let rest = self
            .url
            .strip_prefix("http://")
            .ok_or_else(|| Error::Config(format!("URL must be http://host:port: {}", self.url)))?;
        let auth = rest.split('/').next().unwrap_or_default();
        if auth.is_empty() {
            return Err(Error::Config(format!("no host in {}", self.url)));
        }
        Ok(if auth.contains(':') {
            auth.to_string()
        } else {
            format!("{auth}:80")
        })
    }

    pub(crate) fn base(&self) -> String {
        self.url.trim_end_matches('/').to_string()
    }
}

/// Percent-encode a path segment (a session ref).
pub(crate) fn segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
