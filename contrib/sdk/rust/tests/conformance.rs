//! The scenarios of tests/sdk/SCENARIOS.md on the blocking client; each
//! test names its scenario id on the line that defines it.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use lodge::{Error, ExecRequest, ExecStreamOptions, SessionAttachOptions};

fn ex(cmd: &str) -> ExecRequest {
    ExecRequest {
        command: cmd.into(),
        ..Default::default()
    }
}

fn st(cmd: &str) -> ExecStreamOptions {
    ExecStreamOptions {
        command: cmd.into(),
        ..Default::default()
    }
}

fn st_args(a: &[&str]) -> ExecStreamOptions {
    ExecStreamOptions {
        args: Some(a.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

fn code(c: i32) -> lodge::ExitStatus {
    lodge::ExitStatus {
        code: Some(c),
        ..Default::default()
    }
}

fn sig(s: &str) -> lodge::ExitStatus {
    lodge::ExitStatus {
        code: None,
        signal: Some(s.into()),
        timed_out: false,
    }
}

#[test]
fn connect_env() {
    // connect.env
    let h = sandbox().health().unwrap();
    assert_eq!(h.status, "ok");
    assert!(!h.version.is_empty());
}

#[test]
fn connect_explicit() {
    // connect.explicit
    let url = std::env::var("LODGE_URL").unwrap();
    let tok = std::env::var("LODGE_TOKEN").unwrap();
    let h = lodge::Sandbox::connect_to(&url, &tok)
        .unwrap()
        .health()
        .unwrap();
    assert_eq!(h.status, "ok");
}

#[test]
fn exec_basic() {
    // exec.basic
    let r = sandbox().exec(ex("echo hello")).unwrap();
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("hello\n", ""));
    assert_eq!(
        (r.exit_code, r.signal, r.timed_out, r.truncated),
        (Some(0), None, false, false)
    );
}

#[test]
fn exec_exit_code() {
    // exec.exit_code
    let r = sandbox()
        .exec(ex("echo out; echo err >&2; exit 3"))
        .unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code),
        ("out\n", "err\n", Some(3))
    );
    assert_eq!(r.signal, None);
}

#[test]
fn exec_signal() {
    // exec.signal
    let sb = sandbox();
    let r = sb.exec(ex("kill -TERM $$")).unwrap();
    assert_eq!((r.exit_code, r.signal.as_deref()), (None, Some("TERM")));
    let r = sb.exec(ex("kill -KILL $$")).unwrap();
    assert_eq!((r.exit_code, r.signal.as_deref()), (None, Some("KILL")));
}

#[test]
fn exec_timeout() {
    // exec.timeout
    let mut q = ex("sleep 30");
    q.timeout_seconds = Some(1);
    let r = sandbox().exec(q).unwrap();
    assert!(r.timed_out);
    assert_eq!((r.exit_code, r.signal.as_deref()), (None, Some("TERM")));
}

#[test]
fn exec_timeout_fraction() {
    // exec.timeout.fraction
    let q = ExecRequest {
        args: Some(vec!["sleep".into(), "30".into()]),
        timeout: Some(Duration::from_millis(500)),
        ..Default::default()
    };
    let r = sandbox().exec(q).unwrap();
    assert!(r.timed_out);
    assert_eq!(r.signal.as_deref(), Some("TERM"));
}

fn spawn_failed(e: Error) {
    match e {
        Error::SpawnFailed { status, message } => {
            assert_eq!(status, 422);
            assert!(!message.is_empty());
        }
        other => panic!("not spawn_failed: {other:?}"),
    }
}

#[test]
fn exec_spawn_failed() {
    // exec.spawn_failed error.spawn_failed
    let sb = sandbox();
    let mut q = ex("true");
    q.work_dir = Some("/nonexistent".into());
    spawn_failed(sb.exec(q).unwrap_err());
    let q = ExecRequest {
        args: Some(vec!["/nonexistent/program".into()]),
        ..Default::default()
    };
    spawn_failed(sb.exec(q).unwrap_err());
    let mut o = sh("true");
    o.work_dir = Some("/nonexistent".into());
    spawn_failed(sb.create_session(o).unwrap_err());
}

