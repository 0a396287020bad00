//! The WebSocket messages (msgpack maps), encoded canonically.

use rmpv::Value;

use crate::types::{ExecStreamOptions, ExitStatus, Session};
use crate::Error;

/// A signal by name (`"INT"`, `"RTMIN+3"`) or number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    Name(String),
    Number(i64),
}

impl From<&str> for Signal {
    fn from(s: &str) -> Self {
        Signal::Name(s.to_string())
    }
}
impl From<String> for Signal {
    fn from(s: String) -> Self {
        Signal::Name(s)
    }
}
impl From<i64> for Signal {
    fn from(n: i64) -> Self {
        Signal::Number(n)
    }
}
impl From<i32> for Signal {
    fn from(n: i32) -> Self {
        Signal::Number(n.into())
    }
}

/// A message from the daemon.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerMessage {
    Stdout {
        data: Vec<u8>,
        offset: u64,
    },
    Stderr {
        data: Vec<u8>,
        offset: u64,
    },
    Exit(ExitStatus),
    Error {
        code: String,
        message: String,
    },
    Started {
        pid: i64,
        max_message_bytes: Option<u64>,
    },
    Attached {
        session: Box<Session>,
        replay_from: u64,
        replay_to: u64,
        max_message_bytes: Option<u64>,
    },
    Live,
    Gap {
        from: u64,
        to: u64,
    },
    /// A type this version does not know (ignored).
    Other(String),
}

fn s(k: &str) -> Value {
    Value::from(k)
}

fn pack(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, v).expect("writing to a Vec");
    out
}

fn seconds(v: Option<std::time::Duration>, whole: Option<u64>) -> Option<Value> {
    if let Some(d) = v {
        let f = d.as_secs_f64();
        if f.fract() == 0.0 {
            return Some(Value::from(d.as_secs()));
        }
        return Some(Value::F64(f));
    }
    whole.map(Value::from)
}

pub(crate) fn env_value(env: &[(String, String)]) -> Value {
    Value::Map(env.iter().map(|(k, v)| (s(k), s(v))).collect())
}

/// `{"type":"start",...}` with only the fields set, in canonical order.
pub fn encode_start(o: &ExecStreamOptions) -> Vec<u8> {
    let mut m = vec![(s("type"), s("start"))];
    match &o.args {
        Some(a) if o.command.is_empty() => {
            m.push((s("args"), Value::Array(a.iter().map(|x| s(x)).collect())))
        }
        _ => m.push((s("command"), s(&o.command))),
    }
    if let Some(w) = &o.work_dir {
        m.push((s("workDir"), s(w)));
    }
    if let Some(e) = &o.env {
        m.push((s("env"), env_value(e)));
    }
    if let Some(u) = &o.user {
        m.push((s("user"), s(u)));
    }
    if let Some(t) = seconds(o.timeout, o.timeout_seconds) {
        m.push((s("timeoutSeconds"), t));
    }
    if o.tty {
        m.push((s("tty"), Value::Boolean(true)));
    }
    if let Some(c) = o.cols {
        m.push((s("cols"), Value::from(c)));
    }
    if let Some(r) = o.rows {
        m.push((s("rows"), Value::from(r)));
    }
    pack(&Value::Map(m))
}

/// The start message exactly as the caller gave each field, `tty: false`
/// included (for the canonical vectors).
pub fn encode_start_explicit(o: &ExecStreamOptions, tty: Option<bool>) -> Vec<u8> {
    let mut v = rmpv::decode::read_value(&mut &encode_start(o)[..]).expect("own encoding");
    if let (Some(false), Value::Map(m)) = (tty, &mut v) {
        let at = m
            .iter()
            .position(|(k, _)| k.as_str() == Some("cols") || k.as_str() == Some("rows"))
            .unwrap_or(m.len());
        m.insert(at, (s("tty"), Value::Boolean(false)));
    }
    pack(&v)
}

pub fn encode_stdin(data: &[u8]) -> Vec<u8> {
    pack(&Value::Map(vec![
        (s("type"), s("stdin")),
        (s("data"), Value::Binary(data.to_vec())),
    ]))
}

pub fn encode_eof() -> Vec<u8> {
    pack(&Value::Map(vec![(s("type"), s("eof"))]))
}

pub fn encode_resize(cols: u16, rows: u16) -> Vec<u8> {
    pack(&Value::Map(vec![
        (s("type"), s("resize")),
        (s("cols"), Value::from(cols)),
        (s("rows"), Value::from(rows)),
    ]))
}

pub fn encode_signal(sig: &Signal) -> Vec<u8> {
    let v = match sig {
        Signal::Name(n) => s(n),
        Signal::Number(n) => Value::from(*n),
    };
    pack(&Value::Map(vec![
        (s("type"), s("signal")),
        (s("signal"), v),
    ]))
}

