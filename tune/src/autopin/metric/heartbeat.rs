//! Application heartbeats: the program counts its own units of work
//! (`tp_heartbeat(n)`, [`topoprobe_sys::heartbeat::beat`]) in a shared page; the score is
//! beats per second, and a change of the declared phase restarts the search.

use std::path::Path;

use topoprobe_sys::heartbeat::HeartbeatReader;

use super::Metric;
use crate::error::TuneError;

/// The heartbeat metric: reads a program's heartbeat page.
#[derive(Debug)]
pub struct Heartbeat {
    reader: HeartbeatReader,
}

impl Heartbeat {
    /// Opens the page at `path` (created when missing).
    ///
    /// # Errors
    ///
    /// [`TuneError::Heartbeat`] when it cannot be opened or is not a heartbeat page.
    pub fn open(path: &Path) -> Result<Self, TuneError> {
        Ok(Self {
            reader: HeartbeatReader::open(path)?,
        })
    }

    /// Beats counted so far.
    #[must_use]
    pub fn beats(&self) -> u64 {
        self.reader.read().beats
    }

    /// The page's file.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.reader.path()
    }
}

impl Metric for Heartbeat {
    fn name(&self) -> &str {
        "heartbeat"
    }

    fn unit(&self) -> &str {
        "beats/s"
    }

    fn total(&mut self, _tids: &[i32]) -> Result<f64, TuneError> {
        Ok(self.reader.read().beats as f64)
    }

    fn phase(&self) -> Option<u64> {
        Some(self.reader.read().phase)
    }
}
