//! AFL++ entry point of the `json_gen` target: see [`topoprobe_fuzz::json_gen()`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::json_gen(data);
    });
}
