//! Every Rust example of the two seed documents, as written: each
//! `examples/*.rs` is the example's text with only `use lodge as
//! aerolvm_sdk;`, `let sandbox = aerolvm_sdk::connect()?;`, a `main`
//! around them and `#![allow(unused_variables)]` (the seed's `result2` is
//! unused) added; an example that uses the `session` or `handle` of an
//! earlier one starts with that earlier example's text, unchanged.  Each
//! runs as a subprocess against the kit's lodged and is checked against
//! what the seed says it prints.
//!
//! Examples that wait on an interactive bash are ended from outside once
//! `hello` was seen: the session's bash by the REST input `exit`; the exec
//! stream's bash (which no API call reaches) by SIGKILL, found as the one
//! bash that the example's run added under this suite's own lodged front
//! (a child of tests/sdk/with-lodged, an ancestor of this process), so no
//! other daemon's processes are touched.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// The seeds share the session name `shell` and /workspace: one at a
/// time, in this order.  `exec_signals` comes last: its bash is killed (the
/// handle dropped) in the middle of its start-up files, where a root
/// .bashrc may leave a lock (pyenv rehash's) that holds every later
/// interactive bash up for a minute.
#[test]
fn seeds_in_order() {
    seed_sessions_create();
    seed_sessions_attach();
    seed_sessions_log();
    seed_exec_oneshot();
    seed_exec_stream_live();
    seed_exec_stream_pty();
    seed_exec_signals();
}