/// The bytes a stdin message adds around its data, at most.
pub const STDIN_OVERHEAD: usize = 32;

fn get<'a>(m: &'a [(Value, Value)], k: &str) -> Option<&'a Value> {
    m.iter()
        .find(|(key, _)| key.as_str() == Some(k))
        .map(|(_, v)| v)
}

fn uint(m: &[(Value, Value)], k: &str) -> Result<u64, Error> {
    get(m, k)
        .and_then(Value::as_u64)
        .ok_or_else(|| Error::Protocol(format!("missing or bad field {k:?}")))
}

fn opt_str(m: &[(Value, Value)], k: &str) -> Option<String> {
    get(m, k).and_then(Value::as_str).map(str::to_string)
}

fn limit(m: &[(Value, Value)]) -> Option<u64> {
    match get(m, "limits") {
        Some(Value::Map(l)) => get(l, "maxMessageBytes").and_then(Value::as_u64),
        _ => None,
    }
}

/// msgpack to JSON, for the session object (no bin inside it).
pub(crate) fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Nil => J::Null,
        Value::Boolean(b) => J::Bool(*b),
        Value::Integer(i) => {
            if let Some(u) = i.as_u64() {
                J::from(u)
            } else {
                J::from(i.as_i64().unwrap_or_default())
            }
        }
        Value::F32(f) => J::from(f64::from(*f)),
        Value::F64(f) => J::from(*f),
        Value::String(s) => J::from(s.as_str().unwrap_or_default()),
        Value::Binary(b) => J::Array(b.iter().map(|x| J::from(*x)).collect()),
        Value::Array(a) => J::Array(a.iter().map(to_json).collect()),
        Value::Map(m) => J::Object(
            m.iter()
                .filter_map(|(k, v)| k.as_str().map(|k| (k.to_string(), to_json(v))))
                .collect(),
        ),
        Value::Ext(..) => J::Null,
    }
}

/// The data and offset of an output message, the data moved out, not copied.
fn output(m: &mut [(Value, Value)]) -> Result<(Vec<u8>, u64), Error> {
    let offset = uint(m, "offset")?;
    let slot = m
        .iter_mut()
        .find(|(k, _)| k.as_str() == Some("data"))
        .map(|(_, v)| std::mem::replace(v, Value::Nil));
    let data = match slot {
        Some(Value::Binary(b)) => b,
        Some(Value::String(s)) => s.into_bytes(),
        _ => return Err(Error::Protocol("output without data".into())),
    };
    Ok((data, offset))
}

/// Decode one server message; unknown keys are ignored.
pub fn decode(bytes: &[u8]) -> Result<ServerMessage, Error> {
    let v = rmpv::decode::read_value(&mut &bytes[..])
        .map_err(|e| Error::Protocol(format!("bad msgpack: {e}")))?;
    let Value::Map(mut m) = v else {
        return Err(Error::Protocol("message is not a map".into()));
    };
    let t = opt_str(&m, "type").ok_or_else(|| Error::Protocol("message without type".into()))?;
    Ok(match t.as_str() {
        "stdout" => {
            let (data, offset) = output(&mut m)?;
            ServerMessage::Stdout { data, offset }
        }
        "stderr" => {
            let (data, offset) = output(&mut m)?;
            ServerMessage::Stderr { data, offset }
        }
        "exit" => ServerMessage::Exit(ExitStatus {
            code: get(&m, "exitCode")
                .and_then(Value::as_i64)
                .map(|c| c as i32),
            signal: opt_str(&m, "signal"),
            timed_out: get(&m, "timedOut")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }),
        "error" => ServerMessage::Error {
            code: opt_str(&m, "code").unwrap_or_else(|| "internal".into()),
            message: opt_str(&m, "message").unwrap_or_default(),
        },
        "started" => ServerMessage::Started {
            pid: get(&m, "pid").and_then(Value::as_i64).unwrap_or_default(),
            max_message_bytes: limit(&m),
        },
        "attached" => {
            let session = match get(&m, "session") {
                Some(sv) => serde_json::from_value(to_json(sv))
                    .map_err(|e| Error::Protocol(format!("bad session: {e}")))?,
                None => Session::default(),
            };
            ServerMessage::Attached {
                session: Box::new(session),
                replay_from: uint(&m, "replayFrom")?,
                replay_to: uint(&m, "replayTo")?,
                max_message_bytes: limit(&m),
            }
        }
        "live" => ServerMessage::Live,
        "gap" => ServerMessage::Gap {
            from: uint(&m, "from")?,
            to: uint(&m, "to")?,
        },
        other => ServerMessage::Other(other.to_string()),
    })
}