#[test]
fn exec_base64() {
    // exec.base64
    let sb = sandbox();
    let mut q = ex(r"printf '\377\000A\n'");
    q.base64 = true;
    let r = sb.exec(q).unwrap();
    assert_eq!(r.stdout_bytes.as_deref(), Some(&b"\xff\x00A\n"[..]));
    let r = sb.exec(ex(r"printf '\377\000A\n'")).unwrap();
    assert_eq!(r.stdout, "\u{fffd}\u{0}A\n");
}

#[test]
fn exec_workdir_env_user() {
    // exec.workdir_env_user
    let sb = sandbox();
    let me = sb.exec(ex("id -un")).unwrap().stdout.trim().to_string();
    let q = ExecRequest {
        command: "pwd; echo \"$FOO\"; id -un".into(),
        work_dir: Some("/tmp".into()),
        env: Some(vec![("FOO".into(), "bar".into())]),
        user: Some(me.clone()),
        ..Default::default()
    };
    let r = sb.exec(q).unwrap();
    assert_eq!(r.stdout, format!("/tmp\nbar\n{me}\n"));
    let mut q = ex("true");
    q.user = Some("no-such-user-xyz".into());
    spawn_failed(sb.exec(q).unwrap_err());
}

#[test]
fn exec_stdin() {
    // exec.stdin
    let q = ExecRequest {
        args: Some(vec!["cat".into()]),
        stdin: Some("abc".into()),
        ..Default::default()
    };
    assert_eq!(sandbox().exec(q).unwrap().stdout, "abc");
}

#[test]
fn exec_truncated() {
    // exec.truncated
    let mut q = ex("head -c 100000 /dev/zero");
    q.max_output_bytes = Some(10);
    let r = sandbox().exec(q).unwrap();
    assert!(r.truncated);
    assert_eq!(
        (r.stdout.as_str(), r.exit_code),
        ("\0".repeat(10).as_str(), Some(0))
    );
}

#[test]
fn stream_basic() {
    // stream.basic
    let order = Arc::new(Mutex::new(Vec::<(bool, Vec<u8>)>::new()));
    let (o1, o2) = (order.clone(), order.clone());
    let mut o = st("printf out; printf err >&2");
    o.on_stdout = Some(Arc::new(move |c| {
        std::thread::sleep(Duration::from_millis(100)); // wait settles after this
        o1.lock().unwrap().push((false, c))
    }));
    o.on_stderr = Some(Arc::new(move |c| o2.lock().unwrap().push((true, c))));
    let x = sandbox().exec_stream(o).unwrap().wait().unwrap();
    assert_eq!(x, code(0));
    let got = order.lock().unwrap().clone();
    let out: Vec<u8> = got
        .iter()
        .filter(|c| !c.0)
        .flat_map(|c| c.1.clone())
        .collect();
    let err: Vec<u8> = got
        .iter()
        .filter(|c| c.0)
        .flat_map(|c| c.1.clone())
        .collect();
    assert_eq!((out.as_slice(), err.as_slice()), (&b"out"[..], &b"err"[..]));
}

#[test]
fn stream_exit_code() {
    // stream.exit_code
    assert_eq!(
        sandbox().exec_stream(st("exit 5")).unwrap().wait().unwrap(),
        code(5)
    );
}

#[test]
fn stream_stdin_eof() {
    // stream.stdin_eof
    let out = Sink::default();
    let mut o = st_args(&["cat"]);
    o.on_stdout = Some(out.cb());
    let h = sandbox().exec_stream(o).unwrap();
    h.write_string("hello\n").unwrap();
    h.write([0u8, 0xff]).unwrap();
    h.close_stdin().unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
    assert_eq!(out.get(), b"hello\n\x00\xff");
}

#[test]
fn stream_pty() {
    // stream.pty
    let (out, err) = (Sink::default(), Sink::default());
    let mut o = st("test -t 0 && test -t 1 && echo \"tty $TERM\"; echo err >&2");
    o.tty = true;
    o.cols = Some(120);
    o.rows = Some(40);
    o.on_stdout = Some(out.cb());
    o.on_stderr = Some(err.cb());
    assert_eq!(sandbox().exec_stream(o).unwrap().wait().unwrap(), code(0));
    assert!(out.text().contains("tty xterm-256color") && out.text().contains("err"));
    assert!(err.get().is_empty());
}

