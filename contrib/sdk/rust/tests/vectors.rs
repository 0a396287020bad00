//! The message vectors of tests/sdk/vectors/: `vectors.encode` (the
//! crate's encoder gives exactly the canonical bytes of every client
//! vector) and `vectors.decode` (its decoder yields every message).

use lodge::wire::{self, ServerMessage, Signal};
use lodge::ExecStreamOptions;
use serde_json::Value;

fn files() -> Vec<(String, Value)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/sdk/vectors");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("tests/sdk/vectors").flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) == Some("json") {
            let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            out.push((p.file_name().unwrap().to_string_lossy().into_owned(), v));
        }
    }
    assert!(out.len() >= 13, "vector files missing");
    out
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn bin(v: &Value) -> Vec<u8> {
    unhex(v["bin"].as_str().expect("a bin"))
}

fn strs(v: &Value) -> Option<Vec<String>> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
}

/// The crate's encoding of a client message given as JSON.
fn encode(m: &Value) -> Vec<u8> {
    match m["type"].as_str().unwrap() {
        "stdin" => wire::encode_stdin(&bin(&m["data"])),
        "eof" => wire::encode_eof(),
        "resize" => wire::encode_resize(
            m["cols"].as_u64().unwrap() as u16,
            m["rows"].as_u64().unwrap() as u16,
        ),
        "signal" => wire::encode_signal(&match &m["signal"] {
            Value::String(s) => Signal::Name(s.clone()),
            n => Signal::Number(n.as_i64().unwrap()),
        }),
        "start" => {
            let mut o = ExecStreamOptions {
                command: m["command"].as_str().unwrap_or_default().into(),
                args: strs(&m["args"]),
                work_dir: m["workDir"].as_str().map(Into::into),
                env: m["env"].as_object().map(|e| {
                    e.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect()
                }),
                user: m["user"].as_str().map(Into::into),
                tty: m["tty"].as_bool().unwrap_or(false),
                cols: m["cols"].as_u64().map(|c| c as u16),
                rows: m["rows"].as_u64().map(|c| c as u16),
                ..Default::default()
            };
            match &m["timeoutSeconds"] {
                Value::Number(n) if n.is_u64() => o.timeout_seconds = n.as_u64(),
                Value::Number(n) => {
                    o.timeout = Some(std::time::Duration::from_secs_f64(n.as_f64().unwrap()))
                }
                _ => {}
            }
            wire::encode_start_explicit(&o, m["tty"].as_bool())
        }
        t => panic!("no encoder for {t}"),
    }
}

#[test]
fn vectors_encode() {
    // vectors.encode
    let mut n = 0;
    for (f, file) in files() {
        if file["direction"] != "client" {
            continue;
        }
        for v in file["vectors"].as_array().unwrap() {
            if v["canonical"] != true {
                continue;
            }
            let got = encode(&v["message"]);
            assert_eq!(got, unhex(v["hex"].as_str().unwrap()), "{f} {}", v["name"]);
            n += 1;
        }
    }
    assert!(n >= 10, "only {n} client vectors");
}

