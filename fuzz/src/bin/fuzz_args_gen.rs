//! AFL++ entry point of the `args_gen` target: see [`topoprobe_fuzz::args_gen()`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::args_gen(data);
    });
}
