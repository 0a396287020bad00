//! The blocking client: REST over `ureq` (HTTP/1.1 by hand on the Unix
//! socket, which `ureq` cannot reach), WebSockets over `tungstenite`, one
//! reader thread per stream that calls the output callbacks in order.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::{Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

use crate::config::{segment, Config};
use crate::deliver::{Delivery, Sinks, Step};
use crate::rest;
use crate::types::*;
use crate::wire::{self, ServerMessage, Signal};
use crate::{Error, Result};

/// The daemon's default `--max-message-size` (lodged.8), until told.
pub(crate) const DEFAULT_MAX_MESSAGE: usize = 1 << 20;

/// A blocking client of one lodged.
#[derive(Clone)]
pub struct Sandbox {
    cfg: Config,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("url", &self.cfg.url)
            .field("socket", &self.cfg.socket)
            .finish()
    }
}

/// Connect with `LODGE_URL` and `LODGE_TOKEN` from the environment.
pub fn connect() -> Result<Sandbox> {
    Sandbox::with_config(Config::from_env()?)
}

fn http_error(e: ureq::Error) -> Error {
    match e {
        ureq::Error::Status(code, resp) => {
            let mut body = Vec::new();
            let _ = resp.into_reader().take(1 << 20).read_to_end(&mut body);
            Error::from_reply(code, &body)
        }
        ureq::Error::Transport(t) => {
            let msg = t.to_string();
            if msg.contains("timed out") || msg.contains("Timeout") {
                Error::Timeout(msg)
            } else {
                Error::Io(Arc::new(std::io::Error::other(msg)))
            }
        }
    }
}

impl Sandbox {
    /// A client with explicit settings.
    pub fn with_config(cfg: Config) -> Result<Sandbox> {
        cfg.authority()?;
        let mut b = ureq::AgentBuilder::new().timeout_connect(cfg.connect_timeout);
        if let Some(t) = cfg.request_timeout {
            b = b.timeout(t);
        }
        Ok(Sandbox {
            cfg,
            agent: b.build(),
        })
    }

    /// A client of `url` with `token`.
    pub fn connect_to(url: &str, token: &str) -> Result<Sandbox> {
        Sandbox::with_config(Config::new(url, token))
    }

    /// The settings in use.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    fn req(&self, method: &str, path: &str) -> ureq::Request {
        let r = self
            .agent
            .request(method, &format!("{}{}", self.cfg.base(), path));
        match &self.cfg.token {
            Some(t) => r.set("Authorization", &format!("Bearer {t}")),
            None => r,
        }
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<rest::Reply> {
        self.call_within(method, path, body, self.cfg.request_timeout)
    }

    /// One REST call, its reply read whole; `timeout` bounds it.
    fn call_within(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
        timeout: Option<Duration>,
    ) -> Result<rest::Reply> {
        if let Some(sock) = &self.cfg.socket {
            return self.call_unix(sock, method, path, body, timeout);
        }
        let mut r = self.req(method, path);
        if let Some(t) = timeout {
            r = r.timeout(t);
        }
        let res = match body {
            Some(b) => r.send_json(b),
            None => r.call(),
        };
        let resp = res.map_err(http_error)?;
        let headers = resp
            .headers_names()
            .into_iter()
            .filter_map(|k| resp.header(&k).map(|v| (k.clone(), v.to_string())))
            .collect();
        let mut body = Vec::new();
        resp.into_reader().read_to_end(&mut body)?;
        Ok(rest::Reply { headers, body })
    }