#[test]
fn stream_resize() {
    // stream.resize
    let out = Sink::default();
    let mut o = st("stty size; read x; stty size");
    o.tty = true;
    o.cols = Some(120);
    o.rows = Some(40);
    o.on_stdout = Some(out.cb());
    let h = sandbox().exec_stream(o).unwrap();
    eventually(10, || out.text().contains("40 120"));
    h.resize(100, 30).unwrap();
    h.write_string("\n").unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
    assert!(out.text().contains("30 100"), "{}", out.text());
}

#[test]
fn stream_signal() {
    // stream.signal
    let out = Sink::default();
    let mut o = st("echo ready; exec sleep 60");
    o.on_stdout = Some(out.cb());
    let h = sandbox().exec_stream(o).unwrap();
    eventually(10, || out.text().contains("ready"));
    h.signal("TERM").unwrap();
    assert_eq!(h.wait().unwrap(), sig("TERM"));
}

#[test]
fn stream_signal_group() {
    // stream.signal.group
    let out = Sink::default();
    let mut o = st("sleep 60 & echo $!; wait");
    o.on_stdout = Some(out.cb());
    let h = sandbox().exec_stream(o).unwrap();
    eventually(10, || out.text().ends_with('\n'));
    let p: i64 = out.text().trim().parse().unwrap();
    h.signal("TERM").unwrap();
    assert_eq!(h.wait().unwrap(), sig("TERM"));
    eventually(10, || !alive(p));
}

#[test]
fn stream_signal_rtmin() {
    // stream.signal.rtmin
    let out = Sink::default();
    let mut o = st_args(&[
        "bash",
        "-c",
        "trap 'echo got; exit 7' RTMIN+3; echo ready; while :; do sleep 0.1; done",
    ]);
    o.on_stdout = Some(out.cb());
    let h = sandbox().exec_stream(o).unwrap();
    eventually(10, || out.text().contains("ready"));
    h.signal("RTMIN+3").unwrap();
    assert_eq!(h.wait().unwrap(), code(7));
    assert!(out.text().contains("got"));
}

#[test]
fn stream_timeout() {
    // stream.timeout
    let mut o = st("sleep 30");
    o.timeout_seconds = Some(1);
    let x = sandbox().exec_stream(o).unwrap().wait().unwrap();
    assert!(x.timed_out);
    assert_eq!(x.signal.as_deref(), Some("TERM"));
}

