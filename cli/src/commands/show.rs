//! `topoprobe show`: show a topology from a file, in any format; the Graphviz graphs
//! rendered to SVG or PNG.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use topoprobe_infer::load_topology;
use topoprobe_machine::stamp;
use topoprobe_model::{SocketId, Topology};
use topoprobe_view::color::use_color;
use topoprobe_view::dot;
use topoprobe_view::graphviz::{self, NO_GRAPHVIZ};
use topoprobe_view::picture::Picture;
use topoprobe_view::text::TextOptions;

use crate::args::{Format, ShowArgs};
use crate::error::usage_error;
use crate::output::{render, write_to};
use crate::render::sibling;

/// Runs the command.
pub(crate) fn run(args: &ShowArgs) -> Result<()> {
    let flag = match (args.view.svg, args.view.png) {
        (true, _) => Some(Picture::Svg),
        (_, true) => Some(Picture::Png),
        _ => None,
    };
    let by_ext = args.output.output.as_deref().and_then(Picture::of_path);
    if let (Some(f), Some(e), Some(path)) = (flag, by_ext, args.output.output.as_deref()) {
        if f != e {
            usage_error(&format!(
                "--{} conflicts with -o {}: the file would hold {} bytes under a .{} name",
                f.ext(),
                path.display(),
                f.ext().to_uppercase(),
                e.ext()
            ));
        }
    }
    let picture = flag.or(by_ext);
    let format = match (picture, args.output.format, args.output.json) {
        (Some(_), None, false) => Format::Dot,
        _ => args.output.format().unwrap_or_else(|e| usage_error(&e.0)),
    };
    if picture.is_some() && format != Format::Dot {
        usage_error("--svg and --png (or -o FILE.svg, FILE.png) render the graphs of --format dot");
    }
    if args.view.socket != 0 && format != Format::Dot {
        usage_error("--socket chooses the intra-socket graph of --format dot");
    }
    let started = Instant::now();
    let mut topo = load_topology(&args.topology, &args.hints.options())?;
    if topo.provenance().created.is_none() {
        stamp(&mut topo, started);
    }
    let out = args.output.output.as_deref();
    if format == Format::Dot {
        return show_dot(&topo, args.view.socket, picture, out);
    }
    let text = TextOptions {
        color: use_color(args.view.color.into(), out.is_none()),
        verbose: args.view.verbose,
    };
    let bytes = render(&topo, format, args.hints.ghz, text)?;
    write_to(out, &bytes)
}

/// Writes the graphs as DOT text, or rendered with Graphviz.
fn show_dot(
    topo: &Topology,
    socket: usize,
    picture: Option<Picture>,
    out: Option<&Path>,
) -> Result<()> {
    let graphs = match dot::graphs_for(topo, SocketId(socket)) {
        Ok(g) => g,
        Err(_) => usage_error(&format!(
            "--socket {socket}: the topology has {} socket(s), numbered from 0",
            topo.num_sockets()
        )),
    };
    let text: String = graphs
        .iter()
        .map(|(_, g)| g.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let Some(picture) = picture else {
        return write_to(out, text.as_bytes());
    };
    if !graphviz::available() {
        eprintln!(
            "topoprobe: {NO_GRAPHVIZ}; writing the DOT text instead of {}",
            picture.ext().to_uppercase()
        );
        let dot_path = out.map(|p| p.with_extension("dot"));
        return write_to(dot_path.as_deref(), text.as_bytes());
    }
    if graphs.len() > 1 && out.is_none() {
        usage_error(&format!(
            "this topology has {} graphs (intra-socket and cross-socket): name a file with -o; the cross-socket graph goes next to it",
            graphs.len()
        ));
    }
    for (i, (name, g)) in graphs.iter().enumerate() {
        let bytes = graphviz::render(g, picture)?;
        let path = match out {
            Some(p) if i > 0 => Some(sibling(p, name)),
            Some(p) => Some(p.to_path_buf()),
            None => None,
        };
        write_to(path.as_deref(), &bytes)?;
    }
    Ok(())
}
