//! The fault scenarios, through the kit's proxy and its front control:
//! resume exactly once, gaps with offsets, strict mode, the front killed
//! mid-attach, connection lost never a success, and a 2 GiB stream in
//! flat client memory.  They share the kit's proxy and front: one at a
//! time.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use lodge::{Error, ExecStreamOptions, SessionAttachOptions};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Chunks with their offsets, and gap events, in arrival order.
#[derive(Default)]
struct Log {
    chunks: Vec<(u64, Vec<u8>)>,
    gaps: Vec<(u64, u64)>,
    events: Vec<char>,
}

fn opts(log: &Arc<Mutex<Log>>, next: &Arc<AtomicU64>) -> SessionAttachOptions {
    let (l1, l2, n) = (log.clone(), log.clone(), next.clone());
    SessionAttachOptions {
        on_stdout: Some(Arc::new(move |c: Vec<u8>| {
            let at = n.fetch_add(c.len() as u64, Ordering::SeqCst);
            let mut l = l1.lock().unwrap();
            l.chunks.push((at, c));
            l.events.push('c');
        })),
        on_gap: Some(Arc::new(move |from, to| {
            let mut l = l2.lock().unwrap();
            l.gaps.push((from, to));
            l.events.push('g');
        })),
        ..Default::default()
    }
}

fn local(cmd: &str) -> Vec<u8> {
    std::process::Command::new("sh")
        .args(["-c", cmd])
        .output()
        .unwrap()
        .stdout
}

#[test]
fn attach_resume() {
    // attach.resume
    let _g = serial();
    let sb = sandbox();
    let mut o = sh("sleep 1; seq 1 1000000");
    o.buffer_size = Some(8 << 20);
    let t = session(&sb, o);
    let px = proxied();
    kit("cut-after 1000000");
    let out = Sink::default();
    let h = px
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                on_stdout: Some(out.cb()),
                on_gap: Some(Arc::new(|f, t| panic!("gap {f}..{t}"))),
                ..Default::default()
            },
        )
        .unwrap();
    let x = h.wait();
    kit("cut-after 0");
    assert_eq!(x.unwrap().code, Some(0));
    assert!(out.get() == local("seq 1 1000000"), "bytes differ");
    assert!(h.reconnects() >= 3, "{} reconnects", h.reconnects());
}

#[test]
fn attach_resume_cuts() {
    // attach.resume.cuts
    let _g = serial();
    let sb = sandbox();
    let cmd = "for i in $(seq 1 40); do seq $((i*1000)) $((i*1000+999)); sleep 0.1; done";
    let mut o = sh(cmd);
    o.buffer_size = Some(4 << 20);
    let t = session(&sb, o);
    let px = proxied();
    let out = Sink::default();
    let h = px
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                on_stdout: Some(out.cb()),
                on_gap: Some(Arc::new(|f, t| panic!("gap {f}..{t}"))),
                ..Default::default()
            },
        )
        .unwrap();
    for _ in 0..3 {
        std::thread::sleep(std::time::Duration::from_secs(1));
        kit("cut");
    }
    assert_eq!(h.wait().unwrap().code, Some(0));
    assert!(out.get() == local(cmd), "bytes differ");
    assert!(h.reconnects() >= 1);
}

fn gap_session(sb: &lodge::Sandbox) -> Temp<'_> {
    let mut o = sh("sleep 1; head -c 20000000 /dev/zero | tr '\\0' a; echo end");
    o.buffer_size = Some(4096);
    session(sb, o)
}

