//! A placement in the forms people and other tools take: the summary of the paper's
//! Figure 7 (its text), a CPU list, a mask, `taskset`, `numactl`, OpenMP's environment,
//! `likwid-pin`, `hwloc-bind`, GNU and Intel/LLVM OpenMP's affinity lists, and the MPI
//! launchers (Open MPI's rankfile, Slurm's `--cpu-bind`, Intel MPI's processor list,
//! MPICH's `-bind-to user:`: rank `i` on the placement's `i`-th CPU); and the report of a
//! pinned run.

use std::fmt::Write as _;

use topoprobe_model::format::{plural, short_latency};
use topoprobe_model::results::placement::{PlacementResult, PlacementSummary, RunResult};
use topoprobe_model::{format_cpu_list, seconds_text};

use super::Rendered;

/// The forms of a placement for other tools.
///
/// With the `clap` feature it is a command-line value (`topoprobe place --format`): the
/// first paragraph of each variant's documentation is its help there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Form {
    /// CPU numbers in placement order, comma-separated.
    ///
    /// `0,20,1,21`.
    List,
    /// Hexadecimal CPU mask.
    ///
    /// The CPU set as a mask (`taskset` without `-c`): `0x3` for CPUs 0 and 1.
    Mask,
    /// A `taskset -c LIST` prefix (binds the whole process to the set: the order is lost).
    ///
    /// `taskset -c 0-1,20-21`.
    Taskset,
    /// A `numactl --physcpubind=LIST [--membind=NODES]` prefix (binds the whole process to
    /// the set: the order is lost).
    ///
    /// `numactl --physcpubind=0-1 --membind=0` (the memory binding only when the nodes are
    /// known).
    Numactl,
    /// OMP_NUM_THREADS, OMP_PLACES and OMP_PROC_BIND, one NAME=value per line.
    ///
    /// OpenMP's environment, one `NAME=value` per line (`env $(...) prog` takes them).
    Omp,
    /// A `likwid-pin -c LIST` prefix.
    ///
    /// Pins threads in placement order: `likwid-pin -c 0,20,1`.
    Likwid,
    /// A `hwloc-bind --physical pu:N ...` prefix (binds the whole process to the set: the
    /// order is lost).
    ///
    /// By operating-system numbers: `hwloc-bind --physical pu:0 pu:1` (append `-- prog`).
    Hwloc,
    /// An Open MPI rankfile: rank i on the i-th CPU (physical numbers).
    ///
    /// Of the described host (`localhost` when unknown), after comment lines giving the
    /// `mpirun` options it needs.
    Rankfile,
    /// Slurm's `--cpu-bind=map_cpu:LIST` (rank i on the i-th CPU).
    ///
    /// Decimal CPU numbers: `--cpu-bind=map_cpu:0,20,1,21`.
    Slurm,
    /// Slurm's `--cpu-bind=mask_cpu:MASKS` (one mask per rank).
    ///
    /// In placement order: `--cpu-bind=mask_cpu:0x1,0x100000`.
    SlurmMask,
    /// Intel MPI's `I_MPI_PIN_PROCESSOR_LIST=LIST`.
    ///
    /// `I_MPI_PIN_PROCESSOR_LIST=0,20,1,21`.
    IntelMpi,
    /// GNU OpenMP's `GOMP_CPU_AFFINITY=LIST` (thread i on the i-th CPU).
    ///
    /// `GOMP_CPU_AFFINITY=0,20,1,21`.
    Gomp,
    /// Intel/LLVM OpenMP's `KMP_AFFINITY=granularity=fine,explicit,proclist=[LIST]`.
    ///
    /// `KMP_AFFINITY=granularity=fine,explicit,proclist=[0,20,1,21]`.
    Kmp,
    /// MPICH's `-bind-to user:LIST` (rank i on the i-th CPU).
    ///
    /// Hydra's `-bind-to user:0,20,1,21`.
    Mpich,
}