#[test]
fn stream_spawn_failed() {
    // stream.spawn_failed
    let out = Sink::default();
    let mut o = st("true");
    o.work_dir = Some("/nonexistent".into());
    o.on_stdout = Some(out.cb());
    let r = sandbox().exec_stream(o).and_then(|h| h.wait());
    match r {
        Err(Error::SpawnFailed { message, .. }) => assert!(!message.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(out.get().is_empty());
}

#[test]
fn stream_kill_on_disconnect() {
    // stream.kill_on_disconnect
    let out = Sink::default();
    let mut o = st("echo $$; exec sleep 600");
    o.on_stdout = Some(out.cb());
    let h = sandbox().exec_stream(o).unwrap();
    eventually(10, || out.text().ends_with('\n'));
    let p: i64 = out.text().trim().parse().unwrap();
    h.close();
    assert!(matches!(h.wait(), Err(Error::ConnectionLost(_))));
    eventually(10, || !alive(p));
}

#[test]
fn stream_big_write() {
    // stream.big_write
    let out = Sink::default();
    let mut o = st_args(&["sha256sum"]);
    o.on_stdout = Some(out.cb());
    let data: Vec<u8> = (0..64u32 << 20).map(|i| (i % 251) as u8).collect();
    let h = sandbox().exec_stream(o).unwrap();
    h.write(&data).unwrap();
    h.close_stdin().unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
    let local = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(&data)?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.text(), String::from_utf8_lossy(&local.stdout));
}

#[test]
fn stream_text() {
    // stream.text
    let text = Arc::new(Mutex::new(String::new()));
    let t = text.clone();
    let mut o = st(r"printf '\342'; sleep 0.3; printf '\202\254\n'");
    o.on_stdout = Some(lodge::text_callback(move |s| t.lock().unwrap().push_str(s)));
    assert_eq!(sandbox().exec_stream(o).unwrap().wait().unwrap(), code(0));
    assert_eq!(*text.lock().unwrap(), "€\n");
}

#[test]
fn stream_bad_message() {
    // stream.bad_message
    let out = Sink::default();
    let errs = Arc::new(Mutex::new(Vec::new()));
    let e2 = errs.clone();
    let mut o = st_args(&["cat"]);
    o.on_stdout = Some(out.cb());
    o.on_error = Some(Arc::new(move |e| e2.lock().unwrap().push(e)));
    let h = sandbox().exec_stream(o).unwrap();
    h.signal("NOSUCHSIG").unwrap();
    eventually(10, || !errs.lock().unwrap().is_empty());
    h.write_string("x").unwrap();
    h.close_stdin().unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
    assert_eq!(out.get(), b"x");
    assert!(matches!(errs.lock().unwrap()[0], Error::BadRequest { .. }));
}

#[test]
fn session_create() {
    // session.create
    let sb = sandbox();
    let mut o = sh("bash --norc");
    o.work_dir = Some("/tmp".into());
    o.pty = Some(true);
    o.cols = Some(120);
    o.rows = Some(40);
    let name = unique("rs-create");
    o.name = Some(name.clone());
    let t = session(&sb, o);
    let s = &t.1;
    assert!(
        s.id.len() == 32
            && s.id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    assert_eq!(s.name.as_deref(), Some(name.as_str()));
    assert!(s.pty && s.cols == 120 && s.rows == 40 && s.state == "running");
    assert_eq!(s.work_dir.as_deref(), Some("/tmp"));
    assert!(s.pid.unwrap() > 0);
}

#[test]
fn session_create_args() {
    // session.create.args
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    assert_eq!(t.1.state, "running");
    assert_eq!(t.1.args.as_deref(), Some(&["cat".to_string()][..]));
    assert!(!t.1.pty);
}

#[test]
fn session_list_get() {
    // session.list session.get
    let sb = sandbox();
    let (a, b) = (session(&sb, args(&["cat"])), session(&sb, args(&["cat"])));
    let l = sb.list_sessions().unwrap();
    for t in [&a, &b] {
        assert!(l.iter().any(|s| s.id == t.1.id && s.name == t.1.name));
    }
    let by_name = sb.get_session(a.1.name.as_deref().unwrap()).unwrap();
    assert_eq!(by_name.id, a.1.id);
    assert_eq!(sb.get_session(&a.1.id).unwrap().state, "running");
}

#[test]
fn session_log() {
    // session.log attach.replay.since
    let sb = sandbox();
    let t = session(&sb, sh("printf abcdef"));
    sb.wait_session(&t.1.id).unwrap();
    let l = sb.session_log_since(&t.1.id, None).unwrap();
    assert_eq!((l.data.as_slice(), l.start, l.end), (&b"abcdef"[..], 0, 6));
    let l = sb.session_log_since(&t.1.id, Some(2)).unwrap();
    assert_eq!((l.data.as_slice(), l.start, l.end), (&b"cdef"[..], 2, 6));
    let l = sb.session_log_since(&t.1.id, Some(100)).unwrap();
    assert_eq!((l.data.as_slice(), l.start, l.end), (&b""[..], 6, 6));
    // attach.replay.since
    let out = Sink::default();
    let live = Arc::new(AtomicU64::new(u64::MAX));
    let l2 = live.clone();
    let h = sb
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                since: Some(2),
                on_stdout: Some(out.cb()),
                on_live: Some(Arc::new(move |end| l2.store(end, Ordering::SeqCst))),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
    assert_eq!(out.get(), b"cdef");
    assert_eq!(live.load(Ordering::SeqCst), 6);
}

#[test]
fn session_input() {
    // session.input
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    sb.send_input(&t.1.id, "abc\n").unwrap();
    sb.send_input(&t.1.id, [0u8, 1]).unwrap();
    eventually(10, || sb.session_log(&t.1.id).unwrap() == b"abc\n\x00\x01");
}

#[test]
fn session_resize() {
    // session.resize
    let sb = sandbox();
    let mut o = sh("read x; stty size; read y");
    o.pty = Some(true);
    o.cols = Some(80);
    o.rows = Some(24);
    let t = session(&sb, o);
    sb.resize_session(&t.1.id, 100, 30).unwrap();
    sb.send_input(&t.1.id, "\n").unwrap();
    eventually(10, || {
        contains(&sb.session_log(&t.1.id).unwrap(), b"30 100")
    });
    let s = sb.get_session(&t.1.id).unwrap();
    assert_eq!((s.cols, s.rows), (100, 30));
}

#[test]
fn session_signal() {
    // session.signal
    let sb = sandbox();
    let t = session(&sb, sh("exec sleep 600"));
    sb.signal_session(&t.1.id, "TERM").unwrap();
    assert_eq!(sb.wait_session(&t.1.id).unwrap(), sig("TERM"));
    assert_eq!(sb.get_session(&t.1.id).unwrap().state, "exited");
}

#[test]
fn session_wait() {
    // session.wait
    let sb = sandbox();
    let t = session(&sb, sh("sleep 1; exit 4"));
    assert_eq!(sb.wait_session(&t.1.id).unwrap(), code(4));
    assert_eq!(sb.wait_session(&t.1.id).unwrap(), code(4));
}

fn not_found(e: Error) {
    match e {
        Error::NotFound { status, message } => assert!(status == 404 && !message.is_empty()),
        other => panic!("not not_found: {other:?}"),
    }
}

#[test]
fn session_delete() {
    // session.delete
    let sb = sandbox();
    let s = sb.create_session(sh("echo $$; exec sleep 600")).unwrap();
    eventually(10, || sb.session_log(&s.id).unwrap().ends_with(b"\n"));
    let p: i64 = String::from_utf8_lossy(&sb.session_log(&s.id).unwrap())
        .trim()
        .parse()
        .unwrap();
    sb.delete_session(&s.id).unwrap();
    not_found(sb.get_session(&s.id).unwrap_err());
    eventually(10, || !alive(p));
}

#[test]
fn session_delete_exited() {
    // session.delete.exited
    let sb = sandbox();
    let s = sb.create_session(sh("true")).unwrap();
    sb.wait_session(&s.id).unwrap();
    sb.delete_session(&s.id).unwrap();
    not_found(sb.delete_session(&s.id).unwrap_err());
}

#[test]
fn attach_replay() {
    // attach.replay
    let sb = sandbox();
    let t = session(&sb, sh("echo one; read line; echo \"got $line\""));
    eventually(10, || sb.session_log(&t.1.id).unwrap() == b"one\n");
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let c2 = chunks.clone();
    let live = Arc::new(AtomicU64::new(u64::MAX));
    let l2 = live.clone();
    let h = sb
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                on_stdout: Some(Arc::new(move |c| c2.lock().unwrap().push(c))),
                on_live: Some(Arc::new(move |end| l2.store(end, Ordering::SeqCst))),
                ..Default::default()
            },
        )
        .unwrap();
    eventually(10, || live.load(Ordering::SeqCst) == 4);
    assert_eq!(chunks.lock().unwrap().concat(), b"one\n");
    h.write_string("x\n").unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
    assert_eq!(chunks.lock().unwrap().concat(), b"one\ngot x\n");
}

