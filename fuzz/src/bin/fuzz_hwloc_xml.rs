//! AFL++ entry point of the `hwloc_xml` target: see [`topoprobe_fuzz::hwloc_xml`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::hwloc_xml(data);
    });
}
