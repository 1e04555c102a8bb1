//! `topoprobe run`: run a command with its threads pinned by a policy.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use topoprobe_model::format_cpu_list;
use topoprobe_model::Topology;
use topoprobe_place::{export, Plan};
use topoprobe_sys::affinity::allowed_cpus;
use topoprobe_sys::elf::{program_linking, Linking};
use topoprobe_sys::launch;
use topoprobe_sys::memory::{set_policy, MemPolicy};
use topoprobe_sys::pin_env::{PIN_CPUS_VAR, PIN_SKIP_VAR, PRELOAD_LIBRARY};

use crate::args::{Mem, RunArgs};
use crate::error::{report, Usage};

/// Where the preload library is: `$TOPOPROBE_PRELOAD`, else next to this executable, in
/// `../lib` from it, or in `deps/` below it (cargo's build directory).
fn preload_library() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("TOPOPROBE_PRELOAD").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("TOPOPROBE_PRELOAD={} is not a file", p.display());
        }
        return Ok(p);
    }
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [
        dir.join(PRELOAD_LIBRARY),
        dir.join("..").join("lib").join(PRELOAD_LIBRARY),
        dir.join("deps").join(PRELOAD_LIBRARY),
    ];
    candidates.iter().find(|p| p.is_file()).cloned().with_context(|| {
        format!(
            "cannot find {PRELOAD_LIBRARY} (looked next to {}, in ../lib and deps/): build it with `cargo build -p topoprobe-preload` (a plain `cargo build` of the workspace builds it too) or set TOPOPROBE_PRELOAD",
            exe.display()
        )
    })
}

/// The OS node numbers of the CPUs of a plan: from the OS, else from the description.
fn nodes_of(topo: &Topology, plan: &Plan) -> Option<Vec<u32>> {
    topoprobe_machine::os_nodes_of(&export::cpus(topo, plan))
        .or_else(|| export::nodes(topo, plan).filter(|v| !v.is_empty()))
}

/// Checks that this process may run on every CPU of a placement: a description of
/// another machine names CPUs this one does not have (a usage error, before starting).
fn check_cpus(cpus: &[u32]) -> Result<()> {
    let allowed = allowed_cpus().context("reading the CPUs this process may use")?;
    let missing: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|&c| !allowed.contains(c))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Usage(format!(
        "the placement uses {} {} that this process may not run on (it may use {}): is the \
         topology of another machine? Measure this one with `topoprobe infer`, or choose \
         CPUs with --cpus",
        if missing.len() == 1 { "CPU" } else { "CPUs" },
        format_cpu_list(&missing),
        format_cpu_list(&allowed.to_vec())
    ))
    .into())
}

fn run_inner(args: &RunArgs) -> Result<i32> {
    let (topo, plan) = args.placement.plan()?;
    let skip = args.skip.clone();
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| Usage("no command given".into()))?;
    let mut preload_loads = plan.pinned;
    if plan.pinned {
        check_cpus(&export::cpus(&topo, &plan))?;
        if program_linking(Path::new(program)) == Linking::Static {
            preload_loads = false;
            eprintln!(
                "topoprobe: warning: {} is statically linked: its threads will not be pinned \
                 (only a dynamically linked program loads the pinning library); the OMP_* \
                 variables are still set",
                Path::new(program).display()
            );
        }
    }
    let mut cmd = Command::new(program);
    cmd.args(rest);
    for (k, v) in export::omp_env(&topo, &plan) {
        match std::env::var(&k) {
            Ok(user) if user != v => eprintln!(
                "topoprobe: note: keeping {k}={user} from the environment (the placement \
                 would set {v})"
            ),
            Ok(_) => {}
            Err(_) => {
                cmd.env(k, v);
            }
        }
    }
    // A statically linked program never loads the pinning library: it is not needed then.
    if preload_loads {
        let lib = preload_library()?;
        let mut preload = lib.into_os_string();
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
            preload.push(" ");
            preload.push(old);
        }
        cmd.env("LD_PRELOAD", preload);
        cmd.env(PIN_CPUS_VAR, export::list(&topo, &plan));
        cmd.env(PIN_SKIP_VAR, skip.unwrap_or_else(|| "0x0".into()));
    }
    if args.verbose {
        let placement = topoprobe_place::Placement::with_restore(&topo, plan.clone(), Vec::new());
        eprint!("{}", placement.summary().to_text());
    }
    // The memory policy is set on this thread and inherited by the command.
    match args.mem {
        Mem::None => {}
        Mem::Local => {
            if let Err(e) = set_policy(&MemPolicy::Local) {
                eprintln!(
                    "topoprobe: note: memory policy not set ({e}); the kernel's default applies"
                );
            }
        }
        Mem::Interleave => {
            let nodes = nodes_of(&topo, &plan).ok_or_else(|| {
                Usage("--mem interleave needs the memory nodes of the placement's CPUs, and neither the OS nor the description gives them".into())
            })?;
            set_policy(&MemPolicy::Interleave(nodes.into()))?;
        }
    }
    launch::run_forwarding_with(&mut cmd, !args.keep_child)
        .with_context(|| format!("cannot run {}", Path::new(program).display()))
}

/// Runs the command and exits as it did.
pub(crate) fn main(args: &RunArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => ExitCode::from(report(&e)),
    }
}