#[test]
fn attach_exited() {
    // attach.exited
    let sb = sandbox();
    let t = session(&sb, sh("echo done; exit 2"));
    sb.wait_session(&t.1.id).unwrap();
    let out = Sink::default();
    let h = sb
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                on_stdout: Some(out.cb()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(h.wait().unwrap(), code(2));
    assert_eq!(out.get(), b"done\n");
    assert_eq!(h.wait().unwrap(), code(2));
}

fn attach_cb(sb: &lodge::Sandbox, id: &str, out: &Sink) -> lodge::SessionAttachHandle {
    let live = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let l2 = live.clone();
    let h = sb
        .attach_session(
            id,
            SessionAttachOptions {
                on_stdout: Some(out.cb()),
                on_live: Some(Arc::new(move |_| l2.store(true, Ordering::SeqCst))),
                ..Default::default()
            },
        )
        .unwrap();
    eventually(10, || live.load(Ordering::SeqCst));
    h
}

#[test]
fn attach_clients() {
    // attach.clients attach.detach
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    let (oa, ob) = (Sink::default(), Sink::default());
    let a = attach_cb(&sb, &t.1.id, &oa);
    let b = attach_cb(&sb, &t.1.id, &ob);
    a.write_string("hi\n").unwrap();
    eventually(10, || oa.get() == b"hi\n" && ob.get() == b"hi\n");
    assert_eq!(sb.get_session(&t.1.id).unwrap().clients, 2);
    a.detach();
    assert!(matches!(a.wait(), Err(Error::Detached)));
    eventually(10, || sb.get_session(&t.1.id).unwrap().clients == 1);
    b.write_string("b\n").unwrap();
    eventually(10, || ob.get() == b"hi\nb\n");
    assert_eq!(sb.get_session(&t.1.id).unwrap().state, "running");
}

#[test]
fn attach_pty() {
    // attach.pty
    let sb = sandbox();
    let mut o = sh("bash --norc");
    o.pty = Some(true);
    o.cols = Some(120);
    o.rows = Some(40);
    let t = session(&sb, o);
    let out = Sink::default();
    let h = sb
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                cols: Some(120),
                rows: Some(40),
                on_stdout: Some(out.cb()),
                ..Default::default()
            },
        )
        .unwrap();
    h.write_string("echo hello\n").unwrap();
    eventually(10, || out.text().contains("hello\r\n"));
    h.write_string("exit\n").unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
}

