//! `topoprobe cpus`: resolve a CPU-set expression (CPU lists, masks, hwloc-calc's
//! locations, likwid's domains, set arithmetic) against a topology and print its CPUs in
//! the form a tool takes, or count or list the objects they touch, as `hwloc-calc` does.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use topoprobe_model::results::cpus::{CpuSetResult, ObjectCount, ObjectIndexes};
use topoprobe_place::cpuset::{render, Inventory, ObjectType, Resolved};

use crate::args::{CpusArgs, CpusFormat};
use crate::cpusets;
use crate::error::Usage;
use crate::output::{check_target, name_of, write_to};

/// Where the objects came from.
enum Source {
    /// A description, `.mct` file or matrix named by `--topology`.
    File(PathBuf),
    /// The sysfs under a directory (`/`: this machine's).
    Sysfs(PathBuf),
    /// The operating system's view of this machine, for want of a description.
    ThisMachine,
}

impl Source {
    fn text(&self) -> String {
        match self {
            Self::File(p) => format!("the topology of {}", p.display()),
            Self::Sysfs(p) => format!("the operating system's view under {}", p.display()),
            Self::ThisMachine => "the operating system's view of this machine".to_string(),
        }
    }
}

/// The objects of the topology `--topology` names (a directory: a sysfs root), or of
/// the operating system's view of this machine.
fn inventory(topology: Option<&Path>) -> Result<(Inventory, Source)> {
    let os_view = |root: &Path| -> Result<Inventory> {
        let view = topoprobe_measure::os::read_os_view(root).with_context(|| {
            format!(
                "reading the operating system's view under {}",
                root.display()
            )
        })?;
        Ok(Inventory::from_os_view(&view))
    };
    match topology {
        Some(p) if p.is_dir() => Ok((os_view(p)?, Source::Sysfs(p.to_path_buf()))),
        Some(p) => {
            let t = crate::inputs::topology(Some(p))?;
            crate::inputs::check_here(&t, Some(p), crate::inputs::Use::Plan)?;
            Ok((Inventory::from_topology(&t), Source::File(p.to_path_buf())))
        }
        // hwloc's and likwid's names mean the OS's objects of this machine, as in those
        // tools, whatever a measured description of it says.
        None => Ok((os_view(Path::new("/"))?, Source::ThisMachine)),
    }
}

/// The logical indexes of the objects of `ty` holding a CPU of the set.
fn touched(inv: &Inventory, ty: ObjectType, flag: &str, r: &Resolved) -> Result<Vec<usize>> {
    inv.intersecting(ty, &r.cpus)
        .map_err(|e| Usage(format!("{flag} {ty}: {}", e.reason)).into())
}

/// Runs the command.
pub(crate) fn run(args: &CpusArgs) -> Result<()> {
    let format = args.output.format()?;
    if (args.number_of.is_some() || args.intersect.is_some())
        && !matches!(format, CpusFormat::List | CpusFormat::Json)
    {
        return Err(Usage(format!(
            "--format {}: --number-of and --intersect print numbers; use --format list or json",
            name_of(&format)
        ))
        .into());
    }
    let inputs: Vec<&Path> = args.topology.as_deref().into_iter().collect();
    check_target(args.output.output.as_deref(), &inputs)?;
    let text = args.expr.join(" ");
    let expr = cpusets::parse("", &text)?;
    let (inv, source) = inventory(args.topology.as_deref())?;
    let resolved = expr
        .resolve(&inv)
        .map_err(|e| cpusets::usage("", &text, &e))?;
    let number_of = match args.number_of {
        Some(ty) => Some((ty, touched(&inv, ty, "--number-of", &resolved)?.len())),
        None => None,
    };
    let intersect = match args.intersect {
        Some(ty) => Some((ty, touched(&inv, ty, "--intersect", &resolved)?)),
        None => None,
    };
    let indexes = |v: &[usize]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let out = match format {
        CpusFormat::Json => {
            let v = CpuSetResult {
                expression: text.clone(),
                topology: source.text(),
                cpus: resolved.cpus.clone(),
                order: resolved.order.clone(),
                list: render::list(&resolved.cpus),
                mask: render::mask(&resolved.cpus),
                hwloc: render::hwloc(&resolved.cpus),
                likwid: render::ordered(&resolved.order),
                number_of: number_of.map(|(ty, count)| ObjectCount {
                    kind: ty.name().to_string(),
                    count,
                }),
                intersect: intersect.as_ref().map(|(ty, ids)| ObjectIndexes {
                    kind: ty.name().to_string(),
                    indexes: ids.clone(),
                }),
            };
            topoprobe_view::results::json(&v).context("rendering the CPU set as JSON")?
        }
        _ if number_of.is_some() => number_of.map(|(_, n)| n.to_string()).unwrap_or_default(),
        _ if intersect.is_some() => intersect.map(|(_, ids)| indexes(&ids)).unwrap_or_default(),
        CpusFormat::List => render::list(&resolved.cpus),
        CpusFormat::Mask => render::mask(&resolved.cpus),
        CpusFormat::Hwloc => render::hwloc(&resolved.cpus),
        CpusFormat::Likwid => render::ordered(&resolved.order),
    };
    let mut out = out;
    if !out.ends_with('\n') {
        out.push('\n');
    }
    write_to(args.output.output.as_deref(), out.as_bytes())
}