    /// HTTP/1.1 on the Unix socket, one connection per call (the daemon's
    /// replies carry `Content-Length`).
    fn call_unix(
        &self,
        sock: &Path,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
        timeout: Option<Duration>,
    ) -> Result<rest::Reply> {
        let s = UnixStream::connect(sock)?;
        s.set_read_timeout(timeout)?;
        s.set_write_timeout(timeout)?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let head = rest::request_head(method, path, "localhost", None, body.len());
        (&s).write_all(head.as_bytes())?;
        (&s).write_all(body.as_bytes())?;
        let mut r = BufReader::new(&s);
        let mut line = String::new();
        r.read_line(&mut line)?;
        let status = rest::status_of(&line)?;
        let mut reply = rest::Reply {
            headers: Vec::new(),
            body: Vec::new(),
        };
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 || line == "\r\n" {
                break;
            }
            reply.headers.extend(rest::header_of(&line));
        }
        match reply.content_length() {
            Some(n) => r.take(n).read_to_end(&mut reply.body)?,
            None => r.read_to_end(&mut reply.body)?,
        };
        if !(200..300).contains(&status) {
            return Err(Error::from_reply(status, &reply.body));
        }
        Ok(reply)
    }

    fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value> {
        let resp = self.call(method, path, body)?;
        serde_json::from_slice(&resp.body)
            .map_err(|e| Error::Protocol(format!("bad JSON reply: {e}")))
    }

    /// `GET /v1/health`.
    pub fn health(&self) -> Result<Health> {
        let v = self.json("GET", "/v1/health", None)?;
        serde_json::from_value(v).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// Run a command to its end and return its output (`POST /v1/exec`).
    pub fn exec(&self, req: ExecRequest) -> Result<ExecResult> {
        let v = self.json("POST", "/v1/exec", Some(rest::exec_body(&req)))?;
        rest::exec_result(&v, req.base64)
    }

    /// `exec` of a shell command with no options.
    pub fn exec_command(&self, command: &str) -> Result<ExecResult> {
        self.exec(ExecRequest {
            command: command.into(),
            ..Default::default()
        })
    }

    /// Start a session (`POST /v1/sessions`).
    pub fn create_session(&self, o: CreateSessionOptions) -> Result<Session> {
        let v = self.json("POST", "/v1/sessions", Some(rest::session_body(&o)))?;
        serde_json::from_value(v).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// Every session.
    pub fn list_sessions(&self) -> Result<Vec<Session>> {
        let v = self.json("GET", "/v1/sessions", None)?;
        serde_json::from_value(v["sessions"].clone()).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// One session, by id or name.
    pub fn get_session(&self, r: &str) -> Result<Session> {
        let v = self.json("GET", &format!("/v1/sessions/{}", segment(r)), None)?;
        serde_json::from_value(v).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// End a session's processes and forget it.
    pub fn delete_session(&self, r: &str) -> Result<()> {
        self.call("DELETE", &format!("/v1/sessions/{}", segment(r)), None)?;
        Ok(())
    }

    /// Signal a session without attaching.
    pub fn signal_session(&self, r: &str, sig: impl Into<Signal>) -> Result<()> {
        let s = match sig.into() {
            Signal::Name(n) => serde_json::json!(n),
            Signal::Number(n) => serde_json::json!(n),
        };
        let path = format!("/v1/sessions/{}/signal", segment(r));
        self.call("POST", &path, Some(serde_json::json!({ "signal": s })))?;
        Ok(())
    }

    /// Write to a session's stdin without attaching.
    pub fn send_input(&self, r: &str, data: impl AsRef<[u8]>) -> Result<()> {
        let path = format!("/v1/sessions/{}/input", segment(r));
        self.call("POST", &path, Some(rest::input_body(data.as_ref())))?;
        Ok(())
    }

    /// Resize a session's PTY without attaching.
    pub fn resize_session(&self, r: &str, cols: u16, rows: u16) -> Result<()> {
        let path = format!("/v1/sessions/{}/resize", segment(r));
        self.call(
            "POST",
            &path,
            Some(serde_json::json!({"cols": cols, "rows": rows})),
        )?;
        Ok(())
    }

    /// The session's buffered output.
    pub fn session_log(&self, r: &str) -> Result<Vec<u8>> {
        Ok(self.session_log_since(r, None)?.data)
    }

    /// The buffered output from offset `since`, with its offsets.
    pub fn session_log_since(&self, r: &str, since: Option<u64>) -> Result<SessionLog> {
        let mut path = format!("/v1/sessions/{}/log", segment(r));
        if let Some(s) = since {
            path.push_str(&format!("?since={s}"));
        }
        let resp = self.call("GET", &path, None)?;
        let num = |h: &str| resp.header(h).and_then(|v| v.parse().ok()).unwrap_or(0);
        let (start, end) = (num("Lodge-Log-Start"), num("Lodge-Log-End"));
        Ok(SessionLog {
            data: resp.body,
            start,
            end,
        })
    }

    /// Wait for a session's process to exit (the daemon's `/wait` long
    /// poll, 30 s at a time).
    pub fn wait_session(&self, r: &str) -> Result<ExitStatus> {
        let path = format!("/v1/sessions/{}/wait?timeout=30", segment(r));
        loop {
            let bound = Duration::from_secs(30) + self.cfg.connect_timeout * 2;
            let resp = self.call_within("GET", &path, None, Some(bound))?;
            let s: Session = serde_json::from_slice(&resp.body)
                .map_err(|e| Error::Protocol(format!("bad JSON reply: {e}")))?;
            if s.exited() {
                return Ok(ExitStatus {
                    code: s.exit_code,
                    signal: s.signal,
                    timed_out: false,
                });
            }
        }
    }

    fn open(&self) -> Result<Conn> {
        if let Some(sock) = &self.cfg.socket {
            return Ok(Conn::Unix(UnixStream::connect(sock)?));
        }
        let auth = self.cfg.authority()?;
        let addr = auth
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| Error::Config(format!("cannot resolve {auth}")))?;
        let sock = TcpStream::connect_timeout(&addr, self.cfg.connect_timeout)?;
        sock.set_nodelay(true)?;
        Ok(Conn::Tcp(sock))
    }

    fn ws(&self, path: &str) -> Result<(WebSocket<Shared>, Shared)> {
        let auth = self.cfg.authority()?;
        let sock = self.open()?;
        sock.set_read_timeout(Some(self.cfg.connect_timeout.max(Duration::from_secs(30))))?;
        let shared = Shared {
            sock: Arc::new(sock),
            lock: Arc::new(Mutex::new(())),
        };
        let mut req = format!("ws://{auth}{path}")
            .into_client_request()
            .map_err(|e| Error::Config(e.to_string()))?;
        if let (Some(t), None) = (&self.cfg.token, &self.cfg.socket) {
            let v = format!("Bearer {t}")
                .parse()
                .map_err(|_| Error::Config("token is not a header value".into()))?;
            req.headers_mut().insert("Authorization", v);
        }
        let ws =
            match tungstenite::client::client_with_config(req, shared.clone(), Some(ws_config())) {
                Ok((ws, _)) => ws,
                Err(tungstenite::HandshakeError::Failure(e)) => return Err(ws_error(e)),
                Err(tungstenite::HandshakeError::Interrupted(_)) => {
                    return Err(Error::Timeout("WebSocket handshake".into()))
                }
            };
        shared.sock.set_read_timeout(None)?;
        Ok((ws, shared))
    }

    /// Start a live exec stream; returns once the process started.
    pub fn exec_stream(&self, o: ExecStreamOptions) -> Result<ExecStreamHandle> {
        let (mut ws, shared) = self.ws("/v1/exec/stream")?;
        ws.send(Message::Binary(wire::encode_start(&o).into()))
            .map_err(ws_error)?;
        let sinks = Sinks {
            stdout: o.on_stdout.clone(),
            stderr: o.on_stderr.clone(),
            error: o.on_error.clone(),
            ..Default::default()
        };
        let (pid, max) = loop {
            match read_msg(&mut ws)? {
                Some(ServerMessage::Started {
                    pid,
                    max_message_bytes,
                }) => break (pid, max_message_bytes),
                Some(ServerMessage::Error { code, message }) => {
                    return Err(Error::from_code(&code, 0, message))
                }
                Some(_) => continue,
                None => return Err(Error::ConnectionLost("closed before started".into())),
            }
        };
        let inner = Inner::new(shared.clone(), max);
        let bg = inner.clone();
        thread::Builder::new()
            .name("lodge-exec-stream".into())
            .spawn(move || {
                let mut d = Delivery::new(sinks);
                let end = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pump(&mut ws, &mut d)
                }));
                bg.finish(match end {
                    Ok(Ok(end)) => end,
                    Ok(Err(e)) => Err(e),
                    Err(p) => Err(crate::error::panic_message(p)),
                });
            })?;
        Ok(ExecStreamHandle { inner, pid })
    }

    /// Attach to a session: replay, then live output; resumes by itself.
    pub fn attach_session(&self, id: &str, o: SessionAttachOptions) -> Result<SessionAttachHandle> {
        let sinks = Sinks {
            stdout: o.on_stdout.clone(),
            stderr: o.on_stderr.clone(),
            gap: o.on_gap.clone(),
            live: o.on_live.clone(),
            error: o.on_error.clone(),
            strict: o.strict,
        };
        let mut d = Delivery::new(sinks);
        d.next = o.since;
        let base = format!("/v1/sessions/{}/attach", segment(id));
        let path = base.clone() + &rest::attach_query(o.cols, o.rows, o.since, o.read_only, o.pace);
        let (mut ws, shared) = self.ws(&path)?;
        let (session, max) = first_attached(&mut ws, &mut d)?;
        let inner = Inner::new(shared, max);
        *inner.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(session);
        let bg = inner.clone();
        let me = self.clone();
        let (read_only, pace, no_resume) = (o.read_only, o.pace, o.no_resume);
        thread::Builder::new()
            .name("lodge-attach".into())
            .spawn(move || {
                let mut ws = ws;
                let run = std::panic::AssertUnwindSafe(|| loop {
                    let lost = match pump(&mut ws, &mut d) {
                        Ok(end) => break end,
                        Err(e) => e,
                    };
                    if no_resume || bg.detached() {
                        break Err(lost);
                    }
                    // resume from the next byte needed, with bounded backoff
                    let deadline = Instant::now() + me.cfg.resume_timeout;
                    let mut pause = Duration::from_millis(50);
                    let again = loop {
                        if bg.detached() {
                            break Err(Error::Detached);
                        }
                        let q = rest::attach_query(None, None, d.next, read_only, pace);
                        match me.ws(&(base.clone() + &q)) {
                            Ok((mut w, sh)) => match first_attached(&mut w, &mut d) {
                                Ok((_, max)) => {
                                    bg.replace(sh, max);
                                    break Ok(w);
                                }
                                Err(
                                    e @ (Error::ConnectionLost(_)
                                    | Error::Io(_)
                                    | Error::Timeout(_)),
                                ) => {
                                    if Instant::now() > deadline {
                                        break Err(e);
                                    }
                                }
                                Err(e) => break Err(e),
                            },
                            Err(
                                e @ (Error::Io(_)
                                | Error::Timeout(_)
                                | Error::ConnectionLost(_)
                                | Error::Unavailable { .. }),
                            ) => {
                                if Instant::now() > deadline {
                                    break Err(Error::ConnectionLost(format!(
                                        "resume failed: {e}"
                                    )));
                                }
                            }
                            Err(e) => break Err(e),
                        }
                        thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_secs(2));
                    };
                    match again {
                        Ok(w) => {
                            ws = w;
                            bg.reconnects.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => break Err(e),
                    }
                });
                let end = std::panic::catch_unwind(run)
                    .unwrap_or_else(|p| Err(crate::error::panic_message(p)));
                let end = if bg.detached() {
                    Err(Error::Detached)
                } else {
                    end
                };
                bg.finish(end);
            })?;
        Ok(SessionAttachHandle { inner })
    }
}