#[test]
fn attach_readonly() {
    // attach.readonly error.forbidden
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    let errs = Arc::new(Mutex::new(Vec::new()));
    let e2 = errs.clone();
    let h = sb
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                read_only: true,
                on_error: Some(Arc::new(move |e| e2.lock().unwrap().push(e))),
                ..Default::default()
            },
        )
        .unwrap();
    h.write_string("x").unwrap();
    h.resize(100, 30).unwrap();
    h.signal("INT").unwrap();
    eventually(10, || errs.lock().unwrap().len() == 3);
    for e in errs.lock().unwrap().iter() {
        assert!(matches!(e, Error::Forbidden { .. }), "{e:?}");
        assert_eq!(e.code(), Some("forbidden"));
    }
    assert!(h.wait_timeout(Duration::from_millis(200)).is_none());
    assert!(sb.session_log(&t.1.id).unwrap().is_empty());
    assert_eq!(sb.get_session(&t.1.id).unwrap().state, "running");
}

#[test]
fn attach_pace() {
    // attach.pace
    let size = 32 * 1024 * 1024;
    let sb = sandbox();
    let cmd = format!("read x; head -c {size} /dev/zero");
    let t = session(&sb, args(&["sh", "-c", &cmd]));
    let got = Arc::new(AtomicU64::new(0));
    let slow = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let live = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gaps = Arc::new(Mutex::new(Vec::new()));
    let (g2, s2, l2, gaps2) = (got.clone(), slow.clone(), live.clone(), gaps.clone());
    let h = sb
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                pace: true,
                // the callback holds the attach's reader, so the socket
                // fills and lodged sees this client take output slowly
                on_stdout: Some(Arc::new(move |c: Vec<u8>| {
                    g2.fetch_add(c.len() as u64, Ordering::SeqCst);
                    if s2.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })),
                on_gap: Some(Arc::new(move |from, to| {
                    gaps2.lock().unwrap().push((from, to))
                })),
                on_live: Some(Arc::new(move |_| l2.store(true, Ordering::SeqCst))),
                ..Default::default()
            },
        )
        .unwrap();
    eventually(10, || live.load(Ordering::SeqCst));
    h.write_string("go\n").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // what lodged read beyond what this reader took: a quarter of the
    // ring, a read, and the sockets' buffers, not the whole 32 MiB
    let ahead = sb.get_session(&t.1.id).unwrap().output_bytes - got.load(Ordering::SeqCst);
    assert!(
        ahead < 12 * 1024 * 1024,
        "the process ran {ahead} bytes ahead"
    );
    slow.store(false, Ordering::SeqCst);
    assert_eq!(h.wait().unwrap(), code(0));
    assert!(
        gaps.lock().unwrap().is_empty(),
        "{:?}",
        gaps.lock().unwrap()
    );
    assert_eq!(got.load(Ordering::SeqCst), size);
}