impl Form {
    /// Whether the form binds the whole process to the set of CPUs, so that the order of
    /// the placement (thread `i` on the `i`-th CPU) is lost: `taskset`, `numactl`,
    /// `hwloc-bind` and the mask.
    #[must_use]
    pub const fn loses_order(self) -> bool {
        matches!(
            self,
            Self::Mask | Self::Taskset | Self::Numactl | Self::Hwloc
        )
    }
}

/// The placement in `form`, ending with a newline.
#[must_use]
pub fn render(p: &PlacementResult, form: Form) -> String {
    let mut s = match form {
        Form::List => list(&p.contexts),
        Form::Mask => mask(&p.cpu_set()),
        Form::Taskset => format!("taskset -c {}", format_cpu_list(&p.contexts)),
        Form::Numactl => {
            let mut s = format!("numactl --physcpubind={}", format_cpu_list(&p.contexts));
            if let Some(n) = p.nodes.as_ref().filter(|n| !n.is_empty()) {
                let _ = write!(s, " --membind={}", format_cpu_list(n));
            }
            s
        }
        Form::Omp => p
            .omp
            .iter()
            .map(|v| format!("{}={}", v.name, v.value))
            .collect::<Vec<_>>()
            .join("\n"),
        Form::Likwid => format!("likwid-pin -c {}", list(&p.contexts)),
        Form::Hwloc => {
            let mut s = String::from("hwloc-bind --physical");
            for c in p.cpu_set() {
                let _ = write!(s, " pu:{c}");
            }
            s
        }
        Form::Rankfile => rankfile(p),
        Form::Slurm => format!("--cpu-bind=map_cpu:{}", list(&p.contexts)),
        Form::SlurmMask => {
            let masks: Vec<String> = p.contexts.iter().map(|&c| mask(&[c])).collect();
            format!("--cpu-bind=mask_cpu:{}", masks.join(","))
        }
        Form::IntelMpi => format!("I_MPI_PIN_PROCESSOR_LIST={}", list(&p.contexts)),
        Form::Gomp => format!("GOMP_CPU_AFFINITY={}", list(&p.contexts)),
        Form::Kmp => format!(
            "KMP_AFFINITY=granularity=fine,explicit,proclist=[{}]",
            list(&p.contexts)
        ),
        Form::Mpich => format!("-bind-to user:{}", list(&p.contexts)),
    };
    s.push('\n');
    s
}

/// Comma-separated numbers in order.
fn list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A set of CPUs as a hexadecimal mask, least significant CPU last: `0x3c0f`.
fn mask(cpus: &[u32]) -> String {
    let highest = cpus.iter().copied().max().unwrap_or(0) as usize;
    let mut nibbles = vec![0_u8; highest / 4 + 1];
    for &c in cpus {
        let c = c as usize;
        nibbles[c / 4] |= 1 << (c % 4);
    }
    let hex: String = nibbles
        .iter()
        .rev()
        .map(|n| char::from_digit(u32::from(*n), 16).unwrap_or('0'))
        .collect();
    format!("0x{hex}")
}

/// The Open MPI rankfile of a placement.
fn rankfile(p: &PlacementResult) -> String {
    let host = p
        .host
        .as_deref()
        .filter(|h| !h.is_empty() && !h.contains(char::is_whitespace))
        .unwrap_or("localhost");
    let n = p.contexts.len();
    let mut s = format!(
        "# Open MPI rankfile: {}, rank i on the i-th CPU of the placement (physical numbers)\n\
         # mpirun --mca rmaps_rank_file_physical 1 --use-hwthread-cpus --rankfile FILE -np {n} prog",
        plural(n, "rank")
    );
    for (rank, c) in p.contexts.iter().enumerate() {
        let _ = write!(s, "\nrank {rank}={host} slot={c}");
    }
    s
}

