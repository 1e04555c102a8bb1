//! The operating system's view of the machine.
