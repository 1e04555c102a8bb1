//! AFL++ entry point of the `csv` target: see [`topoprobe_fuzz::csv`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::csv(data);
    });
}