fn example(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

struct Run {
    child: Child,
    out: mpsc::Receiver<Vec<u8>>,
    seen: Vec<u8>,
}

impl Run {
    fn new(name: &str) -> Run {
        let mut child = Command::new(example(name))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("example binary (cargo test builds examples)");
        let mut so = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut b = [0u8; 4096];
            while let Ok(n) = so.read(&mut b) {
                if n == 0 || tx.send(b[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Run {
            child,
            out: rx,
            seen: Vec::new(),
        }
    }

    /// Read until the shell's own `hello` line (after \r or \n).
    fn read_hello(&mut self) {
        let pat: &[u8] = b"hello\r\n";
        // 90 s: a root .bashrc may wait up to a minute on a lock (such as
        // pyenv rehash's) that a bash killed in its start-up left behind
        let end = Instant::now() + Duration::from_secs(90);
        while !contains(&self.seen, b"\nhello\r\n") && !contains(&self.seen, b"\rhello\r\n") {
            let left = end.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok(c) => self.seen.extend(c),
                Err(_) => panic!(
                    "{:?} not seen in {:?}",
                    String::from_utf8_lossy(pat),
                    String::from_utf8_lossy(&self.seen)
                ),
            }
        }
    }

    /// Its whole output, after it exited 0.
    fn finish(mut self, secs: u64) -> String {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                while let Ok(c) = self.out.recv_timeout(Duration::from_secs(5)) {
                    self.seen.extend(c);
                }
                let out = String::from_utf8_lossy(&self.seen).into_owned();
                assert!(st.success(), "example failed ({st}): {out}");
                return out;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!(
                    "example still running: {}",
                    String::from_utf8_lossy(&self.seen)
                );
            }
            while let Ok(c) = self.out.try_recv() {
                self.seen.extend(c);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn stat(pid: u32) -> Option<(String, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (l, r) = (s.find('(')?, s.rfind(')')?);
    let ppid = r
        .checked_add(2)
        .and_then(|i| s[i..].split(' ').nth(1))?
        .parse()
        .ok()?;
    Some((s[l + 1..r].to_string(), ppid))
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// The bash processes under this suite's own lodged front.
fn our_bashes() -> HashSet<u32> {
    let mut pid = std::process::id();
    while pid > 1 && !cmdline(pid).contains("with-lodged") {
        pid = stat(pid).map(|s| s.1).unwrap_or(1);
    }
    assert!(pid > 1, "not run under tests/sdk/with-lodged");
    let mut kids: HashMap<u32, Vec<u32>> = HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() {
            if let Some((_, pp)) = stat(p) {
                kids.entry(pp).or_default().push(p);
            }
        }
    }
    let mut todo: Vec<u32> = kids
        .get(&pid)
        .into_iter()
        .flatten()
        .copied()
        .filter(|k| cmdline(*k).starts_with("lodged") || cmdline(*k).contains("/lodged"))
        .collect();
    let mut found = HashSet::new();
    while let Some(p) = todo.pop() {
        todo.extend(kids.get(&p).into_iter().flatten());
        if stat(p).map(|s| s.0 == "bash").unwrap_or(false) {
            found.insert(p);
        }
    }
    found
}

fn workspace() {
    std::fs::create_dir_all("/workspace").unwrap();
    let pj = "/workspace/package.json";
    if !std::path::Path::new(pj).exists() {
        std::fs::write(
            pj,
            r#"{"name":"workspace","version":"1.0.0","private":true}"#,
        )
        .unwrap();
    }
    if !std::path::Path::new("/workspace/index.js").exists() {
        std::fs::write("/workspace/index.js", "console.log('index')\n").unwrap();
    }
}

fn fresh_shell(sb: &lodge::Sandbox) {
    end_shell(sb);
    workspace();
}

/// End the seeds' bash as a user would, so that it is not killed in the
/// middle of its start-up files (a root .bashrc may hold a lock there),
/// then delete the session.
fn end_shell(sb: &lodge::Sandbox) {
    if let Ok(s) = sb.get_session("shell") {
        if !s.exited() && sb.send_input("shell", "exit\n").is_ok() {
            let _ = sb.wait_session("shell");
        }
        let _ = sb.delete_session("shell");
    }
}

fn seed_sessions_create() {
    let sb = sandbox();
    fresh_shell(&sb);
    let out = Run::new("sessions_create").finish(30);
    let id = out.trim();
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{out:?}"
    );
    let s = sb.get_session("shell").unwrap();
    assert_eq!((s.id.as_str(), s.pty, s.cols, s.rows), (id, true, 120, 40));
    assert_eq!(s.work_dir.as_deref(), Some("/workspace"));
    end_shell(&sb);
}

fn seed_sessions_attach() {
    let sb = sandbox();
    fresh_shell(&sb);
    let mut r = Run::new("sessions_attach");
    r.read_hello(); // the shell ran the echo
    sb.send_input("shell", "exit\n").unwrap();
    let out = r.finish(30);
    assert!(
        out.trim_end()
            .ends_with("ExitStatus { code: Some(0), signal: None, timed_out: false }"),
        "{out:?}"
    );
    end_shell(&sb);
}

fn seed_sessions_log() {
    let sb = sandbox();
    fresh_shell(&sb);
    let out = Run::new("sessions_log").finish(30);
    let (id, printed) = out.split_once('\n').unwrap();
    assert_eq!(id.len(), 32);
    assert!(printed.ends_with('\n'));
    // what it printed is the ring's start, as the test reads it now
    let now = String::from_utf8_lossy(&sb.session_log("shell").unwrap()).into_owned();
    assert!(
        now.starts_with(&printed[..printed.len() - 1]),
        "{printed:?} vs {now:?}"
    );
    end_shell(&sb);
}

fn seed_exec_oneshot() {
    workspace();
    assert_eq!(Run::new("exec_oneshot").finish(60), "hello\n\n");
}

fn seed_exec_stream_live() {
    // The Rust seed gives no work_dir: npm runs in the user's home (the
    // daemon's default working directory). It gets a package.json without
    // dependencies there when it has none, so that npm install succeeds
    // offline; what npm leaves behind is removed again.
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()));
    let made: Vec<_> = ["package.json", "package-lock.json", "node_modules"]
        .iter()
        .map(|f| home.join(f))
        .filter(|p| !p.exists())
        .collect();
    let ours = made.contains(&home.join("package.json"));
    if ours {
        std::fs::write(
            home.join("package.json"),
            r#"{"name":"seed","version":"1.0.0","private":true}"#,
        )
        .unwrap();
    }
    let out = Run::new("exec_stream_live").finish(180);
    for p in &made {
        let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir_all(p));
    }
    let last = out
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    if ours {
        assert_eq!(
            last, "ExitStatus { code: Some(0), signal: None, timed_out: false }",
            "{out:?}"
        );
    } else {
        // the home's own package.json: npm's verdict on it is its own
        assert!(
            last.starts_with("ExitStatus { code: Some(")
                && last.ends_with("), signal: None, timed_out: false }"),
            "{out:?}"
        );
    }
}

fn seed_exec_stream_pty() {
    let before = our_bashes();
    let mut r = Run::new("exec_stream_pty");
    r.read_hello();
    // the example's bash: the new one whose parent is no bash (its own
    // subshells, e.g. of a prompt, come and go)
    let new: Vec<u32> = our_bashes()
        .difference(&before)
        .copied()
        .filter(|p| {
            let parent = stat(*p).map(|s| s.1).unwrap_or(1);
            stat(parent).map(|s| s.0 != "bash").unwrap_or(true)
        })
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    unsafe_kill(new[0]);
    let out = r.finish(30);
    assert!(
        out.trim_end()
            .ends_with("ExitStatus { code: None, signal: Some(\"KILL\"), timed_out: false }"),
        "{out:?}"
    );
}

fn seed_exec_signals() {
    // both signal calls returned Ok (the example exits 0 through `?`)
    Run::new("exec_signals").finish(30);
}

fn unsafe_kill(pid: u32) {
    let st = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}
