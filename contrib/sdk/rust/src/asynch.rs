//! The async client, on tokio: the same calls as [`crate::Sandbox`], each
//! a future. Dropping a future cancels it at once and closes its
//! connection; dropping an exec stream's handle drops its connection (the
//! daemon then kills the process), dropping an attach handle detaches.
//!
//! REST calls speak HTTP/1.1 directly on a tokio `TcpStream` (or the
//! daemon's Unix socket, with [`Config::socket`](crate::Config)), one
//! connection per call: the daemon's replies always carry
//! `Content-Length`, and this keeps hyper's tree out of the build.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{watch, Mutex};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::config::{segment, Config};
use crate::deliver::{Delivery, Sinks, Step};
use crate::rest;
use crate::types::*;
use crate::wire::{self, ServerMessage, Signal};
use crate::{Error, Result};

/// A connection to the daemon: TCP or its Unix socket.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

type Ws = WebSocketStream<Box<dyn Io>>;

/// An async client of one lodged.
#[derive(Clone, Debug)]
pub struct Sandbox {
    cfg: Config,
}

/// Connect with `LODGE_URL` and `LODGE_TOKEN` from the environment.
pub async fn connect() -> Result<Sandbox> {
    Sandbox::with_config(Config::from_env()?)
}

async fn timed<T>(
    d: Option<Duration>,
    what: &str,
    f: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match d {
        Some(d) => tokio::time::timeout(d, f)
            .await
            .map_err(|_| Error::Timeout(format!("{what} took over {d:?}")))?,
        None => f.await,
    }
}

impl Sandbox {
    /// A client with explicit settings.
    pub fn with_config(cfg: Config) -> Result<Sandbox> {
        cfg.authority()?;
        Ok(Sandbox { cfg })
    }

    /// A client of `url` with `token`.
    pub fn connect_to(url: &str, token: &str) -> Result<Sandbox> {
        Sandbox::with_config(Config::new(url, token))
    }

    async fn io(&self) -> Result<Box<dyn Io>> {
        if let Some(path) = &self.cfg.socket {
            let s = timed(Some(self.cfg.connect_timeout), "connect", async {
                Ok(UnixStream::connect(path).await?)
            })
            .await?;
            return Ok(Box::new(s));
        }
        let auth = self.cfg.authority()?;
        let s = timed(Some(self.cfg.connect_timeout), "connect", async {
            Ok(TcpStream::connect(&auth).await?)
        })
        .await?;
        s.set_nodelay(true)?;
        Ok(Box::new(s))
    }

    /// The bearer token, sent over TCP only.
    fn token(&self) -> Option<&str> {
        match self.cfg.socket {
            Some(_) => None,
            None => self.cfg.token.as_deref(),
        }
    }