/// What the crate's decoder made of a server message, as the vectors' JSON.
fn as_json(m: ServerMessage, want: &Value) -> Value {
    use serde_json::json;
    let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    match m {
        ServerMessage::Stdout { data, offset } => {
            json!({"type":"stdout","data":{"bin":hex(&data)},"offset":offset})
        }
        ServerMessage::Stderr { data, offset } => {
            json!({"type":"stderr","data":{"bin":hex(&data)},"offset":offset})
        }
        ServerMessage::Exit(x) => {
            let mut j = json!({"type":"exit","exitCode":x.code,"signal":x.signal});
            if want.get("timedOut").is_some() {
                j["timedOut"] = json!(x.timed_out);
            }
            j
        }
        ServerMessage::Error { code, message } => {
            json!({"type":"error","code":code,"message":message})
        }
        ServerMessage::Gap { from, to } => json!({"type":"gap","from":from,"to":to}),
        ServerMessage::Live => json!({"type":"live"}),
        ServerMessage::Started {
            pid,
            max_message_bytes,
        } => {
            let mut j = json!({"type":"started","pid":pid});
            if let Some(m) = max_message_bytes {
                j["limits"] = json!({"maxMessageBytes": m});
            }
            j
        }
        ServerMessage::Attached {
            session,
            replay_from,
            replay_to,
            max_message_bytes,
        } => {
            let s = &want["session"];
            let mut got = serde_json::Map::new();
            let fields: [(&str, Value); 16] = [
                ("id", json!(session.id)),
                ("name", json!(session.name)),
                ("command", json!(session.command)),
                ("args", json!(session.args)),
                ("pid", json!(session.pid)),
                ("pty", json!(session.pty)),
                ("cols", json!(session.cols)),
                ("rows", json!(session.rows)),
                ("workDir", json!(session.work_dir)),
                ("user", json!(session.user)),
                ("createdAt", json!(session.created_at)),
                ("state", json!(session.state)),
                ("exitCode", json!(session.exit_code)),
                ("signal", json!(session.signal)),
                ("clients", json!(session.clients)),
                ("bufferSize", json!(session.buffer_size)),
            ];
            for (k, v) in fields {
                if s.get(k).is_some() {
                    got.insert(k.into(), v);
                }
            }
            if s.get("outputBytes").is_some() {
                got.insert("outputBytes".into(), json!(session.output_bytes));
            }
            let mut j = json!({"type":"attached","session":got,"replayFrom":replay_from,"replayTo":replay_to});
            if let Some(m) = max_message_bytes {
                j["limits"] = json!({"maxMessageBytes": m});
            }
            j
        }
        ServerMessage::Other(t) => json!({"type": t}),
    }
}

/// A client message decoded generically (the crate sends, never receives, them).
fn generic(bytes: &[u8]) -> Value {
    fn conv(v: &rmpv::Value) -> Value {
        match v {
            rmpv::Value::Binary(b) => {
                serde_json::json!({"bin": b.iter().map(|x| format!("{x:02x}")).collect::<String>()})
            }
            rmpv::Value::Map(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.as_str().unwrap().to_string(), conv(v)))
                    .collect(),
            ),
            rmpv::Value::Array(a) => Value::Array(a.iter().map(conv).collect()),
            rmpv::Value::Nil => Value::Null,
            rmpv::Value::Boolean(b) => Value::Bool(*b),
            rmpv::Value::String(s) => Value::from(s.as_str().unwrap()),
            rmpv::Value::F64(f) => Value::from(*f),
            rmpv::Value::Integer(i) => match i.as_u64() {
                Some(u) => Value::from(u),
                None => Value::from(i.as_i64().unwrap()),
            },
            other => panic!("unexpected {other:?}"),
        }
    }
    conv(&rmpv::decode::read_value(&mut &bytes[..]).unwrap())
}

/// The message without keys the decoder does not know.
fn known(mut want: Value) -> Value {
    if let Some(o) = want.as_object_mut() {
        o.remove("future");
        if let Some(l) = o.get_mut("limits").and_then(Value::as_object_mut) {
            l.retain(|k, _| k == "maxMessageBytes");
        }
    }
    want
}

#[test]
fn vectors_decode() {
    // vectors.decode
    let mut n = 0;
    for (f, file) in files() {
        for v in file["vectors"].as_array().unwrap() {
            let bytes = unhex(v["hex"].as_str().unwrap());
            let want = known(v["message"].clone());
            let got = if file["direction"] == "client" {
                generic(&bytes)
            } else {
                let m = wire::decode(&bytes).unwrap_or_else(|e| panic!("{f} {}: {e}", v["name"]));
                assert!(!matches!(m, ServerMessage::Other(_)), "{f}");
                as_json(m, &want)
            };
            assert_eq!(got, want, "{f} {}", v["name"]);
            n += 1;
        }
    }
    assert!(n >= 30, "only {n} vectors");
}