/// The summary as text, one `# name : value` line per figure (libmctop's printout).
#[must_use]
pub fn summary_text(s: &PlacementSummary) -> String {
    let mut out = String::new();
    let join = |v: Vec<String>| v.join(" ");
    let _ = writeln!(out, "## topoprobe placement: {}", s.policy);
    if !s.pinned {
        let _ = writeln!(out, "# Threads             : {} (not pinned)", s.threads);
    }
    let _ = writeln!(out, "# # Cores             : {}", s.cores);
    let _ = writeln!(
        out,
        "# HW contexts ({:<3})   : {}",
        s.contexts.len(),
        join(s.contexts.iter().map(ToString::to_string).collect())
    );
    let _ = writeln!(
        out,
        "# Sockets ({:<3})       : {}",
        s.sockets.len(),
        join(s.sockets.iter().map(|u| u.socket.to_string()).collect())
    );
    let _ = writeln!(
        out,
        "# # HW ctx / socket    : {}",
        join(s.sockets.iter().map(|u| u.contexts.to_string()).collect())
    );
    let _ = writeln!(
        out,
        "# # Cores / socket     : {}",
        join(s.sockets.iter().map(|u| u.cores.to_string()).collect())
    );
    let props: Option<Vec<String>> = s
        .sockets
        .iter()
        .map(|u| u.bandwidth_proportion.map(|p| format!("{p:.3}")))
        .collect();
    let _ = writeln!(
        out,
        "# BW proportions       : {}",
        props.map_or_else(|| "unavailable: no bandwidth measurements".into(), join)
    );
    match &s.power {
        Some(p) => {
            let f = |v: &[f64]| join(v.iter().map(|x| format!("{x:.1}")).collect());
            let _ = writeln!(
                out,
                "# Max pow no DRAM      : {} = {:.1} Watt",
                f(&p.sockets_package_w),
                p.package_w
            );
            let _ = writeln!(
                out,
                "# Max pow with DRAM    : {} = {:.1} Watt",
                f(&p.sockets_total_w),
                p.total_w
            );
        }
        None => {
            let _ = writeln!(
                out,
                "# Max pow              : unavailable: no power measurements"
            );
        }
    }
    let _ = match s.max_latency {
        Some(l) => writeln!(
            out,
            "# Max latency          : {} {}",
            short_latency(l),
            s.latency_unit
        ),
        None if s.contexts.len() < 2 => {
            writeln!(out, "# Max latency          : - (fewer than two contexts)")
        }
        None => writeln!(
            out,
            "# Max latency          : unavailable: no latency measurements"
        ),
    };
    let _ = match s.min_bandwidth_gbps {
        Some(b) => writeln!(out, "# Min bandwidth        : {b:.2} GB/s"),
        None => writeln!(
            out,
            "# Min bandwidth        : unavailable: no bandwidth measurements"
        ),
    };
    out
}

/// The text of a placement is its summary (paper Figure 7).
impl Rendered for PlacementResult {
    fn text(&self) -> String {
        summary_text(&self.summary)
    }
}

/// How a placement reads in one line: `RR_CORE, 2 threads on CPUs 0-1` (`not pinned`
/// for the `NONE` policy).
fn placement_line(p: &PlacementResult) -> String {
    let cpus = format_cpu_list(&p.contexts);
    let on = if p.contexts.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus}")
    };
    if p.pinned {
        format!("{}, {} on {on}", p.policy, plural(p.threads, "thread"))
    } else {
        format!(
            "{}, {} not pinned (they may use {on})",
            p.policy,
            plural(p.threads, "thread")
        )
    }
}

