//! `topoprobe place`: print where a policy puts threads, in the form another tool takes.

use std::path::Path;

use anyhow::{Context, Result};
use topoprobe_model::format_cpu_list;
use topoprobe_view::results::placement::{render, Form};
use topoprobe_view::results::Rendered;

use crate::args::{PlaceArgs, PlaceFormat};
use crate::output::{check_target, choose, write_to, Kind};

/// The output format: as every command's ([`crate::output::OutputArgs::format`]), except
/// that a `.txt` file takes any of the text forms (`--format rankfile -o ranks.txt`).
fn format(args: &PlaceArgs) -> Result<PlaceFormat> {
    let out = &args.output;
    let text_file = out
        .output
        .as_deref()
        .and_then(Kind::of_path)
        .is_some_and(|k| k == Kind::Text);
    let given_text = out.format.is_some_and(|f| f != PlaceFormat::Json);
    if text_file && given_text {
        // The file's extension chooses nothing: the given form stands.
        return Ok(choose(out.format, out.json, None)?);
    }
    Ok(out.format()?)
}

/// Runs the command.
pub(crate) fn run(args: &PlaceArgs) -> Result<()> {
    let format = format(args)?;
    let inputs: Vec<&Path> = args.placement.topology.as_deref().into_iter().collect();
    check_target(args.output.output.as_deref(), &inputs)?;
    let (topo, req) = args.placement.request()?;
    crate::inputs::check_here(
        &topo,
        args.placement.topology.as_deref(),
        crate::inputs::Use::Plan,
    )?;
    let placement = topoprobe_place::place(&topo, &req)?;
    let text = match format.form() {
        Some(f) => render(&placement, f),
        None => topoprobe_view::results::json(&placement).context("rendering the placement")?,
    };
    if !args.quiet {
        eprint!("{}", placement.text());
        let ordered = placement.pinned && !placement.contexts.is_sorted();
        if ordered && format.form().is_some_and(Form::loses_order) {
            eprintln!(
                "topoprobe: note: this form binds the whole process to the set {}: which thread \
                 runs where is lost; --format likwid, gomp, kmp, omp or mpich keep the order",
                format_cpu_list(&placement.contexts)
            );
        }
    }
    write_to(args.output.output.as_deref(), text.as_bytes())
}
