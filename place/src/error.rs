//! Errors of placement, and of work spread over placed threads.

use topoprobe_sys::affinity::AffinityError;
use topoprobe_sys::memory::MemPolicyError;

use crate::policy::Policy;

/// Why a placement could not be made or used.
///
/// [`PlaceError::is_usage`] tells requests that can never succeed on this topology (a
/// command line should exit with a usage error) from failures of the operating system.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// More threads were asked for than the placement has contexts.
    #[error("{policy}: {asked} threads asked for, but only {available} hardware contexts are available{scope}")]
    TooManyThreads {
        /// The policy.
        policy: Policy,
        /// Threads asked for.
        asked: usize,
        /// Contexts available to the request.
        available: usize,
        /// What restricted the contexts (empty when nothing did).
        scope: String,
    },
    /// An explicit CPU list was combined with a filter that does not apply to it.
    #[error(
        "an explicit CPU list (--pin) takes no --kind or --use-sockets: it names the CPUs itself"
    )]
    ListWithFilters,
    /// Zero threads were asked for.
    #[error("at least one thread is needed")]
    NoThreads,
    /// More sockets were asked for than there are.
    #[error("{asked} sockets asked for, but only {available} have usable contexts")]
    TooManySockets {
        /// Sockets asked for.
        asked: usize,
        /// Sockets available.
        available: usize,
    },
    /// A CPU asked for is not a hardware context of the topology.
    #[error("CPU {cpu} is not a hardware context of this topology (its CPUs are {machine})")]
    CpuOutsideMachine {
        /// The CPU asked for.
        cpu: u32,
        /// The topology's CPUs, in list syntax.
        machine: String,
    },
    /// The filters (CPU list, core kind) left no context.
    #[error("no hardware context is left after {0}")]
    NothingLeft(String),
    /// The policy needs a section the topology lacks.
    #[error("{policy} needs {what}, which this topology does not have: {hint}")]
    MissingData {
        /// The policy.
        policy: Policy,
        /// What is missing.
        what: String,
        /// How to get it.
        hint: String,
    },
    /// A core kind was asked for on a machine with one kind of core.
    #[error("this topology has one kind of core: no P-/E-core split is recognised (P-cores are told apart by having more contexts per core than E-cores)")]
    NoKinds,
    /// The operating system refused to pin or unpin.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// A program to run was asked for without one.
    #[error("no command given")]
    NoCommand,
    /// The placement uses CPUs this process may not run on (a description of another
    /// machine, or a narrower cpuset).
    #[error(
        "the placement uses {} {cpus} that this process may not run on (it may use \
         {allowed}): {}; measure this one with `topoprobe infer`, or choose CPUs with \
         --cpus",
        if *count == 1 { "CPU" } else { "CPUs" },
        machine.as_ref().map_or_else(
            || "is the topology of another machine?".to_string(),
            |m| format!("the topology is of another machine ({m})")
        )
    )]
    CpusNotAllowed {
        /// The machine the topology is of, when it names CPUs this machine does not have
        /// online ([`topoprobe_sys::here`]).
        machine: Option<String>,
        /// How many CPUs are missing.
        count: usize,
        /// The missing CPUs, in list syntax.
        cpus: String,
        /// The CPUs this process may use, in list syntax.
        allowed: String,
    },
    /// Memory was to be interleaved, but the nodes of the placement's CPUs are unknown.
    #[error(
        "interleaving memory (--mem interleave) needs the memory nodes of the placement's \
         CPUs, and neither the OS nor the description gives them"
    )]
    NoNodes,
    /// The pinning library cannot be found.
    #[error("{0}")]
    Preload(String),
    /// The kernel refused the memory policy.
    #[error(transparent)]
    MemoryPolicy(#[from] MemPolicyError),
    /// The program cannot be started or waited for.
    #[error("cannot run {program}: {source}")]
    Launch {
        /// The program.
        program: String,
        /// What the operating system said.
        source: std::io::Error,
    },
}

impl PlaceError {
    /// Whether the request itself is invalid for this topology (a usage error), as opposed
    /// to a failure of the operating system.
    #[must_use]
    pub const fn is_usage(&self) -> bool {
        !matches!(
            self,
            Self::Affinity(_) | Self::Preload(_) | Self::MemoryPolicy(_) | Self::Launch { .. }
        )
    }
}

/// Why work spread over placed threads — an experiment, a pool, a parallel algorithm —
/// could not be set up or run: what `topoprobe_sync`'s and `topoprobe_parallel`'s errors
/// share, kept here, the lowest crate both build on that knows placement.
///
/// [`WorkError::is_usage`] tells a bad request (a parameter out of range, a placement that
/// cannot be planned) from a failure.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// A parameter of an experiment is out of range: a bad request, not a failure.
    #[error("{what} {value} is out of range (allowed: {expected})")]
    Parameter {
        /// The parameter, as the command line names it (`threads`, `size`, `runs`…).
        what: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Thread placement failed.
    #[error(transparent)]
    Place(#[from] PlaceError),
    /// A worker thread could not be started or panicked.
    #[error("worker thread: {0}")]
    Thread(String),
    /// An experiment's result was checked and is wrong.
    #[error("verification failed: {0}")]
    Verification(String),
}

impl WorkError {
    /// A [`WorkError::Parameter`]: `what` (as the command line names it) is `value`, and
    /// `expected` says what is accepted.
    #[must_use]
    pub fn parameter(
        what: &'static str,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Self::Parameter {
            what,
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// Whether the error means the request itself is wrong (a parameter out of range, a
    /// placement that cannot be planned), so that retrying cannot help.
    #[must_use]
    pub const fn is_usage(&self) -> bool {
        match self {
            Self::Parameter { .. } => true,
            Self::Place(e) => e.is_usage(),
            Self::Thread(_) | Self::Verification(_) => false,
        }
    }
}
