//! AFL++ entry point of the `args` target: see [`topoprobe_fuzz::args`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::args(data);
    });
}