#[test]
fn attach_resume_gap() {
    // attach.resume.gap
    let _g = serial();
    let sb = sandbox();
    let t = gap_session(&sb);
    let px = proxied();
    kit("cut-after 16384");
    let log = Arc::new(Mutex::new(Log::default()));
    let next = Arc::new(AtomicU64::new(0));
    // the offsets the callbacks see are counted by the test from the
    // handle's own: each chunk starts where the previous ended, or after a gap
    let l2 = log.clone();
    let mut o = opts(&log, &next);
    let n2 = next.clone();
    o.on_gap = Some(Arc::new(move |from, to| {
        let mut l = l2.lock().unwrap();
        assert_eq!(
            from,
            n2.load(Ordering::SeqCst),
            "gap starts at the previous end"
        );
        n2.store(to, Ordering::SeqCst);
        l.gaps.push((from, to));
        l.events.push('g');
    }));
    // since 0: what the process wrote before the attach counts too
    o.since = Some(0);
    let h = px.attach_session(&t.1.id, o).unwrap();
    let x = h.wait();
    kit("cut-after 0");
    assert_eq!(x.unwrap().code, Some(0));
    let l = log.lock().unwrap();
    assert!(!l.gaps.is_empty());
    assert!(l.gaps.iter().all(|(f, t)| f < t));
    let delivered: u64 = l.chunks.iter().map(|c| c.1.len() as u64).sum();
    let lost: u64 = l.gaps.iter().map(|(f, t)| t - f).sum();
    let total = sb.get_session(&t.1.id).unwrap().output_bytes;
    assert_eq!(delivered + lost, total);
    assert!(l.chunks.last().unwrap().1.ends_with(b"end\n"));
}

#[test]
fn attach_resume_strict() {
    // attach.resume.strict
    let _g = serial();
    let sb = sandbox();
    let t = gap_session(&sb);
    let px = proxied();
    kit("cut-after 16384");
    let h = px
        .attach_session(
            &t.1.id,
            SessionAttachOptions {
                strict: true,
                since: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
    let x = h.wait();
    kit("cut-after 0");
    match x {
        Err(Error::Gap { from, to }) => assert!(from < to),
        other => panic!("{other:?}"),
    }
}

#[test]
fn attach_front_killed() {
    // attach.front_killed
    let _g = serial();
    let sb = sandbox();
    let s = sb.create_session(args(&["cat"])).unwrap();
    let out = Sink::default();
    let live = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let l2 = live.clone();
    let h = sb
        .attach_session(
            &s.id,
            SessionAttachOptions {
                on_stdout: Some(out.cb()),
                on_live: Some(Arc::new(move |_| l2.store(true, Ordering::SeqCst))),
                ..Default::default()
            },
        )
        .unwrap();
    eventually(10, || live.load(Ordering::SeqCst));
    kit("kill-front");
    h.write_string("after\n").unwrap();
    eventually(10, || out.get() == b"after\n");
    kit("start-front");
    eventually(20, || sb.health().is_ok());
    sb.signal_session(&s.id, "TERM").unwrap();
    let x = h.wait().unwrap();
    assert_eq!((x.code, x.signal.as_deref()), (None, Some("TERM")));
    assert_eq!(out.get(), b"after\n");
    let _ = sb.delete_session(&s.id);
}

#[test]
fn stream_connection_lost() {
    // stream.connection_lost
    let _g = serial();
    let px = proxied();
    let out = Sink::default();
    let h = px
        .exec_stream(ExecStreamOptions {
            command: "echo $$; exec sleep 600".into(),
            on_stdout: Some(out.cb()),
            ..Default::default()
        })
        .unwrap();
    eventually(10, || out.text().ends_with('\n'));
    let p: i64 = out.text().trim().parse().unwrap();
    kit("cut");
    match h.wait() {
        Err(Error::ConnectionLost(_)) => {}
        other => panic!("not connection-lost: {other:?}"),
    }
    eventually(10, || !alive(p));
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn stream_big_output() {
    // stream.big_output
    let _g = serial();
    let count = Arc::new(AtomicU64::new(0));
    let first = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let (c, f, p) = (count.clone(), first.clone(), peak.clone());
    let h = sandbox()
        .exec_stream(ExecStreamOptions {
            command: "head -c 2147483648 /dev/zero".into(),
            on_stdout: Some(Arc::new(move |chunk: Vec<u8>| {
                let before = c.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                if before == 0 {
                    f.store(rss_kib(), Ordering::Relaxed);
                } else if (before >> 26) != ((before + chunk.len() as u64) >> 26) {
                    p.fetch_max(rss_kib(), Ordering::Relaxed); // every 64 MiB
                }
            })),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(h.wait().unwrap().code, Some(0));
    assert_eq!(count.load(Ordering::Relaxed), 2147483648);
    let grew = peak
        .load(Ordering::Relaxed)
        .saturating_sub(first.load(Ordering::Relaxed));
    assert!(grew < 256 * 1024, "RSS grew {grew} KiB");
}
