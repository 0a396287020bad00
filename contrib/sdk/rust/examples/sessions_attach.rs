#![allow(unused_variables)]
use lodge as aerolvm_sdk;

#[rustfmt::skip]
fn main() -> Result<(), Box<dyn std::error::Error>> {
let sandbox = aerolvm_sdk::connect()?;

let session = sandbox.create_session(aerolvm_sdk::CreateSessionOptions {
    name:     Some("shell".to_string()),
    command:  Some("bash".to_string()),
    work_dir: Some("/workspace".to_string()),
    pty:      Some(true),
    cols:     Some(120),
    rows:     Some(40),
    ..Default::default()
})?;

println!("{}", session.id);

use std::sync::Arc;

let attached = sandbox.attach_session(
    &session.id,
    aerolvm_sdk::SessionAttachOptions {
        cols:      Some(120),
        rows:      Some(40),
        on_stdout: Some(Arc::new(|chunk| {
            print!("{}", String::from_utf8_lossy(&chunk))
        })),
        ..Default::default()
    },
)?;

attached.write_string("echo hello\n")?;
println!("{:?}", attached.wait()?);

Ok(())
}
