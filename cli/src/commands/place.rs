//! `topoprobe place`: print where a policy puts threads, in the form another tool takes.

use anyhow::Result;
use topoprobe_place::{export, Placement};

use crate::args::{PlaceArgs, PlaceFormat};
use crate::output::write_stdout;

/// Runs the command.
pub(crate) fn run(args: &PlaceArgs) -> Result<()> {
    let (topo, p) = args.placement.plan()?;
    let restore: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    let placement = Placement::with_restore(&topo, p, restore);
    let p = placement.plan();
    let text = match args.format {
        PlaceFormat::List => export::list(&topo, p),
        PlaceFormat::Mask => export::mask(&topo, p),
        PlaceFormat::Taskset => export::taskset(&topo, p),
        PlaceFormat::Numactl => export::numactl(&topo, p),
        PlaceFormat::Omp => export::omp(&topo, p),
        PlaceFormat::Likwid => export::likwid(&topo, p),
        PlaceFormat::Hwloc => export::hwloc(&topo, p),
        PlaceFormat::Rankfile => export::rankfile(&topo, p),
        PlaceFormat::Slurm => export::slurm_map(&topo, p),
        PlaceFormat::SlurmMask => export::slurm_mask(&topo, p),
        PlaceFormat::IntelMpi => export::intel_mpi(&topo, p),
        PlaceFormat::Json => serde_json::to_string_pretty(&placement.to_json())?,
    };
    if !args.quiet {
        eprint!("{}", placement.summary().to_text());
    }
    write_stdout(format!("{text}\n").as_bytes())
}
