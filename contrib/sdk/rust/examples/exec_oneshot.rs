#![allow(unused_variables)]
use lodge as aerolvm_sdk;

#[rustfmt::skip]
fn main() -> Result<(), Box<dyn std::error::Error>> {
let sandbox = aerolvm_sdk::connect()?;

let result = sandbox.exec(aerolvm_sdk::ExecRequest {
    command: "echo hello".to_string(),
    ..Default::default()
})?;
println!("{}", result.stdout);

// With options
let result2 = sandbox.exec(aerolvm_sdk::ExecRequest {
    command:         "node index.js".to_string(),
    work_dir:        Some("/workspace".to_string()),
    timeout_seconds: Some(30),
    ..Default::default()
})?;

Ok(())
}
