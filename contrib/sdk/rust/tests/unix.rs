//! connect.unix: without LODGE_URL and LODGE_TOKEN, `connect()` reaches
//! the daemon on `$LODGE_RUNDIR/lodged.sock`, blocking and async, for
//! REST calls and WebSockets alike. Alone in its binary: it changes the
//! process's environment.

mod common;

use common::Sink;
use lodge::{ExecRequest, ExecStreamOptions, ExitStatus};

const ZERO: ExitStatus = ExitStatus {
    code: Some(0),
    signal: None,
    timed_out: false,
};

fn echo_unix() -> ExecRequest {
    ExecRequest {
        command: "echo unix".into(),
        ..Default::default()
    }
}

#[test]
fn connect_unix() {
    // connect.unix
    assert!(
        std::env::var("LODGE_RUNDIR").is_ok(),
        "run under with-lodged"
    );
    std::env::remove_var("LODGE_URL");
    std::env::remove_var("LODGE_TOKEN");

    let sb = lodge::connect().unwrap();
    assert!(sb.config().socket.is_some(), "{sb:?}");
    assert_eq!(sb.health().unwrap().status, "ok");
    let r = sb.exec(echo_unix()).unwrap();
    assert_eq!((r.stdout.as_str(), r.exit_code), ("unix\n", Some(0)));
    let out = Sink::default();
    let h = sb
        .exec_stream(ExecStreamOptions {
            command: "echo unix".into(),
            on_stdout: Some(out.cb()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(h.wait().unwrap(), ZERO);
    assert_eq!(out.text(), "unix\n");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let sb = lodge::asynch::connect().await.unwrap();
        assert_eq!(sb.health().await.unwrap().status, "ok");
        let r = sb.exec(echo_unix()).await.unwrap();
        assert_eq!((r.stdout.as_str(), r.exit_code), ("unix\n", Some(0)));
        let out = Sink::default();
        let h = sb
            .exec_stream(ExecStreamOptions {
                command: "echo unix".into(),
                on_stdout: Some(out.cb()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(h.wait().await.unwrap(), ZERO);
        assert_eq!(out.text(), "unix\n");
    });
}
