//! This node's layout, as each node's first rank finds it: a description file it is given,
//! a measurement of the node, this machine's saved description, or the OS's view.

use std::path::PathBuf;

use topoprobe_machine::{MachineError, MeasureOptions};

use crate::layout::NodeLayout;

/// Where a node's layout comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LayoutSource {
    /// This machine's saved description (`topoprobe infer`), else the OS's view.
    #[default]
    Saved,
    /// A description file (JSON, `.mct` or latency matrix), the same path on every node.
    File(PathBuf),
    /// Measure the node's core-to-core latencies now (no plugins, nothing saved); the
    /// OS's view when the measurement fails.
    Measure,
}

/// Whether a layout is a failure to read what the user asked for.
#[must_use]
pub fn failed(layout: &NodeLayout) -> bool {
    layout.source.starts_with("unavailable:")
}

/// The OS's view of this node, `note` appended to its source.
fn os_view(note: Option<String>) -> NodeLayout {
    match topoprobe_measure::os::current() {
        Ok(view) => {
            let mut l = NodeLayout::from_os_view(&view);
            if let Some(n) = note {
                l.source = format!("{}; {n}", l.source);
            }
            l
        }
        Err(e) => NodeLayout::unavailable(&format!(
            "{}the OS view cannot be read: {e}",
            note.map_or_else(String::new, |n| format!("{n}; "))
        )),
    }
}

/// An error with every cause after it (`loading the topology bad.json: bad.json:2: EOF
/// while parsing`), as the `topoprobe` command prints it: the cause is what names the line.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// This node's layout from `source` (see [`LayoutSource`]). Never fails: what cannot be
/// read is reported in the layout's source (`unavailable: …` for a file that cannot be
/// read, the fallback's reason otherwise).
#[must_use]
pub fn this_node(source: &LayoutSource) -> NodeLayout {
    match source {
        LayoutSource::File(path) => match topoprobe_machine::load::topology(Some(path)) {
            Ok(t) => NodeLayout::from_topology(&t, &format!("description {}", path.display())),
            Err(e) => NodeLayout::unavailable(&with_causes(&e)),
        },
        LayoutSource::Measure => {
            let opts = MeasureOptions {
                plugins: Vec::new(),
                ..MeasureOptions::default()
            };
            match topoprobe_machine::measure_this_machine(&opts, &mut |_| {}) {
                Ok(m) => NodeLayout::from_topology(&m.topology, "measured"),
                Err(e) => os_view(Some(format!("measuring failed: {}", with_causes(&e)))),
            }
        }
        LayoutSource::Saved => match topoprobe_machine::load::topology(None) {
            Ok(t) => {
                let place = topoprobe_machine::description::default_path()
                    .map_or_else(|_| "saved".into(), |p| p.display().to_string());
                NodeLayout::from_topology(&t, &format!("description {place}"))
            }
            Err(MachineError::NoDescription(_)) => os_view(None),
            Err(e) => os_view(Some(format!(
                "saved description unusable: {}",
                with_causes(&e)
            ))),
        },
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;

    #[test]
    fn a_malformed_description_names_its_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad.json");
        std::fs::write(&path, "{\"format\":\n\"topoprobe-").expect("write");
        let layout = this_node(&LayoutSource::File(path));
        assert!(failed(&layout), "{}", layout.source);
        assert!(
            layout.source.contains("bad.json") && layout.source.contains("bad.json:2"),
            "{}",
            layout.source
        );
    }
}
