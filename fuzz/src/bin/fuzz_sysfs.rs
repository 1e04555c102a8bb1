//! AFL++ entry point of the `sysfs` target: see [`topoprobe_fuzz::sysfs`].

fn main() {
    afl::fuzz!(|data: &[u8]| {
        topoprobe_fuzz::sysfs(data);
    });
}
