//! Running a program with its threads placed (`topoprobe run`): the pinning library is
//! preloaded (`LD_PRELOAD=libtopoprobe_preload.so`, told the CPUs through
//! `TOPOPROBE_PIN_CPUS` and the threads to leave alone through `TOPOPROBE_PIN_SKIP`), the
//! OpenMP environment of the placement is set (a variable the caller set already is
//! kept), and the memory policy is set on the calling thread and inherited. Then either
//! this process becomes the program ([`exec`], as `taskset` and `likwid-pin` do: signals
//! reach it exactly as they would reach the program alone), or it runs as our child with
//! the signals sent to this process passed on, and what was done, with its exit status,
//! comes back as a [`RunResult`] ([`run`]).
//!
//! A statically linked program cannot load the pinning library: it runs with the OpenMP
//! variables alone, and a note says so.

use std::convert::Infallible;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use topoprobe_model::results::placement::{EnvVar, MemoryUse, PlacementResult, RunResult};
use topoprobe_model::{format_cpu_list, Topology};
use topoprobe_sys::affinity::allowed_cpus;
use topoprobe_sys::elf::{program_linking, Linking};
use topoprobe_sys::memory::{nodes_of_cpus, set_policy, MemPolicy};
use topoprobe_sys::pin_env::{PIN_CPUS_VAR, PIN_MACHINE_VAR, PIN_SKIP_VAR};

use crate::error::PlaceError;
use crate::plan::{plan, Plan, Request};
use crate::result::describe;

pub use crate::preload::{find_preload, PRELOAD_VAR};

/// The memory policy of the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Memory {
    /// Memory on the node of the CPU that first touches it (`numactl --localalloc`).
    ///
    /// When the kernel refuses, its default applies and a note says so.
    #[default]
    Local,
    /// Interleaved over the nodes of the placement's CPUs (`numactl --interleave`).
    Interleave,
    /// The kernel's default; nothing is set.
    #[cfg_attr(feature = "clap", value(name = "none"))]
    Default,
}

impl Memory {
    /// Its name in the result: `local`, `interleave` or `none`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Interleave => "interleave",
            Self::Default => "none",
        }
    }
}

/// What to run and how.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Launch {
    /// The program and its arguments.
    pub command: Vec<OsString>,
    /// The memory policy.
    pub memory: Memory,
    /// Created threads not to pin (bit `i`: the `i`-th thread the program creates, from
    /// 0), like `likwid-pin -s`: they may run on any CPU of the placement.
    pub skip: u128,
    /// Whether the program is killed when the calling thread dies (`PR_SET_PDEATHSIG`;
    /// otherwise it runs on unwatched).
    pub end_with_caller: bool,
    /// The pinning library; `None`: [`find_preload`].
    pub preload: Option<PathBuf>,
}