pub(crate) fn ws_config() -> WebSocketConfig {
    let mut c = WebSocketConfig::default();
    c.max_message_size = Some(1 << 30);
    c.max_frame_size = Some(1 << 30);
    c
}

pub(crate) fn ws_error(e: tungstenite::Error) -> Error {
    match e {
        tungstenite::Error::Http(resp) => {
            let status = resp.status().as_u16();
            Error::from_reply(status, resp.body().as_deref().unwrap_or_default())
        }
        tungstenite::Error::Io(io) => io.into(),
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            Error::ConnectionLost("connection closed".into())
        }
        other => Error::ConnectionLost(other.to_string()),
    }
}

/// The next daemon message, `None` at a close.
fn read_msg(ws: &mut WebSocket<Shared>) -> Result<Option<ServerMessage>> {
    loop {
        match ws.read() {
            Ok(Message::Binary(b)) => return wire::decode(&b).map(Some),
            Ok(Message::Close(_)) => return Ok(None),
            Ok(_) => continue,
            Err(tungstenite::Error::ConnectionClosed) => return Ok(None),
            Err(e) => return Err(Error::ConnectionLost(ws_error(e).to_string())),
        }
    }
}

/// Read up to `attached` (the replay's start), the first message of an attach.
fn first_attached(ws: &mut WebSocket<Shared>, d: &mut Delivery) -> Result<(Session, Option<u64>)> {
    match read_msg(ws)? {
        Some(m @ ServerMessage::Attached { .. }) => {
            let (s, max) = match &m {
                ServerMessage::Attached {
                    session,
                    max_message_bytes,
                    ..
                } => ((**session).clone(), *max_message_bytes),
                _ => unreachable!(),
            };
            d.handle(m)?;
            Ok((s, max))
        }
        Some(ServerMessage::Error { code, message }) => Err(Error::from_code(&code, 0, message)),
        Some(other) => Err(Error::Protocol(format!("expected attached, got {other:?}"))),
        None => Err(Error::ConnectionLost("closed before attached".into())),
    }
}

