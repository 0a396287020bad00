//! A client of `lodged`: one-shot exec, live exec streams and persistent
//! sessions, blocking ([`Sandbox`]) and on tokio ([`asynch`]).
//!
//! ```no_run
//! let sandbox = lodge::connect()?;
//! let r = sandbox.exec(lodge::ExecRequest { command: "echo hi".into(), ..Default::default() })?;
//! assert_eq!(r.stdout, "hi\n");
//! # Ok::<(), lodge::Error>(())
//! ```

pub mod asynch;
mod blocking;
mod config;
mod deliver;
mod error;
mod rest;
mod types;
pub mod wire;

pub use blocking::{connect, ExecStreamHandle, Sandbox, SessionAttachHandle};
pub use config::Config;
pub use error::{Error, Result};
pub use types::*;
pub use wire::Signal;
