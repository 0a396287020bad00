//! The async (tokio) client: the same scenarios' core, resume through the
//! proxy, and cancellation (a dropped future ends promptly and closes its
//! connection; a dropped exec stream's process is killed).

// The guard only serializes whole tests, each on its own runtime.
#![allow(clippy::await_holding_lock)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{alive, eventually, kit, unique, Sink};
use lodge::{
    asynch, CreateSessionOptions, Error, ExecRequest, ExecStreamOptions, SessionAttachOptions,
};

/// The socket count of `async_cancel` is this process's: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

async fn sandbox() -> asynch::Sandbox {
    asynch::connect().await.unwrap()
}

fn sockets() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path())
                .map(|l| l.to_string_lossy().starts_with("socket:"))
                .unwrap_or(false)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_exec() {
    // exec.basic exec.exit_code connect.env (async)
    let _g = serial();
    let sb = sandbox().await;
    assert_eq!(sb.health().await.unwrap().status, "ok");
    let r = sb
        .exec_command("echo out; echo err >&2; exit 3")
        .await
        .unwrap();
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.exit_code),
        ("out\n", "err\n", Some(3))
    );
    let e = sb
        .exec(ExecRequest {
            args: Some(vec!["/nonexistent/program".into()]),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(e, Error::SpawnFailed { status: 422, .. }), "{e:?}");
    let e = sb.get_session("no-such-session").await.unwrap_err();
    assert!(matches!(e, Error::NotFound { status: 404, .. }), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_stream() {
    // stream.stdin_eof stream.big_write (async)
    let _g = serial();
    let out = Sink::default();
    let h = sandbox()
        .await
        .exec_stream(ExecStreamOptions {
            args: Some(vec!["wc".into(), "-c".into()]),
            on_stdout: Some(out.cb()),
            ..Default::default()
        })
        .await
        .unwrap();
    h.write(vec![7u8; 64 << 20]).await.unwrap();
    h.close_stdin().await.unwrap();
    assert_eq!(h.wait().await.unwrap().code, Some(0));
    assert_eq!(out.text().trim(), "67108864");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_stream_signal() {
    // stream.signal (async)
    let _g = serial();
    let out = Sink::default();
    let h = sandbox()
        .await
        .exec_stream(ExecStreamOptions {
            command: "echo ready; exec sleep 60".into(),
            on_stdout: Some(out.cb()),
            ..Default::default()
        })
        .await
        .unwrap();
    tokio::task::block_in_place(|| eventually(10, || out.text().contains("ready")));
    h.signal("TERM").await.unwrap();
    assert_eq!(h.wait().await.unwrap().signal.as_deref(), Some("TERM"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_attach() {
    // attach.replay session.wait (async)
    let _g = serial();
    let sb = sandbox().await;
    let s = sb
        .create_session(CreateSessionOptions {
            name: Some(unique("rs-async")),
            command: Some("echo one; read line; echo \"got $line\"".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let out = Sink::default();
    let live = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
    let l2 = live.clone();
    tokio::task::block_in_place(|| {
        eventually(10, || {
            lodge::connect().unwrap().session_log(&s.id).unwrap() == b"one\n"
        })
    });
    let h = sb
        .attach_session(
            &s.id,
            SessionAttachOptions {
                on_stdout: Some(out.cb()),
                on_live: Some(Arc::new(move |e| {
                    l2.store(e, std::sync::atomic::Ordering::SeqCst)
                })),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    tokio::task::block_in_place(|| {
        eventually(10, || live.load(std::sync::atomic::Ordering::SeqCst) == 4)
    });
    h.write_string("x\n").await.unwrap();
    assert_eq!(h.wait().await.unwrap().code, Some(0));
    assert_eq!(out.get(), b"one\ngot x\n");
    assert_eq!(sb.wait_session(&s.id).await.unwrap().code, Some(0));
    sb.delete_session(&s.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_attach_pace_readonly() {
    // attach.pace.readonly (async)
    let _g = serial();
    let sb = sandbox().await;
    let s = sb
        .create_session(CreateSessionOptions {
            name: Some(unique("rs-async")),
            args: Some(vec!["cat".into()]),
            ..Default::default()
        })
        .await
        .unwrap();
    let e = sb
        .attach_session(
            &s.id,
            SessionAttachOptions {
                pace: true,
                read_only: true,
                no_resume: true,
                ..Default::default()
            },
        )
        .await
        .expect_err("a read-only attach with pace is refused");
    assert!(
        matches!(e, Error::BadRequest { status: 400, ref message } if message.contains("'pace'")),
        "{e:?}"
    );
    assert_eq!(sb.get_session(&s.id).await.unwrap().state, "running");
    sb.delete_session(&s.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_resume() {
    // attach.resume.cuts (async)
    let _g = serial();
    let sb = sandbox().await;
    let cmd = "for i in $(seq 1 20); do seq $((i*1000)) $((i*1000+999)); sleep 0.1; done";
    let s = sb
        .create_session(CreateSessionOptions {
            name: Some(unique("rs-async-resume")),
            command: Some(cmd.into()),
            buffer_size: Some(4 << 20),
            ..Default::default()
        })
        .await
        .unwrap();
    let port = kit("proxy").strip_prefix("ok ").unwrap().trim().to_string();
    let mut cfg = lodge::Config::from_env().unwrap();
    cfg.url = format!("http://127.0.0.1:{port}");
    let px = asynch::Sandbox::with_config(cfg).unwrap();
    let out = Sink::default();
    let h = px
        .attach_session(
            &s.id,
            SessionAttachOptions {
                on_stdout: Some(out.cb()),
                on_gap: Some(Arc::new(|f, t| panic!("gap {f}..{t}"))),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        tokio::task::block_in_place(|| kit("cut"));
    }
    assert_eq!(h.wait().await.unwrap().code, Some(0));
    let want = std::process::Command::new("sh")
        .args(["-c", cmd])
        .output()
        .unwrap()
        .stdout;
    assert!(out.get() == want, "bytes differ");
    assert!(h.reconnects() >= 1);
    sb.delete_session(&s.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_cancel() {
    // cancellation: a dropped future, a dropped stream
    let _g = serial();
    let sb = sandbox().await;
    let before = sockets();
    // a dropped exec future returns at once and closes its connection
    let r = tokio::time::timeout(Duration::from_millis(300), sb.exec_command("sleep 5")).await;
    assert!(r.is_err(), "the exec should still be running");
    tokio::task::block_in_place(|| eventually(10, || sockets() <= before));
    // a dropped exec stream: connection closed, the daemon kills the process
    let out = Sink::default();
    let h = sb
        .exec_stream(ExecStreamOptions {
            command: "echo $$; exec sleep 600".into(),
            on_stdout: Some(out.cb()),
            ..Default::default()
        })
        .await
        .unwrap();
    tokio::task::block_in_place(|| eventually(10, || out.text().ends_with('\n')));
    let p: i64 = out.text().trim().parse().unwrap();
    // a wait abandoned by a timeout leaves the stream as it was
    assert!(tokio::time::timeout(Duration::from_millis(100), h.wait())
        .await
        .is_err());
    assert!(alive(p));
    drop(h);
    tokio::task::block_in_place(|| eventually(10, || !alive(p)));
    tokio::task::block_in_place(|| eventually(10, || sockets() <= before));
    // a detached attach: wait says so, the session runs on
    let s = sb
        .create_session(CreateSessionOptions {
            args: Some(vec!["cat".into()]),
            ..Default::default()
        })
        .await
        .unwrap();
    let h = sb.attach_session(&s.id, Default::default()).await.unwrap();
    h.detach();
    assert!(matches!(h.wait().await, Err(Error::Detached)));
    assert_eq!(sb.get_session(&s.id).await.unwrap().state, "running");
    sb.delete_session(&s.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_callback_panics() {
    // a panicking callback ends the stream, never an exit
    let _g = serial();
    let h = sandbox()
        .await
        .exec_stream(ExecStreamOptions {
            command: "echo x; exec sleep 600".into(),
            on_stdout: Some(Arc::new(|_| panic!("callback fails"))),
            ..Default::default()
        })
        .await
        .unwrap();
    let r = h.wait().await;
    assert!(
        matches!(&r, Err(Error::CallbackPanicked(m)) if m == "callback fails"),
        "{r:?}"
    );
}