/// Deliver messages until the stream ends: `Ok(end)` is final (an exit or
/// the daemon's error), `Err` a lost connection.
fn pump(
    ws: &mut WebSocket<Shared>,
    d: &mut Delivery,
) -> std::result::Result<Result<ExitStatus>, Error> {
    let mut failed: Option<Error> = None;
    loop {
        let m = match read_msg(ws) {
            Ok(Some(m)) => m,
            Ok(None) => {
                return match failed {
                    Some(e) => Ok(Err(e)),
                    None => Err(Error::ConnectionLost("closed without exit".into())),
                }
            }
            Err(e) => return Err(e),
        };
        match d.handle(m) {
            Ok(Step::Go) => {}
            Ok(Step::Exit(x)) => return Ok(Ok(x)),
            Ok(Step::Failed(e)) => failed = Some(e),
            Err(e) => return Ok(Err(e)),
        }
    }
}

/// A connection to the daemon: TCP, or its Unix socket.
pub(crate) enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn set_read_timeout(&self, d: Option<Duration>) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_read_timeout(d),
            Conn::Unix(s) => s.set_read_timeout(d),
        }
    }

    fn shutdown(&self, how: Shutdown) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.shutdown(how),
            Conn::Unix(s) => s.shutdown(how),
        }
    }
}

