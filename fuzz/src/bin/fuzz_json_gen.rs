//! AFL++ entry point of the `json_gen` target: see [`topoprobe_fuzz::json_gen()`].

fn main() {
    // The templates are parsed on the first call: before the loop, so that every input
    // runs the same code.
    topoprobe_fuzz::json_gen(&[]);
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::json_gen(data);
    });
}
