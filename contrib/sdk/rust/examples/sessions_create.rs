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

Ok(())
}
