//! Helpers shared by the suites: the kit's daemon, its control line,
//! unique names, polling with a generous bound.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

pub fn sandbox() -> lodge::Sandbox {
    assert!(
        std::env::var("LODGE_URL").is_ok(),
        "run under tests/sdk/with-lodged (LODGE_URL unset)"
    );
    lodge::connect().expect("connect")
}

/// A sandbox through the kit's proxy.
pub fn proxied() -> lodge::Sandbox {
    let reply = kit("proxy");
    let port = reply.strip_prefix("ok ").expect("proxy port").trim();
    let mut cfg = lodge::Config::from_env().unwrap();
    cfg.url = format!("http://127.0.0.1:{port}");
    lodge::Sandbox::with_config(cfg).unwrap()
}

/// One line to the kit's control connection, its reply line.
pub fn kit(cmd: &str) -> String {
    let addr = std::env::var("LODGE_KIT_CONTROL").expect("LODGE_KIT_CONTROL");
    let mut s = TcpStream::connect(addr).expect("kit control");
    writeln!(s, "{cmd}").unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    assert!(line.starts_with("ok"), "kit {cmd}: {line}");
    line.trim().to_string()
}

pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        Instant::now().elapsed().subsec_nanos()
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
    )
}

/// Poll `f` until it is true, for at most `secs` seconds.
pub fn eventually(secs: u64, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("not within {secs} s");
}

/// A session deleted when the test ends.
pub struct Temp<'a>(pub &'a lodge::Sandbox, pub lodge::Session);

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        let _ = self.0.delete_session(&self.1.id);
    }
}

pub fn session<'a>(sb: &'a lodge::Sandbox, mut o: lodge::CreateSessionOptions) -> Temp<'a> {
    if o.name.is_none() {
        o.name = Some(unique("rs"));
    }
    let s = sb.create_session(o).expect("create session");
    Temp(sb, s)
}

pub fn sh(cmd: &str) -> lodge::CreateSessionOptions {
    lodge::CreateSessionOptions {
        command: Some(cmd.into()),
        ..Default::default()
    }
}

pub fn args(a: &[&str]) -> lodge::CreateSessionOptions {
    lodge::CreateSessionOptions {
        args: Some(a.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

/// A byte sink shared with a callback.
#[derive(Clone, Default)]
pub struct Sink(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Sink {
    pub fn cb(&self) -> lodge::OutputCallback {
        let me = self.0.clone();
        std::sync::Arc::new(move |c: Vec<u8>| me.lock().unwrap().extend_from_slice(&c))
    }
    pub fn get(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.get()).into_owned()
    }
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether process `pid` exists (and is no zombie).
pub fn alive(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}