impl Read for &Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => (&*s).read(buf),
            Conn::Unix(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => (&*s).write(buf),
            Conn::Unix(s) => (&*s).write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A socket shared by the reader and the writers; a write goes out whole
/// under the lock, so frames never interleave.
#[derive(Clone)]
pub(crate) struct Shared {
    sock: Arc<Conn>,
    lock: Arc<Mutex<()>>,
}

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (&*self.sock).read(buf)
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        (&*self.sock).write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Writer {
    ws: WebSocket<Shared>,
    shared: Shared,
}

struct Inner {
    writer: Mutex<Writer>,
    done: Mutex<Option<Result<ExitStatus>>>,
    cond: Condvar,
    max: AtomicUsize,
    session: Mutex<Option<Session>>,
    reconnects: AtomicU64,
    detach: std::sync::atomic::AtomicBool,
}

impl Inner {
    fn new(shared: Shared, max: Option<u64>) -> Arc<Inner> {
        let ws = WebSocket::from_raw_socket(shared.clone(), Role::Client, Some(ws_config()));
        Arc::new(Inner {
            writer: Mutex::new(Writer { ws, shared }),
            done: Mutex::new(None),
            cond: Condvar::new(),
            max: AtomicUsize::new(max.map_or(DEFAULT_MAX_MESSAGE, |m| m as usize)),
            session: Mutex::new(None),
            reconnects: AtomicU64::new(0),
            detach: Default::default(),
        })
    }

    fn replace(&self, shared: Shared, max: Option<u64>) {
        let ws = WebSocket::from_raw_socket(shared.clone(), Role::Client, Some(ws_config()));
        *self.writer.lock().unwrap_or_else(|p| p.into_inner()) = Writer { ws, shared };
        if let Some(m) = max {
            self.max.store(m as usize, Ordering::Relaxed);
        }
    }

    fn detached(&self) -> bool {
        self.detach.load(Ordering::Relaxed)
    }

    fn finish(&self, end: Result<ExitStatus>) {
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let _ = w.shared.sock.shutdown(Shutdown::Both);
        drop(w);
        let mut d = self.done.lock().unwrap_or_else(|p| p.into_inner());
        d.get_or_insert(end);
        self.cond.notify_all();
    }

    fn send(&self, msg: Vec<u8>) -> Result<()> {
        if let Some(Err(e)) = &*self.done.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(e.clone());
        }
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        w.ws.send(Message::Binary(msg.into()))
            .map_err(|e| match ws_error(e) {
                Error::Io(e) => Error::ConnectionLost(e.to_string()),
                other => other,
            })
    }

    fn write(&self, data: &[u8]) -> Result<()> {
        let chunk = self
            .max
            .load(Ordering::Relaxed)
            .saturating_sub(wire::STDIN_OVERHEAD)
            .max(1);
        if data.is_empty() {
            return self.send(wire::encode_stdin(data));
        }
        for part in data.chunks(chunk) {
            self.send(wire::encode_stdin(part))?;
        }
        Ok(())
    }

    fn wait(&self) -> Result<ExitStatus> {
        let mut d = self.done.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(r) = &*d {
                return r.clone();
            }
            d = self.cond.wait(d).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn wait_timeout(&self, t: Duration) -> Option<Result<ExitStatus>> {
        let d = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let (d, _) = self
            .cond
            .wait_timeout_while(d, t, |d| d.is_none())
            .unwrap_or_else(|p| p.into_inner());
        d.clone()
    }

    fn close(&self) {
        let w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let _ = w.shared.sock.shutdown(Shutdown::Both);
    }
}

/// A running exec stream. Dropping it (or [`close`](Self::close)) drops
/// the connection, and the daemon then kills the process.
pub struct ExecStreamHandle {
    inner: Arc<Inner>,
    pid: i64,
}

impl std::fmt::Debug for ExecStreamHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecStreamHandle")
            .field("pid", &self.pid)
            .finish()
    }
}

