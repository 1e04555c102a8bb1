//! Starts a thread and prints, for the main thread and for it, the CPUs it may run on.
fn show(who: &str) {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    for line in status.lines() {
        if let Some(v) = line.strip_prefix("Cpus_allowed_list:") {
            println!("{who} {}", v.trim());
        }
    }
}

fn main() {
    show("main");
    std::thread::spawn(|| show("thread1")).join().unwrap_or(());
}
