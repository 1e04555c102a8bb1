//! `topoprobe matrix`: measure and print the latency matrix of this machine.
//!
//! A noisy pair does not fail the command: it is kept and flagged. The table marks it with
//! `*` and lists the flagged pairs below, the JSON lists them (`flagged`); the CSV stays N
//! lines of N numbers, and the flags go to a `# noisy pairs` block on standard error and,
//! with `-o FILE`, to the companion file `FILE.notes` ([`crate::pair_notes`]).

use anyhow::Result;
use topoprobe_machine::probes::{self, matrix};
use topoprobe_model::results::matrix::MatrixResult;

use crate::args::MatrixArgs;
use crate::progress::MeasureProgress;

/// Runs the command.
pub(crate) fn run(args: &MatrixArgs) -> Result<()> {
    let report = args.report();
    report.check_for::<MatrixResult>(&[])?;
    let req = matrix::MatrixRequest {
        cpus: crate::cpusets::measured(args.measure.cpus.as_deref())?,
        repetitions: args.measure.repetitions.into(),
        sampling: args.measure.sampling(),
        budget: args.planning.budget(probes::DEFAULT_BUDGET),
    };
    if args.planning.plan {
        let plan = matrix::plan(&req)?;
        return crate::planned::print(&plan, report.is_json()?, report.output.as_deref());
    }
    let mut progress = MeasureProgress::new();
    let result = matrix::measure(&req, &mut |p| progress.show(p))?;
    drop(progress);
    report.emit(&result)?;
    crate::pair_notes::beside_matrix(&result, &report)
}