impl ExecStreamHandle {
    /// The process id (`started`).
    pub fn pid(&self) -> i64 {
        self.pid
    }
    /// Write bytes to stdin, split to the daemon's message limit.
    pub fn write(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write(data.as_ref())
    }
    /// Write text to stdin.
    pub fn write_string(&self, s: &str) -> Result<()> {
        self.write(s.as_bytes())
    }
    /// Close stdin (`eof`; pipe mode).
    pub fn close_stdin(&self) -> Result<()> {
        self.inner.send(wire::encode_eof())
    }
    /// Resize the PTY.
    pub fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        self.inner.send(wire::encode_resize(cols, rows))
    }
    /// Send a signal (`"INT"`, `"RTMIN+3"` or a number).
    pub fn signal(&self, sig: impl Into<Signal>) -> Result<()> {
        self.inner.send(wire::encode_signal(&sig.into()))
    }
    /// Wait for the exit; settles after every output callback returned.
    /// A stream that ends without `exit` is [`Error::ConnectionLost`].
    pub fn wait(&self) -> Result<ExitStatus> {
        self.inner.wait()
    }
    /// [`wait`](Self::wait) at most `t`; `None` if still running.
    pub fn wait_timeout(&self, t: Duration) -> Option<Result<ExitStatus>> {
        self.inner.wait_timeout(t)
    }
    /// Drop the connection now (the daemon kills the process).
    pub fn close(&self) {
        self.inner.close()
    }
}

impl Drop for ExecStreamHandle {
    fn drop(&mut self) {
        self.inner.close()
    }
}

/// An attach to a session. Dropping it detaches.
pub struct SessionAttachHandle {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SessionAttachHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionAttachHandle")
            .finish_non_exhaustive()
    }
}

impl SessionAttachHandle {
    /// Write bytes to the session's stdin, split to the message limit.
    pub fn write(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write(data.as_ref())
    }
    /// Write text.
    pub fn write_string(&self, s: &str) -> Result<()> {
        self.write(s.as_bytes())
    }
    /// Close the session's stdin (pipe mode).
    pub fn close_stdin(&self) -> Result<()> {
        self.inner.send(wire::encode_eof())
    }
    /// Resize the PTY.
    pub fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        self.inner.send(wire::encode_resize(cols, rows))
    }
    /// Signal the session's process (group).
    pub fn signal(&self, sig: impl Into<Signal>) -> Result<()> {
        self.inner.send(wire::encode_signal(&sig.into()))
    }
    /// The session as `attached` described it.
    pub fn session(&self) -> Option<Session> {
        self.inner
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
    /// How many times the handle resumed after a lost connection.
    pub fn reconnects(&self) -> u64 {
        self.inner.reconnects.load(Ordering::Relaxed)
    }
    /// Wait for the session's exit; [`Error::Detached`] after a detach.
    pub fn wait(&self) -> Result<ExitStatus> {
        self.inner.wait()
    }
    /// [`wait`](Self::wait) at most `t`.
    pub fn wait_timeout(&self, t: Duration) -> Option<Result<ExitStatus>> {
        self.inner.wait_timeout(t)
    }
    /// Detach: the process runs on; `wait` gives [`Error::Detached`].
    pub fn detach(&self) {
        self.inner.detach.store(true, Ordering::Relaxed);
        self.inner.close();
    }
}

impl Drop for SessionAttachHandle {
    fn drop(&mut self) {
        self.detach()
    }
}