/// Something that happened before the program started, for a live display.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Something that does not go as asked (a static program its threads cannot be pinned
    /// in, a memory policy the kernel refused); it is in [`RunResult::notes`] too.
    Warning(&'a str),
    /// A note (a variable kept from the environment); it is in [`RunResult::notes`] too.
    Note(&'a str),
    /// The program is about to start with this placement.
    Starting(&'a PlacementResult),
}

/// Receives [`Event`]s.
pub trait Observer {
    /// Called for every event.
    fn event(&mut self, event: &Event<'_>);
}

impl Observer for () {
    fn event(&mut self, _event: &Event<'_>) {}
}

/// Checks that this process may run on every CPU of a placement of `topo`: a description
/// of another machine names CPUs this one does not have (the refusal then names that
/// machine, by [`topoprobe_sys::here`]).
fn check_cpus(topo: &Topology, cpus: &[u32]) -> Result<(), PlaceError> {
    let allowed = allowed_cpus()?;
    let missing: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|&c| !allowed.contains(c))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(PlaceError::CpusNotAllowed {
        machine: topoprobe_sys::here::check_this_machine(topo)
            .err()
            .map(|e| e.machine),
        count: missing.len(),
        cpus: format_cpu_list(&missing),
        allowed: format_cpu_list(&allowed.to_vec()),
    })
}

/// The memory nodes of a plan's CPUs: from the OS, else from the description.
fn nodes_of(cpus: &[u32], placement: &PlacementResult) -> Option<Vec<u32>> {
    nodes_of_cpus(cpus).or_else(|| placement.nodes.clone().filter(|v| !v.is_empty()))
}

/// Plans `req` over `topo` and runs `launch.command` with its threads placed, passing on
/// the signals sent to this process; returns when the program has ended. The memory
/// policy is set on the calling thread (the program inherits it). `observer` sees the
/// notes as they arise and the placement before the program starts.
///
/// Use [`exec`] instead when nothing needs to happen after the program: it becomes the
/// program, so that signals reach it exactly as they would reach the program itself.
///
/// # Errors
///
/// Before the program starts: the errors of [`plan`](crate::plan()),
/// [`PlaceError::NoCommand`], [`PlaceError::CpusNotAllowed`] (a description of another
/// machine), [`PlaceError::NoNodes`] (interleaving without known nodes) — requests that
/// can never succeed — and [`PlaceError::Preload`], [`PlaceError::MemoryPolicy`],
/// [`PlaceError::Affinity`], [`PlaceError::Launch`] (the program cannot be started or
/// waited for).
pub fn run(
    topo: &Topology,
    req: &Request,
    launch: &Launch,
    observer: &mut dyn Observer,
) -> Result<RunResult, PlaceError> {
    let plan = plan(topo, req)?;
    run_plan(topo, &plan, launch, observer)
}

/// [`run`] with a plan made already.
///
/// # Errors
///
/// As [`run`].
pub fn run_plan(
    topo: &Topology,
    plan: &Plan,
    launch: &Launch,
    observer: &mut dyn Observer,
) -> Result<RunResult, PlaceError> {
    let Prepared {
        mut command,
        program,
        result,
    } = prepare(topo, plan, launch, observer)?;
    let started = Instant::now();
    let exit_status =
        topoprobe_sys::launch::run_forwarding_with(&mut command, launch.end_with_caller)
            .map_err(|source| PlaceError::Launch { program, source })?;
    Ok(RunResult {
        exit_status,
        wall_s: started.elapsed().as_secs_f64(),
        ..result
    })
}

/// Plans `req` over `topo` and replaces this process by `launch.command` with its threads
/// placed (`execvp`, as `taskset` and `likwid-pin` do): the program keeps this process's
/// id, its parent and its process group, so that a signal sent to this process or to its
/// group (a terminal's Ctrl-C) reaches the program once, its exit status is what the
/// shell sees, and nothing runs on unwatched if the program is killed. The memory policy
/// is set on the calling thread and kept across the exec. Returns only when the program
/// could not be started; `launch.end_with_caller` does not apply.
///
/// Call it from a process with no other work to finish: other threads end with the exec,
/// and buffered output that is not flushed is lost.
///
/// # Errors
///
/// As [`run`], before the program starts; [`PlaceError::Launch`] when it cannot be
/// executed (not found, not executable).
pub fn exec(
    topo: &Topology,
    req: &Request,
    launch: &Launch,
    observer: &mut dyn Observer,
) -> Result<Infallible, PlaceError> {
    let plan = plan(topo, req)?;
    let Prepared {
        mut command,
        program,
        ..
    } = prepare(topo, &plan, launch, observer)?;
    let source = command.exec();
    Err(PlaceError::Launch { program, source })
}

/// A command ready to start: its environment set, the memory policy set on the calling
/// thread, and the result so far (no exit status yet).
struct Prepared {
    command: Command,
    /// The program, for messages.
    program: String,
    result: RunResult,
}

/// Everything [`run_plan`] and [`exec`] do before the program starts.
fn prepare(
    topo: &Topology,
    plan: &Plan,
    launch: &Launch,
    observer: &mut dyn Observer,
) -> Result<Prepared, PlaceError> {
    let placement = describe(topo, plan);
    let (program, rest) = launch.command.split_first().ok_or(PlaceError::NoCommand)?;
    let mut notes = Vec::new();
    let mut note = |observer: &mut dyn Observer, warning: bool, text: String| {
        observer.event(&if warning {
            Event::Warning(&text)
        } else {
            Event::Note(&text)
        });
        notes.push(text);
    };
    let interleave = match launch.memory {
        Memory::Interleave => {
            Some(nodes_of(&placement.contexts, &placement).ok_or(PlaceError::NoNodes)?)
        }
        _ => None,
    };
    let mut preload_loads = plan.pinned;
    if plan.pinned {
        check_cpus(topo, &placement.contexts)?;
        if program_linking(Path::new(program)) == Linking::Static {
            preload_loads = false;
            note(
                observer,
                true,
                format!(
                    "{} is statically linked: its threads will not be pinned (only a \
                     dynamically linked program loads the pinning library); the OMP_* \
                     variables are still set",
                    Path::new(program).display()
                ),
            );
        }
    }
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let mut environment = Vec::new();
    let mut kept = Vec::new();
    for var in &placement.omp {
        match std::env::var(&var.name) {
            Ok(user) => {
                if user != var.value {
                    note(
                        observer,
                        false,
                        format!(
                            "keeping {}={user} from the environment (the placement would set {})",
                            var.name, var.value
                        ),
                    );
                }
                kept.push(EnvVar::new(&var.name, user));
            }
            Err(_) => {
                cmd.env(&var.name, &var.value);
                environment.push(var.clone());
            }
        }
    }
    // A statically linked program never loads the pinning library: it is not needed then.
    let preload = if preload_loads {
        let lib = match &launch.preload {
            Some(p) => p.clone(),
            None => find_preload()?,
        };
        let mut value = lib.clone().into_os_string();
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
            value.push(" ");
            value.push(old);
        }
        let cpus = placement
            .contexts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let skip = format!("{:#x}", launch.skip);
        environment.push(EnvVar::new("LD_PRELOAD", value.to_string_lossy()));
        environment.push(EnvVar::new(PIN_CPUS_VAR, &cpus));
        environment.push(EnvVar::new(PIN_SKIP_VAR, &skip));
        cmd.env("LD_PRELOAD", value);
        cmd.env(PIN_CPUS_VAR, cpus);
        cmd.env(PIN_SKIP_VAR, skip);
        // Only for the library's messages: not part of the placement's environment.
        cmd.env(PIN_MACHINE_VAR, topoprobe_sys::here::machine_of(topo));
        Some(lib.display().to_string())
    } else {
        None
    };
    observer.event(&Event::Starting(&placement));
    // The memory policy is set on this thread and inherited by the program.
    let memory = match (launch.memory, interleave) {
        (Memory::Default, _) => MemoryUse {
            policy: launch.memory.name().into(),
            nodes: None,
            set: false,
        },
        (Memory::Interleave, Some(nodes)) => {
            set_policy(&MemPolicy::Interleave(nodes.clone().into()))?;
            MemoryUse {
                policy: launch.memory.name().into(),
                nodes: Some(nodes),
                set: true,
            }
        }
        _ => {
            let set = match set_policy(&MemPolicy::Local) {
                Ok(()) => true,
                Err(e) => {
                    note(
                        observer,
                        true,
                        format!("memory policy not set ({e}); the kernel's default applies"),
                    );
                    false
                }
            };
            MemoryUse {
                policy: launch.memory.name().into(),
                nodes: None,
                set,
            }
        }
    };
    Ok(Prepared {
        command: cmd,
        program: Path::new(program).display().to_string(),
        result: RunResult {
            command: launch
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            placement,
            preload,
            environment,
            kept,
            memory,
            notes,
            exit_status: 0,
            wall_s: 0.0,
        },
    })
}