#[test]
fn attach_pace_readonly() {
    // attach.pace.readonly
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    let e = sb
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                pace: true,
                read_only: true,
                no_resume: true,
                ..Default::default()
            },
        )
        .expect_err("a read-only attach with pace is refused");
    assert!(
        matches!(e, Error::BadRequest { status: 400, ref message } if message.contains("'pace'")),
        "{e:?}"
    );
    assert_eq!(sb.get_session(&t.1.id).unwrap().state, "running");
}

#[test]
fn attach_eof() {
    // attach.eof
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    let out = Sink::default();
    let h = attach_cb(&sb, &t.1.id, &out);
    h.write_string("z\n").unwrap();
    h.close_stdin().unwrap();
    assert_eq!(h.wait().unwrap(), code(0));
    assert_eq!(out.get(), b"z\n");
}

#[test]
fn error_bad_request() {
    // error.bad_request
    let sb = sandbox();
    let mut o = args(&["cat"]);
    o.cols = Some(0);
    let e = sb.create_session(o).unwrap_err();
    assert!(matches!(e, Error::BadRequest { status: 400, .. }), "{e:?}");
    let e = sb.get_session("a b").unwrap_err();
    assert!(matches!(e, Error::BadRequest { status: 400, .. }), "{e:?}");
}

#[test]
fn error_unauthorized() {
    // error.unauthorized
    let url = std::env::var("LODGE_URL").unwrap();
    let sb = lodge::Sandbox::connect_to(&url, "wrong-token-0123456789").unwrap();
    let check = |e: Error| {
        assert!(
            matches!(e, Error::Unauthorized { status: 401, ref message } if !message.is_empty()),
            "{e:?}"
        )
    };
    check(sb.health().unwrap_err());
    check(sb.exec_stream(st("true")).unwrap_err());
    check(sb.attach_session("x", Default::default()).unwrap_err());
}

#[test]
fn error_not_found() {
    // error.not_found
    let sb = sandbox();
    not_found(sb.get_session("no-such-session").unwrap_err());
    not_found(sb.delete_session("no-such-session").unwrap_err());
    not_found(sb.session_log("no-such-session").unwrap_err());
    not_found(
        sb.attach_session("no-such-session", Default::default())
            .unwrap_err(),
    );
}

#[test]
fn error_conflict() {
    // error.conflict
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    let mut o = args(&["cat"]);
    o.name = t.1.name.clone();
    let e = sb.create_session(o).unwrap_err();
    assert!(matches!(e, Error::Conflict { status: 409, .. }), "{e:?}");
    let x = session(&sb, sh("true"));
    sb.wait_session(&x.1.id).unwrap();
    let e = sb.send_input(&x.1.id, "late").unwrap_err();
    assert!(matches!(e, Error::Conflict { status: 409, .. }), "{e:?}");
}

#[test]
fn error_payload_too_large() {
    // error.payload_too_large
    let sb = sandbox();
    let t = session(&sb, args(&["cat"]));
    let e = sb.send_input(&t.1.id, "x".repeat(9 << 20)).unwrap_err();
    assert!(
        matches!(e, Error::PayloadTooLarge { status: 413, .. }),
        "{e:?}"
    );
}

#[test]
fn error_unavailable() {
    // error.unavailable
    let sb = sandbox();
    let t = session(&sb, sh("exec sleep 600"));
    sb.send_input(&t.1.id, "x".repeat(3 << 20)).unwrap();
    let e = sb.send_input(&t.1.id, "x".repeat(2 << 20)).unwrap_err();
    assert!(matches!(e, Error::Unavailable { status: 503, .. }), "{e:?}");
}

#[test]
fn error_unknown_code() {
    // error.unknown_code
    let e = Error::from_reply(418, br#"{"error":{"code":"teapot","message":"m"}}"#);
    assert!(
        matches!(&e, Error::Api { code, status: 418, message } if code == "teapot" && message == "m")
    );
    assert_eq!(
        (e.code(), e.status(), e.message()),
        (Some("teapot"), Some(418), Some("m"))
    );
}

#[test]
fn stream_callback_panics() {
    // a panicking callback ends the stream, never an exit
    let mut o = st("echo x; exec sleep 600");
    o.on_stdout = Some(Arc::new(|_| panic!("callback fails")));
    let r = sandbox().exec_stream(o).unwrap().wait();
    assert!(
        matches!(&r, Err(Error::CallbackPanicked(m)) if m == "callback fails"),
        "{r:?}"
    );
}
