#![allow(unused_variables)]
use lodge as aerolvm_sdk;

#[rustfmt::skip]
fn main() -> Result<(), Box<dyn std::error::Error>> {
let sandbox = aerolvm_sdk::connect()?;

use std::sync::Arc;

let handle = sandbox.exec_stream(aerolvm_sdk::ExecStreamOptions {
    command:   "bash".to_string(),
    tty:       true,
    cols:      Some(120),
    rows:      Some(40),
    on_stdout: Some(Arc::new(|chunk| {
        print!("{}", String::from_utf8_lossy(&chunk))
    })),
    ..Default::default()
})?;

handle.signal("INT")?;
handle.signal("TERM")?;

Ok(())
}