/// The report of a pinned run: the command, its placement, the pinning library, the
/// memory policy, notes and the exit status.
impl Rendered for RunResult {
    fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "run: {}", self.command.join(" "));
        let _ = writeln!(s, "  placement: {}", placement_line(&self.placement));
        let pinning = match &self.preload {
            Some(lib) => format!("threads pinned as they start, by {lib}"),
            None if self.placement.pinned => {
                "threads not pinned by the library (see the notes); OMP_* variables set".into()
            }
            None => "threads not pinned".into(),
        };
        let _ = writeln!(s, "  pinning: {pinning}");
        let vars: Vec<String> = self
            .environment
            .iter()
            .filter(|v| v.name != "LD_PRELOAD")
            .map(|v| format!("{}={}", v.name, v.value))
            .collect();
        if !vars.is_empty() {
            let _ = writeln!(s, "  environment: {}", vars.join(" "));
        }
        for v in &self.kept {
            let _ = writeln!(s, "  kept from the environment: {}={}", v.name, v.value);
        }
        let memory = match (&self.memory.nodes, self.memory.set) {
            (Some(n), true) => format!(
                "{} over {} {}",
                self.memory.policy,
                if n.len() == 1 { "node" } else { "nodes" },
                format_cpu_list(n)
            ),
            (_, true) => self.memory.policy.clone(),
            (_, false) if self.memory.policy == "none" => "the kernel's default".into(),
            (_, false) => format!("{} not set: the kernel's default", self.memory.policy),
        };
        let _ = writeln!(s, "  memory policy: {memory}");
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        let status = if self.exit_status > 128 {
            format!("{} (signal {})", self.exit_status, self.exit_status - 128)
        } else {
            self.exit_status.to_string()
        };
        let _ = writeln!(
            s,
            "  exit status: {status} after {}",
            seconds_text(self.wall_s)
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::results::placement::{EnvVar, MemoryUse, SocketUse};

    fn summary(policy: &str, contexts: &[u32]) -> PlacementSummary {
        PlacementSummary {
            policy: policy.into(),
            threads: contexts.len(),
            pinned: true,
            cores: contexts.len(),
            contexts: contexts.to_vec(),
            sockets: vec![SocketUse {
                socket: 0,
                contexts: contexts.len(),
                cores: contexts.len(),
                bandwidth_proportion: None,
            }],
            max_latency: Some(112.0),
            latency_unit: "cycles".into(),
            min_bandwidth_gbps: None,
            power: None,
        }
    }

    fn placement(contexts: &[u32], nodes: Option<Vec<u32>>, host: Option<&str>) -> PlacementResult {
        let places: Vec<String> = contexts.iter().map(|c| format!("{{{c}}}")).collect();
        PlacementResult {
            policy: "CON_HWC".into(),
            threads: contexts.len(),
            pinned: true,
            contexts: contexts.to_vec(),
            nodes,
            host: host.map(str::to_string),
            omp: vec![
                EnvVar::new("OMP_NUM_THREADS", contexts.len().to_string()),
                EnvVar::new("OMP_PLACES", places.join(",")),
                EnvVar::new("OMP_PROC_BIND", "close"),
            ],
            slots: Vec::new(),
            summary: summary("CON_HWC", contexts),
        }
    }

    #[test]
    fn every_form_of_the_ivy_placement() {
        // CON_HWC, 4 threads on the paper's Ivy machine.
        let p = placement(&[0, 20, 1, 21], Some(Vec::new()), Some("lpdxeon2680"));
        let r = |f| render(&p, f).trim_end().to_string();
        assert_eq!(r(Form::List), "0,20,1,21");
        assert_eq!(r(Form::Mask), "0x300003");
        assert_eq!(r(Form::Taskset), "taskset -c 0-1,20-21");
        assert_eq!(r(Form::Numactl), "numactl --physcpubind=0-1,20-21");
        assert_eq!(
            r(Form::Omp),
            "OMP_NUM_THREADS=4\nOMP_PLACES={0},{20},{1},{21}\nOMP_PROC_BIND=close"
        );
        assert_eq!(r(Form::Likwid), "likwid-pin -c 0,20,1,21");
        assert_eq!(
            r(Form::Hwloc),
            "hwloc-bind --physical pu:0 pu:1 pu:20 pu:21"
        );
        // Slurm's documented syntax: `map_cpu:<list>` of decimal CPU ids, one per task in
        // order; `mask_cpu:<list>` of hexadecimal masks (optional 0x), one per task.
        assert_eq!(r(Form::Slurm), "--cpu-bind=map_cpu:0,20,1,21");
        assert_eq!(
            r(Form::SlurmMask),
            "--cpu-bind=mask_cpu:0x1,0x100000,0x2,0x200000"
        );
        assert_eq!(r(Form::IntelMpi), "I_MPI_PIN_PROCESSOR_LIST=0,20,1,21");
        let rf = r(Form::Rankfile);
        let ranks: Vec<&str> = rf.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            ranks,
            [
                "rank 0=lpdxeon2680 slot=0",
                "rank 1=lpdxeon2680 slot=20",
                "rank 2=lpdxeon2680 slot=1",
                "rank 3=lpdxeon2680 slot=21"
            ]
        );
        assert!(
            rf.contains("rmaps_rank_file_physical 1") && rf.contains("4 ranks"),
            "{rf}"
        );
        // Known nodes bind memory; a host name with a space is not a host.
        let p = placement(&[3, 6, 9], Some(vec![1, 2, 3]), Some("my host"));
        assert_eq!(
            render(&p, Form::Numactl),
            "numactl --physcpubind=3,6,9 --membind=1-3\n"
        );
        assert!(render(&p, Form::Rankfile).contains("rank 0=localhost slot=3"));
        let p = placement(&[5], None, None);
        assert!(render(&p, Form::Rankfile).contains("1 rank,"));
        assert_eq!(render(&p, Form::Mask), "0x20\n");
    }

    #[test]
    fn a_single_cpu_mask_has_exactly_its_bit() {
        for cpu in 0..1024_u32 {
            let m = mask(&[cpu]);
            let hex = m.strip_prefix("0x").expect("0x");
            // Parse as Slurm does: hexadecimal digits, least significant last.
            let bits: Vec<u32> = hex
                .chars()
                .rev()
                .enumerate()
                .flat_map(|(i, d)| {
                    let v = d.to_digit(16).expect("hex digit");
                    (0..4)
                        .filter(move |b| v & (1 << b) != 0)
                        .map(move |b| 4 * i as u32 + b)
                })
                .collect();
            assert_eq!(bits, vec![cpu], "{m}");
        }
    }

    #[test]
    fn the_summary_reads_like_figure_7() {
        let p = placement(&[0, 20, 1, 21], None, None);
        let text = p.text();
        for want in [
            "## topoprobe placement: CON_HWC",
            "# # Cores             : 4",
            "# HW contexts (4  )   : 0 20 1 21",
            "# Max latency          : 112 cycles",
            "# Min bandwidth        : unavailable: no bandwidth measurements",
            "# Max pow              : unavailable",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
    }

    #[test]
    fn a_run_report_says_what_was_set_and_how_it_ended() {
        let r = RunResult {
            command: vec!["./prog".into(), "-x".into()],
            placement: placement(&[0, 1], None, None),
            preload: Some("/lib/libtopoprobe_preload.so".into()),
            environment: vec![
                EnvVar::new("OMP_NUM_THREADS", "2"),
                EnvVar::new("LD_PRELOAD", "/lib/libtopoprobe_preload.so"),
                EnvVar::new("TOPOPROBE_PIN_CPUS", "0,1"),
            ],
            kept: vec![EnvVar::new("OMP_PROC_BIND", "spread")],
            memory: MemoryUse {
                policy: "interleave".into(),
                nodes: Some(vec![0]),
                set: true,
            },
            notes: vec!["keeping OMP_PROC_BIND=spread".into()],
            exit_status: 137,
            wall_s: 1.5,
        };
        let t = r.text();
        for want in [
            "run: ./prog -x",
            "placement: CON_HWC, 2 threads on CPUs 0-1",
            "by /lib/libtopoprobe_preload.so",
            "environment: OMP_NUM_THREADS=2 TOPOPROBE_PIN_CPUS=0,1",
            "kept from the environment: OMP_PROC_BIND=spread",
            "memory policy: interleave over node 0",
            "exit status: 137 (signal 9)",
        ] {
            assert!(t.contains(want), "{want:?} missing from\n{t}");
        }
        assert!(!t.contains("LD_PRELOAD"), "{t}");
    }
}
