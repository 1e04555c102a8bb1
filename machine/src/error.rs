//! Errors of the workflows.

use std::path::PathBuf;

use topoprobe_infer::{InferError, LoadError};
use topoprobe_model::ModelError;
use topoprobe_sys::affinity::AffinityError;

use crate::description::DescriptionError;

/// A boxed error of a measurement crate (a plugin's own error type).
pub type PluginFailure = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a workflow failed. Each message says what was being done; the cause follows as the
/// error's source (`{:#}` with `anyhow`, or walking [`std::error::Error::source`]).
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// This process's CPU affinity could not be read.
    #[error("finding the CPUs this process may use")]
    Affinity(#[source] AffinityError),
    /// The CPUs asked for cannot be measured (malformed list, CPUs outside this process's
    /// affinity, too few CPUs).
    #[error("{0}")]
    Cpus(String),
    /// A pair of CPUs could not be measured.
    #[error("measuring core-to-core latencies")]
    Collect(#[source] InferError),
    /// The SMT probe failed on a pair.
    #[error("SMT probe on CPUs {a} and {b}: {message}")]
    Smt {
        /// First CPU.
        a: u32,
        /// Second CPU.
        b: u32,
        /// What went wrong.
        message: String,
    },
    /// The measured table could not be inferred.
    #[error("inferring the topology")]
    Infer(#[source] InferError),
    /// The model refused a change (a section that does not fit the topology).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The directory of the description could not be created.
    #[error("creating the directory {} for the description", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The description could not be written.
    #[error("saving the description to {}", path.display())]
    Save {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: ModelError,
    },
    /// This machine's description is missing, stale or unreadable, or has no place.
    #[error(transparent)]
    Description(#[from] DescriptionError),
    /// A command needs this machine's description and there is none (or a stale one).
    #[error("this command needs this machine's topology: run `topoprobe infer` first, or give one with --topology FILE")]
    NoDescription(#[source] DescriptionError),
    /// This machine's description exists but cannot be read.
    #[error("loading this machine's description")]
    LoadDescription(#[source] DescriptionError),
    /// A topology file could not be loaded.
    #[error("loading the topology {}", path.display())]
    Load {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: LoadError,
    },
    /// A plugin name is not known.
    #[error("unknown plugin {name:?} (known: {known}, or all, none)")]
    UnknownPlugin {
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// What was asked for cannot be measured within the budget (every pair of a large
    /// machine); the message says what would fit.
    #[error("{0}")]
    OverBudget(String),
    /// A request that cannot be measured as asked, whatever the machine does (a working
    /// set too small to reach what it measures, more threads than a socket has); the
    /// message names the option and says what would do.
    #[error("{0}")]
    Request(String),
    /// A measurement of one of the measuring commands failed (a CPU that cannot be pinned,
    /// memory that cannot be allocated, a malformed counter file).
    #[error("{what}")]
    Measure {
        /// What was being measured ("measuring the caches on CPU 3").
        what: String,
        /// What went wrong.
        source: PluginFailure,
    },
    /// A plugin's measurement failed.
    #[error("plugin {plugin}")]
    Plugin {
        /// The plugin's name.
        plugin: &'static str,
        /// What went wrong.
        source: PluginFailure,
    },
}

impl MachineError {
    /// Whether the error is a request this machine can never satisfy (a CPU selection it
    /// cannot run, a request over any budget, a bad option value): a usage error at a
    /// command line (exit status 2), not a failure of the measurement.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Cpus(_) | Self::OverBudget(_) | Self::Request(_))
    }

    /// The error with `typed` (what the user typed, `latency 0 7`) said before the message
    /// of a request error ([`MachineError::is_usage`]); other errors unchanged.
    #[must_use]
    pub fn typed(self, typed: &str) -> Self {
        match self {
            Self::Cpus(m) => Self::Cpus(format!("{typed}: {m}")),
            Self::OverBudget(m) => Self::OverBudget(format!("{typed}: {m}")),
            Self::Request(m) => Self::Request(format!("{typed}: {m}")),
            e => e,
        }
    }

    /// A failed measurement: `what` was being measured.
    pub(crate) fn measuring<E: std::error::Error + Send + Sync + 'static>(
        what: impl Into<String>,
    ) -> impl FnOnce(E) -> Self {
        let what = what.into();
        move |e| Self::Measure {
            what,
            source: Box::new(e),
        }
    }
}
