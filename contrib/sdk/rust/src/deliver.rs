//! Delivery of a stream's messages to the caller's callbacks: every byte
//! exactly once, by offset, across reconnects; gaps reported.

use crate::types::{ErrorCallback, GapCallback, LiveCallback, OutputCallback};
use crate::wire::ServerMessage;
use crate::{Error, ExitStatus};

/// The callbacks of one handle.
#[derive(Clone, Default)]
pub(crate) struct Sinks {
    pub stdout: Option<OutputCallback>,
    pub stderr: Option<OutputCallback>,
    pub gap: Option<GapCallback>,
    pub live: Option<LiveCallback>,
    pub error: Option<ErrorCallback>,
    pub strict: bool,
}

/// What one message means for the stream.
pub(crate) enum Step {
    Go,
    Exit(ExitStatus),
    /// The daemon's `error` message: fatal if the connection then closes.
    Failed(Error),
}

pub(crate) struct Delivery {
    pub sinks: Sinks,
    /// The offset of the next byte the caller needs (None: not known yet).
    pub next: Option<u64>,
    /// Where the replay of the current connection ends.
    pub replay_to: Option<u64>,
    pub live_seen: bool,
    pub gaps: u64,
}

impl Delivery {
    pub fn new(sinks: Sinks) -> Self {
        Delivery {
            sinks,
            next: None,
            replay_to: None,
            live_seen: false,
            gaps: 0,
        }
    }

    fn gap(&mut self, from: u64, to: u64) -> Result<(), Error> {
        self.gaps += 1;
        if self.sinks.strict {
            return Err(Error::Gap { from, to });
        }
        if let Some(g) = &self.sinks.gap {
            g(from, to);
        }
        Ok(())
    }

    fn output(&mut self, err: bool, mut data: Vec<u8>, offset: u64) -> Result<(), Error> {
        let end = offset + data.len() as u64;
        match self.next {
            Some(n) if end <= n => return Ok(()), // seen already
            Some(n) if offset < n => {
                data.drain(..(n - offset) as usize);
            }
            Some(n) if offset > n => self.gap(n, offset)?,
            _ => {}
        }
        self.next = Some(end);
        let sink = if err {
            &self.sinks.stderr
        } else {
            &self.sinks.stdout
        };
        if let Some(f) = sink {
            if !data.is_empty() {
                f(data);
            }
        }
        Ok(())
    }

    /// Handle one message; `Err` ends the stream with that error.
    pub fn handle(&mut self, m: ServerMessage) -> Result<Step, Error> {
        match m {
            ServerMessage::Stdout { data, offset } => self.output(false, data, offset)?,
            ServerMessage::Stderr { data, offset } => self.output(true, data, offset)?,
            ServerMessage::Exit(x) => return Ok(Step::Exit(x)),
            ServerMessage::Error { code, message } => {
                let e = Error::from_code(&code, 0, message);
                if let Some(f) = &self.sinks.error {
                    f(e.clone());
                }
                return Ok(Step::Failed(e));
            }
            ServerMessage::Attached {
                replay_from,
                replay_to,
                ..
            } => {
                if self.next.is_none() {
                    self.next = Some(replay_from);
                }
                self.replay_to = Some(replay_to);
            }
            ServerMessage::Gap { from, to } => {
                let from = self.next.unwrap_or(from).max(from);
                if to > from {
                    self.gap(from, to)?;
                }
                self.next = Some(to.max(self.next.unwrap_or(0)));
            }
            ServerMessage::Live => {
                if !self.live_seen {
                    self.live_seen = true;
                    if let Some(f) = &self.sinks.live {
                        f(self.replay_to.unwrap_or_default());
                    }
                }
            }
            ServerMessage::Started { .. } | ServerMessage::Other(_) => {}
        }
        Ok(Step::Go)
    }
}
