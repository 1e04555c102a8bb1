//! AFL++ entry point of the `mct` target: see [`topoprobe_fuzz::mct`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::mct(data);
    });
}
