//! `cargo run --release --example bench [-- --execs N --keys N --bytes N]`
//!
//! The SDK's figures against LODGE_URL and LODGE_TOKEN, as one JSON line:
//! exec_p50_us/exec_p99_us (sequential POST /v1/exec of `/bin/true`, after
//! 50 untimed),
//! stream_gbps (10^9 bytes/s of an exec stream of `head -c 1073741824
//! /dev/zero` read to its exit), key_p50_us/key_p99_us (one-byte round
//! trips on a PTY session running `stty raw -echo && printf R && exec
//! cat`, after 100 untimed). A benchmark, not a test: the figures depend on
//! the machine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

fn pct(xs: &mut [Duration], p: f64) -> u128 {
    xs.sort();
    xs[((xs.len() as f64 * p) as usize).min(xs.len() - 1)].as_micros()
}

fn main() -> Result<(), lodge::Error> {
    let mut execs = 2000;
    let mut keys = 2000;
    let mut bytes: u64 = 1 << 30;
    let a: Vec<String> = std::env::args().skip(1).collect();
    for w in a.chunks(2) {
        let v = w.get(1).and_then(|v| v.parse().ok()).expect("a number");
        match w[0].as_str() {
            "--execs" => execs = v as usize,
            "--keys" => keys = v as usize,
            "--bytes" => bytes = v,
            o => panic!("unknown option {o}"),
        }
    }
    let sb = lodge::connect()?;
    let mut lat = Vec::with_capacity(execs);
    for i in 0..execs + 50 {
        let t = Instant::now();
        let r = sb.exec(lodge::ExecRequest {
            args: Some(vec!["/bin/true".into()]),
            ..Default::default()
        })?;
        if i >= 50 {
            lat.push(t.elapsed());
        }
        assert_eq!(r.exit_code, Some(0));
    }

    let n = Arc::new(AtomicU64::new(0));
    let n2 = n.clone();
    let t = Instant::now();
    let h = sb.exec_stream(lodge::ExecStreamOptions {
        command: format!("head -c {bytes} /dev/zero"),
        on_stdout: Some(Arc::new(move |c| {
            n2.fetch_add(c.len() as u64, Ordering::Relaxed);
        })),
        ..Default::default()
    })?;
    assert_eq!(h.wait()?.code, Some(0));
    assert_eq!(n.load(Ordering::Relaxed), bytes);
    let gbps = bytes as f64 / t.elapsed().as_secs_f64() / 1e9;

    let s = sb.create_session(lodge::CreateSessionOptions {
        command: Some("stty raw -echo && printf R && exec cat".into()),
        pty: Some(true),
        ..Default::default()
    })?;
    let got = Arc::new((Mutex::new(Vec::<u8>::new()), Condvar::new()));
    let g2 = got.clone();
    let a = sb.attach_session(
        &s.id,
        lodge::SessionAttachOptions {
            on_stdout: Some(Arc::new(move |c| {
                g2.0.lock().unwrap().extend_from_slice(&c);
                g2.1.notify_all();
            })),
            ..Default::default()
        },
    )?;
    let wait_for = |pred: &dyn Fn(&[u8]) -> bool| {
        let mut b = got.0.lock().unwrap();
        while !pred(&b) {
            b = got.1.wait_timeout(b, Duration::from_secs(10)).unwrap().0;
        }
        b.clear();
    };
    wait_for(&|b| b.contains(&b'R'));
    let mut klat = Vec::with_capacity(keys);
    for i in 0..keys + 100 {
        let t = Instant::now();
        a.write(b"k")?;
        wait_for(&|b| !b.is_empty());
        if i >= 100 {
            klat.push(t.elapsed());
        }
    }
    a.detach();
    sb.delete_session(&s.id)?;
    println!(
        "{{\"sdk\":\"rust\",\"exec_p50_us\":{},\"exec_p99_us\":{},\"stream_gbps\":{:.3},\"key_p50_us\":{},\"key_p99_us\":{}}}",
        pct(&mut lat, 0.5),
        pct(&mut lat, 0.99),
        gbps,
        pct(&mut klat, 0.5),
        pct(&mut klat, 0.99)
    );
    Ok(())
}
