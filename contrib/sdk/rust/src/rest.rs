//! Request bodies and replies of the REST calls, shared by both clients.

use serde_json::{json, Map, Value};

use crate::types::{CreateSessionOptions, ExecRequest, ExecResult};
use crate::{Error, Result};

fn env_json(env: &[(String, String)]) -> Value {
    Value::Object(
        env.iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect(),
    )
}

pub(crate) fn exec_body(r: &ExecRequest) -> Value {
    let mut m = Map::new();
    match &r.args {
        Some(a) if r.command.is_empty() => m.insert("args".into(), json!(a)),
        _ => m.insert("command".into(), json!(r.command)),
    };
    if let Some(w) = &r.work_dir {
        m.insert("workDir".into(), json!(w));
    }
    if let Some(e) = &r.env {
        m.insert("env".into(), env_json(e));
    }
    if let Some(d) = r.timeout {
        m.insert("timeoutSeconds".into(), json!(d.as_secs_f64()));
    } else if let Some(t) = r.timeout_seconds {
        m.insert("timeoutSeconds".into(), json!(t));
    }
    if let Some(s) = &r.stdin {
        m.insert("stdin".into(), json!(s));
    }
    if let Some(u) = &r.user {
        m.insert("user".into(), json!(u));
    }
    if r.base64 {
        m.insert("encoding".into(), json!("base64"));
    }
    if let Some(n) = r.max_output_bytes {
        m.insert("maxOutputBytes".into(), json!(n));
    }
    Value::Object(m)
}

fn b64(s: &str) -> Result<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|c| *c != b'=') {
        acc = (acc << 6) | val(c).ok_or_else(|| Error::Protocol("bad base64".into()))?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}

pub(crate) fn base64_encode(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(crate) fn exec_result(v: &Value, base64: bool) -> Result<ExecResult> {
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    let mut r = ExecResult {
        stdout: text("stdout"),
        stderr: text("stderr"),
        exit_code: v["exitCode"].as_i64().map(|c| c as i32),
        signal: v["signal"].as_str().map(str::to_string),
        timed_out: v["timedOut"].as_bool().unwrap_or(false),
        truncated: v["truncated"].as_bool().unwrap_or(false),
        duration_ms: v["durationMs"].as_u64().unwrap_or(0),
        ..Default::default()
    };
    if base64 {
        let (o, e) = (b64(&r.stdout)?, b64(&r.stderr)?);
        r.stdout = String::from_utf8_lossy(&o).into_owned();
        r.stderr = String::from_utf8_lossy(&e).into_owned();
        r.stdout_bytes = Some(o);
        r.stderr_bytes = Some(e);
    }
    Ok(r)
}

pub(crate) fn session_body(o: &CreateSessionOptions) -> Value {
    let mut m = Map::new();
    if let Some(n) = &o.name {
        m.insert("name".into(), json!(n));
    }
    if let Some(c) = &o.command {
        m.insert("command".into(), json!(c));
    } else if let Some(a) = &o.args {
        m.insert("args".into(), json!(a));
    }
    if let Some(w) = &o.work_dir {
        m.insert("workDir".into(), json!(w));
    }
    if let Some(e) = &o.env {
        m.insert("env".into(), env_json(e));
    }
    if let Some(u) = &o.user {
        m.insert("user".into(), json!(u));
    }
    if let Some(p) = o.pty {
        m.insert("pty".into(), json!(p));
    }
    if let Some(c) = o.cols {
        m.insert("cols".into(), json!(c));
    }
    if let Some(r) = o.rows {
        m.insert("rows".into(), json!(r));
    }
    if let Some(b) = o.buffer_size {
        m.insert("bufferSize".into(), json!(b));
    }
    Value::Object(m)
}

/// The input body: text as `data`, other bytes (and NUL, which the
/// daemon's JSON refuses in strings) as `dataBase64`.
pub(crate) fn input_body(data: &[u8]) -> Value {
    match std::str::from_utf8(data) {
        Ok(s) if !s.contains('\0') => json!({ "data": s }),
        _ => json!({ "dataBase64": base64_encode(data) }),
    }
}

/// The attach query string.
pub(crate) fn attach_query(
    cols: Option<u16>,
    rows: Option<u16>,
    since: Option<u64>,
    read_only: bool,
    pace: bool,
) -> String {
    let mut q = Vec::new();
    if let Some(c) = cols {
        q.push(format!("cols={c}"));
    }
    if let Some(r) = rows {
        q.push(format!("rows={r}"));
    }
    if let Some(s) = since {
        q.push(format!("since={s}"));
    }
    if read_only {
        q.push("readOnly=1".into());
    }
    if pace {
        q.push("pace=1".into());
    }
    if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    }
}

/// A REST reply, read whole.
pub(crate) struct Reply {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn content_length(&self) -> Option<u64> {
        self.header("Content-Length").and_then(|v| v.parse().ok())
    }
}

/// The head of a request sent by hand, one connection per call.
pub(crate) fn request_head(
    method: &str,
    path: &str,
    host: &str,
    token: Option<&str>,
    body_len: usize,
) -> String {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {body_len}\r\n"
    );
    if body_len > 0 {
        head.push_str("Content-Type: application/json\r\n");
    }
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// The status of a reply's status line.
pub(crate) fn status_of(line: &str) -> Result<u16> {
    line.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| Error::Protocol(format!("bad status line {line:?}")))
}

/// A header line's name and value.
pub(crate) fn header_of(line: &str) -> Option<(String, String)> {
    line.split_once(':')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
}
