//! Agreement with hwloc on a folder of `hwloc-gather-topology` captures (hwloc's own
//! `tests/hwloc/linux/*.tar.bz2`, for one): set `TOPOPROBE_CAPTURES=FOLDER` and run
//! `cargo test -p topoprobe-measure --test os_agreement -- --nocapture`. Prints one line
//! per capture and the total; without the variable or hwloc it checks nothing.
//! `scripts/os-agreement.py` does the same from `topoprobe os --json`.

use crate::hwloc;

use std::path::Path;

use topoprobe_measure::os::{read_os_view_at, unpack_capture};

#[test]
fn captures_agree_with_hwloc() {
    let Some(folder) = std::env::var_os("TOPOPROBE_CAPTURES") else {
        eprintln!("skipped: TOPOPROBE_CAPTURES not set");
        return;
    };
    let mut names: Vec<_> = std::fs::read_dir(&folder)
        .expect("a folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".tar.bz2"))
        .collect();
    names.sort();
    let mut agree = 0;
    for path in &names {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let view = match read_os_view_at(path) {
            Ok(v) => v,
            Err(e) => {
                println!("{name}: error: {e}");
                continue;
            }
        };
        let unpacked = unpack_capture(path).expect("unpacked");
        let Some(xml) = hwloc::lstopo_xml(Path::new(unpacked.root())) else {
            return;
        };
        let d = hwloc::differences(&view, &xml);
        if d.is_empty() {
            agree += 1;
            println!("{name}: agree");
        } else {
            println!("{name}: differ: {}", d.join("; "));
        }
    }
    println!("total: {agree} of {} agree", names.len());
}
