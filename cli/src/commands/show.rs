//! `topoprobe show`: show a topology (from a file, or this machine's description) in any
//! format; the Graphviz graphs rendered to SVG or PNG.

use anyhow::Result;
use topoprobe_view::color::use_color;
use topoprobe_view::picture::Picture;
use topoprobe_view::text::TextOptions;

use crate::args::{Format, ShowArgs};
use crate::error::Usage;
use crate::output::{is_stdout, write_topology};

/// Runs the command.
pub(crate) fn run(args: &ShowArgs) -> Result<()> {
    let out = args.output.output.as_deref();
    let flag = match (args.view.svg, args.view.png) {
        (true, _) => Some(Picture::Svg),
        (_, true) => Some(Picture::Png),
        _ => None,
    };
    let by_ext = out
        .filter(|p| !is_stdout(Some(p)))
        .and_then(Picture::of_path);
    if let (Some(f), Some(e), Some(path)) = (flag, by_ext, out) {
        if f != e {
            return Err(Usage(format!(
                "--{} conflicts with -o {}: the file would hold {} bytes under a .{} name",
                f.ext(),
                path.display(),
                f.ext().to_uppercase(),
                e.ext()
            ))
            .into());
        }
    }
    let picture = flag.or(by_ext);
    let format = match (picture, args.output.format, args.output.json) {
        (Some(_), None, false) => Format::Dot,
        _ => args.output.format()?,
    };
    if picture.is_some() && format != Format::Dot {
        return Err(Usage(
            "--svg and --png (or -o FILE.svg, FILE.png) render the graphs of --format dot".into(),
        )
        .into());
    }
    if args.view.socket != 0 && format != Format::Dot {
        return Err(Usage("--socket chooses the intra-socket graph of --format dot".into()).into());
    }
    args.input.check_output(out)?;
    let mut topo = args.input.load()?;
    if format == Format::Dot {
        return crate::output::dot_graphs(&topo, args.view.socket, picture, out);
    }
    let text = TextOptions {
        color: use_color(args.view.color, is_stdout(out)),
        verbose: args.view.verbose,
    };
    if format == Format::HwlocXml && args.input.paths().is_empty() {
        // This machine's description: the caches whose sharing it does not record
        // share as the OS says.
        if let Ok(os) = topoprobe_measure::os::current() {
            topoprobe_model::format::hwloc_xml::read::add_os_sharing(&mut topo, &os);
        }
    }
    write_topology(&topo, format, args.input.hints.ghz, text, out)
}