    async fn http(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<rest::Reply> {
        timed(self.cfg.request_timeout, "request", async {
            let mut s = self.io().await?;
            let body = body.map(|b| b.to_string()).unwrap_or_default();
            let host = self.cfg.authority()?;
            let head = rest::request_head(method, path, &host, self.token(), body.len());
            s.write_all(head.as_bytes()).await?;
            s.write_all(body.as_bytes()).await?;
            let mut r = BufReader::new(s);
            let mut line = String::new();
            r.read_line(&mut line).await?;
            let status = rest::status_of(&line)?;
            let mut reply = rest::Reply {
                headers: Vec::new(),
                body: Vec::new(),
            };
            loop {
                line.clear();
                if r.read_line(&mut line).await? == 0 || line == "\r\n" {
                    break;
                }
                reply.headers.extend(rest::header_of(&line));
            }
            match reply.content_length() {
                Some(n) => {
                    (&mut r).take(n).read_to_end(&mut reply.body).await?;
                }
                None => {
                    r.read_to_end(&mut reply.body).await?;
                }
            }
            if !(200..300).contains(&status) {
                return Err(Error::from_reply(status, &reply.body));
            }
            Ok(reply)
        })
        .await
    }

    async fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value> {
        let r = self.http(method, path, body).await?;
        serde_json::from_slice(&r.body).map_err(|e| Error::Protocol(format!("bad JSON reply: {e}")))
    }

    /// `GET /v1/health`.
    pub async fn health(&self) -> Result<Health> {
        let v = self.json("GET", "/v1/health", None).await?;
        serde_json::from_value(v).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// Run a command to its end (`POST /v1/exec`).
    pub async fn exec(&self, req: ExecRequest) -> Result<ExecResult> {
        let v = self
            .json("POST", "/v1/exec", Some(rest::exec_body(&req)))
            .await?;
        rest::exec_result(&v, req.base64)
    }

    /// `exec` of a shell command with no options.
    pub async fn exec_command(&self, command: &str) -> Result<ExecResult> {
        self.exec(ExecRequest {
            command: command.into(),
            ..Default::default()
        })
        .await
    }

    /// Start a session.
    pub async fn create_session(&self, o: CreateSessionOptions) -> Result<Session> {
        let v = self
            .json("POST", "/v1/sessions", Some(rest::session_body(&o)))
            .await?;
        serde_json::from_value(v).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// Every session.
    pub async fn list_sessions(&self) -> Result<Vec<Session>> {
        let v = self.json("GET", "/v1/sessions", None).await?;
        serde_json::from_value(v["sessions"].clone()).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// One session, by id or name.
    pub async fn get_session(&self, r: &str) -> Result<Session> {
        let v = self
            .json("GET", &format!("/v1/sessions/{}", segment(r)), None)
            .await?;
        serde_json::from_value(v).map_err(|e| Error::Protocol(e.to_string()))
    }

    /// End a session's processes and forget it.
    pub async fn delete_session(&self, r: &str) -> Result<()> {
        self.http("DELETE", &format!("/v1/sessions/{}", segment(r)), None)
            .await?;
        Ok(())
    }

    /// Signal a session without attaching.
    pub async fn signal_session(&self, r: &str, sig: impl Into<Signal>) -> Result<()> {
        let s = match sig.into() {
            Signal::Name(n) => serde_json::json!(n),
            Signal::Number(n) => serde_json::json!(n),
        };
        let path = format!("/v1/sessions/{}/signal", segment(r));
        self.http("POST", &path, Some(serde_json::json!({ "signal": s })))
            .await?;
        Ok(())
    }

    /// Write to a session's stdin without attaching.
    pub async fn send_input(&self, r: &str, data: impl AsRef<[u8]>) -> Result<()> {
        let path = format!("/v1/sessions/{}/input", segment(r));
        self.http("POST", &path, Some(rest::input_body(data.as_ref())))
            .await?;
        Ok(())
    }

    /// Resize a session's PTY without attaching.
    pub async fn resize_session(&self, r: &str, cols: u16, rows: u16) -> Result<()> {
        let path = format!("/v1/sessions/{}/resize", segment(r));
        self.http(
            "POST",
            &path,
            Some(serde_json::json!({"cols": cols, "rows": rows})),
        )
        .await?;
        Ok(())
    }

    /// The session's buffered output.
    pub async fn session_log(&self, r: &str) -> Result<Vec<u8>> {
        Ok(self.session_log_since(r, None).await?.data)
    }

    /// The buffered output from offset `since`, with its offsets.
    pub async fn session_log_since(&self, r: &str, since: Option<u64>) -> Result<SessionLog> {
        let mut path = format!("/v1/sessions/{}/log", segment(r));
        if let Some(s) = since {
            path.push_str(&format!("?since={s}"));
        }
        let rep = self.http("GET", &path, None).await?;
        let num = |h: &str| rep.header(h).and_then(|v| v.parse().ok()).unwrap_or(0);
        let (start, end) = (num("Lodge-Log-Start"), num("Lodge-Log-End"));
        Ok(SessionLog {
            data: rep.body,
            start,
            end,
        })
    }

    /// Wait for a session's process to exit (the daemon's `/wait` long
    /// poll, 30 s at a time; `request_timeout` must then exceed 30 s).
    pub async fn wait_session(&self, r: &str) -> Result<ExitStatus> {
        let path = format!("/v1/sessions/{}/wait?timeout=30", segment(r));
        loop {
            let v = self.json("GET", &path, None).await?;
            let s: Session =
                serde_json::from_value(v).map_err(|e| Error::Protocol(e.to_string()))?;
            if s.exited() {
                return Ok(ExitStatus {
                    code: s.exit_code,
                    signal: s.signal,
                    timed_out: false,
                });
            }
        }
    }

    async fn ws(&self, path: &str) -> Result<Ws> {
        let auth = self.cfg.authority()?;
        let sock = self.io().await?;
        let mut req = format!("ws://{auth}{path}")
            .into_client_request()
            .map_err(|e| Error::Config(e.to_string()))?;
        if let Some(t) = self.token() {
            let v = format!("Bearer {t}")
                .parse()
                .map_err(|_| Error::Config("token is not a header value".into()))?;
            req.headers_mut().insert("Authorization", v);
        }
        let hs = tokio_tungstenite::client_async_with_config(
            req,
            sock,
            Some(crate::blocking::ws_config()),
        );
        let (ws, _) = timed(
            Some(self.cfg.connect_timeout),
            "WebSocket handshake",
            async { hs.await.map_err(crate::blocking::ws_error) },
        )
        .await?;
        Ok(ws)
    }

    /// Start a live exec stream; resolves once the process started.
    pub async fn exec_stream(&self, o: ExecStreamOptions) -> Result<ExecStreamHandle> {
        let ws = self.ws("/v1/exec/stream").await?;
        let (mut tx, mut rx) = ws.split();
        tx.send(Message::Binary(wire::encode_start(&o).into()))
            .await
            .map_err(crate::blocking::ws_error)?;
        let (pid, max) = loop {
            match read_msg(&mut rx).await? {
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
        let sinks = Sinks {
            stdout: o.on_stdout.clone(),
            stderr: o.on_stderr.clone(),
            error: o.on_error.clone(),
            ..Default::default()
        };
        let inner = Inner::new(tx, max);
        let (done_tx, done) = watch::channel(None);
        let task = tokio::spawn(async move {
            let mut d = Delivery::new(sinks);
            let run = std::panic::AssertUnwindSafe(pump(&mut rx, &mut d)).catch_unwind();
            let end = match run.await {
                Ok(Ok(end)) => end,
                Ok(Err(e)) => Err(e),
                Err(p) => Err(crate::error::panic_message(p)),
            };
            let _ = done_tx.send(Some(end));
        });
        Ok(ExecStreamHandle {
            inner,
            pid,
            done,
            task,
        })
    }

    /// Attach to a session: replay, then live output; resumes by itself.
    pub async fn attach_session(
        &self,
        id: &str,
        o: SessionAttachOptions,
    ) -> Result<SessionAttachHandle> {
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
        let (tx, mut rx) = self.ws(&path).await?.split();
        let (session, max) = first_attached(&mut rx, &mut d).await?;
        let inner = Inner::new(tx, max);
        let (done_tx, done) = watch::channel(None);
        let bg = inner.clone();
        let me = self.clone();
        let (read_only, pace, no_resume) = (o.read_only, o.pace, o.no_resume);
        let reconnects = Arc::new(AtomicU64::new(0));
        let rc = reconnects.clone();
        let task = tokio::spawn(async move {
            let run = std::panic::AssertUnwindSafe(async move {
                loop {
                    let lost = match pump(&mut rx, &mut d).await {
                        Ok(end) => break end,
                        Err(e) => e,
                    };
                    if no_resume {
                        break Err(lost);
                    }
                    let deadline = tokio::time::Instant::now() + me.cfg.resume_timeout;
                    let mut pause = Duration::from_millis(50);
                    let again = loop {
                        let q = rest::attach_query(None, None, d.next, read_only, pace);
                        match me.ws(&(base.clone() + &q)).await {
                            Ok(w) => {
                                let (t, mut r) = w.split();
                                match first_attached(&mut r, &mut d).await {
                                    Ok((_, max)) => {
                                        bg.replace(t, max).await;
                                        break Ok(r);
                                    }
                                    Err(
                                        e @ (Error::ConnectionLost(_)
                                        | Error::Io(_)
                                        | Error::Timeout(_)),
                                    ) => {
                                        if tokio::time::Instant::now() > deadline {
                                            break Err(e);
                                        }
                                    }
                                    Err(e) => break Err(e),
                                }
                            }
                            Err(
                                e @ (Error::Io(_)
                                | Error::Timeout(_)
                                | Error::ConnectionLost(_)
                                | Error::Unavailable { .. }),
                            ) => {
                                if tokio::time::Instant::now() > deadline {
                                    break Err(Error::ConnectionLost(format!(
                                        "resume failed: {e}"
                                    )));
                                }
                            }
                            Err(e) => break Err(e),
                        }
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(2));
                    };
                    match again {
                        Ok(r) => {
                            rx = r;
                            rc.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => break Err(e),
                    }
                }
            });
            let end = run
                .catch_unwind()
                .await
                .unwrap_or_else(|p| Err(crate::error::panic_message(p)));
            let _ = done_tx.send(Some(end));
        });
        Ok(SessionAttachHandle {
            inner,
            session,
            done,
            task,
            reconnects,
        })
    }
}

async fn read_msg(rx: &mut SplitStream<Ws>) -> Result<Option<ServerMessage>> {
    loop {
        match rx.next().await {
            Some(Ok(Message::Binary(b))) => return wire::decode(&b).map(Some),
            Some(Ok(Message::Close(_))) | None => return Ok(None),
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                return Err(Error::ConnectionLost(
                    crate::blocking::ws_error(e).to_string(),
                ))
            }
        }
    }
}

async fn first_attached(
    rx: &mut SplitStream<Ws>,
    d: &mut Delivery,
) -> Result<(Session, Option<u64>)> {
    match read_msg(rx).await? {
        Some(ServerMessage::Attached {
            session,
            replay_from,
            replay_to,
            max_message_bytes,
        }) => {
            let s = (*session).clone();
            d.handle(ServerMessage::Attached {
                session,
                replay_from,
                replay_to,
                max_message_bytes,
            })?;
            Ok((s, max_message_bytes))
        }
        Some(ServerMessage::Error { code, message }) => Err(Error::from_code(&code, 0, message)),
        Some(other) => Err(Error::Protocol(format!("expected attached, got {other:?}"))),
        None => Err(Error::ConnectionLost("closed before attached".into())),
    }
}

/// `Ok(end)` is final, `Err` a lost connection (see the blocking `pump`).
async fn pump(
    rx: &mut SplitStream<Ws>,
    d: &mut Delivery,
) -> std::result::Result<Result<ExitStatus>, Error> {
    let mut failed: Option<Error> = None;
    loop {
        let m = match read_msg(rx).await {
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

struct Inner {
    /// The writing half; `None` once closed.
    tx: Mutex<Option<SplitSink<Ws, Message>>>,
    max: AtomicUsize,
    closed: std::sync::atomic::AtomicBool,
}

impl Inner {
    fn new(tx: SplitSink<Ws, Message>, max: Option<u64>) -> Arc<Inner> {
        Arc::new(Inner {
            tx: Mutex::new(Some(tx)),
            max: AtomicUsize::new(max.map_or(crate::blocking::DEFAULT_MAX_MESSAGE, |m| m as usize)),
            closed: Default::default(),
        })
    }

    async fn replace(&self, tx: SplitSink<Ws, Message>, max: Option<u64>) {
        let mut g = self.tx.lock().await;
        if !self.closed.load(Ordering::SeqCst) {
            *g = Some(tx);
        }
        if let Some(m) = max {
            self.max.store(m as usize, Ordering::Relaxed);
        }
    }

    /// Drop the writing half (with the reading half gone, the socket closes).
    fn close(self: &Arc<Self>) {
        self.closed.store(true, Ordering::SeqCst);
        if let Ok(mut g) = self.tx.try_lock() {
            *g = None;
        } else if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let me = self.clone();
            rt.spawn(async move { *me.tx.lock().await = None });
        }
    }

    async fn send(&self, msg: Vec<u8>) -> Result<()> {
        let mut g = self.tx.lock().await;
        let tx = match g.as_mut() {
            Some(tx) => tx,
            None => return Err(Error::ConnectionLost("closed".into())),
        };
        tx.send(Message::Binary(msg.into()))
            .await
            .map_err(|e| match crate::blocking::ws_error(e) {
                Error::Io(e) => Error::ConnectionLost(e.to_string()),
                other => other,
            })
    }

    async fn write(&self, data: &[u8]) -> Result<()> {
        let chunk = self
            .max
            .load(Ordering::Relaxed)
            .saturating_sub(wire::STDIN_OVERHEAD)
            .max(1);
        if data.is_empty() {
            return self.send(wire::encode_stdin(data)).await;
        }
        for part in data.chunks(chunk) {
            self.send(wire::encode_stdin(part)).await?;
        }
        Ok(())
    }
}

async fn wait_done(
    done: &watch::Receiver<Option<Result<ExitStatus>>>,
    closed: Error,
) -> Result<ExitStatus> {
    let mut rx = done.clone();
    let r = rx.wait_for(Option::is_some).await.map_err(|_| closed)?;
    r.clone()
        .unwrap_or_else(|| Err(Error::ConnectionLost("no end".into())))
}

/// A running exec stream; dropping it drops the connection (the daemon
/// kills the process).
pub struct ExecStreamHandle {
    inner: Arc<Inner>,
    pid: i64,
    done: watch::Receiver<Option<Result<ExitStatus>>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ExecStreamHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecStreamHandle")
            .field("pid", &self.pid)
            .finish()
    }
}

impl ExecStreamHandle {
    /// The process id.
    pub fn pid(&self) -> i64 {
        self.pid
    }
    /// Write bytes to stdin, split to the daemon's message limit.
    pub async fn write(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write(data.as_ref()).await
    }
    /// Write text to stdin.
    pub async fn write_string(&self, s: &str) -> Result<()> {
        self.write(s.as_bytes()).await
    }
    /// Close stdin (`eof`).
    pub async fn close_stdin(&self) -> Result<()> {
        self.inner.send(wire::encode_eof()).await
    }
    /// Resize the PTY.
    pub async fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        self.inner.send(wire::encode_resize(cols, rows)).await
    }
    /// Send a signal.
    pub async fn signal(&self, sig: impl Into<Signal>) -> Result<()> {
        self.inner.send(wire::encode_signal(&sig.into())).await
    }
    /// The exit, after every output callback returned; a stream that
    /// ends without `exit` is [`Error::ConnectionLost`].
    pub async fn wait(&self) -> Result<ExitStatus> {
        wait_done(
            &self.done,
            Error::ConnectionLost("closed by the caller".into()),
        )
        .await
    }
    /// Drop the connection now (the daemon kills the process).
    pub fn close(&self) {
        self.task.abort();
        self.inner.close();
    }
}

impl Drop for ExecStreamHandle {
    fn drop(&mut self) {
        self.close();
    }
}

/// An attach to a session; dropping it detaches.
pub struct SessionAttachHandle {
    inner: Arc<Inner>,
    session: Session,
    done: watch::Receiver<Option<Result<ExitStatus>>>,
    task: tokio::task::JoinHandle<()>,
    reconnects: Arc<AtomicU64>,
}

impl std::fmt::Debug for SessionAttachHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionAttachHandle")
            .field("session", &self.session.id)
            .finish()
    }
}

impl SessionAttachHandle {
    /// Write bytes, split to the message limit.
    pub async fn write(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write(data.as_ref()).await
    }
    /// Write text.
    pub async fn write_string(&self, s: &str) -> Result<()> {
        self.write(s.as_bytes()).await
    }
    /// Close the session's stdin.
    pub async fn close_stdin(&self) -> Result<()> {
        self.inner.send(wire::encode_eof()).await
    }
    /// Resize the PTY.
    pub async fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        self.inner.send(wire::encode_resize(cols, rows)).await
    }
    /// Signal the session.
    pub async fn signal(&self, sig: impl Into<Signal>) -> Result<()> {
        self.inner.send(wire::encode_signal(&sig.into())).await
    }
    /// The session as `attached` described it.
    pub fn session(&self) -> &Session {
        &self.session
    }
    /// How many times the handle resumed.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }
    /// The session's exit.
    pub async fn wait(&self) -> Result<ExitStatus> {
        wait_done(&self.done, Error::Detached).await
    }
    /// Detach: the process runs on; `wait` gives [`Error::Detached`].
    pub fn detach(&self) {
        self.task.abort();
        self.inner.close();
    }
}

impl Drop for SessionAttachHandle {
    fn drop(&mut self) {
        self.detach();
    }
}
