//! AFL++ entry point of the `capture` target: see [`topoprobe_fuzz::capture`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::capture(data);
    });
}
