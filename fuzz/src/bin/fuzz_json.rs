//! AFL++ entry point of the `json` target: see [`topoprobe_fuzz::json`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::json(data);
    });
}
